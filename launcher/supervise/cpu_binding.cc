#include "supervise/cpu_binding.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

namespace hetrun::launcher {

Result<CpuBind> ParseCpuBind(std::string_view text) {
  if (text == "none") return CpuBind::kNone;
  if (text == "spread") return CpuBind::kSpread;
  return InvalidArgumentError("cpu binding '" + std::string(text) + "': expected none or spread");
}

Result<std::vector<int>> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
    return InternalError(std::string("sched_getaffinity: ") + std::strerror(errno));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.empty()) return InternalError("sched_getaffinity: no CPU in this process's mask");
  return cpus;
}

std::vector<std::vector<int>> SpreadCpus(const std::vector<int>& cpus, int ranks) {
  if (ranks < 1) return {};
  std::vector<std::vector<int>> out(static_cast<size_t>(ranks));
  const size_t n = cpus.size();
  const size_t r = static_cast<size_t>(ranks);
  if (n == 0) return out;
  if (n < r) {
    for (size_t i = 0; i < r; ++i) out[i] = {cpus[i % n]};
    return out;
  }
  size_t begin = 0;
  for (size_t i = 0; i < r; ++i) {
    size_t size = n / r + (i < n % r ? 1 : 0);
    out[i].assign(cpus.begin() + static_cast<std::ptrdiff_t>(begin),
                  cpus.begin() + static_cast<std::ptrdiff_t>(begin + size));
    begin += size;
  }
  return out;
}

std::string CpuListText(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[i]);
    if (j > i) text += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace hetrun::launcher
