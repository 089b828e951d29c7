#include "hetrun/memory/memory_ceiling.h"

#include <gtest/gtest.h>

#include "hetrun/memory/alloc_conf.h"

namespace hetrun::memory {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

JobGpu Gpu(int node, const std::string& name, int major, uint64_t usable_mib) {
  JobGpu gpu;
  gpu.node_rank = node;
  gpu.hostname = "host-" + std::to_string(node);
  gpu.gpu.name = name;
  gpu.gpu.major = major;
  gpu.gpu.usable_bytes = usable_mib * kMiB;
  return gpu;
}

const std::vector<JobGpu> kMixed = {Gpu(0, "H100-SXM5-80GB", 9, 81090),
                                    Gpu(1, "A100-SXM4-80GB", 8, 81049), Gpu(2, "H200", 9, 143360)};

TEST(MemoryCeilingTest, TakesTheSmallestGpuOfTheJobMinusTheReserve) {
  auto ceiling = ComputeCeiling(kMixed, {});
  ASSERT_TRUE(ceiling.ok()) << ceiling.status().ToString();
  EXPECT_EQ(ceiling->bytes, 81049 * kMiB - kDefaultReserveBytes);
  EXPECT_EQ(ceiling->smallest.node_rank, 1);
  EXPECT_NE(ceiling->explanation.find("node 1 (host-1) GPU 0 A100-SXM4-80GB usable 81049 MiB"),
            std::string::npos);
}

JobGpu Modelled(int node, const std::string& model, uint64_t usable_mib) {
  JobGpu gpu = Gpu(node, model, 9, usable_mib);
  gpu.gpu.model = model;
  return gpu;
}

TEST(MemoryCeilingTest, ModelModeGivesEachModelItsSmallestGpuAndTheJobItsSmallestModel) {
  const std::vector<JobGpu> gpus = {Modelled(0, "h200", 143294), Modelled(0, "h200", 143000),
                                    Modelled(1, "a100-sxm4-80gb", 81049),
                                    Gpu(2, "mystery", 9, 90000)};
  CeilingOptions options;
  options.mode = CeilingMode::kModel;
  auto ceiling = ComputeCeiling(gpus, options);
  ASSERT_TRUE(ceiling.ok()) << ceiling.status().ToString();
  EXPECT_EQ(ceiling->bytes, 81049 * kMiB - kDefaultReserveBytes);  // the job-wide figure stays
  EXPECT_EQ(ceiling->For("h200"), 143000 * kMiB - kDefaultReserveBytes);
  EXPECT_EQ(ceiling->For("a100-sxm4-80gb"), 81049 * kMiB - kDefaultReserveBytes);
  EXPECT_EQ(ceiling->For(""), ceiling->bytes);  // an unknown model gets the job's
  EXPECT_NE(ceiling->explanation.find("per model"), std::string::npos) << ceiling->explanation;
  // Job mode (the default): one number for every model.
  auto job = ComputeCeiling(gpus, {});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->For("h200"), job->bytes);
  // Each GPU's free memory is checked against its own model's ceiling.
  std::vector<JobGpu> busy = gpus;
  busy[1].gpu.usable_bytes = 100000 * kMiB;  // an H200 with 100 GB free: short in model mode
  EXPECT_EQ(CheckFreeMemory(busy, *ceiling).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(CheckFreeMemory(busy, *job).ok());
}

TEST(MemoryCeilingTest, ModelModeRefusesABaseline) {
  CeilingOptions options;
  options.mode = CeilingMode::kModel;
  options.baseline = *FindMemoryBaseline("ampere-80gb");
  auto ceiling = ComputeCeiling(kMixed, options);
  ASSERT_FALSE(ceiling.ok());
  EXPECT_NE(ceiling.status().message().find("--memory-baseline"), std::string::npos);
  EXPECT_TRUE(ParseCeilingMode("model").ok());
  EXPECT_EQ(ParseCeilingMode("per-gpu").status().code(), StatusCode::kUsage);
}

TEST(MemoryCeilingTest, BaselineCapsAHomogeneousHopperJobAtTheA100Value) {
  std::vector<JobGpu> hopper = {Gpu(0, "H100", 9, 81090), Gpu(1, "H100", 9, 81090)};
  CeilingOptions options;
  options.baseline = *FindMemoryBaseline("ampere-80gb");
  auto ceiling = ComputeCeiling(hopper, options);
  ASSERT_TRUE(ceiling.ok());
  EXPECT_TRUE(ceiling->capped_by_baseline);
  EXPECT_EQ(ceiling->bytes, 81049 * kMiB - kDefaultReserveBytes);
}

TEST(MemoryCeilingTest, BaselineNeverRaisesTheCeiling) {
  CeilingOptions options;
  options.baseline = *FindMemoryBaseline("hopper-141gb");
  auto ceiling = ComputeCeiling(kMixed, options);
  ASSERT_TRUE(ceiling.ok());
  EXPECT_FALSE(ceiling->capped_by_baseline);
  EXPECT_EQ(ceiling->bytes, 81049 * kMiB - kDefaultReserveBytes);
}

TEST(MemoryCeilingTest, UnknownBaselineIsAUsageErrorListingTheKnownOnes) {
  auto baseline = FindMemoryBaseline("volta-16gb");
  ASSERT_FALSE(baseline.ok());
  EXPECT_EQ(baseline.status().code(), StatusCode::kUsage);
  EXPECT_NE(baseline.status().message().find("ampere-80gb"), std::string::npos);
}

TEST(MemoryCeilingTest, EveryBaselineNamesItsSource) {
  for (const MemoryBaseline& b : MemoryBaselines()) {
    EXPECT_FALSE(b.source.empty()) << b.name;
    EXPECT_GT(b.usable_bytes, 0u) << b.name;
  }
}

TEST(MemoryCeilingTest, CeilingBelowMinMemoryIsResourceExhaustedInMiB) {
  CeilingOptions options;
  options.min_memory_bytes = 80000 * kMiB;
  auto ceiling = ComputeCeiling(kMixed, options);
  ASSERT_FALSE(ceiling.ok());
  EXPECT_EQ(ceiling.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(ceiling.status().message().find("node 1 (host-1) GPU 0 A100-SXM4-80GB"),
            std::string::npos);
  EXPECT_NE(ceiling.status().message().find("80000 MiB"), std::string::npos);
}

TEST(MemoryCeilingTest, ReserveLargerThanTheGpuIsResourceExhausted) {
  CeilingOptions options;
  options.reserve_bytes = 200000 * kMiB;
  EXPECT_EQ(ComputeCeiling(kMixed, options).status().code(), StatusCode::kResourceExhausted);
}

TEST(MemoryCeilingTest, NoGpuIsInvalidArgument) {
  EXPECT_EQ(ComputeCeiling({}, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryCeilingTest, GpuWithLessFreeThanCeilingPlusReserveIsNamed) {
  auto ceiling = ComputeCeiling(kMixed, {});
  ASSERT_TRUE(ceiling.ok());
  std::vector<JobGpu> now = kMixed;
  now[2].gpu.usable_bytes = 40000 * kMiB;  // someone holds 100 GiB of the H200
  Status free = CheckFreeMemory(now, *ceiling);
  EXPECT_EQ(free.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(free.message().find("node 2 (host-2) GPU 0 H200 has 40000 MiB free, needs 81049 MiB"),
            std::string::npos)
      << free.message();
  EXPECT_TRUE(CheckFreeMemory(kMixed, *ceiling).ok());
}

TEST(AllocConfTest, FractionTimesDeviceStaysUnderTheCeiling) {
  for (uint64_t device : {81049 * kMiB, 81090 * kMiB, 143360 * kMiB, uint64_t{85899345920}}) {
    uint64_t ceiling = 79001 * kMiB;
    double f = MemoryFraction(ceiling, device);
    EXPECT_LE(f * static_cast<double>(device), static_cast<double>(ceiling));
    EXPECT_GT(f * static_cast<double>(device), static_cast<double>(ceiling) - 1e-6 * device * 2);
  }
  EXPECT_EQ(MemoryFraction(100, 50), 1.0);
}

TEST(AllocConfTest, TorchVersionGate) {
  EXPECT_TRUE(TorchSupportsMemoryFraction("2.11.0+cu130"));
  EXPECT_TRUE(TorchSupportsMemoryFraction("2.14.1"));
  EXPECT_TRUE(TorchSupportsMemoryFraction("3.0"));
  EXPECT_FALSE(TorchSupportsMemoryFraction("2.9.1"));
  EXPECT_FALSE(TorchSupportsMemoryFraction(""));
  EXPECT_FALSE(TorchSupportsMemoryFraction("garbage"));
}

TEST(AllocConfTest, MergesIntoTheUsersSettingsKeepingTheirOrder) {
  Environment env(
      {{"PYTORCH_ALLOC_CONF", "expandable_segments:True, roundup_power2_divisions:[256:1,>:4]"}});
  auto merge = MergeMemoryFraction(env, 0.5);
  ASSERT_TRUE(merge.ok());
  EXPECT_EQ(merge->variable, "PYTORCH_ALLOC_CONF");
  EXPECT_EQ(*merge->value,
            "expandable_segments:True,roundup_power2_divisions:[256:1,>:4],"
            "per_process_memory_fraction:0.500000");
}

TEST(AllocConfTest, NeverOverridesAFractionTheUserSet) {
  Environment env({{"PYTORCH_ALLOC_CONF", "per_process_memory_fraction:0.9"}});
  auto merge = MergeMemoryFraction(env, 0.5);
  ASSERT_TRUE(merge.ok());
  EXPECT_FALSE(merge->value.has_value());
  EXPECT_NE(merge->note.find("kept"), std::string::npos);
}

TEST(AllocConfTest, WritesTheCudaVariableWhenTheUserSetIt) {
  Environment env({{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512"},
                   {"PYTORCH_ALLOC_CONF", "expandable_segments:True"}});
  auto merge = MergeMemoryFraction(env, 0.25);
  ASSERT_TRUE(merge.ok());
  EXPECT_EQ(merge->variable, "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(*merge->value, "max_split_size_mb:512,per_process_memory_fraction:0.250000");
}

TEST(AllocConfTest, LeavesCudaMallocAsyncAlone) {
  Environment env({{"PYTORCH_ALLOC_CONF", "backend:cudaMallocAsync"}});
  auto merge = MergeMemoryFraction(env, 0.5);
  ASSERT_TRUE(merge.ok());
  EXPECT_FALSE(merge->value.has_value());
}

TEST(AllocConfTest, MalformedSettingsNameTheVariable) {
  Environment env({{"PYTORCH_ALLOC_CONF", "expandable_segments"}});
  auto merge = MergeMemoryFraction(env, 0.5);
  ASSERT_FALSE(merge.ok());
  EXPECT_NE(merge.status().message().find("PYTORCH_ALLOC_CONF"), std::string::npos);
  EXPECT_FALSE(ParseAllocConf("a:[1,2", "X").ok());
}

}  // namespace
}  // namespace hetrun::memory
