#include "supervise/worker_env.h"

#include <gtest/gtest.h>

#include "preflight/nvml_families.h"

namespace hetrun::launcher {
namespace {

Topology TwoNodesOfTwo(int node_rank) {
  Topology t;
  t.source = "flags";
  t.nnodes = {2, "--nnodes flag"};
  t.node_rank = {node_rank, "--node-rank flag"};
  t.nproc_per_node = {2, "--nproc-per-node flag"};
  t.master_addr = {"master-0", "--master-addr flag"};
  t.master_port = {29500, "--master-port flag"};
  t.world_size = 4;
  t.local_world_size = 2;
  t.ranks = {node_rank * 2, node_rank * 2 + 1};
  t.local_ranks = {0, 1};
  return t;
}

TEST(WorkerEnvTest, WritesTheTorchrunVariablesForEachLocalWorker) {
  auto env = WorkerEnvironment(Environment({{"PATH", "/bin"}}), TwoNodesOfTwo(1), 1,
                               {.restart_count = 2, .max_restarts = 3, .run_id = "job"});
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "2");
  EXPECT_EQ(env["MASTER_ADDR"], "master-0");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "job");
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
  EXPECT_EQ(env["PATH"], "/bin") << "workers inherit hetrun's environment";
}

TEST(WorkerEnvTest, DefaultsOmpThreadsToOneOnlyWhenSeveralWorkersAndUnset) {
  EXPECT_EQ(WorkerEnvironment({}, TwoNodesOfTwo(0), 0, {})["OMP_NUM_THREADS"], "1");
  auto user = WorkerEnvironment(Environment({{"OMP_NUM_THREADS", "8"}}), TwoNodesOfTwo(0), 0, {});
  EXPECT_EQ(user["OMP_NUM_THREADS"], "8");
  Topology single = TwoNodesOfTwo(0);
  single.ranks = {0};
  single.local_ranks = {0};
  single.local_world_size = 1;
  EXPECT_FALSE(WorkerEnvironment({}, single, 0, {}).contains("OMP_NUM_THREADS"));
}

