#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The snapshot's job walk in short holds of slurmctld's read locks
(SnapshotJobsPerHold, plugin/snapshot.c) on a real cluster: with one job
per hold every job is still copied exactly once (the probe's queue counts
every pending job, the profile every running one), /v1/stats counts the
holds, and reservations created and deleted during the walks make it start
again in one hold (restarts) without a wrong answer or harm to slurmctld."""

import os
import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
PENDING = 200


def main():
    t.require_grid_tools()
    # Testing only (plugin/snapshot.c): slurmctld sleeps 2 ms between two
    # holds of a snapshot, with the locks released, so that the walks last
    # long enough for reservations to change during them.
    os.environ["FLEXCO_TEST_SNAPSHOT_PAUSE_USEC"] = "2000"
    with t.Grid(nodes=[NODES], args=["--test-hooks", "--no-flexcod", "--plugin-option",
                                     "SnapshotJobsPerHold=1"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        c = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60)
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("SnapshotJobsPerHold") == "1",
             "slurmctld's log shows SnapshotJobsPerHold=1 in effect", "%r" % cfg)

        # Every node runs a long job; PENDING jobs queue behind them.
        running = [grid.submit("alpha", ["-N1", "-t", "%d" % (100 + 10 * i), "-o", "/dev/null",
                                         "--wrap", "sleep 100000"]) for i in range(NODES)]
        for j in running:
            grid.wait_job("alpha", j, states=("RUNNING",), timeout=60)
        # PENDING single jobs (an array would be one record while pending).
        pending = []
        lock = threading.Lock()

        def submit_some(k):
            for _ in range(k):
                j = grid.submit("alpha", ["-N1", "-t", "30", "-o", "/dev/null", "--wrap", "true"])
                with lock:
                    pending.append(j)
        workers = [threading.Thread(target=submit_some, args=(PENDING // 4,)) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        queued = grid.run("alpha", ["squeue", "-h", "-t", "PD", "-o", "%i"]).stdout.split()
        t.ok(len(pending) == PENDING and len(queued) == PENDING,
             "%d single jobs pending" % PENDING, "%d submitted, %d pending"
             % (len(pending), len(queued)))

        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 600})
        doc = r.json or {}
        considered = (doc.get("queue") or {}).get("considered")
        s = (c.get("/v1/stats").json or {}).get("snapshot_lock", {})
        t.ok(r.status == 200 and considered == PENDING,
             "a snapshot taken one job per hold copies every pending job once (%s)"
             % considered,
             "%s %r" % (r.status, r.raw[:300]))
        t.ok(s.get("last_holds", 0) >= NODES + PENDING,
             "the last snapshot took the locks once per job: %s holds" % s.get("last_holds"),
             "%r" % s)
        t.ok(s.get("last_usec", 1 << 40) <= s.get("last_total_usec", 0),
             "the longest hold is part of the whole: %s of %s us"
             % (s.get("last_usec"), s.get("last_total_usec")), "%r" % s)

        # The profile counts each running job once: no node free before the
        # first limit, one more from each job's limit (plus a second).
        r = c.get("/v1/profile?horizon=86400")
        prof = r.json or {}
        steps = prof.get("steps", [])
        t.ok(r.status == 200 and steps and steps[0]["free_nodes"] == 0,
             "profile: every node busy now", "%r" % steps[:3])

        # The same answer as with one hold: the queue size and the first
        # offer do not depend on how the walk was cut.
        first = (doc.get("offers") or [{}])[0].get("start")
        t.ok(first is not None and first >= int(time.time()) + 100 * 60 - 120,
             "the first offer waits for the first running job's limit", "%r" % first)

        # -- records changing during the walk: restarts -----------------------
        stop = threading.Event()
        made = [0]

        def churn():
            n = 0
            while not stop.is_set():
                name = "snapchurn%d" % n
                grid.run("alpha", ["scontrol", "create", "reservation", "ReservationName=" + name,
                                   "StartTime=now+2days", "Duration=10", "Users=root",
                                   "NodeCnt=1"])
                grid.run("alpha", ["scontrol", "delete", "ReservationName=" + name])
                made[0] += 1
                n += 1
                stop.wait(0.7)

        th = threading.Thread(target=churn)
        th.start()
        answers = []

        def restarted():
            rr = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 600})
            answers.append((rr.status, ((rr.json or {}).get("queue") or {}).get("considered")))
            return ((c.get("/v1/stats").json or {}).get("snapshot_lock", {})
                    .get("restarts", 0) >= 1)
        try:
            got = t.wait_for(restarted, 120, "a walk to start again")
        finally:
            stop.set()
            th.join()
        s = (c.get("/v1/stats").json or {}).get("snapshot_lock", {})
        t.ok(got and s.get("restarts", 0) >= 1,
             "reservations created and deleted during walks: %s restarts in %d probes "
             "(%d reservations)" % (s.get("restarts"), len(answers), made[0]), "%r" % s)
        t.ok(answers and all(a == (200, considered) for a in answers),
             "every probe meanwhile saw the same queue (%s pending)" % considered,
             "%r" % [a for a in answers if a != (200, considered)][:5])
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")
        grid.run("alpha", ["scancel", "-u", "root"])
        t.note("snapshot_lock %r" % s)


if __name__ == "__main__":
    t.run_main(main)
