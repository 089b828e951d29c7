// Replays a libFuzzer corpus through LLVMFuzzerTestOneInput without libFuzzer, so every build
// (gcc included) checks that no corpus input crashes the parser or makes it slow: a unit that
// runs longer than HETRUN_FUZZ_UNIT_SECONDS (default 20) fails the replay, as libFuzzer's
// -timeout does. The limit is far above what any input needs once parsing is linear (a few ms
// for the 1 MiB inputs) and far below what a quadratic parser took (26 s and more).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

char g_current[4096];  // the unit being replayed, for the SIGALRM handler

void OnAlarm(int) {
  static const char kMessage[] = "fuzz replay: unit too slow (HETRUN_FUZZ_UNIT_SECONDS): ";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)!write(STDERR_FILENO, g_current, strnlen(g_current, sizeof(g_current)));
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(1);
}

unsigned UnitSeconds() {
  const char* text = std::getenv("HETRUN_FUZZ_UNIT_SECONDS");  // NOLINT: a test program
  long value = text != nullptr ? std::atol(text) : 0;
  return value > 0 ? static_cast<unsigned>(value) : 20u;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const unsigned limit = UnitSeconds();
  ::signal(SIGALRM, OnAlarm);
  size_t count = 0;
  double slowest = 0;
  std::string slowest_name;
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[1], error)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::snprintf(g_current, sizeof(g_current), "%s", entry.path().c_str());
    auto start = std::chrono::steady_clock::now();
    alarm(limit);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    alarm(0);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > slowest) {
      slowest = seconds;
      slowest_name = entry.path().filename().string();
    }
    ++count;
  }
  if (error) {
    std::fprintf(stderr, "cannot read corpus %s: %s\n", argv[1], error.message().c_str());
    return 1;
  }
  std::printf("replayed %zu corpus inputs from %s; slowest %s, %.3f s (limit %u s)\n", count,
              argv[1], slowest_name.c_str(), slowest, limit);
  return count > 0 ? 0 : 1;
}
