#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Event sequence numbers are never handed out above a mark that was not
saved (issue 37 §1.5), on a real cluster.  The first event of a fresh
cluster needs a block of numbers reserved in StateSaveLocation
(flexco_events.state).  While that file cannot be written, events wait
unnumbered: none is published, /v1/stats counts them.  slurmctld is then
killed (SIGKILL) and started with the file writable: the numbers it hands
out are above every number a client saw before the crash.  (Before, the
events were numbered and published although the mark was not saved, and
after the crash the same numbers were handed out again: a client with a
cursor above them silently skipped the new events.)"""

import os
import signal
import time

import flexcotest as t
from flexcohttp import plugin_client

STATE = "flexco_events.state"


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[2], args=["--no-flexcod"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        cl = st["clusters"][0]
        c = plugin_client(cl, st["munge_socket"])
        state = os.path.join(os.path.dirname(cl["slurm_conf"]), "state", STATE)

        def events():
            r = c.get("/v1/events?after=0&max=1000")
            return r.json if r.status == 200 else {}

        def ev_stats():
            return (c.get("/v1/stats").json or {}).get("events", {})

        def activate():
            """A reservation that starts now: a reservation_activated event.
            (Retried: after a restart Slurm counts the nodes unavailable
            until they registered again, and refuses it 409.)"""
            def make():
                r = c.request("POST", "/v1/reservations",
                              body={"user": "root", "nodes": 1, "start": int(time.time()),
                                    "duration": 600, "confirm_within": 3600})
                return r.status == 201 and r.json
            doc = t.wait_for(make, 60, "a reservation that starts now")
            return bool(doc) and c.request(
                "POST", "/v1/reservations/%s/confirm" % doc.get("id")).status == 200

        # reservations that exist at the events module's first look are its
        # baseline (no events for them): let it look first
        t.ok(t.wait_for(lambda: ev_stats().get("resv_snapshots", 0) >= 1, 30,
                        "the first copy of the reservation list"),
             "the events module made its first copy of Slurm's reservations")
        e0 = events()
        t.ok(e0.get("latest") == 0 and not e0.get("events"),
             "a fresh cluster has published no event", "%r" % e0)
        # the mark cannot be saved: a directory where the file goes (a
        # fresh cluster may have written none yet)
        aside = state + ".aside"
        existed = os.path.exists(state)
        if existed:
            os.rename(state, aside)
        os.mkdir(state)
        t.ok(activate(), "a reservation that starts now, made while %s cannot be written"
             % STATE)
        t.ok(t.wait_for(lambda: ev_stats().get("unnumbered", 0) >= 1, 30,
                        "an unnumbered event"),
             "/v1/stats: the event waits unnumbered", "%r" % ev_stats())
        seen = events()
        t.ok(seen.get("latest") == 0 and not seen.get("events"),
             "no event is published with a number above the unsaved mark",
             "%r" % seen)
        log = grid.log_tail("alpha", n=200)
        t.ok("cannot save the sequence mark" in log and "events wait unnumbered" in log,
             "slurmctld's log says the mark cannot be saved", log[-1500:])
        before = max([e["seq"] for e in seen.get("events", [])] + [seen.get("latest", 0)])

        # -- crash, the disk comes back ---------------------------------------
        def writable():
            os.rmdir(state)
            if existed:
                os.rename(aside, state)
        grid.restart_slurmctld("alpha", while_down=writable, sig=signal.SIGKILL)
        t.wait_for(lambda: ev_stats().get("resv_snapshots", 0) >= 1, 30,
                   "the first copy of the reservation list after the restart")
        t.ok(activate(), "after the restart another reservation that starts now")
        t.ok(t.wait_for(lambda: events().get("latest", 0) >= 1, 60, "a published event"),
             "events are published again once the mark is saved", "%r" % events())
        after = events()
        seqs = [e["seq"] for e in after.get("events", [])]
        t.ok(seqs and all(s > before for s in seqs) and seqs == sorted(set(seqs)),
             "every number handed out is above those a client saw before the crash "
             "(%s), none twice" % before, "%r" % seqs)
        t.ok(any(e.get("type") == "reservation_activated" for e in after.get("events", [])),
             "the new reservation_activated event is delivered", "%r" % after)


if __name__ == "__main__":
    t.run_main(main)
