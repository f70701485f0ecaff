#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""BackfillDefer (flexco.conf(5), doc/admin.md "Sizing"): probes and
profiles that arrive while slurmctld's backfill scheduler is in a cycle are
held, before authentication, until the cycle ends or BackfillDefer ms have
passed, so that the plugin does not take the CPU from backfill meanwhile.
Every other request is answered at once.  On a real cluster; backfill's
cycle is stood in for by a file (FLEXCO_TEST_BACKFILL_ACTIVE_FILE, compiled
into the test build only): a real cycle on a test grid lasts milliseconds,
too short to hold a request in on purpose.  The hold's end at the cycle's
end, its deadline, /v1/stats, /metrics and slurmctld's health are checked."""

import os
import signal
import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

DEFER_MS = 2000


def main():
    t.require_grid_tools()
    flag = os.path.join(t.scratch_dir("flexco-bfdefer-"), "bf-active")
    # Testing only (plugin/http.c): while this file exists the deferral
    # takes backfill to be in a cycle.
    os.environ["FLEXCO_TEST_BACKFILL_ACTIVE_FILE"] = flag
    with t.Grid(nodes=[2], args=["--test-hooks", "--no-flexcod", "--plugin-option",
                                 "BackfillDefer=%d" % DEFER_MS]) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        c = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60)
        cfg = grid.plugin_settings("alpha") or {}
        t.ok(cfg.get("BackfillDefer") == str(DEFER_MS),
             "slurmctld's log shows BackfillDefer=%d in effect" % DEFER_MS, "%r" % cfg)

        def defer_stats():
            return (c.get("/v1/stats").json or {}).get("backfill_defer") or {}

        # -- no cycle: answered at once, nothing held ---------------------------
        before = defer_stats()
        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 600})
        after = defer_stats()
        t.ok(r.status == 200 and after.get("total") == before.get("total") == 0
             and after.get("defer_ms") == DEFER_MS,
             "outside a backfill cycle a probe is answered and nothing is held",
             "%s %r %r" % (r.status, before, after))

        # -- in a cycle: probe and profile held until it ends -------------------
        open(flag, "w").close()
        results = {}

        def send(name, method, target, body=b""):
            t0 = time.monotonic()
            try:
                rr = plugin_client(st["clusters"][0], st["munge_socket"], timeout=60).request(
                    method, target, body=body)
                results[name] = (rr.status, time.monotonic() - t0)
            except OSError as e:  # the connection closed (slurmctld stopping)
                results[name] = (type(e).__name__, time.monotonic() - t0)

        threads = [threading.Thread(target=send, args=("probe", "POST", "/v1/probe",
                                                       {"nodes": 1, "duration": 600})),
                   threading.Thread(target=send, args=("profile", "GET",
                                                       "/v1/profile?horizon=3600"))]
        for th in threads:
            th.start()
        held = t.wait_for(lambda: defer_stats().get("waiting") == 2, 30,
                          "the probe and the profile to be held")
        # Meanwhile the rest is answered at once: stats (above), reservations.
        r = c.get("/v1/reservations")
        t.ok(held and not results and r.status == 200,
             "in a cycle the probe and the profile are held; /v1/stats and "
             "/v1/reservations are answered meanwhile",
             "%r %r %s" % (defer_stats(), results, r.status))
        os.unlink(flag)
        for th in threads:
            th.join(30)
        s = defer_stats()
        t.ok(results.get("probe", (0,))[0] == 200 and results.get("profile", (0,))[0] == 200,
             "both are answered (200) once the cycle ends", "%r" % results)
        t.ok(s.get("waiting") == 0 and s.get("total") == 2 and s.get("released") == 2
             and s.get("timed_out") == 0,
             "/v1/stats: 2 held, 2 released at the cycle's end, none timed out", "%r" % s)
        t.ok(all(results[k][1] < DEFER_MS / 1000.0 + 5 for k in results)
             and 0 < s.get("wait_usec_max", 0) <= s.get("wait_usec_total", 0),
             "the hold ended with the cycle: answered in %s s"
             % ", ".join("%.2f" % results[k][1] for k in sorted(results)), "%r %r" % (results, s))

        # -- a cycle longer than BackfillDefer: let go at the deadline ----------
        open(flag, "w").close()
        t0 = time.monotonic()
        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 600})
        took = time.monotonic() - t0
        s = defer_stats()
        os.unlink(flag)
        t.ok(r.status == 200 and DEFER_MS / 1000.0 <= took < DEFER_MS / 1000.0 + 10,
             "in a cycle longer than BackfillDefer a probe is answered after %d ms (%.2f s)"
             % (DEFER_MS, took), "%s %.3f" % (r.status, took))
        t.ok(s.get("timed_out") == 1 and s.get("total") == 3 and s.get("waiting") == 0
             and s.get("wait_usec_max", 0) >= DEFER_MS * 1000,
             "/v1/stats counts it as timed out", "%r" % s)

        # -- a held request is still authenticated ------------------------------
        open(flag, "w").close()
        r = c.request("POST", "/v1/probe", body={"nodes": 1, "duration": 600},
                      auth="MUNGE not-a-credential")
        s = defer_stats()
        os.unlink(flag)
        t.ok(r.status == 401 and r.error_code() == "malformed_credential"
             and r.headers.get("WWW-Authenticate") == "MUNGE" and s.get("total") == 4,
             "a held request with a bad credential is refused after its hold: "
             "401 malformed_credential, WWW-Authenticate: MUNGE",
             "%s %r %r" % (r.status, r.raw[:200], s))

        # -- /metrics -----------------------------------------------------------
        m = c.get("/metrics")
        text = m.raw.decode(errors="replace")
        want = ['flexco_backfill_deferred_total{released="cycle_end"} 2',
                'flexco_backfill_deferred_total{released="timeout"} 2',
                "flexco_backfill_deferred_waiting 0"]
        t.ok(m.status == 200 and all(w in text for w in want),
             "/metrics: held requests by how they were let go",
             "\n".join(l for l in text.splitlines() if "backfill_deferred" in l))

        # -- slurmctld stops cleanly with a request held ------------------------
        open(flag, "w").close()
        th = threading.Thread(target=send, args=("last", "POST", "/v1/probe",
                                                 {"nodes": 1, "duration": 600}))
        th.start()
        t.wait_for(lambda: defer_stats().get("waiting") == 1, 30, "a probe to be held")
        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive with a request held")
        pid = grid.status()["clusters"][0]["slurmctld_pid"]
        os.kill(pid, signal.SIGTERM)
        th.join(30)
        gone = t.wait_for(lambda: not t.pid_alive(pid), 60, "slurmctld to stop")
        os.unlink(flag)
        out = ""
        try:
            with open(os.path.join(grid.run_dir, "alpha", "log", "slurmctld.out"),
                      errors="replace") as f:
                out = f.read()
        except OSError as e:
            out = str(e)
        t.ok(pid and not th.is_alive() and gone
             and "slurmctld/flexco: HTTP service stopped" in out,
             "SIGTERM with a request held: slurmctld stops its HTTP service and exits; "
             "the request got %r" % (results.get("last"),), out[-1500:])

if __name__ == "__main__":
    t.run_main(main)
