// hetrun in torchrun's place (docs/tutorials/torchrun-to-hetrun.md): torchrun-style command lines
// start a Python worker that prints its environment, and every variable torchrun gives its workers
// is there with torchrun's meaning; a real torchrun (when the test Python has torch) is the
// reference for the list of names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "run_harness.h"

namespace hetrun {
namespace {

using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::TempDir;

/// Prints "ENV|<RANK>|NAME=VALUE" for every variable and "ARGV|<RANK>|a b c".
/// With DUMP_DIR set, writes the same lines to DUMP_DIR/rank_R instead (torchrun's workers share
/// its stdout, where their lines may interleave mid-line).
constexpr const char* kWorker = R"(import os, sys
rank = os.environ.get("RANK", "?")
lines = [f"ENV|{rank}|{n}={v}" for n, v in sorted(os.environ.items()) if "\n" not in v]
lines.append(f"ARGV|{rank}|" + " ".join(sys.argv[1:]))
text = "\n".join(lines) + "\n"
if "DUMP_DIR" in os.environ:
    with open(os.path.join(os.environ["DUMP_DIR"], "rank_" + rank), "w") as out:
        out.write(text)
else:
    sys.stdout.write(text)
)";

/// rank -> variables, and rank -> argv text, from the worker's lines.
struct WorkerDump {
  std::map<int, std::map<std::string, std::string>> env;
  std::map<int, std::string> argv;
};

WorkerDump ParseDump(const std::string& out) {
  WorkerDump dump;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    size_t first = line.find('|');
    size_t second = line.find('|', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string kind = line.substr(0, first);
    int rank = std::atoi(line.substr(first + 1, second - first - 1).c_str());
    std::string rest = line.substr(second + 1);
    if (kind == "ENV") {
      size_t equals = rest.find('=');
      dump.env[rank][rest.substr(0, equals)] = rest.substr(equals + 1);
    } else if (kind == "ARGV") {
      dump.argv[rank] = rest;
    }
  }
  return dump;
}

struct Case {
  std::vector<std::string> args;  ///< after "hetrun", with WORKER and MODULE placeholders
  std::string role = "default";
  std::string run_id = "none";
  std::string max_restarts = "0";
  std::string master_port;  ///< expected; "" = any number
  std::string master_addr = "127.0.0.1";
};

class TorchrunCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_ = dir_.WriteFile("pkg/dump_env.py", kWorker);
    env_ = HetrunEnv(dir_.path());
    env_["PYTHONPATH"] = dir_.path() + "/pkg";
  }

  std::vector<std::string> Expand(std::vector<std::string> args) const {
    for (std::string& arg : args) {
      if (arg == "WORKER") arg = worker_;
      if (arg == "MODULE") arg = "dump_env";
    }
    return args;
  }

  WorkerDump Run(const std::vector<std::string>& args, int* code) {
    HetrunProcess run(Expand(args), env_, dir_.path(), "hetrun" + std::to_string(runs_++));
    *code = run.Wait(std::chrono::seconds(120));
    last_err_ = run.err();
    return ParseDump(run.out());
  }

  TempDir dir_;
  std::string worker_;
  std::map<std::string, std::string> env_;
  std::string last_err_;
  int runs_ = 0;
};

