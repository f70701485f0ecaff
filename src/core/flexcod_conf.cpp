// SPDX-License-Identifier: GPL-2.0-or-later
// flexcod_conf.cpp - parser of flexcod.conf (see flexcod_conf.hpp).

#include "core/flexcod_conf.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace flexco::conf {

namespace {

const char* const kLevels[] = {"quiet", "fatal", "error", "info", "verbose",
                               "debug", "debug2", "debug3", "debug4", "debug5"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Pair {
  std::string key;    // lower case
  std::string shown;  // as written
  std::string value;
};

class Parser {
 public:
  Parser(std::string_view source) : source_(source) {}

  Error err(int line, const std::string& what) const {
    return Error{line, source_ + ":" + std::to_string(line) + ": " + what};
  }

  // Split one line into pairs; false with *e set on a syntax error.
  bool split(std::string_view text, int line, std::vector<Pair>* out, Error* e) const {
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (true) {
      while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
      if (i >= n || text[i] == '#') return true;
      const std::size_t k0 = i;
      while (i < n && text[i] != '=' && text[i] != ' ' && text[i] != '\t' && text[i] != '#') ++i;
      if (i >= n || text[i] != '=') {
        *e = err(line, "expected Key=Value, got '" + std::string(text.substr(k0, i - k0)) + "'");
        return false;
      }
      Pair p;
      p.shown = std::string(text.substr(k0, i - k0));
      p.key = lower(p.shown);
      if (p.key.empty()) {
        *e = err(line, "missing key before '='");
        return false;
      }
      ++i;  // '='
      if (i < n && text[i] == '"') {
        const std::size_t close = text.find('"', i + 1);
        if (close == std::string_view::npos) {
          *e = err(line, p.shown + ": unterminated quoted value");
          return false;
        }
        p.value = std::string(text.substr(i + 1, close - i - 1));
        i = close + 1;
        if (i < n && text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '#') {
          *e = err(line, p.shown + ": text after the closing quote");
          return false;
        }
      } else {
        const std::size_t v0 = i;
        while (i < n && text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '#') ++i;
        p.value = std::string(text.substr(v0, i - v0));
      }
      out->push_back(std::move(p));
    }
  }

  std::string source_;
};

bool parse_int(const std::string& v, long long lo, long long hi, long long* out) {
  if (v.empty() || v.size() > 19) return false;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  }
  errno = 0;
  const long long x = std::strtoll(v.c_str(), nullptr, 10);
  if (errno != 0 || x < lo || x > hi) return false;
  *out = x;
  return true;
}

bool valid_cluster_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

bool valid_url(const std::string& u) {
  const std::string p = u.compare(0, 8, "https://") == 0 ? "https://" : "http://";
  if (u.size() <= p.size() || u.compare(0, p.size(), p) != 0) return false;
  const std::string rest = u.substr(p.size());
  if (rest.empty()) return false;
  for (char c : rest) {
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '@') return false;
  }
  return true;
}

bool valid_path(const std::string& s) {
  return !s.empty() && s[0] == '/' && s.find('\0') == std::string::npos && s.size() < 4096;
}

bool valid_user(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '$';
  });
}

}  // namespace

const char* debug_level_name(int level) noexcept {
  if (level < 0 || level > 9) return "unknown";
  return kLevels[level];
}

int debug_level_from_name(std::string_view name) noexcept {
  try {
    const std::string l = lower(name);
    for (int i = 0; i <= 9; ++i) {
      if (l == kLevels[i]) return i;
    }
  } catch (...) {
  }
  return -1;
}

// Set by configure (--with-flexcod-conf) through src/Makefile.am; builds
// without it (contrib/fuzz) get the historical default.
#ifndef FLEXCOD_CONF_DEFAULT
#define FLEXCOD_CONF_DEFAULT "/etc/slurm/flexcod.conf"
#endif
const char* const kDefaultPath = FLEXCOD_CONF_DEFAULT;

#ifndef FLEXCO_UI_DIR_DEFAULT
#define FLEXCO_UI_DIR_DEFAULT "/usr/local/share/flexco/ui"
#endif
const char* const kDefaultUiDir = FLEXCO_UI_DIR_DEFAULT;

