// `hetrun simulate --scenario FILE [--json] [--plot FILE.svg]`: what-if runs of the tuner on a
// scenario (docs/reference/cli/simulate.md), hetrun side by side with baselines on the same noise.
#include <cxxopts.hpp>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "commands/svg_plot.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/tuner/simulator.h"

namespace hetrun::launcher {
namespace {

using tuner::PolicyResult;
using tuner::SimulationResult;

nlohmann::json WindowsJson(const PolicyResult& p) {
  nlohmann::json windows = nlohmann::json::array();
  for (const tuner::WindowRecord& w : p.windows) {
    windows.push_back({{"window", w.window},
                       {"shares", w.shares},
                       {"iteration_ms", w.iteration_ms},
                       {"optimal_ms", w.optimal_ms},
                       {"ratio", w.ratio}});
  }
  return windows;
}

void AddSummary(nlohmann::json& j, const PolicyResult& p) {
  j["steady_ratio"] = p.steady_ratio;
  j["convergence_windows"] = p.convergence_windows;
  j["convergence_windows_by_phase"] = p.convergence_by_phase;
  j["share_changes"] = p.share_changes;
  j["steady_windows"] = p.steady_windows;
  j["steady_share_changes"] = p.steady_share_changes;
}

nlohmann::json FailSlowJson(const SimulationResult& r) {
  nlohmann::json reports = nlohmann::json::array();
  for (const tuner::FailSlowReport& f : r.fail_slow) {
    const tuner::FailSlowVerdict& v = f.verdict;
    reports.push_back({{"window", f.window},
                       {"rank", f.rank},
                       {"family", f.family},
                       {"model", f.model},
                       {"basis", v.basis},
                       {"ratio", v.ratio},
                       {"family_ratio", v.family_ratio},
                       {"history_ratio", v.history_ratio},
                       {"measured_ms", v.measured_ms},
                       {"expected_ms", v.expected_ms},
                       {"reference_samples", v.reference_samples}});
  }
  return reports;
}

nlohmann::json ResultJson(const SimulationResult& r) {
  nlohmann::json j;
  j["windows"] = WindowsJson(r.hetrun);
  j["fail_slow"] = FailSlowJson(r);
  AddSummary(j, r.hetrun);
  nlohmann::json baselines = nlohmann::json::object();
  for (const PolicyResult& b : r.baselines) {
    nlohmann::json one;
    one["windows"] = WindowsJson(b);
    AddSummary(one, b);
    baselines[b.name] = std::move(one);
  }
  j["baselines"] = std::move(baselines);
  nlohmann::json micro = nlohmann::json::array();
  for (const tuner::MicroBatchPlan& m : r.micro_batches) {
    if (m.size == 0) {
      micro.push_back(nullptr);
    } else {
      micro.push_back({{"size", m.size}, {"count", m.count}, {"balanced_size", m.balanced}});
    }
  }
  j["micro_batches"] = std::move(micro);
  return j;
}

std::string Convergence(int64_t windows) {
  return windows < 0 ? "never" : std::to_string(windows);
}

void PrintText(const SimulationResult& r, std::ostream& out) {
  out << std::left << std::setw(18) << "policy" << std::setw(14) << "steady_ratio" << std::setw(14)
      << "convergence" << std::setw(15) << "share_changes"
      << "steady_changes\n";
  auto row = [&](const PolicyResult& p) {
    out << std::left << std::setw(18) << p.name << std::setw(14) << std::fixed
        << std::setprecision(4) << p.steady_ratio << std::setw(14)
        << Convergence(p.convergence_windows) << std::setw(15) << p.share_changes
        << p.steady_share_changes << "/" << p.steady_windows << "\n";
  };
  row(r.hetrun);
  for (const PolicyResult& b : r.baselines) row(b);
  out << "final hetrun shares:";
  for (int64_t s : r.hetrun.windows.back().shares) out << " " << s;
  out << "\n";
  for (const tuner::FailSlowReport& f : r.fail_slow) {
    out << "fail-slow: rank " << f.rank << " (model " << (f.model.empty() ? "unknown" : f.model)
        << ") at window " << f.window << ": " << std::setprecision(1) << f.verdict.measured_ms
        << " ms at " << f.verdict.reference_samples << " samples, expected "
        << f.verdict.expected_ms << " ms from its " << f.verdict.basis << " ("
        << std::setprecision(2) << f.verdict.ratio << "x)\n";
  }
}

// The memory block's outcome: the ceiling mode, each rank's micro-batch cap, and the tuned
// iteration time of the last window against its optimum (what --memory-ceiling model gains).
nlohmann::json MemoryJson(const tuner::Scenario& s, const SimulationResult& r) {
  std::vector<int64_t> caps;
  for (const tuner::ScenarioStage& stage : s.stages) {
    for (const tuner::ScenarioRank& rank : stage.ranks) caps.push_back(rank.max_micro_batch);
  }
  const tuner::WindowRecord& last = r.hetrun.windows.back();
  return {{"ceiling", s.memory.per_model ? "model" : "job"},
          {"max_micro_batch", caps},
          {"iteration_ms", last.iteration_ms},
          {"optimal_ms", last.optimal_ms}};
}

void PrintMemory(const tuner::Scenario& s, const SimulationResult& r, std::ostream& out) {
  const nlohmann::json j = MemoryJson(s, r);
  out << "memory ceiling " << j["ceiling"].get<std::string>() << ": max micro-batch per rank";
  for (int64_t cap : j["max_micro_batch"]) out << " " << cap;
  out << std::fixed << std::setprecision(2) << "; last window " << j["iteration_ms"].get<double>()
      << " ms (optimum " << j["optimal_ms"].get<double>() << " ms)\n";
}

Status WritePlot(const SimulationResult& r, const std::string& path) {
  static const char* kColors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"};
  std::vector<PlotSeries> series;
  std::vector<const PolicyResult*> all = {&r.hetrun};
  for (const PolicyResult& b : r.baselines) all.push_back(&b);
  for (size_t i = 0; i < all.size(); ++i) {
    PlotSeries s{all[i]->name, {}, kColors[i % 5], false};
    for (const tuner::WindowRecord& w : all[i]->windows) s.values.push_back(w.iteration_ms);
    series.push_back(std::move(s));
  }
  PlotSeries optimum{"optimum", {}, "black", true};
  for (const tuner::WindowRecord& w : r.hetrun.windows) optimum.values.push_back(w.optimal_ms);
  series.push_back(std::move(optimum));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return ErrnoError("open", path, errno);
  file << RenderLineChart("hetrun simulate: iteration time per window", "window",
                          "iteration time (ms)", series);
  file.close();
  if (!file) return ErrnoError("write", path, errno);
  return Status::Ok();
}

}  // namespace

Result<int> commands::Simulate(const CommandContext& context) {
  cxxopts::Options options("hetrun simulate",
                           "Run the load-balancing tuner on a scenario, against baselines.");
  options.add_options()("scenario", "scenario file (JSON)", cxxopts::value<std::string>())(
      "json", "print the result as JSON")("plot", "write an SVG chart of iteration time per window",
                                          cxxopts::value<std::string>())(
      "memory-ceiling",
      "with the scenario's memory block: job (one ceiling, the smallest GPU) or model (each GPU "
      "model its own); default: the block's `ceiling`",
      cxxopts::value<std::string>())("h,help", "this text");
  HETRUN_ASSIGN_OR_RETURN(std::optional<cxxopts::ParseResult> given,
                          ParseOptionsOnly(options, context.args, context.out));
  if (!given) return kExitOk;  // --help
  const cxxopts::ParseResult& parsed = *given;
  if (!parsed.count("scenario")) return UsageError("hetrun simulate needs --scenario FILE");
  HETRUN_ASSIGN_OR_RETURN(tuner::Scenario scenario,
                          tuner::LoadScenario(parsed["scenario"].as<std::string>()));
  if (parsed.count("memory-ceiling")) {
    const std::string mode = parsed["memory-ceiling"].as<std::string>();
    if (mode != "job" && mode != "model") {
      return UsageError("--memory-ceiling '" + mode.substr(0, 64) + "': not job or model");
    }
    if (!scenario.memory.given) {
      return UsageError("--memory-ceiling needs a scenario with a memory block");
    }
    HETRUN_RETURN_IF_ERROR(tuner::ApplyMemoryCeilings(scenario, mode == "model"));
  }
  HETRUN_ASSIGN_OR_RETURN(SimulationResult result, tuner::Simulate(scenario));
  if (parsed.count("plot")) {
    HETRUN_RETURN_IF_ERROR(WritePlot(result, parsed["plot"].as<std::string>()));
  }
  if (parsed.count("json")) {
    nlohmann::json j = ResultJson(result);
    if (scenario.memory.given) j["memory"] = MemoryJson(scenario, result);
    context.out << j.dump() << "\n";
  } else {
    PrintText(result, context.out);
    if (scenario.memory.given) PrintMemory(scenario, result, context.out);
  }
  return kExitOk;
}

}  // namespace hetrun::launcher
