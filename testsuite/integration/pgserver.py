# SPDX-License-Identifier: GPL-2.0-or-later
"""A real PostgreSQL server for an integration test (flexcod's
StorageType=postgresql), as testsuite/unit/pg_server.hpp starts one for the
unit tests.

    with PgServer() as pg:            initdb in a new short directory under
                                      /tmp as nobody (as the test when it
                                      is not root), postgres started with
                                      no TCP listener and its Unix socket
                                      in that directory; stopped by pid
                                      (SIGINT, a fast shutdown) at the end
        pg.create_database("flexcod")
        pg.conninfo("flexcod")        libpq's connection string
        pg.query("flexcod", "SELECT ...")   rows, as lists of strings
        pg.stop()                     (also to fail a flexcod under it)

The binaries: $FLEXCO_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin
(Debian's postgresql package, installed by contrib/install-deps), else the
PATH.  Without them the test fails (GridError): it does not skip.  The
directory's own socket, in a directory no other test uses, keeps
concurrent runs apart: no TCP port is taken.
"""

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import flexcotest as t


def bindir():
    env = os.environ.get("FLEXCO_PG_BINDIR")
    if env:
        return env
    found = [d for d in glob.glob("/usr/lib/postgresql/*/bin") if os.access(d + "/initdb", os.X_OK)]
    if found:
        return max(found, key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else -1)
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class PgServer:
    def __init__(self):
        self.bin = bindir()
        if not self.bin:
            raise t.GridError("no PostgreSQL server binaries (initdb): apt-get install postgresql")
        self.dir = tempfile.mkdtemp(prefix="fpg-", dir="/tmp")
        self.proc = None
        if os.getuid() == 0:
            pw = pwd.getpwnam("nobody")
            self.uid, self.gid = pw.pw_uid, pw.pw_gid
            os.chown(self.dir, self.uid, self.gid)
        else:
            self.uid, self.gid = os.getuid(), os.getgid()
        os.chmod(self.dir, 0o755)

    def _as_owner(self):
        if os.getuid() == 0:
            os.setgid(self.gid)
            os.setuid(self.uid)

    def start(self):
        data = os.path.join(self.dir, "data")
        env = dict(os.environ, LC_ALL="C")
        env.pop("PGDATA", None)
        with open(os.path.join(self.dir, "initdb.log"), "wb") as log:
            rc = subprocess.call([self.bin + "/initdb", "-D", data, "-U", "flexco", "-A", "trust",
                                  "-E", "UTF8", "--no-sync", "--no-instructions"],
                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 preexec_fn=self._as_owner, env=env, cwd=self.dir)
        if rc != 0:
            raise t.GridError("initdb failed (exit %d): %s" % (rc, t.read_file(self.dir + "/initdb.log")[-500:]))
        log = open(os.path.join(self.dir, "postgres.log"), "ab")
        self.proc = subprocess.Popen([self.bin + "/postgres", "-D", data, "-k", self.dir,
                                      "-c", "listen_addresses=", "-c", "fsync=off",
                                      "-c", "max_connections=40", "-c", "shared_buffers=16MB"],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     preexec_fn=self._as_owner, env=env, cwd=self.dir,
                                     start_new_session=True)
        log.close()

        def answers():
            if self.proc.poll() is not None:
                raise t.GridError("postgres exited at start: %s" % self.log_tail())
            return subprocess.call([self.bin + "/pg_isready", "-q", "-h", self.dir, "-U", "flexco"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0
        if not t.wait_for(answers, 60, "PostgreSQL to answer", interval=0.1):
            raise t.GridError("PostgreSQL did not answer within 60 s: %s" % self.log_tail())
        return self

    def log_tail(self, n=20):
        return "".join(t.read_file(os.path.join(self.dir, "postgres.log")).splitlines(True)[-n:])

    def conninfo(self, db):
        return "host=%s user=flexco dbname=%s" % (self.dir, db)

    def psql(self, db, sql):
        """psql's unaligned, tuples-only output of `sql` on `db`."""
        psql = self.bin + "/psql" if os.access(self.bin + "/psql", os.X_OK) else "psql"
        r = subprocess.run([psql, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-h", self.dir, "-U", "flexco", "-d", db, "-c", sql],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise t.GridError("psql %r: %s" % (sql, r.stderr.strip()))
        return r.stdout

    def query(self, db, sql):
        return [line.split("\t") for line in self.psql(db, sql).splitlines() if line]

    def create_database(self, name):
        self.psql("postgres", "CREATE DATABASE %s" % name)

    def stop(self):
        """Stops postgres by its pid (a fast shutdown); waits for it."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
