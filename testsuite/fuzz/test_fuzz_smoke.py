#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A short run of every libFuzzer harness (contrib/fuzz --seconds 5): each
target builds with clang's -fsanitize=fuzzer,address,undefined, runs from
its seed corpus, and reports no crash, leak, timeout or sanitizer finding.
The long runs (10M executions per target) are recorded in doc/fuzzing.md."""

import os
import re
import subprocess

import flexcotest as t


def targets(tool):
    """contrib/fuzz's default targets (its ALL list): every harness."""
    with open(tool) as f:
        m = re.search(r'^ALL="([^"]*)"', f.read(), re.M)
    return m.group(1).split() if m else []


def main():
    tool = os.path.join(t.srcdir(), "contrib", "fuzz")
    want = targets(tool)
    harnesses = sorted(n[len("fuzz_"):-len(".cpp")]
                       for n in os.listdir(os.path.join(t.srcdir(), "testsuite", "fuzz"))
                       if n.startswith("fuzz_") and n.endswith(".cpp"))
    t.ok(sorted(want) == harnesses, "contrib/fuzz runs every harness in testsuite/fuzz (%d)"
         % len(harnesses), "%r %r" % (want, harnesses))
    out_dir = os.path.join(t.builddir(), "testsuite", "fuzz-build")
    r = subprocess.run([tool, "--seconds", "5", "--builddir", out_dir],
                       capture_output=True, text=True, timeout=900,
                       stdin=subprocess.DEVNULL)
    per = re.findall(r"^fuzz: (\w+): (\d+) executions, no crash$", r.stdout, re.M)
    for name, n in per:
        t.ok(int(n) > 0, "fuzz target %s: %s executions, no crash" % (name, n))
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    n = len(want)
    t.ok(r.returncode == 0 and sorted(name for name, _ in per) == sorted(want)
         and re.fullmatch(r"fuzz: %d targets, \d+ executions, 0 crashes" % n, last),
         "contrib/fuzz: %d targets, 0 crashes" % n, r.stdout[-800:] + r.stderr[-2000:])


if __name__ == "__main__":
    t.run_main(main)
