#include "world_workers.h"

#include <future>
#include <map>

#include "free_port.h"

namespace hetrun::testing {

std::vector<ProcessResult> RunWorldWorkers(int world, const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout) {
  const int port = FreePort();
  std::vector<std::future<ProcessResult>> running;
  for (int r = 0; r < world; ++r) {
    ProcessOptions options;
    options.env = std::map<std::string, std::string>{
        {"RANK", std::to_string(r)},       {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_RANK", std::to_string(r)}, {"LOCAL_WORLD_SIZE", std::to_string(world)},
        {"MASTER_ADDR", "127.0.0.1"},      {"MASTER_PORT", std::to_string(port)},
        {"PATH", "/usr/bin:/bin"},         {"OMP_NUM_THREADS", "1"},
        {"CUDA_VISIBLE_DEVICES", ""}};
    options.timeout = timeout;
    running.push_back(
        std::async(std::launch::async, [options, argv] { return RunProcess(argv, options); }));
  }
  std::vector<ProcessResult> results;
  for (auto& f : running) results.push_back(f.get());
  return results;
}

}  // namespace hetrun::testing
