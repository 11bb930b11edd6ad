// The node history at fleet scale (bench kind `history-scale`): what `count` nodes' records cost in
// the bucket and in memory, how fast they are written, and how long a starting instance takes to
// load them. The records are the product's own (NodeHistory.attempted), written through the
// product's HistoryBucket to the bench's nats-server; one node in ten failed with a typical
// error. Every node is then written a second time: the bucket keeps one value a node, so its
// size must not grow.
import { performance } from 'node:perf_hooks';
import { connect } from 'nats';
import { HistoryBucket, NodeHistory } from '@choria-provisioner/core/internal';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const HOUR = 3_600_000;
const POLICY = { backoffMs: 60_000, backoffMaxMs: 1_800_000, quarantineAfter: 5 };

function report(i, at) {
  const identity = `node-${String(i).padStart(6, '0')}.example.net`;
  if (i % 10 === 0) {
    return [
      identity,
      {
        outcome: 'failed',
        message: `could not perform rpcutil#inventory on ${identity}: 3 tries, last: request timed out after 10 s`,
        at,
        durationMs: 30_412,
        configured: false,
        discoveredAt: at - 31_000,
      },
    ];
  }
  return [
    identity,
    { outcome: 'provisioned', message: undefined, at, durationMs: 812, configured: true, discoveredAt: at - 1_000 },
  ];
}

async function writeAll(history, count) {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const [identity, r] = report(i, Date.now());
    history.attempted(identity, r);
    // as a provisioner does: attempts end a few at a time, not 100,000 in one tick
    if (i % 500 === 499) await sleep(0);
  }
  while (history.pendingWrites > 0) await sleep(5);
  const ms = performance.now() - t0;
  const c = process.cpuUsage(cpu);
  return { ms, perSecond: (count / ms) * 1000, cpuUsPerRecord: (c.user + c.system) / count };
}

async function streamState(nc, bucket) {
  const info = await (await nc.jetstreamManager()).streams.info(`KV_${bucket}`);
  return { bytes: info.state.bytes, messages: info.state.messages };
}

function heapAfterGc() {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

export async function historyScaleScenario(s) {
  const nc = await connect({ servers: s.url });
  const bucket = `BENCH_SCALE_${process.pid}`;
  const open = () => HistoryBucket.open({ nc, bucket, ttlMs: HOUR, apiPrefix: '$JS.API', site: 'bench' });
  const writing = [];
  try {
    const writer = await open();
    writing.push(writer);
    const history = new NodeHistory({
      policy: POLICY,
      instance: 'provisioner-1.example.net',
      ttlMs: HOUR,
      capacity: s.count,
    });
    history.attach(writer);
    const first = await writeAll(history, s.count);
    const afterFirst = await streamState(nc, bucket);
    const second = await writeAll(history, s.count);
    const afterSecond = await streamState(nc, bucket);

    // a starting instance: a fresh NodeHistory fed by the bucket's watch
    const heapBefore = heapAfterGc();
    const reader = await open();
    writing.push(reader);
    const loaded = new NodeHistory({
      policy: POLICY,
      instance: 'provisioner-2.example.net',
      ttlMs: HOUR,
      capacity: s.count,
    });
    const t0 = performance.now();
    const cpu = process.cpuUsage();
    await reader.watch({
      onRecord: (r) => loaded.merge(r),
      onInvalid: (key, why) => console.error(`invalid ${key}: ${why}`),
    });
    const loadMs = performance.now() - t0;
    const loadCpu = process.cpuUsage(cpu);
    const heapAfter = heapAfterGc();
    return {
      kind: 'history-scale',
      count: s.count,
      loadedRecords: loaded.size,
      write: first,
      rewrite: second,
      bucketBytes: afterFirst.bytes,
      bucketMessages: afterFirst.messages,
      bucketBytesAfterRewrite: afterSecond.bytes,
      bucketMessagesAfterRewrite: afterSecond.messages,
      bytesPerRecord: afterFirst.bytes / afterFirst.messages,
      loadMs,
      loadCpuUsPerRecord: (loadCpu.user + loadCpu.system) / s.count,
      heapBytesPerRecord: (heapAfter - heapBefore) / s.count,
      heapMb: (heapAfter - heapBefore) / 1048576,
    };
  } finally {
    for (const b of writing) b.close();
    await (await nc.jetstreamManager()).streams.delete(`KV_${bucket}`).catch(() => undefined);
    await nc.close();
  }
}
