// The layout of a pipeline job (docs/ARCHITECTURE.md §5): its stages in order, each with a
// contiguous layer range and its replicas (ranks, GPU families, initial shares). `hetrun run`
// writes it to the run folder and gives workers its path in HETRUN_PLAN; the JSON schema is in the
// docs/reference/formats/layout.md. Pure data: no torch, no tensors, so any executor can follow it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::pipeline {

/// Which order of operations each replica follows (hetrun/pipeline/schedule.h).
enum class ScheduleKind { k1F1B, kGPipe };

/// "1f1b" / "gpipe".
std::string_view ScheduleKindName(ScheduleKind kind);
Result<ScheduleKind> ParseScheduleKind(std::string_view text);

/// Bounds of the layout file's integers beyond the layer count (plan::kMaxModelLayers): ranks
/// below 2^20, revision and min_share at most 2^40, micro_batches at most 2^20.
inline constexpr uint64_t kMaxLayoutRanks = uint64_t{1} << 20;
inline constexpr int64_t kMaxLayoutRevision = int64_t{1} << 40;

struct StageLayout {
  int64_t first_layer = 0;            ///< index into JobLayout::layer_names
  int64_t layers = 0;                 ///< >= 1
  std::vector<int> ranks;             ///< global ranks of its replicas, in replica order
  std::vector<std::string> families;  ///< per replica ("" when unknown)
  std::vector<double> shares;         ///< per replica, positive; equal when not given

  int replicas() const { return static_cast<int>(ranks.size()); }
};

struct JobLayout {
  int64_t num_layers = 0;                ///< the model's layers
  std::vector<std::string> layer_names;  ///< num_layers names, or empty when not known
  int64_t micro_batches = 1;             ///< M, >= 1
  int64_t min_share = 1;                 ///< fewest samples of a micro-batch one replica gets
  ScheduleKind schedule = ScheduleKind::k1F1B;
  std::vector<StageLayout> stages;
  /// 0 for a layout as planned; +1 per live layer move (docs/reference/formats/layout.md), so a
  /// restart that reads the file resumes from the current split and knows how many moves led there.
  int64_t revision = 0;
  /// Relative compute cost per layer (the plan's model costs; num_layers entries, finite, >= 0),
  /// or empty when not known (the re-balancer then takes every layer as equal).
  std::vector<double> layer_costs;

  int world_size() const;
  /// The stage that holds `rank`, and its replica index there (-1 when none).
  int StageOf(int rank) const;
  int ReplicaOf(int rank) const;
};

/// Everything a layout must be: at least one stage; every stage at least one rank, families and
/// shares one per rank (shares positive and finite); layer ranges contiguous from 0, in order,
/// covering num_layers without gap or overlap; layer_names empty or num_layers long; the ranks
/// of all stages a partition of [0, world_size); revision in [0, 2^40]; at most 4096 layers
/// (plan::kMaxModelLayers); layer_costs empty or num_layers
/// finite numbers >= 0. Errors (kInvalidArgument) name the stage and
/// both sides of the conflict; `source` prefixes them.
Status ValidateJobLayout(const JobLayout& layout, std::string_view source);

/// Parses and validates the layout file (docs/reference/formats/layout.md); errors name `source`
/// and the JSON path.
Result<JobLayout> ParseJobLayout(std::string_view json_text, std::string_view source);

/// Reads, parses and validates the file at `path`.
Result<JobLayout> LoadJobLayout(const std::string& path);

/// The layout as the layout file's JSON (ParseJobLayout reads it back unchanged).
std::string JobLayoutJson(const JobLayout& layout);

/// Writes JobLayoutJson(layout) to `path` atomically (a unique temporary, fsync, rename): a worker
/// that reads the file while another rewrites it after a move sees the old layout or the new one,
/// never half. The layout is validated first (kInvalidArgument); system call errors name the call
/// and path.
Status WriteJobLayoutFile(const JobLayout& layout, const std::string& path);

}  // namespace hetrun::pipeline
