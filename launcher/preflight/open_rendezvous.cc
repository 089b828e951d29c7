#include "preflight/open_rendezvous.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <thread>

#include "commands/setting.h"
#include "hetrun/base/units.h"
#include "preflight/torch_location.h"
#include "rendezvous/listen_socket.h"
#include "supervise/signal_set.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;

// Opens the store connection (node 0: hosts the server on the job's address) on a helper thread
// while this one watches the deadline and the signals: libtorch's connect retries for as long as
// it is told and cannot be interrupted.
Result<std::unique_ptr<Store>> ConnectInterruptibly(const StoreEndpoint& endpoint,
                                                    const RendezvousLibrary& library,
                                                    const RendezvousOptions& rdzv) {
  struct Attempt {
    std::mutex mutex;
    std::optional<Result<std::unique_ptr<Store>>> result;
  };
  auto attempt = std::make_shared<Attempt>();
  {
    SignalsBlockedForNewThreads blocked;  // the store's own threads inherit the mask too
    std::thread([attempt, endpoint, library] {
      Result<std::unique_ptr<Store>> store = OpenTcpStore(endpoint, library);
      std::lock_guard<std::mutex> lock(attempt->mutex);
      attempt->result = std::move(store);
    }).detach();
  }
  const auto deadline =
      std::chrono::steady_clock::now() + endpoint.connect_timeout + std::chrono::seconds(5);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(attempt->mutex);
      if (attempt->result) return std::move(*attempt->result);
    }
    if (int signal = rdzv.interrupted ? rdzv.interrupted() : 0; signal != 0) {
      NoteAbandonedThread();  // the connect (perhaps still inside dlopen) is left behind
      return UnavailableError("node " + std::to_string(rdzv.node_rank) + " received " +
                              SignalName(signal) + " while connecting to the rendezvous store at " +
                              rdzv.endpoint);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      NoteAbandonedThread();
      return DeadlineExceededError("connecting to the rendezvous store at " + rdzv.endpoint +
                                   " did not finish within " +
                                   FormatDuration(endpoint.connect_timeout));
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

}  // namespace

Result<std::unique_ptr<JobRendezvous>> OpenRendezvous(const Topology& topology,
                                                      const PreflightOptions& options,
                                                      const Environment& env) {
  const Membership membership = MembershipOf(topology);
  RendezvousOptions rdzv;
  rdzv.nnodes = membership.members;
  rdzv.node_rank = membership.member;
  rdzv.endpoint = topology.master_addr.value + ":" + std::to_string(topology.master_port.value);
  rdzv.timeout = options.rdzv_timeout;
  rdzv.peer_timeout = options.peer_timeout;
  rdzv.heartbeat_interval =
      std::min<milliseconds>(std::chrono::seconds(1), options.peer_timeout / 4);
  rdzv.sigterm_on_peer_failure = true;
  rdzv.interrupted = options.interrupted;
  HETRUN_ASSIGN_OR_RETURN(JobSecretSource secret, JobSecret(env));
  // The incarnation (Volcano's job version, JobSet's restart attempt, from the downward API)
  // complements node 0's nonce: a Job made again under the same name starts at 0 again.
  std::string job_id = options.job_id;
  for (const char* name : {"HETRUN_INCARNATION", "HETRUN_JOBSET_RESTART_ATTEMPT"}) {
    std::optional<std::string> incarnation = env.Get(name);
    if (!incarnation || incarnation->empty()) continue;
    job_id += "\nincarnation " + *incarnation;
    break;
  }
  rdzv.auth = RecordAuth(secret.secret, job_id, secret.source);
  if (job_id != options.job_id) {
    rdzv.any_incarnation = RecordAuth(secret.secret, options.job_id, secret.source);
  }
  // The plugin and its torch are checked first: a wrong torch exits 78 before any port is bound.
  HETRUN_ASSIGN_OR_RETURN(
      RendezvousLibrary library, FindRendezvousLibrary([&]() -> Result<std::filesystem::path> {
        HETRUN_ASSIGN_OR_RETURN(std::string dir, FindTorchPackageDir(options.python));
        return std::filesystem::path(dir);
      }));
  StoreEndpoint endpoint{topology.master_addr.value, topology.master_port.value,
                         membership.member == 0, options.rdzv_timeout};
  endpoint.library_warnings = spdlog::should_log(spdlog::level::debug);
  if (endpoint.is_server) {
    HETRUN_ASSIGN_OR_RETURN(endpoint.listen_fd, ListenOnJobAddress(endpoint.host, endpoint.port));
  }
  Result<std::unique_ptr<Store>> store = ConnectInterruptibly(endpoint, library, rdzv);
  if (!store.ok()) {
    if (store.status().code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceededError(
          "rendezvous: could not reach the store of node 0 at " + rdzv.endpoint + " within " +
          FormatDuration(options.rdzv_timeout) +
          " (node ranks joined: unknown; node 0 missing): " + store.status().message());
    }
    return store.status();
  }
  return std::make_unique<JobRendezvous>(std::move(*store), std::move(rdzv));
}

}  // namespace hetrun::launcher
