// hetrun run --check-collectives with stand-in probes (docs/how-to/collective-check.md): the
// launcher's side of the check without torch. --python names a shell script that plays
// `python -m hetrun.collective_check` (leaving the files a real probe leaves, or not finishing,
// or failing); hetrun's verdict, deadline and report are the real ones. The real probes run in
// ctest python.collective_check.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "run_harness.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::ReadFile;
using testing::TempDir;

// The stand-in probe: FAKE_PROBE chooses what it does; anything but `-m hetrun.collective_check`
// (hetrun's look-up of torch) fails, so no store is hosted and none is needed.
constexpr const char* kFakePython = R"(#!/bin/sh
[ "$1 $2" = "-m hetrun.collective_check" ] || exit 1
out="$HETRUN_RUN_DIR/rank_$RANK.json"
case "$FAKE_PROBE" in
  stall) echo "all_reduce 131072" > "$HETRUN_RUN_DIR/progress_rank_$RANK"; exec sleep 600 ;;
  wrong) printf '{"rank": %s, "world_size": 2, "backend": "gloo", "wrong": [{"op": "all_gather", "bytes": 1048576, "rank": 1, "node": 0, "family": "hopper", "element": 7, "expected": 3, "got": 4, "wrong_elements": 2}], "wrong_total": 3, "wrong_sizes": {"all_gather": [1048576, 2097152]}, "wrong_ranks": [{"rank": 1, "family": "hopper", "node": 0}]}' "$RANK" > "$out" ;;
  pass) printf '{"rank": %s, "world_size": 2, "backend": "gloo", "wrong": [], "bandwidth": {"bytes": 16777216, "iterations": 5, "job_all_reduce_gb_per_s": 1.5, "stages": [], "boundaries": []}, "fragment": {"measured_by": "hetrun run --check-collectives", "world_size": 2, "nodes": 1, "nvlink": 1.5}}' "$RANK" > "$out" ;;
  badrank) printf '{"rank": %s, "world_size": 2, "backend": "gloo", "wrong": [{"op": "all_gather", "bytes": 1048576, "rank": "1", "node": 0, "family": "hopper", "element": 7, "expected": 3, "got": 4, "wrong_elements": 2}]}' "$RANK" > "$out" ;;
  noiface) printf '{"rank": %s, "cannot_run": "the gloo backend cannot start: GLOO_SOCKET_IFNAME=%s names nosuch0, not a network interface of this node"}' "$RANK" "'nosuch0'" > "$out"; exit 78 ;;
  silent) ;;
  crash) echo "ImportError: boom in the probe" >&2; exit 3 ;;
esac
)";

struct Check {
  TempDir dir;
  std::string python;
  Check() {
    python = dir.WriteFile("python", kFakePython);
    ::chmod(python.c_str(), 0755);
  }
  std::vector<std::string> Args(const std::vector<std::string>& flags) const {
    std::vector<std::string> args{"run", "--nproc-per-node", "2", "--check-collectives", "--python",
                                  python};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/echo", "worker-ran"});
    return args;
  }
  std::map<std::string, std::string> Env(const std::string& mode) const {
    auto env = HetrunEnv(dir.path());
    env["FAKE_PROBE"] = mode;
    return env;
  }
  std::string Log() const { return ReadFile(dir.path() + "/termination-log"); }
};

