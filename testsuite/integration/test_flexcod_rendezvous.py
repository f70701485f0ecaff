#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The start-up rendezvous (doc/one-program.md) on a grid of two sites
(localgrid --sites: each cluster and flexcod in a network namespace of its
own, joined by the grid's "WAN" bridge), with real slurmctld, slurmd,
munged and flexcod; RendezvousTimeout=10.
Every part job runs flexco-rendezvous with the URL and token flexcod put
in its environment.

1. Barrier: co-allocation A over alpha (2 nodes) and beta (2); beta's
   part registers 3 s after alpha's.  Both get the same complete layout
   (contacts, ranks 2 and 3, offsets 0 and 2, world size 5), alpha's only
   after beta registered; the shell form evals to the same.
2. Timeout: B's beta part never registers.  10 s after alpha's part did,
   B fails with a reason naming beta's part, alpha's waiting part is told
   to abort with that reason (exit 3) before its job is cancelled, and
   every reservation and job goes.
3. Tokens, with HTTP requests of our own: none, malformed and unknown
   tokens are 401, A's token on B's co-allocation or on another part of A
   is 403, and a token whose co-allocation has ended is 401
   token_expired.
4. Cut off: C's beta part reaches flexcod only through a fault proxy on
   the WAN (RendezvousURL, SIGHUP), which black-holes: its flexco-rendezvous
   times out (exit 2), C fails naming beta's part, alpha's part is told
   to abort.
5. MPI across the clusters (Open MPI 4.1, contrib/examples): D's parts
   run contrib/examples/flexco-mpi-part with the example program, 2
   processes on alpha and 3 on beta.  Part 0's ompi-server URI travels
   by the rendezvous, and MPI's TCP stays on the sites' WAN interface;
   the parts join one communicator of 5 in layout order, the allreduce is right, every process took part, and both
   mpiruns exit 0 (no SIGPIPE at the end)."""

import http.client
import json
import os
import re
import secrets
import subprocess

import flexcohttp
import flexcotest as t
from faultproxy import FaultProxy
from flexcodtest import Flexcod, nothing_left

NODES = [4, 4]


class Answer:
    """A response as flexcohttp.check_response() reads it."""

    def __init__(self, status, doc, raw=b""):
        self.status, self.json, self.raw = status, doc, raw


def documented(method, target, status, doc):
    """Check an answer against doc/openapi-flexcod.yaml (reported at the end)."""
    flexcohttp.check_response("flexcod", method, target, Answer(status, doc, b"x"))

TIMEOUT = 10  # RendezvousTimeout
# A grid's nodes are one machine whose slurmd cannot run Open MPI's
# daemons under srun: each part's mpirun starts its processes itself.
GRID_MPIRUN_ARGS = "--oversubscribe --mca plm isolated --mca ras ^slurm"
# A site namespace's end of the WAN (localgrid's SITE_IF): MPI's only network.
SITE_IF = "wan"

SCRIPT = r"""#!/bin/sh
o="$RDV_OUT/$FLEXCO_COALLOCATION.$FLEXCO_PART_INDEX"
echo "$FLEXCO_RENDEZVOUS_TOKEN" > "$o.token"
echo "$FLEXCO_RENDEZVOUS_URL" > "$o.url"
case "$RDV_MODE.$FLEXCO_PART_INDEX" in
late.1) sleep 3 ;;
absent.1) sleep 170; exit 0 ;;
esac
wait=$RDV_CLIENT_TIMEOUT
[ "$FLEXCO_PART_INDEX" = 1 ] && wait=${RDV_CLIENT_TIMEOUT_1:-$wait}
date +%s.%N > "$o.begin"
"$RDV_BIN" --contact "contact-$FLEXCO_PART_INDEX" --ranks $((FLEXCO_PART_INDEX + 2)) \
    --json --timeout "$wait" > "$o.json" 2> "$o.err"
rc=$?
date +%s.%N > "$o.end"
if [ "$RDV_MODE" = late ] && [ $rc = 0 ]; then
    eval "$("$RDV_BIN" --contact "contact-$FLEXCO_PART_INDEX" --ranks $((FLEXCO_PART_INDEX + 2)))"
    echo "$FLEXCO_WORLD_SIZE $FLEXCO_RANK_OFFSET $FLEXCO_PART_RANKS $FLEXCO_RDV_PARTS" \
        "$FLEXCO_RDV_PART_0_CONTACT $FLEXCO_RDV_PART_1_CONTACT $FLEXCO_RDV_PART_1_CLUSTER" > "$o.sh"
