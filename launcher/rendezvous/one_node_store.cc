#include "rendezvous/one_node_store.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "rendezvous/rendezvous_api.h"

namespace hetrun::launcher {

struct OneNodeStore::Shared {
  mutable std::mutex mutex;
  bool started = false;
  bool done = false;
  bool armed = false;
  std::optional<Status> failure;
  std::unique_ptr<Store> store;  ///< the server's own connection: the server lives with it
  StorePort port;                ///< held until the process ends (the blockers too)
};

namespace {

// The server thread: libtorch loaded and the TCPStore server up on a copy of the held socket
// (c10d takes that copy over). A failure shuts the socket down (waiting workers are refused)
// and, once armed, raises SIGTERM so the supervisor stops the workers.
void ServeStore(const std::shared_ptr<OneNodeStore::Shared>& shared, StoreEndpoint endpoint,
                RendezvousLibrary library) {
  const auto started = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Store>> store = OpenTcpStore(endpoint, library);
  std::lock_guard<std::mutex> lock(shared->mutex);
  shared->done = true;
  if (store.ok()) {
    shared->store = std::move(*store);
    spdlog::info("store up at {}:{} in {} ms (beside the workers)", endpoint.host, endpoint.port,
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - started)
                     .count());
    return;
  }
  shared->failure = FailedPreconditionError("the store hetrun hosts at " + endpoint.host + ":" +
                                            std::to_string(endpoint.port) +
                                            " did not come up: " + store.status().message());
  // c10d's copy may be closed or not: never closed here (its number may be reused by now).
  ::shutdown(shared->port.listen_fd(), SHUT_RDWR);
  spdlog::error("{}; stopping the workers", shared->failure->message());
  if (shared->armed) ::kill(::getpid(), SIGTERM);
}

}  // namespace

OneNodeStore::OneNodeStore(std::string host, StorePort port)
    : host_(std::move(host)), port_number_(port.port()), shared_(std::make_shared<Shared>()) {
  shared_->port = std::move(port);
}

OneNodeStore::~OneNodeStore() {
  std::unique_ptr<Store> store;  // destroyed here, on this thread, after the lock is released
  std::lock_guard<std::mutex> lock(shared_->mutex);
  if (shared_->started && !shared_->done) NoteAbandonedThread();
  store = std::move(shared_->store);
}

bool OneNodeStore::Start(const TorchDirLookup& lookup, bool library_warnings) {
  Result<RendezvousLibrary> library = FindRendezvousLibrary(lookup);
  if (!library.ok()) {
    spdlog::info(
        "no store hosted ({}); port {} was free and rank 0 binds it "
        "(TORCHELASTIC_USE_AGENT_STORE=False)",
        library.status().message(), port_number_);
    shared_->port.Release();
    return false;
  }
  StoreEndpoint endpoint{host_, port_number_, true, std::chrono::seconds(60)};
  endpoint.library_warnings = library_warnings;
  std::lock_guard<std::mutex> lock(shared_->mutex);
  endpoint.listen_fd = ::fcntl(shared_->port.listen_fd(), F_DUPFD_CLOEXEC, 0);
  if (endpoint.listen_fd < 0) {
    spdlog::warn("fcntl(F_DUPFD_CLOEXEC) of the store's socket: {}; no store hosted",
                 std::strerror(errno));
    shared_->port.Release();
    return false;
  }
  shared_->started = true;
  // The server's threads inherit this mask: hetrun's signals stay with the supervisor's
  // signalfd.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::thread(ServeStore, shared_, endpoint, *library).detach();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return true;
}

void OneNodeStore::Arm() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->armed = true;
  if (shared_->failure) ::kill(::getpid(), SIGTERM);
}

std::optional<Status> OneNodeStore::Failure() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->failure;
}

}  // namespace hetrun::launcher
