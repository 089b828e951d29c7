// The rendezvous protocol over an in-memory Store shared by several launchers (threads).
#include "rendezvous/job_rendezvous.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "hetrun/base/exit_code.h"
#include "in_memory_rendezvous.h"

namespace hetrun::launcher {
namespace {

using namespace std::chrono_literals;

TEST(JobRendezvousTest, EveryNodeGetsEveryRecordInRankOrder) {
  auto state = std::make_shared<SharedState>();
  auto results = JoinAll(state, {Record(2, 3), Record(0, 3), Record(1, 3)}, 3);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].node_rank, 0);
    EXPECT_EQ((*r)[2].hostname, "host-2");
  }
}

TEST(JobRendezvousTest, TimeoutListsJoinedAndMissingNodeRanks) {
  auto state = std::make_shared<SharedState>();
  auto results = JoinAll(state, {Record(0, 4), Record(2, 4)}, 4, 200ms);
  for (const auto& r : results) {
    ASSERT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
    EXPECT_NE(r.status().message().find("node ranks joined: 0, 2; missing: 1, 3"),
              std::string::npos)
        << r.status().message();
  }
}

// Transient (75): two launchers of this incarnation holding one rank is sorted out by restarting
// the gang, not a reason for Volcano to end the job.
TEST(JobRendezvousTest, DuplicateNodeRankFailsEveryNodeTransientlyWithTheSameMessage) {
  auto state = std::make_shared<SharedState>();
  NodeRecord dup = Record(1, 3);
  dup.hostname = "intruder";
  dup.instance = "intruder:9";
  auto results = JoinAll(state, {Record(0, 3), Record(1, 3), dup}, 3);
  for (const auto& r : results) {
    ASSERT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
    EXPECT_NE(r.status().message().find("node rank 1 claimed twice"), std::string::npos);
    EXPECT_EQ(r.status().message(), results[0].status().message());
  }
}

TEST(JobRendezvousTest, DifferentWorldSizeFailsNamingBothNodes) {
  auto state = std::make_shared<SharedState>();
  NodeRecord odd = Record(1, 2);
  odd.world_size = 5;
  auto results = JoinAll(state, {Record(0, 2), odd}, 2);
  for (const auto& r : results) {
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find("world size differs"), std::string::npos);
  }
}

TEST(JobRendezvousTest, ExchangeGathersValuesOfThePublishers) {
  auto state = std::make_shared<SharedState>();
  std::vector<std::optional<Result<std::vector<std::string>>>> out(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      JobRendezvous rdzv(std::make_unique<InMemoryStore>(state), Options(r, 3));
      out[r] = rdzv.Exchange("arch", {0, 2}, "value-" + std::to_string(r));
    });
  }
  for (auto& t : threads) t.join();
  for (auto& r : out) {
    ASSERT_TRUE(r->ok());
    EXPECT_EQ(**r, (std::vector<std::string>{"value-0", "value-2"}));
  }
}

TEST(JobRendezvousTest, VanishedNodeIsNoticedWithinThePeerTimeout) {
  auto state = std::make_shared<SharedState>();
  JobRendezvous a(std::make_unique<InMemoryStore>(state), Options(0, 2));
  auto b = std::make_unique<JobRendezvous>(std::make_unique<InMemoryStore>(state), Options(1, 2));
  ASSERT_TRUE(a.StartHeartbeat().ok());
  ASSERT_TRUE(b->StartHeartbeat().ok());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(a.PeerFailure().has_value());
  b.reset();  // node 1 vanishes without a word
  auto start = std::chrono::steady_clock::now();
  while (!a.PeerFailure() && std::chrono::steady_clock::now() - start < 5s) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(a.PeerFailure().has_value());
  EXPECT_EQ(a.PeerFailure()->code(), StatusCode::kUnavailable);
  EXPECT_NE(a.PeerFailure()->message().find("node 1 lost: no heartbeat"), std::string::npos);
}

