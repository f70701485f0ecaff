# SPDX-License-Identifier: GPL-2.0-or-later
"""A small HTTP client for FlexCo's MUNGE-signed JSON APIs, for tests.

It signs requests with munge(1) exactly as doc/auth.md specifies -- an
implementation independent of the C++ one, so the tests also check that the
specification and the server agree.

    c = Client("http://127.0.0.1:27001", munge_socket, "alpha")  # audience
    c = plugin_client(status["clusters"][0], munge_socket)  # same, from
                                                  # `localgrid status --json`
    f = Client(flexcod_url, munge_socket, FLEXCOD)
    status, doc = c.get("/v1/profile?horizon=3600")
    status, doc = c.request("GET", "/v1/stats", auth=None)      # unsigned
    status, doc = c.request("GET", "/v1/stats", auth="MUNGE x")  # given header
    c.request("POST", "/v1/reservations", body=b,            # the key is
              headers={"Idempotency-Key": "k-1"})             # signed too
    c.request(..., headers={"Idempotency-Key": "k-2"}, sign_key="k-1")
                                            # sign another key (tampering)
"""

import hashlib
import hmac
import http.client
import json
import math
import os
import re
import subprocess
import time
import urllib.parse
import warnings


# The audience of requests to flexcod (doc/auth.md, "Audience"); a cluster's
# plugin's audience is its ClusterName.
FLEXCOD = "flexcod"


def sign(audience, method, target, body, socket, timestamp=None, uid=None,
         key=None, version=3, offer=None):
    """The Authorization header value for one request to the service named
    `audience` (as uid, when given: munge(1) runs as that user, so munged
    vouches for it).  `key` is the request's Idempotency-Key (None: none);
    version=2 signs the older flexco-auth-v2 payload, which has no key
    line; version=4 offers a session (`offer`: Session.offer())."""
    payload = "flexco-auth-v%d\n%s\n%s\n%s\n%s\n%d\n%s\n" % (
        version, audience, method, target, hashlib.sha256(body).hexdigest(),
        int(time.time()) if timestamp is None else timestamp,
        os.urandom(16).hex())
    if version >= 3:
        payload += "%s\n" % ("-" if key is None else key)
    if version == 4:
        payload += "%s\n" % offer  # the client's X25519 public key (a session)
    kw = {"user": uid, "group": uid} if uid is not None else {}
    cred = subprocess.run(["munge", "-S", socket, "-z", "none"],
                          input=payload.encode(), capture_output=True,
                          check=True, timeout=30, **kw).stdout.decode().strip()
    return "MUNGE " + cred


# ---------------------------------------------------------------------------
# Request sessions (doc/auth.md, "Request sessions"), written from the
# document, independently of src/core/session.cpp: X25519 (RFC 7748) in
# plain Python, HMAC-SHA-256 from the standard library.

_P = 2 ** 255 - 19


def _x25519(k, u):
    k = bytearray(k)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    k = int.from_bytes(k, "little")
    u = int.from_bytes(u, "little") & ((1 << 255) - 1)
    x1, x2, z2, x3, z3, swap = u, 1, 0, u, 1, 0
    for t in reversed(range(255)):
        bit = (k >> t) & 1
        swap ^= bit
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = (x2 + z2) % _P, (x2 - z2) % _P
        aa, bb = a * a % _P, b * b % _P
        e = (aa - bb) % _P
        c, d = (x3 + z3) % _P, (x3 - z3) % _P
        da, cb = d * a % _P, c * b % _P
        x3, z3 = (da + cb) ** 2 % _P, x1 * (da - cb) ** 2 % _P
        x2, z2 = aa * bb % _P, e * (aa + 121665 * e) % _P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, _P - 2, _P) % _P).to_bytes(32, "little")


