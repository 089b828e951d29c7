#include "rendezvous/job_rendezvous.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hetrun/base/random_id.h"
#include "hetrun/base/shown_text.h"
#include "hetrun/base/units.h"
#include "supervise/signal_set.h"

namespace hetrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kWaitSlice{500};         ///< longest blocking wait between abort checks
constexpr const char* kNoLayout = "no layout";  ///< an attempt's arrival record without --plan
/// The end of a restart request (an authenticated record) that is a re-plan by restart.
constexpr const char* kReplanReason = " (its workers requested a re-plan: exit 82)";

std::string NodeName(int rank) {
  return "rdzv/node/" + std::to_string(rank);
}
/// The tag RecordAuth::Seal puts before a MAC (the outer one is the last).
constexpr const char* kProbeMacTag = "\n#hmac-sha256:";

/// "incarnation N" from a job id ("RUN_ID\nincarnation N", open_rendezvous.cc); "" when none.
std::string Incarnation(const std::string& job_id) {
  const size_t at = job_id.find("\nincarnation ");
  return at == std::string::npos ? "" : job_id.substr(at + 1);
}

std::string ProbeKey(int rank) {
  return "hetrun-probe/" + std::to_string(rank);
}
std::string BeatName(int rank) {
  return "hb/" + std::to_string(rank);
}
std::string RoundName(const std::string& name, int rank) {
  return "round/" + name + "/" + std::to_string(rank);
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
  Result<int64_t> code = ParseIntInRange(beat.substr(at + 6), 0, 255);
  return code.ok() ? static_cast<int>(*code) : 255;
}

std::string Since(Clock::time_point then) {
  return FormatDuration(std::chrono::duration_cast<milliseconds>(Clock::now() - then));
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
    : options_(std::move(options)), auth_(options_.auth) {
  store_ = std::make_unique<DeadlineStore>(std::move(store), options_.peer_timeout,
                                           "the rendezvous store at " + options_.endpoint,
                                           options_.interrupted);
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) spdlog::warn("eventfd(peer failure): {}", std::strerror(errno));
  restart_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (restart_fd_ < 0) spdlog::warn("eventfd(job restart): {}", std::strerror(errno));
  peers_.assign(static_cast<size_t>(std::max(options_.nnodes, 1)), Peer{"", Clock::now(), false});
  peers_[static_cast<size_t>(std::clamp(options_.node_rank, 0, options_.nnodes - 1))].settled =
      true;
}

JobRendezvous::~JobRendezvous() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  if (event_fd_ >= 0) close(event_fd_);
  if (restart_fd_ >= 0) close(restart_fd_);
}

void JobRendezvous::set_interrupt(InterruptFn interrupted) {
  options_.interrupted = interrupted;
  store_->set_interrupt(std::move(interrupted));
}

Status JobRendezvous::Put(Store& store, const std::string& key, const std::string& payload) {
  return store.Set(key, auth_.Seal(key, payload));
}

// The payload at `key`; nullopt when it is absent or fails authentication (logged, ignored).
Result<bool> JobRendezvous::AllVerified(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> value, Fetch(*store_, key));
    if (!value) return false;
  }
  return true;
}

