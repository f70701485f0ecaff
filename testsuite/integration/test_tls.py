#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""TLS in front of the plugin and flexcod (issue 16, 3; doc/admin.md,
"Network and TLS"): stunnel, configured from the examples shipped in
contrib/tls/, terminates TLS in front of one cluster's plugin and in front
of flexcod, with a private CA and server certificates made here with
openssl.  flexcod reaches that cluster at https://... (TLSCAFile=), and
sreserve reaches flexcod and that cluster at https://...; a co-allocation
over both clusters runs to its end through them, so MUNGE's signed
payload (method, target, body digest, audience) verifies through the
proxy.  Then the failures:

- plain HTTP to a proxy port gets no HTTP answer, and sreserve says so;
- a client with the wrong CA, or a server certificate for another name,
  fails with sreserve's exit code and one "sreserve: error:" line naming
  TLS, and the server never sees a byte of the request (so never the
  MUNGE credential);
- flexcod with the wrong CA logs one clear line for the cluster, and
  reports the error in GET /v1/clusters."""

import json
import os
import shutil
import socket
import ssl
import subprocess
import threading

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, slurm_jobs, slurm_reservations

EXIT = {"ok": 0, "no_daemon": 1, "no_cluster": 1}  # every error exits 1, as in Slurm
NODES = [4, 4]


def sreserve_path():
    return os.path.join(t.builddir(), "src", "sreserve", "sreserve")


def stunnel_path():
    """Debian's stunnel4 package installs /usr/bin/stunnel4."""
    for p in ("stunnel4", "stunnel"):
        if shutil.which(p):
            return shutil.which(p)
        if os.access("/usr/bin/" + p, os.X_OK):
            return "/usr/bin/" + p
    return None


class Sreserve:
    """sreserve with FLEXCOD_CONF=conf and only the FLEXCO_* variables given."""

    def __init__(self, conf):
        self.conf = conf

    def __call__(self, *argv, env=None):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("FLEXCO_", "FLEXCOD_CONF"))}
        e["FLEXCOD_CONF"] = self.conf
        e["TZ"] = "UTC"
        e.update(env or {})
        return subprocess.run([sreserve_path(), *argv], capture_output=True, text=True,
                              timeout=120, env=e, stdin=subprocess.DEVNULL)


def one_error_line(r, code, what, *parts):
    lines = r.stderr.splitlines()
    return t.ok(r.returncode == EXIT[code] and len(lines) == 1 and r.stdout == ""
                and lines[0].startswith("sreserve: error: ") and all(p in lines[0] for p in parts),
                "%s: exit %d (%s) and one stderr line with %r" % (what, EXIT[code], code, parts),
                "exit %d\nstdout: %s\nstderr: %s" % (r.returncode, r.stdout[:400], r.stderr[:800]))


# -- certificates --------------------------------------------------------------

def openssl(d, *argv):
    r = subprocess.run(["openssl", *argv], cwd=d, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        t.bail_out("openssl %s: %s" % (" ".join(argv), r.stderr.strip()))


def make_ca(d, name):
    """A self-signed CA: d/name.pem, d/name.key."""
    with open(os.path.join(d, name + ".cnf"), "w") as f:
        f.write("[req]\ndistinguished_name = dn\nprompt = no\nx509_extensions = v3_ca\n"
                "[dn]\nCN = FlexCo test %s\n"
                "[v3_ca]\nbasicConstraints = critical, CA:TRUE\n"
                "keyUsage = critical, keyCertSign, cRLSign\nsubjectKeyIdentifier = hash\n" % name)
    openssl(d, "req", "-x509", "-config", name + ".cnf", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", name + ".key",
            "-out", name + ".pem", "-days", "2")


def make_server(d, name, ca, san):
    """d/name.pem, d/name.key: a server certificate for `san`
    (subjectAltName, e.g. "IP:127.0.0.1") signed by the CA `ca`."""
    with open(os.path.join(d, name + ".cnf"), "w") as f:
        f.write("[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = %s\n" % name)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("subjectAltName = %s\nbasicConstraints = CA:FALSE\n"
                "keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n"
                "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n" % san)
    openssl(d, "req", "-new", "-config", name + ".cnf", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", name + ".key",
            "-out", name + ".csr")
    openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".pem")
    os.chmod(os.path.join(d, name + ".key"), 0o600)


# -- stunnel from the shipped examples ------------------------------------------

