#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""POST /v1/probe on a real cluster with p_res_method "history" (the
thesis' idle-processor history, recorded by the plugin and kept across a
slurmctld restart) and with "will_run": true (Slurm's own answer beside
the offers, as `sbatch --test-only` gives it)."""

import os
import re

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
WILL_RUN_PROBES = 5


def read_history(path):
    """(records, sum of idle over all records) of partition batch in the
    plugin's state file, (0, 0) if it has none yet."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return 0, 0.0, []
    means = []
    records, total = 0, 0.0
    for i, line in enumerate(lines):
        if line == "partition batch":
            head = lines[i + 1].split()
            n = int(head[6])
            records = int(head[3])
            for b in lines[i + 2:i + 2 + n]:
                _, s, cnt = b.split()
                total += float(s)
                means.append(float(s) / int(cnt))
    return records, total, means


def main():
    t.require_grid_tools()
    # Record every 5 s, averaged over a 60 s "day": a 60 s slot then covers
    # every bucket of the history.
    with t.Grid(nodes=[NODES], args=["--no-flexcod", "--plugin-option", "PResHistoryInterval=5",
                                     "--plugin-option", "PResHistoryPeriod=60"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        cl = st["clusters"][0]
        state = os.path.join(grid.run_dir, "alpha", "state", "flexco_history.state")
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("PResHistoryInterval") == "5"
             and cfg.get("PResHistoryPeriod") == "60",
             "slurmctld's log shows the history settings in effect", "%r" % cfg)
        c = plugin_client(cl, st["munge_socket"])

        # -- what is recorded: the idle nodes of the partition -------------
        r0, s0, _ = read_history(state)
        t.wait_for(lambda: read_history(state)[0] >= r0 + 2, 30, "two more records")
        r1, s1, _ = read_history(state)
        t.ok(r1 >= r0 + 2 and s1 - s0 == 4 * (r1 - r0),
             "an idle 4-node cluster is recorded with 4 idle nodes every 5 s",
             "records %d -> %d, idle sum %g -> %g" % (r0, r1, s0, s1))
        stats = c.get("/v1/stats").json or {}
        t.ok(stats.get("history_samples", 0) >= 2, "stats count the samples",
             "%r" % stats.get("history_samples"))

        # -- p_res from the history: eq. 9.3/9.4 computed here from the file
        def probe_and_expect():
            before = read_history(state)
            r = c.request("POST", "/v1/probe", body={
                "nodes": [1, 3, 4], "duration": 60, "p_res_method": "history"})
            after = read_history(state)
            return (before == after), before, r
        for _ in range(10):
            same, (recs, _, means), r = probe_and_expect()
            if same:
                break
        h = sum(means) / len(means) if means else 0.0

        def expect(np_):
            return 1.0 if 2 * np_ <= h else (2 - 2 * np_ / h if np_ <= h else 0.0)
        doc = r.json or {}
        offers = doc.get("offers", [])
        by_nodes = {o["nodes"]: o for o in offers if o["start"] == doc.get("snapshot_time")}
        hist = doc.get("history", {})
        t.ok(r.status == 200 and doc.get("p_res_method") == "history"
             and hist.get("records") == recs and hist.get("first") is not None,
             "the probe reports the history it used",
             "%s %r, file has %d records" % (r.status, r.raw[:400], recs))
        t.ok(same and set(by_nodes) == {1, 3, 4} and h > 0
             and all(abs(by_nodes[n]["p_res"] - expect(n)) < 1e-9 for n in (1, 3, 4))
             and all(o.get("p_res_source") == "history" for o in by_nodes.values()),
             "history p_res of 1, 3 and 4 nodes follows eq. 9.4 on the recorded mean",
             "H=%g expected %r got %r" % (h, [expect(n) for n in (1, 3, 4)],
                                          [(o["nodes"], o["p_res"], o.get("p_res_source"))
                                           for o in offers]))
        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 60})
        doc = r.json or {}
        t.ok(r.status == 200 and doc.get("p_res_method") == "static"
             and "history" not in doc
             and all("p_res_source" not in o for o in doc.get("offers", [])),
             "static stays the default method")

        # -- Slurm's will_run beside the offers ---------------------------
        r = c.request("POST", "/v1/probe", body={"nodes": 2, "duration": 600})
        t.ok(r.status == 200 and "will_run" not in (r.json or {}),
             "will_run is not asked by default")
        # the next job id, as a real job gets it, before and after the tests
        before = grid.submit("alpha", ["-N1", "-t", "1", "-o", "/dev/null", "--wrap", "true"])
        grid.wait_job("alpha", before)
        docs = [c.request("POST", "/v1/probe",
                          body={"nodes": 2, "duration": 600, "will_run": True})
                for _ in range(WILL_RUN_PROBES)]
        r = docs[-1]
        doc = r.json or {}
        wr = doc.get("will_run", {})
        snap = doc.get("snapshot_time", 0)
        hosts = grid.expand_nodes("alpha", wr.get("node_list") or "x")
        t.ok(r.status == 200 and wr.get("nodes") == 2 and isinstance(wr.get("start"), int)
             and abs(wr["start"] - snap) <= 5 and len(hosts) == 2
             and "job_id" in wr and wr["job_id"] is None,
             "will_run on an idle cluster: Slurm would start 2 nodes now, "
             "no job id used up", "%s %r" % (r.status, wr))
        jid = grid.submit("alpha", ["-N1", "-t", "1", "-o", "/dev/null", "--wrap", "true"])
        t.is_(int(jid), int(before) + 1,
              "%d will_run probes leave the job id sequence where it was "
              "(the next real job gets the next id)" % WILL_RUN_PROBES)
        grid.wait_job("alpha", jid)
        # the same question through sbatch --test-only agrees on the start
        # and, unlike the probe, uses up an id (Slurm's own way)
        p = grid.run("alpha", ["sbatch", "--test-only", "-N2", "-t", "10", "--wrap", "true"])
        t.ok(p.returncode == 0 and "to start at" in p.stderr,
             "sbatch --test-only answers too", p.stderr.strip())
        jid2 = grid.submit("alpha", ["-N1", "-t", "1", "-o", "/dev/null", "--wrap", "true"])
        t.is_(int(jid2), int(jid) + 2,
              "sbatch --test-only uses up one id: the check above can see one")
        grid.wait_job("alpha", jid)

        # -- busy nodes are recorded as such -------------------------------
        jobid = grid.submit("alpha", ["-N3", "-t", "10", "-o", "/dev/null",
                                      "--wrap", "sleep 600"])
        grid.wait_job("alpha", jobid, states=("RUNNING",))
        r2 = read_history(state)[0]
        t.wait_for(lambda: read_history(state)[0] >= r2 + 1, 30, "a record after the start")
        r3, s3, _ = read_history(state)
        t.wait_for(lambda: read_history(state)[0] >= r3 + 2, 30, "two more records")
        r4, s4, _ = read_history(state)
        t.ok(r4 >= r3 + 2 and s4 - s3 == 1 * (r4 - r3),
             "with a 3-node job running, 1 idle node is recorded",
             "records %d -> %d, idle sum %g -> %g" % (r3, r4, s3, s4))

        r = c.request("POST", "/v1/probe",
                      body={"nodes": 2, "duration": 600, "will_run": True})
        doc = r.json or {}
        wr = doc.get("will_run", {})
        snap = doc.get("snapshot_time", 0)
        offers = doc.get("offers", [])
        t.ok(r.status == 200 and isinstance(wr.get("start"), int)
             and wr["start"] >= snap + 500 and offers
             and abs(offers[0]["start"] - wr["start"]) <= 120,
             "with 3 of 4 nodes busy for 10 minutes Slurm and the first offer "
             "agree on when 2 nodes are free", "%r offers %r" % (
                 wr, [o["start"] - snap for o in offers]))
        r = c.request("POST", "/v1/probe",
                      body={"nodes": NODES + 1, "duration": 60, "will_run": True})
        doc = r.json or {}
        wr = doc.get("will_run", {})
        t.ok(r.status == 200 and wr.get("start") is None and wr.get("error")
             and doc.get("offers") == [],
             "5 nodes on a 4-node cluster: no offer, and Slurm's error is reported",
             "%s %r" % (r.status, r.raw[:400]))
        # -- the history survives a restart -------------------------------
        before = hist.get("records", 0)
        grid.restart_slurmctld("alpha")
        t.wait_for(lambda: c.get("/v1/stats").status == 200, 30, "the plugin to answer")
        r = c.request("POST", "/v1/probe",
                      body={"nodes": 1, "duration": 60, "p_res_method": "history"})
        doc = r.json or {}
        t.ok(r.status == 200 and doc.get("history", {}).get("records", 0) >= before
             and doc.get("history", {}).get("first") == hist.get("first"),
             "after a slurmctld restart the history is still there",
             "%r before %r" % (doc.get("history"), hist))

        grid.run("alpha", ["scancel", jobid])
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