Result<std::optional<std::string>> JobRendezvous::Fetch(Store& store, const std::string& key) {
  Result<std::string> raw = store.Get(key);
  if (!raw.ok()) {
    if (raw.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return raw.status();
  }
  Result<std::string> payload = auth_.Open(key, *raw);
  if (!payload.ok()) {
    spdlog::warn("ignored a store record: {}", payload.status().message());
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move(*payload));
}

// Sets `key` once (compare-and-set); returns the authentic payload it holds afterwards. A record
// that fails authentication is replaced, exactly that one, never believed.
Result<std::string> JobRendezvous::Claim(const std::string& key, const std::string& payload) {
  const std::string sealed = auth_.Seal(key, payload);
  HETRUN_ASSIGN_OR_RETURN(std::string held, store_->SetIfAbsent(key, sealed));
  for (int attempt = 0; attempt < 8; ++attempt) {
    Result<std::string> opened = auth_.Open(key, held);
    if (opened.ok()) return *opened;
    spdlog::warn("ignored a store record: {}", opened.status().message());
    HETRUN_ASSIGN_OR_RETURN(held, store_->CompareSet(key, held, sealed));
  }
  return UnavailableError("store key " + key +
                          " keeps being overwritten with records that fail "
                          "authentication");
}

// Never OK: the status of a wait cut short by a shutdown signal, told to every other node (with
// a short deadline: this node is exiting).
Status JobRendezvous::Interrupted(const std::string& where) {
  int signal = options_.interrupted ? options_.interrupted() : 0;
  Status status = UnavailableError(
      "node " + std::to_string(options_.node_rank) + " received " +
      (signal != 0 ? SignalName(signal) : std::string("a shutdown signal")) + " " + where);
  store_->set_interrupt({});
  store_->set_call_timeout(std::min<milliseconds>(options_.peer_timeout, std::chrono::seconds(2)));
  (void)Claim(Key("rdzv/abort"), EncodeStatus(status));
  return status;
}

Status JobRendezvous::WaitForKeys(const std::vector<std::string>& keys,
                                  Clock::time_point deadline) {
  // The store's blocking wait in slices: between slices, an abort another node published and the
  // signals are looked at. A key whose record fails authentication does not count as set.
  while (true) {
    BetweenWaits();
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return DeadlineExceededError("");
    Status waited = store_->Wait(keys, std::min(left, kWaitSlice));
    if (waited.ok()) {
      HETRUN_ASSIGN_OR_RETURN(bool all, AllVerified(keys));
      if (all) return Status::Ok();
      std::this_thread::sleep_for(kWaitSlice);  // a forged key: look again later
    } else if (waited.code() != StatusCode::kDeadlineExceeded) {
      return UnavailableError("lost the rendezvous store at " + options_.endpoint + ": " +
                              waited.message());
    }
    HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> abort, Fetch(*store_, Key("rdzv/abort")));
    if (abort) return DecodeStatus(*abort);
    if (options_.interrupted && options_.interrupted() != 0) return UnavailableError("");
  }
}

void JobRendezvous::Fail(const Status& status) {
  if (status.ok()) return;
  (void)Claim(Key("rdzv/abort"), EncodeStatus(status));
}

// Node 0: a fresh nonce for this rendezvous under rdzv/nonce (sealed without a session); every
// later record is bound to it, so a record of an earlier incarnation of the same job (same
// secret, same run id) never verifies. The other nodes wait for it.
Status JobRendezvous::AgreeOnSession(Clock::time_point deadline) {
  const std::string key = Key("rdzv/nonce");
  if (options_.node_rank == 0) {
    HETRUN_ASSIGN_OR_RETURN(std::string nonce, RandomUuid());
    nonce_record_ = options_.auth.Seal(key, nonce);
    HETRUN_RETURN_IF_ERROR(store_->Set(key, nonce_record_));
    auth_ = options_.auth.WithSession(nonce);
    have_session_ = true;
    return Status::Ok();
  }
  spdlog::info("rendezvous at {}: connected as node {}, waiting for node 0 to open the rendezvous",
               options_.endpoint, options_.node_rank);
  HETRUN_RETURN_IF_ERROR(WaitForKeys({key}, deadline));
  HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> nonce, Fetch(*store_, key));
  if (!nonce) return UnavailableError("rendezvous: node 0's nonce at " + key + " vanished");
  auth_ = options_.auth.WithSession(*nonce);
  have_session_ = true;
  return Status::Ok();
}

// Between waits. Node 0: a nonce record overwritten (a replayed one of an earlier incarnation)
// is put back. The others, while they wait for the nonce: node 0's probe, kept for the message
// should node 0 close the store (it times out first) before this node's own timeout.
void JobRendezvous::BetweenWaits() {
  if (options_.node_rank != 0 && !have_session_) {
    if (Result<std::string> probe = store_->Get(ProbeKey(0)); probe.ok()) probe0_ = *probe;
  }
  if (nonce_record_.empty()) return;
  const std::string key = Key("rdzv/nonce");
  Result<std::string> held = store_->Get(key);
  if (held.ok() && *held == nonce_record_) return;
  spdlog::warn("the rendezvous nonce at {} was overwritten by another client; put back", key);
  (void)store_->Set(key, nonce_record_);
}

