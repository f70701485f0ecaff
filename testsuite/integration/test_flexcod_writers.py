#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One writer of flexcod's database, and no write from an older copy
(issue 38 §2.5).

(1) A second flexcod with its own port and pid file but the same StateFile
refuses to start, saying the database is in use; before, it started, shared
the first one's owner tag, failed its commits and swept its reservations as
orphans.  The first one goes on serving.  (2) The owner cancels a
co-allocation (DELETE) after its submission was written but before the
submission took the co-allocation's lock: the submission must leave it
cancelled and place nothing; before, it placed its older copy and the
cancelled co-allocation came back to life, scheduled, with reservations on
the clusters.

On a grid of sites (localgrid --sites): each cluster and flexcod in a
network namespace of its own."""

import os
import subprocess
import threading

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script

NODES = [4, 4]


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-writers-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--sites", "--test-hooks"]) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-writers-")
        os.chmod(tmp, 0o777)

        # -- 1. a second flexcod on the same database -----------------------
        d2 = t.scratch_dir("flexcod-second-")
        port2 = t.free_port(avoid=(fc.info["port"],))
        env = dict(os.environ, FLEXCOD_CONF=fc.conf_copy(d2, port2, same_db=True))
        env.pop(HOLD_ENV, None)
        second = subprocess.Popen([fc.info["program"], "-D", "-L", os.path.join(d2, "log")],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        exited = t.wait_for(lambda: second.poll() is not None, 30, "the second flexcod to exit")
        if not exited:  # it runs on the first one's database: stop it
            second.kill()
            second.wait(30)
        said = t.read_file(os.path.join(d2, "log"))
        t.ok(exited and second.returncode != 0 and "in use by another flexcod" in said,
             "a second flexcod on the same StateFile refuses to start and says why",
             "exit %r; %r" % (second.returncode, said[-500:]))
        t.ok(fc.listening(), "the first flexcod goes on serving")

        # -- 2. DELETE between the submission's insert and its lock ----------
        body = {"nodes": 6, "duration": 120, "script": script(tmp, "sleep 60"),
                "std_out": "/dev/null"}
        h = Hold(hold_dir, "inserted")
        out = {}
        th = threading.Thread(target=lambda: out.update(r=fc.submit(body)))
        th.start()
        t.ok(h.reached(), "the submission holds after its insert, before its lock")
        listed = fc.client().get("/v1/coallocations?state=planning").json or {}
        cos = listed.get("coallocations", [])
        coid = cos[0]["id"] if cos else None
        d = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
        t.ok(d.status == 200 and (d.json or {}).get("state") == "cancelled",
             "its owner cancels it meanwhile", "%s %r" % (d.status, d.json))
        h.release()
        th.join(120)
        st, doc = out.get("r", (None, None))
        doc = doc or {}
        t.ok(doc.get("state") == "cancelled" and not doc.get("parts"),
             "the submission leaves it cancelled and places nothing", "%s %r" % (st, doc))
        s, now = fc.get(coid)
        t.ok((now or {}).get("state") == "cancelled", "it is still cancelled",
             "%s %r" % (s, now))
        t.ok(nothing_left(grid), "no reservation or job was made for it on either cluster")
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
