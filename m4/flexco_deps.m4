# SPDX-License-Identifier: GPL-2.0-or-later
# Required libraries.  Each check fails configure with the Debian package to
# install (contrib/install-deps installs all of them).

AC_DEFUN([FLEXCO_CHECK_JANSSON], [
  PKG_CHECK_MODULES([JANSSON], [jansson >= 2.13], [],
    [AC_MSG_ERROR([jansson >= 2.13 not found: apt-get install libjansson-dev])])
])

AC_DEFUN([FLEXCO_CHECK_LIBCURL], [
  PKG_CHECK_MODULES([LIBCURL], [libcurl >= 7.74], [],
    [AC_MSG_ERROR([libcurl >= 7.74 not found: apt-get install libcurl4-openssl-dev])])
])

AC_DEFUN([FLEXCO_CHECK_MUNGE], [
  PKG_CHECK_MODULES([MUNGE], [munge >= 0.5.13], [],
    [AC_MSG_ERROR([MUNGE >= 0.5.13 not found: apt-get install libmunge-dev munge])])
  AC_PATH_PROG([MUNGED], [munged], [no], [/usr/sbin$PATH_SEPARATOR/sbin$PATH_SEPARATOR$PATH])
  AS_IF([test "x$MUNGED" = xno], [AC_MSG_ERROR([munged not found: apt-get install munge])])
])

AC_DEFUN([FLEXCO_CHECK_MICROHTTPD], [
  PKG_CHECK_MODULES([MICROHTTPD], [libmicrohttpd >= 0.9.71], [],
    [AC_MSG_ERROR([libmicrohttpd >= 0.9.71 not found: apt-get install libmicrohttpd-dev])])
])

AC_DEFUN([FLEXCO_CHECK_SQLITE], [
  PKG_CHECK_MODULES([SQLITE], [sqlite3 >= 3.31], [],
    [AC_MSG_ERROR([SQLite >= 3.31 not found: apt-get install libsqlite3-dev])])
])

# libpq: flexcod's StorageType=postgresql (doc/flexcod.md, "Storage").
# Required, as SQLite is: one flexcod binary takes either store, and the
# store's tests run against a real PostgreSQL.
AC_DEFUN([FLEXCO_CHECK_LIBPQ], [
  PKG_CHECK_MODULES([LIBPQ], [libpq >= 13], [],
    [AC_MSG_ERROR([libpq >= 13 (flexcod's PostgreSQL store) not found: apt-get install libpq-dev])])
])

AC_DEFUN([FLEXCO_CHECK_CHECK], [
  PKG_CHECK_MODULES([CHECK], [check >= 0.15], [],
    [AC_MSG_ERROR([Check >= 0.15 (unit tests) not found: apt-get install check])])
])

AC_DEFUN([FLEXCO_CHECK_ZLIB], [
  PKG_CHECK_MODULES([ZLIB], [zlib >= 1.2], [],
    [AC_MSG_ERROR([zlib >= 1.2 (gzip traces) not found: apt-get install zlib1g-dev])])
])

AC_DEFUN([FLEXCO_CHECK_NETTLE], [
  PKG_CHECK_MODULES([NETTLE], [nettle >= 3.4 hogweed >= 3.4], [],
    [AC_MSG_ERROR([GNU Nettle and Hogweed >= 3.4 (SHA-256 and HMAC of signed requests, X25519 of sessions) not found: apt-get install nettle-dev])])
])
