#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The part-start watchdog (issue 15 §1.2): on a real 3-cluster grid, a
co-allocation split over two clusters whose second part job an admin holds
(`scontrol hold`), so that it cannot start at the reserved time while the
first part does.  With PartStartPolicy=fail (the default) and
PartStartSkew=10, flexcod must cancel the part that runs alone, release
every reservation and fail the co-allocation with a reason naming the late
part, within the skew plus the watchdog's period.  With
PartStartPolicy=warn the parts keep running and the reason says so."""

import time

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script, slurm_jobs, slurm_reservations

NODES = [4, 4, 4]
SKEW = 10


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-late-")
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")

        def configure(policy):
            return fc.reconfigure(PartStartSkew=SKEW, PartStartPolicy=policy)

        def get(coid):
            return fc.get(coid)[1] or {}

        def state_of(cluster, job):
            r = grid.run(cluster, ["squeue", "-h", "-j", str(job), "-o", "%T"])
            return r.stdout.strip()

        for policy in ("fail", "warn"):
            t.ok(configure(policy), "PartStartSkew=%d PartStartPolicy=%s (SIGHUP)" % (SKEW, policy))
            st, doc = fc.submit({"nodes": 6, "duration": 120, "ready": int(time.time()) + 25,
                                 "script": script(tmp, "sleep 90"), "std_out": "/dev/null"})
            coid = doc.get("id")
            parts = doc.get("parts") or []
            t.ok(st == 201 and len(parts) == 2, "co-%s split over %s" % (
                coid, ",".join("%s:%s" % (p.get("cluster"), p.get("nodes")) for p in parts)),
                "%s %r" % (st, doc))
            if len(parts) != 2:
                continue
            first, late = parts
            r = grid.run(late["cluster"], ["scontrol", "hold", str(late["job_id"])])
            t.ok(r.returncode == 0, "scontrol hold %s on %s before the start"
                 % (late["job_id"], late["cluster"]), r.stdout + r.stderr)
            t.ok(t.wait_for(lambda: state_of(first["cluster"], first["job_id"]) == "RUNNING", 60,
                            "the first part to start"),
                 "the first part job starts on %s at the reserved time" % first["cluster"])
            began = time.time()
            if policy == "fail":
                x = t.wait_for(lambda: get(coid).get("state") == "failed" and get(coid),
                               SKEW + 20, "co-%s to fail" % coid) or {}
                took = time.time() - began
                t.ok(x.get("state") == "failed" and "did not start within %d s" % SKEW
                     in (x.get("reason") or "") and ("part 1 on %s" % late["cluster"])
                     in (x.get("reason") or ""),
                     "co-%s failed %.0f s after the first part started: %s"
                     % (coid, took, x.get("reason")), "%r" % {k: x.get(k) for k in ("state", "reason", "parts")})
                t.ok(t.wait_for(lambda: nothing_left(grid), 30, "a clean grid"),
                     "the part that ran alone was cancelled and every reservation released",
                     "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
                hist = [h for h in x.get("history", []) if h.get("what") == "coallocation"]
                t.ok(hist and hist[-1].get("to") == "failed", "the transition is in the history",
                     "%r" % hist[-3:])
            else:
                x = t.wait_for(lambda: "PartStartPolicy=warn" in (get(coid).get("reason") or "")
                               and get(coid), SKEW + 20, "the warning") or {}
                t.ok(x.get("state") == "running" and "did not start within" in (x.get("reason") or ""),
                     "warn: co-%s stays running and its reason names the late part: %s"
                     % (coid, x.get("reason")), "%r" % {k: x.get(k) for k in ("state", "reason")})
                t.ok(state_of(first["cluster"], first["job_id"]) == "RUNNING",
                     "... and the first part keeps running")
                s = fc.client().get("/v1/stats").json or {}
                t.ok(s.get("late_parts") == 2, "GET /v1/stats: late_parts 2", "%r" % s)
                fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
                t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left",
                     "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))


if __name__ == "__main__":
    t.run_main(main)
