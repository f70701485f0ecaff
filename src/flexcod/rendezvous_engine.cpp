// SPDX-License-Identifier: GPL-2.0-or-later
// rendezvous_engine.cpp - the start-up rendezvous of a co-allocation's
// parts (doc/one-program.md).  Each part job is given, with its
// submission, the URL its compute nodes reach flexcod at (RendezvousURL)
// and a capability token of its own; only the token's SHA-256 is stored.
// A running part registers its contact with its token and waits until
// every part of the current placement has; all are answered the same
// layout.  A part that has not registered RendezvousTimeout seconds after
// the first one did fails the co-allocation through the engine's fail
// path (every part cancelled, every reservation released, once), and
// every part still waiting is answered that it must abort, and why.
//
// A token is good for its own co-allocation only (403 for another's), for
// registering its own part and reading the layout, and only while its
// placement is the current one of a co-allocation that has not ended
// (401 token_expired after).  Tokens never reach a log.  See engine.hpp.

#include "flexcod/engine_internal.hpp"
#include "flexcod/rendezvous.hpp"

namespace flexcod {

using namespace engine_detail;

namespace {

bool ending(const std::string& state) {
  return state == "completed" || state == "failed" || state == "cancelled" || state == "cancelling";
}

}  // namespace

int Engine::rendezvous_timeout() {
  std::lock_guard<std::mutex> lock(conf_mutex_);
  return conf_.rendezvous_timeout > 0 ? conf_.rendezvous_timeout : conf_.part_start_skew;
}

std::string Engine::rendezvous_url(const std::string& cluster_name) {
  std::lock_guard<std::mutex> lock(conf_mutex_);
  for (const auto& c : conf_.clusters) {
    if (c.name == cluster_name && !c.rendezvous_url.empty()) return c.rendezvous_url;
  }
  if (!conf_.flexcod_url.empty()) return conf_.flexcod_url;
  return "http://" + conf_.listen_address + ":" + std::to_string(conf_.listen_port);
}

bool Engine::issue_rendezvous_token(const PartRecord& p, std::string* token, std::string* error) {
  if (!rendezvous::new_token(token)) {
    *error = "no randomness for a rendezvous token";
    return false;
  }
  RendezvousRecord r;
  r.co_id = p.co_id;
  r.attempt = p.attempt;
  r.idx = p.idx;
  r.token_hash = rendezvous::hash(*token);
  return store_.put_rendezvous_token(r, error);
}

// The current placement's parts as the layout shows them, and the
// barrier's deadline (0: nobody registered yet).
std::vector<rendezvous::PartView> Engine::rendezvous_view(const CoRecord& co, std::int64_t* deadline) {
  std::map<int, RendezvousRecord> rows;
  for (auto& r : store_.rendezvous_parts(co.id, co.attempt)) rows[r.idx] = r;
  std::vector<rendezvous::PartView> out;
  std::int64_t first = 0;
  for (const auto& p : store_.parts(co.id, true)) {
    if (p.attempt != co.attempt) continue;
    rendezvous::PartView v;
    v.idx = p.idx;
    v.cluster = p.cluster;
    v.node_count = p.nodes;
    v.node_list = p.node_list;
    auto it = rows.find(p.idx);
    if (it != rows.end() && it->second.registered > 0) {
      v.registered = true;
      v.reg.contact = it->second.contact;
      v.reg.nodes = it->second.nodes;
      v.reg.ranks = it->second.ranks;
      first = first == 0 ? it->second.registered : std::min(first, it->second.registered);
    }
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.idx < b.idx; });
  *deadline = first == 0 ? 0 : first + rendezvous_timeout();
  return out;
}

