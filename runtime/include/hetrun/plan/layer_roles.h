// What the engine writers (--emit megatron, --emit torchtitan) read from a model's layer names
// and a plan's stages: which layer is the embedding and which the output head, and whether every
// stage has the same data-parallel size (both engines need it).
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/status.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan {

/// A layer's name without the ".<k>" a repeated entry gets, lower-case ("Block.3" -> "block").
std::string LayerBaseName(std::string_view name);

/// embedding, embeddings, embed, tok_embeddings (a base name).
bool IsEmbeddingName(const std::string& base);

/// head, lm_head, output, output_layer, loss (a base name).
bool IsHeadName(const std::string& base);

/// kInvalidArgument naming every replica count and its stages when the split's stages differ
/// in replicas: `engine` ("Megatron-LM", "torchtitan") needs one data-parallel size.
Status CheckEqualReplicas(const SplitFigures& split, std::string_view engine);

}  // namespace hetrun::plan
