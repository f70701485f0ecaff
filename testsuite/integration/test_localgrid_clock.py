#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""localgrid start --clock CLUSTER=OFFSET (issue 38 §1): that cluster's
slurmctld and slurmd run with the wall clock OFFSET off (libfaketime), the
others with the real one; status --json says so; bad or impossible
offsets are refused."""

import subprocess
import time

import flexcotest as t
from flexcohttp import plugin_client

OFFSET = 20


def clock_of(grid, st, name):
    """The cluster's clock minus ours, in seconds, as its plugin reports
    its time (GET /v1/stats "now"), halfway through the request."""
    c = {c["name"]: c for c in st["clusters"]}[name]
    pc = plugin_client(c, st["munge_socket"])
    t0 = time.time()
    r = pc.get("/v1/stats")
    t1 = time.time()
    now = (r.json or {}).get("now")
    return None if now is None else now - (t0 + t1) / 2


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[1, 1], args=["--clock", "beta=+%ds" % OFFSET, "--no-flexcod"]) as grid:
        st = grid.status()
        offs = {c["name"]: c.get("clock_offset") for c in st["clusters"]}
        t.ok(offs == {"alpha": 0, "beta": OFFSET}, "status --json: beta's clock +%d s" % OFFSET,
             "%r" % offs)
        a, b = clock_of(grid, st, "alpha"), clock_of(grid, st, "beta")
        t.ok(a is not None and abs(a) <= 1.5, "alpha's slurmctld has the real clock",
             "off by %r s" % a)
        t.ok(b is not None and abs(b - OFFSET) <= 1.5,
             "beta's slurmctld runs %d s ahead" % OFFSET, "off by %r s" % b)
        job = grid.submit("beta", ["-N1", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 30"])
        grid.wait_job("beta", job, states=("RUNNING",))
        r = grid.run("beta", ["squeue", "-h", "-j", str(job), "-o", "%S"])
        started = time.mktime(time.strptime(r.stdout.strip(), "%Y-%m-%dT%H:%M:%S"))
        t.ok(started - time.time() > OFFSET - 10,
             "a job on beta starts by beta's clock (slurmd and slurmctld agree)",
             "start %r, now %r" % (r.stdout.strip(), time.time()))
        grid.run("beta", ["scancel", str(job)])
    for bad, why in ((["--clock", "gamma=+5s"], "not a cluster"),
                     (["--clock", "beta=5x"], "not CLUSTER=[+-]N"),
                     (["--clock", "beta=+2d"], "not CLUSTER=[+-]N"),
                     (["--clock", "beta=+5", "--clock", "beta=-5"], "given twice")):
        r = subprocess.run([t.localgrid_path(), "start", "--run-dir", grid.run_dir + "-bad",
                            "--clusters", "2", "--nodes", "1", "--no-flexcod", *bad],
                           capture_output=True, text=True, timeout=120)
        t.ok(r.returncode != 0 and why in r.stderr, "start refuses %s" % " ".join(bad),
             r.stderr[-300:])


if __name__ == "__main__":
    t.run_main(main)
