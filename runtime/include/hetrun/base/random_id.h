// Random identifiers from the kernel's generator (getrandom(2)): run ids for --standalone jobs,
// as torchrun's uuid4.
#pragma once

#include <string>

#include "hetrun/base/status.h"

namespace hetrun {

/// A random (version 4, RFC 9562) UUID in its 36-character form,
/// "xxxxxxxx-xxxx-4xxx-Yxxx-xxxxxxxxxxxx". The call that fails is named.
Result<std::string> RandomUuid();

}  // namespace hetrun
