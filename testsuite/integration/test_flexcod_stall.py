#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A link that stalls around the start does not fail a healthy
co-allocation (issue 38 §2.1).

flexcod reaches each cluster through a fault proxy; PartStartSkew=10.  A
co-allocation over alpha and beta is scheduled; just before its start the
link to beta is black-holed (nothing passes, nothing is closed), so
beta's part_job_started event cannot arrive.  Both part jobs start on
time.  Before, the watchdog failed the co-allocation PartStartSkew after
alpha's start without asking beta, cancelled alpha's part and left
beta's running alone.  Now it asks beta, cannot, says so and waits; once
the link heals, flexcod sees beta's part running and nothing was
cancelled."""

import os
import time

import flexcotest as t
from faultproxy import flexcod_via_proxies
from flexcodtest import Flexcod, nothing_left, script

NODES = [4, 4]
SKEW = 10


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        proxies = flexcod_via_proxies(grid, fc)
        t.ok(fc.reconfigure(PartStartSkew=SKEW), "PartStartSkew=%d (SIGHUP)" % SKEW)
        tmp = t.scratch_dir("flexcod-stall-")
        os.chmod(tmp, 0o777)
        ready = int(time.time()) + 30
        s, doc = fc.submit({"nodes": 6, "duration": 180, "ready": ready,
                            "script": script(tmp, "sleep 120"), "std_out": "/dev/null"})
        parts = {p["cluster"]: p for p in (doc or {}).get("parts", [])}
        t.ok(s == 201 and sorted(parts) == ["alpha", "beta"],
             "a co-allocation over alpha and beta is scheduled", "%s %r" % (s, doc))
        coid = doc.get("id")

        def slurm_state(cluster):
            r = grid.run(cluster, ["squeue", "-h", "-j", str(parts[cluster]["job_id"]), "-o", "%T"])
            return r.stdout.strip()

        proxies["beta"].set("blackhole")
        t.ok(slurm_state("beta") == "PENDING", "the link to beta is cut before the start")
        t.ok(t.wait_for(lambda: slurm_state("alpha") == "RUNNING" and slurm_state("beta") == "RUNNING",
                        90, "both part jobs to start"),
             "both part jobs start on time")
        started = time.time()

        def unasked():
            r = fc.client().get("/v1/stats")
            return (r.json or {}).get("late_parts_unasked", 0) >= 1
        t.ok(t.wait_for(unasked, SKEW + 40, "the watchdog to find beta's part late"),
             "the watchdog finds beta's part late by its events and cannot ask beta")
        # two more rounds of the watchdog, past the skew, with the link still cut
        t.wait_for(lambda: time.time() - started > SKEW + 15, SKEW + 20, "the skew to pass")
        _, d = fc.get(coid)
        t.ok((d or {}).get("state") == "running" and slurm_state("alpha") == "RUNNING",
             "%.0f s after the start the co-allocation still runs and alpha's part was not "
             "cancelled" % (time.time() - started), "%r" % {k: (d or {}).get(k) for k in ("state", "reason")})
        log = fc.log_tail(300)
        t.ok("cannot be asked whether it did" in log and "waiting for its answer" in log,
             "flexcod says it waits for beta's answer")

        proxies["beta"].heal()
        d = fc.wait_parts(coid, 2, timeout=60)
        t.ok(d.get("state") == "running", "once the link heals, both parts are running",
             "%r" % (fc.get(coid)[1],))
        st = fc.client().get("/v1/stats").json or {}
        t.ok(st.get("late_parts") == 0, "no part was taken for late (late_parts 0)", "%r" % st.get("late_parts"))
        r = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        t.ok(r.status == 200 and t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"),
             "cancelled, nothing is left")
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