fi
echo $rc > "$o.rc.t" && mv "$o.rc.t" "$o.rc"
"""


def main():
    t.require_grid_tools()
    rdv_bin = os.path.join(t.builddir(), "src", "rendezvous", "flexco-rendezvous")
    t.ok(os.access(rdv_bin, os.X_OK), "flexco-rendezvous is built", rdv_bin)
    out = t.scratch_dir("flexcod-rendezvous-")
    os.chmod(out, 0o777)
    with t.Grid(nodes=NODES, args=["--sites"]) as grid:
        fc = Flexcod(grid)
        wan_host = (grid.status().get("wan") or {}).get("host_addr", "")
        t.ok(re.fullmatch(r"\d+\.\d+\.\d+\.1", wan_host) is not None and fc.info.get("netns"),
             "a grid of sites: flexcod in its own namespace, the host on the WAN at %s" % wan_host)
        wan_net = wan_host.rsplit(".", 1)[0] + "."
        t.ok(fc.reconfigure(RendezvousTimeout=TIMEOUT), "RendezvousTimeout=%d (SIGHUP)" % TIMEOUT)

        def submit(mode, nodes, beta_timeout=60):
            s, doc = fc.submit({
                "parts": [{"cluster": "alpha", "nodes": nodes[0]}, {"cluster": "beta", "nodes": nodes[1]}],
                "duration": 300, "script": SCRIPT, "std_out": "/dev/null", "std_err": "/dev/null",
                "environment": {"RDV_OUT": out, "RDV_BIN": rdv_bin, "RDV_MODE": mode,
                                "RDV_CLIENT_TIMEOUT": "60", "RDV_CLIENT_TIMEOUT_1": str(beta_timeout)}})
            t.ok(s == 201 and [p["cluster"] for p in doc.get("parts", [])] == ["alpha", "beta"],
                 "co-allocation %s over alpha and beta is scheduled" % mode, "%s %r" % (s, doc))
            return doc.get("id")

        def path(coid, idx, ext):
            return os.path.join(out, "co-%s.%d.%s" % (coid, idx, ext))

        def read(coid, idx, ext):
            try:
                with open(path(coid, idx, ext)) as f:
                    return f.read().strip()
            except OSError:
                return None

        def done(coid, idx, timeout=90):
            return t.wait_for(lambda: read(coid, idx, "rc") is not None, timeout,
                              "co-%s part %d's flexco-rendezvous to end" % (coid, idx))

        def state(coid):
            return (fc.get(coid)[1] or {}).get("state")

        # -- 1. barrier (A) and 2. timeout (B), side by side -------------------
        a = submit("late", [2, 2])
        b = submit("absent", [1, 1])
        done(a, 0)
        done(a, 1)
        lay = [json.loads(read(a, i, "json") or "{}") for i in (0, 1)]
        for i in (0, 1):
            documented("POST", "/v1/rendezvous/%d/parts/%d" % (a, i), 200, lay[i])
        t.ok(read(a, 0, "rc") == "0" and read(a, 1, "rc") == "0",
             "A: both parts' flexco-rendezvous exit 0",
             "%r %r %r" % (read(a, 0, "rc"), read(a, 0, "err"), read(a, 1, "err")))
        want = [("alpha", 2, "contact-0", 2, 0), ("beta", 2, "contact-1", 3, 2)]
        for i in (0, 1):
            got = [(p.get("cluster"), p.get("node_count"), p.get("contact"), p.get("ranks"),
                    p.get("rank_offset")) for p in lay[i].get("parts", [])]
            t.ok(lay[i].get("complete") is True and lay[i].get("world_size") == 5
                 and lay[i].get("part") == i and lay[i].get("coallocation") == a and got == want
                 and all(p.get("registered") for p in lay[i]["parts"])
                 and all(re.fullmatch(r"[a-z0-9_\-\[\],]+", p.get("nodes") or "")
                         for p in lay[i]["parts"]),
                 "A: part %d is answered the whole layout (world 5, offsets 0 and 2)" % i,
                 "%r" % lay[i])
        end0, begin1 = float(read(a, 0, "end") or 0), float(read(a, 1, "begin") or 1e12)
        t.ok(end0 >= begin1 and float(read(a, 0, "begin") or 1e12) + 2 < begin1,
             "A: alpha's part waited at the barrier until beta's part registered 3 s later",
             "alpha ended %.2f, beta began %.2f" % (end0, begin1))
        t.ok(read(a, 1, "sh") == "5 2 3 2 contact-0 contact-1 beta",
             "A: the shell form, eval'd, gives the same layout", "%r" % read(a, 1, "sh"))

        done(b, 0, 60)
        t.wait_for(lambda: state(b) == "failed", 30, "B to fail")
        s, d = fc.get(b)
        reason = (d or {}).get("reason", "")
        t.ok(s == 200 and d.get("state") == "failed"
             and "part 1 on beta did not register within %d s" % TIMEOUT in reason,
             "B: the co-allocation failed because beta's part did not register",
             "%s %r" % (s, d))
        err = read(b, 0, "err") or ""
        t.ok(read(b, 0, "rc") == "3" and "abort" in err and "part 1 on beta did not register" in err,
             "B: alpha's waiting part was told to abort, and why (exit 3)",
             "%r %r" % (read(b, 0, "rc"), err))

        # -- 3. tokens ----------------------------------------------------------
        url = read(a, 0, "url")
        tok = read(a, 0, "token")
        t.ok(url == fc.url
             and re.fullmatch(r"[0-9a-f]{64}", tok or "") is not None and tok != read(a, 1, "token"),
             "each part job got the rendezvous URL and a token of its own", "%r %r" % (url, tok))
        host, port = url[len("http://"):].split(":")

        def call(method, target, token, body=None):
            c = http.client.HTTPConnection(host, int(port), timeout=30)
            h = {"Content-Type": "application/json"}
            if token is not None:
                h["Authorization"] = "Bearer " + token
            c.request(method, target, body=body, headers=h)
            r = c.getresponse()
            raw = r.read()
            c.close()
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = raw
            documented(method, target, r.status, doc if isinstance(doc, dict) else None)
            return r.status, doc, r.getheader("WWW-Authenticate")

        def refused(what, got, status, code):
            s, doc, chal = got
            err = doc.get("error", {}) if isinstance(doc, dict) else {}
            return t.ok(s == status and set(doc) == {"error"} and err.get("code") == code
                        and isinstance(err.get("message"), str)
                        and (status != 401 or chal == 'Bearer realm="flexcod-rendezvous"'),
                        "%s: %d %s" % (what, status, code), "%r" % (got,))

        reg = json.dumps({"contact": "x"})
        refused("no token", call("POST", "/v1/rendezvous/%d/parts/0" % a, None, reg), 401, "missing_token")
        refused("a malformed token", call("GET", "/v1/rendezvous/%d" % a, "not-a-token"), 401,
                "invalid_token")
        refused("an unknown token", call("GET", "/v1/rendezvous/%d" % a, secrets.token_hex(32)), 401,
                "invalid_token")
        refused("A's token on B's layout", call("GET", "/v1/rendezvous/%d" % b, tok), 403, "forbidden")
        refused("A's part 0 token registering part 1", call("POST", "/v1/rendezvous/%d/parts/1" % a,
                                                            tok, reg), 403, "forbidden")
        t.ok(t.wait_for(lambda: state(a) == "completed", 60, "A to complete"), "A completed")
        s, doc, _ = call("GET", "/v1/rendezvous/%d" % a, tok)
        refused("A's token once A completed", (s, doc, _), 401, "token_expired")
        s, doc, _ = call("POST", "/v1/rendezvous/%d/parts/0" % b, read(b, 0, "token"), reg)
        refused("B's token once B failed", (s, doc, _), 401, "token_expired")
        t.ok("failed" in doc.get("error", {}).get("message", ""), "the expiry says B failed", "%r" % doc)
        refused("an unknown member", call("POST", "/v1/rendezvous/%d/parts/0" % a, tok,
                                          json.dumps({"colour": "red"})), 400, "bad_request")

        # -- 4. beta's compute nodes cut off from flexcod -----------------------
        proxy = FaultProxy(int(port), upstream_host=host, name="rendezvous-beta", listen_host=wan_host)
        try:
            with open(fc.info["conf"]) as f:
                conf = f.read()
            cut = re.sub(r"^(Cluster=beta .*)$", r"\1 RendezvousURL=http://%s:%d" % (wan_host, proxy.port),
                         conf, flags=re.M)
            with open(fc.info["conf"], "w") as f:
                f.write(cut)
            t.ok(fc.reconfigure(RendezvousTimeout=TIMEOUT), "beta's RendezvousURL: a fault proxy (SIGHUP)")
            proxy.set("blackhole")
            c = submit("cut", [1, 1], beta_timeout=6)
            done(c, 1, 90)
            t.ok(read(c, 1, "url") == "http://%s:%d" % (wan_host, proxy.port),
                 "C: beta's part was given beta's RendezvousURL", "%r" % read(c, 1, "url"))
            err1 = read(c, 1, "err") or ""
            t.ok(read(c, 1, "rc") == "2" and "timed out" in err1,
                 "C: beta's part cannot reach flexcod: flexco-rendezvous times out (exit 2)",
                 "%r %r" % (read(c, 1, "rc"), err1))
            done(c, 0, 60)
            t.wait_for(lambda: state(c) == "failed", 30, "C to fail")
            s, d = fc.get(c)
            t.ok(d.get("state") == "failed" and "part 1 on beta did not register" in d.get("reason", ""),
                 "C: the co-allocation failed, naming beta's part", "%r" % d)
            err0 = read(c, 0, "err") or ""
            t.ok(read(c, 0, "rc") == "3" and "part 1 on beta did not register" in err0,
                 "C: alpha's part was told to abort, and why", "%r %r" % (read(c, 0, "rc"), err0))
        finally:
            proxy.heal()
            proxy.close()
            with open(fc.info["conf"], "w") as f:
                f.write(conf)
        t.ok(fc.reconfigure(RendezvousTimeout=TIMEOUT), "beta's RendezvousURL removed (SIGHUP)")

        # -- 5. one MPI program over both clusters ------------------------------
        example = os.path.join(out, "flexco_mpi_example")
        r = subprocess.run(["mpicc", "-Wall", "-Wextra", "-Werror", "-o", example,
                            os.path.join(t.srcdir(), "contrib", "examples", "flexco_mpi_example.c")],
                           capture_output=True, text=True, timeout=120)
        t.ok(r.returncode == 0, "mpicc builds contrib/examples/flexco_mpi_example.c", r.stderr[-2000:])
        mpi_script = ("#!/bin/sh\n"
                      "MPI_NP=$((FLEXCO_PART_INDEX + 2)) %s %s > %s/$FLEXCO_COALLOCATION.$FLEXCO_PART_INDEX.mpi"
                      " 2>&1\necho $? > %s/$FLEXCO_COALLOCATION.$FLEXCO_PART_INDEX.rc\n"
                      % (os.path.join(t.srcdir(), "contrib", "examples", "flexco-mpi-part"), example, out, out))
        s, doc = fc.submit({
            "parts": [{"cluster": "alpha", "nodes": 1}, {"cluster": "beta", "nodes": 1}],
            "duration": 300, "script": mpi_script, "std_out": "/dev/null", "std_err": "/dev/null",
            "environment": {"RENDEZVOUS_CMD": rdv_bin, "MPIRUN_ARGS": GRID_MPIRUN_ARGS, "MPI_IF": SITE_IF,
                            "RENDEZVOUS_TIMEOUT": "60",
                            # the grid's part jobs run as the submitter, root here
                            "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                            "PATH": os.environ.get("PATH", "/usr/bin:/bin")}})
        t.ok(s == 201, "co-allocation D (MPI) over alpha and beta is scheduled", "%s %r" % (s, doc))
        d_id = (doc or {}).get("id")
        if d_id:
            done(d_id, 0, 120)
            done(d_id, 1, 60)
        mpi0, mpi1 = read(d_id, 0, "mpi") or "", read(d_id, 1, "mpi") or ""
        t.ok("allreduce over 5 processes on 2 clusters (alpha:2 beta:3): ok" in mpi0,
             "D: one communicator of 5 processes in layout order, the allreduce right, every "
             "process counted", mpi0[-3000:] + mpi1[-3000:])
        t.ok(len(re.findall(r"^pingpong alpha-beta +\d+ bytes: +[\d.]+ us +[\d.]+ MB/s$", mpi0, re.M)) == 4,
             "D: a ping-pong between alpha and beta, 4 message sizes", mpi0[-2000:])
        uris = re.findall(r"part 0's ompi-server: (\S+)", mpi0 + "\n" + mpi1)
        addrs = re.findall(r"tcp://([\d.]+):", uris[0]) if uris else []
        t.ok(len(uris) == 2 and uris[0] == uris[1] and addrs
             and all(a.startswith(wan_net) and a != wan_host for a in addrs),
             "D: both parts had part 0's ompi-server URI from the rendezvous, on alpha's WAN "
             "address only", "%r" % uris)
        t.ok(read(d_id, 0, "rc") == "0" and read(d_id, 1, "rc") == "0"
             and "signal" not in mpi0 + mpi1,
             "D: both parts' mpirun exit 0, no process killed by a signal",
             "%r %r %s %s" % (read(d_id, 0, "rc"), read(d_id, 1, "rc"), mpi0[-1500:], mpi1[-1500:]))
        t.ok(t.wait_for(lambda: nothing_left(grid), 90, "every reservation and job to go"),
             "no reservation or job is left on either cluster")
        log = fc.log_tail(10 ** 6)
        t.ok(all(read(x, i, "token") not in log for x in (a, b, c) for i in (0, 1)),
             "no rendezvous token is in flexcod's log")
        fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
