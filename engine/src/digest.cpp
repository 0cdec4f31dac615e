#include "lockstep/engine/digest.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace lockstep::engine {

struct TraceDigest::State {
  XXH3_state_t xxh;
};

TraceDigest::TraceDigest() : state_(std::make_unique<State>()) { XXH3_64bits_reset(&state_->xxh); }
TraceDigest::~TraceDigest() = default;
TraceDigest::TraceDigest(const TraceDigest& other) : state_(std::make_unique<State>()) {
  XXH3_copyState(&state_->xxh, &other.state_->xxh);
}
TraceDigest& TraceDigest::operator=(const TraceDigest& other) {
  if (this != &other) XXH3_copyState(&state_->xxh, &other.state_->xxh);
  return *this;
}

void TraceDigest::update(std::span<const std::uint32_t> tokens) {
  // Token ids as little-endian u32 (the trace file's byte order).
  static_assert(std::endian::native == std::endian::little, "little-endian host expected");
  XXH3_64bits_update(&state_->xxh, tokens.data(), tokens.size_bytes());
}

std::uint64_t TraceDigest::value() const { return XXH3_64bits_digest(&state_->xxh); }

std::string TraceDigest::hex() const { return hex64(value()); }

std::vector<std::uint8_t> TraceDigest::save() const {
  std::vector<std::uint8_t> out(sizeof(XXH3_state_t));
  std::memcpy(out.data(), &state_->xxh, sizeof(XXH3_state_t));
  return out;
}

void TraceDigest::restore(std::span<const std::uint8_t> bytes) {
  if (bytes.size() != sizeof(XXH3_state_t)) {
    throw std::runtime_error("checkpoint: digest state has " + std::to_string(bytes.size()) +
                             " bytes, this build needs " + std::to_string(sizeof(XXH3_state_t)));
  }
  // extSecret points at xxHash's built-in secret in this process (a saved
  // pointer is meaningless in another one): take it from a fresh state.
  XXH3_state_t fresh;
  XXH3_INITSTATE(&fresh);
  XXH3_64bits_reset(&fresh);
  std::memcpy(&state_->xxh, bytes.data(), bytes.size());
  state_->xxh.extSecret = fresh.extSecret;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t xxh3(std::span<const std::uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace lockstep::engine
