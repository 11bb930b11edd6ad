// GENERATED FILE, do not edit by hand.
// Source: choria-io/go-choria internal/fs/schemas/choria/protocol/v2/reply.json
// (commit 58e80bab58a53d38576238baa011123d5f9eff59), copied in test/vectors/schemas/go-choria-embedded/.
// Copyright R.I. Pienaar and the Choria Project contributors, licensed under the Apache License 2.0.
// Embedded as data because go-choria servers validate against exactly these documents;
// packages/simulator/test/schemas.test.ts asserts this module deep-equals the vector file.
export const v2ReplySchema = {
  $schema: 'http://json-schema.org/draft-07/schema',
  $id: 'https://choria.io/schemas/choria/protocol/v2/reply.json',
  description: 'Choria Reply version 2',
  title: 'ReplyV2',
  type: 'object',
  required: ['protocol', 'message', 'request', 'sender', 'agent', 'time'],
  properties: {
    protocol: {
      type: 'string',
      const: 'io.choria.protocol.v2.request',
    },
    message: {
      type: 'string',
      description: 'The data being sent to the Agent Base64 encoded',
      minLength: 1,
    },
    request: {
      type: 'string',
      description: 'The ID of the request this reply relates to',
      minLength: 1,
    },
    sender: {
      type: 'string',
      description: 'The host identity that is sending the reply',
      minLength: 1,
    },
    agent: {
      type: 'string',
      description: 'The agent the reply originates from',
      minLength: 1,
    },
    time: {
      type: 'integer',
      description: 'The unix nano time the request was created',
      minimum: 1,
      maximum: 18446744073709552000,
    },
  },
} as const;
