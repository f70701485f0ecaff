#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Idempotency keys of the slurmctld/flexco plugin's mutations on a real
cluster (issue 14 §1.8): the Idempotency-Key is signed (flexco-auth-v3), a
key is bound to the request it was first used for (method, target, body
digest: another request under it is 422 idempotency_key_reused and changes
nothing), keys are 1..128 visible ASCII bytes on every mutation, and one
DaemonUsers uid's keys cannot evict another uid's (per-uid share of the
cache, oldest first)."""

import concurrent.futures
import json
import os
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 4
OTHER = 1            # daemon(1): a second DaemonUsers uid on this grid
CAPACITY = 4096      # the plugin's idempotency cache (doc/reservations.md)
PER_UID = CAPACITY // 4
FLOOD = PER_UID + 76  # more keys than one uid may hold


def show_res(grid, name):
    return grid.show("alpha", "reservation", name)


def idem_stats(c):
    return ((c.get("/v1/stats").json or {}).get("reservations") or {}).get("idempotency") or {}


def main():
    t.require_grid_tools()
    with t.Grid(nodes=[NODES], args=["--no-flexcod", "--plugin-option",
                                     "DaemonUsers=root,daemon"]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        c = plugin_client(cl, sock)
        other = plugin_client(cl, sock, uid=OTHER)
        start = int(time.time()) + 3600
        body = {"user": "root", "nodes": 1, "start": start, "duration": 1800,
                "confirm_within": 600}

        def listed():
            return (c.get("/v1/reservations").json or {}).get("reservations", [])

        r = c.request("POST", "/v1/reservations", body=body,
                      headers={"Idempotency-Key": "c-1"})
        doc = r.json or {}
        rid, name = doc.get("id"), doc.get("name", "flexco_?")
        t.ok(r.status == 201 and show_res(grid, name),
             "a reservation is made under key c-1", "%s %r" % (r.status, r.raw[:300]))

        # -- (a) the key is signed -------------------------------------------
        for sent, signed, what in [("c-2", "c-3", "a key changed after signing"),
                                   ("c-2", None, "a key added after signing"),
                                   (None, "c-2", "the signed key removed")]:
            hdr = {"Idempotency-Key": sent} if sent is not None else {}
            r = c.request("POST", "/v1/reservations", body=dict(body, start=start + 60),
                          headers=hdr, sign_key=signed)
            t.ok(r.status == 401 and r.error_code() == "idempotency_key_mismatch"
                 and r.headers.get("WWW-Authenticate") == "MUNGE" and len(listed()) == 1,
                 "create with %s: 401 idempotency_key_mismatch, nothing made" % what,
                 "%s %r" % (r.status, r.raw[:300]))
        r = c.request("DELETE", "/v1/reservations/%s" % rid,
                      headers={"Idempotency-Key": "d-x"}, sign_key="d-y")
        t.ok(r.status == 401 and r.error_code() == "idempotency_key_mismatch"
             and show_res(grid, name),
             "delete with a key changed after signing: 401, the reservation stays",
             "%s %r" % (r.status, r.raw[:300]))
        # flexco-auth-v2 (doc/auth.md, "Versioning"): still accepted without
        # a key, refused with one (v2 cannot sign it).
        r = c.request("GET", "/v1/reservations/%s" % rid, version=2)
        t.ok(r.status == 200, "a flexco-auth-v2 request without a key: accepted",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations", body=dict(body, start=start + 60),
                      headers={"Idempotency-Key": "c-9"}, version=2)
        t.ok(r.status == 401 and r.error_code() == "idempotency_key_mismatch"
             and len(listed()) == 1,
             "a flexco-auth-v2 request with a key: 401 idempotency_key_mismatch, nothing made",
             "%s %r" % (r.status, r.raw[:300]))

        # -- (b) a key is bound to its request -------------------------------
        r = c.request("POST", "/v1/reservations", body=body,
                      headers={"Idempotency-Key": "c-1"})
        t.ok(r.status == 201 and (r.json or {}).get("id") == rid and len(listed()) == 1,
             "the same request under c-1 again: the stored answer", "%s %r" % (r.status, r.raw[:200]))
        r = c.request("POST", "/v1/reservations", body=dict(body, nodes=2),
                      headers={"Idempotency-Key": "c-1"})
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused"
             and len(listed()) == 1,
             "c-1 with another body: 422 idempotency_key_reused, nothing made",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid,
                      headers={"Idempotency-Key": "c-1"})
        rec = c.get("/v1/reservations/%s" % rid).json or {}
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused"
             and rec.get("state") == "tentative",
             "c-1 on another target (confirm): 422, still tentative",
             "%s %r %r" % (r.status, r.raw[:300], rec))
        r = c.request("DELETE", "/v1/reservations/%s" % rid,
                      headers={"Idempotency-Key": "c-1"})
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused"
             and show_res(grid, name),
             "c-1 with another method (DELETE): 422, the reservation stays",
             "%s %r" % (r.status, r.raw[:300]))
        # every mutation binds its key: confirm, modify, part-job submit
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid,
                      headers={"Idempotency-Key": "f-1"})
        t.ok(r.status == 200 and (r.json or {}).get("state") == "confirmed",
             "confirmed under f-1", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 2},
                      headers={"Idempotency-Key": "f-1"})
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused"
             and show_res(grid, name).get("NodeCnt") == "1",
             "f-1 on a PATCH: 422, the reservation keeps 1 node",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 2},
                      headers={"Idempotency-Key": "m-1"})
        t.ok(r.status == 200 and show_res(grid, name).get("NodeCnt") == "2",
             "PATCH to 2 nodes under m-1", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 3},
                      headers={"Idempotency-Key": "m-1"})
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused"
             and show_res(grid, name).get("NodeCnt") == "2",
             "m-1 with another body: 422, still 2 nodes", "%s %r" % (r.status, r.raw[:300]))
        job = {"script": "#!/bin/sh\ntrue\n", "work_dir": "/tmp", "time_limit": 60}
        path = "/v1/reservations/%s/jobs" % rid
        r = c.request("POST", path, body=job, headers={"Idempotency-Key": "j-1"})
        jobid = (r.json or {}).get("job_id")
        t.ok(r.status == 201 and isinstance(jobid, int),
             "a part job under j-1", "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", path, body=dict(job, name="other"),
                      headers={"Idempotency-Key": "j-1"})
        jobs = grid.run("alpha", ["scontrol", "show", "job", "-o"]).stdout.count("JobId=")
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused" and jobs == 1,
             "j-1 with another body: 422, no second job", "%s %r %d" % (r.status, r.raw[:300], jobs))
        r = c.request("POST", path, body=job, headers={"Idempotency-Key": "j-1"})
        t.ok(r.status == 201 and (r.json or {}).get("job_id") == jobid,
             "j-1 with its own request: the same job", "%s %r" % (r.status, r.raw[:300]))
        # the uid is part of the key: another DaemonUsers uid's f-1 is its own
        r = other.request("POST", "/v1/reservations/%s/confirm" % rid,
                          headers={"Idempotency-Key": "m-1"})
        t.ok(r.status == 200, "uid %d's m-1 is not root's m-1" % OTHER,
             "%s %r" % (r.status, r.raw[:300]))

        # -- (c) keys are bounded on every mutation --------------------------
        long_key = "k" * 129
        for method, target, b in [("POST", "/v1/reservations", dict(body, start=start + 60)),
                                  ("POST", "/v1/reservations/%s/confirm" % rid, b""),
                                  ("PATCH", "/v1/reservations/%s" % rid, {"nodes": 1}),
                                  ("DELETE", "/v1/reservations/%s" % rid, b""),
                                  ("POST", path, job)]:
            for key, what in [(long_key, "a 129-byte key"), ("k 1", "a key with a space")]:
                r = c.request(method, target, body=b, headers={"Idempotency-Key": key},
                              sign_key=None)
                t.ok(r.status == 400 and r.error_code() == "invalid_request",
                     "%s %s with %s: 400 invalid_request" % (method, target, what),
                     "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", path, body=job, headers={"Idempotency-Key": "k" * 128})
        t.ok(r.status == 201, "a 128-byte key is accepted", "%s %r" % (r.status, r.raw[:300]))
        t.ok(show_res(grid, name).get("NodeCnt") == "2" and len(listed()) == 1
             and grid.run("alpha", ["scontrol", "show", "job", "-o"]).stdout.count("JobId=") == 2,
             "the refused requests changed nothing")

        # -- (d) one uid cannot evict another's keys -------------------------
        r = c.request("POST", "/v1/reservations/%s/confirm" % rid,
                      headers={"Idempotency-Key": "keep-1"})
        t.ok(r.status == 200, "root confirms under keep-1")
        confirm = "/v1/reservations/%s/confirm" % rid

        def flood(i):
            return other.request("POST", confirm,
                                 headers={"Idempotency-Key": "flood-%d" % i}).status

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(flood, range(FLOOD)))
        t.ok(got == [200] * FLOOD, "uid %d confirms %d times under %d keys" % (OTHER, FLOOD, FLOOD),
             "%r" % sorted(set(got)))
        s = idem_stats(c)
        t.ok(s.get("capacity") == CAPACITY and s.get("per_uid") == PER_UID
             and s.get("max_uid_keys") == PER_UID and s.get("evicted_share") >= FLOOD - PER_UID,
             "stats: uid %d holds %d keys (its share), its oldest were evicted" % (OTHER, PER_UID),
             "%r" % s)
        r = c.request("DELETE", "/v1/reservations/%s" % rid,
                      headers={"Idempotency-Key": "keep-1"})
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused"
             and show_res(grid, name),
             "root's keep-1 is still remembered (reused on DELETE: 422)",
             "%s %r" % (r.status, r.raw[:300]))
        for key in ("c-1", "f-1", "m-1", "j-1"):
            r = c.request("DELETE", "/v1/reservations/%s" % rid,
                          headers={"Idempotency-Key": key})
            t.ok(r.status == 422, "... and so is root's %s" % key, "%s %r" % (r.status, r.raw[:300]))
        r = other.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 2},
                          headers={"Idempotency-Key": "flood-%d" % (FLOOD - 1)})
        t.ok(r.status == 422, "uid %d's newest key is remembered" % OTHER,
             "%s %r" % (r.status, r.raw[:300]))
        r = other.request("PATCH", "/v1/reservations/%s" % rid, body={"nodes": 2},
                          headers={"Idempotency-Key": "flood-0"})
        t.ok(r.status == 200, "uid %d's oldest key was evicted: a new request under it is "
             "carried out" % OTHER, "%s %r" % (r.status, r.raw[:300]))

        # -- across a restart: the bindings are saved; an older state loads -
        # A record saved by a version before the binding (no method, target
        # or body_sha256) is matched on (uid, key) alone; a key no signer
        # can send any more (older versions took any length on confirm,
        # modify and delete) is dropped, not a reason to reject the copy.
        state = os.path.join(os.path.dirname(cl["slurm_conf"]), "state", "flexco_resv.json")
        r = c.request("POST", "/v1/reservations", body=dict(body, start=start + 120),
                      headers={"Idempotency-Key": "old-1"})
        old_id = (r.json or {}).get("id")
        t.ok(r.status == 201, "a second reservation under old-1", "%s %r" % (r.status, r.raw[:300]))

        def make_old():
            with open(state) as f:
                doc = json.load(f)
            keys = doc["requests"]
            for k in keys:
                if k["key"] == "old-1":
                    for field in ("method", "target", "body_sha256"):
                        del k[field]
            keys.append({"key": "x" * 200, "uid": 0, "status": 200, "response": "{}",
                         "when": int(time.time())})
            with open(state, "w") as f:
                json.dump(doc, f)

        grid.restart_slurmctld("alpha", while_down=make_old)
        t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url"))(grid.status()),
                   30, "the plugin to listen again")
        sts = (c.get("/v1/stats").json or {}).get("reservations") or {}
        t.ok((sts.get("state") or {}).get("loaded_from") == "current",
             "the state with an unbound key and a 200-byte key loads (the current copy)",
             "%r" % sts.get("state"))
        n = len(listed())
        r = c.request("POST", "/v1/reservations", body=dict(body, nodes=2),
                      headers={"Idempotency-Key": "c-1"})
        t.ok(r.status == 422 and r.error_code() == "idempotency_key_reused" and len(listed()) == n,
             "after the restart c-1 is still bound to its request (422)",
             "%s %r" % (r.status, r.raw[:300]))
        r = c.request("POST", "/v1/reservations", body=dict(body, nodes=2),
                      headers={"Idempotency-Key": "old-1"})
        t.ok(r.status == 201 and (r.json or {}).get("id") == old_id and len(listed()) == n,
             "an unbound (older) record answers its key as before, nothing made",
             "%s %r" % (r.status, r.raw[:300]))
        # root: c-1, f-1, m-1, j-1, the 128-byte key, keep-1, old-1
        t.ok(idem_stats(c).get("keys") == PER_UID + 7,
             "the loaded cache: uid %d's %d keys and root's 7 (the 200-byte one dropped)"
             % (OTHER, PER_UID), "%r" % idem_stats(c))

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
