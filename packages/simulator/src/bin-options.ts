// Turns parsed command line arguments into FleetOptions (kept apart from bin.ts so it is testable).
import { readFileSync } from 'node:fs';
import type { SimulatorArgs } from './cli-args.js';
import type { FleetOptions } from './options.js';
import { prepareSignerMaterial } from './signer-files.js';

function readMaybeFile(value: string): string {
  return value.startsWith('@') ? readFileSync(value.slice(1), 'utf8') : value;
}

/** A hex literal, or a file holding hex or a PEM. */
function keyText(value: string): string {
  if (/^[0-9a-fA-F]{64}$/.test(value)) return value;
  return readFileSync(value, 'utf8');
}

export function fleetOptionsFromArgs(a: SimulatorArgs): {
  options: FleetOptions;
  publicFile: string | undefined;
  keysDir: string | undefined;
} {
  if (a.servers.length === 0) throw new Error('--server is required');
  const signer = prepareSignerMaterial({
    signer: a.jwtSigner,
    keyFile: a.jwtKeyFile,
    keysDir: a.keysDir,
    protocol: a.protocol,
  });
  const options: FleetOptions = {
    servers: a.servers,
    name: a.name,
    count: a.count,
    protocol: a.protocol,
    jwt: {
      signer: signer.signer,
      update: a.jwtUpdate,
      chs: a.jwtChs,
      ...(signer.keyPem !== undefined ? { keyPem: signer.keyPem } : {}),
      ...(signer.seedHex !== undefined ? { seedHex: signer.seedHex } : {}),
      ...(a.jwtOu !== undefined ? { ou: a.jwtOu } : {}),
      ...(a.jwtExtensions !== undefined ? { extensions: a.jwtExtensions } : {}),
    },
    upgradable: a.upgradable,
  };
  const copy = <K extends keyof FleetOptions>(key: K, value: FleetOptions[K] | undefined): void => {
    if (value !== undefined) options[key] = value;
  };
  copy('user', a.user);
  copy('password', a.password);
  copy('tls', a.tls);
  copy('identityPattern', a.identityPattern);
  copy('nodesPerConnection', a.nodesPerConnection);
  copy('token', a.token);
  copy('version', a.version);
  copy('eventFormat', a.eventFormat);
  copy('bootSpreadMs', a.bootSpreadMs);
  copy('dropRate', a.dropRate);
  copy('latencyMs', a.latencyMs);
  copy('latencyJitterMs', a.latencyJitterMs);
  copy('silentNodes', a.silentNodes);
  copy('vanishRate', a.vanishRate);
  copy('reenterAfterMs', a.reenterAfterMs);
  copy('lockMs', a.lockMs);
  copy('timeScale', a.timeScale);
  copy('updateMs', a.updateMs);
  copy('rsaBits', a.rsaBits);
  copy('seed', a.seed);
  if (a.facts !== undefined) {
    const facts: unknown = JSON.parse(readMaybeFile(a.facts));
    if (typeof facts !== 'object' || facts === null || Array.isArray(facts))
      throw new Error('--facts expects a JSON object');
    options.facts = facts as Record<string, unknown>;
  }
  if (a.issuerPublic !== undefined || a.serverJwtSignerPublic !== undefined) {
    const v: NonNullable<FleetOptions['serverJwtVerification']> = {};
    if (a.issuerPublic !== undefined) v.issuerPublicHex = keyText(a.issuerPublic).trim();
    if (a.serverJwtSignerPublic !== undefined) {
      const t = keyText(a.serverJwtSignerPublic);
      if (t.includes('-----BEGIN')) v.signerPublicPem = t;
      else v.signerEd25519PublicHex = t.trim();
    }
    options.serverJwtVerification = v;
  }
  if (a.verbose) {
    options.logger = {
      debug: (m) => process.stderr.write(`DEBUG ${m}\n`),
      info: (m) => process.stderr.write(`INFO ${m}\n`),
      warn: (m) => process.stderr.write(`WARN ${m}\n`),
      error: (m) => process.stderr.write(`ERROR ${m}\n`),
    };
  }
  return { options, publicFile: signer.publicFile, keysDir: signer.keysDir };
}
