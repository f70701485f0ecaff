#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Costs a caller can impose on slurmctld through the plugin, bounded on a
real cluster: per-uid rate limits on probe, profile and events (429 with
Retry-After for one uid while another is served, DaemonUsers exempt), and
a reservation delete that looks up only the reservation's own part jobs
under the write locks however many other jobs are queued.

What the delete check proves: the plugin's count of job records it
examined under slurmctld's write locks (stats reservations.delete_lock) is
the reservation's part jobs, not the queue; it does not time the hold
(delete_resv() inside it is Slurm's own and still walks the job list)."""

import os
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
NOBODY = 65534
OTHER = 1           # daemon(1): another ordinary uid
PROBE_LIMIT = 3     # ProbeRateLimit=3/60: 3 at once, then one per 20 s
REPLAY_SHARE = 100  # ReplayCachePerUser=100 of ReplayCacheSize=1024
SHARER = 4242       # a uid that only fills its replay-cache share
UNRELATED = 150     # pending jobs of others in the queue
PART_JOBS = 2


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod",
                                     "--plugin-option", "ProbeRateLimit=%d/60" % PROBE_LIMIT,
                                     "--plugin-option", "ProfileRateLimit=0",
                                     "--plugin-option", "ReplayCacheSize=1024",
                                     "--plugin-option",
                                     "ReplayCachePerUser=%d" % REPLAY_SHARE]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        c = plugin_client(cl, sock)
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("ProbeRateLimit") == "%d/60" % PROBE_LIMIT
             and cfg.get("ProfileRateLimit") == "0"
             and cfg.get("EventsRateLimit") == "120/60"
             and cfg.get("MaxConnections") == "1024",
             "slurmctld's log shows the rate limits in effect (EventsRateLimit "
             "and MaxConnections by default)", "%r" % cfg)

        # -- rate limits ----------------------------------------------------
        nobody = plugin_client(cl, sock, uid=NOBODY)
        other = plugin_client(cl, sock, uid=OTHER)
        probe = {"nodes": 1, "duration": 60}
        got = [nobody.request("POST", "/v1/probe", body=probe).status
               for _ in range(PROBE_LIMIT)]
        t.ok(got == [200] * PROBE_LIMIT,
             "uid %d: %d probes at once are served" % (NOBODY, PROBE_LIMIT), "%r" % got)
        r = nobody.request("POST", "/v1/probe", body=probe)
        retry = r.headers.get("Retry-After", "")
        t.ok(r.status == 429 and r.error_code() == "rate_limited"
             and retry.isdigit() and 1 <= int(retry) <= 20,
             "uid %d: the next probe gets 429 rate_limited with Retry-After "
             "(1-20 s)" % NOBODY, "%s %r %r" % (r.status, retry, r.raw[:300]))
        r = other.request("POST", "/v1/probe", body=probe)
        t.ok(r.status == 200, "uid %d is served meanwhile" % OTHER,
             "%s %r" % (r.status, r.raw[:200]))
        r = c.request("POST", "/v1/probe", body=probe)
        t.ok(r.status == 200, "root, a DaemonUser, is not limited",
             "%s %r" % (r.status, r.raw[:200]))
        r = nobody.get("/v1/profile")
        t.ok(r.status == 200,
             "uid %d still gets profiles (their own bucket, here unlimited)" % NOBODY,
             "%s %r" % (r.status, r.raw[:200]))
        sts = (c.get("/v1/stats").json or {})
        rl = sts.get("rate_limited", {})
        codes = {e["endpoint"]: e["status"] for e in sts.get("requests", [])}
        t.ok(rl.get("probe") == 1 and codes.get("probe", {}).get("429") == 1,
             "stats count the refused probe", "%r %r" % (rl, codes.get("probe")))
        t.ok(t.wait_for(lambda: nobody.request("POST", "/v1/probe", body=probe).status == 200,
                        int(retry) + 25, "a token to come back", interval=2),
             "after Retry-After uid %d is served again" % NOBODY)

        # -- delete with a long queue of unrelated jobs -----------------------
        for i in range(UNRELATED):
            grid.submit("alpha", ["-H", "-N1", "-t", "5", "-o", "/dev/null",
                                  "--wrap", "true"])
        t.ok(len(grid.run("alpha", ["squeue", "-h", "-t", "PD", "-o", "%i"]).stdout.split())
             == UNRELATED, "%d unrelated jobs pending (held)" % UNRELATED)
        now = int(time.time())
        r = c.request("POST", "/v1/reservations",
                      body={"user": "root", "nodes": 2, "start": now + 3600,
                            "duration": 1800, "confirm_within": 600})
        res = r.json or {}
        rid, name = res.get("id"), res.get("name", "flexco_?")
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid)
        t.ok(r.status == 200, "a confirmed reservation %s in an hour" % name,
             "%s %r" % (r.status, r.raw[:300]))
        tmp = t.scratch_dir("flexco-limits-")
        os.chmod(tmp, 0o777)
        ids, raws = [], []
        for i in range(PART_JOBS):
            r = c.request("POST", "/v1/reservations/%s/jobs" % rid,
                          body={"script": "#!/bin/sh\ntrue\n", "work_dir": tmp,
                                "std_out": "/dev/null", "time_limit": 60,
                                "name": "part%d" % i})
            ids.append((r.json or {}).get("job_id"))
            raws.append(r.raw[:200])
        t.ok(all(isinstance(j, int) for j in ids),
             "%d part jobs pending in %s" % (PART_JOBS, name), "%r %r" % (ids, raws))
        r = c.request("DELETE", "/v1/reservations/%s" % rid)
        t.ok(r.status == 200 and (r.json or {}).get("state") == "deleted",
             "DELETE: 200, deleted", "%s %r" % (r.status, r.raw[:300]))
        dl = ((c.get("/v1/stats").json or {}).get("reservations") or {}).get("delete_lock", {})
        t.ok(dl.get("count") == 1 and dl.get("jobs_examined_last") == PART_JOBS,
             "under the write locks the plugin examined its %d part jobs, not "
             "the %d queued ones" % (PART_JOBS, UNRELATED + PART_JOBS), "%r" % dl)
        states = {j: grid.job("alpha", j).get("JobState") for j in ids}
        t.ok(all(s == "CANCELLED" for s in states.values()),
             "the part jobs were cancelled with it", "%r" % states)
        log = grid.log_tail("alpha", n=400)
        t.ok(sum(("cancelled with its reservation %s" % name) in line
                 for line in log.splitlines()) == PART_JOBS,
             "one log line per cancelled part job")
        pend = grid.run("alpha", ["squeue", "-h", "-t", "PD", "-o", "%i"]).stdout.split()
        t.ok(len(pend) == UNRELATED, "the unrelated jobs are untouched", "%d" % len(pend))
        grid.run("alpha", ["scancel", "-u", "root", "-t", "PD"])

        # -- the replay cache's per-user share, from flexco.conf -----------
        t.ok(cfg.get("ReplayCacheSize") == "1024"
             and cfg.get("ReplayCachePerUser") == str(REPLAY_SHARE),
             "slurmctld's log shows ReplayCacheSize and ReplayCachePerUser", "%r" % cfg)
        sharer = plugin_client(cl, sock, uid=SHARER)
        got = [sharer.get("/v1/stats").status for _ in range(REPLAY_SHARE)]
        r = sharer.get("/v1/stats")
        t.ok(got == [200] * REPLAY_SHARE and r.status == 503
             and r.error_code() == "replay_cache_full"
             and r.headers.get("Retry-After") == "1",
             "uid %d: %d signed requests are served, the next gets 503 "
             "replay_cache_full with Retry-After (its ReplayCachePerUser share)"
             % (SHARER, REPLAY_SHARE),
             "%r %s %r" % (sorted(set(got)), r.status, r.raw[:200]))
        r = nobody.get("/v1/profile")
        t.ok(r.status == 200, "uid %d is still served meanwhile" % NOBODY,
             "%s %r" % (r.status, r.raw[:200]))
        # DaemonUsers (flexcod, here root) sign every request flexcod makes
        # for all users, 100 probes a second and more: the share is for
        # users, so flexcod must not run into it (only ReplayCacheSize).
        got = [c.get("/v1/stats").status for _ in range(REPLAY_SHARE + 20)]
        t.ok(got == [200] * (REPLAY_SHARE + 20),
             "a DaemonUser (root) is served beyond ReplayCachePerUser=%d: %d "
             "signed requests in a row" % (REPLAY_SHARE, REPLAY_SHARE + 20),
             "%r" % {s: got.count(s) for s in set(got)})
        r = sharer.get("/v1/stats")
        t.ok(r.status == 503 and r.error_code() == "replay_cache_full",
             "uid %d is still held to its share" % SHARER, "%s" % r.status)

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