class Session:
    """One client side of a session with the service `audience`."""

    def __init__(self, audience):
        self.audience = audience
        self.secret = os.urandom(32)
        self.public = _x25519(self.secret, (9).to_bytes(32, "little")).hex()
        self.sid = self.key = None
        self.lifetime = 0
        self.counter = 0

    def offer(self):
        return self.public

    def accept(self, grant):
        """The server's FlexCo-Session header value."""
        sid, server_public, lifetime = grant.split(" ")
        shared = _x25519(self.secret, bytes.fromhex(server_public))
        info = "flexco-session-v1\n%s\n%s\n%s\n%s\n" % (
            self.audience, sid, self.public, server_public)
        self.key = hmac.new(shared, info.encode(), hashlib.sha256).digest()
        self.sid, self.lifetime = sid, int(lifetime)

    def header(self, method, target, body=b"", key=None, counter=None, audience=None,
               mac_key=None, timestamp=None):
        """Authorization for one request (the next counter unless given)."""
        if counter is None:
            self.counter += 1
            counter = self.counter
        aud = audience or self.audience
        ts = int(time.time()) if timestamp is None else timestamp
        text = "flexco-session-v1\n%s\n%s\n%s\n%s\n%d\n%s\n%d\n%s\n" % (
            aud, method, target, hashlib.sha256(body).hexdigest(), ts, self.sid, counter,
            "-" if key is None else key)
        mac = hmac.new(mac_key or self.key, text.encode(), hashlib.sha256).hexdigest()
        return "FlexCo-Session %s %s %d %d %s" % (aud, self.sid, counter, ts, mac)


# ---------------------------------------------------------------------------
# Every response a test receives is checked against the OpenAPI file of the
# service it came from (doc/openapi-plugin.yaml, doc/openapi-flexcod.yaml):
# its status must be documented for the operation (or be an error status
# answered with the documented Error document), and its JSON body must
# match the documented schema.  Mismatches are collected; flexcotest's
# run_main() turns them into a failed test, so the docs cannot drift from
# the code.  (python3-yaml, python3-jsonschema: contrib/install-deps.)

SCHEMA = {"checked": 0, "bad": []}
_specs = {}


def _srcdir():
    return os.environ.get("FLEXCO_SRCDIR") or os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _to_json_schema(x):
    """OpenAPI 3.0 schema objects -> JSON Schema (nullable -> anyOf null)."""
    if isinstance(x, dict):
        y = {k: _to_json_schema(v) for k, v in x.items()
             if k not in ("nullable", "example", "discriminator", "xml", "externalDocs",
                          "deprecated", "readOnly", "writeOnly")}
        if x.get("nullable") is True:
            return {"anyOf": [y, {"type": "null"}]}
        return y
    if isinstance(x, list):
        return [_to_json_schema(v) for v in x]
    return x


def _spec(service):
    if service not in _specs:
        import yaml
        import jsonschema
        with open(os.path.join(_srcdir(), "doc", "openapi-%s.yaml" % service)) as f:
            doc = yaml.safe_load(f)
        conv = _to_json_schema(doc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            resolver = jsonschema.RefResolver.from_schema(conv)
        paths = []
        for tmpl, ops in (doc.get("paths") or {}).items():
            rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(tmpl)) + "$"
            paths.append((tmpl.count("{"), re.compile(rx), tmpl))
        paths.sort(key=lambda p: p[0])  # literal segments win over {params}
        _specs[service] = (conv, resolver, paths, jsonschema)
    return _specs[service]


