// A worker for supervision tests: runs a list of steps, each one a name and its arguments.
// A step written "rN:step" runs only on the worker whose RANK is N, "cN:step" only when
// TORCHELASTIC_RESTART_COUNT is N. Steps:
//   exit CODE            exit with CODE
//   kill SIGNAL          kill itself with signal number SIGNAL
//   sleep MS             sleep MS milliseconds
//   out TEXT / err TEXT  write TEXT and a newline to stdout / stderr
//   ignore SIGNAL        ignore signal number SIGNAL from now on
//   trap FILE MS CODE    append "ready" to FILE, then wait for signals, appending each one's
//                        number; on the first SIGTERM/SIGINT/SIGHUP/SIGQUIT "checkpoint" for MS
//                        ms (still recording signals), append "done" and exit CODE
//   orphan FILE N        fork N children that ignore SIGTERM and sleep; append their pids to FILE
//   daemon FILE N        leave N orphaned grandchildren that exit after 100 ms; append their pids
//   pid FILE             append this process's pid to FILE
//   checkpoint DIR       a re-plan checkpoint (docs/how-to/replan-restart.md): DIR/ckpt-<pid>/
//                        .metadata, then DIR/hetrun-latest naming ckpt-<pid> (atomic replace)
//   env NAME...          print NAME=VALUE (or NAME unset) for each name, one a line
//   beat COUNT MS        beat COUNT times (hetrun::Beat), MS milliseconds apart
//   tune WINDOWS MS      a one-rank tuner loop (hetrun::tuner::WindowLoop, windows of 2 steps)
//                        of WINDOWS windows, each step sleeping MS ms; then print "tuned"
//   grandorphan FILE     fork a child that leaves the worker's session (setsid) and forks a
//                        grandchild; the grandchild appends "ready" to FILE, then on SIGTERM
//                        appends "15" and exits; the child sleeps (SIGTERM kills it, and only
//                        then is the grandchild re-parented to hetrun)
//   measure WINDOWS      a pipeline rank's MeasurementLog (layout from HETRUN_PLAN): WINDOWS
//                        windows of forward 1 + RANK ms, backward twice that; then "measured"
//   badmeasure           write a corrupt measurements file for this rank (not JSON)
//   fds                  print "fds" and every open descriptor number
//   signals              print "ignored" and every ignored signal number, then "blocked" and
//                        every blocked one
// Without an exit step the helper exits 0 after the last step.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hetrun/base/atomic_file.h"
#include "hetrun/base/env.h"
#include "hetrun/job/heartbeat.h"
#include "hetrun/pipeline/measurements.h"
#include "hetrun/tuner/window_loop.h"

namespace {

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void AppendLine(const char* path, const std::string& line) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(path);
    _exit(90);
  }
  std::string text = line + "\n";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) _exit(91);
  close(fd);
}

[[noreturn]] void Trap(const char* file, long delay_ms, int code) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  AppendLine(file, "ready");
  bool stopping = false;
  timespec deadline{};
  while (true) {
    int signal = 0;
    if (!stopping) {
      if (sigwait(&set, &signal) != 0) continue;
    } else {
      // "Checkpointing": keep recording signals that arrive until the deadline.
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      long left_ms =
          (deadline.tv_sec - now.tv_sec) * 1000 + (deadline.tv_nsec - now.tv_nsec) / 1000000;
      if (left_ms <= 0) break;
      timespec wait{left_ms / 1000, (left_ms % 1000) * 1000000L};
      signal = sigtimedwait(&set, nullptr, &wait);
      if (signal < 0) continue;
    }
    AppendLine(file, std::to_string(signal));
    if (stopping || signal == SIGUSR1 || signal == SIGUSR2) continue;
    stopping = true;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += delay_ms / 1000;
    deadline.tv_nsec += (delay_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  AppendLine(file, "done");
  _exit(code);
}

void GrandOrphan(const char* file) {
  pid_t child = fork();
  if (child == 0) {
    setsid();
    pid_t grandchild = fork();
    if (grandchild == 0) {
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      sigprocmask(SIG_BLOCK, &term, nullptr);
      AppendLine(file, "ready");
      int signal = 0;
      sigwait(&term, &signal);
      AppendLine(file, std::to_string(signal));
      _exit(0);
    }
    SleepMs(600'000);
    _exit(0);
  }
  for (int k = 0; k < 2000; ++k) {  // wait for the grandchild's "ready"
    FILE* in = fopen(file, "r");
    char line[16] = {};
    bool ready = in != nullptr && fgets(line, sizeof line, in) != nullptr;
    if (in != nullptr) fclose(in);
    if (ready) return;
    SleepMs(10);
  }
}

void PrintFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) _exit(95);
  std::string line = "fds";
  std::vector<int> fds;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    int fd = atoi(entry->d_name);
    if (fd != dirfd(dir)) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  for (int fd : fds) line += " " + std::to_string(fd);
  printf("%s\n", line.c_str());
  fflush(stdout);
}

