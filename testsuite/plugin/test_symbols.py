#!/usr/bin/env python3
"""The plugin's dynamic symbols: it exports exactly Slurm's plugin entry
points, and every symbol it needs resolves against the installed slurmctld,
libslurmfull.so and the plugin's own NEEDED libraries.  A symbol that does
not resolve would kill slurmctld at load time (the plugin is linked -z now)."""

import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import flexcotest as t  # noqa: E402

ENTRY = {"plugin_name", "plugin_type", "plugin_version", "init", "fini",
         "slurmctld_plugstack_p_get_config"}

# libtool may set NM to "nm -B": a command line, not a path.
NM = shlex.split(os.environ.get("NM") or "nm")


def nm(path, *flags):
    out = subprocess.run([*NM, "-D", *flags, path], check=True,
                         capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            rows.append((parts[-2], parts[-1]))
    return rows


def defined(path):
    return {re.sub(r"@.*", "", name) for kind, name in nm(path, "--defined-only")}


def needed_paths(path):
    """Resolved paths of the plugin's NEEDED libraries (via ldd)."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    paths = []
    for line in out.splitlines():
        m = re.search(r"=>\s+(/\S+)", line)
        if m:
            paths.append(m.group(1))
    return paths


def main():
    builddir = t.builddir()
    plugin = os.path.join(builddir, "plugin", ".libs", "slurmctld_flexco.so")
    slurmctld = os.path.realpath(os.environ.get("SLURMCTLD", "/usr/sbin/slurmctld"))
    plugdir = os.environ.get("SLURM_PLUGIN_DIR",
                             "/usr/lib/x86_64-linux-gnu/slurm-wlm")
    libslurmfull = os.path.join(plugdir, "libslurmfull.so")

    t.plan(6)
    t.ok(os.path.isfile(plugin), "plugin built: " + plugin)
    if not os.path.isfile(plugin):
        t.bail_out("no plugin to check")

    exported = {name for kind, name in nm(plugin, "--defined-only")}
    t.ok(exported == ENTRY, "exports exactly the plugin entry points",
         "exported: %s" % sorted(exported))

    dyn = subprocess.run(["readelf", "-d", plugin], capture_output=True,
                         text=True).stdout
    t.ok("BIND_NOW" in dyn or "Flags: NOW" in dyn,
         "linked -z now (unresolved symbols fail at load, not at first call)")

    t.ok(os.path.isfile(slurmctld) and os.path.isfile(libslurmfull),
         "found slurmctld (%s) and libslurmfull (%s)" % (slurmctld, libslurmfull))

    have = defined(slurmctld) | defined(libslurmfull)
    for lib in needed_paths(plugin):
        have |= defined(lib)
    undefined = {re.sub(r"@.*", "", name)
                 for kind, name in nm(plugin, "--undefined-only") if kind == "U"}
    missing = sorted(undefined - have)
    t.ok(undefined and not missing,
         "all %d undefined symbols resolve against slurmctld, libslurmfull "
         "and NEEDED libraries" % len(undefined),
         "unresolved: %s" % missing)

    # The slurmctld internals we rely on must come from slurmctld itself
    # (exported with -export-dynamic), not from a stray library.
    ctld = defined(slurmctld)
    wanted = {"lock_slurmctld", "unlock_slurmctld", "slurmctld_diag_stats"}
    t.ok(wanted <= ctld, "slurmctld exports the lock and diag symbols used",
         "missing in slurmctld: %s" % sorted(wanted - ctld))


if __name__ == "__main__":
    t.run_main(main)
