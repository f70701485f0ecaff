#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""localgrid start --sites (issue 38 §1): each cluster and flexcod in a
network namespace of its own; flexcod reaches every plugin and splits a
co-allocation over two sites; `net beta partition` makes beta silent
without closing an open connection, `heal` brings it back; `delay 40ms`
raises the round trip by 40 ms; `loss` drops a fraction of the packets;
`--users` gives a site its own uids; `stop` leaves no namespace, link or
relay behind, also after a start that failed half way."""

import json
import os
import select
import socket
import struct
import subprocess
import time

import flexcotest as t
from flexcodtest import Flexcod, script

ALPHA_PASSWD = "carol:x:64110:64110:Carol at alpha:/nonexistent:/usr/sbin/nologin\n"
BETA_PASSWD = ("carol:x:64220:64220:Carol at beta:/nonexistent:/usr/sbin/nologin\n"
               "dave:x:64221:64221:Dave, beta only:/nonexistent:/usr/sbin/nologin\n")
ECHO = ("import socket,sys\n"
        "l=socket.socket(); l.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
        "l.bind((sys.argv[1],int(sys.argv[2]))); l.listen(4)\n"
        "print('listening',flush=True)\n"
        "c,_=l.accept()\n"
        "while True:\n"
        "    d=c.recv(4096)\n"
        "    if not d: break\n"
        "    c.sendall(d)\n")
NS_CONNECT = ("import socket,sys\n"
              "try:\n"
              "    socket.create_connection((sys.argv[1],int(sys.argv[2])),float(sys.argv[3])); print('connected')\n"
              "except socket.timeout: print('timeout')\n"
              "except OSError as e: print('error',e)\n")


def netns_inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def connect_ms(addr, port, n=5):
    """The median time of n TCP connects to addr:port, in ms."""
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        with socket.create_connection((addr, port), timeout=5):
            times.append((time.monotonic() - t0) * 1000)
    return sorted(times)[n // 2]


def ping_answered(addr, count=200):
    """How many of count ICMP echo requests to addr are answered within a
    second of the last one (a raw socket; we run as root)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xffff

    def csum(b):
        b += b"\0" * (len(b) % 2)
        v = sum(struct.unpack("!%dH" % (len(b) // 2), b))
        v = (v >> 16) + (v & 0xffff)
        return ~(v + (v >> 16)) & 0xffff
    seen = set()
    for seq in range(count):
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"localgrid"
        s.sendto(struct.pack("!BBHHH", 8, 0, csum(hdr), ident, seq) + b"localgrid", (addr, 0))
        # paced at 500/s: the kernel sends at most 1000 ICMP messages a
        # second, bursts of 50 (net.ipv4.icmp_msgs_per_sec, _burst)
        time.sleep(0.002)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], max(0, deadline - time.monotonic()))
        if not r:
            break
        data, src = s.recvfrom(2048)
        ihl = (data[0] & 0xf) * 4
        typ, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
        if typ == 0 and rid == ident and src[0] == addr:
            seen.add(rseq)
    s.close()
    return len(seen)


def main():
    t.require_grid_tools()
    tmp = t.scratch_dir("localgrid-sites-")
    os.chmod(tmp, 0o1777)
    files = {}
    for name, text in (("alpha", ALPHA_PASSWD), ("beta", BETA_PASSWD)):
        files[name] = os.path.join(tmp, name + ".passwd")
        with open(files[name], "w") as f:
            f.write(text)
    before_ns = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    with t.Grid(nodes=[2, 2], args=["--sites", "--users", "alpha=" + files["alpha"],
                                    "--users", "beta=" + files["beta"]]) as grid:
        t.ok(True, "start --sites: 2 sites up (%.1fs)" % grid.start_seconds)
        st = grid.status()
        sites = {c["name"]: c for c in st["clusters"]}
        fcinfo = st["flexcod"]
        wan = st["wan"]

        # -- each site's daemons in its own namespace -------------------------
        mine = netns_inode("/proc/self/ns/net")
        seen = {}
        for name, c in sites.items():
            want = netns_inode("/run/netns/" + c["site"]["netns"])
            pids = [c["slurmctld_pid"]] + c["slurmd_pids"]
            got = {netns_inode("/proc/%d/ns/net" % p) for p in pids}
            t.ok(want and want != mine and got == {want},
                 "%s's slurmctld and %d slurmds are in its namespace %s"
                 % (name, len(c["slurmd_pids"]), c["site"]["netns"]),
                 "namespace %r, daemons' %r, ours %r" % (want, got, mine))
            seen[name] = want
        fc_ns = netns_inode("/proc/%d/ns/net" % fcinfo["pid"])
        t.ok(fc_ns and fc_ns == netns_inode("/run/netns/" + fcinfo["netns"])
             and fc_ns not in (mine, *seen.values()) and len(set(seen.values())) == 2,
             "flexcod is in a namespace of its own, the two sites in different ones")
        t.ok(all(c["plugin_url"] == "http://%s:%d" % (c["site"]["addr"], c["plugin_port"])
                 for c in sites.values()) and fcinfo["url"] == "http://%s:%d"
             % (fcinfo["addr"], fcinfo["port"]),
             "status: plugins and flexcod at their sites' addresses",
             "%r %r" % ([c["plugin_url"] for c in sites.values()], fcinfo["url"]))

        # -- flexcod reaches every plugin; a co-allocation over both sites ----
        fc = Flexcod(grid)
        t.ok(t.wait_for(fc.listening, 60, "flexcod to reconcile both sites"),
             "flexcod answers from its namespace and has reached both plugins")
        coid, d = fc.run_split({"nodes": 3, "duration": 60, "script": script(tmp, "sleep 8"),
                                "std_out": "/dev/null"})
        t.is_(sorted(p["cluster"] for p in d.get("parts", [])), ["alpha", "beta"],
              "the co-allocation's parts run at alpha and at beta")

        # -- partition and heal ------------------------------------------------
        beta = sites["beta"]
        baddr = beta["site"]["addr"]
        echo_port = t.free_port()
        echo = subprocess.Popen([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", "beta",
                                 "--", "python3", "-c", ECHO, baddr, str(echo_port)],
                                stdout=subprocess.PIPE, text=True)
        try:
            t.ok(echo.stdout.readline().strip() == "listening", "an echo server runs at beta")
            conn = socket.create_connection((baddr, echo_port), timeout=5)
            conn.sendall(b"one")
            t.is_(conn.recv(10), b"one", "an open TCP connection to beta carries data")
            r = grid.localgrid("net", "beta", "partition")
            t.ok(r.returncode == 0 and "partitioned" in r.stdout, "net beta partition",
                 r.stdout + r.stderr)
            conn.settimeout(1.0)
            conn.sendall(b"two")
            try:
                got = conn.recv(10)
                t.ok(False, "partitioned: the open connection gets nothing, not closed",
                     "recv returned %r" % got)
            except socket.timeout:
                t.ok(True, "partitioned: the open connection gets nothing, not closed")
            except OSError as e:
                t.ok(False, "partitioned: the open connection gets nothing, not closed",
                     "recv raised %r" % e)
            try:
                socket.create_connection((beta["site"]["addr"], beta["plugin_port"]), timeout=1.0)
                t.ok(False, "partitioned: a new connection to beta's plugin times out")
            except socket.timeout:
                t.ok(True, "partitioned: a new connection to beta's plugin times out")
            r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", "flexcod",
                                "--", "python3", "-c", NS_CONNECT, baddr,
                                str(beta["plugin_port"]), "1.0"],
                               capture_output=True, text=True, timeout=30)
            t.is_(r.stdout.strip(), "timeout",
                  "partitioned: from flexcod's namespace too, beta's plugin times out")
            a = sites["alpha"]
            t.ok(connect_ms(a["site"]["addr"], a["plugin_port"]) < 20,
                 "partitioned: alpha still answers")
            st2 = grid.status()
            t.is_({c["name"]: c["site"]["link"] for c in st2["clusters"]},
                  {"alpha": "clear", "beta": "partitioned"}, "status shows beta partitioned")
            r = grid.localgrid("net", "beta", "heal")
            t.ok(r.returncode == 0 and "clear" in r.stdout, "net beta heal", r.stdout + r.stderr)
            conn.settimeout(15)
            try:
                got = conn.recv(10)
            except OSError as e:
                got = repr(e)
            t.is_(got, b"two", "healed: the connection opened before the partition "
                  "carries the bytes sent during it")
            conn.close()
        finally:
            echo.kill()
            echo.wait()
        t.ok(t.wait_for(fc.listening, 60, "flexcod to reach beta again"),
             "healed: flexcod reaches beta again")

        # -- delay --------------------------------------------------------------
        plain = connect_ms(baddr, beta["plugin_port"])
        r = grid.localgrid("net", "beta", "delay", "40ms")
        t.ok(r.returncode == 0, "net beta delay 40ms", r.stdout + r.stderr)
        r = grid.localgrid("net", "beta", "delay", "40ms")
        t.ok(r.returncode == 0 and "delay 40ms" in r.stdout,
             "net beta delay 40ms again (idempotent)", r.stdout + r.stderr)
        delayed = connect_ms(baddr, beta["plugin_port"])
        a = sites["alpha"]
        other = connect_ms(a["site"]["addr"], a["plugin_port"])
        t.note("TCP connect to beta's plugin: %.2f ms clear, %.2f ms with delay 40ms; "
               "alpha %.2f ms" % (plain, delayed, other))
        t.ok(plain < 15 and 39 <= delayed < 200 and other < 15,
             "delay 40ms raises beta's round trip by 40 ms, not alpha's",
             "clear %.2f, delayed %.2f, alpha %.2f" % (plain, delayed, other))
        st3 = grid.status()
        relay = {c["name"]: c for c in st3["clusters"]}["beta"]["site"]["relay_pid"]
        t.ok(relay and t.pid_alive(relay) and st3["clusters"][1]["site"]["link"] == "delay 40ms",
             "status: beta's link delay 40ms, its relay runs", "%r" % st3["clusters"][1]["site"])
        t.ok(t.wait_for(fc.listening, 60, "flexcod through the delay"),
             "flexcod works with beta 40 ms away")

        # -- loss ----------------------------------------------------------------
        clear = ping_answered(baddr)
        r = grid.localgrid("net", "beta", "loss", "30%")
        t.ok(r.returncode == 0 and "loss 30%" in r.stdout, "net beta loss 30%", r.stdout + r.stderr)
        t.ok(not t.pid_alive(relay), "the relay is gone with the delay")
        lossy = ping_answered(baddr)
        t.note("ICMP echo to beta: %d of 200 answered clear, %d with loss 30%% each way "
               "(expected about %d)" % (clear, lossy, 200 * 0.7 * 0.7))
        t.ok(clear == 200 and 50 <= lossy <= 150,
             "loss 30% drops a fraction of the packets (both ways)",
             "clear %d, lossy %d" % (clear, lossy))

        # -- users -----------------------------------------------------------------
        def getent(site, name):
            r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", site,
                                "--", "getent", "passwd", name],
                               capture_output=True, text=True, timeout=30)
            return r.stdout.split(":")[2] if r.returncode == 0 else None
        t.is_((getent("alpha", "carol"), getent("beta", "carol")), ("64110", "64220"),
              "carol is uid 64110 at alpha and 64220 at beta")
        t.is_((getent("alpha", "dave"), getent("beta", "dave")), (None, "64221"),
              "dave exists at beta only")
        t.is_(getent("beta", "root"), "0", "root is in beta's database (added by localgrid)")
        grid.localgrid("net", "beta", "heal")
        jobs = {}
        for site, gid in (("alpha", "64110"), ("beta", "64220")):
            r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", site,
                                "--", "setpriv", "--reuid=carol", "--regid=" + gid,
                                "--clear-groups", "sbatch", "--parsable", "-o",
                                os.path.join(tmp, site + "-%j.out"), "--wrap", "id -u"],
                               capture_output=True, text=True, timeout=60)
            jobs[site] = r.stdout.strip()
            t.ok(r.returncode == 0 and jobs[site].isdigit(),
                 "carol submits a job at %s from inside the site" % site, r.stderr)
        ran = {}
        for site, job in jobs.items():
            j = grid.wait_job(site, job, timeout=60)
            ran[site] = t.read_file(os.path.join(tmp, "%s-%s.out" % (site, job))).strip()
            t.is_(j.get("JobState"), "COMPLETED", "carol's job at %s completes" % site)
        t.is_(ran, {"alpha": "64110", "beta": "64220"},
              "carol's jobs run as uid 64110 at alpha and 64220 at beta")

        # -- the host's user database changes: the sites' daemons keep theirs -------
        # useradd and userdel write a new /etc/passwd and rename it over the
        # old one.  Before, a site's files were bound over /etc/passwd
        # file by file, and the kernel drops such a bind when the file
        # under it is renamed over: beta's slurmctld then saw the host's
        # users and could not launch carol's job ("getpwuid failed").
        tmp_user = "flexcolgtmp"
        made = subprocess.run(["useradd", "-M", "-N", "-g", "nogroup", "-d", "/nonexistent",
                               "-s", "/usr/sbin/nologin", tmp_user],
                              capture_output=True, text=True, timeout=60)
        subprocess.run(["userdel", tmp_user], capture_output=True, timeout=60)
        r = subprocess.run([t.localgrid_path(), "--run-dir", grid.run_dir, "exec", "beta",
                            "--", "setpriv", "--reuid=carol", "--regid=64220",
                            "--clear-groups", "sbatch", "--parsable", "-o",
                            os.path.join(tmp, "after-%j.out"), "--wrap", "id -u"],
                           capture_output=True, text=True, timeout=60)
        job = r.stdout.strip()
        j = grid.wait_job("beta", job, timeout=60) if r.returncode == 0 else {}
        out = t.read_file(os.path.join(tmp, "after-%s.out" % job)).strip() \
            if j.get("JobState") == "COMPLETED" else None
        t.ok(made.returncode == 0 and j.get("JobState") == "COMPLETED" and out == "64220",
             "after a user was added and removed on the host, beta's running slurmctld still "
             "has its own users: carol's job runs as 64220",
             "%s %r %r %r" % (made.stderr, r.stderr, j.get("JobState"), out))

        # -- stop removes everything ------------------------------------------------
        grid.localgrid("net", "beta", "delay", "10ms", "loss", "1%")
        with open(os.path.join(grid.run_dir, "state.json")) as f:
            state = json.load(f)
        relays = [(p["pid"], p["start"]) for p in state["processes"] if p["role"] == "relay"]
        r = grid.stop()
        t.ok(r.returncode == 0, "stop (%.1fs)" % grid.stop_seconds, r.stdout + r.stderr)
        left_ns = [n for n in wan["netns"] if os.path.exists("/run/netns/" + n)
                   or os.path.exists("/etc/netns/" + n)
                   or os.path.exists("/run/flexco-localgrid/" + n)]
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                               text=True).stdout
        left_links = [w for w in links.split() if w.startswith("fcw%d" % wan["octet"])]
        t.ok(not left_ns and not left_links, "stop leaves no namespace, /etc folder, "
             "bridge or veth of the grid", "%r %r" % (left_ns, left_links))
        t.ok(relays and not any(t.pid_alive(p, s) for p, s in relays),
             "stop ends the delay relay", "%r" % relays)

    # -- refusals, and a start that fails half way ---------------------------------
    bad = os.path.join(tmp, "bad.passwd")
    with open(bad, "w") as f:
        f.write("carol:x:notanumber:1::/:/bin/sh\n")
    for args, why in ((["--users", "beta=" + files["beta"]], "needs --sites"),
                      (["--sites", "--users", "beta=" + bad], "not a passwd line"),
                      (["--sites", "--backup", "alpha"], "not supported"),
                      (["--sites", "--timeout", "0.5"], "start failed: timed out")):
        r = subprocess.run([t.localgrid_path(), "start", "--run-dir", grid.run_dir + "-bad",
                            "--builddir", t.builddir(), "--clusters", "2", "--nodes", "1",
                            "--base-port", str(grid.base_port), *args],
                           capture_output=True, text=True, timeout=120)
        t.ok(r.returncode != 0 and why in r.stderr, "start refuses %s" % " ".join(args),
             r.stderr[-400:])
    now_ns = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    left = sorted(n for n in now_ns - before_ns if n.startswith("fcs-"))
    t.ok(not left, "a start that failed half way leaves no namespace behind", "%r" % left)


if __name__ == "__main__":
    t.run_main(main)
