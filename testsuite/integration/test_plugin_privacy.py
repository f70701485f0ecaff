#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""slurm.conf PrivateData in the plugin's answers (issue 14 §1.9), on real
clusters.  With PrivateData=jobs,reservations user A (flexcotest) runs a job
and holds a reservation; user B (daemon, authenticated, neither operator
nor in DaemonUsers) gets events without A's job or reservation at all
(their sequence numbers are skipped, a long poll is not woken by them),
and profiles and probes equal to A's member for member (the free node
counts still count A's job and reservation); A sees their own events;
root (operator, DaemonUsers) sees everything.  Without PrivateData B sees
A's events as before."""

import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

CLUSTER = "alpha"
NODES = 4
USER_A, NAME_A = t.test_user()
USER_B = 1  # daemon
NODE_NAMES = ["alpha%d" % i for i in range(1, NODES + 1)]


def pull(client, after=0):
    """Every event after `after`, page by page; (events, last answer)."""
    events, last = [], None
    while True:
        r = client.get("/v1/events?after=%d&max=1000" % after)
        if r.status != 200 or not isinstance(r.json, dict):
            raise t.GridError("GET /v1/events: %s %r" % (r.status, r.raw[:300]))
        last = r.json
        events += last["events"]
        if last["next"] == after:
            return events, last
        after = last["next"]


def same_snapshot(first, second, fetch):
    """fetch(client) from both clients until both answers come from the
    same second (their snapshot_time): (status, doc, raw) of each."""
    for _ in range(20):
        ra, rb = fetch(first), fetch(second)
        if (ra.json or {}).get("snapshot_time") == (rb.json or {}).get("snapshot_time"):
            break
    return ra, rb


def no_names(raw):
    """True if an answer names none of the cluster's nodes nor A."""
    text = raw.decode(errors="replace")
    return not any(n in text for n in NODE_NAMES) and NAME_A not in text


def start_grid(private):
    args = ["--no-flexcod"]
    if private:
        args += ["--slurm-option", "PrivateData=jobs,reservations"]
    return t.Grid(name=t.test_name() + ("-private" if private else "-open"),
                  nodes=[NODES], args=args)


def setup(grid):
    st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                    30, "the plugin to listen")
    cl, sock = st["clusters"][0], st["munge_socket"]
    return (plugin_client(cl, sock), plugin_client(cl, sock, uid=USER_A),
            plugin_client(cl, sock, uid=USER_B))


def a_job(grid, seconds, limit_min):
    r = grid.run(CLUSTER, ["sbatch", "--parsable", "-N1", "-t", str(limit_min),
                           "-o", "/dev/null", "--wrap", "sleep %d" % seconds],
                 user=USER_A, group=USER_A, cwd="/tmp")
    jobid = r.stdout.strip().split(";")[0]
    if r.returncode or not jobid.isdigit():
        raise t.GridError("sbatch as %s: %s" % (NAME_A, r.stderr.strip()))
    return jobid


def a_reservation(grid, name):
    r = grid.run(CLUSTER, ["scontrol", "create", "reservation", "ReservationName=" + name,
                           "Users=" + NAME_A, "StartTime=now", "Duration=30", "NodeCnt=1"])
    t.ok(r.returncode == 0, "reservation %s of %s, starting now" % (name, NAME_A),
         r.stdout + r.stderr)
    return grid.show(CLUSTER, "reservation", name)


def job_ev(jobid):
    return lambda e: e["type"] == "job_ended_early" and e.get("job_id") == int(jobid)


def resv_ev(kind, name):
    return lambda e: e["type"] == "reservation_" + kind and e.get("reservation") == name


