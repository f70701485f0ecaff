// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the web view's static file check (flexcod's
// ui::static_file, src/flexcod/ui.cpp), which maps every GET /ui/<rest>
// to a file name under UiDir before anything is opened.  Input: <rest>,
// any bytes (NUL included).  Checks: the answer agrees with an independent
// statement of the rule (doc/flexcod.md, "Web view": "" is index.html,
// else 1-64 of [A-Za-z0-9_-], one dot, one of the known extensions); an
// accepted name is the input itself, can name nothing outside the
// directory (no '/', '\', '%', NUL, "..", leading dot) and gets the
// content type of its extension.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "flexcod/ui.hpp"

namespace {

const char* expected_type(std::string_view ext) {
  if (ext == "html") return "text/html; charset=utf-8";
  if (ext == "js") return "text/javascript; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "ico") return "image/x-icon";
  return nullptr;
}

// The rule, written again without looking at how ui.cpp does it.
bool reference(std::string_view rest, std::string* name, const char** type) {
  std::string_view n = rest.empty() ? std::string_view("index.html") : rest;
  std::size_t stem = 0;
  while (stem < n.size()) {
    const unsigned char c = static_cast<unsigned char>(n[stem]);
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) break;
    ++stem;
  }
  if (stem == 0 || stem > 64 || stem >= n.size() || n[stem] != '.') return false;
  *type = expected_type(n.substr(stem + 1));
  if (*type == nullptr) return false;
  *name = std::string(n);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::string name = "unset", want_name;
  const char* type = nullptr;
  const char* want_type = nullptr;
  const bool got = flexcod::ui::static_file(rest, &name, &type);
  const bool want = reference(rest, &want_name, &want_type);
  if (got != want) abort();
  if (!got) return 0;
  if (name != want_name || type == nullptr || std::strcmp(type, want_type) != 0) abort();
  if (name != (rest.empty() ? std::string("index.html") : std::string(rest))) abort();
  if (name.size() > 64 + 1 + 4 || name[0] == '.' || name.find("..") != std::string::npos ||
      name.find_first_of(std::string("/\\%\0", 4)) != std::string::npos)
    abort();
  return 0;
}
