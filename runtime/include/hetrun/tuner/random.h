// A small portable PRNG for simulations: xoshiro256** seeded by splitmix64, normal deviates by
// Marsaglia's polar method. Fixed algorithms, so a seed gives the same stream with any compiler
// or standard library (std::normal_distribution does not guarantee that); only std::log and
// std::sqrt are used, the latter exact under IEEE 754.
#pragma once

#include <cstdint>

namespace hetrun::tuner {

class Random {
 public:
  explicit Random(uint64_t seed);
  uint64_t Next();
  /// Uniform in [0, 1) with 53 random bits.
  double Uniform();
  /// Standard normal N(0, 1).
  double Normal();

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace hetrun::tuner