TEST_F(TorchrunCliTest, TorchrunCommandLinesGiveEveryWorkerTorchrunsVariables) {
  const std::string port = std::to_string(testing::FreePort());
  const std::string endpoint_port = std::to_string(testing::FreePort());
  const std::vector<Case> cases = {
      {{"--standalone", "--nnodes=1", "--nproc-per-node=2", "--rdzv-id=none", "WORKER", "--lr",
        "0.1"},
       "default",
       "none",
       "0",
       "",
       "localhost"},
      {{"--nnodes", "1", "--nproc_per_node", "2", "--node_rank", "0", "--master_addr", "127.0.0.1",
        "--master_port", port, "WORKER", "--lr", "0.1"},
       "default",
       "none",
       "0",
       port},
      {{"--nnodes=1:1", "--nproc-per-node=2", "--max-restarts=3", "--rdzv-id=job9",
        "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:" + endpoint_port, "WORKER", "--lr",
        "0.1"},
       "default",
       "job9",
       "3",
       endpoint_port},
      {{"--nproc_per_node=2", "--role", "trainer", "--rdzv_backend", "static", "-m", "MODULE",
        "--lr", "0.1"},
       "trainer",
       "none",
       "0",
       ""},
      {{"--nproc-per-node", "2", "--no-python", "python3", "WORKER", "--lr", "0.1"},
       "default",
       "none",
       "0",
       ""},
      {{"--nproc-per-node", "2", "--run_path", "WORKER", "--lr", "0.1"},
       "default",
       "none",
       "0",
       ""},
      {{"run", "--nproc-per-node", "2", "--", "python3", "WORKER", "--lr", "0.1"},
       "default",
       "none",
       "0",
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    int code = -1;
    WorkerDump dump = Run(c.args, &code);
    ASSERT_EQ(code, 0) << last_err_;
    ASSERT_EQ(dump.env.size(), 2u) << "one environment per worker";
    for (int rank : {0, 1}) {
      std::map<std::string, std::string>& env = dump.env[rank];
      std::string r = std::to_string(rank);
      std::map<std::string, std::string> expected = {
          {"RANK", r},
          {"LOCAL_RANK", r},
          {"WORLD_SIZE", "2"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"GROUP_RANK", "0"},
          {"GROUP_WORLD_SIZE", "1"},
          {"ROLE_NAME", c.role},
          {"ROLE_RANK", r},
          {"ROLE_WORLD_SIZE", "2"},
          {"MASTER_ADDR", c.master_addr},
          {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"TORCHELASTIC_MAX_RESTARTS", c.max_restarts},
          {"TORCHELASTIC_RUN_ID", c.run_id},
          {"TORCHELASTIC_USE_AGENT_STORE", testing::OneNodeAgentStore()},
          {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
          {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
          {"OMP_NUM_THREADS", "1"},
      };
      for (const auto& [name, value] : expected) {
        EXPECT_EQ(env[name], value) << name << " of rank " << rank;
      }
      if (c.master_port.empty()) {
        EXPECT_GT(std::atoi(env["MASTER_PORT"].c_str()), 0) << env["MASTER_PORT"];
      } else {
        EXPECT_EQ(env["MASTER_PORT"], c.master_port);
      }
      EXPECT_NE(env["TORCHELASTIC_ERROR_FILE"].find("rank_" + r + "/error.json"), std::string::npos)
          << env["TORCHELASTIC_ERROR_FILE"];
      EXPECT_EQ(dump.argv[rank], "--lr 0.1") << "the program's own arguments pass through";
    }
  }
}

// Issue 28 item 1: torchrun's "stacked single-node" form, --rdzv-endpoint=localhost:0, exited 64
// ("'0' is outside [1, 65535]"); port 0 means a free port, on one node.
TEST_F(TorchrunCliTest, PortZeroInTheEndpointOrMasterPortIsAFreePortOnOneNode) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--nnodes=1", "--nproc-per-node=2", "--rdzv-backend=c10d",
            "--rdzv-endpoint=localhost:0", "WORKER"},
           {"run", "--nproc-per-node", "2", "--master-port", "0", "--", "python3", "WORKER"},
       }) {
    SCOPED_TRACE(::testing::PrintToString(args));
    int code = -1;
    WorkerDump dump = Run(args, &code);
    ASSERT_EQ(code, 0) << last_err_;
    ASSERT_EQ(dump.env.size(), 2u);
    const int port = std::atoi(dump.env[0]["MASTER_PORT"].c_str());
    EXPECT_GT(port, 0) << dump.env[0]["MASTER_PORT"];
    EXPECT_LE(port, 65535);
    EXPECT_EQ(dump.env[1]["MASTER_PORT"], dump.env[0]["MASTER_PORT"]) << "one port for the job";
  }
  int code = -1;
  WorkerDump dump = Run({"--nnodes=2", "--node-rank=0", "--nproc-per-node=1",
                         "--rdzv-endpoint=localhost:0", "WORKER"},
                        &code);
  EXPECT_EQ(code, 64) << last_err_;
  EXPECT_NE(last_err_.find("port 0 (a free port) needs one node"), std::string::npos) << last_err_;
  EXPECT_TRUE(dump.env.empty());
}

