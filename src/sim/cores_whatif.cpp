// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-sim --cores-whatif; see cores_whatif.hpp and doc/sim-report.md.
//
// One run replays the batch jobs on a LocalScheduler (FCFS, conservative
// backfilling or, with Scheduler=easy, EASY backfilling; jobs end at their actual run time, the scheduler sees the
// requested time) and, at each request's submission, builds a Slurm-like
// snapshot of the scheduler (running jobs and reservations on concrete
// nodes, the queue as pending jobs) and asks the production probe for
// `candidates` slots of the even distribution over [est, let].  The GRS
// keeps the candidates whose property (static p_res, or what-if fit) is at
// least the threshold, the LRS (the what-if filter of the thesis) those
// whose what-if fit is, and the LRMS (add_reservation) takes the first
// that fits, earliest end first.  A reference run without requests gives
// the batch makespan.

#include "sim/cores_whatif.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/local_sched.hpp"
#include "core/probe.hpp"
#include "core/cluster_snapshot.h"
#include "core/strings.hpp"
#include "core/swf.hpp"

namespace flexco::sim {

namespace {

Error bad(const std::string& what) { return Error{Errc::kInvalidArgument, "cores-whatif: " + what}; }

struct BatchJob {
  std::uint64_t id;
  Time submit;
  Amount nodes;
  Duration run, estimate;
  std::int64_t procs;
};

struct Request {
  Time submit;
  Amount nodes;
  Duration run;
  std::int64_t procs;
  double serial;  // Amdahl's sequential fraction (flexible service level)
};

enum class Method { kNone, kStatic, kWhatif };

struct RunResult {
  std::int64_t requests = 0, successes = 0;
  std::int64_t candidates = 0, grs_filtered = 0, lrs_filtered = 0, lrms_tested = 0;
  Time makespan = 0;  // last batch end
  std::int64_t reserved_node_s = 0;  // sum of nodes x duration of the reservations made
};

// A snapshot the probe reads, with the storage its pointers point into.
struct Snap {
  std::vector<std::string> names, resv_names;
  std::vector<flexco_snap_node_t> nodes;
  std::vector<flexco_snap_job_t> jobs;
  std::vector<flexco_snap_resv_t> resvs;
  std::vector<std::uint32_t> idx;
  flexco_snap_part_t part{};
  flexco_snapshot_t s{};
};

struct Running {
  Amount nodes;
  Time start, end;  // end: expected (start + estimate)
};

struct Resv {
  std::uint64_t id;
  Time start, end;
  Amount nodes;
};

const char* kPartition = "batch";

// Running jobs and reservations get concrete nodes, greedily in order of
// their start (as an interval colouring: at any start the nodes not held
// by an earlier span are as many as the scheduler left free).
void build_snapshot(Snap& m, Amount capacity, Time now,
                    const std::unordered_map<std::uint64_t, Running>& running,
                    const std::vector<Resv>& resvs, const std::vector<BatchJob>& queue) {
  if (m.names.empty())
    for (Amount i = 0; i < capacity; ++i) m.names.push_back("n" + std::to_string(i + 1));
  m.nodes.clear();
  m.idx.clear();
  m.jobs.clear();
  m.resvs.clear();
  m.resv_names.clear();
  for (Amount i = 0; i < capacity; ++i) {
    m.nodes.push_back(flexco_snap_node_t{m.names[i].c_str(), 8, 1});
    m.idx.push_back(static_cast<std::uint32_t>(i));
  }
  m.part = flexco_snap_part_t{kPartition, FLEXCO_SNAP_FOREVER, 1, 1, 0,
                              static_cast<std::uint32_t>(capacity)};
  struct Span {
    Time start, end;
    Amount nodes;
    bool job;
    std::uint64_t id;
  };
  std::vector<Span> spans;
  for (const auto& [id, r] : running) spans.push_back(Span{r.start, r.end, r.nodes, true, id});
  for (const Resv& r : resvs)
    if (r.end > now) spans.push_back(Span{r.start, r.end, r.nodes, false, r.id});
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.start != b.start ? a.start < b.start : a.id < b.id;
  });
  std::vector<Time> free_at(static_cast<std::size_t>(capacity), 0);
  m.resv_names.reserve(resvs.size());
  for (const Span& sp : spans) {
    const auto off = static_cast<std::uint32_t>(m.idx.size());
    std::vector<std::uint32_t> order(static_cast<std::size_t>(capacity));
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
    // Free nodes first (by how long they have been free), then the rest.
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      bool fa = free_at[a] <= sp.start, fb = free_at[b] <= sp.start;
      return fa != fb ? fa : free_at[a] < free_at[b];
    });
    for (Amount k = 0; k < sp.nodes && k < capacity; ++k) {
      m.idx.push_back(order[static_cast<std::size_t>(k)]);
      free_at[order[static_cast<std::size_t>(k)]] = std::max(free_at[order[k]], sp.end);
    }
    const auto cnt = static_cast<std::uint32_t>(m.idx.size() - off);
    if (sp.job) {
      flexco_snap_job_t j{};
      j.job_id = static_cast<std::uint32_t>(sp.id);
      j.kind = FLEXCO_JOB_RUNNING;
      j.start = sp.start;
      j.end = sp.end;
      j.time_limit = sp.end - sp.start;
      j.min_nodes = static_cast<std::uint32_t>(sp.nodes);
      j.priority = 1;
      j.partition = kPartition;
      j.node_off = off;
      j.node_cnt = cnt;
      m.jobs.push_back(j);
    } else {
      m.resv_names.push_back("r" + std::to_string(sp.id));
      m.resvs.push_back(flexco_snap_resv_t{nullptr, sp.start, sp.end, 0, "", off, cnt});
    }
  }
  for (std::size_t i = 0; i < m.resvs.size(); ++i) m.resvs[i].name = m.resv_names[i].c_str();
  const auto qn = static_cast<std::uint32_t>(queue.size());
  for (std::uint32_t q = 0; q < qn; ++q) {
    flexco_snap_job_t j{};
    j.job_id = static_cast<std::uint32_t>(queue[q].id);
    j.kind = FLEXCO_JOB_PENDING;
    j.time_limit = queue[q].estimate;
    j.min_nodes = static_cast<std::uint32_t>(queue[q].nodes);
    j.priority = qn - q;  // queue order, all >= 1
    j.partition = kPartition;
    m.jobs.push_back(j);
  }
  m.s = flexco_snapshot_t{};
  m.s.cluster = "site";
  m.s.when = now;
  m.s.nodes = m.nodes.data();
  m.s.node_count = static_cast<std::uint32_t>(m.nodes.size());
  m.s.jobs = m.jobs.data();
  m.s.job_count = static_cast<std::uint32_t>(m.jobs.size());
  m.s.resvs = m.resvs.data();
  m.s.resv_count = static_cast<std::uint32_t>(m.resvs.size());
  m.s.parts = &m.part;
  m.s.part_count = 1;
  m.s.node_idx = m.idx.data();
  m.s.node_idx_count = static_cast<std::uint32_t>(m.idx.size());
}