TEST(WorkerEnvTest, NcclAsyncErrorHandlingIsTorchrunsOneUnlessTheUserSetIt) {
  EXPECT_EQ(WorkerEnvironment({}, TwoNodesOfTwo(0), 0, {})["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
  Environment user({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}});
  EXPECT_EQ(WorkerEnvironment(user, TwoNodesOfTwo(0), 0, {})["TORCH_NCCL_ASYNC_ERROR_HANDLING"],
            "0");
}

TEST(WorkerEnvTest, RoleVariablesDescribeTheOneRole) {
  WorkerEnvOptions options;
  options.role = "trainer";
  auto env = WorkerEnvironment({}, TwoNodesOfTwo(1), 1, options);
  EXPECT_EQ(env["ROLE_NAME"], "trainer");
  EXPECT_EQ(env["ROLE_RANK"], env["RANK"]);
  EXPECT_EQ(env["ROLE_WORLD_SIZE"], "4");
  EXPECT_EQ(env["TORCHELASTIC_SIGNALS_TO_HANDLE"], "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
}

TEST(WorkerEnvTest, GpuFamilyComesFromTheLocalRanksGpu) {
  Inventory inventory;
  inventory.gpus = ParseFakeGpus("A100:8.0:81049,H100:9.0:81090").value();
  auto first = WorkerEnvironment({}, TwoNodesOfTwo(0), 0, {.inventory = &inventory});
  auto second = WorkerEnvironment({}, TwoNodesOfTwo(0), 1, {.inventory = &inventory});
  EXPECT_EQ(first["HETRUN_GPU_FAMILY"], "ampere");
  EXPECT_EQ(second["HETRUN_GPU_FAMILY"], "hopper");
  inventory.gpus.resize(1);
  EXPECT_FALSE(WorkerEnvironment(Environment({{"HETRUN_GPU_FAMILY", "stale"}}), TwoNodesOfTwo(0), 1,
                                 {.inventory = &inventory})
                   .contains("HETRUN_GPU_FAMILY"));
}

TEST(WorkerEnvTest, GpuModelComesFromTheLocalRanksGpuBesideItsFamily) {
  Inventory inventory;
  inventory.gpus = ParseFakeGpus("H100-SXM5-80GB:9.0:81090,H100-PCIe:9.0:81090").value();
  auto first = WorkerEnvironment({}, TwoNodesOfTwo(0), 0, {.inventory = &inventory});
  auto second = WorkerEnvironment({}, TwoNodesOfTwo(0), 1, {.inventory = &inventory});
  EXPECT_EQ(first["HETRUN_GPU_FAMILY"], "hopper");
  EXPECT_EQ(second["HETRUN_GPU_FAMILY"], "hopper");
  EXPECT_EQ(first["HETRUN_GPU_MODEL"], "h100-sxm5");
  EXPECT_EQ(second["HETRUN_GPU_MODEL"], "h100-pcie");
  // Without an inventory: the job's own value, else NVML's model when the order is known.
  WorkerEnvOptions nvml{.nvml_families = {"hopper", "hopper"}, .nvml_models = {"h200", "h200"}};
  EXPECT_EQ(WorkerEnvironment({}, TwoNodesOfTwo(0), 1, nvml)["HETRUN_GPU_MODEL"], "h200");
  EXPECT_EQ(WorkerEnvironment(Environment({{"HETRUN_GPU_MODEL", "h20"}}), TwoNodesOfTwo(0), 1,
                              nvml)["HETRUN_GPU_MODEL"],
            "h20");
  WorkerEnvOptions unknown{.nvml_families = {"hopper"}, .nvml_models = {""}};
  EXPECT_FALSE(WorkerEnvironment({}, TwoNodesOfTwo(0), 0, unknown).contains("HETRUN_GPU_MODEL"));
}

TEST(WorkerEnvTest, GpuFamilyTheJobSetReachesWorkersOnRealGpus) {
  // Real GPUs: no inventory was probed; the family from the job's manifest passes through.
  auto env =
      WorkerEnvironment(Environment({{"HETRUN_GPU_FAMILY", "hopper"}}), TwoNodesOfTwo(0), 1, {});
  EXPECT_EQ(env["HETRUN_GPU_FAMILY"], "hopper");
  EXPECT_FALSE(WorkerEnvironment({}, TwoNodesOfTwo(0), 1, {}).contains("HETRUN_GPU_FAMILY"));
}

TEST(WorkerEnvTest, GpuFamilyFromNvmlOnlyWhenTheDeviceOrderIsKnown) {
  WorkerEnvOptions uniform{.nvml_families = {"hopper", "hopper"}};
  EXPECT_EQ(WorkerEnvironment({}, TwoNodesOfTwo(0), 1, uniform)["HETRUN_GPU_FAMILY"], "hopper");
  // The job's own value wins over NVML's.
  EXPECT_EQ(WorkerEnvironment(Environment({{"HETRUN_GPU_FAMILY", "ampere"}}), TwoNodesOfTwo(0), 1,
                              uniform)["HETRUN_GPU_FAMILY"],
            "ampere");
  // Mixed GPUs: CUDA's default order (fastest first) is not NVML's bus order, so no guess...
  WorkerEnvOptions mixed{.nvml_families = {"ampere", "hopper"}};
  EXPECT_FALSE(WorkerEnvironment({}, TwoNodesOfTwo(0), 1, mixed).contains("HETRUN_GPU_FAMILY"));
  // ...unless CUDA_DEVICE_ORDER=PCI_BUS_ID makes them the same order.
  Environment bus({{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}});
  EXPECT_EQ(WorkerEnvironment(bus, TwoNodesOfTwo(0), 0, mixed)["HETRUN_GPU_FAMILY"], "ampere");
  EXPECT_EQ(WorkerEnvironment(bus, TwoNodesOfTwo(0), 1, mixed)["HETRUN_GPU_FAMILY"], "hopper");
  Environment remapped({{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "1,0"}});
  EXPECT_FALSE(
      WorkerEnvironment(remapped, TwoNodesOfTwo(0), 1, mixed).contains("HETRUN_GPU_FAMILY"));
}

TEST(WorkerEnvTest, NvmlAbsentIsNoFamilyAndNoError) {
  // This machine has no NVIDIA driver: the lookup reports nothing, it does not fail.
  Result<std::optional<NvmlFamilies>> nvml = ReadNvmlFamilies();
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  if (nvml->has_value()) GTEST_SKIP() << "an NVIDIA driver is present";
  EXPECT_FALSE(nvml->has_value());
}

}  // namespace
}  // namespace hetrun::launcher
