#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexcod's read-only web view on a real grid (doc/flexcod.md, "Web
view"; doc/auth.md, "Session tokens"): a co-allocation split over two
clusters; /ui/ serves its static files without a credential, with their
Content-Type and 404 for path traversal, unknown files and directories;
`sreserve ui` prints http://host:port/ui/#token=...; a data call without a
token, with a forged, malformed or expired one is 401 invalid_token; a
mutation with a token is 403 read_only and changes nothing; another user's
token sees nothing of ours, unless UiReadAll=yes; UiTokenLifetime=0 turns
logins and tokens off (403 ui_disabled).  Then headless Chromium
loads the printed address: the DOM holds both clusters, the
co-allocation's id, its parts (table and Gantt chart) and its history; its
screenshot is kept as an artefact in
$FLEXCO_BUILDDIR/testsuite/integration/artefacts/test_flexcod_ui/ui.png."""

import http.client
import json
import os
import pwd
import re
import shutil
import subprocess
import time

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script, slurm_reservations

NODES = [4, 4]
BROWSER_BUDGET_MS = 15000


def raw(fc, method, target, headers=None, body=None):
    """One request exactly as given (no normalisation of the target)."""
    port = int(fc.url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        data = json.dumps(body).encode() if body is not None else b""
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        r = conn.getresponse()
        payload = r.read()
        try:
            doc = json.loads(payload.decode())
        except ValueError:
            doc = None
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), payload, doc
    finally:
        conn.close()


def code(doc):
    try:
        return doc["error"]["code"]
    except (TypeError, KeyError):
        return None


def bearer(fc, token, method="GET", target="/v1/coallocations", body=None):
    return fc.client().request(method, target, auth="Bearer " + token,
                               body=body if body is not None else b"")


def sreserve(conf, *argv, uid=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("FLEXCO_URL", "FLEXCO_MUNGE", "FLEXCOD_CONF"))}
    e["FLEXCOD_CONF"] = conf
    kw = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    return subprocess.run([os.path.join(t.builddir(), "src", "sreserve", "sreserve"), *argv],
                          capture_output=True, text=True, timeout=60, env=e,
                          stdin=subprocess.DEVNULL, **kw)


def chromium(args, timeout=120):
    profile = t.scratch_dir("flexcod-ui-chromium-")
    try:
        return subprocess.run(
            [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--disable-extensions", "--user-data-dir=" + profile,
             "--virtual-time-budget=%d" % BROWSER_BUDGET_MS, *args],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def static_checks(fc):
    st, h, payload, _ = raw(fc, "GET", "/ui/")
    t.ok(st == 200 and h.get("content-type") == "text/html; charset=utf-8"
         and b'<script src="app.js">' in payload,
         "GET /ui/ without a credential: 200, text/html, the page (index.html)",
         "%s %r %r" % (st, h, payload[:200]))
    t.ok("default-src 'none'" in h.get("content-security-policy", "")
         and h.get("x-content-type-options") == "nosniff",
         "the page comes with a Content-Security-Policy and nosniff", repr(h))
    for f, ctype in (("app.js", "text/javascript; charset=utf-8"),
                     ("style.css", "text/css; charset=utf-8"),
                     ("index.html", "text/html; charset=utf-8")):
        st, h, payload, _ = raw(fc, "GET", "/ui/" + f)
        t.ok(st == 200 and h.get("content-type") == ctype and len(payload) > 100,
             "GET /ui/%s: 200, %s" % (f, ctype), "%s %r" % (st, h))
    for target in ("/ui/../", "/ui/..", "/ui/../flexcod.conf", "/ui/../v1/clusters",
                   "/ui/..%2fflexcod.db", "/ui/%2e%2e/%2e%2e/etc/passwd", "/ui/..%2f..%2fetc%2fpasswd",
                   "/ui//etc/passwd", "/ui/sub/app.js", "/ui/nothere.js", "/ui/.hidden.js",
                   "/ui/app.js.bak", "/ui/flexcod.conf", "/ui/x.sh", "/ui"):
        st, h, payload, doc = raw(fc, "GET", target)
        t.ok(st == 404 and code(doc) == "not_found" and b"root:" not in payload
             and b"<html" not in payload,
             "GET %s: 404 not_found (no traversal, no unknown file, no listing)" % target,
             "%s %r" % (st, payload[:200]))
    st, _, _, doc = raw(fc, "POST", "/ui/index.html", body={})
    t.ok(st == 405 and code(doc) == "bad_request", "POST /ui/index.html: 405", "%s %r" % (st, doc))


def main():
    t.require_grid_tools()
    if not shutil.which("chromium"):
        t.bail_out("no chromium: contrib/install-deps installs it (the web view's browser test)")
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        conf = fc.info["conf"]
        names = grid.cluster_names()
        tmp = t.scratch_dir("flexcod-ui-")
        os.chmod(tmp, 0o777)

        # -- a real co-allocation over both clusters, in an hour -------------
        body = {"nodes": 6, "duration": 1800, "ready": int(time.time()) + 3600,
                "script": script(tmp, "sleep 600"), "std_out": "/dev/null"}
        s, co = fc.submit(body)
        parts = (co or {}).get("parts", [])
        t.ok(s == 201 and co.get("state") == "scheduled"
             and sorted(p["cluster"] for p in parts) == sorted(names),
             "a co-allocation split over %s is scheduled" % " and ".join(names), "%s %r" % (s, co))
        coid = co.get("id")
        resv_before = slurm_reservations(grid)

        # -- static files -------------------------------------------------------
        static_checks(fc)

        # -- sreserve ui -----------------------------------------------------
        r = sreserve(conf, "ui")
        m = re.fullmatch(r"(http://127\.0\.0\.1:%d/ui/#token=([0-9a-f]{64}))\n" % fc.info["port"],
                         r.stdout)
        t.ok(r.returncode == 0 and m is not None,
             "sreserve ui prints http://host:port/ui/#token=<64 hex digits>",
             "exit %d, %r %r" % (r.returncode, r.stdout, r.stderr))
        url, token = (m.group(1), m.group(2)) if m else ("", "0" * 64)
        r2 = sreserve(conf, "ui", "--json", "-t", "10")
        try:
            j = json.loads(r2.stdout)
        except ValueError:
            j = {}
        t.ok(r2.returncode == 0 and j.get("user") == "root" and j.get("uid") == 0
             and j.get("lifetime") == 600 and abs(j.get("expires", 0) - time.time() - 600) < 30
             and j.get("path") == "/ui/#token=" + j.get("token", "-") and j.get("token") != token,
             "sreserve ui --json -t 10: a new token for root, valid 600 s",
             "exit %d, %r %r" % (r2.returncode, r2.stdout, r2.stderr))
        jd = sreserve(conf, "ui", "-t", "9-0")
        t.ok(jd.returncode == 1 and "lifetime" in jd.stderr,
             "sreserve ui -t 9-0 (longer than UiTokenLifetime): refused, exit 1",
             "exit %d, %r" % (jd.returncode, jd.stderr))

        # -- data calls -------------------------------------------------------
        rr = fc.client().request("GET", "/v1/coallocations", auth=None)
        t.ok(rr.status == 401 and rr.error_code() == "missing_credential",
             "GET /v1/coallocations without a token: 401 missing_credential",
             "%s %r" % (rr.status, rr.json))
        rr = bearer(fc, token)
        ids = [c["id"] for c in (rr.json or {}).get("coallocations", [])]
        t.ok(rr.status == 200 and ids == [coid],
             "GET /v1/coallocations with the token: 200, our co-allocation", "%s %r" % (rr.status, rr.json))
        rr = bearer(fc, token, target="/v1/coallocations/%d" % coid)
        t.ok(rr.status == 200 and len(rr.json.get("history", [])) > 0,
             "GET /v1/coallocations/%d with the token: 200 with its history" % coid, repr(rr.json)[:300])
        for n in names:
            rr = bearer(fc, token, target="/v1/clusters/%s/profile" % n)
            t.ok(rr.status == 200 and rr.json.get("cluster") == n and len(rr.json.get("steps", [])) > 0,
                 "GET /v1/clusters/%s/profile with the token: 200, its profile's steps" % n,
                 "%s %r" % (rr.status, rr.json))
        rr = bearer(fc, token, target="/v1/clusters/nosuch/profile")
        t.ok(rr.status == 404 and rr.error_code() == "not_found",
             "GET /v1/clusters/nosuch/profile: 404 not_found", "%s %r" % (rr.status, rr.json))
        forged = os.urandom(32).hex()
        for what, tok in (("a forged token", forged), ("a malformed token", "abc"),
                          ("the token in capitals", token.upper()),
                          ("the token with one digit changed",
                           token[:-1] + ("0" if token[-1] != "0" else "1"))):
            rr = bearer(fc, tok, target="/v1/clusters")
            t.ok(rr.status == 401 and rr.error_code() == "invalid_token"
                 and rr.headers.get("WWW-Authenticate", "").startswith("Bearer"),
                 "GET /v1/clusters with %s: 401 invalid_token" % what, "%s %r" % (rr.status, rr.json))
        # expired: a token of 3 s works, then stops working
        rr = fc.client().request("POST", "/v1/ui/tokens", body={"lifetime": 3})
        short = (rr.json or {}).get("token", "0" * 64)
        t.ok(rr.status == 201 and rr.json.get("lifetime") == 3,
             "POST /v1/ui/tokens {lifetime: 3}: 201", "%s %r" % (rr.status, rr.json))
        first = bearer(fc, short, target="/v1/clusters").status
        expired = t.wait_for(lambda: bearer(fc, short, target="/v1/clusters").status == 401, 20,
                             "the 3 s token to expire")
        rr = bearer(fc, short, target="/v1/clusters")
        t.ok(first == 200 and expired and rr.error_code() == "invalid_token",
             "the 3 s token: 200 at first, 401 invalid_token once expired",
             "first %s, then %s %r" % (first, rr.status, rr.json))
        for what, bad in (("lifetime 0", {"lifetime": 0}), ("lifetime 9 days", {"lifetime": 777600}),
                          ("an unknown member", {"scope": "admin"})):
            rr = fc.client().request("POST", "/v1/ui/tokens", body=bad)
            t.ok(rr.status == 400 and rr.error_code() == "bad_request",
                 "POST /v1/ui/tokens with %s: 400 bad_request" % what, "%s %r" % (rr.status, rr.json))

        # -- a token never changes anything -----------------------------------------
        for method, target, b in (("DELETE", "/v1/coallocations/%d" % coid, None),
                                  ("PATCH", "/v1/coallocations/%d" % coid, {"deadline": None}),
                                  ("POST", "/v1/coallocations", body),
                                  ("POST", "/v1/ui/tokens", {})):
            rr = bearer(fc, token, method=method, target=target, body=b)
            t.ok(rr.status == 403 and rr.error_code() == "read_only",
                 "%s %s with the token: 403 read_only" % (method, target), "%s %r" % (rr.status, rr.json))
        s, now = fc.get(coid)
        t.ok(s == 200 and now.get("state") == "scheduled" and now.get("changed") == co.get("changed")
             and slurm_reservations(grid) == resv_before,
             "after those: the co-allocation and Slurm's reservations are unchanged",
             "%s %r" % (s, now.get("state")))

        # -- another user's token: the API's policy, or UiReadAll=yes --------------
        nobody = pwd.getpwnam("nobody").pw_uid
        rn = fc.client(uid=nobody).request("POST", "/v1/ui/tokens")
        ntok = (rn.json or {}).get("token", "0" * 64)
        t.ok(rn.status == 201 and rn.json.get("user") == "nobody",
             "POST /v1/ui/tokens signed by nobody: 201, a token for nobody", "%s %r" % (rn.status, rn.json))
        a = bearer(fc, ntok)
        b2 = bearer(fc, ntok, target="/v1/coallocations/%d" % coid)
        t.ok(a.status == 200 and a.json.get("coallocations") == [] and b2.status == 404,
             "nobody's token sees none of root's co-allocations (as the API: 200 [], 404)",
             "%s %r; %s" % (a.status, a.json, b2.status))
        t.ok(fc.reconfigure(UiReadAll="yes"), "UiReadAll=yes, SIGHUP")
        a = bearer(fc, ntok)
        b2 = bearer(fc, ntok, target="/v1/coallocations/%d" % coid)
        c2 = bearer(fc, ntok, method="DELETE", target="/v1/coallocations/%d" % coid)
        t.ok(a.status == 200 and [c["id"] for c in a.json.get("coallocations", [])] == [coid]
             and b2.status == 200 and c2.status == 403 and c2.error_code() == "read_only",
             "UiReadAll=yes: nobody's token reads root's co-allocation, still cannot cancel it",
             "%s %r; %s; %s" % (a.status, a.json, b2.status, c2.status))
        t.ok(fc.reconfigure(UiReadAll="no"), "UiReadAll=no again")

        # -- UiTokenLifetime=0: the web view's logins and tokens are off ------
        t.ok(fc.reconfigure(UiTokenLifetime="0"), "UiTokenLifetime=0, SIGHUP")
        rr = fc.client().request("POST", "/v1/ui/tokens")
        r0 = bearer(fc, token)
        t.ok(rr.status == 403 and rr.error_code() == "ui_disabled"
             and r0.status == 403 and r0.error_code() == "ui_disabled",
             "UiTokenLifetime=0: POST /v1/ui/tokens and a GET with a token are 403 ui_disabled",
             "%s %r; %s %r" % (rr.status, rr.json, r0.status, r0.json))
        t.ok(fc.reconfigure(UiTokenLifetime="28800"), "UiTokenLifetime=28800 again")
        r0 = bearer(fc, token)
        t.ok(r0.status == 200, "the token works again (tokens are not forgotten by a reload)",
             "%s %r" % (r0.status, r0.json))

        # -- a real browser --------------------------------------------------
        r = chromium(["--dump-dom", url])
        dom = r.stdout
        t.ok(r.returncode == 0 and 'id="status" data-state="loaded"' in dom,
             "headless Chromium loads %s and the page says loaded" % url.split("#")[0],
             "exit %d, %r %r" % (r.returncode, dom[-800:], r.stderr[-800:]))
        for n in names:
            t.ok(re.search(r'<tr data-cluster="%s"><td>%s</td><td><span class="ok">up</span>'
                           % (n, n), dom) is not None,
                 "the DOM lists cluster %s, up" % n, dom[:2000])
            t.ok(re.search(r'<svg [^>]*class="profile" data-cluster="%s"[^>]*><path d="M0' % n, dom)
                 is not None, "the DOM has cluster %s's free-node chart (SVG)" % n)
        row = re.search(r'<tr data-id="%d" data-state="scheduled"><td>co-%d</td>(.*?)</tr>'
                        % (coid, coid), dom)
        parts_text = " ".join("%s:%d" % (p["cluster"], p["nodes"]) for p in parts)
        t.ok(row is not None and ("<td>%s</td>" % parts_text) in row.group(1),
             "the DOM lists co-%d, scheduled, with its parts %s" % (coid, parts_text),
             row.group(0) if row else dom[:3000])
        bars = re.findall(r'<rect [^>]*data-id="%d" data-part="(\d+)"' % coid, dom)
        t.ok(sorted(bars) == sorted(str(p["index"]) for p in parts),
             "the Gantt chart (SVG) has a bar per part of co-%d" % coid, repr(bars))
        t.ok(re.search(r'<tr data-id="%d"><td>[^<]+</td><td>co-%d</td><td>coallocation</td>'
                       r'<td>committing</td><td>scheduled</td>' % (coid, coid), dom) is not None,
             "the recent events list co-%d's change to scheduled" % coid)
        t.ok(token not in dom, "the token is not left in the page (the fragment is cleared)")

        art = os.path.join(t.builddir(), "testsuite", "integration", "artefacts", "test_flexcod_ui")
        os.makedirs(art, exist_ok=True)
        png = os.path.join(art, "ui.png")
        if os.path.exists(png):
            os.unlink(png)
        r = chromium(["--window-size=1400,1100", "--hide-scrollbars", "--screenshot=" + png, url])
        with open(png, "rb") if os.path.exists(png) else open(os.devnull, "rb") as f:
            head = f.read(8)
        t.ok(r.returncode == 0 and head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 10000,
             "a screenshot of the page is kept: %s" % png, "exit %d, %r" % (r.returncode, r.stderr[-800:]))

        # -- clean up -------------------------------------------------------------
        s, doc = fc.client().request("DELETE", "/v1/coallocations/%d" % coid).status, None
        t.ok(s == 200 and t.wait_for(lambda: nothing_left(grid), 60, "the co-allocation to be gone"),
             "co-%d cancelled with MUNGE; nothing left in Slurm" % coid)
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
