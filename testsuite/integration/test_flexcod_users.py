#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Identities across sites: only names travel, and a site may name a user
differently.

A grid of sites (localgrid --sites), each with its own user database
(--users): flexcotest is uid 64001 at alpha (as on flexcod's host) and
64301 at beta; carol exists at beta only.  (1) A uid that has no name at
flexcod's host is refused (403 unknown_user); before, flexcod took its
number for a name and the plugins resolved that number to whoever had
that uid at their site.  (2) The plugin refuses a reservation whose user
is a number (400), even from a DaemonUser; before, it resolved it as a
uid.  (3) flexcotest's co-allocation over alpha and beta runs at each site
under that site's uid of the name.  (4) With UserMapFile naming flexcotest
"carol" at beta, its reservation and part job at beta are carol's, a name
flexcod's host does not know; the API still shows its owner as
flexcotest.  (5) MaxCoallocationsPerUser=1 refuses flexcotest's second
live co-allocation (429 user_limit), not root's (an AdminUser)."""

import os
import pwd
import subprocess
import time

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script
from flexcohttp import plugin_client

NODES = [4, 4]


def unnamed_uid():
    for uid in range(64900, 65000):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise t.GridError("no free uid in 64900..64999")


def scontrol_field(grid, cluster, what, name, key):
    """A field of scontrol's record, read inside the site (its own user
    database names the uids)."""
    r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", cluster,
                        "--", "scontrol", "show", what, str(name), "-o"],
                       capture_output=True, text=True, timeout=60)
    for w in r.stdout.split():
        if w.startswith(key + "="):
            return w.split("=", 1)[1]
    return None


BETA_UID = 64301
CAROL_UID = 64320


