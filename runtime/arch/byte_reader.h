// Bounds-checked little-endian reads from a byte span (private to runtime/arch).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace hetrun::arch {

/// `bytes[offset, offset + size)` lies inside `bytes` (overflow-safe).
inline bool InBounds(std::span<const uint8_t> bytes, uint64_t offset, uint64_t size) {
  return offset <= bytes.size() && size <= bytes.size() - offset;
}

/// The little-endian unsigned integer of type T at `offset`, or nullopt when it does not fit.
template <typename T>
std::optional<T> ReadLe(std::span<const uint8_t> bytes, uint64_t offset) {
  if (!InBounds(bytes, offset, sizeof(T))) return std::nullopt;
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<T>(bytes[offset + i]) << (8 * i));
  }
  return value;
}

/// Same as ReadLe but for callers that checked the bounds of a whole header first.
template <typename T>
T LoadLe(std::span<const uint8_t> bytes, uint64_t offset) {
  return ReadLe<T>(bytes, offset).value_or(0);
}

}  // namespace hetrun::arch
