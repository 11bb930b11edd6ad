import { describe, expect, it } from 'vitest';
import { ProtocolError, RpcAbortedError, publicStatusMessage } from '../../src/choria/errors.js';
import { parseJsonObject } from '../../src/choria/protocol/encoding.js';

describe('a node status message in errors', () => {
  it('is redacted in the message and its quoted parts are left out of the public message', () => {
    const err = new RpcAbortedError({
      sender: 'web1',
      action: 'configure',
      statuscode: 1,
      statusmsg:
        'Could not write config: generated configuration could not be parsed: strconv.Atoi: parsing "hunter9-x7": invalid syntax; password=hunter8-SECRET',
      data: {},
      requestId: 'r1',
    });
    expect(err.message).toBe(
      'invalid response from web1: Could not write config: generated configuration could not be parsed: strconv.Atoi: parsing "hunter9-x7": invalid syntax; password=[redacted] (1)',
    );
    expect(err.publicMessage).toBe(
      'invalid response from web1: Could not write config: generated configuration could not be parsed: strconv.Atoi: parsing "…": invalid syntax; password=[redacted] (1)',
    );
    // the reply itself stays as received, for the checks that read it
    expect(err.reply.statusmsg).toContain('hunter8-SECRET');
  });

  it('keeps go-choria wording, apostrophes included, and what it does not quote', () => {
    expect(publicStatusMessage('Incorrect provision token supplied')).toBe('Incorrect provision token supplied');
    expect(publicStatusMessage("can't find any structure element configured with confkey 'foo.bar'")).toBe(
      "can't find any structure element configured with confkey '…'",
    );
    expect(publicStatusMessage('Could not save Action Policies: expected "x.txt" to have .policy extension')).toBe(
      'Could not save Action Policies: expected "…" to have .policy extension',
    );
    expect(publicStatusMessage('parsing "cut short')).toBe('parsing "…"');
  });
});

describe('a message from the wire that is not JSON', () => {
  it('is reported by where it broke, without the text around it', () => {
    expect(() => parseJsonObject('{"data": hunter9-x7}', 'RPC reply')).toThrow(
      new ProtocolError('RPC reply is not valid JSON: a JSON value expected at position 9'),
    );
  });
});