// Issue 28 item 5: every --standalone job had TORCHELASTIC_RUN_ID=none, so two at once shared it;
// torchrun gives each a fresh UUID. An explicit --rdzv-id / --run-id is kept.
TEST_F(TorchrunCliTest, EachStandaloneJobGetsAFreshRunId) {
  std::set<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    int code = -1;
    WorkerDump dump = Run({"--standalone", "--nproc-per-node=1", "WORKER"}, &code);
    ASSERT_EQ(code, 0) << last_err_;
    const std::string id = dump.env[0]["TORCHELASTIC_RUN_ID"];
    ASSERT_EQ(id.size(), 36u) << id;
    for (size_t at : {8, 13, 18, 23}) EXPECT_EQ(id[at], '-') << id;
    EXPECT_EQ(id[14], '4') << "a version 4 UUID: " << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 2u) << "two jobs, two ids";
  int code = -1;
  WorkerDump named = Run({"--standalone", "--rdzv-id=mine", "--nproc-per-node=1", "WORKER"}, &code);
  ASSERT_EQ(code, 0) << last_err_;
  EXPECT_EQ(named.env[0]["TORCHELASTIC_RUN_ID"], "mine");
}

TEST_F(TorchrunCliTest, APythonFileAloneIsRunLikeTorchrunDoes) {
  int code = -1;
  WorkerDump dump = Run({"WORKER", "--lr", "0.1"}, &code);  // `hetrun train.py --lr 0.1`
  ASSERT_EQ(code, 0) << last_err_;
  ASSERT_EQ(dump.env.size(), 1u);
  EXPECT_EQ(dump.env[0]["WORLD_SIZE"], "1");
  EXPECT_EQ(dump.argv[0], "--lr 0.1");
}

TEST_F(TorchrunCliTest, UserSetNcclAsyncErrorHandlingIsKept) {
  env_["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "3";
  int code = -1;
  WorkerDump dump = Run({"--nproc-per-node", "1", "WORKER"}, &code);
  ASSERT_EQ(code, 0) << last_err_;
  EXPECT_EQ(dump.env[0]["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "3");
}

TEST_F(TorchrunCliTest, ElasticRangesEtcdAndUnknownFlagsExit64WithTheReason) {
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"--nnodes", "1:4", "WORKER"}, "gang-scheduled"},
           {{"--rdzv-backend=etcd-v2", "WORKER"}, "gang-scheduled"},
           {{"--nproc_per_nod", "2", "WORKER"}, "did you mean '--nproc-per-node'"},
           {{"--max_restart=2", "WORKER"}, "did you mean '--max-restarts'"},
           {{"--tee", "5", "WORKER"}, "--tee"},
           {{"-m"}, "-m needs a module"},
       }) {
    SCOPED_TRACE(::testing::PrintToString(bad.args));
    int code = -1;
    WorkerDump dump = Run(bad.args, &code);
    EXPECT_EQ(code, 64);
    EXPECT_NE(last_err_.find(bad.message), std::string::npos) << last_err_;
    EXPECT_TRUE(dump.env.empty()) << "no worker starts";
  }
}

TEST_F(TorchrunCliTest, DryRunPrintsEachWorkersCommandAndEnvironmentAndStartsNothing) {
  int code = -1;
  std::string marker = dir_.path() + "/started";
  HetrunProcess run({"--dry-run", "--nproc_per_node=2", "--role", "r", "--no-python", "/bin/sh",
                     "-c", "touch " + marker},
                    env_, dir_.path(), "dry");
  code = run.Wait();
  ASSERT_EQ(code, 0) << run.err();
  std::string out = run.out();
  for (const char* part :
       {"# rank 0 (local rank 0)", "# rank 1 (local rank 1)", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
        "RANK=1", "ROLE_NAME=r", "LOCAL_WORLD_SIZE=2", "command: /bin/sh -c touch"}) {
    EXPECT_NE(out.find(part), std::string::npos) << part << "\n" << out;
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "--dry-run started a worker";
}

/// --dry-run's "# rank R" sections: rank -> the NAME=VALUE lines printed for it.
std::map<int, std::map<std::string, std::string>> ParseDryRun(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> ranks;
  std::istringstream lines(out);
  int rank = -1;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# rank ", 0) == 0) {
      rank = std::atoi(line.c_str() + 7);
      continue;
    }
    const size_t equals = line.find('=');
    if (rank < 0 || line.empty() || line[0] == '#' || equals == std::string::npos) continue;
    ranks[rank][line.substr(0, equals)] = line.substr(equals + 1);
  }
  return ranks;
}

