// SPDX-License-Identifier: GPL-2.0-or-later
// capi_util.cpp - shared helpers of the core's C interfaces.

#include "core/capi_util.hpp"

#include <cstdlib>
#include <cstring>

#include "core/wire_profile.hpp"

namespace flexco::capi {

void put(char* dst, std::size_t len, std::string_view text) noexcept {
  if (dst == nullptr || len == 0) return;
  std::size_t n = text.size() < len - 1 ? text.size() : len - 1;
  text.copy(dst, n);
  dst[n] = '\0';
}

char* c_copy(const std::string& s) noexcept {
  auto* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

char* error_doc(std::string_view code, std::string_view message) noexcept {
  try {
    return c_copy(flexco::error_json(code, message));
  } catch (...) {
    return nullptr;
  }
}

int fail(int status, std::string_view code, std::string_view message,
         char** json_out, char* code_buf, std::size_t codelen, char* err,
         std::size_t errlen) noexcept {
  put(code_buf, codelen, code);
  put(err, errlen, message);
  if (json_out != nullptr) *json_out = error_doc(code, message);
  return status;
}

}  // namespace flexco::capi
