// The job-wide rendezvous of the launchers (one per node) over a Store, and the liveness watch
// that notices a node that vanishes afterwards. Store keys (under RecordAuth::key_prefix(),
// "hetrun/" without a job secret; every value sealed by RecordAuth, and every one after
// rdzv/nonce bound to that nonce, so records of an earlier incarnation never verify):
//   rdzv/nonce        node 0's fresh nonce for this rendezvous (a random UUID), set first; the
//                     others wait for it. Node 0 puts it back while it waits, should it change.
//   rdzv/first        the first joiner's record: every later joiner checks it belongs to the same
//                     job (nnodes, world size, hetrun and NCCL versions) -> exit 78 naming both
//   rdzv/node/<r>     node r's record, claimed once: a second claimant -> exit 75 (transient)
//                     naming both. The rendezvous is complete once every node's record is there
//                     and verifies (no counter: an unauthenticated add cannot complete it).
//   rdzv/abort        an encoded error that every waiting node returns as its own
//   round/<name>/<r>  later all-gathers among the nodes (the job-wide kernel-image verdicts)
//   hb/<r>            node r > 0: "<seq> running" every heartbeat interval, "<seq> exit <code>"
//   live              node 0's aggregate, every interval: "<seq>\n<node 0: running | exit N>\n
//                     <0 | the next attempt K and why, when a restart was asked for>\n
//                     <ok | the first failure it saw>"
//   restart/<K>       a job-wide restart to attempt K was asked for (first asker's reason)
//   restart/<K>/arrived/<r>  node r is at the barrier before attempt K; every node passes once
//                     all of them are there and verify
//   end/<name>/<r>    node r > 0's end-of-run record (Leave; the pipeline's measurements), set
//                     once before its final exit code; node 0 reads them after Finish
// Outside the prefix, readable whatever the secret (diagnosis only, never acted on early):
//   hetrun-probe/<r>  node r's "node r on HOST, secret from SOURCE[, incarnation N]", sealed
//                     without the nonce, and inside that also without the incarnation. At
//                     --rdzv-timeout, when every missing node rank has a probe that fails this
//                     node's MAC, the nodes do not share the secret: exit 78 naming its source
//                     -- unless the probe verifies without the incarnation: then it is a stale
//                     peer of another incarnation of this job (75; StalePeer).
// Liveness is linear in the node count: every node writes one beat and reads one record per
// interval; only node 0 reads the beats. Waits use the store's blocking wait in slices.
// Every call has a deadline (DeadlineStore): a frozen node 0 is noticed within --peer-timeout.
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
#include "rendezvous/attempt_store.h"
#include "rendezvous/deadline_store.h"
#include "rendezvous/record_auth.h"
#include "rendezvous/rendezvous_api.h"

namespace hetrun::launcher {

struct RendezvousOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string endpoint;  ///< "MASTER_ADDR:MASTER_PORT", for messages
  /// --rdzv-timeout: how long to wait for every node (and for each later round).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// How often a node beats, and after how long without a beat a peer counts as lost. No store
  /// call waits longer than peer_timeout for an answer.
  std::chrono::milliseconds heartbeat_interval{std::chrono::seconds(1)};
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(15)};
  /// On a peer failure, also send SIGTERM to this process, so the supervisor's signal loop stops
  /// the local workers at once (hetrun run); the caller then reports PeerFailure() (exit 75).
  /// Only between ArmSigterm() and DisarmSigterm().
  bool sigterm_on_peer_failure = false;
  /// Polled by every wait of the calling thread: a shutdown signal received (its number) ends
  /// Join, Exchange and node 0's final wait in Finish at once.
  InterruptFn interrupted;
  RecordAuth auth;
  /// The same secret and run id without the incarnation (disabled when the pod knows none): node
  /// probes carry a MAC under it too, so a node 0 of another incarnation of this job (a pod
  /// still terminating after a restart) is told from another secret: a stale peer, transient
  /// (75, or wait for the new node 0), never "do not share the job secret" (78).
  RecordAuth any_incarnation;
};

class JobRendezvous {
 public:
  JobRendezvous(std::unique_ptr<Store> store, RendezvousOptions options);
  ~JobRendezvous();  ///< stops the heartbeat thread
  JobRendezvous(const JobRendezvous&) = delete;
  JobRendezvous& operator=(const JobRendezvous&) = delete;