Result<RunResult> simulate(const WhatifConfig& cfg, const std::vector<BatchJob>& batch,
                           const std::vector<Request>& reqs, Method method, Duration bat,
                           Duration stf) {
  auto created = LocalScheduler::create(cfg.nodes, 0, cfg.scheduler);
  if (!created) return created.error();
  LocalScheduler sched = std::move(created).value();
  RunResult out;
  using End = std::pair<Time, std::uint64_t>;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends;
  std::unordered_map<std::uint64_t, Running> running;
  std::unordered_map<std::uint64_t, Duration> run_of;
  std::vector<BatchJob> queue;
  std::vector<Resv> resvs;
  Snap snap;
  ProbePolicy policy;
  policy.fitness.policy = cfg.scheduler;  // the what-if plans as the site schedules
  const bool easy = cfg.scheduler == Backfill::kEasy;
  std::size_t bi = 0, ri = 0;
  const std::size_t nreq = method == Method::kNone ? 0 : reqs.size();
  for (;;) {
    Time t = kNever;
    if (bi < batch.size()) t = std::min(t, batch[bi].submit);
    if (ri < nreq) t = std::min(t, reqs[ri].submit);
    if (!ends.empty()) t = std::min(t, ends.top().first);
    // EASY also decides when a running job's estimate or a reservation
    // ends, queue or not: the scheduler refuses to be advanced past those.
    if (!queue.empty() || easy) t = std::min(t, sched.next_decision_time());
    if (t == kNever) break;
    t = std::max(t, sched.now());
    if (auto st = sched.advance_to(t); !st) return st.error();
    while (!ends.empty() && ends.top().first == t) {
      std::uint64_t id = ends.top().second;
      ends.pop();
      if (auto st = sched.finish(id); !st) return st.error();
      running.erase(id);
      out.makespan = std::max(out.makespan, t);
    }
    resvs.erase(std::remove_if(resvs.begin(), resvs.end(), [&](const Resv& r) { return r.end <= t; }),
                resvs.end());
    for (; bi < batch.size() && batch[bi].submit == t; ++bi) {
      const BatchJob& b = batch[bi];
      if (auto st = sched.submit(PendingJob{b.id, b.nodes, b.estimate, t, 0}); !st) return st.error();
      queue.push_back(b);
      run_of[b.id] = b.run;
    }
    for (; ri < nreq && reqs[ri].submit == t; ++ri) {
      const Request& r = reqs[ri];
      ++out.requests;
      if (auto st = sched.replan(); !st) return st.error();
      build_snapshot(snap, cfg.nodes, t, running, resvs, queue);
      ProbeRequest pq;
      pq.nodes = {r.nodes};
      pq.duration = r.run;
      if (cfg.flexible) {
        // Processors [0.5 p, 2 p] as whole nodes; three service levels (the
        // range's ends and the job's own), each with its even slots.
        const std::int64_t c = cfg.cpus_per_node;
        const Amount lo = std::max<Amount>(1, (r.procs / 2 + r.procs % 2 + c - 1) / c);
        const Amount hi = std::min<Amount>(cfg.nodes, (2 * r.procs + c - 1) / c);
        std::set<Amount> levels{lo, r.nodes, hi};
        pq.nodes.assign(levels.begin(), levels.end());
        // Amdahl over processors, S(p) = 1 / (s + (1 - s)/p), written over
        // nodes of c processors: s' = c s / (1 + (c - 1) s) gives the same
        // duration ratios.
        const double sn = static_cast<double>(c) * r.serial /
                          (1.0 + static_cast<double>(c - 1) * r.serial);
        pq.amdahl = AmdahlModel{sn, r.nodes, r.run};
      }
      pq.earliest_start = t + bat;
      pq.latest_end = t + bat + r.run + stf;
      pq.max_offers = cfg.candidates;
      pq.distribution = Distribution::kEven;
      pq.p_res_method = PResMethod::kStatic;
      auto got = probe(snap.s, pq, 100, 60, policy);
      if (std::holds_alternative<ProbeError>(got))
        return bad("probe: " + std::get<ProbeError>(got).message);
      const ProbeResult& pr = std::get<ProbeResult>(got);
      struct Cand {
        Time start, end;
        Amount nodes;
        double prop, fit;
      };
      std::vector<Cand> cands;
      for (const Offer& o : pr.offers)
        cands.push_back(
            Cand{o.start, o.end, o.nodes, method == Method::kStatic ? o.p_res : o.fit, o.fit});
      // The what-if method's extra P^JOB slot (§9.4.2): it moves no batch
      // job under conservative backfilling, fit 1.  Under EASY the
      // temporary job queued last holds no reservation either, so its plan
      // is P^ORG's and its fit 1 too (the probe places the slot
      // conservatively, behind every queued job's planned start).
      const Duration job_run = pq.duration_for(pr.job_nodes);
      if (method == Method::kWhatif && pr.job_start != kNever && pr.job_start >= t + bat &&
          pr.job_start + job_run <= t + bat + r.run + stf)
        cands.push_back(Cand{pr.job_start, pr.job_start + job_run, pr.job_nodes, 1.0, 1.0});
      std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
        return a.end != b.end ? a.end < b.end : a.prop > b.prop;
      });
      out.candidates += static_cast<std::int64_t>(cands.size());
      for (const Cand& c : cands) {
        if (c.prop < cfg.threshold) {
          ++out.grs_filtered;
          continue;
        }
        if (c.fit < cfg.threshold) {
          ++out.lrs_filtered;
          continue;
        }
        ++out.lrms_tested;
        const std::uint64_t id = 1000000000ULL + ri;
        if (sched.add_reservation(FixedSpan{id, c.start, c.end, c.nodes})) {
          resvs.push_back(Resv{id, c.start, c.end, c.nodes});
          ++out.successes;
          out.reserved_node_s += c.nodes * (c.end - c.start);
          break;
        }
      }
    }
    auto started = sched.schedule();
    if (!started) return started.error();
    if (!started.value().empty()) {
      std::set<std::uint64_t> ids;
      for (const StartedJob& s : started.value()) {
        ids.insert(s.id);
        running[s.id] = Running{s.nodes, s.start, s.expected_end};
        ends.push({s.start + run_of[s.id], s.id});
      }
      queue.erase(std::remove_if(queue.begin(), queue.end(),
                                 [&](const BatchJob& b) { return ids.count(b.id) != 0; }),
                  queue.end());
    }
  }
  if (!queue.empty()) return bad(std::to_string(queue.size()) + " batch jobs never started");
  return out;
}

