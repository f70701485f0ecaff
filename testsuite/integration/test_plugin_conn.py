#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One client cannot hold the plugin's connections (issue 14 §1.4), on a
real cluster: MaxConnectionsPerAddress refuses one address's extra
connection while another address is served; a client that trickles its
headers or its body is answered 408 and closed at HeaderTimeout /
BodyTimeout however slowly it sends, while others are served; long polls
are capped per uid (MaxLongPollsPerUser) and in all (MaxLongPolls) with
503 too_many_long_polls and Retry-After, DaemonUsers exempt; bodies not
yet authenticated hold at most MaxRequestMemory bytes (503
request_memory_full beyond); when silent connections from many addresses
take every MaxConnections slot, the oldest is closed to make room and a
real request is served at once.  slurmctld answers `scontrol ping` and
`squeue` within 2 s during every attack."""

import json
import select
import socket
import threading
import time

import flexcotest as t
from flexcohttp import plugin_client

NODES = 2
PER_ADDRESS = 6       # MaxConnectionsPerAddress
MAX_CONNECTIONS = 32  # MaxConnections (the default is 1024)
HEADER_TIMEOUT = 4    # HeaderTimeout
BODY_TIMEOUT = 8      # BodyTimeout
POLLS = 3             # MaxLongPolls
POLLS_PER_USER = 2    # MaxLongPollsPerUser
MAX_BODY = 16384      # MaxRequestSize
MEMORY = 65536        # MaxRequestMemory: four declared 16000-byte bodies
BODY = 16000
NOBODY = 65534
OTHER = 1             # daemon(1)
THIRD = 4242
SLACK = 2.0           # the reaper acts within this of a deadline
TRICKLE = 0.5         # seconds between an attacker's bytes (< ConnectionTimeout)


def raw_connect(port, source):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def read_all(s, timeout):
    """Everything the server sends until it closes (or timeout)."""
    data = b""
    end = time.monotonic() + timeout
    s.settimeout(0.5)
    while time.monotonic() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def parse(raw):
    """(status, headers, json) of one raw HTTP answer, or (None, {}, None)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, None
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    try:
        doc = json.loads(body.decode())
    except ValueError:
        doc = None
    return status, headers, doc


def error_code(doc):
    try:
        return doc["error"]["code"]
    except (TypeError, KeyError):
        return None


def trickle(port, source, first, give_up, out):
    """Send `first`, then one byte every TRICKLE seconds until the server
    answers or closes (or give_up seconds pass).  out: seconds from the
    end of `first` to the server's answer or close, and what it sent."""
    s = raw_connect(port, source)
    try:
        s.sendall(first)
        t0 = time.monotonic()
        while time.monotonic() - t0 < give_up:
            r, _, _ = select.select([s], [], [], TRICKLE)
            if r:
                break
            try:
                s.send(b"a")
            except OSError:
                break
        took = time.monotonic() - t0
        out.update(took=took, raw=read_all(s, 5))
    finally:
        s.close()


def responsive(grid, what):
    """scontrol ping and squeue each answer within 2 s."""
    times = {}
    for argv in (["scontrol", "ping"], ["squeue", "-h"]):
        t0 = time.monotonic()
        r = grid.run("alpha", argv, timeout=30)
        times[argv[0]] = (r.returncode, round(time.monotonic() - t0, 2))
    t.ok(all(rc == 0 and s < 2.0 for rc, s in times.values()),
         "during %s slurmctld answers scontrol ping and squeue within 2 s" % what,
         "%r" % times)


def long_poll(client, query, out, key):
    try:
        out[key] = client.get("/v1/events?" + query)
    except Exception as e:  # reported by the caller
        out[key] = e


