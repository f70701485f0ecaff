#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""contrib/localgrid starts several real Slurm clusters that run jobs, and
`stop` ends every process the grid started (also jobs still running, with
their slurmstepd) and frees every port.

By hand, before the plugin is built:
    FLEXCO_LOCALGRID_ARGS=--no-plugin python3 testsuite/integration/test_localgrid.py
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flexcotest as t  # noqa: E402

EXPECTED = {"alpha": 4, "beta": 6, "gamma": 8}


def grid_processes(g):
    """{pid: start} of the daemons the grid recorded (state.json)."""
    with open(os.path.join(g.run_dir, "state.json")) as f:
        state = json.load(f)
    return {p["pid"]: p["start"] for p in state["processes"]}, state


def check_status(g):
    st = g.status()
    clusters = st.get("clusters", [])
    t.is_([c["name"] for c in clusters], list(EXPECTED),
          "status --json lists clusters alpha, beta, gamma")
    t.is_({c["name"]: c["nodes"] for c in clusters}, EXPECTED,
          "node counts are 4, 6 and 8")
    t.is_({c["name"]: c["node_names"] for c in clusters},
          {n: [f"{n}{i}" for i in range(1, k + 1)] for n, k in EXPECTED.items()},
          "node names are <cluster>1..N")
    t.ok(st.get("munged_pid") and t.pid_alive(st["munged_pid"]),
         "munged is running", f"munged_pid={st.get('munged_pid')}")
    pids = [c["slurmctld_pid"] for c in clusters]
    t.ok(all(p and t.pid_alive(p) for p in pids), "every slurmctld is running",
         f"slurmctld pids: {pids}")
    slurmds = [p for c in clusters for p in c["slurmd_pids"]]
    t.ok(len(slurmds) == sum(EXPECTED.values())
         and all(p and t.pid_alive(p) for p in slurmds),
         "one running slurmd per node", f"slurmd pids: {slurmds}")
    states = {n: s for c in clusters for n, s in c["node_states"].items()}
    t.ok(states and all(s == "idle" for s in states.values()),
         "every node is idle", f"node states: {states}")
    ports = [c["slurmctld_port"] for c in clusters] + \
        [p for c in clusters for p in c.get("slurmd_ports", [])]
    listening = t.listening_ports()
    t.ok(ports and set(ports) <= listening,
         "every slurmctld and slurmd listens on its port",
         f"not listening: {sorted(set(ports) - listening)}")
    t.ok(all(c["partition"] == "batch" and c["cpus_per_node"] == 8
             for c in clusters), "partition batch with 8 CPUs per node")
    return st


def check_env(g):
    r = g.localgrid("env", "beta")
    m = re.fullmatch(r"export SLURM_CONF=(\S+)\n", r.stdout)
    t.ok(r.returncode == 0 and m and os.path.isfile(m.group(1)),
         "env beta prints 'export SLURM_CONF=<beta's slurm.conf>'",
         f"exit {r.returncode}: {r.stdout!r} {r.stderr!r}")
    # The printed line works with eval, and SLURM_CONF alone is enough for
    # the client commands (munge socket included).
    sh = (f"unset $(env | sed -n 's/^\\(SLURM_[A-Z_]*\\)=.*/\\1/p'); "
          f"eval \"$({t.localgrid_path()} env beta --run-dir {g.run_dir})\" && "
          "scontrol show config | sed -n 's/^ClusterName *= *//p' && "
          "sinfo -h -o '%P %D'")
    r = g.run("beta", ["sh", "-c", sh])
    t.is_(r.stdout.split(), ["beta", "batch*", "6"],
          "eval of env beta: scontrol and sinfo talk to beta")
    r = g.localgrid("env", "nosuchcluster")
    t.ok(r.returncode != 0 and "nosuchcluster" in r.stderr,
         "env of an unknown cluster fails with a message", r.stderr)


def check_jobs(g, tmp):
    for cluster in EXPECTED:
        out = os.path.join(tmp, f"{cluster}-%j.out")
        jobid = g.submit(cluster, [
            "-D", tmp, "-o", out, "-t", "5",
            "--wrap", "echo hello from $SLURM_CLUSTER_NAME $SLURMD_NODENAME"])
        job = g.wait_job(cluster, jobid, timeout=60)
        t.is_(job.get("JobState"), "COMPLETED",
              f"batch job {jobid} completes on {cluster}")
        path = out.replace("%j", jobid)
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            text = str(e)
        t.ok(re.fullmatch(rf"hello from {cluster} {cluster}[1-9]\d*\n", text),
             f"{cluster} job output names its cluster and node", repr(text))

    out = os.path.join(tmp, "beta-2n-%j.out")
    jobid = g.submit("beta", [
        "-D", tmp, "-o", out, "-N", "2", "--ntasks-per-node", "1", "-t", "5",
        "--wrap", "srun sh -c 'echo node=$SLURMD_NODENAME'"])
    job = g.wait_job("beta", jobid, timeout=60)
    t.is_(job.get("JobState"), "COMPLETED", "2-node job completes on beta")
    nodes = g.expand_nodes("beta", job.get("NodeList", ""))
    t.ok(len(nodes) == 2 and len(set(nodes)) == 2,
         "2-node job got 2 distinct nodes", f"NodeList={job.get('NodeList')}")
    try:
        with open(out.replace("%j", jobid)) as f:
            ran_on = sorted(re.findall(r"node=(\S+)", f.read()))
    except OSError as e:
        ran_on = [str(e)]
    t.is_(ran_on, sorted(nodes), "its srun step ran one task on each node")


