#include "rendezvous/deadline_store.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "hetrun/base/units.h"
#include "supervise/signal_set.h"

namespace hetrun::launcher {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the caller and the connection's thread share; it outlives a DeadlineStore whose thread
// was abandoned inside a call.
struct DeadlineStore::Shared {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;
  bool stop = false;
  bool busy = false;
  bool broken = false;
  std::unique_ptr<Store> inner;
  std::thread thread;

  void Loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      std::function<void()> job = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      job();
      lock.lock();
      busy = false;
    }
  }
};

DeadlineStore::DeadlineStore(std::unique_ptr<Store> inner, milliseconds call_timeout,
                             std::string what, InterruptFn interrupted)
    : shared_(std::make_shared<Shared>()),
      call_timeout_(std::max(call_timeout, milliseconds(1))),
      what_(std::move(what)),
      interrupted_(std::move(interrupted)) {
  shared_->inner = std::move(inner);
  // The thread blocks every signal: process-directed signals stay for the main thread's
  // signalfd (or default action), never this thread's.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  shared_->thread = std::thread([shared = shared_] { shared->Loop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

DeadlineStore::~DeadlineStore() {
  bool abandon = false;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stop = true;
    shared_->queue.clear();
    abandon = shared_->busy;
    shared_->changed.notify_all();
  }
  // A call still inside the store may never return (frozen peer): leave it behind.
  if (abandon) {
    shared_->thread.detach();
    NoteAbandonedThread();
  } else {
    shared_->thread.join();
  }
}

uint64_t DeadlineStore::RequestCount() const {
  return shared_->inner->RequestCount();  // the inner store counts atomically
}

bool DeadlineStore::broken() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->broken;
}

template <typename T>
Result<T> DeadlineStore::Call(const std::string& op, milliseconds limit,
                              std::function<Result<T>(Store&)> body) {
  auto slot = std::make_shared<std::optional<Result<T>>>();
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->broken) {
      return UnavailableError(what_ + " is unreachable (an earlier call got no answer)");
    }
    shared_->queue.push_back([shared = shared_, slot, body = std::move(body)] {
      Result<T> result = body(*shared->inner);
      std::lock_guard<std::mutex> lock(shared->mutex);
      *slot = std::move(result);
      shared->changed.notify_all();
    });
    shared_->changed.notify_all();
  }
  const auto deadline = Clock::now() + limit;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(shared_->mutex);
      shared_->changed.wait_for(lock, milliseconds(20), [&] { return slot->has_value(); });
      if (slot->has_value()) return std::move(**slot);
      if (Clock::now() >= deadline) {
        shared_->broken = true;
        return UnavailableError(what_ + " did not answer " + op + " within " +
                                FormatDuration(limit) + " (frozen or unreachable)");
      }
    }
    if (interrupted_) {
      if (int signal = interrupted_(); signal != 0) {
        return UnavailableError("interrupted by " + SignalName(signal) + " during " + op);
      }
    }
  }
}

Status DeadlineStore::Set(const std::string& key, const std::string& value) {
  return Call<bool>("set " + key, call_timeout_,
                    [key, value](Store& s) -> Result<bool> {
                      HETRUN_RETURN_IF_ERROR(s.Set(key, value));
                      return true;
                    })
      .status();
}

Result<std::string> DeadlineStore::Get(const std::string& key) {
  return Call<std::string>("get " + key, call_timeout_, [key](Store& s) { return s.Get(key); });
}

Result<std::string> DeadlineStore::SetIfAbsent(const std::string& key, const std::string& desired) {
  return Call<std::string>("set " + key, call_timeout_,
                           [key, desired](Store& s) { return s.SetIfAbsent(key, desired); });
}

Result<std::string> DeadlineStore::CompareSet(const std::string& key, const std::string& expected,
                                              const std::string& desired) {
  return Call<std::string>("compare-set " + key, call_timeout_, [key, expected, desired](Store& s) {
    return s.CompareSet(key, expected, desired);
  });
}

Result<int64_t> DeadlineStore::Add(const std::string& key, int64_t delta) {
  return Call<int64_t>("add " + key, call_timeout_,
                       [key, delta](Store& s) { return s.Add(key, delta); });
}

Status DeadlineStore::Wait(const std::vector<std::string>& keys, milliseconds timeout) {
  return Call<bool>("wait", timeout + call_timeout_,
                    [keys, timeout](Store& s) -> Result<bool> {
                      HETRUN_RETURN_IF_ERROR(s.Wait(keys, timeout));
                      return true;
                    })
      .status();
}

Result<bool> DeadlineStore::Check(const std::vector<std::string>& keys) {
  return Call<bool>("check", call_timeout_, [keys](Store& s) { return s.Check(keys); });
}

Result<std::unique_ptr<Store>> DeadlineStore::Clone() {
  HETRUN_ASSIGN_OR_RETURN(
      std::unique_ptr<Store> inner,
      Call<std::unique_ptr<Store>>("clone", call_timeout_, [](Store& s) { return s.Clone(); }));
  return std::unique_ptr<Store>(
      std::make_unique<DeadlineStore>(std::move(inner), call_timeout_, what_));
}

}  // namespace hetrun::launcher
