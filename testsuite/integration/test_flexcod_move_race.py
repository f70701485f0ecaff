#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A move never runs a co-allocation twice (issue 15 §1.3, issue 38 §2.2).
A move is make-before-break: the new reservations and part jobs are made
while the old set still holds its nodes, then flexcod switches and releases
the old set, which cancels its part jobs.  If the old set started while
the move was in flight, its part jobs would run, and the release would kill
them while the new set ran the same job again later.

Here, on a real 3-cluster grid, a co-allocation is booked to start about
45 s from now; a PATCH that excludes its cluster starts a move, which is
held (FLEXCOD_TEST_HOLD_DIR, step 'move-submitted') past the old set's
planned start.  The start gate opens a co-allocation only with its lock,
which the move holds, so the old part job stays held meanwhile (before the
gate it was released at commit and ran).  Released, flexcod re-checks
before the switch and abandons the move, since the start has come: the
PATCH answers 409, the co-allocation is not moved, the new set is released
on the other clusters, and the gate then starts the old set, which
completes once."""

import os
import threading
import time

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script, slurm_jobs, \
    slurm_reservations

NODES = [4, 4, 4]


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--test-hooks"]) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-race-")
        os.chmod(tmp, 0o777)
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")

        def get(coid):
            return fc.get(coid)[1] or {}

        st, doc = fc.submit({"nodes": 2, "duration": 60, "ready": int(time.time()) + 45,
                             "script": script(tmp, "sleep 30"), "std_out": "/dev/null"})
        coid = doc.get("id")
        part = (doc.get("parts") or [{}])[0]
        was = part.get("cluster", "alpha")
        others = [c for c in grid.cluster_names() if c != was]
        t.ok(st == 201 and doc.get("state") == "scheduled"
             and doc.get("planned_start", 0) > time.time() + 20,
             "co-%s booked on %s, starting in %d s" % (
                 coid, was, doc.get("planned_start", 0) - time.time()), "%s %r" % (st, doc))

        h = Hold(hold_dir, "move-submitted")
        answer = {}

        def patch():
            r = fc.client().request("PATCH", "/v1/coallocations/%s" % coid,
                                    body={"clusters": others})
            answer["status"], answer["json"] = r.status, r.json
        th = threading.Thread(target=patch)
        th.start()
        t.ok(h.reached(60), "PATCH clusters=%s: the move has its new set and waits before "
             "the switch" % ",".join(others))

        def old_state():
            return [j[1] for j in slurm_jobs(grid)[was]
                    if len(j) > 2 and j[2] == part.get("reservation")]

        def old_running():
            return old_state() == ["RUNNING"]
        t.wait_for(lambda: time.time() > doc.get("planned_start", 0) + 8, 90,
                   "the old set's start to pass")
        t.ok(old_state() == ["PENDING"],
             "meanwhile the old set's start comes, and its part job %s stays held on %s: "
             "the gate waits for the move" % (part.get("job_id"), was), "%r" % slurm_jobs(grid))
        h.release()
        th.join(120)
        js = answer.get("json") or {}
        t.ok(answer.get("status") == 409 and "start" in str(js.get("message", js)),
             "released: flexcod re-checks before the switch and abandons the move (409)",
             "%r" % answer)
        t.wait_for(old_running, 30, "the gate to start the old set")
        x = get(coid)
        t.ok(x.get("moves") == 0 and [p["cluster"] for p in x.get("parts", [])] == [was]
             and old_running(),
             "the gate then starts the old set, on %s; the co-allocation is not moved" % was,
             "%r %r" % ({k: x.get(k) for k in ("state", "moves", "parts")}, slurm_jobs(grid)))
        t.ok(t.wait_for(lambda: not any(slurm_reservations(grid)[c] for c in others), 30,
                        "the new set to be released"),
             "the new set is released on %s" % ",".join(others), "%r" % slurm_reservations(grid))
        done = t.wait_for(lambda: get(coid).get("state") in ("completed", "failed")
                          and get(coid), 120, "co-%s to end" % coid) or {}
        t.ok(done.get("state") == "completed" and done.get("moves") == 0,
             "co-%s completes once, from its first set" % coid,
             "%r" % {k: done.get(k) for k in ("state", "reason", "moves", "parts")})
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))


if __name__ == "__main__":
    t.run_main(main)
