// A logger for the provisioner under test that records, per node, when its attempt started
// (`Provisioning <id>`, logged by the Host) and ended (`Provisioned <id>` / `Could not provision`,
// logged by the Provisioner), so time per node comes from the provisioner's own milestones.
// Everything else is dropped, unless an inner (winston) logger is given: then every call is also
// forwarded to it, so the cost of real logging can be measured with the same timings.
import { performance } from 'node:perf_hooks';

export class NodeTimes {
  started = new Map();
  finished = new Map();
  failed = 0;
  firstErrors = [];
  firstWarnings = [];
  warnings = 0;
  firstStartAt = undefined;
  lastEndAt = undefined;
  /** called with the running count of finished nodes */
  onFinish = () => undefined;

  start(id) {
    const t = performance.now();
    this.firstStartAt ??= t;
    this.started.set(id, t);
  }

  end(id, ok, msg) {
    const t = performance.now();
    this.lastEndAt = t;
    if (ok) this.finished.set(id, t);
    else {
      this.failed++;
      if (this.firstErrors.length < 5) this.firstErrors.push(msg);
    }
    this.onFinish(this.finished.size + this.failed);
  }

  /** milliseconds per provisioned node, sorted */
  durations() {
    const out = [];
    for (const [id, end] of this.finished) {
      const s = this.started.get(id);
      if (s !== undefined) out.push(end - s);
    }
    return out.sort((a, b) => a - b);
  }
}

function nodeLogger(times, identity, inner) {
  const fwd = (level, msg, meta) => inner?.[level](msg, meta);
  return {
    info(msg, meta) {
      if (typeof msg === 'string') {
        if (msg.startsWith('Provisioning ')) times.start(identity);
        else if (msg.startsWith('Provisioned ')) times.end(identity, true);
      }
      fwd('info', msg, meta);
    },
    warn(msg, meta) {
      times.warnings++;
      if (times.firstWarnings.length < 5) times.firstWarnings.push(String(msg));
      fwd('warn', msg, meta);
    },
    error(msg, meta) {
      if (typeof msg === 'string' && msg.startsWith('Could not provision ')) times.end(identity, false, msg);
      fwd('error', msg, meta);
    },
    debug(msg, meta) {
      fwd('debug', msg, meta);
    },
    /** winston's log(level, …), which the provisioner uses for messages whose level varies */
    log(level, msg, meta) {
      if (level === 'info' || level === 'warn' || level === 'error' || level === 'debug') this[level](msg, meta);
      else fwd(level, msg, meta);
    },
    isDebugEnabled() {
      return inner?.isDebugEnabled() ?? false;
    },
    child(meta) {
      return nodeLogger(times, meta?.host ?? identity, inner?.child(meta));
    },
  };
}

/** The provisioner's root logger; `inner` is an optional winston logger to forward to. */
export function timingLogger(times, inner) {
  return nodeLogger(times, undefined, inner);
}
