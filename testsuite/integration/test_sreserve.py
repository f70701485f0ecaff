#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sreserve against a real local grid: offers and profiles from the real
plugins (tables, --json, chart, SVG); the documented errors and exit codes
for wrong options and unreachable services (flexcod down, a cluster down,
munged unreachable, no flexcod.conf); then, through the real flexcod that
localgrid starts with the grid (and its flexcod.conf), the dry-run choice,
submit (--test-only and real), list, show, update and cancel, checked
against what Slurm runs."""

import json
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import yaml

import flexcotest as t

NOBODY = 65534

# As Slurm's commands: 1 for every error; the stderr line tells which.
EXIT = {"ok": 0, "error": 1, "usage": 1, "no_daemon": 1, "no_munge": 1,
        "no_cluster": 1, "config": 1}


def sreserve_path():
    return os.path.join(t.builddir(), "src", "sreserve", "sreserve")


class Sreserve:
    def __init__(self, conf):
        self.conf = conf

    def __call__(self, *argv, env=None, uid=None):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("FLEXCO_URL", "FLEXCO_MUNGE", "FLEXCOD_CONF"))}
        e["FLEXCOD_CONF"] = self.conf
        e["TZ"] = "UTC"
        e.update(env or {})
        kw = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        return subprocess.run([sreserve_path(), *argv], capture_output=True,
                              text=True, timeout=60, env=e,
                              stdin=subprocess.DEVNULL, **kw)


def one_error_line(r, code, what, part=""):
    lines = r.stderr.splitlines()
    if code == "usage" and lines and lines[-1] == 'Try "sreserve --help" for more information':
        lines = lines[:-1]  # as Slurm's commands, a usage error adds this hint
    t.ok(r.returncode == EXIT[code] and len(lines) == 1
         and lines[0].startswith("sreserve: error: ") and part in lines[0],
         f"{what}: exit {EXIT[code]} ({code}) and one stderr line",
         f"exit {r.returncode}\nstdout: {r.stdout[:400]}\nstderr: {r.stderr[:600]}")


def write_conf(path, st, clusters, daemon_port):
    with open(path, "w") as f:
        f.write("ListenAddress=127.0.0.1\n")
        f.write(f"ListenPort={daemon_port}\n")
        f.write(f"MungeSocket={st['munge_socket']}\n")
        for name, url in clusters:
            f.write(f"Cluster={name} URL={url}\n")


def main():
    t.require_grid_tools()
    if not os.access(sreserve_path(), os.X_OK):
        t.bail_out(f"{sreserve_path()} not built")
    with t.Grid(nodes=[4, 6]) as grid:
        st = t.wait_for(lambda: (lambda s: all(c.get("plugin_url") for c in s["clusters"]) and s)(
            grid.status()), 30, "the plugins to listen")
        urls = [(c["name"], c["plugin_url"]) for c in st["clusters"]]
        # A flexcod.conf naming a flexcod that does not run: the grid's last,
        # unused port.  (The grid's own flexcod is used at the end.)
        daemon_port = grid.base_port + 2 * t.PORTS_PER_CLUSTER - 1
        conf = os.path.join(grid.run_dir, "flexcod-down.conf")
        write_conf(conf, st, urls, daemon_port)
        sr = Sreserve(conf)

        # -- offers on an idle grid -------------------------------------------
        r = sr("offers", "-N", "4", "-t", "10")
        rows = [l.split() for l in r.stdout.splitlines()]
        t.ok(r.returncode == 0 and rows and rows[0][:4] == ["CLUSTER", "START_TIME", "END_TIME", "NODES"],
             "offers: exit 0 and squeue-like header", f"{r.returncode} {r.stdout} {r.stderr}")
        body = [x for x in rows[1:] if x and x[0] in ("alpha", "beta")]
        t.ok({x[0] for x in body} == {"alpha", "beta"}
             and {x[3] for x in body if x[0] == "beta"} == {"2", "4"},
             "offers: both clusters answer; beta offers the whole job (4) and a half (2)",
             r.stdout)
        t.ok("CHOICE: unknown, flexcod is not reachable" in r.stdout
             and len(r.stderr.splitlines()) == 1 and "warning: flexcod is not reachable" in r.stderr,
             "offers without flexcod: said clearly, once", r.stdout + r.stderr)

        r = sr("offers", "-N", "4", "-t", "10", "--json")
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        cl = {c["cluster"]: c for c in doc.get("clusters", [])}
        a = cl.get("alpha", {})
        t.ok(doc.get("command") == "offers" and a.get("reachable") is True
             and a.get("offers") and a["offers"][0]["start"] == a.get("snapshot_time")
             and a["offers"][0]["end"] == a["offers"][0]["start"] + 600
             and doc.get("choice", {}).get("available") is False,
             "offers --json: idle alpha offers now, for 10 minutes; no choice",
             r.stdout[:800])

        # -- a running job moves alpha's offers --------------------------------
        job = grid.submit("alpha", ["-N3", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"])
        grid.wait_job("alpha", job, states=("RUNNING",))
        r = sr("offers", "-N", "4", "-t", "10", "-M", "alpha", "--json")
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        a = (doc.get("clusters") or [{}])[0]
        four = [o for o in a.get("offers", []) if o["nodes"] == 4]
        snap = a.get("snapshot_time", 0)
        t.ok(four and all(o["start"] >= snap + 540 for o in four),
             "offers -M alpha: 4 nodes only after the 3-node job's limit",
             r.stdout[:800])
        r = sr("offers", "-N", "4", "-t", "10", "-M", "alpha", "-h", "-O", "Cluster:0 ,NumNodes:.3 ,Wait:0")
        t.ok(r.returncode == 0 and r.stdout.splitlines()
             and all(l.split()[0] == "alpha" for l in r.stdout.splitlines())
             and "CHOICE" not in r.stdout,
             "offers -h -O: only the chosen columns, no header, no choice", r.stdout)
        # squeue's letters mean squeue's fields: %P partition, %l time limit
        r = sr("offers", "-N", "4", "-t", "10", "-M", "alpha", "-h", "-o", "%P %l %D")
        t.ok(r.returncode == 0 and r.stdout.splitlines()
             and {tuple(l.split()[:2]) for l in r.stdout.splitlines()} == {("batch", "10:00")},
             "offers -o %P %l: partition and time limit, as in squeue", r.stdout + r.stderr)
        r = sr("offers", "-N", "4", "-t", "10", "-M", "alpha", "--yaml")
        doc = yaml.safe_load(r.stdout) if r.returncode == 0 else {}
        r2 = sr("offers", "-N", "4", "-t", "10", "-M", "alpha", "--json=v1")
        jdoc = json.loads(r2.stdout) if r2.returncode == 0 else {}
        t.ok(doc.get("meta", {}).get("data_format") == "v1"
             and doc["meta"].get("command") == ["sreserve", "offers", "-N", "4", "-t", "10", "-M", "alpha", "--yaml"]
             and doc.get("clusters", [{}])[0].get("cluster") == "alpha"
             and doc["clusters"][0].get("offers")
             and jdoc.get("meta", {}).get("data_format") == "v1"
             and jdoc.get("clusters", [{}])[0].get("partition") == doc["clusters"][0].get("partition"),
             "offers --yaml and --json=v1: the same document, meta.data_format v1",
             r.stdout[:600] + r.stderr + r2.stderr)
        one_error_line(sr("offers", "-N", "4", "-t", "10", "--json=v0.0.40"), "usage",
                       "--json with a data format sreserve does not write", 'unknown data format "v0.0.40"')

        # -- profile ------------------------------------------------------------
        svg = os.path.join(grid.run_dir, "profile.svg")
        r = sr("profile", "--horizon", "1:00:00", "--width", "40", "--svg", svg)
        t.ok(r.returncode == 0 and r.stdout.startswith("alpha  (partition batch, 4 of 4 nodes published")
             and "beta  (partition batch, 6 of 6 nodes published" in r.stdout,
             "profile: a chart per cluster", r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        alpha_rows = {l.split("|")[0].strip(): l.split("|", 1)[1] for l in lines[1:5] if "|" in l}
        t.ok(alpha_rows.get("1", "").startswith("####") and alpha_rows.get("2", "#").startswith(" "),
             "profile chart: alpha has 1 node free now, not 2 (the job holds 3)", r.stdout)
        try:
            root = ET.parse(svg).getroot()
            groups = [(g.get("class"), g.get("id"))
                      for g in root.iter("{http://www.w3.org/2000/svg}g")]
            lines = [p.get("stroke") for p in root.iter("{http://www.w3.org/2000/svg}path")
                     if p.get("class") == "free-line"]
        except (OSError, ET.ParseError) as e:
            groups, lines = [str(e)], []
        t.ok(groups == [("overlay", "all-clusters"), ("cluster", "alpha"), ("cluster", "beta")]
             and len(set(lines)) == 2,
             "profile --svg: a valid SVG, both clusters overlaid (a line each, two colours), "
             "then one panel per cluster", repr(groups) + repr(lines))
        r = sr("profile", "--horizon", "1:00:00", "-M", "alpha", "--json")
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        steps = ((doc.get("clusters") or [{}])[0]).get("steps", [])
        t.ok(doc.get("horizon") == 3600 and steps and steps[0]["free_nodes"] == 1
             and steps[-1]["free_nodes"] == 4,
             "profile --json: alpha 1 free, then 4 after the job's limit", r.stdout[:800])
        r = sr("profile", "--horizon", "1:00:00", "-M", "alpha", "--steps", "-h")
        t.ok(r.returncode == 0 and len(r.stdout.splitlines()) == len(steps),
             "profile --steps -h: one line per step", r.stdout)
        grid.run("alpha", ["scancel", job])

        # -- wrong options -------------------------------------------------------
        one_error_line(sr("offers", "-N", "4"), "usage", "offers without -t")
        one_error_line(sr("offers", "-N", "4", "-t", "5", "--begin", "someday"), "usage",
                       "a time Slurm would not accept", "invalid time specification")
        one_error_line(sr("offers", "-N", "4", "-t", "5", "-M", "gamma"), "usage",
                       "an unknown cluster", 'no cluster named "gamma"')
        one_error_line(sr("profile", "-o", "%P%Z"), "usage", "a bad -o field", '"%Z"')
        one_error_line(sr("profile", "-O", "Cluster,Bogus"), "usage", "a bad -O field", '"Bogus"')
        one_error_line(sr("list", "-o", "%C"), "usage", "%C is squeue's CPUs, which list has not",
                       'invalid field "%C"')
        one_error_line(sr("list", env={"SRESERVE_FORMAT2": "JobID,Nope"}), "usage",
                       "SRESERVE_FORMAT2 with an unknown field", '"Nope"')
        one_error_line(sr("explode"), "usage", "an unknown command")
        r = sr("--version")
        t.ok(r.returncode == 0 and r.stdout.startswith("flexco "), "--version", r.stdout)
        r = sr("submit", "--help")
        t.ok(r.returncode == 0 and "Usage: sreserve submit" in r.stdout, "submit --help")

        # -- unreachable services ---------------------------------------------------
        one_error_line(sr("list"), "no_daemon", "list while flexcod is down",
                       f"flexcod is not reachable at http://127.0.0.1:{daemon_port}")
        one_error_line(sr("--url", f"http://127.0.0.1:{daemon_port}", "show", "1"), "no_daemon",
                       "--url: show while flexcod is down")
        one_error_line(sr("cancel", "1", env={"FLEXCO_URL": f"http://127.0.0.1:{daemon_port}"}),
                       "no_daemon", "FLEXCO_URL: cancel while flexcod is down")
        nosock = os.path.join(t.short_dir(), "no-munged.socket")
        r = sr("--munge-socket", nosock, "profile")
        one_error_line(r, "no_munge", "munged unreachable (--munge-socket)", "is munged running?")
        one_error_line(sr("profile", env={"FLEXCO_MUNGE_SOCKET": nosock}), "no_munge",
                       "munged unreachable (FLEXCO_MUNGE_SOCKET)")
        dead = os.path.join(grid.run_dir, "flexcod-dead.conf")
        write_conf(dead, st, urls + [("gamma", f"http://127.0.0.1:{daemon_port}")], daemon_port)
        r = Sreserve(dead)("profile", "--width", "30")
        t.ok(r.returncode == EXIT["no_cluster"] and "alpha" in r.stdout and "beta" in r.stdout
             and r.stderr.count("sreserve: error: cluster gamma: its flexco plugin is not reachable") == 1,
             "a cluster down: the others are shown, one error line, exit 5",
             f"{r.returncode} {r.stdout[-300:]} {r.stderr}")
        one_error_line(Sreserve(os.path.join(grid.run_dir, "missing.conf"))("profile"), "config",
                       "no flexcod.conf", "missing.conf")

        with_flexcod(grid, st)

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


def with_flexcod(grid, st):
    """Every flexcod command through the flexcod localgrid started, with the
    flexcod.conf it wrote (as a user of the grid would)."""
    fc = st.get("flexcod") or {}
    t.ok(fc.get("url") and fc.get("conf"), "localgrid runs flexcod and wrote its flexcod.conf",
         repr(fc))
    sr = Sreserve(fc.get("conf", "/nonexistent"))
    r = sr("offers", "-N", "8", "-t", "5")
    t.ok(r.returncode == 0 and "CHOICE (flexcod dry run" in r.stdout and r.stderr == "",
         "offers: flexcod's choice for 8 nodes (more than one cluster has)",
         r.stdout + r.stderr)
    r = sr("offers", "-N", "8", "-t", "5", "--json")
    plan = (json.loads(r.stdout).get("choice") or {}).get("plan") if r.returncode == 0 else None
    t.ok(plan and plan.get("split") is True and sum(p["nodes"] for p in plan["parts"]) == 8,
         "offers --json: the chosen plan splits 8 nodes over both clusters", r.stdout[-600:])

    r = sr("submit", "-N", "8", "-t", "5", "--test-only")
    t.ok(r.returncode == 0 and r.stdout.startswith("co-allocation to start at "),
         "submit --test-only: where and when, nothing reserved", r.stdout + r.stderr)
    # -N and -t from the script's #SBATCH lines; --mail-type, which flexcod
    # does not take, skips its line with a warning
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#SBATCH -N 8 --time=5\n#SBATCH --mail-type=END\nhostname\n")
        r = sr("submit", "--test-only", script)
    t.ok(r.returncode == 0 and r.stdout.startswith("co-allocation to start at ")
         and r.stderr.startswith("sreserve: warning: #SBATCH line 3: unrecognized option '--mail-type=END'")
         and len(r.stderr.splitlines()) == 1,
         "submit SCRIPT: -N and -t from #SBATCH lines, --mail-type skipped with a warning",
         r.stdout + r.stderr)
    r = sr("list", "--json")
    t.ok(r.returncode == 0 and json.loads(r.stdout).get("coallocations") == [],
         "list --json: a dry run leaves no co-allocation", r.stdout + r.stderr)

    r = sr("submit", "-N", "8", "-t", "5", "-J", "cotest", "-o", "/dev/null",
           "--parsable", "--wrap", "sleep 300")
    coid = r.stdout.strip()
    t.ok(r.returncode == 0 and coid.isdigit(), "submit --parsable: the new id",
         r.stdout + r.stderr)
    r = sr("list", "-h", "-O", "JobID:0 ,UserName:0 ,NumNodes:0 ,Parts:0")
    t.ok(r.returncode == 0 and r.stdout.split() == [coid, "root", "8", "2"],
         "list -h -O: id, user, 8 nodes in 2 parts", r.stdout + r.stderr)
    r = sr("list", "-h", "-o", "%i|%u|%U|%D|%l|%t")
    t.ok(r.returncode == 0
         and r.stdout.split() in ([f"{coid}|root|0|8|5:00|PD"], [f"{coid}|root|0|8|5:00|R"]),
         "list -o with squeue's letters: id, user, uid, nodes, time limit, compact state",
         r.stdout + r.stderr)
    r = sr("list", "-h", "-O", "JobID:0 ,Name", env={"SRESERVE_FORMAT2": "JobID:0"})
    t.ok(r.returncode == 0 and r.stdout.split() == [coid, f"co-{coid}"],
         "list -O over SRESERVE_FORMAT2", r.stdout + r.stderr)
    r = sr("list", "-h", env={"SRESERVE_FORMAT2": "JobID:0 ,UserName:0"})
    t.ok(r.returncode == 0 and r.stdout.split() == [coid, "root"],
         "SRESERVE_FORMAT2 as SQUEUE_FORMAT2", r.stdout + r.stderr)
    r = sr("list", "-h", "-o", "%i %V", env={"SLURM_TIME_FORMAT": "%Y/%m/%d-%H.%M.%S"})
    stamp = r.stdout.split()[1] if r.returncode == 0 and len(r.stdout.split()) == 2 else ""
    t.ok(len(stamp) == 19 and stamp[4] == "/" and stamp[10] == "-" and stamp[13] == ".",
         "SLURM_TIME_FORMAT as a strftime format", r.stdout + r.stderr)
    r = sr("list", "-h", "-o", "%V", env={"SLURM_TIME_FORMAT": "relative"})
    hhmm = r.stdout.split()[-1] if r.returncode == 0 and r.stdout.split() else ""
    t.ok(len(r.stdout.splitlines()) == 1 and len(hhmm) == 5 and hhmm[2] == ":"
         and r.stdout.split()[0] in (hhmm, "Ystday"),  # "Ystday": the test ran over midnight
         "SLURM_TIME_FORMAT=relative: today's submit time as HH:MM", r.stdout + r.stderr)
    # -M as squeue -M: the co-allocation has parts on alpha and beta
    r = sr("list", "-h", "-o", "%i", "-M", "alpha")
    r2 = sr("list", "-h", "-o", "%i", env={"SLURM_CLUSTERS": "nosuchcluster"})
    t.ok(r.returncode == 0 and r.stdout.split() == [coid] and r2.returncode == 0 and r2.stdout == "",
         "list -M alpha: it; SLURM_CLUSTERS of another cluster: none", r.stdout + r2.stdout + r2.stderr)
    # the co-allocation may change state between two commands (its parts
    # start): compare a --yaml read with --json reads just before and
    # after it that agree with each other
    def listing(fmt):
        out = sr("list", fmt)
        doc = (yaml.safe_load(out.stdout) if fmt == "--yaml" else json.loads(out.stdout)) \
            if out.returncode == 0 else {}
        doc.get("meta", {}).pop("command", None)
        return out, doc
    for _ in range(5):
        _, before = listing("--json")
        r, ydoc = listing("--yaml")
        _, jdoc = listing("--json")
        if before == jdoc:
            break
    t.ok(r.stdout.startswith("---\n") and ydoc == jdoc and ydoc["meta"]["data_format"] == "v1"
         and [c["id"] for c in ydoc.get("coallocations", [])] == [int(coid)],
         "list --yaml: the --json document as YAML", r.stdout[:600] + r.stderr)
    r = sr("-h", "list", env={"SRESERVE_FORMAT": "%i %D"})
    t.ok(r.returncode == 0 and r.stdout.split() == [coid, "8"],
         "sreserve -h list: options before the command; SRESERVE_FORMAT as SQUEUE_FORMAT",
         r.stdout + r.stderr)
    # list -i 1 repeats like squeue -i: a time line before each table
    e = dict(os.environ, FLEXCOD_CONF=sr.conf, TZ="UTC")
    watch = subprocess.Popen([sreserve_path(), "list", "-i", "1", "-h", "-o", "%i %T"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=e, stdin=subprocess.DEVNULL)
    seen_lines = []
    try:
        while len([x for x in seen_lines if x.startswith(coid + " ")]) < 2:
            line = watch.stdout.readline()
            if not line:
                break
            seen_lines.append(line.rstrip("\n"))
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    t.ok(len(seen_lines) >= 4 and seen_lines[0][:3].isalpha()
         and seen_lines[1].startswith(coid + " ") and seen_lines[3].startswith(coid + " "),
         "list -i 1: the table again every second, each after a time line", repr(seen_lines))
    r = sr("show", coid, "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    parts = doc.get("parts", [])
    t.ok(len(parts) == 2 and {p["cluster"] for p in parts} == {"alpha", "beta"}
         and all(p.get("job_id") for p in parts),
         "show --json: a part with its part job on each cluster", r.stdout[:800])
    jobs_ok, seen = True, []
    for p in parts:
        job = grid.job(p["cluster"], p["job_id"])
        seen.append(job)
        jobs_ok = jobs_ok and job.get("Reservation") == p.get("reservation") \
            and job.get("NumNodes", "").split("-")[0] == str(p["nodes"])
    t.ok(parts and jobs_ok, "the part jobs are real Slurm jobs in the parts' reservations",
         repr(parts) + "\n" + repr(seen))
    r = sr("show", "co-" + coid)
    t.ok(r.returncode == 0 and r.stdout.startswith(f"CoallocationId={coid} Name=co-{coid} UserId=root(0)")
         and "\nPARTS\n" in r.stdout and "\nHISTORY\n" in r.stdout,
         "show co-ID: scontrol-like record, parts and history", r.stdout)
    # a part is a Slurm job: show's squeue letters print what squeue prints
    # for the part job
    r = sr("show", coid, "-h", "-o", "%i|%v|%D|%N")
    ours = [l for l in r.stdout.splitlines() if l.count("|") == 3]
    theirs = []
    for p in parts:
        q = grid.run(p["cluster"], ["squeue", "-h", "-j", str(p["job_id"]), "-o", "%i|%v|%D"])
        theirs.append(q.stdout.strip())
    t.ok(r.returncode == 0 and len(ours) == 2
         and sorted("|".join(l.split("|")[:3]) for l in ours) == sorted(theirs),
         "show -o %i|%v|%D: the part jobs' id, reservation and nodes as squeue prints them",
         repr(ours) + " " + repr(theirs) + r.stderr)

    # MUNGE as the invoking user: another user sees nothing of root's
    r = sr("list", "-h", uid=NOBODY)
    t.ok(r.returncode == 0 and r.stdout == "", "list as another user: none of root's",
         f"{r.returncode} {r.stdout} {r.stderr}")
    one_error_line(sr("show", coid, uid=NOBODY), "error", "show as another user: not found",
                   f"no co-allocation {coid}")
    r = sr("update", coid, "-M", "alpha")
    one_error_line(r, "error", "update onto one cluster too small for 8 nodes is refused")
    r = sr("cancel", coid)
    t.ok(r.returncode == 0 and r.stdout == "" and r.stderr == "", "cancel: silent success",
         r.stdout + r.stderr)
    r = sr("list", "-h", "-o", "%i %T")
    t.ok(r.stdout.split() == [coid, "CANCELLED"], "list: the co-allocation is cancelled",
         r.stdout + r.stderr)
    gone = t.wait_for(lambda: all(grid.job(p["cluster"], p["job_id"]).get("JobState")
                                  in ("CANCELLED", "COMPLETED", None) for p in parts),
                      60, "the part jobs to be cancelled")
    t.ok(parts and gone, "cancel: the part jobs end on both clusters")
    one_error_line(sr("show", "999"), "error", "show of an unknown id", "999")
    one_error_line(sr("cancel", "999"), "error", "cancel of an unknown id", "999")


if __name__ == "__main__":
    t.run_main(main)
