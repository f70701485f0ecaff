#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The 5-minute soak (issue 38 §3): contrib/soak on 3 sites (40 ms round
trips, 1 % loss, clocks -20 s / 0 / +20 s, per-site users, flexcod's
MaxClockOffset=30) with co-allocations from 3 users, random partitions,
flexcod kills and owner cancels, and its goals checked from the clusters'
own job records: nothing lost, no part started twice, no part of a
co-allocation cancelled or failed before its start started, no part ran
alone beyond PartStartSkew.  About 5 minutes (at most 6: 230 s of load
and faults, no new request in the last 50 s nor while a start is booked
more than 120 s ahead, the end waited for at most 120 s).  Host Slurm only (localgrid --sites).
FLEXCO_SOAK_ARGS adds soak arguments (e.g. "--seed 7")."""

import json
import os
import shlex
import subprocess
import sys

import flexcotest as t


def main():
    t.require_grid_tools()
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1") and \
            not any(os.path.exists(os.path.join(d, "libfaketime.so.1"))
                    for d in ("/usr/lib/faketime", "/usr/lib64/faketime")):
        t.skip_all("libfaketime not installed (the soak runs clocks -20 s and +20 s)")
    tmp = t.scratch_dir("soak-")
    out_json = os.path.join(tmp, "soak.json")
    run_dir = os.path.join(t.builddir(), "testsuite", "integration", "run-test_soak")
    if os.path.exists(os.path.join(run_dir, "state.json")):
        subprocess.run([t.localgrid_path(), "stop", "--run-dir", run_dir],
                       capture_output=True, timeout=180)
    os.makedirs(run_dir, exist_ok=True)
    argv = [sys.executable, os.path.join(t.srcdir(), "contrib", "soak"),
            "--builddir", t.builddir(), "--run-dir", run_dir, "--json", out_json,
            "--duration", "230", "--tail", "50", "--backlog", "120", "--drain", "300",
            "--interval", "12", "--partition-every", "45", "--kill-every", "70",
            "--cancel", "0.25",
            "--users", "3", "--seed", "38",
            "--base-port", str(t.pick_base_port("test_soak", 3))]
    argv += shlex.split(os.environ.get("FLEXCO_SOAK_ARGS", ""))
    t.note(" ".join(argv))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=420,
                       stdin=subprocess.DEVNULL)
    for line in r.stdout.splitlines():
        t.note(line)
    t.ok(r.returncode in (0, 1) and os.path.exists(out_json),
         "contrib/soak ran to its figures (exit %d)" % r.returncode, r.stderr[-3000:])
    if not os.path.exists(out_json):
        return
    with open(out_json) as f:
        fig = json.load(f)["figures"]
    ev = fig["events"]
    t.ok(fig["accepted"] >= 4, "co-allocations were accepted (%d of %d requests)"
         % (fig["accepted"], fig["requests"]), "%r" % fig["refused"])
    t.ok(ev["partitions"] >= 1 and ev["kills"] >= 1,
         "faults happened: %d partitions, %d flexcod kills, %d owner cancels"
         % (ev["partitions"], ev["kills"], ev["cancels"]), "%r" % ev)
    t.ok(fig["completed"] >= 1, "co-allocations completed (%d)" % fig["completed"])
    t.ok(fig["drained"], "every co-allocation ended within the drain time")
    t.is_(len(fig["lost"]) + fig["unknown_posts"], 0,
          "lost: 0 (accepted, not final, or unknown)")
    if fig["lost"]:
        t.note("lost: %s" % json.dumps(fig["lost"])[:2000])
    t.is_(len(fig["twice"]), 0, "parts started twice: 0")
    if fig["twice"]:
        t.note("twice: %s" % json.dumps(fig["twice"])[:2000])
    t.is_(len(fig["started_after_cancel"]), 0,
          "parts of co-allocations cancelled or failed before their start that started: 0")
    t.ok(fig["alone_max"] <= fig["part_start_skew"],
         "no part ran alone beyond PartStartSkew (max %.0f s, skew %d s)"
         % (fig["alone_max"], fig["part_start_skew"]), "co-%s" % fig["alone_max_id"])
    t.is_(fig["stray_jobs"], [], "every part job at the clusters belongs to a co-allocation")
    t.note("start spread p50/p99/max: %s/%s/%s s (clocks 40 s apart, translated by "
           "flexcod)" % (fig["spread"]["p50"], fig["spread"]["p99"], fig["spread"]["max"]))
    if r.returncode == 0 and not t._failed:
        import shutil
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(run_dir + ".users", ignore_errors=True)
        if os.path.exists(run_dir + ".raw.json"):
            os.unlink(run_dir + ".raw.json")


if __name__ == "__main__":
    t.run_main(main)
