// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-sim's configuration: see config.hpp.

#include "sim/config.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace flexco::sim {

namespace {

Error bad(const std::string& where, const std::string& what) {
  return Error{Errc::kInvalidArgument, where + ": " + what};
}

bool to_int(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || *end) return false;
  out = v;
  return true;
}

bool to_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno || *end) return false;
  out = v;
  return true;
}

bool to_bool(const std::string& s, bool& out) {
  if (s == "yes" || s == "1" || s == "true") return out = true, true;
  if (s == "no" || s == "0" || s == "false") return out = false, true;
  return false;
}

// "90", "15min", "2h", "1d": seconds.
bool to_duration(const std::string& s, std::int64_t& out) {
  static const std::pair<const char*, std::int64_t> units[] = {
      {"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}};
  for (const auto& [suffix, mult] : units) {
    std::string u(suffix);
    if (s.size() > u.size() && s.compare(s.size() - u.size(), u.size(), u) == 0) {
      std::int64_t v;
      if (!to_int(s.substr(0, s.size() - u.size()), v)) return false;
      out = v * mult;
      return true;
    }
  }
  return to_int(s, out);
}

}  // namespace

Status apply_words(SimConfig& c, const std::vector<std::string>& words, const std::string& where) {
  ClusterConfig* cluster = nullptr;
  for (const std::string& w : words) {
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0) return bad(where, "expected Key=Value, got '" + w + "'");
    std::string key = w.substr(0, eq), v = w.substr(eq + 1);
    auto invalid = [&](const char* what) { return bad(where, key + ": " + what + ": '" + v + "'"); };
    std::int64_t i;
    double d;
    bool b;
    if (key == "ClusterName") {
      if (v.empty()) return invalid("empty name");
      c.clusters.push_back(ClusterConfig{v, 0, false, {}});
      cluster = &c.clusters.back();
    } else if (key == "Nodes" || key == "Trace" || key == "Part") {
      if (!cluster) return bad(where, key + " must follow ClusterName= on its line");
      if (key == "Nodes") {
        if (v == "auto") {
          cluster->auto_nodes = true;
          cluster->nodes = 0;
        } else {
          if (!to_int(v, i) || i < 1) return invalid("not a positive integer or auto");
          cluster->nodes = i;
          cluster->auto_nodes = false;
        }
      } else if (key == "Trace") {
        if (v.empty()) return invalid("empty path");
        cluster->traces.push_back(LocalTrace{v, 0, 1});
      } else {
        if (cluster->traces.empty()) return bad(where, "Part must follow a Trace= of its cluster");
        auto slash = v.find('/');
        std::int64_t p, n;
        if (slash == std::string::npos || !to_int(v.substr(0, slash), p) ||
            !to_int(v.substr(slash + 1), n) || n < 1 || p < 1 || p > n)
          return invalid("expected i/n with 1 <= i <= n");
        cluster->traces.back().part = static_cast<int>(p - 1);
        cluster->traces.back().parts = static_cast<int>(n);
      }
    } else if (key == "TraceDir") {
      c.trace_dir = (!v.empty() && v[0] != '/' && !c.base_dir.empty()) ? c.base_dir + "/" + v : v;
    } else if (key == "MetaTrace") {
      c.meta_trace = v;
    } else if (key == "MetaPart") {
      auto slash = v.find('/');
      std::int64_t p, n;
      if (slash == std::string::npos || !to_int(v.substr(0, slash), p) ||
          !to_int(v.substr(slash + 1), n) || n < 1 || p < 1 || p > n)
        return invalid("expected i/n with 1 <= i <= n");
      c.meta_part = static_cast<int>(p - 1);
      c.meta_parts = static_cast<int>(n);
    } else if (key == "MetaMaxJobs") {
      if (!to_int(v, i) || i < 0) return invalid("not a count");
      c.meta_max_jobs = static_cast<std::uint64_t>(i);
    } else if (key == "TargetLoad") {
      if (!to_double(v, d) || d < 0 || d > 1.5) return invalid("not in [0, 1.5]");
      c.target_load = d;
    } else if (key == "MetaShare") {
      if (!to_double(v, d) || d > 1) return invalid("not in [0, 1] (or < 0: off)");
      c.meta_share = d;
    } else if (key == "MetaTimeScale" || key == "LocalTimeScale") {
      if (!to_double(v, d) || !(d > 0)) return invalid("not a positive number");
      (key == "MetaTimeScale" ? c.meta_time_scale : c.local_time_scale) = d;
    } else if (key == "Horizon") {
      if (v != "local" && v != "meta" && (!to_duration(v, i) || i < 1))
        return invalid("expected local, meta or a duration");
      c.horizon = v;
    } else if (key == "Seed") {
      if (!to_int(v, i) || i < 0) return invalid("not a non-negative integer");
      c.seed = static_cast<std::uint64_t>(i);
    } else if (key == "EstimateFactor") {
      if (!to_double(v, d) || d < 1 || d > 100) return invalid("not in [1, 100]");
      c.local_rules.estimate_factor = c.meta_rules.estimate_factor = d;
    } else if (key == "NoSmallJobs") {
      if (!to_bool(v, b)) return invalid("not yes/no");
      c.local_rules.no_small = c.meta_rules.no_small = b;
    } else if (key == "ModelMaxEstimate") {
      if (!to_duration(v, i) || i < 60) return invalid("not a duration >= 60 s");
      c.local_rules.model_max = c.meta_rules.model_max = i;
    } else if (key == "TraceSize") {
      if (v == "allocated") c.local_rules.size_field = c.meta_rules.size_field = SizeField::kAllocated;
      else if (v == "requested") c.local_rules.size_field = c.meta_rules.size_field = SizeField::kRequested;
      else return invalid("expected allocated or requested");
    } else if (key == "TraceUnit") {
      if (v == "procs") c.local_rules.unit = c.meta_rules.unit = SizeUnit::kProcs;
      else if (v == "nodes") c.local_rules.unit = c.meta_rules.unit = SizeUnit::kNodes;
      else return invalid("expected procs or nodes");
    } else if (key == "TraceProcsPerNode") {
      if (!to_int(v, i) || i < 0 || i > 1000000) return invalid("not in [0, 1000000] (0: from the header)");
      c.local_rules.procs_per_node = c.meta_rules.procs_per_node = i;
    } else if (key == "TracePartial") {
      if (v != "drop" && v != "keep") return invalid("expected drop or keep");
      c.local_rules.keep_partial = c.meta_rules.keep_partial = v == "keep";
    } else if (key == "TraceErrors") {
      if (v != "stop" && v != "skip") return invalid("expected stop or skip");
      c.local_rules.lenient = c.meta_rules.lenient = v == "skip";
    } else if (key == "Estimates") {
      if (v != "trace" && v != "model" && v != "exact") return invalid("expected trace, model or exact");
      c.local_rules.model_always = c.meta_rules.model_always = v == "model";
      c.local_rules.exact_estimates = c.meta_rules.exact_estimates = v == "exact";
    } else if (key == "ModelAlways") {
      if (!to_bool(v, b)) return invalid("not yes/no");
      c.local_rules.model_always = c.meta_rules.model_always = b;
    } else if (key == "OverheadLambda") {
      if (!to_double(v, d) || d < 0 || d > 1000) return invalid("not in [0, 1000]");
      c.meta_rules.overhead_lambda = d;
    } else if (key == "OverheadCap") {
      if (!to_int(v, i) || i < 0 || i > 1000) return invalid("not in [0, 1000]");
      c.meta_rules.overhead_cap = static_cast<int>(i);
    } else if (key == "Backfill") {
      if (v == "conservative") c.engine.backfill = Backfill::kConservative;
      else if (v == "easy") c.engine.backfill = Backfill::kEasy;
      else return invalid("expected conservative or easy");
    } else if (key == "Planner") {
      auto p = parse_policy(v);
      if (!p) return invalid("unknown planner");
      c.engine.planner = p.value();
    } else if (key == "Reschedule") {
      auto r = parse_resched(v);
      if (!r) return invalid("expected rigid, shift or shift+remap");
      c.engine.resched = *r;
    } else if (key == "PublishInterval") {
      if (!to_duration(v, i) || i < 0) return invalid("not a duration");
      c.engine.publish_interval = i;
    } else if (key == "RescheduleHead") {
      if (!to_int(v, i) || i < 1) return invalid("not a positive integer");
      c.engine.head = static_cast<std::size_t>(i);
    } else if (key == "RescheduleMargin") {
      if (!to_duration(v, i) || i < 0) return invalid("not a duration");
      c.engine.margin = i;
    } else {
      return bad(where, "unknown key '" + key + "'");
    }
  }
  return {};
}

