#include "hetrun/pipeline/schedule.h"

#include <gtest/gtest.h>

#include <random>

#include "hetrun/pipeline/schedule_simulation.h"
#include "layouts.h"

namespace hetrun::pipeline {
namespace {

using testing::Mesh;
using testing::RandomMesh;

std::vector<Schedule> SchedulesOf(const JobLayout& layout, int64_t batch) {
  Result<StepSlices> slices = SliceStep(layout, batch);
  EXPECT_TRUE(slices.ok()) << slices.status().ToString();
  return BuildSchedules(layout, BuildRoutingTable(layout, *slices));
}

// Each replica forwards and backwards every micro-batch once, backward after forward; every
// sample it holds is received once and its gradient sent once (both boundaries).
void ExpectCompleteAndOrdered(const JobLayout& layout, const std::vector<Schedule>& schedules) {
  const int64_t m = layout.micro_batches;
  for (const Schedule& schedule : schedules) {
    std::vector<int> forward(static_cast<size_t>(m), -1), backward(static_cast<size_t>(m), -1);
    std::vector<int64_t> received(static_cast<size_t>(m), 0), grads_sent(static_cast<size_t>(m), 0);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      for (const Op& op : schedule.steps[i].ops) {
        auto mb = static_cast<size_t>(op.micro_batch);
        if (op.kind == OpKind::kForward) forward[mb] = static_cast<int>(i);
        if (op.kind == OpKind::kBackward) backward[mb] = static_cast<int>(i);
        if (op.kind == OpKind::kRecvActivation) received[mb] += op.samples.size();
        if (op.kind == OpKind::kSendGradient) grads_sent[mb] += op.samples.size();
      }
    }
    for (size_t mb = 0; mb < static_cast<size_t>(m); ++mb) {
      ASSERT_GE(forward[mb], 0) << "rank " << schedule.rank << " never forwards " << mb;
      EXPECT_GT(backward[mb], forward[mb]) << "rank " << schedule.rank << " micro-batch " << mb;
      int64_t slice = schedule.steps[static_cast<size_t>(forward[mb])].ops[0].samples.size();
      EXPECT_EQ(received[mb], schedule.stage == 0 ? 0 : slice);
      EXPECT_EQ(grads_sent[mb], schedule.stage == 0 ? 0 : slice);
    }
  }
}

TEST(ScheduleTest, OneF1BOnTheHeterogeneousMeshMatchesPairsAndNeverDeadlocks) {
  for (int64_t batch : {24, 23}) {
    JobLayout layout = Mesh({2, 1, 3}, 4, {{1.0, 2.0}, {1.0}, {3.0, 1.0, 2.0}});
    std::vector<Schedule> schedules = SchedulesOf(layout, batch);
    ASSERT_EQ(schedules.size(), 6u);
    EXPECT_TRUE(CheckPairsMatch(schedules).ok()) << CheckPairsMatch(schedules).ToString();
    Result<SimulationResult> run = SimulateSchedules(schedules);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    ExpectCompleteAndOrdered(layout, schedules);
  }
}

TEST(ScheduleTest, RandomMeshesNeverDeadlockUnderEitherSchedule) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    JobLayout layout = RandomMesh(gen);
    layout.schedule = trial % 2 ? ScheduleKind::kGPipe : ScheduleKind::k1F1B;
    std::vector<Schedule> schedules = SchedulesOf(layout, layout.micro_batches * 4 + trial % 5);
    Status pairs = CheckPairsMatch(schedules);
    ASSERT_TRUE(pairs.ok()) << "trial " << trial << ": " << pairs.ToString();
    Result<SimulationResult> run = SimulateSchedules(schedules);
    ASSERT_TRUE(run.ok()) << "trial " << trial << ": " << run.status().ToString();
    ExpectCompleteAndOrdered(layout, schedules);
  }
}

TEST(ScheduleTest, OneF1BTakesTheFormulasTimeOnEqualStages) {
  // S stages of forward f and backward 2f: T = Σ τ + (M − 1)·max τ with τ = 3f.
  for (int stages : {1, 2, 4, 6}) {
    for (int64_t m : {1, 3, 8}) {
      std::vector<int> d(static_cast<size_t>(stages), 1);
      std::vector<Schedule> schedules = SchedulesOf(Mesh(d, m), m * 2);
      std::vector<double> forward(static_cast<size_t>(stages), 1.5);
      Result<SimulationResult> run = SimulateSchedules(schedules, forward);
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      EXPECT_DOUBLE_EQ(run->makespan, 4.5 * stages + 4.5 * static_cast<double>(m - 1))
          << stages << " stages, " << m << " micro-batches";
      EXPECT_DOUBLE_EQ(run->busy[0], 4.5 * static_cast<double>(m));
    }
  }
}

TEST(ScheduleTest, OneF1BKeepsAtMostTheWarmUpInFlight) {
  // Stage s holds at most S − s micro-batches' activations (1F1B's memory bound); GPipe holds M.
  JobLayout layout = Mesh({1, 1, 1, 1}, 8);
  for (const Schedule& schedule : SchedulesOf(layout, 8)) {
    int in_flight = 0, most = 0;
    for (const ScheduleStep& step : schedule.steps) {
      if (step.ops[0].kind == OpKind::kForward) most = std::max(most, ++in_flight);
      if (step.ops[0].kind == OpKind::kBackward) --in_flight;
    }
    EXPECT_EQ(most, 4 - schedule.stage) << "stage " << schedule.stage;
  }
}

TEST(ScheduleTest, ASendBeforeItsPartnersReceiveOrderIsReportedAsADeadlock) {
  JobLayout layout = Mesh({1, 1}, 2);
  std::vector<Schedule> schedules = SchedulesOf(layout, 2);
  // Unbatched, receive first: rank 0 waits for micro-batch 0's gradient before it sends
  // micro-batch 1's activation, rank 1 for that activation before it sends the gradient.
  for (Schedule& schedule : schedules) {
    std::vector<ScheduleStep> split;
    for (const ScheduleStep& step : schedule.steps) {
      if (!step.communicate) {
        split.push_back(step);
        continue;
      }
      for (auto it = step.ops.rbegin(); it != step.ops.rend(); ++it) split.push_back({true, {*it}});
    }
    schedule.steps = split;
  }
  ASSERT_TRUE(CheckPairsMatch(schedules).ok());
  Result<SimulationResult> run = SimulateSchedules(schedules);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(run.status().message().find("rank 1 waits on {recv_activation micro-batch 1"),
            std::string::npos)
      << run.status().message();
}

TEST(ScheduleTest, AMissingOperationIsReportedForItsPair) {
  JobLayout layout = Mesh({1, 2}, 2);
  std::vector<Schedule> schedules = SchedulesOf(layout, 4);
  bool removed = false;
  for (ScheduleStep& step : schedules[2].steps) {
    for (auto it = step.ops.begin(); it != step.ops.end() && !removed; ++it) {
      if (it->kind == OpKind::kSendGradient) {
        step.ops.erase(it);
        removed = true;
        break;
      }
    }
  }
  ASSERT_TRUE(removed);
  Status pairs = CheckPairsMatch(schedules);
  ASSERT_FALSE(pairs.ok());
  EXPECT_NE(pairs.message().find("rank 2 -> rank 0"), std::string::npos) << pairs.message();
  EXPECT_FALSE(SimulateSchedules(schedules).ok());
}

}  // namespace
}  // namespace hetrun::pipeline
