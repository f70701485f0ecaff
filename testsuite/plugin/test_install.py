#!/usr/bin/env python3
"""`make install` puts exactly the two plugin objects, prep_flexco.so and
flexco_slurmctld.so, into the configured plugin directory (by default
Slurm's own, where slurmctld, slurmd and slurmstepd look without any
PluginDir line), byte for byte the built ones and nothing else there (no
libtool .la files); `make uninstall` removes them again.  Runs into a
DESTDIR, so nothing on the machine changes."""

import filecmp
import os
import re
import shutil
import subprocess
import tempfile

import flexcotest as t


def make_var(makefile, name):
    with open(makefile) as f:
        for line in f:
            m = re.match(r"^%s\s*=\s*(.*)$" % re.escape(name), line)
            if m:
                return m.group(1).strip()
    return None


def main():
    plugin_build = os.path.join(t.builddir(), "plugin")
    makefile = os.path.join(plugin_build, "Makefile")
    t.plan(5)
    install_dir = make_var(makefile, "FLEXCO_PLUGIN_INSTALL_DIR")
    slurm_dir = make_var(makefile, "SLURM_PLUGIN_DIR")
    libdir = make_var(makefile, "libdir")
    if install_dir and "${libdir}" in install_dir:  # make distcheck's own prefix
        install_dir = install_dir.replace("${libdir}", libdir or "")
    if install_dir and "$(prefix)" not in install_dir and "${prefix}" in install_dir:
        install_dir = install_dir.replace("${prefix}", make_var(makefile, "prefix") or "")
    t.ok(install_dir and install_dir.startswith("/"),
         "configured plugin directory: %s (Slurm's: %s)" % (install_dir, slurm_dir))

    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    dest = tempfile.mkdtemp(prefix="flexco-install-")
    try:
        r = subprocess.run(["make", "-C", plugin_build, "install", "DESTDIR=" + dest],
                           capture_output=True, text=True, env=env, timeout=300)
        where = dest + install_dir
        names = sorted(os.listdir(where)) if os.path.isdir(where) else []
        t.ok(r.returncode == 0 and names == ["flexco_slurmctld.so", "prep_flexco.so"],
             "make install puts exactly prep_flexco.so and flexco_slurmctld.so "
             "into the plugin directory", "exit %d, %r\n%s" % (
                 r.returncode, names, (r.stdout + r.stderr)[-1500:]))
        same = all(filecmp.cmp(os.path.join(where, n),
                               os.path.join(plugin_build, ".libs", n), shallow=False)
                   for n in names) if names else False
        t.ok(same, "the installed objects are the built ones")
        others = [os.path.relpath(os.path.join(d, f), dest)
                  for d, _, files in os.walk(dest) for f in files
                  if not os.path.join(d, f).startswith(where + "/")]
        t.ok(not others, "nothing installed elsewhere", "%r" % others)
        r = subprocess.run(["make", "-C", plugin_build, "uninstall", "DESTDIR=" + dest],
                           capture_output=True, text=True, env=env, timeout=300)
        left = sorted(os.listdir(where)) if os.path.isdir(where) else []
        t.ok(r.returncode == 0 and not left, "make uninstall removes them",
             "exit %d, left %r" % (r.returncode, left))
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
