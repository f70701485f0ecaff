#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# autogen.sh - generate configure and the Makefile.in files.
# Automake does not install its TAP driver on its own; copy it from the
# installed automake so the test suite can count individual results.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux
for d in /usr/share/automake-*; do
	if [ -f "$d/tap-driver.sh" ]; then
		cp -f "$d/tap-driver.sh" build-aux/tap-driver.sh
		break
	fi
done
[ -f build-aux/tap-driver.sh ] || { echo "autogen.sh: automake's tap-driver.sh not found" >&2; exit 1; }
autoreconf -fi
