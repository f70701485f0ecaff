// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-rendezvous - a part job's side of flexcod's start-up rendezvous
// (flexco-rendezvous(1), doc/one-program.md).
//
// Registers this part (its contact, node list and process count) with the
// URL and token flexcod put in the job's environment, waits until every
// part of the co-allocation has registered, and prints the layout as shell
// assignments (for eval) or as JSON.  The token is read from the
// environment only: never from the command line, where ps shows it.
//
// Exit: 0 the layout; 1 usage or environment; 2 --timeout passed (or
// flexcod unreachable that long); 3 told to abort (the co-allocation
// failed, was cancelled or has ended); 4 refused (a bad token, a bad
// request).  One line on stderr says why.

#include <curl/curl.h>
#include <jansson.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

constexpr const char* kProg = "flexco-rendezvous";
constexpr int kWait = 25;  // s one request waits at flexcod (its bound is 30)

int die(int code, const std::string& msg) {
  std::fprintf(stderr, "%s: error: %s\n", kProg, msg.c_str());
  return code;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void usage(FILE* f) {
  std::fprintf(f,
               "Usage: %s [--contact STRING | --contact-file FILE] [--ranks N] [--nodes LIST]\n"
               "       [--timeout S] [--json] [--url URL] [--cacert FILE]\n"
               "Registers this part job at flexcod's start-up rendezvous, waits for every part\n"
               "of its co-allocation and prints the layout (shell assignments, or --json).\n"
               "Environment: FLEXCO_RENDEZVOUS_URL, FLEXCO_RENDEZVOUS_TOKEN, FLEXCO_COALLOCATION,\n"
               "FLEXCO_PART_INDEX (set by flexcod); SLURM_NTASKS, SLURM_JOB_NODELIST.\n",
               kProg);
}

// 'value' for sh: single quotes, each ' as '\''.
std::string sh_quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

struct Reply {
  long status = 0;          // 0: no answer
  std::string body;
  std::string transport;    // curl's error when no answer
};

std::size_t sink(char* p, std::size_t size, std::size_t n, void* ud) {
  auto* s = static_cast<std::string*>(ud);
  if (s->size() + size * n > (4u << 20)) return 0;  // far beyond any layout
  s->append(p, size * n);
  return size * n;
}

Reply call(const std::string& method, const std::string& url, const std::string& token,
           const std::string& body, const std::string& cacert, long timeout) {
  Reply r;
  CURL* c = curl_easy_init();
  if (c == nullptr) {
    r.transport = "curl_easy_init failed";
    return r;
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  const std::string auth = "Authorization: Bearer " + token;
  curl_slist* h = curl_slist_append(nullptr, auth.c_str());
  h = curl_slist_append(h, "Content-Type: application/json");
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_PROXY, "");  // never through an environment proxy
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  if (!cacert.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, cacert.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  } else {
    r.transport = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  }
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

std::string error_message(const std::string& body, std::string* code) {
  json_error_t je;
  json_t* j = json_loadb(body.data(), body.size(), 0, &je);
  std::string msg = body.substr(0, 300);
  const char *m = nullptr, *cd = nullptr;
  if (j != nullptr && json_unpack(j, "{s:{s:s, s:s}}", "error", "code", &cd, "message", &m) == 0) {
    msg = m;
    *code = cd;
  }
  json_decref(j);
  return msg;
}

int print_layout(json_t* j, bool as_json) {
  if (as_json) {
    char* s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s == nullptr) return die(1, "out of memory");
    std::printf("%s\n", s);
    std::free(s);
    return 0;
  }
  const json_int_t self = json_integer_value(json_object_get(j, "part"));
  json_t* parts = json_object_get(j, "parts");
  std::printf("FLEXCO_WORLD_SIZE=%lld\n", (long long)json_integer_value(json_object_get(j, "world_size")));
  std::printf("FLEXCO_RDV_PARTS=%zu\n", json_array_size(parts));
  std::size_t i;
  json_t* p;
  json_array_foreach(parts, i, p) {
    const json_int_t idx = json_integer_value(json_object_get(p, "index"));
    const json_int_t ranks = json_integer_value(json_object_get(p, "ranks"));
    const json_int_t off = json_integer_value(json_object_get(p, "rank_offset"));
    const char* contact = json_string_value(json_object_get(p, "contact"));
    const char* nodes = json_string_value(json_object_get(p, "nodes"));
    const char* cluster = json_string_value(json_object_get(p, "cluster"));
    if (idx == self) {
      std::printf("FLEXCO_RANK_OFFSET=%lld\nFLEXCO_PART_RANKS=%lld\n", (long long)off, (long long)ranks);
    }
    std::printf("FLEXCO_RDV_PART_%lld_CLUSTER=%s\n", (long long)idx, sh_quote(cluster ? cluster : "").c_str());
    std::printf("FLEXCO_RDV_PART_%lld_NODES=%s\n", (long long)idx, sh_quote(nodes ? nodes : "").c_str());
    std::printf("FLEXCO_RDV_PART_%lld_RANKS=%lld\n", (long long)idx, (long long)ranks);
    std::printf("FLEXCO_RDV_PART_%lld_OFFSET=%lld\n", (long long)idx, (long long)off);
    std::printf("FLEXCO_RDV_PART_%lld_CONTACT=%s\n", (long long)idx, sh_quote(contact ? contact : "").c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : die(1, "cannot write the layout");
}

}  // namespace

int main(int argc, char** argv) {
  std::string contact, contact_file, nodes = env("SLURM_JOB_NODELIST"), url = env("FLEXCO_RENDEZVOUS_URL");
  std::string cacert = env("FLEXCO_RENDEZVOUS_CAFILE");
  long long ranks = 0, timeout = 300;
  bool as_json = false;
  if (!env("SLURM_NTASKS").empty()) ranks = std::atoll(env("SLURM_NTASKS").c_str());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--contact" && value(&contact)) {
    } else if (a == "--contact-file" && value(&contact_file)) {
    } else if (a == "--nodes" && value(&nodes)) {
    } else if (a == "--url" && value(&url)) {
    } else if (a == "--cacert" && value(&cacert)) {
    } else if (a == "--ranks" && value(&v)) {
      char* end = nullptr;
      ranks = std::strtoll(v.c_str(), &end, 10);
      if (*end || ranks < 1 || ranks > 1000000) return die(1, "--ranks: 1..1000000");
    } else if (a == "--timeout" && value(&v)) {
      char* end = nullptr;
      timeout = std::strtoll(v.c_str(), &end, 10);
      if (*end || timeout < 1 || timeout > 86400) return die(1, "--timeout: 1..86400 seconds");
    } else if (a == "--json") {
      as_json = true;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 1;
    }
  }
  if (!contact_file.empty()) {
    std::ifstream f(contact_file);
    std::stringstream ss;
    if (!f || !(ss << f.rdbuf())) return die(1, "--contact-file " + contact_file + ": cannot read it");
    contact = ss.str();
    while (!contact.empty() && (contact.back() == '\n' || contact.back() == '\r')) contact.pop_back();
  }
  const std::string token = env("FLEXCO_RENDEZVOUS_TOKEN");
  const std::string co = env("FLEXCO_COALLOCATION");
  const std::string part = env("FLEXCO_PART_INDEX");
  if (url.empty() || token.empty() || co.size() < 4 || co.compare(0, 3, "co-") != 0 || part.empty()) {
    return die(1, "not in a part job of a co-allocation with a rendezvous (FLEXCO_RENDEZVOUS_URL, "
                  "FLEXCO_RENDEZVOUS_TOKEN, FLEXCO_COALLOCATION, FLEXCO_PART_INDEX)");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  const std::string id = co.substr(3);

  json_t* b = json_object();
  json_object_set_new(b, "contact", json_string(contact.c_str()));
  if (!nodes.empty()) json_object_set_new(b, "nodes", json_string(nodes.c_str()));
  if (ranks > 0) json_object_set_new(b, "ranks", json_integer(ranks));
  char* bs = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  if (bs == nullptr) return die(1, "the contact is not valid UTF-8");
  const std::string body = bs;
  std::free(bs);

  curl_global_init(CURL_GLOBAL_DEFAULT);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  bool registered = false;
  std::string last = "no answer yet";
  while (std::chrono::steady_clock::now() < until) {
    const long left = static_cast<long>(
        std::chrono::duration_cast<std::chrono::seconds>(until - std::chrono::steady_clock::now()).count());
    const std::string w = "?wait=" + std::to_string(std::max(0L, std::min<long>(kWait, left - 2)));
    // a request ends with --timeout at the latest (a link that never answers)
    const long limit = std::max(1L, std::min<long>(kWait + 10, left));
    const Reply r = registered ? call("GET", url + "/v1/rendezvous/" + id + w, token, "", cacert, limit)
                               : call("POST", url + "/v1/rendezvous/" + id + "/parts/" + part + w,
                                      token, body, cacert, limit);
    if (r.status == 0) {
      last = "flexcod at " + url + " does not answer: " + r.transport;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (r.status == 200) {
      registered = true;
      json_error_t je;
      json_t* j = json_loadb(r.body.data(), r.body.size(), 0, &je);
      if (j == nullptr) return die(4, "flexcod's answer is not JSON");
      if (json_is_true(json_object_get(j, "complete"))) {
        const int rc = print_layout(j, as_json);
        json_decref(j);
        return rc;
      }
      last = "waiting: " + std::to_string(json_integer_value(json_object_get(j, "registered"))) + " of " +
             std::to_string(json_array_size(json_object_get(j, "parts"))) + " parts registered";
      json_decref(j);
      continue;
    }
    std::string code;
    const std::string msg = error_message(r.body, &code);
    if (code == "rendezvous_aborted" || code == "token_expired" || code == "not_started") {
      return die(3, "the rendezvous of " + co + " is over: " + msg);
    }
    if (r.status >= 500) {
      last = "flexcod answered " + std::to_string(r.status) + ": " + msg;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    return die(4, "flexcod refused part " + part + " of " + co + " (" + std::to_string(r.status) +
                      "): " + msg);
  }
  return die(2, "timed out after " + std::to_string(timeout) + " s (--timeout): " + last);
}
