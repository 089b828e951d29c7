// A plan's split as torchtitan's command-line overrides (`hetrun plan --emit torchtitan`):
// torchtitan 0.3.0 has no job-config file (Python config functions plus CLI flags), so the plan
// becomes --parallelism.pipeline_parallel_degree, --parallelism.module_fqns_per_model_part (one
// comma list of module names per stage, stages separated by spaces, as its ConfigManager's tyro
// rules read a list of lists), --parallelism.pipeline_parallel_schedule,
// --parallelism.pipeline_parallel_microbatch_size and the --training.local_batch_size they imply.
// torchtitan's main branch after its PR #4121 ("fold batch dim") counts batches in input-token
// slots: --parallelism.num_pp_microbatches and --training.num_tokens_per_microbatch_per_dp_rank
// (micro-batch size x sequence length) with --training.max_context_length replace the last
// three; `--torchtitan-version main` writes those (the model file then needs sequence_length).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan {

/// The torchtitan versions whose keys hetrun writes: the 0.3.0 release (sample counts) and main
/// after PR #4121 (token counts). 0.3.0 is the default where no torchtitan is installed.
inline constexpr const char* kTorchtitan030 = "0.3.0";
inline constexpr const char* kTorchtitanMain = "main";

/// --torchtitan-version: "0.3.0" or "main"; a usage error naming the flag otherwise.
Result<std::string> ParseTorchtitanVersion(std::string_view text);

/// The torchtitan installed beside hetrun: the version of the torchtitan-*.dist-info under
/// `prefix`/lib/python3*/site-packages (a virtualenv's root: hetrun's bin/..), "" when none.
std::string InstalledTorchtitanVersion(const std::string& prefix);

/// The keys an installed version reads: "0.3.0" up to 0.3.x, "main" for anything newer (the
/// releases after PR #4121, merged 2026-08-20 after 0.3.0).
std::string TorchtitanKeysFor(std::string_view installed);

/// How the model file's layers map to torchtitan's module names (--torchtitan-names
/// EMBEDDING:LAYER:HEAD; the defaults are torchtitan 0.3.0's decoder models').
struct TorchtitanNames {
  std::string embedding = "tok_embeddings";  ///< comma list for model layer 0 (embedding-named)
  std::string layer = "layers.{}";           ///< a transformer layer; {} = its index from 0
  std::string head = "norm,lm_head";         ///< comma list for the last layer (head-named)
};

/// Parses "EMBEDDING:LAYER:HEAD" (each part non-empty, module names of [A-Za-z0-9_.,] and LAYER
/// with exactly one {}); kInvalidArgument naming `what` and the part otherwise.
Result<TorchtitanNames> ParseTorchtitanNames(std::string_view text, std::string_view what);

struct TorchtitanArgs {
  int64_t pipeline_degree = 0;           ///< the plan's stages
  int64_t data_parallel = 0;             ///< every stage's replicas (the same on every stage)
  int64_t microbatch_size = 0;           ///< the model's micro_batch_size
  int64_t local_batch_size = 0;          ///< microbatch_size x micro_batches (M)
  int64_t transformer_layers = 0;        ///< model layers that are neither embedding nor head
  std::vector<std::string> stages;       ///< per stage, its module names joined by ','
  bool embedding_from_model = false;     ///< model layer 0 is the embedding, else a marker
  bool head_from_model = false;          ///< the last model layer is the head, else a marker
  std::string version = kTorchtitan030;  ///< whose keys: "0.3.0" or "main"
  int64_t micro_batches = 0;             ///< M, main's --parallelism.num_pp_microbatches
  int64_t sequence_length = 0;           ///< the model file's; 0 when it gives none
  int64_t tokens_per_microbatch = 0;     ///< main: microbatch_size x sequence_length
};

/// The plan's stages as torchtitan module lists: an embedding-named first layer becomes
/// names.embedding, a head-named last layer names.head, every other layer the next
/// names.layer index; a model without them still gets torchtitan's embedding on the first stage
/// and its head on the last (torchtitan always builds both). kInvalidArgument when stages differ
/// in replicas, or an embedding- or head-named layer is not at its end of the model, or for
/// `version` main when the model file has no sequence_length.
Result<TorchtitanArgs> TorchtitanArgsFor(const SplitFigures& split, const ModelSpec& model,
                                         const TorchtitanNames& names,
                                         std::string_view version = kTorchtitan030);

/// The overrides with a header comment (version, mapping, batch arithmetic, what to pair them
/// with): `hetrun plan --emit torchtitan`'s output. Every line but the last is a comment.
std::string TorchtitanArgumentsText(const TorchtitanArgs& args, const SplitFigures& split,
                                    const ModelSpec& model, const TorchtitanNames& names);

}  // namespace hetrun::plan
