#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cores-seq rolls back after a later refusal (issue 18 §1).

flexcod's cores-seq policy reserves the parts one at a time in the plan's
order and stops at the first refusal; the parts not asked are released
without a request, the ones already made are released by the rollback, and
the request is re-planned.

Here, on a real 3-cluster grid, a 9-node cores-seq request is held
(FLEXCOD_TEST_HOLD_DIR, step 'reserving') once it is planned in three
parts; a site reservation then takes enough of part 1's cluster that Slurm
cannot give part 1 its nodes.  Released, flexcod must reserve part 0,
be refused part 1 (409 not_available), not ask for part 2, delete part 0's
reservation from Slurm, re-plan around the refusal and complete."""

import os
import re
import threading

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script, slurm_jobs, \
    slurm_reservations

NODES = [4, 4, 4]
WANT = 9


def slurm_reservation_names(grid, cluster):
    """Every reservation name Slurm has on `cluster` (scontrol show res)."""
    r = grid.run(cluster, ["scontrol", "show", "reservation", "-o"])
    return [w.split("=", 1)[1] for line in r.stdout.splitlines() for w in line.split()
            if w.startswith("ReservationName=")]


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--test-hooks"]) as grid:
        fc = Flexcod(grid)
        c = fc.client()
        tmp = t.scratch_dir("flexcod-seq-")
        os.chmod(tmp, 0o777)
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")

        # -- held once planned, before the first reserve -----------------------
        h = Hold(hold_dir, "reserving")
        answer = {}

        def submit():
            answer["status"], answer["json"] = fc.submit(
                {"nodes": WANT, "duration": 60, "policy": "cores-seq",
                 "script": script(tmp), "std_out": "/dev/null"})
        th = threading.Thread(target=submit)
        th.start()
        t.ok(h.reached(60), "cores-seq, %d nodes: flexcod holds before reserving" % WANT)
        lst = (c.get("/v1/coallocations").json or {}).get("coallocations", [])
        coid = max([x["id"] for x in lst if x.get("state") == "committing"] or [0])
        held = fc.get(coid)[1] or {}
        plan = sorted(((p["index"], p["cluster"], p["nodes"]) for p in held.get("parts", [])))
        t.ok(coid and len(plan) == 3 and len({p[1] for p in plan}) == 3
             and sum(p[2] for p in plan) == WANT,
             "co-%s is committing attempt 1 in three parts %r" % (coid, plan), "%r" % held)
        # Part 1's cluster keeps one node fewer than part 1 asks for; the
        # other two clusters and what is left there still hold WANT nodes.
        _, blk, k = plan[1] if len(plan) == 3 else (1, "beta", 4)
        taken = NODES[0] - k + 1
        t.ok(k >= 2 and sum(NODES) - taken >= WANT,
             "part 1 asks for %d nodes on %s: a site reservation taking %d of them refuses "
             "it and leaves %d nodes for the re-plan" % (k, blk, taken, sum(NODES) - taken),
             "%r" % plan)
        r = grid.run(blk, ["scontrol", "create", "reservation", "ReservationName=seqblock",
                           "Nodes=%s[1-%d]" % (blk, max(1, taken)), "StartTime=now",
                           "Duration=10", "Users=root"])
        t.ok(r.returncode == 0, "site reservation seqblock on %s[1-%d]" % (blk, taken),
             r.stdout + r.stderr)
        h.release()
        th.join(120)
        st, doc = answer.get("status"), answer.get("json") or {}
        # Right after the answer, before anything could expire on its own.
        names = {cl: slurm_reservation_names(grid, cl) for cl in grid.cluster_names()}
        t.ok(st == 201 and doc.get("state") == "scheduled",
             "released: POST answers 201, co-%s scheduled after a re-plan" % coid,
             "%s %r" % (st, doc))

        # -- attempt 1 in flexcod's log ------------------------------------------
        pat = re.compile(r"co-%s: cores-seq: (?:reserving part (\d+)|part (\d+) on (\S+) "
                         r"(reserved \((\S+)\)|refused: (.*)))" % coid)
        seen, why, resv0 = [], "", None
        for ln in fc.log_tail(10 ** 5).splitlines():
            m = pat.search(ln)
            if not m:
                continue
            if m.group(1) is not None:
                seen.append(("ask", int(m.group(1))))
            elif m.group(5):
                seen.append(("made", int(m.group(2))))
                resv0 = resv0 or m.group(5)
            else:
                seen.append(("refused", int(m.group(2))))
                why = why or m.group(6)
        first = seen[:seen.index(("refused", 1)) + 2] if ("refused", 1) in seen else seen
        t.ok(first[:4] == [("ask", 0), ("made", 0), ("ask", 1), ("refused", 1)],
             "attempt 1: part 0 reserved on %s, then part 1 asked and refused on %s"
             % (plan[0][1] if plan else "?", blk), "%r" % seen)
        t.ok(re.search(r"HTTP 409 not_available", why or ""),
             "... with 409 not_available", "%r" % why)
        t.ok(("ask", 2) not in first and len(first) == 5 and first[4] == ("ask", 0),
             "... part 2 is never asked: the next reserve is attempt 2's part 0", "%r" % seen)

        # -- attempt 1 in the co-allocation's history ----------------------------
        hist = doc.get("history") or []

        def changes(idx):
            return [(x.get("from"), x.get("to"), x.get("reason", "")) for x in hist
                    if x.get("what", "").startswith("part %d (attempt 1," % idx)]
        h0, h1, h2 = changes(0), changes(1), changes(2)
        t.ok([x[1] for x in h0] == ["reserving", "tentative", "cancelling", "released"]
             and h0[-1][2].startswith("rolled back:"),
             "history: attempt 1's part 0 went tentative, then was rolled back and released",
             "%r" % h0)
        t.ok([x[1] for x in h1] == ["reserving", "released"] and "not_available" in h1[-1][2],
             "history: attempt 1's part 1 was refused (not_available) and never held",
             "%r" % h1)
        t.ok([x[1] for x in h2] == ["reserving", "released"]
             and h2[-1][2].startswith("not asked: part 1 on %s" % blk),
             "history: attempt 1's part 2 was released without a request", "%r" % h2)

        # -- part 0's reservation is gone from Slurm -------------------------------
        t.ok(resv0 and plan and resv0 not in names[plan[0][1]],
             "part 0's reservation %s is gone from %s (scontrol show reservation) when POST "
             "answers" % (resv0, plan[0][1] if plan else "?"), "%r" % names)

        # -- the re-plan -----------------------------------------------------------
        now = [(p["index"], p["cluster"], p["nodes"]) for p in doc.get("parts", [])]
        again = [x for x in hist if x.get("what", "").startswith("part 0 (attempt 2,")]
        t.ok(again and sum(p[2] for p in now) == WANT
             and all(p[2] <= k - 1 for p in now if p[1] == blk),
             "attempt 2 places %d nodes around the refusal: %r" % (WANT, now), "%r" % doc)
        stats = c.get("/v1/stats").json or {}
        t.ok(stats.get("rollbacks") == 1 and stats.get("replans") == 1
             and stats.get("violations") == 1,
             "GET /v1/stats: 1 rollback, 1 re-plan, 1 violation",
             "%r" % {k: stats.get(k) for k in ("rollbacks", "replans", "violations")})

        def finished():
            x = fc.get(coid)[1] or {}
            return x.get("state") in ("completed", "failed") and x
        x = t.wait_for(finished, 60, "co-%s to end" % coid) or {}
        t.ok(x.get("state") == "completed", "co-%s completes" % coid,
             "%r" % {k: x.get(k) for k in ("state", "reason", "parts")})

        r = grid.run(blk, ["scontrol", "delete", "ReservationName=seqblock"])
        t.ok(r.returncode == 0, "site reservation seqblock deleted", r.stdout + r.stderr)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"),
             "nothing left in Slurm", "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
