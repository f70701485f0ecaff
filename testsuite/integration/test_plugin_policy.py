#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Site policy on a real cluster: QueryUsers limits who may read profiles
and probes, MinFit refuses a reservation whose slot would delay planned
local work (the thesis' what-if fitness as admission rule), an offer
reserved at once is granted exactly as offered, and /v1/stats counts
reservations by state and the refusals."""

import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
NOBODY = 65534


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod", "--plugin-option", "QueryUsers=root",
                                     "--plugin-option", "MinFit=0.9"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        cl, sock = st["clusters"][0], st["munge_socket"]
        c = plugin_client(cl, sock)
        nobody = plugin_client(cl, sock, uid=NOBODY)

        # -- QueryUsers ---------------------------------------------------
        for method, path, body in [("GET", "/v1/profile", None),
                                   ("POST", "/v1/probe", {"nodes": 1, "duration": 60}),
                                   ("GET", "/v1/stats", None),
                                   ("GET", "/v1/events?after=0", None)]:
            r = nobody.request(method, path, body=body if body is not None else b"")
            t.ok(r.status == 403 and r.error_code() == "forbidden",
                 "QueryUsers=root: uid %d gets 403 on %s %s" % (NOBODY, method, path),
                 "%s %r" % (r.status, r.raw[:200]))
        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 60})
        t.ok(r.status == 200, "... and root is answered")
        r = nobody.request("GET", "/v1/profile", auth=None)
        t.ok(r.status == 401, "an unsigned request is still 401, not 403")

        # -- an offer reserved at once is granted as offered --------------
        r = c.request("POST", "/v1/probe", body={"nodes": 2, "duration": 600})
        offer = ((r.json or {}).get("offers") or [{}])[0]
        r = c.request("POST", "/v1/reservations", body={
            "user": "root", "nodes": offer.get("nodes", 2),
            "start": offer.get("start", 0), "duration": 600, "confirm_within": 300})
        answered = int(time.time())
        doc = r.json or {}
        res = grid.show("alpha", "reservation", doc.get("name", "?"))
        # The first offer starts at the probe's snapshot, "now": when the
        # clock has ticked on before the reservation is handled, the plugin
        # starts it at its own now (a reservation never starts in the past),
        # so the start is the offer's or a later second no later than the
        # answer, and nothing else.
        want = offer.get("start", -1)
        got = doc.get("start", -2)
        t.ok(r.status == 201 and (got == want or want < got <= answered)
             and doc.get("nodes") == 2 and res.get("NodeCnt") == "2",
             "the first offer, reserved at once, is granted with its start and nodes",
             "%s %r offer %r answered at %d" % (r.status, r.raw[:300], offer, answered))
        rid = doc.get("id")
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid, body={})
        t.ok(r.status == 200 and (r.json or {}).get("state") == "confirmed",
             "... and confirmed")
        r = c.request("DELETE", "/v1/reservations/%s" % rid)
        t.ok(r.status == 200, "... and deleted")

        # -- MinFit: a slot that would delay the planned queue is refused --
        # 3 of 4 nodes run for 10 minutes; a 4-node job waits for them, so
        # it is planned at their end.  One free node now is available for
        # a reservation, but holding it past the 10 minutes pushes the
        # 4-node job back: fit 0 (the head job moves), below MinFit 0.9.
        run = grid.submit("alpha", ["-N3", "-t", "10", "-o", "/dev/null",
                                    "--wrap", "sleep 600"])
        grid.wait_job("alpha", run, states=("RUNNING",))
        pend = grid.submit("alpha", ["-N4", "-t", "10", "-o", "/dev/null",
                                     "--wrap", "sleep 60"])
        t.wait_for(lambda: grid.job("alpha", pend).get("JobState") == "PENDING",
                   30, "the 4-node job to wait")
        now = int(time.time())
        r = c.request("POST", "/v1/reservations", body={
            "user": "root", "nodes": 1, "start": now, "duration": 1800})
        doc = r.json or {}
        lst = grid.run("alpha", ["scontrol", "show", "reservation"]).stdout
        t.ok(r.status == 409 and r.error_code() == "low_fit"
             and "MinFit 0.90" in (doc.get("error") or {}).get("message", "")
             and "flexco_" not in lst,
             "a 1-node reservation over the waiting 4-node job's start: 409 low_fit, "
             "nothing made in Slurm", "%s %r %r" % (r.status, r.raw[:300], lst[:300]))
        r = c.request("POST", "/v1/reservations", body={
            "user": "root", "nodes": 1, "start": now, "duration": 240})
        doc = r.json or {}
        t.ok(r.status == 201 and doc.get("state") == "tentative",
             "a 1-node reservation that ends before the running job does: granted (fit 1)",
             "%s %r" % (r.status, r.raw[:300]))
        rid2 = doc.get("id")
        r = c.request("POST", "/v1/reservations", body={
            "user": "root", "nodes": 2, "start": now, "duration": 120})
        t.ok(r.status == 409 and r.error_code() == "not_available",
             "2 more nodes now: 409 not_available (only 0 are free)",
             "%s %r" % (r.status, r.raw[:300]))

        # -- stats ---------------------------------------------------------
        s = (c.get("/v1/stats").json or {}).get("reservations", {})
        by = s.get("by_state", {})
        t.ok(by.get("tentative") == 1 and by.get("deleted") == 1
             and s.get("refused", {}).get("low_fit") == 1
             and s.get("refused", {}).get("not_available") == 1,
             "stats count reservations by state and the refusals", "%r" % s)
        c.request("DELETE", "/v1/reservations/%s" % rid2)
        grid.run("alpha", ["scancel", run, pend])
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
