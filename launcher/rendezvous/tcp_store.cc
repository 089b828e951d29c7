// libhetrun_rendezvous.so: launcher/rendezvous/rendezvous_api.h's Store over libtorch's
// c10d::TCPStore. Every c10 exception is caught here: none crosses into the launcher.
#include <c10/util/Logging.h>

#include <atomic>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "rendezvous/rendezvous_api.h"

namespace hetrun::launcher {
namespace {

std::vector<uint8_t> Bytes(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::string Text(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// c10d reports a timeout as c10::DistStoreError / DistNetworkError with "timeout" in the
// message, and a lost peer as DistNetworkError; anything else is unexpected.
Status FromException(const std::string& what, const std::exception& e) {
  std::string message = e.what();
  // Keep the first line: c10 appends a C++ stack trace.
  if (size_t nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
  std::string text = "TCPStore " + what + ": " + message;
  if (message.find("imeout") != std::string::npos ||
      message.find("timed out") != std::string::npos) {
    return DeadlineExceededError(text);
  }
  return UnavailableError(text);
}

class TcpStore final : public Store {
 public:
  explicit TcpStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  uint64_t RequestCount() const override { return requests_.load(); }

  Status Set(const std::string& key, const std::string& value) override {
    try {
      requests_ += 1;
      store_->set(key, Bytes(value));
      return Status::Ok();
    } catch (const std::exception& e) {
      return FromException("set " + key, e);
    }
  }

  Result<std::string> Get(const std::string& key) override {
    try {
      requests_ += 1;
      if (!store_->check({key})) return NotFoundError("store key " + key + " is not set");
      requests_ += 1;
      return Text(store_->get(key));
    } catch (const std::exception& e) {
      return FromException("get " + key, e);
    }
  }

  Result<std::string> SetIfAbsent(const std::string& key, const std::string& desired) override {
    try {
      requests_ += 1;
      // compareSet with an empty expected value sets a missing key and returns the stored value.
      return Text(store_->compareSet(key, {}, Bytes(desired)));
    } catch (const std::exception& e) {
      return FromException("compareSet " + key, e);
    }
  }

  Result<std::string> CompareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) override {
    try {
      requests_ += 1;
      return Text(store_->compareSet(key, Bytes(expected), Bytes(desired)));
    } catch (const std::exception& e) {
      return FromException("compareSet " + key, e);
    }
  }

  Result<int64_t> Add(const std::string& key, int64_t delta) override {
    try {
      requests_ += 1;
      return store_->add(key, delta);
    } catch (const std::exception& e) {
      return FromException("add " + key, e);
    }
  }

  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    try {
      requests_ += 1;
      store_->wait(keys, timeout);
      return Status::Ok();
    } catch (const std::exception& e) {
      return FromException("wait", e);
    }
  }

  Result<bool> Check(const std::vector<std::string>& keys) override {
    try {
      requests_ += 1;
      return store_->check(keys);
    } catch (const std::exception& e) {
      return FromException("check", e);
    }
  }

  Result<std::unique_ptr<Store>> Clone() override {
    try {
      return std::unique_ptr<Store>(std::make_unique<TcpStore>(store_->clone()));
    } catch (const std::exception& e) {
      return FromException("clone", e);
    }
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::atomic<uint64_t> requests_{0};
};

}  // namespace
}  // namespace hetrun::launcher

extern "C" __attribute__((visibility("default"))) int hetrun_open_tcp_store_v2(
    const hetrun::launcher::StoreEndpoint* endpoint, hetrun::launcher::Store** store,
    std::string* error) {
  using namespace hetrun::launcher;
  try {
    // c10 level 2 = ERROR: c10d's warnings (a line for every timed-out wait slice) stay quiet.
    if (!endpoint->library_warnings) FLAGS_caffe2_log_level = std::max(FLAGS_caffe2_log_level, 2);
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(endpoint->port);
    options.isServer = endpoint->is_server;
    options.waitWorkers = false;  // hetrun's rendezvous counts nodes itself, with a listing
    options.timeout = endpoint->connect_timeout;
    if (endpoint->is_server && endpoint->listen_fd >= 0)
      options.masterListenFd = endpoint->listen_fd;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(endpoint->host, options);
    *store = new TcpStore(std::move(tcp));
    return 0;
  } catch (const std::exception& e) {
    hetrun::Status status = FromException(
        std::string(endpoint->is_server ? "server on port " : "connect to ") +
            (endpoint->is_server ? "" : endpoint->host + ":") + std::to_string(endpoint->port),
        e);
    *error = status.message();
    return static_cast<int>(status.code());
  }
}
