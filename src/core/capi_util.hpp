// SPDX-License-Identifier: GPL-2.0-or-later
// capi_util.hpp - what every C interface of the core (capi_*.cpp) shares:
// copying messages into the caller's buffers and handing malloc'd JSON
// documents across the C boundary.  Internal to the core library.

#ifndef FLEXCO_CORE_CAPI_UTIL_HPP
#define FLEXCO_CORE_CAPI_UTIL_HPP

#include <cstddef>
#include <string>
#include <string_view>

namespace flexco::capi {

// Copy text into dst (NUL-terminated, truncated to len); no-op if dst is
// NULL or len is 0.
void put(char* dst, std::size_t len, std::string_view text) noexcept;

// A malloc'd copy of s (the C side frees it with free()), NULL if out of
// memory.
char* c_copy(const std::string& s) noexcept;

// The error document {"error":{"code","message"}}, malloc'd; NULL if out of
// memory.
char* error_doc(std::string_view code, std::string_view message) noexcept;

// Report a failure: code and message into the caller's buffers, the error
// document into *json_out (when json_out is not NULL); returns status.
int fail(int status, std::string_view code, std::string_view message,
         char** json_out, char* code_buf, std::size_t codelen, char* err,
         std::size_t errlen) noexcept;

}  // namespace flexco::capi

#endif
