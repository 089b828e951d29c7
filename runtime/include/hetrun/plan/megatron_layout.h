// A plan's split as Megatron-LM's pipeline arguments (`hetrun plan --emit megatron`;
// docs/how-to/megatron.md): --pipeline-model-parallel-size, --num-layers and
// --pipeline-model-parallel-layout in the grammar of Megatron-Core 0.15.0
// (megatron/core/transformer/pipeline_parallel_layer_layout.py): stages split by '|', one
// symbol per layer (E embedding, t transformer layer, L output layer and loss), "x*N" repeats a
// symbol and "(...)*N" a group, commas are cosmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan {

/// The Megatron-Core release whose layout grammar MegatronLayoutFor follows.
inline constexpr const char* kMegatronGrammarVersion = "Megatron-Core 0.15.0";

struct MegatronLayout {
  int64_t pipeline_size = 0;          ///< --pipeline-model-parallel-size: the plan's stages
  int64_t num_layers = 0;             ///< --num-layers: the transformer layers (t) only
  int64_t data_parallel_size = 0;     ///< every stage's replicas (the same on every stage)
  std::vector<std::string> stages;    ///< per stage, one symbol per layer: "Ettt", "tttL"
  std::string layout;                 ///< compressed: "Et*3|(t*14|)*4t*3L"
  bool embedding_from_model = false;  ///< E is model layer 0, else a marker Megatron adds
  bool head_from_model = false;       ///< L is the model's last layer, else a marker
  /// --decoder-first/last-pipeline-num-layers when they express the same split (the middle
  /// stages hold equal counts; the embedding and the output layer are not counted).
  std::optional<std::pair<int64_t, int64_t>> first_last;
};

/// Maps the model's layers to Megatron symbols — layer 0 named embedding/embeddings/embed is E,
/// the last layer named head/lm_head/output/output_layer/loss is L, every other layer is t — and
/// writes the split in the layout grammar. A model without those end layers gets E on the first
/// stage and L on the last as markers (Megatron always builds both there). kInvalidArgument
/// when stages have different replica counts (naming the stages and counts), when an
/// embedding- or head-named layer is not at its end of the model, for an "mtp" layer
/// (Megatron's MTP layers need --mtp-num-layers, which hetrun does not emit), and for a model
/// without transformer layers (Megatron-LM rejects --num-layers 0 with a division by zero).
Result<MegatronLayout> MegatronLayoutFor(const SplitFigures& split, const ModelSpec& model);

/// The arguments Megatron-LM takes, one element each and unquoted: --pipeline-model-parallel-size
/// N --num-layers N --pipeline-model-parallel-layout LAYOUT.
std::vector<std::string> MegatronArguments(const MegatronLayout& layout);

/// The arguments with comments naming the grammar, the mapping, the data-parallel size and the
/// Megatron flags the layout replaces, then the arguments on one line with the layout in single
/// quotes (for pasting into a shell): `hetrun plan --emit megatron`'s output.
std::string MegatronArgumentsText(const MegatronLayout& layout, const SplitFigures& split,
                                  const ModelSpec& model);

/// One argument a line, unquoted and without comments: `hetrun plan --emit megatron
/// --one-per-line`, for `mapfile -t ARGS < <(hetrun plan ...)` and then `"${ARGS[@]}"` (the
/// quoted line of MegatronArgumentsText keeps its quotes when spliced unquoted through $(...)).
std::string MegatronArgumentLines(const MegatronLayout& layout);

}  // namespace hetrun::plan