TEST(RunCollectiveCheckTest, ProbesStillRunningAtTheDeadlineAreStoppedWith75NamingWhereTheyWere) {
  Check check;
  HetrunProcess run(check.Args({"--check-collectives-timeout", "5s", "--grace-period", "5s"}),
                    check.Env("stall"), check.dir.path());
  EXPECT_EQ(run.Wait(120s), 75) << run.err();
  const std::string log = check.Log();
  EXPECT_NE(log.find("collective check timed out: the probes did not finish within 5 s "
                     "(--check-collectives-timeout)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("rank 0 (unknown, node 0) at all_reduce at 128 KiB"), std::string::npos)
      << log;
  EXPECT_NE(log.find("rank 1 (unknown, node 0) at all_reduce at 128 KiB"), std::string::npos)
      << log;
  EXPECT_EQ(run.out().find("worker-ran"), std::string::npos) << run.out();
}

TEST(RunCollectiveCheckTest, AWrongValueInTheFindingsIs84AndNoWorkerStarts) {
  Check check;
  auto env = check.Env("wrong");
  env["NCCL_PROTO"] = "SIMPLE";
  HetrunProcess run(check.Args({}), env, check.dir.path());
  EXPECT_EQ(run.Wait(120s), 84) << run.err();
  const std::string log = check.Log();
  // The probe's summary: the sizes of every wrong value, not only the ones kept in full.
  EXPECT_NE(log.find("collective check: wrong values in all_gather at 1 MiB, 2 MiB on rank 1 "
                     "(hopper, node 0); first: all_gather 1 MiB on rank 1, element 7 expected 3 "
                     "got 4"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("NCCL_PROTO is 'SIMPLE'"), std::string::npos) << log;
  EXPECT_EQ(run.out().find("worker-ran"), std::string::npos) << run.out();
}

TEST(RunCollectiveCheckTest, PassingProbesLetTheWorkersStartAndTheFragmentIsWritten) {
  Check check;
  const std::string out = check.dir.path() + "/links.json";
  HetrunProcess run(check.Args({"--check-collectives-out", out}), check.Env("pass"),
                    check.dir.path());
  EXPECT_EQ(run.Wait(120s), 0) << run.err();
  EXPECT_NE(run.err().find("collective check passed"), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("all-reduce over the job 1.500 GB/s"), std::string::npos) << run.err();
  EXPECT_NE(run.out().find("worker-ran\nworker-ran"), std::string::npos) << run.out();
  EXPECT_NE(ReadFile(out).find("\"nvlink\": 1.5"), std::string::npos) << ReadFile(out);
}

TEST(RunCollectiveCheckTest, RunsOncePerRunNotAgainOnRestarts) {
  Check check;
  std::vector<std::string> args{"run",
                                "--nproc-per-node",
                                "1",
                                "--check-collectives",
                                "--python",
                                check.python,
                                "--max-restarts",
                                "1",
                                "--",
                                "/bin/sh",
                                "-c",
                                "echo attempt $TORCHELASTIC_RESTART_COUNT; exit 75"};
  HetrunProcess run(args, check.Env("pass"), check.dir.path());
  EXPECT_EQ(run.Wait(120s), 75) << run.err();
  const std::string err = run.err();
  const size_t first = err.find("collective check passed");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("collective check passed", first + 1), std::string::npos) << err;
  EXPECT_NE(run.out().find("attempt 0\nattempt 1"), std::string::npos) << run.out();
}

TEST(RunCollectiveCheckTest, ProbesThatLeaveNoVerdictOrFailAre78NamingTheCheck) {
  Check check;
  HetrunProcess silent(check.Args({}), check.Env("silent"), check.dir.path(), "silent");
  EXPECT_EQ(silent.Wait(120s), 78) << silent.err();
  EXPECT_NE(check.Log().find("collective check could not run: rank 0 exited 0 without its result"),
            std::string::npos)
      << check.Log();
  HetrunProcess crash(check.Args({}), check.Env("crash"), check.dir.path(), "crash");
  EXPECT_EQ(crash.Wait(120s), 78) << crash.err();
  EXPECT_NE(check.Log().find("collective check could not run: the probe rank"), std::string::npos)
      << check.Log();
  EXPECT_NE(check.Log().find("ImportError: boom in the probe"), std::string::npos) << check.Log();
  EXPECT_EQ(crash.out().find("worker-ran"), std::string::npos);
}

// A result whose wrong value names its rank as a string (a store entry another client wrote)
// once aborted hetrun (an uncaught nlohmann type_error, SIGABRT, no termination log).
TEST(RunCollectiveCheckTest, AResultWithAFieldOfTheWrongTypeIs78NamingTheFieldNotACrash) {
  Check check;
  HetrunProcess run(check.Args({}), check.Env("badrank"), check.dir.path());
  EXPECT_EQ(run.Wait(120s), 78) << run.err();
  const std::string log = check.Log();
  EXPECT_NE(log.find("collective check could not run: rank 0's result file"), std::string::npos)
      << log;
  EXPECT_NE(log.find("has a bad field: wrong[0].rank is not an integer; exit 78"),
            std::string::npos)
      << log;
  EXPECT_EQ(run.out().find("worker-ran"), std::string::npos) << run.out();
}

// A local fault the probe proved (a socket interface that does not exist here) is 78 naming it,
// whatever other ranks' results say.
TEST(RunCollectiveCheckTest, AProbeThatProvedALocalFaultIs78NamingIt) {
  Check check;
  HetrunProcess run(check.Args({}), check.Env("noiface"), check.dir.path());
  EXPECT_EQ(run.Wait(120s), 78) << run.err();
  const std::string log = check.Log();
  EXPECT_NE(log.find("collective check cannot run: rank "), std::string::npos) << log;
  EXPECT_NE(log.find("GLOO_SOCKET_IFNAME='nosuch0' names nosuch0"), std::string::npos) << log;
}

}  // namespace
}  // namespace hetrun
