#include "preflight/collective/collective_check.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "hetrun/base/atomic_file.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"
#include "hetrun/plan/links_fragment.h"
#include "preflight/collective/collective_result.h"
#include "supervise/report/failure_report.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;
using Json = nlohmann::json;

constexpr size_t kMaxProgressBytes = 4096;

/// What one local probe left in the run folder.
struct RankFindings {
  int rank = 0;
  std::string family;          ///< HETRUN_GPU_FAMILY of the probe ("unknown" when unset)
  std::string node;            ///< GROUP_RANK
  std::optional<Json> result;  ///< rank_<R>.json, when it parses and every field checks
  std::string invalid;         ///< why rank_<R>.json is unusable (over the bound, a bad field)
  std::string progress;        ///< progress_rank_<R>: the operation it was at ("all_reduce 131072")
};

/// A small file of the run folder, never through a symbolic link, at most `limit` + 1 bytes (so
/// that a longer one shows); "" when absent or unreadable.
std::string ReadRunFile(const std::string& path, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  struct stat info {};
  std::string text;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    char buffer[65536];
    ssize_t n;
    while (text.size() <= limit && (n = ::read(fd, buffer, sizeof buffer)) > 0) {
      text.append(buffer, static_cast<size_t>(n));
    }
    if (text.size() > limit + 1) text.resize(limit + 1);
  }
  ::close(fd);
  return text;
}

std::string EnvOr(const WorkerSpec& spec, const std::string& name, const std::string& fallback) {
  auto it = spec.env.find(name);
  return it == spec.env.end() || it->second.empty() ? fallback : it->second;
}

/// rank_<R>.json into `f`: its result when it parses and every field checks, else why not.
void ReadResult(RankFindings& f, const std::string& path, int world_size) {
  const size_t limit = CollectiveResultLimit(world_size);
  const std::string text = ReadRunFile(path, limit);
  if (text.empty()) return;
  if (text.size() > limit) {
    f.invalid =
        fmt::format("is larger than the {} bytes a probe writes for {} ranks", limit, world_size);
    return;
  }
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    f.invalid = "is not JSON";
    return;
  }
  if (Status checked = CheckCollectiveResult(parsed, world_size); !checked.ok()) {
    f.invalid = "has a bad field: " + checked.message();
    return;
  }
  f.result = std::move(parsed);
}

std::vector<RankFindings> ReadFindings(const std::vector<WorkerSpec>& workers,
                                       const std::string& dir, int world_size) {
  std::vector<RankFindings> found;
  for (const WorkerSpec& spec : workers) {
    RankFindings f;
    f.rank = spec.rank;
    f.family = EnvOr(spec, "HETRUN_GPU_FAMILY", "unknown");
    f.node = EnvOr(spec, "GROUP_RANK", "0");
    const std::string r = std::to_string(spec.rank);
    ReadResult(f, dir + "/rank_" + r + ".json", world_size);
    f.progress = ReadRunFile(dir + "/progress_rank_" + r, kMaxProgressBytes);
    while (!f.progress.empty() && (f.progress.back() == '\n' || f.progress.back() == ' ')) {
      f.progress.pop_back();
    }
    found.push_back(std::move(f));
  }
  return found;
}

/// 8 B, 512 KiB, 8 MiB.
std::string SizeText(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

/// "all_reduce 131072" -> "all_reduce at 128 KiB"; other progress as written.
std::string ProgressText(const std::string& progress) {
  if (progress.empty()) return "not started (no progress written)";
  const size_t space = progress.rfind(' ');
  if (space == std::string::npos) return progress;
  const std::string tail = progress.substr(space + 1);
  if (tail.empty() || tail.find_first_not_of("0123456789") != std::string::npos ||
      tail.size() > 12) {
    return progress;
  }
  return progress.substr(0, space) + " at " + SizeText(std::stoll(tail));
}

std::string Seconds(milliseconds d) {
  return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0);
}

std::string NcclProtoHint(const std::vector<WorkerSpec>& workers) {
  const std::string proto = workers.empty() ? "" : EnvOr(workers.front(), "NCCL_PROTO", "");
  return "NCCL_PROTO is " + (proto.empty() ? std::string("unset") : "'" + proto + "'") +
         " (mixed A100 + H100 all-reduces are known to hang at 128 KiB and, with "
         "NCCL_PROTO=SIMPLE, to return wrong values from 512 KiB: NVIDIA/nccl#1184; do not force "
         "SIMPLE across GPU generations, and compare the nodes' NCCL versions)";
}

