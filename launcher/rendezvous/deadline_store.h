// A Store whose every call has a deadline. libtorch's TCPStore client blocks in recv(2) for as
// long as the server keeps the connection open without answering (a frozen node 0, a network
// partition): its own timeouts are the connect timeout or TCP's retransmission timeout, minutes.
// DeadlineStore runs the calls of one connection on a thread of its own and waits for each with
// a deadline (and, in slices, for an interrupt such as a pending SIGTERM), so no caller waits
// longer than `call_timeout` (a Wait: its own timeout plus `call_timeout`).
//
// A call that misses its deadline leaves the connection unusable (the thread is still inside it):
// every later call fails at once with kUnavailable. The thread is abandoned (detached) when the
// store is destroyed while a call still blocks; the process exits without waiting for it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/rendezvous_api.h"

namespace hetrun::launcher {

/// Returns the number of a shutdown signal received (SIGTERM...), or 0: polled while waiting.
using InterruptFn = std::function<int()>;

class DeadlineStore final : public Store {
 public:
  /// `what`: the store, for messages ("the rendezvous store at 10.0.0.1:29500").
  DeadlineStore(std::unique_ptr<Store> inner, std::chrono::milliseconds call_timeout,
                std::string what, InterruptFn interrupted = {});
  ~DeadlineStore() override;
  DeadlineStore(const DeadlineStore&) = delete;
  DeadlineStore& operator=(const DeadlineStore&) = delete;

  /// Polled every few milliseconds while a call runs; a non-zero signal number ends the wait
  /// with kUnavailable "interrupted by SIG...".
  void set_interrupt(InterruptFn interrupted) { interrupted_ = std::move(interrupted); }
  /// Changes the deadline of later calls (e.g. shorter once the process is shutting down).
  void set_call_timeout(std::chrono::milliseconds timeout) { call_timeout_ = timeout; }

  Status Set(const std::string& key, const std::string& value) override;
  Result<std::string> Get(const std::string& key) override;
  Result<std::string> SetIfAbsent(const std::string& key, const std::string& desired) override;
  Result<std::string> CompareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) override;
  Result<int64_t> Add(const std::string& key, int64_t delta) override;
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  Result<bool> Check(const std::vector<std::string>& keys) override;
  /// A new connection with its own thread and the same call timeout (no interrupt).
  Result<std::unique_ptr<Store>> Clone() override;

  uint64_t RequestCount() const override;

  /// Whether a call missed its deadline (the connection is then abandoned).
  bool broken() const;

 private:
  struct Shared;
  template <typename T>
  Result<T> Call(const std::string& op, std::chrono::milliseconds limit,
                 std::function<Result<T>(Store&)> body);

  std::shared_ptr<Shared> shared_;
  std::chrono::milliseconds call_timeout_;
  std::string what_;
  InterruptFn interrupted_;
};

}  // namespace hetrun::launcher
