#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The plugin's compute threads (flexco.conf ComputeThreads, ComputeNice;
plugin/compute.c) on a real cluster.  Probes and profiles are computed on
ComputeThreads threads of slurmctld that run ComputeNice nicer than slurmctld, so that
on a busy controller slurmctld's own threads (RPC handlers, backfill) get
the CPU first.  Checked here: the threads exist in slurmctld with that
nice value and slurmctld's other threads keep theirs; probes and profiles
are computed there (/v1/stats compute.runs), also when many come at once;
a probe whose answer the shared snapshot's plan cache already holds is
answered in the request thread without waking a compute thread
(compute.cached_runs), with the same offers; with ComputeThreads=0 they are
computed in the request thread as before."""

import os
import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 2
PROBE = {"nodes": 1, "duration": 600}


def thread_nices(pid):
    """{tid: nice} of every thread of process pid (/proc/PID/task/TID/stat,
    field 19)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[int(tid)] = int(fields[16])
        except (OSError, ValueError, IndexError):
            pass
    return out


def start(args):
    grid = t.Grid(nodes=[NODES], args=["--no-flexcod"] + args)
    grid.__enter__()
    st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                    30, "the plugin to listen")
    c = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60)
    return grid, st, c


def thread_names(pid):
    """Sorted names of process pid's threads (/proc/PID/task/TID/comm)."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out.append(f.read().strip())
        except OSError:
            pass
    return sorted(out)


def compute_stats(c):
    return (c.get("/v1/stats").json or {}).get("compute", {})


def both_stats(c):
    st = c.get("/v1/stats").json or {}
    return st.get("compute", {}), st.get("snapshot_lock", {})


def main():
    t.require_grid_tools()

    # -- defaults: two threads at nice 10 -----------------------------------
    grid, st, c = start([])
    try:
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("ComputeThreads") == "2" and cfg.get("ComputeNice") == "10",
             "slurmctld's log shows ComputeThreads=2 ComputeNice=10 (the defaults)", "%r" % cfg)
        pid = st["clusters"][0]["slurmctld_pid"]
        nices = thread_nices(pid)
        # ComputeNice is relative to slurmctld's own nice value (its main
        # thread's: the test may itself run niced, and slurmctld with it)
        base = nices.get(pid, 0)
        low = min(base + 10, 19)
        niced = [tid for tid, n in nices.items() if n == low]
        others = sorted(set(n for tid, n in nices.items() if n != low))
        t.ok(len(niced) == 2, "slurmctld has exactly 2 threads at nice %d (its own %d + 10)"
             % (low, base), "%r" % nices)
        t.ok(others == [base], "its other %d threads keep nice %d"
             % (len(nices) - len(niced), base), "%r" % nices)
        names = thread_names(pid)
        ours = [n for n in names if n.startswith("flexco_")]
        t.ok(ours == ["flexco_agent", "flexco_compute", "flexco_compute", "flexco_events",
                      "flexco_reaper", "flexco_waker"],
             "the plugin's threads are named flexco_* (agent, 2 compute, events, reaper, waker)",
             "%r" % names)
        t.ok(names.count("MHD-worker") == 2 and "MHD-single" not in names,
             "HttpThreads=2 (the default): 2 threads of libmicrohttpd", "%r" % names)
        s0 = compute_stats(c)
        t.ok(s0.get("threads") == 2 and s0.get("nice") == 10,
             "/v1/stats compute: 2 threads, nice 10", "%r" % s0)

        r1 = c.request("POST", "/v1/probe", body=PROBE)
        r2 = c.get("/v1/profile")
        s1 = compute_stats(c)
        t.ok(r1.status == 200 and (r1.json or {}).get("offers"),
             "a probe is answered 200 with offers", "%s %r" % (r1.status, r1.raw[:300]))
        t.ok(r2.status == 200 and (r2.json or {}).get("steps"),
             "a profile is answered 200 with steps", "%s %r" % (r2.status, r2.raw[:300]))
        t.ok(s1.get("runs", 0) - s0.get("runs", 0) == 2
             and s1.get("inline_runs") == s0.get("inline_runs"),
             "both were computed on the compute threads", "%r %r" % (s0, s1))

        # -- the same probe again on the same snapshot: from its plan cache -------
        # (a node, job or partition change in between makes the second
        # probe take a snapshot of its own, which is planned afresh: then
        # try again, for up to 30 s: on a loaded machine 25.11 was seen to
        # touch the partition between five pairs in a row)
        seen = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c0, l0 = both_stats(c)
            ra = c.request("POST", "/v1/probe", body=PROBE)
            c1, l1 = both_stats(c)
            rb = c.request("POST", "/v1/probe", body=PROBE)
            c2, l2 = both_stats(c)
            seen = seen[-2:] + [(ra.status, rb.status, c0, c1, c2, l1, l2)]
            if l2.get("count") == l1.get("count"):  # rb shared ra's snapshot
                break
        t.ok(l2.get("count") == l1.get("count") and l2.get("shared", 0) > l1.get("shared", 0),
             "a probe right after another one shares its snapshot", "%r" % seen)
        t.ok(ra.status == rb.status == 200
             and c2.get("cached_runs", 0) - c1.get("cached_runs", 0) == 1
             and c2.get("runs") == c1.get("runs") and c2.get("inline_runs") == c1.get("inline_runs"),
             "that probe is answered from the snapshot's plan cache in the request thread "
             "(compute.cached_runs +1, no compute thread run)", "%r" % seen)
        t.ok((ra.json or {}).get("offers") and (ra.json or {}).get("offers") == (rb.json or {}).get("offers"),
             "with the same offers as the probe that planned them",
             "%r / %r" % (ra.raw[:300], rb.raw[:300]))
        c3 = compute_stats(c)

        # -- many at once: queued, every one answered ---------------------------
        codes = []
        lock = threading.Lock()

        def one():
            cc = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60)
            r = cc.request("POST", "/v1/probe", body=PROBE)
            with lock:
                codes.append(r.status)
        ths = [threading.Thread(target=one) for _ in range(12)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        s2 = compute_stats(c)
        t.ok(codes == [200] * 12, "12 concurrent probes are all answered 200", "%r" % codes)
        t.ok((s2.get("runs", 0) - c3.get("runs", 0))
             + (s2.get("cached_runs", 0) - c3.get("cached_runs", 0)) == 12
             and s2.get("inline_runs") == c3.get("inline_runs"),
             "each of the 12 computed on a compute thread or answered from the plan cache",
             "%r %r" % (c3, s2))
        t.ok(len([n for n in thread_nices(pid).values() if n == low]) == 2,
             "still exactly 2 threads at nice %d afterwards (no thread per request)" % low)
    finally:
        grid.__exit__(None, None, None)

    # -- ComputeThreads=0: in the request thread --------------------------------
    grid, st, c = start(["--plugin-option", "ComputeThreads=0",
                         "--plugin-option", "ComputeNice=5",
                         "--plugin-option", "HttpThreads=3"])
    try:
        pid = st["clusters"][0]["slurmctld_pid"]
        names = thread_names(pid)
        t.ok(names.count("MHD-worker") == 3 and "flexco_compute" not in names,
             "HttpThreads=3: 3 threads of libmicrohttpd; ComputeThreads=0: no compute thread",
             "%r" % names)
        nices = thread_nices(pid)
        base = nices.get(pid, 0)
        t.ok(sorted(set(nices.values())) == [base],
             "ComputeThreads=0: every slurmctld thread at its own nice %d" % base, "%r" % nices)
        s0 = compute_stats(c)
        r1 = c.request("POST", "/v1/probe", body=PROBE)
        s1 = compute_stats(c)
        t.ok(r1.status == 200 and s0.get("threads") == 0
             and s1.get("inline_runs", 0) - s0.get("inline_runs", 0) == 1
             and s1.get("runs") == s0.get("runs") == 0,
             "ComputeThreads=0: the probe is answered 200, computed in the request thread",
             "%s %r %r" % (r1.status, s0, s1))
    finally:
        grid.__exit__(None, None, None)


if __name__ == "__main__":
    t.run_main(main)
