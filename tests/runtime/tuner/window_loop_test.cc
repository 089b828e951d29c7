// The framework-free tuner loop: simulated ranks in one process, exchanging records as bytes.
#include "hetrun/tuner/window_loop.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>

namespace hetrun::tuner {
namespace {

struct Line {
  double a;
  double c;
};

WindowLoopOptions Options(int64_t batch, int64_t window, int64_t warmup = 0) {
  WindowLoopOptions o;
  o.batch = batch;
  o.controller.window = window;
  o.warmup = warmup;
  return o;
}

// Ranks with exact line times t = a + c n, driven through CloseStep() / ApplyGathered().
class Group {
 public:
  Group(std::vector<Line> truth, const WindowLoopOptions& options) : truth_(std::move(truth)) {
    for (size_t r = 0; r < truth_.size(); ++r) {
      auto loop = WindowLoop::Create(options, static_cast<int>(r), static_cast<int>(truth_.size()));
      EXPECT_TRUE(loop.ok()) << loop.status().ToString();
      loops_.push_back(std::move(*loop));
    }
  }

  // One iteration on every rank; the reports when a window closed (one per rank), else empty.
  // `warmup_ms` replaces every measured time (to show warm-up steps are ignored).
  std::vector<WindowReport> Step(double override_ms = 0) {
    std::vector<std::byte> gathered;
    for (size_t r = 0; r < loops_.size(); ++r) {
      int64_t n = loops_[r].local_share();
      double ms = override_ms > 0 ? override_ms : truth_[r].a + truth_[r].c * n;
      Observation o{n, ms};
      auto record = loops_[r].CloseStep(std::span<const Observation>(&o, 1), {ms + 1, 0.5, 0});
      EXPECT_TRUE(record.ok()) << record.status().ToString();
      if (!record->has_value()) continue;
      const auto* bytes = reinterpret_cast<const std::byte*>(&**record);
      gathered.insert(gathered.end(), bytes, bytes + sizeof(RankWindow));
    }
    std::vector<WindowReport> reports;
    if (gathered.empty()) return reports;
    EXPECT_EQ(gathered.size(), loops_.size() * sizeof(RankWindow)) << "ranks closed apart";
    for (WindowLoop& loop : loops_) {
      auto report = loop.ApplyGathered(gathered);
      EXPECT_TRUE(report.ok()) << report.status().ToString();
      reports.push_back(std::move(*report));
    }
    return reports;
  }

  std::vector<WindowLoop>& loops() { return loops_; }

