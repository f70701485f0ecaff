#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexcod's HTTP server keeps the plugin's limits (issue 37 §3: one
server module): a client that trickles its headers or its body is
answered 408 and closed at HeaderTimeout / BodyTimeout however slowly it
sends; MaxConnectionsPerAddress refuses one address's extra connection
while another address is served; bodies not yet authenticated hold at most
MaxRequestMemory bytes (503 request_memory_full beyond); a body over
MaxRequestSize is 413.  flexcod answers a signed request during every
attack.  (Before, flexcod had a fixed 128 connections, a 120 s idle
timeout and no per-address limit: the trickling client was never cut.)"""

import socket
import threading
import time

import flexcotest as t
from flexcodtest import Flexcod
from test_plugin_conn import error_code, parse, raw_connect, read_all, trickle

HEADER_TIMEOUT = 3
BODY_TIMEOUT = 5
PER_ADDRESS = 4
MAX_BODY = 4096
MEMORY = 8192   # two declared 4000-byte bodies
SLACK = 2.0


def main():
    t.require_grid_tools()
    with t.Grid(clusters=1, nodes=[1]) as grid:
        fc = Flexcod(grid)
        with open(fc.info["conf"]) as f:
            text = f.read()
        text += ("HeaderTimeout=%d\nBodyTimeout=%d\nMaxConnectionsPerAddress=%d\n"
                 "MaxRequestSize=%d\nMaxRequestMemory=%d\nConnectionTimeout=30\n"
                 % (HEADER_TIMEOUT, BODY_TIMEOUT, PER_ADDRESS, MAX_BODY, MEMORY))
        with open(fc.info["conf"], "w") as f:
            f.write(text)
        fc.restart(kill9=False)
        port = fc.info["port"]

        def served():
            r = fc.client().get("/v1/clusters")
            return r.status == 200

        t.ok(served(), "flexcod restarted with the limits and serves a signed request")

        # -- trickled headers and body: 408 at the deadline ------------------
        heads, body = {}, {}
        th = [threading.Thread(target=trickle, args=(port, "127.0.0.2",
                                                     b"GET /v1/clusters HTTP/1.1\r\nHost: x\r\n",
                                                     HEADER_TIMEOUT + 20, heads)),
              threading.Thread(target=trickle, args=(port, "127.0.0.3",
                                                     b"POST /v1/coallocations HTTP/1.1\r\n"
                                                     b"Host: x\r\nContent-Length: 3000\r\n\r\n",
                                                     BODY_TIMEOUT + 20, body))]
        for x in th:
            x.start()
        during = served()
        for x in th:
            x.join()
        st, _, doc = parse(heads.get("raw", b""))
        t.ok(st == 408 and error_code(doc) == "request_timeout" and
             HEADER_TIMEOUT - 0.5 <= heads["took"] <= HEADER_TIMEOUT + SLACK,
             "trickled headers: 408 request_timeout at HeaderTimeout=%d s" % HEADER_TIMEOUT,
             "%r after %.1f s" % (heads.get("raw", b"")[:200], heads.get("took", -1)))
        st, _, doc = parse(body.get("raw", b""))
        t.ok(st == 408 and error_code(doc) == "request_timeout" and
             BODY_TIMEOUT - 0.5 <= body["took"] <= BODY_TIMEOUT + SLACK,
             "trickled body: 408 request_timeout at BodyTimeout=%d s" % BODY_TIMEOUT,
             "%r after %.1f s" % (body.get("raw", b"")[:200], body.get("took", -1)))
        t.ok(during, "a signed request was served while both trickled")

        # -- MaxConnectionsPerAddress ----------------------------------------
        held = [raw_connect(port, "127.0.0.4") for _ in range(PER_ADDRESS)]
        extra = raw_connect(port, "127.0.0.4")
        try:
            extra.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n")
            out = read_all(extra, 5)
        except OSError:
            out = b""
        extra.close()
        t.ok(out == b"", "connection %d from one address is closed unanswered"
             % (PER_ADDRESS + 1), "%r" % out[:200])
        t.ok(served(), "while one address holds %d connections, another is served"
             % PER_ADDRESS)
        for s in held:
            s.close()

        # -- MaxRequestMemory and MaxRequestSize -----------------------------
        hold = []
        for src in ("127.0.0.5", "127.0.0.6"):
            s = raw_connect(port, src)
            s.sendall(b"POST /v1/coallocations HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 4000\r\n\r\n")
            hold.append(s)
        # both declared bodies are taken from the budget once their headers
        # are in: a third is refused at once
        refused = None
        end = time.monotonic() + 10
        while time.monotonic() < end:
            s = raw_connect(port, "127.0.0.7")
            s.sendall(b"POST /v1/coallocations HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 4000\r\n\r\n")
            refused = parse(read_all(s, 3))
            s.close()
            if refused[0] == 503:
                break
        st, hdrs, doc = refused or (None, {}, None)
        t.ok(st == 503 and error_code(doc) == "request_memory_full",
             "a third declared body over MaxRequestMemory=%d: 503 request_memory_full" % MEMORY,
             "%r %r" % (st, doc))
        for s in hold:
            s.close()
        s = raw_connect(port, "127.0.0.8")
        s.sendall(b"POST /v1/coallocations HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1))
        st, _, doc = parse(read_all(s, 5))
        s.close()
        t.ok(st == 413 and error_code(doc) == "too_large",
             "a body over MaxRequestSize=%d: 413 too_large before a byte of it" % MAX_BODY,
             "%r %r" % (st, doc))
        t.ok(t.wait_for(served, 20, "flexcod to serve again"),
             "flexcod serves a signed request after the attacks")


if __name__ == "__main__":
    t.run_main(main)
