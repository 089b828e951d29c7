#include "hetrun/pipeline/schedule.h"

#include <algorithm>

namespace hetrun::pipeline {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kForward:
      return "forward";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kSendActivation:
      return "send_activation";
    case OpKind::kRecvActivation:
      return "recv_activation";
    case OpKind::kSendGradient:
      return "send_gradient";
    case OpKind::kRecvGradient:
      return "recv_gradient";
  }
  return "unknown";
}

std::string Op::ToString() const {
  std::string out = std::string(OpKindName(kind)) + " micro-batch " + std::to_string(micro_batch) +
                    " samples " + samples.ToString();
  if (peer >= 0) out += " peer " + std::to_string(peer);
  return out;
}

namespace {

// Builds one rank's steps; each helper appends one step (none when a group would be empty).
class ScheduleBuilder {
 public:
  ScheduleBuilder(const JobLayout& layout, const RoutingTable& routes, Schedule& out)
      : layout_(layout), routes_(routes), out_(out) {}

  void Compute(OpKind kind, int64_t mb) {
    SampleRange slice = routes_.step.Slice(out_.stage, mb, out_.replica);
    out_.steps.push_back({false, {Op{kind, mb, slice, -1}}});
  }
  std::vector<Op> RecvActs(int64_t mb) const {
    return Ops(routes_.Incoming(layout_, out_.rank, mb), OpKind::kRecvActivation, true);
  }
  std::vector<Op> SendActs(int64_t mb) const {
    return Ops(routes_.Outgoing(layout_, out_.rank, mb), OpKind::kSendActivation, false);
  }
  std::vector<Op> RecvGrads(int64_t mb) const {
    return Ops(routes_.Outgoing(layout_, out_.rank, mb), OpKind::kRecvGradient, false);
  }
  std::vector<Op> SendGrads(int64_t mb) const {
    return Ops(routes_.Incoming(layout_, out_.rank, mb), OpKind::kSendGradient, true);
  }
  void Communicate(std::vector<Op> first, const std::vector<Op>& second = {}) {
    first.insert(first.end(), second.begin(), second.end());
    if (!first.empty()) out_.steps.push_back({true, std::move(first)});
  }

 private:
  static std::vector<Op> Ops(const std::vector<Transfer>& pieces, OpKind kind, bool from_side) {
    std::vector<Op> ops;
    for (const Transfer& t : pieces) {
      ops.push_back({kind, t.micro_batch, t.samples, from_side ? t.from_rank : t.to_rank});
    }
    return ops;
  }

  const JobLayout& layout_;
  const RoutingTable& routes_;
  Schedule& out_;
};

void OneFOneB(ScheduleBuilder& b, int64_t stages, int64_t stage, int64_t m) {
  const int64_t warmup = std::min(stages - stage - 1, m);
  const int64_t steady = m - warmup;
  for (int64_t i = 0; i < warmup; ++i) {
    b.Communicate(b.RecvActs(i));
    b.Compute(OpKind::kForward, i);
    b.Communicate(b.SendActs(i));
  }
  if (steady > 0) b.Communicate(b.RecvActs(warmup));
  for (int64_t i = 0; i < steady; ++i) {
    b.Compute(OpKind::kForward, warmup + i);
    b.Communicate(b.SendActs(warmup + i), b.RecvGrads(i));
    b.Compute(OpKind::kBackward, i);
    if (i == steady - 1) {
      b.Communicate(b.SendGrads(i));
    } else {
      b.Communicate(b.SendGrads(i), b.RecvActs(warmup + i + 1));
    }
  }
  for (int64_t i = steady; i < m; ++i) {
    b.Communicate(b.RecvGrads(i));
    b.Compute(OpKind::kBackward, i);
    b.Communicate(b.SendGrads(i));
  }
}

void GPipe(ScheduleBuilder& b, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    b.Communicate(b.RecvActs(i));
    b.Compute(OpKind::kForward, i);
    b.Communicate(b.SendActs(i));
  }
  for (int64_t i = m - 1; i >= 0; --i) {
    b.Communicate(b.RecvGrads(i));
    b.Compute(OpKind::kBackward, i);
    b.Communicate(b.SendGrads(i));
  }
}

}  // namespace

Schedule BuildSchedule(const JobLayout& layout, const RoutingTable& routes, int rank) {
  Schedule out;
  out.rank = rank;
  out.stage = layout.StageOf(rank);
  out.replica = layout.ReplicaOf(rank);
  if (out.stage < 0) return out;
  ScheduleBuilder builder(layout, routes, out);
  const auto m = static_cast<int64_t>(routes.step.micro_batches.size());
  if (layout.schedule == ScheduleKind::kGPipe) {
    GPipe(builder, m);
  } else {
    OneFOneB(builder, static_cast<int64_t>(layout.stages.size()), out.stage, m);
  }
  return out;
}

std::vector<Schedule> BuildSchedules(const JobLayout& layout, const RoutingTable& routes) {
  std::vector<Schedule> out;
  for (int r = 0; r < layout.world_size(); ++r) out.push_back(BuildSchedule(layout, routes, r));
  return out;
}

}  // namespace hetrun::pipeline
