#include "hetrun/plan/model_spec.h"

#include "plan/json_fields.h"

namespace hetrun::plan {

using internal::JsonPlace;

namespace {

// activation_bytes: a number >= 0 or a size string ("64MiB"); 0 when absent.
Result<double> ActivationBytes(const nlohmann::json& entry, const JsonPlace& at) {
  auto it = entry.find("activation_bytes");
  if (it == entry.end()) return 0.0;
  if (it->is_string()) {
    HETRUN_ASSIGN_OR_RETURN(auto bytes, internal::OptionalBytes(entry, at, "activation_bytes"));
    return *bytes;
  }
  return internal::RequiredNumber(entry, at, "activation_bytes", 0, false);
}

}  // namespace

bool ModelSpec::HasActivationBytes() const {
  for (const LayerSpec& layer : layers) {
    if (layer.activation_bytes > 0) return true;
  }
  return false;
}

Result<ModelSpec> ParseModelSpec(std::string_view json_text, std::string_view source) {
  HETRUN_ASSIGN_OR_RETURN(nlohmann::json root, internal::ParseJsonText(json_text, source));
  JsonPlace place{std::string(source), "$"};
  HETRUN_RETURN_IF_ERROR(internal::CheckObject(
      root, place,
      {"micro_batches", "micro_batch_size", "layers", "cost_unit_ms", "sequence_length"}));
  ModelSpec model;
  HETRUN_ASSIGN_OR_RETURN(model.micro_batches,
                          internal::RequiredInteger(root, place, "micro_batches", 1, 1 << 20));
  HETRUN_ASSIGN_OR_RETURN(model.micro_batch_size,
                          internal::IntegerOr(root, place, "micro_batch_size", 1, 1, 1 << 20));
  if (root.contains("sequence_length")) {
    HETRUN_ASSIGN_OR_RETURN(model.sequence_length,
                            internal::RequiredInteger(root, place, "sequence_length", 1, 1 << 24));
  }
  if (root.contains("cost_unit_ms")) {
    HETRUN_ASSIGN_OR_RETURN(model.cost_unit_ms,
                            internal::RequiredNumber(root, place, "cost_unit_ms", 0, true));
  }

  JsonPlace layers_at = place.Key("layers");
  auto layers = root.find("layers");
  if (layers == root.end()) return layers_at.Error("missing (a list of layers)");
  if (!layers->is_array() || layers->empty()) {
    return layers_at.Error("must be a non-empty list of layers");
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    const nlohmann::json& entry = (*layers)[i];
    JsonPlace at = layers_at.Index(i);
    HETRUN_RETURN_IF_ERROR(
        internal::CheckObject(entry, at, {"name", "cost", "bytes", "repeat", "activation_bytes"}));
    HETRUN_ASSIGN_OR_RETURN(std::string name, internal::RequiredString(entry, at, "name"));
    HETRUN_ASSIGN_OR_RETURN(double cost, internal::RequiredNumber(entry, at, "cost", 0, false));
    HETRUN_ASSIGN_OR_RETURN(double bytes, internal::RequiredNumber(entry, at, "bytes", 0, false));
    HETRUN_ASSIGN_OR_RETURN(double activation_bytes, ActivationBytes(entry, at));
    if (entry.contains("activation_bytes") && !model.cost_unit_ms) {
      return place.Key("cost_unit_ms")
          .Error("missing: " + at.path +
                 ".activation_bytes needs it (milliseconds per cost unit on a speed-1.0 GPU) to "
                 "charge link transfers in the model's cost unit");
    }
    bool repeated = entry.contains("repeat");
    HETRUN_ASSIGN_OR_RETURN(int64_t repeat,
                            internal::IntegerOr(entry, at, "repeat", 1, 1, kMaxModelLayers));
    if (static_cast<int64_t>(model.layers.size()) + repeat > kMaxModelLayers) {
      return at.Key("repeat").Error("the model expands to more than " +
                                    std::to_string(kMaxModelLayers) + " layers");
    }
    for (int64_t k = 0; k < repeat; ++k) {
      model.layers.push_back(
          {repeated ? name + "." + std::to_string(k) : name, cost, bytes, activation_bytes});
    }
  }
  return model;
}

Result<ModelSpec> LoadModelSpec(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(std::string text, internal::ReadInputFile(path));
  return ParseModelSpec(text, path);
}

}  // namespace hetrun::plan
