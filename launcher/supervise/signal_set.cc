#include "supervise/signal_set.h"

#include <string.h>
#include <sys/signalfd.h>

#include <array>
#include <cerrno>

namespace hetrun::launcher {
namespace {

constexpr std::array<int, 6> kForwarded = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

}  // namespace

std::span<const int> ForwardedSignals() {
  return kForwarded;
}

bool IsShutdownSignal(int signal) {
  return signal == SIGTERM || signal == SIGINT || signal == SIGHUP || signal == SIGQUIT;
}

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

Result<std::unique_ptr<SignalSet>> SignalSet::Install() {
  std::unique_ptr<SignalSet> set(new SignalSet());
  sigset_t mask;
  sigemptyset(&mask);
  for (int signal : kForwarded) sigaddset(&mask, signal);
  sigaddset(&mask, SIGCHLD);
  sigset_t old_mask;
  if (sigprocmask(SIG_BLOCK, &mask, &old_mask) != 0) {
    return ErrnoError("sigprocmask", "block forwarded signals", errno);
  }
  int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return ErrnoError("signalfd", "forwarded signals", err);
  }
  set->fd_ = UniqueFd(fd);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (sigaction(SIGPIPE, &ignore, nullptr) != 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return ErrnoError("sigaction", "SIGPIPE", err);
  }
  return set;
}

SignalSet::~SignalSet() = default;  // the signals stay blocked (see the header)

Result<std::vector<int>> SignalSet::ReadPending() {
  std::vector<int> signals;
  signalfd_siginfo info[16];
  while (true) {
    ssize_t n = ::read(fd_.get(), info, sizeof(info));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      return ErrnoError("read", "signalfd", errno);
    }
    if (n == 0) break;
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(info[0]); ++i) {
      signals.push_back(static_cast<int>(info[i].ssi_signo));
    }
  }
  return signals;
}

}  // namespace hetrun::launcher