def stunnel_conf(example, d, name, accept, connect, cert):
    """The example contrib/tls/EXAMPLE with this grid's addresses and
    files, without setuid (the test's files are root's); every other line,
    TLS settings included, as shipped."""
    set_to = {"accept": "127.0.0.1:%d" % accept, "connect": "127.0.0.1:%d" % connect,
              "cert": os.path.join(d, cert + ".pem"), "key": os.path.join(d, cert + ".key")}
    out, seen = [], set()
    with open(os.path.join(t.srcdir(), "contrib", "tls", example)) as f:
        for line in f:
            key = line.split("=", 1)[0].strip().lower() if "=" in line else None
            if key in ("setuid", "setgid"):
                continue
            if key in set_to:
                line = "%s = %s\n" % (key, set_to[key])
                seen.add(key)
            out.append(line.rstrip("\n"))
    if seen != set(set_to):
        t.bail_out("contrib/tls/%s lacks %s" % (example, sorted(set(set_to) - seen)))
    path = os.path.join(d, name + ".conf")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def start_stunnel(conf, port):
    log = open(conf[:-5] + ".out", "ab")
    p = subprocess.Popen([stunnel_path(), conf], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    if not t.wait_for(lambda: t.tcp_accepts(port) or p.poll() is not None, 30,
                      "stunnel to listen on %d" % port) or p.poll() is not None:
        t.bail_out("stunnel %s did not start: %s" % (conf, open(conf[:-5] + ".out").read()[-800:]))
    return p


class RecordingTLSServer:
    """A TLS server with the certificate `cert` that records, for each
    connection, ("handshake_failed", why) or ("data", every byte received
    after the handshake)."""

    def __init__(self, d, cert, port):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(d, cert + ".pem"), os.path.join(d, cert + ".key"))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.port = port
        self.seen = []  # ("handshake_failed", why) or ("data", bytes)
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(10)
            try:
                tls = self.ctx.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError) as e:
                self.seen.append(("handshake_failed", str(e)))
                conn.close()
                continue
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = tls.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except (ssl.SSLError, OSError):
                pass
            self.seen.append(("data", data))
            tls.close()

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