  /// Publishes `mine` and waits for every node. Returns all records ordered by node rank, checked
  /// with ValidateJob. kDeadlineExceeded (exit 75) listing joined and missing node ranks;
  /// kInvalidArgument (exit 78) for a different job, or at the timeout when every missing node
  /// rank was claimed with records that fail this node's MAC (another secret); kUnavailable
  /// (exit 75) for a duplicate rank, when the store is lost or a shutdown signal arrived (the
  /// other nodes are then told).
  Result<std::vector<NodeRecord>> Join(const NodeRecord& mine);

  /// After a failed Join: the store belonged to another incarnation of this job (its node 0's
  /// probe verifies only without the incarnation), so the caller may connect again and wait for
  /// the new node 0. The status was then kUnavailable (75).
  bool StalePeer() const { return stale_peer_; }

  /// All-gather of one string among `publishers` (node ranks): this node publishes `value` when
  /// it is one of them; returns the values in the order of `publishers`. Same timeout and errors
  /// as Join; an error another node published with Fail() is returned as this node's.
  Result<std::vector<std::string>> Exchange(const std::string& name,
                                            const std::vector<int>& publishers,
                                            const std::string& value);

  /// Tells every node waiting in Join or Exchange to fail with `status` (same code, same text).
  void Fail(const Status& status);

  /// Starts beating and watching on a background thread (its own store connection).
  Status StartHeartbeat();

  /// The first peer failure seen: a node without a beat for peer_timeout, a node that exited with
  /// a non-zero code, or the store (node 0) lost or frozen. kUnavailable (exit 75). nullopt while
  /// all is well.
  std::optional<Status> PeerFailure() const;

  /// Called once the supervisor reads SIGTERM from its signalfd: from now on a peer failure sends
  /// SIGTERM (with sigterm_on_peer_failure), and one seen before is sent now.
  void ArmSigterm();
  /// Called when supervision ends: no more SIGTERM to self.
  void DisarmSigterm();

  /// Replaces the interrupt poll (hetrun run installs a new signal watch for the final wait).
  void set_interrupt(InterruptFn interrupted);

  /// A file descriptor that becomes readable when PeerFailure() is set (for a poll loop).
  int peer_failure_fd() const { return event_fd_; }

  /// Job-wide restarts (--max-restarts in a multi-node job). Readable (level-triggered) once
  /// another node asked for the next attempt: the supervisor stops the local workers.
  int restart_fd() const { return restart_fd_; }
  /// Why the job restarts ("node 1 asked for attempt 1: its workers failed").
  std::string RestartReason() const;
  /// Whether the restart asked for is a node's re-plan by restart (BeginAttempt's `replan`).
  bool RestartIsReplan() const;
  /// Before attempt `attempt` > 0: asks every node for it (the first asker's reason is kept),
  /// then waits until every node has arrived at it, so all start attempt `attempt` together and
  /// the workers use the same store prefix (TORCHELASTIC_RESTART_COUNT). `layout` describes the
  /// layout this node's workers will run (empty: none); once all arrived, every node compares
  /// every node's with node 0's and all fail alike (kFailedPrecondition, exit 78, naming each
  /// differing node's) when one differs. kDeadlineExceeded after the rendezvous timeout;
  /// kUnavailable on a peer failure or a pending shutdown signal.
  /// `replan`: the attempt follows this node's agreed re-plan (RestartIsReplan on the others).
  /// Node 0 passes the store it opened for the attempt (rendezvous/attempt_store.h); every node
  /// gets node 0's back (nullopt when node 0 opened none).
  Result<std::optional<AttemptMeeting>> BeginAttempt(
      int attempt, const std::string& layout = "", bool replan = false,
      const std::optional<AttemptMeeting>& meeting = std::nullopt);

  /// End of run, before Finish: node r > 0 leaves `value` (sealed like every record, at most
  /// RecordAuth::kMaxRecordBytes: larger is kInvalidArgument) under end/<name>/<r>, so node 0
  /// finds it once Finish has seen this node's exit code. Node 0 keeps nothing: no-op.
  Status Leave(const std::string& name, const std::string& value);
  static constexpr size_t kMaxLeftBytes = RecordAuth::kMaxRecordBytes - 4096;
  /// Node 0, after Finish: what every other node left under `name` (index r - 1 for node r),
  /// nullopt for a node that left nothing, was lost, or whose record fails authentication.
  std::vector<std::optional<std::string>> CollectLeft(const std::string& name);

