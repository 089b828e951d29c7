#include "commands/torchrun_args.h"

#include <gtest/gtest.h>

#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {
namespace {

using Args = std::vector<std::string>;

const std::vector<KnownOption> kKnown = {
    {"nnodes", true},      {"nproc-per-node", true}, {"node-rank", true},
    {"master-addr", true}, {"master-port", true},    {"max-restarts", true},
    {"run-id", true},      {"log-dir", true},        {"tee", true},
    {"redirects", true},   {"prefix-ranks", false},  {"help", false},
    {"dry-run", false},    {"role", true},           {"local-ranks-filter", true}};

TorchrunArgs Translate(const Args& args) {
  Result<TorchrunArgs> out = TranslateTorchrunArgs(args, kKnown);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : TorchrunArgs{};
}

std::string ErrorOf(const Args& args) {
  Result<TorchrunArgs> out = TranslateTorchrunArgs(args, kKnown);
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(out.ok() ? 0 : ExitCodeFor(out.status()), 64);
  return out.ok() ? "" : out.status().message();
}

TEST(TorchrunArgsTest, UnderscoreAndEqualsSpellingsBecomeHetrunsOptions) {
  TorchrunArgs out =
      Translate({"--nproc_per_node=4", "--node_rank", "1", "--master_addr=h", "train.py", "-x"});
  EXPECT_EQ(out.options, (Args{"--nproc-per-node", "4", "--node-rank", "1", "--master-addr", "h"}));
  EXPECT_EQ(out.program, (Args{"train.py", "-x"})) << "options after the program are its own";
  EXPECT_EQ(out.kind, ProgramKind::kPythonScript);
  EXPECT_EQ(WorkerCommand(out, "py3"), (Args{"py3", "train.py", "-x"}));
}

TEST(TorchrunArgsTest, RendezvousOptionsMapToMasterAddressPortAndRunId) {
  EXPECT_EQ(
      Translate({"--rdzv-endpoint", "node0:29400", "--rdzv_id=j", "--rdzv-backend", "c10d", "a.py"})
          .options,
      (Args{"--master-addr", "node0", "--master-port", "29400", "--run-id", "j"}));
  EXPECT_EQ(Translate({"--rdzv-endpoint=[fd00::1]:7", "a.py"}).options,
            (Args{"--master-addr", "fd00::1", "--master-port", "7"}));
  EXPECT_EQ(Translate({"--rdzv-endpoint=node0", "a.py"}).options, (Args{"--master-addr", "node0"}));
  EXPECT_EQ(Translate({"--nnodes=2:2", "a.py"}).options, (Args{"--nnodes", "2"}));
}

TEST(TorchrunArgsTest, StandaloneIsOneLocalNode) {
  TorchrunArgs out = Translate({"--standalone", "--nproc-per-node", "2", "a.py"});
  EXPECT_TRUE(out.standalone);
  EXPECT_EQ(out.options,
            (Args{"--nproc-per-node", "2", "--nnodes", "1", "--master-addr", "localhost"}));
}

TEST(TorchrunArgsTest, ProgramKindsFollowTorchrun) {
  EXPECT_EQ(WorkerCommand(Translate({"-m", "pkg.train", "--lr", "1"}), "py"),
            (Args{"py", "-m", "pkg.train", "--lr", "1"}));
  EXPECT_EQ(WorkerCommand(Translate({"--no-python", "x.py"}), "py"), (Args{"x.py"}));
  EXPECT_EQ(WorkerCommand(Translate({"--run_path", "script"}), "py"), (Args{"py", "script"}));
  EXPECT_EQ(WorkerCommand(Translate({"./train", "a"}), "py"), (Args{"./train", "a"}));
  EXPECT_EQ(WorkerCommand(Translate({"--nnodes", "1", "--", "./train", "--nnodes"}), "py"),
            (Args{"./train", "--nnodes"}));
}

// Issue 39 item 15: these were accepted with an info line saying hetrun "does not need" them;
// each now gets a warning naming it as given and what hetrun does instead.
TEST(TorchrunArgsTest, EachIgnoredTorchrunOptionGetsAWarningSayingWhatHetrunDoesInstead) {
  TorchrunArgs out = Translate({"--monitor-interval=1", "--start_method", "spawn", "--numa-binding",
                                "node", "--virtual-local-rank", "--duplicate_stdout_filters=loss",
                                "--duplicate-stderr-filters", "err", "--logs-specs", "x", "a.py"});
  EXPECT_TRUE(out.options.empty());
  const Args given = {"--monitor-interval 1",
                      "--start-method spawn",
                      "--numa-binding node",
                      "--virtual-local-rank",
                      "--duplicate-stdout-filters loss",
                      "--duplicate-stderr-filters err",
                      "--logs-specs x"};
  ASSERT_EQ(out.ignored.size(), given.size());
  for (size_t i = 0; i < given.size(); ++i) {
    EXPECT_EQ(out.ignored[i].rfind("torchrun's " + given[i] + " is ignored: hetrun", 0), 0u)
        << out.ignored[i];
    EXPECT_EQ(out.ignored[i].find('\n'), std::string::npos) << "one line";
  }
  EXPECT_NE(out.ignored[2].find("--cpu-bind spread"), std::string::npos) << out.ignored[2];
  EXPECT_NE(ErrorOf({"--virtual-local-rank=1", "a.py"}).find("takes no value"), std::string::npos);
}

TEST(TorchrunArgsTest, AnElasticNodeRangeSaysWhatHetrunDoesInstead) {
  std::string message = ErrorOf({"--nnodes", "2:4", "a.py"});
  EXPECT_NE(message.find("does not grow or shrink a running job"), std::string::npos) << message;
  EXPECT_NE(message.find("--nnodes 4"), std::string::npos) << message;
  EXPECT_NE(message.find("exit 75"), std::string::npos) << message;
  EXPECT_NE(message.find("restarts the whole job"), std::string::npos) << message;
}

TEST(TorchrunArgsTest, BadInputsAreUsageErrorsNamingTheReason) {
  EXPECT_NE(ErrorOf({"--nnodes", "1:4", "a.py"}).find("gang-scheduled"), std::string::npos);
  EXPECT_NE(ErrorOf({"--rdzv-backend", "etcd", "a.py"}).find("gang-scheduled"), std::string::npos);
  EXPECT_NE(ErrorOf({"--rdzv-backend", "zk", "a.py"}).find("unknown backend"), std::string::npos);
  EXPECT_NE(ErrorOf({"--nproc_per_nodes", "2"}).find("did you mean '--nproc-per-node'"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--mastr-port=1"}).find("did you mean '--master-port'"), std::string::npos);
  EXPECT_NE(ErrorOf({"-z"}).find("unknown option '-z'"), std::string::npos);
  EXPECT_NE(ErrorOf({"--nproc-per-node"}).find("needs a value"), std::string::npos);
  EXPECT_NE(ErrorOf({"--dry-run=1"}).find("takes no value"), std::string::npos);
  EXPECT_NE(ErrorOf({"--rdzv-endpoint", ":5", "a.py"}).find("no host"), std::string::npos);
  EXPECT_NE(ErrorOf({"-m"}).find("needs a module"), std::string::npos);
}

TEST(TorchrunArgsTest, StreamMasksReadTorchrunsValues) {
  Result<StreamMask> all = ParseStreamMask("3");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->For(0), 3);
  EXPECT_EQ(all->For(7), 3);
  Result<StreamMask> per = ParseStreamMask("0:1,2:2");
  ASSERT_TRUE(per.ok());
  EXPECT_EQ(per->For(0), 1);
  EXPECT_EQ(per->For(1), 0);
  EXPECT_EQ(per->For(2), 2);
  for (const char* bad : {"4", "x", "0:9", "1:", ":1", "0:1,,"}) {
    EXPECT_FALSE(ParseStreamMask(bad).ok()) << bad;
  }
  Result<std::vector<int>> ranks = ParseLocalRanks("0,3");
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ(*ranks, (std::vector<int>{0, 3}));
  EXPECT_FALSE(ParseLocalRanks("0,a").ok());
  EXPECT_FALSE(ParseLocalRanks("").ok());
}

// Issue 28 item 15: the quote of an unknown option was cut at 64 bytes, mid-character, and
// control characters in it went to the terminal raw.
TEST(TorchrunArgsTest, AnUnknownOptionIsQuotedWholeCharactersAndEscaped) {
  const std::string euro = "\xE2\x82\xAC";
  std::string arg = "--" + std::string(61, 'x') + euro + "more";  // the euro spans bytes 63-65
  std::string message = ErrorOf({arg});
  EXPECT_NE(message.find("unknown option '--" + std::string(61, 'x') + "...'"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("\xE2\x82'"), std::string::npos) << "half a character";
  std::string escape = ErrorOf({"--x\x1b[2J"});
  EXPECT_NE(escape.find("unknown option '--x\\x1b[2J'"), std::string::npos) << escape;
  EXPECT_EQ(escape.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace hetrun::launcher
