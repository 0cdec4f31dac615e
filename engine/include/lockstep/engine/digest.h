// The trace digest: XXH3-64 (seed 0) of a token stream, each token id as 4
// little-endian bytes -- the same bytes as a trace file's token array
// (trace.md §6), so `lockstep ref --trace` files can be checked against it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace lockstep::engine {

/// Streaming XXH3-64 over token ids.  Its state can be saved into a
/// checkpoint and restored, so a resumed run ends with the same digest as an
/// uninterrupted one.  The saved bytes are specific to this build's xxHash
/// (a checkpoint resumes with the binary that wrote it).
class TraceDigest {
 public:
  TraceDigest();
  ~TraceDigest();
  TraceDigest(const TraceDigest& other);
  TraceDigest& operator=(const TraceDigest& other);

  /// Appends tokens to the digested stream.
  void update(std::span<const std::uint32_t> tokens);
  void update(std::uint32_t token) { update(std::span<const std::uint32_t>(&token, 1)); }
  /// XXH3-64 of everything appended so far (does not end the stream).
  std::uint64_t value() const;
  /// value() as 16 lower-case hex digits.
  std::string hex() const;

  /// Opaque snapshot of the streaming state.
  std::vector<std::uint8_t> save() const;
  /// Restores a snapshot made by save(); throws std::runtime_error when the
  /// bytes have the wrong size.
  void restore(std::span<const std::uint8_t> bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// 16 lower-case hex digits of v.
std::string hex64(std::uint64_t v);

/// XXH3-64 of a byte string (one call).
std::uint64_t xxh3(std::span<const std::uint8_t> bytes);

}  // namespace lockstep::engine
