#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One co-allocation across every Slurm release CI tests: alpha runs the
host's slurmctld (22.05 on Debian 12), the next clusters each another
release (FLEXCO_MIXED_SLURM, default 24.11: Debian 13's, in
contrib/slurm-chroot's chroot; 25.11 and 26.05 built by contrib/slurm-build
from their tarballs), each with the plugin built for its own release, one
munged and one flexcod for all.  Local jobs fill every cluster; a
co-allocation too large for all clusters but one is booked behind them on
each (a confirmed flexco_* reservation and a pending part job in each
Slurm); the local jobs end early, each plugin reports it, flexcod shifts
the co-allocation earlier; then each Slurm's own record (scontrol show job,
scontrol show reservation, squeue) shows the parts ran in their
reservations, started in the same second and completed.

Not part of `make check` (it needs every build): contrib/run-tests runs it
after the other releases' tiers, with FLEXCO_MIXED_SLURM (a comma list of
releases) and FLEXCO_MIXED_BUILDDIR (a comma list of REL=DIR; default
<builddir>-REL for each)."""

import os
import time

import flexcotest as t
from flexcodtest import Flexcod, script, slurm_jobs, slurm_reservations

OTHERS = [r for r in os.environ.get("FLEXCO_MIXED_SLURM", "24.11").split(",")
          if r]
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon"][:1 + len(OTHERS)]
PER_CLUSTER = 4
NODES = [PER_CLUSTER] * len(NAMES)
# More nodes than all clusters but one hold: every cluster has a part.
CO_NODES = PER_CLUSTER * (len(NAMES) - 1) + 2


def epoch(grid, cluster, kind, name, field):
    """A time field of `scontrol show KIND NAME` as epoch seconds."""
    r = grid.run(cluster, ["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show",
                           kind, "-o", str(name)])
    for w in r.stdout.split():
        k, sep, v = w.partition("=")
        if sep and k == field and v.isdigit():
            return int(v)
    return None


def main():
    t.require_grid_tools()
    given = dict(kv.split("=", 1) for kv in
                 os.environ.get("FLEXCO_MIXED_BUILDDIR", "").split(",")
                 if "=" in kv)
    args = ["--slurm", ",".join(["host"] + OTHERS)]
    for rel in OTHERS:
        build = given.get(rel) or t.builddir().rstrip("/") + "-" + rel
        if not os.path.isfile(os.path.join(build, "plugin", ".libs",
                                           "prep_flexco.so")):
            t.bail_out("no plugin built for Slurm %s in %s (contrib/build "
                       "--slurm %s)" % (rel, build, rel))
        args += ["--slurm-builddir", "%s=%s" % (rel, build)]
    with t.Grid(nodes=NODES, args=args) as grid:
        run(grid)


def run(grid):
    st = grid.status()
    by_name = {c["name"]: c for c in st["clusters"]}
    host = t.slurm_version()
    versions = {}
    for c in NAMES:
        r = grid.run(c, ["scontrol", "version"])
        versions[c] = r.stdout.split()[-1] if r.stdout.split() else ""
    want = [host] + OTHERS
    t.ok(all((versions[c] == want[i]) if i == 0 else
             versions[c].startswith(want[i] + ".")
             for i, c in enumerate(NAMES))
         and all(by_name[c].get("slurm_version") == versions[c]
                 for c in NAMES),
         "each cluster runs its own Slurm release (%s): scontrol version on "
         "each says so" % ", ".join("%s %s" % (c, versions[c]) for c in NAMES),
         "%r" % versions)
    for c in NAMES:
        log = grid.log_tail(c, n=400)
        t.ok("slurmctld/flexco: init: Slurm %s," % versions[c] in log
             and "slurmctld/flexco: agent: %d nodes" % PER_CLUSTER in log,
             "%s: the plugin built for Slurm %s runs in its slurmctld"
             % (c, versions[c]), log[-1200:])

    fc = Flexcod(grid)
    t.ok(t.wait_for(fc.listening, 60, "flexcod to reconcile"),
         "flexcod reaches every plugin")
    t.ok(fc.reconfigure(RescheduleMode="shift", RescheduleMargin=30, RescheduleWait=20,
                        MaxMoves=3), "RescheduleMode=shift (SIGHUP)")

    # Local jobs fill both clusters for 10 minutes of limit; they end after
    # 30 s, as users' jobs do.
    local = {}
    for c in NAMES:
        local[c] = grid.submit(c, ["-N%d" % PER_CLUSTER, "-t", "10", "-o",
                                   "/dev/null",
                                   "--wrap", "sleep 30"])
    t.ok(t.wait_for(lambda: all(grid.job(c, j).get("JobState") == "RUNNING"
                                for c, j in local.items()), 60,
                    "the local jobs to run"),
         "every node of every cluster runs a local job (10-minute limits)")

    tmp = t.scratch_dir("flexco-mixed-")
    os.chmod(tmp, 0o777)
    body = {"nodes": CO_NODES, "duration": 60, "std_out": "/dev/null",
            "script": script(tmp, "sleep 15")}
    status, doc = fc.submit(body)
    doc = doc or {}
    parts = sorted((p["cluster"], p["nodes"]) for p in doc.get("parts", []))
    from_start = doc.get("planned_start") or 0
    t.ok(status == 201 and doc.get("state") == "scheduled"
         and [c for c, _ in parts] == sorted(NAMES)
         and sum(n for _, n in parts) == CO_NODES
         and from_start > time.time() + 400,
         "%d nodes wait behind the local jobs, split over the clusters of "
         "Slurm %s" % (CO_NODES, ", ".join(want)), "%s %r" % (status, doc))
    coid = doc.get("id")

    def get():
        return fc.get(coid)[1] or {}

    # Each Slurm holds the booking: a flexco_* reservation at the planned
    # start and a pending part job in it.
    resv = slurm_reservations(grid)
    jobs = slurm_jobs(grid)
    good = True
    for p in doc.get("parts", []):
        c = p["cluster"]
        start = epoch(grid, c, "reservation", p["reservation"], "StartTime")
        mine = [j for j in jobs.get(c, []) if len(j) > 2 and j[2] == p["reservation"]]
        good &= (resv.get(c) == [p["reservation"]] and start == from_start
                 and [j[0] for j in mine] == [str(p["job_id"])]
                 and mine[0][1] == "PENDING")
    t.ok(good, "scontrol show reservation and squeue on each cluster: one "
         "flexco_* reservation starting at the planned start, one pending "
         "part job in it", "%r\n%r\n%r" % (resv, jobs, doc.get("parts")))

    # The local jobs end early: both plugins report it, flexcod shifts.
    x = t.wait_for(lambda: get().get("moves", 0) >= 1 and get(), 150,
                   "co-%s to move" % coid) or {}
    m = (x.get("move_history") or [{}])[0]
    t.ok(x.get("moves") == 1 and m.get("kind") == "shift"
         and m.get("from_start") == from_start
         and m.get("to_start", from_start) < from_start - 300
         and sorted((p["cluster"], p["nodes"]) for p in x.get("parts", [])) == parts,
         "the local jobs end after 30 s of their 10 minutes: co-%s is shifted "
         "earlier on every cluster" % coid, "%r" % x)

    # While they run: squeue on each cluster shows the part job RUNNING in
    # its flexco_* reservation, and scontrol show reservation has it active.
    run_doc = t.wait_for(lambda: get().get("state") in ("running", "completed",
                                                         "failed") and get(),
                         120, "co-%s to run" % coid) or {}
    seen, ok_run = {}, run_doc.get("state") == "running"
    for p in run_doc.get("parts", []):
        c, j = p["cluster"], str(p["job_id"])
        r = grid.run(c, ["squeue", "-h", "-j", j, "-o", "%i %T %v %N"])
        res = grid.show(c, "reservation", p["reservation"])
        seen[c] = (r.stdout.strip(), res.get("State"), res.get("Nodes"))
        ok_run &= (r.stdout.split()[:3] == [j, "RUNNING", p["reservation"]]
                   and res.get("State") == "ACTIVE"
                   and res.get("Nodes") == r.stdout.split()[3])
    t.ok(ok_run, "while co-%s runs, squeue on each cluster shows its part job "
         "RUNNING in its flexco_* reservation, which scontrol shows ACTIVE on "
         "the same nodes" % coid, "%r\n%r" % (seen, run_doc))

    done = t.wait_for(lambda: get().get("state") in ("completed", "failed")
                      and get(), 180, "co-%s to complete" % coid) or {}
    t.ok(done.get("state") == "completed",
         "co-%s completes" % coid, "%r" % done)

    # Each Slurm's own record of its part job.
    starts, ok_parts, seen = {}, True, {}
    for p in done.get("parts", []):
        c, j = p["cluster"], str(p["job_id"])
        info = grid.job(c, j)
        seen[c] = {k: info.get(k) for k in ("JobId", "JobState", "StartTime",
                                            "NodeList")}
        starts[c] = epoch(grid, c, "job", j, "StartTime")
        ok_parts &= (info.get("JobState") == "COMPLETED"
                     and info.get("NodeList") == p["node_list"])
    t.ok(ok_parts and len(starts) == len(NAMES),
         "scontrol show job on each cluster: the part job COMPLETED on the "
         "reserved nodes", "%r\n%r" % (seen, done.get("parts")))
    vals = [v for v in starts.values() if v]
    t.ok(len(vals) == len(NAMES) and max(vals) - min(vals) <= 1
         and abs(min(vals) - (done.get("planned_start") or 0)) <= 2,
         "every part started within one second of the others (per Slurm %s),"
         " at the shifted start" % ", ".join(versions[c] for c in NAMES),
         "%r, planned %r" % (starts, done.get("planned_start")))


if __name__ == "__main__":
    t.run_main(main)
