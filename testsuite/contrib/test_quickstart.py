#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's first command as a newcomer runs it: contrib/quickstart in
a fresh copy of the repository under a long path, with nothing beside it
(no traces, no design files, no build, no environment from `make check`).
It must install, build, start the local grid, run the test jobs and the
main job (a co-allocation split over clusters, and one that flexcod moves
earlier), with --mpi one MPI program over a co-allocation's parts on two
clusters, tell the user what to try next and how to stop; then
`contrib/localgrid stop` must leave nothing running.

The copy is a `git clone` of the source tree when it is a git checkout (the
committed tree, as a newcomer gets it), else (make distcheck's unpacked
tarball) a plain copy of it.  The README's second command, the test suite,
is what .ci/run runs on a fresh clone; running it again from inside the
test suite would only recurse."""

import os
import re
import shutil
import subprocess
import tempfile

import flexcotest as t

# A clone path well over 100 characters: every Unix socket must still fit.
DEEP = "/".join(["a-rather-long-directory-name-%d" % i for i in range(4)])


def fresh_copy(src, dest):
    if os.path.isdir(os.path.join(src, ".git")) or os.path.isfile(os.path.join(src, ".git")):
        r = subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", src, dest],
                           capture_output=True, text=True, timeout=300)
        return r.returncode == 0, "git clone: " + r.stderr[-500:]
    def top_level_builds(d, names):
        # Only the build trees at the top (build/, build-24.11/, distcheck's
        # _build/ and _inst/): contrib/build is a script the newcomer needs,
        # build-aux/ part of the tree.
        if os.path.abspath(d) != os.path.abspath(src):
            return []
        return [n for n in names if n in ("build", "_build", "_inst", "autom4te.cache")
                or (n.startswith("build-") and n != "build-aux") or n.startswith("flexco-")]
    shutil.copytree(src, dest, symlinks=True, ignore=top_level_builds)
    for d, dirs, files in os.walk(dest):  # distcheck's tree is read-only
        os.chmod(d, 0o755)
    return True, "copied"


def newcomer_env():
    """root's environment without anything `make check` or a developer set."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    return env


def main():
    t.plan(8)
    top = tempfile.mkdtemp(prefix="flexco-newcomer-")
    clone = os.path.join(top, DEEP, "flexco")
    os.makedirs(os.path.dirname(clone))
    env = newcomer_env()
    lg = os.path.join(clone, "contrib", "localgrid")
    try:
        good, how = fresh_copy(t.srcdir(), clone)
        t.ok(good and len(clone) > 140 and sorted(os.listdir(os.path.dirname(clone))) == ["flexco"],
             "a fresh copy at a %d-character path, alone in its directory" % len(clone), how)
        r = subprocess.run([os.path.join(clone, "contrib", "quickstart"), "--mpi"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=2400,
                           stdin=subprocess.DEVNULL)
        out = r.stdout
        t.ok(r.returncode == 0, "contrib/quickstart exits 0",
             "exit %d\n--- stdout (end)\n%s\n--- stderr (end)\n%s" % (
                 r.returncode, out[-3000:], r.stderr[-3000:]))
        jobs = re.findall(r"^(\w+): job \d+ COMPLETED: job \d+ ran on cluster (\w+)", out, re.M)
        t.ok(len(jobs) == 3 and all(a == b for a, b in jobs),
             "a test job completed on each of the 3 clusters", "%r" % jobs)
        parts = re.findall(r"^\s+part \d+ of co-\d+ \((\S+)\) on (\w+):", out, re.M)
        t.ok(len(parts) >= 2 and len({c for _, c in parts}) >= 2,
             "the 12-node co-allocation ran its parts on several clusters",
             "%r" % parts)
        t.ok("flexcod to move co-allocation" in out and re.search(r"^Submitted co-allocation", out, re.M)
             and "The grid keeps running." in out and "contrib/localgrid stop" in out,
             "the move happened, and the end says what to try next and how to stop",
             out[-1500:])
        mpi = re.search(r"^allreduce over (\d+) processes on 2 clusters \((\w+):(\d+) (\w+):(\d+)\): ok$",
                        out, re.M)
        t.ok(mpi and int(mpi.group(1)) == 12 and int(mpi.group(3)) + int(mpi.group(5)) == 12
             and mpi.group(2) != mpi.group(4)
             and len(re.findall(r"^pingpong \w+-\w+ +\d+ bytes: +[\d.]+ us +[\d.]+ MB/s$", out, re.M)) == 4,
             "--mpi: an allreduce over 12 processes on 2 clusters, and the ping-pong figures",
             out[-2500:])
        prog = re.findall(r"^   \.\.\. +\d+ s: ", r.stderr, re.M)
        t.note("progress lines during the build: %d" % len(prog))
        logs = set(re.findall(r"\(.*; log: (\S+)\)$", out, re.M))
        t.ok(re.search(r"^== installing the Debian packages and building", out, re.M)
             and re.search(r"^== starting the local grid", out, re.M)
             and len(logs) == 1 and all(p.startswith(clone + "/build/") and os.path.isfile(p)
                                        for p in logs),
             "it narrates its steps, with the build's log in the clone's build directory",
             "logs named: %r\n%s" % (sorted(logs), out[:1500]))
    finally:
        s = subprocess.run([lg, "stop"], cwd=clone, env=env, capture_output=True,
                           text=True, timeout=300) if os.path.exists(lg) else None
        st = subprocess.run([lg, "status"], cwd=clone, env=env, capture_output=True,
                            text=True, timeout=60) if os.path.exists(lg) else None
        t.ok(s is not None and s.returncode == 0 and st.returncode != 0,
             "contrib/localgrid stop ends the grid (status then finds none)",
             "%s\n%s" % (s and (s.stdout + s.stderr)[-800:], st and (st.stdout + st.stderr)[-400:]))
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
