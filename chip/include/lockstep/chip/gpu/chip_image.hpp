// The chip prepared for the CUDA executor's step (step_math.hpp), built on the host: every array
// in one byte arena that is copied to the device once, plus the buffers of one stream.
// Plain C++ (no CUDA): the host unit test and the CUDA executor share it (docs/cuda.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/gpu/step_math.hpp"

namespace lockstep::chip::gpu {

/// A chip's phase matrices, residual maps, head tables and probe copies in one arena.
/// Memory: about 8 bytes per stacked weight. A memory layer's maps that are equal (chip files
/// store them once, as map aliases) are stacked once and shared by their heads (the RV32 chip:
/// 68 MB; 98 MB when its four RAM lane heads each kept their own key and query maps).
class ChipImage {
 public:
  /// Prepares a validated chip (Chip::validate() must have passed; not re-checked here).
  explicit ChipImage(const Chip& chip);

  /// Arena size in bytes.
  std::size_t bytes() const { return arena_.size(); }
  /// A copy of the arena whose pointers are valid once the copy lives at address `base`
  /// (16-byte aligned); `root` receives the matching view.
  std::vector<std::uint8_t> relocated(std::uintptr_t base, ChipView& root) const;
  /// The view without addresses (sizes and counts only; pointers are arena offsets).
  const ChipView& shape() const { return root_; }
  /// Offset in a stream's probe buffer of field `field` (index into the probe point's
  /// `fields`) of probe point `point` (index into config.probes).
  std::uint32_t probe_offset(std::size_t point, std::size_t field) const { return probe_off_[point][field]; }

 private:
  std::vector<std::uint8_t> arena_;
  ChipView root_;
  std::uint64_t layers_off_ = 0;
  std::vector<std::vector<std::uint32_t>> probe_off_;
};

/// Where each buffer of one stream lives inside one allocation of `bytes` bytes.
struct StreamLayout {
  explicit StreamLayout(const ChipView& shape);
  std::size_t bytes = 0;
  /// The stream's view when its allocation starts at `base` (16-byte aligned).
  StreamView at(std::uintptr_t base) const;

 private:
  std::size_t state = 0, x = 0, x_bits = 0, x_list = 0, acc = 0, acc_bits = 0, acc_list = 0, sel = 0, sel_h = 0,
              nz = 0, units = 0, unit_mark = 0,
              o = 0, sk = 0, beta = 0, heads = 0, readers = 0,
              head_reads = 0, o_cols = 0, probes = 0;
};

/// One stream on the host: a zeroed allocation of StreamLayout(shape).bytes bytes.
struct HostStream {
  explicit HostStream(const ChipView& shape);
  StreamView view;
  std::vector<std::uint64_t> storage;  ///< 8-byte aligned backing store
  float* state() const { return view.state; }
};

}  // namespace lockstep::chip::gpu
