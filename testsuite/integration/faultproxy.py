# SPDX-License-Identifier: GPL-2.0-or-later
"""A TCP proxy for fault injection between flexcod and a cluster's plugin.

    p = FaultProxy(upstream_port)      listens on 127.0.0.1:p.port
                                       (listen_host=: another address)
    p.set("pass")                      forward both ways (the default)
    p.set("delay", ms=500)             forward, each chunk held ms first
    p.set("drop")                      close every connection, and every
                                       new one as soon as it is accepted
    p.set("blackhole")                 accept, never answer: nothing is
                                       forwarded either way until healed
    p.set("deaf")                      requests pass, answers are dropped:
                                       the plugin acts, flexcod never hears
    p.heal()                           back to "pass"; connections accepted
                                       while black-holed (never connected
                                       upstream) are closed, the others
                                       carry on
    p.close()                          stop listening, close everything

Runs in threads of the test process (standard library only), so the test
controls it directly.  flexcod_via_proxies() points a grid's flexcod at one
proxy per cluster."""

import os
import select
import socket
import threading
import time

MODES = ("pass", "delay", "drop", "blackhole", "deaf")


class FaultProxy:
    def __init__(self, upstream_port, upstream_host="127.0.0.1", name="", listen_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.name = name
        self.mode = "pass"
        self.delay_ms = 0
        self.accepted = 0
        self.cond = threading.Condition()
        self.conns = set()     # (client socket, upstream socket or None)
        self.closed = False
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((listen_host, 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept_loop, daemon=True,
                                       name="faultproxy-%s" % name)
        self.thread.start()

    # -- control -------------------------------------------------------------

    def set(self, mode, ms=0):
        if mode not in MODES:
            raise ValueError("faultproxy: unknown mode %r" % mode)
        with self.cond:
            self.mode = mode
            self.delay_ms = ms
            if mode == "drop":
                for pair in list(self.conns):
                    self._close_pair(pair)
            self.cond.notify_all()

    def heal(self):
        with self.cond:
            self.mode = "pass"
            self.delay_ms = 0
            for pair in list(self.conns):
                if pair[1] is None:  # accepted while black-holed
                    self._close_pair(pair)
            self.cond.notify_all()

    def close(self):
        with self.cond:
            self.closed = True
            for pair in list(self.conns):
                self._close_pair(pair)
            self.cond.notify_all()
        try:
            self.lsock.close()
        except OSError:
            pass

    # -- internals -----------------------------------------------------------

    def _close_pair(self, pair):
        self.conns.discard(pair)
        for s in pair:
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass

    def _accept_loop(self):
        while not self.closed:
            try:
                r, _, _ = select.select([self.lsock], [], [], 0.5)
                if not r:
                    continue
                cs, _ = self.lsock.accept()
            except OSError:
                return
            with self.cond:
                self.accepted += 1
                mode = self.mode
            if mode == "drop":
                cs.close()
                continue
            if mode == "blackhole":
                pair = (cs, None)
                with self.cond:
                    self.conns.add(pair)
                continue  # held open, never read, closed by heal/close
            threading.Thread(target=self._serve, args=(cs,), daemon=True).start()

    def _serve(self, cs):
        try:
            us = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            cs.close()
            return
        pair = (cs, us)
        with self.cond:
            if self.closed or self.mode == "drop":
                self._close_pair(pair)
                return
            self.conns.add(pair)
        peer = {cs: us, us: cs}
        try:
            while True:
                with self.cond:
                    if pair not in self.conns:
                        return
                    while self.mode == "blackhole" and pair in self.conns:
                        self.cond.wait(0.5)
                    if pair not in self.conns:
                        return
                r, _, _ = select.select([cs, us], [], [], 0.2)
                for s in r:
                    with self.cond:
                        if self.mode == "blackhole" or pair not in self.conns:
                            break  # not read: the bytes wait for the heal
                        delay = self.delay_ms if self.mode == "delay" else 0
                    data = s.recv(65536)
                    if not data:
                        return
                    with self.cond:
                        deaf = self.mode == "deaf"
                    if deaf and s is us:
                        continue  # the answer is lost on the way
                    if delay:
                        time.sleep(delay / 1000.0)
                    peer[s].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self.cond:
                self._close_pair(pair)


def flexcod_via_proxies(grid, fc):
    """Start one FaultProxy per cluster in front of its plugin, point
    flexcod.conf's Cluster= lines at them, restart flexcod (SIGTERM) and
    wait until it has reconciled every cluster through them.  Returns
    {cluster: FaultProxy}."""
    st = grid.status()
    proxies = {}
    with open(fc.info["conf"]) as f:
        text = f.read()
    for c in st["clusters"]:
        p = FaultProxy(c["plugin_port"], name=c["name"])
        proxies[c["name"]] = p
        old = "Cluster=%s URL=http://127.0.0.1:%d" % (c["name"], c["plugin_port"])
        if old not in text:
            raise RuntimeError("flexcod.conf has no line %r" % old)
        text = text.replace(old, "Cluster=%s URL=http://127.0.0.1:%d" % (c["name"], p.port))
    tmp = fc.info["conf"] + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, fc.info["conf"])
    fc.restart(kill9=False)
    return proxies
