// Public API of the Choria client.
export * from './errors.js';
export * from './client.js';
export * from './connector.js';
export * from './lifecycle.js';
export * from './protocol/types.js';
export * from './protocol/filter.js';
export * from './protocol/subjects.js';
export * from './protocol/ids.js';
export * from './protocol/mcorpc.js';
export * from './protocol/codec.js';
export {
  V1,
  V1_DISCOVERY_MESSAGE,
  V1_MIN_TTL,
  V1_REQUEST_ID_LENGTH,
  v1Codec,
  buildV1RequestJson,
  buildV1SecureRequestJson,
  buildV1TransportJson,
  buildV1ReplyJson,
  buildV1SecureReplyJson,
  parseV1Transport,
  parseV1SecureRequest,
  parseV1Request,
  parseV1SecureReply,
  parseV1Reply,
  type V1RequestFields,
  type V1ReplyFields,
  type V1SecureRequest,
} from './protocol/v1.js';
export {
  V2,
  V2_DISCOVERY_MESSAGE,
  V2_DISCOVERY_PAYLOAD,
  v2Codec,
  buildV2RequestJson,
  buildV2SecureRequestJson,
  buildV2TransportJson,
  buildV2ReplyJson,
  buildV2SecureReplyJson,
  parseV2Transport,
  parseV2SecureRequest,
  parseV2Request,
  parseV2SecureReply,
  parseV2Reply,
  type V2RequestFields,
  type V2ParsedRequest,
  type V2ReplyFields,
  type V2ParsedReply,
  type V2SecureRequest,
} from './protocol/v2.js';
export * from './security/types.js';
export * from './security/insecure.js';
export * from './security/file.js';
export * from './security/choria.js';
export {
  loadChoriaCredentials,
  choriaCredentials,
  readSeedFile,
  readClientJwt,
  callerIdFromJwt,
  signNatsNonce,
  type ChoriaCredentials,
} from './security/choria-credentials.js';
export * from './security/select.js';
export * from './ddl/types.js';
export * from './ddl/registry.js';
export * from './ddl/validate.js';
export { choriaProvisionDdl } from './ddl/choria_provision.js';
export { rpcutilDdl } from './ddl/rpcutil.js';
