#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The plugin's reservation state file on a real cluster (issue 14 §1.1):
a truncated or garbage flexco_resv.json never deletes a flexco_*
reservation or kills a part job, ids are never reused, the previous good
copy (.prev) is loaded when the current one is bad, reservations no valid
copy accounts for are adopted from Slurm's list, and a failed save is
reported (log, /v1/stats) and answered 503 on further mutations until a
save succeeds again.

How a save is made to fail: root ignores file permissions, so the test
moves StateSaveLocation/flexco_resv.json aside and puts a *directory* of
that name in its place.  The save's last step, rename() of its temporary
file over it, fails with EISDIR for root too, on any file system; removing
the directory (and putting the file back) makes saves work again."""

import glob
import os
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
STATE = "flexco_resv.json"


def show_res(grid, name):
    return grid.show("alpha", "reservation", name)


def squeue_ids(grid):
    return grid.run("alpha", ["squeue", "-h", "-o", "%i"]).stdout.split()


def flexco_ids_in_slurm(grid):
    """Ids of Slurm's flexco_<id> reservations."""
    out = grid.run("alpha", ["scontrol", "-o", "show", "res"]).stdout
    ids = []
    for line in out.splitlines():
        for word in line.split():
            if word.startswith("ReservationName=flexco_"):
                try:
                    ids.append(int(word.split("_", 1)[1]))
                except ValueError:
                    pass
    return ids


