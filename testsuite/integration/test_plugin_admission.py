#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Whom DaemonUsers may act for, and the admission of part jobs (issue 14
section 1.3) on a real cluster: no reservation for root (ActForRoot=no, the
default) or for a system user below MinUserUid (422, nothing made in Slurm); a part job goes through
what the user's own sbatch goes through: the site's job_submit plugin
(job_submit/lua here) and the partition's RootOnly and AllowGroups, with
the same refusal sbatch gets for that user, partition and reservation."""

import os
import time

import flexcotest as t
from flexcohttp import plugin_client

NOBODY, NOBODY_NAME = t.test_user()   # an unprivileged user
LUA = """\
function slurm_job_submit(job_desc, part_list, submit_uid)
   if job_desc.name == "lua_refuses_me" then
      slurm.log_user("flexco-test: job name refused by the site")
      return slurm.ERROR
   end
   -- %d, not tostring(): Lua 5.4 prints the number as 64001.0
   job_desc.comment = "lua_saw_uid_" .. string.format("%d", submit_uid)
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end

return slurm.SUCCESS
"""


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[4], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        conf = grid.env("alpha")["SLURM_CONF"]

        def site_policy():
            with open(os.path.join(os.path.dirname(conf), "job_submit.lua"), "w") as f:
                f.write(LUA)
            with open(conf, "a") as f:
                # AllowGroups is checked at submission without it on 22.05,
                # only with it on 24.11 (else the job pends)
                f.write("\nJobSubmitPlugins=lua\nEnforcePartLimits=ALL\n"
                        "PartitionName=rootonly Nodes=ALL RootOnly=YES\n"
                        "PartitionName=grponly Nodes=ALL AllowGroups=root\n")
            # A production flexco.conf: no acting for root (localgrid's test
            # grids say ActForRoot=yes).
            fconf = os.path.join(os.path.dirname(conf), "flexco.conf")
            with open(fconf) as f:
                text = f.read()
            with open(fconf, "w") as f:
                f.write(text.replace("ActForRoot=yes\n", "ActForRoot=no\n"))
        grid.restart_slurmctld("alpha", while_down=site_policy)
        t.wait_for(lambda: grid.run("alpha", ["scontrol", "show", "nodes", "-o"]).stdout.count("State=IDLE ") == 4,
                   60, "the 4 nodes to be idle again")
        parts = grid.run("alpha", ["sinfo", "-h", "-o", "%P"]).stdout.split()
        t.ok("rootonly" in parts and "grponly" in parts,
             "slurmctld restarted with JobSubmitPlugins=lua, a RootOnly and an AllowGroups=root partition",
             "%r" % parts)
        c = plugin_client(cl, sock)
        now = int(time.time())

        # -- whom a reservation may be for -----------------------------------
        body = {"nodes": 1, "start": now, "duration": 1800, "confirm_within": 600}
        for user, why in (("root", "ActForRoot=no"), ("daemon", "MinUserUid"),
                          ("bin", "MinUserUid")):
            r = c.request("POST", "/v1/reservations", body=dict(body, user=user))
            t.ok(r.status == 422 and r.error_code() == "user_not_allowed"
                 and why in (r.json or {}).get("error", {}).get("message", r.raw.decode()),
                 "a reservation for %s: 422 user_not_allowed naming %s" % (user, why),
                 "%s %r" % (r.status, r.raw[:300]))
        res = grid.run("alpha", ["scontrol", "show", "reservation"]).stdout
        t.ok("flexco_" not in res, "nothing was reserved in Slurm for them", res[:300])

        # -- part jobs get what sbatch gets ----------------------------------
        def reserve(partition=None):
            b = dict(body, user=NOBODY_NAME, nodes=1)
            if partition:
                b["partition"] = partition
            r = c.request("POST", "/v1/reservations", body=b)
            doc = r.json or {}
            rc = c.request("POST", "/v1/reservations/%s/confirm" % doc.get("id"))
            t.ok(r.status == 201 and rc.status == 200,
                 "a reservation for an unprivileged user in %s" % (partition or "the default partition"),
                 "%s %r %s" % (r.status, r.raw[:300], rc.status))
            return doc.get("id"), doc.get("name") or "flexco_none"

        def sbatch_err(partition, name, resv):
            argv = ["sbatch", "-J", name, "-N", "1", "-t", "1", "-o", "/dev/null",
                    "--reservation", resv, "--wrap", "true"]
            if partition:
                argv += ["-p", partition]
            r = grid.run("alpha", argv, user=NOBODY, group=NOBODY, cwd="/tmp")
            return r.returncode, r.stderr.strip()

        def jobs_of_nobody():
            return grid.run("alpha", ["squeue", "-h", "-u", NOBODY_NAME, "-o", "%i"]).stdout.split()

        script = "#!/bin/sh\ntrue\n"
        for partition, name, what, expect in (
                (None, "lua_refuses_me", "a job name the site's job_submit/lua refuses",
                 "flexco-test: job name refused by the site"),
                ("rootonly", "part", "a RootOnly partition", "Access/permission denied"),
                ("grponly", "part", "a partition whose AllowGroups excludes the user",
                 "User's group not permitted to use this partition")):
            rid, rname = reserve(partition)
            before = jobs_of_nobody()
            r = c.request("POST", "/v1/reservations/%s/jobs" % rid,
                          body={"script": script, "name": name, "work_dir": "/tmp",
                                "std_out": "/dev/null", "time_limit": 60})
            msg = (r.json or {}).get("error", {}).get("message", r.raw.decode())
            src, serr = sbatch_err(partition, name, rname)
            t.ok(src != 0 and expect in serr,
                 "sbatch by an unprivileged user into %s is refused: %s" % (what, expect),
                 "%s %r" % (src, serr))
            t.ok(r.status == 409 and r.error_code() == "refused" and expect in msg,
                 "a part job into %s is refused the same way" % what,
                 "%s %r" % (r.status, r.raw[:400]))
            t.ok(jobs_of_nobody() == before, "no job was made for it")
            c.request("DELETE", "/v1/reservations/%s" % rid)

        rid, rname = reserve()
        r = c.request("POST", "/v1/reservations/%s/jobs" % rid,
                      body={"script": script, "name": "fine", "work_dir": "/tmp",
                            "std_out": "/dev/null", "time_limit": 60})
        jobid = (r.json or {}).get("job_id")
        job = grid.job("alpha", jobid) if jobid else {}
        t.ok(r.status == 201 and job.get("UserId", "").startswith(NOBODY_NAME + "(")
             and job.get("Comment") == "lua_saw_uid_%d" % NOBODY,
             "an admissible part job is made, by the site's job_submit/lua as a submission of that user",
             "%s %r %r" % (r.status, r.raw[:300], job.get("Comment")))
        job = grid.wait_job("alpha", jobid) if jobid else {}
        t.ok(job.get("JobState") == "COMPLETED", "and it runs as that user", "%r" % job.get("JobState"))


if __name__ == "__main__":
    t.run_main(main)