def main():
    t.require_grid_tools()
    uid, user = t.test_user()
    user2 = "carol"
    tmp = t.scratch_dir("flexcod-users-")
    os.chmod(tmp, 0o777)
    files = {"alpha": "%s:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (user, uid, uid),
             "beta": "%s:x:%d:%d::/nonexistent:/usr/sbin/nologin\n"
                     "carol:x:%d:%d::/nonexistent:/usr/sbin/nologin\n"
                     % (user, BETA_UID, BETA_UID, CAROL_UID, CAROL_UID)}
    args = ["--sites"]
    for site, text in files.items():
        path = os.path.join(tmp, site + ".passwd")
        with open(path, "w") as f:
            f.write(text)
        args += ["--users", "%s=%s" % (site, path)]
    with t.Grid(nodes=NODES, args=args) as grid:
        fc = Flexcod(grid)
        st = grid.status()
        body = {"nodes": 6, "duration": 120, "script": script(tmp, "sleep 30"),
                "std_out": "/dev/null"}

        # -- 1. a uid without a name --------------------------------------
        nobody = unnamed_uid()
        s, doc = fc.submit(body, uid=nobody)
        t.ok(s == 403 and (doc or {}).get("error", {}).get("code") == "unknown_user",
             "a submission from uid %d, which has no name here, is refused (403 unknown_user)"
             % nobody, "%s %r" % (s, doc))
        r = fc.client(uid=nobody).get("/v1/coallocations")
        t.ok(r.status == 403, "so is its listing", "%s %r" % (r.status, r.json))
        t.ok(nothing_left(grid), "nothing was made for it")

        # -- 2. the plugin never resolves a number ------------------------
        alpha = {c["name"]: c for c in st["clusters"]}["alpha"]
        pc = plugin_client(alpha, st["munge_socket"])
        r = pc.request("POST", "/v1/reservations",
                       body={"user": str(uid), "nodes": 1, "start": int(time.time()) + 600,
                             "duration": 600})
        t.ok(r.status == 400 and "not a number" in str(r.json),
             "the plugin refuses a reservation for user \"%d\" (a number), even from a "
             "DaemonUser" % uid, "%s %r" % (r.status, r.json))

        # -- 3. each site's own uid of the name ---------------------------
        s, doc = fc.submit(body, uid=uid)
        d = fc.wait_parts((doc or {}).get("id"), 2) if s == 201 else {}
        jobs = {p["cluster"]: p["job_id"] for p in d.get("parts", [])}
        owners = {c: scontrol_field(grid, c, "job", j, "UserId") for c, j in jobs.items()}
        t.ok(sorted(jobs) == ["alpha", "beta"]
             and owners == {"alpha": "%s(%d)" % (user, uid), "beta": "%s(%d)" % (user, BETA_UID)},
             "%s's part jobs run as uid %d at alpha and %d at beta, each site's own"
             % (user, uid, BETA_UID), "%s %r" % (s, owners))
        fc.client(uid=uid).request("DELETE", "/v1/coallocations/%s" % (doc or {}).get("id"))
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "everything to be released"),
             "cancelled, nothing is left")

        # -- 4. UserMapFile -----------------------------------------------
        mp = os.path.join(tmp, "usermap")
        with open(mp, "w") as f:
            f.write("# local  cluster=name\n%s beta=%s\n" % (user, user2))
        t.ok(fc.reconfigure(UserMapFile=mp), "flexcod reloads with a UserMapFile")
        s, doc = fc.submit(body, uid=uid)
        parts = {p["cluster"]: p for p in (doc or {}).get("parts", [])}
        t.ok(s == 201 and sorted(parts) == ["alpha", "beta"] and doc.get("user") == user,
             "flexcotest's co-allocation is placed on alpha and beta, owned by %s" % user,
             "%s %r" % (s, doc))
        users = {c: scontrol_field(grid, c, "reservation", p.get("reservation"), "Users")
                 for c, p in parts.items()}
        t.ok(users == {"alpha": user, "beta": user2},
             "its reservations are for %s at alpha and %s at beta" % (user, user2), "%r" % users)
        d = fc.wait_parts(doc.get("id"), 2) if s == 201 else {}
        jobs = {p["cluster"]: p["job_id"] for p in d.get("parts", [])}
        owners = {c: scontrol_field(grid, c, "job", j, "UserId") for c, j in jobs.items()}
        t.ok(owners == {"alpha": "%s(%d)" % (user, uid), "beta": "%s(%d)" % (user2, CAROL_UID)},
             "its part jobs run as %s at alpha and %s (uid %d, unknown to flexcod's host) at beta"
             % (user, user2, CAROL_UID), "%r" % owners)
        r = fc.client(uid=uid).request("DELETE", "/v1/coallocations/%s" % doc.get("id"))
        t.ok(r.status == 200, "its owner cancels it", "%s %r" % (r.status, r.json))
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "everything to be released"),
             "nothing is left on either cluster")

        # -- 5. MaxCoallocationsPerUser --------------------------------------
        t.ok(fc.reconfigure(MaxCoallocationsPerUser=1), "MaxCoallocationsPerUser=1 (SIGHUP)")
        small = dict(body, nodes=2)
        s1, d1 = fc.submit(small, uid=uid)
        s2, d2 = fc.submit(small, uid=uid)
        t.ok(s1 == 201 and s2 == 429 and (d2 or {}).get("error", {}).get("code") == "user_limit"
             and "MaxCoallocationsPerUser=1" in (d2 or {}).get("error", {}).get("message", ""),
             "a second co-allocation of %s is refused (429 user_limit) while the first lives"
             % user, "%s %s %r" % (s1, s2, d2))
        s3, d3 = fc.submit(small)
        t.ok(s3 == 201, "AdminUsers (root) are not limited", "%s %r" % (s3, d3))
        for d in (d1, d3):
            fc.client().request("DELETE", "/v1/coallocations/%s" % (d or {}).get("id"))
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "everything to be released"),
             "cancelled, nothing is left")
        st = fc.client().get("/v1/stats").json or {}
        t.ok(st.get("user_limited") == 1, "GET /v1/stats: user_limited 1", "%r" % st.get("user_limited"))
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