Status load_config_file(SimConfig& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{Errc::kNotFound, path + ": cannot open"};
  auto slash = path.rfind('/');
  c.base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (c.trace_dir.empty()) c.trace_dir = c.base_dir;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> ws;
    for (std::string w; words >> w;) ws.push_back(w);
    if (auto st = apply_words(c, ws, path + ":" + std::to_string(n)); !st) return st;
  }
  c.base_dir.clear();
  return {};
}

namespace {

std::string resolve(const SimConfig& c, const std::string& p) {
  if (p.empty() || p[0] == '/' || c.trace_dir.empty()) return p;
  return c.trace_dir + "/" + p;
}

}  // namespace

Result<Prepared> prepare(const SimConfig& config) {
  static const std::string kWhere = "prepare";
  if (config.clusters.empty()) return bad(kWhere, "no clusters (ClusterName=... Nodes=...)");
  Prepared out;
  SimConfig c = config;
  // Nodes=auto: the header's MaxProcs (MaxNodes with TraceUnit=nodes) of
  // the cluster's first trace, else its largest job.
  for (ClusterConfig& cl : c.clusters) {
    if (!cl.auto_nodes) continue;
    if (cl.traces.empty()) return bad(kWhere, "cluster " + cl.name + ": Nodes=auto needs a Trace=");
    JobRules r = c.local_rules;
    r.max_nodes = 0;
    r.no_small = false;
    const std::string path = resolve(c, cl.traces.front().path);
    auto s = scan_trace(path, r);
    if (!s) return Error{Errc::kInvalidArgument, s.error().message};
    const TraceScan& ts = s.value();
    const auto& header = r.unit == SizeUnit::kNodes ? ts.max_nodes : ts.max_procs;
    const char* key = r.unit == SizeUnit::kNodes ? "MaxNodes" : "MaxProcs";
    if (header) {
      cl.nodes = static_cast<Amount>(*header);
      out.notes.push_back("cluster " + cl.name + ": Nodes=" + std::to_string(cl.nodes) +
                          " (header " + key + " of " + path + ")");
    } else if (ts.largest > 0) {
      cl.nodes = ts.largest;
      out.notes.push_back("cluster " + cl.name + ": Nodes=" + std::to_string(cl.nodes) + " (no " +
                          key + " in the header of " + path + ": its largest job)");
    } else {
      return bad(path, std::string("Nodes=auto: no ") + key + " in the header and no job to size by");
    }
  }
  EngineConfig ec = c.engine;
  ec.clusters.clear();
  Amount capacity = 0, largest = 0;
  for (const ClusterConfig& cl : c.clusters) {
    if (cl.nodes < 1) return bad(kWhere, "cluster " + cl.name + ": Nodes= missing");
    ec.clusters.push_back(ClusterSpec{cl.name, cl.nodes});
    out.cluster_nodes.push_back(cl.nodes);
    capacity += cl.nodes;
    largest = std::max(largest, cl.nodes);
  }
  // Scans: the segment bounds and the work, for the load and the horizon.
  std::map<std::string, TraceScan> scans;
  std::set<std::string> reported;
  auto scan_of = [&](const std::string& path, const JobRules& rules) -> Result<TraceScan> {
    std::string key = path + (rules.overhead ? "#meta#" : "#local#") + std::to_string(rules.max_nodes);
    if (auto it = scans.find(key); it != scans.end()) return it->second;
    auto s = scan_trace(path, rules);
    if (!s) return Error{Errc::kInvalidArgument, s.error().message};
    // Each file's skipped lines reported once, whatever its parts.
    if (reported.insert(path).second) {
      out.malformed += s.value().malformed;
      out.partial += s.value().partial;
      if (s.value().malformed > 0)
        out.notes.push_back(std::to_string(s.value().malformed) +
                            " malformed lines skipped (TraceErrors=skip), the first: " +
                            s.value().first_malformed);
    }
    scans.emplace(key, s.value());
    return s.value();
  };
  double local_rate = 0;  // node-seconds per second, as traced
  Time local_len = 0;
  struct LocalScan {
    std::size_t cluster;
    const LocalTrace* trace;
    TraceScan scan;
  };
  std::vector<LocalScan> local_scans;
  for (std::size_t i = 0; i < c.clusters.size(); ++i) {
    const ClusterConfig& cl = c.clusters[i];
    for (const LocalTrace& lt : cl.traces) {
      JobRules r = c.local_rules;
      r.max_nodes = cl.nodes;
      auto s = scan_of(resolve(c, lt.path), r);
      if (!s) return s.error();
      const TraceScan& ts = s.value();
      double span = static_cast<double>(ts.last_submit - ts.first_submit + 1);
      local_rate += ts.work / span;  // a part's rate ~ the trace's
      local_len = std::max<Time>(local_len, static_cast<Time>(span / lt.parts));
      local_scans.push_back({i, &lt, ts});
    }
  }
  JobRules mr = c.meta_rules;
  mr.overhead = true;
  mr.max_nodes = capacity;
  std::optional<TraceScan> meta_scan;
  double meta_rate = 0;
  if (!c.meta_trace.empty()) {
    auto s = scan_of(resolve(c, c.meta_trace), mr);
    if (!s) return s.error();
    meta_scan = s.value();
    meta_rate = meta_scan->work / static_cast<double>(meta_scan->last_submit - meta_scan->first_submit + 1);
  }
  double lscale = c.local_time_scale, mscale = c.meta_time_scale;
  // A first guess from the scans (whole-trace rates) ...
  if (c.target_load > 0) {
    double want = c.target_load * static_cast<double>(capacity);
    if (c.meta_share >= 0) {
      if (local_rate > 0 && c.meta_share < 1) lscale = local_rate / ((1 - c.meta_share) * want);
      if (meta_rate > 0 && c.meta_share > 0) mscale = meta_rate / (c.meta_share * want);
    } else if (meta_rate > 0) {
      double room = want - local_rate / lscale;
      if (room <= 0)
        return bad(kWhere, "the local load alone (" + std::to_string(local_rate / lscale / capacity) +
                               ") reaches TargetLoad; lower it or set MetaShare");
      mscale = meta_rate / room;
    }
  }
  auto horizon_for = [&](double ls, double ms) -> Result<Time> {
    std::int64_t h;
    if (c.horizon == "local" && local_len > 0)
      return static_cast<Time>(static_cast<double>(local_len) * ls);
    if (c.horizon == "meta" || c.horizon == "local") {
      if (!meta_scan) return bad(kWhere, "Horizon=meta needs MetaTrace");
      return static_cast<Time>(
                 static_cast<double>(meta_scan->last_submit - meta_scan->first_submit + 1) /
                     c.meta_parts * ms) +
             1;
    }
    to_duration(c.horizon, h);
    return static_cast<Time>(h);
  };

  // The streams as they will run, but unscaled and without a horizon.
  std::vector<StreamSpec> specs;
  int index = 0;
  for (const LocalScan& ls : local_scans) {
    const ClusterConfig& cl = c.clusters[ls.cluster];
    StreamSpec sp;
    sp.path = resolve(c, ls.trace->path);
    sp.part = ls.trace->part;
    sp.parts = ls.trace->parts;
    sp.loop = true;
    sp.kind = JobKind::kLocal;
    sp.cluster = static_cast<int>(ls.cluster);
    sp.seed = c.seed;
    sp.index = index++;
    sp.rules = c.local_rules;
    sp.rules.max_nodes = cl.nodes;
    specs.push_back(sp);
  }
  if (meta_scan) {
    StreamSpec sp;
    sp.path = resolve(c, c.meta_trace);
    sp.part = c.meta_part;
    sp.parts = c.meta_parts;
    sp.max_jobs = c.meta_max_jobs;
    sp.kind = JobKind::kMeta;
    sp.seed = c.seed;
    sp.index = 100;
    sp.rules = mr;
    specs.push_back(sp);
  }
  auto scan_for = [&](std::size_t k) -> const TraceScan& {
    return k < local_scans.size() ? local_scans[k].scan : *meta_scan;
  };

  // ... then the work every stream really submits before a horizon: one
  // unscaled pass each records its arrivals (offset from the segment's
  // start) and cumulative node-seconds, with the same filters, loops and
  // run times (cut at the estimate) as the simulation.  A job at offset o
  // of loop k is submitted at (o + k * segment) * scale, and only if that
  // is before the horizon.
  struct Arrivals {
    std::vector<double> at, cum;
    double segment = 1;
    bool loop = false;
    std::uint64_t max_jobs = 0;
  };
  std::vector<Arrivals> arrivals;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    StreamSpec sp = specs[k];
    sp.time_scale = 1.0;
    sp.loop = false;
    sp.horizon = kForever;
    sp.max_jobs = 0;
    auto s = TraceStream::open(sp, scan_for(k));
    if (!s) return Error{Errc::kInvalidArgument, s.error().message};
    Arrivals a;
    a.loop = specs[k].loop;
    a.max_jobs = specs[k].max_jobs;
    a.segment = static_cast<double>(std::max<std::int64_t>(1, s.value().segment_length()));
    double sum = 0;
    for (;;) {
      auto j = s.value().next();
      if (!j) return Error{Errc::kInvalidArgument, j.error().message};
      if (!j.value()) break;
      sum += static_cast<double>(j.value()->run) * static_cast<double>(j.value()->nodes);
      a.at.push_back(static_cast<double>(j.value()->submit));
      a.cum.push_back(sum);
    }
    arrivals.push_back(std::move(a));
  }
  // Node-seconds submitted at times < horizon by a stream at `scale`.
  auto work_in = [](const Arrivals& a, double horizon, double scale) {
    if (a.at.empty()) return 0.0;
    const double t = horizon / scale;  // in unscaled trace seconds
    auto before = [&](double x) {      // jobs of one pass with offset < x
      return static_cast<std::size_t>(std::lower_bound(a.at.begin(), a.at.end(), x) - a.at.begin());
    };
    if (!a.loop) {
      std::size_t n = before(t);
      if (a.max_jobs > 0) n = std::min<std::size_t>(n, a.max_jobs);
      return n == 0 ? 0.0 : a.cum[n - 1];
    }
    const double loops = std::floor(t / a.segment);
    const std::size_t n = before(t - loops * a.segment);
    return loops * a.cum.back() + (n == 0 ? 0.0 : a.cum[n - 1]);
  };
  const std::size_t nlocal = local_scans.size();
  auto measure = [&](double ls, double ms, Time h, double* lw, double* mw) {
    *lw = 0;
    *mw = 0;
    for (std::size_t k = 0; k < arrivals.size(); ++k) {
      if (k < nlocal)
        *lw += work_in(arrivals[k], static_cast<double>(h), ls);
      else
        *mw += work_in(arrivals[k], static_cast<double>(h), ms);
    }
  };
  Time horizon = 0;
  double lw = 0, mw = 0;
  if (c.target_load > 0) {
    // Multiplicative corrections: stretching a stream's times by f divides
    // the work it submits before a fixed horizon by about f.  The work is
    // a step function of the scale, so stop when a step changes little.
    for (int it = 0; it < 100; ++it) {
      auto h = horizon_for(lscale, mscale);
      if (!h) return h.error();
      horizon = h.value();
      if (horizon < 1) return bad(kWhere, "the horizon is shorter than a second");
      measure(lscale, mscale, horizon, &lw, &mw);
      const double want = c.target_load * static_cast<double>(capacity) * static_cast<double>(horizon);
      double nl = lscale, nm = mscale;
      if (c.meta_share >= 0) {
        if (lw > 0 && c.meta_share < 1) nl = lscale * lw / ((1 - c.meta_share) * want);
        if (mw > 0 && c.meta_share > 0) nm = mscale * mw / (c.meta_share * want);
      } else if (mw > 0) {
        const double room = want - lw;
        if (room <= 0)
          return bad(kWhere, "the local jobs submitted within the horizon alone offer load " +
                                 std::to_string(lw / (want / c.target_load)) +
                                 ", at least TargetLoad; lower it or set MetaShare");
        nm = mscale * mw / room;
      }
      if (std::fabs(nl / lscale - 1) < 1e-6 && std::fabs(nm / mscale - 1) < 1e-6) break;
      lscale = nl;
      mscale = nm;
    }
  }
  {
    auto h = horizon_for(lscale, mscale);
    if (!h) return h.error();
    horizon = h.value();
  }
  measure(lscale, mscale, horizon, &lw, &mw);
  out.local_time_scale = lscale;
  out.meta_time_scale = mscale;
  out.horizon = horizon;
  const double capacity_work = static_cast<double>(capacity) * static_cast<double>(horizon);
  out.offered_load = capacity_work > 0 ? (lw + mw) / capacity_work : 0;
  out.meta_share = lw + mw > 0 ? mw / (lw + mw) : 0;
  if (c.target_load > 0) {
    auto fmt = [](double x) {
      char b[32];
      std::snprintf(b, sizeof b, "%.4f", x);
      return std::string(b);
    };
    if (std::fabs(out.offered_load / c.target_load - 1) > kLoadTolerance)
      return bad(kWhere, "the jobs submitted within the horizon offer load " + fmt(out.offered_load) +
                             ", not TargetLoad=" + fmt(c.target_load) +
                             " (too few jobs to scale finely, or MetaMaxJobs stops the metajobs "
                             "early; a longer Horizon or another TargetLoad helps)");
    if (c.meta_share >= 0 && std::fabs(out.meta_share - c.meta_share) > kLoadTolerance)
      return bad(kWhere, "the metajobs submitted within the horizon are " + fmt(out.meta_share) +
                             " of the load, not MetaShare=" + fmt(c.meta_share));
  }

  for (std::size_t k = 0; k < specs.size(); ++k) {
    StreamSpec sp = specs[k];
    sp.time_scale = k < nlocal ? lscale : mscale;
    sp.horizon = horizon;
    auto s = TraceStream::open(sp, scan_for(k));
    if (!s) return Error{Errc::kInvalidArgument, s.error().message};
    out.sources.push_back(std::make_unique<TraceSource>(std::move(s).value()));
  }
  ec.horizon = horizon;
  auto e = Engine::create(ec);
  if (!e) return e.error();
  out.engine = std::move(e).value();
  return out;
}

}  // namespace flexco::sim
