#include "hetrun/gradient_reducer.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

namespace hetrun {

struct GradientReducer::Bucket {
  torch::Tensor buffer;         // flat: the members' gradients, then (last bucket) the extras
  std::vector<size_t> members;  // parameter indices
  size_t pending = 0;           // members whose gradient is not yet accumulated this backward
  c10::intrusive_ptr<c10d::Work> work;
};

class GradientReducer::Hook : public torch::autograd::PostAccumulateGradHook {
 public:
  Hook(GradientReducer* reducer, size_t index) : reducer_(reducer), index_(index) {}
  void operator()(const torch::autograd::Variable& /*tensor*/) override {
    reducer_->OnGradient(index_);
  }

 private:
  GradientReducer* reducer_;
  size_t index_;
};

GradientReducer::GradientReducer(c10d::Backend& group, std::vector<torch::Tensor> parameters)
    : group_(group), params_(std::move(parameters)) {}

GradientReducer::~GradientReducer() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& bucket : buckets_) {
    // A collective in flight writes into the buffer: let it finish before the buffer goes.
    if (bucket->work) {
      try {
        bucket->work->wait();
      } catch (const std::exception&) {
      }
    }
  }
  for (const torch::Tensor& p : params_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

Result<std::unique_ptr<GradientReducer>> GradientReducer::Create(
    c10d::Backend& group, std::vector<torch::Tensor> parameters,
    const GradientReducerOptions& options) {
  if (parameters.empty()) return InvalidArgumentError("GradientReducer: no parameters");
  if (options.bucket_bytes < 1 || options.extras < 0) {
    return InvalidArgumentError("GradientReducer: bucket_bytes " +
                                std::to_string(options.bucket_bytes) + " and extras " +
                                std::to_string(options.extras) + " must be >= 1 and >= 0");
  }
  const torch::Tensor& first = parameters.front();
  for (size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor& p = parameters[i];
    std::string which = "GradientReducer: parameter " + std::to_string(i);
    if (!p.requires_grad()) return InvalidArgumentError(which + " does not require grad");
    if (p.device() != first.device() || p.scalar_type() != first.scalar_type()) {
      return InvalidArgumentError(which + " is " + p.toString() + " on " + p.device().str() +
                                  ", parameter 0 is " + first.toString() + " on " +
                                  first.device().str() + ": one device and dtype per reducer");
    }
    if (torch::autograd::impl::post_acc_grad_hooks(p) != nullptr) {
      return InvalidArgumentError(which + " already has a post-accumulate-grad hook");
    }
  }
  std::unique_ptr<GradientReducer> r(new GradientReducer(group, std::move(parameters)));
  const size_t n = r->params_.size();
  const int64_t element = static_cast<int64_t>(first.element_size());
  // Reverse parameter order: the last layers' gradients come first in backward.
  std::vector<std::vector<size_t>> groups(1);
  int64_t bytes = 0;
  for (size_t k = n; k-- > 0;) {
    const int64_t size = r->params_[k].numel() * element;
    if (!groups.back().empty() && bytes + size > options.bucket_bytes) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(k);
    bytes += size;
  }
  r->bucket_of_.assign(n, 0);
  r->slot_.assign(n, torch::Tensor());
  r->ready_.assign(n, 0);
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < groups.size(); ++b) {
    auto bucket = std::make_unique<Bucket>();
    bucket->members = groups[b];
    int64_t numel = b + 1 == groups.size() ? options.extras : 0;
    for (size_t k : bucket->members) numel += r->params_[k].numel();
    bucket->buffer = torch::zeros({numel}, first.options().requires_grad(false));
    int64_t offset = 0;
    for (size_t k : bucket->members) {
      const torch::Tensor& p = r->params_[k];
      r->slot_[k] = bucket->buffer.narrow(0, offset, p.numel()).view(p.sizes());
      r->bucket_of_[k] = b;
      offset += p.numel();
      r->Bind(k);
    }
    if (b + 1 == groups.size()) r->extras_ = bucket->buffer.narrow(0, offset, options.extras);
    r->buckets_.push_back(std::move(bucket));
  }
  for (size_t k = 0; k < n; ++k) {
    torch::autograd::impl::set_post_acc_grad_hooks(r->params_[k],
                                                   std::make_unique<Hook>(r.get(), k));
  }
  r->PrepareBackward(true);
  return r;
}

