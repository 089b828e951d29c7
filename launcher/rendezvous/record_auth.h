// Authenticated records for hetrun's own keys in the rendezvous store. With a per-job secret
// (HETRUN_JOB_SECRET, or the file named by HETRUN_JOB_SECRET_FILE) every record hetrun writes
// carries an HMAC-SHA256 over the job id, the session (the nonce node 0 publishes at the start
// of each rendezvous: WithSession), the full key and the payload, so a record cannot be forged,
// nor replayed under another key, by another job, or into a later incarnation of the same job;
// the keys also live under a prefix derived from the secret, which a client without it cannot
// name. A record that fails verification is logged by the caller and ignored, never acted on.
//
// Without a secret, records are plain text and anyone who can reach the store port can write
// them (hetrun logs that once). Either way a record above kMaxRecordBytes is refused unread
// (the store server itself still holds whatever a client sends it: see
// docs/explanation/reliability.md).
#pragma once

#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

class RecordAuth {
 public:
  /// The largest record hetrun accepts from the store (its node records are a few KiB).
  static constexpr size_t kMaxRecordBytes = size_t{1} << 20;

  RecordAuth() = default;  ///< no secret: plain records
  /// `job_id` ties the records to one job (the run id; "none" when not set, plus the incarnation
  /// when the pod knows it). `source` says where the secret came from, for messages (the
  /// variable or the file, never the secret).
  RecordAuth(std::string secret, std::string job_id, std::string source = "");

  /// The same secret and job, with every MAC also over `session` (node 0's rendezvous nonce).
  /// The key prefix stays the same, so the nonce record itself is found under it.
  RecordAuth WithSession(std::string session) const;

  bool enabled() const { return !secret_.empty(); }
  const std::string& source() const { return source_; }
  const std::string& job_id() const { return job_id_; }
  /// Whether `record` carries a MAC (was sealed by a launcher with some secret).
  static bool Sealed(const std::string& record);
  /// "hetrun/" without a secret; "hetrun/<16 hex digits derived from the secret>/" with one.
  const std::string& key_prefix() const { return key_prefix_; }

  /// A key for records that other processes of the job seal (the collective check's probes):
  /// HMAC-SHA256 over the job id, the session and `purpose`, in hex; "" without a secret.
  std::string DerivedKey(const std::string& purpose) const;

  /// The record to store at `key`: the payload, plus "\n#hmac-sha256:<hex>" with a secret.
  std::string Seal(const std::string& key, const std::string& payload) const;
  /// The payload of `record` read from `key`; kInvalidArgument when it is too large or, with a
  /// secret, carries no valid MAC for this job and key.
  Result<std::string> Open(const std::string& key, const std::string& record) const;

 private:
  std::string Mac(const std::string& key, const std::string& payload) const;

  std::string secret_;
  std::string job_id_;
  std::string source_;
  std::string session_;
  std::string key_prefix_ = "hetrun/";
};

/// The job's secret and where it came from.
struct JobSecretSource {
  std::string secret;  ///< "" without one
  std::string source;  ///< "HETRUN_JOB_SECRET", "HETRUN_JOB_SECRET_FILE=PATH" or "no job secret"
};

/// The job's secret: HETRUN_JOB_SECRET, else the contents of HETRUN_JOB_SECRET_FILE (a trailing
/// newline dropped), else "". An unreadable or empty file is an error naming it.
Result<JobSecretSource> JobSecret(const Environment& env);

}  // namespace hetrun::launcher
