#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""slurmctld/flexco loads into Debian's slurmctld on every cluster of a local
grid through PrEpPlugins=script,flexco (prep/flexco loads
flexco_slurmctld.so), reads flexco.conf, logs its effective settings, runs
and joins its agent thread, and stops cleanly; with a bad flexco.conf
slurmctld still starts and serves, FlexCo stays idle and the log says
why."""

import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import flexcotest as t
from flexcohttp import plugin_client

EXPECTED_NODES = {"alpha": 4, "beta": 6, "gamma": 8}
CPUS = 8


read = t.read_file


def settings_line(log, conf_path):
    """The key/value pairs of the plugin's one-line settings log, or None."""
    m = re.search(r"slurmctld/flexco: %s: (.*)$" % re.escape(conf_path), log,
                  re.M)
    if not m:
        return None
    return dict(kv.split("=", 1) for kv in m.group(1).split() if "=" in kv)


def conf_value(conf_text, key):
    m = re.search(r"^\s*%s\s*=\s*(\S+)" % key, conf_text, re.M | re.I)
    return m.group(1) if m else None


# Each case: flexco.conf text (None: no file), text expected in the log.
BAD_CONFS = [
    ("unknown key", "ListenPort=%(port)d\nListenPorts=1\n",
     "unrecognized key: ListenPorts"),
    ("missing ListenPort", "ListenAddress=127.0.0.1\n",
     "ListenPort is required"),
    ("ListenPort=0", "ListenPort=0\n", "ListenPort is required"),
    ("ListenPort out of range", "ListenPort=70000\n", "ListenPort"),
    ("ListenAddress not numeric", "ListenPort=%(port)d\nListenAddress=localhost\n",
     "ListenAddress=localhost is not a numeric"),
    ("unknown DaemonUsers entry",
     "ListenPort=%(port)d\nDaemonUsers=root,flexco_no_such_user\n",
     "DaemonUsers: unknown user 'flexco_no_such_user'"),
    ("PublishedShare=0", "ListenPort=%(port)d\nPublishedShare=0\n",
     "PublishedShare=0 is out of range"),
    ("PublishedShare=101", "ListenPort=%(port)d\nPublishedShare=101\n",
     "PublishedShare=101 is out of range"),
    ("MaxConnections=0", "ListenPort=%(port)d\nMaxConnections=0\n",
     "MaxConnections=0 is out of range"),
    ("MaxRequestSize too small", "ListenPort=%(port)d\nMaxRequestSize=10\n",
     "MaxRequestSize=10 is out of range"),
    ("relative MungeSocket", "ListenPort=%(port)d\nMungeSocket=munge.sock\n",
     "MungeSocket=munge.sock is not an absolute path"),
    ("SnapshotJobsPerHold=0", "ListenPort=%(port)d\nSnapshotJobsPerHold=0\n",
     "SnapshotJobsPerHold=0 is out of range"),
    ("SnapshotMaxAge too large", "ListenPort=%(port)d\nSnapshotMaxAge=60001\n",
     "SnapshotMaxAge=60001 is out of range"),
    ("SnapshotJobLag too large", "ListenPort=%(port)d\nSnapshotJobLag=60001\n",
     "SnapshotJobLag=60001 is out of range"),
    ("SnapshotJobLag over SnapshotMaxAge",
     "ListenPort=%(port)d\nSnapshotMaxAge=500\nSnapshotJobLag=501\n",
     "SnapshotJobLag=501 is more than SnapshotMaxAge=500"),
    ("ComputeNice too large", "ListenPort=%(port)d\nComputeNice=20\n",
     "ComputeNice=20 is out of range"),
    ("ComputeThreads too many", "ListenPort=%(port)d\nComputeThreads=65\n",
     "ComputeThreads=65 is out of range"),
    ("HttpThreads=0", "ListenPort=%(port)d\nHttpThreads=0\n",
     "HttpThreads=0 is out of range"),
    ("MinUserUid=0", "ListenPort=%(port)d\nMinUserUid=0\n",
     "MinUserUid=0 is out of range"),
    ("ReplayCacheSize too small", "ListenPort=%(port)d\nReplayCacheSize=10\n",
     "ReplayCacheSize=10 is out of range"),
    ("ReplayCachePerUser over ReplayCacheSize",
     "ListenPort=%(port)d\nReplayCacheSize=2048\nReplayCachePerUser=4096\n",
     "ReplayCachePerUser=4096 is more than ReplayCacheSize=2048"),
    ("HeaderTimeout=0", "ListenPort=%(port)d\nHeaderTimeout=0\n",
     "HeaderTimeout=0 is out of range (1-3600)"),
    ("BodyTimeout too long", "ListenPort=%(port)d\nBodyTimeout=3601\n",
     "BodyTimeout=3601 is out of range (1-3600)"),
    ("MaxConnectionsPerAddress=0", "ListenPort=%(port)d\nMaxConnectionsPerAddress=0\n",
     "MaxConnectionsPerAddress=0 is out of range (1-1024)"),
    ("MaxLongPolls=0", "ListenPort=%(port)d\nMaxLongPolls=0\n",
     "MaxLongPolls=0 is out of range (1-1024)"),
    ("MaxLongPollsPerUser over MaxLongPolls",
     "ListenPort=%(port)d\nMaxLongPolls=4\nMaxLongPollsPerUser=5\n",
     "MaxLongPollsPerUser=5 is more than MaxLongPolls=4"),
    ("MaxRequestMemory under MaxRequestSize",
     "ListenPort=%(port)d\nMaxRequestSize=65536\nMaxRequestMemory=4096\n",
     "MaxRequestMemory=4096 is less than MaxRequestSize=65536"),
    ("MaxRequestMemory too small", "ListenPort=%(port)d\nMaxRequestMemory=100\n",
     "MaxRequestMemory=100 is out of range"),
    ("no flexco.conf", None, "cannot stat"),
]


