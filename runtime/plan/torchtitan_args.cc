#include "hetrun/plan/torchtitan_args.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "hetrun/plan/layer_roles.h"

namespace hetrun::plan {
namespace {

bool IsModuleNameList(std::string_view text) {
  if (text.empty() || text.front() == ',' || text.back() == ',') return false;
  if (text.find(",,") != std::string_view::npos) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ',' || c == '{' || c == '}';
  });
}

std::string LayerName(const std::string& pattern, int64_t index) {
  std::string out = pattern;
  out.replace(out.find("{}"), 2, std::to_string(index));
  return out;
}

// Model layer k's torchtitan module names (a comma list), or the error for a misplaced end.
Result<std::string> ModuleNames(const ModelSpec& model, size_t k, const TorchtitanNames& names,
                                int64_t* next_layer) {
  const std::string& name = model.layers[k].name;
  std::string base = LayerBaseName(name);
  const size_t last = model.layers.size() - 1;
  if (IsEmbeddingName(base) && k == 0 && last > 0) return names.embedding;
  if (IsHeadName(base) && k == last && k > 0) return names.head;
  if (IsEmbeddingName(base) || IsHeadName(base)) {
    return InvalidArgumentError(
        "layer " + std::to_string(k) + " '" + name + "' is an " +
        (IsEmbeddingName(base) ? "embedding" : "output") +
        " layer but not at its end of the model: torchtitan builds one embedding, first, and one "
        "output head, last; rename it if it is a transformer layer");
  }
  return LayerName(names.layer, (*next_layer)++);
}

}  // namespace

Result<TorchtitanNames> ParseTorchtitanNames(std::string_view text, std::string_view what) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    parts.emplace_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  const std::string head = std::string(what) + " '" + std::string(text) + "'";
  if (parts.size() != 3) {
    return InvalidArgumentError(head +
                                ": give EMBEDDING:LAYER:HEAD, e.g. "
                                "tok_embeddings:layers.{}:norm,lm_head");
  }
  for (const std::string& part : parts) {
    if (!IsModuleNameList(part)) {
      return InvalidArgumentError(head + ": '" + part +
                                  "' is not a comma list of module names ([A-Za-z0-9_.])");
    }
  }
  size_t braces = parts[1].find("{}");
  if (braces == std::string::npos || parts[1].find("{}", braces + 2) != std::string::npos ||
      parts[1].find(',') != std::string::npos ||
      std::count(parts[1].begin(), parts[1].end(), '{') != 1) {
    return InvalidArgumentError(head + ": LAYER '" + parts[1] +
                                "' must be one module name with exactly one {} for the index");
  }
  for (size_t i : {size_t{0}, size_t{2}}) {
    if (parts[i].find_first_of("{}") != std::string::npos) {
      return InvalidArgumentError(head + ": '" + parts[i] + "' may not contain { or }");
    }
  }
  return TorchtitanNames{parts[0], parts[1], parts[2]};
}

Result<std::string> ParseTorchtitanVersion(std::string_view text) {
  if (text == kTorchtitan030 || text == kTorchtitanMain) return std::string(text);
  return UsageError("--torchtitan-version '" + std::string(text) +
                    "': 0.3.0 (batches in samples) or main (in tokens, after torchtitan's PR "
                    "#4121)");
}

std::string InstalledTorchtitanVersion(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path lib = fs::path(prefix) / "lib";
  for (const fs::directory_entry& python : fs::directory_iterator(lib, error)) {
    if (!python.path().filename().string().starts_with("python3")) continue;
    for (const fs::directory_entry& entry :
         fs::directory_iterator(python.path() / "site-packages", error)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("torchtitan-") && name.ends_with(".dist-info")) {
        return name.substr(11, name.size() - 11 - 10);
      }
    }
  }
  return "";
}

std::string TorchtitanKeysFor(std::string_view installed) {
  int major = 0;
  int minor = 0;
  const char* end = installed.data() + installed.size();
  auto first = std::from_chars(installed.data(), end, major);
  if (first.ec != std::errc() || first.ptr == end || *first.ptr != '.') return kTorchtitan030;
  std::from_chars(first.ptr + 1, end, minor);
  return major == 0 && minor <= 3 ? kTorchtitan030 : kTorchtitanMain;
}