void PrintSignals() {
  std::string ignored = "ignored", blocked = "blocked";
  sigset_t mask;
  sigprocmask(SIG_BLOCK, nullptr, &mask);
  for (int signal = 1; signal < 32; ++signal) {
    struct sigaction action {};
    if (sigaction(signal, nullptr, &action) == 0 && action.sa_handler == SIG_IGN) {
      ignored += " " + std::to_string(signal);
    }
    if (sigismember(&mask, signal) == 1) blocked += " " + std::to_string(signal);
  }
  printf("%s\n%s\n", ignored.c_str(), blocked.c_str());
  fflush(stdout);
}

}  // namespace

// The tuner loop of a one-rank job: every window boundary writes the rank's metrics file under
// hetrun run (hetrun/tuner/rank_metrics.h).
bool Tune(int windows, long ms) {
  hetrun::tuner::WindowLoopOptions options;
  options.batch = 8;
  options.controller.window = 2;
  hetrun::Result<hetrun::tuner::WindowLoop> loop = hetrun::tuner::WindowLoop::Create(options, 0, 1);
  if (!loop.ok()) {
    fprintf(stderr, "worker_helper: %s\n", loop.status().ToString().c_str());
    return false;
  }
  auto gather = [](std::span<const std::byte> mine) -> hetrun::Result<std::vector<std::byte>> {
    return std::vector<std::byte>(mine.begin(), mine.end());
  };
  for (int step = 0; step < windows * 2; ++step) {
    SleepMs(ms);
    hetrun::tuner::Observation measured{loop->local_share(), static_cast<double>(ms)};
    auto report = loop->EndIteration({&measured, 1}, {static_cast<double>(ms), 0, 0}, gather);
    if (!report.ok()) {
      fprintf(stderr, "worker_helper: %s\n", report.status().ToString().c_str());
      return false;
    }
  }
  printf("tuned\n");
  fflush(stdout);
  return true;
}

bool Measure(int rank, int windows) {
  hetrun::Environment env = hetrun::Environment::FromProcess();
  std::optional<std::string> plan = env.Get("HETRUN_PLAN");
  auto layout = hetrun::pipeline::LoadJobLayout(plan ? *plan : "");
  if (!layout.ok()) {
    fprintf(stderr, "worker_helper: %s\n", layout.status().ToString().c_str());
    return false;
  }
  auto log = hetrun::pipeline::MeasurementLog::FromEnvironment(env, *layout, rank);
  if (!log.ok()) return false;
  const hetrun::pipeline::StageLayout& stage =
      layout->stages[static_cast<size_t>(layout->StageOf(rank))];
  for (int w = 0; w < windows; ++w) {
    double forward = 1.0 + rank;
    hetrun::Status appended = log->Append({w,
                                           layout->revision,
                                           stage.first_layer,
                                           stage.layers,
                                           4,
                                           layout->micro_batches,
                                           forward,
                                           2 * forward,
                                           {}});
    if (!appended.ok()) {
      fprintf(stderr, "worker_helper: %s\n", appended.ToString().c_str());
      return false;
    }
  }
  printf("measured %s\n", log->path().c_str());
  fflush(stdout);
  return true;
}

void PublishCheckpoint(const std::string& dir) {
  const std::string name = "ckpt-" + std::to_string(getpid());
  mkdir((dir + "/" + name).c_str(), 0755);
  AppendLine((dir + "/" + name + "/.metadata").c_str(), "dcp");
  if (!hetrun::WriteFileAtomically(dir + "/hetrun-latest", name + "\n", "checkpoint pointer")
           .ok()) {
    _exit(93);
  }
}

