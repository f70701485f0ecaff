#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexco-sim's saturation indicator (issue 18 §3), on two Paragon quarters
with Blue Horizon metajobs over 20 days: an overloaded grid (offered load
1.2) is flagged saturated, a light one (0.4) is not, and the numbers behind
the verdict agree with the per-job file (the backlog at half the horizon is
the work of the jobs submitted before it and started at or after it; the
mean waits of the first and last windows).  No Slurm, no root."""

import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import flexcotest as t  # noqa: E402

CONF = """\
ClusterName=a Nodes=400 Trace=SDSC-Par-1996-3.1-cln.swf.gz Part=1/4
ClusterName=b Nodes=400 Trace=SDSC-Par-1996-3.1-cln.swf.gz Part=2/4
MetaTrace=SDSC-BLUE-2000-4.2-cln.swf.gz
MetaShare=0.25
Horizon=20d
"""
CAPACITY = 800
HORIZON = 20 * 86400
WINDOW = HORIZON // 4  # a week is more than a quarter of 20 days


def traces():
    return os.environ.get("FLEXCO_TRACES") or os.path.join(
        t.srcdir(), "contrib", "sim", "traces")


def run(conf, tmp, jobs, *words):
    cmd = [os.path.join(t.builddir(), "src", "flexco-sim"), "-c", conf,
           "TraceDir=" + traces(), "--jobs", jobs, *words]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    kv = dict(line.partition("=")[::2] for line in p.stdout.splitlines())
    rows = []
    if p.returncode == 0:
        with open(jobs) as f:
            rows = list(csv.DictReader(f))
    return p, kv, rows


def check_numbers(name, kv, rows):
    """The indicator's inputs, recomputed from the per-job file."""
    t.is_(kv.get("saturation_window"), str(WINDOW), name + ": window is a quarter of 20 days")
    half = HORIZON // 2
    backlog = [r for r in rows if int(r["submit"]) < half <= int(r["start"])]
    work = sum(int(r["nodes"]) * int(r["run"]) for r in backlog)
    t.is_(kv.get("queued_mid"), str(len(backlog)),
          name + ": queued_mid counts the jobs submitted before half the horizon, started after")
    t.is_(kv.get("backlog_mid_hours"), "%.2f" % (work / CAPACITY / 3600.0),
          name + ": backlog_mid_hours is their work in hours of the grid")
    for key, lo, hi in (("wait_first_window", 0, WINDOW),
                        ("wait_last_window", HORIZON - WINDOW, HORIZON)):
        w = [int(r["start"]) - int(r["submit"]) for r in rows if lo <= int(r["submit"]) < hi]
        t.ok(w and abs(sum(w) / len(w) - float(kv.get(key, "nan"))) < 0.01,
             name + ": %s is the mean wait of the jobs submitted in [%d, %d)" % (key, lo, hi),
             "%s vs %s" % (sum(w) / len(w) if w else None, kv.get(key)))
    growth = (float(kv["backlog_end_hours"]) - float(kv["backlog_mid_hours"])) * 3600 / half
    t.ok(abs(growth - float(kv["backlog_growth"])) < 0.001,
         name + ": backlog_growth is the backlog's growth over the second half per capacity",
         "%.4f vs %s" % (growth, kv["backlog_growth"]))


def main():
    if not os.path.exists(os.path.join(traces(), "SDSC-BLUE-2000-4.2-cln.swf.gz")):
        t.bail_out("traces not found in " + traces())
    with tempfile.TemporaryDirectory(prefix="flexco-sim-") as tmp:
        conf = os.path.join(tmp, "sim.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        # More work than the grid can do: whatever the policy, the backlog
        # grows by about 0.2 of the capacity or more.
        for policy in ("rigid", "shift+remap"):
            name = "load 1.2, " + policy
            p, kv, rows = run(conf, tmp, os.path.join(tmp, "over.csv"), "TargetLoad=1.2",
                              "Reschedule=" + policy)
            if not t.ok(p.returncode == 0, name + ": exit 0", p.stderr):
                continue
            t.ok(float(kv["backlog_growth"]) > 0.2 and kv["saturated"] == "yes",
                 name + ": flagged saturated", kv.get("backlog_growth"))
            t.ok(float(kv["wait_last_window"]) > 2 * float(kv["wait_first_window"]),
                 name + ": the last window's jobs wait more than twice as long as the first's",
                 "%s / %s" % (kv["wait_first_window"], kv["wait_last_window"]))
            t.ok(int(kv["queued_end"]) > int(kv["queued_mid"]) > 0,
                 name + ": more jobs wait at the end than at half the horizon",
                 "%s -> %s" % (kv["queued_mid"], kv["queued_end"]))
            check_numbers(name, kv, rows)
        # A light load: the queues empty again, nothing is flagged.
        p, kv, rows = run(conf, tmp, os.path.join(tmp, "light.csv"), "TargetLoad=0.4",
                          "Reschedule=rigid")
        if t.ok(p.returncode == 0, "load 0.4, rigid: exit 0", p.stderr):
            t.ok(abs(float(kv["backlog_growth"])) < 0.01 and kv["saturated"] == "no",
                 "load 0.4, rigid: not flagged", kv.get("backlog_growth"))
            check_numbers("load 0.4, rigid", kv, rows)


if __name__ == "__main__":
    t.run_main(main)
