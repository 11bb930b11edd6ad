// GENERATED FILE, do not edit by hand.
// Source: choria-io/go-choria internal/fs/schemas/choria/protocol/v1/reply.json
// (commit 58e80bab58a53d38576238baa011123d5f9eff59), copied in test/vectors/schemas/go-choria-embedded/.
// Copyright R.I. Pienaar and the Choria Project contributors, licensed under the Apache License 2.0.
// Embedded as data because go-choria servers validate against exactly these documents;
// packages/simulator/test/schemas.test.ts asserts this module deep-equals the vector file.
export const v1ReplySchema = {
  $schema: 'http://json-schema.org/draft-04/schema',
  description: 'Choria Reply version 1',
  title: 'ReplyV1',
  type: 'object',
  required: ['protocol', 'message', 'envelope'],
  properties: {
    protocol: {
      type: 'string',
      enum: ['choria:reply:1'],
    },
    message: {
      type: 'string',
      description: 'The data being sent to the Agent, should already be JSON encoded.',
      minLength: 1,
    },
    envelope: {
      type: 'object',
      required: ['requestid', 'senderid', 'agent', 'time'],
      properties: {
        requestid: {
          type: 'string',
          description: 'Globally unique Request ID',
          minLength: 32,
          maxLength: 32,
        },
        senderid: {
          type: 'string',
          description: 'The identity of the machine that sent this message',
        },
        agent: {
          type: 'string',
          description: 'The name of the agent on the server that sent this message',
          minLength: 1,
        },
        time: {
          type: 'integer',
          description: 'Unix time stamp of UTC time when the reply was made',
        },
      },
    },
  },
} as const;