  /// Publishes this node's exit code. Node 0 hosts the store, so it then waits until every other
  /// node that joined has published its own or is lost (no beat change for peer_timeout since
  /// its last one; a node already declared lost is not waited for again), or until interrupted.
  void Finish(int exit_code);

  /// The records' authentication, bound to node 0's nonce once Join has it (the same on every
  /// node of the rendezvous).
  const RecordAuth& auth() const { return auth_; }

 private:
  struct Peer {
    std::string last;
    std::chrono::steady_clock::time_point changed;
    bool settled = false;  ///< exited or lost: nothing more to wait for
  };

  std::string Key(const std::string& name) const { return options_.auth.key_prefix() + name; }
  Status AgreeOnSession(std::chrono::steady_clock::time_point deadline);
  void BetweenWaits();
  Status JoinFailed(const Status& waited);
  Result<std::vector<NodeRecord>> JoinSteps(const NodeRecord& mine);
  Status Redacted(const Status& status) const;
  std::optional<Status> SecretMismatch(const std::vector<int>& missing, const std::string& why);
  bool OfAnotherIncarnation(const std::string& key, const std::string& raw) const;
  Status WaitAtBarrier(const std::string& k, std::chrono::steady_clock::time_point deadline);
  Result<std::optional<AttemptMeeting>> CheckSameLayouts(const std::string& k);
  Status Put(Store& store, const std::string& key, const std::string& payload);
  Result<std::optional<std::string>> Fetch(Store& store, const std::string& key);
  /// Whether every key holds a record that authenticates (a forged one does not count).
  Result<bool> AllVerified(const std::vector<std::string>& keys);
  Result<std::string> Claim(const std::string& key, const std::string& payload);
  Result<std::vector<NodeRecord>> WaitForAll(const NodeRecord& mine,
                                             std::chrono::steady_clock::time_point deadline);
  Status WaitForKeys(const std::vector<std::string>& keys,
                     std::chrono::steady_clock::time_point deadline);
  Status Interrupted(const std::string& where);
  void HeartbeatLoop(std::unique_ptr<Store> store);
  void BeatRound(Store& store, uint64_t seq, std::string& last_live,
                 std::chrono::steady_clock::time_point& live_changed);
  void AggregateRound(Store& store, uint64_t seq, bool report);
  bool AllPeersSettled() const;
  void SetPeerFailure(Status status);
  void NoteRestart(int attempt, const std::string& reason);
  std::string RestartLine(Store& store);
  void SendSigtermLocked();

  std::unique_ptr<DeadlineStore> store_;
  RendezvousOptions options_;
  RecordAuth auth_;  ///< options_.auth, bound to node 0's nonce once Join has it
  bool have_session_ = false;
  std::string nonce_record_;  ///< node 0: the sealed nonce it published
  std::string probe0_;        ///< the others, before the nonce: node 0's probe as last read
  bool stale_peer_ = false;   ///< Join met only another incarnation's node 0 (StalePeer)
  int event_fd_ = -1;
  int restart_fd_ = -1;
  std::atomic<int> attempt_{0};  ///< the attempt this node runs (or is arriving at)
  std::string restart_reason_;   ///< guarded by mutex_
  std::thread heartbeat_;
  std::atomic<bool> stop_{false};
  std::atomic<int> exit_code_{-1};  ///< set by Finish; the heartbeat publishes it
  mutable std::mutex mutex_;
  std::optional<Status> peer_failure_;
  std::vector<Peer> peers_;     ///< guarded by mutex_; node 0's view of the others
  bool claimed_ = false;        ///< this launcher holds its node rank (Join claimed it)
  bool sigterm_armed_ = false;  ///< guarded by mutex_: see ArmSigterm
};

/// "ok" or "<code number> <message>", for rdzv/done.
std::string EncodeStatus(const Status& status);
Status DecodeStatus(const std::string& text);

}  // namespace hetrun::launcher
