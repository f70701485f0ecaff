#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""GET /v1/events on a real cluster: jobs that end before their time limit
(exit 0, cancel, failure and requeue, all through prep/flexco's epilog
hook, which slurmctld calls for every job that ends),
no event for a job that ran into its limit or had none, reservations that
start, end or are deleted, long polls that wake at once and time out on
time without holding the service's threads, strictly increasing sequence
numbers, a client that fell behind a small buffer told so, numbering that
continues above every number handed out across a clean and an unclean
(SIGKILL) restart of slurmctld, strict parameters and the stats."""

import json
import os
import signal
import subprocess
import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

CLUSTER = "alpha"
NODES = 4


def epoch(stamp):
    """scontrol's local time 2026-11-22T07:37:25 as epoch seconds."""
    return int(time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")))


class Feed:
    """Reads the event stream like a client would: after=next, page by
    page, keeping every event in order."""

    def __init__(self, client):
        self.client = client
        self.after = 0
        self.events = []
        self.last = None

    def get(self, query):
        return self.client.get("/v1/events?" + query)

    def pull(self):
        new = []
        while True:
            r = self.get("after=%d&max=1000" % self.after)
            if r.status != 200 or not isinstance(r.json, dict):
                raise t.GridError("GET /v1/events: %s %r" % (r.status, r.raw[:300]))
            self.last = r.json
            new += r.json["events"]
            self.after = r.json["next"]
            if not r.json["events"]:
                break
        self.events += new
        return new

    def find(self, pred):
        return next((e for e in self.events if pred(e)), None)

    def wait(self, pred, timeout, what):
        def check():
            self.pull()
            return self.find(pred)
        return t.wait_for(check, timeout, what, interval=0.5)


def job_event(job_id):
    return lambda e: e["type"] == "job_ended_early" and e["job_id"] == int(job_id)


def resv_event(kind, name):
    return lambda e: e["type"] == "reservation_" + kind and e.get("reservation") == name


def check_job_event(grid, ev, jobid, state, detected_by, name):
    job = grid.job(CLUSTER, jobid)
    ok = bool(ev) and bool(job)
    if ok:
        start, end = epoch(job["StartTime"]), epoch(job["EndTime"])
        ok = (ev["start"] == start and ev["planned_end"] == start + 600
              and ev["actual_end"] == end
              and ev["seconds_early"] == ev["planned_end"] - ev["actual_end"] > 0
              and ev["nodes"] == job["NodeList"] and ev["node_count"] == 1
              and ev["partition"] == "batch" and ev["user_id"] == 0
              and ev["state"] == state and ev["detected_by"] == detected_by
              and ev["time"] >= ev["actual_end"])
    t.ok(ok, name, "event %r\njob %r" % (ev, {k: job.get(k) for k in (
        "JobState", "StartTime", "EndTime", "NodeList", "TimeLimit")}))


def long_poll(client, query, out, key):
    t0 = time.monotonic()
    try:
        r = client.get("/v1/events?" + query)
        out[key] = (time.monotonic() - t0, time.time(), r)
    except Exception as e:  # reported by the caller
        out[key] = (time.monotonic() - t0, time.time(), e)


def resv_info(grid, name):
    return grid.show(CLUSTER, "reservation", name)


class Killer:
    """Kills a slurmctld with SIGKILL and starts it again exactly as it ran
    (argv, environment with localgrid's mark, cwd, output file), the way
    Grid.restart_slurmctld does after a SIGTERM.  The test stops what it
    started, by pid."""

    def __init__(self):
        self.proc = None

    def kill_and_restart(self, pid):
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        env = t.proc_environ(pid)
        cwd = t.proc_cwd(pid) or "/"
        out_path = os.readlink(f"/proc/{pid}/fd/1")
        os.kill(pid, signal.SIGKILL)
        if not t.wait_for(lambda: not t.pid_alive(pid), 30,
                          "slurmctld %d to die" % pid):
            return None
        with open(out_path, "ab") as out:
            self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        return self.proc.pid

    def stop(self, timeout=60):
        """SIGTERM to the slurmctld this test started; True once it exited."""
        if not self.proc or self.proc.poll() is not None:
            return True
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return False


def settle_after_kill(grid, seen):
    """After slurmctld's SIGKILL restart, wait until its nodes are usable.

    slurmctld saves its job state at most every 5 s, so a SIGKILL loses
    the ends of jobs that finished in the last seconds: it comes back
    believing them RUNNING on nodes whose slurmd already ran them (CI saw
    four array tasks hold all four exclusive nodes, and the marker wait).
    It only notices a batch job missing when a node registers more than
    BatchStartTimeout + MessageTimeout (20 s) after the job's start; it
    asks every node to register once after the restart (too early for
    those jobs) and then only about every 20 pings (400 s here), so they
    would hold the nodes until their 10-minute limit.  Their ends are in
    the feed (same job id and start): cancel exactly those runs, which
    frees the nodes at once (slurmd answers the kill for a job it no
    longer has).  A node marked DOWN over the restart is resumed: it is
    a real, responding slurmd, only the controller's view went stale.
    Returns the job ids cancelled, or None if the nodes never settled."""
    ended = {(e["job_id"], e["start"]) for e in seen
             if e["type"] == "job_ended_early"}
    cancelled = []

    def nodes():
        r = grid.run(CLUSTER, ["scontrol", "show", "node", "-o"])
        out = {}
        for line in r.stdout.splitlines():
            f = dict(w.partition("=")[::2] for w in line.split() if "=" in w)
            if f.get("NodeName"):
                out[f["NodeName"]] = f
        return out

    def registered():
        ns = nodes()
        for name, f in ns.items():
            state = f.get("State", "")
            if "DOWN" in state and "NOT_RESPONDING" not in state:
                grid.run(CLUSTER, ["scontrol", "update", "nodename=" + name,
                                   "state=resume"])
        # Registered with this slurmctld: it knows the slurmd's start
        # time again, and the node neither unknown nor unresponsive.
        return len(ns) == NODES and all(
            f.get("SlurmdStartTime", "None") != "None"
            and not any(s in f.get("State", "") for s in
                        ("UNKNOWN", "DOWN", "NOT_RESPONDING", "DRAIN"))
            for f in ns.values())
    if not t.wait_for(registered, 60, "the nodes to register after SIGKILL"):
        return None

    def running():
        # %A is the job's own id (what the feed reports), %i the name
        # scancel needs: for an array task "8_3", since a plain "11"
        # names the array whose job id is 11, not the task with id 11
        # (CI saw scancel 11 refused as an invalid job id for task 8_3)
        r = grid.run(CLUSTER, ["squeue", "-h", "-t", "RUNNING,COMPLETING",
                               "-o", "%A %i %S"])
        return [(int(j), name, epoch(s)) for j, name, s in
                (line.split() for line in r.stdout.splitlines())]
    for jid, name, start in running():
        if (jid, start) in ended:
            r = grid.run(CLUSTER, ["scancel", name])
            if r.returncode != 0:
                print("# scancel %s (job %d): %s" % (name, jid, r.stderr.strip()),
                      flush=True)
            cancelled.append(jid)
    if cancelled:
        print("# slurmctld lost the end of job(s) %s in the SIGKILL; "
              "cancelled them" % cancelled, flush=True)
    if not t.wait_for(lambda: not [j for j in running()
                                   if j[0] in cancelled],
                      60, "the stale jobs to leave their nodes"):
        return None
    return cancelled


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(
            grid.status()), 30, "the plugin to listen")
        t.ok(st, "the plugin listens")
        st = st or grid.status()
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        client = plugin_client(cl, sock, timeout=120)
        feed = Feed(client)
        killer = Killer()
        try:
            run(grid, cl, client, feed, killer)
        finally:
            killer.stop()


