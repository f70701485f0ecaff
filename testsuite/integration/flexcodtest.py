# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the flexcod integration tests (test_flexcod_*.py).

The local grid starts a flexcod for its clusters (localgrid status --json
shows it under "flexcod").  These helpers talk to it, look at what Slurm
holds on each cluster, and kill or restart flexcod by pid.

    fc = Flexcod(grid)                 the grid's flexcod
    fc.client(uid=None)                a MUNGE-signing client (flexcohttp)
    fc.submit(body) / fc.get(id)       shortcuts, return (status, doc)
    fc.restart(kill9=True, env=None)   kill it and start it again exactly
                                       as localgrid did (argv, env, cwd)
                                       (ready=pred: wait for pred, not for
                                       every cluster to be reconciled)
    fc.reconfigure(Key=value, ...)     set flexcod.conf keys, SIGHUP, await
    fc.conf_copy(dir, port)            flexcod.conf for a second flexcod
    fc.no_illegal_transitions()        TAP result: no state change outside
                                       the table (at the end of a test)
    slurm_reservations(grid)           {cluster: [flexco_* names]}
    slurm_jobs(grid)                   {cluster: [(jobid, state, resv)]}
    Hold(dir, step)                    FLEXCOD_TEST_HOLD_DIR fault injection
"""

import os
import signal
import subprocess

import flexcotest as t
from flexcohttp import FLEXCOD, Client

HOLD_ENV = "FLEXCOD_TEST_HOLD_DIR"


class Flexcod:
    def __init__(self, grid):
        self.grid = grid
        st = grid.status()
        self.info = st.get("flexcod") or {}
        self.socket = st["munge_socket"]
        # flexcod's own address: 127.0.0.1, or its namespace's with --sites
        self.url = "http://%s:%d" % (self.info.get("addr") or "127.0.0.1",
                                     self.info.get("port", 0))
        self.pid = self.info.get("pid")

    def client(self, uid=None):
        return Client(self.url, self.socket, FLEXCOD, timeout=120, uid=uid)

    def submit(self, body, uid=None):
        r = self.client(uid).request("POST", "/v1/coallocations", body=body)
        return r.status, r.json

    def get(self, coid, uid=None):
        r = self.client(uid).get("/v1/coallocations/%s" % coid)
        return r.status, r.json

    def run_split(self, body, count=2):
        """Submit body, check that it is scheduled over `count` clusters
        and wait until every part job runs (one TAP line each); its id
        and its document then ({} if they did not run)."""
        s, doc = self.submit(body)
        t.ok(s == 201 and len((doc or {}).get("parts", [])) == count,
             "a %s-node co-allocation over %d clusters is scheduled" % (body.get("nodes"), count),
             "%s %r" % (s, doc))
        coid = (doc or {}).get("id")
        d = self.wait_parts(coid, count)
        t.ok(bool(d), "its part jobs run", "%r" % (self.get(coid)[1],))
        return coid, d

    def wait_parts(self, coid, count, state="running", timeout=90):
        """The co-allocation's document once it has `count` parts, all in
        `state`; {} if that does not happen within `timeout` seconds."""
        def there():
            d = self.get(coid)[1] or {}
            parts = d.get("parts", [])
            return len(parts) == count and all(p.get("state") == state for p in parts) and d
        return t.wait_for(there, timeout, "%d parts of co-%s to be %s" % (count, coid, state)) or {}

    def listening(self):
        """It answers, and has reconciled every cluster with its database."""
        try:
            r = self.client().get("/v1/clusters")
            return r.status == 200 and all(c.get("reconciled") for c in r.json["clusters"])
        except (OSError, KeyError, TypeError):
            return False

    def restart(self, kill9=True, env=None, while_down=None, ready=None):
        """Kill flexcod (SIGKILL, or SIGTERM) by pid and start it again with
        the same argv, environment (updated with `env`; None values
        removed), cwd and output file; wait until it answers (or until
        `ready()` is true, when given)."""
        pid = self.pid
        launch = self.launch_info()
        os.kill(pid, signal.SIGKILL if kill9 else signal.SIGTERM)
        if not t.wait_for(lambda: not t.pid_alive(pid), 30, "flexcod %d to exit" % pid):
            raise t.GridError("flexcod %d did not stop" % pid)
        return self.launch(launch, env=env, while_down=while_down, ready=ready)

    def launch_info(self):
        """How the running flexcod was started (argv, environment, cwd,
        output file), for launch() after it is gone."""
        pid = self.pid
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        return {"argv": argv, "env": t.proc_environ(pid), "cwd": t.proc_cwd(pid) or "/",
                "out": os.readlink("/proc/%d/fd/1" % pid)}

    def launch(self, info, env=None, while_down=None, ready=None):
        """Start flexcod as launch_info() found it (the environment updated
        with `env`; None values removed), as systemd's restart would after
        it stopped; wait until it answers (or `ready()`)."""
        argv, penv, cwd, out_path = info["argv"], dict(info["env"]), info["cwd"], info["out"]
        for k, v in (env or {}).items():
            if v is None:
                penv.pop(k, None)
            else:
                penv[k] = v
        if while_down:
            while_down()
        if self.info.get("netns"):
            # localgrid --sites: flexcod runs in a namespace of its own (and
            # sees its own /etc files); start it there again as localgrid did
            argv = self.info["exec"] + argv
        out = open(out_path, "ab") if out_path.startswith("/") else subprocess.DEVNULL
        proc = subprocess.Popen(argv, env=penv, cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        if out is not subprocess.DEVNULL:
            out.close()
        self.grid._restarted = getattr(self.grid, "_restarted", []) + [proc]
        self.pid = proc.pid
        if not t.wait_for(ready or self.listening, 30, "restarted flexcod to answer"):
            raise t.GridError("restarted flexcod does not answer")
        return proc.pid

    def reconfigure(self, **settings):
        """Set flexcod.conf keys (replacing their lines, keys compared
        without case) and send SIGHUP; True once flexcod logged the
        reload."""
        keys = {k.lower() for k in settings}
        with open(self.info["conf"]) as f:
            text = "".join(l for l in f if l.split("=", 1)[0].strip().lower() not in keys)
        text += "".join("%s=%s\n" % kv for kv in settings.items())
        with open(self.info["conf"], "w") as f:
            f.write(text)
        n = self.log_tail(10000).count("Reconfigure signal")
        os.kill(self.pid, signal.SIGHUP)
        return t.wait_for(lambda: self.log_tail(10000).count("Reconfigure signal") > n, 30,
                          "flexcod to reload")

    def conf_copy(self, directory, port, same_db=False):
        """A flexcod.conf for another flexcod beside this one: the same
        clusters, its own ListenPort, pid file and (unless same_db)
        database, in directory; returns its path."""
        with open(self.info["conf"]) as f:
            text = f.read()
        if not same_db:
            text = text.replace("StateFile=" + self.info["state_file"], "StateFile=%s/db" % directory)
        path = os.path.join(directory, "flexcod.conf")
        with open(path, "w") as f:
            f.write(text.replace("ListenPort=%d" % self.info["port"], "ListenPort=%d" % port)
                    .replace("PidFile=", "PidFile=%s/pid\n#" % directory))
        return path

    def no_illegal_transitions(self):
        """Every state change this flexcod made is in its table of allowed
        changes (doc/flexcod.md, "States"): GET /v1/stats says
        illegal_transitions 0 and its log (every run since the grid
        started, restarts included) has no "illegal state change" line."""
        r = self.client().get("/v1/stats")
        n = (r.json or {}).get("illegal_transitions")
        bad = [l for l in self.log_tail(10 ** 6).splitlines() if "illegal state change" in l]
        return t.ok(r.status == 200 and n == 0 and not bad,
                    "flexcod: no illegal state change (GET /v1/stats: illegal_transitions 0, "
                    "none in its log)", "status %r, illegal_transitions %r, %r"
                    % (r.status, n, bad[:5]))

    def log_tail(self, n=30):
        try:
            with open(self.info["log_file"], errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except (OSError, KeyError) as e:
            return str(e)


def slurm_reservations(grid):
    """{cluster: sorted flexco_* reservation names Slurm has}."""
    out = {}
    for c in grid.cluster_names():
        r = grid.run(c, ["scontrol", "show", "reservation", "-o"])
        names = []
        for line in r.stdout.splitlines():
            for w in line.split():
                if w.startswith("ReservationName=flexco_"):
                    names.append(w.split("=", 1)[1])
        out[c] = sorted(names)
    return out


def slurm_jobs(grid):
    """{cluster: [(jobid, state, reservation)]} of jobs Slurm still has that
    are not finished."""
    out = {}
    for c in grid.cluster_names():
        r = grid.run(c, ["squeue", "-h", "-o", "%i %T %v"])
        out[c] = [tuple(l.split()) for l in r.stdout.splitlines() if l.strip()]
    return out


def nothing_left(grid):
    res = slurm_reservations(grid)
    jobs = slurm_jobs(grid)
    return all(not v for v in res.values()) and all(not v for v in jobs.values())


class Hold:
    """Makes flexcod stop at a protocol step: creates DIR/STEP.hold; flexcod
    creates DIR/STEP.reached when it gets there and waits while the hold
    file exists."""

    def __init__(self, directory, step):
        self.hold = os.path.join(directory, step + ".hold")
        self.reached_path = os.path.join(directory, step + ".reached")
        for p in (self.hold, self.reached_path):
            if os.path.exists(p):
                os.unlink(p)
        open(self.hold, "w").close()

    def reached(self, timeout=60):
        return t.wait_for(lambda: os.path.exists(self.reached_path), timeout,
                          "flexcod to reach " + self.hold)

    def release(self):
        if os.path.exists(self.hold):
            os.unlink(self.hold)


def script(out_dir, body=""):
    """A part job script that records its part index, layout and start."""
    return ("#!/bin/sh\n"
            "echo \"$FLEXCO_PART_INDEX $FLEXCO_PARTS $FLEXCO_COALLOCATION "
            "$SLURM_JOB_RESERVATION $(date +%%s)\" > %s/part.$FLEXCO_COALLOCATION.$FLEXCO_PART_INDEX\n"
            "%s\n" % (out_dir, body))
