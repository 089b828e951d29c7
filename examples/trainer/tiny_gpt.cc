#include "tiny_gpt.h"

TinyGptImpl::TinyGptImpl(const TinyGptConfig& config) : config_(config) {
  token_ = register_module("token", torch::nn::Embedding(config.vocab, config.dim));
  position_ = register_module("position", torch::nn::Embedding(config.seq, config.dim));
  auto layer = torch::nn::TransformerEncoderLayer(
      torch::nn::TransformerEncoderLayerOptions(config.dim, config.heads)
          .dim_feedforward(2 * config.dim)
          .dropout(0.0));
  blocks_ = register_module("blocks", torch::nn::TransformerEncoder(layer, config.layers));
  head_ = register_module("head", torch::nn::Linear(config.dim, config.vocab));
  // Additive mask: -inf above the diagonal, so position t attends to positions <= t.
  causal_mask_ = torch::triu(torch::full({config.seq, config.seq}, -INFINITY), 1);
}

torch::Tensor TinyGptImpl::forward(const torch::Tensor& tokens) {
  torch::Tensor x = Embed(tokens);
  for (int64_t i = 0; i < config_.layers; ++i) x = Block(i, x);
  return head_(x);
}

torch::Tensor TinyGptImpl::PerSampleLoss(const torch::Tensor& tokens,
                                         const torch::Tensor& targets) {
  torch::Tensor x = Embed(tokens);
  for (int64_t i = 0; i < config_.layers; ++i) x = Block(i, x);
  return HeadLoss(x, targets);
}

std::vector<std::string> TinyGptImpl::LayerNames() const {
  std::vector<std::string> names{"embedding"};
  for (int64_t i = 0; i < config_.layers; ++i) names.push_back("block." + std::to_string(i));
  names.push_back("head");
  return names;
}

torch::Tensor TinyGptImpl::Embed(const torch::Tensor& tokens) {
  torch::Tensor positions = torch::arange(config_.seq, torch::kLong).to(tokens.device());
  return token_(tokens) + position_(positions).unsqueeze(0);
}

torch::Tensor TinyGptImpl::Block(int64_t index, const torch::Tensor& hidden) {
  // A TransformerEncoderLayer takes [seq, N, dim]; the encoder runs its layers one by one.
  auto layer =
      blocks_->layers[static_cast<size_t>(index)]->as<torch::nn::TransformerEncoderLayer>();
  return layer
      ->forward(hidden.transpose(0, 1), causal_mask_.to(hidden.device(), hidden.scalar_type()))
      .transpose(0, 1);
}

torch::Tensor TinyGptImpl::HeadLoss(const torch::Tensor& hidden, const torch::Tensor& targets) {
  torch::Tensor logits = head_(hidden);
  torch::Tensor losses = torch::nn::functional::cross_entropy(
      logits.reshape({-1, config_.vocab}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  return losses.view({hidden.size(0), config_.seq}).mean(1);
}

std::vector<torch::Tensor> TinyGptImpl::LayerParameters(int64_t layer) {
  if (layer == 0) {
    std::vector<torch::Tensor> out = token_->parameters();
    for (const torch::Tensor& p : position_->parameters()) out.push_back(p);
    return out;
  }
  if (layer == config_.layers + 1) return head_->parameters();
  return blocks_->layers[static_cast<size_t>(layer - 1)]->parameters();
}

std::pair<torch::Tensor, torch::Tensor> SyntheticSamples(const TinyGptConfig& config, int64_t step,
                                                         int64_t first, int64_t count) {
  torch::Tensor tokens = torch::empty({count, config.seq + 1}, torch::kLong);
  auto t = tokens.accessor<int64_t, 2>();
  for (int64_t i = 0; i < count; ++i) {
    // A small per-sample generator: sample (step, first + i) is the same on every rank.
    uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(step + 1) +
                     0xBF58476D1CE4E5B9ull * static_cast<uint64_t>(first + i + 1);
    auto next = [&state]() {
      state ^= state >> 33;
      state *= 0xFF51AFD7ED558CCDull;
      state ^= state >> 33;
      return state;
    };
    int64_t v = static_cast<int64_t>(next() % static_cast<uint64_t>(config.vocab));
    for (int64_t j = 0; j <= config.seq; ++j) {
      t[i][j] = v;
      v = next() % 10 == 0 ? static_cast<int64_t>(next() % static_cast<uint64_t>(config.vocab))
                           : (5 * v + 3) % config.vocab;
    }
  }
  return {tokens.narrow(1, 0, config.seq).contiguous(),
          tokens.narrow(1, 1, config.seq).contiguous()};
}