// Issue 38, item 7: the dry run showed TORCHELASTIC_USE_AGENT_STORE=False where a run sets True,
// and no HETRUN_MEMORY_CEILING_BYTES or PYTORCH_ALLOC_CONF. Now every variable it prints is the
// one the worker gets, and every variable hetrun sets or changes for a worker is printed.
TEST_F(TorchrunCliTest, DryRunPrintsTheEnvironmentARealWorkerGets) {
  const std::vector<std::string> args = {"--nproc-per-node",
                                         "2",
                                         "--fake-gpus",
                                         "A100-SXM4-80GB:8.0:81049,H100-SXM5-80GB:9.0:81082",
                                         "--master-port",
                                         std::to_string(testing::FreePort()),
                                         "--run-id",
                                         "compare",
                                         "WORKER"};
  std::vector<std::string> dry_args = args;
  dry_args.insert(dry_args.begin(), "--dry-run");
  HetrunProcess dry(Expand(dry_args), env_, dir_.path(), "dry-compare");
  ASSERT_EQ(dry.Wait(), 0) << dry.err();
  const auto printed = ParseDryRun(dry.out());
  int code = -1;
  WorkerDump real = Run(args, &code);
  ASSERT_EQ(code, 0) << last_err_;
  ASSERT_EQ(printed.size(), 2u) << dry.out();
  ASSERT_EQ(real.env.size(), 2u) << last_err_;
  for (const auto& [rank, vars] : printed) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const std::map<std::string, std::string>& worker = real.env[rank];
    for (const char* name : {"TORCHELASTIC_USE_AGENT_STORE", "HETRUN_MEMORY_CEILING_BYTES"}) {
      EXPECT_TRUE(vars.contains(name)) << name << "\n" << dry.out();
    }
    EXPECT_EQ(vars.at("TORCHELASTIC_USE_AGENT_STORE"), testing::OneNodeAgentStore());
    for (const auto& [name, value] : vars) {
      if (value.rfind("<", 0) == 0) continue;  // in the run folder, made by a run only
      ASSERT_TRUE(worker.contains(name)) << name;
      EXPECT_EQ(worker.at(name), value) << name;
    }
    for (const auto& [name, value] : worker) {
      auto own = env_.find(name);
      if ((own != env_.end() && own->second == value) || name == "LC_CTYPE") continue;
      EXPECT_TRUE(vars.contains(name)) << name << "=" << value << " is not in the dry run";
    }
  }
  // A torch that takes a memory fraction gets it, in the dry run as in the run.
  if (printed.at(0).contains("PYTORCH_ALLOC_CONF")) {
    EXPECT_NE(printed.at(0).at("PYTORCH_ALLOC_CONF").find("per_process_memory_fraction:"),
              std::string::npos);
  }
}

TEST_F(TorchrunCliTest, TeeRedirectsAndRankFilterFollowTorchrunsLogLayout) {
  std::string logs = dir_.path() + "/logs";
  HetrunProcess run({"--nproc-per-node", "2", "--redirects", "1", "--tee", "2", "--log_dir", logs,
                     "--run-id", "j1", "--local-ranks-filter", "1", "--no-python", "/bin/sh", "-c",
                     "echo out-$LOCAL_RANK; echo err-$LOCAL_RANK >&2"},
                    env_, dir_.path(), "tee");
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(run.out().find("out-"), std::string::npos) << "stdout is redirected: " << run.out();
  EXPECT_NE(run.err().find("err-1"), std::string::npos) << "stderr is teed to the console";
  EXPECT_EQ(run.err().find("err-0"), std::string::npos) << "local rank 0 is filtered out";
  std::string base;
  for (const auto& entry : std::filesystem::directory_iterator(logs)) base = entry.path();
  ASSERT_EQ(base.rfind(logs + "/j1_", 0), 0u) << base;
  for (int r : {0, 1}) {
    std::string dir = base + "/attempt_0/" + std::to_string(r);
    EXPECT_EQ(testing::ReadFile(dir + "/stdout.log"), "out-" + std::to_string(r) + "\n");
    EXPECT_EQ(testing::ReadFile(dir + "/stderr.log"), "err-" + std::to_string(r) + "\n");
  }
}