// At the rendezvous timeout: when every missing node rank has a probe that fails this node's MAC
// (or, without a secret here, carries one), the nodes were started with different secrets. The
// probes are unauthenticated text: quoted, never believed further.
std::optional<Status> JobRendezvous::SecretMismatch(const std::vector<int>& missing,
                                                    const std::string& why) {
  if (missing.empty()) return std::nullopt;
  std::string quoted;
  bool stale = false;
  for (int r : missing) {
    Result<std::string> raw = store_->Get(ProbeKey(r));
    if (!raw.ok() && r == 0 && !probe0_.empty()) raw = probe0_;
    if (!raw.ok()) return std::nullopt;
    bool mismatch = options_.auth.enabled() ? !options_.auth.Open(ProbeKey(r), *raw).ok()
                                            : RecordAuth::Sealed(*raw);
    if (!mismatch) return std::nullopt;
    stale = stale || OfAnotherIncarnation(ProbeKey(r), *raw);
    std::string said = raw->substr(0, raw->find('\n'));
    quoted += (quoted.empty() ? "" : "; ") + ShownText(said, 160);
  }
  if (stale) {
    stale_peer_ = true;
    return UnavailableError(
        "rendezvous at " + options_.endpoint + " " + why + ": node ranks " + RankList(missing) +
        " answered for another incarnation of this job (the same secret and run id; this node: " +
        ShownText(Incarnation(options_.auth.job_id()), 40) +
        "): a pod of the earlier incarnation still terminating, a stale peer. The new node 0 "
        "did not answer in time (transient). They say (unauthenticated): " +
        quoted);
  }
  std::string job = options_.auth.job_id();
  std::replace(job.begin(), job.end(), '\n', ' ');
  std::string mine = options_.auth.enabled()
                         ? "this node's secret comes from " + options_.auth.source() +
                               ", run id '" + ShownText(job, 200) + "'"
                         : "this node has no job secret (HETRUN_JOB_SECRET and "
                           "HETRUN_JOB_SECRET_FILE unset)";
  return InvalidArgumentError(
      "rendezvous at " + options_.endpoint + " " + why +
      ": node ranks claimed only with records that fail this node's HMAC verification: " +
      RankList(missing) +
      ". The nodes do not share the job secret (or the run id or incarnation): " + mine +
      ". Set the same HETRUN_JOB_SECRET (or HETRUN_JOB_SECRET_FILE) and run id on every "
      "node. The other records say (unauthenticated): " +
      quoted);
}

// A probe that fails this node's MAC but whose inner MAC verifies without the incarnation: the
// same secret and run id, another incarnation.
bool JobRendezvous::OfAnotherIncarnation(const std::string& key, const std::string& raw) const {
  if (!options_.any_incarnation.enabled()) return false;
  const size_t outer = raw.rfind(kProbeMacTag);
  if (outer == std::string::npos) return false;
  return options_.any_incarnation.Open(key, raw.substr(0, outer)).ok();
}

Result<std::vector<NodeRecord>> JobRendezvous::Join(const NodeRecord& mine) {
  Result<std::vector<NodeRecord>> records = JoinSteps(mine);
  if (!records.ok()) return Redacted(records.status());
  return records;
}

Result<std::vector<NodeRecord>> JobRendezvous::JoinSteps(const NodeRecord& mine) {
  const auto deadline = Clock::now() + options_.timeout;
  if (!options_.auth.enabled()) {
    spdlog::warn(
        "the rendezvous store at {} is unauthenticated: set HETRUN_JOB_SECRET (or "
        "HETRUN_JOB_SECRET_FILE) on every node so records from other clients are ignored",
        options_.endpoint);
  }
  std::string probe = "node " + std::to_string(mine.node_rank) + " on " + mine.hostname +
                      ", secret from " + options_.auth.source();
  const std::string incarnation = Incarnation(options_.auth.job_id());
  if (!incarnation.empty()) probe += ", " + incarnation;
  const std::string probe_key = ProbeKey(mine.node_rank);
  // Sealed twice: inside without the incarnation (any_incarnation), outside with the job id.
  if (options_.any_incarnation.enabled()) {
    probe = options_.any_incarnation.Seal(probe_key, probe);
  }
  HETRUN_RETURN_IF_ERROR(store_->Set(probe_key, options_.auth.Seal(probe_key, probe)));
  if (Status session = AgreeOnSession(deadline); !session.ok()) return JoinFailed(session);
  const std::string encoded = EncodeNodeRecord(mine);
  auto fail = [&](const Status& status) {
    Fail(status);
    return status;
  };
  HETRUN_ASSIGN_OR_RETURN(std::string first_text, Claim(Key("rdzv/first"), encoded));
  if (first_text != encoded) {
    HETRUN_ASSIGN_OR_RETURN(NodeRecord first, DecodeNodeRecord(first_text));
    if (Status same = CheckSameJob(first, mine); !same.ok()) return fail(same);
  }
  HETRUN_ASSIGN_OR_RETURN(std::string claimed, Claim(Key(NodeName(mine.node_rank)), encoded));
  if (claimed != encoded) {
    Result<NodeRecord> other = DecodeNodeRecord(claimed);
    std::string holder =
        other.ok() ? NodeLabel(*other) + " [" + other->instance + "]" : "another launcher";
    // Transient: two launchers of this incarnation resolved the same rank (a pod replaced while
    // its predecessor still ran); a restart of the gang sorts it out.
    return fail(UnavailableError("node rank " + std::to_string(mine.node_rank) +
                                 " claimed twice: by " + holder + " and by " + NodeLabel(mine) +
                                 " [" + mine.instance + "]"));
  }
  claimed_ = true;
  spdlog::info("rendezvous at {}: joined as node {} of {} nodes", options_.endpoint, mine.node_rank,
               options_.nnodes);
  return WaitForAll(mine, deadline);
}

