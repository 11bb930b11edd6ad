// GENERATED FILE, do not edit by hand.
// Source: choria-io/go-choria internal/fs/schemas/choria/protocol/v1/secure_reply.json
// (commit 58e80bab58a53d38576238baa011123d5f9eff59), copied in test/vectors/schemas/go-choria-embedded/.
// Copyright R.I. Pienaar and the Choria Project contributors, licensed under the Apache License 2.0.
// Embedded as data because go-choria servers validate against exactly these documents;
// packages/simulator/test/schemas.test.ts asserts this module deep-equals the vector file.
export const v1SecureReplySchema = {
  $schema: 'http://json-schema.org/draft-04/schema',
  description: 'Choria Secure Reply version 1',
  title: 'SecureReplyV1',
  type: 'object',
  required: ['protocol', 'message', 'hash'],
  properties: {
    protocol: {
      type: 'string',
      enum: ['choria:secure:reply:1'],
    },
    message: {
      type: 'string',
      description: 'Base64 encoded JSON version of a ReplyV1',
      minLength: 1,
    },
    hash: {
      type: 'string',
      description: 'Base 64 encoded SHA256 hash of the Message',
      minLength: 1,
    },
  },
} as const;
