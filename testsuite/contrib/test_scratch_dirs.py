#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The tests leave nothing behind in the system's temporary directory.
A test's own scratch directories (part jobs' output, a second daemon's
state, hold files) come from flexcotest.scratch_dir, which removes them
when the test ends and keeps them, named, only when a check failed (or
with FLEXCO_KEEP_RUN=1), as a grid's run directory.  Checked here: that
behaviour, in child processes, and that no integration test makes a
directory with tempfile.mkdtemp that nothing removes (before, 20 tests
left one each, mode 0777, in /tmp on every run)."""

import os
import re
import subprocess
import sys
import tempfile

import flexcotest as t

CHILD = r"""
import os, sys
import flexcotest as t
a = t.scratch_dir("scratch-check-")
b = t.scratch_dir("scratch-check-")
with open(os.path.join(a, "out"), "w") as f:
    f.write("x")
os.makedirs(os.path.join(b, "sub", "deeper"))
print(a)
print(b)
sys.stdout.flush()
t.ok(sys.argv[1] == "pass", "the child's one check")
sys.exit(t.done())
"""


def child(how, keep=False):
    env = dict(os.environ)
    env.pop("FLEXCO_KEEP_RUN", None)
    if keep:
        env["FLEXCO_KEEP_RUN"] = "1"
    r = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True,
                       env=env, timeout=60)
    dirs = [ln for ln in r.stdout.splitlines() if ln.startswith(tempfile.gettempdir())]
    return r, dirs


def main():
    r, dirs = child("pass")
    t.ok(r.returncode == 0 and len(dirs) == 2,
         "a test that passes made its two scratch directories",
         "%s %r %r" % (r.returncode, r.stdout, r.stderr))
    t.ok(dirs and not any(os.path.exists(d) for d in dirs),
         "and they are gone when it ended (files and subdirectories with them)", "%r" % dirs)

    r, dirs = child("fail")
    kept = [d for d in dirs if os.path.isdir(d)]
    t.ok(r.returncode == 1 and len(dirs) == 2 and kept == dirs
         and all(("kept %s" % d) in r.stdout for d in dirs),
         "a test with a failed check keeps them and names them", "%r %r" % (dirs, r.stdout))
    for d in kept:
        subprocess.run(["rm", "-rf", "--", d], check=False)

    r, dirs = child("pass", keep=True)
    kept = [d for d in dirs if os.path.isdir(d)]
    t.ok(r.returncode == 0 and len(dirs) == 2 and kept == dirs,
         "FLEXCO_KEEP_RUN=1 keeps them too", "%r %r" % (dirs, r.stdout))
    for d in kept:
        subprocess.run(["rm", "-rf", "--", d], check=False)

    # No test makes a temporary directory that nothing removes: either
    # scratch_dir, a with-block, or a shutil.rmtree of the same name.
    loose = []
    for tier in ("integration", "contrib", "plugin", "sim"):
        root = os.path.join(t.srcdir(), "testsuite", tier)
        for name in sorted(os.listdir(root)):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            with open(os.path.join(root, name)) as f:
                text = f.read()
            for m in re.finditer(r"^\s*(\w+) = tempfile\.mkdtemp\(", text, re.M):
                # removed at the end, or at once (a name for something
                # that removes itself: test_packages' chroot roots)
                if not re.search(r"(shutil\.rmtree|os\.rmdir)\(%s\b" % re.escape(m.group(1)),
                                 text):
                    loose.append("%s/%s: %s" % (tier, name, m.group(1)))
    t.ok(not loose, "no test (integration, contrib, plugin, sim) leaves a "
         "tempfile.mkdtemp directory behind", "%r" % loose)


if __name__ == "__main__":
    t.run_main(main)
