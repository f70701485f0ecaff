#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared snapshots (flexco.conf SnapshotMaxAge, plugin/snapshot.c) on a
real cluster: probes and profile requests that come within SnapshotMaxAge
of each other use one snapshot instead of walking slurmctld's job list
each (/v1/stats counts them as snapshot_lock.shared), and a snapshot is
never used after a job, node or reservation changed: a job submitted or
started, or a reservation made, just before a request is in its answer."""

import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 2
PROBE = {"nodes": 1, "duration": 600}


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        c = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60)
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("SnapshotMaxAge") == "1000",
             "slurmctld's log shows SnapshotMaxAge=1000 (the default) in effect", "%r" % cfg)

        def lock_stats():
            return (c.get("/v1/stats").json or {}).get("snapshot_lock", {})

        # -- ten probes in a row share snapshots -------------------------------
        # (the nodes registered a moment ago: a snapshot is shared only once
        # the last node change is from an earlier second than the snapshot)
        seen = []

        def burst():
            s0 = lock_stats()
            codes = [c.request("POST", "/v1/probe", body=PROBE).status for _ in range(10)]
            s1 = lock_stats()
            got = (codes, s1.get("shared", 0) - s0.get("shared", 0),
                   s1.get("count", 0) - s0.get("count", 0))
            seen.append(got)
            return codes == [200] * 10 and got[1] >= 5 and got[2] <= 5 and got
        got = t.wait_for(burst, 20, "probes to share snapshots")
        t.ok(bool(got), "ten probes in a row: %s served from a shared snapshot, %s snapshots "
             "taken" % (got[1], got[2]) if got else "probes share snapshots", "%r" % seen[-3:])

        # -- a job start is seen at once --------------------------------------
        r = c.get("/v1/profile")
        free0 = ((r.json or {}).get("steps") or [{}])[0].get("free_nodes")
        t.ok(r.status == 200 and free0 == NODES, "profile: %s of %d nodes free now"
             % (free0, NODES), "%s %r" % (r.status, r.raw[:300]))
        job = grid.submit("alpha", ["-N1", "-t", "30", "-o", "/dev/null", "--wrap", "sleep 300"])
        grid.wait_job("alpha", job, states=("RUNNING",), timeout=60)
        r = c.get("/v1/profile")
        free1 = ((r.json or {}).get("steps") or [{}])[0].get("free_nodes")
        t.ok(r.status == 200 and free1 == NODES - 1,
             "the profile right after a job started shows it: %s nodes free" % free1,
             "%s %r" % (r.status, r.raw[:300]))

        def fresh_after(action, what):
            """action() right after a burst of shared probes: the next probe
            takes a snapshot of its own."""
            t.wait_for(burst, 20, "probes to share snapshots again")
            s0 = lock_stats()
            okay = action()
            r = c.request("POST", "/v1/probe", body=PROBE)
            s1 = lock_stats()
            t.ok(okay and r.status == 200
                 and s1.get("count", 0) == s0.get("count", 0) + 1
                 and s1.get("shared", 0) == s0.get("shared", 0),
                 "the probe right after %s took a snapshot of its own" % what,
                 "%s %s %r %r" % (okay, r.status, s0, s1))

        # -- a reservation made, a job submitted: seen at once -----------------
        later = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3600))
        fresh_after(lambda: grid.run("alpha", [
            "scontrol", "create", "reservation", "ReservationName=share_x", "NodeCnt=1",
            "StartTime=" + later, "Duration=60", "Users=root"]).returncode == 0,
            "a reservation was made")
        held = []
        fresh_after(lambda: held.append(grid.submit("alpha", [
            "-H", "-N1", "-t", "5", "-o", "/dev/null", "--wrap", "true"])) or True,
            "a job was submitted")

        grid.run("alpha", ["scancel", str(job)] + [str(j) for j in held])
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
