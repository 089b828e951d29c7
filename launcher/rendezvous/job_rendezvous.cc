#include "rendezvous/job_rendezvous.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hetrun/base/units.h"

namespace hetrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kFirstKey = "hetrun/rdzv/first";
constexpr const char* kJoinedKey = "hetrun/rdzv/joined";
constexpr const char* kDoneKey = "hetrun/rdzv/done";
constexpr const char* kAbortKey = "hetrun/rdzv/abort";

std::string NodeKey(int rank) {
  return "hetrun/rdzv/node/" + std::to_string(rank);
}
std::string BeatKey(int rank) {
  return "hetrun/hb/" + std::to_string(rank);
}
std::string RoundKey(const std::string& name, int rank) {
  return "hetrun/round/" + name + "/" + std::to_string(rank);
}

std::string RankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

// The exit code part of "<seq> exit <code>", or nullopt for "<seq> running".
std::optional<int> ExitOf(const std::string& beat) {
  size_t at = beat.find(" exit ");
  if (at == std::string::npos) return std::nullopt;
  return std::atoi(beat.c_str() + at + 6);
}

}  // namespace

std::string EncodeStatus(const Status& status) {
  if (status.ok()) return "ok";
  return std::to_string(static_cast<int>(status.code())) + " " + status.message();
}

Status DecodeStatus(const std::string& text) {
  if (text == "ok") return Status::Ok();
  size_t space = text.find(' ');
  Result<int64_t> code =
      ParseIntInRange(text.substr(0, space), 1, static_cast<int>(StatusCode::kInternal));
  if (!code.ok() || space == std::string::npos) {
    return InternalError("unreadable rendezvous verdict '" + text.substr(0, 200) + "'");
  }
  return Status(static_cast<StatusCode>(*code), text.substr(space + 1));
}

JobRendezvous::JobRendezvous(std::unique_ptr<Store> store, RendezvousOptions options)
    : store_(std::move(store)), options_(std::move(options)) {
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) spdlog::warn("eventfd(peer failure): {}", std::strerror(errno));
  peer_done_.assign(static_cast<size_t>(std::max(options_.nnodes, 1)), false);
}

JobRendezvous::~JobRendezvous() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  if (event_fd_ >= 0) close(event_fd_);
}

Status JobRendezvous::WaitForKeys(const std::vector<std::string>& keys, Clock::time_point deadline,
                                  const std::string& what) {
  // Polls with Check rather than the store's blocking wait: c10d logs a warning for every wait
  // that times out, and the loop must also notice an abort published by another node.
  while (true) {
    Result<bool> all = store_->Check(keys);
    if (!all.ok()) {
      return UnavailableError("lost the rendezvous store at " + options_.endpoint + ": " +
                              all.status().message());
    }
    if (*all) return Status::Ok();
    Result<bool> aborted = store_->Check({kAbortKey});
    if (aborted.ok() && *aborted) {
      HETRUN_ASSIGN_OR_RETURN(std::string text, store_->Get(kAbortKey));
      return DecodeStatus(text);
    }
    if (Clock::now() >= deadline) return DeadlineExceededError(what);
    std::this_thread::sleep_for(milliseconds(5));
  }
}

void JobRendezvous::Fail(const Status& status) {
  if (status.ok()) return;
  (void)store_->SetIfAbsent(kAbortKey, EncodeStatus(status));
  (void)store_->SetIfAbsent(kDoneKey, EncodeStatus(status));
}