def check_response(service, method, target, resp):
    """Check one response against the service's OpenAPI file; record a
    mismatch in SCHEMA["bad"]."""
    conv, resolver, paths, jsonschema = _spec(service)
    path = target.split("?", 1)[0]
    tmpl = next((t for _, rx, t in paths if rx.match(path)), None)
    op = (conv["paths"].get(tmpl) or {}).get(method.lower()) if tmpl else None
    where = "%s %s %s -> %d" % (service, method, target[:80], resp.status)
    responses = (op or {}).get("responses") or {}
    r = responses.get(str(resp.status)) or responses.get("%dXX" % (resp.status // 100)) \
        or responses.get("default")
    if r is None:
        if resp.status >= 400 and "Error" in conv.get("components", {}).get("schemas", {}):
            # An error status the operation does not list (or no such
            # operation): the body must still be the documented Error.
            r = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        else:
            SCHEMA["bad"].append(where + ": status not documented for " +
                                 ("%s %s" % (method, tmpl) if op else "this path"))
            return
    if "$ref" in r:
        r = resolver.resolve(r["$ref"])[1]
    schema = ((r.get("content") or {}).get("application/json") or {}).get("schema")
    SCHEMA["checked"] += 1
    if schema is None:
        return
    if resp.json is None:
        if resp.raw:
            SCHEMA["bad"].append(where + ": body is not JSON")
        return
    validator = jsonschema.Draft4Validator(schema, resolver=resolver)
    errors = sorted(validator.iter_errors(resp.json), key=lambda e: list(e.path))
    for e in errors[:3]:
        SCHEMA["bad"].append("%s: at /%s: %s" % (where, "/".join(str(p) for p in e.path),
                                                 e.message[:300]))


def report(ok, note):
    """Called by flexcotest.run_main(): one failed test if any response did
    not match its OpenAPI file, else a note of how many did."""
    if SCHEMA["bad"]:
        ok(False, "every response matches its OpenAPI file (%d checked, %d mismatches)"
           % (SCHEMA["checked"], len(SCHEMA["bad"])), "\n".join(SCHEMA["bad"][:40]))
    elif SCHEMA["checked"]:
        note("%d responses matched doc/openapi-*.yaml" % SCHEMA["checked"])


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw.decode()) if raw else None
        except ValueError:
            self.json = None

    def error_code(self):
        """error.code of a JSON error document, else None."""
        try:
            return self.json["error"]["code"]
        except (TypeError, KeyError):
            return None

    def is_json_error(self):
        try:
            e = self.json["error"]
            return isinstance(e["code"], str) and isinstance(e["message"], str) \
                and set(self.json) == {"error"}
        except (TypeError, KeyError):
            return False


class Client:
    """A client of one service: `audience` is the name every request is
    signed for (the cluster's ClusterName for a plugin, FLEXCOD for
    flexcod)."""

    def __init__(self, url, munge_socket, audience, timeout=30, uid=None,
                 source=None, keep_alive=False):
        u = urllib.parse.urlsplit(url)
        self.host = u.hostname
        self.port = u.port
        self.socket = munge_socket
        self.audience = audience
        self.timeout = timeout
        self.uid = uid  # sign as this uid (None: as ourselves)
        self.source = source  # connect from this local address (None: any)
        # keep_alive: one connection for every request, as flexcod's client
        # keeps them (src/core/http_client); a fresh one if the server
        # closed it meanwhile.  Otherwise a connection per request.
        self.keep_alive = keep_alive
        self._conn = None

    SIGN = object()  # auth=SIGN: sign the request (the default)
    SENT = object()  # sign_key=SENT: sign the Idempotency-Key that is sent

    def request(self, method, target, body=b"", auth=SIGN, headers=None,
                sign_as=None, sign_key=SENT, version=3):
        """Send one request; sign_as=(method, target, body) or
        (audience, method, target, body), and sign_key (a key, or None for
        none), sign something other than what is sent (to test tampering);
        version=2 signs a flexco-auth-v2 payload."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        h = dict(headers or {})
        if auth is Client.SIGN:
            s = tuple(sign_as or (method, target, body))
            a, m, t, b = s if len(s) == 4 else (self.audience,) + s
            key = h.get("Idempotency-Key") if sign_key is Client.SENT else sign_key
            h["Authorization"] = sign(a, m, t, b, self.socket, uid=self.uid,
                                      key=key, version=version)
        elif auth is not None:
            h["Authorization"] = auth
        if body:
            h.setdefault("Content-Type", "application/json")
        resp = self._send(method, target, body, h)
        check_response("flexcod" if self.audience == FLEXCOD else "plugin", method, target, resp)
        return resp

    def get(self, target, **kw):
        return self.request("GET", target, **kw)

    def _connect(self):
        return http.client.HTTPConnection(
            self.host, self.port, timeout=self.timeout,
            source_address=(self.source, 0) if self.source else None)

    def _send(self, method, target, body, h):
        if not self.keep_alive:
            conn = self._connect()
            try:
                conn.request(method, target, body=body or None, headers=h)
                r = conn.getresponse()
                return Response(r.status, dict(r.getheaders()), r.read())
            finally:
                conn.close()
        reused = self._conn is not None
        if not reused:
            self._conn = self._connect()
        try:
            self._conn.request(method, target, body=body or None, headers=h)
            r = self._conn.getresponse()
            resp = Response(r.status, dict(r.getheaders()), r.read())
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.close()
            if not reused:
                raise
            return self._send(method, target, body, h)  # closed while idle
        except Exception:
            self.close()
            raise
        if r.will_close:
            self.close()
        return resp

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def plugin_client(cluster, munge_socket, **kw):
    """A Client of a cluster's plugin from its `localgrid status --json`
    record: its plugin_url, signed for its name (localgrid's ClusterName)."""
    return Client(cluster["plugin_url"], munge_socket, cluster["name"], **kw)


# ---------------------------------------------------------------------------
# GET /metrics: Prometheus' text exposition format 0.0.4, parsed strictly
# (test_metrics.py; test_flexcod_resched.py reads flexcod's histograms).

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse_exposition(text):
    """Strictly parse Prometheus text format 0.0.4.  Returns (families,
    problems): families {name: {"type", "help", "samples": [(name,
    labels, value)]}}."""
    fams, problems, current = {}, [], None
    if not text.endswith("\n"):
        problems.append("the text does not end with a newline")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4:
                problems.append("line %d: short %s" % (n, line))
                continue
            kind, name, rest = parts[1], parts[2], parts[3]
            f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
            key = "help" if kind == "HELP" else "type"
            if f[key] is not None:
                problems.append("line %d: a second %s for %s" % (n, kind, name))
            if f["samples"]:
                problems.append("line %d: %s of %s after its samples" % (n, kind, name))
            if kind == "TYPE" and rest not in ("counter", "gauge", "histogram", "summary", "untyped"):
                problems.append("line %d: unknown type %r" % (n, rest))
            f[key] = rest
            current = name
            continue
        if line.startswith("#") or not line:
            problems.append("line %d: neither a sample nor HELP/TYPE: %r" % (n, line))
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append("line %d: not a sample: %r" % (n, line))
            continue
        sname, labels_text, value = m.group(1), m.group(3), m.group(4)
        labels = {}
        if labels_text:
            pos = 0
            for lm in LABEL.finditer(labels_text):
                if lm.start() != pos:
                    break
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
            if pos != len(labels_text):
                problems.append("line %d: bad labels %r" % (n, labels_text))
        try:
            v = float(value)
        except ValueError:
            problems.append("line %d: bad value %r" % (n, value))
            continue
        base = sname
        f = fams.get(current)
        if f and f["type"] == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                if sname == current + suffix:
                    base = current
        if base != current or fams[current]["type"] is None:
            problems.append("line %d: sample %s outside its family (%s)" % (n, sname, current))
            continue
        fams[current]["samples"].append((sname, labels, v))
    for name, f in fams.items():
        if f["type"] is None or f["help"] is None:
            problems.append("%s: HELP and TYPE both once" % name)
        if f["type"] == "counter" and not name.endswith("_total"):
            problems.append("%s: a counter's name ends in _total" % name)
        if f["type"] != "histogram":
            continue
        series = {}
        for sname, labels, v in f["samples"]:
            key = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
            s = series.setdefault(key, {"buckets": [], "sum": None, "count": None})
            if sname.endswith("_bucket"):
                le = labels.get("le")
                s["buckets"].append((math.inf if le == "+Inf" else float(le), v))
            elif sname.endswith("_sum"):
                s["sum"] = v
            else:
                s["count"] = v
        for key, s in series.items():
            b = s["buckets"]
            what = "%s%r" % (name, dict(key))
            if not b or b[-1][0] != math.inf:
                problems.append(what + ": no le=\"+Inf\" bucket last")
                continue
            if any(b[i][0] >= b[i + 1][0] or b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
                problems.append(what + ": buckets not increasing and cumulative: %r" % b)
            if s["count"] != b[-1][1] or s["sum"] is None:
                problems.append(what + ": _count %r is not the +Inf bucket %r (or no _sum)"
                                % (s["count"], b[-1][1]))
    return fams, problems


def value(fams, family, sample=None, **labels):
    for sname, lab, v in (fams.get(family) or {}).get("samples", []):
        if sname == (sample or family) and all(lab.get(k) == x for k, x in labels.items()):
            return v
    return None
