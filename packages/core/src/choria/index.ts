// Public API of the Choria client.
export * from './errors.js';
export * from './client.js';
export * from './connector.js';
export * from './lifecycle.js';
export * from './identity.js';
export * from './protocol/types.js';
export * from './protocol/filter.js';
export * from './protocol/subjects.js';
export * from './protocol/ids.js';
export * from './protocol/mcorpc.js';
export * from './protocol/codec.js';
export { envelopeCodec, parseTransport, transportJson, type EnvelopeLayers } from './protocol/envelope-codec.js';
export { V1, V1_DISCOVERY_MESSAGE, V1_MIN_TTL, V1_REQUEST_ID_LENGTH, v1Codec, v1Layers } from './protocol/v1.js';
export { V2, V2_DISCOVERY_MESSAGE, V2_DISCOVERY_PAYLOAD, v2Codec, v2Layers } from './protocol/v2.js';
export * from './security/types.js';
export * from './security/insecure.js';
export * from './security/file.js';
export * from './security/choria.js';
export {
  loadChoriaCredentials,
  choriaCredentials,
  readClientJwt,
  callerIdFromJwt,
  signNatsNonce,
  type ChoriaCredentials,
} from './security/choria-credentials.js';
export * from './security/select.js';
export * from './ddl/types.js';
export * from './ddl/registry.js';
export * from './ddl/validate.js';
export { choriaProvisionDdl, rpcutilDdl } from './ddl/agents.js';