std::string choose_path(const std::string& cli, const char* env) {
  if (!cli.empty()) return cli;
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultPath;
}

Result<FlexcodConf> parse(std::string_view text, std::string_view source) {
  Parser parser(source);
  FlexcodConf c;
  std::set<std::string> seen;       // scalar keys given so far
  std::set<std::string> names;      // cluster names, lower case
  int line = 0;
  int max_request_size_line = 0, max_request_memory_line = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view raw = text.substr(pos, eol - pos);
    ++line;
    pos = eol + 1;
    if (raw.find('\0') != std::string_view::npos) return parser.err(line, "NUL byte");
    std::vector<Pair> pairs;
    Error e;
    if (!parser.split(raw, line, &pairs, &e)) return e;
    if (pairs.empty()) {
      if (eol == text.size()) break;
      continue;
    }
    // A cluster line: Cluster=NAME URL=... [Partition=...]
    if (pairs[0].key == "cluster") {
      ClusterConf cl;
      cl.name = pairs[0].value;
      if (!valid_cluster_name(cl.name)) {
        return parser.err(line, "Cluster: name '" + cl.name + "' is not 1-64 of [A-Za-z0-9_-]");
      }
      if (lower(cl.name) == "flexcod") {
        // flexcod's own audience (doc/auth.md, "Audience"): a cluster of
        // that name could be sent requests signed for flexcod.
        return parser.err(line, "Cluster: 'flexcod' is reserved (flexcod's own audience)");
      }
      if (!names.insert(lower(cl.name)).second) {
        return parser.err(line, "Cluster: '" + cl.name + "' is defined twice");
      }
      bool have_url = false, have_part = false, have_rdv = false;
      for (std::size_t i = 1; i < pairs.size(); ++i) {
        const Pair& p = pairs[i];
        if (p.key == "url" && !have_url) {
          // URL=http://ctl1:26001,http://ctl2:26001: one per controller
          // of the cluster (SlurmctldHost order), one scheme for all.
          std::size_t from = 0;
          std::vector<std::string> urls;
          while (true) {
            const std::size_t comma = p.value.find(',', from);
            urls.push_back(p.value.substr(from, comma == std::string::npos ? std::string::npos
                                                                          : comma - from));
            if (comma == std::string::npos) break;
            from = comma + 1;
          }
          if (urls.size() > 8) return parser.err(line, "URL: at most 8 addresses");
          for (const auto& u : urls) {
            if (!valid_url(u)) {
              return parser.err(line, "URL: '" + u + "' is not http://host:port or https://host:port");
            }
            if ((u.compare(0, 8, "https://") == 0) != (urls[0].compare(0, 8, "https://") == 0)) {
              return parser.err(line, "URL: the addresses of one cluster must use one scheme");
            }
          }
          cl.url = urls[0];
          cl.other_urls.assign(urls.begin() + 1, urls.end());
          have_url = true;
        } else if (p.key == "partition" && !have_part) {
          if (p.value.empty()) return parser.err(line, "Partition: empty value");
          cl.partition = p.value;
          have_part = true;
        } else if (p.key == "rendezvousurl" && !have_rdv) {
          if (!valid_url(p.value)) {
            return parser.err(line, "RendezvousURL: '" + p.value +
                                        "' is not http://host:port or https://host:port");
          }
          cl.rendezvous_url = p.value;
          have_rdv = true;
        } else if (p.key == "url" || p.key == "partition" || p.key == "rendezvousurl") {
          return parser.err(line, p.shown + ": given twice for cluster " + cl.name);
        } else {
          return parser.err(line, "unknown key '" + p.shown + "' on a Cluster line "
                                  "(URL, Partition and RendezvousURL are allowed)");
        }
      }
      if (!have_url) return parser.err(line, "Cluster " + cl.name + ": URL= is required");
      c.clusters.push_back(std::move(cl));
      if (eol == text.size()) break;
      continue;
    }
    for (const Pair& p : pairs) {
      const std::string& k = p.key;
      const std::string& v = p.value;
      if (k == "cluster") return parser.err(line, "Cluster must start its own line");
      if (k == "url" || k == "partition" || k == "rendezvousurl") {
        return parser.err(line, p.shown + " is only allowed on a Cluster line");
      }
      if (!seen.insert(k).second) return parser.err(line, p.shown + ": given twice");
      long long n = 0;
      auto need_int = [&](long long lo, long long hi) -> bool { return parse_int(v, lo, hi, &n); };
      auto range = [&](long long lo, long long hi) {
        return parser.err(line, p.shown + ": '" + v + "' is not an integer in " +
                                    std::to_string(lo) + ".." + std::to_string(hi));
      };
      if (k == "listenaddress") {
        if (v.empty() || v.find_first_of(" /") != std::string::npos) {
          return parser.err(line, "ListenAddress: '" + v + "' is not an address");
        }
        c.listen_address = v;
      } else if (k == "flexcodurl") {
        // One address, or the addresses of several flexcods on one
        // database (doc/flexcod.md, "High availability"), comma-separated.
        std::vector<std::string> urls;
        std::stringstream ss(v);
        std::string u;
        while (std::getline(ss, u, ',')) {
          if (!valid_url(u)) {
            return parser.err(line, "FlexcodURL: '" + u + "' is not http://host:port or https://host:port");
          }
          urls.push_back(u);
        }
        if (urls.empty() || urls.size() > 8) {
          return parser.err(line, "FlexcodURL: 1 to 8 comma-separated addresses");
        }
        c.flexcod_url = urls[0];
        c.flexcod_urls = urls;
      } else if (k == "advertiseurl") {
        if (!valid_url(v)) {
          return parser.err(line, "AdvertiseURL: '" + v + "' is not http://host:port or https://host:port");
        }
        c.advertise_url = v;
      } else if (k == "leasetime") {
        if (!need_int(3, 300)) return range(3, 300);
        c.lease_time = static_cast<int>(n);
      } else if (k == "listenport") {
        if (!need_int(1, 65535)) return range(1, 65535);
        c.listen_port = static_cast<int>(n);
      } else if (k == "statefile" || k == "logfile" || k == "pidfile" || k == "mungesocket" ||
                 k == "metricstokenfile" || k == "tlscafile") {
        if (!valid_path(v)) return parser.err(line, p.shown + ": '" + v + "' is not an absolute path");
        if (k == "metricstokenfile") c.metrics_token_file = v;
        if (k == "tlscafile") c.tls_ca_file = v;
        if (k == "statefile") c.state_file = v;
        if (k == "logfile") c.log_file = v;
        if (k == "pidfile") c.pid_file = v;
        if (k == "mungesocket") c.munge_socket = v;
      } else if (k == "storagetype") {
        const std::string l = lower(v);
        if (l != "sqlite" && l != "postgresql") {
          return parser.err(line, "StorageType: '" + v + "' is not sqlite or postgresql");
        }
        c.storage_type = l;
      } else if (k == "storageloc") {
        if (v.empty()) return parser.err(line, "StorageLoc: empty value");
        c.storage_loc = v;
      } else if (k == "storagepassfile") {
        if (!valid_path(v)) return parser.err(line, p.shown + ": '" + v + "' is not an absolute path");
        c.storage_pass_file = v;
      } else if (k == "usermapfile") {
        if (!valid_path(v)) return parser.err(line, p.shown + ": '" + v + "' is not an absolute path");
        c.user_map_file = v;
      } else if (k == "adminusers") {
        c.admin_users.clear();
        std::stringstream ss(v);
        std::string u;
        while (std::getline(ss, u, ',')) {
          if (!valid_user(u)) return parser.err(line, "AdminUsers: '" + u + "' is not a user name");
          c.admin_users.push_back(u);
        }
        if (c.admin_users.empty()) return parser.err(line, "AdminUsers: empty list");
      } else if (k == "defaultpolicy") {
        const std::string l = lower(v);
        if (l != "flexco" && l != "coarp" && l != "hpcm" && l != "cores" && l != "cores-seq") {
          return parser.err(line, "DefaultPolicy: '" + v +
                                      "' is not one of flexco, coarp, hpcm, cores, cores-seq");
        }
        c.default_policy = l;
      } else if (k == "availabilitymode") {
        const std::string l = lower(v);
        if (l != "probe" && l != "publish") {
          return parser.err(line, "AvailabilityMode: '" + v + "' is not probe or publish");
        }
        c.availability_mode = l;
      } else if (k == "publishinterval") {
        if (!need_int(1, 86400)) return range(1, 86400);
        c.publish_interval = static_cast<int>(n);
      } else if (k == "reschedulemargin") {
        if (!need_int(0, 86400)) return range(0, 86400);
        c.reschedule_margin = static_cast<int>(n);
      } else if (k == "reschedulemode") {
        const std::string l = lower(v);
        if (l != "off" && l != "shift" && l != "remap") {
          return parser.err(line, "RescheduleMode: '" + v + "' is not off, shift or remap");
        }
        c.reschedule_mode = l;
      } else if (k == "reschedulewait") {
        if (!need_int(0, 3600)) return range(0, 3600);
        c.reschedule_wait = static_cast<int>(n);
      } else if (k == "maxmoves") {
        if (!need_int(0, 1000)) return range(0, 1000);
        c.max_moves = static_cast<int>(n);
      } else if (k == "connecttimeout") {
        if (!need_int(1, 600)) return range(1, 600);
        c.connect_timeout = static_cast<int>(n);
      } else if (k == "sessionlifetime") {
        if (!need_int(0, 86400)) return range(0, 86400);
        c.session_lifetime = static_cast<int>(n);
      } else if (k == "requesttimeout") {
        if (!need_int(1, 3600)) return range(1, 3600);
        c.request_timeout = static_cast<int>(n);
      } else if (k == "clustertimeout") {
        if (!need_int(1, 600)) return range(1, 600);
        c.cluster_timeout = static_cast<int>(n);
      } else if (k == "passprofilewait") {
        if (!need_int(0, 60000)) return range(0, 60000);
        c.pass_profile_wait = static_cast<int>(n);
      } else if (k == "breakerfailures") {
        if (!need_int(1, 1000)) return range(1, 1000);
        c.breaker_failures = static_cast<int>(n);
      } else if (k == "breakerbackoff") {
        if (!need_int(1, 3600)) return range(1, 3600);
        c.breaker_backoff = static_cast<int>(n);
      } else if (k == "confirmwithin") {
        if (!need_int(1, 3600)) return range(1, 3600);
        c.confirm_within = static_cast<int>(n);
      } else if (k == "maxreplans") {
        if (!need_int(0, 100)) return range(0, 100);
        c.max_replans = static_cast<int>(n);
      } else if (k == "maxparts") {
        if (!need_int(1, 64)) return range(1, 64);
        c.max_parts = static_cast<int>(n);
      } else if (k == "maxcoallocationsperuser") {
        if (!need_int(0, 100000)) return range(0, 100000);
        c.max_coallocations_per_user = static_cast<int>(n);
      } else if (k == "maxnodehoursperuser") {
        if (!need_int(0, 1000000000)) return range(0, 1000000000);
        c.max_node_hours_per_user = n;
      } else if (k == "maxclockoffset") {
        if (!need_int(0, 3600)) return range(0, 3600);
        c.max_clock_offset = static_cast<int>(n);
      } else if (k == "partstartskew") {
        if (!need_int(5, 3600)) return range(5, 3600);
        c.part_start_skew = static_cast<int>(n);
      } else if (k == "rendezvoustimeout") {
        if (!need_int(5, 3600)) return range(5, 3600);
        c.rendezvous_timeout = static_cast<int>(n);
      } else if (k == "partstartpolicy") {
        const std::string l = lower(v);
        if (l != "fail" && l != "warn") {
          return parser.err(line, "PartStartPolicy: '" + v + "' is not fail or warn");
        }
        c.part_start_policy = l;
      } else if (k == "publicstats") {
        const std::string l = lower(v);
        if (l != "yes" && l != "no") return parser.err(line, "PublicStats: '" + v + "' is not yes or no");
        c.public_stats = l == "yes";
      } else if (k == "uidir") {
        if (!valid_path(v)) return parser.err(line, "UiDir: '" + v + "' is not an absolute path");
        c.ui_dir = v;
      } else if (k == "uitokenlifetime") {
        if (!need_int(0, 604800)) return range(0, 604800);
        c.ui_token_lifetime = static_cast<int>(n);
      } else if (k == "uireadall") {
        const std::string l = lower(v);
        if (l != "yes" && l != "no") return parser.err(line, "UiReadAll: '" + v + "' is not yes or no");
        c.ui_read_all = l == "yes";
      } else if (k == "planhorizon") {
        if (!need_int(60, 31622400)) return range(60, 31622400);
        c.plan_horizon = n;
      } else if (k == "purgefinishedafter") {
        // slurmdbd.conf's Purge*After form: N, Nhours, Ndays or Nmonths
        std::string num = v, unit = "months";
        for (const char* u : {"hours", "days", "months"}) {
          const std::size_t ul = std::strlen(u);
          if (lower(v).size() > ul && lower(v).compare(lower(v).size() - ul, ul, u) == 0) {
            num = v.substr(0, v.size() - ul);
            unit = u;
          }
        }
        const long long per = unit == "hours" ? 3600 : unit == "days" ? 86400 : 30 * 86400;
        if (!parse_int(num, 0, 120LL * 30 * 86400 / per, &n)) {
          return parser.err(line, "PurgeFinishedAfter: '" + v +
                                      "' is not N, Nhours, Ndays or Nmonths (at most 120 months)");
        }
        c.purge_finished_after = n * per;
      } else if (k == "maxconnections") {
        if (!need_int(1, 65536)) return range(1, 65536);
        c.max_connections = static_cast<int>(n);
      } else if (k == "maxconnectionsperaddress") {
        if (!need_int(1, 65536)) return range(1, 65536);
        c.max_connections_per_address = static_cast<int>(n);
      } else if (k == "connectiontimeout") {
        if (!need_int(1, 3600)) return range(1, 3600);
        c.connection_timeout = static_cast<int>(n);
      } else if (k == "headertimeout") {
        if (!need_int(1, 3600)) return range(1, 3600);
        c.header_timeout = static_cast<int>(n);
      } else if (k == "bodytimeout") {
        if (!need_int(1, 3600)) return range(1, 3600);
        c.body_timeout = static_cast<int>(n);
      } else if (k == "maxrequestsize") {
        if (!need_int(1024, 64ll << 20)) return range(1024, 64ll << 20);
        c.max_request_size = n;
        max_request_size_line = line;
      } else if (k == "maxrequestmemory") {
        if (!need_int(1024, 4294967295ll)) return range(1024, 4294967295ll);
        c.max_request_memory = n;
        max_request_memory_line = line;
      } else if (k == "debuglevel") {
        const int lvl = debug_level_from_name(v);
        if (lvl < 0) return parser.err(line, "DebugLevel: '" + v + "' is not quiet..debug5");
        c.debug_level = lvl;
      } else {
        return parser.err(line, "unknown key '" + p.shown + "'");
      }
    }
    if (eol == text.size()) break;
  }
  if (c.clusters.empty()) {
    return Error{0, std::string(source) + ": no Cluster= line: at least one cluster is required"};
  }
  // StorageType=sqlite keeps its database in StateFile; postgresql names
  // its database with StorageLoc (a libpq connection string).
  if (c.storage_type == "postgresql") {
    if (c.storage_loc.empty()) {
      return Error{0, std::string(source) +
                          ": StorageType=postgresql needs StorageLoc= (a libpq connection string, "
                          "e.g. StorageLoc=\"host=/run/postgresql dbname=flexcod\")"};
    }
    if (seen.count("statefile")) {
      return Error{0, std::string(source) +
                          ": StateFile is SQLite's database: not used with StorageType=postgresql"};
    }
  } else {
    if (seen.count("storageloc")) {
      return Error{0, std::string(source) +
                          ": StorageLoc is for StorageType=postgresql; SQLite's database is StateFile"};
    }
    if (seen.count("storagepassfile")) {
      return Error{0, std::string(source) + ": StoragePassFile is for StorageType=postgresql"};
    }
  }
  if (max_request_memory_line == 0 && c.max_request_memory < c.max_request_size) {
    c.max_request_memory = c.max_request_size;  // default: at least one largest body
  }
  if (c.max_request_memory < c.max_request_size) {
    return parser.err(max_request_memory_line > max_request_size_line ? max_request_memory_line
                                                                      : max_request_size_line,
                      "MaxRequestMemory=" + std::to_string(c.max_request_memory) +
                          " is less than MaxRequestSize=" + std::to_string(c.max_request_size));
  }
  return c;
}

