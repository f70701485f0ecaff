#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexcod on a real 3-cluster grid: a request larger than any cluster is
split and every part starts within 1 s (Slurm's start times); a request
that fits one cluster goes to one; dry runs reserve nothing; an impossible
request is refused and leaves nothing; another user can neither see nor
cancel a co-allocation, an admin can; a cancel leaves no reservation and no
part job anywhere; the API's errors and authentication."""

import os
import re
import signal
import subprocess
import time

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, nothing_left, script, slurm_jobs, slurm_reservations
from flexcohttp import FLEXCOD, Client

NOBODY = 65534
NODES = [4, 4, 4]


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        t.ok(fc.info.get("url"), "localgrid started flexcod and shows its URL",
             "%r" % fc.info)
        c = fc.client()
        tmp = t.scratch_dir("flexcod-commit-")
        os.chmod(tmp, 0o777)

        # -- clusters ------------------------------------------------------
        def all_reachable():
            cl = (c.get("/v1/clusters").json or {}).get("clusters", [])
            return len(cl) == 3 and all(x.get("reachable") and x.get("reconciled")
                                        for x in cl) and cl
        cl = t.wait_for(all_reachable, 30, "flexcod to reach every cluster") or []
        t.ok([x["name"] for x in cl] == ["alpha", "beta", "gamma"],
             "GET /v1/clusters: alpha, beta, gamma, all reachable and reconciled", "%r" % cl)

        # -- dry run ---------------------------------------------------------
        st, doc = fc.submit({"nodes": 10, "duration": 300, "dry_run": True})
        plan = (doc or {}).get("plan") or {}
        t.ok(st == 200 and plan.get("split") and
             sum(p["nodes"] for p in plan.get("parts", [])) == 10 and
             len(doc.get("clusters", [])) == 3,
             "dry run of 10 nodes: a split plan over the clusters' offers",
             "%s %r" % (st, doc))
        t.ok(nothing_left(grid), "the dry run reserved nothing",
             "%r" % slurm_reservations(grid))

        # -- dry runs change no planner state (issue 18 §1) ------------------------
        # On three equal idle clusters FlexCo's next fit decides: a dry run
        # must not move its pointer, so it predicts where the request goes.
        said = []
        for _ in range(2):
            st, doc = fc.submit({"nodes": 3, "duration": 120, "dry_run": True})
            said.append([p["cluster"] for p in ((doc or {}).get("plan") or {}).get("parts", [])])
        t.ok(len(said[0]) == 1 and said[0] == said[1],
             "two dry runs of 3 nodes name the same cluster (%s): asking moves no next-fit "
             "pointer" % ",".join(said[0]), "%r" % said)

        # -- fits one cluster --------------------------------------------------
        st, one = fc.submit({"nodes": 3, "duration": 120, "name": "single",
                             "script": script(tmp), "std_out": "/dev/null"})
        parts = (one or {}).get("parts", [])
        t.ok(st == 201 and one.get("state") == "scheduled" and len(parts) == 1
             and parts[0]["nodes"] == 3 and parts[0]["job_id"],
             "3 nodes: placed on a single cluster, scheduled with its part job",
             "%s %r" % (st, one))
        t.ok([p["cluster"] for p in parts] == said[0],
             "... on the cluster the dry runs named", "%r %r" % (parts, said))

        def finished(coid):
            def f():
                s, x = fc.get(coid)
                return (x or {}).get("state") in ("completed", "failed") and x
            return f
        x = t.wait_for(finished(one.get("id")), 60, "the single-cluster one to complete") or {}
        t.ok(x.get("state") == "completed" and x["parts"][0]["exit_code"] == 0,
             "... and it completed", "%r" % x)
        t.ok(t.wait_for(lambda: nothing_left(grid), 30, "its reservation to go"),
             "its reservation was released when its part job ended",
             "%r" % slurm_reservations(grid))

        # Slurm starts a job only on idle nodes: a node still cleaning up
        # after the last job would delay one part for reasons of its own.
        def all_idle():
            return all(set(grid.run(c, ["sinfo", "-h", "-o", "%t"]).stdout.split()) == {"idle"}
                       for c in ("alpha", "beta", "gamma"))
        t.wait_for(all_idle, 60, "every node to be idle")

        # -- larger than any cluster -------------------------------------------
        t0 = time.monotonic()
        st, big = fc.submit({"nodes": 10, "duration": 120, "name": "split",
                             "script": script(tmp, "sleep 3"), "std_out": "/dev/null"})
        elapsed = time.monotonic() - t0
        bparts = (big or {}).get("parts", [])
        t.ok(st == 201 and big.get("state") == "scheduled" and len(bparts) >= 3
             and sum(p["nodes"] for p in bparts) == 10
             and len({p["cluster"] for p in bparts}) == len(bparts),
             "10 nodes (> 4 per cluster): split over %d clusters, one part each" % len(bparts),
             "%s %r" % (st, big))
        t.note("request to all parts confirmed with part jobs: %.3f s" % elapsed)
        t.ok(all(p["planned_start"] == bparts[0]["planned_start"] for p in bparts),
             "every part has the same planned start")

        def started():
            s, d = fc.get(big["id"])
            ps = (d or {}).get("parts", [])
            return d if ps and all(p.get("actual_start") for p in ps) else None
        d = t.wait_for(started, 60, "every part job to start") or {}
        starts = {}
        for p in bparts:
            job = grid.wait_job(p["cluster"], str(p["job_id"]),
                                states=("RUNNING", "COMPLETED"))
            starts[p["cluster"]] = job.get("StartTime")
        slurm_epochs = [int(time.mktime(time.strptime(v, "%Y-%m-%dT%H:%M:%S")))
                        for v in starts.values() if v and v != "Unknown"]
        t.ok(len(slurm_epochs) == len(bparts) and max(slurm_epochs) - min(slurm_epochs) <= 1,
             "Slurm's start times of the parts differ by at most 1 s", "%r" % starts)
        t.ok(d.get("start_spread") is not None and d["start_spread"] <= 1,
             "flexcod reports start_spread <= 1", "%r" % d.get("start_spread"))
        for p in bparts:
            grid.wait_job(p["cluster"], str(p["job_id"]))
        outs = sorted(f for f in os.listdir(tmp) if f.startswith("part.co-%d." % big["id"]))
        layout = ",".join("%s:%d" % (p["cluster"], p["nodes"]) for p in bparts)
        ok = len(outs) == len(bparts)
        for f in outs:
            words = open(os.path.join(tmp, f)).read().split()
            ok = ok and words[1] == layout and words[2] == "co-%d" % big["id"] \
                and words[3].startswith("flexco_")
        t.ok(ok, "each part job ran in its reservation and saw FLEXCO_PARTS=%s" % layout,
             "%r" % outs)

        def done():
            s, x = fc.get(big["id"])
            return (x or {}).get("state") == "completed" and x
        x = t.wait_for(done, 60, "the co-allocation to complete") or {}
        hist = [h["to"] for h in x.get("history", []) if h["what"] == "coallocation"]
        t.ok(hist == ["planning", "committing", "scheduled", "running", "completed"],
             "history: planning, committing, scheduled, running, completed", "%r" % hist)

        # -- authorization ---------------------------------------------------
        future = int(time.time()) + 3600
        st, fut = fc.submit({"nodes": 6, "duration": 600, "ready": future,
                             "script": script(tmp), "std_out": "/dev/null"})
        t.ok(st == 201 and fut.get("state") == "scheduled"
             and all(p["planned_start"] >= future for p in fut.get("parts", [])),
             "a co-allocation an hour ahead is scheduled", "%s %r" % (st, fut))
        fid = fut.get("id")
        nobody = fc.client(uid=NOBODY)
        r = nobody.get("/v1/coallocations/%s" % fid)
        t.ok(r.status == 404 and r.error_code() == "not_found",
             "another user gets 404 for it", "%s %r" % (r.status, r.raw[:200]))
        r = nobody.request("DELETE", "/v1/coallocations/%s" % fid)
        t.ok(r.status == 404, "another user cannot cancel it (404)")
        r = nobody.get("/v1/coallocations")
        t.ok(r.status == 200 and r.json.get("coallocations") == [],
             "another user's list is empty", "%r" % r.raw[:200])
        r = nobody.get("/v1/coallocations?user=root")
        t.ok(r.status == 403, "user= is for admins only (403)")
        r = c.get("/v1/coallocations?state=scheduled")
        t.ok(r.status == 200 and [x["id"] for x in r.json["coallocations"]] == [fid],
             "the admin lists it with state=scheduled", "%r" % r.raw[:300])
        s, still = fc.get(fid)
        t.ok(still.get("state") == "scheduled", "it is still scheduled")

        # -- cancel ----------------------------------------------------------
        names = {p["cluster"]: p["reservation"] for p in fut["parts"]}
        res = slurm_reservations(grid)
        t.ok(all(names[k] in res[k] for k in names),
             "its reservations exist in Slurm", "%r %r" % (names, res))
        r = c.request("DELETE", "/v1/coallocations/%s" % fid)
        t.ok(r.status == 200 and r.json.get("state") == "cancelled"
             and all(p["state"] == "cancelled" for p in r.json["parts"]),
             "DELETE: cancelled, every part cancelled", "%s %r" % (r.status, r.raw[:300]))
        t.ok(t.wait_for(lambda: nothing_left(grid), 30, "nothing left"),
             "no reservation and no part job is left on any cluster",
             "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))
        r = c.request("DELETE", "/v1/coallocations/%s" % fid)
        t.ok(r.status == 200 and r.json.get("state") == "cancelled",
             "cancelling again is harmless")

        # -- impossible --------------------------------------------------------
        st, doc = fc.submit({"nodes": 13, "duration": 120, "script": script(tmp)})
        t.ok(st == 409 and (doc or {}).get("error", {}).get("code") == "unplaceable",
             "13 nodes on 12: 409 unplaceable with the reason", "%s %r" % (st, doc))
        t.ok(nothing_left(grid), "... and nothing is left anywhere")
        st, doc = fc.submit({"nodes": 2, "duration": 120, "clusters": ["beta"],
                             "max_parts": 1, "script": script(tmp),
                             "std_out": "/dev/null"})
        t.ok(st == 201 and [p["cluster"] for p in doc["parts"]] == ["beta"],
             "clusters=[beta]: placed on beta only", "%s %r" % (st, doc))

        # -- errors ------------------------------------------------------------
        bad = [({"duration": 120, "script": "#!/bin/sh\n"}, "no nodes"),
               ({"nodes": 2, "script": "#!/bin/sh\n"}, "no duration"),
               ({"nodes": 2, "duration": 120}, "no script"),
               ({"nodes": 2, "duration": 120, "script": "#!/bin/sh\n", "colour": 1}, "an unknown member"),
               ({"nodes": 2, "duration": 120, "script": "#!/bin/sh\n", "clusters": ["omega"]}, "an unknown cluster"),
               ({"nodes": 2, "duration": 120, "script": "#!/bin/sh\n", "policy": "fifo"}, "an unknown policy"),
               ({"nodes": 2, "duration": 120, "script": "#!/bin/sh\n",
                 "environment": {"SLURM_X": "1"}}, "a SLURM_ variable"),
               ("{\"nodes\": ", "invalid JSON")]
        for b, what in bad:
            r = c.request("POST", "/v1/coallocations", body=b)
            t.ok(r.status == 400 and r.is_json_error(), "submit with %s: 400" % what,
                 "%s %r" % (r.status, r.raw[:200]))
        r = c.request("GET", "/v1/coallocations/1", auth=None)
        t.ok(r.status == 401 and r.error_code() == "missing_credential"
             and r.headers.get("WWW-Authenticate") == "MUNGE",
             "unsigned: 401 missing_credential with WWW-Authenticate: MUNGE")
        r = c.request("DELETE", "/v1/coallocations/1",
                      sign_as=("GET", "/v1/coallocations/1", b""))
        t.ok(r.status == 401 and r.error_code() == "request_mismatch",
             "a GET credential used for DELETE: 401 request_mismatch")
        r = c.get("/v1/coallocations/999")
        t.ok(r.status == 404, "an unknown id: 404")
        # -- every policy ------------------------------------------------------
        for pol in ("flexco", "coarp", "hpcm", "cores", "cores-seq"):
            st, doc = fc.submit({"nodes": 7, "duration": 300, "policy": pol, "dry_run": True})
            plan = (doc or {}).get("plan") or {}
            t.ok(st == 200 and sum(p["nodes"] for p in plan.get("parts", [])) == 7
                 and plan.get("policy") == pol,
                 "dry run with policy %s: a plan for 7 nodes %r" % (
                     pol, [(p["cluster"], p["nodes"]) for p in plan.get("parts", [])]),
                 "%s %r" % (st, doc))
            # coarp, cores and cores-seq plan on the offers each cluster's plugin
            # answers POST /v1/probe with (fit, p_res, verdict), the others
            # on the profiles' free-node steps.
            offers = [o for cl in (doc or {}).get("clusters", []) for o in cl.get("offers", [])]
            probed = bool(offers) and all("p_res" in o and "verdict" in o for o in offers)
            stepped = bool(offers) and all("free_nodes" in o for o in offers)
            probing = pol in ("coarp", "cores", "cores-seq")
            t.ok(probed if probing else stepped,
                 "dry run with policy %s: planned on %s" % (
                     pol, "probe offers" if probing else "profile steps"),
                 "%r" % offers[:3])
        st, doc = fc.submit({"nodes": 5, "duration": 120, "policy": "cores",
                             "script": script(tmp), "std_out": "/dev/null"})
        t.ok(st == 201 and doc.get("policy") == "cores" and doc.get("state") == "scheduled",
             "policy cores (probed offers): placed", "%s %r" % (st, doc))
        x = t.wait_for(finished(doc.get("id")), 60, "it to complete") or {}
        t.ok(x.get("state") == "completed", "... and completed", "%r" % x.get("state"))
        # cores-seq reserves the parts one at a time in the plan's order
        # (smallest p_res first, CORES Algorithm 2): each reserve is
        # answered before the next cluster is asked (issue 18 §1).
        st, doc = fc.submit({"nodes": 6, "duration": 120, "policy": "cores-seq",
                             "script": script(tmp), "std_out": "/dev/null"})
        sid = (doc or {}).get("id")
        idxs = sorted(p["index"] for p in (doc or {}).get("parts", [])) if st == 201 else []
        t.ok(st == 201 and doc.get("policy") == "cores-seq" and doc.get("state") == "scheduled"
             and len(idxs) == 2, "policy cores-seq, 6 nodes: placed in two parts",
             "%s %r" % (st, doc))
        pat = re.compile(r"co-%s: cores-seq: (reserving part (\d+)|part (\d+) on \S+ reserved)"
                         % sid)
        seen = []
        for ln in fc.log_tail(10 ** 5).splitlines():
            m = pat.search(ln)
            if m:
                seen.append(("ask", int(m.group(2))) if m.group(2) else ("made", int(m.group(3))))
        want = [(w, i) for i in idxs for w in ("ask", "made")]
        t.ok(seen == want and want,
             "cores-seq: part 0 reserved before part 1 is asked, in the plan's order",
             "%r, want %r" % (seen, want))
        x = t.wait_for(finished(sid), 60, "it to complete") or {}
        t.ok(x.get("state") == "completed", "... and completed", "%r" % x.get("state"))

        # -- SIGHUP ------------------------------------------------------------
        os.kill(fc.pid, signal.SIGHUP)
        t.ok(t.wait_for(lambda: "Reconfigure signal (SIGHUP) received" in fc.log_tail(50),
                        30, "the reconfigure line"),
             "SIGHUP: flexcod re-reads its configuration", fc.log_tail(5))
        t.ok(c.get("/v1/clusters").status == 200, "... and keeps serving")

        # -- a second flexcod, detached, on its own port and database -------------
        d2 = t.scratch_dir("flexcod-daemon-")
        port2 = fc.info["port"] + 5
        conf2 = fc.conf_copy(d2, port2)
        with open(fc.info["conf"]) as f:
            text = f.read()
        env = dict(os.environ, FLEXCOD_CONF=conf2)
        env.pop(HOLD_ENV, None)
        r = subprocess.run([fc.info["program"], "-L", os.path.join(d2, "log")], env=env,
                           capture_output=True, text=True, timeout=60)
        pidfile = os.path.join(d2, "pid")
        pid2 = int(open(pidfile).read()) if os.path.exists(pidfile) else None
        c2 = Client("http://127.0.0.1:%d" % port2, fc.socket, FLEXCOD)
        t.ok(r.returncode == 0 and pid2 and t.pid_alive(pid2)
             and c2.get("/v1/clusters").status == 200,
             "flexcod without -D (FLEXCOD_CONF): detaches, writes its pid file, answers",
             "%s %r %r" % (r.returncode, r.stderr, pid2))
        r2 = subprocess.run([fc.info["program"]], env=env, capture_output=True, text=True,
                            timeout=60)
        t.ok(r2.returncode == 1, "a second one on the same pid file exits 1",
             "%s %r" % (r2.returncode, open(os.path.join(d2, "log")).read()[-300:]))
        if pid2:
            os.kill(pid2, signal.SIGTERM)
            t.ok(t.wait_for(lambda: not t.pid_alive(pid2), 30, "it to stop")
                 and not os.path.exists(pidfile)
                 and "flexcod stopped" in open(os.path.join(d2, "log")).read(),
                 "SIGTERM: it stops cleanly and removes its pid file")
        # -- Cluster= that is not the ClusterName at URL= (doc/auth.md) -------
        # One flexcod whose only cluster is called beta but points at
        # alpha's plugin: it signs for beta, alpha refuses every call with
        # wrong_audience, and flexcod says so instead of "unreachable".
        # (Only that cluster, so this flexcod can touch nothing.)
        d3 = t.scratch_dir("flexcod-audience-")
        conf3 = os.path.join(d3, "flexcod.conf")
        alpha_url = [ln.split("URL=")[1].split()[0] for ln in text.splitlines()
                     if ln.startswith("Cluster=alpha ")][0]
        with open(conf3, "w") as f:
            f.write("\n".join(ln for ln in text.replace(
                "ListenPort=%d" % fc.info["port"], "ListenPort=%d" % (port2 + 1)).replace(
                "StateFile=" + fc.info["state_file"], "StateFile=%s/db" % d3).replace(
                "PidFile=", "PidFile=%s/pid\n#" % d3).splitlines()
                if not ln.startswith("Cluster="))
                    + "\nCluster=beta URL=%s\n" % alpha_url)
        env3 = dict(env, FLEXCOD_CONF=conf3)
        log3 = os.path.join(d3, "log")
        r = subprocess.run([fc.info["program"], "-L", log3], env=env3,
                           capture_output=True, text=True, timeout=60)
        pid3 = int(open(os.path.join(d3, "pid")).read()) \
            if os.path.exists(os.path.join(d3, "pid")) else None
        want = ("cluster beta: the plugin at %s refuses our requests as signed for "
                "another cluster" % alpha_url)
        def log3_text():
            if not os.path.exists(log3):
                return ""
            with open(log3) as f:
                return f.read()
        seen = t.wait_for(lambda: want in log3_text(), 30, "the wrong_audience log line")
        logged = log3_text()
        t.ok(r.returncode == 0 and seen and "signed for 'beta', this is 'alpha'" in logged
             and "Cluster=beta in flexcod.conf must be that cluster's ClusterName" in logged,
             "Cluster=beta pointing at alpha's plugin: flexcod logs that alpha refuses "
             "requests signed for beta and that Cluster= must be the ClusterName",
             "%s %r" % (r.returncode, logged[-600:]))
        if pid3:
            os.kill(pid3, signal.SIGTERM)
            t.wait_for(lambda: not t.pid_alive(pid3), 30, "it to stop")
        r3 = subprocess.run([fc.info["program"], "-D", "-f", os.path.join(d2, "nope.conf")],
                            capture_output=True, text=True, timeout=30)
        t.ok(r3.returncode == 1 and "nope.conf" in r3.stderr,
             "a missing configuration: exit 1 with the file named", r3.stderr)
        vs = [subprocess.run([fc.info["program"], o], capture_output=True, text=True, timeout=30)
              for o in ("-V", "--version")]
        t.ok(all(v.returncode == 0 and re.fullmatch(r"flexcod \d+\.\d+\.\d+\n", v.stdout)
                 for v in vs),
             "flexcod -V and --version print 'flexcod <version>' and exit 0",
             "%r" % [(v.returncode, v.stdout, v.stderr) for v in vs])

        r = c.get("/v1/stats")
        s = r.json or {}
        t.ok(r.status == 200 and s.get("messages", {}).get("reserve", 0) >= 5
             and s.get("coallocations", {}).get("cancelled") == 1
             and s.get("commit_ms", {}).get("count", 0) >= 3
             and s.get("messages", {}).get("probe", 0) >= 3,
             "GET /v1/stats counts messages, states and commit times", "%r" % s)
        t.note("commit_ms: %r" % s.get("commit_ms"))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
