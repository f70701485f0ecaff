#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fault injection at every protocol step of flexcod (issue 15 §4).

flexcod talks to each cluster's plugin through a FaultProxy
(faultproxy.py).  For a protocol step S of submit, commit, move, cancel or
finish (a hold point, FLEXCOD_TEST_HOLD_DIR) and a fault F:

    kill-flexcod    kill -9 flexcod at S, restart it
    kill-slurmctld  kill -9 one cluster's slurmctld at S, let flexcod go on
                    without it, restart it
    blackhole       that cluster's traffic black-holed from S on, healed
                    once flexcod has gone past S
    drop            that cluster's connections closed from S on, healed
                    the same way

the case waits for quiescence (an awaited condition, no fixed sleeps) and
checks against Slurm itself (scontrol show reservation / job of each
cluster): no orphan reservation (each flexco_ reservation is a current
part of a live co-allocation), no part job running alone beyond
PartStartSkew, no duplicated part job, and every co-allocation final or
live and consistent with its parts.

By default (CI) a representative subset runs; FLEXCO_FAULT_MATRIX=full
runs every step x fault (contrib/fault-matrix), FLEXCO_FAULT_MATRIX=
"step:fault,..." the given cases.  FLEXCO_FAULT_TABLE=<file> writes the
result table (markdown) there.

