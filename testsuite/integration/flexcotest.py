# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared helpers for FlexCo's Python tests: TAP output and a local grid.

TAP:
    plan(n)                     "1..n" (optional: done() prints it otherwise)
    ok(cond, name, diag=None)   one result line; diag printed as "# ..." lines
    is_(got, expected, name)    ok() that shows both values when they differ
    skip(name, reason)          one "ok N - name # SKIP reason" line
    skip_all(reason)            "1..0 # SKIP reason" and exit 0
    bail_out(reason)            "Bail out! reason" and exit 1
    note(msg)                   "# msg"
    done()                      exit code: 0 if every test passed as planned
    run_main(fn)                run fn(); an exception becomes a failed test

Grid (a context manager; always stops the grid, also on exceptions):
    with Grid() as g:           contrib/localgrid start, own run dir and ports
        g.status()              parsed `localgrid status --json`
        g.env("beta")           os.environ with SLURM_CONF of beta
        g.run("beta", [...])    a Slurm command against beta
        g.submit("beta", [...]) sbatch --parsable, returns the job id
        g.job("beta", jobid)    `scontrol show job -o` as a dict
        g.show("beta", "reservation", name)   any `scontrol show -o` as a dict
        g.wait_job(...)         wait for a job state
        g.wait_for(pred, timeout, what)

Trees: FLEXCO_SRCDIR and FLEXCO_BUILDDIR (set by `make check`; both default
to the repository root for manual runs).  FLEXCO_LOCALGRID_ARGS holds extra
`localgrid start` arguments, e.g. "--no-plugin".
"""

import hashlib
import random
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.normpath(os.path.join(_HERE, "..", ".."))

# --------------------------------------------------------------------------
# trees


def srcdir():
    return os.environ.get("FLEXCO_SRCDIR") or _REPO


def builddir():
    return os.environ.get("FLEXCO_BUILDDIR") or _REPO


def make_env():
    """os.environ without the outer make's variables, so that a make the
    test runs is not a sub-make of `make check` (no jobserver, no -k)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


def make_value(directory, expr):
    """What make expands expr to in directory's Makefile, or None."""
    r = subprocess.run(["make", "-C", directory, "-s", "--no-print-directory",
                        "-f", "Makefile", "-f", "-", "flexco-print-value"],
                       input="flexco-print-value:\n\t@echo '%s'\n" % expr,
                       capture_output=True, text=True, env=make_env(), timeout=60)
    return r.stdout.strip() if r.returncode == 0 else None


def make_in(directories, target, destdir, timeout=600):
    """`make TARGET DESTDIR=destdir` in each directory: (status, output);
    the status is non-zero if any make failed."""
    rc, out = 0, ""
    for d in directories:
        r = subprocess.run(["make", "-C", d, target, "DESTDIR=" + destdir],
                           capture_output=True, text=True, env=make_env(), timeout=timeout)
        rc |= r.returncode
        out += r.stdout + r.stderr
    return rc, out


_short_dir = None


def short_dir():
    """A directory with a short path (/tmp/fx-XXXXXXXX), for Unix sockets:
    sun_path holds 107 bytes, and a clone under a long path would not fit
    them.  Removed when the test ends."""
    global _short_dir
    if _short_dir is None:
        import atexit
        import tempfile
        _short_dir = tempfile.mkdtemp(prefix="fx-", dir="/tmp")
        atexit.register(shutil.rmtree, _short_dir, True)
    return _short_dir


_scratch = []


def scratch_dir(prefix):
    """A new directory under the system's temporary directory for a test's
    own files (part jobs' output, a second daemon's state, hold files).
    Removed when the test ends, like a grid's run directory: kept (and
    named) when a check failed or FLEXCO_KEEP_RUN is set."""
    import atexit
    import tempfile
    d = tempfile.mkdtemp(prefix=prefix)
    if not _scratch:
        atexit.register(_scratch_end)
    _scratch.append(d)
    return d


def _scratch_end():
    if _failed or os.environ.get("FLEXCO_KEEP_RUN"):
        for d in _scratch:
            note(f"kept {d}")
        return
    for d in _scratch:
        shutil.rmtree(d, ignore_errors=True)


