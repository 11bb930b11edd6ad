import { describe, expect, it } from 'vitest';
import { ProvisionerMetrics, Registry, UPSTREAM_METRIC_NAMES } from '../../src/metrics/index.js';

describe('ProvisionerMetrics', () => {
  it('registers every upstream metric once per registry and shares it between sites', async () => {
    const registry = new Registry();
    const a = new ProvisionerMetrics(registry, 'lon');
    const b = new ProvisionerMetrics(registry, 'nyc');
    a.provisioned();
    a.provisioned();
    b.provisioned();
    a.rpcTime('rpcutil#inventory', 0.25);
    b.setPaused(true);
    const text = await registry.metrics();
    for (const name of UPSTREAM_METRIC_NAMES) expect(text).toContain(`# TYPE ${name} `);
    expect(text).toContain('choria_provisioner_provisioned{site="lon"} 2');
    expect(text).toContain('choria_provisioner_provisioned{site="nyc"} 1');
    expect(text).toContain('choria_provisioner_paused{site="nyc"} 1');
    expect(text).toContain('choria_provisioner_paused{site="lon"} 0');
    expect(text).toContain('choria_provisioner_rpc_time_sum{site="lon",rpc="rpcutil#inventory"} 0.25');
    expect(text).toContain('choria_provisioner_rpc_time_count{site="lon",rpc="rpcutil#inventory"} 1');
    // Go summaries export no quantiles
    expect(text).not.toMatch(/choria_provisioner_rpc_time\{.*quantile/);
    expect(text).toContain('# TYPE choria_provisioner_rpc_time summary');
    expect(text).toContain('# TYPE choria_provisioner_busy_workers gauge');
    expect(text).toContain('# TYPE choria_provisioner_discovered counter');
    expect(text).toContain('choria_provisioner_outcomes{site="lon",outcome="deferred"} 0');
  });

  it('keeps separate registries independent', async () => {
    const r1 = new Registry();
    const r2 = new Registry();
    new ProvisionerMetrics(r1, 's').provisioned();
    new ProvisionerMetrics(r2, 's');
    expect(await r1.metrics()).toContain('choria_provisioner_provisioned{site="s"} 1');
    expect(await r2.metrics()).toContain('choria_provisioner_provisioned{site="s"} 0');
  });
});
