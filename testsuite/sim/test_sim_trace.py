#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexco-sim on a slice of the real traces (a few days of the SDSC Paragon
log on two clusters, metajobs from SDSC Blue Horizon): the program's outputs
agree with each other and with the per-job file (job counts, sums, no
cluster ever holding more processors than it has, starts after submits,
utilization in (0, 1]), the same seed gives the same output and another seed
another, and the policies see the same jobs.  No Slurm, no root."""

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
TargetLoad=0.8
MetaShare=0.25
Horizon=4d
"""
# Keys whose values depend on the machine, not on the simulation.
TIMING = {"wall_seconds", "events_per_second"}


def traces():
    return os.environ.get("FLEXCO_TRACES") or os.path.join(
        t.srcdir(), "contrib", "sim", "traces")


def binary():
    return os.path.join(t.builddir(), "src", "flexco-sim")


def run(conf, tmp, *words, jobs=None):
    cmd = [binary(), "-c", conf, "TraceDir=" + traces(), *words]
    if jobs:
        cmd += ["--jobs", jobs]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    kv = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition("=")
        kv[k] = v
    return p, kv


def max_load(rows, clusters):
    """Largest number of processors any cluster holds at once."""
    events = {c: [] for c in clusters}
    for r in rows:
        for part in r["parts"].split(";"):
            name, n = part.split(":")
            events[name].append((int(r["start"]), int(n)))
            events[name].append((int(r["end"]), -int(n)))
    worst = {}
    for c, ev in events.items():
        ev.sort(key=lambda e: (e[0], e[1]))  # ends before starts at a tie
        cur = peak = 0
        for _, d in ev:
            cur += d
            peak = max(peak, cur)
        worst[c] = peak
    return worst


