#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A cluster with a primary and a backup slurmctld (`localgrid start
--backup alpha`: two controller hosts in network and UTS namespaces of
their own, one StateSaveLocation), on a real grid with flexcod.

The backup starts before any reservation exists, so what it could have
read at its start is stale by the time it takes over.  (The test lets
slurmctld save its own state before it kills the primary: Slurm itself
loses jobs changed in the seconds before a crash.)  Checked:

- a takeover (SIGKILL of the primary) with a tentative and a confirmed
  reservation, a running and a pending part job and a running
  co-allocation deletes nothing and kills nothing: the backup's plugin
  loads the state when it takes charge and serves it, and several agent
  passes later every reservation and job is still there;
- the co-allocation submitted before the takeover completes after it
  (flexcod follows URL=ctl1,ctl2 to the controller in charge);
- event sequence numbers never go back or repeat across takeovers;
- the primary takes control back (localgrid restore: the backup in charge
  stops with SIGTERM, then the primary starts and the backup stands by
  again; doc/admin.md says why not REQUEST_CONTROL on 26.05.3) and its
  plugin serves what the backup changed meanwhile;
- a standby serves nothing (it does not listen), and its exit writes no
  state file: a reservation made after the hand-back is still in
  flexco_resv.json once the standby has stopped."""

import json
import os
import signal
import socket
import time

import flexcotest as t
from flexcodtest import Flexcod, script
from flexcohttp import Client

NODES = [4, 2]
STATE = "flexco_resv.json"


def refused(url):
    """Nothing listens at http://HOST:PORT."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return False
    except OSError:
        return True


def resv_states(c):
    """{id: state} of the reservations the plugin at c reports."""
    return {d["id"]: d["state"] for d in
            (c.get("/v1/reservations").json or {}).get("reservations", [])}


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES, args=["--backup", "alpha"]) as grid:
        st = grid.status()
        sock = st["munge_socket"]
        alpha = st["clusters"][0]
        ctls = alpha.get("controllers") or []
        t.ok(len(ctls) == 2 and ctls[0]["in_charge"] and not ctls[1]["in_charge"]
             and all(h["pid"] for h in ctls),
             "alpha runs two slurmctlds, alpha-ctl1 in charge, alpha-ctl2 standing by",
             json.dumps(ctls))
        urls = [h["plugin_url"] for h in ctls]
        t.ok(alpha["plugin_url"] == urls[0] and refused(urls[1]),
             "only the controller in charge serves FlexCo (the standby does not listen)",
             "%r" % alpha)
        conf = open(os.path.join(os.path.dirname(alpha["slurm_conf"]), "slurm.conf")).read()
        t.ok(conf.count("SlurmctldHost=alpha-ctl") == 2,
             "slurm.conf names both controller hosts", conf[:600])

        def plugin(url):
            return Client(url, sock, "alpha", timeout=30)

        c1 = plugin(urls[0])
        now = int(time.time())

        def make(start, nodes, confirm):
            r = c1.request("POST", "/v1/reservations",
                           body={"user": "root", "nodes": nodes, "start": start,
                                 "duration": 3 * 3600, "confirm_within": 3600})
            doc = r.json or {}
            if confirm and r.status == 201:
                c1.request("POST", "/v1/reservations/%s/confirm" % doc.get("id"))
            return r.status, doc

        made = [make(now + 5 * 3600, 1, False),   # tentative
                make(now, 1, True),                # confirmed, running job
                make(now + 2 * 3600, 1, True)]     # confirmed, pending job
        t.ok(all(s == 201 for s, _ in made), "three reservations made on alpha-ctl1",
             "%r" % made)
        ids = [d.get("id") for _, d in made]
        names = [d.get("name") for _, d in made]
        jobs = []
        for rid in ids[1:]:
            r = c1.request("POST", "/v1/reservations/%s/jobs" % rid,
                           body={"script": "#!/bin/sh\nsleep 3000\n",
                                 "work_dir": "/tmp", "std_out": "/dev/null"})
            jobs.append(str((r.json or {}).get("job_id")))
        run = grid.wait_job("alpha", jobs[0], states=("RUNNING",))
        t.ok(run.get("JobState") == "RUNNING" and
             grid.job("alpha", jobs[1]).get("JobState") == "PENDING",
             "a part job runs in %s, another waits for %s" % (names[1], names[2]),
             "%r" % jobs)

        # a co-allocation over both clusters, running when the takeover comes
        fc = Flexcod(grid)
        tmp = t.scratch_dir("takeover-")
        os.chmod(tmp, 0o777)
        submitted = time.time()
        s, co = fc.submit({"nodes": 4, "duration": 300, "name": "across",
                           "script": script(tmp, "sleep 25"), "std_out": "/dev/null"})
        coid = (co or {}).get("id")
        clusters = sorted({p["cluster"] for p in (co or {}).get("parts", [])})
        t.ok(s == 201 and clusters == ["alpha", "beta"],
             "a co-allocation of 4 nodes over alpha and beta", "%s %r" % (s, co))
        t.ok(t.wait_for(lambda: (fc.get(coid)[1] or {}).get("state") == "running" and
                        all(p.get("actual_start") for p in fc.get(coid)[1]["parts"]), 90,
                        "the co-allocation to run"),
             "the co-allocation runs before the takeover", "%r" % (fc.get(coid),))

        def events(c):
            r = c.get("/v1/events?after=0&max=1000")
            return r.json if r.status == 200 else None
        ev0 = events(c1) or {}
        seqs0 = [e["seq"] for e in ev0.get("events", [])]
        t.ok(ev0.get("latest", 0) >= 1, "events published before the takeover (latest %s)"
             % ev0.get("latest"), "%r" % ev0)

        # Slurm saves its own state (jobs, reservations) a few seconds after
        # a change; a controller killed before that loses them in Slurm
        # itself, whatever a plugin does.  Let it save, as it does long
        # before any real crash.
        sdir = os.path.join(os.path.dirname(alpha["slurm_conf"]), "state")
        # the last changes on alpha: the co-allocation's reservation (made
        # after `submitted`) and its part job's start
        started = max([p.get("actual_start") or 0 for p in
                       (fc.get(coid)[1] or {}).get("parts", []) if p["cluster"] == "alpha"]
                      + [0])

        def slurm_saved():
            try:
                return started and \
                    os.stat(os.path.join(sdir, "job_state")).st_mtime >= started and \
                    os.stat(os.path.join(sdir, "resv_state")).st_mtime >= submitted
            except OSError:
                return False
        t.ok(t.wait_for(slurm_saved, 60, "slurmctld to save its state"),
             "alpha-ctl1's slurmctld saved its own state", "%r" % os.listdir(sdir))

        # -- takeover: SIGKILL to the primary ---------------------------------
        r = grid.localgrid("failover", "alpha", "--timeout", "90")
        t.ok(r.returncode == 0 and "alpha-ctl2 in charge" in r.stdout,
             "localgrid failover alpha: alpha-ctl2 took over", r.stdout + r.stderr)
        st = grid.status()
        alpha = st["clusters"][0]
        t.ok(alpha["plugin_url"] == urls[1] and not alpha["controllers"][0]["pid"],
             "status --json: alpha-ctl2 in charge, alpha-ctl1 gone", json.dumps(alpha["controllers"]))
        c2 = plugin(urls[1])

        def ticks(c):
            r = c.get("/v1/stats")
            return ((r.json or {}).get("reservations") or {}).get("ticks", 0) \
                if r.status == 200 else 0
        t.ok(t.wait_for(lambda: ticks(c2) >= 3, 60, "three agent passes on alpha-ctl2"),
             "alpha-ctl2's plugin serves and made three passes (deadlines, orphans)",
             "%r" % ticks(c2))
        lst = resv_states(c2)
        t.ok(lst.get(ids[0]) == "tentative" and lst.get(ids[1]) == "confirmed"
             and lst.get(ids[2]) == "confirmed",
             "alpha-ctl2 knows every reservation, made after it started, as before",
             "%r" % lst)
        t.ok(all(grid.show("alpha", "reservation", n) for n in names),
             "no flexco_* reservation was deleted", "%r" % names)
        first = grid.job("alpha", jobs[0])
        t.ok(first.get("JobState") == "RUNNING" and
             grid.job("alpha", jobs[1]).get("JobState") == "PENDING",
             "no part job was killed: one still runs, one still waits",
             "%r" % [grid.job("alpha", j).get("JobState") for j in jobs])

        # new events get numbers above every one handed out before
        r = c2.request("DELETE", "/v1/reservations/%s" % ids[0])
        t.ok(r.status == 200, "alpha-ctl2 serves a mutation (delete the tentative one)",
             "%s %r" % (r.status, r.raw[:300]))
        top0 = max(seqs0 + [ev0.get("latest", 0)])
        t.ok(t.wait_for(lambda: (events(c2) or {}).get("latest", 0) > top0, 60,
                        "a new event on alpha-ctl2"),
             "alpha-ctl2 publishes events numbered above alpha-ctl1's (%d)" % top0,
             "%r" % events(c2))
        ev1 = events(c2) or {}
        seqs1 = [e["seq"] for e in ev1.get("events", [])]
        t.ok(seqs1 == sorted(set(seqs1)) and [x for x in seqs1 if x <= top0] ==
             [x for x in seqs0 if x in seqs1],
             "no sequence number is reused: the retained ones are alpha-ctl1's, then new ones",
             "%r / %r" % (seqs0, seqs1))

        def co_done():
            x = fc.get(coid)[1] or {}
            return x.get("state") in ("completed", "failed", "cancelled") and x
        done = t.wait_for(co_done, 180, "the co-allocation to end") or {}
        t.ok(done.get("state") == "completed",
             "the co-allocation submitted before the takeover completed after it",
             "%r\n%s" % (done, fc.log_tail(40)))

        # -- the primary comes back and takes control -----------------------
        r = grid.localgrid("restore", "alpha", "--wait", "--timeout", "90")
        t.ok(r.returncode == 0 and "alpha-ctl1 in charge" in r.stdout,
             "localgrid restore alpha --wait: alpha-ctl1 took control back",
             r.stdout + r.stderr)
        t.ok(t.wait_for(lambda: refused(urls[1]), 30, "alpha-ctl2 to stop serving"),
             "alpha-ctl2 stands by again and does not listen")
        t.ok(t.wait_for(lambda: ticks(c1) >= 2, 60, "two agent passes on alpha-ctl1"),
             "alpha-ctl1's plugin serves again", "%r" % ticks(c1))
        lst = resv_states(c1)
        t.ok(lst.get(ids[0]) == "deleted" and lst.get(ids[1]) == "confirmed"
             and lst.get(ids[2]) == "confirmed",
             "alpha-ctl1 serves what alpha-ctl2 changed (the tentative one deleted)",
             "%r" % lst)
        def same_run():
            """jobs[0] runs as it did before the takeover: not requeued,
            not restarted (its StartTime and Restarts as then)."""
            j = grid.job("alpha", jobs[0])
            return (j.get("JobState") == "RUNNING" and j.get("Restarts") == "0" and
                    j.get("StartTime") == first.get("StartTime"))

        def all_there(more=()):
            return all(grid.show("alpha", "reservation", n) for n in list(names[1:]) + list(more)) \
                and same_run()
        # (scontrol may reach the controller that is just handing over;
        # a job that was killed or requeued never passes)
        t.ok(t.wait_for(all_there, 30, "the reservations and the part job"),
             "after the hand-back: reservations and the running part job still there "
             "(the same run: StartTime %s, not requeued)" % first.get("StartTime"),
             "%r %r" % ([bool(grid.show("alpha", "reservation", n)) for n in names[1:]],
                        grid.job("alpha", jobs[0])))
        top1 = max(seqs1 + [ev1.get("latest", 0)])
        # (the nodes register with alpha-ctl1 again first: until then
        # Slurm counts them unavailable and the request is refused 409)
        made_late = t.wait_for(lambda: (lambda r: r[0] == 201 and r)(
            make(int(time.time()) + 4 * 3600, 1, True)), 90, "a reservation on alpha-ctl1")
        s, late = made_late or (0, {})
        t.ok(s == 201, "alpha-ctl1 makes a reservation after the hand-back", "%r" % late)
        t.ok(t.wait_for(lambda: (events(c1) or {}).get("latest", 0) > top1, 60,
                        "a new event on alpha-ctl1"),
             "alpha-ctl1 numbers its events above alpha-ctl2's (%d)" % top1)

        # -- the standby's exit writes nothing ---------------------------------
        st = grid.status()
        standby = st["clusters"][0]["controllers"][1]
        state = os.path.join(os.path.dirname(st["clusters"][0]["slurm_conf"]), "state", STATE)
        os.kill(standby["pid"], signal.SIGTERM)
        t.ok(t.wait_for(lambda: not t.pid_alive(standby["pid"]), 60, "the standby to exit"),
             "the standby (alpha-ctl2) stopped with SIGTERM")
        with open(state) as f:
            saved = {r["id"] for r in json.load(f).get("reservations", [])}
        t.ok({late.get("id"), *ids} <= saved,
             "flexco_resv.json still holds every reservation, the one made after the "
             "hand-back too: the standby wrote no stale copy", "%r" % saved)
        left = [n for n in os.listdir(os.path.dirname(state)) if ".new." in n]
        t.ok(not left, "no temporary state file left behind", "%r" % left)
        t.ok(t.wait_for(lambda: all_there([late.get("name")]), 30,
                        "the reservations and the part job"),
             "nothing was deleted or killed by the standby's exit",
             "%r %r" % (bool(grid.show("alpha", "reservation", late.get("name"))),
                        grid.job("alpha", jobs[0])))


if __name__ == "__main__":
    t.run_main(main)