const std::vector<size_t>& GradientReducer::bucket_members(int64_t b) const {
  return buckets_.at(static_cast<size_t>(b))->members;
}

int64_t GradientReducer::buffer_bytes() const {
  int64_t total = 0;
  for (const auto& b : buckets_) total += b->buffer.numel() * b->buffer.element_size();
  return total;
}

void GradientReducer::set_on_last_bucket(std::function<void(torch::Tensor&)> callback) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_last_bucket_ = std::move(callback);
}

void GradientReducer::ZeroGrad() {
  torch::NoGradGuard no_grad;
  for (const auto& b : buckets_) b->buffer.zero_();
  for (size_t k = 0; k < params_.size(); ++k) Bind(k);
}

void GradientReducer::PrepareBackward(bool communicate) {
  std::lock_guard<std::mutex> lock(mutex_);
  communicate_ = communicate;
  if (next_bucket_ != 0) return;  // a communicating backward is under way: keep its counts
  ResetCounts();
  started_by_hooks_ = 0;
}

void GradientReducer::ResetCounts() {
  for (const auto& b : buckets_) b->pending = b->members.size();
  std::fill(ready_.begin(), ready_.end(), 0);
}

// The parameter's .grad must be its slot in the bucket: if anything replaced it (set_to_none,
// a first accumulation that stole the incoming tensor), copy it in and point .grad back.
void GradientReducer::Bind(size_t index) {
  torch::Tensor& p = params_[index];
  const torch::Tensor& slot = slot_[index];
  const torch::Tensor& grad = p.grad();
  if (grad.defined() && grad.data_ptr() == slot.data_ptr() && grad.sizes() == slot.sizes()) {
    return;
  }
  torch::NoGradGuard no_grad;
  if (grad.defined()) {
    slot.copy_(grad);
  } else {
    slot.zero_();
  }
  p.mutable_grad() = slot;
}

void GradientReducer::OnGradient(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  Bind(index);
  if (!communicate_ || ready_[index]) return;
  ready_[index] = 1;
  if (bucket_of_[index] < next_bucket_ && error_.ok()) {
    error_ = FailedPreconditionError(
        "gradient of parameter " + std::to_string(index) +
        " accumulated after its bucket's all-reduce started: one communicating backward per "
        "Finish()");
    return;
  }
  Bucket& bucket = *buckets_[bucket_of_[index]];
  if (--bucket.pending == 0) StartReadyBuckets();
}

void GradientReducer::StartReadyBuckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_]->pending == 0) {
    ++started_by_hooks_;
    Start(next_bucket_++);
  }
}

void GradientReducer::Start(size_t index) {
  Bucket& bucket = *buckets_[index];
  if (index + 1 == buckets_.size() && on_last_bucket_) on_last_bucket_(extras_);
  if (!error_.ok()) return;
  try {
    std::vector<torch::Tensor> tensors{bucket.buffer};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    bucket.work = group_.allreduce(tensors, options);
  } catch (const std::exception& e) {
    error_ = UnavailableError("all-reduce of gradient bucket " + std::to_string(index) + " of " +
                              std::to_string(buckets_.size()) + " (" + group_.getBackendName() +
                              "): " + e.what());
  }
}

Status GradientReducer::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  // What backward did not start: buckets with an unused parameter, or no backward at all.
  for (size_t k = 0; k < params_.size(); ++k) Bind(k);
  while (next_bucket_ < buckets_.size()) Start(next_bucket_++);
  Status status = error_;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = *buckets_[b];
    if (!bucket.work) continue;
    try {
      bucket.work->wait();
    } catch (const std::exception& e) {
      if (status.ok()) {
        status = UnavailableError("waiting for gradient bucket " + std::to_string(b) + " of " +
                                  std::to_string(buckets_.size()) + " (" + group_.getBackendName() +
                                  "): " + e.what());
      }
    }
    bucket.work.reset();
  }
  error_ = Status::Ok();
  next_bucket_ = 0;
  communicate_ = true;
  ResetCounts();
  return status;
}

}  // namespace hetrun
