#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Reservations through the slurmctld/flexco plugin on a real cluster:
tentative reservations are real Slurm reservations, confirmed, shifted,
resized and deleted on request, idempotent under an Idempotency-Key,
refused when the nodes are not free, expired at their confirm deadline,
for DaemonUsers only; orphan flexco_* reservations are removed."""

import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
NOBODY = 65534


def show_res(grid, name):
    """`scontrol show res NAME` as a dict, {} when it does not exist."""
    return grid.show("alpha", "reservation", name)


def slurm_time(grid, epoch):
    """Epoch as scontrol prints it (local time, ISO without zone)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch))


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        c = plugin_client(cl, sock)
        now = int(time.time())
        start = now + 3600
        body = {"user": "root", "nodes": 2, "start": start, "duration": 1800,
                "confirm_within": 600}

        # -- create, idempotently -------------------------------------------
        r = c.request("POST", "/v1/reservations", body=body,
                      headers={"Idempotency-Key": "k-1"})
        doc = r.json or {}
        t.ok(r.status == 201 and doc.get("state") == "tentative"
             and doc.get("nodes") == 2 and doc.get("start") == start
             and doc.get("end") == start + 1800 and doc.get("user") == "root"
             and abs(doc.get("confirm_by", 0) - (now + 600)) <= 5,
             "POST /v1/reservations: 201, a tentative reservation",
             "%s %r" % (r.status, r.raw[:400]))
        name = doc.get("name", "flexco_?")
        rid = doc.get("id")
        res = show_res(grid, name)
        t.ok(res.get("NodeCnt") == "2" and res.get("Users") == "root"
             and res.get("StartTime") == slurm_time(grid, start)
             and res.get("EndTime") == slurm_time(grid, start + 1800),
             "%s exists in Slurm with 2 nodes, user root, the asked times" % name,
             "%r" % res)
        r2 = c.request("POST", "/v1/reservations", body=body,
                       headers={"Idempotency-Key": "k-1"})
        lst = (c.get("/v1/reservations").json or {}).get("reservations", [])
        t.ok(r2.status == 201 and (r2.json or {}).get("id") == rid
             and len(lst) == 1,
             "the same Idempotency-Key again: the same answer, no second reservation",
             "%s %r %r" % (r2.status, r2.raw[:200], lst))

        # -- the profile sees it --------------------------------------------
        p = c.get("/v1/profile?horizon=14400").json or {}
        during = [s for s in p.get("steps", [])
                  if s["start"] <= start + 60 < s["end"]]
        t.ok(during and during[0]["free_nodes"] == NODES - 2,
             "the profile shows the reserved nodes taken", "%r" % p.get("steps"))

        # -- authorization and validation -----------------------------------
        nobody = plugin_client(cl, sock, uid=NOBODY)
        r = nobody.request("POST", "/v1/reservations", body=body)
        t.ok(r.status == 403 and r.error_code() == "forbidden",
             "a uid not in DaemonUsers gets 403 on create",
             "%s %r" % (r.status, r.raw[:300]))
        r = nobody.request("DELETE", "/v1/reservations/%s" % rid)
        t.ok(r.status == 403, "... and 403 on delete")
        r = nobody.get("/v1/reservations")
        t.ok(r.status == 200 and (r.json or {}).get("reservations") == [],
             "... and sees no reservation of other users")
        bad = [({"user": "root", "nodes": 2, "start": start}, "missing duration"),
               (dict(body, colour="red"), "unknown field"),
               (dict(body, nodes=0), "zero nodes"),
               (dict(body, nodes="2"), "nodes as a string"),
               (dict(body, duration=-5), "negative duration"),
               (dict(body, user="flexco_no_such_user"), "unknown user"),
               (dict(body, start=now - 86400), "start in the past"),
               # the admission window (doc/reservations.md): a start from
               # 60 s ago to 366 days ahead, a duration of 60 s to 366 days
               (dict(body, start=int(time.time()) - 120), "start 120 s ago"),
               (dict(body, start=int(time.time()) + 366 * 86400 + 600),
                "start more than 366 days ahead"),
               (dict(body, duration=59), "a 59 s duration"),
               (dict(body, duration=366 * 86400 + 1), "a duration over 366 days"),
               (dict(body, confirm_within=3601), "confirm_within over an hour"),
               ("{\"user\": ", "invalid JSON"),
               ("[1,2]", "not an object")]
        for b, what in bad:
            r = c.request("POST", "/v1/reservations", body=b)
            t.ok(r.status == 400 and r.is_json_error(),
                 "create with %s: 400 JSON error" % what,
                 "%s %r" % (r.status, r.raw[:300]))
        past = int(time.time()) - 30
        r = c.request("POST", "/v1/reservations",
                      body=dict(body, nodes=1, start=past, duration=600))
        doc = r.json or {}
        t.ok(r.status == 201 and past + 30 <= doc.get("start", 0) <= int(time.time())
             and doc.get("end") == doc.get("start", 0) + 600,
             "create with a start 30 s ago: 201, starting now",
             "%s %r" % (r.status, r.raw[:300]))
        if r.status == 201:
            r = c.request("DELETE", "/v1/reservations/%s" % doc["id"])
            t.ok(r.status == 200 and not show_res(grid, doc["name"]),
                 "... deleted again", "%s %r" % (r.status, r.raw[:300]))
        r = c.get("/v1/reservations/abc")
        t.ok(r.status == 400, "a non-numeric id: 400")
        r = c.get("/v1/reservations/999999")
        t.ok(r.status == 404, "an unknown id: 404")

        # -- admission ------------------------------------------------------
        r = c.request("POST", "/v1/reservations",
                      body=dict(body, nodes=NODES + 1))
        t.ok(r.status == 409 and r.error_code() == "not_available",
             "more nodes than the partition has: 409 not_available",
             "%s %r" % (r.status, r.raw[:300]))
        jobid = grid.submit("alpha", ["-N3", "-t", "20", "-o", "/dev/null",
                                      "--wrap", "sleep 600"])
        job = grid.wait_job("alpha", jobid, states=("RUNNING",))
        r = c.request("POST", "/v1/reservations",
                      body=dict(body, start=int(time.time()) + 60, nodes=2))
        t.ok(job.get("JobState") == "RUNNING" and r.status == 409
             and r.error_code() == "not_available",
             "2 nodes while a 3-node job runs on 4: 409 not_available",
             "%s %r" % (r.status, r.raw[:300]))
        grid.run("alpha", ["scancel", jobid])

        # -- confirm, shift, resize -----------------------------------------
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid)
        t.ok(r.status == 200 and (r.json or {}).get("state") == "confirmed"
             and (r.json or {}).get("confirm_by") is None,
             "confirm: 200, confirmed", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid)
        t.ok(r.status == 200, "confirming again is harmless")
        new_start = start + 1800
        r = c.request("PATCH", "/v1/reservations/%s" % rid,
                      body={"start": new_start})
        res = show_res(grid, name)
        t.ok(r.status == 200 and (r.json or {}).get("start") == new_start
             and res.get("StartTime") == slurm_time(grid, new_start)
             and res.get("EndTime") == slurm_time(grid, new_start + 1800),
             "PATCH start: Slurm's reservation moves, its length kept",
             "%s %r %r" % (r.status, r.raw[:300], res))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 3})
        res = show_res(grid, name)
        t.ok(r.status == 200 and res.get("NodeCnt") == "3",
             "PATCH nodes: Slurm's reservation grows to 3 nodes",
             "%s %r %r" % (r.status, r.raw[:300], res))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 9})
        t.ok(r.status == 409 and r.is_json_error() and show_res(grid, name).get("NodeCnt") == "3",
             "PATCH to more nodes than exist: 409, nothing changed",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"colour": 1})
        t.ok(r.status == 400, "PATCH with an unknown field: 400")
        for patch, what in [({"start": int(time.time()) + 366 * 86400 + 600},
                             "a start more than 366 days ahead"),
                            ({"start": int(time.time()) - 120}, "a start 120 s ago"),
                            ({"duration": 30}, "a 30 s duration")]:
            r = c.request("PATCH", "/v1/reservations/%s" % rid, body=patch)
            res = show_res(grid, name)
            t.ok(r.status == 400 and r.error_code() == "bad_request"
                 and res.get("StartTime") == slurm_time(grid, new_start)
                 and res.get("NodeCnt") == "3",
                 "PATCH with %s: 400, the reservation unchanged" % what,
                 "%s %r %r" % (r.status, r.raw[:300], res))

        # -- a refusal that is not final is not kept under its key ----------
        # (issue 14 §1.8) With the 4th node held by another reservation,
        # growing to 4 nodes is refused (409, nothing done); once it is
        # free, the same request under the same Idempotency-Key is carried
        # out instead of getting the stored 409 for 24 hours.
        r = grid.run("alpha", ["scontrol", "create", "reservation",
                               "ReservationName=block_1", "StartTime=now+60minutes",
                               "Duration=120", "NodeCnt=1", "Users=root"])
        t.ok(r.returncode == 0, "another reservation holds alpha's 4th node",
             r.stdout + r.stderr)
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 4},
                      headers={"Idempotency-Key": "m-1"})
        t.ok(r.status == 409 and r.is_json_error()
             and show_res(grid, name).get("NodeCnt") == "3",
             "PATCH to 4 nodes while one is held: 409, nothing changed",
             "%s %r" % (r.status, r.raw[:300]))
        r = grid.run("alpha", ["scontrol", "delete", "ReservationName=block_1"])
        t.ok(r.returncode == 0, "... the other reservation is deleted", r.stdout + r.stderr)
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 4},
                      headers={"Idempotency-Key": "m-1"})
        t.ok(r.status == 200 and (r.json or {}).get("nodes") == 4
             and show_res(grid, name).get("NodeCnt") == "4",
             "the same PATCH under the same key again: carried out now (200, 4 nodes), "
             "not the stored 409", "%s %r %r" % (r.status, r.raw[:300], show_res(grid, name)))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 4},
                      headers={"Idempotency-Key": "m-1"})
        t.ok(r.status == 200 and (r.json or {}).get("nodes") == 4,
             "... and that final answer is kept: the same key again replays it",
             "%s %r" % (r.status, r.raw[:300]))

        # -- delete ---------------------------------------------------------
        r = c.request("DELETE", "/v1/reservations/%s" % rid,
                      headers={"Idempotency-Key": "d-1"})
        t.ok(r.status == 200 and (r.json or {}).get("state") == "deleted"
             and not show_res(grid, name),
             "DELETE: the Slurm reservation is gone, the record says deleted",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("DELETE", "/v1/reservations/%s" % rid,
                      headers={"Idempotency-Key": "d-1"})
        t.ok(r.status == 200, "the same DELETE again: the same answer")

        # -- expiry of an unconfirmed reservation ---------------------------
        r = c.request("POST", "/v1/reservations",
                      body=dict(body, confirm_within=2))
        doc = r.json or {}
        name2, rid2 = doc.get("name", "?"), doc.get("id")
        t.ok(r.status == 201 and show_res(grid, name2),
             "a tentative reservation with a 2 s confirm deadline is made")
        gone = t.wait_for(lambda: not show_res(grid, name2), 30,
                          "the unconfirmed reservation to disappear")
        rec = c.get("/v1/reservations/%s" % rid2).json or {}
        t.ok(gone and rec.get("state") == "expired",
             "unconfirmed past its deadline: deleted in Slurm, record expired",
             "%r" % rec)
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid2)
        t.ok(r.status == 409 and r.error_code() == "gone",
             "confirming an expired reservation: 409 gone")

        # -- orphans --------------------------------------------------------
        r = grid.run("alpha", ["scontrol", "create", "reservation",
                               "ReservationName=flexco_777", "StartTime=now+2hours",
                               "Duration=10", "NodeCnt=1", "Users=root"])
        t.ok(r.returncode == 0, "an orphan flexco_777 is created behind the plugin's back",
             r.stdout + r.stderr)
        gone = t.wait_for(lambda: not show_res(grid, "flexco_777"), 30,
                          "the orphan to be deleted")
        t.ok(gone, "the plugin deletes a flexco_* reservation it does not know")

        # -- across a slurmctld restart -------------------------------------
        keep = c.request("POST", "/v1/reservations",
                         body=dict(body, start=int(time.time()) + 7200))
        c.request("POST", "/v1/reservations/%s/confirm" % (keep.json or {}).get("id"))
        r = c.request("POST", "/v1/reservations",
                      body=dict(body, start=int(time.time()) + 7200,
                                confirm_within=3))
        tent = r.json or {}
        t.ok(keep.status == 201 and r.status == 201,
             "a confirmed and a tentative (3 s deadline) reservation before the restart")
        deadline = tent.get("confirm_by", 0)
        grid.restart_slurmctld(
            "alpha", while_down=lambda: t.wait_for(
                lambda: time.time() > deadline + 1, 30,
                "the deadline to pass while slurmctld is down"))
        t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url"))(grid.status()),
                   30, "the plugin to listen again")
        gone = t.wait_for(lambda: not show_res(grid, tent.get("name", "?")), 30,
                          "the tentative reservation to disappear after the restart")
        rec = c.get("/v1/reservations/%s" % tent.get("id")).json or {}
        t.ok(gone and rec.get("state") == "expired",
             "a deadline that passed while slurmctld was down: deleted after "
             "the restart, record expired", "%r" % rec)
        rec = c.get("/v1/reservations/%s" % (keep.json or {}).get("id")).json or {}
        t.ok(rec.get("state") == "confirmed" and show_res(grid, rec.get("name", "?")),
             "a confirmed reservation survives the restart", "%r" % rec)
        r = c.request("POST", "/v1/reservations", body=body,
                      headers={"Idempotency-Key": "k-1"})
        t.ok(r.status == 201 and (r.json or {}).get("id") == rid,
             "idempotency keys survive the restart (k-1 answers as before)",
             "%s %r" % (r.status, r.raw[:200]))
        r = c.request("POST", "/v1/reservations",
                      body=dict(body, start=int(time.time()) + 9000))
        t.ok(r.status == 201 and (r.json or {}).get("id", 0) > tent.get("id", 0),
             "ids are not reused after the restart", "%r" % r.raw[:200])

        # -- owner: a client's tag, kept and shown (issue 15 §1.4) -----------
        for bad_owner in ("", "a b", "x" * 65, 7):
            r = c.request("POST", "/v1/reservations",
                          body={"user": "root", "nodes": 1, "start": int(time.time()) + 20000,
                                "duration": 120, "owner": bad_owner})
            t.ok(r.status == 400 and r.error_code() == "bad_request",
                 "owner %r: 400 bad_request" % (bad_owner,), "%s %r" % (r.status, r.raw[:200]))
        r = c.request("POST", "/v1/reservations",
                      body={"user": "root", "nodes": 1, "start": int(time.time()) + 20000,
                            "duration": 120, "owner": "flexcod-0123abcd.x_y"})
        oid = (r.json or {}).get("id")
        listed = [x for x in (c.get("/v1/reservations").json or {}).get("reservations", [])
                  if x.get("id") == oid]
        t.ok(r.status == 201 and r.json.get("owner") == "flexcod-0123abcd.x_y"
             and listed and listed[0].get("owner") == "flexcod-0123abcd.x_y",
             "a reservation made with an owner shows it in its record and the list",
             "%s %r" % (r.status, r.raw[:300]))
        c.request("DELETE", "/v1/reservations/%s" % oid)

        # -- enough nodes at every moment, but never the same ones -----------
        # (issue 15 §1.7) alpha[1-3] held for the first minute, alpha[2-4]
        # for the second: one node is free at every moment of the two
        # minutes, but no node for both.  Slurm reserves whole nodes for the
        # whole window and says "Requested nodes are busy": that is a lack
        # of capacity like any other, 409 not_available (it was "refused",
        # which flexcod takes for a broken cluster).
        base = (int(time.time()) // 60 + 600) * 60
        stamp = lambda e: time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(e))
        for rname, nodes, at in (("frag_a", "alpha[1-3]", base), ("frag_b", "alpha[2-4]", base + 60)):
            r = grid.run("alpha", ["scontrol", "create", "reservation", "ReservationName=" + rname,
                                   "Nodes=" + nodes, "StartTime=" + stamp(at), "Duration=1",
                                   "Users=root"])
            t.ok(r.returncode == 0, "site reservation %s on %s at %s" % (rname, nodes, stamp(at)),
                 r.stdout + r.stderr)
        r = c.request("POST", "/v1/reservations",
                      body={"user": "root", "nodes": 1, "start": base, "duration": 120})
        t.ok(r.status == 409 and r.error_code() == "not_available"
             and "free together" in r.raw.decode(errors="replace"),
             "1 node for both minutes: 409 not_available (Slurm: no node free throughout)",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations",
                      body={"user": "root", "nodes": 1, "start": base + 120, "duration": 120})
        t.ok(r.status == 201, "1 node right after them: 201", "%s %r" % (r.status, r.raw[:300]))
        for rname in ("frag_a", "frag_b"):
            grid.run("alpha", ["scontrol", "delete", "ReservationName=" + rname])

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
