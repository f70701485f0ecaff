#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Part jobs through the slurmctld/flexco plugin on a real cluster: a batch
job of the reservation's user submitted into flexco_<id> with FLEXCO_*
environment, idempotent under an Idempotency-Key, for DaemonUsers only,
strict bodies, refused for a reservation that is gone; submitted held and
released (idempotent; an administrator's hold stays); its state from
slurmctld; the record survives a slurmctld restart."""

import os
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
NOBODY = 65534


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        c = plugin_client(cl, sock)
        now = int(time.time())
        r = c.request("POST", "/v1/reservations",
                      body={"user": "root", "nodes": 2, "start": now,
                            "duration": 1800, "confirm_within": 600})
        res = r.json or {}
        rid, name = res.get("id"), res.get("name", "flexco_?")
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid)
        t.ok(r.status == 200 and (r.json or {}).get("state") == "confirmed",
             "a reservation for root on 2 nodes from now, confirmed",
             "%s %r" % (r.status, r.raw[:300]))
        resv_nodes = set(grid.expand_nodes("alpha", res.get("node_list", "")))

        tmp = t.scratch_dir("flexco-jobs-")
        os.chmod(tmp, 0o777)
        out = os.path.join(tmp, "out.txt")
        script = ("#!/bin/sh\n"
                  "echo \"$FLEXCO_PART_INDEX $FLEXCO_PARTS "
                  "$SLURM_JOB_RESERVATION $(id -u) $FLEXCO_COALLOCATION "
                  "$FLEXCO_START $FLEXCO_RESERVATION $MYVAR $1 $2\" > %s\n" % out)
        body = {"script": script, "argv": ["a1", "a 2"],
                "environment": {"MYVAR": "hello"}, "work_dir": tmp,
                "std_out": os.path.join(tmp, "slurm.out"), "time_limit": 90,
                "name": "part1", "coallocation": "co-42", "part_index": 1,
                "parts": [{"cluster": "beta", "nodes": 4},
                          {"cluster": "alpha", "nodes": 2}],
                "start": now}
        path = "/v1/reservations/%s/jobs" % rid

        # -- authorization and validation -----------------------------------
        nobody = plugin_client(cl, sock, uid=NOBODY)
        r = nobody.request("POST", path, body=body)
        t.ok(r.status == 403 and r.error_code() == "forbidden",
             "a uid not in DaemonUsers gets 403", "%s %r" % (r.status, r.raw[:300]))
        bad = [(dict(body, colour="red"), "an unknown field"),
               (dict(body, environment={"FLEXCO_PARTS": "x"}), "a FLEXCO_ variable"),
               (dict(body, environment={"SLURM_JOB_ID": "1"}), "a SLURM_ variable"),
               (dict(body, time_limit=7200), "a time limit beyond the reservation"),
               (dict(body, nodes=3), "more nodes than the reservation"),
               ({k: v for k, v in body.items() if k != "script"}, "no script"),
               (dict(body, argv="x"), "argv not an array"),
               (dict(body, parts=[{"cluster": "a"}]), "a part without nodes"),
               (dict(body, parts=[{"cluster": "c%d" % i, "nodes": 1}
                                  for i in range(65)]), "65 parts"),
               (dict(body, parts=[{"cluster": "c" * 65, "nodes": 1}], part_index=0),
                "a 65-byte cluster name"),
               ("{\"script\": ", "invalid JSON")]
        for b, what in bad:
            r = c.request("POST", path, body=b)
            t.ok(r.status == 400 and r.is_json_error(),
                 "submit with %s: 400 JSON error" % what,
                 "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations/999999/jobs", body=body)
        t.ok(r.status == 404, "an unknown reservation: 404")
        t.ok(grid.run("alpha", ["squeue", "-h"]).stdout.strip() == "",
             "no job was made by the refused requests")

        # -- submit, idempotently -------------------------------------------
        r = c.request("POST", path, body=body, headers={"Idempotency-Key": "j-1"})
        doc = r.json or {}
        jobid = doc.get("job_id")
        t.ok(r.status == 201 and isinstance(jobid, int)
             and doc.get("reservation") == name and doc.get("state") == "PENDING",
             "POST .../jobs: 201 with a job id", "%s %r" % (r.status, r.raw[:400]))
        r2 = c.request("POST", path, body=body, headers={"Idempotency-Key": "j-1"})
        q = grid.run("alpha", ["squeue", "-h", "-o", "%i"]).stdout.split()
        sa = grid.run("alpha", ["scontrol", "show", "job", "-o"]).stdout
        t.ok(r2.status == 201 and (r2.json or {}).get("job_id") == jobid
             and sa.count("JobId=") == 1,
             "the same Idempotency-Key again: the same job id, no second job",
             "%s %r %r" % (r2.status, r2.raw[:200], q))
        job = grid.wait_job("alpha", jobid)
        t.ok(job.get("JobState") == "COMPLETED", "the job completed", "%r" % job)
        t.ok(job.get("Reservation") == name and job.get("UserId", "").startswith("root(")
             and job.get("NumNodes") == "2" and job.get("JobName") == "part1"
             and job.get("TimeLimit") == "00:02:00",
             "scontrol: Reservation=%s, user root, 2 nodes, 90 s rounded up to 2 min" % name,
             "%r" % job)
        jnodes = set(grid.expand_nodes("alpha", job.get("NodeList", "")))
        t.ok(jnodes and jnodes <= resv_nodes,
             "the job ran on the reservation's nodes", "%r %r" % (jnodes, resv_nodes))
        try:
            with open(out) as f:
                text = f.read().split()
        except OSError as e:
            text = [str(e)]
        t.ok(text == ["1", "beta:4,alpha:2", name, "0", "co-42", str(now), name,
                      "hello", "a1", "a", "2"],
             "the script saw FLEXCO_* , the reservation, uid 0, its env and args",
             "%r" % text)

        # -- state ----------------------------------------------------------
        r = c.get("/v1/reservations/%s/jobs/%s" % (rid, jobid))
        g = r.json or {}
        t.ok(r.status == 200 and g.get("state") == "COMPLETED"
             and g.get("exit_code") == 0 and g.get("reservation") == name
             and g.get("part_index") == 1 and set(grid.expand_nodes("alpha", g.get("nodes") or "")) == jnodes
             and g.get("start_time", 0) > 0 and g.get("end_time", 0) >= g.get("start_time", 0),
             "GET .../jobs/{jobid}: state, exit code, nodes, times", "%s %r" % (r.status, r.raw[:400]))
        r = c.get("/v1/reservations/%s/jobs/%s" % (rid, jobid + 1000))
        t.ok(r.status == 404, "a job not of this reservation: 404")
        r = c.get("/v1/reservations/%s/jobs/xyz" % rid)
        t.ok(r.status == 400, "a non-numeric job id: 400")
        rec = c.get("/v1/reservations/%s" % rid).json or {}
        t.ok([j.get("job_id") for j in rec.get("jobs", [])] == [jobid],
             "the reservation record lists the job", "%r" % rec)

        # -- events ---------------------------------------------------------
        def part_events():
            r = c.get("/v1/events?after=0")
            evs = [e for e in (r.json or {}).get("events", [])
                   if e.get("type", "").startswith("part_job_")
                   and e.get("job_id") == jobid]
            return len(evs) >= 2 and evs
        evs = t.wait_for(part_events, 30, "part job events") or []
        t.ok([e["type"] for e in evs] == ["part_job_started", "part_job_ended"]
             and all(e.get("reservation") == name and e.get("part_index") == 1
                     and e.get("reservation_id") == rid for e in evs)
             and evs[1].get("state") == "COMPLETED" and evs[1].get("exit_code") == 0,
             "part_job_started then part_job_ended, with reservation and part index",
             "%r" % evs)

        # -- a failing job: exit code ---------------------------------------
        r = c.request("POST", path, body={"script": "#!/bin/sh\nexit 3\n",
                                          "std_out": "/dev/null", "nodes": 1,
                                          "time_limit": 60})
        j2 = (r.json or {}).get("job_id")
        grid.wait_job("alpha", j2)
        g = c.get("/v1/reservations/%s/jobs/%s" % (rid, j2)).json or {}
        t.ok(r.status == 201 and g.get("state") == "FAILED" and g.get("exit_code") == 3,
             "a second part job on 1 node, exit 3: FAILED, exit_code 3",
             "%s %r" % (r.status, g))

        # -- the largest layout: FLEXCO_PARTS at its bound -----------------
        # 64 parts of 64-byte names and 7-digit counts: 64 * 72 + 63 = 4671
        # bytes (doc/reservations.md), well inside Slurm's environment.
        parts = [{"cluster": ("p%02d" % i) + "x" * 61, "nodes": 1000000}
                 for i in range(64)]
        big = ",".join("%s:%d" % (p["cluster"], p["nodes"]) for p in parts)
        out2 = os.path.join(tmp, "parts.txt")
        r = c.request("POST", path, body=dict(
            body, parts=parts, part_index=63, name="part63",
            script="#!/bin/sh\nprintf '%s %s' \"$FLEXCO_PART_INDEX\" "
                   "\"$FLEXCO_PARTS\" > " + out2 + "\n"))
        job2 = (r.json or {}).get("job_id")
        job = grid.wait_job("alpha", job2) if r.status == 201 else {}
        try:
            with open(out2) as f:
                seen = f.read().split(" ")
        except OSError as e:
            seen = [str(e)]
        t.ok(r.status == 201 and job.get("JobState") == "COMPLETED"
             and len(big) == 4671 and seen == ["63", big],
             "a 64-part layout with 64-byte names: the part job sees the whole "
             "4671-byte FLEXCO_PARTS", "%s %r %r %r" % (r.status, r.raw[:200],
                                                        job.get("JobState"), seen[:1]))

        # -- persisted across a restart -------------------------------------
        grid.restart_slurmctld("alpha")
        def listening():
            try:
                return c.get("/v1/reservations/%s" % rid).status == 200
            except Exception:
                return False
        t.wait_for(listening, 30, "the plugin to listen again")
        rec = c.get("/v1/reservations/%s" % rid).json or {}
        r = c.request("POST", path, body=body, headers={"Idempotency-Key": "j-1"})
        t.ok([j.get("job_id") for j in rec.get("jobs", [])] == [jobid, j2, job2]
             and (r.json or {}).get("job_id") == jobid,
             "jobs and the idempotency key survive a slurmctld restart",
             "%r %r" % (rec, r.raw[:200]))

        # -- held, then released --------------------------------------------
        out3 = os.path.join(tmp, "held.txt")
        held = {"script": "#!/bin/sh\necho ran > %s\n" % out3, "std_out": "/dev/null",
                "nodes": 1, "time_limit": 60, "hold": True}
        r = c.request("POST", path, body=dict(held, hold="yes"))
        t.ok(r.status == 400 and r.error_code() == "bad_request",
             "submit with 'hold' not a boolean: 400 bad_request", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", path, body=held)
        j3 = (r.json or {}).get("job_id")
        job = grid.job("alpha", j3) if r.status == 201 else {}
        g = c.get("/v1/reservations/%s/jobs/%s" % (rid, j3)).json or {}
        t.ok(r.status == 201 and job.get("JobState") == "PENDING"
             and job.get("Reason") == "JobHeldUser" and job.get("Priority") == "0"
             and g.get("state") == "PENDING" and g.get("reason") == "JobHeldUser",
             "submit with \"hold\": true: 201, the job pending, held (JobHeldUser, priority 0)",
             "%s %r %r %r" % (r.status, r.raw[:200], job, g))
        rel = "/v1/reservations/%s/jobs/%s/release" % (rid, j3)
        r = nobody.request("POST", rel)
        t.ok(r.status == 403 and r.error_code() == "forbidden",
             "release by a uid not in DaemonUsers: 403 forbidden", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations/%s/jobs/%s/release" % (rid, j3 + 1000))
        t.ok(r.status == 404 and r.error_code() == "not_found",
             "release of a job not of this reservation: 404 not_found",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations/%s/jobs/xyz/release" % rid)
        t.ok(r.status == 400 and r.error_code() == "bad_request",
             "release of a non-numeric job id: 400 bad_request", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("GET", rel)
        t.ok(r.status == 405 and r.error_code() == "method_not_allowed",
             "GET .../release: 405 method_not_allowed", "%s %r" % (r.status, r.raw[:300]))
        job = grid.job("alpha", j3)
        t.ok(job.get("JobState") == "PENDING" and job.get("Reason") == "JobHeldUser",
             "the refused requests left it held", "%r" % job)
        r = c.request("POST", rel)
        t.ok(r.status == 200 and (r.json or {}).get("released") is True
             and (r.json or {}).get("job_id") == j3,
             "POST .../release: 200, released", "%s %r" % (r.status, r.raw[:300]))
        job = grid.wait_job("alpha", j3)
        ran = os.path.exists(out3)
        t.ok(job.get("JobState") == "COMPLETED" and ran,
             "the released job ran and completed", "%r %r" % (job, ran))
        r = c.request("POST", rel)
        t.ok(r.status == 200 and (r.json or {}).get("released") is False
             and (r.json or {}).get("state") == "COMPLETED",
             "releasing it again: 200, released false, the job as it is (COMPLETED)",
             "%s %r" % (r.status, r.raw[:300]))
        # an administrator's hold is not the plugin's to lift
        r = c.request("POST", path, body=held)
        j4 = (r.json or {}).get("job_id")
        hp = grid.run("alpha", ["scontrol", "hold", str(j4)])
        r = c.request("POST", "/v1/reservations/%s/jobs/%s/release" % (rid, j4))
        job = grid.job("alpha", j4)
        t.ok(hp.returncode == 0 and r.status == 409 and r.error_code() == "held"
             and job.get("JobState") == "PENDING" and job.get("Reason") == "JobHeldAdmin",
             "a job an administrator holds (scontrol hold): 409 held, it stays held",
             "%s %r %r" % (r.status, r.raw[:300], job))
        # released by hand, not through the API: it would run outside the
        # start gate, alone; the plugin's next pass cancels it.  Before,
        # it ran to its end.
        out5 = os.path.join(tmp, "hand.txt")
        r = c.request("POST", path, body=dict(held, script="#!/bin/sh\nsleep 20\necho ran > %s\n"
                                              % out5))
        j5 = (r.json or {}).get("job_id")
        hr = grid.run("alpha", ["scontrol", "release", str(j5)])
        job = grid.wait_job("alpha", j5, timeout=60)
        log = grid.log_tail("alpha", n=300)
        t.ok(r.status == 201 and hr.returncode == 0 and job.get("JobState") == "CANCELLED"
             and not os.path.exists(out5)
             and "part job %s in flexco_%s: started without FlexCo's release" % (j5, rid) in log,
             "a held part job released by hand (scontrol release) is cancelled by the plugin's "
             "next pass, before its script's end",
             "%s %s %r %s %r" % (r.status, hr.returncode, job.get("JobState"),
                                 os.path.exists(out5), log[-600:]))

        # -- gone -----------------------------------------------------------
        r = c.request("DELETE", "/v1/reservations/%s" % rid)
        r = c.request("POST", path, body=body)
        t.ok(r.status == 409 and r.error_code() == "gone",
             "a deleted reservation: 409 gone", "%s %r" % (r.status, r.raw[:300]))

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
