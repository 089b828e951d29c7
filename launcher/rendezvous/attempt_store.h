// The store an attempt after the first meets at (docs/ARCHITECTURE.md §5.9): the store hetrun
// hosts keeps the keys of the attempts before, and torch adds no per-attempt prefix under the
// agent's store (torchrun's agent makes a new store for every attempt instead), so a worker of a
// later attempt could read a dead peer's address and Gloo would connect to a closed port or wait
// for ever. Node 0's hetrun therefore hosts a new store for every attempt after the first, on a
// fresh port bound from the moment it is picked (a OneNodeStore on a StorePort), and the other
// nodes learn the port at the attempt barrier (JobRendezvous::BeginAttempt).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "hetrun/base/status.h"
#include "rendezvous/plugin_torch.h"

namespace hetrun::launcher {

class OneNodeStore;

/// Where the workers of an attempt meet.
struct AttemptMeeting {
  int port = 0;        ///< their MASTER_PORT
  bool hosted = true;  ///< node 0's hetrun hosts it (TORCHELASTIC_USE_AGENT_STORE=True); false:
                       ///< no plugin, rank 0 binds the port (free since hetrun picked it)

  /// "PORT hosted" / "PORT rank0", as the attempt barrier carries it.
  std::string Text() const;
  static std::optional<AttemptMeeting> FromText(const std::string& text);
};

class AttemptStores {
 public:
  /// `host`: MASTER_ADDR (a name of this machine, else every interface is bound).
  AttemptStores(std::string host, TorchDirLookup lookup, bool library_warnings);
  ~AttemptStores();
  AttemptStores(const AttemptStores&) = delete;
  AttemptStores& operator=(const AttemptStores&) = delete;

  /// A new store on a fresh free port, coming up on its own thread; the store of the attempt
  /// before stays up until Commit (the other nodes' workers of that attempt may still be
  /// finishing). Without the plugin the port is released and `hosted` is false.
  Result<AttemptMeeting> Open();
  /// The attempt starts: the store opened last replaces the one before, which closes.
  void Commit();

 private:
  std::string host_;
  TorchDirLookup lookup_;
  bool library_warnings_ = false;
  std::unique_ptr<OneNodeStore> current_;
  std::unique_ptr<OneNodeStore> next_;
};

}  // namespace hetrun::launcher
