#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A rescheduling pass does not wait for a black-holed cluster (issue 15, 2).

flexcod reaches every cluster through a FaultProxy; gamma's becomes a
black hole (accepts, never answers) while its breaker is still closed
(BreakerFailures=50, ClusterTimeout=5, PassProfileWait=2000).  A local
job on alpha ends early:

- the triggered pass finishes well under ClusterTimeout (GET /v1/stats
  resched_pass_ms, 2.5 s at most here; before, it waited the whole 5 s
  for gamma's profile) and says in the log that gamma's co-allocations
  wait for the next pass (once the profile the passes kept for gamma is
  older than ClusterTimeout: until then a pass plans on it);
- no pass, the first after gamma went silent included, waits
  PassProfileWait for gamma: once alpha and beta have answered, gamma is
  given a short time only (resched_pass_ms max under 1 s here; before,
  the first pass took PassProfileWait, 2 s, and more);
- the co-allocation on alpha is still shifted earlier (to its nodes
  freed by the local job);
- the co-allocation on gamma is left as it was (scheduled, not moved, its
  parts in place): deferred, not failed nor cancelled."""

import os
import time

import flexcotest as t
from faultproxy import flexcod_via_proxies
from flexcodtest import Flexcod, nothing_left, script

NODES = [2, 2, 2]
CLUSTER_TIMEOUT = 5
PASS_PROFILE_WAIT = 2000


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-slowpass-")
        os.chmod(tmp, 0o777)
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")
        proxies = flexcod_via_proxies(grid, fc)
        try:
            t.ok(fc.reconfigure(ClusterTimeout=CLUSTER_TIMEOUT, BreakerFailures=50,
                                PassProfileWait=PASS_PROFILE_WAIT,
                                RescheduleMode="shift", RescheduleMargin=30,
                                RescheduleWait=10, MaxMoves=3),
                 "flexcod through one proxy per cluster; ClusterTimeout=%d, "
                 "BreakerFailures=50, PassProfileWait=%d (SIGHUP)"
                 % (CLUSTER_TIMEOUT, PASS_PROFILE_WAIT))

            def block(cluster, minutes):
                return cluster, grid.submit(cluster, ["-N2", "-t", str(minutes), "-o",
                                                      "/dev/null", "--wrap",
                                                      "sleep %d" % (minutes * 60)])

            def running(jobs):
                return all(grid.run(c, ["squeue", "-h", "-j", j, "-o", "%T"]).stdout.strip()
                           == "RUNNING" for c, j in jobs)

            alpha_job, gamma_job = block("alpha", 10), block("gamma", 20)
            t.ok(t.wait_for(lambda: running([alpha_job, gamma_job]), 60, "local jobs"),
                 "alpha and gamma busy with local jobs (10 and 20 min)")
            body = {"nodes": 2, "duration": 60, "script": script(tmp, "sleep 5"),
                    "std_out": "/dev/null"}
            sa, a = fc.submit(dict(body, clusters=["alpha"]))
            sg, g = fc.submit(dict(body, clusters=["gamma"]))
            t.ok(sa == 201 and sg == 201 and a.get("state") == g.get("state") == "scheduled"
                 and a.get("planned_start", 0) > time.time() + 400
                 and g.get("planned_start", 0) > time.time() + 400,
                 "one co-allocation waits on alpha, one on gamma, behind the local jobs",
                 "%s %r %s %r" % (sa, a, sg, g))
            g_parts = sorted((p["cluster"], p["reservation"]) for p in g.get("parts", []))

            def stats():
                return fc.client().get("/v1/stats").json or {}
            before = stats().get("resched_pass_ms", {})
            passes = before.get("count", 0)
            t.ok(before.get("max", PASS_PROFILE_WAIT) < PASS_PROFILE_WAIT // 2,
                 "every pass so far took under %d ms" % (PASS_PROFILE_WAIT // 2), "%r" % before)

            proxies["gamma"].set("blackhole")

            def gamma_cluster():
                for c in (fc.client().get("/v1/clusters").json or {}).get("clusters", []):
                    if c.get("name") == "gamma":
                        return c
                return {}
            # A pass plans on gamma's last profile while it is at most
            # ClusterTimeout old; the deferral is the case once it is older.
            def aged():
                age = gamma_cluster().get("pass_profile_age_ms", 0)
                return age is None or age > CLUSTER_TIMEOUT * 1000
            t.ok(t.wait_for(aged, 30, "gamma's kept profile to age"),
                 "gamma silent; the passes kept no profile of it younger than "
                 "ClusterTimeout (GET /v1/clusters pass_profile_age_ms)", "%r" % gamma_cluster())
            grid.run("alpha", ["scancel", alpha_job[1]])
            moved = t.wait_for(lambda: (fc.get(a["id"])[1] or {}).get("moves", 0) >= 1
                               and fc.get(a["id"])[1], 60, "co-%s to move" % a["id"]) or {}
            t.ok(moved.get("moves") == 1 and moved.get("planned_start", 1e12) < a["planned_start"] - 300,
                 "alpha's local job ends early: co-%s is shifted earlier although gamma "
                 "hangs" % a["id"], "%r" % moved)
            pm = t.wait_for(lambda: stats().get("resched_pass_ms", {}).get("count", 0) > passes
                            and stats()["resched_pass_ms"], 30, "the pass to end") or {}
            t.ok(0 <= pm.get("last", -1) < CLUSTER_TIMEOUT * 1000 // 2,
                 "the pass took %s ms: well under ClusterTimeout (%d s), not waiting for "
                 "gamma" % (pm.get("last"), CLUSTER_TIMEOUT), "%r" % pm)
            t.ok(pm.get("max", PASS_PROFILE_WAIT) < PASS_PROFILE_WAIT // 2,
                 "no pass since gamma went silent waited PassProfileWait (%d ms) for it: "
                 "the longest took %s ms" % (PASS_PROFILE_WAIT, pm.get("max")), "%r" % pm)
            t.ok("rescheduling pass: no profile from gamma within PassProfileWait"
                 in fc.log_tail(3000),
                 "the log says gamma's co-allocations wait for the next pass", fc.log_tail(20))
            sg2, g2 = fc.get(g["id"])
            t.ok(sg2 == 200 and g2.get("state") == "scheduled" and g2.get("moves") == 0
                 and g2.get("planned_start") == g.get("planned_start")
                 and sorted((p["cluster"], p["reservation"]) for p in g2.get("parts", []))
                 == g_parts,
                 "co-%s on gamma is deferred: still scheduled, not moved, its parts in place"
                 % g["id"], "%s %r" % (sg2, g2))
            b = gamma_cluster().get("breaker") or {}
            t.ok(b.get("state") == "closed", "gamma's breaker is still closed", "%r" % b)

            done = t.wait_for(lambda: (fc.get(a["id"])[1] or {}).get("state")
                              in ("completed", "failed") and fc.get(a["id"])[1], 90,
                              "co-%s to end" % a["id"]) or {}
            t.ok(done.get("state") == "completed",
                 "co-%s runs at its new start and completes" % a["id"], "%r" % done)
            proxies["gamma"].heal()
            r = fc.client().request("DELETE", "/v1/coallocations/%s" % g["id"])
            t.ok(r.status == 200, "gamma answers again; co-%s cancelled" % g["id"],
                 "%s %r" % (r.status, r.raw[:200]))
            grid.run("gamma", ["scancel", gamma_job[1]])
            t.ok(t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
                 "nothing is left in Slurm")
            fc.no_illegal_transitions()
        finally:
            for p in proxies.values():
                p.close()


if __name__ == "__main__":
    t.run_main(main)