// The status of a Join whose wait failed: a timeout or a shutdown signal, told as joined and
// missing node ranks (missing: no record that verifies); at the timeout, or when node 0 closed
// the store before this node got its nonce, a secret the nodes do not share (78).
Status JobRendezvous::JoinFailed(const Status& waited) {
  const bool timeout = waited.code() == StatusCode::kDeadlineExceeded && waited.message().empty();
  const bool interrupted = waited.message().find("interrupted by") != std::string::npos;
  if (!have_session_ && !timeout && !interrupted && waited.code() == StatusCode::kUnavailable) {
    // The store went away before node 0 opened the rendezvous for this node.
    std::optional<Status> mismatch = SecretMismatch({0}, "was closed by node 0");
    return mismatch.value_or(Redacted(waited));
  }
  if (!timeout && !interrupted && !waited.message().empty()) return Redacted(waited);
  if (interrupted) return Interrupted("while waiting at the rendezvous " + options_.endpoint);
  std::vector<int> present, missing;
  for (int r = 0; r < options_.nnodes; ++r) {
    Result<std::optional<std::string>> has = std::optional<std::string>();
    if (have_session_) has = Fetch(*store_, Key(NodeName(r)));
    (has.ok() && *has ? present : missing).push_back(r);
  }
  std::string joined = std::to_string(present.size()) + " of " + std::to_string(options_.nnodes) +
                       " nodes joined (node ranks joined: " + RankList(present) +
                       "; missing: " + RankList(missing) + ")";
  if (!have_session_) joined += "; node 0 has not published this rendezvous's nonce";
  if (!timeout) {
    return Interrupted("while waiting at the rendezvous " + options_.endpoint + ": " + joined);
  }
  std::optional<Status> mismatch =
      SecretMismatch(have_session_ ? missing : std::vector<int>{0},
                     "timed out after " + FormatDuration(options_.timeout));
  if (mismatch) {
    if (have_session_) Fail(*mismatch);  // the nodes that share this node's secret: the same
    return *mismatch;
  }
  return DeadlineExceededError("rendezvous at " + options_.endpoint + " timed out after " +
                               FormatDuration(options_.timeout) + ": " + joined);
}

Result<std::vector<NodeRecord>> JobRendezvous::WaitForAll(const NodeRecord& mine,
                                                          Clock::time_point deadline) {
  std::vector<std::string> keys;
  for (int r = 0; r < options_.nnodes; ++r) keys.push_back(Key(NodeName(r)));
  Status waited = WaitForKeys(keys, deadline);
  if (!waited.ok()) return JoinFailed(waited);
  std::vector<NodeRecord> records;
  for (int r = 0; r < options_.nnodes; ++r) {
    HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> text, Fetch(*store_, Key(NodeName(r))));
    if (!text)
      return InvalidArgumentError("rendezvous: the record of node " + std::to_string(r) +
                                  " is missing or failed authentication");
    HETRUN_ASSIGN_OR_RETURN(NodeRecord record, DecodeNodeRecord(*text));
    records.push_back(std::move(record));
  }
  (void)mine;
  HETRUN_RETURN_IF_ERROR(ValidateJob(records));
  return records;
}