/// The job-wide wrong results (every probe has the same summary, checked by
/// CheckCollectiveResult): sizes per op, then the ranks, then the first wrong value.
std::string WrongReport(const Json& result, const std::vector<WorkerSpec>& workers) {
  const Json& wrong = result.at("wrong");
  std::map<std::string, std::set<int64_t>> sizes;  // op -> bytes
  std::map<int, std::string> ranks;                // rank -> "(family, node N)"
  auto add_rank = [&ranks](const Json& w) {
    ranks[w.value("rank", -1)] = "(" + w.value("family", std::string("unknown")) + ", node " +
                                 std::to_string(w.value("node", -1)) + ")";
  };
  for (const Json& w : wrong) {
    sizes[w.at("op").get<std::string>()].insert(w.at("bytes").get<int64_t>());
    add_rank(w);
  }
  const Json summary_sizes = result.value("wrong_sizes", Json::object());
  for (const auto& [op, list] : summary_sizes.items()) {
    for (const Json& bytes : list) sizes[op].insert(bytes.get<int64_t>());
  }
  for (const Json& w : result.value("wrong_ranks", Json::array())) add_rank(w);
  std::string text = "collective check: wrong values in ";
  bool first = true;
  for (const auto& [op, bytes] : sizes) {
    text += std::string(first ? "" : "; ") + op + " at ";
    std::string list;
    for (int64_t b : bytes) list += (list.empty() ? "" : ", ") + SizeText(b);
    text += list;
    first = false;
  }
  text += " on ";
  std::string who;
  for (const auto& [rank, where] : ranks) {
    who += (who.empty() ? "" : ", ") + ("rank " + std::to_string(rank) + " " + where);
  }
  const Json& w0 = wrong.front();
  text += who + "; first: " + w0.value("op", "?") + " " + SizeText(w0.value("bytes", int64_t{0})) +
          " on rank " + std::to_string(w0.value("rank", -1)) + ", element " +
          std::to_string(w0.value("element", int64_t{-1})) + " expected " +
          fmt::format("{:g}", w0.value("expected", 0.0)) + " got " +
          fmt::format("{:g}", w0.value("got", 0.0)) + " (" +
          std::to_string(w0.value("wrong_elements", int64_t{0})) + " elements wrong); " +
          NcclProtoHint(workers) + "; exit 84";
  return text;
}

std::string WhereEachRankWas(const std::vector<RankFindings>& found) {
  std::string text;
  for (const RankFindings& f : found) {
    text += (text.empty() ? "" : ", ") + fmt::format("rank {} ({}, node {}) at {}", f.rank,
                                                     f.family, f.node, ProgressText(f.progress));
  }
  return text;
}

std::string TimeoutReport(const std::vector<RankFindings>& found, const CollectiveCheckInput& input,
                          milliseconds deadline) {
  return fmt::format(
      "collective check timed out: the probes did not finish within {} ({}); {}; {}; exit 75",
      Seconds(deadline),
      input.options.timeout.count() > 0 ? std::string("--check-collectives-timeout")
                                        : fmt::format("60 s + 0.1 s x {} ranks", input.world_size),
      WhereEachRankWas(found), NcclProtoHint(input.workers));
}

std::string LastLines(const std::vector<std::string>& tail, size_t lines) {
  std::string text;
  const size_t from = tail.size() > lines ? tail.size() - lines : 0;
  for (size_t i = from; i < tail.size(); ++i) text += (text.empty() ? "" : " | ") + tail[i];
  return text;
}

