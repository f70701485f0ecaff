#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Two flexcods on one PostgreSQL, one in charge (doc/flexcod.md, "High
availability"): `localgrid start --flexcod 2 --storage postgresql` on two
2-node clusters, the flexcods of `make check` (flexcod-testhooks: the
fault matrix's hold points, and FLEXCOD_TEST_IGNORE_LEASE, with which a
deposed flexcod goes on as if it still held its lease, the worst case).

 1. The standby answers reads, names the one in charge, refuses writes
    (503 not_in_charge with its address); localgrid status names it.
 2. kill -9 of the one in charge with nobody in charge yet: a submission
    by sreserve, given both addresses, is sent on with its
    Idempotency-Key until the standby took over, made once, and runs.
 3. kill -9 of the one in charge mid-commit (its parts reserved and
    confirmed, the hold point "confirmed"), the submission's sreserve
    retrying: the one that takes over rolls the commit back as a restart
    would, and the retry gets that same co-allocation (one made).
 4. SIGSTOP of the one in charge mid-commit ("reserving": written, not
    yet sent) past its lease; the other takes over, speaks to both
    clusters and rolls it back; then SIGCONT: the deposed one's requests
    are refused by the plugins (409 stale_epoch) and its writes by the
    database; nothing changes on the clusters nor in the database.
 5. The standby killed while a co-allocation runs: nothing changes; then
    both killed and started again: one takes over, recovers, and the
    co-allocation completes, each part job having run once.
 6. PostgreSQL stopped under a running co-allocation: both flexcods stop
    (fail-stop); a submission made meanwhile waits in sreserve; once it
    and they are started again, one takes over and both co-allocations
    complete.