bool parse_list(const std::string& v, std::vector<Duration>* out) {
  out->clear();
  for (const std::string& x : flexco::split_commas(v)) {
    char* e = nullptr;
    double h = std::strtod(x.c_str(), &e);
    if (x.empty() || *e != '\0' || !(h >= 0 && h <= 24 * 365)) return false;
    out->push_back(static_cast<Duration>(h * 3600 + 0.5));
  }
  return !out->empty();
}

// "0,3": SWF queue numbers (>= 0); "none" for no queue.
bool parse_queues(const std::string& v, std::vector<std::int64_t>* out) {
  out->clear();
  if (v == "none") return true;
  for (const std::string& x : flexco::split_commas(v)) {
    char* e = nullptr;
    long long q = std::strtoll(x.c_str(), &e, 10);
    if (x.empty() || *e != '\0' || q < 0 || q > 1000000) return false;
    out->push_back(q);
  }
  return !out->empty();
}

}  // namespace

Status apply_whatif_words(WhatifConfig& c, const std::vector<std::string>& words) {
  for (const std::string& w : words) {
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0) return bad("expected Key=Value, got '" + w + "'");
    std::string k = w.substr(0, eq), v = w.substr(eq + 1);
    char* e = nullptr;
    auto integer = [&](std::int64_t lo, std::int64_t hi, std::int64_t* out) {
      long long x = std::strtoll(v.c_str(), &e, 10);
      if (v.empty() || *e != '\0' || x < lo || x > hi) return false;
      *out = x;
      return true;
    };
    std::int64_t x = 0;
    if (k == "Trace") {
      c.trace = v;
    } else if (k == "Jobs") {
      if (!integer(10, 1000000, &c.jobs)) return bad("Jobs: 10 to 1000000: '" + v + "'");
    } else if (k == "Nodes") {
      if (!integer(1, 100000, &x)) return bad("Nodes: 1 to 100000: '" + v + "'");
      c.nodes = x;
    } else if (k == "CpusPerNode") {
      if (!integer(1, 1024, &c.cpus_per_node)) return bad("CpusPerNode: 1 to 1024: '" + v + "'");
    } else if (k == "Bat") {
      if (!parse_list(v, &c.bat)) return bad("Bat: hours, comma separated: '" + v + "'");
    } else if (k == "Stf") {
      if (!parse_list(v, &c.stf)) return bad("Stf: hours, comma separated: '" + v + "'");
    } else if (k == "Candidates") {
      if (!integer(1, kProbeMaxOffers, &x)) return bad("Candidates: 1 to 64: '" + v + "'");
      c.candidates = static_cast<int>(x);
    } else if (k == "Threshold") {
      double d = std::strtod(v.c_str(), &e);
      if (v.empty() || *e != '\0' || !(d >= 0 && d <= 1)) return bad("Threshold: 0 to 1: '" + v + "'");
      c.threshold = d;
    } else if (k == "Seed") {
      if (!integer(0, INT64_MAX, &x)) return bad("Seed: an integer >= 0: '" + v + "'");
      c.seed = static_cast<std::uint64_t>(x);
    } else if (k == "Scheduler") {
      if (v == "conservative")
        c.scheduler = Backfill::kConservative;
      else if (v == "easy")
        c.scheduler = Backfill::kEasy;
      else
        return bad("Scheduler: conservative or easy: '" + v + "'");
    } else if (k == "ServiceLevel") {
      if (v != "rigid" && v != "flexible")
        return bad("ServiceLevel: rigid or flexible: '" + v + "'");
      c.flexible = v == "flexible";
    } else if (k == "ExcludeQueues") {
      if (!parse_queues(v, &c.exclude_queues))
        return bad("ExcludeQueues: queue numbers, comma separated: '" + v + "'");
    } else {
      return bad("unknown key '" + k + "'");
    }
  }
  if (c.trace.empty()) return bad("Trace= is required");
  return {};
}

