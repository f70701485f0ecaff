#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A part job that Slurm has and the plugin's state file does not: the
submission is written to the state file before Slurm gets the job, so a
crash after a failed save never leaves an unknown job behind.

The plugin built with the tests' hooks (`localgrid start --test-hooks`)
fails every save after the next part-job submission while the file
StateSaveLocation/flexco-test-fail-saves exists, as a failing disk would.
The test submits a part job with an Idempotency-Key, sees it answered 503
state_not_saved (Slurm has the job), waits until slurmctld has saved its own
state, kills slurmctld with SIGKILL, lets saves work again and starts it.
Then the job must be the reservation's part job (with the part index it was
sent with), flexcod's retry with the same key must get that job back (not a
second one), and its start must be published as a part-job event.

Then the events queue (issue 37 defect 7): while the file
StateSaveLocation/flexco-test-events-full exists, the hooked plugin's
events queue refuses every event as a full one would.  A second part job
starts and ends meanwhile; its part_job_started and part_job_ended must be
published once the queue takes events again, each exactly once, and not
lost as published."""

import os
import signal
import time
import uuid

import flexcotest as t
from flexcohttp import plugin_client


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[2], args=["--no-flexcod", "--test-hooks"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        cl = st["clusters"][0]
        c = plugin_client(cl, st["munge_socket"], timeout=30)
        sdir = os.path.join(os.path.dirname(cl["slurm_conf"]), "state")

        r = c.request("POST", "/v1/reservations",
                      body={"user": "root", "nodes": 1, "start": int(time.time()),
                            "duration": 3600, "confirm_within": 600})
        rid = (r.json or {}).get("id")
        name = (r.json or {}).get("name")
        c.request("POST", "/v1/reservations/%s/confirm" % rid)
        t.ok(r.status == 201, "a reservation is made", "%s %r" % (r.status, r.raw[:300]))

        key = "crash-" + uuid.uuid4().hex
        job = {"script": "#!/bin/sh\nsleep 3000\n", "work_dir": "/tmp",
               "std_out": "/dev/null", "part_index": 3}
        open(os.path.join(sdir, "flexco-test-fail-saves"), "w").close()
        posted = time.time()
        r = c.request("POST", "/v1/reservations/%s/jobs" % rid, body=job,
                      headers={"Idempotency-Key": key})
        t.ok(r.status == 503 and r.error_code() == "state_not_saved",
             "the submission is answered 503 state_not_saved (the save after it failed)",
             "%s %r" % (r.status, r.raw[:300]))

        def in_resv():
            out = grid.run("alpha", ["squeue", "-h", "-R", name, "-o", "%i"]).stdout
            return [x for x in out.split() if x.strip()]
        jobs = t.wait_for(in_resv, 30, "Slurm to show the job") or []
        t.ok(len(jobs) == 1, "Slurm has the part job (%s)" % ",".join(jobs), "%r" % jobs)

        def slurm_saved():
            try:
                return os.stat(os.path.join(sdir, "job_state")).st_mtime > posted
            except OSError:
                return False
        t.ok(t.wait_for(slurm_saved, 60, "slurmctld to save its job state"),
             "slurmctld saved its own job state")
        pid = grid.status()["clusters"][0]["slurmctld_pid"]
        os.kill(pid, signal.SIGKILL)
        t.ok(t.wait_for(lambda: not t.pid_alive(pid), 30, "slurmctld to die"),
             "slurmctld killed with SIGKILL while the plugin could not save")
        os.unlink(os.path.join(sdir, "flexco-test-fail-saves"))
        r = grid.localgrid("restore", "alpha", "--wait", "--timeout", "90")
        t.ok(r.returncode == 0, "slurmctld started again", r.stdout + r.stderr)

        def ticked():
            s = c.get("/v1/stats")
            return s.status == 200 and \
                ((s.json or {}).get("reservations") or {}).get("ticks", 0) >= 1
        t.ok(t.wait_for(ticked, 60, "the plugin's first pass"), "the plugin serves again")

        doc = c.get("/v1/reservations/%s" % rid).json or {}
        known = [(j.get("job_id"), j.get("part_index")) for j in doc.get("jobs", [])]
        t.ok(jobs and known == [(int(jobs[0]), 3)],
             "the job is the reservation's part job, part index 3 as sent", "%r" % doc)
        r = c.request("POST", "/v1/reservations/%s/jobs" % rid, body=job,
                      headers={"Idempotency-Key": key})
        t.ok(r.status == 201 and jobs and (r.json or {}).get("job_id") == int(jobs[0]),
             "a retry with the same Idempotency-Key gets that job back",
             "%s %r" % (r.status, r.raw[:300]))
        t.ok(in_resv() == jobs, "no second job was submitted", "%r" % in_resv())
        log = grid.log_tail("alpha", n=300)
        t.ok("of a submission that a restart interrupted: adopted" in log,
             "slurmctld's log says the job was adopted", log[-2000:])

        def started():
            e = c.get("/v1/events?after=0&max=1000").json or {}
            return any(x.get("type") == "part_job_started" and
                       x.get("job_id") == int(jobs[0]) for x in e.get("events", []))
        t.ok(jobs and t.wait_for(started, 60, "part_job_started"),
             "its start is published as a part_job_started event")

        # -- part-job events the full queue refused are published later ----
        def stats_events():
            return (c.get("/v1/stats").json or {}).get("events") or {}
        # the first part job ends (its events published), and a second one
        # goes into the same reservation
        grid.run("alpha", ["scancel", jobs[0]] if jobs else ["true"])

        def ended1():
            e = c.get("/v1/events?after=0&max=1000").json or {}
            return any(x.get("type") == "part_job_ended" and jobs and
                       x.get("job_id") == int(jobs[0]) for x in e.get("events", []))
        t.ok(t.wait_for(ended1, 60, "part_job_ended of the first job"),
             "the first part job is cancelled and its end published")
        rid2 = rid
        dropped0 = stats_events().get("publish_dropped", 0)
        full = os.path.join(sdir, "flexco-test-events-full")
        open(full, "w").close()
        r = c.request("POST", "/v1/reservations/%s/jobs" % rid2,
                      body={"script": "#!/bin/sh\nsleep 2\n", "work_dir": "/tmp",
                            "std_out": "/dev/null", "part_index": 0})
        job2 = (r.json or {}).get("job_id")
        t.ok(r.status == 201 and job2, "with the events queue full, a second part job is submitted",
             "%s %r" % (r.status, r.raw[:300]))

        def gone():
            j = grid.job("alpha", job2) if job2 else None
            return (not j) or j.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED")
        t.ok(job2 and t.wait_for(gone, 60, "the second part job to end"),
             "the second part job ran and ended while the queue was full")

        def refused_twice():
            return stats_events().get("publish_dropped", 0) >= dropped0 + 2
        t.ok(t.wait_for(refused_twice, 30, "the plugin to try to publish"),
             "the full queue refused its events (publish_dropped rose by %d)"
             % (stats_events().get("publish_dropped", 0) - dropped0))

        def of_job2():
            e = c.get("/v1/events?after=0&max=1000").json or {}
            return [x.get("type") for x in e.get("events", [])
                    if x.get("job_id") == job2 and x.get("type", "").startswith("part_job_")]
        t.ok(of_job2() == [], "none of its events is in the log while the queue is full",
             "%r" % of_job2())
        os.unlink(full)
        t.ok(t.wait_for(lambda: len(of_job2()) >= 2, 60, "its events"),
             "once the queue takes events again, its start and end are published",
             "%r" % of_job2())
        t.ok(sorted(of_job2()) == ["part_job_ended", "part_job_started"],
             "... each exactly once", "%r" % of_job2())


if __name__ == "__main__":
    t.run_main(main)