TEST(JobRendezvousTest, PeerThatFinishedCleanlyIsNotAFailureButANonZeroExitIs) {
  auto state = std::make_shared<SharedState>();
  JobRendezvous a(std::make_unique<InMemoryStore>(state), Options(0, 3));
  JobRendezvous b(std::make_unique<InMemoryStore>(state), Options(1, 3));
  JobRendezvous c(std::make_unique<InMemoryStore>(state), Options(2, 3));
  ASSERT_TRUE(a.StartHeartbeat().ok());
  ASSERT_TRUE(b.StartHeartbeat().ok());
  ASSERT_TRUE(c.StartHeartbeat().ok());
  std::this_thread::sleep_for(100ms);
  b.Finish(0);
  std::this_thread::sleep_for(600ms);  // longer than the peer timeout
  EXPECT_FALSE(a.PeerFailure().has_value());
  c.Finish(3);
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(a.PeerFailure().has_value());
  EXPECT_NE(a.PeerFailure()->message().find("node 2 exited with 3"), std::string::npos);
}

TEST(JobRendezvousTest, LostStoreIsAPeerFailure) {
  auto state = std::make_shared<SharedState>();
  JobRendezvous b(std::make_unique<InMemoryStore>(state), Options(1, 2));
  ASSERT_TRUE(b.StartHeartbeat().ok());
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->down = true;
  }
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(b.PeerFailure().has_value());
  EXPECT_NE(b.PeerFailure()->message().find("lost the rendezvous store"), std::string::npos);
}

// SIGTERM on a peer failure waits for ArmSigterm (before it, the signal would kill hetrun by its
// default action); a failure seen before arming is sent at arming. SIGTERM stays blocked here
// (in every thread: the heartbeat threads inherit the mask), so it stays pending to be checked.
TEST(JobRendezvousTest, SigtermOnPeerFailureWaitsUntilArmed) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  auto pending = [] {
    sigset_t set;
    sigpending(&set);
    return sigismember(&set, SIGTERM) == 1;
  };
  ASSERT_FALSE(pending());
  auto state = std::make_shared<SharedState>();
  RendezvousOptions options = Options(1, 2);
  options.sigterm_on_peer_failure = true;
  {
    JobRendezvous b(std::make_unique<InMemoryStore>(state), options);
    ASSERT_TRUE(b.StartHeartbeat().ok());
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->down = true;
    }
    auto start = std::chrono::steady_clock::now();
    while (!b.PeerFailure() && std::chrono::steady_clock::now() - start < 5s) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(b.PeerFailure().has_value());
    EXPECT_FALSE(pending()) << "SIGTERM sent before ArmSigterm";
    b.ArmSigterm();
    EXPECT_TRUE(pending()) << "a failure seen before arming is sent at arming";
  }
  int received = 0;
  const timespec now{0, 0};
  received = sigtimedwait(&term, nullptr, &now);  // consume it
  EXPECT_EQ(received, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
}

TEST(JobRendezvousTest, FrozenStoreIsAPeerFailureWithinThePeerTimeoutAndFinishReturns) {
  auto state = std::make_shared<SharedState>();
  auto b = std::make_unique<JobRendezvous>(std::make_unique<InMemoryStore>(state), Options(1, 2));
  ASSERT_TRUE(b->StartHeartbeat().ok());
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->frozen = true;  // every call from now on blocks
  }
  auto frozen = std::chrono::steady_clock::now();
  while (!b->PeerFailure() && std::chrono::steady_clock::now() - frozen < 10s) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(b->PeerFailure().has_value()) << "a frozen store must be noticed";
  EXPECT_NE(b->PeerFailure()->message().find("did not answer"), std::string::npos)
      << b->PeerFailure()->message();
  b->Finish(75);  // must return although the store never answers again
  b.reset();
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->frozen = false;
  }
  state->thawed.notify_all();
}