def private_grid():
    with start_grid(True) as grid:
        root, a, b = setup(grid)
        show = grid.run(CLUSTER, ["scontrol", "show", "config"]).stdout
        t.ok("PrivateData             = jobs,reservations" in show
             or any(line.split("=", 1)[0].strip() == "PrivateData"
                    and line.split("=", 1)[1].strip() == "jobs,reservations"
                    for line in show.splitlines()),
             "slurm.conf has PrivateData=jobs,reservations")

        # -- A's job runs, A's reservation holds a node ----------------------
        jobid = a_job(grid, 600, 10)
        job = grid.wait_job(CLUSTER, jobid, states=("RUNNING",))
        res = a_reservation(grid, "privres")
        t.ok(job.get("JobState") == "RUNNING" and job.get("UserId", "").startswith(NAME_A + "(")
             and res.get("Users") == NAME_A and res.get("NodeCnt") == "1",
             "A's 1-node job runs and A's 1-node reservation exists", "%r %r" % (job, res))

        # -- profiles: the same numbers for A and B, no names ----------------
        ra, rb = same_snapshot(a, b, lambda c: c.get("/v1/profile?horizon=3600"))
        pa, pb = ra.json or {}, rb.json or {}
        t.ok(ra.status == 200 and rb.status == 200 and pa == pb,
             "B's profile equals A's, member for member",
             "%s %r\n%s %r" % (ra.status, ra.raw[:600], rb.status, rb.raw[:600]))
        t.ok(pb.get("nodes") == {"total": NODES, "available": NODES, "published": NODES}
             and pb.get("steps") and pb["steps"][0]["free_nodes"] == NODES - 2,
             "... and counts A's job and reservation: %d of %d nodes free now" % (NODES - 2, NODES),
             "%r" % pb.get("steps"))
        t.ok(no_names(ra.raw) and no_names(rb.raw), "the profile names no node and no user")

        # -- probes: the same offers for A and B ------------------------------
        body = {"nodes": 2, "duration": 600}
        ra, rb = same_snapshot(a, b, lambda c: c.request("POST", "/v1/probe", body=body))
        qa, qb = ra.json or {}, rb.json or {}
        t.ok(ra.status == 200 and rb.status == 200 and qa == qb and qb.get("offers")
             and qb["offers"][0]["start"] == qb["snapshot_time"],
             "B's probe equals A's, member for member (2 nodes offered now)",
             "%s %r\n%s %r" % (ra.status, ra.raw[:600], rb.status, rb.raw[:600]))
        t.ok(no_names(ra.raw) and no_names(rb.raw), "the probe names no node and no user")

        # -- A's job ends early: the events -----------------------------------
        grid.run(CLUSTER, ["scancel", jobid])
        grid.wait_job(CLUSTER, jobid, states=("CANCELLED",))
        t.wait_for(lambda: [e for e in pull(root)[0] if job_ev(jobid)(e)],
                   30, "root to see the early end of job %s" % jobid)
        t.wait_for(lambda: [e for e in pull(root)[0] if resv_ev("activated", "privres")(e)],
                   30, "root to see privres start")
        all_ev, last_root = pull(root)
        jev = next(e for e in all_ev if job_ev(jobid)(e))
        rev = next(e for e in all_ev if resv_ev("activated", "privres")(e))
        t.ok(jev["user_id"] == USER_A and jev["nodes"] == job["NodeList"]
             and jev["node_count"] == 1 and jev["partition"] == "batch"
             and jev["state"] == "CANCELLED",
             "root (operator, DaemonUsers) sees A's job: job_id, user_id, nodes", "%r" % jev)
        t.ok(rev["nodes"] == res["Nodes"] and rev["node_count"] == 1,
             "root sees A's reservation with its nodes", "%r" % rev)

        mine, last_a = pull(a)
        t.ok([e["seq"] for e in mine] == [e["seq"] for e in all_ev]
             and jev in mine and rev in mine,
             "A sees their own job and reservation: the same events as root",
             "%r\n%r" % (mine, all_ev))

        theirs, last_b = pull(b)
        t.is_(theirs, [], "B sees none of A's events: not the job, not the reservation")
        t.ok(last_b["next"] == last_root["next"] == last_root["latest"]
             and last_b["latest"] == last_root["latest"] and last_b["lost"] is False,
             "B's next moves past the hidden events to latest (%d)" % last_root["latest"],
             "%r %r" % (last_b, last_root))
        r = b.get("/v1/events?after=0&max=1")
        t.ok(r.status == 200 and r.json["events"] == []
             and r.json["next"] == last_root["latest"],
             "max=1: B still gets no event and next = latest", "%r" % r.json)

        # -- a long poll of B is not woken by A's events ----------------------
        got = {}

        def poll():
            t0 = time.monotonic()
            r = b.get("/v1/events?after=%d&wait=4" % last_b["next"])
            got.update(status=r.status, doc=r.json, secs=time.monotonic() - t0)
        th = threading.Thread(target=poll)
        th.start()
        time.sleep(0.5)  # the poll is parked before the event comes
        grid.run(CLUSTER, ["scontrol", "delete", "reservation", "privres"])
        t.wait_for(lambda: [e for e in pull(root, last_root["next"])[0]
                            if resv_ev("deleted", "privres")(e)],
                   30, "root to see privres deleted")
        th.join(30)
        dseq = next(e["seq"] for e in pull(root, last_root["next"])[0]
                    if resv_ev("deleted", "privres")(e))
        t.ok(got.get("status") == 200 and got["doc"]["events"] == []
             and got["doc"]["next"] == dseq and got["secs"] >= 3.5,
             "B's long poll waits out its 4 s past A's hidden event and moves next to it",
             "%r" % got)
        mine, _ = pull(a, last_a["next"])
        t.ok([e["seq"] for e in mine] == [dseq], "A sees their reservation deleted",
             "%r" % mine)

        # -- reservations of the plugin: only one's own -----------------------
        r = root.request("POST", "/v1/reservations",
                         body={"user": NAME_A, "nodes": 1, "start": int(time.time()) + 3600,
                               "duration": 600, "confirm_within": 600})
        t.ok(r.status == 201, "a flexco reservation for A", "%s %r" % (r.status, r.raw[:300]))
        name = (r.json or {}).get("name")
        la = (a.get("/v1/reservations").json or {}).get("reservations")
        lb = b.get("/v1/reservations")
        t.ok([x["name"] for x in la] == [name] and la[0]["user"] == NAME_A
             and la[0]["uid"] == USER_A,
             "A lists their reservation %s" % name, "%r" % la)
        t.ok(lb.status == 200 and lb.json == {"reservations": []},
             "B lists none of A's reservations", "%s %r" % (lb.status, lb.raw[:300]))


def open_grid():
    with start_grid(False) as grid:
        root, a, b = setup(grid)
        jobid = a_job(grid, 1, 5)
        grid.wait_job(CLUSTER, jobid)
        res = a_reservation(grid, "openres")
        t.wait_for(lambda: [e for e in pull(root)[0] if job_ev(jobid)(e)]
                   and [e for e in pull(root)[0] if resv_ev("activated", "openres")(e)],
                   30, "root to see A's job end early and openres start")
        seen_root, _ = pull(root)
        seen_b, _ = pull(b)
        jev = next((e for e in seen_b if job_ev(jobid)(e)), {})
        rev = next((e for e in seen_b if resv_ev("activated", "openres")(e)), {})
        t.ok(seen_b == seen_root and jev.get("user_id") == USER_A and jev.get("nodes")
             and rev.get("nodes") == res.get("Nodes"),
             "without PrivateData B sees A's job (job_id, user_id, nodes) and "
             "reservation, as before", "%r\n%r" % (seen_b, seen_root))


def main():
    t.require_grid_tools()
    private_grid()
    open_grid()


if __name__ == "__main__":
    t.run_main(main)
