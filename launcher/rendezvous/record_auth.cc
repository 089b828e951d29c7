#include "rendezvous/record_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace hetrun::launcher {
namespace {

constexpr const char* kMacTag = "\n#hmac-sha256:";
constexpr size_t kMaxSecretFileBytes = 64 * 1024;

std::string Hex(const unsigned char* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

// HMAC-SHA256(secret, message) in hex; "" when OpenSSL fails (never verifies).
std::string HmacHex(const std::string& secret, const std::string& message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &length) == nullptr) {
    return "";
  }
  return Hex(mac, length);
}

}  // namespace

RecordAuth::RecordAuth(std::string secret, std::string job_id, std::string source)
    : secret_(std::move(secret)), job_id_(std::move(job_id)), source_(std::move(source)) {
  if (!secret_.empty()) {
    key_prefix_ = "hetrun/" + HmacHex(secret_, "hetrun key prefix\n" + job_id_).substr(0, 16) + "/";
  }
}

RecordAuth RecordAuth::WithSession(std::string session) const {
  RecordAuth copy = *this;
  copy.session_ = std::move(session);
  return copy;
}

bool RecordAuth::Sealed(const std::string& record) {
  return record.rfind(kMacTag) != std::string::npos;
}

std::string RecordAuth::Mac(const std::string& key, const std::string& payload) const {
  // Lengths first: no two (job id, session, key, payload) tuples give the same message.
  std::string message = "hetrun record v2\n" + std::to_string(job_id_.size()) + ":" + job_id_ +
                        std::to_string(session_.size()) + ":" + session_ +
                        std::to_string(key.size()) + ":" + key + payload;
  return HmacHex(secret_, message);
}

std::string RecordAuth::DerivedKey(const std::string& purpose) const {
  if (!enabled()) return "";
  return HmacHex(secret_, "hetrun derived key v1\n" + std::to_string(job_id_.size()) + ":" +
                              job_id_ + std::to_string(session_.size()) + ":" + session_ + purpose);
}

std::string RecordAuth::Seal(const std::string& key, const std::string& payload) const {
  if (!enabled()) return payload;
  return payload + kMacTag + Mac(key, payload);
}

Result<std::string> RecordAuth::Open(const std::string& key, const std::string& record) const {
  if (record.size() > kMaxRecordBytes) {
    return InvalidArgumentError("record at " + key + " is " + std::to_string(record.size()) +
                                " bytes, over the " + std::to_string(kMaxRecordBytes) +
                                "-byte limit");
  }
  if (!enabled()) return record;
  size_t at = record.rfind(kMacTag);
  if (at == std::string::npos) {
    return InvalidArgumentError("record at " + key +
                                " carries no HMAC (not written by a "
                                "launcher of this job)");
  }
  std::string payload = record.substr(0, at);
  std::string expected = Mac(key, payload);
  std::string given = record.substr(at + std::string(kMacTag).size());
  if (expected.empty() || given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    return InvalidArgumentError("record at " + key +
                                " failed HMAC verification (forged, "
                                "replayed, or written with another secret)");
  }
  return payload;
}

Result<JobSecretSource> JobSecret(const Environment& env) {
  if (std::optional<std::string> secret = env.Get("HETRUN_JOB_SECRET");
      secret && !secret->empty()) {
    return JobSecretSource{*secret, "HETRUN_JOB_SECRET"};
  }
  std::optional<std::string> file = env.Get("HETRUN_JOB_SECRET_FILE");
  if (!file || file->empty()) return JobSecretSource{"", "no job secret"};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*file, ec)) {
    return InvalidArgumentError("HETRUN_JOB_SECRET_FILE=" + *file +
                                ": not a readable regular file");
  }
  if (std::filesystem::file_size(*file, ec) > kMaxSecretFileBytes) {
    return InvalidArgumentError("HETRUN_JOB_SECRET_FILE=" + *file + ": larger than 64 KiB");
  }
  std::ifstream in(*file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return InvalidArgumentError("HETRUN_JOB_SECRET_FILE=" + *file + ": could not be read");
  }
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) return InvalidArgumentError("HETRUN_JOB_SECRET_FILE=" + *file + ": empty");
  return JobSecretSource{secret, "HETRUN_JOB_SECRET_FILE=" + *file};
}

}  // namespace hetrun::launcher