int main(int argc, char** argv) {
  const char* rank_text = getenv("RANK");  // NOLINT: a test program, not hetrun
  int rank = rank_text ? atoi(rank_text) : -1;
  const char* restart_text = getenv("TORCHELASTIC_RESTART_COUNT");  // NOLINT
  int restart = restart_text ? atoi(restart_text) : -1;
  for (int i = 1; i < argc;) {
    std::string step = argv[i++];
    bool mine = true;
    if (step.size() > 2 && (step[0] == 'r' || step[0] == 'c') &&
        step.find(':') != std::string::npos) {
      int wanted = atoi(step.c_str() + 1);
      mine = wanted == (step[0] == 'r' ? rank : restart);
      step = step.substr(step.find(':') + 1);
    }
    auto arg = [&](int k) -> const char* {
      if (i + k >= argc) {
        fprintf(stderr, "worker_helper: step %s needs more arguments\n", step.c_str());
        _exit(92);
      }
      return argv[i + k];
    };
    if (step == "exit") {
      int code = atoi(arg(0));
      i += 1;
      if (mine) _exit(code);
    } else if (step == "kill") {
      int signal = atoi(arg(0));
      i += 1;
      if (mine) kill(getpid(), signal);
      if (mine) SleepMs(10'000);
    } else if (step == "sleep") {
      long ms = atol(arg(0));
      i += 1;
      if (mine) SleepMs(ms);
    } else if (step == "out" || step == "err") {
      const char* text = arg(0);
      i += 1;
      if (mine) fprintf(step == "out" ? stdout : stderr, "%s\n", text);
      fflush(nullptr);
    } else if (step == "ignore") {
      int signal = atoi(arg(0));
      i += 1;
      if (mine) ::signal(signal, SIG_IGN);
    } else if (step == "trap") {
      const char* file = arg(0);
      long ms = atol(arg(1));
      int code = atoi(arg(2));
      i += 3;
      if (mine) Trap(file, ms, code);
    } else if (step == "orphan") {
      const char* file = arg(0);
      int n = atoi(arg(1));
      i += 2;
      for (int k = 0; mine && k < n; ++k) {
        pid_t pid = fork();
        if (pid == 0) {
          signal(SIGTERM, SIG_IGN);
          SleepMs(600'000);
          _exit(0);
        }
        AppendLine(file, std::to_string(pid));
      }
    } else if (step == "daemon") {
      // Orphans that die on their own: each intermediate child exits at once, so its child is
      // re-parented to hetrun (the subreaper) and must be reaped there.
      const char* file = arg(0);
      int n = atoi(arg(1));
      i += 2;
      for (int k = 0; mine && k < n; ++k) {
        pid_t middle = fork();
        if (middle == 0) {
          pid_t grandchild = fork();
          if (grandchild == 0) {
            SleepMs(100);
            _exit(0);
          }
          AppendLine(file, std::to_string(grandchild));
          _exit(0);
        }
        while (waitpid(middle, nullptr, 0) < 0) {
        }
      }
    } else if (step == "pid" || step == "checkpoint") {
      const char* file = arg(0);
      i += 1;
      if (mine && step == "pid") AppendLine(file, std::to_string(getpid()));
      if (mine && step == "checkpoint") PublishCheckpoint(file);
    } else if (step == "env") {
      for (; i < argc && argv[i][0] >= 'A' && argv[i][0] <= 'Z'; ++i) {
        const char* value = getenv(argv[i]);  // NOLINT
        if (mine) printf("%s%s%s\n", argv[i], value ? "=" : " unset", value ? value : "");
      }
      fflush(stdout);
    } else if (step == "tune") {
      int windows = atoi(arg(0));
      long ms = atol(arg(1));
      i += 2;
      if (mine && !Tune(windows, ms)) _exit(94);
    } else if (step == "beat") {
      int count = atoi(arg(0));
      long ms = atol(arg(1));
      i += 2;
      hetrun::Environment env = hetrun::Environment::FromProcess();
      for (int k = 0; mine && k < count; ++k) {
        hetrun::Status beat = hetrun::Beat(env);
        if (!beat.ok()) {
          fprintf(stderr, "worker_helper: %s\n", beat.ToString().c_str());
          _exit(93);
        }
        SleepMs(ms);
      }
    } else if (step == "grandorphan") {
      const char* file = arg(0);
      i += 1;
      if (mine) GrandOrphan(file);
    } else if (step == "measure") {
      int windows = atoi(arg(0));
      i += 1;
      if (mine && !Measure(rank, windows)) _exit(95);
    } else if (step == "badmeasure") {
      std::optional<std::string> dir = hetrun::Environment::FromProcess().Get("HETRUN_RUN_DIR");
      std::string path = hetrun::pipeline::RankMeasurementsPath(dir ? *dir : ".", rank);
      mkdir(path.substr(0, path.rfind('/')).c_str(), 0700);
      if (mine && !hetrun::WriteFileAtomically(path, "{not json", "test").ok()) _exit(96);
    } else if (step == "fds") {
      if (mine) PrintFds();
    } else if (step == "signals") {
      if (mine) PrintSignals();
    } else {
      fprintf(stderr, "worker_helper: unknown step '%s'\n", step.c_str());
      return 94;
    }
  }
  return 0;
}