Result<TorchtitanArgs> TorchtitanArgsFor(const SplitFigures& split, const ModelSpec& model,
                                         const TorchtitanNames& names, std::string_view version) {
  if (version == kTorchtitanMain && !model.sequence_length) {
    return InvalidArgumentError(
        "torchtitan main counts batches in tokens (--training."
        "num_tokens_per_microbatch_per_dp_rank, its PR #4121): give the model file a "
        "\"sequence_length\" (tokens per sample), or --torchtitan-version 0.3.0");
  }
  if (split.stages.empty() || model.layers.empty()) {
    return InvalidArgumentError("an empty plan has no torchtitan split");
  }
  HETRUN_RETURN_IF_ERROR(CheckEqualReplicas(split, "torchtitan"));
  std::vector<std::string> per_layer;
  int64_t next_layer = 0;
  for (size_t k = 0; k < model.layers.size(); ++k) {
    HETRUN_ASSIGN_OR_RETURN(std::string modules, ModuleNames(model, k, names, &next_layer));
    per_layer.push_back(std::move(modules));
  }
  TorchtitanArgs args;
  args.pipeline_degree = static_cast<int64_t>(split.stages.size());
  args.data_parallel = split.stages.front().slot.gpus;
  args.microbatch_size = model.micro_batch_size;
  args.local_batch_size = model.micro_batch_size * model.micro_batches;
  args.version = std::string(version);
  args.micro_batches = model.micro_batches;
  args.sequence_length = model.sequence_length.value_or(0);
  args.tokens_per_microbatch = model.micro_batch_size * args.sequence_length;
  args.transformer_layers = next_layer;
  if (next_layer == 0) {
    return InvalidArgumentError(
        "the model has no transformer layer (only an embedding and an output head): torchtitan's "
        "pipeline splits transformer layers");
  }
  const bool several = model.layers.size() > 1;
  args.embedding_from_model = several && IsEmbeddingName(LayerBaseName(model.layers.front().name));
  args.head_from_model = several && IsHeadName(LayerBaseName(model.layers.back().name));
  for (const StageFigures& stage : split.stages) {
    std::string joined;
    for (int64_t k = stage.first_layer; k < stage.first_layer + stage.layers; ++k) {
      joined += (joined.empty() ? "" : ",") + per_layer[static_cast<size_t>(k)];
    }
    args.stages.push_back(std::move(joined));
  }
  if (!args.embedding_from_model) args.stages.front().insert(0, names.embedding + ",");
  if (!args.head_from_model) args.stages.back() += "," + names.head;
  return args;
}

std::string TorchtitanArgumentsText(const TorchtitanArgs& args, const SplitFigures& split,
                                    const ModelSpec& model, const TorchtitanNames& names) {
  std::string out = "# torchtitan " + args.version + " command-line overrides for hetrun's plan " +
                    split.CountsString() + " (" + std::to_string(model.layers.size()) +
                    " model layers, " + std::to_string(args.pipeline_degree) + " stages).\n";
  out += "# Module names (--torchtitan-names " + names.embedding + ":" + names.layer + ":" +
         names.head + "): ";
  out += args.embedding_from_model
             ? "model layer 0 '" + model.layers.front().name + "' = " + names.embedding
             : names.embedding + " added to the first stage (not a model layer)";
  out += args.head_from_model
             ? "; the last layer '" + model.layers.back().name + "' = " + names.head
             : "; " + names.head + " added to the last stage (not a model layer)";
  out += "; the other " + std::to_string(args.transformer_layers) +
         " layers = " + LayerName(names.layer, 0) + " .. " +
         LayerName(names.layer, args.transformer_layers - 1) + ".\n";
  out +=
      "# One pipeline stage per rank of the pipeline dimension (no virtual stages); the plan "
      "assumed 1F1B with " +
      std::to_string(model.micro_batches) + " micro-batches of " +
      std::to_string(args.microbatch_size) + ": local batch " +
      std::to_string(args.local_batch_size) + " per data-parallel rank.\n";
  if (args.version == kTorchtitanMain) {
    out += "# torchtitan main counts input-token slots (its PR #4121): a micro-batch of " +
           std::to_string(args.microbatch_size) + " x sequence length " +
           std::to_string(args.sequence_length) + " = " +
           std::to_string(args.tokens_per_microbatch) + " tokens per data-parallel rank.\n";
  }
  out += "# Data-parallel size " + std::to_string(args.data_parallel) +
         " on every stage: world size " +
         std::to_string(args.data_parallel * args.pipeline_degree) +
         " with tensor and context parallel degree 1. Pair with your --module/--config.\n";
  out += "--parallelism.pipeline_parallel_degree " + std::to_string(args.pipeline_degree) +
         " --parallelism.pipeline_parallel_schedule 1F1B"
         " --parallelism.module_fqns_per_model_part";
  for (const std::string& stage : args.stages) out += " " + stage;
  if (args.version == kTorchtitanMain) {
    out += " --parallelism.num_pp_microbatches " + std::to_string(args.micro_batches) +
           " --training.num_tokens_per_microbatch_per_dp_rank " +
           std::to_string(args.tokens_per_microbatch) + " --training.max_context_length " +
           std::to_string(args.sequence_length) + "\n";
    return out;
  }
  out += " --parallelism.pipeline_parallel_microbatch_size " +
         std::to_string(args.microbatch_size) + " --training.local_batch_size " +
         std::to_string(args.local_batch_size) + "\n";
  return out;
}

}  // namespace hetrun::plan
