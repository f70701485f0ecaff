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
"""

import hashlib
import http.client
import json
import os
import subprocess
import time
import urllib.parse


# The audience of requests to flexcod (doc/auth.md, "Audience"); a cluster's
# plugin's audience is its ClusterName.
FLEXCOD = "flexcod"


def sign(audience, method, target, body, socket, timestamp=None, uid=None):
    """The Authorization header value for one request to the service named
    `audience` (as uid, when given: munge(1) runs as that user, so munged
    vouches for it)."""
    payload = "flexco-auth-v2\n%s\n%s\n%s\n%s\n%d\n%s\n" % (
        audience, method, target, hashlib.sha256(body).hexdigest(),
        int(time.time()) if timestamp is None else timestamp,
        os.urandom(16).hex())
    kw = {"user": uid, "group": uid} if uid is not None else {}
    cred = subprocess.run(["munge", "-S", socket, "-z", "none"],
                          input=payload.encode(), capture_output=True,
                          check=True, timeout=30, **kw).stdout.decode().strip()
    return "MUNGE " + cred


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

    def __init__(self, url, munge_socket, audience, timeout=30, uid=None):
        u = urllib.parse.urlsplit(url)
        self.host = u.hostname
        self.port = u.port
        self.socket = munge_socket
        self.audience = audience
        self.timeout = timeout
        self.uid = uid  # sign as this uid (None: as ourselves)

    SIGN = object()  # auth=SIGN: sign the request (the default)

    def request(self, method, target, body=b"", auth=SIGN, headers=None,
                sign_as=None):
        """Send one request; sign_as=(method, target, body) or
        (audience, method, target, body) signs something other than what is
        sent (to test tampering)."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        h = dict(headers or {})
        if auth is Client.SIGN:
            s = tuple(sign_as or (method, target, body))
            a, m, t, b = s if len(s) == 4 else (self.audience,) + s
            h["Authorization"] = sign(a, m, t, b, self.socket, uid=self.uid)
        elif auth is not None:
            h["Authorization"] = auth
        if body:
            h.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection(self.host, self.port,
                                          timeout=self.timeout)
        try:
            conn.request(method, target, body=body or None, headers=h)
            r = conn.getresponse()
            return Response(r.status, dict(r.getheaders()), r.read())
        finally:
            conn.close()

    def get(self, target, **kw):
        return self.request("GET", target, **kw)


def plugin_client(cluster, munge_socket, **kw):
    """A Client of a cluster's plugin from its `localgrid status --json`
    record: its plugin_url, signed for its name (localgrid's ClusterName)."""
    return Client(cluster["plugin_url"], munge_socket, cluster["name"], **kw)