Result<std::vector<std::string>> JobRendezvous::Exchange(const std::string& name,
                                                         const std::vector<int>& publishers,
                                                         const std::string& value) {
  const auto deadline = Clock::now() + options_.timeout;
  std::vector<std::string> keys;
  for (int r : publishers) keys.push_back(Key(RoundName(name, r)));
  if (std::find(publishers.begin(), publishers.end(), options_.node_rank) != publishers.end()) {
    HETRUN_RETURN_IF_ERROR(Put(*store_, Key(RoundName(name, options_.node_rank)), value));
  }
  Status waited = WaitForKeys(keys, deadline);
  if (!waited.ok() &&
      (waited.message().empty() || waited.message().find("interrupted by") != std::string::npos)) {
    std::vector<int> missing;
    for (int r : publishers) {
      Result<bool> has = store_->Check({Key(RoundName(name, r))});
      if (!has.ok() || !*has) missing.push_back(r);
    }
    std::string where = "round '" + name + "' (missing node ranks: " + RankList(missing) + ")";
    if (waited.code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceededError("rendezvous " + where + " timed out after " +
                                   FormatDuration(options_.timeout));
    }
    return Interrupted("while waiting for rendezvous " + where);
  }
  HETRUN_RETURN_IF_ERROR(waited);
  std::vector<std::string> values;
  for (const std::string& key : keys) {
    HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> text, Fetch(*store_, key));
    if (!text) return InvalidArgumentError("rendezvous: " + key + " failed authentication");
    values.push_back(std::move(*text));
  }
  return values;
}

Status JobRendezvous::StartHeartbeat() {
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<Store> clone, store_->Clone());
  // A beat that gets no answer fails once the last good one is peer_timeout old: detection
  // within the peer timeout, not an interval later.
  static_cast<DeadlineStore*>(clone.get())
      ->set_call_timeout(std::max(options_.peer_timeout - options_.heartbeat_interval,
                                  options_.heartbeat_interval));
  if (options_.node_rank != 0) {
    HETRUN_RETURN_IF_ERROR(Put(*store_, Key(BeatName(options_.node_rank)), "0 running"));
  }
  claimed_ = true;  // only a launcher that holds its rank beats for it
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Peer& peer : peers_) peer.changed = Clock::now();
  }
  heartbeat_ =
      std::thread([this, store = std::move(clone)]() mutable { HeartbeatLoop(std::move(store)); });
  return Status::Ok();
}

void JobRendezvous::SendSigtermLocked() {
  if (options_.sigterm_on_peer_failure && sigterm_armed_ && peer_failure_ &&
      kill(getpid(), SIGTERM) != 0) {
    spdlog::warn("kill(self, SIGTERM): {}", std::strerror(errno));
  }
}

void JobRendezvous::ArmSigterm() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sigterm_armed_) return;
  sigterm_armed_ = true;
  SendSigtermLocked();
}

void JobRendezvous::DisarmSigterm() {
  std::lock_guard<std::mutex> lock(mutex_);
  sigterm_armed_ = false;
}

// `status` without the secret-derived key prefix (store errors quote the key they failed on).
Status JobRendezvous::Redacted(const Status& status) const {
  const std::string& prefix = options_.auth.key_prefix();
  if (!options_.auth.enabled() || status.message().find(prefix) == std::string::npos) return status;
  std::string text = status.message();
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
    text.replace(at, prefix.size(), "hetrun/<prefix>/");
  }
  return Status(status.code(), text);
}

void JobRendezvous::SetPeerFailure(Status status) {
  status = Redacted(status);
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_failure_) return;
  spdlog::error("{}", status.message());
  peer_failure_ = std::move(status);
  SendSigtermLocked();
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

bool JobRendezvous::AllPeersSettled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::all_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.settled; });
}