// Every node beats once and reads one record per interval; only node 0 reads the beats. The old
// scheme (every node reads every other node's beat) made 2 (n - 1) + 1 calls per node.
TEST(JobRendezvousTest, StoreLoadPerIntervalGrowsLinearlyWithTheNodes) {
  auto calls_per_node_and_interval = [](int n) {
    auto state = std::make_shared<SharedState>();
    std::vector<std::unique_ptr<JobRendezvous>> nodes;
    for (int r = 0; r < n; ++r) {
      RendezvousOptions o = Options(r, n);
      o.heartbeat_interval = 50ms;
      o.peer_timeout = 5s;
      nodes.push_back(std::make_unique<JobRendezvous>(std::make_unique<InMemoryStore>(state), o));
    }
    for (auto& node : nodes) EXPECT_TRUE(node->StartHeartbeat().ok());
    int64_t before = 0;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      before = state->requests;
    }
    std::this_thread::sleep_for(1s);  // about 20 intervals
    int64_t during = 0;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      during = state->requests - before;
    }
    for (auto& node : nodes) EXPECT_FALSE(node->PeerFailure().has_value());
    return static_cast<double>(during) / n / 20.0;
  };
  double four = calls_per_node_and_interval(4);
  double sixteen = calls_per_node_and_interval(16);
  std::printf("store calls per node and interval: %.2f (4 nodes), %.2f (16 nodes)\n", four,
              sixteen);
  EXPECT_LT(sixteen, 5.0) << "per-node load must not grow with the node count";
  EXPECT_LT(sixteen, four * 2.0);
}

TEST(JobRendezvousTest, ForgedAbortIsIgnoredWhenTheJobHasASecret) {
  auto state = std::make_shared<SharedState>();
  RecordAuth auth("s3cret", "job-1");
  state->data[auth.key_prefix() + "rdzv/abort"] = "5 forged: stop the job";
  std::vector<std::optional<Result<std::vector<NodeRecord>>>> out(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      RendezvousOptions o = Options(r, 2);
      o.auth = auth;
      JobRendezvous rdzv(std::make_unique<InMemoryStore>(state), o);
      out[r] = rdzv.Join(Record(r, 2));
    });
  }
  for (auto& t : threads) t.join();
  for (auto& r : out) ASSERT_TRUE(r->ok()) << r->status().message();
}

TEST(JobRendezvousTest, SealedRecordsDoNotOpenUnderAnotherKeyJobOrSecret) {
  RecordAuth auth("s3cret", "job-1");
  std::string sealed = auth.Seal("hetrun/x/hb/1", "7 exit 0");
  ASSERT_TRUE(auth.Open("hetrun/x/hb/1", sealed).ok());
  EXPECT_EQ(*auth.Open("hetrun/x/hb/1", sealed), "7 exit 0");
  EXPECT_FALSE(auth.Open("hetrun/x/hb/2", sealed).ok()) << "replayed under another key";
  EXPECT_FALSE(RecordAuth("s3cret", "job-2").Open("hetrun/x/hb/1", sealed).ok());
  EXPECT_FALSE(RecordAuth("guess", "job-1").Open("hetrun/x/hb/1", sealed).ok());
  EXPECT_FALSE(auth.Open("hetrun/x/hb/1", "7 exit 0").ok()) << "no MAC";
  EXPECT_NE(auth.key_prefix(), RecordAuth("guess", "job-1").key_prefix());
  EXPECT_EQ(RecordAuth().key_prefix(), "hetrun/");
}

TEST(JobRendezvousTest, RecordOverTheSizeLimitIsRefused) {
  RecordAuth plain;
  std::string big(RecordAuth::kMaxRecordBytes + 1, 'x');
  Result<std::string> opened = plain.Open("hetrun/hb/1", big);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("limit"), std::string::npos);
}

TEST(JobRendezvousTest, StatusEncodingRoundTrips) {
  Status s = ArchMismatchError("table\nline 2");
  Status back = DecodeStatus(EncodeStatus(s));
  EXPECT_EQ(back.code(), s.code());
  EXPECT_EQ(back.message(), s.message());
  EXPECT_TRUE(DecodeStatus("ok").ok());
  EXPECT_EQ(DecodeStatus("garbage").code(), StatusCode::kInternal);
}

