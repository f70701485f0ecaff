#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make install` puts exactly the two plugin objects, prep_flexco.so and
flexco_slurmctld.so, into the configured plugin directory (by default
Slurm's own, where slurmctld, slurmd and slurmstepd look without any
PluginDir line), byte for byte the built ones and nothing else there (no
libtool .la files); `make uninstall` removes them again.  Runs into a
DESTDIR, so nothing on the machine changes."""

import filecmp
import os
import shutil
import tempfile

import flexcotest as t



def main():
    plugin_build = os.path.join(t.builddir(), "plugin")
    t.plan(5)
    # make distcheck configures its own ${libdir}/slurm; a normal build
    # installs into Slurm's plugin directory.
    install_dir = t.make_value(plugin_build, "$(slurmplugindir)")
    slurm_dir = t.make_value(plugin_build, "$(SLURM_PLUGIN_DIR)")
    t.ok(install_dir and install_dir.startswith("/"),
         "configured plugin directory: %s (Slurm's: %s)" % (install_dir, slurm_dir))

    dest = tempfile.mkdtemp(prefix="flexco-install-")
    try:
        rc, out = t.make_in([plugin_build], "install", dest)
        where = dest + install_dir
        names = sorted(os.listdir(where)) if os.path.isdir(where) else []
        t.ok(rc == 0 and names == ["flexco_slurmctld.so", "prep_flexco.so"],
             "make install puts exactly prep_flexco.so and flexco_slurmctld.so "
             "into the plugin directory", "exit %d, %r\n%s" % (rc, names, out[-1500:]))
        same = all(filecmp.cmp(os.path.join(where, n),
                               os.path.join(plugin_build, ".libs", n), shallow=False)
                   for n in names) if names else False
        t.ok(same, "the installed objects are the built ones")
        others = [os.path.relpath(os.path.join(d, f), dest)
                  for d, _, files in os.walk(dest) for f in files
                  if not os.path.join(d, f).startswith(where + "/")]
        t.ok(not others, "nothing installed elsewhere", "%r" % others)
        rc, out = t.make_in([plugin_build], "uninstall", dest)
        left = sorted(os.listdir(where)) if os.path.isdir(where) else []
        t.ok(rc == 0 and not left, "make uninstall removes them",
             "exit %d, left %r\n%s" % (rc, left, out[-800:]))
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