def bad_conf_case(grid, base_conf, name, text, expect):
    """Run a throw-away slurmctld on a copy of base_conf with a bad
    flexco.conf: it must start and keep serving its users, with `expect`
    and the plugin's "FlexCo is idle" line in its log (FlexCo never keeps
    slurmctld from starting)."""
    tmp = tempfile.mkdtemp(prefix="badconf-", dir=grid.run_dir)
    proc = None
    try:
        conf = read(base_conf)
        port = t.free_port()
        repl = {
            "SlurmctldPort": str(t.free_port(avoid=(port,))),
            "StateSaveLocation": os.path.join(tmp, "state"),
            "SlurmctldLogFile": os.path.join(tmp, "slurmctld.log"),
            "SlurmctldPidFile": os.path.join(tmp, "slurmctld.pid"),
            "ClusterName": "badconf",
        }
        for k, v in repl.items():
            conf, n = re.subn(r"^%s=.*$" % k, "%s=%s" % (k, v), conf,
                              flags=re.M | re.I)
            if n == 0:
                conf += "%s=%s\n" % (k, v)
        os.makedirs(repl["StateSaveLocation"])
        slurm_conf = os.path.join(tmp, "slurm.conf")
        with open(slurm_conf, "w") as f:
            f.write(conf)
        if text is not None:
            with open(os.path.join(tmp, "flexco.conf"), "w") as f:
                f.write(text % {"port": port})
        slurmctld = os.environ.get("SLURMCTLD", "/usr/sbin/slurmctld")
        out_path = os.path.join(tmp, "slurmctld.out")
        with open(out_path, "w") as out:
            proc = subprocess.Popen([slurmctld, "-D", "-f", slurm_conf],
                                    stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)

        def logged():
            log = read(repl["SlurmctldLogFile"]) + read(out_path)
            return "slurmctld/flexco: unusable flexco.conf" in log and log
        log = t.wait_for(logged, 60, "the plugin's idle line") or \
            read(repl["SlurmctldLogFile"]) + read(out_path)
        env = dict(grid.env("alpha"), SLURM_CONF=slurm_conf)

        def answers():
            r = subprocess.run(["squeue", "-h"], env=env, capture_output=True,
                               text=True, timeout=30, stdin=subprocess.DEVNULL)
            return r.returncode == 0
        serving = proc.poll() is None and t.wait_for(answers, 30,
                                                     "squeue to answer")
        t.ok(serving and expect in log and "FlexCo is idle" in log
             and proc.poll() is None,
             "bad flexco.conf (%s): slurmctld starts and serves, FlexCo is "
             "idle and the log says why" % name,
             "exit %s, log:\n%s" % (proc.poll(), log[-2000:]))
        if text is not None and "ListenPort=%(port)d" not in text:
            t.ok(t.wait_for(lambda: "names no usable ListenAddress and ListenPort" in
                            read(repl["SlurmctldLogFile"]), 30, "the idle line"),
                 "bad flexco.conf (%s): nowhere to answer on, and the log says so" % name)
        elif text is not None and "ListenAddress" not in text:
            # ... and every request to its port says why, as a JSON error
            def idle_answer():
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    conn.request("GET", "/v1/profile")
                    r = conn.getresponse()
                    body = r.read()
                    conn.close()
                    return (r.status, r.getheader("Retry-After"), json.loads(body))
                except (OSError, ValueError, http.client.HTTPException):
                    return None
            got = t.wait_for(idle_answer, 30, "the idle plugin to answer")
            err = ((got or (0, None, {}))[2] or {}).get("error") or {}
            msg = err.get("message", "")
            t.ok(got and got[0] == 503 and got[1] and err.get("code") == "flexco_idle"
                 and "FlexCo is idle" in msg and (expect in msg or "cannot parse" in msg),
                 "bad flexco.conf (%s): every request is answered 503 flexco_idle "
                 "with the reason" % name, "%r" % (got,))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    t.require_grid_tools()
    grid = t.Grid()
    with grid:
        st = grid.status()
        clusters = {c["name"]: c for c in st["clusters"]}
        t.is_(sorted(clusters), sorted(EXPECTED_NODES), "grid has alpha, beta, gamma")

        for name, nodes in sorted(EXPECTED_NODES.items()):
            c = clusters.get(name, {})
            conf_dir = os.path.dirname(c.get("slurm_conf", ""))
            flexco_conf = read(os.path.join(conf_dir, "flexco.conf"))
            log_path = os.path.join(grid.run_dir, name, "log", "slurmctld.log")

            log = t.wait_for(lambda: "slurmctld/flexco: agent:" in read(log_path)
                             and read(log_path), 30,
                             "%s: plugin agent line in slurmctld log" % name) or ""
            t.ok(re.search(r"slurmctld/flexco: init: Slurm %s, ListenAddress="
                           r"127\.0\.0\.1 ListenPort=%s DaemonUsers=root$"
                           % (re.escape(t.slurm_version()),
                              conf_value(flexco_conf, "ListenPort")), log, re.M),
                 "%s: slurmctld logs the plugin's init with the Slurm "
                 "version and its settings" % name, grid.log_tail(name))
            m = re.search(r"slurmctld/flexco: agent: (\d+) nodes \(\d+ available\), "
                          r"(\d+) CPUs", log)
            t.ok(m and int(m.group(1)) == nodes and int(m.group(2)) == nodes * CPUS,
                 "%s: agent thread snapshot sees %d nodes and %d CPUs"
                 % (name, nodes, nodes * CPUS), m and m.group(0))

            r = grid.run(name, ["scontrol", "show", "config"])
            t.ok(re.search(r"^PrEpPlugins\s*=\s*script,flexco\s*$", r.stdout, re.M),
                 "%s: scontrol show config lists PrEpPlugins=script,flexco" % name,
                 r.stdout[-1500:])
            t.ok(not re.search(r"^SlurmctldPlugstack", r.stdout, re.M)
                 or re.search(r"^SlurmctldPlugstack\s*=\s*\(null\)", r.stdout, re.M),
                 "%s: no SlurmctldPlugstack in the configuration" % name)
            pairs = settings_line(log, os.path.join(conf_dir, "flexco.conf"))
            t.ok(pairs is not None
                 and pairs.get("ListenPort") == conf_value(flexco_conf, "ListenPort")
                 and pairs.get("ListenAddress") == "127.0.0.1"
                 and pairs.get("DaemonUsers") == "root"
                 and pairs.get("PublishedShare") == "100"
                 and pairs.get("MaxRequestSize") == "1048576"
                 and pairs.get("SnapshotJobsPerHold") == "250"
                 and pairs.get("SnapshotJobLag") == "0"
                 and pairs.get("ReplayCacheSize") == "65536"
                 and pairs.get("ReplayCachePerUser") == "16384"
                 and pairs.get("MaxConnectionsPerAddress") == "16"
                 and pairs.get("HeaderTimeout") == "10"
                 and pairs.get("BodyTimeout") == "30"
                 and pairs.get("MaxLongPolls") == "16"
                 and pairs.get("MaxLongPollsPerUser") == "4"
                 and pairs.get("MaxRequestMemory") == "8388608"
                 and pairs.get("MungeSocket") == st.get("munge_socket"),
                 "%s: slurmctld's log has one line with every effective "
                 "setting of its flexco.conf" % name, log[-1500:])

        # scontrol reconfigure: 22.05 keeps the plugin as it is; 24.11 and
        # later start a new slurmctld, whose plugin must take the port over
        # once the old one let go.  Either way the plugin serves again.
        a = clusters["alpha"]
        client = plugin_client(a, st["munge_socket"], timeout=10)
        before = time.time()
        r = grid.run("alpha", ["scontrol", "reconfigure"])
        t.ok(r.returncode == 0, "scontrol reconfigure on alpha", r.stdout + r.stderr)
        if t.slurm_version() >= "24.11":
            def restarted():
                d = client.get("/v1/stats").json or {}
                return d.get("started", 0) >= int(before) and d
        else:
            def restarted():
                return client.get("/v1/stats").status == 200
        t.ok(t.wait_for(restarted, 60, "the plugin to serve after reconfigure")
             and client.get("/v1/profile").status == 200,
             "after scontrol reconfigure the plugin serves profiles again"
             + (" (the new slurmctld's plugin)" if t.slurm_version() >= "24.11"
                else ""), grid.log_tail("alpha"))
        st = grid.status()
        clusters = {c["name"]: c for c in st["clusters"]}

        alpha_conf = clusters.get("alpha", {}).get("slurm_conf", "")
        for name, text, expect in BAD_CONFS:
            bad_conf_case(grid, alpha_conf, name, text, expect)

        pids = {n: clusters[n]["slurmctld_pid"] for n in clusters}
        r = grid.stop()
        t.ok(r.returncode == 0, "localgrid stop succeeds", r.stdout + r.stderr)
        for name in sorted(EXPECTED_NODES):
            # slurmctld calls no PrEp fini() at shutdown and closes its log
            # before exit(): the plugin stops from an exit handler, and its
            # last lines go to slurmctld's stderr (here slurmctld.out, the
            # journal under systemd).
            out = read(os.path.join(grid.run_dir, name, "log", "slurmctld.out"))
            i_init = out.find("slurmctld/flexco: init:")
            i_join = out.find("slurmctld/flexco: agent thread joined")
            i_http = out.find("slurmctld/flexco: HTTP service stopped")
            i_ev = out.find("slurmctld/flexco: events: stopped at sequence")
            i_fini = out.find("slurmctld/flexco: fini: stopped")
            # The agent thread stops the HTTP service, saves the events
            # and stops; the exit handler waits for it (joins it).
            t.ok(0 <= i_init < i_http < i_ev < i_fini < i_join,
                 "%s: at shutdown the plugin stops its HTTP service, saves "
                 "its events and stops, and slurmctld's exit waits for it"
                 % name, out[-1500:])
            t.ok(not t.pid_alive(pids.get(name)),
                 "%s: slurmctld %s has exited" % (name, pids.get(name)))


if __name__ == "__main__":
    t.run_main(main)
