# The helper-spawning companion process, Python edition (see spawner.ts for why a companion
# exists, and spawner-protocol.ts for the messages). It does exactly what spawner-child.ts does,
# with one difference that is the reason it exists: it starts each helper with posix_spawn(),
# which glibc implements as a vfork-style clone that shares the parent's memory until exec().
# Node starts children with fork() (libuv 1.52, Node 24's, still does on Linux), which copies the
# parent's page tables and then throws the copy away on exec(); on VMs where page-table work is
# slow that is much of the cost of a helper run (BENCHMARKS.md has the measured gain). Node offers
# no other way to start a process. It runs only when the configuration opts in
# (`helper_spawner: python3` or `auto`); the Node companion is the default.
#
# Started by the provisioner as `python3 -I -S spawner-child.py` (isolated, no site packages: it
# uses the standard library only). Talks JSON lines on stdin (run, kill) and stdout (ready or
# unsupported first, then started, done). End of stdin means the provisioner is gone: every helper
# still running is killed with its process group, and the companion exits.
import base64
import errno
import heapq
import json
import os
import selectors
import signal
import sys
import time

PROTOCOL = 1


def say(message):
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def unsupported():
    """Why this interpreter or kernel cannot run the companion, or None when it can."""
    if sys.version_info < (3, 9):
        return "python %d.%d is older than 3.9" % sys.version_info[:2]
    if not hasattr(os, "posix_spawn") or not hasattr(os, "pidfd_open"):
        return "this python has no os.posix_spawn or os.pidfd_open"
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError as e:
        return "the kernel refuses pidfd_open: %s" % os.strerror(e.errno)
    return None


# Node gives each helper every signal at its default action and none blocked; Python ignores
# SIGPIPE and SIGXFSZ itself, and an ignored signal would otherwise carry over into the helper.
# (glibc's posix_spawn leaves its own two internal signals, 32 and 33, ignored in the child: they
# are below SIGRTMIN, no program sees them through glibc, and runtimes that use them set them up.)
SIGNALS_TO_DEFAULT = {s for s in range(1, 32) if s not in (signal.SIGKILL, signal.SIGSTOP)}


def error_name(e):
    return errno.errorcode.get(e.errno, "E%d" % e.errno) if e.errno is not None else "EINVAL"


def find_program(file, env):
    """The path to exec, looked up on the helper's PATH like execvp() when the name has no slash."""
    if "/" in file:
        return file
    path = env.get("PATH")
    if path is None:
        path = os.defpath
    denied = False
    for d in path.split(os.pathsep):
        candidate = os.path.join(d or ".", file)
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            denied = True
    raise OSError(errno.EACCES if denied else errno.ENOENT, file)


class Captured:
    __slots__ = ("kept", "kept_bytes", "seen", "limit")

    def __init__(self, limit):
        self.kept = []
        self.kept_bytes = 0
        self.seen = 0
        self.limit = limit

    def keep(self, chunk):
        self.seen += len(chunk)
        room = self.limit - self.kept_bytes
        if room <= 0:
            return
        part = chunk if len(chunk) <= room else chunk[:room]
        self.kept.append(part)
        self.kept_bytes += len(part)

    def text(self):
        return base64.b64encode(b"".join(self.kept)).decode("ascii")


class Timer:
    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when, callback):
        self.when = when
        self.callback = callback
        self.cancelled = False

    def __lt__(self, other):
        return self.when < other.when