def main():
    if not os.path.exists(os.path.join(traces(), "SDSC-BLUE-2000-4.2-cln.swf.gz")):
        t.bail_out("traces not found in " + traces())
    with tempfile.TemporaryDirectory(prefix="flexco-sim-") as tmp:
        conf = os.path.join(tmp, "sim.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        for policy in ("rigid", "shift+remap"):
            jobs = os.path.join(tmp, policy + ".csv")
            p, kv = run(conf, tmp, "Reschedule=" + policy, jobs=jobs)
            if not t.ok(p.returncode == 0, policy + ": flexco-sim exits 0", p.stderr):
                continue
            t.ok("events/s" in p.stderr, policy + ": events per second on stderr", p.stderr)
            with open(jobs) as f:
                rows = list(csv.DictReader(f))
            n_all, n_local, n_meta = (int(kv[k]) for k in ("all_jobs", "local_jobs", "meta_jobs"))
            t.ok(n_local > 100 and n_meta > 10, policy + ": local and meta jobs ran",
                 f"local {n_local}, meta {n_meta}")
            t.is_(n_all, n_local + n_meta, policy + ": all = local + meta")
            t.is_(len(rows), n_all, policy + ": one per-job row per finished job")
            t.is_(sum(r["kind"] == "meta" for r in rows), n_meta, policy + ": meta rows")
            t.is_(int(kv["meta_single"]) + int(kv["meta_split"]), n_meta,
                  policy + ": metajobs are single or split")
            bad = [r["id"] for r in rows
                   if not int(r["submit"]) <= int(r["start"]) < int(r["end"])]
            t.ok(not bad, policy + ": submit <= start < end for every job", bad[:5])
            over = [r["id"] for r in rows if int(r["end"]) - int(r["start"]) > int(r["estimate"]) * 2]
            t.ok(not over, policy + ": no job runs past twice its estimate (overhead <= 25 %)", over[:5])
            peak = max_load(rows, ["a", "b"])
            t.ok(all(v <= 400 for v in peak.values()),
                 policy + ": no cluster ever holds more than its 400 processors", peak)
            mean = sum(int(r["end"]) - int(r["submit"]) for r in rows) / len(rows)
            t.ok(abs(mean - float(kv["all_response"])) < 0.01,
                 policy + ": all_response is the mean over the per-job file",
                 f"{mean} vs {kv['all_response']}")
            u = float(kv["utilization"])
            t.ok(0 < u <= 1, policy + ": utilization in (0, 1]", u)
            if policy == "rigid":
                rigid = kv
            else:
                t.is_((kv["all_jobs"], kv["local_jobs"], kv["meta_jobs"]),
                      (rigid["all_jobs"], rigid["local_jobs"], rigid["meta_jobs"]),
                      "rigid and shift+remap see the same jobs")
                t.ok(int(kv["shifts"]) + int(kv["remaps"]) > 0,
                     "shift+remap moves some metajob", kv["shifts"])
                t.is_(rigid["shifts"] + rigid["remaps"], "00", "rigid moves none")

        _, a = run(conf, tmp, "Seed=7", "Reschedule=shift")
        _, b = run(conf, tmp, "Seed=7", "Reschedule=shift")
        _, c = run(conf, tmp, "Seed=8", "Reschedule=shift")
        strip = lambda kv: {k: v for k, v in kv.items() if k not in TIMING}  # noqa: E731
        t.ok(strip(a) and strip(a) == strip(b), "the same seed gives the same output")
        t.ok(strip(a) != strip(c), "another seed gives another output (model estimates, overheads)")

        # Two traces on one cluster: their jobs add up.
        counts = []
        for names in (["KTH-SP2-1996-2.1-cln.swf.gz"], ["DAS2-fs1-2003-1.swf.gz"],
                       ["KTH-SP2-1996-2.1-cln.swf.gz", "DAS2-fs1-2003-1.swf.gz"]):
            conf2 = os.path.join(tmp, "two.conf")
            with open(conf2, "w") as f:
                f.write("ClusterName=m Nodes=128 %s\nTargetLoad=0\nHorizon=3d\n"
                        % " ".join("Trace=%s Part=1/8" % x for x in names))
            p, kv = run(conf2, tmp)
            t.ok(p.returncode == 0, "traces %s: exit 0" % "+".join(names), p.stderr)
            counts.append(int(kv.get("local_jobs", "0")))
        t.ok(counts[0] > 0 and counts[1] > 0 and counts[2] == counts[0] + counts[1],
             "two traces on one cluster run both traces' jobs", counts)

        # Offered load as simulated (issue 18 §6): three sites each replaying
        # their own log over a 30-day window.  The jobs that really ran (the
        # per-job file, counted here) carry TargetLoad of the grid's
        # capacity over the horizon, a MetaShare of it from metajobs, and the
        # program prints both beside the targets.
        conf3 = os.path.join(tmp, "three.conf")
        with open(conf3, "w") as f:
            f.write("ClusterName=kth Nodes=100 Trace=KTH-SP2-1996-2.1-cln.swf.gz\n"
                    "ClusterName=das Nodes=64 Trace=DAS2-fs1-2003-1.swf.gz\n"
                    "ClusterName=par Nodes=400 Trace=SDSC-Par-1996-3.1-cln.swf.gz\n"
                    "MetaTrace=SDSC-BLUE-2000-4.2-cln.swf.gz\nTargetLoad=0.8\nMetaShare=0.25\n"
                    "Horizon=30d\nReschedule=rigid\n")
        jobs3 = os.path.join(tmp, "three.csv")
        p, kv = run(conf3, tmp, jobs=jobs3)
        with open(jobs3) as f:
            rows = list(csv.DictReader(f))
        horizon = int(kv.get("horizon", "0") or 0)
        work = {"local": 0.0, "meta": 0.0}
        late = 0
        for r in rows:
            work[r["kind"]] += int(r["nodes"]) * int(r["run"])
            late += int(r["submit"]) >= horizon
        total = work["local"] + work["meta"]
        load = total / (564.0 * horizon) if horizon else 0
        share = work["meta"] / total if total else 0
        t.ok(p.returncode == 0 and horizon == 30 * 86400 and late == 0,
             "three sites, 30 days: exit 0, every job submitted within the horizon", p.stderr)
        t.ok(abs(load - 0.8) <= 0.8 * 0.03 and abs(share - 0.25) <= 0.03,
             "the jobs that ran carry load %.4f (target 0.8) with meta share %.4f (target 0.25)"
             % (load, share))
        t.ok(kv.get("target_load") == "0.8000" and kv.get("target_meta_share") == "0.2500"
             and abs(float(kv.get("offered_load", "0")) - load) < 0.0005
             and abs(float(kv.get("simulated_load", "0")) - load) < 0.0005
             and abs(float(kv.get("meta_share", "0")) - share) < 0.0005,
             "offered_load and meta_share are printed beside their targets, and agree with the "
             "jobs", "%r" % {k: kv.get(k) for k in ("offered_load", "target_load", "meta_share",
                                                    "target_meta_share", "simulated_load")})
        p, _ = run(conf3, tmp, "MetaMaxJobs=20")
        t.ok(p.returncode != 0 and "offer load" in p.stderr and "not TargetLoad=0.8000" in p.stderr,
             "when the targets cannot be met (MetaMaxJobs=20), it fails loudly", p.stderr)

        p, _ = run(conf, tmp, "Reschedule=sometimes")
        t.ok(p.returncode == 2 and "Reschedule: expected rigid, shift or shift+remap" in p.stderr,
             "a bad value is one line on stderr and exit code 2", p.stderr)


if __name__ == "__main__":
    t.run_main(main)