/// A probe that failed without a verdict: a collective that raised (the probe's 75: its error is
/// in its result file), a probe killed by a signal (75), or one that could not run (78).
CollectiveCheckVerdict ProbeFailure(const WorkerFailure& failure,
                                    const std::vector<RankFindings>& found,
                                    const std::vector<WorkerSpec>& workers) {
  for (const RankFindings& f : found) {  // a local fault the probe proved: 78 naming it
    if (f.result && f.result->contains("cannot_run")) {
      return {kExitConfig,
              fmt::format("collective check cannot run: rank {} ({}, node {}): {}; exit 78", f.rank,
                          f.family, f.node, f.result->at("cannot_run").get<std::string>()),
              ""};
    }
  }
  for (const RankFindings& f : found) {
    if (f.result && f.result->contains("error")) {
      return {kExitTransient,
              fmt::format("collective check failed: rank {} ({}, node {}): {}; {}; exit 75", f.rank,
                          f.family, f.node, f.result->value("error", std::string()),
                          NcclProtoHint(workers)),
              ""};
    }
  }
  const std::string tail = LastLines(failure.stderr_tail, 4);
  const bool signaled = failure.kind == WorkerFailure::Kind::kSignaled;
  const int code = signaled ? kExitTransient : kExitConfig;
  return {code,
          fmt::format("collective check could not run: the probe {} (python -m "
                      "hetrun.collective_check with the workers' interpreter){}; exit {}",
                      FailureSummary(failure), tail.empty() ? "" : ": " + tail, code),
          ""};
}

std::string Gb(const Json& value) {
  if (!value.is_number()) return "n/a";
  const double v = value.get<double>();
  return fmt::format("{:.{}f} GB/s", v, v < 10 ? 3 : 1);
}

/// "job all-reduce 1.04 GB/s (bus); stage 0 all-reduce ...; p2p stage 0->1 ...".
std::string BandwidthText(const Json& bandwidth) {
  std::string text =
      "all-reduce over the job " + Gb(bandwidth.value("job_all_reduce_gb_per_s", Json()));
  for (const Json& s : bandwidth.value("stages", Json::array())) {
    if (!s.value("all_reduce_gb_per_s", Json()).is_number()) continue;
    text +=
        fmt::format(", stage {} all-reduce {}", s.value("stage", -1), Gb(s["all_reduce_gb_per_s"]));
  }
  for (const Json& b : bandwidth.value("boundaries", Json::array())) {
    text += fmt::format(", p2p stage {} -> {} {}", b.value("from_stage", -1),
                        b.value("to_stage", -1), Gb(b.value("p2p_gb_per_s", Json())));
  }
  return text + fmt::format(" (bus bandwidth for all-reduces; {} MiB, median of {})",
                            bandwidth.value("bytes", 0) >> 20, bandwidth.value("iterations", 0));
}

/// The fragment (checked with the reader `hetrun plan --links` uses) into the run folder and, on
/// the job's member 0, to --check-collectives-out.
Result<std::string> WriteFragment(const Json& fragment, const CollectiveCheckInput& input,
                                  const std::string& dir) {
  const std::string text = fragment.dump(1) + "\n";
  HETRUN_RETURN_IF_ERROR(
      plan::ParseLinksFragment(text, "the collective check's links fragment").status());
  const std::string path = dir + "/links.json";
  HETRUN_RETURN_IF_ERROR(WriteFileAtomically(path, text, "links fragment", 0600));
  if (input.options.out.empty() || !input.writes_fragment) return path;
  HETRUN_RETURN_IF_ERROR(WriteFileAtomically(input.options.out, text, "--check-collectives-out"));
  return input.options.out;
}

CollectiveCheckVerdict Passed(const RankFindings& first, const CollectiveCheckInput& input,
                              const std::string& dir, milliseconds took) {
  const Json& result = *first.result;
  CollectiveCheckVerdict verdict;
  Result<std::string> fragment =
      WriteFragment(result.value("fragment", Json::object()), input, dir);
  if (!fragment.ok()) {
    spdlog::warn("collective check: links fragment not written: {}", fragment.status().message());
  } else {
    verdict.fragment_path = *fragment;
  }
  verdict.report = fmt::format(
      "collective check passed: all_reduce and all_gather from 8 B to 8 MiB (21 sizes) right bit "
      "for bit on {} ranks ({}) in {:.1f} s; {}{}",
      result.value("world_size", input.world_size), result.value("backend", std::string("?")),
      static_cast<double>(took.count()) / 1000.0,
      BandwidthText(result.value("bandwidth", Json::object())),
      verdict.fragment_path.empty() ? "" : "; links fragment " + verdict.fragment_path);
  return verdict;
}

