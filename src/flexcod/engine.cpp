// SPDX-License-Identifier: GPL-2.0-or-later
// engine.cpp - the engine's construction, threads and shared
// bookkeeping (locks, keys, counters).
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

// A wrong_audience answer means that the name flexcod signs for (Cluster= in
// flexcod.conf) is not the ClusterName of the cluster at URL= (doc/auth.md,
// "Audience"): no request to it can succeed until the configuration is
// fixed, so say exactly that, once, rather than "unreachable".
void Engine::Cluster::note_error(const http::Error& e) {
  note(answered(e), e.message);
  if (e.code == http::Errc::kHttp && e.api_code == "stale_epoch") {
    // Refused as from a deposed flexcod (doc/flexcod.md, "High
    // availability"): the lease finds out whether it was (then this
    // flexcod stops) or the clusters saw a higher epoch than the
    // database holds (a restored backup: the epoch is raised).
    const std::size_t at = e.message.find("older than epoch ");
    const long long seen = at == std::string::npos ? 0 : std::atoll(e.message.c_str() + at + 17);
    fc_error("cluster %s refused a request as from a deposed flexcod (%s)", conf.name.c_str(),
             e.message.c_str());
    if (on_stale && seen > 0) on_stale(seen);
  }
  if (e.code == http::Errc::kTls) {
    // An https URL whose certificate does not verify (or a TLS handshake
    // that fails): nothing is sent to it, the MUNGE credential included.
    // Said once until the cluster answers again.
    {
      std::lock_guard<std::mutex> lock(m);
      if (tls_refused) return;
      tls_refused = true;
    }
    fc_error("cluster %s: TLS with %s failed, no request is sent to it until it verifies "
             "(%s); its certificate must be signed by a CA of TLSCAFile in flexcod.conf and "
             "name the host of URL=",
             conf.name.c_str(), conf.url.c_str(), e.message.c_str());
    return;
  }
  if (e.code != http::Errc::kHttp || e.api_code != "wrong_audience") return;
  {
    std::lock_guard<std::mutex> lock(m);
    if (audience_refused) return;
    audience_refused = true;
  }
  fc_error("cluster %s: the plugin at %s refuses our requests as signed for another cluster "
           "(%s); Cluster=%s in flexcod.conf must be that cluster's ClusterName "
           "(scontrol show config | grep ClusterName)",
           conf.name.c_str(), conf.url.c_str(), e.message.c_str(), conf.name.c_str());
}

// ---------------------------------------------------------------------------
// Construction, threads

Engine::Engine(const flexco::conf::FlexcodConf& conf, Store& store, flexco::auth::Signer signer,
               const Lease* lease)
    : conf_(conf), store_(store), lease_(lease) {
  started_ = now_seconds();
  for (const auto& cc : conf.clusters) {
    auto c = std::make_unique<Cluster>();
    c->conf = cc;
    http::ClientConfig hc;
    hc.base_url = cc.url;
    hc.other_urls = cc.other_urls;
    hc.audience = cc.name;  // must be the cluster's ClusterName (doc/auth.md)
    hc.ca_file = conf.tls_ca_file;  // https URLs only
    hc.connect_timeout_ms = 1000L * conf.connect_timeout;
    hc.total_timeout_ms = 1000L * conf.request_timeout;
    // Placements ask the clusters concurrently (only planning takes the
    // claim): at most half the plugin's default MaxConnectionsPerAddress
    // (16) at once, its long poll included; the rest wait their turn.
    hc.max_in_flight = 8;
    // One MUNGE credential per session, not per request (doc/auth.md,
    // "Sessions"); a plugin that grants none is asked with MUNGE.
    hc.session = true;
    hc.observer = [this, name = cc.name](double s, bool answered, int status, bool long_poll) {
      observe_cluster(name, s, answered, status, long_poll);
    };
    hc.clock_sample = [raw = c.get()](double offset, double rtt) { raw->clock_sample(offset, rtt); };
    // Every request carries the lease's epoch; none goes out but a read
    // while this flexcod does not hold it (doc/flexcod.md, "High
    // availability").
    if (lease != nullptr) {
      hc.fence = [lease](std::string* v) { return lease->fence_header(v); };
      c->on_stale = [lease](std::int64_t seen) { lease->saw_epoch(seen); };
    }
    auto client = http::Client::create(hc, signer);
    if (client.ok()) {
      c->client = std::make_unique<http::PluginClient>(std::move(client).value());
    } else {
      fc_error("cluster %s: %s", cc.name.c_str(), client.error().message.c_str());
    }
    c->event_seq = store_.event_seq(cc.name);
    c->breaker_failures = conf.breaker_failures;
    c->breaker_backoff = conf.breaker_backoff;
    cluster_index_.emplace(cc.name, clusters_.size());
    clusters_.push_back(std::move(c));
  }
}

