import { describe, expect, it } from 'vitest';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';
import { v1ReplySchema } from '../src/wire/schemas/v1-reply.js';
import { v1RequestSchema } from '../src/wire/schemas/v1-request.js';
import { v1SecureReplySchema } from '../src/wire/schemas/v1-secure-reply.js';
import { v1SecureRequestSchema } from '../src/wire/schemas/v1-secure-request.js';
import { v1TransportSchema } from '../src/wire/schemas/v1-transport.js';
import { v2ReplySchema } from '../src/wire/schemas/v2-reply.js';
import { v2RequestSchema } from '../src/wire/schemas/v2-request.js';
import { v2SecureReplySchema } from '../src/wire/schemas/v2-secure-reply.js';
import { v2SecureRequestSchema } from '../src/wire/schemas/v2-secure-request.js';
import { v2TransportSchema } from '../src/wire/schemas/v2-transport.js';

const embedded: Array<[string, unknown]> = [
  ['v1/transport.json', v1TransportSchema],
  ['v1/secure_request.json', v1SecureRequestSchema],
  ['v1/request.json', v1RequestSchema],
  ['v1/secure_reply.json', v1SecureReplySchema],
  ['v1/reply.json', v1ReplySchema],
  ['v2/transport.json', v2TransportSchema],
  ['v2/secure_request.json', v2SecureRequestSchema],
  ['v2/request.json', v2RequestSchema],
  ['v2/secure_reply.json', v2SecureReplySchema],
  ['v2/reply.json', v2ReplySchema],
];

describe('embedded go-choria schemas', () => {
  it.each(embedded)('%s deep-equals the vector file', (file, schema) => {
    expect(schema).toEqual(readVectorJson('schemas', 'go-choria-embedded', 'choria', 'protocol', ...file.split('/')));
  });
});
