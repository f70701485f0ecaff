#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexco-sim on logs that are not the archive's cleaned ones (doc/sim.md,
"Any trace"): one small hand-written SWF file per oddity
(testsuite/sim/swf_odd/) loads with the documented behaviour, shown by the
counters flexco-sim prints and the jobs it ran (--jobs); errors name the
file and the line; a gzip log and the same log plain give the same output
(a fixture and a real trace); contrib/sim-report on two traces prints two
tables.  No Slurm, no root."""

import csv
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import flexcotest as t  # noqa: E402

TIMING = {"wall_seconds", "events_per_second"}
MODEL = {60, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 10800, 14400,
         18000, 21600, 28800, 36000, 43200, 46800}


def fixture(name):
    return os.path.join(t.srcdir(), "testsuite", "sim", "swf_odd", name)


def traces():
    return os.environ.get("FLEXCO_TRACES") or os.path.join(
        t.srcdir(), "contrib", "sim", "traces")


def binary():
    return os.path.join(t.builddir(), "src", "flexco-sim")


def sim(tmp, *words):
    """One run on a single cluster, unscaled; returns (process, key=value
    output, per-job rows)."""
    jobs = os.path.join(tmp, "jobs.csv")
    if os.path.exists(jobs):
        os.unlink(jobs)
    p = subprocess.run([binary(), "TargetLoad=0", "Horizon=local", *words, "--jobs", jobs],
                       capture_output=True, text=True, cwd=tmp, timeout=300)
    kv = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition("=")
        kv[k] = v
    rows = []
    if p.returncode == 0 and os.path.exists(jobs):
        with open(jobs) as f:
            rows = list(csv.DictReader(f))
    return p, kv, rows


def shapes(rows):
    return sorted((int(r["nodes"]), int(r["run"]), int(r["estimate"])) for r in rows)


def strip(out):
    return [line for line in out.splitlines() if line.partition("=")[0] not in TIMING]


def main():
    tmp = tempfile.mkdtemp(prefix="test_sim_swf-")
    try:
        odd(tmp)
        compressed(tmp)
        report(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def odd(tmp):
    # Uncleaned: statuses, cancelled jobs, partial executions, -1 fields.
    f = fixture("uncleaned.swf")
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f)
    if t.ok(p.returncode == 0, "uncleaned: exit 0", p.stderr):
        t.is_((kv["local_jobs"], kv["no_data_dropped"], kv["partial_dropped"],
               kv["too_large_dropped"], kv["modelled_estimates"]),
              ("6", "1", "2", "1", "1"),
              "uncleaned: 6 jobs of 10 lines; cancelled before start (no run time) "
              "dropped; 2 partial executions dropped; 1 too large; 1 estimate modelled")
        got = shapes(rows)
        model = [x for x in got if x[:2] == (2, 50) and x[2] != 50]
        t.is_([x for x in got if x not in model],
              [(2, 50, 50), (2, 60, 120), (3, 30, 40), (4, 100, 200), (4, 500, 1000)],
              "uncleaned: failed and cancelled-after-start jobs run as traced, the summary "
              "line of a checkpointed job carries its whole run, unknown allocation "
              "falls back to the request, a run past its estimate is cut there")
        t.ok(len(model) == 1 and model[0][2] in MODEL,
             "uncleaned: the job without an estimate gets a model value >= its run", got)
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f, "TracePartial=keep")
    t.ok(p.returncode == 0 and kv.get("local_jobs") == "8" and kv.get("partial_dropped") == "0"
         and (4, 200, 1000) in shapes(rows) and (4, 300, 1000) in shapes(rows),
         "uncleaned, TracePartial=keep: the partial executions run too", (kv, p.stderr))
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f, "Estimates=exact")
    t.ok(p.returncode == 0 and kv.get("estimates") == "exact"
         and kv.get("modelled_estimates") == "0"
         and all(int(r["run"]) == int(r["estimate"]) for r in rows)
         and (2, 80, 80) in shapes(rows),
         "Estimates=exact: every estimate is the run time (none cut)", (kv, p.stderr))

    # No estimates at all.
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + fixture("no_estimates.swf"))
    t.ok(p.returncode == 0 and kv.get("modelled_estimates") == "3" and len(rows) == 3
         and all(int(r["estimate"]) >= int(r["run"]) and int(r["estimate"]) in MODEL
                 for r in rows),
         "no estimates: all three modelled, each >= its run", (kv, rows, p.stderr))

    # Processors or nodes, and the cluster's size from the header.
    f = fixture("nodes.swf")
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=auto", "Trace=" + f)
    t.ok(p.returncode == 0 and kv.get("cluster_c_nodes") == "16"
         and kv.get("trace_unit") == "procs"
         and [n for n, _, _ in shapes(rows)] == [1, 5, 16]
         and "Nodes=16 (header MaxProcs of " + f + ")" in p.stderr,
         "nodes.swf by default: processors; Nodes=auto is the header's MaxProcs, 16",
         (kv, rows, p.stderr))
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=auto", "Trace=" + f, "TraceUnit=nodes")
    t.ok(p.returncode == 0 and kv.get("cluster_c_nodes") == "4"
         and [n for n, _, _ in shapes(rows)] == [1, 2, 4],
         "TraceUnit=nodes: MaxNodes 4, sizes 16/5/1 processors at 16/4 a node "
         "are 4/2/1 nodes", (kv, rows, p.stderr))
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=auto", "Trace=" + f, "TraceUnit=nodes",
                      "TraceProcsPerNode=8")
    t.ok(p.returncode == 0 and [n for n, _, _ in shapes(rows)] == [1, 1, 2],
         "TraceProcsPerNode=8 overrides the header's ratio", (kv, rows, p.stderr))

    # No header.
    f = fixture("no_header.swf")
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=auto", "Trace=" + f)
    t.ok(p.returncode == 0 and kv.get("cluster_c_nodes") == "6"
         and "no MaxProcs in the header of " + f + ": its largest job" in p.stderr,
         "no header: Nodes=auto is the largest job, and says so", (kv, p.stderr))
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=auto", "Trace=" + f, "TraceUnit=nodes")
    t.is_((p.returncode, p.stderr.strip()),
          (2, "flexco-sim: error: " + f + ": TraceUnit=nodes needs MaxNodes and MaxProcs "
           "in the header, or TraceProcsPerNode="),
          "no header, TraceUnit=nodes: exit 2, the error names the file")

    # Allocated or requested processors.
    f = fixture("requested.swf")
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f)
    t.ok(p.returncode == 0 and kv.get("trace_size") == "allocated"
         and [n for n, _, _ in shapes(rows)] == [2, 3, 4],
         "allocated processors by default (the request where unknown)", (kv, rows, p.stderr))
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f, "TraceSize=requested")
    t.ok(p.returncode == 0 and [n for n, _, _ in shapes(rows)] == [2, 3, 8],
         "TraceSize=requested (the allocation where unknown)", (kv, rows, p.stderr))

    # Malformed lines: stop (default) or skip.
    f = fixture("malformed.swf")
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f)
    t.is_((p.returncode, p.stderr.strip()),
          (2, "flexco-sim: error: " + f + ": line 5: expected 18 fields, found 17"),
          "malformed: exit 2 at the first bad line, naming file and line")
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f, "TraceErrors=skip")
    t.ok(p.returncode == 0 and kv.get("malformed_skipped") == "3" and kv.get("local_jobs") == "2"
         and ("3 malformed lines skipped (TraceErrors=skip), the first: " + f
              + ": line 5: expected 18 fields, found 17") in p.stderr,
         "TraceErrors=skip: the 3 bad lines skipped and counted, the first named",
         (kv, p.stderr))
    p, kv, rows = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + f, "TraceErrors=maybe")
    t.is_((p.returncode, p.stderr.strip()),
          (2, "flexco-sim: error: command line: TraceErrors: expected stop or skip: 'maybe'"),
          "TraceErrors=maybe refused")


def compressed(tmp):
    # The fixture, plain and gzip.
    plain = fixture("uncleaned.swf")
    gz = os.path.join(tmp, "uncleaned.swf.gz")
    with open(plain, "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    a, _, _ = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + plain)
    b, _, _ = sim(tmp, "ClusterName=c", "Nodes=8", "Trace=" + gz)
    t.ok(a.returncode == 0 and strip(a.stdout) and strip(a.stdout) == strip(b.stdout),
         "uncleaned.swf: gzip and plain give the same output", b.stderr)
    # A real log, as shipped (gzip) and uncompressed.
    real = os.path.join(traces(), "KTH-SP2-1996-2.1-cln.swf.gz")
    flat = os.path.join(tmp, "KTH-SP2-1996-2.1-cln.swf")
    with gzip.open(real, "rb") as src, open(flat, "wb") as dst:
        shutil.copyfileobj(src, dst)
    out = []
    for path in (real, flat):
        p = subprocess.run([binary(), "ClusterName=a", "Nodes=auto", "Trace=" + path, "Part=1/4",
                            "ClusterName=b", "Nodes=auto", "Trace=" + path, "Part=2/4",
                            "MetaTrace=" + path, "TargetLoad=0.8", "MetaShare=0.25",
                            "Horizon=4d", "Reschedule=shift+remap"],
                           capture_output=True, text=True, cwd=tmp, timeout=300)
        t.ok(p.returncode == 0, "KTH %s: exit 0" % os.path.basename(path), p.stderr)
        out.append(strip(p.stdout))
    t.ok(out[0] and out[0] == out[1], "KTH-SP2: gzip and plain give the same output")


def report(tmp):
    a = os.path.join(traces(), "KTH-SP2-1996-2.1-cln.swf.gz")
    b = os.path.join(traces(), "DAS2-fs1-2003-1.swf.gz")
    p = subprocess.run([os.path.join(t.srcdir(), "contrib", "sim-report"),
                        "--build", t.builddir(), "--horizon", "4d", a, b],
                       capture_output=True, text=True, cwd=tmp, timeout=900)
    lines = p.stdout.splitlines()
    heads = [x for x in lines if x.startswith("## ")]
    tables = [x for x in lines if x.startswith("| policy |")]
    rows = [x.split("|")[1].strip() for x in lines if x.startswith("| ") and not
            x.startswith("| policy")]
    t.is_((p.returncode, heads, len(tables), rows),
          (0, ["## KTH-SP2-1996-2.1-cln.swf.gz", "## DAS2-fs1-2003-1.swf.gz"], 2,
           ["Rigid", "Shift", "Shift+Remap"] * 2),
          "sim-report on two traces: two tables, one per trace, three policies each")
    t.ok("Four clusters of 100 procs" in p.stdout and "Four clusters of 64 procs" in p.stdout,
         "each trace's clusters sized from its header (KTH 100, DAS2 64)", p.stdout[-2000:]
         + p.stderr[-2000:])


if __name__ == "__main__":
    t.run_main(main)
