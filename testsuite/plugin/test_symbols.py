#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The plugin's dynamic symbols.  prep_flexco.so exports exactly the PrEp
plugin entry points and needs nothing but libslurmfull.so and its NEEDED
libraries: slurmd and slurmstepd load it too, and a symbol only slurmctld
has would make their start fail.  flexco_slurmctld.so exports exactly the
entry points prep/flexco looks up, and every symbol it needs resolves
against the installed slurmctld, libslurmfull.so and its NEEDED libraries.
A symbol that does not resolve would kill the daemon at load time (both are
linked -z now)."""

import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import flexcotest as t  # noqa: E402

PREP_ENTRY = {"plugin_name", "plugin_type", "plugin_version", "init", "fini",
              "prep_p_register_callbacks", "prep_p_prolog", "prep_p_epilog",
              "prep_p_prolog_slurmctld", "prep_p_epilog_slurmctld",
              "prep_p_required"}
CTLD_ENTRY = {"flexco_ctld_slurm_version", "flexco_ctld_init",
              "flexco_ctld_fini", "flexco_ctld_job_end"}

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


def undefined_of(path):
    return {re.sub(r"@.*", "", name)
            for kind, name in nm(path, "--undefined-only") if kind == "U"}


def check_object(path, entry, have, what):
    """Exports, -z now, and every undefined symbol found in have."""
    exported = {name for kind, name in nm(path, "--defined-only")}
    t.ok(exported == entry, "%s exports exactly its entry points" % what,
         "exported: %s" % sorted(exported))
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True,
                         text=True).stdout
    t.ok("BIND_NOW" in dyn or "Flags: NOW" in dyn,
         "%s linked -z now (unresolved symbols fail at load, not at first "
         "call)" % what)
    for lib in needed_paths(path):
        have = have | defined(lib)
    undefined = undefined_of(path)
    missing = sorted(undefined - have)
    return undefined, missing


def main():
    builddir = t.builddir()
    libs = os.path.join(builddir, "plugin", ".libs")
    prep = os.path.join(libs, "prep_flexco.so")
    ctld_obj = os.path.join(libs, "flexco_slurmctld.so")
    slurmctld = os.path.realpath(os.environ.get("SLURMCTLD", "/usr/sbin/slurmctld"))
    plugdir = os.environ.get("SLURM_PLUGIN_DIR",
                             "/usr/lib/x86_64-linux-gnu/slurm-wlm")
    libslurmfull = os.path.join(plugdir, "libslurmfull.so")

    t.plan(10)
    t.ok(os.path.isfile(prep) and os.path.isfile(ctld_obj),
         "plugin built: %s and %s" % (prep, ctld_obj))
    if not (os.path.isfile(prep) and os.path.isfile(ctld_obj)):
        t.bail_out("no plugin to check")
    t.ok(os.path.isfile(slurmctld) and os.path.isfile(libslurmfull),
         "found slurmctld (%s) and libslurmfull (%s)" % (slurmctld, libslurmfull))
    full = defined(libslurmfull)
    ctld = defined(slurmctld)

    undefined, missing = check_object(prep, PREP_ENTRY, full, "prep_flexco.so")
    t.ok(undefined and not missing,
         "prep_flexco.so: all %d undefined symbols resolve against "
         "libslurmfull and NEEDED libraries, without slurmctld (slurmd and "
         "slurmstepd load it too)" % len(undefined),
         "unresolved outside slurmctld: %s" % missing)
    t.ok(not (undefined & (ctld - full)),
         "prep_flexco.so uses no symbol only slurmctld defines",
         "controller-only: %s" % sorted(undefined & (ctld - full)))

    undefined, missing = check_object(ctld_obj, CTLD_ENTRY, full | ctld,
                                      "flexco_slurmctld.so")
    t.ok(undefined and not missing,
         "flexco_slurmctld.so: all %d undefined symbols resolve against "
         "slurmctld, libslurmfull and NEEDED libraries" % len(undefined),
         "unresolved: %s" % missing)

    # The slurmctld internals we rely on must come from slurmctld itself
    # (exported with -export-dynamic), not from a stray library.
    wanted = {"lock_slurmctld", "unlock_slurmctld", "slurmctld_diag_stats",
              "slurmctld_primary", "job_list", "part_list", "resv_list"}
    t.ok(wanted <= ctld, "slurmctld exports the lock, state and diag "
         "symbols used", "missing in slurmctld: %s" % sorted(wanted - ctld))


if __name__ == "__main__":
    t.run_main(main)
