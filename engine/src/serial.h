// Internal: byte serialisation, zstd and atomic files for checkpoints.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/ref/machine.h"

namespace lockstep::engine::detail {

/// Appends little-endian integers and length-prefixed blobs.
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void blob(std::span<const std::uint8_t> b) {
    u64(b.size());
    raw(b.data(), b.size());
  }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<std::uint8_t>& bytes() { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

/// Reads what Writer wrote; throws std::runtime_error("checkpoint: truncated").
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  std::uint8_t u8() {
    std::uint8_t v;
    raw(&v, 1);
    return v;
  }
  std::uint32_t u32() {
    std::uint32_t v;
    raw(&v, 4);
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t v;
    raw(&v, 8);
    return v;
  }
  std::vector<std::uint8_t> blob() {
    const std::uint64_t n = u64();
    need(n);
    std::vector<std::uint8_t> b(in_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
    pos_ += n;
    return b;
  }
  std::string str() {
    const std::uint64_t n = u64();
    need(n);
    std::string s(reinterpret_cast<const char*>(in_.data()) + pos_, n);
    pos_ += n;
    return s;
  }
  void raw(void* p, std::size_t n) {
    need(n);
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  void need(std::uint64_t n) const {
    if (n > in_.size() - pos_) throw std::runtime_error("checkpoint: truncated");
  }
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

/// Serialises / parses a reference machine state.
void write_machine_state(Writer& w, const ref::MachineState& s);
ref::MachineState read_machine_state(Reader& r);

/// zstd (level 3) with the content size in the frame.
std::vector<std::uint8_t> compress(std::span<const std::uint8_t> bytes);
/// Throws std::runtime_error on a corrupt or truncated frame.
std::vector<std::uint8_t> decompress(std::span<const std::uint8_t> bytes);

/// Writes `bytes` to `path` atomically: a temporary file beside it, fsync,
/// rename, fsync of the directory.  Throws std::runtime_error.
void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
/// Reads a whole file; throws std::runtime_error naming the path.
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

}  // namespace lockstep::engine::detail
