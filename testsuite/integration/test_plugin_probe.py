#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""POST /v1/probe on a real cluster: offers that follow what the cluster
really runs, a what-if fitness that drops when an offer would delay a
pending job, a job_reference that plans the queue in priority order,
strict request validation, and slurmctld unharmed."""

import datetime

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4


def _secs(limit):
    """squeue's %l ([days-][hours:]minutes:seconds) in seconds."""
    days, _, rest = limit.rpartition("-")
    secs = 0
    for part in rest.split(":"):
        secs = secs * 60 + int(part)
    return secs + int(days or 0) * 86400


def _jobs(grid):
    """Running and pending jobs of alpha: id, state, priority, nodes, time
    limit (s), end (epoch; running jobs: start + limit)."""
    r = grid.run("alpha", ["squeue", "-h", "-t", "R,PD", "-o", "%i|%T|%Q|%D|%l|%e"])
    jobs = []
    for line in r.stdout.split():
        jid, state, prio, nodes, limit, end = line.split("|")
        jobs.append({"id": jid, "state": state, "prio": int(prio),
                     "nodes": int(nodes.split("-")[0]), "secs": _secs(limit),
                     "end": (int(datetime.datetime.fromisoformat(end).timestamp())
                             if state == "RUNNING" else None)})
    return sorted(jobs, key=lambda j: int(j["id"]))


