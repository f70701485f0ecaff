#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kill -9 of flexcod at each step of the commit protocol, then a restart,
on a real grid: the database is consistent (the interrupted co-allocation
is rolled back with its reason, nothing is stuck), no reservation and no
part job is left on any cluster, and no part job is duplicated.  A
flexco reservation with this flexcod's owner tag that its database does
not know (an orphan) is deleted at the restart; one without an owner is
left alone.
A clean SIGTERM stop keeps scheduled co-allocations, which a restart
picks up and follows to completion.

On a grid of sites (localgrid --sites): each cluster and flexcod in a
network namespace of its own."""

import os
import threading

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script, slurm_jobs, \
    slurm_reservations
from flexcohttp import plugin_client

NODES = [4, 4, 4]
STEPS = ["reserving", "reserved", "confirmed", "submitted"]


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--sites", "--test-hooks"]) as grid:
        fc = Flexcod(grid)
        st = grid.status()
        tmp = t.scratch_dir("flexcod-recovery-")
        os.chmod(tmp, 0o777)
        body = {"nodes": 6, "duration": 120, "script": script(tmp, "sleep 2"),
                "std_out": "/dev/null"}

        for step in STEPS:
            h = Hold(hold_dir, step)
            out = {}

            def submit():
                try:
                    out["r"] = fc.submit(body)
                except Exception as e:  # the connection dies with flexcod
                    out["e"] = e
            th = threading.Thread(target=submit)
            th.start()
            t.ok(h.reached(), "flexcod reached step '%s'" % step)
            r = fc.client().get("/v1/coallocations?state=committing")
            co = ((r.json or {}).get("coallocations") or [{}])[0]
            res_before = slurm_reservations(grid)
            fc.restart(kill9=True, env={HOLD_ENV: hold_dir},
                       while_down=h.release)
            th.join(60)
            t.ok("e" in out or (out.get("r") or (0,))[0] is None,
                 "kill -9 at '%s': the client lost its connection" % step, "%r" % out)

            def settled():
                s, d = fc.get(co.get("id"))
                parts = (d or {}).get("parts", [])
                if (d or {}).get("state") not in ("failed", "scheduled"):
                    return None
                if any(p["state"] == "cancelling" for p in parts):
                    return None
                return d
            d = t.wait_for(settled, 60, "co-%s to settle after the restart" % co.get("id")) or {}
            t.ok(d.get("state") == "failed"
                 and "restarted during the commit" in (d.get("reason") or ""),
                 "step '%s': rolled back at restart, with the reason" % step,
                 "%r" % {k: d.get(k) for k in ("state", "reason", "parts")})
            t.ok(t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
                 "step '%s': no reservation and no part job left on any cluster (before: %r)"
                 % (step, res_before),
                 "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))

        # -- an orphan: a flexco reservation of this flexcod no record knows ----
        # (made with its owner tag, as if its database had lost the record),
        # and one of nobody's (no owner: by hand, or another tool), which is
        # not flexcod's to delete (issue 15 §1.4)
        alpha = st["clusters"][0]
        pc = plugin_client(alpha, st["munge_socket"])
        import sqlite3
        import time
        db = sqlite3.connect("file:%s?mode=ro" % fc.info["state_file"], uri=True)
        instance = db.execute("SELECT value FROM meta WHERE key='instance'").fetchone()[0]
        db.close()
        made = {}
        for what, extra in (("ours", {"owner": "flexcod-" + instance}), ("nobody's", {})):
            r = pc.request("POST", "/v1/reservations",
                           body=dict({"user": "root", "nodes": 1,
                                      "start": int(time.time()) + 3600,
                                      "duration": 600, "confirm_within": 600}, **extra))
            made[what] = (r.json or {}).get("name"), (r.json or {}).get("id")
            t.ok(r.status == 201 and made[what][0] in slurm_reservations(grid)["alpha"],
                 "a reservation %s (%s) is made on alpha behind flexcod's back"
                 % (made[what][0], what))
        orphan, foreign = made["ours"][0], made["nobody's"][0]
        fc.restart(kill9=False)
        t.ok(t.wait_for(lambda: orphan not in slurm_reservations(grid)["alpha"], 30,
                        "the orphan to go"),
             "flexcod's restart deletes the orphan %s (its own owner tag)" % orphan)
        stats = fc.client().get("/v1/stats").json or {}
        t.ok(stats.get("orphans") == 1 and stats.get("foreign_reservations", 0) >= 1,
             "stats: 1 orphan, and a foreign reservation seen", "%r" % stats)
        t.ok(foreign in slurm_reservations(grid)["alpha"],
             "the reservation without an owner (%s) is left alone" % foreign)
        pc.request("DELETE", "/v1/reservations/%s" % made["nobody's"][1])

        # -- a scheduled co-allocation survives a clean restart ------------------
        future = int(time.time()) + 20
        s, doc = fc.submit(dict(body, ready=future))
        t.ok(s == 201 and doc.get("state") == "scheduled",
             "a co-allocation starting in 20 s is scheduled", "%s %r" % (s, doc))
        fc.restart(kill9=False)

        def completed():
            x = fc.get(doc["id"])[1] or {}
            return x.get("state") in ("completed", "failed") and x
        x = t.wait_for(completed, 120, "it to complete after the restart") or {}
        t.ok(x.get("state") == "completed"
             and all(p["state"] == "completed" for p in x.get("parts", [])),
             "after a SIGTERM restart it ran and completed", "%r" % x)
        jobs = {}
        for p in x.get("parts", []):
            sa = grid.run(p["cluster"], ["scontrol", "show", "job", "-o"]).stdout
            jobs[p["cluster"]] = sa.count("JobName=co-%d " % x["id"])
        t.ok(all(v == 1 for v in jobs.values()) and len(jobs) == len(x.get("parts", [])),
             "exactly one part job per part in Slurm", "%r" % jobs)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
             "its reservations were released", "%r" % slurm_reservations(grid))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