Engine::~Engine() { stop(); }

bool Engine::wait_stop(int ms) {
  std::unique_lock<std::mutex> lock(stop_mutex_);
  return stop_cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
}

void Engine::start() {
  // A standby that takes over: the events it must follow from are the
  // ones the database says now (the one in charge before went on).
  for (auto& c : clusters_) c->event_seq = store_.event_seq(c->conf.name);
  recover_db();
  for (std::size_t i = 0; i < clusters_.size(); ++i) {
    if (!clusters_[i]->client) continue;
    threads_.emplace_back([this, i] { cluster_loop(i); });
    if (conf_.availability_mode == "publish") threads_.emplace_back([this, i] { publish_loop(i); });
  }
  threads_.emplace_back([this] { reap_loop(); });
  threads_.emplace_back([this] { gate_loop(); });
  threads_.emplace_back([this] { resched_loop(); });
  running_ = true;
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  // A pass's profile reads that are still running (each bounded by
  // ClusterTimeout) use the engine: wait for them.
  std::unique_lock<std::mutex> fl(fetch_mutex_);
  fetch_cv_.wait(fl, [this] { return fetches_running_ == 0; });
}

void Engine::reload(const flexco::conf::FlexcodConf& conf) {
  std::lock_guard<std::mutex> lock(conf_mutex_);
  auto clusters = conf_.clusters;
  auto listen_address = conf_.listen_address;
  const int port = conf_.listen_port;
  const std::string tls_ca_file = conf_.tls_ca_file;
  conf_ = conf;
  if (conf.clusters.size() != clusters.size()) {
    fc_error("reconfigure: the cluster list changed; restart flexcod to apply it");
  }
  if (conf.tls_ca_file != tls_ca_file) {
    // The clients were made with the old path (a renewed file at the same
    // path is read at every connection).
    fc_error("reconfigure: TLSCAFile changed; restart flexcod to apply it");
  }
  conf_.tls_ca_file = tls_ca_file;
  // A cluster's RendezvousURL applies to the part jobs submitted from now on.
  for (auto& c : clusters) {
    for (const auto& n : conf.clusters) {
      if (n.name == c.name) c.rendezvous_url = n.rendezvous_url;
    }
  }
  conf_.clusters = clusters;
  conf_.listen_address = listen_address;
  conf_.listen_port = port;
  for (auto& c : clusters_) {
    std::lock_guard<std::mutex> cl(c->m);
    c->breaker_failures = conf.breaker_failures;
    c->breaker_backoff = conf.breaker_backoff;
  }
}

std::shared_ptr<std::mutex> Engine::co_mutex(std::int64_t id) {
  std::lock_guard<std::mutex> lock(locks_mutex_);
  if (locks_.size() >= locks_prune_at_) {
    // A lock that only this map refers to is held by no one and about to
    // be taken by no one (a taker gets its copy here, under locks_mutex_):
    // dropping it is safe, the next co_mutex makes a new one.  So the map
    // holds the locks in use, not one per co-allocation ever seen.
    for (auto it = locks_.begin(); it != locks_.end();) {
      if (it->second.use_count() == 1) {
        it = locks_.erase(it);
      } else {
        ++it;
      }
    }
    constexpr std::size_t kMinLockPrune = 1024;
    locks_prune_at_ = std::max(kMinLockPrune, 2 * locks_.size());
  }
  auto& m = locks_[id];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

Engine::Cluster* Engine::cluster(const std::string& name) {
  for (auto& c : clusters_) {
    if (c->conf.name == name) return c.get();
  }
  return nullptr;
}

std::string Engine::owner_tag() const { return "flexcod-" + store_.instance(); }

std::string Engine::key(const CoRecord& co, int attempt, int idx, const char* what) const {
  return "flexcod-" + store_.instance() + "-" + store_.run() + "-" + std::to_string(co.id) + "-" +
         std::to_string(attempt) + "-" + std::to_string(idx) + "-" + what;
}

void Engine::bump(const std::string& what, std::int64_t n) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  counters_[what] += n;
}

void Engine::observe_cluster(const std::string& name, double seconds, bool answered, int status,
                             bool long_poll) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  if (!answered || status >= 500) cluster_failed_[name]++;
  if (long_poll) return;  // waits on purpose
  auto it = cluster_hist_.find(name);
  if (it == cluster_hist_.end()) {
    it = cluster_hist_.emplace(name, Histogram({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}))
             .first;
  }
  it->second.observe(seconds);
}

void Engine::count_request(int status) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  requests_[status]++;
}

}  // namespace flexcod