def read_file(path):
    """A text file's contents, "" if it cannot be read (a log not written
    yet)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


TEST_USER = "flexcotest"
TEST_UID = 64001


def test_user(name=TEST_USER, uid=TEST_UID):
    """(uid, name) of an unprivileged account for tests that act as a user
    other than root: "flexcotest", uid and gid 64001 (above the plugin's
    MinUserUid), created with its group where it is missing (a second one
    by name and uid, e.g. "flexcotest2", 64002).  Not nobody: Slurm 25.11
    and later refuse a reservation for nobody, whom they treat as no user
    at all (doc/decisions.md, Tests)."""
    import grp
    import pwd
    try:
        return pwd.getpwnam(name).pw_uid, name
    except KeyError:
        pass
    try:
        grp.getgrgid(uid)
    except KeyError:
        subprocess.run(["groupadd", "-g", str(uid), name],
                       check=True, capture_output=True, timeout=60)
    subprocess.run(["useradd", "-M", "-N", "-g", str(uid), "-u",
                    str(uid), "-d", "/nonexistent", "-s",
                    "/usr/sbin/nologin", "-c", "FlexCo for Slurm tests",
                    name], check=True, capture_output=True, timeout=60)
    return pwd.getpwnam(name).pw_uid, name


def slurm_version():
    """The installed slurmctld's version as `slurmctld -V` prints it
    ("22.05.8"), or "" if it cannot be run."""
    prog = os.environ.get("SLURMCTLD") or shutil.which("slurmctld") \
        or "/usr/sbin/slurmctld"
    try:
        out = subprocess.run([prog, "-V"], capture_output=True, text=True,
                             timeout=30, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    words = out.split()
    return words[-1] if words else ""


def localgrid_path():
    return os.path.join(srcdir(), "contrib", "localgrid")


def test_name():
    """Name of the running test program, e.g. 'test_localgrid'."""
    return os.path.splitext(os.path.basename(sys.argv[0]))[0] or "test"


# --------------------------------------------------------------------------
# TAP

_count = 0
_failed = 0
_planned = None


def _out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def note(msg):
    for line in str(msg).splitlines() or [""]:
        _out("# " + line)


def plan(n):
    global _planned
    _planned = n
    _out(f"1..{n}")


def ok(cond, name, diag=None):
    """One TAP result.  Returns bool(cond) so callers can branch on it."""
    global _count, _failed
    _count += 1
    name = " ".join(str(name).split()).replace("#", "\\#")
    if cond:
        _out(f"ok {_count} - {name}")
    else:
        _failed += 1
        _out(f"not ok {_count} - {name}")
        if diag:
            note(diag)
    return bool(cond)


def is_(got, expected, name):
    return ok(got == expected, name, f"got:      {got!r}\nexpected: {expected!r}")


def skip(name, reason):
    global _count
    _count += 1
    _out(f"ok {_count} - {name} # SKIP {reason}")


def skip_all(reason):
    _out(f"1..0 # SKIP {reason}")
    sys.exit(0)


def bail_out(reason):
    _out(f"Bail out! {reason}")
    sys.exit(1)


def done():
    """Print the plan if none was given; return the exit code."""
    if _planned is None:
        _out(f"1..{_count}")
    elif _planned != _count:
        note(f"planned {_planned} tests but ran {_count}")
        return 1
    if _failed:
        note(f"failed {_failed} of {_count} tests")
    return 1 if _failed else 0


def run_main(fn):
    """Run a test's main(); an uncaught exception is one failed test.  Its
    last note is its wall time ("# wall time: N s"), which CI's budget is
    counted from (contrib/run-tests prints the slowest)."""
    started = time.monotonic()
    try:
        fn()
    except SystemExit:
        raise
    except BaseException as e:  # report, then let done() count it
        ok(False, f"no unexpected exception ({type(e).__name__}: {e})",
           traceback.format_exc())
    http = sys.modules.get("flexcohttp")
    if http is not None:  # the responses it received against the OpenAPI files
        http.report(ok, note)
    note("wall time: %.0f s" % (time.monotonic() - started))
    sys.exit(done())


# --------------------------------------------------------------------------
# waiting and processes


def wait_for(predicate, timeout, what, interval=0.2):
    """Poll predicate() until it returns a true value and return that value.
    At the timeout return the last (false) value and print a note: the
    caller's ok() then fails with the reason.  Never a bare sleep.  A
    connection refused or reset (a daemon still starting: the plugin
    listens only once slurmctld has loaded its state) counts as false."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except (ConnectionRefusedError, ConnectionResetError) as e:
            value = False
            if time.monotonic() >= deadline:
                note(f"last error: {e}")
        if value:
            return value
        if time.monotonic() >= deadline:
            note(f"timed out after {timeout}s waiting for {what} "
                 f"(last value: {value!r})")
            return value
        time.sleep(interval)