Result<std::vector<NodeRecord>> JobRendezvous::Join(const NodeRecord& mine) {
  const auto deadline = Clock::now() + options_.timeout;
  const std::string encoded = EncodeNodeRecord(mine);
  auto fail = [&](const Status& status) {
    Fail(status);
    return status;
  };
  HETRUN_ASSIGN_OR_RETURN(std::string first_text, store_->SetIfAbsent(kFirstKey, encoded));
  if (first_text != encoded) {
    HETRUN_ASSIGN_OR_RETURN(NodeRecord first, DecodeNodeRecord(first_text));
    if (Status same = CheckSameJob(first, mine); !same.ok()) return fail(same);
  }
  HETRUN_ASSIGN_OR_RETURN(std::string claimed,
                          store_->SetIfAbsent(NodeKey(mine.node_rank), encoded));
  if (claimed != encoded) {
    Result<NodeRecord> other = DecodeNodeRecord(claimed);
    std::string holder =
        other.ok() ? NodeLabel(*other) + " [" + other->instance + "]" : "another launcher";
    return fail(InvalidArgumentError("node rank " + std::to_string(mine.node_rank) +
                                     " claimed twice: by " + holder + " and by " + NodeLabel(mine) +
                                     " [" + mine.instance + "]"));
  }
  claimed_ = true;
  HETRUN_ASSIGN_OR_RETURN(int64_t joined, store_->Add(kJoinedKey, 1));
  spdlog::info("rendezvous at {}: joined as node {} ({} of {} nodes so far)", options_.endpoint,
               mine.node_rank, joined, options_.nnodes);
  if (joined == options_.nnodes) (void)store_->SetIfAbsent(kDoneKey, "ok");

  Status waited = WaitForKeys({kDoneKey}, deadline, "");
  if (waited.code() == StatusCode::kDeadlineExceeded && waited.message().empty()) {
    std::vector<int> present, missing;
    for (int r = 0; r < options_.nnodes; ++r) {
      Result<bool> has = store_->Check({NodeKey(r)});
      (has.ok() && *has ? present : missing).push_back(r);
    }
    return DeadlineExceededError(
        "rendezvous at " + options_.endpoint + " timed out after " +
        FormatDuration(options_.timeout) + ": " + std::to_string(present.size()) + " of " +
        std::to_string(options_.nnodes) + " nodes joined (node ranks joined: " + RankList(present) +
        "; missing: " + RankList(missing) + ")");
  }
  HETRUN_RETURN_IF_ERROR(waited);
  HETRUN_ASSIGN_OR_RETURN(std::string done, store_->Get(kDoneKey));
  HETRUN_RETURN_IF_ERROR(DecodeStatus(done));

  std::vector<NodeRecord> records;
  for (int r = 0; r < options_.nnodes; ++r) {
    HETRUN_ASSIGN_OR_RETURN(std::string text, store_->Get(NodeKey(r)));
    HETRUN_ASSIGN_OR_RETURN(NodeRecord record, DecodeNodeRecord(text));
    records.push_back(std::move(record));
  }
  HETRUN_RETURN_IF_ERROR(ValidateJob(records));
  return records;
}

Result<std::vector<std::string>> JobRendezvous::Exchange(const std::string& name,
                                                         const std::vector<int>& publishers,
                                                         const std::string& value) {
  const auto deadline = Clock::now() + options_.timeout;
  std::vector<std::string> keys;
  for (int r : publishers) keys.push_back(RoundKey(name, r));
  if (std::find(publishers.begin(), publishers.end(), options_.node_rank) != publishers.end()) {
    HETRUN_RETURN_IF_ERROR(store_->Set(RoundKey(name, options_.node_rank), value));
  }
  Status waited = WaitForKeys(keys, deadline, "");
  if (waited.code() == StatusCode::kDeadlineExceeded && waited.message().empty()) {
    std::vector<int> missing;
    for (int r : publishers) {
      Result<bool> has = store_->Check({RoundKey(name, r)});
      if (!has.ok() || !*has) missing.push_back(r);
    }
    return DeadlineExceededError("rendezvous round '" + name + "' timed out after " +
                                 FormatDuration(options_.timeout) +
                                 " (missing node ranks: " + RankList(missing) + ")");
  }
  HETRUN_RETURN_IF_ERROR(waited);
  std::vector<std::string> values;
  for (const std::string& key : keys) {
    HETRUN_ASSIGN_OR_RETURN(std::string text, store_->Get(key));
    values.push_back(std::move(text));
  }
  return values;
}

Status JobRendezvous::StartHeartbeat() {
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<Store> clone, store_->Clone());
  HETRUN_RETURN_IF_ERROR(store_->Set(BeatKey(options_.node_rank), "0 running"));
  claimed_ = true;  // only a launcher that holds its rank beats for it
  heartbeat_ =
      std::thread([this, store = std::move(clone)]() mutable { HeartbeatLoop(std::move(store)); });
  return Status::Ok();
}

void JobRendezvous::ArmSigterm() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sigterm_armed_) return;
  sigterm_armed_ = true;
  if (options_.sigterm_on_peer_failure && peer_failure_ && kill(getpid(), SIGTERM) != 0) {
    spdlog::warn("kill(self, SIGTERM): {}", std::strerror(errno));
  }
}

