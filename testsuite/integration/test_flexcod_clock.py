#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Clusters whose clocks are off (issue 38 §2.7).

beta's slurmctld and slurmd run 20 s ahead (localgrid --clock).  flexcod
estimates each cluster's clock offset from its answers' Date headers and
shows it (GET /v1/clusters clock_offset, flexcod_cluster_clock_offset_seconds);
with MaxClockOffset=10 it refuses to split a co-allocation onto beta, whose
part would start 20 s before alpha's (before, it did); with
MaxClockOffset=30 it places it there."""

import os

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script
from flexcohttp import parse_exposition, value

NODES = [4, 4]
OFFSET = 20


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES, args=["--clock", "beta=+%ds" % OFFSET]) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-clock-")
        os.chmod(tmp, 0o777)

        def offsets():
            cl = (fc.client().get("/v1/clusters").json or {}).get("clusters", [])
            got = {c["name"]: c.get("clock_offset") for c in cl}
            return got if all(v is not None for v in got.values()) and got else None
        got = t.wait_for(offsets, 30, "flexcod to know both clusters' clocks") or {}
        t.ok(abs(got.get("alpha", 99)) <= 1.5 and abs(got.get("beta", 99) - OFFSET) <= 1.5,
             "GET /v1/clusters: alpha's clock offset about 0, beta's about +%d s" % OFFSET,
             "%r" % got)
        fams, problems = parse_exposition(fc.client().get("/metrics").raw.decode())
        beta = value(fams, "flexcod_cluster_clock_offset_seconds", cluster="beta")
        t.ok(not problems and beta is not None and abs(beta - OFFSET) <= 1.5,
             "GET /metrics: flexcod_cluster_clock_offset_seconds{cluster=\"beta\"} about %d" % OFFSET,
             "%r %r" % (beta, problems[:3]))

        body = {"nodes": 6, "duration": 120, "script": script(tmp, "sleep 60"),
                "std_out": "/dev/null"}
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
        st = fc.client().get("/v1/stats").json or {}
        t.ok(st.get("clock_refusals") == 1, "GET /v1/stats: clock_refusals 1", "%r" % st.get("clock_refusals"))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
