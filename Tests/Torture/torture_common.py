"""Shared pieces of the torture scripts (issue 7): a real fetchd on a temp configuration, fetchctl
against it, and what /proc says about the daemon (resident memory, file descriptors, threads, CPU).
"""
import atexit, glob, hashlib, json, os, resource, shutil, signal, sqlite3, subprocess, sys, tempfile, time
from datetime import datetime


def build_shim(source, work):
    """Compiles the LD_PRELOAD shim `source` (Tests/Torture/*.c) into `work`; returns the
    library's path."""
    compiler = next((c for c in ("cc", "clang", "gcc") if shutil.which(c)), None)
    if compiler is None:
        fail(f"no C compiler (cc, clang or gcc) to build {os.path.basename(source)}")
    library = f"{work}/{os.path.splitext(os.path.basename(source))[0]}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", library, source, "-ldl"], check=True)
    return library


def torn_snapshots(cache, names):
    """The handlers among `names` whose `latest` in `cache` is not a whole snapshot (`content`
    and `meta.json` there, and belonging together: handler, size, SHA-256), as sentences. A
    handler without `latest` has not published yet: not torn."""
    found = []
    for name in names:
        latest = f"{cache}/{name}/latest"
        if not os.path.lexists(latest):
            continue
        try:
            meta = json.load(open(f"{latest}/meta.json"))
            content = open(f"{latest}/content", "rb").read()
        except (OSError, ValueError) as error:
            found.append(f"{name}: latest is not a whole snapshot: {error}")
            continue
        if meta.get("handler") != name or len(content) != meta.get("bytes") \
                or hashlib.sha256(content).hexdigest() != meta.get("sha256"):
            found.append(f"{name}: latest's content and meta.json do not belong together (torn or mismatched)")
    return found


def history_count(work, trigger=None):
    """How many fetch results the state database in `work` holds (of `trigger` only, if given)."""
    db = sqlite3.connect(f"{work}/state/state.sqlite")
    try:
        if trigger is None:
            return db.execute("SELECT count(*) FROM fetch_history").fetchone()[0]
        return db.execute("SELECT count(*) FROM fetch_history WHERE trigger = ?", (trigger,)).fetchone()[0]
    finally:
        db.close()


def fail(message):
    """Stops the run with a violation (exit status 1)."""
    sys.exit(f"VIOLATION: {message}")


class Daemon:
    """A real fetchd process: `main` is appended to etc/fetchd.toml (whose directories all point
    into the work folder), `handlers` is etc/handlers.d/torture.toml."""

    def __init__(self, bin_dir, prefix, main="", handlers="", heartbeat="1s"):
        self.bin_dir = bin_dir
        self.work = tempfile.mkdtemp(prefix=f"fetchd-{prefix}-")
        self.socket = f"{self.work}/run/control.sock"
        self.main_file = f"{self.work}/etc/fetchd.toml"
        self.handlers_file = f"{self.work}/etc/handlers.d/torture.toml"
        self.log_path = f"{self.work}/fetchd.log"
        os.makedirs(f"{self.work}/etc/handlers.d")
        self.heartbeat = heartbeat
        self.write_main(main)
        self.write_handlers(handlers)
        self.proc = None

    def write_main(self, extra):
        """Writes the main file; replaced by a rename, so a reload never reads half a file."""
        self._write(self.main_file, f'heartbeat = "{self.heartbeat}"\nkill_grace = "1s"\ncache_dir = "{self.work}/cache"\n'
                                    f'state_dir = "{self.work}/state"\nruntime_dir = "{self.work}/run"\n{extra}\n')

    def write_handlers(self, text):
        """Writes the handlers file, replaced by a rename."""
        self._write(self.handlers_file, text)

    @staticmethod
    def _write(path, text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    def start(self, env=None, launcher=(), arguments=(), timeout=60, cores=False):
        """Starts fetchd (after `launcher`, with `arguments` added) and waits until its socket answers.
        With `cores`, a crash leaves a core dump in the work folder (`crash_frames`) instead of
        the Swift backtracer's report."""
        environment = dict(os.environ, **(env or {}))
        if cores:
            environment["SWIFT_BACKTRACE"] = "enable=no"
        log = open(self.log_path, "ab")
        command = [*launcher, f"{self.bin_dir}/fetchd", "--config", self.main_file, *arguments]
        unlimited_cores = (lambda: resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)) if cores else None
        self.proc = subprocess.Popen(command, stdout=log, stderr=log, env=environment, start_new_session=True,
                                     cwd=self.work if cores else None, preexec_fn=unlimited_cores)
        # A run stopped by a violation leaves no daemon behind (TORTURE_KEEP=1 keeps it to debug).
        if not os.environ.get("TORTURE_KEEP"):
            atexit.register(self.kill)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = self.fetchctl("ping", timeout=5)
            if result is not None and result.returncode == 0:
                return
            if self.proc.poll() is not None:
                fail(f"fetchd exited with {self.proc.returncode} at start; see {self.log_path}")
            time.sleep(0.05)
        fail(f"fetchd did not answer within {timeout} s; see {self.log_path}")

    def crash_frames(self):
        """The innermost frames of the crash whose core dump is in the work folder (see `start`),
        as gdb prints them, the dump then removed; None without a dump (kernel.core_pattern may
        send it elsewhere) or without gdb."""
        dumps = glob.glob(f"{self.work}/core*")
        if not dumps:
            return None
        try:
            result = subprocess.run(["gdb", "-batch", "-ex", "bt 4", f"{self.bin_dir}/fetchd", dumps[0]],
                                    capture_output=True, text=True, timeout=120)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return None
        for dump in dumps:
            os.unlink(dump)
        return "\n".join(line for line in result.stdout.splitlines() if line.startswith("#"))

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def fetchctl(self, *args, timeout=30):
        """Runs fetchctl on this daemon's socket; None when it did not finish in time."""
        try:
            return subprocess.run([f"{self.bin_dir}/fetchctl", *args, "--socket", self.socket],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def status(self, timeout=60):
        """`fetchctl status --json`, parsed; fails the run when it does not answer."""
        result = self.fetchctl("status", "--json", timeout=timeout)
        if result is None or result.returncode != 0:
            fail(f"status did not answer: {result and result.stderr}")
        return json.loads(result.stdout)

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        """SIGTERM, then waits; returns the exit status (SIGKILL after 60 s)."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            fail("fetchd did not stop within 60 s of SIGTERM")

    def kill(self):
        """SIGKILL to the daemon's process group (it and its handlers), if it still runs."""
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def remove(self):
        subprocess.run(["rm", "-rf", self.work])


def proc_status(pid, key):
    """A number from /proc/PID/status (VmRSS in KiB, Threads)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def rss_kib(pid):
    return proc_status(pid, "VmRSS")


def threads(pid):
    return proc_status(pid, "Threads")


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid):
    """User + system CPU time the process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_date(text):
    """An ISO 8601 date from a control-socket report, as Unix seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def wait_until(condition, timeout, interval=0.1):
    """Polls `condition` until it holds or `timeout` seconds pass; returns whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())
