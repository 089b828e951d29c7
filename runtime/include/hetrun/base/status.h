// Errors as values: Status (a code and a message) and Result<T> (a value or a Status).
// No exception crosses a hetrun library boundary; the launcher's main.cc maps codes to exit codes.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hetrun {

/// What went wrong, chosen so the caller knows whether to retry. The launcher maps each code to
/// one exit code (docs/ARCHITECTURE.md §4.3); see ExitCodeFor() in hetrun/base/exit_code.h.
enum class StatusCode {
  kOk = 0,
  kUsage,               ///< bad command-line flags or arguments (exit 64)
  kInvalidArgument,     ///< bad or inconsistent environment, file or value (exit 78)
  kNotFound,            ///< a file, variable or key that must exist does not (exit 78)
  kUnavailable,         ///< transient: peer lost, connection refused; retry may succeed (exit 75)
  kDeadlineExceeded,    ///< transient: a timeout expired (exit 75)
  kArchMismatch,        ///< a GPU cannot run the image's kernels (exit 80)
  kResourceExhausted,   ///< GPU memory: the ceiling does not fit (exit 81)
  kFailedPrecondition,  ///< the system is not in a state the operation needs (exit 78)
  kInternal,            ///< a bug in hetrun or a failed system call (exit 70)
};

/// Short stable name of a code ("invalid argument"), used in messages and JSON.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// "invalid argument: RANK=7 ..." (or "ok").
  std::string ToString() const;

  /// A copy whose message is "context: message"; the code is kept.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status UsageError(std::string message);
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status ArchMismatchError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status InternalError(std::string message);

/// An error for a failed system call: "CALL(WHAT): strerror(errno)" with code kInternal, or
/// kNotFound / kInvalidArgument for ENOENT / EACCES-style errors on user-supplied paths.
Status ErrnoError(std::string_view call, std::string_view what, int err);

/// A value of type T, or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(state_).ok() && "Result built from an OK status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(state_);
  }

  T& value() & {
    assert(ok());
    return std::get<T>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace hetrun

#define HETRUN_CONCAT_INNER_(a, b) a##b
#define HETRUN_CONCAT_(a, b) HETRUN_CONCAT_INNER_(a, b)

/// Returns the Status of `expr` from the enclosing function when it is not OK.
#define HETRUN_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::hetrun::Status hetrun_status_ = (expr);        \
    if (!hetrun_status_.ok()) return hetrun_status_; \
  } while (0)

/// `HETRUN_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result, or returns its Status.
#define HETRUN_ASSIGN_OR_RETURN(lhs, expr) \
  HETRUN_ASSIGN_OR_RETURN_IMPL_(HETRUN_CONCAT_(hetrun_result_, __LINE__), lhs, expr)
#define HETRUN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
