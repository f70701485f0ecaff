#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The start gate (issue 38 §2.2; doc/flexcod.md, "The start gate").

flexcod reaches each cluster through a fault proxy; PartStartSkew=20, so
a start lease is 13 s.

1. Cancelled while a cluster is cut off: a co-allocation over alpha and
   beta is scheduled, the link to beta is black-holed, the owner cancels.
   Before the gate, the part jobs were released at commit, so beta's
   started at the planned time and ran alone.  Now it stays held (nothing
   was released before the start) and, once the link heals, it goes with
   its reservation without ever running.
2. Released while a cluster goes deaf: flexcod stops at the gate's
   opening (test hook 'gate-opening': leases written, nothing released),
   beta's proxy starts dropping answers, flexcod releases both part jobs.
   beta's plugin takes the release but flexcod never hears it, so nothing
   is confirmed.  Both parts start; each plugin cancels its own part when
   its lease ends unconfirmed, beta's while flexcod still cannot reach it,
   so neither ran longer than the lease plus the plugin's pass; flexcod
   fails the co-allocation, and after the heal nothing is left."""

import os
import re
import time

import flexcotest as t
from faultproxy import flexcod_via_proxies
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script

NODES = [4, 4]
SKEW = 20
LEASE = SKEW - 7      # gate.cpp: PartStartSkew - kLeaseGrace
AGENT_PASS = 5        # the plugin's agent period (plugin/agent.c)


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-gate-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--test-hooks"]) as grid:
        fc = Flexcod(grid)
        proxies = flexcod_via_proxies(grid, fc)
        t.ok(fc.reconfigure(PartStartSkew=SKEW), "PartStartSkew=%d (SIGHUP)" % SKEW)
        tmp = t.scratch_dir("flexcod-gate-")
        os.chmod(tmp, 0o777)

        def job(cluster, job_id):
            r = grid.run(cluster, ["scontrol", "-o", "show", "job", str(job_id)])
            f = dict(w.split("=", 1) for w in r.stdout.split() if "=" in w)
            return f

        def state(cluster, job_id):
            return job(cluster, job_id).get("JobState", "")

        def submit(ready):
            s, doc = fc.submit({"nodes": 6, "duration": 180, "ready": ready,
                                "script": script(tmp, "sleep 150"), "std_out": "/dev/null"})
            parts = {p["cluster"]: p for p in (doc or {}).get("parts", [])}
            t.ok(s == 201 and sorted(parts) == ["alpha", "beta"],
                 "a co-allocation over alpha and beta is scheduled", "%s %r" % (s, doc))
            return doc.get("id"), doc.get("planned_start"), parts

        # -- 1. cancelled while beta is cut off --------------------------------
        coid, start, parts = submit(int(time.time()) + 20)
        t.ok(state("alpha", parts["alpha"]["job_id"]) == "PENDING"
             and state("beta", parts["beta"]["job_id"]) == "PENDING",
             "both part jobs wait, held, before the start")
        proxies["beta"].set("blackhole")
        r = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        t.ok(r.status in (200, 202), "the owner cancels while beta is cut off", "%s" % r.status)
        t.wait_for(lambda: time.time() > start + 12, 60, "the planned start to pass")
        bj = job("beta", parts["beta"]["job_id"])
        t.ok(bj.get("JobState") == "PENDING",
             "12 s past the planned start beta's part job has not started: it was never released",
             "%r" % {k: bj.get(k) for k in ("JobState", "Reason", "StartTime")})
        proxies["beta"].heal()
        t.ok(t.wait_for(lambda: nothing_left(grid), 90, "beta's part to be released"),
             "after the heal beta's part goes with its reservation")
        _, d = fc.get(coid)
        t.ok((d or {}).get("state") == "cancelled", "the co-allocation is cancelled",
             "%r" % (d or {}).get("state"))
        ran = job("beta", parts["beta"]["job_id"])
        t.ok(ran.get("RunTime", "00:00:00") == "00:00:00",
             "beta's part job never ran", "%r" % {k: ran.get(k) for k in ("JobState", "RunTime")})

        # -- 2. released while beta's answers are lost ---------------------------
        h = Hold(hold_dir, "gate-opening")
        coid, start, parts = submit(int(time.time()) + 20)
        t.ok(h.reached(60), "at the planned start flexcod has written the leases")
        proxies["beta"].set("deaf")
        h.release()
        ja, jb = parts["alpha"]["job_id"], parts["beta"]["job_id"]
        t.ok(t.wait_for(lambda: state("alpha", ja) == "RUNNING" and state("beta", jb) == "RUNNING",
                        40, "both part jobs to start"),
             "both part jobs were released and start (beta's release went through, its answer did not)")
        t.ok(t.wait_for(lambda: state("beta", jb) not in ("RUNNING", "PENDING", "COMPLETING"),
                        LEASE + AGENT_PASS + 30, "beta's plugin to cancel its part"),
             "beta's plugin cancels its part when the lease ends unconfirmed, with the link still deaf",
             "%r" % state("beta", jb))
        for c, jid in (("alpha", ja), ("beta", jb)):
            f = job(c, jid)
            m = re.match(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", f.get("RunTime", ""))
            secs = (int(m.group(1) or 0) * 86400 + int(m.group(2)) * 3600 + int(m.group(3)) * 60
                    + int(m.group(4))) if m else -1
            t.ok(0 <= secs <= LEASE + AGENT_PASS + 2,
                 "%s's part ran %d s, at most the lease (%d s) and the plugin's pass"
                 % (c, secs, LEASE), "%r" % {k: f.get(k) for k in ("JobState", "RunTime")})
        t.ok("start lease lapsed at" in grid.log_tail("beta", n=400),
             "beta's slurmctld log says why")
        t.ok(t.wait_for(lambda: (fc.get(coid)[1] or {}).get("state") == "failed", 30,
                        "flexcod to fail it"),
             "flexcod fails the co-allocation once the leases have surely ended",
             "%r" % {k: (fc.get(coid)[1] or {}).get(k) for k in ("state", "reason")})
        reason = (fc.get(coid)[1] or {}).get("reason", "")
        t.ok("start lease" in reason, "its reason names the lease", reason)
        proxies["beta"].heal()
        t.ok(t.wait_for(lambda: nothing_left(grid), 90, "a clean grid"), "after the heal nothing is left")
        st = fc.client().get("/v1/stats").json or {}
        t.ok(st.get("gate_opened", 0) >= 1 and st.get("gate_failures", 0) >= 1,
             "GET /v1/stats counts the gate's openings and failures",
             "%r" % {k: st.get(k) for k in ("gate_opened", "gate_confirmed", "gate_waits", "gate_failures")})
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