def main():
    t.require_grid_tools()
    opts = ["MaxConnections=%d" % MAX_CONNECTIONS,
            "MaxConnectionsPerAddress=%d" % PER_ADDRESS,
            "HeaderTimeout=%d" % HEADER_TIMEOUT,
            "BodyTimeout=%d" % BODY_TIMEOUT,
            "MaxLongPolls=%d" % POLLS,
            "MaxLongPollsPerUser=%d" % POLLS_PER_USER,
            "MaxRequestSize=%d" % MAX_BODY,
            "MaxRequestMemory=%d" % MEMORY]
    args = ["--no-flexcod"]
    for o in opts:
        args += ["--plugin-option", o]
    with t.Grid(nodes=[NODES], args=args) as grid:
        st = t.wait_for(lambda: (lambda s: s["clusters"][0].get("plugin_url") and s)(grid.status()),
                        30, "the plugin to listen")
        sock = st["munge_socket"]
        cl = st["clusters"][0]
        port = int(cl["plugin_url"].rsplit(":", 1)[1].split("/")[0])
        root = plugin_client(cl, sock, timeout=60)
        side = plugin_client(cl, sock, timeout=30, source="127.0.0.2")

        def stats():
            return side.get("/v1/stats").json or {}

        cfg = grid.plugin_settings("alpha") or {}
        t.ok(all(cfg.get(k) == v for k, v in (o.split("=") for o in opts)),
             "slurmctld's log shows the connection limits in effect", "%r" % cfg)

        # -- MaxConnectionsPerAddress -----------------------------------------
        latest = root.get("/v1/events").json["latest"]
        polls = {}
        ths = [threading.Thread(target=long_poll, args=(
            root, "after=%d&wait=30" % latest, polls, i)) for i in range(PER_ADDRESS)]
        for th in ths:
            th.start()
        parked = t.wait_for(lambda: (lambda d: d.get("long_polls", {}).get("waiting") == PER_ADDRESS
                                     and d)(stats()), 20,
                            "%d long polls from 127.0.0.1 to wait" % PER_ADDRESS)
        t.ok(parked and parked.get("connections", {}).get("open", 0) >= PER_ADDRESS + 1,
             "%d long polls of root (a DaemonUser) from 127.0.0.1 hold %d connections"
             % (PER_ADDRESS, PER_ADDRESS), "%r" % (parked and parked.get("connections")))
        s = raw_connect(port, "127.0.0.1")
        t0 = time.monotonic()
        try:
            s.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            pass
        got = read_all(s, 10)
        took = time.monotonic() - t0
        s.close()
        t.ok(got == b"" and took < 5,
             "the next connection from 127.0.0.1 is closed without an answer "
             "(%.2f s)" % took, "%r" % got[:300])
        r = side.get("/v1/profile")
        t.ok(r.status == 200, "a signed request from 127.0.0.2 is served meanwhile",
             "%s %r" % (r.status, r.raw[:200]))
        responsive(grid, "the per-address limit")
        grid.submit("alpha", ["-t", "5", "-o", "/dev/null", "--wrap", "true"])
        for th in ths:
            th.join(60)
        codes = [getattr(polls.get(i), "status", polls.get(i)) for i in range(PER_ADDRESS)]
        t.ok(codes == [200] * PER_ADDRESS, "the long polls end with 200 (woken by a job's end)",
             "%r" % codes)
        t.ok(t.wait_for(lambda: root.get("/v1/profile").status == 200, 10,
                        "127.0.0.1 to be served again"),
             "127.0.0.1 is served again once its connections closed")

        # -- HeaderTimeout: slowloris headers ----------------------------------
        attackers = 3
        outs = [{} for _ in range(attackers)]
        first = b"GET /v1/stats HTTP/1.1\r\nHost: x\r\nX-Slow: "
        ths = [threading.Thread(target=trickle, args=(
            port, "127.0.0.3", first, HEADER_TIMEOUT + 10, outs[i])) for i in range(attackers)]
        # and one that never completes its request line ("GEaaa...")
        quiet = {}
        ths.append(threading.Thread(target=trickle, args=(
            port, "127.0.0.3", b"GE", HEADER_TIMEOUT + 10, quiet)))
        for th in ths:
            th.start()
        t.ok(t.wait_for(lambda: stats().get("connections", {}).get("open", 0) >= attackers + 2,
                        10, "the attackers to be connected"),
             "%d clients trickle their headers, a byte every %.1f s" % (attackers, TRICKLE))
        served = [root.get("/v1/profile").status for _ in range(3)]
        t.ok(served == [200] * 3, "profiles are served during the attack", "%r" % served)
        responsive(grid, "the slow-header attack")
        for th in ths:
            th.join(HEADER_TIMEOUT + 30)
        for i, o in enumerate(outs):
            status, headers, doc = parse(o.get("raw", b""))
            took = o.get("took", 0)
            t.ok(HEADER_TIMEOUT - 0.5 <= took <= HEADER_TIMEOUT + SLACK and status == 408
                 and error_code(doc) == "request_timeout"
                 and "HeaderTimeout" in doc["error"]["message"],
                 "slow headers %d: 408 request_timeout and closed %.2f s after it began "
                 "(HeaderTimeout=%d)" % (i, took, HEADER_TIMEOUT),
                 "%r" % o.get("raw", b"")[:300])
        took = quiet.get("took", 0)
        t.ok(HEADER_TIMEOUT - 0.5 <= took <= HEADER_TIMEOUT + SLACK and quiet.get("raw") == b"",
             "a request line still unfinished at HeaderTimeout: closed without an "
             "answer after %.2f s" % took, "%r" % quiet.get("raw", b"")[:300])
        c = stats().get("connections", {})
        t.ok(c.get("cut_headers") == attackers + 1 and c.get("cut_body") == 0,
             "stats count %d connections cut in their headers" % (attackers + 1), "%r" % c)

        # -- BodyTimeout: slow body ---------------------------------------------
        out = {}
        head = (b"POST /v1/probe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n{")
        th = threading.Thread(target=trickle, args=(port, "127.0.0.3", head,
                                                    BODY_TIMEOUT + 10, out))
        th.start()
        t.ok(t.wait_for(lambda: stats().get("connections", {}).get("body_bytes") == 1001,
                        10, "the slow body to be received"),
             "a client trickles a 1000-byte body (1001 bytes of MaxRequestMemory held)")
        r = root.request("POST", "/v1/probe", body={"nodes": 1, "duration": 60})
        t.ok(r.status == 200, "probes are served during the attack",
             "%s %r" % (r.status, r.raw[:200]))
        responsive(grid, "the slow-body attack")
        th.join(BODY_TIMEOUT + 30)
        status, headers, doc = parse(out.get("raw", b""))
        took = out.get("took", 0)
        t.ok(BODY_TIMEOUT - 0.5 <= took <= BODY_TIMEOUT + SLACK and status == 408
             and error_code(doc) == "request_timeout"
             and "BodyTimeout" in doc["error"]["message"],
             "slow body: 408 request_timeout and closed %.2f s after its headers "
             "(BodyTimeout=%d)" % (took, BODY_TIMEOUT), "%r" % out.get("raw", b"")[:300])
        c = t.wait_for(lambda: (lambda c: c.get("body_bytes") == 0 and c)(
            stats().get("connections", {})), 10, "the body's memory to be given back")
        t.ok(c and c.get("cut_body") == 1, "stats count one connection cut in its body, "
             "and its buffer is given back", "%r" % c)

        # -- MaxLongPollsPerUser, MaxLongPolls ----------------------------------
        nobody = plugin_client(cl, sock, uid=NOBODY, timeout=60)
        other = plugin_client(cl, sock, uid=OTHER, timeout=60)
        third = plugin_client(cl, sock, uid=THIRD, timeout=60)
        latest = root.get("/v1/events").json["latest"]
        q = "after=%d&wait=40" % latest
        polls = {}
        ths = [threading.Thread(target=long_poll, args=(nobody, q, polls, i))
               for i in range(POLLS_PER_USER)]
        for th in ths:
            th.start()

        def waiting(n):
            return t.wait_for(lambda: stats().get("long_polls", {}).get("waiting") == n,
                              20, "%d long polls to wait" % n)
        t.ok(waiting(POLLS_PER_USER), "uid %d waits in %d long polls" % (NOBODY, POLLS_PER_USER))
        r = nobody.get("/v1/events?" + q)
        ra = r.headers.get("Retry-After", "")
        t.ok(r.status == 503 and r.error_code() == "too_many_long_polls" and r.is_json_error()
             and ra.isdigit() and 1 <= int(ra) <= 40,
             "uid %d's next long poll: 503 too_many_long_polls with Retry-After (%s s)"
             % (NOBODY, ra), "%s %r %r" % (r.status, r.headers, r.raw[:300]))
        th = threading.Thread(target=long_poll, args=(other, q, polls, "other"))
        th.start()
        ths.append(th)
        t.ok(waiting(POLLS_PER_USER + 1), "uid %d's long poll is accepted meanwhile" % OTHER)
        r = third.get("/v1/events?" + q)
        ra = r.headers.get("Retry-After", "")
        t.ok(r.status == 503 and r.error_code() == "too_many_long_polls"
             and "MaxLongPolls" in r.json["error"]["message"]
             and ra.isdigit() and 1 <= int(ra) <= 40,
             "uid %d's first long poll: 503 too_many_long_polls, %d wait in all (MaxLongPolls)"
             % (THIRD, POLLS), "%s %r %r" % (r.status, r.headers, r.raw[:300]))
        r = third.get("/v1/events?after=0")
        t.ok(r.status == 200, "uid %d's poll without wait is answered" % THIRD,
             "%s %r" % (r.status, r.raw[:200]))
        th = threading.Thread(target=long_poll, args=(root, q, polls, "root"))
        th.start()
        ths.append(th)
        t.ok(waiting(POLLS + 1), "root, a DaemonUser, is exempt from the caps")
        lp = stats().get("long_polls", {})
        t.ok(lp.get("refused") == 2, "stats count 2 refused long polls", "%r" % lp)
        responsive(grid, "the long polls")
        grid.submit("alpha", ["-t", "5", "-o", "/dev/null", "--wrap", "true"])
        for th in ths:
            th.join(60)
        codes = {k: getattr(v, "status", v) for k, v in polls.items()}
        t.ok(set(codes) == {0, 1, "other", "root"}
             and all(v == 200 for v in codes.values()),
             "the accepted long polls end with 200", "%r" % codes)

        # -- MaxRequestMemory ------------------------------------------------
        holders = []
        head = ("POST /v1/probe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % BODY).encode()
        n_hold = MEMORY // (BODY + 1)
        for i in range(n_hold):
            s = raw_connect(port, "127.0.0.4")
            s.sendall(head + b"x" * 100)
            holders.append(s)
        held = t.wait_for(lambda: (lambda c: c.get("body_bytes") == n_hold * (BODY + 1) and c)(
            stats().get("connections", {})), 5, "the declared bodies to be reserved")
        t.ok(held, "%d bodies of %d bytes being received hold %d of MaxRequestMemory=%d"
             % (n_hold, BODY, n_hold * (BODY + 1), MEMORY), "%r" % stats().get("connections"))
        s = raw_connect(port, "127.0.0.5")
        s.sendall(head)
        status, headers, doc = parse(read_all(s, 5))
        s.close()
        t.ok(status == 503 and error_code(doc) == "request_memory_full"
             and headers.get("retry-after") == "1",
             "one more: 503 request_memory_full with Retry-After before its body is read",
             "%r %r %r" % (status, headers, doc))
        r = root.request("POST", "/v1/probe", body={"nodes": 1, "duration": 60})
        t.ok(r.status == 200, "a small probe still fits and is served",
             "%s %r" % (r.status, r.raw[:200]))
        responsive(grid, "the large bodies")
        answers = []
        for s in holders:
            s.sendall(b"x" * (BODY - 100))
        for s in holders:
            answers.append(parse(read_all(s, 5))[0])
            s.close()
        t.ok(answers == [401] * n_hold,
             "the held bodies complete and are authenticated (401: unsigned)", "%r" % answers)
        c = t.wait_for(lambda: (lambda c: c.get("body_bytes") == 0 and c)(
            stats().get("connections", {})), 10, "the memory to be given back")
        t.ok(c and 0 < c.get("body_bytes_max", 0) <= MEMORY and c.get("body_refused") == 1,
             "all body memory is given back; its peak stayed within MaxRequestMemory",
             "%r" % c)

        # -- MaxConnections: silent connections make room --------------------
        # Clients on several addresses open connections and send nothing:
        # once all MaxConnections are taken, the one that has waited longest
        # (at least 1 s) for its headers is closed for each newcomer, so a
        # real request is still served at once, not when HeaderTimeout frees
        # a slot.
        silent = []
        t_first = time.monotonic()
        for i in range(MAX_CONNECTIONS):
            silent.append(raw_connect(port, "127.0.0.%d" % (10 + i // PER_ADDRESS)))
        t.wait_for(lambda: time.monotonic() - t_first >= 1.2, 5,
                   "the first silent connections to be 1 s old")
        late = plugin_client(cl, sock, timeout=HEADER_TIMEOUT * 3, source="127.0.0.9")
        t0 = time.monotonic()
        try:
            r = late.get("/v1/profile")
            status = r.status
        except OSError as e:
            status = repr(e)
        took = time.monotonic() - t0
        t.ok(status == 200 and took < 2.0,
             "with %d silent connections from %d addresses holding every slot, a "
             "signed request from another address is served in %.2f s"
             % (MAX_CONNECTIONS, (MAX_CONNECTIONS + PER_ADDRESS - 1) // PER_ADDRESS, took),
             "%r" % (status,))
        quiet_closed = read_all(silent[0], 2)
        t.ok(quiet_closed == b"",
             "the oldest silent connection was closed without an answer (it sent no request)",
             "%r" % quiet_closed[:200])
        c = stats().get("connections", {})
        t.ok(c.get("evicted", 0) >= 1 and c.get("open", 0) <= MAX_CONNECTIONS,
             "stats count the connections closed to make room", "%r" % c)
        responsive(grid, "the silent connections")
        for s in silent:
            s.close()

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