// Node r > 0: one beat out, node 0's aggregate in.
void JobRendezvous::BeatRound(Store& store, uint64_t seq, std::string& last_live,
                              Clock::time_point& live_changed) {
  int code = exit_code_.load();
  std::string beat =
      std::to_string(seq) + (code < 0 ? " running" : " exit " + std::to_string(code));
  Status set = Put(store, Key(BeatName(options_.node_rank)), beat);
  Result<std::optional<std::string>> live =
      set.ok() ? Fetch(store, Key("live")) : Result<std::optional<std::string>>(set);
  if (!live.ok()) {
    SetPeerFailure(UnavailableError("lost the rendezvous store on node 0 (" + options_.endpoint +
                                    "): " + live.status().message()));
    return;
  }
  if (*live && **live != last_live) {
    last_live = **live;
    live_changed = Clock::now();
    size_t a = last_live.find('\n');
    size_t b = a == std::string::npos ? a : last_live.find('\n', a + 1);
    size_t c = b == std::string::npos ? b : last_live.find('\n', b + 1);
    if (c == std::string::npos) return;
    std::string restart = last_live.substr(b + 1, c - b - 1);
    size_t space = restart.find(' ');
    Result<int64_t> next = ParseIntInRange(restart.substr(0, space), 0, 1000000);
    if (next.ok() && *next > 0 && space != std::string::npos) {
      NoteRestart(static_cast<int>(*next), restart.substr(space + 1));
    }
    Status failure = DecodeStatus(last_live.substr(c + 1));
    std::optional<int> node0 = ExitOf(" " + last_live.substr(a + 1, b - a - 1));
    if (!failure.ok()) {
      SetPeerFailure(UnavailableError(failure.message() + " (seen by node 0)"));
    } else if (node0 && *node0 != 0) {
      SetPeerFailure(UnavailableError("node 0 exited with " + std::to_string(*node0) +
                                      "; stopping this node's workers"));
    }
  } else if (Clock::now() - live_changed > options_.peer_timeout) {
    SetPeerFailure(UnavailableError("node 0 lost: no heartbeat for " + Since(live_changed) +
                                    " (peer timeout " + FormatDuration(options_.peer_timeout) +
                                    ")"));
  }
}

// Node 0: reads the beats of the nodes still running, then publishes one aggregate.
void JobRendezvous::AggregateRound(Store& store, uint64_t seq, bool report) {
  for (int r = 0; r < options_.nnodes; ++r) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (peers_[r].settled) continue;
    }
    Result<std::optional<std::string>> value = Fetch(store, Key(BeatName(r)));
    std::optional<Status> failure;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Peer& peer = peers_[r];
      if (value.ok() && *value && **value != peer.last) {
        peer.last = **value;
        peer.changed = Clock::now();
        if (std::optional<int> exited = ExitOf(peer.last)) {
          peer.settled = true;
          if (*exited != 0) {
            failure = UnavailableError("node " + std::to_string(r) + " exited with " +
                                       std::to_string(*exited) + "; stopping this node's workers");
          }
        }
      } else if (Clock::now() - peer.changed > options_.peer_timeout) {
        peer.settled = true;  // lost: never waited for again
        failure = UnavailableError("node " + std::to_string(r) + " lost: no heartbeat for " +
                                   Since(peer.changed) + " (peer timeout " +
                                   FormatDuration(options_.peer_timeout) + ")");
      }
    }
    if (failure && report) SetPeerFailure(*failure);
  }
  int code = exit_code_.load();
  std::optional<Status> failure = PeerFailure();
  (void)Put(store, Key("live"),
            std::to_string(seq) + "\n" + (code < 0 ? "running" : "exit " + std::to_string(code)) +
                "\n" + RestartLine(store) + "\n" + EncodeStatus(failure.value_or(Status::Ok())));
}

void JobRendezvous::NoteRestart(int attempt, const std::string& reason) {
  if (attempt <= attempt_.load()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (restart_reason_ == reason) return;  // already signalled
    restart_reason_ = reason;
  }
  spdlog::warn("job-wide restart: {}", reason);
  uint64_t one = 1;
  if (restart_fd_ >= 0 && write(restart_fd_, &one, sizeof(one)) < 0) {
    spdlog::warn("write(job restart eventfd): {}", std::strerror(errno));
  }
}

std::string JobRendezvous::RestartReason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return restart_reason_;
}

bool JobRendezvous::RestartIsReplan() const {
  return RestartReason().find(kReplanReason) != std::string::npos;
}

// Node 0: "K reason" for the newest attempt K > 0 asked for (the next one, else the current one:
// when node 0 asked for it, its own BeginAttempt already moved attempt_ there, and the nodes
// still in the attempt before learn of it only from this line), else "0".
std::string JobRendezvous::RestartLine(Store& store) {
  const int current = attempt_.load();
  for (int k : {current + 1, current}) {
    if (k <= 0) continue;
    Result<std::optional<std::string>> asked = Fetch(store, Key("restart/" + std::to_string(k)));
    if (!asked.ok() || !*asked) continue;
    std::string reason = **asked;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    NoteRestart(k, reason);  // node 0 itself: only a later attempt than its own is news
    return std::to_string(k) + " " + reason;
  }
  return "0";
}

