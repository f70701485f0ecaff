#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The slurmctld/flexco HTTP service on a real grid: MUNGE authentication
on every request, request sessions keyed through it, JSON errors for bad input that leave slurmctld unharmed,
and GET /v1/profile matching what the cluster really runs."""

import hashlib
import os
import socket
import subprocess
import time

import flexcotest as t
from flexcohttp import Client, Session, plugin_client, sign

SESSION_LIFETIME = 4  # s, flexco.conf SessionLifetime on this grid

NODES = {"alpha": 4, "beta": 6, "gamma": 8}
CPUS = 8


# flexco.conf's ConnectionTimeout default (the grid does not set it)
CONNECTION_TIMEOUT = 10


def raw_exchange(host, port, data, timeout=10):
    """Send raw bytes, return what comes back (until close or timeout)."""
    out = b""
    with socket.create_connection((host, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            return out
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except OSError:
            pass
    return out


def steps_at(doc, when):
    """The profile step covering time `when`."""
    for s in doc.get("steps", []):
        if s["start"] <= when < s["end"]:
            return s
    return None


def main():
    t.require_grid_tools()
    with t.Grid(args=["--no-flexcod", "--plugin-option",
                      "SessionLifetime=%d" % SESSION_LIFETIME]) as grid:
        st = t.wait_for(lambda: (lambda s: all(c.get("plugin_url") for c in s["clusters"]) and s)(grid.status()),
                        30, "every plugin to listen")
        t.ok(st, "every cluster's plugin listens (status --json shows plugin_url)")
        st = st or grid.status()
        sock = st["munge_socket"]
        clusters = {c["name"]: c for c in st["clusters"]}
        alpha = plugin_client(clusters["alpha"], sock)
        host, port = alpha.host, alpha.port

        # -- authentication ------------------------------------------------
        r = alpha.get("/v1/stats", auth=None)
        t.ok(r.status == 401 and r.is_json_error()
             and r.error_code() == "missing_credential",
             "no Authorization header: 401 missing_credential JSON error",
             "%s %r" % (r.status, r.raw[:300]))
        t.ok(r.headers.get("WWW-Authenticate") == "MUNGE",
             "a 401 names the scheme: WWW-Authenticate: MUNGE (doc/auth.md)",
             "%r" % r.headers)
        r = alpha.get("/v1/stats", auth="Basic cm9vdDpyb290")
        t.ok(r.status == 401 and r.is_json_error(),
             "wrong scheme: 401 JSON error", "%s %r" % (r.status, r.raw[:300]))
        r = alpha.get("/v1/stats", auth="MUNGE MUNGE:AAAAgarbage:")
        t.ok(r.status == 401 and r.is_json_error(),
             "garbage credential: 401", "%s %r" % (r.status, r.raw[:300]))
        r = alpha.get("/v1/profile", sign_as=("GET", "/v1/stats", b""))
        t.ok(r.status == 401 and r.error_code() == "request_mismatch",
             "credential signed for another path: 401 request_mismatch",
             "%s %r" % (r.status, r.raw[:300]))
        r = alpha.get("/v1/profile?horizon=7200",
                      sign_as=("GET", "/v1/profile?horizon=3600", b""))
        t.ok(r.status == 401 and r.error_code() == "request_mismatch",
             "credential signed for another query: 401 request_mismatch")
        from flexcohttp import sign
        hdr = sign("alpha", "GET", "/v1/stats", b"", sock)
        r1 = alpha.get("/v1/stats", auth=hdr)
        r2 = alpha.get("/v1/stats", auth=hdr)
        t.ok(r1.status == 200 and r2.status == 401
             and r2.error_code() == "replayed",
             "a credential is accepted once, its replay gets 401 replayed",
             "%s then %s %r" % (r1.status, r2.status, r2.raw[:300]))
        old = sign("alpha", "GET", "/v1/stats", b"", sock,
                   timestamp=int(time.time()) - 3600)
        r = alpha.get("/v1/stats", auth=old)
        t.ok(r.status == 401 and r.error_code() == "expired",
             "a request signed an hour ago: 401 expired",
             "%s %r" % (r.status, r.raw[:300]))

        # -- cluster binding (doc/auth.md, "Audience"; issue 14 §1.2) -----
        # A request signed for alpha and delivered to beta instead (stopped
        # on its way to alpha, so no munged has seen it) is refused by beta
        # and changes nothing there; the same request signed for beta works.
        beta_url = clusters["beta"]["plugin_url"]
        for_alpha = Client(beta_url, sock, "alpha")  # signs for alpha
        for_beta = plugin_client(clusters["beta"], sock)

        def beta_state():
            """flexco reservations on beta: the plugin's list and Slurm's."""
            listed = (for_beta.get("/v1/reservations").json or {}).get("reservations")
            out = grid.run("beta", ["scontrol", "show", "res"])
            in_slurm = sorted(w.split("=", 1)[1] for w in out.stdout.split()
                              if w.startswith("ReservationName=flexco_"))
            return listed, in_slurm

        resv = {"user": "root", "nodes": 1, "start": int(time.time()) + 7200,
                "duration": 600, "confirm_within": 300}
        r = for_alpha.request("POST", "/v1/reservations", body=resv)
        listed, in_slurm = beta_state()
        t.ok(r.status == 401 and r.is_json_error()
             and r.error_code() == "wrong_audience",
             "POST /v1/reservations signed for alpha, sent to beta: 401 wrong_audience",
             "%s %r %r" % (r.status, r.headers, r.raw[:300]))
        t.ok(listed == [] and in_slurm == [],
             "... and beta made no reservation (plugin list, scontrol show res)",
             "%r %r" % (listed, in_slurm))
        r = for_beta.request("POST", "/v1/reservations", body=resv)
        doc = r.json or {}
        rid, name = doc.get("id"), doc.get("name")
        listed, in_slurm = beta_state()
        t.ok(r.status == 201 and in_slurm == [name]
             and [x.get("id") for x in listed or []] == [rid],
             "the same request signed for beta: 201, %s exists in Slurm" % name,
             "%s %r %r %r" % (r.status, r.raw[:300], listed, in_slurm))
        r = for_alpha.request("DELETE", "/v1/reservations/%s" % rid)
        _, in_slurm = beta_state()
        t.ok(r.status == 401 and r.error_code() == "wrong_audience"
             and in_slurm == [name],
             "DELETE of beta's reservation signed for alpha: 401 wrong_audience, "
             "the reservation stays", "%s %r %r" % (r.status, r.raw[:300], in_slurm))
        r = for_beta.request("DELETE", "/v1/reservations/%s" % rid)
        _, in_slurm = beta_state()
        t.ok(r.status == 200 and in_slurm == [],
             "... signed for beta: deleted", "%s %r %r" % (r.status, r.raw[:300], in_slurm))
        # The name is compared exactly (Slurm stores ClusterName in lower
        # case), and a credential for flexcod is not one for a cluster.
        for aud in ("BETA", "flexcod"):
            r = Client(beta_url, sock, aud).get("/v1/stats")
            t.ok(r.status == 401 and r.error_code() == "wrong_audience",
                 "GET /v1/stats signed for %r at beta: 401 wrong_audience" % aud,
                 "%s %r" % (r.status, r.raw[:300]))
        # An old flexco-auth-v1 credential (no audience) is refused.
        v1 = "flexco-auth-v1\nGET\n/v1/stats\n%s\n%d\n%s\n" % (
            hashlib.sha256(b"").hexdigest(), int(time.time()), os.urandom(16).hex())
        cred = subprocess.run(["munge", "-S", sock, "-z", "none"], input=v1.encode(),
                              capture_output=True, check=True).stdout.decode().strip()
        r = for_beta.get("/v1/stats", auth="MUNGE " + cred)
        t.ok(r.status == 401 and r.error_code() == "malformed_payload"
             and "no longer accepted" in (r.json or {}).get("error", {}).get("message", ""),
             "a flexco-auth-v1 credential: 401 malformed_payload (v1 is refused)",
             "%s %r" % (r.status, r.raw[:300]))

        # -- request sessions (doc/auth.md, "Request sessions") ------------
        # SessionLifetime on this grid: SESSION_LIFETIME.  A flexco-auth-v4 request offers
        # a session; later requests carry an HMAC under its key.
        sess = Session("alpha")
        r = alpha.get("/v1/stats", auth=sign("alpha", "GET", "/v1/stats", b"", sock, version=4,
                                             offer=sess.offer()))
        grant = r.headers.get("FlexCo-Session", "")
        t.ok(r.status == 200 and len(grant.split(" ")) == 3 and
             grant.split(" ")[2] == str(SESSION_LIFETIME),
             "a MUNGE request offering a session: 200 with a FlexCo-Session grant",
             "%s %r %r" % (r.status, grant, r.raw[:200]))
        started = time.time()
        sess.accept(grant or ("0" * 32 + " " + "0" * 64 + " 1"))
        r = alpha.get("/v1/stats", auth=sess.header("GET", "/v1/stats"))
        t.ok(r.status == 200 and r.json and "requests" in r.json,
             "a request under the session's MAC, no MUNGE: 200", "%s %r" % (r.status, r.raw[:200]))
        body = b'{"nodes": 1, "duration": 60}'
        r = alpha.request("POST", "/v1/probe", body=body,
                          auth=sess.header("POST", "/v1/probe", body=b'{"nodes": 2, "duration": 60}'))
        t.ok(r.status == 401 and r.error_code() == "bad_mac",
             "a MAC over another body: 401 bad_mac", "%s %r" % (r.status, r.raw[:300]))
        replay = sess.header("GET", "/v1/stats")
        r1 = alpha.get("/v1/stats", auth=replay)
        r2 = alpha.get("/v1/stats", auth=replay)
        t.ok(r1.status == 200 and r2.status == 401 and r2.error_code() == "replayed",
             "the same counter twice: 200, then 401 replayed",
             "%s %s %r" % (r1.status, r2.status, r2.raw[:300]))
        r = alpha.get("/v1/stats", auth=sess.header("GET", "/v1/stats", audience="beta"))
        t.ok(r.status == 401 and r.error_code() == "wrong_audience",
             "alpha's session naming beta, sent to alpha: 401 wrong_audience",
             "%s %r" % (r.status, r.raw[:300]))
        r = for_beta.get("/v1/stats", auth=sess.header("GET", "/v1/stats", audience="beta"))
        t.ok(r.status == 401 and r.error_code() == "unknown_session",
             "alpha's session at beta: 401 unknown_session", "%s %r" % (r.status, r.raw[:300]))
        t.wait_for(lambda: time.time() > started + SESSION_LIFETIME + 1, SESSION_LIFETIME + 5,
                   "the session's lifetime to pass")
        r = alpha.get("/v1/stats", auth=sess.header("GET", "/v1/stats"))
        t.ok(r.status == 401 and r.error_code() == "session_expired",
             "after its lifetime: 401 session_expired", "%s %r" % (r.status, r.raw[:300]))

        # -- malformed requests: 4xx JSON, nothing changes ----------------
        r = alpha.get("/v1/nosuch")
        t.ok(r.status == 404 and r.is_json_error(), "unknown endpoint: 404 JSON")
        r = alpha.request("POST", "/v1/profile", body=b"{}")
        t.ok(r.status == 405 and r.is_json_error() and r.headers.get("Allow") == "GET",
             "POST on a GET endpoint: 405 with Allow: GET",
             "%s %r" % (r.status, r.headers))
        for target, what in [("/v1/profile?horizon=abc", "non-numeric horizon"),
                             ("/v1/profile?horizon=0", "zero horizon"),
                             ("/v1/profile?horizon=-5", "negative horizon"),
                             ("/v1/profile?horizon=99999999999999999999", "huge horizon"),
                             ("/v1/profile?bogus=1", "unknown parameter"),
                             ("/v1/profile?horizon=60&horizon=60", "horizon twice"),
                             ("/v1/profile?partition=batch&partition=batch", "partition twice"),
                             ("/v1/profile?partition=", "empty partition"),
                             ("/v1/profile?partition", "partition without '='"),
                             ("/v1/profile?horizon=", "empty horizon"),
                             ("/v1/stats?x=1", "parameter on stats"),
                             ("/v1/stats?x", "parameter without a value on stats"),
                             ("/v1/reservations?x=1", "parameter on reservations")]:
            r = alpha.get(target)
            t.ok(r.status == 400 and r.is_json_error() and r.error_code() == "bad_parameter",
                 "%s: 400 bad_parameter" % what, "%s %r" % (r.status, r.raw[:300]))
        r = alpha.get("/v1/profile?partition=nosuch")
        t.ok(r.status == 404 and r.is_json_error(),
             "unknown partition: 404 JSON error", "%s %r" % (r.status, r.raw[:300]))
        # A declared body over MaxRequestSize is refused before it is read.
        out = raw_exchange(host, port,
                           b"POST /v1/profile HTTP/1.1\r\nHost: x\r\n"
                           b"Authorization: MUNGE x\r\n"
                           b"Content-Length: 1048577\r\n\r\n" + b"x" * 1000)
        t.ok(out.startswith(b"HTTP/1.1 413") and b'"payload_too_large"' in out,
             "declared body over MaxRequestSize: 413 before authentication",
             repr(out[:300]))
        # A chunked body that grows past the limit is discarded, then refused.
        chunk = b"x" * 65536
        body = (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 17 + b"0\r\n\r\n"
        out = raw_exchange(host, port,
                           b"POST /v1/profile HTTP/1.1\r\nHost: x\r\n"
                           b"Authorization: MUNGE x\r\n"
                           b"Transfer-Encoding: chunked\r\n\r\n" + body)
        t.ok(out.startswith(b"HTTP/1.1 413") and b'"payload_too_large"' in out,
             "chunked body growing over MaxRequestSize: 413",
             repr(out[:300]))
        # Request targets: a signed request's target is at most 2048 bytes
        # (doc/auth.md), so that is the limit; a longer one that still fits
        # the connection's header memory gets FlexCo's 414 JSON, before
        # authentication; beyond that memory (32 KiB for the request line
        # and headers) microhttpd refuses it itself, with its own 414 and an
        # HTML body (doc/decisions.md, "What microhttpd answers itself").
        prefix = "/v1/profile?partition="
        r = alpha.get(prefix + "a" * (2048 - len(prefix)))
        t.ok(r.status == 400 and r.error_code() == "bad_parameter",
             "a signed 2048-byte request target is authenticated and read "
             "(400 bad_parameter: the partition name)",
             "%s %r" % (r.status, r.raw[:300]))
        r = alpha.get(prefix + "a" * (2049 - len(prefix)))
        t.ok(r.status == 414 and r.error_code() == "uri_too_long",
             "a signed 2049-byte request target: 414 uri_too_long",
             "%s %r" % (r.status, r.raw[:300]))
        r = alpha.get(prefix + "a" * 5000, auth=None)
        t.ok(r.status == 414 and r.error_code() == "uri_too_long",
             "an unsigned 5022-byte request target: 414 uri_too_long JSON, "
             "before authentication", "%s %r" % (r.status, r.raw[:300]))
        # Malformed HTTP never reaches FlexCo: each gets its exact status (or
        # is closed without an answer), promptly, and the connection closes.
        status_of = lambda out: out.split(b" ", 2)[1] if out.startswith(b"HTTP/1.1 ") else b""
        for junk, want, what in [
                (b"GET /v1/profile?partition=" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                 {b"414"}, "a 40 KB request target (over the header memory)"),
                (b"GET /v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                 {b"400"}, "Content-Length: -1"),
                (b"GET /v1/stats HTTP/1.1\r\n" + b"X: " + b"y" * 70000 + b"\r\n\r\n",
                 {b"431"}, "a 70 KB header"),
                (b"GET /v1/stats HTTP/9.9\r\nHost: x\r\n\r\n",
                 {b"505"}, "HTTP/9.9"),
                (b"GET\r\n\r\n", {b"", b"400"}, "a request line without a target"),
                (b"garbage\r\n\r\n", {b"", b"400"}, "a one-word request line"),
                (b"\x00\x01\x02garbage\r\n\r\n", {b"", b"400"}, "binary bytes")]:
            t0 = time.monotonic()
            out = raw_exchange(host, port, junk, timeout=30)
            took = time.monotonic() - t0
            t.ok(status_of(out) in want and b'"code"' not in out
                 and b" 200 " not in out[:16]
                 and took < CONNECTION_TIMEOUT + 5,
                 "%s: %s from microhttpd, connection closed in %.1f s"
                 % (what, "/".join(x.decode() or "closed unanswered" for x in sorted(want)),
                    took), "%.1f s %r" % (took, out[:300]))
        # a half-sent request that the client abandons
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\n")
        r = alpha.get("/v1/stats")
        s.close()
        t.ok(r.status == 200, "the service answers while another connection is "
             "stuck mid-request and after garbage on the wire")
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout,
             "slurmctld is alive after the malformed requests", p.stdout + p.stderr)

        # -- the profile ---------------------------------------------------
        for name, nodes in sorted(NODES.items()):
            c = plugin_client(clusters[name], sock)
            r = c.get("/v1/profile?horizon=3600")
            doc = r.json or {}
            ok = r.status == 200 and doc.get("cluster") == name \
                and doc.get("partition") == "batch"
            steps = doc.get("steps", [])
            t.ok(ok and len(steps) == 1 and steps[0]["free_nodes"] == nodes
                 and steps[0]["free_cpus"] == nodes * CPUS
                 and steps[0]["end"] == doc.get("horizon_end")
                 and doc["horizon_end"] - doc["snapshot_time"] == 3600,
                 "%s: idle profile is %d nodes / %d CPUs free for the whole horizon"
                 % (name, nodes, nodes * CPUS), "%s %r" % (r.status, r.raw[:600]))

        beta = plugin_client(clusters["beta"], sock)
        jobid = grid.submit("beta", ["-N2", "-t", "10", "-o", "/dev/null",
                                     "--wrap", "sleep 300"])
        job = grid.wait_job("beta", jobid, states=("RUNNING",), timeout=60)
        t.ok(job.get("JobState") == "RUNNING", "beta: a 2-node 10-minute job runs")
        r = beta.get("/v1/profile?horizon=3600")
        doc = r.json or {}
        now = doc.get("snapshot_time", 0)
        first = steps_at(doc, now)
        end_guess = now + 600
        later = steps_at(doc, now + 700)
        t.ok(first and first["free_nodes"] == 4 and first["free_cpus"] == 32
             and later and later["free_nodes"] == 6
             and abs(first["end"] - end_guess) <= 60,
             "beta: profile shows 4 nodes free until the job's limit, then 6",
             "%r" % doc.get("steps"))

        # a reservation two hours from now for 3 nodes of gamma
        r = grid.run("gamma", ["scontrol", "create", "reservation",
                               "ReservationName=test_resv", "StartTime=now+1hour",
                               "Duration=30", "NodeCnt=3", "Users=root"])
        t.ok(r.returncode == 0, "gamma: scontrol create reservation",
             r.stdout + r.stderr)
        gamma = plugin_client(clusters["gamma"], sock)
        r = gamma.get("/v1/profile?horizon=14400")
        doc = r.json or {}
        now = doc.get("snapshot_time", 0)
        a, b, c = (steps_at(doc, now), steps_at(doc, now + 3600 + 60),
                   steps_at(doc, now + 3600 + 1800 + 120))
        t.ok(a and b and c and a["free_nodes"] == 8 and b["free_nodes"] == 5
             and c["free_nodes"] == 8,
             "gamma: profile has 3 nodes taken by the reservation for 30 minutes",
             "%r" % doc.get("steps"))

        # -- stats -----------------------------------------------------------
        r = alpha.get("/v1/stats")
        doc = r.json or {}
        by_ep = {e["endpoint"]: e for e in doc.get("requests", [])}
        stats_401 = by_ep.get("stats", {}).get("status", {}).get("401", 0)
        t.ok(r.status == 200 and stats_401 >= 5
             and by_ep.get("profile", {}).get("status", {}).get("400", 0) >= 4
             and doc.get("snapshot_lock", {}).get("count", 0) >= 1,
             "stats count requests by endpoint and status and snapshot lock holds",
             "%r" % doc)
        t.note("snapshot lock hold: %r" % doc.get("snapshot_lock"))
        grid.run("beta", ["scancel", jobid])


if __name__ == "__main__":
    t.run_main(main)