def plain_http_answer(port):
    """What a plain-HTTP request to the port gets back (until EOF)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        got = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
    return got


def main():
    t.require_grid_tools()
    for prog in ("openssl",):
        if not shutil.which(prog):
            t.bail_out("%s not installed (contrib/install-deps)" % prog)
    if not stunnel_path():
        t.bail_out("stunnel4 not installed (contrib/install-deps; contrib/slurm-chroot for 24.11)")
    if not os.access(sreserve_path(), os.X_OK):
        t.bail_out("%s not built" % sreserve_path())
    with t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        st = grid.status()
        alpha, beta = st["clusters"][0], st["clusters"][1]
        d = os.path.join(grid.run_dir, "tls")
        os.makedirs(d, exist_ok=True)
        # Unused ports of the first cluster's block (localgrid: +0 slurmctld,
        # +1 plugin, +2 flexcod, +10... slurmd).
        p_plugin, p_flexcod, p_badca, p_badname = (grid.base_port + i for i in (5, 6, 7, 8))

        make_ca(d, "ca")
        make_ca(d, "other-ca")
        make_server(d, "server", "ca", "IP:127.0.0.1, DNS:localhost")
        make_server(d, "server-other-ca", "other-ca", "IP:127.0.0.1")
        make_server(d, "server-other-name", "ca", "DNS:other.example.org")
        ca, other_ca = os.path.join(d, "ca.pem"), os.path.join(d, "other-ca.pem")

        procs = []
        fakes = []
        try:
            procs.append(start_stunnel(stunnel_conf("stunnel-plugin.conf", d, "stunnel-plugin",
                                                    p_plugin, beta["plugin_port"], "server"),
                                       p_plugin))
            procs.append(start_stunnel(stunnel_conf("stunnel-flexcod.conf", d, "stunnel-flexcod",
                                                    p_flexcod, fc.info["port"], "server"),
                                       p_flexcod))
            fakes = [RecordingTLSServer(d, "server-other-ca", p_badca),
                     RecordingTLSServer(d, "server-other-name", p_badname)]
            run(grid, fc, alpha, beta, d, ca, other_ca, p_plugin, p_flexcod, fakes)
        finally:
            for f in fakes:
                f.stop()
            for p in procs:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def run(grid, fc, alpha, beta, d, ca, other_ca, p_plugin, p_flexcod, fakes):
    beta_https = "https://127.0.0.1:%d" % p_plugin
    flexcod_https = "https://127.0.0.1:%d" % p_flexcod
    conf_path = fc.info["conf"]
    with open(conf_path) as f:
        conf = f.read()
    plain_beta = "Cluster=%s URL=http://127.0.0.1:%d" % (beta["name"], beta["plugin_port"])
    if plain_beta not in conf:
        t.bail_out("flexcod.conf has no %r" % plain_beta)

    def write_conf(ca_file):
        with open(conf_path, "w") as f:
            f.write(conf.replace(plain_beta, "Cluster=%s URL=%s" % (beta["name"], beta_https))
                    + "TLSCAFile=%s\nFlexcodURL=%s\n" % (ca_file, flexcod_https))

    # -- an unreadable TLSCAFile: flexcod refuses to start -----------------------
    write_conf("/nonexistent/ca.pem")
    r = subprocess.run([fc.info["program"], "-D", "-f", conf_path], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    t.ok(r.returncode == 1 and r.stderr.strip() == "flexcod: fatal: %s: TLSCAFile "
         "/nonexistent/ca.pem is not readable: No such file or directory (cluster %s is https)"
         % (conf_path, beta["name"]),
         "flexcod with an unreadable TLSCAFile and an https cluster: exit 1, one fatal line",
         "exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))

    # -- flexcod reaches beta through the proxy ---------------------------------
    write_conf(ca)
    fc.restart(kill9=False)  # waits until every cluster is reconciled, beta over TLS
    r = fc.client().get("/v1/clusters")
    cl = {c["name"]: c for c in (r.json or {}).get("clusters", [])}
    t.ok(r.status == 200 and cl.get(beta["name"], {}).get("url") == beta_https
         and cl[beta["name"]].get("reachable") is True and cl[beta["name"]].get("reconciled")
         and not cl[beta["name"]].get("last_error"),
         "flexcod reaches %s at %s (TLSCAFile=ca.pem): reachable and reconciled"
         % (beta["name"], beta_https), "%s %r" % (r.status, r.json))

    # TLSCAFile=ca.pem and FlexcodURL=https://... from flexcod.conf (flexcod
    # itself listens on 127.0.0.1, behind its proxy)
    sr = Sreserve(conf_path)

    # sreserve asks beta's plugin directly (signed GET with a query string)
    r = sr("profile", "-M", beta["name"], "--horizon", "1:00:00", "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 and r.stdout else {}
    c0 = (doc.get("clusters") or [{}])[0]
    t.ok(r.returncode == 0 and c0.get("cluster") == beta["name"] and c0.get("reachable") is True
         and not c0.get("error"),
         "sreserve profile -M %s over https: the plugin verifies the MUNGE signature "
         "through the proxy" % beta["name"], r.stdout[:600] + r.stderr)

    # -- a co-allocation end to end: sreserve -> https -> flexcod -> https -> beta
    out_dir = os.path.join(d, "out")
    os.makedirs(out_dir)
    os.chmod(out_dir, 0o777)
    r = sr("submit", "-N", "6", "-t", "2", "-J", "tls", "-o", "/dev/null", "--parsable",
           "--wrap", "touch %s/part.$FLEXCO_PART_INDEX; sleep 3" % out_dir)
    coid = r.stdout.strip()
    t.ok(r.returncode == 0 and coid.isdigit() and r.stderr == "",
         "sreserve submit over https to flexcod (FlexcodURL=): a co-allocation of 6 nodes", r.stdout + r.stderr)

    def shown():
        x = sr("show", coid, "--json")
        return json.loads(x.stdout) if x.returncode == 0 and x.stdout else {}

    done = t.wait_for(lambda: (lambda x: x.get("state") in ("completed", "failed", "cancelled")
                               and x)(shown()), 180, "co-%s to end" % coid) or {}
    parts = done.get("parts", [])
    t.ok(done.get("state") == "completed" and len(parts) == 2
         and {p.get("cluster") for p in parts} == {alpha["name"], beta["name"]}
         and all(p.get("state") == "completed" for p in parts),
         "the co-allocation over %s (http) and %s (https) ran and completed, shown over https"
         % (alpha["name"], beta["name"]), json.dumps(done)[:1500])
    t.ok(sorted(os.listdir(out_dir)) == ["part.0", "part.1"],
         "both part jobs ran", repr(sorted(os.listdir(out_dir))))
    t.ok(t.wait_for(lambda: nothing_left(grid), 60, "its reservations to go"),
         "its reservations were given back", "%r %r" % (slurm_reservations(grid), slurm_jobs(grid)))

    # -- plain HTTP to the proxies is refused -------------------------------------
    for port, who in ((p_flexcod, "flexcod"), (p_plugin, "the plugin")):
        got = plain_http_answer(port)
        t.ok(not got.startswith(b"HTTP/"),
             "plain HTTP to the TLS port of %s gets no HTTP answer" % who, repr(got[:200]))
    r = sr("list", env={"FLEXCO_URL": "http://127.0.0.1:%d" % p_flexcod})
    one_error_line(r, "no_daemon", "sreserve list with http:// to the TLS port",
                   "flexcod is not reachable at http://127.0.0.1:%d (transport: " % p_flexcod)

    # -- the wrong CA: nothing is sent --------------------------------------------
    r = sr("list", env={"FLEXCO_TLS_CA_FILE": other_ca})
    one_error_line(r, "no_daemon", "sreserve list with a CA that did not sign flexcod's proxy",
                   "flexcod: TLS with %s failed (tls_failed: GET %s/v1/coallocations"
                   % (flexcod_https, flexcod_https),
                   "certificate", "(CA certificates: %s); the request was not sent); "
                   "check TLSCAFile in flexcod.conf or FLEXCO_TLS_CA_FILE" % other_ca)
    r = sr("profile", "-M", beta["name"], env={"FLEXCO_TLS_CA_FILE": other_ca})
    one_error_line(r, "no_cluster", "sreserve profile with a CA that did not sign the "
                   "plugin's proxy", "cluster %s: TLS with %s failed (tls_failed: " %
                   (beta["name"], beta_https), "certificate")
    r = sr("list", env={"FLEXCO_TLS_CA_FILE": "/nonexistent/ca.pem"})
    one_error_line(r, "no_daemon", "sreserve with an unreadable CA file",
                   "(invalid_argument: CA file /nonexistent/ca.pem is not readable: "
                   "No such file or directory)")

    for fake, what, why in ((fakes[0], "a certificate from another CA", "certificate"),
                            (fakes[1], "a certificate for another name", "subject name")):
        url = "https://127.0.0.1:%d" % fake.port
        n = len(fake.seen)
        r = sr("submit", "-N", "1", "-t", "1", "--wrap", "true", env={"FLEXCO_URL": url})
        one_error_line(r, "no_daemon", "sreserve submit to a server with %s" % what,
                       "flexcod: TLS with %s failed (tls_failed: POST %s/v1/coallocations: "
                       % (url, url), why)
        t.wait_for(lambda: len(fake.seen) > n, 10, "the server to record the connection")
        seen = fake.seen[n:]
        # (curl checks the host name once the handshake is done, then closes)
        t.ok(seen and all(k == "handshake_failed" or v == b"" for k, v in seen),
             "the server with %s got not one byte of the request (no MUNGE credential)"
             % what, repr(seen))

    # -- flexcod with the wrong CA: one clear line, beta not reachable -----------------
    line = "cluster %s: TLS with %s failed, no request is sent to it until it verifies " \
           "(tls_failed: " % (beta["name"], beta_https)
    before = fc.log_tail(10 ** 6).count(line)
    write_conf(other_ca)
    fc.restart(kill9=False, ready=lambda: fc.log_tail(10 ** 6).count(line) > before)
    lines = [x for x in fc.log_tail(10 ** 6).splitlines() if line in x]
    t.ok(len(lines) == before + 1 and "certificate" in lines[-1]
         and "TLSCAFile in flexcod.conf" in lines[-1],
         "flexcod logs one line when %s's certificate fails" % beta["name"], "\n".join(lines))
    r = fc.client().get("/v1/clusters")
    cl = {c["name"]: c for c in (r.json or {}).get("clusters", [])}
    b = cl.get(beta["name"], {})
    t.ok(r.status == 200 and b.get("reachable") is False
         and (b.get("last_error") or "").startswith("tls_failed: ")
         and cl.get(alpha["name"], {}).get("reachable") is True,
         "GET /v1/clusters: %s unreachable with tls_failed, %s still reachable"
         % (beta["name"], alpha["name"]), "%s %r" % (r.status, r.json))
    fc.no_illegal_transitions()


if __name__ == "__main__":
    t.run_main(main)
