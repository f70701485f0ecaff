#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared snapshots (flexco.conf SnapshotMaxAge, SnapshotJobLag;
plugin/snapshot.c) on a real cluster: probes and profile requests that come
within SnapshotMaxAge of each other use one snapshot instead of walking
slurmctld's job list each (/v1/stats counts them as snapshot_lock.shared).
With SnapshotJobLag=0 (the default) a snapshot is never used after a job,
node or reservation changed: a job submitted or started, or a reservation
made, just before a request is in its answer.  With SnapshotJobLag > 0 a
snapshot at most that old is still shared after a job change
(snapshot_lock.shared_job_lag counts those answers), but never after a node
(a job started, a node drained), partition or reservation change.  When
slurmctld marks its nodes changed for something no snapshot shows (here a
node's Weight), the plugin looks at the nodes and still shares the snapshot
(snapshot_lock.shared_node_rechecked)."""

import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 2
PROBE = {"nodes": 1, "duration": 600}


def start(args):
    grid = t.Grid(nodes=[NODES], args=["--no-flexcod"] + args)
    grid.__enter__()
    st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                    30, "the plugin to listen")
    c = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60)
    return grid, c


class Share:
    """Probes against one grid's plugin, and its snapshot counters."""

    def __init__(self, grid, c):
        self.grid = grid
        self.c = c
        self.seen = []

    def lock_stats(self):
        return (self.c.get("/v1/stats").json or {}).get("snapshot_lock", {})

    def probe(self):
        return self.c.request("POST", "/v1/probe", body=PROBE).status

    def burst(self):
        """Ten probes in a row: most of them served from a shared snapshot."""
        s0 = self.lock_stats()
        codes = [self.probe() for _ in range(10)]
        s1 = self.lock_stats()
        got = (codes, s1.get("shared", 0) - s0.get("shared", 0),
               s1.get("count", 0) - s0.get("count", 0))
        self.seen.append(got)
        return codes == [200] * 10 and got[1] >= 5 and got[2] <= 5 and got

    def sharing(self, what):
        # (the nodes registered a moment ago: a snapshot is shared only once
        # the last node change is from an earlier second than the snapshot)
        got = t.wait_for(self.burst, 20, "probes to share snapshots")
        t.ok(bool(got), "%s: ten probes in a row: %s served from a shared snapshot, %s "
             "snapshots taken" % (what, got[1], got[2]) if got
             else "%s: probes share snapshots" % what, "%r" % self.seen[-3:])

    def after(self, action):
        """action() right after a burst of shared probes, then one probe:
        (action's result, the probe's status, stats before, stats after)."""
        t.wait_for(self.burst, 20, "probes to share snapshots again")
        s0 = self.lock_stats()
        okay = action()
        code = self.probe()
        return okay, code, s0, self.lock_stats()

    def fresh_after(self, action, what):
        """action() right after a burst of shared probes: the next probe
        takes a snapshot of its own."""
        okay, code, s0, s1 = self.after(action)
        t.ok(okay and code == 200
             and s1.get("count", 0) == s0.get("count", 0) + 1
             and s1.get("shared", 0) == s0.get("shared", 0)
             and s1.get("shared_job_lag") == s0.get("shared_job_lag"),
             "the probe right after %s took a snapshot of its own" % what,
             "%s %s %r %r" % (okay, code, s0, s1))
        return s0, s1

    def shared_after(self, action, what):
        """action() moves last_node_update but changes nothing a snapshot
        shows: the next probe is still served from the shared snapshot,
        after a look at the nodes (shared_node_rechecked).  Up to three
        tries: a backfill cycle that ends, or SnapshotMaxAge that passes,
        between the burst and the probe rightly takes a new snapshot."""
        tries = []

        def once():
            okay, code, s0, s1 = self.after(action)
            tries.append((okay, code, s0, s1))
            return (okay and code == 200
                    and s1.get("count", 0) == s0.get("count", 0)
                    and s1.get("shared", 0) == s0.get("shared", 0) + 1
                    and s1.get("shared_node_rechecked", 0)
                    == s0.get("shared_node_rechecked", 0) + 1)
        t.ok(any(once() for _ in range(3)),
             "the probe right after %s was served from the shared snapshot, the nodes "
             "looked at (shared_node_rechecked +1; %d tries)" % (what, len(tries)),
             "%r" % tries)

    def submit_held(self, held):
        held.append(self.grid.submit("alpha", [
            "-H", "-N1", "-t", "5", "-o", "/dev/null", "--wrap", "true"]))
        return True

    def free_now(self):
        r = self.c.get("/v1/profile")
        return r, ((r.json or {}).get("steps") or [{}])[0].get("free_nodes")

    def job_start_seen(self, what):
        """A job that starts is seen by the next profile at once."""
        r, free0 = self.free_now()
        t.ok(r.status == 200 and free0 == NODES, "%s: profile: %s of %d nodes free now"
             % (what, free0, NODES), "%s %r" % (r.status, r.raw[:300]))
        job = self.grid.submit("alpha", ["-N1", "-t", "30", "-o", "/dev/null",
                                         "--wrap", "sleep 300"])
        self.grid.wait_job("alpha", job, states=("RUNNING",), timeout=60)
        r, free1 = self.free_now()
        t.ok(r.status == 200 and free1 == NODES - 1,
             "%s: the profile right after a job started shows it: %s nodes free"
             % (what, free1), "%s %r" % (r.status, r.raw[:300]))
        return job

    def reservation(self, name):
        later = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3600))
        return self.grid.run("alpha", [
            "scontrol", "create", "reservation", "ReservationName=" + name, "NodeCnt=1",
            "StartTime=" + later, "Duration=60", "Users=root"]).returncode == 0

    def alive(self, what):
        p = self.grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "%s: slurmctld is alive" % what)


