#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sreserve submit's partition, account and QOS (issue 17), through the
grid's real flexcod to real slurmctlds: -p per cluster on the command line
over a #SBATCH -p, -A from a #SBATCH line; the part jobs and reservations
land in those partitions with that account as `scontrol show` reports
them; the values survive a restart of flexcod; an unknown partition is
refused (400 unknown_partition, sreserve exit 1) with nothing left
behind; malformed values are 400 bad_request; and the part job passes the
partition's admission checks as the user's own sbatch (an account the
partition's AllowAccounts does not list, under EnforcePartLimits=ALL: taken
or refused as sbatch's job is)."""

import json
import os
import tempfile

import flexcotest as t
from flexcodtest import Flexcod, slurm_jobs, slurm_reservations
from test_sreserve import Sreserve, one_error_line


def job_ids(grid):
    """{cluster: sorted (job id, reservation)} of the unfinished jobs (their
    states may change meanwhile)."""
    return {c: sorted((j[0], j[-1]) for j in jobs) for c, jobs in slurm_jobs(grid).items()}


def main():
    t.require_grid_tools()
    # EnforcePartLimits=ALL: a partition's AllowAccounts refuses a job at
    # submission (without it, sbatch's job would be taken and wait with
    # reason AccountNotAllowed, and so would a part job).
    with t.Grid(nodes=[2, 2], args=["--slurm-option", "EnforcePartLimits=ALL"]) as grid, \
            tempfile.TemporaryDirectory() as d:
        st = grid.status()
        fc = Flexcod(grid)
        t.wait_for(fc.listening, 60, "flexcod to reconcile both clusters")
        sr = Sreserve(st["flexcod"]["conf"])
        # A second partition on alpha, over the same nodes; and a third
        # open to the account acct1 only.
        nodes = grid.run("alpha", ["sinfo", "-h", "-p", "batch", "-o", "%N"]).stdout.strip()
        r = grid.run("alpha", ["scontrol", "create", "PartitionName=second", "Nodes=" + nodes,
                               "OverSubscribe=EXCLUSIVE"])
        r2 = grid.run("alpha", ["scontrol", "create", "PartitionName=closed", "Nodes=" + nodes,
                                "AllowAccounts=acct1", "OverSubscribe=EXCLUSIVE"])
        t.ok(r.returncode == 0 and r2.returncode == 0,
             "scontrol create partition second and closed (AllowAccounts=acct1) on alpha",
             r.stdout + r.stderr + r2.stdout + r2.stderr)

        script = os.path.join(d, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#SBATCH -N 4 -t 5\n#SBATCH -A acct1\n#SBATCH -p nosuch\nsleep 300\n")
        r = sr("submit", "-p", "alpha:second,batch", "-q", "beta:normal", "-o", "/dev/null",
               "--parsable", script)
        coid = r.stdout.strip()
        t.ok(r.returncode == 0 and coid.isdigit() and r.stderr == "",
             "submit -p alpha:second,batch -q beta:normal over #SBATCH -p nosuch, -A from #SBATCH: placed",
             r.stdout + r.stderr)
        r = sr("show", coid, "--json")
        parts = json.loads(r.stdout).get("parts", []) if r.returncode == 0 else []
        t.ok(sorted((p["cluster"], p.get("partition"), p.get("account"), p.get("qos")) for p in parts)
             == [("alpha", "second", "acct1", None), ("beta", "batch", "acct1", "normal")],
             "show --json: each part's partition, account and QOS", r.stdout[:1500])
        want = {"alpha": "second", "beta": "batch"}
        for p in parts:
            job = grid.job(p["cluster"], p["job_id"])
            t.ok(job.get("Partition") == want[p["cluster"]] and job.get("Account") == "acct1"
                 and job.get("Reservation") == p.get("reservation"),
                 f"scontrol show job on {p['cluster']}: Partition={want[p['cluster']]} "
                 "Account=acct1, in its reservation", repr(job))
            # Without slurmdbd Slurm has no QOS records to check the name
            # against, and what `scontrol show job` then says of it varies
            # (doc/sreserve.md, "Known limits"): noted, not checked.
            t.note(f"{p['cluster']}: Slurm's QOS of the part job: {job.get('QOS')!r}")
            resv = grid.show(p["cluster"], "reservation", p["reservation"])
            t.ok(resv.get("PartitionName") == want[p["cluster"]],
                 f"scontrol show reservation on {p['cluster']}: PartitionName={want[p['cluster']]}",
                 repr(resv))

        # Persisted: the same after flexcod restarts from its database.
        fc.restart()
        r = sr("show", coid, "--json")
        again = json.loads(r.stdout).get("parts", []) if r.returncode == 0 else []
        t.ok(sorted((p["cluster"], p.get("partition"), p.get("account")) for p in again)
             == [("alpha", "second", "acct1"), ("beta", "batch", "acct1")],
             "after a restart of flexcod: the same partitions and account", r.stdout[:1500])

        before_res, before_jobs = slurm_reservations(grid), job_ids(grid)
        # An unknown partition: refused before anything is made.
        r = sr("submit", "-N", "4", "-t", "5", "-p", "beta:nosuch", "-o", "/dev/null",
               "--wrap", "sleep 1")
        one_error_line(r, "error", "submit -p beta:nosuch", "cluster beta has no partition 'nosuch'")
        c = fc.client()
        body = {"nodes": 1, "duration": 300, "script": "#!/bin/sh\ntrue\n"}
        resp = c.request("POST", "/v1/coallocations", body=dict(body, partition={"beta": "nosuch"}))
        t.is_((resp.status, resp.error_code()), (400, "unknown_partition"),
              "POST partition {beta: nosuch}: 400 unknown_partition")
        resp = c.request("POST", "/v1/coallocations", body=dict(body, partition="nosuch", dry_run=True))
        t.is_((resp.status, resp.error_code()), (400, "unknown_partition"),
              "POST partition nosuch (every cluster), dry run: 400 unknown_partition")
        for what, extra, msg in [
                ("a number", {"partition": 5}, "partition: must be a string or an object"),
                ("an unknown cluster", {"partition": {"gamma": "x"}}, "partition: unknown cluster 'gamma'"),
                ("a cluster not allowed", {"clusters": ["alpha"], "account": {"beta": "x"}},
                 "account: cluster 'beta' is not among the allowed clusters"),
                ("a blank", {"account": "a b"}, "account: not a valid name"),
                ("a comma", {"qos": {"*": "a,b"}}, "qos.*: not a valid name"),
                ("an empty object", {"qos": {}}, "qos: must be a string or an object")]:
            resp = c.request("POST", "/v1/coallocations", body=dict(body, **extra))
            t.ok(resp.status == 400 and resp.error_code() == "bad_request"
                 and resp.json["error"]["message"].startswith(msg),
                 f"POST with {what}: 400 bad_request", f"{resp.status} {resp.raw[:300]!r}")
        r = sr("list", "-h", "-o", "%i")
        t.ok(r.returncode == 0 and r.stdout.split() == [coid],
             "the refused submissions recorded no co-allocation", r.stdout + r.stderr)
        t.ok(slurm_reservations(grid) == before_res and job_ids(grid) == before_jobs,
             "and left no reservation or job on any cluster",
             repr((before_res, slurm_reservations(grid))))

        # The admission checks of the user's own sbatch: partition closed
        # allows acct1 only.  Whether Slurm refuses acct3 at submission
        # depends on its version and accounting (EnforcePartLimits=ALL;
        # 22.05 without slurmdbd refuses every account there, knowing no
        # association; 24.11 takes the job): a part job is taken or refused
        # exactly as sbatch's job is.
        r = grid.run("alpha", ["sbatch", "-p", "closed", "-A", "acct3", "-N", "1", "-t", "5",
                               "-o", "/dev/null", "--wrap", "true"])
        refused = r.returncode != 0
        t.note(f"sbatch -p closed -A acct3: {'refused' if refused else 'taken'} "
               f"({(r.stdout + r.stderr).strip()})")
        if not refused:
            grid.run("alpha", ["scancel", r.stdout.split()[-1]])
        r = sr("submit", "-N", "2", "-t", "5", "-M", "alpha", "-p", "closed", "-A", "acct3",
               "-o", "/dev/null", "--parsable", "--wrap", "true")
        if refused:
            one_error_line(r, "error", "submit -M alpha -p closed -A acct3: refused as sbatch's job",
                           "Invalid account or account/partition combination specified")
        else:
            t.ok(r.returncode == 0 and r.stdout.strip().isdigit(),
                 "submit -M alpha -p closed -A acct3: taken as sbatch's job", r.stdout + r.stderr)
            r2 = sr("cancel", r.stdout.strip())
            t.ok(r2.returncode == 0, "cancel it", r2.stdout + r2.stderr)
        clean = t.wait_for(lambda: slurm_reservations(grid) == before_res
                           and job_ids(grid) == before_jobs, 60,
                           "that attempt's reservations and jobs to be gone")
        t.ok(clean, "nothing of it left on the clusters")

        r = sr("cancel", coid)
        t.ok(r.returncode == 0, "cancel", r.stdout + r.stderr)
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
