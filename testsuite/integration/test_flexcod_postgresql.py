#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""flexcod on PostgreSQL end to end (issue 39 §1; doc/flexcod.md,
"Storage"): a real PostgreSQL started by the test (pgserver.py), the
grid's flexcod moved onto it (StorageType=postgresql, StorageLoc=), its
schema made by `flexcod --init-db`.

A 6-node co-allocation over two 4-node clusters runs its part jobs; while
they run, flexcod is killed (SIGKILL) and started again: it recovers from
PostgreSQL and completes the co-allocation, each part job having run once.
A second flexcod on the same database is a standby: it answers reads,
names the one in charge and refuses writes with 503 not_in_charge.
Last, PostgreSQL is stopped under flexcod: flexcod stops with a "fatal:
StorageLoc" line, as it does when SQLite fails."""

import os
import subprocess

import flexcotest as t
from flexcodtest import Flexcod, nothing_left, script
from flexcohttp import FLEXCOD, Client
from pgserver import PgServer

NODES = [4, 4]


def to_postgresql(fc, conninfo):
    """The grid's flexcod.conf with its database in PostgreSQL."""
    with open(fc.info["conf"]) as f:
        lines = [l for l in f if l.split("=", 1)[0].strip().lower() != "statefile"]
    lines += ["StorageType=postgresql\n", 'StorageLoc="%s"\n' % conninfo]
    with open(fc.info["conf"], "w") as f:
        f.write("".join(lines))


