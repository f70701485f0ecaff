# SPDX-License-Identifier: GPL-2.0-or-later
# FLEXCO_CHECK_SLURM_SOURCE: --with-slurm-source=DIR names a Slurm source
# tree configured like Debian's build (contrib/slurm-source makes one) of a
# supported release (22.05, 24.11, 25.11, 26.05) and of exactly the version of the
# installed slurmctld.  The plugin compiles against its internal headers and
# config.h (plugin/compat.h names what differs between releases).  Also
# locates the installed slurmctld and its plugin directory, where `make
# install` puts the plugin.
AC_DEFUN([FLEXCO_CHECK_SLURM_SOURCE], [
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [Slurm source tree of the installed slurmctld's version, configured with Debian's options (see contrib/slurm-source)])],
    [SLURM_SOURCE_DIR=$withval],
    [SLURM_SOURCE_DIR=])
  AS_IF([test -z "$SLURM_SOURCE_DIR" || test "x$SLURM_SOURCE_DIR" = xyes || test "x$SLURM_SOURCE_DIR" = xno],
    [AC_MSG_ERROR([--with-slurm-source=DIR is required: run contrib/slurm-source and pass the directory it prints])])
  SLURM_SOURCE_DIR=`cd "$SLURM_SOURCE_DIR" 2>/dev/null && pwd`
  AC_MSG_CHECKING([for a configured Slurm source tree])
  AS_IF([test -f "$SLURM_SOURCE_DIR/config.h" && test -f "$SLURM_SOURCE_DIR/src/slurmctld/slurmctld.h" && test -f "$SLURM_SOURCE_DIR/slurm/slurm_version.h"],
    [AC_MSG_RESULT([$SLURM_SOURCE_DIR])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([--with-slurm-source: no configured Slurm tree at '$with_slurm_source' (need config.h, src/slurmctld/slurmctld.h, slurm/slurm_version.h); run contrib/slurm-source])])

  AC_MSG_CHECKING([Slurm source version])
  flexco_slurm_ver=`grep '^#define SLURM_VERSION_NUMBER ' "$SLURM_SOURCE_DIR/config.h" | cut -d' ' -f3`
  AS_IF([test -z "$flexco_slurm_ver"],
    [AC_MSG_RESULT([unknown])
     AC_MSG_ERROR([$SLURM_SOURCE_DIR/config.h defines no SLURM_VERSION_NUMBER])])
  SLURM_SOURCE_VERSION=`printf '%d.%02d.%d' $(( (flexco_slurm_ver >> 16) & 255 )) $(( (flexco_slurm_ver >> 8) & 255 )) $(( flexco_slurm_ver & 255 ))`
  AC_MSG_RESULT([$SLURM_SOURCE_VERSION ($flexco_slurm_ver)])
  # Releases plugin/compat.h covers; README "Slurm versions" says how to add one.
  AS_CASE([$SLURM_SOURCE_VERSION],
    [22.05.*|24.11.*|25.11.*|26.05.*], [],
    [AC_MSG_ERROR([Slurm $SLURM_SOURCE_VERSION is not supported (supported: 22.05, 24.11, 25.11, 26.05); to add a release, extend plugin/compat.h and m4/flexco_slurm.m4 as the README's "Slurm versions" section says])])
  AS_IF([grep -q '^#define NDEBUG 1' "$SLURM_SOURCE_DIR/config.h"], [],
    [AC_MSG_ERROR([Slurm's config.h lacks NDEBUG: it was not configured like Debian (--disable-debug)])])

  AC_PATH_PROG([SLURMCTLD], [slurmctld], [no], [/usr/sbin$PATH_SEPARATOR/sbin$PATH_SEPARATOR$PATH])
  AS_IF([test "x$SLURMCTLD" = xno], [AC_MSG_ERROR([slurmctld not found: apt-get install slurmctld])])
  AC_MSG_CHECKING([the installed slurmctld's version])
  SLURMCTLD_VERSION=`"$SLURMCTLD" -V 2>/dev/null | awk '{ print $NF }'`
  AC_MSG_RESULT([${SLURMCTLD_VERSION:-unknown}])
  AC_ARG_ENABLE([slurmctld-version-check],
    [AS_HELP_STRING([--disable-slurmctld-version-check],
      [build even when the source tree is not the installed slurmctld's version (only to try a build; the plugin refuses to start in a slurmctld of another release)])],
    [], [enable_slurmctld_version_check=yes])
  AS_IF([test "x$SLURMCTLD_VERSION" != "x$SLURM_SOURCE_VERSION"],
    [AS_IF([test "x$enable_slurmctld_version_check" = xno],
      [AC_MSG_WARN([Slurm source $SLURM_SOURCE_VERSION does not match slurmctld ${SLURMCTLD_VERSION:-unknown}: the plugin will refuse to start in that slurmctld])],
      [AC_MSG_ERROR([the Slurm source tree is version $SLURM_SOURCE_VERSION but $SLURMCTLD is ${SLURMCTLD_VERSION:-of unknown version}: the plugin reads slurmctld's internal structures and must be built against the exact release it runs in (run contrib/slurm-source for the installed one)])])])
  AC_SUBST([SLURM_SOURCE_VERSION])
  AC_SUBST([SLURMCTLD_VERSION])

  AC_PATH_PROG([SLURMD], [slurmd], [no], [/usr/sbin$PATH_SEPARATOR/sbin$PATH_SEPARATOR$PATH])
  AS_IF([test "x$SLURMD" = xno], [AC_MSG_ERROR([slurmd not found: apt-get install slurmd])])
  AC_PATH_PROG([SBATCH], [sbatch], [no])
  AS_IF([test "x$SBATCH" = xno], [AC_MSG_ERROR([sbatch not found: apt-get install slurm-client])])

  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR], [directory of Slurm's own plugins (default: found from libslurmfull)])],
    [SLURM_PLUGIN_DIR=$withval], [SLURM_PLUGIN_DIR=])
  AS_IF([test -z "$SLURM_PLUGIN_DIR"], [
    for d in /usr/lib/*/slurm-wlm /usr/lib/slurm-wlm /usr/lib64/slurm /usr/lib/slurm; do
      AS_IF([test -f "$d/libslurmfull.so"], [SLURM_PLUGIN_DIR=$d; break])
    done])
  AC_MSG_CHECKING([for Slurm's plugin directory])
  AS_IF([test -f "$SLURM_PLUGIN_DIR/libslurmfull.so"], [AC_MSG_RESULT([$SLURM_PLUGIN_DIR])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([libslurmfull.so not found; pass --with-slurm-plugindir])])

  # make install puts prep_flexco.so and flexco_slurmctld.so where the
  # installed slurmctld looks by default: its own plugin directory.
  AC_ARG_WITH([plugin-install-dir],
    [AS_HELP_STRING([--with-plugin-install-dir=DIR],
      [where make install puts the plugin (default: Slurm's plugin directory)])],
    [FLEXCO_PLUGIN_INSTALL_DIR=$withval], [FLEXCO_PLUGIN_INSTALL_DIR=$SLURM_PLUGIN_DIR])
  AC_SUBST([FLEXCO_PLUGIN_INSTALL_DIR])

  SLURM_CPPFLAGS="-I$SLURM_SOURCE_DIR -I$SLURM_SOURCE_DIR/src/common"
  AC_SUBST([SLURM_SOURCE_DIR])
  AC_SUBST([SLURM_PLUGIN_DIR])
  AC_SUBST([SLURM_CPPFLAGS])
])
