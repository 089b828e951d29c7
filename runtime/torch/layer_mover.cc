#include "hetrun/layer_mover.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <span>

namespace hetrun {
namespace {

using pipeline::JobLayout;

// Tags of the three rounds (the pipeline's own tags are 2 per micro-batch, far below).
constexpr int kTagSizes = 0x7e0000;
constexpr int kTagHeader = 0x7e0001;
constexpr int kTagPayload = 0x7e0002;

// Stage of `layer` in `layout` (layouts are validated: every layer has one).
int StageOfLayer(const JobLayout& layout, int64_t layer) {
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const pipeline::StageLayout& stage = layout.stages[s];
    if (layer >= stage.first_layer && layer < stage.first_layer + stage.layers) {
      return static_cast<int>(s);
    }
  }
  return -1;
}

// What one rank sends to (or receives from) one peer: its layers, packed.
struct Parcel {
  int peer = 0;
  std::vector<int64_t> layers;
  std::vector<int64_t> header;  // per layer: index, tensors, per tensor: dtype, ndim, dims...
  torch::Tensor payload;        // uint8, every tensor's bytes in order
  torch::Tensor sizes;          // int64 [header length, payload bytes]
  torch::Tensor header_tensor;
};

// A tensor's bytes as a flat uint8 view of a contiguous copy.
torch::Tensor Bytes(const torch::Tensor& t) {
  return t.detach().contiguous().reshape({-1}).view(torch::kUInt8);
}

Status Pack(Parcel& parcel, const LayerMoveCallbacks& callbacks, const torch::Device& device) {
  std::vector<torch::Tensor> pieces;
  for (int64_t layer : parcel.layers) {
    HETRUN_ASSIGN_OR_RETURN(std::vector<torch::Tensor> tensors, callbacks.export_layer(layer));
    parcel.header.push_back(layer);
    parcel.header.push_back(static_cast<int64_t>(tensors.size()));
    for (const torch::Tensor& t : tensors) {
      if (!t.defined()) {
        return InvalidArgumentError("layer " + std::to_string(layer) +
                                    ": the export callback returned an undefined tensor");
      }
      parcel.header.push_back(static_cast<int64_t>(t.scalar_type()));
      parcel.header.push_back(t.dim());
      for (int64_t d : t.sizes()) parcel.header.push_back(d);
      if (t.numel() > 0) pieces.push_back(Bytes(t.to(device)));
    }
  }
  parcel.payload = pieces.empty()
                       ? torch::empty({0}, torch::TensorOptions(device).dtype(torch::kUInt8))
                       : torch::cat(pieces);
  parcel.header_tensor = torch::tensor(parcel.header, torch::kInt64).to(device);
  parcel.sizes = torch::tensor(std::vector<int64_t>{static_cast<int64_t>(parcel.header.size()),
                                                    parcel.payload.numel()},
                               torch::kInt64)
                     .to(device);
  return Status::Ok();
}

// Splits a received parcel into its layers' tensors and imports them. The header comes from a
// peer running the same code; it is still checked so a mismatch is an error, not a crash.
Status Unpack(const Parcel& parcel, const LayerMoveCallbacks& callbacks) {
  const std::vector<int64_t>& h = parcel.header;
  size_t at = 0;
  int64_t offset = 0;
  auto bad = [&parcel](const std::string& what) {
    return InternalError("layer move: the parcel from rank " + std::to_string(parcel.peer) + " " +
                         what);
  };
  for (int64_t expected : parcel.layers) {
    if (at + 2 > h.size() || h[at] != expected) return bad("does not hold the expected layers");
    const int64_t count = h[at + 1];
    at += 2;
    std::vector<torch::Tensor> tensors;
    for (int64_t i = 0; i < count; ++i) {
      if (at + 2 > h.size() || h[at + 1] < 0 ||
          at + 2 + static_cast<size_t>(h[at + 1]) > h.size()) {
        return bad("has a truncated header");
      }
      const auto dtype = static_cast<torch::ScalarType>(h[at]);
      std::vector<int64_t> dims(h.begin() + static_cast<std::ptrdiff_t>(at + 2),
                                h.begin() + static_cast<std::ptrdiff_t>(at + 2 + h[at + 1]));
      at += 2 + static_cast<size_t>(h[at + 1]);
      torch::Tensor t = torch::empty(dims, parcel.payload.options().dtype(dtype));
      const int64_t n = t.numel() * static_cast<int64_t>(t.element_size());
      if (offset + n > parcel.payload.numel()) return bad("is shorter than its header says");
      if (n > 0) Bytes(t).copy_(parcel.payload.narrow(0, offset, n));
      offset += n;
      tensors.push_back(t);
    }
    HETRUN_RETURN_IF_ERROR(callbacks.import_layer(expected, std::move(tensors)));
  }
  if (offset != parcel.payload.numel()) return bad("is longer than its header says");
  return Status::Ok();
}

// One round: every send and receive posted together, then waited for (NCCL: as one group).
Status Exchange(Runtime& rt, std::vector<Parcel>& sends, std::vector<Parcel>& receives,
                torch::Tensor Parcel::*field, int tag, const char* round) {
  c10d::Backend& world = rt.world();
  const bool coalesce = rt.backend_name() == "nccl";
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::vector<std::string> what;
  std::vector<std::vector<torch::Tensor>> buffers;
  buffers.reserve(sends.size() + receives.size());
  try {
    if (coalesce) world.startCoalescing();
    for (Parcel& p : sends) {
      if ((p.*field).numel() == 0) continue;
      buffers.push_back({p.*field});
      what.push_back(std::string("send of the ") + round + " to rank " + std::to_string(p.peer));
      works.push_back(world.send(buffers.back(), p.peer, tag));
    }
    for (Parcel& p : receives) {
      if ((p.*field).numel() == 0) continue;
      buffers.push_back({p.*field});
      what.push_back(std::string("receive of the ") + round + " from rank " +
                     std::to_string(p.peer));
      works.push_back(world.recv(buffers.back(), p.peer, tag));
    }
    if (coalesce) {
      what.push_back(std::string("the coalesced ") + round);
      works.push_back(world.endCoalescing());
    }
  } catch (const std::exception& e) {
    // Posting can fail before the failed pair is known (Gloo: "Connection closed by peer"):
    // name every pair of the round, so the dead peer is among them.
    std::string pairs;
    for (const std::string& w : what) pairs += (pairs.empty() ? "" : ", ") + w;
    return UnavailableError(std::string("layer move: posting the ") + round + " on rank " +
                            std::to_string(rt.rank()) + " (" + (pairs.empty() ? "no pair" : pairs) +
                            "): " + e.what());
  }
  for (size_t i = 0; i < works.size(); ++i) {
    try {
      if (works[i]) works[i]->wait(rt.timeout());
    } catch (const std::exception& e) {
      return UnavailableError("layer move: " + what[i] + " on rank " + std::to_string(rt.rank()) +
                              ": " + e.what());
    }
  }
  return Status::Ok();
}

Status CheckLayouts(const Runtime& rt, const JobLayout& from, const JobLayout& to) {
  HETRUN_RETURN_IF_ERROR(pipeline::ValidateJobLayout(from, "layout before the move"));
  HETRUN_RETURN_IF_ERROR(pipeline::ValidateJobLayout(to, "layout after the move"));
  if (from.num_layers != to.num_layers) {
    return InvalidArgumentError("layer move: the layouts have " + std::to_string(from.num_layers) +
                                " and " + std::to_string(to.num_layers) + " layers");
  }
  if (from.world_size() != rt.world_size() || to.world_size() != rt.world_size()) {
    return InvalidArgumentError("layer move: the layouts hold " +
                                std::to_string(from.world_size()) + " and " +
                                std::to_string(to.world_size()) + " ranks, but this job has " +
                                std::to_string(rt.world_size()));
  }
  return Status::Ok();
}

// This rank's parcels: sends grouped by receiver, receives by sender, layers ascending; a layer
// this rank sends to itself is imported directly.
Status Gather(Runtime& rt, const std::vector<LayerTransfer>& plan,
              const LayerMoveCallbacks& callbacks, std::vector<Parcel>& sends,
              std::vector<Parcel>& receives) {
  std::map<int, std::vector<int64_t>> to_peer, from_peer;
  for (const LayerTransfer& t : plan) {
    if (t.from == rt.rank() && t.to == rt.rank()) {
      HETRUN_ASSIGN_OR_RETURN(std::vector<torch::Tensor> tensors, callbacks.export_layer(t.layer));
      for (torch::Tensor& x : tensors) x = x.detach().clone();
      HETRUN_RETURN_IF_ERROR(callbacks.import_layer(t.layer, std::move(tensors)));
    } else if (t.from == rt.rank()) {
      to_peer[t.to].push_back(t.layer);
    } else if (t.to == rt.rank()) {
      from_peer[t.from].push_back(t.layer);
    }
  }
  const auto on_device = torch::TensorOptions(rt.device()).dtype(torch::kInt64);
  for (auto& [peer, layers] : to_peer) {
    sends.push_back(Parcel{peer, layers, {}, {}, {}, {}});
    HETRUN_RETURN_IF_ERROR(Pack(sends.back(), callbacks, rt.device()));
  }
  for (auto& [peer, layers] : from_peer) {
    receives.push_back(Parcel{peer, layers, {}, {}, torch::empty({2}, on_device), {}});
  }
  return Status::Ok();
}

// The job's totals: every rank's bytes sent and time, all-gathered over the world.
Status Totals(Runtime& rt, LayerMoveReport& report) {
  const double mine[2] = {static_cast<double>(report.bytes_sent), report.transfer_ms};
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(mine), sizeof(mine));
  HETRUN_ASSIGN_OR_RETURN(std::vector<std::byte> all, rt.AllGatherBytes(rt.world(), bytes));
  report.bytes = 0;
  for (int r = 0; r < rt.world_size(); ++r) {
    double theirs[2];
    std::memcpy(theirs, all.data() + static_cast<size_t>(r) * sizeof(mine), sizeof(mine));
    report.bytes += static_cast<int64_t>(theirs[0]);
    report.transfer_ms = std::max(report.transfer_ms, theirs[1]);
  }
  return Status::Ok();
}