void JobRendezvous::SetPeerFailure(Status status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_failure_) return;
  spdlog::error("{}", status.message());
  peer_failure_ = std::move(status);
  if (options_.sigterm_on_peer_failure && sigterm_armed_ && kill(getpid(), SIGTERM) != 0) {
    spdlog::warn("kill(self, SIGTERM): {}", std::strerror(errno));
  }
  if (event_fd_ >= 0) {
    uint64_t one = 1;
    if (write(event_fd_, &one, sizeof(one)) < 0) {
      spdlog::warn("write(peer failure eventfd): {}", std::strerror(errno));
    }
  }
}

std::optional<Status> JobRendezvous::PeerFailure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer_failure_;
}

void JobRendezvous::HeartbeatLoop(std::unique_ptr<Store> store) {
  const int n = options_.nnodes;
  std::vector<std::string> last(n);
  std::vector<Clock::time_point> changed(n, Clock::now());
  uint64_t seq = 0;
  while (!stop_) {
    int code = exit_code_.load();
    std::string beat =
        std::to_string(++seq) + (code < 0 ? " running" : " exit " + std::to_string(code));
    Status set = store->Set(BeatKey(options_.node_rank), beat);
    if (!set.ok() && !PeerFailure()) {
      SetPeerFailure(UnavailableError("lost the rendezvous store on node 0 (" + options_.endpoint +
                                      "): " + set.message()));
    }
    for (int r = 0; r < n && set.ok() && !PeerFailure(); ++r) {
      if (r == options_.node_rank) continue;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (peer_done_[r]) continue;
      }
      Result<std::string> value = store->Get(BeatKey(r));
      auto now = Clock::now();
      if (value.ok() && *value != last[r]) {
        last[r] = *value;
        changed[r] = now;
        if (std::optional<int> exited = ExitOf(*value)) {
          if (*exited == 0) {
            std::lock_guard<std::mutex> lock(mutex_);
            peer_done_[r] = true;
          } else {
            SetPeerFailure(UnavailableError("node " + std::to_string(r) + " exited with " +
                                            std::to_string(*exited) +
                                            "; stopping this node's workers"));
          }
        }
      } else if (!value.ok() && value.status().code() != StatusCode::kNotFound) {
        SetPeerFailure(UnavailableError("lost the rendezvous store on node 0 (" +
                                        options_.endpoint + "): " + value.status().message()));
      } else if (now - changed[r] > options_.peer_timeout) {
        SetPeerFailure(UnavailableError(
            "node " + std::to_string(r) + " lost: no heartbeat for " +
            FormatDuration(std::chrono::duration_cast<milliseconds>(now - changed[r])) +
            " (peer timeout " + FormatDuration(options_.peer_timeout) + ")"));
      }
    }
    // Sleep in small steps so Finish() and the destructor are not held up.
    auto until = Clock::now() + options_.heartbeat_interval;
    while (!stop_ && Clock::now() < until) std::this_thread::sleep_for(milliseconds(20));
  }
}

void JobRendezvous::Finish(int exit_code) {
  exit_code_ = exit_code;
  // Stop watching first: once this node's exit code is out, node 0 may close the store.
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  // A launcher that lost the claim on its node rank must not speak for the one that holds it.
  if (claimed_) {
    (void)store_->Set(BeatKey(options_.node_rank), "final exit " + std::to_string(exit_code));
  }
  if (options_.node_rank == 0 && options_.nnodes > 1) {
    // The workers' store lives in this process: keep it up until every other node is finished
    // (published an exit code) or lost (no beat change for peer_timeout).
    std::vector<std::string> last(options_.nnodes);
    std::vector<Clock::time_point> changed(options_.nnodes, Clock::now());
    while (true) {
      bool waiting = false;
      for (int r = 1; r < options_.nnodes; ++r) {
        Result<bool> joined = store_->Check({NodeKey(r)});
        if (!joined.ok() || !*joined) continue;  // never joined: nothing of ours to read
        Result<std::string> value = store_->Get(BeatKey(r));
        if (value.ok() && ExitOf(*value)) continue;
        auto now = Clock::now();
        if (value.ok() && *value != last[r]) {
          last[r] = *value;
          changed[r] = now;
        }
        if (now - changed[r] <= options_.peer_timeout) waiting = true;
      }
      if (!waiting) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
}

}  // namespace hetrun::launcher
