// The rendezvous between nodes that do not share the job secret, or the incarnation: 78 only for
// another secret, and only at the timeout; a stale peer of another incarnation is transient.
#include <gtest/gtest.h>

#include "hetrun/base/exit_code.h"
#include "in_memory_rendezvous.h"
#include "rendezvous/job_rendezvous.h"

namespace hetrun::launcher {
namespace {

using namespace std::chrono_literals;

// Item 8: nodes started with different secrets waited the whole --rdzv-timeout and exited 75
// "1 of 2 nodes joined". At the timeout, every missing rank claimed with records that fail the
// MAC is a configuration error: 78 naming where this node's secret came from, never the secret.
TEST(JobRendezvousTest, NodesWithDifferentSecretsExit78AtTheTimeoutNamingWhereTheSecretCameFrom) {
  auto state = std::make_shared<SharedState>();
  RecordAuth zero("alpha-secret", "none", "HETRUN_JOB_SECRET");
  RecordAuth one("beta-secret", "none", "HETRUN_JOB_SECRET_FILE=/run/secrets/hetrun");
  auto start = std::chrono::steady_clock::now();
  auto results = JoinAll(state, {Record(0, 2), Record(1, 2)}, 2, 700ms, {zero, one});
  EXPECT_GE(std::chrono::steady_clock::now() - start, 650ms) << "never before the timeout";
  for (size_t i = 0; i < results.size(); ++i) {
    const Status& status = results[i].status();
    ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_NE(status.message().find("do not share the job secret"), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find(i == 0 ? "HMAC verification: 1." : "HMAC verification: 0."),
              std::string::npos)
        << "names the other node's rank: " << status.message();
    EXPECT_EQ(status.message().find("alpha-secret"), std::string::npos);
    EXPECT_EQ(status.message().find("beta-secret"), std::string::npos);
  }
  const std::string& m0 = results[0].status().message();
  const std::string& m1 = results[1].status().message();
  EXPECT_NE(m0.find("this node's secret comes from HETRUN_JOB_SECRET,"), std::string::npos) << m0;
  EXPECT_NE(m1.find("comes from HETRUN_JOB_SECRET_FILE=/run/secrets/hetrun"), std::string::npos)
      << m1;
  // No hash of either secret: neither key prefix is quoted.
  EXPECT_EQ(m0.find(zero.key_prefix().substr(7, 16)), std::string::npos);
  EXPECT_EQ(m1.find(one.key_prefix().substr(7, 16)), std::string::npos);
}

// Node 0 starts first and so times out first: its store closes while node 1 still waits for a
// nonce it cannot verify. Node 1 gives the same diagnosis (78), not "lost the store" (75), and
// no store error quoting the secret-derived key prefix.
TEST(JobRendezvousTest, Node0ClosingTheStoreBeforeAVerifiableNonceIsTheSecretMismatch) {
  RecordAuth zero("alpha-secret", "none", "HETRUN_JOB_SECRET");
  RecordAuth one("beta-secret", "none", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  state->data["hetrun-probe/0"] = zero.Seal("hetrun-probe/0", "node 0 on host-0");
  state->data[zero.key_prefix() + "rdzv/nonce"] = zero.Seal(zero.key_prefix() + "rdzv/nonce", "n");
  std::thread closer([&] {
    std::this_thread::sleep_for(800ms);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->down = true;
  });
  auto results = JoinAll(state, {Record(1, 2)}, 2, 10s, {one});
  closer.join();
  const Status& status = results[0].status();
  ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("was closed by node 0"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find(one.key_prefix()), std::string::npos) << status.message();
}

TEST(JobRendezvousTest, ANodeWithoutASecretAmongNodesWithOneIsNamedAtTheTimeout) {
  auto state = std::make_shared<SharedState>();
  RecordAuth zero("alpha-secret", "none", "HETRUN_JOB_SECRET");
  auto results = JoinAll(state, {Record(0, 2), Record(1, 2)}, 2, 500ms, {zero, RecordAuth()});
  ASSERT_EQ(results[0].status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(results[1].status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(results[1].status().message().find("this node has no job secret"), std::string::npos)
      << results[1].status().message();
}

// Records that fail the MAC never end a job early (a stranger could end any job): a stranger's
// probe and forged claim for rank 1 are ignored and node 1, coming later, joins.
TEST(JobRendezvousTest, RecordsThatFailTheMacNeverEndTheRendezvousEarly) {
  RecordAuth auth("s3cret", "none", "HETRUN_JOB_SECRET");
  RecordAuth stranger("a guess", "none", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  state->data["hetrun-probe/1"] = stranger.Seal("hetrun-probe/1", "node 1 on stranger");
  state->data[auth.key_prefix() + "rdzv/node/1"] = "forged";
  state->data[auth.key_prefix() + "rdzv/abort"] = "5 forged: stop the job";
  auto results = JoinAll(state, {Record(0, 2), Record(1, 2)}, 2, 5s, {auth, auth}, {0ms, 700ms});
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
}

// A missing rank without a foreign probe stays the transient timeout (75), even when another
// missing rank has one: 78 only when such records claimed exactly the missing ranks.
TEST(JobRendezvousTest, AMissingRankWithoutAForeignClaimKeepsTheTimeoutTransient) {
  RecordAuth auth("s3cret", "none", "HETRUN_JOB_SECRET");
  RecordAuth other("other", "none", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  state->data["hetrun-probe/1"] = other.Seal("hetrun-probe/1", "node 1 on elsewhere");
  auto results = JoinAll(state, {Record(0, 3)}, 3, 400ms, {auth});
  EXPECT_EQ(results[0].status().code(), StatusCode::kDeadlineExceeded)
      << results[0].status().ToString();
  EXPECT_NE(results[0].status().message().find("missing: 1, 2"), std::string::npos);
}

// Issue 39 item 8: a restarted job's node 1 (incarnation 3) reached the previous incarnation's
// node 0 while that pod still terminated; when its store closed, node 1 exited 78 "do not share
// the job secret". Same secret and run id, another incarnation: a stale peer, transient.
TEST(JobRendezvousTest, Node0OfAnotherIncarnationClosingItsStoreIsAStalePeerNot78) {
  RecordAuth old_zero("one-secret", "job-a\nincarnation 2", "HETRUN_JOB_SECRET");
  RecordAuth old_any("one-secret", "job-a", "HETRUN_JOB_SECRET");
  auto state = std::make_shared<SharedState>();
  const std::string probe = "hetrun-probe/0";
  state->data[probe] = old_zero.Seal(probe, old_any.Seal(probe, "node 0 on host-0, incarnation 2"));
  const std::string nonce = old_zero.key_prefix() + "rdzv/nonce";
  state->data[nonce] = old_zero.Seal(nonce, "n");
  std::thread closer([&] {
    std::this_thread::sleep_for(800ms);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->down = true;
  });
  RendezvousOptions o = Options(1, 2, 10s);
  o.auth = RecordAuth("one-secret", "job-a\nincarnation 3", "HETRUN_JOB_SECRET");
  o.any_incarnation = RecordAuth("one-secret", "job-a", "HETRUN_JOB_SECRET");
  JobRendezvous rdzv(std::make_unique<InMemoryStore>(state), o);
  Result<std::vector<NodeRecord>> joined = rdzv.Join(Record(1, 2));
  closer.join();
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.status().code(), StatusCode::kUnavailable) << joined.status().ToString();
  EXPECT_EQ(ExitCodeFor(joined.status()), 75);
  EXPECT_TRUE(rdzv.StalePeer()) << "the caller connects again for the new node 0";
  const std::string message = joined.status().message();
  EXPECT_NE(message.find("another incarnation"), std::string::npos) << message;
  EXPECT_NE(message.find("incarnation 3"), std::string::npos) << message;
  EXPECT_EQ(message.find("do not share"), std::string::npos) << message;
  // Another secret stays the configuration error it was.
  auto other = std::make_shared<SharedState>();
  RecordAuth foreign("two-secret", "job-a\nincarnation 2", "HETRUN_JOB_SECRET");
  RecordAuth foreign_any("two-secret", "job-a", "HETRUN_JOB_SECRET");
  other->data[probe] = foreign.Seal(probe, foreign_any.Seal(probe, "node 0 on host-0"));
  std::thread close_other([&] {
    std::this_thread::sleep_for(800ms);
    std::lock_guard<std::mutex> lock(other->mutex);
    other->down = true;
  });
  JobRendezvous mismatch(std::make_unique<InMemoryStore>(other), o);
  Result<std::vector<NodeRecord>> refused = mismatch.Join(Record(1, 2));
  close_other.join();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ExitCodeFor(refused.status()), 78) << refused.status().ToString();
  EXPECT_FALSE(mismatch.StalePeer());
}

}  // namespace
}  // namespace hetrun::launcher