// Issue 28 item 7: incarnation 1 of a job (same secret, same run id) leaves valid signed records;
// a client replays them into incarnation 2's store before its nodes claim. They were believed
// ("node rank 1 claimed twice", 78 on both nodes); bound to node 0's nonce, they never verify.
TEST(JobRendezvousTest, RecordsOfAnEarlierIncarnationDoNotVerifyInTheNextOne) {
  RecordAuth auth("s3cret", "none", "HETRUN_JOB_SECRET");
  auto first = std::make_shared<SharedState>();
  for (const auto& r : JoinAll(first, {Record(0, 2), Record(1, 2)}, 2, 5s, {auth, auth})) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  auto second = std::make_shared<SharedState>();
  for (const char* name : {"rdzv/first", "rdzv/node/1", "rdzv/node/0"}) {
    const std::string key = auth.key_prefix() + name;
    second->data[key] = first->data.at(key);
  }
  NodeRecord node0 = Record(0, 2), node1 = Record(1, 2);
  node0.instance = "host-0:new-pod";  // the new incarnation's launchers are other processes
  node1.instance = "host-1:new-pod";
  auto results = JoinAll(second, {node0, node1}, 2, 5s, {auth, auth});
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[1].instance, "host-1:new-pod");
  }
}

// Item 7: `rdzv/joined` was a plain counter: one add from a stranger completed the rendezvous
// before node 1 joined (node 0 then failed reading its record). Completion is now every node's
// record being there and verifying.
TEST(JobRendezvousTest, AnExtraAddFromAStrangerDoesNotCompleteTheRendezvous) {
  RecordAuth auth("s3cret", "none", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  state->data[auth.key_prefix() + "rdzv/joined"] = "1";
  auto results = JoinAll(state, {Record(0, 2), Record(1, 2)}, 2, 5s, {auth, auth}, {0ms, 400ms});
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
}

// Item 7: the restart barrier read `restart/K/go` without its MAC (and counted arrivals with a
// plain add): a forged go, or one extra add, let a node start attempt K alone.
TEST(JobRendezvousTest, AForgedGoOrArrivalDoesNotOpenTheRestartBarrier) {
  RecordAuth auth("s3cret", "none", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  state->data[auth.key_prefix() + "restart/1/go"] = "ok";
  state->data[auth.key_prefix() + "restart/1/arrived"] = "1";
  state->data[auth.key_prefix() + "restart/1/arrived/1"] = "ok";
  RendezvousOptions o = Options(0, 2, 600ms);
  o.auth = auth;
  JobRendezvous alone(std::make_unique<InMemoryStore>(state), o);
  auto start = std::chrono::steady_clock::now();
  Status began = alone.BeginAttempt(1).status();
  EXPECT_EQ(began.code(), StatusCode::kDeadlineExceeded) << began.ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 550ms);
  // Both nodes at the barrier: both pass.
  auto fresh = std::make_shared<SharedState>();
  std::vector<Status> passed(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      RendezvousOptions mine = Options(r, 2, 5s);
      mine.auth = auth;
      JobRendezvous node(std::make_unique<InMemoryStore>(fresh), mine);
      passed[r] = node.BeginAttempt(1).status();
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& p : passed) EXPECT_TRUE(p.ok()) << p.ToString();
}

// Item 7: a replayed nonce record (valid: sealed by an earlier node 0 of the same job) written
// over this rendezvous's is put back by node 0, and the rendezvous completes.
TEST(JobRendezvousTest, Node0PutsItsNonceBackWhenAnotherClientOverwritesIt) {
  RecordAuth auth("s3cret", "none", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  const std::string key = auth.key_prefix() + "rdzv/nonce";
  const std::string replayed = auth.Seal(key, "an-earlier-incarnation's-nonce");
  std::thread replayer([&] {
    std::this_thread::sleep_for(100ms);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->data[key] = replayed;
  });
  auto results = JoinAll(state, {Record(0, 2), Record(1, 2)}, 2, 5s, {auth, auth}, {0ms, 1500ms});
  replayer.join();
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(state->data.at(key), replayed);
}

}  // namespace
}  // namespace hetrun::launcher
