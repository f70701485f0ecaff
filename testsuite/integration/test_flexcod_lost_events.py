#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Lost events make flexcod reconcile the cluster (issue 15, 1.5).

The plugins keep only 8 events (EventBufferSize=8).  A 6-node
co-allocation over two 4-node clusters runs its part jobs (`sleep 20`);
flexcod is frozen (SIGSTOP, so that it is not restarted: a restart
reconciles every cluster anyway and would hide the lost-events path) while
the part jobs end and more than 8 local jobs end early on one cluster,
which pushes that part's `part_job_ended` out of the plugin's buffer.
When flexcod runs again the plugin answers `lost: true`; flexcod must
reconcile that cluster in full, see the part ended and complete the
co-allocation, and say in its log why it reconciled."""

import os
import signal

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script, slurm_jobs, slurm_reservations
from flexcohttp import plugin_client

NODES = [4, 4]
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
            "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
LOCAL_JOBS = 12


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES, args=["--plugin-option", "EventBufferSize=8"]) as grid:
        fc = Flexcod(grid)
        st = grid.status()
        settings = grid.plugin_settings(st["clusters"][0]["name"]) or {}
        t.ok(settings.get("EventBufferSize") == "8", "the plugins keep 8 events",
             "%r" % settings)
        tmp = t.scratch_dir("flexcod-lost-")
        os.chmod(tmp, 0o777)

        coid, d = fc.run_split({"nodes": 6, "duration": 120, "script": script(tmp, "sleep 20"),
                                "std_out": "/dev/null"})
        parts = [(p["cluster"], p["job_id"], p["nodes"]) for p in d.get("parts", [])]
        # The cluster with free nodes beside its part runs the local jobs.
        lost_cluster, lost_job, _ = min(parts, key=lambda p: p[2])
        cinfo = {c["name"]: c for c in st["clusters"]}[lost_cluster]
        pc = plugin_client(cinfo, st["munge_socket"])
        latest = (pc.get("/v1/events").json or {}).get("latest", 0)

        log_before = os.path.getsize(fc.info["log_file"])
        pid = fc.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            t.ok(t.wait_for(lambda: all(grid.job(c, j).get("JobState") == "COMPLETED"
                                        for c, j, _ in parts), 120,
                            "the part jobs to complete"),
                 "while flexcod is frozen, both part jobs complete")
            def ended_events(after):
                r = pc.get("/v1/events?after=%d&max=1000" % after).json or {}
                return [e for e in r.get("events", []) if e.get("type") == "part_job_ended"
                        and e.get("job_id") == lost_job]
            t.ok(t.wait_for(lambda: ended_events(latest), 60, "part_job_ended on %s"
                            % lost_cluster),
                 "the plugin on %s published part job %s's end" % (lost_cluster, lost_job))
            jobs = [grid.submit(lost_cluster, ["-N1", "-t", "5", "-o", "/dev/null",
                                               "--wrap", "true"])
                    for _ in range(LOCAL_JOBS)]
            t.ok(t.wait_for(lambda: all(grid.job(lost_cluster, j).get("JobState") in TERMINAL
                                        for j in jobs), 120, "the local jobs to end"),
                 "%d local jobs ended early on %s" % (LOCAL_JOBS, lost_cluster))

            def overflowed():
                r = pc.get("/v1/events?after=%d" % latest).json or {}
                return (r.get("lost") is True and r.get("oldest", 0) > latest + 1
                        and not ended_events(0) and r)
            r = t.wait_for(overflowed, 30, "the plugin's buffer to overflow") or {}
            t.ok(bool(r), "the plugin on %s has lost events after %d, part job %s's end "
                 "among them" % (lost_cluster, latest, lost_job), "%r" % r)
        finally:
            os.kill(pid, signal.SIGCONT)

        def completed():
            x = fc.get(coid)[1] or {}
            return x.get("state") in ("completed", "failed") and x
        x = t.wait_for(completed, 30, "co-%s to end" % coid) or {}
        t.ok(x.get("state") == "completed"
             and all(p.get("state") == "completed" for p in x.get("parts", [])),
             "after lost events the co-allocation is completed", "%r" % (fc.get(coid)[1],))

        def log_says():
            with open(fc.info["log_file"], errors="replace") as f:
                f.seek(log_before)
                text = f.read()
            return ("cluster %s:" % lost_cluster in text and "events" in text
                    and "lost" in text and "full reconcile" in text) and text
        t.ok(t.wait_for(log_says, 10, "the log line"),
             "the log says %s was reconciled in full because events were lost" % lost_cluster,
             fc.log_tail(20))
        t.ok(t.wait_for(lambda: nothing_left(grid), 30, "nothing left"),
             "its reservations were given back", "%r %r" % (slurm_reservations(grid),
                                                          slurm_jobs(grid)))


if __name__ == "__main__":
    t.run_main(main)