def resv_stats(c):
    return (c.get("/v1/stats").json or {}).get("reservations", {})


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        c = plugin_client(cl, sock)
        state_dir = os.path.join(os.path.dirname(cl["slurm_conf"]), "state")
        state = os.path.join(state_dir, STATE)
        now = int(time.time())

        # -- three reservations and a running part job ----------------------
        made = []
        for i, (start, nodes, confirm) in enumerate(
                [(now, 1, True), (now + 3600, 2, False), (now + 7200, 1, True)]):
            r = c.request("POST", "/v1/reservations",
                          body={"user": "root", "nodes": nodes, "start": start,
                                "duration": 3 * 3600, "confirm_within": 3600})
            doc = r.json or {}
            if confirm:
                c.request("POST", "/v1/reservations/%s/confirm" % doc.get("id"))
            made.append(doc)
            t.ok(r.status == 201, "reservation %d made (%s)" % (i, doc.get("name")),
                 "%s %r" % (r.status, r.raw[:300]))
        names = [d.get("name", "?") for d in made]
        ids = [d.get("id", 0) for d in made]
        used = []
        r = c.request("POST", "/v1/reservations/%s/jobs" % ids[0],
                      body={"script": "#!/bin/sh\nsleep 3000\n",
                            "work_dir": "/tmp", "std_out": "/dev/null"})
        jobid = str((r.json or {}).get("job_id"))
        job = grid.wait_job("alpha", jobid, states=("RUNNING",))
        t.ok(r.status == 201 and job.get("JobState") == "RUNNING",
             "a part job runs in %s" % names[0], "%s %r" % (r.status, r.raw[:300]))

        def all_there(what):
            t.ok(all(show_res(grid, n) for n in names),
                 "%s: every flexco reservation still exists in Slurm" % what,
                 "%r" % grid.run("alpha", ["scontrol", "show", "res"]).stdout)
            t.ok(jobid in squeue_ids(grid)
                 and grid.job("alpha", jobid).get("JobState") == "RUNNING",
                 "%s: the part job still runs" % what, "%r" % squeue_ids(grid))
            lst = (c.get("/v1/reservations").json or {}).get("reservations", [])
            live = {d["id"]: d for d in lst
                    if d.get("state") in ("tentative", "confirmed")}
            t.ok(all(i in live for i in ids),
                 "%s: the plugin reports every reservation as live" % what,
                 "%r" % lst)
            return live

        def new_id_above(what):
            top = max(flexco_ids_in_slurm(grid) + ids + used)
            r = c.request("POST", "/v1/reservations",
                          body={"user": "root", "nodes": 1,
                                "start": int(time.time()) + 5 * 3600,
                                "duration": 600, "confirm_within": 3600})
            nid = (r.json or {}).get("id", 0)
            t.ok(r.status == 201 and nid > top,
                 "%s: a new reservation gets an id above every one made or "
                 "in Slurm (%s > %s)" % (what, nid, top),
                 "%s %r" % (r.status, r.raw[:300]))
            if r.status == 201:
                c.request("DELETE", "/v1/reservations/%s" % nid)
                used.append(nid)    # never to be reused either

        def restart(what, fn):
            # restart_slurmctld waits until the plugin listens again
            grid.restart_slurmctld("alpha", while_down=fn)
            # two agent passes: the orphan sweep has run
            t.ok(t.wait_for(lambda: resv_stats(c).get("ticks", 0) >= 2, 60,
                            "two agent passes"),
                 "%s: the restarted plugin made two agent passes" % what,
                 "%r" % resv_stats(c))

        # -- 1: truncated current copy, .prev intact -------------------------
        t.ok(os.path.exists(state), "%s exists" % STATE)

        def truncate():
            size = os.path.getsize(state)
            with open(state, "r+b") as f:
                f.truncate(size // 2)
        restart("truncated", truncate)
        all_there("truncated %s" % STATE)
        s = resv_stats(c)
        t.ok((s.get("state") or {}).get("loaded_from") == "previous",
             "the plugin loaded the previous copy (.prev)", "%r" % s)
        t.ok(glob.glob(state + ".bad.*"),
             "the truncated copy is kept aside as %s.bad.<time>" % STATE,
             "%r" % os.listdir(state_dir))
        new_id_above("after loading .prev")

        # -- 2: garbage in every copy: adopted from Slurm ---------------------
        # one of them made by hand with Groups= and no Users= (issue 37
        # §1.8: such a record could not be saved, and the next restart
        # deleted it as an orphan)
        bare_id = max(flexco_ids_in_slurm(grid) + ids) + 100
        bare = "flexco_%d" % bare_id
        r = grid.run("alpha", ["scontrol", "create", "reservation",
                               "ReservationName=" + bare, "Groups=root", "NodeCnt=1",
                               "StartTime=now+7hours", "Duration=60"])
        t.ok(r.returncode == 0 and show_res(grid, bare),
             "a flexco_* reservation without Users= (Groups=root) made in Slurm",
             r.stdout + r.stderr)
        used.append(bare_id)

        def garbage():
            for p in [state] + glob.glob(state + ".prev"):
                with open(p, "wb") as f:
                    f.write(b"\x00garbage{{{ not json \xff\n")
        restart("garbage", garbage)
        live = all_there("garbage in %s and .prev" % STATE)
        s = resv_stats(c)
        t.ok((s.get("state") or {}).get("loaded_from") == "lost"
             and s.get("adopted", 0) >= len(names),
             "the plugin says the state was lost and adopted the reservations",
             "%r" % s)
        t.ok(all(live.get(i, {}).get("state") == "confirmed" for i in ids[:3])
             and live.get(ids[0], {}).get("user") == "root"
             and live.get(ids[0], {}).get("nodes") == 1
             and [j.get("job_id") for j in live.get(ids[0], {}).get("jobs", [])]
             == [int(jobid)],
             "adopted records: confirmed, user, nodes and the part job from Slurm",
             "%r" % live)
        log = grid.log_tail("alpha", n=400)
        t.ok(all(("adopted" in l and n in l) for n in names
                 for l in [next((x for x in log.splitlines()
                                 if "adopted" in x and n in x), "")]),
             "slurmctld's log names each adopted reservation",
             "\n".join(x for x in log.splitlines() if "flexco" in x)[-3000:])
        new_id_above("after losing every copy")
        t.ok(live.get(bare_id, {}).get("state") == "confirmed"
             and live.get(bare_id, {}).get("user") == "",
             "%s (no Users=) adopted as confirmed, with no user" % bare,
             "%r" % live.get(bare_id))
        restart("after adopting", lambda: None)
        s = resv_stats(c)
        lst = {d["id"]: d for d in (c.get("/v1/reservations").json or {}).get("reservations", [])}
        t.ok((s.get("state") or {}).get("loaded_from") == "current"
             and show_res(grid, bare) and lst.get(bare_id, {}).get("state") == "confirmed",
             "the next restart loads the saved state: %s is still in Slurm and confirmed, "
             "not deleted as an orphan" % bare, "%r %r" % (s, lst.get(bare_id)))
        grid.run("alpha", ["scontrol", "delete", "reservation", bare])

        # -- 3: a failed save -------------------------------------------------
        aside = state + ".aside"
        os.rename(state, aside)
        os.mkdir(state)
        try:
            r = c.request("POST", "/v1/reservations",
                          body={"user": "root", "nodes": 1,
                                "start": int(time.time()) + 6 * 3600,
                                "duration": 600, "confirm_within": 3600})
            t.ok(r.status == 503 and r.is_json_error()
                 and r.headers.get("Retry-After"),
                 "create while the state cannot be saved: 503 JSON error with Retry-After",
                 "%s %r %r" % (r.status, r.headers, r.raw[:300]))
            s = resv_stats(c)
            sf = s.get("state") or {}
            t.ok(sf.get("save_errors", 0) >= 1 and sf.get("last_save_error")
                 and sf.get("saving") is False,
                 "/v1/stats: save errors counted, the last error given",
                 "%r" % s)
            r = c.request("POST", "/v1/reservations/%s/confirm" % ids[1])
            t.ok(r.status == 503 and r.is_json_error(),
                 "a further mutation (confirm): 503 too",
                 "%s %r" % (r.status, r.raw[:300]))
            t.ok(all(show_res(grid, n) for n in names) and jobid in squeue_ids(grid),
                 "nothing was deleted or killed meanwhile")
            log = grid.log_tail("alpha", n=200)
            t.ok("slurmctld/flexco: reservations: state not saved: cannot rename" in log
                 and "Is a directory" in log,
                 "the failure is logged with its reason", log[-2000:])
            left = glob.glob(state + ".new.*") + glob.glob(state + ".prev.new.*")
            t.ok(not left, "a failed save leaves no temporary file behind", "%r" % left)
            # a user who is not in DaemonUsers is refused before anything
            # else: no save is retried for him while the disk fails
            uid, _ = t.test_user()
            user = plugin_client(cl, sock, uid=uid)
            before = (resv_stats(c).get("state") or {}).get("save_errors", 0)
            codes = {user.request(m, p).status for m, p in
                     [("POST", "/v1/reservations/%s/confirm" % ids[1]),
                      ("DELETE", "/v1/reservations/%s" % ids[1])] * 5}
            after = (resv_stats(c).get("state") or {}).get("save_errors", 0)
            # (the agent's own retry, every 5 s, may add one)
            t.ok(codes == {403} and after - before <= 1,
                 "10 confirms and deletes by a user not in DaemonUsers: 403, and no "
                 "save tried for him (save_errors %s, then %s)" % (before, after),
                 "%r" % codes)
        finally:
            os.rmdir(state)
            os.rename(aside, state)
        r = c.request("POST", "/v1/reservations/%s/confirm" % ids[1])
        t.ok(r.status == 200 and (r.json or {}).get("state") == "confirmed",
             "once saving works again the mutation succeeds",
             "%s %r" % (r.status, r.raw[:300]))
        sf = resv_stats(c).get("state") or {}
        t.ok(sf.get("saving") is True, "/v1/stats: saving again", "%r" % sf)

        # -- the events and history state files use the same module -----------
        t.wait_for(lambda: os.path.exists(os.path.join(state_dir, "flexco_events.state.prev")),
                   30, "events .prev")
        t.ok(os.path.exists(os.path.join(state_dir, "flexco_events.state.prev"))
             and os.path.exists(state + ".prev"),
             "the events and reservation state files keep a .prev copy",
             "%r" % os.listdir(state_dir))
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")
        grid.run("alpha", ["scancel", jobid])


if __name__ == "__main__":
    t.run_main(main)