def main():
    t.require_grid_tools()
    with PgServer() as pg, t.Grid(nodes=NODES) as grid:
        fc = Flexcod(grid)
        pg.create_database("flexcod")
        to_postgresql(fc, pg.conninfo("flexcod"))
        r = subprocess.run([fc.launch_info()["argv"][0], "--init-db", "-f", fc.info["conf"]],
                           capture_output=True, text=True, timeout=60)
        t.ok(r.returncode == 0 and "schema 7 ready" in r.stdout and "postgresql" in r.stdout,
             "flexcod --init-db makes the schema in PostgreSQL", "%r %r" % (r.stdout, r.stderr))
        tables = sorted(x[0] for x in pg.query("flexcod", "SELECT table_name FROM "
                                               "information_schema.tables WHERE table_schema='public'"))
        t.ok(tables == ["cluster_seq", "coallocations", "lease", "meta", "moves", "parts", "rendezvous", "submit_keys",
                        "transitions"], "its tables are there", "%r" % tables)
        # a password in StorageLoc needs an owner-only flexcod.conf
        with_pw = os.path.join(t.scratch_dir("flexcod-pgpw-"), "flexcod.conf")
        with open(fc.info["conf"]) as f:
            text = f.read().replace('dbname=flexcod"', 'dbname=flexcod password=s3cret"')
        with open(with_pw, "w") as f:
            f.write(text)
        os.chmod(with_pw, 0o644)
        r = subprocess.run([fc.launch_info()["argv"][0], "--init-db", "-f", with_pw],
                           capture_output=True, text=True, timeout=60)
        t.ok(r.returncode == 1 and "holds a password" in r.stderr and "s3cret" not in r.stderr,
             "a password in StorageLoc of a flexcod.conf others may read is refused",
             "%r %r" % (r.returncode, r.stderr))
        os.chmod(with_pw, 0o600)
        r = subprocess.run([fc.launch_info()["argv"][0], "--init-db", "-f", with_pw],
                           capture_output=True, text=True, timeout=60)
        t.ok(r.returncode == 0 and "s3cret" not in r.stdout + r.stderr,
             "owner-only, it is taken (trust: the password is not asked), and not shown",
             "%r %r %r" % (r.returncode, r.stdout, r.stderr))
        # the grid's flexcod, still on SQLite, is stopped and started on PostgreSQL
        fc.restart(kill9=False)
        t.ok("StorageLoc host=%s" % pg.dir in fc.log_tail(50),
             "flexcod started on PostgreSQL", fc.log_tail(5))

        tmp = t.scratch_dir("flexcod-pg-")
        os.chmod(tmp, 0o777)
        coid, d = fc.run_split({"nodes": 6, "duration": 120, "std_out": "/dev/null",
                                "script": script(tmp, "echo $SLURM_JOB_ID >> %s/runs.$FLEXCO_PART_INDEX; "
                                                      "sleep 8" % tmp)})
        rows = pg.query("flexcod", "SELECT state, version FROM parts WHERE co_id=%d AND current=1"
                                   % coid)
        t.ok(len(rows) == 2 and all(s == "running" and int(v) > 1 for s, v in rows),
             "PostgreSQL holds both parts running, each written more than once (its version)",
             "%r" % rows)

        # SIGKILL while the part jobs run: recovery from PostgreSQL
        fc.restart(kill9=True)
        done = t.wait_for(lambda: (fc.get(coid)[1] or {}).get("state") == "completed", 90,
                          "the co-allocation to complete after the restart")
        s, full = fc.get(coid)
        t.ok(done and all(p.get("state") == "completed" for p in full.get("parts", [])),
             "killed and started again, flexcod recovers from PostgreSQL and completes the "
             "co-allocation", "%s %r" % (s, full))
        runs = {i: t.read_file(os.path.join(tmp, "runs.%d" % i)).split() for i in (0, 1)}
        t.ok(all(len(v) == 1 for v in runs.values()), "each part job ran once", "%r" % runs)
        co = pg.query("flexcod", "SELECT state FROM coallocations WHERE id=%d" % coid)
        t.ok(co == [["completed"]], "PostgreSQL has it completed", "%r" % co)
        t.ok(t.wait_for(lambda: nothing_left(grid), 60, "the reservations to go"),
             "no reservation or job is left on either cluster")
        fc.no_illegal_transitions()

        # a second flexcod on the database is a standby
        other = t.scratch_dir("flexcod-pg2-")
        port2 = fc.info["port"] + 7
        conf2 = fc.conf_copy(other, port2, same_db=True)
        second = subprocess.Popen([fc.launch_info()["argv"][0], "-D", "-f", conf2],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            c2 = Client("http://127.0.0.1:%d" % port2, fc.socket, FLEXCOD, timeout=30)

            def stats2():
                try:
                    r = c2.get("/v1/stats")
                    return r.status == 200 and r.json
                except OSError:
                    return False
            st = t.wait_for(stats2, 30, "the second flexcod to answer") or {}
            lease = st.get("lease") or {}
            t.ok(lease.get("in_charge") is False and lease.get("leader") == fc.url
                 and st.get("coallocations", {}).get("completed") == 1,
                 "a second flexcod on the database is a standby: it reads the database and "
                 "names the one in charge", "%r" % st)
            r = c2.request("POST", "/v1/coallocations", body={"nodes": 1, "duration": 60})
            err = (r.json or {}).get("error") or {}
            t.ok(r.status == 503 and err.get("code") == "not_in_charge"
                 and err.get("leader") == fc.url,
                 "a write to the standby is refused with 503 not_in_charge and the address of "
                 "the one in charge", "%r %r" % (r.status, r.json))
        finally:
            second.terminate()
            second.wait(30)

        # fail-stop: PostgreSQL goes away under flexcod
        pid = fc.pid
        log_before = os.path.getsize(fc.info["log_file"])
        pg.stop()

        def gone():
            # a request makes flexcod read the database (the next statement
            # after the server went is the one that fails)
            try:
                fc.get(coid)
            except OSError:
                pass
            return not t.pid_alive(pid)
        stopped = t.wait_for(gone, 90, "flexcod to stop", interval=0.5)
        log = t.read_file(fc.info["log_file"])[log_before:]
        fatal = [l for l in log.splitlines() if "fatal: StorageLoc" in l]
        t.ok(stopped and fatal, "with PostgreSQL stopped, flexcod stops and says why",
             "alive %r; %r" % (not stopped, fatal or log.splitlines()[-5:]))


if __name__ == "__main__":
    t.run_main(main)
