// SPDX-License-Identifier: GPL-2.0-or-later
// sreserve - the user command of FlexCo for Slurm (sreserve(1)).
//
// main() reads the command line and flexcod.conf, makes the HTTP calls
// (MUNGE-signed as the invoking user, core/http_client.hpp), records every
// answer in one JSON "exchange" and hands it to the formatting layer
// (views.hpp), which decides what is printed and the exit code.

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>

#include "core/auth.hpp"
#include "core/flexcod_conf.hpp"
#include "core/http_client.hpp"
#include "sreserve/cli.hpp"
#include "sreserve/gantt.hpp"
#include "sreserve/timefmt.hpp"
#include "sreserve/views.hpp"

extern char** environ;

namespace {

using namespace sreserve;
namespace http = flexco::http;

constexpr const char* kDefaultMungeSocket = "/run/munge/munge.socket.2";

struct JDel {
  void operator()(json_t* j) const { json_decref(j); }
};
using J = std::unique_ptr<json_t, JDel>;

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "sreserve: error: %s\n", msg.c_str());
  return code;
}

std::string env_or(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? v : dflt;
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// A fresh Idempotency-Key for a submission: "sreserve-" and 32 random hex
// digits; "" if /dev/urandom cannot be read.
std::string submit_key() {
  unsigned char b[16];
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (f == nullptr) return "";
  const bool ok = std::fread(b, 1, sizeof b, f) == sizeof b;
  std::fclose(f);
  if (!ok) return "";
  std::string k = "sreserve-";
  char h[3];
  for (unsigned char c : b) {
    std::snprintf(h, sizeof h, "%02x", c);
    k += h;
  }
  return k;
}

struct Caller {
  std::optional<flexco::auth::Signer> signer;
  int verbose = 0;
  long timeout_ms = 10000;
  std::string ca_file;  // for https URLs: FLEXCO_TLS_CA_FILE, else TLSCAFile
  // One client per service and address list, kept for the run: its
  // kept-alive connections and its session (doc/auth.md, "Request
  // sessions") serve every call of a command to that service.
  mutable std::map<std::string, http::Client> clients;  // clients_mutex
  mutable std::mutex clients_mutex;                     // calls run in threads

  // One call, recorded as a CALL of the exchange (views.hpp).
  // With an `idempotency_key` the request carries it as Idempotency-Key and
  // is sent again, with the same key, when the connection could not be made
  // or broke before an answer (up to kKeyedRetries times, about a minute).
  J call(const std::string& target, const std::string& base_url, const std::string& method,
         const std::string& path, const std::string& body, long timeout_ms = 0,
         const std::string& idempotency_key = "",
         const std::vector<std::string>* other_urls = nullptr) const {
    J rec(json_object());
    json_object_set_new(rec.get(), "target", json_string(target.c_str()));
    json_object_set_new(rec.get(), "url", json_string(base_url.c_str()));
    json_object_set_new(rec.get(), "path", json_string(path.c_str()));
    if (verbose > 0)
      std::fprintf(stderr, "sreserve: %s %s%s%s%s\n", method.c_str(), base_url.c_str(), path.c_str(),
                   body.empty() ? "" : " ", verbose > 1 ? body.c_str() : "");
    http::ClientConfig cc;
    cc.base_url = base_url;
    // A cluster's other controllers (flexcod.conf URL=a,b): tried in turn.
    if (other_urls != nullptr) cc.other_urls = *other_urls;
    // flexcod at several addresses (FlexcodURL=a,b, --url a,b: several
    // flexcods on one database, doc/flexcod.md "High availability"): one
    // that does not answer or is a standby (503 not_in_charge) is left
    // for the next.
    std::vector<std::string> all_urls;
    if (other_urls == nullptr && base_url.find(',') != std::string::npos) {
      std::stringstream ss(base_url);
      std::string u;
      while (std::getline(ss, u, ','))
        if (!u.empty()) all_urls.push_back(u);
      if (!all_urls.empty()) {
        cc.base_url = all_urls[0];
        cc.other_urls.assign(all_urls.begin() + 1, all_urls.end());
      }
    }
    // Signed for the service asked (doc/auth.md, "Audience"): a cluster's
    // name from flexcod.conf (its ClusterName), or "flexcod".
    cc.audience = target;
    cc.total_timeout_ms = this->timeout_ms;
    cc.ca_file = ca_file;
    cc.session = true;
    std::string id = target + "\n" + base_url;
    if (other_urls != nullptr)
      for (const auto& u : *other_urls) id += "\n" + u;
    std::unique_lock<std::mutex> lock(clients_mutex);
    auto kept = clients.find(id);
    if (kept == clients.end()) {
      auto made = http::Client::create(cc, signer);
      if (!made.ok()) {
        json_object_set_new(rec.get(), "code", json_string(http::errc_name(made.error().code)));
        json_object_set_new(rec.get(), "error", json_string(made.error().message.c_str()));
        return rec;
      }
      kept = clients.emplace(id, std::move(made).value()).first;
    }
    const http::Client* client = &kept->second;  // std::map: stays where it is
    std::optional<http::Client> followed;        // the flexcod in charge, when a standby named it
    lock.unlock();
    const long per_call = timeout_ms > 0 ? timeout_ms : 0;  // 0: the client's
    std::vector<http::Header> headers;
    if (!idempotency_key.empty()) headers.push_back({"Idempotency-Key", idempotency_key});
    auto r = client->request(method, path, body, headers, per_call);
    static const int kBackoff[] = {1, 2, 4, 8, 15, 15, 15};
    // A standby's 503 not_in_charge: nothing was done, so the request is
    // sent again (with its Idempotency-Key, if any) to the flexcod in
    // charge it names, else after a pause, while another takes over.
    auto standby = [](const http::Result<http::Response>& a, std::string* leader) {
      if (!a.ok() || a.value().status != 503 || !a.value().json) return false;
      const json_t* e = json_object_get(a.value().json.get(), "error");
      const char* code = json_string_value(json_object_get(e, "code"));
      if (code == nullptr || std::string(code) != "not_in_charge") return false;
      const char* l = json_string_value(json_object_get(e, "leader"));
      *leader = l != nullptr ? l : "";
      return true;
    };
    for (int sleep_s : kBackoff) {
      std::string leader;
      const bool refused = standby(r, &leader);
      const bool unreached = !r.ok() && !idempotency_key.empty() &&
                             (r.error().code == http::Errc::kConnect || r.error().code == http::Errc::kTransport);
      if (!refused && !unreached) break;
      if (refused && !leader.empty() && leader != cc.base_url) {
        // the one in charge first, then the others as configured
        http::ClientConfig lc = cc;
        lc.base_url = leader;
        lc.other_urls.clear();
        lc.other_urls.push_back(cc.base_url);
        for (const auto& u : cc.other_urls)
          if (u != leader) lc.other_urls.push_back(u);
        if (lc.other_urls.size() > http::Client::kMaxUrls - 1) lc.other_urls.resize(http::Client::kMaxUrls - 1);
        auto next = http::Client::create(lc, signer);
        if (next.ok()) {
          if (verbose > 0) {
            std::fprintf(stderr, "sreserve: %s: not in charge; asking %s, the flexcod in charge\n",
                         target.c_str(), leader.c_str());
          }
          cc = lc;
          followed.emplace(std::move(next).value());
          client = &*followed;
          r = client->request(method, path, body, headers, per_call);
          if (!standby(r, &leader)) continue;  // answered (or not reached): judged above
        }
      }
      if (verbose > 0) {
        std::fprintf(stderr, "sreserve: %s: %s; retrying in %d s%s%s\n", target.c_str(),
                     refused ? "no flexcod in charge answered" : r.error().message.c_str(), sleep_s,
                     idempotency_key.empty() ? "" : " with Idempotency-Key ", idempotency_key.c_str());
      }
      std::this_thread::sleep_for(std::chrono::seconds(sleep_s));
      r = client->request(method, path, body, headers, per_call);
    }
    if (!r.ok()) {
      json_object_set_new(rec.get(), "code", json_string(http::errc_name(r.error().code)));
      json_object_set_new(rec.get(), "error", json_string(r.error().message.c_str()));
      if (verbose > 0) std::fprintf(stderr, "sreserve: %s: %s\n", target.c_str(), r.error().message.c_str());
      return rec;
    }
    const http::Response& resp = r.value();
    json_object_set_new(rec.get(), "status", json_integer(resp.status));
    if (resp.json) {
      json_object_set(rec.get(), "answer", resp.json.get());
    } else {
      J e(json_object());
      J inner(json_object());
      json_object_set_new(inner.get(), "code", json_string("bad_response"));
      json_object_set_new(inner.get(), "message",
                          json_string(("not JSON: HTTP " + std::to_string(resp.status) + " " +
                                       resp.body.substr(0, 200)).c_str()));
      json_object_set_new(e.get(), "error", inner.release());
      json_object_set_new(rec.get(), "answer", e.release());
    }
    if (verbose > 0) std::fprintf(stderr, "sreserve: %s: HTTP %d\n", target.c_str(), resp.status);
    if (verbose > 1) std::fprintf(stderr, "sreserve: %s: %s\n", target.c_str(), resp.body.c_str());
    return rec;
  }
};

int terminal_width() {
  struct winsize ws {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  const char* c = std::getenv("COLUMNS");
  if (c && std::atoi(c) > 0) return std::atoi(c);
  return 80;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// The environment for the part jobs (--export, as sbatch).
J build_environment(const std::string& spec, std::string* error) {
  J env(json_object());
  auto allowed = [](const std::string& name) {
    if (name.empty() || name.rfind("SLURM_", 0) == 0 || name.rfind("FLEXCO_", 0) == 0) return false;
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return !std::isdigit(static_cast<unsigned char>(name[0]));
  };
  std::vector<std::string> items;
  std::string cur;
  for (char c : spec + ",") {
    if (c == ',') {
      if (!cur.empty()) items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  for (const auto& item : items) {
    if (item == "ALL") {
      for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        std::string name = kv.substr(0, eq);
        if (allowed(name)) json_object_set_new(env.get(), name.c_str(), json_string(kv.substr(eq + 1).c_str()));
      }
    } else if (item == "NONE") {
      continue;
    } else {
      auto eq = item.find('=');
      std::string name = item.substr(0, eq);
      if (!allowed(name)) {
        *error = "--export: \"" + name + "\" cannot be exported (SLURM_* and FLEXCO_* are set per part)";
        return nullptr;
      }
      if (eq != std::string::npos) {
        json_object_set_new(env.get(), name.c_str(), json_string(item.substr(eq + 1).c_str()));
      } else if (const char* v = std::getenv(name.c_str())) {
        json_object_set_new(env.get(), name.c_str(), json_string(v));
      }
    }
  }
  return env;
}

std::string text(const json_t* j) {
  char* s = json_dumps(j, JSON_COMPACT);
  std::string out = s ? s : "";
  std::free(s);
  return out;
}

// -p, -A or -q as flexcod takes it (doc/flexcod.md): a string for every
// cluster, or an object of cluster: value with "*" for the others.
json_t* cluster_value_json(const ClusterValue& v) {
  if (v.by.empty()) return json_string(v.all.c_str());
  json_t* o = json_object();
  for (const auto& kv : v.by) json_object_set_new(o, kv.first.c_str(), json_string(kv.second.c_str()));
  if (!v.all.empty()) json_object_set_new(o, "*", json_string(v.all.c_str()));
  return o;
}

J clusters_array(const std::vector<std::string>& names) {
  J a(json_array());
  for (const auto& n : names) json_array_append_new(a.get(), json_string(n.c_str()));
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  // Before any thread: the clusters are asked in parallel.
  curl_global_init(CURL_GLOBAL_DEFAULT);
  ParseResult pr = parse_args(argc, argv, now);
  if (!pr.ok) {
    std::fprintf(stderr, "sreserve: error: %s\nTry \"sreserve --help\" for more information\n",
                 pr.error.c_str());
    return kExitUsage;
  }
  Options o = pr.options;
  if (o.version) {
    std::fputs(version_text().c_str(), stdout);
    return kExitOk;
  }
  if (o.help || o.usage) {
    std::fputs((o.help ? help_text(o.command) : usage_text(o.command)).c_str(), stdout);
    return kExitOk;
  }
  std::string format_error;
  if (!apply_environment(&o, [](const char* n) -> const char* { return std::getenv(n); },
                         &format_error))
    return fail(kExitUsage, format_error);
  if (!check_format(o, &format_error)) return fail(kExitUsage, format_error);
  if (const char* tf = std::getenv("SLURM_TIME_FORMAT"); tf && !set_time_format(tf, now, &format_error))
    return fail(kExitUsage, format_error);
  if (o.command == Command::kSubmit && !o.script_path.empty()) {
    // #SBATCH lines: under the command line, as sbatch (cli.hpp).
    std::string script, err;
    if (!read_file(o.script_path, &script))
      return fail(kExitUsage, "cannot read batch script " + o.script_path + ": " + std::strerror(errno));
    std::vector<std::string> warnings;
    bool ok = apply_script_directives(script, &o, &warnings, &err);
    for (const auto& w : warnings) std::fprintf(stderr, "sreserve: warning: %s\n", w.c_str());
    if (!ok) return fail(kExitUsage, err);
  }
  if (o.helpformat || o.helpformat_long) {
    std::fputs(render(o, nullptr).out.c_str(), stdout);
    return kExitOk;
  }

  // flexcod.conf: the clusters, the daemon's address, munged's socket.
  std::string conf_path = flexco::conf::choose_path(o.conf, std::getenv(flexco::conf::kPathEnv));
  auto conf = flexco::conf::read_file(conf_path);
  bool need_clusters = o.command == Command::kOffers || o.command == Command::kProfile;
  std::string daemon_url = !o.url.empty() ? o.url : env_or("FLEXCO_URL", "");
  if (!conf.ok() && (need_clusters || daemon_url.empty()))
    return fail(kExitConfig, "cannot use " + conf_path + ": " + conf.error().message +
                                 (need_clusters ? "" : " (or give --url / FLEXCO_URL)"));
  if (daemon_url.empty() && conf.ok()) {
    // every flexcod of the grid (FlexcodURL=a,b): tried in turn
    for (const auto& u : conf.value().flexcod_urls) daemon_url += (daemon_url.empty() ? "" : ",") + u;
    if (daemon_url.empty()) daemon_url = conf.value().flexcod_url;
  }
  if (daemon_url.empty() && conf.ok()) {
    std::string host = conf.value().listen_address;
    if (host == "0.0.0.0") host = "127.0.0.1";
    if (host == "::") host = "::1";
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    daemon_url = "http://" + host + ":" + std::to_string(conf.value().listen_port);
  }
  std::string socket = !o.munge_socket.empty()
                           ? o.munge_socket
                           : env_or("FLEXCO_MUNGE_SOCKET",
                                    conf.ok() && !conf.value().munge_socket.empty()
                                        ? conf.value().munge_socket
                                        : kDefaultMungeSocket);
  auto signer = flexco::auth::Signer::create({socket, 0});
  if (!signer.ok()) return fail(kExitUsage, "--munge-socket: " + signer.error().message);

  Caller caller;
  caller.signer = signer.value();
  caller.verbose = o.verbose;
  if (conf.ok()) caller.timeout_ms = conf.value().request_timeout * 1000L;
  caller.ca_file = env_or("FLEXCO_TLS_CA_FILE", conf.ok() ? conf.value().tls_ca_file : "");

  // The clusters asked, in -M order (default: flexcod.conf's order).
  std::vector<flexco::conf::ClusterConf> chosen;
  if (need_clusters) {
    const auto& all = conf.value().clusters;
    if (o.clusters.empty()) {
      chosen = all;
    } else {
      for (const auto& name : o.clusters) {
        auto it = std::find_if(all.begin(), all.end(), [&](const auto& c) { return c.name == name; });
        if (it == all.end()) {
          std::string known;
          for (const auto& c : all) known += (known.empty() ? "" : ", ") + c.name;
          return fail(kExitUsage, "-M: no cluster named \"" + name + "\" in " + conf_path +
                                      " (clusters: " + known + ")");
        }
        chosen.push_back(*it);
      }
    }
  }

  J ex(json_object());
  json_object_set_new(ex.get(), "now", json_integer(now));
  J clusters(json_array());
  J daemon(json_array());
  std::int64_t limit = std::max<std::int64_t>(60, round_up_minutes(o.duration));

  switch (o.command) {
    case Command::kOffers: {
      std::vector<std::int64_t> counts = probe_counts(o, chosen.size());
      // Every cluster is probed at once: one slow cluster costs its own
      // timeout, not the sum of all.
      std::vector<J> answers(chosen.size());
      std::vector<std::thread> threads;
      for (std::size_t k = 0; k < chosen.size(); ++k) {
        const auto& c = chosen[k];
        J req(json_object());
        J n(json_array());
        for (auto count : counts) json_array_append_new(n.get(), json_integer(count));
        json_object_set_new(req.get(), "nodes", n.release());
        json_object_set_new(req.get(), "duration", json_integer(o.duration));
        if (o.begin) json_object_set_new(req.get(), "earliest_start", json_integer(o.begin));
        if (o.deadline) json_object_set_new(req.get(), "latest_end", json_integer(o.deadline));
        json_object_set_new(req.get(), "max_offers", json_integer(o.max_offers));
        // -p for this cluster, else -p for all, else flexcod.conf's Partition
        std::string part = o.partition.get(c.name, c.partition);
        if (!part.empty()) json_object_set_new(req.get(), "partition", json_string(part.c_str()));
        std::string body = text(req.get());
        threads.emplace_back([&caller, &answers, k, c, body]() {
          answers[k] = caller.call(c.name, c.url, "POST", "/v1/probe", body, 0, "", &c.other_urls);
        });
      }
      for (auto& th : threads) th.join();
      for (auto& a : answers) json_array_append_new(clusters.get(), a.release());
      J dry(json_object());
      json_object_set_new(dry.get(), "nodes", json_integer(o.nodes_max));
      json_object_set_new(dry.get(), "duration", json_integer(limit));
      if (o.begin) json_object_set_new(dry.get(), "ready", json_integer(o.begin));
      if (o.deadline) json_object_set_new(dry.get(), "deadline", json_integer(o.deadline));
      if (!o.clusters.empty())
        json_object_set_new(dry.get(), "clusters", clusters_array(o.clusters).release());
      if (o.max_parts) json_object_set_new(dry.get(), "max_parts", json_integer(o.max_parts));
      if (!o.policy.empty()) json_object_set_new(dry.get(), "policy", json_string(o.policy.c_str()));
      if (o.overhead >= 0) json_object_set_new(dry.get(), "overhead", json_real(o.overhead));
      if (o.partition.given()) json_object_set_new(dry.get(), "partition", cluster_value_json(o.partition));
      json_object_set_new(dry.get(), "dry_run", json_true());
      json_array_append_new(daemon.get(), caller.call("flexcod", daemon_url, "POST",
                                                      "/v1/coallocations", text(dry.get()))
                                              .release());
      break;
    }
    case Command::kProfile: {
      if (o.width == 0) o.width = std::max(20, std::min(terminal_width() - 8, 200));
      std::vector<J> answers(chosen.size());
      std::vector<std::thread> threads;
      for (std::size_t k = 0; k < chosen.size(); ++k) {
        const auto& c = chosen[k];
        std::string path = "/v1/profile?horizon=" + std::to_string(o.horizon);
        // -p for this cluster, else -p for all, else flexcod.conf's Partition
        std::string part = o.partition.get(c.name, c.partition);
        if (!part.empty()) path += "&partition=" + url_encode(part);
        threads.emplace_back([&caller, &answers, k, c, path]() {
          answers[k] = caller.call(c.name, c.url, "GET", path, "", 0, "", &c.other_urls);
        });
      }
      for (auto& th : threads) th.join();
      for (auto& a : answers) json_array_append_new(clusters.get(), a.release());
      break;
    }
    case Command::kSubmit: {
      J req(json_object());
      json_object_set_new(req.get(), "nodes", json_integer(o.nodes_max));
      json_object_set_new(req.get(), "duration", json_integer(limit));
      if (o.begin) json_object_set_new(req.get(), "ready", json_integer(o.begin));
      if (o.deadline) json_object_set_new(req.get(), "deadline", json_integer(o.deadline));
      if (!o.clusters.empty()) json_object_set_new(req.get(), "clusters", clusters_array(o.clusters).release());
      if (o.max_parts) json_object_set_new(req.get(), "max_parts", json_integer(o.max_parts));
      if (!o.policy.empty()) json_object_set_new(req.get(), "policy", json_string(o.policy.c_str()));
      if (o.overhead >= 0) json_object_set_new(req.get(), "overhead", json_real(o.overhead));
      if (o.partition.given()) json_object_set_new(req.get(), "partition", cluster_value_json(o.partition));
      if (o.account.given()) json_object_set_new(req.get(), "account", cluster_value_json(o.account));
      if (o.qos.given()) json_object_set_new(req.get(), "qos", cluster_value_json(o.qos));
      std::string script;
      if (!o.wrap.empty()) {
        script = "#!/bin/sh\n# This script was created by sreserve --wrap\n\n" + o.wrap + "\n";
      } else if (!o.script_path.empty()) {
        if (!read_file(o.script_path, &script))
          return fail(kExitUsage, "cannot read batch script " + o.script_path + ": " + std::strerror(errno));
        if (script.rfind("#!", 0) != 0)
          return fail(kExitUsage, "batch script " + o.script_path +
                                      " does not start with #! (e.g. #!/bin/sh)");
      }
      if (!script.empty()) {
        json_object_set_new(req.get(), "script", json_string(script.c_str()));
        J args(json_array());
        for (const auto& a : o.script_args) json_array_append_new(args.get(), json_string(a.c_str()));
        json_object_set_new(req.get(), "argv", args.release());
        std::string err;
        J env = build_environment(o.export_spec, &err);
        if (!env) return fail(kExitUsage, err);
        json_object_set_new(req.get(), "environment", env.release());
        std::string dir = o.chdir;
        if (dir.empty() || dir[0] != '/') {
          char cwd[4096];
          if (!getcwd(cwd, sizeof cwd)) return fail(kExitError, std::string("getcwd: ") + std::strerror(errno));
          dir = dir.empty() ? cwd : std::string(cwd) + "/" + dir;
        }
        json_object_set_new(req.get(), "work_dir", json_string(dir.c_str()));
        if (!o.output.empty()) json_object_set_new(req.get(), "std_out", json_string(o.output.c_str()));
        if (!o.error.empty()) json_object_set_new(req.get(), "std_err", json_string(o.error.c_str()));
        if (!o.job_name.empty()) json_object_set_new(req.get(), "name", json_string(o.job_name.c_str()));
      }
      if (o.test_only) json_object_set_new(req.get(), "dry_run", json_true());
      // Submission is synchronous: every part reserved, confirmed, submitted.
      // One key per invocation: a retry after a lost connection returns the
      // co-allocation the first attempt made instead of making a second.
      std::string key;
      if (!o.test_only) {
        key = submit_key();
        if (key.empty()) return fail(kExitError, std::string("/dev/urandom: ") + std::strerror(errno));
      }
      json_array_append_new(daemon.get(), caller.call("flexcod", daemon_url, "POST", "/v1/coallocations",
                                                      text(req.get()), 180000, key)
                                              .release());
      break;
    }
    case Command::kList: {
      std::string path = "/v1/coallocations";
      std::string q;
      if (!o.state.empty()) q += "state=" + url_encode(o.state);
      if (!o.user.empty()) q += std::string(q.empty() ? "" : "&") + "user=" + url_encode(o.user);
      if (!q.empty()) path += "?" + q;
      json_array_append_new(daemon.get(), caller.call("flexcod", daemon_url, "GET", path, "").release());
      break;
    }
    case Command::kShow: {
      J got = caller.call("flexcod", daemon_url, "GET", "/v1/coallocations/" + std::to_string(o.ids[0]), "");
      const json_t* co = json_object_get(got.get(), "answer");
      json_int_t status = json_integer_value(json_object_get(got.get(), "status"));
      if ((o.chart || !o.svg.empty()) && status == 200 && conf.ok()) {
        // The Gantt's free nodes: the profile of every cluster the
        // co-allocation was placed on (those flexcod.conf names), in
        // parallel, as profile asks them.
        std::int64_t horizon = gantt_horizon(co, now);
        std::vector<flexco::conf::ClusterConf> on;
        for (const auto& name : gantt_clusters(co))
          for (const auto& c : conf.value().clusters)
            if (c.name == name) on.push_back(c);
        std::vector<J> answers(on.size());
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < on.size(); ++k) {
          std::string path = "/v1/profile?horizon=" + std::to_string(horizon);
          if (!on[k].partition.empty()) path += "&partition=" + url_encode(on[k].partition);
          threads.emplace_back([&caller, &answers, &on, k, path]() {
            answers[k] = caller.call(on[k].name, on[k].url, "GET", path, "", 0, "", &on[k].other_urls);
          });
        }
        for (auto& th : threads) th.join();
        for (auto& a : answers) json_array_append_new(clusters.get(), a.release());
      }
      json_array_append_new(daemon.get(), got.release());
      break;
    }
    case Command::kUpdate: {
      J req(json_object());
      if (o.deadline_none) json_object_set_new(req.get(), "deadline", json_null());
      else if (o.deadline) json_object_set_new(req.get(), "deadline", json_integer(o.deadline));
      if (!o.clusters.empty()) json_object_set_new(req.get(), "clusters", clusters_array(o.clusters).release());
      json_array_append_new(daemon.get(), caller.call("flexcod", daemon_url, "PATCH",
                                                      "/v1/coallocations/" + std::to_string(o.ids[0]),
                                                      text(req.get()), 180000)
                                              .release());
      break;
    }
    case Command::kUi: {
      // The address printed is the one sreserve reached flexcod at.
      json_object_set_new(ex.get(), "url", json_string(daemon_url.c_str()));
      std::string req;
      if (o.duration > 0) {
        J b(json_object());
        json_object_set_new(b.get(), "lifetime", json_integer(o.duration));
        req = text(b.get());
      }
      json_array_append_new(daemon.get(),
                            caller.call("flexcod", daemon_url, "POST", "/v1/ui/tokens", req).release());
      break;
    }
    case Command::kCancel:
      for (auto id : o.ids)
        json_array_append_new(daemon.get(), caller.call("flexcod", daemon_url, "DELETE",
                                                        "/v1/coallocations/" + std::to_string(id), "",
                                                        180000)
                                                .release());
      break;
    default:
      break;
  }
  json_object_set_new(ex.get(), "clusters", clusters.release());
  json_object_set_new(ex.get(), "daemon", daemon.release());
  if (std::getenv("SRESERVE_RECORD")) {
    // Developers: save the exchange to make a golden test case.
    std::ofstream rec(std::getenv("SRESERVE_RECORD"));
    char* s = json_dumps(ex.get(), JSON_INDENT(1));
    if (s) rec << s << "\n";
    std::free(s);
  }

  if (o.iterate > 0) {
    // squeue -i: a time line, the table, again every N seconds until
    // interrupted (only list and show take -i).
    std::string path = json_string_value(
        json_object_get(json_array_get(json_object_get(ex.get(), "daemon"), 0), "path"));
    for (;;) {
      std::time_t t = std::time(nullptr);
      char stamp[64];
      std::strftime(stamp, sizeof stamp, "%a %b %d %H:%M:%S %Y", std::localtime(&t));
      json_object_set_new(ex.get(), "now", json_integer(static_cast<std::int64_t>(t)));
      Output out = render(o, ex.get());
      std::printf("%s\n%s", stamp, out.out.c_str());
      std::fputs(out.err.c_str(), stderr);
      std::fflush(stdout);
      if (out.exit_code != kExitOk) return out.exit_code;
      std::this_thread::sleep_for(std::chrono::seconds(o.iterate));
      J again(json_array());
      json_array_append_new(again.get(), caller.call("flexcod", daemon_url, "GET", path, "").release());
      json_object_set_new(ex.get(), "daemon", again.release());
    }
  }
  Output out = render(o, ex.get());
  std::fputs(out.out.c_str(), stdout);
  std::fputs(out.err.c_str(), stderr);
  if (!out.svg.empty()) {
    std::ofstream f(o.svg, std::ios::binary | std::ios::trunc);
    f << out.svg;
    f.flush();
    if (!f) return fail(kExitError, "cannot write " + o.svg + ": " + std::strerror(errno));
  }
  std::fflush(stdout);
  return out.exit_code;
}
