#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Part jobs that end while flexcod is down (issue 15, 1.1).

A 6-node co-allocation split over two 4-node clusters runs; flexcod is
killed with SIGKILL and restarted only once Slurm says the part jobs
ended.  The restart must apply what the missed events would have:

- both parts completed: the co-allocation is `completed` and its
  reservations are given back;
- one part cancelled behind flexcod's back (scancel) while the other still
  runs: the other part is cancelled and the co-allocation `failed`."""

import os

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script, slurm_jobs, slurm_reservations

NODES = [4, 4]
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
            "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


def start_running(fc, tmp, body_script):
    """Submit the co-allocation and wait until both part jobs run."""
    s, doc = fc.submit({"nodes": 6, "duration": 120, "script": script(tmp, body_script),
                        "std_out": "/dev/null"})
    t.ok(s == 201 and doc.get("state") == "scheduled" and len(doc.get("parts", [])) == 2,
         "a 6-node co-allocation over two clusters is scheduled", "%s %r" % (s, doc))

    def running():
        d = fc.get(doc.get("id"))[1] or {}
        parts = d.get("parts", [])
        return (d.get("state") == "running" and len(parts) == 2
                and all(p.get("state") == "running" for p in parts)) and d
    d = t.wait_for(running, 90, "both part jobs to run") or {}
    t.ok(bool(d), "both part jobs run", "%r" % (fc.get(doc.get("id"))[1],))
    return d


def job_state(grid, cluster, jobid):
    return grid.job(cluster, jobid).get("JobState")


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-down-")
        os.chmod(tmp, 0o777)

        # -- every part completes while flexcod is down -------------------------
        d = start_running(fc, tmp, "sleep 20")
        parts = [(p["cluster"], p["job_id"]) for p in d.get("parts", [])]

        def parts_ended():
            return all(job_state(grid, c, j) in TERMINAL for c, j in parts)

        def wait_parts_ended():
            t.ok(t.wait_for(parts_ended, 120, "the part jobs to end in Slurm"),
                 "while flexcod is down, Slurm says both part jobs ended",
                 "%r" % [(c, j, job_state(grid, c, j)) for c, j in parts])
        fc.restart(kill9=True, while_down=wait_parts_ended)
        t.ok(all(job_state(grid, c, j) == "COMPLETED" for c, j in parts),
             "both part jobs COMPLETED in Slurm",
             "%r" % [(c, j, job_state(grid, c, j)) for c, j in parts])

        def final(coid):
            def f():
                x = fc.get(coid)[1] or {}
                return x.get("state") in ("completed", "failed", "cancelled") and x
            return f
        x = t.wait_for(final(d["id"]), 30, "co-%s to end after the restart" % d["id"]) or {}
        t.ok(x.get("state") == "completed"
             and all(p.get("state") == "completed" for p in x.get("parts", [])),
             "parts completed while flexcod was down: the co-allocation is completed",
             "%r" % (fc.get(d["id"])[1],))
        t.ok(t.wait_for(lambda: nothing_left(grid), 30, "nothing left"),
             "its reservations were given back", "%r %r" % (slurm_reservations(grid),
                                                          slurm_jobs(grid)))

        if not nothing_left(grid):  # the case above failed: free the nodes
            fc.client().request("DELETE", "/v1/coallocations/%s" % d["id"])
            t.wait_for(lambda: nothing_left(grid), 60, "co-%s's reservations to go" % d["id"])

        # -- one part cancelled while flexcod is down ---------------------------
        d = start_running(fc, tmp, "sleep 100")
        parts = [(p["cluster"], p["job_id"]) for p in d.get("parts", [])]
        if len(parts) != 2:
            t.bail_out("the second co-allocation did not run")
        victim, other = parts[0], parts[1]

        def cancel_one():
            r = grid.run(victim[0], ["scancel", str(victim[1])])
            t.ok(r.returncode == 0, "scancel %s on %s" % (victim[1], victim[0]), r.stderr)
            t.ok(t.wait_for(lambda: job_state(grid, *victim) in TERMINAL, 60,
                            "the cancelled part to end"),
                 "while flexcod is down, part job %s on %s is %s" %
                 (victim[1], victim[0], job_state(grid, *victim)))
        fc.restart(kill9=True, while_down=cancel_one)
        x = t.wait_for(final(d["id"]), 30, "co-%s to end after the restart" % d["id"]) or {}
        t.ok(x.get("state") == "failed",
             "a part cancelled while flexcod was down: the co-allocation failed",
             "%r" % (fc.get(d["id"])[1],))
        t.ok(t.wait_for(lambda: job_state(grid, *other) in TERMINAL, 30,
                        "the sibling part job to end"),
             "the sibling part job %s on %s was cancelled (not left running alone)"
             % (other[1], other[0]), "%r" % job_state(grid, *other))
        t.ok(t.wait_for(lambda: nothing_left(grid), 30, "nothing left"),
             "no reservation and no part job left", "%r %r" % (slurm_reservations(grid),
                                                             slurm_jobs(grid)))


if __name__ == "__main__":
    t.run_main(main)
