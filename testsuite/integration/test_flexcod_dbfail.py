#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexcod stops when its database cannot be written, and recovers from it
when started again (issue 38 §2.6; doc/flexcod.md, "When the database
fails").

A 6-node co-allocation over two 4-node clusters runs its part jobs
(`sleep 15`).  While they run, the test takes the database's write lock
with a connection of its own (BEGIN EXCLUSIVE, as a backup tool or an
admin's sqlite3 shell would) and holds it past the end of the part jobs,
so that flexcod's write of their ends fails with SQLITE_BUSY after its 5 s
busy timeout.  Before, flexcod logged the error, moved its event cursor
past the ends and went on: the co-allocation stayed "running" for as long
as flexcod ran.  Now flexcod must stop with a "fatal: StateFile" line, and
nothing may be written in its name while it is down; once the lock is let
go and flexcod is started again (as systemd's Restart=on-failure would),
its reconciliation finds the part jobs ended and completes the
co-allocation, each part job having run once.

On a grid of sites (localgrid --sites): each cluster and flexcod in a
network namespace of its own."""

import os
import sqlite3

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script

NODES = [4, 4]


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES, args=["--sites"]) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-dbfail-")
        os.chmod(tmp, 0o777)
        coid, d = fc.run_split({"nodes": 6, "duration": 120, "std_out": "/dev/null",
                                "script": script(tmp, "echo $SLURM_JOB_ID >> %s/runs.$FLEXCO_PART_INDEX; "
                                                      "sleep 15" % tmp)})
        jobs = sorted((p["cluster"], p["job_id"]) for p in d.get("parts", []))

        launch = fc.launch_info()
        pid = fc.pid
        log_before = os.path.getsize(fc.info["log_file"])
        db = sqlite3.connect(fc.info["state_file"], isolation_level=None, timeout=30)
        db.execute("BEGIN EXCLUSIVE")
        try:
            def ended_in_slurm():
                left = [j for c, j in jobs
                        if grid.run(c, ["squeue", "-h", "-j", str(j)]).stdout.strip()]
                return not left
            t.ok(t.wait_for(ended_in_slurm, 90, "the part jobs to end"),
                 "the part jobs end while the test holds the database's write lock")
            stopped = t.wait_for(lambda: not t.pid_alive(pid), 60, "flexcod to stop")
            with open(fc.info["log_file"], errors="replace") as f:
                f.seek(log_before)
                log = f.read()
            fatal = [l for l in log.splitlines() if "fatal: StateFile" in l]
            t.ok(stopped and fatal and "locked" in fatal[0],
                 "flexcod stops when a write fails (SQLITE_BUSY past its busy timeout) and "
                 "says why", "alive %r; %r" % (not stopped, (fatal or log.splitlines()[-5:])))
            states = sorted(r[0] for r in db.execute(
                "SELECT state FROM parts WHERE co_id=? AND current=1", (coid,)))
            co_state = db.execute("SELECT state FROM coallocations WHERE id=?",
                                  (coid,)).fetchone()[0]
            t.ok(states == ["running", "running"] and co_state == "running",
                 "nothing was written while the lock was held: the co-allocation and both "
                 "parts are still running in the database", "%s %r" % (co_state, states))
        finally:
            db.execute("ROLLBACK")
            db.close()

        fc.launch(launch)
        done = t.wait_for(lambda: (fc.get(coid)[1] or {}).get("state") == "completed", 90,
                          "the co-allocation to complete after the restart")
        s, full = fc.get(coid)
        t.ok(done and all(p.get("state") == "completed" for p in full.get("parts", [])),
             "started again, flexcod finds the part jobs ended and completes the co-allocation",
             "%s %r" % (s, full))
        runs = {i: t.read_file(os.path.join(tmp, "runs.%d" % i)).split() for i in (0, 1)}
        t.ok(all(len(v) == 1 for v in runs.values()), "each part job ran once", "%r" % runs)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "the reservations to go"),
             "no reservation or job is left on either cluster")
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
