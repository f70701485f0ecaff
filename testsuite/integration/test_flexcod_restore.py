#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexcod's database restored from a backup (issue 15 §1.4), on a real
grid.  After the backup a co-allocation B was made; the restored database
does not know it, so its next co-allocation gets B's id again.  Every new
Idempotency-Key holds a random part made at each start of flexcod, so the
plugins never take the new co-allocation's requests for B's (before, the
keys were the same and the plugins answered with B's reservations: a
rolled-back attempt at best).  B's reservations, which the restored
database does not know, are deleted as orphans of this instance.  A
second flexcod with a database of its own on the same clusters leaves the
first one's reservations alone: they carry the first one's owner tag."""

import os
import sqlite3
import subprocess
import time

import flexcotest as t
from flexcodtest import Flexcod, script, slurm_reservations
from flexcohttp import FLEXCOD, Client


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[4, 4, 4]) as grid:
        fc = Flexcod(grid)
        admin = fc.client()
        t.wait_for(fc.listening, 30, "flexcod to reach every cluster")
        tmp = t.scratch_dir("flexcod-restore-")
        os.chmod(tmp, 0o777)
        later = int(time.time()) + 3600
        # One cluster, one part: B's and C's parts meet the same plugin
        # with the same part index.
        body = {"nodes": 2, "duration": 120, "ready": later, "clusters": ["alpha"],
                "max_parts": 1, "script": script(tmp), "std_out": "/dev/null"}

        st, a = fc.submit(body)
        t.ok(st == 201 and a.get("state") == "scheduled", "co-allocation A scheduled an hour ahead",
             "%s %r" % (st, a))
        db = fc.info["state_file"]
        backup = os.path.join(tmp, "backup.db")
        src = sqlite3.connect(db)
        dst = sqlite3.connect(backup)
        src.backup(dst)
        dst.close()
        src.close()
        t.ok(os.path.getsize(backup) > 0, "an online backup of flexcod's database")

        st, b = fc.submit(dict(body, ready=later + 600))
        t.ok(st == 201 and b.get("id") == a.get("id", 0) + 1, "co-allocation B after the backup",
             "%s %r" % (st, b))
        b_res = {(p["cluster"], p["reservation"]) for p in (b or {}).get("parts", [])}

        def restore():
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(db + suffix):
                    os.unlink(db + suffix)
            with open(backup, "rb") as f, open(db, "wb") as g:
                g.write(f.read())
            os.chmod(db, 0o600)
        fc.restart(kill9=False, while_down=restore)
        st, doc = fc.get(b.get("id"))
        t.ok(st == 404, "the restored database does not know B", "%s %r" % (st, doc))

        def b_gone():
            res = slurm_reservations(grid)
            return not any(name in res.get(cl, []) for cl, name in b_res)
        t.ok(t.wait_for(b_gone, 60, "B's reservations to go"),
             "B's reservations, unknown to the restored database, are deleted as orphans",
             "%r %r" % (b_res, slurm_reservations(grid)))

        before = (admin.get("/v1/stats").json or {}).get("rollbacks", 0)
        st, c = fc.submit(dict(body, ready=later + 1200))
        t.ok(st == 201 and c.get("id") == b.get("id"),
             "co-allocation C gets B's id again (%s)" % c.get("id"), "%s %r" % (st, c))
        after = (admin.get("/v1/stats").json or {}).get("rollbacks", 0)
        hist = [h for h in (fc.get(c.get("id"))[1] or {}).get("history", [])
                if "rolled back" in h.get("reason", "")]
        t.ok(after == before and not hist,
             "C placed at the first attempt: no plugin answered with B's reservation",
             "rollbacks %s -> %s, %r" % (before, after, hist))
        res = slurm_reservations(grid)
        c_res = {(p["cluster"], p["reservation"]) for p in c.get("parts", [])}
        t.ok(c_res and all(name in res.get(cl, []) for cl, name in c_res)
             and not (c_res & b_res),
             "C's reservations are its own and exist in Slurm", "%r %r %r" % (c_res, b_res, res))
        # -- a second flexcod with its own database on the same clusters -----
        # Its reconciliation sees A's and C's reservations, which its
        # database does not know: they carry the first one's owner tag, so
        # they are not its orphans (before, it deleted them).
        d2 = t.scratch_dir("flexcod-second-")
        port2 = fc.info["port"] + 7
        env = dict(os.environ, FLEXCOD_CONF=fc.conf_copy(d2, port2))
        second = subprocess.Popen([fc.info["program"], "-D", "-L", os.path.join(d2, "log")],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            c2 = Client("http://127.0.0.1:%d" % port2, fc.socket, FLEXCOD, timeout=60)

            def reconciled():
                try:
                    cl = (c2.get("/v1/clusters").json or {}).get("clusters", [])
                except OSError:
                    return False
                return len(cl) == 3 and all(x.get("reconciled") for x in cl)
            t.ok(t.wait_for(reconciled, 60, "the second flexcod to reconcile"),
                 "a second flexcod with its own database reconciled every cluster")
            st2 = c2.get("/v1/stats").json or {}
            res = slurm_reservations(grid)
            t.ok(all(name in res.get(cl, []) for cl, name in c_res)
                 and st2.get("orphans") == 0 and st2.get("foreign_reservations", 0) >= 2,
                 "... and left the first one's reservations alone (foreign, not orphans)",
                 "%r %r %r" % (c_res, res, st2))
            t.ok(fc.get(a["id"])[1].get("state") == "scheduled"
                 and fc.get(c["id"])[1].get("state") == "scheduled",
                 "the first flexcod's co-allocations are still scheduled")
        finally:
            second.terminate()
            second.wait(30)

        for co in (a, c):
            admin.request("DELETE", "/v1/coallocations/%s" % co.get("id"))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
