#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""contrib/apt-sources reads the machine's own apt sources in both formats
(one-line sources.list / *.list and deb822 *.sources): the mirror of a
suite, and a deb-src twin of every enabled deb entry of this release with
component main, keeping its URIs, suites and Signed-By, skipping disabled
entries, other releases, other components and comments."""

import os
import subprocess

import flexcotest as t

TOOL = os.path.join(t.srcdir(), "contrib", "apt-sources")


def run(etc, os_release, *argv):
    env = dict(os.environ, FLEXCO_APT_ETC=etc, FLEXCO_OS_RELEASE=os_release)
    return subprocess.run([TOOL, *argv], capture_output=True, text=True,
                          env=env, timeout=30)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    t.plan(7)
    tmp = t.scratch_dir("apt-sources-")
    osr = os.path.join(tmp, "os-release")
    write(osr, 'NAME="Debian GNU/Linux"\nVERSION_CODENAME=bookworm\n')

    # one-line format only
    one = os.path.join(tmp, "one")
    write(os.path.join(one, "sources.list"),
          "# deb http://commented.example/debian bookworm main\n"
          "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://m1.example/debian bookworm main contrib\n"
          "deb http://m1.example/debian bookworm-updates main\n"
          "deb http://other.example/debian trixie main\n"
          "deb http://nonfree.example/debian bookworm non-free\n"
          "deb-src http://src.example/debian bookworm main\n")
    write(os.path.join(one, "sources.list.d", "sec.list"),
          "deb http://sec.example/debian-security bookworm-security main\n")
    r = run(one, osr, "mirror")
    t.is_(r.stdout.strip(), "http://m1.example/debian",
          "one-line: the mirror of bookworm (first enabled deb, main)")
    r = run(one, osr, "mirror", "bookworm-security")
    t.is_(r.stdout.strip(), "http://sec.example/debian-security",
          "one-line: the mirror of bookworm-security, from a .list file")
    r = run(one, osr, "deb-src")
    t.is_(r.stdout,
          "Types: deb-src\nURIs: http://m1.example/debian\nSuites: bookworm\n"
          "Components: main contrib\nSigned-By: /usr/share/keyrings/k.gpg\n\n"
          "Types: deb-src\nURIs: http://m1.example/debian\nSuites: bookworm-updates\n"
          "Components: main\n\n"
          "Types: deb-src\nURIs: http://sec.example/debian-security\n"
          "Suites: bookworm-security\nComponents: main\n",
          "one-line: deb-src twins of this release's main entries only")

    # deb822 only, with a disabled stanza and a folded field
    d8 = os.path.join(tmp, "deb822")
    write(os.path.join(d8, "sources.list.d", "debian.sources"),
          "Types: deb\n# a comment\nURIs: http://m2.example/debian\n"
          "Suites: bookworm\n bookworm-updates\nComponents: main\n"
          "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
          "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\n"
          "Components: main\nEnabled: no\n\n"
          "Types: deb\nURIs: https://deb.nodesource.example/node_20.x\n"
          "Suites: nodistro\nComponents: main\n")
    r = run(d8, osr, "mirror")
    t.is_(r.stdout.strip(), "http://m2.example/debian",
          "deb822: the mirror of bookworm, the disabled stanza ignored")
    r = run(d8, osr, "deb-src")
    t.is_(r.stdout,
          "Types: deb-src\nURIs: http://m2.example/debian\n"
          "Suites: bookworm bookworm-updates\nComponents: main\n"
          "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
          "deb822: one deb-src twin with both suites and Signed-By; nothing "
          "of other releases")

    empty = os.path.join(tmp, "empty")
    write(os.path.join(empty, "sources.list"), "deb http://x.example/debian trixie main\n")
    r = run(empty, osr, "deb-src")
    t.ok(r.returncode == 1 and "no enabled deb entry of bookworm" in r.stderr,
         "no entry of this release: exit 1 with a message", r.stderr)
    r = run(one, osr, "nonsense")
    t.ok(r.returncode != 0 and r.stderr, "an unknown command fails with a message")


if __name__ == "__main__":
    t.run_main(main)
