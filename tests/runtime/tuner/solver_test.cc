// SolveShares: exact min-max integer split, checked against brute force on small cases.
#include "hetrun/tuner/solver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "hetrun/tuner/random.h"

namespace hetrun::tuner {
namespace {

// min over all splits (sum = batch, 0 <= n_r <= cap_r) of max_r (a_r + c_r n_r); a rank with 0
// samples still counts a_r. Enumerates every split.
double BruteForceBest(int64_t batch, const std::vector<RankFit>& ranks) {
  double best = INFINITY;
  std::vector<int64_t> n(ranks.size(), 0);
  std::function<void(size_t, int64_t)> go = [&](size_t r, int64_t left) {
    if (r + 1 == ranks.size()) {
      if (left > ranks[r].cap) return;
      n[r] = left;
      best = std::min(best, PredictedIterationMs(ranks, n));
      return;
    }
    for (int64_t k = 0; k <= std::min(left, ranks[r].cap); ++k) {
      n[r] = k;
      go(r + 1, left - k);
    }
  };
  go(0, batch);
  return best;
}

// The documented tie-break: give samples one by one to the rank whose time after taking it is
// smallest, ties to the lowest rank index.
std::vector<int64_t> Greedy(int64_t batch, const std::vector<RankFit>& ranks) {
  std::vector<int64_t> n(ranks.size(), 0);
  for (int64_t i = 0; i < batch; ++i) {
    size_t pick = ranks.size();
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (n[r] >= ranks[r].cap) continue;
      if (pick == ranks.size() ||
          PredictedMs(ranks[r], n[r] + 1) < PredictedMs(ranks[pick], n[pick] + 1))
        pick = r;
    }
    ++n[pick];
  }
  return n;
}

TEST(SolverTest, MatchesBruteForceOnRandomSmallCases) {
  Random random(42);
  for (int trial = 0; trial < 3000; ++trial) {
    size_t num = 1 + random.Next() % 4;
    int64_t batch = static_cast<int64_t>(random.Next() % 9);
    std::vector<RankFit> ranks(num);
    int64_t room = 0;
    for (RankFit& f : ranks) {
      // Small integers half the time, so ties are common; arbitrary reals otherwise.
      bool integer = random.Next() % 2 == 0;
      f.a_ms = integer ? static_cast<double>(random.Next() % 4) : 5 * random.Uniform();
      f.c_ms = integer ? static_cast<double>(1 + random.Next() % 3) : 0.01 + 3 * random.Uniform();
      f.cap = static_cast<int64_t>(random.Next() % (batch + 2));
      room += f.cap;
    }
    if (room < batch) ranks.back().cap += batch - room;
    Result<std::vector<int64_t>> shares = SolveShares(batch, ranks);
    ASSERT_TRUE(shares.ok()) << shares.status().ToString();
    ASSERT_EQ(std::accumulate(shares->begin(), shares->end(), int64_t{0}), batch);
    for (size_t r = 0; r < num; ++r) {
      ASSERT_GE((*shares)[r], 0);
      ASSERT_LE((*shares)[r], ranks[r].cap);
    }
    EXPECT_EQ(PredictedIterationMs(ranks, *shares), BruteForceBest(batch, ranks))
        << "trial " << trial;
    EXPECT_EQ(*shares, Greedy(batch, ranks)) << "trial " << trial;
  }
}

TEST(SolverTest, MatchesGreedyOnLargerRandomCases) {
  Random random(7);
  for (int trial = 0; trial < 200; ++trial) {
    size_t num = 1 + random.Next() % 40;
    int64_t batch = static_cast<int64_t>(random.Next() % 600);
    std::vector<RankFit> ranks(num);
    for (RankFit& f : ranks) {
      f.a_ms = static_cast<double>(random.Next() % 20) * 0.5;
      f.c_ms = 0.25 * static_cast<double>(1 + random.Next() % 12);
      f.cap = batch;
    }
    Result<std::vector<int64_t>> shares = SolveShares(batch, ranks);
    ASSERT_TRUE(shares.ok());
    EXPECT_EQ(*shares, Greedy(batch, ranks)) << "trial " << trial;
  }
}

// The threshold search's finishes (listing few values, the cheap upper end, adjacent doubles)
// and its Newton/bisection path are all exercised here: binding caps, ranks priced out by their
// fixed time, equal records, slopes spread over six orders of magnitude.
TEST(SolverTest, MatchesGreedyOnMixedCapsAndSpreadSlopes) {
  Random random(11);
  for (int trial = 0; trial < 400; ++trial) {
    size_t num = 1 + random.Next() % 32;
    int64_t batch = static_cast<int64_t>(random.Next() % 600);
    std::vector<RankFit> ranks(num);
    int64_t room = 0;
    int kind = static_cast<int>(trial % 4);
    for (RankFit& f : ranks) {
      if (kind == 0) {  // equal records: every tie goes to the lower rank
        f = {3, 0.5, batch, 0};
      } else if (kind == 1) {  // slopes 1e-3 .. 1e3, fixed times up to 1e3
        f.a_ms = 1000 * random.Uniform();
        f.c_ms = std::pow(10.0, -3 + 6 * random.Uniform());
      } else {  // small integers: exact ties across ranks
        f.a_ms = static_cast<double>(random.Next() % 50);
        f.c_ms = static_cast<double>(1 + random.Next() % 5);
      }
      if (kind != 0) {
        f.cap = kind == 3 ? static_cast<int64_t>(random.Next() % (batch / 4 + 2)) : batch;
      }
      room += f.cap;
    }
    if (room < batch) ranks.back().cap += batch - room;
    Result<std::vector<int64_t>> shares = SolveShares(batch, ranks);
    ASSERT_TRUE(shares.ok()) << shares.status().ToString();
    EXPECT_EQ(*shares, Greedy(batch, ranks)) << "trial " << trial;
  }
}

TEST(SolverTest, ManyRanksMatchGreedy) {
  // The benchmark's shape (three speeds, 64 samples per rank) at a size the greedy still checks.
  Random random(5);
  const size_t num = 2048;
  const int64_t batch = 64 * static_cast<int64_t>(num);
  std::vector<RankFit> ranks(num);
  for (size_t r = 0; r < num; ++r) {
    double base = r % 3 == 0 ? 0.40 : (r % 3 == 1 ? 1.0 : 0.85);
    ranks[r] = {12.0 * (0.95 + 0.1 * random.Uniform()), base * (0.95 + 0.1 * random.Uniform()),
                r % 5 == 0 ? 70 : batch, 0};
  }
  // The greedy's definition, sorted: the B smallest values in (value, rank) order. No rank gets
  // near kMost samples (the optimum is ~60 ms, ~160 samples on the fastest), which is checked.
  const int64_t kMost = 400;
  std::vector<std::pair<double, size_t>> all;
  for (size_t r = 0; r < num; ++r) {
    for (int64_t k = 1; k <= std::min(ranks[r].cap, kMost); ++k) {
      all.push_back({PredictedMs(ranks[r], k), r});
    }
  }
  std::sort(all.begin(), all.end());
  for (size_t r = 0; r < num; ++r) {
    if (ranks[r].cap > kMost) {
      ASSERT_LT(all[static_cast<size_t>(batch - 1)].first, PredictedMs(ranks[r], kMost + 1));
    }
  }
  std::vector<int64_t> expected(num, 0);
  for (int64_t i = 0; i < batch; ++i) ++expected[all[static_cast<size_t>(i)].second];
  Result<std::vector<int64_t>> shares = SolveShares(batch, ranks);
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(*shares, expected);
}

TEST(SolverTest, ZeroShareRankStillPaysItsFixedTime) {
  // Rank 1's fixed time alone exceeds what rank 0 needs for the whole batch: it gets nothing,
  // and the iteration still takes its 100 ms.
  std::vector<RankFit> ranks = {{1, 1, 10, 0}, {100, 1, 10, 0}};
  Result<std::vector<int64_t>> shares = SolveShares(10, ranks);
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(*shares, (std::vector<int64_t>{10, 0}));
  EXPECT_EQ(PredictedIterationMs(ranks, *shares), 100);
}

TEST(SolverTest, SplitsInverseToSpeed) {
  std::vector<RankFit> ranks = {{0, 1, 512, 0}, {0, 3, 512, 0}};
  Result<std::vector<int64_t>> shares = SolveShares(512, ranks);
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(*shares, (std::vector<int64_t>{384, 128}));
}

TEST(SolverTest, HonoursBindingCaps) {
  std::vector<RankFit> ranks = {{0, 1, 100, 0}, {0, 10, 1000, 0}};
  Result<std::vector<int64_t>> shares = SolveShares(300, ranks);
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(*shares, (std::vector<int64_t>{100, 200}));
}

TEST(SolverTest, InfeasibleCapsAreAClearError) {
  std::vector<RankFit> ranks = {{0, 1, 100, 0}, {0, 1, 100, 0}};
  Result<std::vector<int64_t>> shares = SolveShares(201, ranks);
  ASSERT_FALSE(shares.ok());
  EXPECT_EQ(shares.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shares.status().message().find("caps hold 200"), std::string::npos);
}

TEST(SolverTest, RejectsNonFiniteAndNonPositiveRecords) {
  for (RankFit bad : {RankFit{-1, 1, 10, 0}, RankFit{0, 0, 10, 0}, RankFit{0, -1, 10, 0},
                      RankFit{NAN, 1, 10, 0}, RankFit{0, INFINITY, 10, 0}, RankFit{0, 1, -1, 0}}) {
    std::vector<RankFit> ranks = {{0, 1, 10, 0}, bad};
    Result<std::vector<int64_t>> shares = SolveShares(5, ranks);
    ASSERT_FALSE(shares.ok());
    EXPECT_NE(shares.status().message().find("rank 1"), std::string::npos);
  }
  EXPECT_FALSE(SolveShares(-1, std::vector<RankFit>{{0, 1, 10, 0}}).ok());
  EXPECT_FALSE(SolveShares(1, std::vector<RankFit>{}).ok());
}

TEST(SolverTest, ZeroBatchGivesZeroShares) {
  Result<std::vector<int64_t>> shares =
      SolveShares(0, std::vector<RankFit>{{1, 1, 0, 0}, {2, 1, 5, 0}});
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(*shares, (std::vector<int64_t>{0, 0}));
}

TEST(SolverTest, IdenticalBytesGiveIdenticalSharesAndTiesGoToLowerRanks) {
  std::vector<RankFit> ranks(5, RankFit{2, 1, 100, 0});
  Result<std::vector<int64_t>> first = SolveShares(12, ranks);
  // The same records copied byte by byte, as an all-gather delivers them.
  std::vector<RankFit> copy(ranks.size());
  std::memcpy(copy.data(), ranks.data(), ranks.size() * sizeof(RankFit));
  Result<std::vector<int64_t>> second = SolveShares(12, copy);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(*first, (std::vector<int64_t>{3, 3, 2, 2, 2}));
}

TEST(SolverTest, HandlesHugeBatchesAndTinySlopesWithoutWalkingSamples) {
  // c far below a's rounding step: long runs of equal values must not be walked one by one.
  std::vector<RankFit> ranks = {{1e9, 1e-9, int64_t{1} << 40, 0}, {1e9, 2e-9, int64_t{1} << 40, 0}};
  Result<std::vector<int64_t>> shares = SolveShares(int64_t{1} << 40, ranks);
  ASSERT_TRUE(shares.ok()) << shares.status().ToString();
  EXPECT_EQ((*shares)[0] + (*shares)[1], int64_t{1} << 40);
  std::vector<RankFit> many(10000, RankFit{3, 0.5, int64_t{1} << 30, 0});
  Result<std::vector<int64_t>> big = SolveShares(int64_t{1} << 36, many);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(
      *std::max_element(big->begin(), big->end()) - *std::min_element(big->begin(), big->end()), 1);
}

}  // namespace
}  // namespace hetrun::tuner
