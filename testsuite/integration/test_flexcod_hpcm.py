#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""HPCM in flexcod on a real 2-cluster grid (issue 18 §1): dry runs with
policy hpcm change no planner state (the round-robin pointer decides on two
equal idle clusters, so a dry run that moved it would name the other cluster
next), and the submission goes where they said; then jobs run through one
cluster and flexcod learns its M/M/c rates from the cluster's early-end
events exactly as doc/coalloc.md says (checked against the plugin's own
events), and `sreserve offers --deadline` shows P(S,d) < 1 there, the
value the model gives, and 1.00 on the cluster without enough history."""

import json
import math
import os
import subprocess
import time

import flexcotest as t
from flexcodtest import Flexcod, script
from flexcohttp import plugin_client

NODES = [4, 4]
WINDOW = 3600
MIN_JOBS = 3


def sreserve_path():
    return os.path.join(t.builddir(), "src", "sreserve", "sreserve")


def erlang_c(c, a):
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def site_p(c, lam, mu, d):
    """Theorem 1 as doc/coalloc.md gives it (the planner's formula)."""
    if lam == 0.0:
        return 1.0
    if mu == 0.0:
        return 0.0
    a = lam / mu
    rho = a / c
    if rho >= 1.0:
        return 0.0
    waiting = max(0.0, math.floor(c * mu * d) - 1.0) + 1.0
    return min(1.0, max(0.0, 1.0 - erlang_c(c, a) * rho ** waiting))


def estimate(jobs, now):
    """hpcm_estimate_rates: (lambda, mu, N) from (start, end, nodes)."""
    mine = [j for j in jobs if j[2] >= 1 and j[0] <= j[1] <= now and j[1] > now - WINDOW]
    if len(mine) < MIN_JOBS:
        return 0.0, 0.0, len(mine)
    t0 = max(now - WINDOW, min(j[0] for j in mine))
    span = max(1, now - t0)
    work = sum(j[2] * max(1, j[1] - j[0]) for j in mine)
    return len(mine) / span, len(mine) / work, len(mine)


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        c = fc.client()
        st = grid.status()

        def clusters():
            r = c.get("/v1/clusters")
            return {x["name"]: x for x in (r.json or {}).get("clusters", [])} if r.status == 200 else {}
        cl = t.wait_for(lambda: (lambda m: len(m) == 2 and all(
            x.get("reachable") and x.get("reconciled") for x in m.values()) and m)(clusters()),
            30, "flexcod to reach both clusters") or {}
        t.ok(cl and all(x["hpcm"] == {"arrival_rate": None, "service_rate": None, "jobs": 0,
                                      "span": None, "window": WINDOW} for x in cl.values()),
             "GET /v1/clusters: no HPCM rates learned yet on an idle grid", "%r" % cl)

        # -- dry runs change no HPCM planner state ---------------------------
        # Two equal idle clusters, no deadline: every scheme has P = 1, the
        # same start and end and one part, so round robin wins the tie and
        # its pointer names the cluster.  A dry run that moved the pointer
        # would make the next one name the other cluster.
        said = []
        for _ in range(3):
            s, doc = fc.submit({"nodes": 3, "duration": 120, "policy": "hpcm", "dry_run": True})
            plan = (doc or {}).get("plan") or {}
            said.append([p["cluster"] for p in plan.get("parts", [])])
            t.ok(s == 200 and plan.get("policy") == "hpcm" and plan.get("p_deadline") == 1.0,
                 "dry run, policy hpcm: 200, a plan with P(S,d) = 1 (nothing learned, no deadline)",
                 "%s %r" % (s, doc))
        t.ok(len(said[0]) == 1 and said[0] == said[1] == said[2],
             "three hpcm dry runs of 3 nodes name the same cluster (%s): asking moves no "
             "round-robin pointer" % ",".join(said[0]), "%r" % said)
        tmp = t.scratch_dir("flexcod-hpcm-")
        os.chmod(tmp, 0o777)
        s, co = fc.submit({"nodes": 3, "duration": 120, "policy": "hpcm",
                           "script": script(tmp), "std_out": "/dev/null"})
        parts = (co or {}).get("parts", [])
        t.ok(s == 201 and [p["cluster"] for p in parts] == said[0],
             "the hpcm submission is placed where the dry runs said", "%s %r %r" % (s, co, said))
        s, doc = fc.submit({"nodes": 3, "duration": 120, "policy": "hpcm", "dry_run": True})
        nxt = [p["cluster"] for p in ((doc or {}).get("plan") or {}).get("parts", [])]
        t.ok(s == 200 and len(nxt) == 1 and nxt != said[0],
             "... and the submission (not the dry runs) moved the pointer on: the next dry run "
             "names the other cluster", "%r %r" % (nxt, said))
        done = t.wait_for(lambda: (fc.get(co.get("id"))[1] or {}).get("state")
                          in ("completed", "failed"), 60, "the co-allocation to end")
        t.ok(done and fc.get(co.get("id"))[1].get("state") == "completed",
             "... and it completed", "%r" % (fc.get(co.get("id"))[1],))

        # -- learning the rates -------------------------------------------------
        # Load the other cluster: 4 one-node jobs of 30 s with a limit of 2
        # minutes, all at once; each ends early and the plugin tells flexcod.
        busy = [n for n in ("alpha", "beta") if [n] != said[0]][0]
        idle = said[0][0]
        ids = [grid.submit(busy, ["-N1", "-t", "2", "-o", "/dev/null", "--wrap", "sleep 30"])
               for _ in range(4)]
        for j in ids:
            x = grid.wait_job(busy, j, timeout=120)
            t.ok(x.get("JobState") == "COMPLETED", "job %s on %s completed" % (j, busy), "%r" % x)
        learned = t.wait_for(lambda: (lambda m: m.get(busy, {}).get("hpcm", {}).get("jobs", 0) >= 4
                                      and m)(clusters()), 30, "flexcod to learn from the ends")
        info = next(x for x in st["clusters"] if x["name"] == busy)
        pc = plugin_client(info, st["munge_socket"])
        r = pc.get("/v1/events?after=0&max=1000")
        ends = [(e["start"], e["actual_end"], e["node_count"]) for e in (r.json or {}).get("events", [])
                if e.get("type") == "job_ended_early"]
        h = (learned or {}).get(busy, {}).get("hpcm", {})
        _, mu, n = estimate(ends, int(time.time()))
        t.ok(learned and h.get("arrival_rate") and h.get("arrival_rate") > 0
             and h.get("jobs") == n >= 4 and abs(h.get("service_rate", 0) - mu) <= 1e-12
             and h.get("span", 0) >= 30,
             "GET /v1/clusters: %s's rates are learned: %d jobs, mu = N / node-seconds of the "
             "plugin's job_ended_early events = %.6g per node-s" % (busy, n, mu),
             "%r %r" % (h, ends))
        hi = (learned or {}).get(idle, {}).get("hpcm", {})
        t.ok(hi.get("arrival_rate") is None and hi.get("jobs", 9) < MIN_JOBS,
             "%s (its one part job) has too few ends to learn from" % idle, "%r" % hi)

        # -- sreserve offers shows P(S, d) ---------------------------------------
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FLEXCO_URL", "FLEXCOD_CONF"))}
        env.update(FLEXCOD_CONF=st["flexcod"]["conf"], TZ="UTC")
        t_before = int(time.time())
        r = subprocess.run([sreserve_path(), "offers", "-N", "2", "-t", "1", "--deadline", "now+150",
                            "--policy", "hpcm", "--json"], capture_output=True, text=True,
                           timeout=60, env=env, stdin=subprocess.DEVNULL)
        t_after = int(time.time()) + 1
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        deadline = (doc.get("request") or {}).get("deadline") or 0
        pd = {x["cluster"]: {o.get("p_deadline") for o in x.get("offers", [])}
              for x in doc.get("clusters", [])}
        # The model's value at each second flexcod may have asked at.
        want = []
        for now in range(t_before, t_after + 1):
            lam, mu, n = estimate(ends, now)
            want.append(site_p(4, lam, mu, max(0, deadline - now)))
        got = list(pd.get(busy, {None}))
        t.ok(r.returncode == 0 and len(got) == 1 and got[0] is not None and got[0] < 1.0
             and any(abs(got[0] - w) <= 1e-9 for w in want),
             "offers --json --deadline now+150: every offer on %s has p_deadline %.4f < 1, "
             "the M/M/c value of its learned rates" % (busy, got[0] if got and got[0] else -1),
             "%r want %r\n%s" % (pd, want, r.stdout[:1500] + r.stderr))
        t.ok(pd.get(idle) == {1.0}, "... and 1 on %s (nothing learned)" % idle, "%r" % pd)

        r = subprocess.run([sreserve_path(), "offers", "-N", "2", "-t", "1", "--deadline", "now+150",
                            "--policy", "hpcm", "-O", "Cluster:0 ,PDeadline:0"],
                           capture_output=True, text=True, timeout=60, env=env,
                           stdin=subprocess.DEVNULL)
        lines = r.stdout.splitlines()
        table = lines[:lines.index("")] if "" in lines else lines  # the CHOICE follows
        rows = [l.split() for l in table[1:]]
        t.ok(r.returncode == 0 and lines and lines[0].split() == ["CLUSTER", "P_DEADLINE"]
             and rows and all(x[1] == "1.00" for x in rows if x[0] == idle)
             and all(float(x[1]) < 1.0 for x in rows if x[0] == busy)
             and {x[0] for x in rows} == {busy, idle},
             "offers -O PDeadline: the P_DEADLINE column, below 1.00 on %s only" % busy,
             r.stdout + r.stderr)
        r = subprocess.run([sreserve_path(), "offers", "-N", "2", "-t", "1"],
                           capture_output=True, text=True, timeout=60, env=env,
                           stdin=subprocess.DEVNULL)
        head = (r.stdout.splitlines() or [""])[0].split()
        t.ok(r.returncode == 0 and "P_DEADLINE" in head and head.index("P_DEADLINE") == head.index("P_RES") + 1,
             "offers: P_DEADLINE is a default column, after P_RES", r.stdout + r.stderr)
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