FLEXCO_FAULT_GRID=sites runs the matrix on a grid of sites instead
(issue 38 §3; localgrid --sites: every link delay 40ms loss 1 %, clocks
alpha -20 s, beta 0, gamma +20 s, MaxClockOffset=30), with the faults a
site has:

    partition          the cluster's site partitioned (`localgrid net
                       partition`) from S on, healed once flexcod has gone
                       past S
    partition-outlast  the same, healed only 30 s after the co-allocation's
                       planned start (the start is 20 s after the request):
                       the partition outlasts the step and the start gate
    kill-flexcod       as above (flexcod restarted in its namespace)
    none               no fault: the step under the clock offsets alone

and the part jobs' start times converted from each cluster's clock."""

import os
import signal
import threading
import time

import flexcotest as t
from faultproxy import flexcod_via_proxies
from flexcodtest import HOLD_ENV, Flexcod, Hold, script

NODES = [3, 3, 3]
NODES_PER_CO = 4     # always split over two clusters
# s: the longest wait for quiescence after a fault.  Every case of the
# full matrix quiesces within 25 s (doc/fault-matrix.md); 60 s leaves room
# for a loaded machine and still fails an ended part's reservation left to
# run out by itself (it used to take 113 s at 'finishing' x blackhole).
QUIESCE = 60

# step: the operation it belongs to
STEPS = [("reserving", "submit"), ("reserved", "commit"), ("confirmed", "commit"),
         ("submitted", "commit"), ("move-reserved", "move"), ("move-submitted", "move"),
         ("move-switched", "move"), ("cancelling", "cancel"), ("finishing", "finish")]
FAULTS = ["kill-flexcod", "kill-slurmctld", "blackhole", "drop"]
SUBSET = [("reserving", "drop"), ("reserved", "kill-flexcod"),
          ("confirmed", "kill-slurmctld"), ("confirmed", "blackhole"),
          ("submitted", "blackhole"),
          ("move-submitted", "kill-flexcod"), ("move-switched", "drop"),
          ("cancelling", "kill-flexcod"), ("cancelling", "blackhole"),
          ("finishing", "kill-slurmctld"), ("finishing", "blackhole")]
SITE_FAULTS = ["kill-flexcod", "partition", "partition-outlast", "none"]
SITE_SUBSET = [("reserving", "partition-outlast"), ("reserved", "partition-outlast"),
               ("confirmed", "partition-outlast"), ("submitted", "partition-outlast"),
               ("cancelling", "partition-outlast"), ("finishing", "partition-outlast"),
               ("confirmed", "partition"), ("submitted", "partition"),
               ("submitted", "kill-flexcod"), ("cancelling", "kill-flexcod"),
               ("submitted", "none"), ("finishing", "none")]
SITES = os.environ.get("FLEXCO_FAULT_GRID") == "sites"
CLOCKS = {"alpha": -20, "beta": 0, "gamma": 20} if SITES else {}
OUTLAST = 30   # s a partition-outlast heals after the planned start
LIVE = ("scheduled", "running")
FINAL = ("completed", "failed", "cancelled")


def cases():
    sel = os.environ.get("FLEXCO_FAULT_MATRIX", "")
    if SITES and sel in ("", "full"):
        return SITE_SUBSET if sel == "" else [(s, f) for s, _ in STEPS for f in SITE_FAULTS]
    if sel == "full":
        return [(s, f) for s, _ in STEPS for f in FAULTS]
    if sel:
        return [tuple(x.split(":", 1)) for x in sel.split(",") if x]
    return SUBSET


def slurm_state(grid):
    """{cluster: (reservation names, [job dicts of co-N part jobs])}."""
    out = {}
    for c in grid.cluster_names():
        r = grid.run(c, ["scontrol", "show", "reservation", "-o"])
        names = [w.split("=", 1)[1] for line in r.stdout.splitlines()
                 for w in line.split() if w.startswith("ReservationName=flexco_")]
        r = grid.run(c, ["scontrol", "show", "job", "-o"])
        jobs = []
        for line in r.stdout.splitlines():
            f = {}
            for w in line.split():
                k, sep, v = w.partition("=")
                if sep and k not in f:
                    f[k] = v
            if f.get("JobName", "").startswith("co-"):
                jobs.append(f)
        out[c] = (names, jobs)
    return out


def all_coallocations(fc):
    r = fc.client().get("/v1/coallocations?limit=1000")
    out = []
    for co in (r.json or {}).get("coallocations", []):
        s, d = fc.get(co["id"])
        if s == 200:
            out.append(d)
    return out


def violations(grid, fc, skew, since=0):
    """What is wrong now, as a list of strings (empty: quiescent and
    consistent).  Co-allocations below id `since` (earlier cases, already
    checked) are not looked at again; their part jobs stay in scontrol's
    list for MinJobAge.  Every reservation is."""
    bad = []
    if not fc.listening():
        return ["flexcod does not answer or has not reconciled every cluster"]
    cos = all_coallocations(fc)
    slurm = slurm_state(grid)
    now = time.time()
    live_resv = set()
    for co in cos:
        cid, state = co["id"], co["state"]
        if cid < since:
            continue
        parts = co.get("parts", [])
        if state not in LIVE + FINAL:
            bad.append("co-%d is %s (neither live nor final)" % (cid, state))
            continue
        if co.get("releasing"):
            bad.append("co-%d still releasing %r" % (cid, co["releasing"]))
        for p in parts:
            if p["state"] in ("reserving", "confirming", "submitting", "cancelling"):
                bad.append("co-%d part %d on %s is %s" % (cid, p["index"], p["cluster"], p["state"]))
        jobs = {c: [j for j in slurm[c][1] if j["JobName"] == "co-%d" % cid] for c in slurm}
        ran = {c: [j for j in js if j.get("JobState") in ("RUNNING", "COMPLETED", "FAILED", "TIMEOUT")]
               for c, js in jobs.items()}
        for c, js in ran.items():
            if len(js) > 1:
                bad.append("co-%d: duplicated part job on %s: %r"
                           % (cid, c, [(j["JobId"], j["JobState"]) for j in js]))
        active = {c: [j for j in js if j.get("JobState") in ("RUNNING", "PENDING", "CONFIGURING")]
                  for c, js in jobs.items()}
        if state in FINAL:
            for c, js in active.items():
                if js:
                    bad.append("co-%d is %s but its job %s on %s is %s"
                               % (cid, state, js[0]["JobId"], c, js[0]["JobState"]))
            continue
        # live: each current part holds its reservation and its job
        for p in parts:
            c = p["cluster"]
            live_resv.add((c, p.get("reservation")))
            if p.get("reservation") not in slurm[c][0]:
                bad.append("co-%d (%s): part %d's reservation %s is not in Slurm on %s"
                           % (cid, state, p["index"], p.get("reservation"), c))
            mine = [j for j in jobs[c] if j["JobId"] == str(p.get("job_id"))]
            if not mine or mine[0].get("JobState") not in ("PENDING", "RUNNING", "COMPLETED",
                                                           "CONFIGURING"):
                bad.append("co-%d (%s): part %d's job %s on %s is %s in Slurm"
                           % (cid, state, p["index"], p.get("job_id"), c,
                              mine[0].get("JobState") if mine else "missing"))
        running = [(c, j) for c, js in active.items() for j in js
                   if j.get("JobState") == "RUNNING"]
        if running:
            started = [j for js in ran.values() for j in js]
            # StartTime is by the cluster's clock: to real time
            first = min(time.mktime(time.strptime(j["StartTime"], "%Y-%m-%dT%H:%M:%S"))
                        - CLOCKS.get(c, 0) for c, j in running)
            if len(started) < len(parts) and now > first + skew:
                bad.append("co-%d: %d of %d parts running alone for %d s (skew limit %d s)"
                           % (cid, len(started), len(parts), now - first, skew))
    for c, (names, _) in slurm.items():
        for n in names:
            if (c, n) not in live_resv:
                bad.append("orphan reservation %s on %s (no live co-allocation holds it)" % (n, c))
    return bad


class Case:
    def __init__(self, grid, fc, proxies, hold_dir, tmp, step, op, fault):
        self.grid, self.fc, self.proxies = grid, fc, proxies
        self.hold_dir, self.tmp = hold_dir, tmp
        self.step, self.op, self.fault = step, op, fault
        self.out = {}

    def body(self, **kw):
        b = {"nodes": NODES_PER_CO, "duration": 60, "script": script(self.tmp, "sleep 4"),
             "std_out": "/dev/null"}
        b.update(kw)
        return b

    def background(self, fn):
        def run():
            try:
                self.out["r"] = fn()
            except Exception as e:  # the connection may die with flexcod
                self.out["e"] = e
        th = threading.Thread(target=run)
        th.start()
        return th

    def run(self):
        fc = self.fc
        co = None
        r = fc.client().get("/v1/coallocations?limit=1000")
        since = 1 + max([x["id"] for x in (r.json or {}).get("coallocations", [])] or [0])
        later = int(time.time()) + 900
        soon = {"ready": int(time.time()) + 20} if SITES else {}
        if self.op in ("move", "cancel"):
            # on the site grid a cancel's co-allocation starts 30 s ahead,
            # so that a partition from the cancel on can outlast its start
            s, co = fc.submit(self.body(ready=int(time.time()) + 30
                                        if SITES and self.op == "cancel" else later))
            if s != 201 or co.get("state") != "scheduled":
                return "setup: submit answered %s %r" % (s, co)
        h = Hold(self.hold_dir, self.step)
        if self.op in ("submit", "commit", "finish"):
            th = self.background(lambda: fc.submit(self.body(**soon)))
        elif self.op == "move":
            # away from its largest part: the two other clusters then
            # have room for it beside the old set (make before break)
            was = max(co["parts"], key=lambda p: p["nodes"])["cluster"]
            others = [c for c in self.grid.cluster_names() if c != was]
            th = self.background(lambda: fc.client().request(
                "PATCH", "/v1/coallocations/%d" % co["id"], body={"clusters": others}))
        else:
            th = self.background(lambda: fc.client().request(
                "DELETE", "/v1/coallocations/%d" % co["id"]))
        if not h.reached(90):
            h.release()
            th.join(120)
            r = self.out.get("r")
            return "flexcod never reached the step (%r)" % (
                (r.status, r.json) if hasattr(r, "status") else r or self.out,)
        # The cluster the next protocol request goes to.
        if co is None:
            r = fc.client().get("/v1/coallocations?limit=1000")
            ids = sorted(x["id"] for x in (r.json or {}).get("coallocations", []))
            co = fc.get(ids[-1])[1]
        if self.step in ("move-reserved", "move-submitted"):
            target = others[0]
        else:
            target = co["parts"][0]["cluster"]
        self.target = target
        coid = co["id"]

        def passed():
            """flexcod has gone past the step (the request answered, or
            the co-allocation finished)."""
            if self.op == "finish":
                return t.wait_for(lambda: (fc.get(coid)[1] or {}).get("state") in FINAL,
                                  120, "co-%d to finish" % coid)
            th.join(180)
            return not th.is_alive()

        t0 = None
        if self.fault == "kill-flexcod":
            fc.restart(kill9=True, env={HOLD_ENV: self.hold_dir}, while_down=h.release)
            t0 = time.monotonic()
            th.join(180)
        elif self.fault == "kill-slurmctld":
            def while_down():
                h.release()
                passed()
            self.grid.restart_slurmctld(target, sig=signal.SIGKILL, while_down=while_down)
            t0 = time.monotonic()
        elif self.fault == "none":
            h.release()
            passed()
            t0 = time.monotonic()
        elif self.fault in ("partition", "partition-outlast"):
            self.grid.localgrid("net", target, "partition")
            p0 = time.time()
            h.release()
            passed()
            if self.fault == "partition-outlast":
                start = max(co.get("planned_start") or 0,
                            (fc.get(coid)[1] or {}).get("planned_start") or 0)
                t.wait_for(lambda: time.time() > start + OUTLAST, 900 + OUTLAST,
                           "the planned start + %d s" % OUTLAST)
                self.outlast = time.time() - start
            self.grid.localgrid("net", target, "heal")
            self.grid.localgrid("net", target, "delay", "40ms", "loss", "1%")
            self.partitioned = time.time() - p0
            t0 = time.monotonic()
        else:
            self.proxies[target].set(self.fault)
            h.release()
            passed()
            self.proxies[target].heal()
            t0 = time.monotonic()
        skew = 60
        last = {}

        def quiet():
            last["v"] = violations(self.grid, fc, skew, since)
            return not last["v"]
        ok = t.wait_for(quiet, QUIESCE, "quiescence after %s at %s" % (self.fault, self.step),
                        interval=1)
        self.seconds = time.monotonic() - t0
        self.coid = coid
        if not ok:
            return "; ".join(last.get("v", ["?"]))
        return None


def cleanup(grid, fc):
    """Cancel every live co-allocation and wait until nothing of flexcod's
    is left in Slurm."""
    for co in all_coallocations(fc):
        if co["state"] not in FINAL:
            fc.client().request("DELETE", "/v1/coallocations/%d" % co["id"])

    def clean():
        st = slurm_state(grid)
        return all(not names and not any(j.get("JobState") in ("RUNNING", "PENDING")
                                          for j in jobs)
                   for names, jobs in st.values())
    def idle():
        # after a kill -9 of slurmctld its nodes come back once their
        # slurmd registers again: the next case needs every node
        return all(set(grid.run(c, ["sinfo", "-h", "-o", "%T"]).stdout.split()) == {"idle"}
                   for c in grid.cluster_names())
    return t.wait_for(clean, 120, "a clean grid", interval=1) and \
        t.wait_for(idle, 120, "every node idle", interval=1)


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-hold-")
    os.environ[HOLD_ENV] = hold_dir
    todo = cases()
    ops = dict(STEPS)
    results = []
    args = ["--test-hooks"]
    if SITES:
        args += ["--sites", "--clock", "alpha=-20s", "--clock", "gamma=+20s",
                 "--flexcod-option", "MaxClockOffset=30"]
    with t.Grid(nodes=NODES, args=args,
                name=t.test_name() + ("_sites" if SITES else "")) as grid:
        fc = Flexcod(grid)
        if SITES:
            proxies = {}
            for c in grid.cluster_names():
                grid.localgrid("net", c, "delay", "40ms", "loss", "1%")
            t.ok(t.wait_for(fc.listening, 60, "flexcod to reach every site"),
                 "flexcod reaches every site (delay 40ms, loss 1%, clocks -20/0/+20 s)")
        else:
            proxies = flexcod_via_proxies(grid, fc)
            t.ok(fc.listening() and all(p.accepted > 0 for p in proxies.values()),
                 "flexcod reaches every cluster through its fault proxy")
        tmp = t.scratch_dir("flexcod-faults-")
        os.chmod(tmp, 0o777)
        for step, fault in todo:
            case = Case(grid, fc, proxies, hold_dir, tmp, step, ops[step], fault)
            t0 = time.monotonic()
            try:
                why = case.run()
            except Exception as e:  # one case's breakage is its failure
                why = "%s: %s" % (type(e).__name__, e)
            for p in proxies.values():
                p.heal()
            if SITES:
                for c in grid.cluster_names():
                    grid.localgrid("net", c, "heal")
                    grid.localgrid("net", c, "delay", "40ms", "loss", "1%")
            secs = getattr(case, "seconds", None)
            if SITES:
                extra = []
                if getattr(case, "partitioned", None) is not None:
                    extra.append("partition %.0f s" % case.partitioned)
                if getattr(case, "outlast", None) is not None:
                    extra.append("healed %.0f s after the planned start" % case.outlast)
                spread = (fc.get(case.coid)[1] or {}).get("start_spread") \
                    if getattr(case, "coid", None) else None
                if spread is not None:
                    extra.append("start spread %d s" % spread)
                case.extra = ", ".join(extra)
            t.ok(why is None, "%s at '%s' (%s, %s): consistent after %s" % (
                fault, step, ops[step], getattr(case, "target", "?"),
                "%.1f s" % secs if secs is not None else "-"), why)
            results.append((step, ops[step], fault, why is None, secs,
                            time.monotonic() - t0, why, getattr(case, "extra", "")))
            t.ok(cleanup(grid, fc), "after %s at '%s': the grid is cleaned for the next case"
                 % (fault, step))
        fc.no_illegal_transitions()
        for p in proxies.values():
            p.close()
    lines = ["| step | operation | fault | result | quiescence s | case s |"
             + (" notes |" if SITES else ""),
             "|---|---|---|---|---|---|" + ("---|" if SITES else "")]
    for step, op, fault, good, secs, total, why, extra in results:
        lines.append("| %s | %s | %s | %s | %s | %.0f |" % (
            step, op, fault, "pass" if good else "FAIL: " + why.replace("|", "/")[:200],
            "%.1f" % secs if secs is not None else "-", total)
            + (" %s |" % extra if SITES else ""))
    for line in lines:
        t.note(line)
    path = os.environ.get("FLEXCO_FAULT_TABLE")
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    t.run_main(main)
