// GENERATED FILE, do not edit by hand.
// Source: choria-io/go-choria internal/fs/schemas/choria/protocol/v2/secure_request.json
// (commit 58e80bab58a53d38576238baa011123d5f9eff59), copied in test/vectors/schemas/go-choria-embedded/.
// Copyright R.I. Pienaar and the Choria Project contributors, licensed under the Apache License 2.0.
// Embedded as data because go-choria servers validate against exactly these documents;
// packages/simulator/test/schemas.test.ts asserts this module deep-equals the vector file.
export const v2SecureRequestSchema = {
  $schema: 'http://json-schema.org/draft-07/schema',
  $id: 'https://choria.io/schemas/choria/protocol/v2/secure_request.json',
  description: 'Choria Secure Request version 2',
  title: 'SecureRequestV2',
  type: 'object',
  required: ['protocol', 'request', 'signature', 'caller'],
  properties: {
    protocol: {
      type: 'string',
      const: 'io.choria.protocol.v2.secure_request',
    },
    request: {
      type: 'string',
      description: 'Base64 encoded JSON version of a RequestV2',
      minLength: 1,
    },
    signature: {
      type: 'string',
      description: 'Hex encoded signature made using the ed25519 seed of the caller or signer',
      minLength: 1,
    },
    caller: {
      type: 'string',
      description: 'JWT of the caller',
      minLength: 1,
    },
    signer: {
      type: 'string',
      description: 'JWT of the delegated signer, present when the AAA server is used',
    },
  },
} as const;
