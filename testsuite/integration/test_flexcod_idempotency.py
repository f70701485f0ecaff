#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""POST /v1/coallocations under an Idempotency-Key on a real grid: the same
request twice makes one co-allocation and one set of reservations in Slurm;
the key survives a kill -9 of flexcod (after the answer, and in the middle
of the commit); the same key with another body is refused with 422; a key
too long is refused with 400.  sreserve submit sends a key per invocation
and retries with it when flexcod dies under it.  PublicStats: by default
GET /v1/stats and /v1/clusters need a credential; with PublicStats=yes
they answer without one, and nothing else does."""

import os
import signal
import subprocess
import threading
import time

import flexcotest as t
from flexcodtest import HOLD_ENV, Flexcod, Hold, nothing_left, script, slurm_reservations

NODES = [4, 4, 4]


def post(fc, body, key):
    r = fc.client().request("POST", "/v1/coallocations", body=body,
                            headers={"Idempotency-Key": key})
    return r.status, r.json or {}


def all_coallocations(fc):
    r = fc.client().get("/v1/coallocations")
    return [c["id"] for c in (r.json or {}).get("coallocations", [])]


def flexco_reservations(grid):
    return sum(len(v) for v in slurm_reservations(grid).values())


def main():
    t.require_grid_tools()
    hold_dir = t.scratch_dir("flexcod-hold-")
    os.environ[HOLD_ENV] = hold_dir
    with t.Grid(nodes=NODES, args=["--test-hooks"]) as grid:
        fc = Flexcod(grid)
        st = grid.status()
        tmp = t.scratch_dir("flexcod-idem-")
        os.chmod(tmp, 0o777)
        # Starting in an hour: the reservations wait in Slurm while we look.
        body = {"nodes": 6, "duration": 600, "ready": int(time.time()) + 3600,
                "script": script(tmp, "sleep 300"), "std_out": "/dev/null"}

        # -- the same POST twice: one co-allocation, one set of reservations ---
        s1, d1 = post(fc, body, "test-key-1")
        t.ok(s1 == 201 and d1.get("state") == "scheduled",
             "first POST with a key: 201, scheduled", "%s %r" % (s1, d1))
        nparts = len(d1.get("parts", []))
        s2, d2 = post(fc, body, "test-key-1")
        t.ok(s2 == 200 and d2.get("id") == d1.get("id"),
             "the same POST again: 200 with the same co-allocation", "%s %r" % (s2, d2))
        t.ok(all_coallocations(fc) == [d1.get("id")], "one co-allocation in flexcod",
             "%r" % all_coallocations(fc))
        t.ok(nparts >= 1 and flexco_reservations(grid) == nparts,
             "one set of reservations in Slurm (%d)" % nparts, "%r" % slurm_reservations(grid))

        # -- another body under the same key: 422, nothing made ----------------
        s3, d3 = post(fc, dict(body, nodes=5), "test-key-1")
        t.ok(s3 == 422 and (d3.get("error") or {}).get("code") == "key_reused",
             "the same key with another body: 422 key_reused", "%s %r" % (s3, d3))
        s4, d4 = post(fc, body, "k" * 129)
        t.ok(s4 == 400, "a key of 129 characters: 400", "%s %r" % (s4, d4))
        t.ok(all_coallocations(fc) == [d1.get("id")] and flexco_reservations(grid) == nparts,
             "... neither made anything", "%r" % all_coallocations(fc))

        # -- the key survives a kill -9 after the answer ------------------------
        fc.restart(kill9=True)
        s5, d5 = post(fc, body, "test-key-1")
        t.ok(s5 == 200 and d5.get("id") == d1.get("id"),
             "after kill -9 and a restart the retry returns the same co-allocation",
             "%s %r" % (s5, d5))
        t.ok(all_coallocations(fc) == [d1.get("id")] and flexco_reservations(grid) == nparts,
             "... and makes nothing", "%r %r" % (all_coallocations(fc), slurm_reservations(grid)))
        r = fc.client().request("DELETE", "/v1/coallocations/%d" % d1["id"])
        t.ok(r.status == 200 and t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
             "cancelled; nothing left in Slurm", "%r" % slurm_reservations(grid))

        # -- kill -9 in the middle of the commit, then the retry ---------------
        h = Hold(hold_dir, "submitted")
        out = {}

        def first():
            try:
                out["r"] = post(fc, body, "test-key-2")
            except Exception as e:  # the connection dies with flexcod
                out["e"] = e
        th = threading.Thread(target=first)
        th.start()
        t.ok(h.reached(), "flexcod reached step 'submitted' of the first POST")
        fc.restart(kill9=True, env={HOLD_ENV: hold_dir}, while_down=h.release)
        th.join(60)
        t.ok("e" in out, "kill -9: the client lost its connection", "%r" % out)
        ids = all_coallocations(fc)
        s6, d6 = post(fc, body, "test-key-2")
        t.ok(s6 == 200 and len(ids) == 2 and d6.get("id") == max(ids)
             and d6.get("state") == "failed"
             and "restarted during the commit" in (d6.get("reason") or ""),
             "the retry returns the interrupted co-allocation, rolled back",
             "%s %r %r" % (s6, d6, ids))
        t.ok(all_coallocations(fc) == ids, "... and makes no second one",
             "%r" % all_coallocations(fc))
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
             "nothing left in Slurm", "%r" % slurm_reservations(grid))

        # -- sreserve submit sends a key and retries with it -------------------
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("FLEXCO_URL", "FLEXCO_MUNGE", "FLEXCOD_CONF"))}
        e.update(FLEXCOD_CONF=st["flexcod"]["conf"], TZ="UTC")
        sreserve = os.path.join(t.builddir(), "src", "sreserve", "sreserve")
        h = Hold(hold_dir, "submitted")
        proc = subprocess.Popen([sreserve, "submit", "-v", "-N", "6", "-t", "10", "-o", "/dev/null",
                                 "--begin", "now+1hour", "--wrap", "sleep 300"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=e, stdin=subprocess.DEVNULL)
        t.ok(h.reached(), "flexcod reached step 'submitted' of sreserve's POST")
        fc.restart(kill9=True, env={HOLD_ENV: hold_dir}, while_down=h.release)
        try:
            sout, serr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            sout, serr = proc.communicate()
        after = all_coallocations(fc)
        t.ok("retrying in" in serr and "Idempotency-Key sreserve-" in serr
             and len(after) == 3 and ("co-allocation %d failed" % max(after)) in serr
             and proc.returncode == 1,
             "sreserve retried with its key and reports the one co-allocation it made",
             "rc %s out %r err %r ids %r" % (proc.returncode, sout, serr, after))
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
             "nothing left in Slurm", "%r" % slurm_reservations(grid))

        # -- PublicStats --------------------------------------------------------
        c = fc.client()
        for path in ("/v1/stats", "/v1/clusters"):
            r = c.request("GET", path, auth=None)
            t.ok(r.status == 401, "default: unsigned GET %s: 401" % path, "%s" % r.status)
        conf = st["flexcod"]["conf"]
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text + "PublicStats=yes\n")
        os.kill(fc.pid, signal.SIGHUP)
        t.ok(t.wait_for(lambda: c.request("GET", "/v1/stats", auth=None).status == 200, 30,
                        "stats to be public"),
             "PublicStats=yes (SIGHUP): unsigned GET /v1/stats: 200")
        r = c.request("GET", "/v1/clusters", auth=None)
        t.ok(r.status == 200 and len((r.json or {}).get("clusters", [])) == 3,
             "PublicStats=yes: unsigned GET /v1/clusters: 200", "%s %r" % (r.status, r.json))
        for m, path in (("GET", "/v1/coallocations"), ("POST", "/v1/coallocations"),
                        ("GET", "/v1/coallocations/1")):
            r = c.request(m, path, auth=None, body=body if m == "POST" else b"")
            t.ok(r.status == 401, "PublicStats=yes: unsigned %s %s: still 401" % (m, path),
                 "%s" % r.status)
        with open(conf, "w") as f:
            f.write(text)
        os.kill(fc.pid, signal.SIGHUP)
        t.ok(t.wait_for(lambda: c.request("GET", "/v1/stats", auth=None).status == 401, 30,
                        "stats to need a credential again"),
             "PublicStats removed (SIGHUP): unsigned GET /v1/stats: 401 again")
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