def proc_stat(pid):
    """{'comm','state','ppid','sid','start'} of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    lp, rp = data.find("("), data.rfind(")")
    fields = data[rp + 2:].split()
    if fields[0] in "ZX":
        return None  # a zombie is dead; only its parent's wait() is missing
    return {"comm": data[lp + 1:rp], "state": fields[0],
            "ppid": int(fields[1]), "sid": int(fields[3]),
            "start": int(fields[19])}


def pid_alive(pid, start=None):
    """True if pid runs (and, given its start time, is the same process)."""
    st = proc_stat(pid)
    return bool(st) and (start is None or st["start"] == start)


def processes():
    """{pid: stat} of every live process."""
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st:
                procs[int(name)] = st
    return procs


def proc_environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read().split(b"\0")
    except OSError:
        return {}
    env = {}
    for item in raw:
        k, sep, v = item.decode("utf-8", "replace").partition("=")
        if sep:
            env[k] = v
    return env


def proc_cwd(pid):
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def listening_ports():
    """TCP ports with a socket in LISTEN state (IPv4 and IPv6)."""
    ports = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "0A":
                        ports.add(int(parts[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port(avoid=()):
    """A TCP port nothing listens on, for a server a test starts itself.
    Outside the kernel's ephemeral range and the grids' blocks: a port the
    kernel hands out for bind(0) is free only until some client's connect
    takes it (seen: slurmctld "Address already in use" while other tests
    ran beside), which never happens outside that range."""
    low, high = _ephemeral_range()
    candidates = [p for p in range(PORT_HIGH + 1, 65536)
                  if not (low <= p <= high) and p not in avoid]
    if not candidates:
        candidates = list(range(PORT_HIGH + 1, low))
    listen = listening_ports()
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.choice(candidates)
        if port not in listen and port_free(port):
            return port
    raise GridError("no free port outside the ephemeral range")


def tcp_accepts(port, timeout=0.5, host="127.0.0.1"):
    """Something accepts TCP connections on host:port (127.0.0.1)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def require_grid_tools():
    """Skip the whole test (with the reason) if a local grid cannot run."""
    if os.geteuid() != 0:
        skip_all("needs root (slurmd and slurmstepd run as root)")
    for prog in ("slurmctld", "slurmd", "munged", "sbatch", "scontrol",
                 "sinfo", "squeue"):
        if not (shutil.which(prog) or os.access(f"/usr/sbin/{prog}", os.X_OK)):
            skip_all(f"{prog} not installed (run contrib/install-deps)")
    if not os.access(localgrid_path(), os.X_OK):
        skip_all(f"{localgrid_path()} not found")


# --------------------------------------------------------------------------
# the grid

# Test grids take their ports from [PORT_LOW, PORT_HIGH): below Linux's
# ephemeral range (32768-60999), so no outgoing connection can take one,
# and away from localgrid's default base port 26000 used by hand.
PORT_LOW = 20000
PORT_HIGH = 32700
MANUAL_BASE = 26000
PORTS_PER_CLUSTER = 100   # localgrid's block per cluster


class GridError(Exception):
    pass


class Terminated(BaseException):
    """SIGTERM arrived (e.g. a harness timeout): unwind so grids stop."""


def _on_sigterm(signum, frame):
    raise Terminated(f"signal {signum}")