Status Transfer(Runtime& rt, const std::vector<LayerTransfer>& plan,
                const LayerMoveCallbacks& callbacks, LayerMoveReport& report) {
  std::vector<Parcel> sends, receives;
  HETRUN_RETURN_IF_ERROR(Gather(rt, plan, callbacks, sends, receives));
  HETRUN_RETURN_IF_ERROR(Exchange(rt, sends, receives, &Parcel::sizes, kTagSizes, "sizes"));
  for (Parcel& p : receives) {
    torch::Tensor sizes = p.sizes.to(torch::kCPU);
    const int64_t header = sizes[0].item<int64_t>(), payload = sizes[1].item<int64_t>();
    if (header < 0 || payload < 0) {
      return InternalError("layer move: rank " + std::to_string(p.peer) + " announced " +
                           std::to_string(header) + " header values and " +
                           std::to_string(payload) + " bytes");
    }
    const auto on_device = torch::TensorOptions(rt.device());
    p.header_tensor = torch::empty({header}, on_device.dtype(torch::kInt64));
    p.payload = torch::empty({payload}, on_device.dtype(torch::kUInt8));
    report.bytes_received += payload;
  }
  for (const Parcel& p : sends) report.bytes_sent += p.payload.numel();
  HETRUN_RETURN_IF_ERROR(
      Exchange(rt, sends, receives, &Parcel::header_tensor, kTagHeader, "header"));
  HETRUN_RETURN_IF_ERROR(Exchange(rt, sends, receives, &Parcel::payload, kTagPayload, "payload"));
  for (Parcel& p : receives) {
    torch::Tensor header = p.header_tensor.to(torch::kCPU).contiguous();
    p.header.assign(header.data_ptr<int64_t>(), header.data_ptr<int64_t>() + header.numel());
    HETRUN_RETURN_IF_ERROR(Unpack(p, callbacks));
  }
  return Status::Ok();
}

}  // namespace