 private:
  std::vector<Line> truth_;
  std::vector<WindowLoop> loops_;
};

TEST(WindowLoopTest, EfficiencyComparesTheFittedOptimumWithTheSlowestRank) {
  // Untuned uniform split of 40 over t0 = n, t1 = 3 n: 20 ms and 60 ms. With two windows at one
  // share each rank's fit is proportional (a = 0), exact here: the optimum is 30 / 10 -> 30 ms.
  WindowLoopOptions o = Options(40, 2);
  o.tune = false;
  Group group({{0, 1}, {0, 3}}, o);
  group.Step();
  std::vector<WindowReport> reports = group.Step();
  ASSERT_EQ(reports.size(), 2u);
  const WindowReport& w = reports[0];
  EXPECT_DOUBLE_EQ(w.achieved_compute_ms, 60);
  EXPECT_DOUBLE_EQ(w.optimal_compute_ms, 30);
  EXPECT_DOUBLE_EQ(w.efficiency, 0.5);
  // Steps take compute + 1 ms (Group::Step): rest of the step 1 ms.
  EXPECT_DOUBLE_EQ(w.samples_per_s, 1000.0 * 40 / 61);
  EXPECT_DOUBLE_EQ(w.ideal_samples_per_s, 1000.0 * 40 / 31);
}

TEST(WindowLoopTest, TunedLoopReachesFullEfficiency) {
  Group group({{2, 1}, {2, 3}}, Options(40, 2));
  WindowReport last;
  for (int step = 0; step < 16; ++step) {
    std::vector<WindowReport> reports = group.Step();
    if (!reports.empty()) last = reports[0];
  }
  EXPECT_NEAR(last.efficiency, 1.0, 1e-9);
  EXPECT_GT(last.ideal_samples_per_s, 0);
  EXPECT_NEAR(last.samples_per_s, last.ideal_samples_per_s, 1e-6);
}

TEST(WindowLoopTest, WindowsCloseEveryWindowIterationsAfterTheWarmUp) {
  Group group({{1, 1}, {1, 1}}, Options(8, 3, 2));
  std::vector<int> closed;
  for (int step = 1; step <= 11; ++step) {
    if (!group.Step().empty()) closed.push_back(step);
  }
  EXPECT_EQ(closed, (std::vector<int>{5, 8, 11}));
}

TEST(WindowLoopTest, WarmUpMeasurementsNeverReachTheFit) {
  // Warm-up steps measure 1000 ms; the window after them measures the true 2 + 1 n.
  Group group({{2, 1}, {2, 1}}, Options(8, 2, 3));
  for (int step = 0; step < 3; ++step) EXPECT_TRUE(group.Step(1000).empty());
  EXPECT_TRUE(group.Step().empty());
  std::vector<WindowReport> reports = group.Step();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_DOUBLE_EQ(reports[0].ranks[0].compute_ms, 6.0);
  EXPECT_NEAR(PredictedMs(reports[0].ranks[0].fit, 4), 6.0, 1e-9);
}

TEST(WindowLoopTest, EachRecordCarriesTheRanksModelFromTheOptionsOrTheEnvironment) {
  WindowLoopOptions hopper = Options(8, 2);
  hopper.model = "h100-sxm5";
  std::vector<WindowReport> reports;
  {
    Group group({{2, 1}, {2, 1}}, hopper);
    group.Step();
    reports = group.Step();
  }
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].ranks[0].fit.family, FamilyPoolKey("h100-sxm5"));
  EXPECT_EQ(reports[0].ranks[1].fit.family, FamilyPoolKey("h100-sxm5"));
  EXPECT_STREQ(reports[0].ranks[1].model, "h100-sxm5");
  // Without the option: HETRUN_GPU_MODEL of the process, and 0 where it is unset. The family
  // (HETRUN_GPU_FAMILY) is never the pool key: an H100 PCIe and an H100 SXM5 share one.
  ASSERT_EQ(setenv("HETRUN_GPU_MODEL", "a100-sxm4-80gb", 1), 0);
  ASSERT_EQ(setenv("HETRUN_GPU_FAMILY", "ampere", 1), 0);
  Group from_env({{2, 1}, {2, 1}}, Options(8, 2));
  ASSERT_EQ(unsetenv("HETRUN_GPU_MODEL"), 0);
  Group unknown({{2, 1}, {2, 1}}, Options(8, 2));
  ASSERT_EQ(unsetenv("HETRUN_GPU_FAMILY"), 0);
  from_env.Step();
  unknown.Step();
  EXPECT_EQ(from_env.Step()[0].ranks[1].fit.family, FamilyPoolKey("a100-sxm4-80gb"));
  EXPECT_EQ(unknown.Step()[0].ranks[1].fit.family, 0);
}

TEST(WindowLoopTest, EveryRankReachesTheSameSplitAndTheSlowRankGetsLess) {
  // Rank 1 is 3x slower per sample: the exact optimum of 3n0 = 9n1 with 40 samples is 30 / 10.
  Group group({{0, 1}, {0, 3}}, Options(40, 2));
  for (int step = 0; step < 12; ++step) {
    std::vector<WindowReport> reports = group.Step();
    if (reports.size() == 2) {
      EXPECT_EQ(reports[0].shares_next, reports[1].shares_next);
    }
  }
  EXPECT_EQ(group.loops()[0].shares(), (std::vector<int64_t>{30, 10}));
  EXPECT_EQ(group.loops()[1].shares(), group.loops()[0].shares());
  EXPECT_EQ(group.loops()[1].local_share(), 10);
}

