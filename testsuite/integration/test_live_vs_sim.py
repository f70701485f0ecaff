#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The live system against the simulator (doc/sim-report.md, "The live
system against the simulator"): contrib/live-vs-sim on a small scenario of
the KTH SP2 trace, replayed on two real 3-cluster grids at once (flexcod
with RescheduleMode=off and =remap, local jobs by sbatch, metajobs by
sreserve) and in flexco-sim (Reschedule=rigid and shift+remap).  Every job
completes on both sides and the job counts match, and the simulator puts
Shift+Remap ahead.  The live ordering of this 24-job scenario is printed,
not asserted: with six metajobs, whether a local job submitted in the same
second as a metajob gets its nodes first decides whether any metajob waits
at all, and CI runs have seen Shift+Remap ahead, a tie (every metajob
started at once under both strategies) and rigid ahead (24.11).  The
ordering the report relies on comes from the full-size run in
doc/sim-report.md; a live check of it in CI needs a larger scenario than
CI's time allows (issue 18 §5 stays open on this point)."""

import json
import os
import subprocess

import flexcotest as t

# 24 jobs of KTH SP2 from its 7,004th, every 4th a metajob, 300 times
# faster: submissions over 20 s; flexco-sim: rigid 17.6 s, Shift+Remap 5.1 s.
SCENARIO = ["--first", "7004", "--jobs", "24", "--compress", "300", "--meta-every", "4"]
NODES = [4, 6, 8]


def main():
    t.require_grid_tools()
    t.plan(8)
    run_dir = os.path.join(t.builddir(), "testsuite", "integration", "run-" + t.test_name())
    os.makedirs(run_dir, exist_ok=True)
    base = t.pick_base_port(t.test_name(), 2 * len(NODES))
    cmd = [os.path.join(t.srcdir(), "contrib", "live-vs-sim"), *SCENARIO,
           "--nodes", ",".join(map(str, NODES)), "--builddir", t.builddir(),
           "--run-dir", run_dir, "--base-port", str(base), "--timeout", "240", "--json"]
    t.note(" ".join(cmd))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=420,
                           stdin=subprocess.DEVNULL)
    finally:
        # live-vs-sim stops its grids itself; be sure after a timeout too
        for sub in ("rigid", "shift-remap"):
            if os.path.exists(os.path.join(run_dir, sub, "state.json")):
                subprocess.run([t.localgrid_path(), "stop", "--run-dir",
                                os.path.join(run_dir, sub)], capture_output=True, timeout=180)
    try:
        res = json.loads(r.stdout)
    except ValueError:
        t.note(r.stderr)
        res = {}
    # exit 1 also when the orderings differ: only the job counts count here
    t.ok(r.returncode == 0 or (r.returncode == 1 and res.get("jobs_match") is True),
         "live-vs-sim ran to the end with matching job counts (exit %s, orderings %r)"
         % (r.returncode, res.get("ordering")), r.stderr[-2000:])
    if r.returncode != 0:
        t.note(r.stderr.strip())
    t.note(json.dumps(res))
    sc = res.get("scenario", {})
    want = {"local": sc.get("local"), "meta": sc.get("meta")}
    t.is_(want, {"local": 18, "meta": 6}, "the scenario: 18 local jobs and 6 metajobs")
    for side in ("sim", "live"):
        for s in ("rigid", "shift+remap"):
            t.is_(res.get(side, {}).get(s, {}).get("jobs"), want,
                  f"{side}, {s}: every job completed (counts match the scenario)")
    t.is_(res.get("ordering", {}).get("sim"), "shift+remap",
          "flexco-sim: Shift+Remap has the lower mean response time than rigid")
    t.note("live ordering of the smoke scenario (not asserted): %r"
           % res.get("ordering", {}).get("live"))
    t.ok(all(not v.get("not_completed") for v in res.get("live", {}).values())
         and set(res.get("live", {})) == {"rigid", "shift+remap"},
         "live: no job failed, timed out or was cancelled")
    if not t._failed:
        import shutil
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