def pick_base_port(name, clusters, avoid=()):
    """A base port for `clusters` clusters derived from the test's name, so
    that different tests use different ports, and checked free."""
    size = PORTS_PER_CLUSTER * clusters
    slots = [PORT_LOW + i * size for i in range((PORT_HIGH - PORT_LOW) // size)]
    slots = [b for b in slots if not (b < MANUAL_BASE + 300 and MANUAL_BASE < b + size)
             and b not in avoid]
    first = int(hashlib.sha1(name.encode()).hexdigest(), 16) % len(slots)
    listen = listening_ports()
    for i in range(len(slots)):
        base = slots[(first + i) % len(slots)]
        block = range(base, base + size)
        if not listen.intersection(block) and all(port_free(p) for p in block):
            return base
    raise GridError(f"no free block of {size} ports in {PORT_LOW}-{PORT_HIGH}")


class Grid:
    """A local grid for one test: `contrib/localgrid start` with a run dir
    ($FLEXCO_BUILDDIR/testsuite/integration/run-<test>) and ports of its
    own.  Leaving the `with` block always runs `localgrid stop`."""

    def __init__(self, name=None, clusters=None, nodes=None, cpus=None,
                 args=(), timeout=120):
        self.name = name or test_name()
        self.nodes = nodes
        self.cpus = cpus
        if clusters is None:
            clusters = len(nodes) if isinstance(nodes, (list, tuple)) else 3
        self.clusters = clusters
        self.extra = list(args) + shlex.split(
            os.environ.get("FLEXCO_LOCALGRID_ARGS", ""))
        # FLEXCO_TEST_STORAGE=postgresql: the grid's flexcod keeps its state
        # in a PostgreSQL the grid starts (pgserver.py), for running any
        # flexcod test on it by hand (tests that open StateFile themselves
        # are SQLite's); CI runs them on SQLite, and test_flexcod_postgresql
        # on PostgreSQL.
        self.pg = None
        if os.environ.get("FLEXCO_TEST_STORAGE", "sqlite") == "postgresql":
            from pgserver import PgServer
            self.pg = PgServer()
            self.extra += ["--flexcod-option", "StorageType=postgresql",
                           "--flexcod-option",
                           "StorageLoc=postgresql:///flexcod?host=%s&user=flexco" % self.pg.dir]
        self.timeout = timeout
        self.run_dir = os.path.join(builddir(), "testsuite", "integration",
                                    f"run-{self.name}")
        self.base_port = None
        self.start_output = ""
        self.start_seconds = None
        self._envs = {}

    # -- lifecycle ---------------------------------------------------------

    def localgrid(self, *argv, timeout=None):
        cmd = [localgrid_path(), *argv, "--run-dir", self.run_dir]
        if argv and argv[0] == "start":
            cmd += ["--builddir", builddir()]
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout or self.timeout + 60,
                              stdin=subprocess.DEVNULL)

    def start(self):
        os.makedirs(os.path.dirname(self.run_dir), exist_ok=True)
        if os.path.exists(os.path.join(self.run_dir, "state.json")):
            r = self.stop()  # left over by a killed earlier run of this test
            note(f"stopped a leftover grid in {self.run_dir}: {r.stdout.strip()}")
        tried = []
        for attempt in range(3):
            self.base_port = pick_base_port(self.name, self.clusters, tried)
            tried.append(self.base_port)
            argv = ["start", "--base-port", str(self.base_port),
                    "--clusters", str(self.clusters),
                    "--timeout", str(self.timeout)]
            if self.nodes is not None:
                argv += ["--nodes", ",".join(map(str, self.nodes))
                         if isinstance(self.nodes, (list, tuple)) else str(self.nodes)]
            if self.cpus is not None:
                argv += ["--cpus", str(self.cpus)]
            argv += self.extra
            t0 = time.monotonic()
            r = self.localgrid(*argv)
            self.start_seconds = time.monotonic() - t0
            self.start_output = (r.stdout + r.stderr).strip()
            if r.returncode == 0:
                note(f"grid {self.name}: {r.stdout.strip()}")
                return self
            if "in use" not in r.stderr:  # only a port race is worth a retry
                break
        raise GridError(f"localgrid start failed (exit {r.returncode}): "
                        f"{self.start_output}")

    def stop(self):
        """`localgrid stop`; returns the CompletedProcess."""
        t0 = time.monotonic()
        r = self.localgrid("stop", timeout=180)
        self.stop_seconds = time.monotonic() - t0
        return r

    def __enter__(self):
        signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            if self.pg:
                self.pg.start()
                self.pg.create_database("flexcod")
            return self.start()
        except BaseException:
            self.stop()  # a failed start cleans up itself; be sure anyway
            if self.pg:
                self.pg.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        r = self.stop()
        if self.pg:  # after flexcod: stopped by its pid
            self.pg.__exit__(None, None, None)
        for proc in getattr(self, "_restarted", []):
            try:  # localgrid stop ended it; reap it
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                note(f"restarted daemon {proc.pid} outlived localgrid stop")
                proc.kill()
                proc.wait()
        if r.returncode != 0:
            note(f"localgrid stop failed (exit {r.returncode}): "
                 f"{(r.stdout + r.stderr).strip()}")
        # Logs are kept for a failure (or with FLEXCO_KEEP_RUN=1).
        if exc_type is None and r.returncode == 0 and not _failed \
                and not os.environ.get("FLEXCO_KEEP_RUN"):
            shutil.rmtree(self.run_dir, ignore_errors=True)
        else:
            note(f"grid logs kept in {self.run_dir}")
        return False

    # -- queries -----------------------------------------------------------

    def status(self):
        r = self.localgrid("status", "--json", timeout=60)
        try:
            return json.loads(r.stdout)
        except ValueError:
            raise GridError(f"localgrid status --json: exit {r.returncode}, "
                            f"{r.stderr.strip()}")

    def plugin_settings(self, cluster):
        """The settings the plugin logged at its latest start (one line
        "slurmctld/flexco: <path>/flexco.conf: Key=Value ...") as a dict,
        or None.  flexco.conf is not part of `scontrol show config`."""
        path = os.path.join(self.run_dir, cluster, "log", "slurmctld.log")
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            return None
        found = None
        for line in text.splitlines():
            m = re.search(r"slurmctld/flexco: \S+/flexco\.conf: (.*)$", line)
            if m:
                found = dict(kv.split("=", 1) for kv in m.group(1).split()
                             if "=" in kv)
        return found

    def cluster_names(self):
        return [c["name"] for c in self.status()["clusters"]]

    def env(self, cluster):
        """os.environ (without SLURM_*) plus what `localgrid env CLUSTER`
        exports: SLURM_CONF, and PATH for a cluster of another Slurm
        release (its own sbatch, squeue, ... run in its chroot)."""
        if cluster not in self._envs:
            r = self.localgrid("env", cluster, timeout=30)
            words = shlex.split(r.stdout)
            pairs = {}
            for i in range(0, len(words) - 1, 2):
                if words[i] == "export" and "=" in words[i + 1]:
                    k, v = words[i + 1].split("=", 1)
                    pairs[k] = v
            if r.returncode != 0 or "SLURM_CONF" not in pairs \
                    or set(pairs) - {"SLURM_CONF", "PATH"} \
                    or len(words) != 2 * len(pairs):
                raise GridError(f"localgrid env {cluster}: exit {r.returncode}, "
                                f"{(r.stdout + r.stderr).strip()}")
            self._envs[cluster] = pairs
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env.update(self._envs[cluster])
        return env

    def run(self, cluster, argv, timeout=60, **kw):
        """Run argv against the cluster; CompletedProcess with text output."""
        return subprocess.run(argv, env=self.env(cluster), capture_output=True,
                               text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL, **kw)

    def submit(self, cluster, argv):
        """sbatch --parsable ARGV; returns the job id (str) or raises."""
        r = self.run(cluster, ["sbatch", "--parsable", *argv])
        jobid = r.stdout.strip().split(";")[0]
        if r.returncode != 0 or not jobid.isdigit():
            raise GridError(f"sbatch on {cluster} failed (exit {r.returncode}): "
                            f"{r.stderr.strip()}")
        return jobid

    def show(self, cluster, kind, name):
        """`scontrol show KIND -o NAME` (job, reservation, node, ...) as a
        dict of its Key=Value words, {} if it does not exist."""
        r = self.run(cluster, ["scontrol", "show", kind, "-o", str(name)])
        fields = {}
        if r.returncode == 0 and "not found" not in r.stdout:
            for word in r.stdout.split():
                k, sep, v = word.partition("=")
                if sep and k not in fields:
                    fields[k] = v
        return fields

    def job(self, cluster, jobid):
        """`scontrol show job -o JOBID` as a dict ({} if unknown)."""
        return self.show(cluster, "job", jobid)

    def wait_job(self, cluster, jobid, states=("COMPLETED",), timeout=60):
        """Wait until the job's state is in states or terminal; return the
        last job dict (check its JobState)."""
        terminal = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                    "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                    "PREEMPTED"}
        last = {}

        def reached():
            last.clear()
            last.update(self.job(cluster, jobid))
            st = last.get("JobState")
            return st in states or st in terminal
        self.wait_for(reached, timeout, f"job {jobid} on {cluster} to be "
                      + "/".join(states))
        return dict(last)

    def expand_nodes(self, cluster, nodelist):
        r = self.run(cluster, ["scontrol", "show", "hostnames", nodelist])
        return r.stdout.split()

    def restart_slurmctld(self, cluster, while_down=None, timeout=60, sig=signal.SIGTERM):
        """Stop the cluster's slurmctld (sig, SIGTERM by default; by pid), run while_down()
        if given, start it again exactly as localgrid did (same argv,
        environment, working directory and output file) and wait until it
        answers.  The new process carries localgrid's environment mark, so
        `localgrid stop` ends it too.  Returns the new pid."""
        c = {x["name"]: x for x in self.status()["clusters"]}[cluster]
        pid = c["slurmctld_pid"]
        if pid is None:
            # localgrid knows only the slurmctld it started: after a first
            # restart, the one started here (still running) is the one
            mine = [p for p in getattr(self, "_restarted", [])
                    if p.poll() is None
                    and getattr(p, "flexco_cluster", None) == cluster]
            pid = mine[-1].pid if mine else None
        if pid is None:
            raise GridError(f"no running slurmctld of {cluster} to restart")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        env = proc_environ(pid)
        cwd = proc_cwd(pid) or "/"
        out_path = os.readlink(f"/proc/{pid}/fd/1")
        os.kill(pid, sig)
        if not wait_for(lambda: not pid_alive(pid), timeout,
                        f"slurmctld {pid} of {cluster} to exit"):
            raise GridError(f"slurmctld {pid} of {cluster} did not stop")
        if while_down:
            while_down()
        site = c.get("site")
        if site:
            # localgrid --sites: in the site's namespace again, with its
            # own /etc files (its user database), as localgrid started it
            argv = site["exec"] + argv
        out = open(out_path, "ab") if out_path.startswith("/") else subprocess.DEVNULL
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True)
        if out is not subprocess.DEVNULL:
            out.close()
        proc.flexco_cluster = cluster
        self._restarted = getattr(self, "_restarted", []) + [proc]

        def up():
            r = self.run(cluster, ["scontrol", "ping"], timeout=30)
            return r.returncode == 0 and "UP" in r.stdout
        if not wait_for(up, timeout, f"restarted slurmctld of {cluster} to answer"):
            raise GridError(f"restarted slurmctld of {cluster} does not answer")
        port = c.get("plugin_port")
        host = site["addr"] if site else "127.0.0.1"
        if port and not wait_for(lambda: tcp_accepts(port, host=host), timeout,
                                 f"the plugin of {cluster} to listen again"):
            raise GridError(f"the restarted plugin of {cluster} does not listen")
        return proc.pid

    def log_tail(self, cluster, daemon="slurmctld", n=20):
        path = os.path.join(self.run_dir, cluster, "log", f"{daemon}.log")
        try:
            with open(path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError as e:
            return str(e)

    @staticmethod
    def wait_for(predicate, timeout, what, interval=0.2):
        return wait_for(predicate, timeout, what, interval)
