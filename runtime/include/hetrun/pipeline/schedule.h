// The ordered operations each replica runs in one step (docs/ARCHITECTURE.md §5), for 1F1B and
// GPipe. Communication is grouped: the operations of one kCommunicate entry are posted together
// (one batched P2P call), so neither Gloo nor NCCL can deadlock on the order of a send and a
// receive between the same pair. Operations name micro-batches, sample ranges and peers, never
// tensors, so C++ and Python executors follow the same plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/routing_table.h"

namespace hetrun::pipeline {

enum class OpKind {
  kForward,         ///< run the stage's layers on the micro-batch's slice
  kBackward,        ///< backpropagate the micro-batch's slice
  kSendActivation,  ///< to a replica of the next stage
  kRecvActivation,  ///< from a replica of the previous stage
  kSendGradient,    ///< to a replica of the previous stage
  kRecvGradient,    ///< from a replica of the next stage
};

/// "forward", "send_activation", ...
std::string_view OpKindName(OpKind kind);

struct Op {
  OpKind kind = OpKind::kForward;
  int64_t micro_batch = 0;
  SampleRange samples;  ///< the replica's slice (compute) or the piece that travels (P2P)
  int peer = -1;        ///< the partner's global rank (P2P only)

  bool operator==(const Op&) const = default;
  std::string ToString() const;
};

/// One entry of a replica's schedule: one compute operation, or a group of P2P operations posted
/// together and waited for together.
struct ScheduleStep {
  bool communicate = false;
  std::vector<Op> ops;  ///< one op when !communicate
};

struct Schedule {
  int rank = 0;
  int stage = 0;
  int replica = 0;
  std::vector<ScheduleStep> steps;
};

/// The schedule of `rank` for the layout's schedule kind. 1F1B: stage s runs min(S − s − 1, M)
/// warm-up forwards, then alternates one forward and one backward, then drains the backwards;
/// a send is grouped with the receive that follows it (send activation + receive gradient, send
/// gradient + receive activation) so neighbours cannot block on each other. GPipe: all forwards
/// in order, then all backwards in reverse order. Receives of one micro-batch from several
/// replicas, and sends to several, are one group.
Schedule BuildSchedule(const JobLayout& layout, const RoutingTable& routes, int rank);

/// Every rank's schedule, in rank order.
std::vector<Schedule> BuildSchedules(const JobLayout& layout, const RoutingTable& routes);

}  // namespace hetrun::pipeline
