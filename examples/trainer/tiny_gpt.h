// A small GPT-style language model for the heterogeneous training demo: token + position
// embeddings, causal self-attention blocks (torch::nn::TransformerEncoderLayer with a causal
// mask, no dropout) and a linear head. Per-sample losses, so the runtime's exact-gradient rule
// (sum of per-sample losses / global batch) applies.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

// Defaults sized for the CPU demo: per-sample work (seq x dim) dominates the per-step fixed cost
// (operator dispatch), the time is close to linear in the samples, and the gradient all-reduce
// stays small (~175k parameters).
struct TinyGptConfig {
  int64_t vocab = 32;
  int64_t seq = 128;
  int64_t dim = 128;
  int64_t heads = 2;
  int64_t layers = 1;
};

class TinyGptImpl : public torch::nn::Module {
 public:
  explicit TinyGptImpl(const TinyGptConfig& config);
  /// tokens [N, seq] (int64) -> logits [N, seq, vocab].
  torch::Tensor forward(const torch::Tensor& tokens);
  /// Mean next-token cross-entropy of each sample: [N].
  torch::Tensor PerSampleLoss(const torch::Tensor& tokens, const torch::Tensor& targets);

  // The model as pipeline layers (docs/reference/formats/layout.md): "embedding", "block.0" ..
  // "block.{layers-1}", "head"; forward = Head(Block(..Block(Embed(tokens)))).
  /// The layer names, in order (layers + 2 of them).
  std::vector<std::string> LayerNames() const;
  /// tokens [N, seq] -> hidden [N, seq, dim].
  torch::Tensor Embed(const torch::Tensor& tokens);
  /// Block `index` on hidden [N, seq, dim].
  torch::Tensor Block(int64_t index, const torch::Tensor& hidden);
  /// hidden [N, seq, dim] -> the per-sample loss [N] against targets [N, seq].
  torch::Tensor HeadLoss(const torch::Tensor& hidden, const torch::Tensor& targets);
  /// The parameters of pipeline layer `layer` (an index into LayerNames()).
  std::vector<torch::Tensor> LayerParameters(int64_t layer);

 private:
  TinyGptConfig config_;
  torch::nn::Embedding token_{nullptr}, position_{nullptr};
  torch::nn::TransformerEncoder blocks_{nullptr};
  torch::nn::Linear head_{nullptr};
  torch::Tensor causal_mask_;
};
TORCH_MODULE(TinyGpt);

/// The synthetic corpus: sequences of a fixed affine recurrence t' = (5 t + 3) mod vocab with a
/// random start and 10% random tokens, so the loss can fall well below log(vocab). Sample i of
/// step s is the same whichever rank draws it: (tokens, targets) of [count, seq].
std::pair<torch::Tensor, torch::Tensor> SyntheticSamples(const TinyGptConfig& config, int64_t step,
                                                         int64_t first, int64_t count);
