// GENERATED FILE, do not edit by hand.
// Source: choria-io/go-choria internal/fs/schemas/choria/protocol/v2/secure_reply.json
// (commit 58e80bab58a53d38576238baa011123d5f9eff59), copied in test/vectors/schemas/go-choria-embedded/.
// Copyright R.I. Pienaar and the Choria Project contributors, licensed under the Apache License 2.0.
// Embedded as data because go-choria servers validate against exactly these documents;
// packages/simulator/test/schemas.test.ts asserts this module deep-equals the vector file.
export const v2SecureReplySchema = {
  $schema: 'http://json-schema.org/draft-07/schema',
  $id: 'https://choria.io/schemas/choria/protocol/v2/secure_reply.json',
  description: 'Choria Secure Reply version 2',
  title: 'SecureReplyV2',
  type: 'object',
  required: ['protocol', 'reply', 'hash'],
  properties: {
    protocol: {
      type: 'string',
      const: 'io.choria.protocol.v2.secure_reply',
    },
    reply: {
      type: 'string',
      description: 'Base64 encoded JSON version of a ReplyV2',
      minLength: 1,
    },
    hash: {
      type: 'string',
      description: 'Hex encoded sha256 of the reply',
      minLength: 1,
    },
    signature: {
      type: 'string',
      description: 'A hex encoded signature made using the ed25519 seed of the sender',
      minLength: 1,
    },
    sender: {
      type: 'string',
      description: 'The JWT of the sending host',
    },
  },
} as const;
