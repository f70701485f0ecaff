#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A black-holed cluster delays only its own co-allocations (issue 15, 2).

flexcod reaches gamma through a TCP forwarder that this test can turn
into a black hole: it keeps accepting connections and never answers (nor
forwards what is already under way).  With ClusterTimeout=2,
BreakerFailures=2, BreakerBackoff=5:

- while gamma hangs, a request that may use any cluster is still placed
  on alpha or beta, within ClusterTimeout (not RequestTimeout=10);
- after two unanswered calls gamma's circuit is open (GET /v1/clusters
  says so, the log says so) and requests no longer wait for it at all;
- a request pinned to gamma is refused at once: 409 unplaceable, naming
  the open circuit;
- once gamma answers again, the breaker closes (logged)."""

import os
import socket
import threading
import time

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script

NODES = [2, 2, 2]


class BlackHoleProxy:
    """A TCP forwarder to 127.0.0.1:target; after black() it accepts
    connections but never answers, and stops forwarding on open ones."""

    def __init__(self, target):
        self.target = target
        self.hole = threading.Event()
        self.closed = False
        self.socks = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def black(self):
        self.hole.set()

    def white(self):
        self.hole.clear()

    def _keep(self, s):
        with self.lock:
            self.socks.append(s)

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self._keep(c)
            if self.hole.is_set():
                continue  # held open, never read, never answered
            threading.Thread(target=self._connect, args=(c,), daemon=True).start()

    def _connect(self, c):
        try:
            u = socket.create_connection(("127.0.0.1", self.target), timeout=5)
        except OSError:
            c.close()
            return
        u.settimeout(None)
        self._keep(u)
        threading.Thread(target=self._pump, args=(c, u), daemon=True).start()
        threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    def _pump(self, src, dst):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            if self.hole.is_set():
                continue  # swallowed: the other side waits for ever
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self):
        self.closed = True
        with self.lock:
            socks, self.socks = self.socks, []
        for s in [self.sock] + socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def gamma_of(fc):
    r = fc.client().get("/v1/clusters")
    for c in (r.json or {}).get("clusters", []):
        if c.get("name") == "gamma":
            return c
    return {}


def main():
    t.require_grid_tools()
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        tmp = t.scratch_dir("flexcod-breaker-")
        os.chmod(tmp, 0o777)
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")
        conf_path = fc.info["conf"]
        with open(conf_path) as f:
            lines = f.read().splitlines()
        gamma_line = [l for l in lines if l.startswith("Cluster=gamma ")][0]
        gamma_port = int(gamma_line.rsplit(":", 1)[1].split()[0])
        proxy = BlackHoleProxy(gamma_port)
        try:
            text = "\n".join(l.replace(":%d" % gamma_port, ":%d" % proxy.port)
                             if l.startswith("Cluster=gamma ") else l
                             for l in lines
                             if l.split("=", 1)[0] not in
                             ("ClusterTimeout", "BreakerFailures", "BreakerBackoff"))
            text += "\nClusterTimeout=2\nBreakerFailures=2\nBreakerBackoff=5\n"
            with open(conf_path, "w") as f:
                f.write(text)
            fc.restart(kill9=False)
            g = gamma_of(fc)
            t.ok(g.get("url") == "http://127.0.0.1:%d" % proxy.port and g.get("reconciled")
                 and (g.get("breaker") or {}).get("state") == "closed"
                 and g["breaker"].get("failures") == 0 and g["breaker"].get("opened") == 0,
                 "gamma (through the forwarder) is reconciled, its breaker closed",
                 "%r" % (g,))

            ready = int(time.time()) + 3600  # nothing runs; cancelled at the end
            body = {"nodes": 1, "duration": 60, "ready": ready,
                    "script": script(tmp), "std_out": "/dev/null"}
            made = []

            def submit(what, limit, b=body):
                t0 = time.monotonic()
                s, doc = fc.submit(b)
                dt = time.monotonic() - t0
                if s == 201:
                    made.append(doc.get("id"))
                clusters = sorted(p.get("cluster") for p in (doc or {}).get("parts", []))
                t.ok(s == 201 and doc.get("state") == "scheduled" and clusters
                     and "gamma" not in clusters and dt < limit,
                     "%s: placed on %s in %.1f s (< %s s)" % (what, clusters, dt, limit),
                     "%s %r" % (s, doc))
                return dt

            proxy.black()
            submit("gamma hangs: a request for any cluster", 5)
            submit("gamma hangs: a second request", 5)

            def opened():
                b = gamma_of(fc).get("breaker") or {}
                return b.get("state") == "open" and b.get("opened", 0) >= 1 and b
            b = t.wait_for(opened, 10, "gamma's circuit to open")
            t.ok(bool(b) and b.get("failures", 0) >= 2
                 and b.get("open_until", 0) > time.time(),
                 "after 2 unanswered calls gamma's circuit is open (GET /v1/clusters)",
                 "%r" % (gamma_of(fc),))
            t.ok("cluster gamma: circuit open for 5 s after" in fc.log_tail(2000),
                 "the log says gamma's circuit opened", fc.log_tail(10))
            t.ok(gamma_of(fc).get("reachable") is False, "gamma is unreachable")

            submit("gamma open: a request for any cluster", 1.5)

            t0 = time.monotonic()
            s, doc = fc.submit(dict(body, clusters=["gamma"]))
            dt = time.monotonic() - t0
            msg = ((doc or {}).get("error") or {}).get("message", "")
            t.ok(s == 409 and (doc or {}).get("error", {}).get("code") == "unplaceable"
                 and "circuit open" in msg and dt < 1.5,
                 "gamma open: a request for gamma only is 409 unplaceable at once "
                 "(%.1f s), naming the open circuit" % dt, "%s %r" % (s, doc))

            proxy.white()

            def closed():
                b = gamma_of(fc).get("breaker") or {}
                return b.get("state") == "closed" and b.get("failures") == 0
            t.ok(t.wait_for(closed, 60, "gamma's circuit to close"),
                 "gamma answers again: its circuit closes", "%r" % (gamma_of(fc),))
            t.ok("cluster gamma: answers again; circuit closed" in fc.log_tail(2000),
                 "the log says gamma's circuit closed", fc.log_tail(10))

            for coid in made:
                r = fc.client().request("DELETE", "/v1/coallocations/%s" % coid)
                t.ok(r.status == 200, "co-%s cancelled" % coid, "%s %r" % (r.status, r.raw[:200]))
            t.ok(t.wait_for(lambda: nothing_left(grid), 60, "nothing left"),
                 "nothing is left in Slurm")
            fc.no_illegal_transitions()
        finally:
            proxy.close()


if __name__ == "__main__":
    t.run_main(main)