def _reference_model(cap, now, running, queue, duration, nodes):
    """Conservative backfilling, naively: every queued (nodes, seconds) job in
    order at its earliest fit from now, then the earliest fit of `nodes` for
    `duration` behind them (the thesis' P^JOB start), or None."""
    spans = [(now, max(end, now + 1), n) for end, n in running]

    def fit(d, n):
        for s in sorted({now} | {e for _, e, _ in spans if e > now}):
            points = {s} | {a for a, _, _ in spans if s < a < s + d}
            if all(cap - sum(k for a, e, k in spans if a <= p < e) >= n
                   for p in points):
                return s
        return None
    for n, d in queue:
        s = fit(d, n)
        if s is not None:
            spans.append((s, s + d, n))
    return fit(duration, nodes)


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        c = plugin_client(st["clusters"][0], st["munge_socket"])

        # -- idle cluster ---------------------------------------------------
        r = c.request("POST", "/v1/probe", body={"nodes": 2, "duration": 600})
        doc = r.json or {}
        offers = doc.get("offers", [])
        snap = doc.get("snapshot_time", 0)
        first = offers[0] if offers else {}
        t.ok(r.status == 200 and doc.get("cluster") == "alpha"
             and doc.get("partition") == "batch" and first.get("start") == snap
             and first.get("end") == snap + 600 and first.get("nodes") == 2
             and first.get("fit") == 1.0 and 0 <= first.get("p_res", -1) <= 1
             and first.get("valid_until") == snap + 60,
             "idle cluster: the first offer starts now, 2 nodes, fit 1, "
             "valid for 60 s", "%s %r" % (r.status, r.raw[:600]))

        # -- offers follow a running job ------------------------------------
        jobid = grid.submit("alpha", ["-N3", "-t", "10", "-o", "/dev/null",
                                      "--wrap", "sleep 600"])
        job = grid.wait_job("alpha", jobid, states=("RUNNING",))
        r = c.request("POST", "/v1/probe", body={"nodes": 2, "duration": 600})
        doc = r.json or {}
        offers = doc.get("offers", [])
        snap = doc.get("snapshot_time", 0)
        starts = [o["start"] for o in offers]
        # the job holds 3 of 4 nodes until its limit, about snap + 600
        t.ok(job.get("JobState") == "RUNNING" and r.status == 200 and offers
             and all(s >= snap + 540 for s in starts)
             and abs(starts[0] - (snap + 600)) <= 60,
             "a 3-node job runs: 2-node offers start when it reaches its limit",
             "%s %r" % (r.status, starts))
        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 600})
        offers1 = (r.json or {}).get("offers", [])
        t.ok(r.status == 200 and offers1
             and offers1[0]["start"] == (r.json or {}).get("snapshot_time"),
             "... while 1 node is offered at once")

        # -- a pending job that an offer would delay --------------------------
        pend = grid.submit("alpha", ["-N2", "-t", "10", "-o", "/dev/null",
                                     "--wrap", "sleep 60"])
        # wait until backfill has planned it (its planned start is set)
        t.wait_for(lambda: grid.job("alpha", pend).get("StartTime", "Unknown")
                   not in ("Unknown", "None"), 60, "backfill to plan the pending job")
        r = c.request("POST", "/v1/probe",
                      body={"nodes": 2, "duration": 1200, "max_offers": 16})
        doc = r.json or {}
        offers = doc.get("offers", [])
        t.ok(r.status == 200 and doc.get("queue", {}).get("considered", 0) >= 1,
             "the planner sees the pending job", "%r" % doc.get("queue"))
        t.ok(offers and all(o["fit"] == 1.0 and o["verdict"] == "placed"
                            for o in offers),
             "offers avoid backfill's plan: none delays the pending job (fit 1)",
             "%r" % [(o["start"] - doc.get("snapshot_time", 0), o["fit"], o["verdict"])
                     for o in offers])
        planned = grid.job("alpha", pend)
        r = c.request("POST", "/v1/probe", body={"nodes": NODES, "duration": 600})
        doc = r.json or {}
        offers = doc.get("offers", [])
        snap = doc.get("snapshot_time", 0)
        # all 4 nodes: only after the running job (+600) and the planned
        # 2-node job (+600..+1200) are done
        t.ok(r.status == 200 and offers and abs(offers[0]["start"] - (snap + 1200)) <= 90,
             "a 4-node offer starts after the running job and the planned "
             "pending job", "%r %r" % ([o["start"] - snap for o in offers],
                                      planned.get("StartTime")))
        grid.run("alpha", ["scancel", pend])
        t.wait_for(lambda: grid.job("alpha", pend).get("JobState") != "PENDING",
                   30, "the pending job to be cancelled")

        # -- job_reference: the queue in priority order, from the snapshot ----
        # Four pending jobs (none fits on the one free node) whose priority
        # order is not their submission order.  The model's answer changes
        # if the plugin read the queue in job id order or reversed, took
        # every job as 1 node or 10 minutes, or got the running job's end
        # wrong (see _reference_model); it must equal job_reference exactly.
        queued = []
        for n, minutes, prio in [(2, 5, 2000), (4, 30, 4000), (2, 10, 1000),
                                 (3, 15, 3000)]:
            queued.append(grid.submit("alpha", [
                "-N%d" % n, "-t", str(minutes), "--priority", str(prio),
                "-o", "/dev/null", "--wrap", "true"]))
        t.wait_for(lambda: all(j["state"] == "PENDING"
                               for j in _jobs(grid) if j["id"] in queued),
                   30, "the four jobs to be pending")
        for _ in range(5):  # until no job changed state around the probe
            before = _jobs(grid)
            r = c.request("POST", "/v1/probe", body={"nodes": 2, "duration": 600})
            if _jobs(grid) == before:
                break
        doc = r.json or {}
        snap = doc.get("snapshot_time", 0)
        running = [(j["end"], j["nodes"]) for j in before if j["state"] == "RUNNING"]
        pending = [j for j in before if j["state"] == "PENDING"]
        by_prio = sorted(pending, key=lambda j: (-j["prio"], j["id"]))
        want = _reference_model(NODES, snap, running,
                                [(j["nodes"], j["secs"]) for j in by_prio], 600, 2)
        by_id = _reference_model(NODES, snap, running,
                                 [(j["nodes"], j["secs"]) for j in
                                  sorted(pending, key=lambda j: j["id"])], 600, 2)
        got = (doc.get("job_reference") or {})
        t.ok(r.status == 200 and len(pending) == 4 and len(running) == 1
             and doc.get("queue", {}).get("considered") == 4
             and got.get("nodes") == 2 and got.get("start") == want
             and want != by_id,
             "job_reference is the conservative plan of the queue in priority "
             "order (not job id order)",
             "%s ref %s, model %s (by id %s), running %r, queue %r" % (
                 r.status, got, want, by_id, running,
                 [(j["id"], j["prio"], j["nodes"], j["secs"]) for j in by_prio]))
        grid.run("alpha", ["scancel", jobid, *queued])

        # -- bad requests -----------------------------------------------------
        for body, what in [({"nodes": 2}, "missing duration"),
                           ({"nodes": 0, "duration": 60}, "zero nodes"),
                           ({"nodes": 2, "duration": 60, "colour": 1}, "unknown field"),
                           ({"nodes": 2, "duration": 60, "distribution": "x"},
                            "unknown distribution"),
                           ({"nodes": {"min": 3, "max": 2}, "duration": 60},
                            "empty node range"),
                           ("{", "invalid JSON"), ("", "empty body")]:
            r = c.request("POST", "/v1/probe", body=body)
            t.ok(r.status == 400 and r.is_json_error(),
                 "probe with %s: 400 JSON error" % what,
                 "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/probe",
                      body={"nodes": 2, "duration": 60, "partition": "nosuch"})
        t.ok(r.status == 404 and r.is_json_error(), "unknown partition: 404")
        r = c.get("/v1/probe")
        t.ok(r.status == 405 and r.headers.get("Allow") == "POST",
             "GET /v1/probe: 405 with Allow: POST", "%s %r" % (r.status, r.headers))
        r = c.get("/v1/profile", body=b"")
        t.ok(r.status == 200, "other endpoints keep answering")

        stats = c.get("/v1/stats").json or {}
        by_ep = {e["endpoint"]: e for e in stats.get("requests", [])}
        t.ok(by_ep.get("probe", {}).get("status", {}).get("400", 0) >= 7
             and by_ep.get("probe", {}).get("status", {}).get("200", 0) >= 3,
             "stats count probes by status", "%r" % by_ep.get("probe"))
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
