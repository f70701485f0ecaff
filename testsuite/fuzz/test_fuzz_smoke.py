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


def main():
    tool = os.path.join(t.srcdir(), "contrib", "fuzz")
    out_dir = os.path.join(t.builddir(), "testsuite", "fuzz-build")
    r = subprocess.run([tool, "--seconds", "5", "--builddir", out_dir],
                       capture_output=True, text=True, timeout=900,
                       stdin=subprocess.DEVNULL)
    per = re.findall(r"^fuzz: (\w+): (\d+) executions, no crash$", r.stdout, re.M)
    for name, n in per:
        t.ok(int(n) > 0, "fuzz target %s: %s executions, no crash" % (name, n))
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    t.ok(r.returncode == 0 and len(per) == 11
         and re.fullmatch(r"fuzz: 11 targets, \d+ executions, 0 crashes", last),
         "contrib/fuzz: 11 targets, 0 crashes", r.stdout[-800:] + r.stderr[-2000:])


if __name__ == "__main__":
    t.run_main(main)