class Run:
    """One helper process: its pipes, its exit, its limits, and the report once all are over."""

    def __init__(self, companion, message):
        self.companion = companion
        self.id = message["id"]
        self.max_stdout = message["maxStdout"]
        self.pipe_grace = message["pipeGraceMs"] / 1000.0
        self.timeout = message["timeoutMs"] / 1000.0
        self.out = Captured(self.max_stdout)
        self.err = Captured(message["maxStderr"])
        self.pid = None
        self.pidfd = None
        self.reaped = False
        self.stdin = None
        self.pending_input = b""
        self.stdout = None
        self.stderr = None
        self.killed = False
        self.done = False
        self.too_large = False
        self.timed_out = False
        self.exit_after_ms = None
        self.status = (None, None)
        self.limit = None
        self.grace = None
        self.started = 0.0

    # -- start -------------------------------------------------------------------------------

    def start(self, message):
        c = self.companion
        file = message["file"]
        env = message.get("env")
        if env is None:
            env = c.env
        fds = []
        try:
            program = find_program(file, env)
            cwd = message["cwd"]
            if cwd != c.cwd:
                os.chdir(cwd)
                c.cwd = cwd
            in_r, in_w = os.pipe()
            fds += [in_r, in_w]
            out_r, out_w = os.pipe()
            fds += [out_r, out_w]
            err_r, err_w = os.pipe()
            fds += [err_r, err_w]
            self.pid = os.posix_spawn(
                program,
                [file] + list(message["args"]),
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, in_r, 0),
                    (os.POSIX_SPAWN_DUP2, out_w, 1),
                    (os.POSIX_SPAWN_DUP2, err_w, 2),
                ],
                setsid=True,
                setsigdef=SIGNALS_TO_DEFAULT,
                setsigmask=(),
            )
        except (OSError, ValueError, TypeError) as e:
            for fd in fds:
                os.close(fd)
            name = error_name(e) if isinstance(e, OSError) else "EINVAL"
            self.finish(spawn_error="spawn %s %s" % (file, name))
            return
        # the limit counts from the moment the helper exists
        self.started = time.monotonic()
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        self.stdin, self.stdout, self.stderr = in_w, out_r, err_r
        c.runs[self.id] = self
        self.pidfd = os.pidfd_open(self.pid)
        c.sel.register(self.pidfd, selectors.EVENT_READ, self.on_exit)
        for fd, handler in ((out_r, self.on_stdout), (err_r, self.on_stderr)):
            os.set_blocking(fd, False)
            c.sel.register(fd, selectors.EVENT_READ, handler)
        say({"t": "started", "id": self.id, "pid": self.pid})
        self.limit = c.after(self.timeout, self.on_limit)
        os.set_blocking(in_w, False)
        self.pending_input = message["input"].encode("utf-8", "surrogatepass")
        self.write_input()

    # -- the helper's stdin: the request, then end of file ------------------------------------

    def write_input(self):
        if self.stdin is None:
            return
        try:
            while self.pending_input:
                written = os.write(self.stdin, self.pending_input)
                self.pending_input = self.pending_input[written:]
        except BlockingIOError:
            if not self.companion.watched(self.stdin):
                self.companion.sel.register(self.stdin, selectors.EVENT_WRITE, self.write_input)
            return
        except OSError:
            # EPIPE: the helper exited or closed stdin without reading it all; that is its business
            self.pending_input = b""
        self.close_stdin()

    def close_stdin(self):
        if self.stdin is None:
            return
        self.companion.forget(self.stdin)
        self.stdin = None

    # -- stdout, stderr ---------------------------------------------------------------------

    def take(self, name):
        """The next chunk of the helper's stdout or stderr; None when there is none (yet, or any more)."""
        fd = getattr(self, name)
        if fd is None:
            return None
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        if not chunk:
            self.companion.forget(fd)
            setattr(self, name, None)
            self.maybe_over()
            return None
        return chunk

    def on_stdout(self):
        chunk = self.take("stdout")
        if chunk is None:
            return
        self.out.keep(chunk)
        if self.out.seen > self.max_stdout and not self.too_large and not self.killed:
            self.too_large = True
            self.kill()

    def on_stderr(self):
        chunk = self.take("stderr")
        if chunk is not None:
            self.err.keep(chunk)

    # -- exit -------------------------------------------------------------------------------

    def on_exit(self):
        if self.pidfd is None:
            return
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, None
        if pid == 0:
            return  # not exited after all
        self.reaped = True
        self.companion.forget(self.pidfd)
        self.pidfd = None
        if self.done:
            self.companion.runs.pop(self.id, None)
            return
        if status is not None and os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "SIG%d" % sig
            self.status = (None, name)
        elif status is not None:
            self.status = (os.WEXITSTATUS(status), None)
        if not self.killed:
            # the helper's own exit; one caused by a kill says nothing about its run time
            self.exit_after_ms = round((time.monotonic() - self.started) * 1000)
        self.maybe_over()

    def maybe_over(self):
        # like Node's 'close': the process has exited and both its output pipes are at their end
        if self.reaped and self.stdout is None and self.stderr is None:
            self.finish(code=self.status[0], signal_name=self.status[1])

    # -- limits, kill -------------------------------------------------------------------------

    def on_limit(self):
        # Timers run after the I/O of the same loop turn, and the loop looks at the I/O once more
        # before a limit takes effect (Companion.serve): an exit and pipe ends that arrived while
        # the loop was held up are read first, so a helper that finished in time is not called late.
        if self.done or self.killed:
            return
        self.companion.limits_due.append(self)

    def time_out(self):
        if self.done or self.killed:
            return
        self.timed_out = True
        self.kill()

    def kill(self):
        if self.killed or self.done:
            return
        self.killed = True
        if self.limit is not None:
            self.limit.cancelled = True
        self.kill_group()
        self.grace = self.companion.after(self.pipe_grace, self.give_up_pipes)

    def kill_group(self):
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass  # the group is gone already

    def give_up_pipes(self):
        # a process outside the group keeps the pipes open: report without them
        for name in ("stdout", "stderr"):
            fd = getattr(self, name)
            if fd is not None:
                self.companion.forget(fd)
                setattr(self, name, None)
        self.finish(forced=True)

    # -- the report ---------------------------------------------------------------------------

    def finish(self, spawn_error=None, code=None, signal_name=None, forced=False):
        if self.done:
            return
        self.done = True
        for t in (self.limit, self.grace):
            if t is not None:
                t.cancelled = True
        self.close_stdin()
        if self.reaped or self.pid is None:
            self.companion.runs.pop(self.id, None)
        # else: the pidfd stays watched until the process is reaped (no zombies left behind)
        message = {
            "t": "done",
            "id": self.id,
            "code": code,
            "signal": signal_name,
            "forced": forced,
            # the exit status as the helper's exit gave it (unknown when the report could not wait for it)
            "exitCode": self.status[0],
            "exitAfterMs": self.exit_after_ms,
            "tooLarge": self.too_large,
            "timedOut": self.timed_out,
            "stdout": self.out.text(),
            "stdoutBytes": self.out.seen,
            "stderr": self.err.text(),
            "stderrBytes": self.err.seen,
        }
        if spawn_error is not None:
            message["spawnError"] = spawn_error
        say(message)


