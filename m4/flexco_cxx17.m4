# SPDX-License-Identifier: GPL-2.0-or-later
# AX_CXX_COMPILE_STDCXX_17_OR_FAIL: make the C++ compiler use C++17, or fail.
AC_DEFUN([AX_CXX_COMPILE_STDCXX_17_OR_FAIL], [
  AC_LANG_PUSH([C++])
  flexco_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS -std=c++17"
  AC_MSG_CHECKING([whether $CXX accepts -std=c++17])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <optional>
#include <string_view>
#if __cplusplus < 201703L
#error not C++17
#endif]], [[std::optional<int> o{1}; std::string_view s{"x"}; if constexpr (true) { return *o + (int)s.size(); }]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([a C++17 compiler is required (g++ 12 on Debian 12)])])
  CXXFLAGS=$flexco_save_CXXFLAGS
  AC_SUBST([CXXSTD], [-std=c++17])
  AC_LANG_POP([C++])
])