std::vector<int64_t> MovedLayers(const JobLayout& from, const JobLayout& to) {
  std::vector<int64_t> moved;
  for (int64_t layer = 0; layer < std::min(from.num_layers, to.num_layers); ++layer) {
    if (StageOfLayer(from, layer) != StageOfLayer(to, layer)) moved.push_back(layer);
  }
  return moved;
}

std::vector<LayerTransfer> PlanLayerTransfers(const JobLayout& from, const JobLayout& to) {
  std::vector<LayerTransfer> plan;
  for (int64_t layer : MovedLayers(from, to)) {
    const pipeline::StageLayout& old_stage =
        from.stages[static_cast<size_t>(StageOfLayer(from, layer))];
    const pipeline::StageLayout& new_stage =
        to.stages[static_cast<size_t>(StageOfLayer(to, layer))];
    for (int j = 0; j < new_stage.replicas(); ++j) {
      plan.push_back(LayerTransfer{layer,
                                   old_stage.ranks[static_cast<size_t>(j % old_stage.replicas())],
                                   new_stage.ranks[static_cast<size_t>(j)]});
    }
  }
  return plan;
}

Result<LayerMoveReport> MoveLayers(Runtime& runtime, const JobLayout& from, const JobLayout& to,
                                   const LayerMoveCallbacks& callbacks) {
  const auto start = std::chrono::steady_clock::now();
  HETRUN_RETURN_IF_ERROR(CheckLayouts(runtime, from, to));
  if (!callbacks.export_layer || !callbacks.import_layer) {
    return InvalidArgumentError("layer move: both the export and the import callback are needed");
  }
  LayerMoveReport report;
  report.layers = MovedLayers(from, to);
  const std::vector<LayerTransfer> plan = PlanLayerTransfers(from, to);
  report.transfers = static_cast<int64_t>(plan.size());
  try {
    HETRUN_RETURN_IF_ERROR(Transfer(runtime, plan, callbacks, report));
  } catch (const std::exception& e) {
    return InternalError("layer move on rank " + std::to_string(runtime.rank()) + ": " + e.what());
  }
  report.transfer_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  HETRUN_RETURN_IF_ERROR(Totals(runtime, report));
  return report;
}

}  // namespace hetrun