TEST(WindowLoopTest, MinShareKeepsEveryRankMeasuring) {
  // Rank 1's fixed time alone exceeds the others' whole iteration: without a minimum it would get
  // nothing; with min_share 2 it keeps 2.
  WindowLoopOptions o = Options(20, 2);
  o.min_share = 2;
  Group group({{0, 1}, {100, 1}}, o);
  for (int step = 0; step < 12; ++step) group.Step();
  EXPECT_EQ(group.loops()[0].shares(), (std::vector<int64_t>{18, 2}));
}

TEST(WindowLoopTest, WithoutTuningTheSplitStaysAndTheWindowIsStillReported) {
  WindowLoopOptions o = Options(10, 2);
  o.tune = false;
  Group group({{0, 1}, {0, 5}}, o);
  group.Step();
  std::vector<WindowReport> reports = group.Step();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_FALSE(reports[0].decision.has_value());
  EXPECT_EQ(reports[0].shares_next, (std::vector<int64_t>{5, 5}));
  EXPECT_DOUBLE_EQ(reports[0].ranks[1].compute_ms, 25.0);
  EXPECT_DOUBLE_EQ(reports[0].ranks[1].step_ms, 26.0);
  EXPECT_DOUBLE_EQ(reports[0].ranks[1].window_ms, 52.0);
}

TEST(WindowLoopTest, OverheadIsTheSlowestBookkeepingPlusTheLastArrivalsBoundary) {
  auto loop = WindowLoop::Create(Options(4, 1), 0, 3);
  ASSERT_TRUE(loop.ok());
  Observation o{2, 5};
  ASSERT_TRUE(loop->CloseStep(std::span<const Observation>(&o, 1), {6, 0, 0}).ok());
  std::vector<RankWindow> records(3);
  const double bookkeeping[] = {0.5, 2.0, 1.0};
  const double boundary[] = {3.0, 0.25, 4.0};
  for (size_t r = 0; r < 3; ++r) {
    records[r].fit.n = loop->shares()[r];
    records[r].fit.cap = 4;
    records[r].bookkeeping_ms = bookkeeping[r];
    records[r].last_boundary_ms = boundary[r];
    records[r].window_ms = 97.75;
  }
  auto report = loop->ApplyGathered(std::as_bytes(std::span<const RankWindow>(records)));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_DOUBLE_EQ(report->overhead_ms, 2.25);
  EXPECT_DOUBLE_EQ(report->overhead_fraction(), 0.0225);
}

