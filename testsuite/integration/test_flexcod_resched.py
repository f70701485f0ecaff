#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Rescheduling on early completion, on a real 3-cluster grid: (a) Shift: a
co-allocation waiting behind local jobs moves earlier on the same clusters
with the same node counts when those jobs end early; Slurm's reservations
show the new start, the old reservations and part jobs are gone, and it
runs and completes.  (b) Shift+Remap: a split co-allocation moves onto one
cluster that became free, without the multi-site overhead, and completes.
(c) kill -9 of flexcod in the middle of a move, before and after its
switch: after the restart exactly one complete set of reservations and
part jobs exists.  (e) A local job queued behind the freed nodes gets them
first; the co-allocation is shifted beside it.  (d) PATCH excluding a cluster a part is on moves the
co-allocation off it."""

import os
import time

import flexcotest as t
from flexcohttp import parse_exposition, value
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script, slurm_jobs, \
    slurm_reservations

NODES = [4, 4, 4]


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--test-hooks"]) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-resched-")
        os.chmod(tmp, 0o777)
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")

        def configure(mode):
            return fc.reconfigure(RescheduleMode=mode, RescheduleMargin=30, RescheduleWait=20,
                                  MaxMoves=3)

        def block(cluster, nodes, minutes):
            j = grid.submit(cluster, ["-N%d" % nodes, "-t", str(minutes), "-o", "/dev/null",
                                      "--wrap", "sleep %d" % (minutes * 60)])
            return cluster, j

        def running(jobs):
            def f():
                for c, j in jobs:
                    r = grid.run(c, ["squeue", "-h", "-j", j, "-o", "%T"])
                    if r.stdout.strip() != "RUNNING":
                        return False
                return True
            return t.wait_for(f, 60, "the local jobs to run")

        def cancel(jobs):
            for c, j in jobs:
                grid.run(c, ["scancel", j])

        def resv_starts(cluster):
            r = grid.run(cluster, ["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show",
                                   "reservation", "-o"])
            out = {}
            for line in r.stdout.splitlines():
                f = dict(w.split("=", 1) for w in line.split() if "=" in w)
                if f.get("ReservationName", "").startswith("flexco_"):
                    out[f["ReservationName"]] = int(f["StartTime"])
            return out

        def get(coid):
            return fc.get(coid)[1] or {}

        def one_set(doc):
            """Slurm holds exactly the current parts' reservations and one
            pending or running part job in each, nothing else of flexco."""
            parts = doc.get("parts", [])
            want = {c: sorted(p["reservation"] for p in parts if p["cluster"] == c)
                    for c in grid.cluster_names()}
            if slurm_reservations(grid) != want:
                return False
            jobs = slurm_jobs(grid)
            for p in parts:
                mine = [j for j in jobs[p["cluster"]] if len(j) > 2 and j[2] == p["reservation"]]
                if [j[0] for j in mine] != [str(p["job_id"])]:
                    return False
            flexco_jobs = sum(1 for c in jobs for j in jobs[c] if len(j) > 2
                              and j[2].startswith("flexco_"))
            return flexco_jobs == len(parts)

        def completed(coid):
            x = t.wait_for(lambda: get(coid).get("state") in ("completed", "failed")
                           and get(coid), 120, "co-%s to complete" % coid) or {}
            return x

        # The part jobs run 20 s: long enough to see them in their new
        # reservations, with the old ones gone.
        body = {"duration": 60, "script": script(tmp, "sleep 20"), "std_out": "/dev/null"}

        # -- (a) Shift ---------------------------------------------------------
        t.ok(configure("shift"), "RescheduleMode=shift, margin 30 s (SIGHUP)")
        jobs = [block("alpha", 4, 10), block("beta", 4, 10)]
        gamma = [block("gamma", 4, 20)]
        t.ok(running(jobs + gamma), "every node busy with local jobs (10, 10 and 20 min)")
        st, doc = fc.submit(dict(body, nodes=6))
        parts0 = sorted((p["cluster"], p["nodes"]) for p in (doc or {}).get("parts", []))
        from_start = (doc or {}).get("planned_start") or 0
        t.ok(st == 201 and doc.get("state") == "scheduled"
             and [c for c, _ in parts0] == ["alpha", "beta"]
             and from_start > time.time() + 400,
             "6 nodes wait behind the local jobs, split over alpha and beta",
             "%s %r" % (st, doc))
        coid = doc.get("id")
        old_resv = {p["reservation"] for p in doc.get("parts", [])}
        cancel(jobs)
        x = t.wait_for(lambda: get(coid).get("moves", 0) >= 1 and get(coid), 90,
                       "co-%s to move" % coid) or {}
        mh = x.get("move_history") or [{}]
        m = mh[0]
        t.ok(x.get("moves") == 1 and len(mh) == 1 and m.get("kind") == "shift"
             and m.get("from_start") == from_start and m.get("to_start") < from_start - 300
             and x.get("planned_start") == m.get("to_start"),
             "the local jobs end early: co-%s is shifted earlier (kind shift, from_start > "
             "to_start)" % coid, "%r" % x)
        t.ok(sorted((p["cluster"], p["nodes"]) for p in m.get("from_parts", [])) == parts0
             and sorted((p["cluster"], p["nodes"]) for p in m.get("to_parts", [])) == parts0
             and sorted((p["cluster"], p["nodes"]) for p in x.get("parts", [])) == parts0,
             "Shift keeps the clusters and node counts", "%r" % m)
        t.ok(isinstance(m.get("time"), int) and m.get("from_end") > m.get("to_end")
             and m.get("reason"), "the move is recorded with its times and reason", "%r" % m)
        starts = {}
        for c in ("alpha", "beta"):
            starts.update(resv_starts(c))
        t.ok(all(abs(starts.get(p["reservation"], 0) - m["to_start"]) <= 1
                 for p in x.get("parts", [])) and not old_resv & set(starts),
             "Slurm's reservations show the new start; the old ones are gone",
             "%r %r %r" % (starts, old_resv, m.get("to_start")))
        t.ok(t.wait_for(lambda: one_set(get(coid)), 30, "one set"),
             "nothing orphaned: exactly the new reservations, one part job per part",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
        x = completed(coid)
        t.ok(x.get("state") == "completed"
             and all(p["exit_code"] == 0 for p in x.get("parts", [])),
             "... and it ran and completed at its new start", "%r" % x.get("state"))
        cancel(gamma)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))

        # -- (b) Shift+Remap -----------------------------------------------------
        t.ok(configure("remap"), "RescheduleMode=remap (SIGHUP)")
        alpha = [block("alpha", 4, 20)]
        long_ = [block("beta", 2, 20), block("gamma", 2, 20)]
        short = [block("beta", 2, 5), block("gamma", 2, 5)]
        t.ok(running(alpha + long_ + short), "alpha busy 20 min, beta and gamma half 5, half 20")
        st, doc = fc.submit(dict(body, nodes=4, overhead=0.5))
        parts0 = sorted((p["cluster"], p["nodes"]) for p in (doc or {}).get("parts", []))
        t.ok(st == 201 and parts0 == [("beta", 2), ("gamma", 2)]
             and doc.get("run_time") == 120 and doc.get("planned_start") > time.time() + 200,
             "4 nodes with overhead 0.5: split beta:2 + gamma:2 in 5 min (run time 120 s)",
             "%s %r" % (st, doc))
        coid = doc.get("id")
        from_start = doc.get("planned_start") or 0
        cancel(alpha)
        x = t.wait_for(lambda: get(coid).get("moves", 0) >= 1 and get(coid), 90,
                       "co-%s to move" % coid) or {}
        m = (x.get("move_history") or [{}])[0]
        t.ok(m.get("kind") == "remap" and m.get("from_start") == from_start
             and m.get("to_start") < from_start
             and [(p["cluster"], p["nodes"]) for p in m.get("to_parts", [])] == [("alpha", 4)]
             and [(p["cluster"], p["nodes"]) for p in x.get("parts", [])] == [("alpha", 4)],
             "alpha's job ends early: remapped onto alpha alone, earlier", "%r" % x)
        t.ok(x.get("run_time") == 60
             and m["to_end"] - m["to_start"] < m["from_end"] - m["from_start"],
             "one cluster: the overhead is dropped (run time 60 s, a shorter reservation)",
             "%r %r" % (x.get("run_time"), m))
        t.ok(t.wait_for(lambda: one_set(get(coid)), 30, "one set")
             and not any(slurm_reservations(grid)[c] for c in ("beta", "gamma")),
             "beta and gamma hold nothing of it any more",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
        x = completed(coid)
        t.ok(x.get("state") == "completed", "... and it ran and completed on alpha",
             "%r" % x.get("state"))
        cancel(long_ + short)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))

        # -- (c) kill -9 in the middle of a move ------------------------------------
        for step, switched in (("move-submitted", False), ("move-switched", True)):
            jobs = [block(c, 4, 10) for c in ("alpha", "beta", "gamma")]
            running(jobs)
            st, doc = fc.submit(dict(body, nodes=4, script=script(tmp, "sleep 50")))
            coid = doc.get("id")
            where = doc["parts"][0]["cluster"] if st == 201 else "alpha"
            h = Hold(hold_dir, step)
            cancel([j for j in jobs if j[0] == where])
            t.ok(st == 201 and h.reached(90),
                 "co-%s on %s: its cluster frees early, the move reaches '%s'"
                 % (coid, where, step), "%s %r" % (st, doc))
            fc.restart(kill9=True, env={HOLD_ENV: hold_dir}, while_down=h.release)

            def settled():
                d = get(coid)
                if any(p["state"] == "cancelling" for p in d.get("parts", [])):
                    return None
                return d.get("moves", 0) >= 1 and one_set(d) and d
            d = t.wait_for(settled, 90, "co-%s to settle" % coid) or {}
            t.ok(d.get("moves") == 1 and len(d.get("parts", [])) == 1
                 and d.get("planned_start", 1 << 40) < time.time() + 60,
                 "kill -9 at '%s': after the restart co-%s is moved once (%s)"
                 % (step, coid, "the switch survived" if switched
                    else "the interrupted new set released, the move made again"),
                 "%r" % {k: d.get(k) for k in ("state", "moves", "parts", "move_history")})
            t.ok(one_set(get(coid)), "exactly one complete set in Slurm",
                 "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
            fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
            cancel(jobs)
            t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left",
                 "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))

        # -- (e) local jobs first ------------------------------------------------------
        jobs = [block("alpha", 4, 10)]
        running(jobs)
        st, doc = fc.submit(dict(body, nodes=4, clusters=["alpha"]))
        coid = doc.get("id")
        from_start = doc.get("planned_start") or 0
        # A local job queued after it, short enough to run before it.
        local = grid.submit("alpha", ["-N2", "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"])
        cancel(jobs)

        def local_end():
            r = grid.run("alpha", ["env", "SLURM_TIME_FORMAT=%s", "squeue", "-h", "-j", local,
                                   "-o", "%T %e"])
            w = r.stdout.split()
            return w and w[0] == "RUNNING" and int(w[1])
        end = t.wait_for(local_end, 60, "the local job to start") or 0
        x = t.wait_for(lambda: get(coid).get("moves", 0) >= 1 and get(coid), 60,
                       "co-%s to move" % coid) or {}
        m = (x.get("move_history") or [{}])[0]
        t.ok(st == 201 and end and m.get("kind") == "shift"
             and end <= m.get("to_start", 0) < from_start,
             "the local job queued behind it runs on the freed nodes at once; co-%s is "
             "shifted to its end, not onto its nodes" % coid,
             "local end %r, %r" % (end, m))
        t.ok(t.wait_for(lambda: one_set(get(coid)), 30, "one set"),
             "... one set left", "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
        fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        cancel([("alpha", local)])
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))

        # -- (d) PATCH moves off an excluded cluster -----------------------------
        st, doc = fc.submit(dict(body, nodes=2, ready=int(time.time()) + 600))
        coid = doc.get("id")
        was = doc["parts"][0]["cluster"] if st == 201 else "alpha"
        others = [c for c in ("alpha", "beta", "gamma") if c != was]
        r = fc.client().request("PATCH", "/v1/coallocations/%s" % coid,
                                body={"clusters": others})
        x = r.json or {}
        m = (x.get("move_history") or [{}])[0]
        t.ok(r.status == 200 and x.get("clusters") == others
             and [p["cluster"] for p in x.get("parts", [])][0] in others
             and x.get("moves") == 1 and m.get("kind") == "remap",
             "PATCH clusters without %s: moved off it (a remap)" % was, "%s %r" % (r.status, x))
        t.ok(t.wait_for(lambda: one_set(get(coid)), 30, "one set"),
             "... make-before-break: one set left", "%r" % slurm_reservations(grid))
        r = fc.client().request("PATCH", "/v1/coallocations/%s" % coid,
                                body={"deadline": int(time.time()) + 120})
        t.ok(r.status == 409 and get(coid).get("deadline") is None,
             "a deadline no placement meets: 409, nothing changed", "%s %r" % (r.status, r.json))
        fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        s = fc.client().get("/v1/stats").json or {}
        t.ok(s.get("moves") == 6 and s.get("early_ends_seen", 0) >= 1,
             "GET /v1/stats: 6 moves (from the database, across restarts), early ends seen",
             "%r" % s)
        # GET /metrics (issue 17 §4): the same counts, and the durations
        # of the moves and passes since the restart
        def metrics():
            r = fc.client().get("/metrics")
            fams, problems = parse_exposition(r.raw.decode())
            passes = (fc.client().get("/v1/stats").json or {}).get("resched_passes")
            got = (r.status, problems[:5], value(fams, "flexcod_moves_total"),
                   value(fams, "flexcod_move_duration_seconds", "flexcod_move_duration_seconds_count"),
                   value(fams, "flexcod_resched_passes_total"),
                   value(fams, "flexcod_resched_pass_duration_seconds",
                         "flexcod_resched_pass_duration_seconds_count"), passes)
            seen.append(got)
            st, bad, total, moved, n, timed, passes = got
            return (st == 200 and not bad and total == 6 and moved is not None and 1 <= moved <= 6
                    and n == timed == passes and passes >= 1 and got)
        seen = []
        got = t.wait_for(metrics, 30, "GET /metrics to agree with /v1/stats")
        t.ok(got, "GET /metrics: flexcod_moves_total 6; the moves since the restart (%s) and every "
             "rescheduling pass (%s, as /v1/stats) in their duration histograms"
             % ((got or [None] * 7)[3], (got or [None] * 7)[6]), "%r" % seen[-3:])
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "nothing left at the end",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
