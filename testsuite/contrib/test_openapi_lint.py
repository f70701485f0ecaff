#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Both OpenAPI files pass a standard OpenAPI 3 linter (Redocly's CLI,
recommended rules) with no error and no warning: contrib/openapi-lint, which
installs the pinned @redocly/cli from the npm registry once.  A copy of a
file with a description that YAML splits at ", " must fail, so a linter
that checks nothing cannot pass."""

import os
import subprocess
import tempfile

import flexcotest as t


def lint(*files):
    tool = os.path.join(t.srcdir(), "contrib", "openapi-lint")
    return subprocess.run([tool, *files], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def main():
    t.plan(3)
    r = lint()
    t.ok(r.returncode == 0 and r.stdout.strip().endswith("2 files, 0 problems"),
         "doc/openapi-plugin.yaml and doc/openapi-flexcod.yaml: 0 errors, 0 warnings",
         r.stdout + r.stderr[-3000:])
    src = os.path.join(t.srcdir(), "doc", "openapi-flexcod.yaml")
    with open(src) as f:
        text = f.read()
    ops = text.count("operationId:")
    t.ok(ops == sum(text.count("\n    %s:\n" % m) for m in ("get", "post", "patch", "delete"))
         and "license:" in text, "every flexcod operation has an operationId (%d), and a licence" % ops)
    bad = text.replace('description: "the co-allocation (state cancelled, or cancelling)"',
                       "description: the co-allocation (state cancelled, or cancelling)")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(bad)
    try:
        r = lint(f.name)
        t.ok(bad != text and r.returncode != 0 and "1 files, 0 problems" not in r.stdout,
             "an unquoted description with ', ' in a flow mapping fails the linter",
             r.stdout + r.stderr[-1500:])
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    t.run_main(main)
