#include "hetrun/plan/megatron_layout.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <string_view>

#include "hetrun/plan/layer_roles.h"

namespace hetrun::plan {
namespace {

// One symbol per model layer, or the error for a layer Megatron cannot place.
Result<std::string> LayerSymbols(const ModelSpec& model) {
  std::string symbols;
  const size_t last = model.layers.size() - 1;
  for (size_t k = 0; k < model.layers.size(); ++k) {
    const std::string& name = model.layers[k].name;
    std::string base = LayerBaseName(name);
    std::string where = "layer " + std::to_string(k) + " '" + name + "'";
    if (base == "mtp") {
      return InvalidArgumentError(where +
                                  ": Megatron MTP layers need --mtp-num-layers, which --emit "
                                  "megatron does not write; plan the model without them");
    }
    if (IsEmbeddingName(base) && k == 0 && model.layers.size() > 1) {
      symbols += 'E';
    } else if (IsHeadName(base) && k == last && k > 0) {
      symbols += 'L';
    } else if (IsEmbeddingName(base) || IsHeadName(base)) {
      return InvalidArgumentError(
          where + " is an " + (IsEmbeddingName(base) ? "embedding" : "output") +
          " layer but not at its end of the model: Megatron-LM's layout has exactly one E, "
          "first, and one L, last; rename it if it is a transformer layer");
    } else {
      symbols += 't';
    }
  }
  return symbols;
}

// "Ettt" -> "Et*3": a symbol run of n > 1 as x*n.
std::string Compress(const std::string& stage) {
  std::string out;
  for (size_t i = 0; i < stage.size();) {
    size_t j = i;
    while (j < stage.size() && stage[j] == stage[i]) ++j;
    out += stage[i];
    if (j - i > 1) out += "*" + std::to_string(j - i);
    i = j;
  }
  return out;
}

// Stages joined by '|', runs of equal stages as (S|)*k.
std::string LayoutString(const std::vector<std::string>& stages) {
  std::string out;
  for (size_t i = 0; i < stages.size();) {
    size_t j = i;
    while (j < stages.size() && stages[j] == stages[i]) ++j;
    const std::string stage = Compress(stages[i]);
    size_t run = j - i;
    bool at_end = j == stages.size();
    if (at_end && run >= 3) {
      out += "(" + stage + "|)*" + std::to_string(run - 1) + stage;
    } else if (!at_end && run >= 2) {
      out += "(" + stage + "|)*" + std::to_string(run);
    } else {
      for (size_t k = 0; k < run; ++k) out += stage + (at_end && k + 1 == run ? "" : "|");
    }
    i = j;
  }
  return out;
}

std::optional<std::pair<int64_t, int64_t>> FirstLast(const std::vector<std::string>& stages) {
  if (stages.size() < 2) return std::nullopt;
  std::vector<int64_t> t;
  for (const std::string& stage : stages) t.push_back(std::count(stage.begin(), stage.end(), 't'));
  bool middle_equal = std::all_of(t.begin() + 1, t.end() - 1, [&](int64_t n) { return n == t[1]; });
  bool positive = std::all_of(t.begin(), t.end(), [](int64_t n) { return n > 0; });
  if (!middle_equal || !positive) return std::nullopt;
  return std::make_pair(t.front(), t.back());
}

// A model of only an embedding and an output layer: Megatron-LM divides by --num-layers.
Status CheckHasTransformerLayers(const std::string& symbols, const ModelSpec& model) {
  if (symbols.find('t') != std::string::npos) return Status::Ok();
  std::string names;
  for (const LayerSpec& layer : model.layers)
    names += (names.empty() ? "'" : ", '") + layer.name + "'";
  return InvalidArgumentError(
      "the model has no transformer layers (its layers " + names +
      " are its embedding and output layer): Megatron-LM rejects --num-layers 0 (a division by "
      "zero when it splits the layers over the pipeline stages); --emit megatron needs at least "
      "one transformer layer");
}

// The header's lines about the E/L/t mapping and the data-parallel size.
std::string MappingComment(const MegatronLayout& layout, const ModelSpec& model) {
  const size_t layers = model.layers.size();
  std::string out =
      layout.embedding_from_model
          ? "# E = model layer 0 '" + model.layers.front().name + "'"
          : std::string("# E = Megatron's embedding on the first stage (not a model layer)");
  out += layout.head_from_model
             ? "; L = model layer " + std::to_string(layers - 1) + " '" + model.layers.back().name +
                   "'"
             : std::string(
                   "; L = Megatron's output layer and loss on the last stage (not a "
                   "model layer)");
  out += "; t = the other " + std::to_string(layout.num_layers) +
         " layers (--num-layers counts only these).\n";
  out += "# Data-parallel size " + std::to_string(layout.data_parallel_size) +
         " on every stage: world size " +
         std::to_string(layout.data_parallel_size * layout.pipeline_size) +
         " with tensor and context parallel size 1.\n";
  return out;
}

// What the layout replaces (Megatron refuses them beside it), the older form when it exists, and
// how to pass the arguments from a script.
std::string ReplacesComment(const MegatronLayout& layout) {
  std::string out =
      "# The layout replaces --decoder-first-pipeline-num-layers, "
      "--decoder-last-pipeline-num-layers,\n#   --account-for-embedding-in-pipeline-split, "
      "--account-for-loss-in-pipeline-split and the virtual-pipeline flags\n#   "
      "(--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank): "
      "Megatron-LM\n#   refuses them together with --pipeline-model-parallel-layout, so drop "
      "them from the command.\n";
  if (layout.first_last) {
    out +=
        "# Older form of the same split, instead of the layout, never beside it (embedding and "
        "output layer not counted):\n#   --decoder-first-pipeline-num-layers " +
        std::to_string(layout.first_last->first) + " --decoder-last-pipeline-num-layers " +
        std::to_string(layout.first_last->second) + "\n";
  } else if (layout.pipeline_size > 1) {
    out +=
        "# The older --decoder-first/last-pipeline-num-layers cannot express this split (its "
        "middle stages differ, or a stage holds no transformer layer).\n";
  }
  out +=
      "# The quoted line below is for pasting into a shell; spliced unquoted through $(...) its "
      "quotes stay in the\n#   argument and Megatron-LM rejects them. In a script: mapfile -t "
      "ARGS < <(hetrun plan ... --emit megatron --one-per-line)\n#   then pass \"${ARGS[@]}\".\n";
  return out;
}

}  // namespace

Result<MegatronLayout> MegatronLayoutFor(const SplitFigures& split, const ModelSpec& model) {
  if (split.stages.empty() || model.layers.empty()) {
    return InvalidArgumentError("an empty plan has no Megatron layout");
  }
  HETRUN_RETURN_IF_ERROR(CheckEqualReplicas(split, "Megatron-LM"));
  HETRUN_ASSIGN_OR_RETURN(std::string symbols, LayerSymbols(model));
  HETRUN_RETURN_IF_ERROR(CheckHasTransformerLayers(symbols, model));
  MegatronLayout layout;
  layout.pipeline_size = static_cast<int64_t>(split.stages.size());
  layout.num_layers = std::count(symbols.begin(), symbols.end(), 't');
  layout.data_parallel_size = split.stages.front().slot.gpus;
  layout.embedding_from_model = symbols.front() == 'E';
  layout.head_from_model = symbols.back() == 'L';
  for (const StageFigures& stage : split.stages) {
    layout.stages.push_back(
        symbols.substr(static_cast<size_t>(stage.first_layer), static_cast<size_t>(stage.layers)));
  }
  if (!layout.embedding_from_model) layout.stages.front().insert(0, "E");
  if (!layout.head_from_model) layout.stages.back() += "L";
  layout.layout = LayoutString(layout.stages);
  layout.first_last = FirstLast(layout.stages);
  return layout;
}

std::vector<std::string> MegatronArguments(const MegatronLayout& layout) {
  return {"--pipeline-model-parallel-size",  std::to_string(layout.pipeline_size), "--num-layers",
          std::to_string(layout.num_layers), "--pipeline-model-parallel-layout",   layout.layout};
}

std::string MegatronArgumentsText(const MegatronLayout& layout, const SplitFigures& split,
                                  const ModelSpec& model) {
  std::string out = "# Megatron-LM arguments for hetrun's plan " + split.CountsString() + " (" +
                    std::to_string(model.layers.size()) + " model layers, " +
                    std::to_string(layout.pipeline_size) + " stages).\n";
  out += std::string("# Grammar: ") + kMegatronGrammarVersion +
         " --pipeline-model-parallel-layout (megatron/core/transformer/"
         "pipeline_parallel_layer_layout.py):\n#   stages split by '|', E = embedding, t = "
         "transformer layer, L = output layer and loss, x*N and (...)*N repeat.\n";
  out += MappingComment(layout, model);
  out += ReplacesComment(layout);
  std::vector<std::string> arguments = MegatronArguments(layout);
  arguments.back() = "'" + arguments.back() + "'";  // the layout holds |, ( and *
  for (size_t k = 0; k < arguments.size(); ++k) out += (k == 0 ? "" : " ") + arguments[k];
  return out + "\n";
}

std::string MegatronArgumentLines(const MegatronLayout& layout) {
  std::string out;
  for (const std::string& argument : MegatronArguments(layout)) out += argument + "\n";
  return out;
}

}  // namespace hetrun::plan
