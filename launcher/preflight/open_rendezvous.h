// The rendezvous connection of a job with more than one launcher (docs/ARCHITECTURE.md §2.2,
// step 2): the plugin and its torch checked, node 0's port bound, the store reached on a helper
// thread while the caller's thread watches the deadline and the shutdown signals.
#pragma once

#include <signal.h>

#include <memory>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/job/topology.h"
#include "preflight/preflight.h"
#include "rendezvous/job_rendezvous.h"

namespace hetrun::launcher {

// Threads started while this lives (the TCPStore server's, the heartbeat) inherit a mask that
// blocks every signal: process-directed signals then reach the main thread, whose supervisor
// reads them from a signalfd, instead of killing hetrun through a thread's default action.
class SignalsBlockedForNewThreads {
 public:
  SignalsBlockedForNewThreads() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~SignalsBlockedForNewThreads() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsBlockedForNewThreads(const SignalsBlockedForNewThreads&) = delete;
  SignalsBlockedForNewThreads& operator=(const SignalsBlockedForNewThreads&) = delete;

 private:
  sigset_t old_;
};

/// Opens this launcher's JobRendezvous: the job secret and incarnation, the rendezvous plugin
/// (78 for a torch of another release), node 0's listening socket, then the store connection,
/// interruptible by a shutdown signal (UnavailableError) and bounded by --rdzv-timeout
/// (DeadlineExceededError naming node 0's address).
Result<std::unique_ptr<JobRendezvous>> OpenRendezvous(const Topology& topology,
                                                      const PreflightOptions& options,
                                                      const Environment& env);

}  // namespace hetrun::launcher