Everywhere: every co-allocation ends exactly once, nothing is left on the
clusters, no part job ran twice nor alone beyond PartStartSkew, no illegal
state change.  The takeover
times (instance killed or stopped -> first write accepted by the other)
are printed as notes."""

import json
import os
import re
import signal
import subprocess
import threading
import time

import flexcotest as t
from flexcodtest import HOLD_ENV, Hold, nothing_left
from flexcohttp import FLEXCOD, Client, plugin_client

NODES = [2, 2]
DRY = {"nodes": 1, "duration": 60, "dry_run": True}


class Fcd:
    """One of the grid's flexcods, by its `localgrid status` record; kill
    and start it again by pid as systemd would (same argv, environment
    updated, cwd, output)."""

    def __init__(self, grid, inst, sock):
        self.grid, self.sock = grid, sock
        self.url, self.conf, self.log = inst["url"], inst["conf"], inst["log_file"]
        self.pid = inst["pid"]
        with open("/proc/%d/cmdline" % self.pid, "rb") as f:
            self.argv = [a.decode() for a in f.read().split(b"\0") if a]
        self.env = t.proc_environ(self.pid)
        self.cwd = t.proc_cwd(self.pid) or "/"
        self.out = os.readlink("/proc/%d/fd/1" % self.pid)

    def client(self, timeout=30):
        return Client(self.url, self.sock, FLEXCOD, timeout=timeout)

    def stats(self):
        try:
            r = self.client(10).get("/v1/stats")
            return r.json if r.status == 200 else None
        except OSError:
            return None

    def in_charge(self):
        return ((self.stats() or {}).get("lease") or {}).get("in_charge") is True

    def kill(self, sig=signal.SIGKILL):
        os.kill(self.pid, sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            pid = self.pid
            t.wait_for(lambda: not t.pid_alive(pid), 30, "flexcod %d to exit" % pid)

    def launch(self, env=None):
        e = dict(self.env)
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        out = open(self.out, "ab")
        proc = subprocess.Popen(self.argv, env=e, cwd=self.cwd, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        out.close()
        self.grid._restarted = getattr(self.grid, "_restarted", []) + [proc]
        self.pid = proc.pid
        if not t.wait_for(lambda: self.stats() is not None, 30, "flexcod %s to answer" % self.url):
            raise t.GridError("flexcod %s does not answer" % self.url)

    def log_text(self):
        return t.read_file(self.log)


class PgProcess:
    """The grid's PostgreSQL (localgrid --storage postgresql): stopped by
    pid (a fast shutdown) and started again exactly as localgrid did."""

    def __init__(self, grid):
        with open(os.path.join(grid.run_dir, "state.json")) as f:
            rec = [r for r in json.load(f)["processes"] if r["role"] == "postgres"][-1]
        self.grid, self.pid = grid, rec["pid"]
        self.argv, self.env = rec["argv"], t.proc_environ(self.pid)
        self.cwd = t.proc_cwd(self.pid) or "/"
        st = os.stat("/proc/%d" % self.pid)
        self.uid, self.gid = st.st_uid, st.st_gid
        self.log = rec["log"]
        self.sock_dir = self.argv[self.argv.index("-k") + 1]

    def stop(self):
        os.kill(self.pid, signal.SIGINT)
        t.wait_for(lambda: not t.pid_alive(self.pid), 60, "postgres to stop")

    def start(self):
        def owner():
            os.setgid(self.gid)
            os.setuid(self.uid)
        out = open(self.log, "ab")
        proc = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=owner)
        out.close()
        self.grid._restarted = getattr(self.grid, "_restarted", []) + [proc]
        self.pid = proc.pid
        isready = os.path.join(os.path.dirname(self.argv[0]), "pg_isready")
        if not t.wait_for(lambda: subprocess.call([isready, "-q", "-h", self.sock_dir, "-U", "flexco"],
                                                  stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL) == 0,
                          60, "postgres to answer again"):
            raise t.GridError("postgres does not answer after its restart")


def sreserve(conf, urls, *argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLEXCO_URL", "FLEXCOD_CONF"))}
    env.update({"FLEXCOD_CONF": conf, "FLEXCO_URL": ",".join(urls), "TZ": "UTC"})
    return subprocess.Popen([os.path.join(t.builddir(), "src", "sreserve", "sreserve"), "-v", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, stdin=subprocess.DEVNULL)


def takeover_time(new, t0, timeout=60):
    """Seconds from t0 (monotonic) until `new` accepts a write (a dry-run
    submission answered 200), or None."""
    c = new.client(10)

    def accepted():
        try:
            return c.request("POST", "/v1/coallocations", body=DRY).status == 200
        except OSError:
            return False
    if not t.wait_for(accepted, timeout, "%s to accept a write" % new.url, interval=0.1):
        return None
    return time.monotonic() - t0


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-ha-hold-")
    out_dir = t.scratch_dir("flexcod-ha-out-")
    os.chmod(out_dir, 0o777)
    env = {HOLD_ENV: hold_dir, "FLEXCOD_TEST_IGNORE_LEASE": "1"}
    takeovers = []
    with t.Grid(nodes=NODES, args=["--test-hooks", "--flexcod", "2", "--storage", "postgresql"]) as grid:
        st = grid.status()
        sock = st["munge_socket"]
        f = st["flexcod"]
        fcs = [Fcd(grid, i, sock) for i in f["instances"]]
        by_url = {x.url: x for x in fcs}

        # 1. the standby
        lead, stby = (fcs[0], fcs[1]) if f["in_charge"] == fcs[0].url else (fcs[1], fcs[0])
        t.ok(f["in_charge"] in by_url and f["lease"]["epoch"] >= 1 and f["storage"] == "postgresql",
             "localgrid status --json names the flexcod in charge", "%r" % f)
        s2 = stby.stats() or {}
        t.ok((s2.get("lease") or {}).get("in_charge") is False
             and s2["lease"].get("leader") == lead.url and lead.in_charge(),
             "the standby answers GET /v1/stats: not in charge, the leader's address", "%r" % s2)
        r = stby.client().request("POST", "/v1/coallocations", body=DRY)
        err = (r.json or {}).get("error") or {}
        t.ok(r.status == 503 and err.get("code") == "not_in_charge" and err.get("leader") == lead.url,
             "a write to the standby: 503 not_in_charge with the leader's address", "%r %r" % (r.status, r.json))

        # both with the hold points (the standby first, then the leader,
        # which makes the standby take over)
        stby.kill()
        stby.launch(env)
        grid_conf = lead.conf
        urls = [lead.url, stby.url]

        # 2. kill -9 with nobody in charge: sreserve follows, once
        t0 = time.monotonic()
        lead.kill()
        sub = sreserve(grid_conf, urls, "submit", "-N", "4", "-t", "1", "-o", "/dev/null", "--parsable",
                       "--wrap", "echo $SLURM_JOB_ID >> %s/runs.$FLEXCO_COALLOCATION.$FLEXCO_PART_INDEX; "
                                 "sleep 2" % out_dir)
        dt = takeover_time(stby, t0)
        takeovers.append(dt)
        lead, stby = stby, lead
        out, errs = sub.communicate(timeout=120)
        co_a = out.strip()
        t.ok(dt is not None and sub.returncode == 0 and co_a.isdigit(),
             "kill -9 of the one in charge: the standby takes over (%.1f s to the first write "
             "accepted) and sreserve's submission, sent on with its Idempotency-Key, is placed"
             % (dt or -1), "%r %r" % (out, errs[-600:]))
        t.ok("not in charge" in errs or "no flexcod in charge" in errs or "retrying" in errs,
             "sreserve was refused or not answered meanwhile and followed", errs[-400:])
        stby.launch(env)

        def final(fc, coid):
            d = fc.client().get("/v1/coallocations/%s" % coid).json or {}
            return d if d.get("state") in ("completed", "failed", "cancelled") else None
        d = t.wait_for(lambda: final(lead, co_a), 90, "co-%s to end" % co_a) or {}
        t.ok(d.get("state") == "completed", "that co-allocation completes under the new one", "%r" % d)

        # 3. kill -9 mid-commit: the retry gets the rolled-back one
        h = Hold(hold_dir, "confirmed")
        sub = sreserve(grid_conf, [stby.url, lead.url], "submit", "-N", "4", "-t", "1", "-o", "/dev/null",
                       "--parsable", "--wrap", "echo $SLURM_JOB_ID >> %s/runs.$FLEXCO_COALLOCATION."
                                               "$FLEXCO_PART_INDEX" % out_dir)
        reached = h.reached()
        t0 = time.monotonic()
        lead.kill()
        h.release()
        dt = takeover_time(stby, t0)
        takeovers.append(dt)
        lead, stby = stby, lead
        out, errs = sub.communicate(timeout=120)
        # sreserve's retry is answered with the co-allocation its first
        # request made, as the new one found it: rolled back
        m = re.search(r"error: co-allocation (\d+) failed: flexcod restarted during the commit", errs)
        co_b = m.group(1) if m else ""
        d = (t.wait_for(lambda: final(lead, co_b), 60, "co-%s to end" % co_b) or {}) if m else {}
        t.ok(reached and sub.returncode != 0 and m and d.get("state") == "failed"
             and "rolled back" in (d.get("reason") or "") and "retrying" in errs,
             "kill -9 at the commit's step 'confirmed': the one that takes over rolls it back, and "
             "sreserve's retry (same Idempotency-Key) gets that co-allocation, failed",
             "%r %r %r" % (out, errs[-300:], d))
        stby.launch(env)

        # 4. SIGSTOP past the lease, SIGCONT after the takeover
        h = Hold(hold_dir, "reserving")
        answer = {}

        def submit():
            try:
                r = lead.client(120).request("POST", "/v1/coallocations", body={
                    "nodes": 4, "duration": 60, "std_out": "/dev/null",
                    "script": "#!/bin/sh\necho $SLURM_JOB_ID >> %s/runs.$FLEXCO_COALLOCATION."
                              "$FLEXCO_PART_INDEX\n" % out_dir})
                answer["status"], answer["doc"] = r.status, r.json
            except OSError as e:
                answer["error"] = str(e)
        th = threading.Thread(target=submit)
        th.start()
        reached = h.reached()
        old = lead
        epoch_before = ((lead.stats() or {}).get("lease") or {}).get("epoch", 0)
        t0 = time.monotonic()
        os.kill(old.pid, signal.SIGSTOP)
        try:
            dt = takeover_time(stby, t0)
            takeovers.append(dt)
            lead, stby = stby, old
            ls = (lead.stats() or {}).get("lease") or {}
            clusters = {c["name"]: c for c in grid.status()["clusters"]}
            pcs = {n: plugin_client(c, sock) for n, c in clusters.items()}

            def plugin_epochs():
                got = {}
                for n, c in pcs.items():
                    grids = (((c.get("/v1/stats").json or {}).get("reservations") or {})
                             .get("epochs") or {}).get("grids") or {}
                    got[n] = max(grids.values()) if grids else 0
                return got if all(v == ls.get("epoch") for v in got.values()) else None
            seen = t.wait_for(plugin_epochs, 30, "both plugins to see the new epoch")
            cos = lead.client().get("/v1/coallocations?limit=100").json.get("coallocations", [])
            co_c = max(c["id"] for c in cos)
            d = t.wait_for(lambda: final(lead, co_c), 60, "co-%s to be rolled back" % co_c) or {}
            t.ok(reached and dt is not None and ls.get("epoch") == epoch_before + 1 and seen
                 and d.get("state") == "failed",
                 "SIGSTOP of the one in charge past its lease: the other takes over (epoch %s, "
                 "%.1f s), both clusters see its epoch, the stopped commit is rolled back"
                 % (ls.get("epoch"), dt or -1), "%r %r %r" % (ls, seen, d))
            before = json.dumps(lead.client().get("/v1/coallocations/%s" % co_c).json, sort_keys=True)
            resv_before = t.wait_for(lambda: nothing_left(grid), 60, "the rolled-back reservations to go")
        finally:
            h.release()
            os.kill(old.pid, signal.SIGCONT)
        th.join(120)
        refused = t.wait_for(lambda: "refused a request as from a deposed flexcod" in old.log_text()
                             and "another flexcod took over, nothing written" in old.log_text(),
                             60, "the deposed flexcod to be refused by a plugin and the database")
        stale = sum(((((pcs[n].get("/v1/stats").json or {}).get("reservations") or {})
                      .get("epochs") or {}).get("refused_stale") or 0) for n in pcs)
        after = json.dumps(lead.client().get("/v1/coallocations/%s" % co_c).json, sort_keys=True)
        t.ok(refused and stale >= 1 and answer.get("status") != 201,
             "resumed, the deposed one's requests get 409 stale_epoch at the plugins (%d refused) "
             "and its writes are refused by the database" % stale,
             "%r %r %r" % (refused, stale, answer))
        t.ok(resv_before and nothing_left(grid) and after == before,
             "it changed nothing: no reservation or job on the clusters, the co-allocation as the "
             "one in charge left it", "%s\n%s" % (before[:300], after[:300]))
        old.kill()
        old.launch(env)

        # 5. the standby killed while a co-allocation runs, then both
        r = lead.client().request("POST", "/v1/coallocations", body={
            "nodes": 4, "duration": 120, "std_out": "/dev/null",
            "script": "#!/bin/sh\necho $SLURM_JOB_ID >> %s/runs.$FLEXCO_COALLOCATION."
                      "$FLEXCO_PART_INDEX\nsleep 12\n" % out_dir})
        co_d = (r.json or {}).get("id")

        def running():
            d = lead.client().get("/v1/coallocations/%s" % co_d).json or {}
            return d.get("state") == "running" and all(p.get("state") == "running" for p in d.get("parts", []))
        t.ok(r.status == 201 and t.wait_for(running, 60, "co-%s to run" % co_d),
             "a co-allocation runs", "%r %r" % (r.status, r.json))
        epoch = ((lead.stats() or {}).get("lease") or {}).get("epoch")
        stby.kill()
        ls = (lead.stats() or {}).get("lease") or {}
        t.ok(ls.get("in_charge") is True and ls.get("epoch") == epoch and running(),
             "the standby killed: the one in charge goes on, the co-allocation runs", "%r" % ls)
        stby.launch(env)
        lead.kill()
        stby.kill()
        lead.launch(env)
        stby.launch(env)
        back = t.wait_for(lambda: lead.in_charge() or stby.in_charge(), 60, "one of them in charge")
        if stby.in_charge():
            lead, stby = stby, lead
        d = t.wait_for(lambda: final(lead, co_d), 120, "co-%s to end" % co_d) or {}
        t.ok(back and d.get("state") == "completed"
             and all(p.get("state") == "completed" for p in d.get("parts", [])),
             "both killed and started again: one takes over, recovers, the co-allocation completes",
             "%r" % d)

        # a clean stop hands over at once; from here on both without
        # FLEXCOD_TEST_IGNORE_LEASE (a flexcod that loses its lease exits)
        plain = {HOLD_ENV: hold_dir, "FLEXCOD_TEST_IGNORE_LEASE": None}
        stby.kill()
        stby.launch(plain)
        t0 = time.monotonic()
        lead.kill(signal.SIGTERM)
        dt = takeover_time(stby, t0)
        gave = "lease: given back" in lead.log_text()
        lead, stby = stby, lead
        stby.launch(plain)
        t.ok(dt is not None and dt < 4 and gave,
             "SIGTERM of the one in charge gives the lease back: the other takes over in %.1f s, "
             "not after the lease's time" % (dt or -1), "%r %r" % (dt, gave))

        # 6. PostgreSQL restarted under a running co-allocation and a
        # submission: both flexcods stop (fail-stop), start again once it
        # is back (as systemd would), one takes over, both complete
        # (2 of the 4 nodes: the one submitted meanwhile, 2 nodes too, fits
        # beside it)
        r = lead.client().request("POST", "/v1/coallocations", body={
            "nodes": 2, "duration": 60, "std_out": "/dev/null",
            "script": "#!/bin/sh\necho $SLURM_JOB_ID >> %s/runs.$FLEXCO_COALLOCATION."
                      "$FLEXCO_PART_INDEX\nsleep 10\n" % out_dir})
        co_e = (r.json or {}).get("id")
        t.ok(r.status == 201 and t.wait_for(lambda: final(lead, co_e) is None and (
            lead.client().get("/v1/coallocations/%s" % co_e).json or {}).get("state") == "running",
            60, "co-%s to run" % co_e), "another co-allocation runs", "%r" % (r.json,))
        pg = PgProcess(grid)
        pg.stop()
        gone = t.wait_for(lambda: not t.pid_alive(lead.pid) and not t.pid_alive(stby.pid), 30,
                          "both flexcods to stop without their database")
        logs = lead.log_text() + stby.log_text()
        t.ok(gone and "fatal: " in logs and "the database does not answer" in logs,
             "PostgreSQL stopped: the one in charge and the standby both stop and say why",
             "%r" % [l for l in logs.splitlines() if "fatal" in l][-3:])
        sub = sreserve(grid_conf, urls, "submit", "-N", "2", "-t", "1", "-o", "/dev/null", "--parsable",
                       "--wrap", "echo $SLURM_JOB_ID >> %s/runs.$FLEXCO_COALLOCATION.$FLEXCO_PART_INDEX; "
                                 "sleep 2" % out_dir)
        pg.start()
        lead.launch(plain)
        stby.launch(plain)
        back = t.wait_for(lambda: lead.in_charge() or stby.in_charge(), 60, "one of them in charge")
        if stby.in_charge():
            lead, stby = stby, lead
        out, errs = sub.communicate(timeout=180)
        co_f = out.strip()
        de = t.wait_for(lambda: final(lead, co_e), 120, "co-%s to end" % co_e) or {}
        df = (t.wait_for(lambda: final(lead, co_f), 120, "co-%s to end" % co_f) or {}) if co_f.isdigit() else {}
        t.ok(back and de.get("state") == "completed" and df.get("state") == "completed",
             "PostgreSQL started again: one takes over, the running co-allocation and the one "
             "submitted meanwhile (made once) complete", "%r %r %r" % (de, df, errs[-300:]))

        # everywhere
        cos = lead.client().get("/v1/coallocations?limit=100").json.get("coallocations", [])
        ends = {}
        for c in cos:
            full = lead.client().get("/v1/coallocations/%s" % c["id"]).json or {}
            ends[c["id"]] = [x for x in full.get("transitions", full.get("history", []))
                             if x.get("what") == "coallocation"
                             and x.get("to") in ("completed", "failed", "cancelled")]
        t.ok(len(cos) == 6 and all(len(v) == 1 for v in ends.values()),
             "6 co-allocations made, one per submission, each ended exactly once",
             "%r" % {k: len(v) for k, v in ends.items()})
        runs = {}
        for name in os.listdir(out_dir):
            if name.startswith("runs."):
                runs[name] = t.read_file(os.path.join(out_dir, name)).split()
        want, spreads = [], {}
        for c in (co_a, co_d, co_e, co_f):
            doc = lead.client().get("/v1/coallocations/%s" % c).json or {}
            want += ["runs.co-%s.%d" % (c, p["index"]) for p in doc.get("parts", [])]
            spreads[c] = doc.get("start_spread")
        t.ok(all(v is not None and 0 <= v <= 60 for v in spreads.values()),
             "no part started alone beyond PartStartSkew (60 s): the completed ones' start spreads",
             "%r" % spreads)
        t.ok(sorted(runs) == sorted(want) and all(len(v) == 1 for v in runs.values()),
             "part jobs ran for the completed ones only, each once", "%r" % runs)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "the reservations to go"),
             "nothing is left on either cluster")
        bad = [l for x in fcs for l in x.log_text().splitlines() if "illegal state change" in l]
        t.ok(((lead.stats() or {}).get("illegal_transitions") == 0) and not bad,
             "no illegal state change (either flexcod's log)", "%r" % bad[:3])
        t.note("takeover times (killed or stopped -> first write accepted): %s"
               % ", ".join("%.2f s" % x for x in takeovers if x is not None))


if __name__ == "__main__":
    t.run_main(main)