def run(grid, cl, client, feed, killer):
    # -- a fresh cluster: nothing to report ------------------------------
    r = feed.get("")
    t.ok(r.status == 200 and r.json == {"events": [], "next": 0, "oldest": 0,
                                        "latest": 0, "lost": False},
         "fresh cluster: no events, latest 0, nothing lost",
         "%s %r" % (r.status, r.raw[:300]))

    # Jobs that must NOT be reported: one runs into its 1-minute limit
    # (checked at the end), one has no time limit at all.
    timeout_job = grid.submit(CLUSTER, ["-t", "1", "-o", "/dev/null",
                                        "--wrap", "sleep 600"])
    nolimit_job = grid.submit(CLUSTER, ["-o", "/dev/null", "--wrap", "sleep 1"])

    # -- long poll timing out ------------------------------------------
    latest = feed.get("").json["latest"]
    t0 = time.monotonic()
    r = feed.get("after=%d&wait=2" % latest)
    took = time.monotonic() - t0
    t.ok(r.status == 200 and r.json["events"] == [] and r.json["next"] == latest
         and not r.json["lost"] and 1.8 <= took < 10,
         "a long poll with nothing to report returns empty after its wait "
         "(%.1fs for wait=2)" % took, "%s %r" % (r.status, r.raw[:300]))

    # -- long polls woken by an early job end (6 waiters > 4 pool threads)
    feed.pull()
    base = feed.after
    out = {}
    threads = [threading.Thread(target=long_poll, args=(
        client, "after=%d&wait=50" % base, out, i)) for i in range(6)]
    for th in threads:
        th.start()

    def parked():
        r = client.get("/v1/stats")
        return r.status == 200 and r.json["long_polls"]["waiting"] >= 6 and r.json
    doc = t.wait_for(parked, 20, "six long polls to be parked")
    t0 = time.monotonic()
    r = client.get("/v1/stats")
    took = time.monotonic() - t0
    t.ok(doc and r.status == 200 and took < 5,
         "six parked long polls hold none of the service's 4 threads: "
         "stats answered in %.2fs" % took,
         "%r" % (doc and doc.get("long_polls")))
    jobid = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--wrap", "sleep 1"])
    for th in threads:
        th.join(70)
    results = [out.get(i) for i in range(6)]
    good = [x for x in results if x and not isinstance(x[2], Exception)
            and x[2].status == 200 and x[2].json["events"]]
    evs = [x[2].json["events"] for x in good]
    first = evs[0][0] if evs and evs[0] else {}
    t.ok(len(good) == 6 and all(e and e[0] == first for e in evs)
         and first.get("type") == "job_ended_early"
         and first.get("job_id") == int(jobid),
         "all six long polls return the job's event",
         "%r" % [(x[0], x[2].status if x and hasattr(x[2], "status") else x)
                 for x in results if x])
    lag = max((x[1] - first.get("time", 0) for x in good), default=99)
    waited = max((x[0] for x in good), default=99)
    t.ok(good and waited < 40 and lag <= 2,
         "long polls return as soon as the event is published (after %.1fs "
         "of a 50s wait, at most %.1fs after the event's time)" % (waited, lag))

    ev = feed.wait(job_event(jobid), 30, "job %s's event" % jobid)
    grid.wait_job(CLUSTER, jobid)
    check_job_event(grid, ev, jobid, "COMPLETED", "epilog",
                    "exit 0 after 1s of a 10-minute limit: job_ended_early "
                    "from the epilog hook with the job's nodes, start, "
                    "planned end = start+600, actual end, seconds early")

    # -- cancel, failure and requeue come from the same hook ----------------
    jobid = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--wrap", "sleep 300"])
    job = grid.wait_job(CLUSTER, jobid, states=("RUNNING",))
    t.ok(job.get("JobState") == "RUNNING", "a 10-minute job runs")
    grid.run(CLUSTER, ["scancel", jobid])
    ev = feed.wait(job_event(jobid), 30, "cancelled job %s's event" % jobid)
    grid.wait_job(CLUSTER, jobid, states=("CANCELLED",))
    check_job_event(grid, ev, jobid, "CANCELLED", "epilog",
                    "scancel of a running job: job_ended_early (epilog hook)")

    jobid = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--wrap", "exit 3"])
    ev = feed.wait(job_event(jobid), 30, "failed job %s's event" % jobid)
    grid.wait_job(CLUSTER, jobid, states=("FAILED",))
    check_job_event(grid, ev, jobid, "FAILED", "epilog",
                    "a job exiting 3: job_ended_early with state FAILED")

    jobid = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--requeue",
                                  "--wrap", "sleep 300"])
    job = grid.wait_job(CLUSTER, jobid, states=("RUNNING",))
    first_start = epoch(job.get("StartTime", "")) if job else None
    r = grid.run(CLUSTER, ["scontrol", "requeue", jobid])
    t.ok(r.returncode == 0, "scontrol requeue of running job %s" % jobid,
         r.stdout + r.stderr)
    ev = feed.wait(job_event(jobid), 30, "requeued job %s's event" % jobid)
    t.ok(ev and ev["start"] == first_start and ev["detected_by"] == "epilog"
         and ev["planned_end"] == first_start + 600
         and ev["actual_end"] < ev["planned_end"],
         "a requeued job: job_ended_early for the run that ended, from the "
         "epilog hook", "event %r, first start %r" % (ev, first_start))
    grid.run(CLUSTER, ["scancel", jobid])

    # -- reservations --------------------------------------------------
    r = grid.run(CLUSTER, ["scontrol", "create", "reservation",
                           "ReservationName=ev_a", "StartTime=now+4",
                           "Duration=10", "NodeCnt=1", "Users=root"])
    t.ok(r.returncode == 0, "scontrol create reservation ev_a starting in 4s",
         r.stdout + r.stderr)
    info = resv_info(grid, "ev_a")
    ev = feed.wait(resv_event("activated", "ev_a"), 30, "ev_a to activate")
    t.ok(ev and info and ev["start"] == epoch(info["StartTime"])
         and ev["end"] == epoch(info["EndTime"]) and ev["end"] - ev["start"] == 600
         and ev["nodes"] == info["Nodes"] and ev["node_count"] == 1
         and ev["start"] <= ev["time"] <= ev["start"] + 3,
         "reservation_activated when its start passes, with its start, end "
         "and nodes", "event %r\nscontrol %r" % (ev, info))
    grid.run(CLUSTER, ["scontrol", "delete", "reservation=ev_a"])
    ev = feed.wait(resv_event("deleted", "ev_a"), 30, "ev_a's deletion")
    t.ok(ev and ev["end"] > ev["time"], "scontrol delete: reservation_deleted "
         "(before its end)", "%r" % ev)

    grid.run(CLUSTER, ["scontrol", "create", "reservation", "ReservationName=ev_b",
                       "StartTime=now+2", "EndTime=now+6", "NodeCnt=1", "Users=root"])
    grid.run(CLUSTER, ["scontrol", "create", "reservation", "ReservationName=ev_c",
                       "StartTime=now+1hour", "Duration=10", "NodeCnt=1",
                       "Users=root"])
    ev = feed.wait(resv_event("ended", "ev_b"), 30, "ev_b to end")
    act = feed.find(resv_event("activated", "ev_b"))
    t.ok(ev and act and act["seq"] < ev["seq"] and ev["time"] >= ev["end"]
         and ev["end"] - ev["start"] == 4,
         "a 4-second reservation: reservation_activated, then "
         "reservation_ended at its end", "%r\n%r" % (act, ev))
    grid.run(CLUSTER, ["scontrol", "delete", "reservation=ev_c"])
    ev = feed.wait(resv_event("deleted", "ev_c"), 30, "ev_c's deletion")
    t.ok(ev and not feed.find(resv_event("activated", "ev_c")),
         "a reservation deleted before its start: only reservation_deleted")

    # -- jobs without an early end ---------------------------------------
    job = grid.wait_job(CLUSTER, timeout_job, states=("TIMEOUT",), timeout=150)
    t.ok(job.get("JobState") == "TIMEOUT", "a job runs into its 1-minute limit",
         "%r" % job.get("JobState"))
    nolimit = grid.wait_job(CLUSTER, nolimit_job)
    # A later event proves the poller has looked at both since they ended.
    marker = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--wrap", "true"])
    feed.wait(job_event(marker), 30, "marker job %s's event" % marker)
    t.ok(job.get("JobState") == "TIMEOUT" and not feed.find(job_event(timeout_job)),
         "no event for the job that ran into its limit")
    t.ok(nolimit.get("JobState") == "COMPLETED" and nolimit.get("TimeLimit") == "UNLIMITED"
         and not feed.find(job_event(nolimit_job)),
         "no event for a job without a time limit",
         "%r" % {k: nolimit.get(k) for k in ("JobState", "TimeLimit")})
    jobs = [e for e in feed.events if e["type"] == "job_ended_early"]
    t.ok(jobs and all(e["seconds_early"] == e["planned_end"] - e["actual_end"] > 0
                      for e in jobs),
         "every job event has actual end < planned end (%d events)" % len(jobs))

    seqs = [e["seq"] for e in feed.events]
    t.ok(len(seqs) >= 9 and all(a < b for a, b in zip(seqs, seqs[1:])),
         "sequence numbers strictly increase (%d events, %s..%s)"
         % (len(seqs), seqs[:1], seqs[-1:]), "%r" % seqs)
    r = feed.get("after=%d&max=2" % (seqs[0] - 1))
    t.ok(r.status == 200 and [e["seq"] for e in r.json["events"]] == seqs[:2]
         and r.json["next"] == seqs[1] and r.json["oldest"] == seqs[0]
         and r.json["latest"] == seqs[-1] and r.json["lost"] is False,
         "max=2 pages: two events, next is the last one's seq",
         "%r" % r.json)
    t0 = time.monotonic()
    r = feed.get("after=%d&wait=30" % (seqs[-1] + 1000))
    took = time.monotonic() - t0
    t.ok(r.status == 200 and r.json["events"] == [] and r.json["lost"] is True
         and r.json["next"] == seqs[-1] and took < 5,
         "an 'after' never handed out: answered at once with lost=true and "
         "next=latest")

    # -- strict parameters -----------------------------------------------
    bad = ["after=abc", "after=-1", "after=1.5", "after=", "after",
           "after=99999999999999999999", "after=9223372036854775808",
           "after=%201", "wait=61", "wait=-1", "wait=x", "wait=1e3", "wait",
           "max=0", "max=1001", "max=", "bogus=1", "after=1&after=2",
           "wait=1&wait=1"]
    results = [(q, feed.get(q)) for q in bad]
    wrong = [(q, r.status, r.raw[:120]) for q, r in results
             if r.status != 400 or not r.is_json_error()
             or r.error_code() != "bad_parameter"]
    t.ok(not wrong, "%d malformed queries get 400 bad_parameter JSON errors"
         % len(bad), "%r" % wrong)
    r = client.request("POST", "/v1/events", body=b"{}")
    t.ok(r.status == 405 and r.is_json_error() and r.headers.get("Allow") == "GET",
         "POST /v1/events: 405 with Allow: GET", "%s %r" % (r.status, r.raw[:200]))
    r = client.get("/v1/events", auth=None)
    t.ok(r.status == 401 and r.error_code() == "missing_credential",
         "unsigned GET /v1/events: 401")

    # A long poll whose client gave up (timed out above) is still counted as
    # waiting until its own wait ends on the server; await that, then read.
    def polls_done():
        d = client.get("/v1/stats").json or {}
        return d.get("long_polls", {}).get("waiting") == 0
    t.wait_for(polls_done, 60, "the server's long polls to end")
    r = client.get("/v1/stats")
    doc = r.json or {}
    ep = {e["endpoint"]: e for e in doc.get("requests", [])}.get("events", {})
    codes = ep.get("status", {})
    evst = doc.get("events", {})
    t.ok(r.status == 200 and codes.get("200", 0) >= 20
         and codes.get("400", 0) >= len(bad) and codes.get("405", 0) >= 1
         and codes.get("401", 0) >= 1 and evst.get("latest") == seqs[-1]
         and evst.get("published") == len(seqs) and evst.get("epilog_calls", 0) >= 6
         and doc.get("long_polls", {}).get("total", 0) >= 7
         and doc["long_polls"].get("waiting") == 0,
         "stats count the events endpoint by status, the events and the long "
         "polls", "%r\n%r\n%r" % (codes, evst, doc.get("long_polls")))
    t.note("events stats: %r" % evst)

    # -- clean restart with a smaller buffer --------------------------------
    feed.pull()
    pre = feed.events[-1]["seq"]
    state_dir = os.path.join(os.path.dirname(cl["slurm_conf"]), "state")
    saved = {}

    def while_down():
        try:
            with open(os.path.join(state_dir, "flexco_events.state")) as f:
                saved.update(json.load(f))
        except (OSError, ValueError) as e:
            saved["error"] = str(e)
        with open(os.path.join(os.path.dirname(cl["slurm_conf"]),
                               "flexco.conf"), "a") as f:
            f.write("EventBufferSize=8\n")
    pid = grid.restart_slurmctld(CLUSTER, while_down=while_down)
    t.ok(pid, "slurmctld stopped with SIGTERM and started again (pid %s)" % pid)
    t.ok(saved.get("clean") is True and saved.get("latest") == pre
         and [e["seq"] for e in saved.get("events", [])] == seqs
         and saved.get("reserved", 0) >= pre,
         "fini saved the state: clean, latest %d, every event" % pre,
         "%r" % {k: v for k, v in saved.items() if k != "events"})

    def answers():
        try:
            r = client.get("/v1/events?after=%d" % pre)
            return r.status == 200 and r.json
        except OSError:
            return False
    doc = t.wait_for(answers, 60, "the restarted plugin to answer")
    t.ok(doc and doc["events"] == [] and doc["lost"] is False
         and doc["latest"] == pre and doc["next"] == pre,
         "after a clean restart: latest is still %d, nothing lost after it" % pre,
         "%r" % doc)
    cfg = grid.plugin_settings(CLUSTER) or {}
    t.ok(cfg.get("EventBufferSize") == "8",
         "slurmctld's log shows EventBufferSize=8 in effect", "%r" % cfg)
    r = feed.get("after=0&max=1000")
    t.ok(r.status == 200 and r.json["lost"] is True
         and [e["seq"] for e in r.json["events"]] == seqs[-8:]
         and r.json["oldest"] == seqs[-8],
         "the buffer shrank to 8 at restart: the newest 8 kept, after=0 is "
         "told lost", "%r" % {k: v for k, v in (r.json or {}).items() if k != "events"})

    grid.submit(CLUSTER, ["--array=1-10", "-t", "10", "-o", "/dev/null",
                          "--wrap", "true"])

    def published(n):
        r = client.get("/v1/stats")
        return r.status == 200 and r.json["events"]["published"] >= n
    t.ok(t.wait_for(lambda: published(10), 120, "ten events from the job array"),
         "a job array of ten tasks ending early: ten events")
    r = feed.get("after=%d&max=1000" % pre)
    doc = r.json or {}
    new = [e["seq"] for e in doc.get("events", [])]
    t.ok(r.status == 200 and doc["lost"] is True and len(new) == 8
         and all(s > pre for s in new) and doc["oldest"] == new[0]
         and doc["latest"] == new[-1] and doc["next"] == new[-1],
         "a client that fell behind the 8-event buffer (after=%d) gets the "
         "newest 8 and lost=true" % pre,
         "%r" % {k: v for k, v in doc.items() if k != "events"})
    r = feed.get("after=%d&max=1000" % (doc.get("oldest", 1) - 1))
    t.ok(r.status == 200 and r.json["lost"] is False and len(r.json["events"]) == 8,
         "asking from just before the oldest retained event: not lost")
    mark = len(feed.events)
    feed.pull()

    # -- unclean restart: SIGKILL right after an event ----------------------
    marker = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--wrap", "true"])
    ev = feed.wait(job_event(marker), 60, "marker job %s's event" % marker)
    before_kill = max(e["seq"] for e in feed.events)
    t.ok(ev and ev["seq"] == before_kill and len(feed.events) - mark == 9
         and all(e["seq"] > pre for e in feed.events[mark:]),
         "after the clean restart every event is numbered above %d (%s..%s)"
         % (pre, feed.events[mark]["seq"] if len(feed.events) > mark else None,
            before_kill))
    t.ok(killer.kill_and_restart(pid), "slurmctld killed with SIGKILL and "
         "started again")
    doc = t.wait_for(answers, 60, "the plugin to answer after SIGKILL")
    t.ok(doc and doc["latest"] >= before_kill
         and client.get("/v1/events?after=%d" % before_kill).json["lost"] is True,
         "after an unclean stop, numbers possibly handed out are skipped and "
         "reported lost", "%r" % doc)
    feed.after = doc["latest"] if doc else 0
    stale = settle_after_kill(grid, feed.events)
    t.ok(stale is not None, "after SIGKILL the nodes registered again and no "
         "job that ended before the kill holds one (%s such jobs cancelled)"
         % (len(stale) if stale is not None else "?"))
    # slurmctld may hand out the last job id again: it lost its own last
    # save too.  The plugin tells the two runs apart by their start, and the
    # marker is told apart from an earlier run of the same id by seq.
    marker = grid.submit(CLUSTER, ["-t", "10", "-o", "/dev/null", "--wrap", "true"])
    ev = feed.wait(lambda e: job_event(marker)(e) and e["seq"] > before_kill,
                   90, "marker job %s's event" % marker)
    t.ok(ev and ev["seq"] > before_kill,
         "after SIGKILL and restart, new numbers are above every number "
         "handed out before (%s > %d)" % (ev and ev["seq"], before_kill))
    seqs = [e["seq"] for e in feed.events]
    t.ok(all(a < b for a, b in zip(seqs, seqs[1:])),
         "the whole stream, across both restarts, strictly increases "
         "(%d events)" % len(seqs))
    p = grid.run(CLUSTER, ["scontrol", "ping"])
    t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is up at the end")
    t.ok(killer.stop(), "the slurmctld this test started stops on SIGTERM")


if __name__ == "__main__":
    t.run_main(main)