class Companion:
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.runs = {}
        self.timers = []
        self.env = dict(os.environ)
        self.cwd = os.getcwd()
        self.control = b""
        # runs whose time limit came due this turn, decided after one more look at the I/O
        self.limits_due = []
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, self.on_control)

    def after(self, seconds, callback):
        t = Timer(time.monotonic() + seconds, callback)
        heapq.heappush(self.timers, t)
        return t

    def watched(self, fd):
        try:
            self.sel.get_key(fd)
            return True
        except KeyError:
            return False

    def forget(self, fd):
        if self.watched(fd):
            self.sel.unregister(fd)
        os.close(fd)

    def on_control(self):
        try:
            chunk = os.read(0, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.shut_down()
        self.control += chunk
        *lines, self.control = self.control.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            kind = message.get("t")
            if kind == "run":
                Run(self, message).start(message)
            elif kind == "kill":
                run = self.runs.get(message.get("id"))
                if run is not None:
                    run.kill()

    def shut_down(self):
        # the provisioner closed the channel or died: no helper outlives it
        for run in list(self.runs.values()):
            if not run.reaped:
                run.kill_group()
        sys.exit(0)

    def serve(self):
        say({"t": "ready", "companion": "python3", "protocol": PROTOCOL})
        while True:
            timeout = None
            while self.timers and self.timers[0].cancelled:
                heapq.heappop(self.timers)
            if self.timers:
                timeout = max(0.0, self.timers[0].when - time.monotonic())
            for key, _ in self.sel.select(timeout):
                key.data()
            now = time.monotonic()
            while self.timers and (self.timers[0].cancelled or self.timers[0].when <= now):
                t = heapq.heappop(self.timers)
                if not t.cancelled:
                    t.callback()
            if self.limits_due:
                # The events read at the top of this turn are from before its handlers ran, and a
                # handler can be held up for seconds: a report to a provisioner that is not reading
                # (its event loop busy) blocks once the pipe is full. Helpers that exited meanwhile
                # are read now, before their limits are applied.
                due, self.limits_due = self.limits_due, []
                for key, _ in self.sel.select(0):
                    key.data()
                for run in due:
                    run.time_out()


def main():
    why = unsupported()
    if why is not None:
        say({"t": "unsupported", "why": why})
        return
    Companion().serve()


if __name__ == "__main__":
    main()
