#include "commands/run/run_options.h"

#include <string>

#include "preflight/preflight.h"
#include "preflight/topology_inputs.h"

namespace hetrun::launcher {
namespace {

// Re-plan by supervised restart (docs/how-to/replan-restart.md).
void AddReplanOptions(cxxopts::Options& options) {
  options.add_options("supervision")(
      "replan-restart",
      "act on a worker's exit 82 (re-plan requested): wait up to the grace period for every "
      "local worker to exit 82 with a complete checkpoint, then restart them on the recorded "
      "layout, not counted against --max-restarts (default off: 82 is reported as 1)")(
      "max-replans", "re-plans by restart at most (HETRUN_MAX_REPLANS, default 3)",
      cxxopts::value<std::string>())(
      "checkpoint-dir",
      "the workers' re-plan checkpoint folder, given to them in HETRUN_CHECKPOINT_DIR; "
      "--replan-restart needs it; across nodes on the --layout-state volume "
      "(HETRUN_CHECKPOINT_DIR, default none)",
      cxxopts::value<std::string>())(
      "model-layers",
      "the model's layer count: a pipeline layout (--plan, the pods' HETRUN_STAGE entries, the "
      "layout state) of another count exits 78 before any worker starts (HETRUN_MODEL_LAYERS, "
      "default not checked)",
      cxxopts::value<std::string>())(
      "torchtitan-names",
      "EMBEDDING:LAYER:HEAD torchtitan module names ({} = the layer index) of the "
      "HETRUN_TORCHTITAN_ARGS each attempt of a pipeline gets (HETRUN_TORCHTITAN_NAMES, default "
      "tok_embeddings:layers.{}:norm,lm_head)",
      cxxopts::value<std::string>());
}

// Hang detection and the restart policy (docs/how-to/restarts.md).
void AddRestartOptions(cxxopts::Options& options) {
  options.add_options("supervision")(
      "hang-timeout",
      "a worker that does not beat (HETRUN_HEARTBEAT) for this long is hung: exit 75 "
      "(HETRUN_HANG_TIMEOUT, default off; at least 1ms when given)",
      cxxopts::value<std::string>())(
      "startup-timeout",
      "until its first beat, a worker may take this long (model loading, a checkpoint's "
      "restore) before it is hung: exit 75; after it, --hang-timeout applies "
      "(HETRUN_STARTUP_TIMEOUT, default --hang-timeout)",
      cxxopts::value<std::string>())(
      "max-restarts",
      "restart the local group after a worker is killed by a signal, hangs, exits 75 or loses a "
      "peer (a communication failure raised in Python), at most N times (HETRUN_MAX_RESTARTS, "
      "default 0)",
      cxxopts::value<std::string>())(
      "restart-on",
      "transient: --max-restarts restarts the failures above only; any: every failure of a "
      "worker, torchrun's rule, stopping when one repeats the same way (HETRUN_RESTART_ON, "
      "default transient)",
      cxxopts::value<std::string>());
}

// Health of the running job (docs/ARCHITECTURE.md §5.10).
void AddHealthOptions(cxxopts::Options& options) {
  options.add_options("health")(
      "fail-slow",
      "warn or exit: a rank the tuner finds slower than its GPU family (or its own history) for "
      "3 windows is logged (warn, balancing goes on) or ends the job with 83, no local restart "
      "(exit) (HETRUN_FAIL_SLOW, default warn)",
      cxxopts::value<std::string>());
}

// The collective check before the workers (docs/how-to/collective-check.md).
void AddCollectiveCheckOptions(cxxopts::Options& options) {
  options.add_options("preflight")(
      "check-collectives",
      "before the workers start, once per hetrun run: one probe per local rank (python -m "
      "hetrun.collective_check) checks all-reduce and all-gather from 8 B to 8 MiB bit for bit "
      "over the job (NCCL on GPUs, Gloo on CPU) and measures the links; a wrong value exits 84, a "
      "timeout 75 (default off)")(
      "check-collectives-timeout",
      "the check's deadline (HETRUN_COLLECTIVE_CHECK_TIMEOUT, default 60s + 100ms x world size)",
      cxxopts::value<std::string>())(
      "check-collectives-out",
      "write the measured links as a cluster-file fragment to FILE, for hetrun plan --links "
      "(node 0; default: only in the run folder)",
      cxxopts::value<std::string>());
}

// torchrun's own options that hetrun run takes as torchrun does.
void AddTorchrunOptions(cxxopts::Options& options) {
  options.add_options("torchrun")(
      "python",
      "interpreter for a .py program and -m (HETRUN_PYTHON; default: the python beside a "
      "pip-installed hetrun, else python3)",
      cxxopts::value<std::string>())("m,module", "run the program as python -m MODULE")(
      "no-python", "execute the program directly, even a .py file")(
      "run-path", "run the program with the Python interpreter whatever its name")(
      "standalone",
      "one node on this host: --nnodes 1, --master-addr localhost, a free port, a fresh run id")(
      "rdzv-endpoint", "HOST[:PORT]: the same as --master-addr and --master-port",
      cxxopts::value<std::string>())("rdzv-backend",
                                     "c10d or static, accepted (hetrun always meets at its store)",
                                     cxxopts::value<std::string>())(
      "rdzv-id", "the same as --run-id", cxxopts::value<std::string>());
}

}  // namespace

cxxopts::Options RunOptions() {
  cxxopts::Options options("hetrun run",
                           "Start the local workers of a training job and supervise them.");
  options.custom_help(
      "[OPTIONS] -- COMMAND [ARGS...] | [OPTIONS] train.py [ARGS...] | [OPTIONS] -m MODULE "
      "[ARGS...]   (run is the default subcommand; torchrun's options and underscore spellings "
      "are accepted)");
  AddTopologyOptions(options);
  options.add_options("supervision")(
      "prefix-ranks", "prefix every worker output line with [rank R] on the console")(
      "t,tee",
      "torchrun's --tee: also write these streams to log files: 0 none, 1 stdout, 2 stderr, 3 "
      "both, or per local rank 0:1,1:2 (files <log-dir>/<run-id>_<pid>/attempt_N/LOCAL_RANK/)",
      cxxopts::value<std::string>())(
      "r,redirects", "torchrun's --redirects: these streams go to the log files only (as --tee)",
      cxxopts::value<std::string>())("local-ranks-filter",
                                     "only these local ranks' output reaches the console (0,1)",
                                     cxxopts::value<std::string>())(
      "log-dir",
      "write one log file per rank (rank_R.log; rank_R.restart_N.log after restarts); with --tee "
      "or --redirects, the base of torchrun's layout",
      cxxopts::value<std::string>())(
      "grace-period",
      "SIGTERM -> SIGKILL escalation (30, 30s, 5m); keep it below the pod's "
      "terminationGracePeriodSeconds (HETRUN_GRACE_PERIOD, default 30s)",
      cxxopts::value<std::string>())(
      "cpu-bind",
      "none, or spread: deal the CPUs hetrun may use out to the local workers, a block each "
      "(one CPU each, shared in turn, when workers outnumber CPUs) (HETRUN_CPU_BIND, default "
      "none)",
      cxxopts::value<std::string>())(
      "plan",
      "run a pipeline on this machine: FILE is `hetrun plan --json` output; the workers take its "
      "stages in order (rank = replicas of earlier stages + index) and get the layout file in "
      "HETRUN_PLAN",
      cxxopts::value<std::string>())(
      "run-id", "TORCHELASTIC_RUN_ID for the workers (default none; --standalone: a fresh UUID)",
      cxxopts::value<std::string>()->default_value("none"))(
      "role", "ROLE_NAME for the workers (default default)",
      cxxopts::value<std::string>()->default_value("default"))(
      "signals-to-handle", "TORCHELASTIC_SIGNALS_TO_HANDLE for the workers",
      cxxopts::value<std::string>()->default_value("SIGTERM,SIGINT,SIGHUP,SIGQUIT"))(
      "dry-run", "print each local worker's command and environment, start nothing")(
      "measurements-out",
      "copy the pipeline's merged measurements.json (docs/reference/formats/measurements.md) to "
      "FILE at the end of the run: node 0 writes every node's, another node its own "
      "(HETRUN_MEASUREMENTS_OUT, default none)",
      cxxopts::value<std::string>())(
      "layout-state",
      "the pipeline's layout state on storage that outlives pods (the checkpoint volume): a job "
      "restarted whole resumes from the split its live layer moves reached; global rank 0 "
      "rewrites it after each move (HETRUN_LAYOUT_STATE, default none)",
      cxxopts::value<std::string>())(
      "metrics-port",
      "serve Prometheus metrics on http://HOST:PORT/metrics while the workers run ([HOST:]PORT, "
      "default host 0.0.0.0, port 0 = any free one) (HETRUN_METRICS_PORT, default off)",
      cxxopts::value<std::string>())("h,help", "this text");
  AddRestartOptions(options);
  AddTorchrunOptions(options);
  AddPreflightOptions(options);
  AddCollectiveCheckOptions(options);
  AddHealthOptions(options);
  AddReplanOptions(options);
  return options;
}

std::vector<KnownOption> KnownRunOptions(const cxxopts::Options& options) {
  std::vector<KnownOption> known;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& option : options.group_help(group).options) {
      for (const std::string& name : option.l) known.push_back({name, !option.is_boolean});
    }
  }
  return known;
}

}  // namespace hetrun::launcher