namespace {

// A file's text, at most 1 MiB.
Result<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{0, path + ": cannot open: " + std::string(std::strerror(errno))};
  }
  std::string text;
  char buf[8192];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > (std::size_t{1} << 20)) return Error{0, path + ": larger than 1 MiB"};
  }
  if (in.bad()) return Error{0, path + ": read error"};
  return text;
}

bool user_name_ok(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] == '-') return false;
  bool digits = true;
  for (unsigned char ch : s) {
    if (!std::isalnum(ch) && ch != '.' && ch != '_' && ch != '-') return false;
    digits &= std::isdigit(ch) != 0;
  }
  return !digits;
}

}  // namespace

Result<std::map<std::string, std::map<std::string, std::string>>> parse_user_map(
    std::string_view text, const FlexcodConf& conf, std::string_view source) {
  std::map<std::string, std::map<std::string, std::string>> out;
  const std::string src(source);
  int line = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    std::string l(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line;
    if (const std::size_t hash = l.find('#'); hash != std::string::npos) l.resize(hash);
    std::istringstream words(l);
    std::string local, w;
    if (!(words >> local)) continue;
    auto bad = [&](const std::string& why) {
      return Error{line, src + ":" + std::to_string(line) + ": " + why};
    };
    if (!user_name_ok(local)) return bad("'" + local + "' is not a user name");
    if (out.count(local)) return bad("user '" + local + "' given twice");
    auto& at = out[local];
    while (words >> w) {
      const std::size_t eq = w.find('=');
      if (eq == std::string::npos) return bad("'" + w + "' is not Cluster=Name");
      const std::string cl = w.substr(0, eq), name = w.substr(eq + 1);
      bool known = false;
      for (const auto& c : conf.clusters) known |= c.name == cl;
      if (!known) return bad("'" + cl + "' is not a cluster of flexcod.conf");
      if (!user_name_ok(name)) return bad("'" + name + "' is not a user name (" + cl + ")");
      if (at.count(cl)) return bad("cluster '" + cl + "' given twice for " + local);
      at[cl] = name;
    }
    if (at.empty()) return bad("user '" + local + "' names no Cluster=Name");
  }
  return out;
}

const std::string& name_at(const FlexcodConf& conf, const std::string& user,
                           const std::string& cluster) {
  auto u = conf.user_map.find(user);
  if (u == conf.user_map.end()) return user;
  auto c = u->second.find(cluster);
  return c == u->second.end() ? user : c->second;
}

Result<FlexcodConf> read_file(const std::string& path) {
  auto text = slurp(path);
  if (!text.ok()) return text.error();
  auto conf = parse(text.value(), path);
  if (!conf.ok() || conf.value().user_map_file.empty()) return conf;
  FlexcodConf c = std::move(conf.value());
  auto map_text = slurp(c.user_map_file);
  if (!map_text.ok()) return Error{0, "UserMapFile " + map_text.error().message};
  auto map = parse_user_map(map_text.value(), c, c.user_map_file);
  if (!map.ok()) return Error{map.error().line, "UserMapFile " + map.error().message};
  c.user_map = std::move(map.value());
  return c;
}

}  // namespace flexco::conf