ApiResult Engine::rendezvous(const std::string& token, std::int64_t co_id, int part,
                             const rendezvous::Registration* reg, int wait) {
  const auto rec = store_.rendezvous_by_token(rendezvous::hash(token));
  if (!rec) return ApiError{401, "invalid_token", "invalid_token: no part holds this rendezvous token"};
  if (rec->co_id != co_id || (part >= 0 && rec->idx != part)) {
    return ApiError{403, "forbidden",
                    "this rendezvous token is part " + std::to_string(rec->idx) + "'s of co-" +
                        std::to_string(rec->co_id) +
                        ": it registers that part and reads that co-allocation's layout only"};
  }
  auto co = store_.get_coalloc(co_id);
  auto expired = [&](const std::string& why) {
    return ApiError{401, "token_expired", "token_expired: the rendezvous token of part " +
                                              std::to_string(rec->idx) + " of co-" +
                                              std::to_string(co_id) + " has expired: " + why};
  };
  if (!co) return expired("the co-allocation is gone");
  if (co->state == "completed" || co->state == "failed" || co->state == "cancelled") {
    return expired("the co-allocation has ended (" + co->state +
                   (co->reason.empty() ? "" : ": " + co->reason) + ")");
  }
  if (co->attempt != rec->attempt) return expired("the co-allocation was placed anew (moved) since");
  if (co->state == "cancelling") {
    return ApiError{409, "rendezvous_aborted", "abort: co-" + std::to_string(co_id) + " is being cancelled: " + co->reason};
  }
  if (co->state != "scheduled" && co->state != "running") {
    return ApiError{409, "not_started", "co-" + std::to_string(co_id) + " is " + co->state};
  }
  auto aborted = [&](const std::string& why) {
    return ApiError{409, "rendezvous_aborted", "abort: co-" + std::to_string(co_id) + " " + why};
  };
  {
    std::lock_guard<std::mutex> g(rdv_mutex_);
    auto a = rdv_abort_.find(co_id);
    if (a != rdv_abort_.end()) return aborted("failed: " + a->second);
  }
  std::int64_t deadline = 0;
  auto view = rendezvous_view(*co, &deadline);
  if (reg != nullptr) {
    const auto mine = std::find_if(view.begin(), view.end(), [&](const auto& v) { return v.idx == rec->idx; });
    if (mine == view.end()) return expired("its part is not in the current placement");
    if (mine->registered && mine->reg == *reg) {
      // the same registration again (a retry): the same answer
    } else if (mine->registered && rendezvous::complete(view)) {
      return ApiError{409, "already_registered",
                      "part " + std::to_string(rec->idx) +
                          " registered otherwise and every part has: the layout is fixed"};
    } else if (!mine->registered && deadline != 0 && now_seconds() > deadline) {
      return ApiError{409, "rendezvous_aborted",
                      "abort: the rendezvous of co-" + std::to_string(co_id) + " closed at " +
                          slurm_time(deadline) + " (RendezvousTimeout) before this part registered"};
    } else {
      RendezvousRecord r = *rec;
      r.registered = mine->registered ? rec->registered : now_seconds();
      r.contact = reg->contact;
      r.nodes = reg->nodes;
      r.ranks = reg->ranks;
      std::string err;
      if (!store_.register_rendezvous(r, &err)) {
        fc_error("co-%ld: part %d: rendezvous: %s", (long)co_id, rec->idx, err.c_str());
        return ApiError{503, "store_failed", "the registration could not be written; retry"};
      }
      fc_info("co-%ld: part %d on %s registered at the rendezvous (%ld ranks)", (long)co_id,
              rec->idx, mine->cluster.c_str(), (long)(reg->ranks > 0 ? reg->ranks : mine->node_count));
      bump("rendezvous.registered");
      {
        std::lock_guard<std::mutex> g(rdv_mutex_);
        ++rdv_gen_;
      }
      rdv_cv_.notify_all();
      view = rendezvous_view(*co, &deadline);
    }
  }
  // Wait for the last part, the co-allocation's end or `wait` seconds,
  // reading the database again at every registration and every second.
  // A waiter is counted, so that a failure tells it before it cancels
  // the part jobs (watch_rendezvous).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(wait);
  struct Waiting {
    Engine& e;
    std::int64_t id;
    Waiting(Engine& en, std::int64_t i) : e(en), id(i) {
      std::lock_guard<std::mutex> g(e.rdv_mutex_);
      ++e.rdv_waiters_[id];
    }
    ~Waiting() {
      {
        std::lock_guard<std::mutex> g(e.rdv_mutex_);
        if (--e.rdv_waiters_[id] <= 0) e.rdv_waiters_.erase(id);
      }
      e.rdv_cv_.notify_all();
    }
  };
  std::optional<Waiting> waiting;
  if (wait > 0 && !rendezvous::complete(view)) waiting.emplace(*this, co_id);
  while (!rendezvous::complete(view) && !stopping_ && std::chrono::steady_clock::now() < until) {
    {
      std::unique_lock<std::mutex> g(rdv_mutex_);
      const std::uint64_t gen = rdv_gen_;
      rdv_cv_.wait_until(g, std::min(until, std::chrono::steady_clock::now() + std::chrono::seconds(1)),
                         [&] { return rdv_gen_ != gen || stopping_ || rdv_abort_.count(co_id); });
      auto a = rdv_abort_.find(co_id);
      if (a != rdv_abort_.end()) return aborted("failed: " + a->second);
    }
    co = store_.get_coalloc(co_id);
    if (!co || ending(co->state) || co->attempt != rec->attempt) {
      return aborted(!co ? "is gone"
                         : co->attempt != rec->attempt ? "was placed anew"
                                                       : co->state + ": " + co->reason);
    }
    view = rendezvous_view(*co, &deadline);
  }
  Answer a;
  a.body.reset(rendezvous::layout_json(co_id, rec->idx, view, deadline));
  if (!a.body) return ApiError{503, "no_memory", "out of memory"};
  return a;
}

void Engine::watch_rendezvous() {
  const std::int64_t timeout = rendezvous_timeout();
  for (std::int64_t id : store_.rendezvous_open()) {
    if (stopping_) return;
    auto m = co_mutex(id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a request or an event holds it: next round
    auto co = store_.get_coalloc(id);
    if (!co || (co->state != "scheduled" && co->state != "running")) continue;
    std::int64_t deadline = 0;
    const auto view = rendezvous_view(*co, &deadline);
    if (deadline == 0 || rendezvous::complete(view) || now_seconds() <= deadline) continue;
    std::string missing;
    for (const auto& v : view) {
      if (v.registered) continue;
      missing += (missing.empty() ? "" : ", ") + std::string("part ") + std::to_string(v.idx) +
                 " on " + v.cluster;
    }
    auto parts = store_.parts(co->id, true);
    set_state(*co, CoState::kFailed);
    co->reason = "the start-up rendezvous failed: " + missing + " did not register within " +
                 std::to_string(timeout) +
                 " s of the first part (RendezvousTimeout); every part was cancelled and every "
                 "reservation released";
    fc_error("co-%ld: %s", (long)co->id, co->reason.c_str());
    bump("rendezvous.failed");
    // The parts that wait are told first (for at most kAbortTell s), so
    // that they can say why before their jobs are cancelled.
    {
      std::unique_lock<std::mutex> g(rdv_mutex_);
      rdv_abort_[id] = co->reason;
      rdv_cv_.notify_all();
      rdv_cv_.wait_for(g, std::chrono::seconds(kAbortTell), [&] { return rdv_waiters_.count(id) == 0; });
    }
    fail_and_release(*co, parts);
    lock.unlock();
    {
      std::lock_guard<std::mutex> g(rdv_mutex_);
      rdv_abort_.erase(id);
      ++rdv_gen_;
    }
    rdv_cv_.notify_all();
  }
}

}  // namespace flexcod
