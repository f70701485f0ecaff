#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`scontrol reconfigure` never stops slurmctld from serving its users
because of FlexCo (issue 43).

Slurm 22.05 restarts the PrEp plugins from inside the reconfigure RPC, with
slurmctld's write locks held, when PrEpPlugins changed; the plugin's fini
once joined threads that were waiting for those locks, and slurmctld hung
for every user.  Slurm 24.11 and later start a new slurmctld instead.  On a
cluster under load (three clients sending signed probes that each take a
snapshot, SnapshotMaxAge=0; a short job submitted every 0.2 s, so that jobs
end and events are published), reconfigure many times, half of them with a
change of PrEpPlugins (script,flexco <-> flexco,script) and half without,
and after every one check that slurmctld answers squeue within a few
seconds and that the plugin serves probes again.  The events' sequence
never goes back across the restarts, and events are still published after
the last one."""

import os
import re
import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

ROUNDS = 12             # reconfigures; every other one changes PrEpPlugins
PROBE = {"nodes": 1, "duration": 600}
SQUEUE_WITHIN = 5.0     # seconds: "a few"
LISTS = ("script,flexco", "flexco,script")


read = t.read_file


class Load:
    """Probe clients and a job submitter, in threads, until stop()."""

    def __init__(self, grid, cluster, munge_socket):
        self.grid = grid
        self.cluster = cluster
        self.munge = munge_socket
        self.halt = threading.Event()
        self.lock = threading.Lock()
        self.probes_ok = 0
        self.probe_errors = 0
        self.jobs = []
        self.threads = [threading.Thread(target=self._probe, daemon=True)
                        for _ in range(3)]
        self.threads.append(threading.Thread(target=self._submit, daemon=True))

    def start(self):
        for th in self.threads:
            th.start()

    def stop(self):
        self.halt.set()
        for th in self.threads:
            th.join(60)

    def ok_count(self):
        with self.lock:
            return self.probes_ok

    def _probe(self):
        client = plugin_client(self.cluster, self.munge, timeout=15)
        while not self.halt.is_set():
            try:
                status = client.request("POST", "/v1/probe", body=PROBE).status
            except Exception:   # refused while the plugin restarts
                status = None
            with self.lock:
                if status == 200:
                    self.probes_ok += 1
                else:
                    self.probe_errors += 1
            if status != 200:
                self.halt.wait(0.1)     # the port is closed: do not spin

    def _submit(self):
        name = self.cluster["name"]
        while not self.halt.is_set():
            try:
                r = self.grid.run(name, ["sbatch", "--parsable", "-N1",
                                         "-t", "1", "-o", "/dev/null",
                                         "--wrap", "true"], timeout=30)
                if r.returncode == 0:
                    with self.lock:
                        self.jobs.append(int(r.stdout.strip().split(";")[0]))
            except Exception:
                pass
            self.halt.wait(0.2)     # one job every 0.2 s, as the issue says


def set_prep_plugins(conf_path, value):
    text = read(conf_path)
    text, n = re.subn(r"^PrEpPlugins=.*$", "PrEpPlugins=" + value, text,
                      flags=re.M)
    assert n == 1, "no PrEpPlugins line in " + conf_path
    with open(conf_path, "w") as f:
        f.write(text)


def events_latest(client):
    r = client.get("/v1/events?after=0&max=1")
    return (r.json or {}).get("latest") if r.status == 200 else None


def main():
    t.require_grid_tools()
    grid = t.Grid(nodes=[4], args=["--no-flexcod", "--plugin-option",
                                   "SnapshotMaxAge=0"])
    old_slurm = t.slurm_version() < "24.11"
    with grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url")
                                 and s)(grid.status()),
                        60, "the plugin to listen")
        cluster = st["clusters"][0]
        name = cluster["name"]
        conf_path = cluster["slurm_conf"]
        log_path = os.path.join(grid.run_dir, name, "log", "slurmctld.log")
        client = plugin_client(cluster, st["munge_socket"], timeout=15)
        t.ok(t.wait_for(lambda: client.request("POST", "/v1/probe",
                                               body=PROBE).status == 200,
                        60, "a first probe"),
             "the plugin answers probes before the first reconfigure")

        load = Load(grid, cluster, st["munge_socket"])
        load.start()
        latest = [events_latest(client) or 0]
        hung = False
        current = 0
        try:
            for i in range(ROUNDS):
                change = (i % 2 == 0)
                # The load reaches the plugin at the moment of the
                # reconfigure: probes answered since the last round.
                seen = load.ok_count()
                t.ok(t.wait_for(lambda: load.ok_count() >= seen + 3, 60,
                                "probes to be answered"),
                     "round %d: probes are answered before the reconfigure"
                     % (i + 1))
                changes_before = read(log_path).count(
                    "prep_g_reconfig: PrEpPlugins changed")
                if change:
                    current = 1 - current
                    set_prep_plugins(conf_path, LISTS[current])
                what = ("PrEpPlugins=%s" % LISTS[current]) if change \
                    else "no change"
                try:
                    r = grid.run(name, ["scontrol", "reconfigure"], timeout=60)
                    rc, out = r.returncode, r.stdout + r.stderr
                except Exception as e:  # a hung slurmctld: the timeout
                    rc, out = None, str(e)
                t.ok(rc == 0, "round %d (%s): scontrol reconfigure succeeds"
                     % (i + 1, what), out)

                # 24.11 and later hand the port from the old slurmctld to
                # the new one: a connection reset in that moment is no
                # hang, so squeue is asked until it answers, and the time
                # to its first answer is what counts.
                last = {}

                def answers():
                    try:
                        r = grid.run(name, ["squeue", "-h", "-o", "%i"],
                                     timeout=60)
                        last["rc"], last["out"] = (r.returncode,
                                                   r.stdout + r.stderr)
                    except Exception as e:
                        last["rc"], last["out"] = None, str(e)
                    return last["rc"] == 0
                t0 = time.monotonic()
                t.wait_for(answers, SQUEUE_WITHIN, "squeue to answer")
                took = time.monotonic() - t0
                rc, out = last.get("rc"), last.get("out", "")
                if not t.ok(rc == 0 and took <= SQUEUE_WITHIN,
                            "round %d (%s): slurmctld answers squeue within "
                            "%g s after the reconfigure (%.1f s)"
                            % (i + 1, what, SQUEUE_WITHIN, took),
                            "exit %s after %.1f s: %s\n%s"
                            % (rc, took, out[-500:], grid.log_tail(name, n=40))):
                    hung = True
                    break

                if old_slurm and change:
                    t.ok(read(log_path).count(
                        "prep_g_reconfig: PrEpPlugins changed")
                         == changes_before + 1,
                         "round %d: slurmctld restarted its PrEp plugins "
                         "(22.05: fini and init under its locks)" % (i + 1))

                def serving():
                    return client.request("POST", "/v1/probe",
                                          body=PROBE).status == 200
                t.ok(t.wait_for(serving, 60, "the plugin to serve again"),
                     "round %d: the plugin serves probes again after the "
                     "reconfigure" % (i + 1), grid.log_tail(name, n=40))
                n = events_latest(client)
                t.ok(n is not None and n >= latest[-1],
                     "round %d: the events' sequence does not go back "
                     "(%s, before %s)" % (i + 1, n, latest[-1]))
                latest.append(n or 0)
        finally:
            load.stop()
        t.note("%d probes answered, %d refused or unanswered, %d jobs "
               "submitted" % (load.probes_ok, load.probe_errors,
                              len(load.jobs)))

        if not hung:
            # A job that ends after the last restart is published.
            before = latest[-1]
            jobid = grid.submit(name, ["-N1", "-t", "1", "-o", "/dev/null",
                                       "--wrap", "true"])
            grid.wait_job(name, jobid, timeout=60)
            t.ok(t.wait_for(lambda: (events_latest(client) or 0) > before, 60,
                            "an event after the last reconfigure"),
                 "events are still published after the last reconfigure")
            t.ok(len(load.jobs) >= ROUNDS,
                 "jobs were submitted and ended during the reconfigures "
                 "(%d)" % len(load.jobs))
            log = read(log_path)
            t.ok("did not stop within" not in log
                 and "unusable flexco.conf" not in log,
                 "no plugin start waited for or failed on another")
            if old_slurm:
                t.ok(log.count("slurmctld/flexco: fini: stopping")
                     >= ROUNDS // 2,
                     "slurmctld stopped the plugin on every PrEpPlugins change",
                     log[-1500:])


if __name__ == "__main__":
    t.run_main(main)
