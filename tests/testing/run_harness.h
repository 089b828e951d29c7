// Starts `hetrun run` as a real background process (output to files) so a test can signal it
// while it runs, then waits for it with a hard limit. Header-only: shared by run_*_test.cc.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "run_process.h"

namespace hetrun::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Lines of `path` (empty when missing).
inline std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// True when `pid` exists and is not a zombie.
inline bool ProcessAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!std::getline(stat, content)) return false;
  size_t paren = content.rfind(')');
  return paren != std::string::npos && paren + 2 < content.size() && content[paren + 2] != 'Z';
}

/// Polls `condition` every 10 ms until it holds or `limit` passes.
template <typename F>
bool WaitUntil(F condition, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

/// The environment hetrun runs with in these tests: like `env -i` plus PATH, TMPDIR, the
/// sanitizer options, and a termination log inside `dir`.
inline std::map<std::string, std::string> HetrunEnv(const std::string& dir) {
  std::map<std::string, std::string> env;
  for (const char* name : {"PATH", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* value = getenv(name)) env[name] = value;  // NOLINT: test harness
  }
  env["HETRUN_TERMINATION_LOG"] = dir + "/termination-log";
  return env;
}

/// Whether `hetrun ARGS` with `env` is a one-node run on torchrun's default port: nothing names
/// a port, a node count or another launcher's variables.
inline bool OnDefaultPort(const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env) {
  for (const char* other :
       {"env", "inspect", "check", "plan", "simulate", "vars", "exit-codes", "version"}) {
    if (!args.empty() && args[0] == other) return false;
  }
  for (const std::string& arg : args) {
    if (arg == "--") break;
    for (const char* flag : {"--nnodes", "--node-rank", "--node_rank", "--master",
                             "--rdzv-endpoint", "--rdzv_endpoint", "--standalone"}) {
      if (arg.rfind(flag, 0) == 0) return false;
    }
  }
  for (const auto& [name, value] : env) {
    for (const char* part : {"MASTER_PORT", "NNODES", "WORLD_SIZE", "VC_", "OMPI_", "PMI_RANK",
                             "SLURM_", "PET_", "JOBSET"}) {
      if (name.find(part) != std::string::npos) return false;
    }
  }
  return true;
}

/// The environment of a run: a one-node run on the default port gets a free port in
/// HETRUN_MASTER_PORT instead, since hetrun binds MASTER_PORT at start to host the store, and
/// tests (and the other checkouts on the machine) run in parallel.
inline std::map<std::string, std::string> WithFreePort(const std::vector<std::string>& args,
                                                       std::map<std::string, std::string> env) {
  if (OnDefaultPort(args, env)) env["HETRUN_MASTER_PORT"] = std::to_string(FreePort());
  return env;
}

/// TORCHELASTIC_USE_AGENT_STORE of a one-node run's workers: "True" when this build has the
/// rendezvous plugin (hetrun hosts the store, docs/ARCHITECTURE.md §2.4), else "False".
inline std::string OneNodeAgentStore() {
  const std::string plugin = std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so";
  return ::access(plugin.c_str(), R_OK) == 0 ? "True" : "False";
}

/// How hetrun is started beyond its arguments and environment.
struct Launch {
  int stdout_fd = -1;              ///< hetrun's stdout (e.g. a pipe nobody reads); -1 = a file
  std::vector<int> ignored{};      ///< signals hetrun starts with at SIG_IGN
  std::map<int, std::string> fds;  ///< extra descriptors hetrun inherits: fd -> file (read-only)
};

class HetrunProcess {
 public:
  /// Starts `hetrun ARGS...` with `env`; stdout and stderr go to files in `dir`.
  HetrunProcess(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                const std::string& dir, const std::string& tag = "hetrun",
                const Launch& launch = {})
      : out_path_(dir + "/" + tag + ".out"), err_path_(dir + "/" + tag + ".err") {
    std::vector<std::string> argv{HETRUN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : WithFreePort(args, env)) env_strings.push_back(k + "=" + v);
    std::vector<char*> c_argv, c_env;
    for (std::string& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    for (std::string& e : env_strings) c_env.push_back(e.data());
    c_env.push_back(nullptr);
    start_ = std::chrono::steady_clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int null = open("/dev/null", O_RDONLY);
      if (out < 0 || err < 0 || null < 0) _exit(125);
      dup2(null, 0);
      dup2(launch.stdout_fd >= 0 ? launch.stdout_fd : out, 1);
      dup2(err, 2);
      for (const auto& [fd, file] : launch.fds) {
        int opened = open(file.c_str(), O_RDONLY);
        if (opened < 0 || dup2(opened, fd) < 0) _exit(125);
      }
      for (int signal : launch.ignored) ::signal(signal, SIG_IGN);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execve(c_argv[0], c_argv.data(), c_env.data());
      _exit(127);
    }
  }
  ~HetrunProcess() {
    if (pid_ > 0 && exit_code_ < 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  HetrunProcess(const HetrunProcess&) = delete;
  HetrunProcess& operator=(const HetrunProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal) const { kill(pid_, signal); }

  /// Waits for hetrun to exit; returns its exit code (128+N for a signal), or -1 after `limit`
  /// (hetrun is then SIGKILLed).
  int Wait(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    if (exit_code_ >= 0) return exit_code_;
    auto end = start_ + limit;
    while (true) {
      int status = 0;
      pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        elapsed_ = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start_);
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      if (std::chrono::steady_clock::now() >= end) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        exit_code_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::chrono::milliseconds elapsed() const { return elapsed_; }
  std::string out() const { return ReadFile(out_path_); }
  std::string err() const { return ReadFile(err_path_); }

 private:
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds elapsed_{0};
};

/// `hetrun run --nproc-per-node N [extra...] -- worker_helper STEPS...`
inline std::vector<std::string> RunArgs(int nproc, const std::vector<std::string>& extra,
                                        const std::vector<std::string>& steps) {
  std::vector<std::string> args{"run", "--nproc-per-node", std::to_string(nproc)};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--");
  args.push_back(HETRUN_WORKER_HELPER);
  args.insert(args.end(), steps.begin(), steps.end());
  return args;
}

}  // namespace hetrun::testing
