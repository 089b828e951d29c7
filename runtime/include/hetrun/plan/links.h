// The links a pipeline's traffic crosses: a pod's inter-node network and its NVLink, by name from
// a documented table of per-direction bandwidths or as a number in GB/s
// (docs/reference/cli/plan.md).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetrun::plan {

/// A link with its bandwidth per direction.
struct Link {
  std::string name;     ///< "ib-200g", "nvlink4", or "25 GB/s" for a number in the file
  double gb_per_s = 0;  ///< GB/s (10^9 bytes per second) per direction, > 0
};

/// Inter-node links by name, nominal line rate / 8 (protocol overhead not deducted):
/// ib-100g 12.5 (EDR), ib-200g 25 (HDR), ib-400g 50 (NDR), ib-800g 100 (XDR); roce-100g 12.5,
/// roce-200g 25, roce-400g 50; eth-10g 1.25, eth-25g 3.125, eth-50g 6.25, eth-100g 12.5,
/// eth-200g 25, eth-400g 50.
const std::vector<std::pair<std::string, double>>& NetworkLinkTable();

/// GPU-to-GPU links inside a pod, per direction: nvlink2 150 (V100), nvlink3 300 (A100),
/// nvlink4 450 (H100), nvlink5 900 (B200); pcie4 31.5, pcie5 63 (x16, pods without NVLink).
const std::vector<std::pair<std::string, double>>& NvlinkTable();

/// The link called `name` in `table`; gb_per_s 0 when it is not there.
Link LinkByName(const std::vector<std::pair<std::string, double>>& table, std::string_view name);

/// A link given as a number of GB/s, named after its value ("25 GB/s").
Link LinkFromNumber(double gb_per_s);

/// Milliseconds to send `bytes` one way over `link`: bytes / (GB/s × 10^9) × 10^3.
double TransferMs(double bytes, const Link& link);

}  // namespace hetrun::plan
