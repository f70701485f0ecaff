# FLEXCO_CHECK_SLURM_SOURCE: --with-slurm-source=DIR names a Slurm 22.05.8 source
# tree configured like Debian's build (contrib/slurm-source makes one).  The
# plugin compiles against its internal headers and config.h.  Also locates
# the installed slurmctld and its plugin directory.
AC_DEFUN([FLEXCO_CHECK_SLURM_SOURCE], [
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [Slurm 22.05.8 source tree configured with Debian's options (see contrib/slurm-source)])],
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
  AC_MSG_RESULT([$flexco_slurm_ver])
  AS_IF([test "x$flexco_slurm_ver" != x0x160508],
    [AC_MSG_ERROR([Slurm source tree is version $flexco_slurm_ver, need 0x160508 (22.05.8) to match Debian's slurmctld])])
  AS_IF([grep -q '^#define NDEBUG 1' "$SLURM_SOURCE_DIR/config.h"], [],
    [AC_MSG_ERROR([Slurm's config.h lacks NDEBUG: it was not configured like Debian (--disable-debug)])])

  AC_PATH_PROG([SLURMCTLD], [slurmctld], [no], [/usr/sbin$PATH_SEPARATOR/sbin$PATH_SEPARATOR$PATH])
  AS_IF([test "x$SLURMCTLD" = xno], [AC_MSG_ERROR([slurmctld not found: apt-get install slurmctld])])
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

  SLURM_CPPFLAGS="-I$SLURM_SOURCE_DIR -I$SLURM_SOURCE_DIR/src/common"
  AC_SUBST([SLURM_SOURCE_DIR])
  AC_SUBST([SLURM_PLUGIN_DIR])
  AC_SUBST([SLURM_CPPFLAGS])
])
