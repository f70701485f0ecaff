// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: GET /v1/events after authentication, without
// slurmctld: the query string as microhttpd splits it (checked by
// flexco_decode_query_args against the events', the profile's and no
// parameters, then flexco_decode_events_query), and the cursor's paging
// over a ring of retained events some of which the caller may not see
// (flexco_events_page, flexco_events_first_after, flexco_events_park).
// Input: the query string ("k=v&k&..."), a NUL byte, then the ring: bytes
// 0-3 give after, latest beyond the last event, lost_upto and max-1 (unless
// the query decoded), each further byte one event (seq step 1-8, bit 0:
// visible).  Checks: refusals are 400 JSON errors; an accepted query had
// each parameter once with a value; the page holds exactly the first max
// visible events after `after`, and its cursor never skips one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <algorithm>
#include <vector>

#include <jansson.h>

#include "core/capi_decode.h"

namespace {

struct Ring {
  std::vector<uint64_t> seq;
  std::vector<bool> vis;
};

uint64_t seq_at(size_t i, void* arg) { return static_cast<Ring*>(arg)->seq[i]; }
bool visible(size_t i, void* arg) { return static_cast<Ring*>(arg)->vis[i]; }

// A 400 with {"error":{"code":"bad_parameter","message":...}}.
void refused(int rc, char* err) {
  json_t* o = err ? json_loads(err, 0, nullptr) : nullptr;
  const char *code = nullptr, *msg = nullptr;
  if (rc != 400 || !o ||
      json_unpack(o, "{s:{s:s, s:s}}", "error", "code", &code, "message", &msg) ||
      std::strcmp(code, "bad_parameter") || !*msg)
    abort();
  json_decref(o);
  std::free(err);
}

// Decodes args against allowed; on success each allowed key was given at
// most once, with a value, and vals says which.
bool check_args(const std::vector<flexco_query_arg_t>& args, const char* const* allowed,
                const char** vals) {
  char* err = nullptr;
  int rc = flexco_decode_query_args(args.data(), args.size(), allowed, vals, "none taken", &err);
  if (rc) {
    refused(rc, err);
    return false;
  }
  if (err) abort();
  for (size_t k = 0; allowed[k]; k++) {
    size_t n = 0;
    const char* v = nullptr;
    for (const auto& a : args)
      if (!std::strcmp(a.key, allowed[k])) {
        n++;
        v = a.value;
      }
    if (n > 1 || (n == 1 && (!v || !*v || vals[k] != v)) || (n == 0 && vals[k])) abort();
  }
  for (const auto& a : args) {
    bool known = false;
    for (size_t k = 0; allowed[k]; k++) known |= !std::strcmp(a.key, allowed[k]);
    if (!known) abort();
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* z = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const std::string q(reinterpret_cast<const char*>(data), z ? static_cast<size_t>(z - data) : size);
  const uint8_t* rb = z ? z + 1 : data + size;
  const size_t rlen = static_cast<size_t>(data + size - rb);

  // the query string, split as microhttpd does (value NULL without '=')
  std::vector<std::string> keys, values;
  std::vector<bool> has;
  for (size_t at = 0; at <= q.size();) {
    size_t amp = q.find('&', at);
    std::string piece = q.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    size_t eq = piece.find('=');
    keys.push_back(piece.substr(0, eq));
    values.push_back(eq == std::string::npos ? "" : piece.substr(eq + 1));
    has.push_back(eq != std::string::npos);
    if (amp == std::string::npos) break;
    at = amp + 1;
  }
  std::vector<flexco_query_arg_t> args;
  for (size_t i = 0; i < keys.size(); i++)
    args.push_back({keys[i].c_str(), has[i] ? values[i].c_str() : nullptr});

  static const char* const kEvents[] = {"after", "wait", "max", nullptr};
  static const char* const kProfile[] = {"partition", "horizon", nullptr};
  static const char* const kNone[] = {nullptr};
  const char* vals[3];
  char* err = nullptr;
  if (check_args(args, kNone, vals) && !args.empty()) abort();
  if (check_args(args, kProfile, vals)) {
    int64_t h = 0;
    int rc = flexco_decode_profile_query(vals[0], vals[1], &h, &err);
    if (rc)
      refused(rc, err);
    else if (h < 1 || h > FLEXCO_PROFILE_MAX_HORIZON)
      abort();
  }
  flexco_events_query_t eq = {0, 0, 0};
  bool decoded = false;
  if (check_args(args, kEvents, vals)) {
    int rc = flexco_decode_events_query(vals[0], vals[1], vals[2], &eq, &err);
    if (rc)
      refused(rc, err);
    else if (eq.after > INT64_MAX || eq.wait > FLEXCO_EVENTS_MAX_WAIT || eq.max < 1 ||
             eq.max > FLEXCO_EVENTS_MAX_MAX)
      abort();
    else
      decoded = true;
  }

  // the ring and the page
  if (rlen < 4) return 0;
  Ring ring;
  uint64_t s = 0;
  for (size_t i = 4; i < rlen; i++) {
    s += 1 + ((rb[i] >> 1) & 7);
    ring.seq.push_back(s);
    ring.vis.push_back(rb[i] & 1);
  }
  const uint64_t latest = s + rb[1] % 4;
  const uint64_t lost_upto = rb[2] % (latest + 1);
  const uint64_t after = decoded ? eq.after : rb[0];
  const uint32_t max = decoded ? static_cast<uint32_t>(eq.max) : 1 + rb[3] % 16;
  const size_t cnt = ring.seq.size();
  std::vector<uint32_t> pick(max);
  flexco_events_page_t page;
  flexco_events_page(after, max, latest, lost_upto, cnt, seq_at, visible, &ring, pick.data(), &page);

  size_t first = 0;
  while (first < cnt && ring.seq[first] <= after) first++;
  if (flexco_events_first_after(after, cnt, seq_at, &ring) != first) abort();
  if (page.lost != (after < lost_upto || after > latest) || page.count > max) abort();
  // exactly the first max visible events after `after`
  std::vector<uint32_t> want;
  for (size_t k = first; k < cnt && want.size() < max; k++)
    if (ring.vis[k]) want.push_back(static_cast<uint32_t>(k));
  if (want.size() != page.count || !std::equal(want.begin(), want.end(), pick.begin())) abort();
  // the cursor: past every event shown, and no visible event skipped
  if (page.count && page.next < ring.seq[pick[page.count - 1]]) abort();
  for (size_t k = first; k < cnt && ring.seq[k] <= page.next; k++)
    if (ring.vis[k] && !std::count(want.begin(), want.end(), static_cast<uint32_t>(k))) abort();
  if (first < cnt && max && page.next <= after) abort();  // something was examined
  if (!page.lost && (page.next < after || page.next > latest)) abort();
  if (page.lost && first == cnt && page.next != latest) abort();
  if (flexco_events_park(after, &page, latest) &&
      (page.count || page.lost || page.next <= after || page.next < latest))
    abort();
  return 0;
}
