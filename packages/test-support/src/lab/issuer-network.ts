// An Organization Issuer network (protocol v2, the ed25519 flow): an issuer, a broker trusting it,
// a provisioner whose client JWT the issuer signed and that chain-issues server JWTs, and (for this
// project's provisioner) the node history bucket a Streams admin made beforehand, since a user may
// not create one. Rows take the broker, what the fleet and the provisioner's site need, and the
// provisioner's environment.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Lab } from './lab.js';
import type { LabBroker } from './broker.js';
import type { FleetSpec } from './lab.js';
import type { ProvisionerKind, SiteSpec } from './provisioners.js';
import { writeKeyPair, writeOperatorClientJwt, writeProvisionerClientJwt, writeServerJwt } from './jwt.js';
import { createBucketAsAdmin, writeIssuerClientConfig } from './streams.js';

export interface IssuerNetwork {
  readonly broker: LabBroker;
  readonly url: string;
  /** what a fleet of this network needs beside its prefix, count and URLs */
  readonly fleet: Pick<FleetSpec, 'jwt' | 'configuration'>;
  /** the provisioner site's settings beside its name, brokers and extra YAML */
  readonly site: Pick<SiteSpec, 'choriaConfig' | 'features'> & { readonly yaml: Readonly<Record<string, unknown>> };
  /** a choria-provider client takes its identity from $USER */
  readonly env: Readonly<Record<string, string>>;
  /** a client of the fleet (fleet management, signed by the issuer) as `identity`: its configuration file */
  fleetClient(identity: string): Promise<string>;
}

/** Sets up the issuer, the broker (started) and the provisioner's credentials as `identity`. */
export async function issuerNetwork(
  l: Lab,
  kind: ProvisionerKind,
  identity: string,
  brokerOpts: { electionTtl?: string } = {},
): Promise<IssuerNetwork> {
  const choria = l.paths.choria;
  const issuer = await writeKeyPair(choria, join(l.dir, 'issuer.seed'));
  const signer = await writeKeyPair(choria, join(l.dir, 'provisioner.seed'));
  const token = join(l.dir, 'provisioner.jwt');
  await writeProvisionerClientJwt(choria, {
    file: token,
    identity,
    signingKey: issuer.seedFile,
    publicKey: signer.publicKey,
    streams: kind === 'ours' ? 'user' : undefined,
  });
  const brokerKey = await writeKeyPair(choria, join(l.dir, 'broker.seed'));
  const brokerJwt = join(l.dir, 'broker.jwt');
  await writeServerJwt(choria, {
    file: brokerJwt,
    identity: 'broker.lab.example',
    signingKey: issuer.seedFile,
    publicKey: brokerKey.publicKey,
  });
  const broker = await l.broker({
    ...brokerOpts,
    issuer: { name: 'choria', publicKey: issuer.publicKey, tokenFile: brokerJwt, seedFile: brokerKey.seedFile },
  });
  const url = `nats://127.0.0.1:${broker.port}`;
  if (kind === 'ours') {
    const admin = 'admin.lab.example';
    const adminKey = await writeKeyPair(choria, join(l.dir, 'admin.seed'));
    const adminJwt = join(l.dir, 'admin.jwt');
    await writeOperatorClientJwt(choria, {
      file: adminJwt,
      identity: admin,
      signingKey: issuer.seedFile,
      publicKey: adminKey.publicKey,
      streams: 'admin',
    });
    const configFile = join(l.dir, 'admin-client.cfg');
    writeIssuerClientConfig(configFile, {
      identity: admin,
      brokerUrl: url,
      tokenFile: adminJwt,
      seedFile: adminKey.seedFile,
    });
    await createBucketAsAdmin(choria, {
      configFile,
      identity: admin,
      bucket: 'CHORIA_PROVISIONER_HISTORY',
      ttl: '168h',
    });
  }
  const choriaConfigFile = join(l.dir, 'provisioner-client.cfg');
  writeIssuerClientConfig(choriaConfigFile, { identity, brokerUrl: url, tokenFile: token, seedFile: signer.seedFile });
  return {
    broker,
    url,
    fleet: {
      jwt: { protocolV2: true, signingKey: issuer.seedFile },
      // a provisioned v2 server verifies the JWTs it meets against the issuer
      configuration: {
        'plugin.security.issuer.names': 'choria',
        'plugin.security.issuer.choria.public': issuer.publicKey,
      },
    },
    site: {
      choriaConfig: readFileSync(choriaConfigFile, 'utf8'),
      features: { ed25519: true },
      yaml: { jwt_verify_cert: issuer.publicKey, jwt_signing_key: signer.seedFile, jwt_signing_token: token },
    },
    env: { USER: identity },
    async fleetClient(client) {
      const key = await writeKeyPair(choria, join(l.dir, `${client}.seed`));
      const jwt = join(l.dir, `${client}.jwt`);
      await writeOperatorClientJwt(choria, {
        file: jwt,
        identity: client,
        signingKey: issuer.seedFile,
        publicKey: key.publicKey,
      });
      const file = join(l.dir, `${client}-client.cfg`);
      writeIssuerClientConfig(file, { identity: client, brokerUrl: url, tokenFile: jwt, seedFile: key.seedFile });
      return file;
    },
  };
}
