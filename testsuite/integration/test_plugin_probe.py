#!/usr/bin/env python3
"""POST /v1/probe on a real cluster: offers that follow what the cluster
really runs, a what-if fitness that drops when an offer would delay a
pending job, strict request validation, and slurmctld unharmed."""

import flexcotest as t
from flexcohttp import Client

NODES = 4


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        c = Client(st["clusters"][0]["plugin_url"], st["munge_socket"])

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
        grid.run("alpha", ["scancel", jobid, pend])

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
