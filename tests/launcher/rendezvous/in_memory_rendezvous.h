// The rendezvous tests' fixture: an in-memory Store shared by several launchers (threads), with
// a frozen or lost state, and helpers to join every node at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/job_rendezvous.h"

namespace hetrun::launcher {
namespace {

using namespace std::chrono_literals;

// One store state shared by every connection; `down` simulates node 0 going away.
// `frozen` simulates a node 0 that keeps its connections open but never answers; `requests`
// counts every call (the load at the store).
struct SharedState {
  std::mutex mutex;
  std::map<std::string, std::string> data;
  bool down = false;
  bool frozen = false;
  std::condition_variable thawed;
  int64_t requests = 0;
};

// Taken at the start of every call: counts it and blocks while the store is frozen.
std::unique_lock<std::mutex> Enter(SharedState& state) {
  std::unique_lock<std::mutex> lock(state.mutex);
  state.thawed.wait(lock, [&] { return !state.frozen; });
  ++state.requests;
  return lock;
}

class InMemoryStore final : public Store {
 public:
  explicit InMemoryStore(std::shared_ptr<SharedState> state) : state_(std::move(state)) {}
  Status Set(const std::string& key, const std::string& value) override {
    auto lock = Enter(*state_);
    if (state_->down) return UnavailableError("connection reset");
    state_->data[key] = value;
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& key) override {
    auto lock = Enter(*state_);
    if (state_->down) return UnavailableError("connection reset");
    auto it = state_->data.find(key);
    if (it == state_->data.end()) return NotFoundError(key);
    return it->second;
  }
  Result<std::string> SetIfAbsent(const std::string& key, const std::string& desired) override {
    auto lock = Enter(*state_);
    if (state_->down) return UnavailableError("connection reset");
    return state_->data.emplace(key, desired).first->second;
  }
  Result<std::string> CompareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) override {
    auto lock = Enter(*state_);
    if (state_->down) return UnavailableError("connection reset");
    std::string& value = state_->data[key];
    if (value == expected) value = desired;
    return value;
  }
  Result<int64_t> Add(const std::string& key, int64_t delta) override {
    auto lock = Enter(*state_);
    if (state_->down) return UnavailableError("connection reset");
    std::string& v = state_->data[key];
    int64_t n = (v.empty() ? 0 : std::stoll(v)) + delta;
    v = std::to_string(n);
    return n;
  }
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      Result<bool> all = Check(keys);
      if (!all.ok()) return all.status();
      if (*all) return Status::Ok();
      if (std::chrono::steady_clock::now() >= deadline) return DeadlineExceededError("wait");
      std::this_thread::sleep_for(2ms);
    }
  }
  Result<bool> Check(const std::vector<std::string>& keys) override {
    auto lock = Enter(*state_);
    if (state_->down) return UnavailableError("connection reset");
    for (const std::string& key : keys) {
      if (!state_->data.count(key)) return false;
    }
    return true;
  }
  Result<std::unique_ptr<Store>> Clone() override {
    return std::unique_ptr<Store>(std::make_unique<InMemoryStore>(state_));
  }

 private:
  std::shared_ptr<SharedState> state_;
};

NodeRecord Record(int rank, int nnodes) {
  NodeRecord r;
  r.hostname = "host-" + std::to_string(rank);
  r.node_rank = rank;
  r.nnodes = nnodes;
  r.world_size = nnodes;
  r.local_world_size = 1;
  r.instance = r.hostname + ":" + std::to_string(rank);
  r.hetrun_version = "0.1.0";
  return r;
}

RendezvousOptions Options(int rank, int nnodes, std::chrono::milliseconds timeout = 5s) {
  RendezvousOptions o;
  o.nnodes = nnodes;
  o.node_rank = rank;
  o.endpoint = "test:0";
  o.timeout = timeout;
  o.heartbeat_interval = 20ms;
  o.peer_timeout = 300ms;
  return o;
}

// Runs Join for every record on its own thread; returns each node's result. `auths[i]`, when
// given, is record i's RecordAuth; `delays[i]` how long record i waits before it joins.
std::vector<Result<std::vector<NodeRecord>>> JoinAll(
    std::shared_ptr<SharedState> state, const std::vector<NodeRecord>& records, int nnodes,
    std::chrono::milliseconds timeout = 5s, const std::vector<RecordAuth>& auths = {},
    const std::vector<std::chrono::milliseconds>& delays = {}) {
  std::vector<std::optional<Result<std::vector<NodeRecord>>>> out(records.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < records.size(); ++i) {
    threads.emplace_back([&, i] {
      if (i < delays.size()) std::this_thread::sleep_for(delays[i]);
      RendezvousOptions o = Options(records[i].node_rank, nnodes, timeout);
      if (i < auths.size()) o.auth = auths[i];
      JobRendezvous rdzv(std::make_unique<InMemoryStore>(state), o);
      out[i] = rdzv.Join(records[i]);
    });
  }
  for (auto& t : threads) t.join();
  std::vector<Result<std::vector<NodeRecord>>> results;
  for (auto& r : out) results.push_back(std::move(*r));
  return results;
}

}  // namespace
}  // namespace hetrun::launcher