CollectiveCheckVerdict Decide(const SupervisorOutcome& outcome,
                              const std::vector<RankFindings>& found,
                              const CollectiveCheckInput& input, const std::string& dir,
                              milliseconds deadline, milliseconds took) {
  if (outcome.failed) {
    const WorkerFailure& failure = outcome.failure;
    if (failure.kind == WorkerFailure::Kind::kDeadline) {
      return {kExitTransient, TimeoutReport(found, input, deadline), ""};
    }
    if (failure.kind == WorkerFailure::Kind::kReceivedSignal ||
        failure.kind == WorkerFailure::Kind::kJobRestart) {
      return {outcome.exit_code, "collective check stopped: " + FailureSummary(failure), ""};
    }
    return ProbeFailure(failure, found, input.workers);
  }
  for (const RankFindings& f : found) {
    if (!f.invalid.empty()) {
      return {kExitConfig,
              fmt::format("collective check could not run: rank {}'s result file {}/rank_{}.json "
                          "{}; exit 78",
                          f.rank, dir, f.rank, f.invalid),
              ""};
    }
    if (!f.result) {
      return {kExitConfig,
              fmt::format("collective check could not run: rank {} exited 0 without its result "
                          "file ({}/rank_{}.json); exit 78",
                          f.rank, dir, f.rank),
              ""};
    }
    const Json wrong = f.result->value("wrong", Json::array());
    if (!wrong.empty()) return {kExitCollectiveWrong, WrongReport(*f.result, input.workers), ""};
  }
  return Passed(found.front(), input, dir, took);
}

}  // namespace

milliseconds CollectiveCheckDeadline(int world_size, milliseconds timeout) {
  if (timeout.count() > 0) return timeout;
  return milliseconds(60'000) + milliseconds(100) * std::max(world_size, 1);
}

Result<CollectiveCheckVerdict> RunCollectiveCheck(const CollectiveCheckInput& input) {
  const milliseconds deadline = CollectiveCheckDeadline(input.world_size, input.options.timeout);
  const std::string dir = input.supervision.run_dir + "/collective_check";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir", dir, errno).WithContext("collective check");
  }
  SupervisorOptions probe = input.supervision;
  probe.command = {input.python, "-m", "hetrun.collective_check"};
  probe.run_dir = dir;
  probe.attempt_deadline = deadline;
  probe.max_restarts = 0;
  probe.replan_restart = false;
  probe.hang_timeout = milliseconds(0);
  probe.fail_slow_exit = false;
  probe.log_dir.clear();  // the workers' --log-dir and stream logs are theirs alone
  probe.tee_streams = {};
  probe.redirect_streams = {};
  std::vector<WorkerSpec> workers = input.workers;
  for (WorkerSpec& spec : workers) {
    spec.env["HETRUN_COLLECTIVE_CHECK_TIMEOUT"] = std::to_string(deadline.count()) + "ms";
    if (!input.record_key.empty()) spec.env["HETRUN_COLLECTIVE_CHECK_KEY"] = input.record_key;
  }
  spdlog::info("collective check: {} probe(s) of {} ranks, deadline {}", workers.size(),
               input.world_size, Seconds(deadline));
  const auto started = std::chrono::steady_clock::now();
  HETRUN_ASSIGN_OR_RETURN(SupervisorOutcome outcome,
                          Supervise(probe, [&workers](int, bool) { return workers; }));
  const auto took =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  try {
    return Decide(outcome, ReadFindings(input.workers, dir, input.world_size), input, dir, deadline,
                  took);
  } catch (const nlohmann::json::exception& e) {  // every field was checked: never expected
    return CollectiveCheckVerdict{
        kExitConfig,
        std::string("collective check could not run: a result file: ") + e.what() + "; exit 78",
        ""};
  }
}

std::string CollectiveCheckPlanText(const CollectiveCheckInput& input) {
  const milliseconds deadline = CollectiveCheckDeadline(input.world_size, input.options.timeout);
  return fmt::format(
      "# collective check (--check-collectives), before the workers: {} -m hetrun.collective_check "
      "once per local rank with the environment below; all_reduce and all_gather from 8 B to 8 "
      "MiB, checked bit for bit, then the link bandwidths; deadline {}{}\n",
      input.python, Seconds(deadline),
      input.options.out.empty() ? "" : "; links fragment to " + input.options.out);
}

}  // namespace hetrun::launcher