Status run_whatif(const WhatifConfig& cfg) {
  auto reader = swf::Reader::open(cfg.trace);
  if (!reader) return bad(cfg.trace + ": " + reader.error().message);
  // The first `jobs` usable jobs: run time and processors known and > 0.
  std::vector<BatchJob> all;
  Time t0 = -1;
  while (static_cast<std::int64_t>(all.size()) < cfg.jobs) {
    auto j = reader.value().next();
    if (!j) return bad(cfg.trace + ": " + j.error().message);
    if (!j.value()) break;
    const swf::Job& s = *j.value();
    std::int64_t procs = s.allocated_procs.value_or(s.requested_procs.value_or(0));
    std::int64_t run = s.run_time.value_or(0);
    if (procs <= 0 || run <= 0) continue;
    if (s.queue && std::find(cfg.exclude_queues.begin(), cfg.exclude_queues.end(), *s.queue) !=
                       cfg.exclude_queues.end())
      continue;
    Amount nodes = (procs + cfg.cpus_per_node - 1) / cfg.cpus_per_node;
    if (nodes > cfg.nodes) continue;
    if (t0 < 0) t0 = s.submit_time;
    Duration est = std::max<std::int64_t>(run, s.requested_time.value_or(run));
    all.push_back(BatchJob{static_cast<std::uint64_t>(all.size() + 1), s.submit_time - t0, nodes,
                           run, est, procs});
  }
  if (all.size() < 10) return bad(cfg.trace + ": fewer than 10 usable jobs");
  std::stable_sort(all.begin(), all.end(),
                   [](const BatchJob& a, const BatchJob& b) { return a.submit < b.submit; });
  // One job of every ten (chosen once, seeded) becomes a request.
  std::mt19937_64 rng(cfg.seed);
  // A stream of its own for the sequential fractions, so that the choice
  // of requests does not depend on the service level.
  std::mt19937_64 serial_rng(cfg.seed ^ 0x5e71a1f7ac7105ULL);
  std::uniform_real_distribution<double> serial_of(0.0, 0.1);
  std::vector<BatchJob> batch;
  std::vector<Request> reqs;
  for (std::size_t g = 0; g + 10 <= all.size(); g += 10) {
    std::size_t pick = g + static_cast<std::size_t>(rng() % 10);
    for (std::size_t i = g; i < g + 10; ++i) {
      if (i == pick)
        reqs.push_back(
            Request{all[i].submit, all[i].nodes, all[i].run, all[i].procs, serial_of(serial_rng)});
      else
        batch.push_back(all[i]);
    }
  }
  for (std::size_t i = all.size() / 10 * 10; i < all.size(); ++i) batch.push_back(all[i]);

  auto ref = simulate(cfg, batch, reqs, Method::kNone, 0, 0);
  if (!ref) return ref.error();
  const Time ms_ref = ref.value().makespan;
  std::string excluded;
  for (std::int64_t q : cfg.exclude_queues)
    excluded += (excluded.empty() ? "" : ",") + std::to_string(q);
  std::printf("scheduler=%s\nexclude_queues=%s\nservice_level=%s\n",
              backfill_name(cfg.scheduler), excluded.empty() ? "none" : excluded.c_str(),
              cfg.flexible ? "flexible" : "rigid");
  std::printf("jobs=%zu\nbatch_jobs=%zu\nrequests=%zu\nnodes=%lld\ncandidates=%d\nthreshold=%g\n"
              "makespan_ref=%lld\n",
              all.size(), batch.size(), reqs.size(), static_cast<long long>(cfg.nodes),
              cfg.candidates, cfg.threshold, static_cast<long long>(ms_ref));
  for (Method m : {Method::kStatic, Method::kWhatif}) {
    const char* name = m == Method::kStatic ? "static" : "whatif";
    double rate_sum = 0, cost_sum = 0;
    std::int64_t succ = 0, total = 0, runs = 0, area = 0;
    for (Duration b : cfg.bat)
      for (Duration f : cfg.stf) {
        auto r = simulate(cfg, batch, reqs, m, b, f);
        if (!r) return r.error();
        const RunResult& x = r.value();
        double rate = x.requests ? static_cast<double>(x.successes) / static_cast<double>(x.requests) : 0;
        double cost = ms_ref ? 100.0 * static_cast<double>(x.makespan - ms_ref) / static_cast<double>(ms_ref) : 0;
        std::printf("run method=%s bat_h=%g stf_h=%g requests=%lld successes=%lld rate=%.4f "
                    "candidates=%lld grs_filtered=%lld lrs_filtered=%lld lrms_tested=%lld "
                    "reserved_node_h=%lld makespan=%lld makespan_cost_pct=%.2f\n",
                    name, static_cast<double>(b) / 3600, static_cast<double>(f) / 3600,
                    static_cast<long long>(x.requests), static_cast<long long>(x.successes), rate,
                    static_cast<long long>(x.candidates), static_cast<long long>(x.grs_filtered),
                    static_cast<long long>(x.lrs_filtered), static_cast<long long>(x.lrms_tested),
                    static_cast<long long>(x.reserved_node_s / 3600),
                    static_cast<long long>(x.makespan), cost);
        rate_sum += rate;
        cost_sum += cost;
        succ += x.successes;
        area += x.reserved_node_s;
        total += x.requests;
        ++runs;
      }
    std::printf("%s_success_rate=%.4f\n%s_successes=%lld/%lld\n%s_makespan_cost_pct=%.2f\n"
                "%s_reserved_node_h=%lld\n",
                name, rate_sum / static_cast<double>(runs), name, static_cast<long long>(succ),
                static_cast<long long>(total), name, cost_sum / static_cast<double>(runs), name,
                static_cast<long long>(area / 3600 / runs));
  }
  return {};
}

}  // namespace flexco::sim
