#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""GET /metrics of the plugin and of flexcod (issue 17 §4), scraped by a
real Prometheus server (Debian's prometheus, run from its binary with a
private configuration and data directory under the test's run dir, on a
free port): both targets up with MetricsTokenFile's bearer token, and
Prometheus' HTTP API gives back values this test made (a co-allocation
by state, its plugin reservation, a commit, the clusters' links).  The
text itself is checked strictly (every line a comment or sample, HELP and
TYPE once per family and before its samples, histogram buckets
cumulative with +Inf equal to _count) and by `promtool check metrics`.
Authentication: MUNGE under the /v1/stats policy (QueryUsers), the token for GET
/metrics only, 401 JSON errors for a wrong token, no token set, no
credential; a token file group or others may read is refused."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import flexcotest as t
from flexcodtest import Flexcod, script
from flexcohttp import parse_exposition, plugin_client, value

NODES = [4, 4]
NOBODY = 65534
TOKEN = "flexco-metrics-test-token-0123456789abcdef"
TEXT = "text/plain; version=0.0.4; charset=utf-8"

class Prometheus:
    """prometheus from its binary, private config and data under dir."""

    def __init__(self, directory, targets, token_file):
        self.dir = directory
        self.port = t.free_port()
        os.makedirs(os.path.join(directory, "data"), exist_ok=True)
        conf = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                           "evaluation_interval": "1s"},
                "scrape_configs": []}
        for job, addrs in targets.items():
            conf["scrape_configs"].append({
                "job_name": job,
                "authorization": {"type": "Bearer", "credentials_file": token_file},
                "static_configs": [{"targets": [a], "labels": {"cluster": c}}
                                   for c, a in addrs]})
        self.conf = os.path.join(directory, "prometheus.yml")
        with open(self.conf, "w") as f:
            json.dump(conf, f)  # JSON is YAML
        self.log = open(os.path.join(directory, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + self.conf,
             "--storage.tsdb.path=" + os.path.join(directory, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=directory, start_new_session=True)

    def api(self, path, **params):
        url = "http://127.0.0.1:%d%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read().decode())
        except (OSError, ValueError):
            return None

    def query(self, expr):
        """The query's instant vector as [(labels, value)], or None."""
        doc = self.api("/api/v1/query", query=expr)
        if not doc or doc.get("status") != "success":
            return None
        return [(r["metric"], float(r["value"][1])) for r in doc["data"]["result"]]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def raw_get(url, path, headers=None, method="GET"):
    """One unsigned request: (status, headers, body bytes)."""
    import http.client
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def error_code(body):
    try:
        doc = json.loads(body.decode())
        return doc["error"]["code"] if set(doc) == {"error"} else None
    except (ValueError, KeyError, TypeError):
        return None


def check_text(name, text):
    fams, problems = parse_exposition(text)
    t.ok(not problems and fams, "%s: the text parses strictly (%d families; HELP/TYPE once, "
         "histograms cumulative with +Inf == _count)" % (name, len(fams)), "\n".join(problems[:20]))
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    t.ok(r.returncode == 0, "%s: promtool check metrics accepts it" % name,
         (r.stdout + r.stderr)[-2000:])
    return fams


def main():
    t.require_grid_tools()
    for prog in ("prometheus", "promtool"):
        if not shutil.which(prog):
            t.bail_out("%s not found: contrib/install-deps installs Debian's prometheus" % prog)
    work = tempfile.mkdtemp(prefix="metrics-", dir=os.path.join(t.builddir(), "testsuite",
                                                                 "integration"))
    token_file = os.path.join(work, "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(TOKEN + "\n")
    loose = os.path.join(work, "token-loose")
    with open(loose, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(loose, 0o644)
    prom = None
    try:
        with t.Grid(nodes=NODES, args=["--plugin-option", "MetricsTokenFile=" + token_file,
                                       "--plugin-option", "QueryUsers=root"]) as grid:
            st = grid.status()
            sock = st["munge_socket"]
            clusters = st["clusters"]
            fc = Flexcod(grid)
            t.ok(grid.plugin_settings(clusters[0]["name"]).get("MetricsTokenFile") == token_file,
                 "the plugin read MetricsTokenFile", "%r" % grid.plugin_settings(clusters[0]["name"]))

            # -- the plugin's authentication ----------------------------------
            purl = clusters[0]["plugin_url"]
            pc = plugin_client(clusters[0], sock)
            r = pc.get("/metrics")
            t.ok(r.status == 200 and r.headers.get("Content-Type") == TEXT and
                 b"flexco_http_requests_total" in r.raw,
                 "plugin: GET /metrics with a MUNGE credential: 200, %s" % TEXT,
                 "%s %r %r" % (r.status, r.headers, r.raw[:300]))
            s, h, body = raw_get(purl, "/metrics", {"Authorization": "Bearer " + TOKEN})
            t.ok(s == 200 and h.get("Content-Type") == TEXT, "plugin: with the bearer token: 200",
                 "%s %r" % (s, body[:300]))
            plugin_text = body.decode()
            for hdr, code, what in ((None, "missing_credential", "no credential"),
                                    ("Bearer " + TOKEN + "x", "invalid_token", "a wrong token"),
                                    ("bearer " + TOKEN[:-1], "invalid_token", "a token cut short")):
                s, h, body = raw_get(purl, "/metrics", {"Authorization": hdr} if hdr else {})
                t.ok(s == 401 and error_code(body) == code,
                     "plugin: GET /metrics with %s: 401 %s" % (what, code), "%s %r" % (s, body))
            s, h, body = raw_get(purl, "/v1/stats", {"Authorization": "Bearer " + TOKEN})
            t.ok(s == 401 and error_code(body) == "malformed_credential",
                 "plugin: the token is no credential for GET /v1/stats: 401 malformed_credential",
                 "%s %r" % (s, body))
            r = plugin_client(clusters[0], sock, uid=NOBODY).get("/metrics")
            t.ok(r.status == 403 and r.error_code() == "forbidden",
                 "plugin: QueryUsers=root: uid %d gets 403 forbidden on GET /metrics, as on "
                 "/v1/stats" % NOBODY, "%s %r" % (r.status, r.raw))
            r = pc.request("POST", "/metrics")
            t.ok(r.status == 405 and r.error_code() == "method_not_allowed",
                 "plugin: POST /metrics: 405 method_not_allowed", "%s %r" % (r.status, r.raw))
            r = pc.get("/metrics?x=1")
            t.ok(r.status == 400 and r.error_code() == "bad_parameter",
                 "plugin: GET /metrics?x=1: 400 bad_parameter", "%s %r" % (r.status, r.raw))

            # -- flexcod's authentication --------------------------------------
            furl = fc.url
            s, h, body = raw_get(furl, "/metrics", {"Authorization": "Bearer " + TOKEN})
            t.ok(s == 401 and error_code(body) == "invalid_token",
                 "flexcod without MetricsTokenFile: a bearer token is 401 invalid_token",
                 "%s %r" % (s, body))
            t.ok(fc.reconfigure(MetricsTokenFile=token_file), "flexcod reloaded with MetricsTokenFile")
            s, h, body = raw_get(furl, "/metrics", {"Authorization": "Bearer " + TOKEN})
            t.ok(s == 200 and h.get("Content-Type") == TEXT,
                 "flexcod: GET /metrics with the bearer token: 200, %s" % TEXT, "%s %r" % (s, body[:300]))
            r = fc.client().get("/metrics")
            t.ok(r.status == 200 and b"flexcod_coallocations" in r.raw,
                 "flexcod: GET /metrics with a MUNGE credential: 200", "%s %r" % (r.status, r.raw[:300]))
            for hdr, code, what in ((None, "missing_credential", "no credential"),
                                    ("Bearer nope-nope-nope-nope", "invalid_token", "a wrong token")):
                s, h, body = raw_get(furl, "/metrics", {"Authorization": hdr} if hdr else {})
                t.ok(s == 401 and error_code(body) == code,
                     "flexcod: GET /metrics with %s: 401 %s" % (what, code), "%s %r" % (s, body))
            # (on flexcod a bearer token elsewhere is taken for a web view
            # session token, doc/auth.md "Session tokens": not one of those)
            s, h, body = raw_get(furl, "/v1/stats", {"Authorization": "Bearer " + TOKEN})
            t.ok(s == 401 and error_code(body) == "invalid_token",
                 "flexcod: the metrics token is no credential for GET /v1/stats: 401 invalid_token",
                 "%s %r" % (s, body))
            n = fc.log_tail(100000).count("MetricsTokenFile")
            t.ok(fc.reconfigure(MetricsTokenFile=loose) and t.wait_for(
                lambda: "mode 0644" in fc.log_tail(100000) and
                fc.log_tail(100000).count("MetricsTokenFile") > n, 30, "the refusal"),
                "flexcod refuses a token file others may read (mode 0644) and says why",
                fc.log_tail(20))
            s, h, body = raw_get(furl, "/metrics", {"Authorization": "Bearer " + TOKEN})
            t.ok(s == 200, "... and keeps the running configuration: the token still works",
                 "%s %r" % (s, body[:200]))

            # -- a co-allocation to count ---------------------------------------
            sdir = os.path.join(work, "out")
            os.makedirs(sdir)
            os.chmod(sdir, 0o777)
            st_, co = fc.submit({"nodes": 2, "duration": 300, "ready": int(time.time()) + 3600,
                                 "name": "metrics", "script": script(sdir),
                                 "std_out": "/dev/null"})
            parts = (co or {}).get("parts", [])
            t.ok(st_ == 201 and co.get("state") == "scheduled" and len(parts) == 1,
                 "a co-allocation of 2 nodes an hour from now: 201 scheduled, one part",
                 "%s %r" % (st_, co))
            part_cluster = parts[0]["cluster"] if parts else None

            # -- the texts themselves --------------------------------------------
            check_text("plugin", plugin_text)
            s, h, body = raw_get(furl, "/metrics", {"Authorization": "Bearer " + TOKEN})
            ff = check_text("flexcod", body.decode())
            t.ok(value(ff, "flexcod_coallocations", state="scheduled") == 1 and
                 value(ff, "flexcod_commit_duration_seconds",
                       "flexcod_commit_duration_seconds_count") == 1,
                 "flexcod's text: 1 scheduled co-allocation, 1 commit in the histogram",
                 body.decode()[:1500])
            r = plugin_client(next(c for c in clusters if c["name"] == part_cluster), sock).get("/metrics")
            pf = check_text("plugin after the reservation", r.raw.decode())
            t.ok(value(pf, "flexco_reservations", state="confirmed") == 1,
                 "the part's plugin: 1 confirmed reservation", r.raw.decode()[:1500])

            # -- Prometheus scrapes both -----------------------------------------
            prom = Prometheus(os.path.join(grid.run_dir, "prometheus"), {
                "flexcod": [("grid", urllib.parse.urlsplit(furl).netloc)],
                "flexco-plugin": [(c["name"], urllib.parse.urlsplit(c["plugin_url"]).netloc)
                                  for c in clusters]}, token_file)

            def targets_up():
                doc = prom.api("/api/v1/targets")
                act = ((doc or {}).get("data") or {}).get("activeTargets") or []
                return len(act) == 1 + len(clusters) and all(a.get("health") == "up" for a in act) and act
            act = t.wait_for(targets_up, 60, "Prometheus' targets to be up")
            t.ok(act, "Prometheus scrapes flexcod and both plugins with the bearer token: all up",
                 json.dumps(prom.api("/api/v1/targets"))[:2000])

            def q(expr, want):
                def f():
                    res = prom.query(expr)
                    return res if res is not None and sorted(v for _, v in res) == sorted(want) else None
                return t.wait_for(f, 30, expr)
            t.ok(q('flexcod_coallocations{state="scheduled"}', [1]),
                 "Prometheus: flexcod_coallocations{state=\"scheduled\"} is 1", "%r" % prom.query(
                     'flexcod_coallocations'))
            t.ok(q('sum(flexcod_coallocations)', [1]),
                 "Prometheus: 1 co-allocation in all states together", "%r" % prom.query(
                     'flexcod_coallocations'))
            t.ok(q('flexcod_commit_duration_seconds_count', [1]),
                 "Prometheus: one commit in flexcod_commit_duration_seconds",
                 "%r" % prom.query('flexcod_commit_duration_seconds_count'))
            t.ok(q('flexcod_cluster_reachable', [1] * len(clusters)),
                 "Prometheus: flexcod_cluster_reachable is 1 for each cluster",
                 "%r" % prom.query('flexcod_cluster_reachable'))
            t.ok(q('flexco_reservations{state="confirmed",cluster="%s"}' % part_cluster, [1]),
                 "Prometheus: the part's cluster has 1 confirmed reservation",
                 "%r" % prom.query('flexco_reservations'))
            t.ok(q('sum(flexco_reservations{state="confirmed"})', [1]),
                 "Prometheus: 1 confirmed reservation over both clusters",
                 "%r" % prom.query('flexco_reservations'))
            pcl = plugin_client(next(c for c in clusters if c["name"] == part_cluster), sock)
            reqs = (pcl.get("/v1/stats").json or {}).get("requests") or []
            made = next((e["status"].get("201") for e in reqs if e["endpoint"] == "reservations"), 0)
            t.ok(made and made >= 2 and q(
                'flexco_http_requests_total{endpoint="reservations",code="201",cluster="%s"}'
                % part_cluster, [made]),
                "Prometheus: the part's plugin answered %s reservation requests (the reservation, "
                "its part job) with 201, as its /v1/stats says" % made,
                "%r" % prom.query('flexco_http_requests_total{endpoint="reservations"}'))
            t.ok(q('flexco_event_buffer_capacity', [4096] * len(clusters)),
                 "Prometheus: flexco_event_buffer_capacity is EventBufferSize (4096) on each plugin",
                 "%r" % prom.query('flexco_event_buffer_capacity'))
            t.ok(q('count(flexco_snapshot_lock_hold_seconds_count > 0)', [len(clusters)]),
                 "Prometheus: each plugin's lock-hold histogram counted holds (profiles took snapshots)",
                 "%r" % prom.query('flexco_snapshot_lock_hold_seconds_count'))

            # -- and nothing is left -----------------------------------------------
            r = fc.client().request("DELETE", "/v1/coallocations/%s" % co["id"])
            t.ok(r.status == 200 and r.json.get("state") in ("cancelled", "cancelling"),
                 "the co-allocation is cancelled", "%s %r" % (r.status, r.json))
            t.ok(q('flexcod_coallocations{state="scheduled"}', [0]),
                 "Prometheus: then no scheduled co-allocation", "%r" % prom.query(
                     'flexcod_coallocations'))
            prom.stop()
            prom = None
    finally:
        if prom:
            prom.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