namespace {

// A shutdown signal pending for the process (blocked, not yet read by the supervisor): the
// restart barrier gives way to it, and the supervisor then reads it.
bool ShutdownSignalPending() {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    if (sigismember(&pending, signal) == 1) return true;
  }
  return false;
}

}  // namespace

Result<std::optional<AttemptMeeting>> JobRendezvous::BeginAttempt(
    int attempt, const std::string& layout, bool replan,
    const std::optional<AttemptMeeting>& meeting) {
  const std::string k = std::to_string(attempt);
  const std::string mine = "node " + std::to_string(options_.node_rank) + " asked for attempt " +
                           k + (replan ? kReplanReason : " (its workers failed restartably)");
  HETRUN_ASSIGN_OR_RETURN(std::string reason, Claim(Key("restart/" + k), mine));
  attempt_ = attempt;  // from now on only a later attempt is news
  uint64_t drained = 0;
  if (restart_fd_ >= 0 && read(restart_fd_, &drained, sizeof(drained)) < 0 && errno != EAGAIN) {
    spdlog::warn("read(job restart eventfd): {}", std::strerror(errno));
  }
  // The arrival record: the store node 0 opened for the attempt ("-" elsewhere), then the layout.
  HETRUN_RETURN_IF_ERROR(
      Put(*store_, Key("restart/" + k + "/arrived/" + std::to_string(options_.node_rank)),
          (meeting ? meeting->Text() : "-") + "\n" + (layout.empty() ? kNoLayout : layout)));
  spdlog::info("job-wide restart to attempt {} ({}): node {} arrived, waiting for all {} nodes",
               attempt, reason, options_.node_rank, options_.nnodes);
  HETRUN_RETURN_IF_ERROR(WaitAtBarrier(k, Clock::now() + options_.timeout));
  return CheckSameLayouts(k);
}

// Every node read its layout file for the attempt; a node whose workers did not record the
// re-plan's split (or recorded another) would start its stages on other layers than the rest.
// Returns the store node 0 opened for the attempt.
Result<std::optional<AttemptMeeting>> JobRendezvous::CheckSameLayouts(const std::string& k) {
  std::vector<std::string> layouts;
  std::optional<AttemptMeeting> meeting;
  for (int r = 0; r < options_.nnodes; ++r) {
    HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> record,
                            Fetch(*store_, Key("restart/" + k + "/arrived/" + std::to_string(r))));
    const size_t newline = record ? record->find('\n') : std::string::npos;
    if (newline == std::string::npos) {
      return UnavailableError("attempt " + k + ": node " + std::to_string(r) +
                              "'s arrival record is gone or malformed");
    }
    if (r == 0) meeting = AttemptMeeting::FromText(record->substr(0, newline));
    layouts.push_back(record->substr(newline + 1));
  }
  std::string differ;
  for (int r = 1; r < options_.nnodes; ++r) {
    if (layouts[static_cast<size_t>(r)] == layouts.front()) continue;
    differ += (differ.empty() ? "" : "; ") + std::string("node ") + std::to_string(r) + " has " +
              layouts[static_cast<size_t>(r)];
  }
  if (differ.empty()) return meeting;
  return FailedPreconditionError(
      "attempt " + k + ": the nodes would restart on different layouts: node 0 has " +
      layouts.front() + "; " + differ +
      " (every node's workers must record the same split before they exit 82; see "
      "docs/how-to/replan-restart.md)");
}

// Every node's arrival record for attempt k, each verified: a forged one (or an extra counter
// add, as an earlier barrier had) lets no node through.
Status JobRendezvous::WaitAtBarrier(const std::string& k, Clock::time_point deadline) {
  std::vector<std::string> keys;
  for (int r = 0; r < options_.nnodes; ++r) {
    keys.push_back(Key("restart/" + k + "/arrived/" + std::to_string(r)));
  }
  while (true) {
    Status waited = store_->Wait(keys, kWaitSlice);
    if (waited.ok()) {
      HETRUN_ASSIGN_OR_RETURN(bool all, AllVerified(keys));
      if (all) return Status::Ok();
      std::this_thread::sleep_for(kWaitSlice);  // a forged arrival: look again later
    } else if (waited.code() != StatusCode::kDeadlineExceeded) {
      return waited;
    }
    if (std::optional<Status> peer = PeerFailure()) return *peer;
    if (ShutdownSignalPending()) {
      return UnavailableError("a shutdown signal arrived at the barrier of attempt " + k);
    }
    if (Clock::now() >= deadline) {
      return DeadlineExceededError("job-wide restart to attempt " + k +
                                   ": not every node arrived within " +
                                   FormatDuration(options_.timeout));
    }
  }
}

