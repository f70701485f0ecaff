#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make install` (into a DESTDIR) installs flexcod.service into the
configured systemd unit directory and the flexco user's sysusers.d file:
the unit runs the installed flexcod (the configured sbindir, no fixed
/usr/local) with the configured flexcod.conf, as the unprivileged user
flexco with systemd's hardening, state in /var/lib/flexco created 0700;
`systemd-analyze verify` finds nothing to say about it; systemd-sysusers
makes the user from the installed file; `make uninstall` removes both.
Nothing on the machine changes (no systemd running needed)."""

import os
import re
import shutil
import subprocess
import tempfile

import flexcotest as t



def unit_settings(path):
    """{key: [values]} of a unit file (sections flattened)."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;[" or "=" not in line:
                continue
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def main():
    t.plan(12)
    build = t.builddir()
    contrib = os.path.join(build, "contrib")
    unitdir = t.make_value(contrib, "$(systemdsystemunitdir)")
    sysusersdir = t.make_value(contrib, "$(sysusersdir)")
    sbindir = t.make_value(contrib, "$(sbindir)")
    conf = t.make_value(contrib, "$(FLEXCOD_CONF)")
    mandir = t.make_value(contrib, "$(mandir)")
    t.ok(unitdir and unitdir.startswith("/") and sysusersdir and sysusersdir.startswith("/"),
         "configured unit directory %s, sysusers.d %s" % (unitdir, sysusersdir))

    dest = tempfile.mkdtemp(prefix="flexco-unit-")
    try:
        subs = [os.path.join(build, sub) for sub in ("src", "contrib", "doc")]
        rc, logs = t.make_in(subs, "install", dest)
        unit = dest + unitdir + "/flexcod.service"
        t.ok(rc == 0 and os.path.isfile(unit), "make install puts flexcod.service into " + unitdir,
             logs[-1500:])
        s = unit_settings(unit) if os.path.isfile(unit) else {}
        start = (s.get("ExecStart") or [""])[0].split()
        t.is_(start, [sbindir + "/flexcod", "-D", "-f", conf, "-i", "/run/flexco/flexcod.pid"],
              "ExecStart runs the installed flexcod in the foreground with the configured flexcod.conf")
        t.ok(os.access(dest + sbindir + "/flexcod", os.X_OK), "that flexcod is installed")
        left = re.findall(r"@[A-Za-z_]+@", open(unit).read()) if os.path.isfile(unit) else ["?"]
        t.ok(not left, "no placeholder left in the unit", "%r" % left)
        want = {"User": "flexco", "StateDirectory": "flexco", "StateDirectoryMode": "0700",
                "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
                "NoNewPrivileges": "yes", "CapabilityBoundingSet": "",
                "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6"}
        wrong = {k: s.get(k) for k, v in want.items() if s.get(k) != [v]}
        t.ok(not wrong, "runs as flexco, hardened, state directory 0700", "differs: %r" % wrong)
        cd = s.get("ConfigurationDirectory")
        t.ok(cd == ["flexco"] if os.path.dirname(conf) == "/etc/flexco" else cd is None,
             "ConfigurationDirectory=flexco exactly when flexcod.conf is in /etc/flexco "
             "(%s: %r)" % (conf, cd))

        sysusers = dest + sysusersdir + "/flexco.conf"
        os.makedirs(os.path.join(dest, "etc"), exist_ok=True)
        r = subprocess.run(["systemd-sysusers", "--root=" + dest, sysusers],
                           capture_output=True, text=True, timeout=60)
        passwd = os.path.join(dest, "etc", "passwd")
        users = [ln.split(":") for ln in open(passwd)] if os.path.isfile(passwd) else []
        flexco = [u for u in users if u[0] == "flexco"]
        t.ok(r.returncode == 0 and len(flexco) == 1 and 0 < int(flexco[0][2]) < 1000
             and flexco[0][5] == "/var/lib/flexco" and flexco[0][6].strip().endswith("nologin"),
             "systemd-sysusers makes the system user flexco from the installed file",
             "exit %d %s %r" % (r.returncode, r.stderr, flexco))

        # verify resolves ExecStart's program and the unit's names on the
        # real root: point it at the installed flexcod, and man(1) at the
        # installed pages (Documentation=).  Any line it prints
        # (a warning is a message too) fails the test.
        checked = os.path.join(dest, "flexcod.service")
        with open(unit) as f, open(checked, "w") as g:
            g.write(f.read().replace("ExecStart=" + sbindir + "/flexcod",
                                     "ExecStart=" + dest + sbindir + "/flexcod"))
        # Without man(1) (a minimal root such as the 24.11 chroot) verify
        # cannot look the pages up: then it checks everything else.
        man = shutil.which("man") is not None
        r = subprocess.run(["systemd-analyze", "verify", "--man=%s" % ("yes" if man else "no"),
                            checked],
                           capture_output=True, text=True, timeout=120,
                           env=dict(t.make_env(), SYSTEMD_LOG_LEVEL="notice", MANPATH=dest + mandir))
        t.ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
             "systemd-analyze verify is clean (the program%s)" % (
                 ", the man pages" if man else "; no man(1) here to check the pages"), "exit %d\n%s" % (r.returncode, r.stdout + r.stderr))
        r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=30",
                            "--no-pager", checked],
                           capture_output=True, text=True, timeout=120)
        t.ok(r.returncode == 0, "systemd-analyze security rates the unit at most 3.0",
             (r.stdout + r.stderr)[-1500:])

        rc, logs = t.make_in(subs, "uninstall", dest)
        t.ok(rc == 0 and not os.path.exists(unit), "make uninstall removes the unit", logs[-800:])
        t.ok(not os.path.exists(sysusers), "and the sysusers.d file")
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    t.run_main(main)
