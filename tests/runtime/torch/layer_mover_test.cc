// Live layer moves (hetrun/layer_mover.h) between real worker processes over Gloo on 127.0.0.1:
// every receiving replica gets exactly what its sender held, and a dead peer is an error, not a
// hang. The Adam state round trip (hetrun/adam_state.h) runs in this process.
#include <gtest/gtest.h>
#include <hetrun/adam_state.h>
#include <hetrun/layer_mover.h>
#include <torch/torch.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "run_process.h"
#include "world_workers.h"

namespace hetrun {
namespace {

using testing::ProcessResult;

std::vector<ProcessResult> RunWorkers(int world, const std::string& mode) {
  return testing::RunWorldWorkers(world, {HETRUN_MOVER_WORKER, mode}, std::chrono::seconds(100));
}

std::vector<std::string> OkLines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ok ", 0) == 0) lines.push_back(line);
  }
  return lines;
}

TEST(LayerMoverTest, LayersMovingBackAndForwardAcrossStagesArriveAtEveryReplica) {
  std::vector<ProcessResult> results = RunWorkers(5, "moves");
  // Per move: the float32 [3, l+1], the float64 copy and the int64 holder of each layer.
  auto bytes = [](std::vector<int64_t> layers, std::vector<int> replicas) {
    int64_t total = 0;
    for (size_t i = 0; i < layers.size(); ++i)
      total += replicas[i] * (3 * (layers[i] + 1) * 12 + 8);
    return total;
  };
  // Move 1: layers 1, 2, 3 to stage 0 (2 replicas), layer 4 to stage 1 (1 replica).
  const int64_t first = bytes({1, 2, 3, 4}, {2, 2, 2, 1});
  // Move 2: layers 1, 2 to stage 1 (1 replica), 3, 4 to stage 2 (2 replicas).
  const int64_t second = bytes({1, 2, 3, 4}, {1, 1, 2, 2});
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_FALSE(results[r].timed_out) << "rank " << r;
    ASSERT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].err;
    std::vector<std::string> ok = OkLines(results[r].out);
    ASSERT_EQ(ok.size(), 2u) << results[r].out;
    EXPECT_EQ(ok[0].find("ok layers=1,2,3,4 transfers=7 bytes=" + std::to_string(first)), 0u)
        << ok[0];
    EXPECT_EQ(ok[1].find("ok layers=1,2,3,4 transfers=6 bytes=" + std::to_string(second)), 0u)
        << ok[1];
  }
  // Rank 0 (stage 0, replica 0) received layers 1, 2, 3 in the first move; rank 2 (stage 1)
  // layers 1 and 2 in the second.
  EXPECT_NE(
      OkLines(results[0].out)[0].find("received=" + std::to_string(bytes({1, 2, 3}, {1, 1, 1}))),
      std::string::npos);
  EXPECT_NE(OkLines(results[2].out)[1].find("received=" + std::to_string(bytes({1, 2}, {1, 1}))),
            std::string::npos);
}

TEST(LayerMoverTest, ADeadSenderFailsItsReceiversWithUnavailableInsteadOfHanging) {
  std::vector<ProcessResult> results = RunWorkers(5, "dead");
  EXPECT_EQ(results[3].exit_code, 3);
  // Ranks 0 and 2 receive from rank 3; the others fail at the move's closing all-gather.
  for (int r : {0, 1, 2, 4}) {
    ASSERT_FALSE(results[static_cast<size_t>(r)].timed_out) << "rank " << r << " hung";
    EXPECT_EQ(results[static_cast<size_t>(r)].exit_code, 75)
        << "rank " << r << ": " << results[static_cast<size_t>(r)].err;
  }
  EXPECT_NE(results[0].err.find("rank 3"), std::string::npos) << results[0].err;
}

// AdamW after a round trip through Export/ImportAdamLayer into a fresh optimizer takes the same
// steps, bit for bit, as the one it came from.
void ExpectRoundTripContinuesExactly(bool amsgrad) {
  torch::manual_seed(3);
  torch::Tensor a = torch::randn({4, 3}, torch::kFloat64).requires_grad_(true);
  torch::Tensor b = torch::randn({5}, torch::kFloat64).requires_grad_(true);
  torch::optim::AdamW source({a, b}, torch::optim::AdamWOptions(1e-2).amsgrad(amsgrad));
  auto train = [](torch::optim::Optimizer& opt, const torch::Tensor& x, const torch::Tensor& y,
                  int step) {
    opt.zero_grad();
    ((x * (step + 1)).sin().sum() + (y * y).sum()).backward();
    opt.step();
  };
  for (int step = 0; step < 3; ++step) train(source, a, b, step);
  std::vector<torch::Tensor> params{a, b};
  auto exported = ExportAdamLayer(source, params);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  EXPECT_EQ(exported->size(), amsgrad ? 10u : 8u);
  torch::Tensor a2 = torch::zeros({4, 3}, torch::kFloat64).requires_grad_(true);
  torch::Tensor b2 = torch::zeros({5}, torch::kFloat64).requires_grad_(true);
  torch::optim::AdamW target({a2, b2}, torch::optim::AdamWOptions(1e-2).amsgrad(amsgrad));
  std::vector<torch::Tensor> fresh{a2, b2};
  ASSERT_TRUE(ImportAdamLayer(target, fresh, *exported).ok());
  for (int step = 3; step < 6; ++step) {
    train(source, a, b, step);
    train(target, a2, b2, step);
  }
  EXPECT_TRUE(torch::equal(a, a2));
  EXPECT_TRUE(torch::equal(b, b2));
}

TEST(AdamStateTest, AdamWContinuesBitForBitAfterARoundTrip) {
  ExpectRoundTripContinuesExactly(false);
}

TEST(AdamStateTest, AmsGradKeepsItsMaximumThroughARoundTrip) {
  ExpectRoundTripContinuesExactly(true);
}

TEST(AdamStateTest, AParameterWithoutStateImportsAsAFreshStart) {
  torch::Tensor a = torch::ones({2}).requires_grad_(true);
  torch::optim::Adam untouched({a}, torch::optim::AdamOptions(0.1));
  std::vector<torch::Tensor> params{a};
  auto exported = ExportAdamLayer(untouched, params);
  ASSERT_TRUE(exported.ok());
  ASSERT_EQ(exported->size(), 4u);
  EXPECT_EQ((*exported)[1].item<int64_t>(), 0);
  EXPECT_EQ((*exported)[2].abs().sum().item<double>(), 0.0);
}

TEST(AdamStateTest, TensorsThatDoNotFitAreRefusedNamingTheParameter) {
  torch::Tensor a = torch::ones({2, 2}).requires_grad_(true);
  torch::optim::AdamW opt({a});
  std::vector<torch::Tensor> params{a};
  std::vector<torch::Tensor> wrong{torch::ones({3}), torch::tensor(int64_t{1}), torch::ones({3}),
                                   torch::ones({3})};
  Status s = ImportAdamLayer(opt, params, wrong);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("parameter 0"), std::string::npos) << s.ToString();
  torch::optim::SGD sgd({a}, torch::optim::SGDOptions(0.1));
  EXPECT_FALSE(ExportAdamLayer(sgd, params).ok());
}

}  // namespace
}  // namespace hetrun
