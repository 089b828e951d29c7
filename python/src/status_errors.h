// hetrun's errors are values (hetrun/base/status.h); at the Python boundary they become the
// exceptions a Python user expects: ValueError for bad input (a bad variable, option or value),
// RuntimeError for everything else. The message is the Status's, which names the bad value.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "hetrun/base/status.h"

namespace hetrun::python {

/// Throws the Python exception for a non-OK status; returns for OK.
void ThrowIfError(const Status& status);

/// The value of `result`, or the Python exception for its status.
template <typename T>
T ValueOrThrow(Result<T> result) {
  ThrowIfError(result.status());
  return std::move(*result);
}

}  // namespace hetrun::python
