#include "rendezvous/attempt_store.h"

#include <spdlog/spdlog.h>

#include "hetrun/base/units.h"
#include "rendezvous/one_node_store.h"
#include "rendezvous/store_port.h"

namespace hetrun::launcher {

std::string AttemptMeeting::Text() const {
  return std::to_string(port) + (hosted ? " hosted" : " rank0");
}

std::optional<AttemptMeeting> AttemptMeeting::FromText(const std::string& text) {
  const size_t space = text.find(' ');
  if (space == std::string::npos) return std::nullopt;
  Result<int64_t> port = ParseIntInRange(text.substr(0, space), 1, 65535);
  const std::string how = text.substr(space + 1);
  if (!port.ok() || (how != "hosted" && how != "rank0")) return std::nullopt;
  return AttemptMeeting{static_cast<int>(*port), how == "hosted"};
}

AttemptStores::AttemptStores(std::string host, TorchDirLookup lookup, bool library_warnings)
    : host_(std::move(host)), lookup_(std::move(lookup)), library_warnings_(library_warnings) {}

AttemptStores::~AttemptStores() = default;

Result<AttemptMeeting> AttemptStores::Open() {
  next_.reset();  // one opened for an attempt that never started (its barrier failed)
  HETRUN_ASSIGN_OR_RETURN(StorePort port, StorePort::Hold(host_, 0, StorePort()));
  const int number = port.port();
  auto store = std::make_unique<OneNodeStore>(host_, std::move(port));
  AttemptMeeting meeting{number, store->Start(lookup_, library_warnings_)};
  if (meeting.hosted) store->Arm();  // the supervisor reads its signals already
  next_ = std::move(store);
  return meeting;
}

void AttemptStores::Commit() {
  if (!next_) return;
  current_ = std::move(next_);
}

}  // namespace hetrun::launcher
