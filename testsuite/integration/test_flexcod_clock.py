#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Clusters whose clocks are off (doc/flexcod.md, "Clocks").

On a grid of sites (localgrid --sites: each cluster and flexcod in a
network namespace of its own), beta's slurmctld and slurmd run 20 s ahead,
gamma's 20 s behind (localgrid --clock).  flexcod estimates each cluster's clock offset from
its answers' Date headers and shows it (GET /v1/clusters clock_offset,
flexcod_cluster_clock_offset_seconds); with MaxClockOffset=10 it refuses
to split a co-allocation onto beta or gamma (before, it did); with
MaxClockOffset=30 it places it there, and tells each cluster its times by
that cluster's own clock: alpha's and gamma's reservations begin at the
same instant (gamma's StartTime 20 s earlier by the epoch), and both part
jobs start together.  Before, flexcod sent its own clock's times: gamma's
reservation began 20 s after alpha's, and its part job waited for it,
running 20 s behind alpha's."""

import os
import time

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script
from flexcohttp import parse_exposition, value

NODES = [4, 4, 4]
OFFSET = 20


def epoch(text):
    """scontrol's local time "2026-12-04T21:35:01" as epoch seconds."""
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES, args=["--sites", "--clock", "beta=+%ds" % OFFSET,
                                   "--clock", "gamma=-%ds" % OFFSET]) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-clock-")
        os.chmod(tmp, 0o777)

        def offsets():
            cl = (fc.client().get("/v1/clusters").json or {}).get("clusters", [])
            got = {c["name"]: c.get("clock_offset") for c in cl}
            return got if all(v is not None for v in got.values()) and got else None
        got = t.wait_for(offsets, 30, "flexcod to know both clusters' clocks") or {}
        t.ok(abs(got.get("alpha", 99)) <= 1.5 and abs(got.get("beta", 99) - OFFSET) <= 1.5
             and abs(got.get("gamma", 99) + OFFSET) <= 1.5,
             "GET /v1/clusters: alpha's clock offset about 0, beta's about +%d s, gamma's -%d s"
             % (OFFSET, OFFSET), "%r" % got)
        fams, problems = parse_exposition(fc.client().get("/metrics").raw.decode())
        beta = value(fams, "flexcod_cluster_clock_offset_seconds", cluster="beta")
        t.ok(not problems and beta is not None and abs(beta - OFFSET) <= 1.5,
             "GET /metrics: flexcod_cluster_clock_offset_seconds{cluster=\"beta\"} about %d" % OFFSET,
             "%r %r" % (beta, problems[:3]))

        body = {"nodes": 6, "duration": 120, "script": script(tmp, "sleep 60"),
                "std_out": "/dev/null", "clusters": ["alpha", "beta"]}
        s, doc = fc.submit(body)
        msg = (doc or {}).get("error", {}).get("message", "")
        t.ok(s == 409 and "beta's clock is %d s ahead of flexcod's (MaxClockOffset=10)" % OFFSET in msg,
             "MaxClockOffset=10: a co-allocation that needs beta is not placed, and the answer says why",
             "%s %r" % (s, doc))
        t.ok(nothing_left(grid), "nothing was made on either cluster")

        t.ok(fc.reconfigure(MaxClockOffset=30), "MaxClockOffset=30 (SIGHUP)")
        s, doc = fc.submit(body)
        t.ok(s == 201 and sorted(p["cluster"] for p in doc.get("parts", [])) == ["alpha", "beta"],
             "MaxClockOffset=30: it is placed over alpha and beta", "%s %r" % (s, doc))
        if s == 201:
            fc.client().request("DELETE", "/v1/coallocations/%s" % doc["id"])
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "cancelled, nothing left")

        # gamma, 20 s behind: times told by its own clock.
        ready = int(time.time()) + 25
        s, doc = fc.submit(dict(body, clusters=["alpha", "gamma"], ready=ready,
                                script=script(tmp, "sleep 40")))
        parts = {p["cluster"]: p for p in (doc or {}).get("parts", [])}
        t.ok(s == 201 and sorted(parts) == ["alpha", "gamma"],
             "a co-allocation over alpha and gamma (20 s behind) is scheduled", "%s %r" % (s, doc))
        coid = (doc or {}).get("id")
        starts = {}
        for name, p in parts.items():
            r = grid.run(name, ["scontrol", "-o", "show", "reservation", p.get("reservation") or "?"])
            f = dict(w.split("=", 1) for w in r.stdout.split() if "=" in w)
            if "StartTime" in f:
                starts[name] = epoch(f["StartTime"])
        t.ok(len(starts) == 2 and abs((starts["alpha"] - starts["gamma"]) - OFFSET) <= 2,
             "gamma's reservation starts %d s earlier by the epoch than alpha's: the same instant "
             "by each cluster's clock" % OFFSET, "%r" % starts)
        d = fc.wait_parts(coid, 2, timeout=90)
        t.ok(bool(d), "both part jobs run", "%r" % (fc.get(coid)[1],))
        began = {}
        for p in d.get("parts", []):
            r = grid.run(p["cluster"], ["scontrol", "-o", "show", "job", str(p.get("job_id"))])
            f = dict(w.split("=", 1) for w in r.stdout.split() if "=" in w)
            if "StartTime" in f:
                began[p["cluster"]] = epoch(f["StartTime"])
        # each cluster stamps its own clock: gamma's start by real time is +OFFSET
        spread = abs(began.get("alpha", 0) - (began.get("gamma", 0) + OFFSET))
        t.ok(len(began) == 2 and spread <= 2,
             "the part jobs started within 2 s of each other by real time (%d s)" % spread,
             "%r" % began)
        fstarts = [p.get("actual_start") or 0 for p in d.get("parts", [])]
        t.ok(len(fstarts) == 2 and all(fstarts) and abs(fstarts[0] - fstarts[1]) <= 2
             and abs(min(fstarts) - ready) <= 3,
             "flexcod keeps both parts' starts by its own clock: together, at the planned start",
             "%r ready %d" % (fstarts, ready))
        fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "a clean grid"), "cancelled, nothing left")
        st = fc.client().get("/v1/stats").json or {}
        t.ok(st.get("clock_refusals") == 1, "GET /v1/stats: clock_refusals 1", "%r" % st.get("clock_refusals"))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
