#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What `make install` installs has no test hooks (issue 14 §2): no
installed program or plugin object contains the fault-injection code the
integration tests drive through FLEXCOD_TEST_HOLD_DIR,
FLEXCO_TEST_SNAPSHOT_PAUSE_USEC and FLEXCO_TEST_BACKFILL_ACTIVE_FILE.  Those are compiled only into
src/flexcod/flexcod-testhooks and plugin/testhooks/, which `make check`
builds and nothing installs; the test first checks that the markers it
looks for really are in those test builds, so an empty search cannot pass.
Installs the whole tree into a DESTDIR, so nothing on the machine changes."""

import os
import shutil
import tempfile

import flexcotest as t

MARKERS = (b"FLEXCOD_TEST_HOLD_DIR", b"FLEXCO_TEST_SNAPSHOT_PAUSE_USEC",
           b"FLEXCO_TEST_BACKFILL_ACTIVE_FILE", b"test hold at step")


def markers_in(path):
    with open(path, "rb") as f:
        data = f.read()
    return [m.decode() for m in MARKERS if m in data]


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def main():
    b = t.builddir()
    t.plan(4)
    test_builds = [os.path.join(b, "src", "flexcod", "flexcod-testhooks"),
                   os.path.join(b, "plugin", "testhooks", ".libs", "flexco_slurmctld.so")]
    found = {p: markers_in(p) if os.path.isfile(p) else None for p in test_builds}
    t.ok(found[test_builds[0]] and "FLEXCOD_TEST_HOLD_DIR" in found[test_builds[0]],
         "the test build of flexcod has its hold points", "%r" % found)
    t.ok(found[test_builds[1]] and "FLEXCO_TEST_SNAPSHOT_PAUSE_USEC" in found[test_builds[1]]
         and "FLEXCO_TEST_BACKFILL_ACTIVE_FILE" in found[test_builds[1]],
         "the test build of the plugin has its snapshot pause and backfill stand-in",
         "%r" % found)

    dest = tempfile.mkdtemp(prefix="flexco-nohooks-")
    try:
        rc, out = t.make_in([b], "install", dest)
        elves = [os.path.join(d, f) for d, _, files in os.walk(dest)
                 for f in files if is_elf(os.path.join(d, f))]
        names = sorted(os.path.basename(p) for p in elves)
        t.ok(rc == 0 and {"flexcod", "sreserve", "prep_flexco.so",
                                    "flexco_slurmctld.so"} <= set(names),
             "make install: %s" % " ".join(names),
             "exit %d\n%s" % (rc, out[-1500:]))
        hooked = {os.path.relpath(p, dest): markers_in(p) for p in elves if markers_in(p)}
        t.ok(elves and not hooked,
             "no installed program or plugin object has a test hook", "%r" % hooked)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
