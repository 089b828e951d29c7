#include "hetrun/pipeline/schedule_simulation.h"

#include <algorithm>
#include <map>
#include <utility>

namespace hetrun::pipeline {
namespace {

bool IsSend(OpKind kind) {
  return kind == OpKind::kSendActivation || kind == OpKind::kSendGradient;
}

// The receive that matches a send of `kind`.
OpKind Matching(OpKind kind) {
  return kind == OpKind::kSendActivation ? OpKind::kRecvActivation : OpKind::kRecvGradient;
}

using Pair = std::pair<int, int>;  // (sender, receiver): one ordered channel per pair

struct Lane {
  const Schedule* schedule = nullptr;
  size_t step = 0;
  double clock = 0;
  double busy = 0;
  bool posted = false;
  std::vector<size_t> index;  // per op of the posted group: its position on its channel
};

class Simulation {
 public:
  Simulation(std::span<const Schedule> schedules, std::span<const double> forward,
             std::span<const double> backward)
      : forward_(forward), backward_(backward) {
    for (const Schedule& s : schedules) {
      Lane lane;
      lane.schedule = &s;
      lanes_.push_back(lane);
    }
  }

  Result<SimulationResult> Run() {
    for (;;) {
      bool moved = false, all_done = true;
      for (Lane& lane : lanes_) {
        if (lane.step >= lane.schedule->steps.size()) continue;
        all_done = false;
        moved = Advance(lane) || moved;
      }
      if (all_done) break;
      if (!moved) return Stuck();
    }
    SimulationResult result;
    for (const Lane& lane : lanes_) {
      result.makespan = std::max(result.makespan, lane.clock);
      result.busy.push_back(lane.busy);
    }
    return result;
  }

 private:
  double ComputeTime(const Lane& lane, OpKind kind) const {
    auto s = static_cast<size_t>(lane.schedule->stage);
    double fwd = s < forward_.size() ? forward_[s] : 1.0;
    if (kind == OpKind::kForward) return fwd;
    return s < backward_.size() ? backward_[s] : 2.0 * fwd;
  }

  // Moves `lane` one step when it can; false when it waits for a partner.
  bool Advance(Lane& lane) {
    const ScheduleStep& step = lane.schedule->steps[lane.step];
    if (!step.communicate) {
      double t = ComputeTime(lane, step.ops.front().kind);
      lane.clock += t;
      lane.busy += t;
      ++lane.step;
      return true;
    }
    if (!lane.posted) {
      Post(lane, step);
      return true;
    }
    double done = lane.clock;
    for (size_t i = 0; i < step.ops.size(); ++i) {
      const Op& op = step.ops[i];
      bool send = IsSend(op.kind);
      Pair channel = send ? Pair{lane.schedule->rank, op.peer} : Pair{op.peer, lane.schedule->rank};
      const std::vector<double>& other = send ? recvs_[channel] : sends_[channel];
      if (other.size() <= lane.index[i]) return false;
      done = std::max(done, other[lane.index[i]]);
    }
    lane.clock = done;
    lane.posted = false;
    ++lane.step;
    return true;
  }

  void Post(Lane& lane, const ScheduleStep& step) {
    lane.index.clear();
    for (const Op& op : step.ops) {
      bool send = IsSend(op.kind);
      Pair channel = send ? Pair{lane.schedule->rank, op.peer} : Pair{op.peer, lane.schedule->rank};
      std::vector<double>& mine = send ? sends_[channel] : recvs_[channel];
      lane.index.push_back(mine.size());
      mine.push_back(lane.clock);
    }
    lane.posted = true;
  }

  Status Stuck() const {
    std::string message = "the schedules deadlock:";
    for (const Lane& lane : lanes_) {
      if (lane.step >= lane.schedule->steps.size()) continue;
      message += " rank " + std::to_string(lane.schedule->rank) + " waits on {";
      const ScheduleStep& step = lane.schedule->steps[lane.step];
      for (size_t i = 0; i < step.ops.size(); ++i) {
        message += (i ? "; " : "") + step.ops[i].ToString();
      }
      message += "}";
    }
    return FailedPreconditionError(message);
  }

  std::span<const double> forward_;
  std::span<const double> backward_;
  std::vector<Lane> lanes_;
  std::map<Pair, std::vector<double>> sends_;  // post times, in channel order
  std::map<Pair, std::vector<double>> recvs_;
};

// Every P2P op of `schedule` with the given direction towards / from `peer`, in order.
std::vector<Op> Channel(const Schedule& schedule, int peer, bool sends) {
  std::vector<Op> out;
  for (const ScheduleStep& step : schedule.steps) {
    if (!step.communicate) continue;
    for (const Op& op : step.ops) {
      if (op.peer == peer && IsSend(op.kind) == sends) out.push_back(op);
    }
  }
  return out;
}

}  // namespace

Result<SimulationResult> SimulateSchedules(std::span<const Schedule> schedules,
                                           std::span<const double> forward_time,
                                           std::span<const double> backward_time) {
  return Simulation(schedules, forward_time, backward_time).Run();
}

Status CheckPairsMatch(std::span<const Schedule> schedules) {
  for (const Schedule& a : schedules) {
    for (const Schedule& b : schedules) {
      if (a.rank == b.rank) continue;
      std::vector<Op> sent = Channel(a, b.rank, true);
      std::vector<Op> received = Channel(b, a.rank, false);
      std::string pair = "rank " + std::to_string(a.rank) + " -> rank " + std::to_string(b.rank);
      for (size_t i = 0; i < std::max(sent.size(), received.size()); ++i) {
        if (i >= sent.size() || i >= received.size()) {
          return InvalidArgumentError(pair + ": " + std::to_string(sent.size()) + " sends but " +
                                      std::to_string(received.size()) + " receives");
        }
        const Op& s = sent[i];
        const Op& r = received[i];
        if (Matching(s.kind) != r.kind || s.micro_batch != r.micro_batch ||
            s.samples != r.samples) {
          return InvalidArgumentError(pair + ": operation " + std::to_string(i) + " is " +
                                      s.ToString() + " on one side and " + r.ToString() +
                                      " on the other");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace hetrun::pipeline
