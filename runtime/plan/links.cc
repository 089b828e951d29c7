#include "hetrun/plan/links.h"

#include <cstdio>

namespace hetrun::plan {

const std::vector<std::pair<std::string, double>>& NetworkLinkTable() {
  static const std::vector<std::pair<std::string, double>> table = {
      {"ib-100g", 12.5},   {"ib-200g", 25.0},   {"ib-400g", 50.0},   {"ib-800g", 100.0},
      {"roce-100g", 12.5}, {"roce-200g", 25.0}, {"roce-400g", 50.0}, {"eth-10g", 1.25},
      {"eth-25g", 3.125},  {"eth-50g", 6.25},   {"eth-100g", 12.5},  {"eth-200g", 25.0},
      {"eth-400g", 50.0}};
  return table;
}

const std::vector<std::pair<std::string, double>>& NvlinkTable() {
  static const std::vector<std::pair<std::string, double>> table = {
      {"nvlink2", 150.0}, {"nvlink3", 300.0}, {"nvlink4", 450.0},
      {"nvlink5", 900.0}, {"pcie4", 31.5},    {"pcie5", 63.0}};
  return table;
}

Link LinkByName(const std::vector<std::pair<std::string, double>>& table, std::string_view name) {
  for (const auto& [known, gb_per_s] : table) {
    if (known == name) return {known, gb_per_s};
  }
  return {std::string(name), 0.0};
}

Link LinkFromNumber(double gb_per_s) {
  char text[64];
  std::snprintf(text, sizeof text, "%g GB/s", gb_per_s);
  return {text, gb_per_s};
}

double TransferMs(double bytes, const Link& link) {
  return link.gb_per_s > 0 ? bytes / (link.gb_per_s * 1e9) * 1e3 : 0.0;
}

}  // namespace hetrun::plan