def start_running_job(g, tmp):
    """A job that is still running at stop: returns {pid: start} of its
    slurmstepd, batch script and sleep."""
    token = "lgtest-" + uuid.uuid4().hex[:12]
    jobid = g.submit("alpha", ["-D", tmp, "-o", os.path.join(tmp, "sleep.out"),
                               "-J", token, "--wrap", "sleep 300"])
    job = g.wait_job("alpha", jobid, states=("RUNNING",), timeout=60)
    t.is_(job.get("JobState"), "RUNNING", f"sleep job {jobid} is running")

    def job_procs():
        procs = t.processes()
        mine = {p for p in procs
                if t.proc_environ(p).get("SLURM_JOB_NAME") == token}
        stepds = {procs[p]["ppid"] for p in mine
                  if procs.get(procs[p]["ppid"], {}).get("comm") == "slurmstepd"}
        sleeps = {p for p in mine if procs[p]["comm"] == "sleep"}
        if stepds and sleeps:
            return {p: procs[p]["start"] for p in mine | stepds}, stepds
        return None
    found = g.wait_for(job_procs, 30, "the sleep job's processes")
    pids, stepds = found or ({}, set())
    t.ok(stepds and len(pids) >= 3,
         "found the running job's slurmstepd, script and sleep",
         f"pids {sorted(pids)}")
    return pids, token


def check_refusals(g, st):
    r = subprocess.run(
        [t.localgrid_path(), "start", "--run-dir", g.run_dir, "--no-plugin",
         "--base-port", str(g.base_port)], capture_output=True, text=True)
    t.ok(r.returncode != 0 and "already running" in r.stderr,
         "start refuses a second grid in the same run dir", r.stderr)
    other = tempfile.mkdtemp(prefix="lg-other-")
    try:
        r = subprocess.run(
            [t.localgrid_path(), "start", "--run-dir", other, "--no-plugin",
             "--base-port", str(g.base_port)], capture_output=True, text=True)
        t.ok(r.returncode != 0 and "in use" in r.stderr
             and str(st["clusters"][0]["slurmctld_port"]) in r.stderr,
             "start refuses ports in use, naming them", r.stderr)
    finally:
        shutil.rmtree(other, ignore_errors=True)


def main():
    t.require_grid_tools()
    tmp = tempfile.mkdtemp(prefix="test_localgrid-")
    try:
        with t.Grid() as g:
            t.ok(True, f"start: default grid up ({g.start_seconds:.1f}s)")
            st = check_status(g)
            check_env(g)
            check_refusals(g, st)
            check_jobs(g, tmp)
            job_pids, token = start_running_job(g, tmp)

            recorded, state = grid_processes(g)
            ports = set()
            for c in st["clusters"]:
                ports.add(c["slurmctld_port"])
                ports.update(c["slurmd_ports"])
                if c.get("plugin_port"):
                    ports.add(c["plugin_port"])
            r = g.stop()
            t.ok(r.returncode == 0, f"stop succeeds ({g.stop_seconds:.1f}s)",
                 r.stdout + r.stderr)
            alive = {p for p, s in recorded.items() if t.pid_alive(p, s)}
            t.ok(not alive, f"no recorded process is alive ({len(recorded)})",
                 f"alive: {sorted(alive)}")
            alive = {p for p, s in job_pids.items() if t.pid_alive(p, s)}
            t.ok(not alive, "the running job's slurmstepd, script and sleep "
                 "are gone", f"alive: {sorted(alive)}")
            procs = t.processes()
            roots = (g.run_dir, state.get("sock_dir") or g.run_dir)
            stepds = sorted(p for p, s in procs.items()
                            if s["comm"] == "slurmstepd"
                            and (t.proc_cwd(p) or "").startswith(roots))
            t.ok(not stepds, "no slurmstepd of the grid is left", f"{stepds}")
            leftovers = sorted(p for p in procs if t.proc_environ(p).get(
                "SLURM_JOB_NAME") == token)
            t.ok(not leftovers, "no process of the job is left", f"{leftovers}")
            busy = sorted(ports & t.listening_ports())
            t.ok(not busy, f"nothing listens on the grid's {len(ports)} ports",
                 f"still listening: {busy}")
            r = g.localgrid("status")
            t.ok(r.returncode != 0, "status fails once the grid is stopped",
                 r.stdout + r.stderr)
            r = g.stop()
            t.ok(r.returncode == 0 and "no grid running" in r.stdout,
                 "a second stop says so and succeeds", r.stdout + r.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