def default_lag():
    """SnapshotMaxAge=1000, SnapshotJobLag=0: every change is seen at once."""
    grid, c = start([])
    try:
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("SnapshotMaxAge") == "1000" and cfg.get("SnapshotJobLag") == "0",
             "slurmctld's log shows SnapshotMaxAge=1000 SnapshotJobLag=0 (the defaults) "
             "in effect", "%r" % cfg)
        s = Share(grid, c)
        st = s.lock_stats()
        t.ok(st.get("shared_job_lag") == 0,
             "/v1/stats has snapshot_lock.shared_job_lag, 0", "%r" % st)
        s.sharing("SnapshotJobLag=0")
        job = s.job_start_seen("SnapshotJobLag=0")
        s.fresh_after(lambda: s.reservation("share_x"), "a reservation was made")
        held = []
        s.fresh_after(lambda: s.submit_held(held), "a job was submitted (SnapshotJobLag=0)")
        st = s.lock_stats()
        t.ok(st.get("shared_job_lag") == 0,
             "with SnapshotJobLag=0 no answer came from a snapshot older than a job "
             "change (shared_job_lag 0)", "%r" % st)
        grid.run("alpha", ["scancel", str(job)] + held)
        s.alive("SnapshotJobLag=0")
    finally:
        grid.__exit__(None, None, None)


def with_lag():
    """SnapshotMaxAge=5000, SnapshotJobLag=5000: shared after a job change
    (within 5 s of the snapshot), never after a node, partition or
    reservation change."""
    grid, c = start(["--plugin-option", "SnapshotMaxAge=5000",
                     "--plugin-option", "SnapshotJobLag=5000"])
    try:
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("SnapshotMaxAge") == "5000" and cfg.get("SnapshotJobLag") == "5000",
             "slurmctld's log shows SnapshotMaxAge=5000 SnapshotJobLag=5000", "%r" % cfg)
        s = Share(grid, c)
        s.sharing("SnapshotJobLag=5000")
        held = []
        tries = []

        def lagged():
            """sbatch, then a probe: served from the snapshot taken before
            the submission.  (If that one was already 5 s old the probe
            takes a new one, which the next try shares.)"""
            s0 = s.lock_stats()
            s.submit_held(held)
            code = s.probe()
            s1 = s.lock_stats()
            d = {k: s1.get(k, 0) - s0.get(k, 0) for k in ("count", "shared", "shared_job_lag")}
            tries.append((code, d))
            return code == 200 and d == {"count": 0, "shared": 1, "shared_job_lag": 1}
        t.ok(t.wait_for(lagged, 30, "a probe after sbatch to share the snapshot"),
             "with SnapshotJobLag=5000 the probe right after a job was submitted is "
             "answered from the snapshot taken before it (shared, shared_job_lag +1; "
             "%d tries)" % len(tries), "%r" % tries[-5:])
        job = s.job_start_seen("SnapshotJobLag=5000")
        node = grid.run("alpha", ["sinfo", "-h", "-N", "-o", "%N"]).stdout.split()[-1]

        def drain():
            return grid.run("alpha", ["scontrol", "update", "NodeName=" + node,
                                      "State=DRAIN", "Reason=share_test"]).returncode == 0
        weights = iter(range(7, 100))

        def weight():
            return grid.run("alpha", ["scontrol", "update", "NodeName=" + node,
                                      "Weight=%d" % next(weights)]).returncode == 0
        s.shared_after(weight, "a node's Weight was changed (last_node_update moved)")
        s0, s1 = s.fresh_after(drain, "a node was drained (SnapshotJobLag=5000)")
        st0, st1 = s0.get("stale", {}), s1.get("stale", {})
        t.ok(st1.get("node", 0) == st0.get("node", 0) + 1,
             "/v1/stats snapshot_lock.stale.node counts that snapshot", "%r %r" % (st0, st1))
        t.ok(grid.run("alpha", ["scontrol", "update", "NodeName=" + node,
                                "State=RESUME"]).returncode == 0, "node %s resumed" % node)
        s.fresh_after(lambda: s.reservation("share_y"),
                      "a reservation was made (SnapshotJobLag=5000)")
        grid.run("alpha", ["scancel", str(job)] + held)
        s.alive("SnapshotJobLag=5000")
    finally:
        grid.__exit__(None, None, None)


def main():
    t.require_grid_tools()
    default_lag()
    with_lag()


if __name__ == "__main__":
    t.run_main(main)
