#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A link that stalls around the start does not fail a healthy
co-allocation (issue 38 §2.1 and §2.2).

flexcod reaches each cluster through a fault proxy; PartStartSkew=10.

1. The link to beta is black-holed just before the start of a
   co-allocation over alpha and beta.  The start gate releases no part
   job while a part's cluster does not answer: neither part starts, nothing
   is cancelled, flexcod says it waits; once the link heals, both start.
2. The link to beta is black-holed right after the gate confirmed both
   parts (test hook 'gate-confirmed'): both part jobs start on time, but
   beta's part_job_started event cannot arrive.  Before, the watchdog failed
   the co-allocation PartStartSkew after alpha's start without asking beta,
   cancelled alpha's part and left beta's running alone.  Now it asks beta,
   cannot, says so and waits; once the link heals, flexcod sees beta's part
   running and nothing was cancelled."""

import os
import time

import flexcotest as t
from faultproxy import flexcod_via_proxies
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script

NODES = [4, 4]
SKEW = 10


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-stall-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--test-hooks"]) as grid:
        fc = Flexcod(grid)
        proxies = flexcod_via_proxies(grid, fc)
        t.ok(fc.reconfigure(PartStartSkew=SKEW), "PartStartSkew=%d (SIGHUP)" % SKEW)
        tmp = t.scratch_dir("flexcod-stall-")
        os.chmod(tmp, 0o777)

        def submit():
            s, doc = fc.submit({"nodes": 6, "duration": 180, "ready": int(time.time()) + 20,
                                "script": script(tmp, "sleep 120"), "std_out": "/dev/null"})
            parts = {p["cluster"]: p for p in (doc or {}).get("parts", [])}
            t.ok(s == 201 and sorted(parts) == ["alpha", "beta"],
                 "a co-allocation over alpha and beta is scheduled", "%s %r" % (s, doc))
            return doc.get("id"), doc.get("planned_start"), parts

        def slurm_state(cluster, parts):
            r = grid.run(cluster, ["squeue", "-h", "-j", str(parts[cluster]["job_id"]), "-o", "%T"])
            return r.stdout.strip()

        def stat(name):
            return (fc.client().get("/v1/stats").json or {}).get(name, 0)

        def cancel(coid):
            r = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
            t.ok(r.status == 200 and t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"),
                 "cancelled, nothing is left")

        # -- 1. cut before the start: nothing starts until the heal ------------
        coid, start, parts = submit()
        proxies["beta"].set("blackhole")
        t.ok(t.wait_for(lambda: stat("gate_waits") >= 1, 60, "the gate to wait for beta"),
             "at the planned start the gate waits for beta to answer")
        t.wait_for(lambda: time.time() > start + SKEW + 5, SKEW + 40, "the skew to pass")
        _, d = fc.get(coid)
        t.ok((d or {}).get("state") == "scheduled" and slurm_state("alpha", parts) == "PENDING"
             and slurm_state("beta", parts) == "PENDING",
             "%.0f s after the planned start neither part job was released and nothing failed"
             % (time.time() - start), "%r" % {k: (d or {}).get(k) for k in ("state", "reason")})
        t.ok("does not answer; no part job is released" in fc.log_tail(300),
             "flexcod says the gate waits for beta")
        proxies["beta"].heal()
        d = fc.wait_parts(coid, 2, timeout=60)
        t.ok(d.get("state") == "running", "once the link heals, both parts start and run",
             "%r" % (fc.get(coid)[1],))
        cancel(coid)

        # -- 2. cut after the gate confirmed: the watchdog waits ----------------
        h = Hold(hold_dir, "gate-confirmed")
        coid, start, parts = submit()
        t.ok(h.reached(60), "the gate released and confirmed both parts")
        proxies["beta"].set("blackhole")
        h.release()
        t.ok(t.wait_for(lambda: slurm_state("alpha", parts) == "RUNNING"
                        and slurm_state("beta", parts) == "RUNNING", 60, "both part jobs to start"),
             "both part jobs start on time")
        started = time.time()

        def unasked():
            return stat("late_parts_unasked") >= 1
        t.ok(t.wait_for(unasked, SKEW + 40, "the watchdog to find beta's part late"),
             "the watchdog finds beta's part late by its events and cannot ask beta")
        # two more rounds of the watchdog, past the skew, with the link still cut
        t.wait_for(lambda: time.time() - started > SKEW + 15, SKEW + 20, "the skew to pass")
        _, d = fc.get(coid)
        t.ok((d or {}).get("state") == "running" and slurm_state("alpha", parts) == "RUNNING"
             and slurm_state("beta", parts) == "RUNNING",
             "%.0f s after the start the co-allocation still runs and no part was cancelled"
             % (time.time() - started), "%r" % {k: (d or {}).get(k) for k in ("state", "reason")})
        log = fc.log_tail(300)
        t.ok("cannot be asked whether it did" in log and "waiting for its answer" in log,
             "flexcod says it waits for beta's answer")

        proxies["beta"].heal()
        d = fc.wait_parts(coid, 2, timeout=60)
        t.ok(d.get("state") == "running", "once the link heals, both parts are running",
             "%r" % (fc.get(coid)[1],))
        st = fc.client().get("/v1/stats").json or {}
        t.ok(st.get("late_parts") == 0, "no part was taken for late (late_parts 0)", "%r" % st.get("late_parts"))
        cancel(coid)
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
