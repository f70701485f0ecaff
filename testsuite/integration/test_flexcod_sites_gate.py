#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The start gate and the part-start watchdog on the site grid (issue 38
§2.1, §2.2; doc/flexcod.md, "The start gate").

`localgrid start --sites`: alpha, beta and flexcod each in a network
namespace of their own; `localgrid net beta partition` drops every packet
on beta's link both ways and closes no connection.  beta's own state is
read inside its namespace (`localgrid exec beta`), which the partition
does not cut.  PartStartSkew=20.

1. Cancelled while beta is partitioned, before the start: before the
   gate, beta's part job had been released at commit and started at the
   planned time, alone.  Now it stays held past the start and, after the
   heal, goes with its reservation without ever running.
2. beta partitioned right after the gate confirmed both parts (test hook
   'gate-confirmed'): both part jobs start on time, flexcod hears nothing
   from beta; the watchdog cannot ask beta and waits instead of cancelling
   alpha's part; after the heal both parts run."""

import os
import subprocess
import time

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, Hold, script

NODES = [4, 4]
SKEW = 20


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-sites-gate-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--sites", "--test-hooks"]) as grid:
        fc = Flexcod(grid)
        t.ok(fc.reconfigure(PartStartSkew=SKEW), "PartStartSkew=%d (SIGHUP)" % SKEW)
        tmp = t.scratch_dir("flexcod-sites-gate-")
        os.chmod(tmp, 0o777)

        def squeue(cluster, job_id):
            # inside the site: its controller answers there during a partition
            r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", cluster,
                                "squeue", "-h", "-j", str(job_id), "-o", "%T"],
                               env=grid.env(cluster), capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=60)
            return r.stdout.strip()

        def net(*argv):
            r = grid.localgrid("net", *argv)
            t.ok(r.returncode == 0, "localgrid net %s" % " ".join(argv), r.stderr[-400:])

        def submit():
            s, doc = fc.submit({"nodes": 6, "duration": 180, "ready": int(time.time()) + 20,
                                "script": script(tmp, "sleep 150"), "std_out": "/dev/null"})
            parts = {p["cluster"]: p["job_id"] for p in (doc or {}).get("parts", [])}
            t.ok(s == 201 and sorted(parts) == ["alpha", "beta"],
                 "a co-allocation over the sites alpha and beta is scheduled", "%s %r" % (s, doc))
            return doc.get("id"), doc.get("planned_start"), parts

        def gone(cluster, job_id):
            return squeue(cluster, job_id) == ""

        def stat(name):
            return (fc.client().get("/v1/stats").json or {}).get(name, 0)

        # -- 1. cancelled while beta is partitioned ------------------------------
        coid, start, parts = submit()
        net("beta", "partition")
        r = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        t.ok(r.status in (200, 202), "the owner cancels while beta is partitioned", "%s" % r.status)
        t.ok(t.wait_for(lambda: gone("alpha", parts["alpha"]), 30, "alpha's part to go"),
             "alpha's part goes with its reservation")
        t.wait_for(lambda: time.time() > start + 12, 60, "the planned start to pass")
        t.ok(squeue("beta", parts["beta"]) == "PENDING",
             "12 s past the planned start beta's part job still waits, held, behind the partition",
             squeue("beta", parts["beta"]))
        net("beta", "heal")
        t.ok(t.wait_for(lambda: gone("beta", parts["beta"]), 90, "beta's part to be released"),
             "after the heal beta's part goes with its reservation")
        t.ok(t.wait_for(lambda: (fc.get(coid)[1] or {}).get("state") == "cancelled", 30,
                        "the cancel to end"), "the co-allocation is cancelled")
        r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", "beta",
                            "scontrol", "-o", "show", "job", str(parts["beta"])],
                           env=grid.env("beta"), capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        t.ok("RunTime=00:00:00" in r.stdout or "Invalid job id" in r.stderr,
             "beta's part job never ran", r.stdout[-300:] + r.stderr[-200:])

        # -- 2. partitioned right after the gate confirmed --------------------------
        h = Hold(hold_dir, "gate-confirmed")
        coid, start, parts = submit()
        t.ok(h.reached(60), "at the planned start the gate released and confirmed both parts")
        net("beta", "partition")
        h.release()
        t.ok(t.wait_for(lambda: squeue("alpha", parts["alpha"]) == "RUNNING"
                        and squeue("beta", parts["beta"]) == "RUNNING", 60, "both parts to start"),
             "both part jobs start on time, beta's behind the partition")
        started = time.time()
        t.ok(t.wait_for(lambda: stat("late_parts_unasked") >= 1, SKEW + 40,
                        "the watchdog to find beta's part late"),
             "the watchdog finds beta's part late by its events and cannot ask beta")
        t.wait_for(lambda: time.time() - started > SKEW + 15, SKEW + 30, "the skew to pass")
        _, d = fc.get(coid)
        t.ok((d or {}).get("state") == "running" and squeue("alpha", parts["alpha"]) == "RUNNING"
             and squeue("beta", parts["beta"]) == "RUNNING",
             "%.0f s after the start the co-allocation still runs and no part was cancelled"
             % (time.time() - started), "%r" % {k: (d or {}).get(k) for k in ("state", "reason")})
        net("beta", "heal")
        d = fc.wait_parts(coid, 2, timeout=90)
        t.ok(d.get("state") == "running", "once the link heals, flexcod sees both parts running",
             "%r" % (fc.get(coid)[1],))
        t.ok(stat("late_parts") == 0, "no part was taken for late (late_parts 0)")
        r = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        t.ok(r.status == 200 and t.wait_for(lambda: gone("alpha", parts["alpha"])
                                            and gone("beta", parts["beta"]), 60, "a clean grid"),
             "cancelled, nothing is left")
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
