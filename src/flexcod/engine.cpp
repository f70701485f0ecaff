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

Engine::Engine(const flexco::conf::FlexcodConf& conf, Store& store, flexco::auth::Signer signer)
    : conf_(conf), store_(store) {
  started_ = now_seconds();
  for (const auto& cc : conf.clusters) {
    auto c = std::make_unique<Cluster>();
    c->conf = cc;
    http::ClientConfig hc;
    hc.base_url = cc.url;
    hc.audience = cc.name;  // must be the cluster's ClusterName (doc/auth.md)
    hc.connect_timeout_ms = 1000L * conf.connect_timeout;
    hc.total_timeout_ms = 1000L * conf.request_timeout;
    auto client = http::Client::create(hc, signer);
    if (client.ok()) {
      c->client = std::make_unique<http::PluginClient>(std::move(client).value());
    } else {
      fc_error("cluster %s: %s", cc.name.c_str(), client.error().message.c_str());
    }
    c->event_seq = store_.event_seq(cc.name);
    clusters_.push_back(std::move(c));
  }
}

Engine::~Engine() { stop(); }

bool Engine::wait_stop(int ms) {
  std::unique_lock<std::mutex> lock(stop_mutex_);
  return stop_cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
}

void Engine::start() {
  recover_db();
  for (std::size_t i = 0; i < clusters_.size(); ++i) {
    if (!clusters_[i]->client) continue;
    threads_.emplace_back([this, i] { cluster_loop(i); });
    if (conf_.availability_mode == "publish") threads_.emplace_back([this, i] { publish_loop(i); });
  }
  threads_.emplace_back([this] { reap_loop(); });
  threads_.emplace_back([this] { resched_loop(); });
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
}

void Engine::reload(const flexco::conf::FlexcodConf& conf) {
  std::lock_guard<std::mutex> lock(conf_mutex_);
  auto clusters = conf_.clusters;
  auto listen_address = conf_.listen_address;
  const int port = conf_.listen_port;
  conf_ = conf;
  if (conf.clusters.size() != clusters.size()) {
    fc_error("reconfigure: the cluster list changed; restart flexcod to apply it");
  }
  conf_.clusters = clusters;
  conf_.listen_address = listen_address;
  conf_.listen_port = port;
}

std::shared_ptr<std::mutex> Engine::co_mutex(std::int64_t id) {
  std::lock_guard<std::mutex> lock(locks_mutex_);
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

void Engine::count_request(int status) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  requests_[status]++;
}

}  // namespace flexcod
