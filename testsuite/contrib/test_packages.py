#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian packages as a site gets them: built from a fresh copy of the
tree, installed into a fresh Debian root, run with the installed files
only, and a co-allocation through them.

For Debian 12 (bookworm, Slurm 22.05) and then Debian 13 (trixie, Slurm
24.11), each in turn:

1. `dpkg-buildpackage -b -us -uc` in a copy of the tree (a `git clone` of
   the committed tree, or a plain copy of make distcheck's unpacked one),
   inside contrib/slurm-chroot's build chroot of that suite (`setup --suite`,
   cached; it holds debhelper and lintian), must make slurm-flexco-plugin,
   flexcod and sreserve; `lintian --fail-on error` on the .changes passes.
2. A fresh root: a copy of contrib/slurm-chroot's bare debootstrap root of
   the suite (`base --suite`, cached under /var/cache/flexco; the mirror is
   the machine's own, from its apt sources).  `apt-get install ./*.deb`
   there takes slurmctld, munge and the libraries from Debian as the
   packages' dependencies; then `apt-get install slurmd`, as on a compute
   node.  The packages' maintainer scripts print no warning.
3. In that root (contrib/slurm-chroot exec --isolated: its own /tmp, no
   source or build tree visible), as a site admin would: the MUNGE key and
   munged as user munge; two clusters, alpha and beta, of two nodes each
   (slurmctld as SlurmUser=slurm, slurmd -N per node, a free block of
   ports), PluginDir where the package put the plugin, flexco.conf beside
   each slurm.conf (/etc/slurm/<cluster>/); flexcod.conf in /etc/flexco.
   There is no systemd running as PID 1 on the machines this runs on, so
   flexcod is started the way the installed flexcod.service says: its
   ExecStart, as its User= and Group=, with its UMask=, NoNewPrivileges=
   and an empty capability bounding set, after making its RuntimeDirectory=
   and LogsDirectory= as systemd would.  /var/lib/flexco must already be
   there, 0700 and the flexco user's (the package makes it).  The
   installed `sreserve submit`, as an ordinary user, of a 3-node job (more
   than either cluster has) must complete on both clusters: `sreserve
   show` says COMPLETED and each part's output file holds that cluster's
   name.

Every process started is stopped by its pid, the root is deleted (its
mounts live in private mount namespaces that end with the processes).
Needs root and the Debian mirror; the first run also makes the cached
chroots and roots (2-5 minutes each on a busy machine).  Measured with
them cached, on 2 cores shared with other builds: 485 s for both
releases, of which the two package builds took 214 s and 206 s; 946 s
when the machine was busier (doc/admin.md, "How the packages are
tested")."""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import flexcotest as t

SUITES = (("bookworm", "Debian 12"), ("trixie", "Debian 13"))
PACKAGES = ("slurm-flexco-plugin", "flexcod", "sreserve")
CLUSTERS = ("alpha", "beta")
NODES = 2
USER = "alice"
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "HOME": "/root", "LANG": "C.UTF-8"}


def cache_dir():
    return os.environ.get("FLEXCO_CACHE") or "/var/cache/flexco"


def tool():
    return os.path.join(t.srcdir(), "contrib", "slurm-chroot")


def run(argv, timeout, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


def fresh_copy(src, dest):
    """The committed tree (git clone) of a checkout, else a plain copy of
    it without build trees (make distcheck's unpacked tarball)."""
    if os.path.exists(os.path.join(src, ".git")):
        r = run(["git", "clone", "--quiet", "--no-hardlinks", src, dest], 300)
        return r.returncode == 0, "git clone: " + r.stderr[-500:]

    def builds(d, names):
        if os.path.abspath(d) != os.path.abspath(src):
            return []
        return [n for n in names if n in ("build", "_build", "_inst", "autom4te.cache")
                or (n.startswith("build-") and n != "build-aux") or n.startswith("flexco-")]
    shutil.copytree(src, dest, symlinks=True, ignore=builds)
    for d, _, _ in os.walk(dest):
        os.chmod(d, 0o755)
    return True, "copied"


class Root:
    """A fresh root and the processes started in it."""

    def __init__(self, path):
        self.path = path
        self.procs = []   # (name, Popen)

    def argv(self, cmd, user=None):
        pre = [tool(), "exec", "--chroot", self.path, "--isolated", "--"]
        if user:
            pre += ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--"]
        return pre + list(cmd)

    def run(self, cmd, user=None, env=None, timeout=120):
        return run(self.argv(cmd, user), timeout, cwd="/", env=dict(ENV, **(env or {})))

    def start(self, name, cmd, log, user=None, env=None):
        """A daemon in the foreground; slurm-chroot execs all the way, so
        the Popen's pid is the daemon's."""
        out = open(os.path.join(self.path, log.lstrip("/")), "ab")
        p = subprocess.Popen(self.argv(cmd, user), cwd="/", env=dict(ENV, **(env or {})),
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        self.procs.append((name, p))
        return p

    def file(self, path):
        return os.path.join(self.path, path.lstrip("/"))

    def write(self, path, text, mode=0o644, owner=None):
        f = self.file(path)
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "w") as h:
            h.write(text)
        os.chmod(f, mode)
        if owner:
            os.chown(f, *owner)

    def ids(self, name):
        """(uid, gid) of a user of the root's own /etc/passwd."""
        with open(self.file("/etc/passwd")) as f:
            for line in f:
                p = line.split(":")
                if p[0] == name:
                    return int(p[2]), int(p[3])
        return None

    def mkdir(self, path, mode, owner):
        f = self.file(path)
        os.makedirs(f, exist_ok=True)
        os.chmod(f, mode)
        os.chown(f, *owner)

    def pids_inside(self):
        """Every process on the machine whose root is this root."""
        found = []
        real = os.path.realpath(self.path)
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.readlink("/proc/%s/root" % d) == real:
                        found.append(int(d))
                except OSError:
                    pass
        return found

    def stop(self):
        """SIGTERM to each process started, newest first, then SIGKILL to
        whatever is left; returns what needed a SIGKILL."""
        hard = []
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    hard.append(name)
                    p.kill()
                    p.wait(timeout=30)
        # slurmstepd and the like, children of those daemons
        for pid in self.pids_inside():
            hard.append("pid %d" % pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        t.wait_for(lambda: not self.pids_inside(), 30, "the root's processes to end")
        return hard

    def remove(self):
        real = os.path.realpath(self.path)
        with open("/proc/self/mountinfo") as f:
            mounted = [ln.split()[4] for ln in f
                       if ln.split()[4] == real or ln.split()[4].startswith(real + "/")]
        if mounted:
            t.note("not removing %s: mounted below it: %r" % (real, mounted))
            return False
        subprocess.run(["rm", "-rf", "--one-file-system", real], timeout=300)
        return not os.path.exists(real)


def unit_settings(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;[" or "=" not in line:
                continue
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def grid_ports(suite):
    """Ports for both clusters and flexcod: a free block outside the
    ephemeral range, as the other tests take (the root shares the host's
    network)."""
    base = t.pick_base_port("test_packages-" + suite, 1)
    ports = {}
    for i, c in enumerate(CLUSTERS):
        b = base + 10 * i
        ports[c] = {"ctld": b, "plugin": b + 1, "nodes": [b + 2 + j for j in range(NODES)]}
    return ports, base + 50


def slurm_conf(name, ports, plugin_dir, first_job):
    lines = [
        "# A cluster of FlexCo's package test (testsuite/contrib/test_packages.py).",
        "ClusterName=%s" % name,
        "SlurmctldHost=localhost(127.0.0.1)",
        "SlurmctldPort=%d" % ports["ctld"],
        "SlurmdPort=%d" % ports["nodes"][0],
        "SlurmUser=slurm",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "PluginDir=%s" % plugin_dir,
        "PrEpPlugins=script,flexco",
        "StateSaveLocation=/var/lib/slurm/%s" % name,
        "SlurmdSpoolDir=/var/spool/slurmd/%n",
        "SlurmctldPidFile=/run/slurm/%s-slurmctld.pid" % name,
        "SlurmdPidFile=/run/slurm/%s-slurmd-%%n.pid" % name,
        "SlurmctldLogFile=/var/log/slurm/%s-slurmctld.log" % name,
        "SlurmdLogFile=/var/log/slurm/%s-slurmd-%%n.log" % name,
        "FirstJobId=%d" % first_job,
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerParameters=bf_interval=5,batch_sched_delay=0",
        "ReturnToService=2",
        "MailProg=/bin/true",
        "",
    ]
    for j in range(NODES):
        lines.append("NodeName=%s%d NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=2 "
                     "State=UNKNOWN" % (name, j + 1, ports["nodes"][j]))
    lines.append("PartitionName=batch Nodes=%s[1-%d] Default=YES OverSubscribe=EXCLUSIVE "
                 "MaxTime=INFINITE State=UP" % (name, NODES))
    return "\n".join(lines) + "\n"


def build(suite, top):
    """Build the packages in the suite's build chroot: the .deb paths by
    package, or None."""
    r = run([tool(), "setup", "--suite", suite], 1800, env=dict(os.environ))
    chroot = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else ""
    if not t.ok(chroot and os.path.isdir(chroot),
                "%s: contrib/slurm-chroot setup --suite %s gives the build chroot %s"
                % (suite, suite, chroot), r.stderr[-2000:]):
        return None
    source = ""
    with open(os.path.join(chroot, ".flexco-chroot")) as f:
        for line in f:
            if line.startswith("source "):
                source = line.split(None, 1)[1].strip()
    tree = os.path.join(top, "flexco")
    good, how = fresh_copy(t.srcdir(), tree)
    t0 = time.monotonic()
    r = run([tool(), "exec", "--chroot", chroot, "--", "env",
             "FLEXCO_SLURM_SOURCE=" + source, "DEB_BUILD_OPTIONS=parallel=2",
             "sh", "-c", 'cd "$1" && exec dpkg-buildpackage -b -us -uc', "sh", tree],
            1800, cwd="/", env=dict(ENV)) if good else None
    debs = {}
    for n in sorted(os.listdir(top)):
        m = re.fullmatch(r"([a-z0-9.+-]+)_[^_]+_[a-z0-9]+\.deb", n)
        if m:
            debs[m.group(1)] = os.path.join(top, n)
    t.ok(good and r.returncode == 0 and set(PACKAGES) <= set(debs),
         "%s: dpkg-buildpackage -b -us -uc in a fresh copy builds %s (%.0f s)"
         % (suite, ", ".join(PACKAGES), time.monotonic() - t0),
         how if not good else "exit %d %r\n%s" % (r.returncode, sorted(debs),
                                                  (r.stdout + r.stderr)[-3000:]))
    changes = [os.path.join(top, n) for n in os.listdir(top) if n.endswith(".changes")]
    # lintian leaves temporary directories (mldbm-elf-*) behind: keep them
    # in `top`, which is removed, not in /tmp
    scratch = os.path.join(top, "lintian-tmp")
    os.makedirs(scratch, exist_ok=True)
    r = run([tool(), "exec", "--chroot", chroot, "--", "env", "TMPDIR=" + scratch,
             "lintian", "--fail-on", "error",
             "--no-tag-display-limit"] + changes, 900, cwd="/", env=dict(ENV))
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("E:")]
    t.ok(len(changes) == 1 and r.returncode == 0 and not errors,
         "%s: lintian reports no error" % suite,
         "exit %d %r\n%s" % (r.returncode, changes, (r.stdout + r.stderr)[-3000:]))
    if r.stdout.strip():
        t.note("lintian:\n" + r.stdout.strip())
    return {p: debs[p] for p in PACKAGES} if set(PACKAGES) <= set(debs) else None


def install(suite, root, debs):
    """apt-get install ./*.deb in the fresh root; the installed version of
    slurmctld, or None."""
    archives = os.path.join(cache_dir(), "apt-archives-" + suite)
    os.makedirs(archives, exist_ok=True)
    inside = root.file("/var/cache/apt/archives")
    for n in os.listdir(archives):   # the .debs fetched by earlier runs
        shutil.copy2(os.path.join(archives, n), inside)
    os.makedirs(root.file("/var/tmp/flexco-debs"))
    paths = []
    for p, f in debs.items():
        shutil.copy2(f, root.file("/var/tmp/flexco-debs"))
        paths.append("/var/tmp/flexco-debs/" + os.path.basename(f))
    t0 = time.monotonic()
    r = root.run(["apt-get", "update", "-q"], timeout=600,
                 env={"DEBIAN_FRONTEND": "noninteractive"})
    if r.returncode == 0:
        r = root.run(["apt-get", "install", "-y", "-q"] + paths, timeout=1200,
                     env={"DEBIAN_FRONTEND": "noninteractive"})
    out = r.stdout + r.stderr
    q = root.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\\n", "slurmctld"])
    ctld = q.stdout.strip().endswith("install ok installed")
    if r.returncode == 0:
        # then slurmd, as on a compute node (the plugin's package needs
        # slurmctld or slurmd; the test runs both on this one host)
        r2 = root.run(["apt-get", "install", "-y", "-q", "slurmd"], timeout=1200,
                      env={"DEBIAN_FRONTEND": "noninteractive"})
        if r2.returncode != 0:
            r, out = r2, out + r2.stdout + r2.stderr
    for n in os.listdir(inside):
        if n.endswith(".deb") and not os.path.exists(os.path.join(archives, n)):
            shutil.copy2(os.path.join(inside, n), archives)
    shutil.rmtree(root.file("/var/tmp/flexco-debs"))
    q = root.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${Status}\\n",
                  "slurmctld", "slurmd", "munge", "slurm-wlm-basic-plugins"] + list(PACKAGES))
    state = {ln.split()[0]: ln.split()[1] for ln in q.stdout.splitlines()
             if ln.endswith("install ok installed")}
    t.ok(r.returncode == 0 and ctld and len(state) == 4 + len(PACKAGES),
         "%s: apt-get install ./*.deb in a fresh debootstrap root installs the three "
         "packages with slurmctld and munge from Debian, then apt-get install slurmd (%.0f s)"
         % (suite, time.monotonic() - t0), "exit %d %r\n%s" % (r.returncode, state, out[-3000:]))
    # what the maintainer scripts of the three packages print: no warning
    # (systemd-sysusers and systemctl enable say what they did, that is all)
    said, mine = [], False
    for line in out.splitlines():
        if line.startswith(("Setting up ", "Processing triggers ", "Unpacking ",
                            "Preparing to unpack ", "Selecting previously ")):
            mine = line.startswith("Setting up ") and line.split()[2] in PACKAGES
        elif mine:
            said.append(line)
    bad = [ln for ln in said if re.search(r"warn|error|fail|denied|cannot|can't", ln, re.I)]
    t.ok(r.returncode == 0 and not bad,
         "%s: their maintainer scripts print no warning or error" % suite, "\n".join(said))
    if said:
        t.note("%s: the maintainer scripts said:\n%s" % (suite, "\n".join(said)))
    t.note("%s: installed %s" % (suite, " ".join("%s=%s" % kv for kv in sorted(state.items()))))
    return state.get("slurmctld")


def installed_file(root, package, pattern):
    """The first path of the package's file list matching pattern."""
    try:
        with open(root.file("/var/lib/dpkg/info/%s.list" % package)) as f:
            for line in f:
                if re.search(pattern, line.strip()):
                    return line.strip()
    except OSError:
        pass
    return None


def start_services(suite, root):
    """munged, the two clusters and flexcod from the installed files; the
    flexcod.conf path, or None."""
    munge = root.ids("munge")
    slurm = root.ids("slurm")
    flexco = root.ids("flexco")
    root_ids = (0, 0)
    # flexcod's user and state directory, as the package left them
    st = os.stat(root.file("/var/lib/flexco")) if os.path.isdir(root.file("/var/lib/flexco")) else None
    t.ok(flexco and flexco[0] < 1000 and st and stat.S_IMODE(st.st_mode) == 0o700
         and (st.st_uid, st.st_gid) == flexco,
         "%s: the package made the system user flexco and /var/lib/flexco, 0700, its own"
         % suite, "flexco %r, %r" % (flexco, st and (oct(st.st_mode), st.st_uid, st.st_gid)))
    unit_path = installed_file(root, "flexcod", r"/systemd/system/flexcod\.service$")
    unit = unit_settings(root.file(unit_path)) if unit_path else {}
    start = (unit.get("ExecStart") or [""])[0].split()
    conf = start[start.index("-f") + 1] if "-f" in start else None
    t.ok(unit.get("User") == ["flexco"] and unit.get("Group") == ["flexco"] and conf
         and conf.startswith("/etc/flexco/") and os.access(root.file(start[0]), os.X_OK),
         "%s: the installed %s runs %s as flexco with %s" % (suite, unit_path, start[:1], conf),
         "%r" % unit)
    plugin = installed_file(root, "slurm-flexco-plugin", r"/prep_flexco\.so$")
    plugin_dir = os.path.dirname(plugin) if plugin else None
    t.ok(plugin_dir and os.path.isfile(root.file(plugin_dir + "/select_cons_tres.so"))
         and os.path.isfile(root.file(plugin_dir + "/flexco_slurmctld.so")),
         "%s: the plugin is in Slurm's own plugin directory %s" % (suite, plugin_dir))
    if not (munge and slurm and flexco and conf and plugin_dir):
        return None

    # the user who submits, as on a login node
    r = root.run(["useradd", "--create-home", "--shell", "/bin/sh", USER])
    user = root.ids(USER)
    if r.returncode != 0 or not user:
        t.note("useradd: " + r.stderr)
        return None

    # MUNGE: the package's key (or a new one), munged as munge.service runs it
    key = root.file("/etc/munge/munge.key")
    if not os.path.exists(key):
        r = root.run(["mungekey", "--create"], user="munge")
        t.note("no key from the munge package; mungekey --create: %d %s" % (r.returncode, r.stderr))
    root.mkdir("/run/munge", 0o755, munge)
    munged = root.start("munged", ["munged", "--foreground"], "/var/log/munge/munged.out",
                        user="munge")

    # the two clusters
    ports, fport = grid_ports(suite)
    for d in ("/run/slurm", "/var/log/slurm"):
        root.mkdir(d, 0o755, slurm)
    for i, c in enumerate(CLUSTERS):
        root.mkdir("/var/lib/slurm/" + c, 0o700, slurm)
        for j in range(NODES):
            root.mkdir("/var/spool/slurmd/%s%d" % (c, j + 1), 0o755, root_ids)
        root.write("/etc/slurm/%s/slurm.conf" % c,
                   slurm_conf(c, ports[c], plugin_dir, 1000 * (i + 1)))
        # beside slurm.conf (flexco.conf(5)); flexcod runs as flexco
        root.write("/etc/slurm/%s/flexco.conf" % c,
                   "ListenAddress=127.0.0.1\nListenPort=%d\nDaemonUsers=flexco\n"
                   % ports[c]["plugin"])
    # flexcod.conf where the unit reads it; sreserve reads it too
    root.write(conf, "\n".join([
        "ListenAddress=127.0.0.1",
        "ListenPort=%d" % fport,
        "StateFile=/var/lib/flexco/flexcod.db",
        "LogFile=/var/log/flexco/flexcod.log",
        "MungeSocket=/run/munge/munge.socket.2",
        "AdminUsers=root",
    ] + ["Cluster=%s URL=http://127.0.0.1:%d" % (c, ports[c]["plugin"]) for c in CLUSTERS])
        + "\n", 0o644)
    munge_up = t.wait_for(lambda: munged.poll() is None and os.path.exists(
        root.file("/run/munge/munge.socket.2")), 30, "munged")
    t.ok(munge_up, "%s: munged runs as munge with the installed key" % suite,
         open(root.file("/var/log/munge/munged.out")).read()[-1000:])

    def conf_env(c):
        return {"SLURM_CONF": "/etc/slurm/%s/slurm.conf" % c}
    for c in CLUSTERS:
        root.start("slurmctld-" + c, ["slurmctld", "-D", "-f", "/etc/slurm/%s/slurm.conf" % c],
                   "/var/log/slurm/%s-slurmctld.out" % c)
    up = t.wait_for(lambda: all("is UP" in root.run(["scontrol", "ping"], env=conf_env(c)).stdout
                                for c in CLUSTERS), 90, "both slurmctlds")
    for c in CLUSTERS:
        for j in range(NODES):
            node = "%s%d" % (c, j + 1)
            root.start("slurmd-" + node, ["slurmd", "-D", "-N", node, "-f",
                                          "/etc/slurm/%s/slurm.conf" % c],
                       "/var/log/slurm/%s-slurmd-%s.out" % (c, node))

    def idle():
        for c in CLUSTERS:
            r = root.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=conf_env(c))
            if sorted(r.stdout.split()[1::2]) != ["idle"] * NODES:
                return False
        return all(t.tcp_accepts(ports[c]["plugin"]) for c in CLUSTERS)
    ready = up and t.wait_for(idle, 120, "every node idle and both plugins listening")
    logs = ""
    for c in CLUSTERS:
        f = root.file("/var/log/slurm/%s-slurmctld.log" % c)
        logs += open(f).read() if os.path.exists(f) else ""
    t.ok(ready and "flexco" in logs,
         "%s: two clusters (slurmctld as slurm, slurmd -N) with the installed plugin, "
         "all nodes idle, both plugins listening" % suite, logs[-3000:])

    # flexcod the way flexcod.service runs it (no systemd as PID 1 here):
    # the directories systemd would make, then ExecStart as User=/Group=
    # with UMask=, NoNewPrivileges= and CapabilityBoundingSet= (empty)
    for key_, base in (("RuntimeDirectory", "/run"), ("LogsDirectory", "/var/log")):
        for name in (unit.get(key_) or [""])[0].split():
            mode = int((unit.get(key_ + "Mode") or ["0755"])[0], 8)
            root.mkdir(base + "/" + name, mode, flexco)
    t.ok(os.path.exists(root.file((unit.get("ConditionPathExists") or ["?"])[0])),
         "%s: the unit's ConditionPathExists (%s) holds" % (suite, unit.get("ConditionPathExists")))
    umask = (unit.get("UMask") or ["0022"])[0]
    caps = ["--no-new-privs"] if unit.get("NoNewPrivileges") == ["yes"] else []
    if unit.get("CapabilityBoundingSet") == [""]:
        caps += ["--bounding-set=-all", "--inh-caps=-all"]
    cmd = ["sh", "-c", 'umask "$0" && exec "$@"', umask, "setpriv",
           "--reuid=" + unit["User"][0], "--regid=" + unit["Group"][0], "--init-groups"] \
        + caps + ["--"] + start
    fd = root.start("flexcod", cmd, "/var/log/flexco/flexcod.out")
    listening = t.wait_for(lambda: fd.poll() is None and t.tcp_accepts(fport), 60, "flexcod")
    uid = None
    try:
        with open("/proc/%d/status" % fd.pid) as f:
            uid = [ln.split()[1:] for ln in f if ln.startswith("Uid:")][0]
        with open("/proc/%d/cmdline" % fd.pid) as f:
            argv = f.read().split("\0")[:-1]
    except OSError:
        argv = None
    db = root.file("/var/lib/flexco/flexcod.db")
    dbst = os.stat(db) if os.path.exists(db) else None
    t.ok(listening and uid == [str(flexco[0])] * 4 and argv == start
         and dbst and dbst.st_uid == flexco[0] and stat.S_IMODE(dbst.st_mode) == 0o600,
         "%s: flexcod runs as flexco with the unit's command line, config from %s, "
         "its database 0600 in /var/lib/flexco" % (suite, conf),
         "uid %r argv %r db %r\n%s" % (uid, argv, dbst and oct(dbst.st_mode),
                                       open(root.file("/var/log/flexco/flexcod.out")).read()[-2000:]))
    return conf if (ready and listening) else None


def coallocate(suite, root):
    home = "/home/" + USER
    script = ('echo "cluster=$SLURM_CLUSTER_NAME nodes=$SLURM_JOB_NODELIST '
              'user=$(id -un)"')
    r = root.run(["env", "-C", home, "HOME=" + home, "sreserve", "submit", "-N", "3", "-t", "2",
                  "-J", "pkgtest", "-o", home + "/part-%j.out", "--parsable", "--wrap", script],
                 user=USER)
    coid = r.stdout.strip()
    if not t.ok(r.returncode == 0 and coid.isdigit(),
                "%s: the installed sreserve submits a 3-node co-allocation as %s"
                % (suite, USER), r.stdout + r.stderr):
        return

    def show():
        r = root.run(["sreserve", "show", coid, "--json"], user=USER)
        return json.loads(r.stdout) if r.returncode == 0 else {}
    doc = t.wait_for(lambda: (lambda d: d if d.get("state") in ("completed", "failed",
                                                                   "cancelled") else None)(show()),
                     240, "co-allocation %s to end" % coid, interval=1) or show()
    text = root.run(["sreserve", "show", coid], user=USER).stdout
    parts = doc.get("parts") or []
    t.ok(doc.get("state") == "completed" and " State=COMPLETED " in text,
         "%s: sreserve show says the co-allocation completed" % suite,
         text + "\n" + json.dumps(doc)[:2000])
    seen = {}
    for p in parts:
        f = root.file("%s/part-%s.out" % (home, p.get("job_id")))
        if os.path.exists(f):
            st = os.stat(f)
            seen[p["cluster"]] = (open(f).read().strip(), st.st_uid)
    uid = root.ids(USER)[0]
    good = sorted(seen) == sorted(CLUSTERS) and len(parts) == 2 and all(
        v[1] == uid and v[0].startswith("cluster=%s nodes=%s" % (c, c)) and v[0].endswith(
            " user=" + USER) for c, v in seen.items())
    for c in sorted(seen):
        t.note("%s: part on %s wrote: %s" % (suite, c, seen[c][0]))
    t.ok(good and sum(p.get("nodes", 0) for p in parts) == 3,
         "%s: its part jobs ran on alpha and beta as %s (their output files)" % (suite, USER),
         "%r\nparts %r" % (seen, parts))


def one_suite(suite, label):
    t.note("== %s (%s)" % (label, suite))
    t0 = time.monotonic()
    # under /tmp: contrib/slurm-chroot exec shows it inside the build chroot
    top = tempfile.mkdtemp(prefix="flexco-pkg-", dir="/tmp")
    root = None
    try:
        debs = build(suite, top)
        r = run([tool(), "base", "--suite", suite], 1800, env=dict(os.environ))
        base = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else ""
        if not t.ok(os.path.isfile(os.path.join(base, ".flexco-base")) and debs,
                    "%s: contrib/slurm-chroot base --suite %s gives the bare root %s"
                    % (suite, suite, base), r.stderr[-2000:]):
            return
        path = tempfile.mkdtemp(prefix="flexco-root-%s-" % suite, dir="/var/tmp")
        os.rmdir(path)
        root = Root(path)
        r = run(["cp", "-a", base, path], 600)
        if not t.ok(r.returncode == 0, "%s: a fresh root %s" % (suite, path), r.stderr):
            return
        if not install(suite, root, debs):
            return
        if start_services(suite, root):
            coallocate(suite, root)
    finally:
        if root:
            hard = root.stop()
            t.ok(not hard, "%s: every process started in the root ended on SIGTERM" % suite,
                 "%r" % hard)
            t.ok(root.remove(), "%s: the root is gone" % suite)
        shutil.rmtree(top, ignore_errors=True)
        t.note("%s took %.0f s" % (label, time.monotonic() - t0))


def main():
    if os.geteuid() != 0:
        t.bail_out("needs root (debootstrap, chroot)")
    t.plan(19 * len(SUITES))
    t0 = time.monotonic()
    for suite, label in SUITES:
        one_suite(suite, label)
    t.note("all took %.0f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    t.run_main(main)
