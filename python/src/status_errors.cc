#include "status_errors.h"

#include <stdexcept>

namespace hetrun::python {

void ThrowIfError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return;
    case StatusCode::kUsage:
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      throw pybind11::value_error(status.ToString());
    default:
      throw std::runtime_error(status.ToString());  // pybind11 maps it to RuntimeError
  }
}

}  // namespace hetrun::python
