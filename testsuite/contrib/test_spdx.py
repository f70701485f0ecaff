#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every source file of the project says its licence in an SPDX line
(GPL-2.0-or-later, COPYING) within its first three lines: C and C++
sources and headers, linker version scripts, Python and shell programs
(contrib/, tests), the autotools inputs, the service and completion
files and flexcod's web view (HTML, JavaScript, CSS).  Generated files (configure, Makefile.in, libtool's m4), the data
(traces, corpora, golden outputs) and doc/ are not sources."""

import os
import re

import flexcotest as t

TAG = "SPDX-License-Identifier: GPL-2.0-or-later"
NAMED = ("autogen.sh", ".ci/run", "contrib/flexcod.service.in", "contrib/flexco.sysusers",
         "contrib/sreserve.bash-completion",
         "contrib/flexcod.conf.example", "contrib/prometheus/flexco-rules.yml",
         "contrib/tls/stunnel-plugin.conf", "contrib/tls/stunnel-flexcod.conf")


def sources(root):
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        top = rel.split(os.sep)[0]
        if top in (".git", "doc", "build-aux", "autom4te.cache", "_build") \
           or top.startswith("build") \
           or top.startswith("flexco-") or rel.startswith(("testsuite/fuzz/corpus",
                                                           "testsuite/sreserve_golden",
                                                           "contrib/sim/traces")) \
           or "/run-" in "/" + rel or "node_modules" in rel.split(os.sep) \
           or "__pycache__" in rel.split(os.sep):
            dirs[:] = []
            continue
        for f in files:
            p = f if rel == "." else os.path.join(rel, f)
            if f in ("Makefile.in", "Makefile", "config.h.in", "aclocal.m4", "configure",
                     "flexco_config.h", "flexco_config.h.in", "config.h"):
                continue
            if re.search(r"\.(c|h|cpp|hpp|py|m4|am|ac|map|html|js|css)$", f):
                if p.startswith("m4/") and not f.startswith("flexco_"):
                    continue
                out.append(p)
            elif p.startswith("contrib/") and "." not in f and os.sep not in p[len("contrib/"):] \
                    and os.access(os.path.join(root, p), os.X_OK):
                out.append(p)
            elif p in NAMED:
                out.append(p)
    return sorted(out)


def main():
    root = t.srcdir()
    files = sources(root)
    missing = []
    for p in files:
        with open(os.path.join(root, p), errors="replace") as f:
            head = "".join(f.readline() for _ in range(3))
        if TAG not in head:
            missing.append(p)
    t.ok(len(files) > 150, "%d source files found" % len(files))
    t.ok(os.path.isfile(os.path.join(root, "COPYING"))
         and "GNU GENERAL PUBLIC LICENSE" in open(os.path.join(root, "COPYING")).read(2000),
         "COPYING holds the GNU GPL")
    t.ok(not missing, "every source file has the SPDX line (GPL-2.0-or-later)",
         "without it: %s" % " ".join(missing))


if __name__ == "__main__":
    t.run_main(main)
