// SPDX-License-Identifier: GPL-2.0-or-later
// ui.cpp - see ui.hpp.

#include "flexcod/ui.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/sha256.hpp"

namespace flexcod::ui {

namespace {

struct Kind {
  const char* ext;
  const char* type;
};
const Kind kKinds[] = {
    {"html", "text/html; charset=utf-8"},   {"js", "text/javascript; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},     {"svg", "image/svg+xml"},
    {"png", "image/png"},                   {"ico", "image/x-icon"},
};

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

bool static_file(std::string_view rest, std::string* name, const char** content_type) {
  if (rest.empty()) rest = "index.html";
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 64) return false;
  for (std::size_t i = 0; i < dot; ++i) {
    if (!name_char(rest[i])) return false;
  }
  const std::string_view ext = rest.substr(dot + 1);
  for (const Kind& k : kKinds) {
    if (ext == k.ext) {
      *name = std::string(rest);
      *content_type = k.type;
      return true;
    }
  }
  return false;
}

bool read_static(const std::string& dir, const std::string& name, std::string* out) {
  const std::string path = dir + "/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            static_cast<std::size_t>(st.st_size) <= kMaxStaticFile;
  if (ok) {
    out->clear();
    char buf[16384];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ok = false;
        break;
      }
      if (n == 0) break;
      out->append(buf, static_cast<std::size_t>(n));
      if (out->size() > kMaxStaticFile) {
        ok = false;
        break;
      }
    }
  }
  close(fd);
  return ok;
}

void TokenStore::purge(std::int64_t now) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [now](const Entry& e) { return e.expires <= now; }),
                 entries_.end());
}

std::optional<Issued> TokenStore::issue(uid_t uid, std::int64_t lifetime, std::int64_t now) {
  std::uint8_t raw[32];
  std::size_t got = 0;
  while (got < sizeof raw) {
    const ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<std::size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  Issued out;
  out.token.reserve(kTokenHexLength);
  for (std::uint8_t b : raw) {
    out.token += kHex[b >> 4];
    out.token += kHex[b & 15];
  }
  out.expires = now + lifetime;
  Entry e;
  e.digest = flexco::sha256(out.token);
  e.uid = uid;
  e.expires = out.expires;
  e.issued = now;
  std::lock_guard<std::mutex> lock(mutex_);
  purge(now);
  // One user's tokens: the oldest gives way (a user who logs in often
  // never locks out the others, nor himself).
  std::size_t mine = 0;
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->uid != uid) continue;
    ++mine;
    if (oldest == entries_.end() || it->issued < oldest->issued) oldest = it;
  }
  if (mine >= kMaxTokensPerUid) {
    entries_.erase(oldest);
  } else if (entries_.size() >= kMaxTokens) {
    return std::nullopt;
  }
  entries_.push_back(e);
  return out;
}

TokenStore::Verdict TokenStore::check(std::string_view token, std::int64_t now, uid_t* uid) {
  if (token.size() != kTokenHexLength) return Verdict::kMalformed;
  for (char c : token) {
    if (!lower_hex(c)) return Verdict::kMalformed;
  }
  const auto d = flexco::sha256(token);
  std::lock_guard<std::mutex> lock(mutex_);
  bool found = false;
  uid_t who = 0;
  // Every entry, every byte: no early exit on a match or a difference.
  for (const Entry& e : entries_) {
    std::uint8_t diff = 0;
    for (std::size_t i = 0; i < d.size(); ++i) diff = static_cast<std::uint8_t>(diff | (e.digest[i] ^ d[i]));
    const bool same = diff == 0 && e.expires > now;
    found = found || same;
    if (same) who = e.uid;
  }
  if (!found) return Verdict::kUnknown;
  *uid = who;
  return Verdict::kValid;
}

std::size_t TokenStore::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace flexcod::ui