// Issue 28 item 6: without --log-dir the stream logs went to a shared $TMPDIR/hetrun-logs made
// with plain mkdir and files opened through symlinks: another user could plant links there (the
// victim's file overwritten with worker output) and read the logs. Now they go to the user's
// private run base (HETRUN_RUN_BASE, else $TMPDIR/hetrun-<uid>), in folders of mode 0700.
TEST_F(TorchrunCliTest, StreamLogsDefaultToAPrivateFolderOfThisUser) {
  const std::string tmp = dir_.path() + "/tmp";
  std::filesystem::create_directories(tmp + "/hetrun-logs");  // what another user could plant
  env_["TMPDIR"] = tmp;
  HetrunProcess run({"--nproc-per-node", "1", "--tee", "3", "--run-id", "j2", "--no-python",
                     "/bin/sh", "-c", "echo out"},
                    env_, dir_.path(), "private");
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(std::filesystem::is_empty(tmp + "/hetrun-logs")) << "not the shared folder";
  const std::string logs = tmp + "/hetrun-" + std::to_string(::geteuid()) + "/logs";
  ASSERT_TRUE(std::filesystem::is_directory(logs)) << run.err();
  std::string base;
  for (const auto& entry : std::filesystem::directory_iterator(logs)) base = entry.path();
  ASSERT_EQ(base.rfind(logs + "/j2_", 0), 0u) << base;
  EXPECT_NE(run.err().find(base), std::string::npos) << "the folder is logged";
  for (const std::string& dir : {logs, base, base + "/attempt_0", base + "/attempt_0/0"}) {
    struct stat info {};
    ASSERT_EQ(::lstat(dir.c_str(), &info), 0) << dir;
    EXPECT_EQ(info.st_mode & 077, 0u) << dir << " is readable by others";
  }
  EXPECT_EQ(testing::ReadFile(base + "/attempt_0/0/stdout.log"), "out\n");
}

TEST_F(TorchrunCliTest, AStreamLogPlantedAsASymlinkIsNotWrittenThrough) {
  const std::string logs = dir_.path() + "/logs";
  const std::string victim = dir_.WriteFile("victim", "precious\n");
  // Attempt 0 plants attempt 1's stdout.log as a link to the victim (what a stranger could do in
  // a shared folder), then fails transiently; attempt 1 must not write through the link.
  const std::string plant = "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then d=$(echo " + logs +
                            "/j3_*)/attempt_1/0; mkdir -p \"$d\"; ln -s " + victim +
                            " \"$d/stdout.log\"; exit 75; fi; echo out";
  HetrunProcess run({"--nproc-per-node", "1", "--tee", "1", "--log-dir", logs, "--run-id", "j3",
                     "--max-restarts", "1", "--no-python", "/bin/sh", "-c", plant},
                    env_, dir_.path(), "planted");
  run.Wait();
  EXPECT_EQ(testing::ReadFile(victim), "precious\n");
}

/// The variables a real torchrun gives its workers beyond its own environment, when the test
/// Python has torch: hetrun's workers get every one of them.
TEST_F(TorchrunCliTest, EveryVariableARealTorchrunSetsIsSetByHetrun) {
  std::string python = HETRUN_TEST_PYTHON;
  if (!std::filesystem::exists(python)) GTEST_SKIP() << "no test Python at " << python;
  testing::ProcessOptions options;
  options.env = env_;
  testing::ProcessResult probe = testing::RunProcess({python, "-c", "import torch"}, options);
  if (probe.exit_code != 0) GTEST_SKIP() << "no torch in " << python;
  std::string dumps = dir_.path() + "/torchrun-dumps";
  std::filesystem::create_directories(dumps);
  testing::ProcessOptions reference_options = options;
  (*reference_options.env)["DUMP_DIR"] = dumps;
  testing::ProcessResult reference = testing::RunProcess(
      {python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", worker_},
      reference_options);
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  WorkerDump torchrun =
      ParseDump(testing::ReadFile(dumps + "/rank_0") + testing::ReadFile(dumps + "/rank_1"));
  int code = -1;
  WorkerDump ours = Run({"--standalone", "--nproc-per-node", "2", "WORKER"}, &code);
  ASSERT_EQ(code, 0) << last_err_;
  ASSERT_EQ(torchrun.env.size(), 2u);
  std::set<std::string> different = {"MASTER_PORT", "TORCHELASTIC_RUN_ID",
                                     "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"};
  for (int rank : {0, 1}) {
    for (const auto& [name, value] : torchrun.env[rank]) {
      if (name == "DUMP_DIR" || (env_.contains(name) && env_[name] == value)) continue;
      if (name.rfind("PYTHON", 0) == 0 || name.rfind("_", 0) == 0) continue;  // interpreter's
      ASSERT_TRUE(ours.env[rank].contains(name)) << name << " (torchrun: " << value << ")";
      if (!different.contains(name)) {
        EXPECT_EQ(ours.env[rank][name], value) << name << " of rank " << rank;
      }
    }
  }
}

}  // namespace
}  // namespace hetrun
