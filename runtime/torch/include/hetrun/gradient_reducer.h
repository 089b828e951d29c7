// Overlapped, bucketed gradient all-reduce (docs/ARCHITECTURE.md §5): what PyTorch DDP's reducer
// does, for the exact-gradient contract of exact_gradients.h (the loss is Σ ℓ / B, the all-reduce
// is a SUM, so any split of the batch, including a share of 0, gives the one-process gradient).
//
//   hetrun::GradientReducer reducer(group, model->parameters(), {});   // buckets, hooks
//   reducer.ZeroGrad();                          // instead of optimizer.zero_grad()
//   for each micro-batch m of M:
//     reducer.PrepareBackward(/*communicate=*/m == M - 1);
//     loss_m.backward();                         // buckets all-reduce while backward runs
//   reducer.Finish();                            // waits for every bucket; grads hold the sums
//   optimizer.step();
//
// Buckets: parameters in reverse order (the order backward produces their gradients), packed
// into buckets of at most `bucket_bytes` (a parameter larger than that gets a bucket of its own).
// Each bucket is one flat buffer, allocated once; every parameter's .grad is a view into it, so
// the exchange adds no copy of the gradients (DDP's gradient_as_bucket_view). A post-accumulate-
// grad hook per parameter counts the bucket's gradients; when the last one is accumulated (during
// the backward of the communicating micro-batch) the bucket's asynchronous all-reduce starts.
// Buckets start in index order on every rank (a bucket ready early waits for the ones before it),
// so all ranks issue the same collectives in the same order. Finish() starts every bucket the
// hooks did not (unused parameters, a rank without samples): their gradients count as zeros
// unless accumulated earlier, and receive the sum. If something replaced a .grad (set_to_none
// zero_grad, a user assignment), the hook or Finish() copies it into the bucket and re-points it.
//
// `extras` floats ride at the end of the last bucket (the one started last): fill them before
// it starts, e.g. in the on_last_bucket callback, which runs just before the last bucket's
// all-reduce starts, on the thread that finished its gradients.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun {

struct GradientReducerOptions {
  /// Upper bound of a bucket's gradient bytes; 25 MiB like DDP's bucket_cap_mb (HETRUN_BUCKET_BYTES
  /// in the example trainer). 1 puts every parameter in a bucket of its own; a huge value gives
  /// one bucket.
  int64_t bucket_bytes = int64_t{25} << 20;
  /// Floats appended to the last bucket (loss sums, arrival times): extras().
  int64_t extras = 0;
};

class GradientReducer {
 public:
  /// Builds the buckets, points every parameter's .grad into them (zeros) and registers the hooks.
  /// kInvalidArgument: no parameters, mixed devices or dtypes, a parameter without requires_grad,
  /// a hook already registered.
  static Result<std::unique_ptr<GradientReducer>> Create(c10d::Backend& group,
                                                         std::vector<torch::Tensor> parameters,
                                                         const GradientReducerOptions& options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Zeros every bucket (every gradient and the extras): one fill per bucket.
  void ZeroGrad();
  /// Before each backward: `communicate` false accumulates only (earlier micro-batches).
  void PrepareBackward(bool communicate);
  /// Called (once per communicating step) just before the last bucket starts; its argument is
  /// extras(). On GPU it runs on the autograd engine's thread.
  void set_on_last_bucket(std::function<void(torch::Tensor&)> callback);
  /// Starts what backward did not, waits for every bucket. kUnavailable when a collective fails.
  Status Finish();

  /// The extras slice of the last bucket (`options.extras` floats); summed over the group by
  /// Finish().
  torch::Tensor& extras() { return extras_; }
  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  /// Parameter indices of bucket b, in the order they sit in it.
  const std::vector<size_t>& bucket_members(int64_t b) const;
  /// Bytes of every bucket buffer together (the gradients plus the extras).
  int64_t buffer_bytes() const;
  /// Buckets the hooks started since the last PrepareBackward() (the rest start in Finish()).
  int64_t started_by_hooks() const { return started_by_hooks_; }

 private:
  struct Bucket;
  class Hook;
  GradientReducer(c10d::Backend& group, std::vector<torch::Tensor> parameters);
  void OnGradient(size_t index);
  void Bind(size_t index);
  void StartReadyBuckets();
  void ResetCounts();
  void Start(size_t bucket);

  c10d::Backend& group_;
  std::vector<torch::Tensor> params_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<size_t> bucket_of_;    // parameter index -> bucket
  std::vector<torch::Tensor> slot_;  // parameter index -> its view in the bucket
  std::vector<char> ready_;          // parameter index -> gradient accumulated this backward
  torch::Tensor extras_;
  std::function<void(torch::Tensor&)> on_last_bucket_;
  bool communicate_ = true;
  size_t next_bucket_ = 0;
  int64_t started_by_hooks_ = 0;
  Status error_;
  std::mutex mutex_;
};

}  // namespace hetrun
