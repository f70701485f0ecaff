# SPDX-License-Identifier: GPL-2.0-or-later
# --enable-sanitizers: build our code with AddressSanitizer and UBSan.
AC_DEFUN([FLEXCO_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with -fsanitize=address,undefined (not the plugin)])],
    [], [enable_sanitizers=no])
  AS_IF([test "x$enable_sanitizers" = xyes],
    [SANITIZE_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"], [SANITIZE_FLAGS=])
  AC_SUBST([SANITIZE_FLAGS])
])

# --disable-integration-tests: leave out the tests that start real Slurm
# clusters (they need root).  On by default; CI always runs them.
AC_DEFUN([FLEXCO_ENABLE_INTEGRATION], [
  AC_ARG_ENABLE([integration-tests],
    [AS_HELP_STRING([--disable-integration-tests], [do not run tests that start real Slurm clusters])],
    [], [enable_integration_tests=yes])
  AM_CONDITIONAL([INTEGRATION_TESTS], [test "x$enable_integration_tests" = xyes])
  # --disable-package-tests: leave out testsuite/contrib/test_packages.py
  # (builds the Debian packages for two releases and installs them into
  # fresh roots: about 8 minutes).  make distcheck passes it, because the
  # packages come from the same sources make check has just tested them
  # from; everything else runs again from distcheck's copy.
  AC_ARG_ENABLE([package-tests],
    [AS_HELP_STRING([--disable-package-tests], [do not build, install and run the Debian packages in make check])],
    [], [enable_package_tests=yes])
  AM_CONDITIONAL([PACKAGE_TESTS], [test "x$enable_package_tests" = xyes])
])
