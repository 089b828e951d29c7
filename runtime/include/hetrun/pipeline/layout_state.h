// The layout state (docs/how-to/restarts.md): a copy of the pipeline's layout file
// on storage that outlives the pods (`hetrun run --layout-state FILE`, HETRUN_LAYOUT_STATE), so
// a job that Volcano restarts whole (every pod new, a new run folder) resumes from the split its
// live layer moves reached instead of the plan's. Global rank 0 rewrites it after every move;
// `hetrun run` reads it at start. Torch-free: any trainer (C++ or Python) can call it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"

namespace hetrun::pipeline {

/// Largest layout state accepted: it travels in node 0's rendezvous record (256 KiB).
inline constexpr size_t kMaxLayoutStateBytes = size_t{256} << 10;

/// The state file's text, or nullopt when there is none yet (a job's first run). Errors: not a
/// regular file, larger than kMaxLayoutStateBytes, a failed read; each names the path.
Result<std::optional<std::string>> ReadLayoutStateText(const std::string& path);

/// Layers per stage, comma-separated: "9,25".
std::string SplitText(const JobLayout& layout);

struct LayoutStartChoice {
  JobLayout layout;      ///< the layout the job starts from
  bool resumed = false;  ///< true: the state's split (and revision), false: the plan as given
  std::string message;   ///< one log line: where it resumes from, or why the state is ignored
};

/// The layout a job starts from, given its `planned` layout and the layout state's `state_text`
/// (read from `state_path`, which only names it in messages). The state is taken when it parses
/// as a layout of the same job — the same layer count and names, the same number of stages, the
/// same ranks (so replicas) per stage — at a revision above the plan's: the result is the plan
/// with the state's layer ranges and revision (families, shares, micro-batches, costs stay the
/// plan's). Otherwise the plan is kept and the message says why (malformed, another model, other
/// stages or ranks, not newer). Deterministic: the same inputs give the same choice on every
/// node. Never fails.
LayoutStartChoice ChooseStartLayout(const JobLayout& planned, std::string_view state_text,
                                    std::string_view state_path);

/// After a live layer move: local rank 0 of each node rewrites the run folder's layout file
/// (`layout_path`, HETRUN_PLAN), and global rank 0 also the layout state (`state_path`, when not
/// empty). Both atomic (WriteJobLayoutFile); errors name the file.
Status WriteMovedLayout(const JobLayout& layout, const std::string& layout_path,
                        const std::string& state_path, int rank, int local_rank);

}  // namespace hetrun::pipeline
