// The job-wide rendezvous of the launchers (one per node) over a Store, and the heartbeats that
// notice a node that vanishes afterwards. Store keys (all under "hetrun/"):
//   rdzv/first        the first joiner's record: every later joiner checks it belongs to the same
//                     job (nnodes, world size, hetrun and NCCL versions) -> exit 78 naming both
//   rdzv/node/<r>     node r's record, claimed once: a second claimant -> exit 78 naming both
//   rdzv/joined       counter; the joiner that makes it nnodes sets rdzv/done
//   rdzv/done         "ok", or an encoded error that every waiting node returns as its own
//   round/<name>/<r>  later all-gathers among the nodes (the job-wide kernel-image verdicts)
//   hb/<r>            "<seq> running" every heartbeat interval, "<seq> exit <code>" at the end
// Every node reads the same records and runs the same checks, so all reach the same verdict.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/job/node_record.h"
#include "rendezvous/rendezvous_api.h"

namespace hetrun::launcher {

struct RendezvousOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string endpoint;  ///< "MASTER_ADDR:MASTER_PORT", for messages
  /// --rdzv-timeout: how long to wait for every node (and for each later round).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// How often a node beats, and after how long without a beat a peer counts as lost.
  std::chrono::milliseconds heartbeat_interval{std::chrono::seconds(1)};
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(15)};
  /// On a peer failure, also send SIGTERM to this process, so the supervisor's signal loop stops
  /// the local workers at once (hetrun run); the caller then reports PeerFailure() (exit 75).
  /// Only once ArmSigterm() was called: before the supervisor blocks SIGTERM, the signal would
  /// kill hetrun by its default action.
  bool sigterm_on_peer_failure = false;
};

class JobRendezvous {
 public:
  JobRendezvous(std::unique_ptr<Store> store, RendezvousOptions options);
  ~JobRendezvous();  ///< stops the heartbeat thread
  JobRendezvous(const JobRendezvous&) = delete;
  JobRendezvous& operator=(const JobRendezvous&) = delete;

  /// Publishes `mine` and waits for every node. Returns all records ordered by node rank, checked
  /// with ValidateJob. kDeadlineExceeded (exit 75) listing joined and missing node ranks;
  /// kInvalidArgument (exit 78) for a duplicate rank or a different job; kUnavailable when the
  /// store is lost.
  Result<std::vector<NodeRecord>> Join(const NodeRecord& mine);

  /// All-gather of one string among `publishers` (node ranks): this node publishes `value` when
  /// it is one of them; returns the values in the order of `publishers`. Same timeout and errors
  /// as Join; an error another node published with Fail() is returned as this node's.
  Result<std::vector<std::string>> Exchange(const std::string& name,
                                            const std::vector<int>& publishers,
                                            const std::string& value);

  /// Tells every node waiting in Join or Exchange to fail with `status` (same code, same text).
  void Fail(const Status& status);

  /// Starts beating and watching the peers on a background thread (its own store connection).
  Status StartHeartbeat();

  /// The first peer failure seen: a node without a beat for peer_timeout, a node that exited with
  /// a non-zero code, or the store (node 0) lost. kUnavailable (exit 75). nullopt while all is
  /// well.
  std::optional<Status> PeerFailure() const;

  /// Called once the supervisor reads SIGTERM from its signalfd: from now on a peer failure sends
  /// SIGTERM (with sigterm_on_peer_failure), and one seen before is sent now.
  void ArmSigterm();

  /// A file descriptor that becomes readable when PeerFailure() is set (for a poll loop).
  int peer_failure_fd() const { return event_fd_; }

  /// Publishes this node's exit code. Node 0 hosts the store, so it then waits until every other
  /// node that joined has published its own or is lost (no beat change for peer_timeout): the
  /// workers' store, and the records the others still read, must outlive them.
  void Finish(int exit_code);

 private:
  Status WaitForKeys(const std::vector<std::string>& keys,
                     std::chrono::steady_clock::time_point deadline, const std::string& what);
  void HeartbeatLoop(std::unique_ptr<Store> store);
  void SetPeerFailure(Status status);

  std::unique_ptr<Store> store_;
  RendezvousOptions options_;
  int event_fd_ = -1;
  std::thread heartbeat_;
  std::atomic<bool> stop_{false};
  std::atomic<int> exit_code_{-1};  ///< set by Finish; the heartbeat publishes it
  mutable std::mutex mutex_;
  std::optional<Status> peer_failure_;
  std::vector<bool> peer_done_;  ///< guarded by mutex_: peers that published exit 0
  bool claimed_ = false;         ///< this launcher holds its node rank (Join claimed it)
  bool sigterm_armed_ = false;   ///< guarded by mutex_: see ArmSigterm
};

/// "ok" or "<code number> <message>", for rdzv/done.
std::string EncodeStatus(const Status& status);
Status DecodeStatus(const std::string& text);

}  // namespace hetrun::launcher
