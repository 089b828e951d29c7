// Empirical-Bayes pooling of the cost models of one GPU family's ranks (family_pool.h).
#include "hetrun/tuner/family_pool.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hetrun::tuner {
namespace {

// A model's blend fades out as the family weight of its median rank falls from kFullBlend (the
// spread beyond the noise, tau^2, 0.43 of the median noise s^2) to kMinBlend (tau^2 = 1.5 s^2).
constexpr double kFullBlend = 0.7;
constexpr double kMinBlend = 0.4;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool Poolable(const RankFit& f) {
  return f.family != 0 && std::isfinite(f.a_ms) && std::isfinite(f.c_ms) && f.c_ms > 0 &&
         std::isfinite(f.sigma_ms) && f.sigma_ms > 0 && PredictedMs(f, f.n) > 0;
}

// One family: members' indices into `fits`, which is rewritten in place.
void PoolOne(std::span<const size_t> members, std::vector<RankFit>& fits,
             const FamilyPoolOptions& options) {
  const size_t m = members.size();
  // The pooled line: precision-weighted means of the members' intercepts and slopes (weights
  // 1 / s^2, s the relative noise of a member's level at its share).
  double sw = 0, sa = 0, sc = 0;
  std::vector<double> level(m), s(m);
  for (size_t i = 0; i < m; ++i) {
    const RankFit& f = fits[members[i]];
    level[i] = PredictedMs(f, f.n);
    s[i] = f.sigma_ms / level[i];
    const double w = 1 / (s[i] * s[i]);
    sw += w;
    sa += w * f.a_ms;
    sc += w * f.c_ms;
  }
  RankFit pooled;
  pooled.a_ms = sa / sw;
  pooled.c_ms = sc / sw;
  // Relative levels against the pooled line, each at the member's own share.
  std::vector<double> d(m), s2(m);
  for (size_t i = 0; i < m; ++i) {
    d[i] = level[i] / PredictedMs(pooled, fits[members[i]].n) - 1;
    s2[i] = s[i] * s[i];
  }
  const double centre = Median(d);
  std::vector<double> dev(m);
  for (size_t i = 0; i < m; ++i) dev[i] = std::fabs(d[i] - centre);
  const double spread = 1.4826 * Median(dev);
  const double tau2 = std::max(0.0, spread * spread - Median(s2));
  const double z_max = std::sqrt(2 * std::log(static_cast<double>(m))) + options.outlier_margin;
  // The family's level among its inliers, precision-weighted with the spread included.
  std::vector<bool> inlier(m);
  double iw = 0, id = 0;
  for (size_t i = 0; i < m; ++i) {
    inlier[i] = std::fabs(d[i] - centre) <= z_max * std::sqrt(tau2 + s2[i]);
    if (!inlier[i]) continue;
    const double w = 1 / (tau2 + s2[i]);
    iw += w;
    id += w * d[i];
  }
  if (iw <= 0) return;
  // The shrinkage vanishes as the cards' spread grows past their noise: blending cards that are
  // not alike biases the slowest toward the model's mean, which the min-max split pays for. The
  // blend fades out as the median rank's weight falls from kFullBlend to kMinBlend (a fade, not
  // a switch, so a spread estimate near the edge does not flip the split between windows).
  const double median_b = Median(s2) / (Median(s2) + tau2);
  const double fade = std::clamp((median_b - kMinBlend) / (kFullBlend - kMinBlend), 0.0, 1.0);
  if (fade <= 0) return;
  const double family_d = id / iw;
  const double family_var = 1 / iw;  // the uncertainty of the family's level
  for (size_t i = 0; i < m; ++i) {
    if (!inlier[i]) continue;
    RankFit& f = fits[members[i]];
    const double b = fade * s2[i] / (s2[i] + tau2);  // weight of the family in the blend
    const double k = 1 + family_d;
    const double a = (1 - b) * f.a_ms + b * k * pooled.a_ms;
    const double c = (1 - b) * f.c_ms + b * k * pooled.c_ms;
    if (!(c > 0) || !(a >= 0)) continue;
    // Normal-normal posterior: s^2 (1 - b) from the rank itself, b^2 var(family level).
    const double rel = std::sqrt(s2[i] * (1 - b) + b * b * family_var);
    f.a_ms = a;
    f.c_ms = c;
    f.sigma_ms = rel * PredictedMs(f, f.n);
  }
}

}  // namespace

int32_t FamilyPoolKey(std::string_view family) {
  if (family.empty()) return 0;
  uint32_t h = 2166136261u;
  for (char ch : family) {
    h ^= static_cast<unsigned char>(ch);
    h *= 16777619u;
  }
  return h == 0 ? 1 : static_cast<int32_t>(h);
}

std::vector<RankFit> PoolFamilies(std::span<const RankFit> fits, const FamilyPoolOptions& options) {
  std::vector<RankFit> out(fits.begin(), fits.end());
  if (!options.enabled) return out;
  std::map<int32_t, std::vector<size_t>> families;  // ordered: the same order on every rank
  for (size_t r = 0; r < out.size(); ++r) {
    if (Poolable(out[r])) families[out[r].family].push_back(r);
  }
  for (const auto& [key, members] : families) {
    if (static_cast<int>(members.size()) >= std::max(2, options.min_ranks)) {
      PoolOne(members, out, options);
    }
  }
  return out;
}

}  // namespace hetrun::tuner
