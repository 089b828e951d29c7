// The pipeline inputs of `hetrun run` (docs/ARCHITECTURE.md §5.5, §5.6): --plan's layout on one
// machine, the layout state a job restarted whole resumes from, --model-layers, the re-plan
// settings and their checkpoint folder (docs/how-to/replan-restart.md), all read before the
// preflight; after the rendezvous, the job's layout settled alike on every node.
#pragma once

#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "commands/run/run_plan.h"
#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/job/node_record.h"
#include "hetrun/pipeline/job_layout.h"

namespace hetrun::launcher {

/// --plan FILE: the layout of a one-machine pipeline (hetrun/pipeline/plan_layout.h).
Status ReadPipelinePlan(const cxxopts::ParseResult& parsed, RunPlan& plan);

/// --layout-state FILE: the workers get its path (global rank 0 rewrites it after each move); the
/// job's member 0 reads it (across nodes its text travels in member 0's rendezvous record, so
/// every node resumes alike); with --plan the plan's layout follows it now.
Status ReadLayoutState(const cxxopts::ParseResult& parsed, const Environment& env, RunPlan& plan);

/// --model-layers: the layout the job starts from (after the layout state) must have that many
/// layers; without a layout there is nothing to check, which is an error too.
Status CheckModelLayers(const RunPlan& plan);

/// --replan-restart, --max-replans and --checkpoint-dir (docs/how-to/replan-restart.md), checked
/// before any worker starts; the folder reaches the workers in HETRUN_CHECKPOINT_DIR.
Status ReadReplan(const cxxopts::ParseResult& parsed, const Environment& env, RunPlan& plan);

/// Writes the layout file into the run folder (atomically: after a live move the trainers
/// rewrite it the same way); its path goes to the workers in HETRUN_PLAN.
Result<std::string> WriteLayoutFile(const pipeline::JobLayout& layout, const std::string& dir);

/// Across launchers, after the rendezvous: the layout assembled from the records (without
/// --plan), then member 0's layout state applied to it alike on every node; the run folder's
/// layout file is (re)written when either changed it.
Status SettleJobLayout(RunPlan& plan, const std::vector<NodeRecord>& records,
                       const std::string& run_dir);

}  // namespace hetrun::launcher