void JobRendezvous::HeartbeatLoop(std::unique_ptr<Store> store) {
  std::string last_live;
  const Clock::time_point started = Clock::now();
  Clock::time_point live_changed = started;
  uint64_t seq = 0;
  while (!stop_) {
    if (options_.node_rank == 0) {
      AggregateRound(*store, ++seq, true);
    } else {
      BeatRound(*store, ++seq, last_live, live_changed);
    }
    // Sleep in small steps so Finish() and the destructor are not held up.
    auto until = Clock::now() + options_.heartbeat_interval;
    while (!stop_ && Clock::now() < until) std::this_thread::sleep_for(milliseconds(20));
  }
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  spdlog::debug("heartbeat: {} store requests in {:.3f} s ({:.2f}/s, node {} of {})",
                store->RequestCount(), seconds, store->RequestCount() / std::max(seconds, 1e-3),
                options_.node_rank, options_.nnodes);
}

Status JobRendezvous::Leave(const std::string& name, const std::string& value) {
  if (options_.node_rank == 0 || options_.nnodes < 2) return Status::Ok();
  if (value.size() > kMaxLeftBytes) {
    return InvalidArgumentError("end-of-run record '" + name + "' of " +
                                std::to_string(value.size()) + " bytes is over the store's " +
                                std::to_string(kMaxLeftBytes) + "-byte limit");
  }
  return Put(*store_, Key("end/" + name + "/" + std::to_string(options_.node_rank)), value);
}

std::vector<std::optional<std::string>> JobRendezvous::CollectLeft(const std::string& name) {
  std::vector<std::optional<std::string>> values;
  if (options_.node_rank != 0) return values;
  for (int r = 1; r < options_.nnodes; ++r) {
    Result<std::optional<std::string>> value =
        Fetch(*store_, Key("end/" + name + "/" + std::to_string(r)));
    if (!value.ok()) {
      spdlog::warn("end-of-run record '{}' of node {}: {}", name, r, value.status().message());
      values.emplace_back();
      continue;
    }
    values.push_back(std::move(*value));
  }
  return values;
}

void JobRendezvous::Finish(int exit_code) {
  exit_code_ = exit_code;
  auto interrupted = [&] { return options_.interrupted && options_.interrupted() != 0; };
  if (options_.node_rank == 0 && options_.nnodes > 1) {
    // The workers' store lives in this process: keep it up until every other node has finished
    // or is lost. The heartbeat thread keeps aggregating (the others read its record); without
    // one (the rendezvous failed), this thread watches the nodes that joined.
    if (!heartbeat_.joinable()) {
      for (int r = 1; r < options_.nnodes; ++r) {
        Result<bool> joined = store_->Check({Key(NodeName(r))});
        std::lock_guard<std::mutex> lock(mutex_);
        peers_[r].settled = !joined.ok() || !*joined;
        peers_[r].changed = Clock::now();
      }
    }
    std::vector<int> waiting;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int r = 0; r < options_.nnodes; ++r) {
        if (!peers_[r].settled) waiting.push_back(r);
      }
    }
    if (!waiting.empty()) {
      spdlog::info("node 0 hosts the store: waiting for node(s) {} to finish", RankList(waiting));
    }
    uint64_t seq = 1u << 30;
    while (!AllPeersSettled() && !interrupted()) {
      if (!heartbeat_.joinable()) AggregateRound(*store_, ++seq, false);
      auto until =
          Clock::now() + (heartbeat_.joinable() ? milliseconds(20) : options_.heartbeat_interval);
      while (Clock::now() < until && !AllPeersSettled() && !interrupted()) {
        std::this_thread::sleep_for(milliseconds(20));
      }
    }
  }
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  // A launcher that lost the claim on its node rank must not speak for the one that holds it.
  if (claimed_ && options_.node_rank != 0) {
    (void)Put(*store_, Key(BeatName(options_.node_rank)),
              "final exit " + std::to_string(exit_code));
  }
}

}  // namespace hetrun::launcher