TEST(WindowLoopTest, AllGatherOverThreadsGivesEveryRankTheSameReport) {
  // EndIteration() with a real blocking all-gather: one thread per rank, a shared buffer.
  constexpr int kRanks = 3;
  const Line truth[kRanks] = {{1, 1}, {1, 2}, {1, 4}};
  std::vector<std::byte> buffer(kRanks * sizeof(RankWindow));
  std::barrier sync(kRanks);
  std::vector<std::vector<int64_t>> finals(kRanks);
  std::vector<int> windows(kRanks, 0);
  auto run = [&](int rank) {
    auto loop = WindowLoop::Create(Options(70, 2), rank, kRanks);
    ASSERT_TRUE(loop.ok());
    AllGatherFn all_gather =
        [&](std::span<const std::byte> mine) -> Result<std::vector<std::byte>> {
      std::memcpy(buffer.data() + rank * mine.size(), mine.data(), mine.size());
      sync.arrive_and_wait();
      std::vector<std::byte> all(buffer);
      sync.arrive_and_wait();
      return all;
    };
    for (int step = 0; step < 16; ++step) {
      int64_t n = loop->local_share();
      Observation o{n, truth[rank].a + truth[rank].c * static_cast<double>(n)};
      auto report = loop->EndIteration(std::span<const Observation>(&o, 1), {1, 0, 0}, all_gather);
      ASSERT_TRUE(report.ok()) << report.status().ToString();
      if (report->has_value()) ++windows[static_cast<size_t>(rank)];
    }
    finals[static_cast<size_t>(rank)] = loop->shares();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(run, r);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(windows, (std::vector<int>{8, 8, 8}));
  EXPECT_EQ(finals[0], finals[1]);
  EXPECT_EQ(finals[0], finals[2]);
  // Exact optimum of 1 + n0 = 1 + 2 n1 = 1 + 4 n2 over 70 samples: 40 / 20 / 10.
  EXPECT_EQ(finals[0], (std::vector<int64_t>{40, 20, 10}));
}

TEST(WindowLoopTest, AFailedAllGatherIsReturnedAndTheLoopGoesOn) {
  auto loop = WindowLoop::Create(Options(4, 1), 0, 1);
  ASSERT_TRUE(loop.ok());
  Observation o{4, 5};
  auto failing = [](std::span<const std::byte>) -> Result<std::vector<std::byte>> {
    return UnavailableError("peer gone");
  };
  auto report = loop->EndIteration(std::span<const Observation>(&o, 1), {6, 0, 0}, failing);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().ToString().find("peer gone"), std::string::npos);
  auto echo = [](std::span<const std::byte> mine) -> Result<std::vector<std::byte>> {
    return std::vector<std::byte>(mine.begin(), mine.end());
  };
  auto next = loop->EndIteration(std::span<const Observation>(&o, 1), {6, 0, 0}, echo);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(next->has_value());
}

TEST(WindowLoopTest, MisusedBoundaryHalvesAreRefused) {
  auto loop = WindowLoop::Create(Options(4, 1), 0, 2);
  ASSERT_TRUE(loop.ok());
  std::vector<std::byte> two(2 * sizeof(RankWindow));
  EXPECT_EQ(loop->ApplyGathered(two).status().code(), StatusCode::kFailedPrecondition);
  Observation o{2, 5};
  ASSERT_TRUE(loop->CloseStep(std::span<const Observation>(&o, 1), {6, 0, 0}).ok());
  EXPECT_EQ(loop->CloseStep(std::span<const Observation>(&o, 1), {6, 0, 0}).status().code(),
            StatusCode::kFailedPrecondition);
  std::vector<std::byte> one(sizeof(RankWindow));
  EXPECT_EQ(loop->ApplyGathered(one).status().code(), StatusCode::kFailedPrecondition);
}

TEST(WindowLoopTest, BadOptionsNameTheOption) {
  struct Case {
    WindowLoopOptions options;
    int rank;
    int ranks;
    const char* names;
  };
  WindowLoopOptions min_share = Options(4, 1);
  min_share.min_share = 3;
  WindowLoopOptions cap = Options(8, 1);
  cap.min_share = 2;
  cap.cap = 1;
  WindowLoopOptions initial = Options(8, 1);
  initial.initial = {8};
  WindowLoopOptions warmup = Options(8, 1, -1);
  const Case cases[] = {{Options(0, 1), 0, 2, "batch"},      {Options(8, 1), 2, 2, "rank 2"},
                        {min_share, 0, 2, "min_share"},      {cap, 0, 2, "cap 1"},
                        {initial, 0, 2, "1 initial shares"}, {warmup, 0, 2, "warmup"},
                        {Options(8, 0), 0, 2, "window"}};
  for (const Case& c : cases) {
    auto loop = WindowLoop::Create(c.options, c.rank, c.ranks);
    ASSERT_FALSE(loop.ok()) << c.names;
    EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(loop.status().ToString().find(c.names), std::string::npos)
        << loop.status().ToString();
  }
}

}  // namespace
}  // namespace hetrun::tuner
