// fuzz_chip_loader: bytes -> chip::parse_chip (safetensors + JSON configuration + validate);
// when the chip parses, a fresh CpuExecutor with one stream is reset from an empty guest image
// (or, when that lacks a section the initialisers need, one with those sections zero-filled) and
// stepped a few times from START (token 0), audit on.  Expected rejections:
// chip::FormatError (parse), chip::ImageError (reset: the image lacks a required section),
// chip::UsageError (a token outside the vocabulary).  Anything else is a finding.
//
// Harness caps (not findings): the format allows a small file to declare a large state
// (key_dim x value_dim up to 2^28 floats per head, initialiser lengths up to 2^32 bytes), so
// chips whose execution would allocate more than ~64 MiB are parsed but not executed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/error.hpp"
#include "lockstep/chip/guest_image.hpp"

namespace {
constexpr std::size_t kMaxSteps = 16;
constexpr std::uint64_t kMaxStateFloats = 1u << 22;  // 16 MiB of state
constexpr std::uint64_t kMaxDim = 1u << 16;          // d_model, vocab, hidden, head dims
constexpr std::uint64_t kMaxInitBytes = 1u << 20;

bool small_enough(const lockstep::chip::Chip& c) {
  if (c.config.d_model > kMaxDim || c.config.vocab_size > kMaxDim) return false;
  if (c.state_size() > kMaxStateFloats) return false;
  for (const auto& l : c.layers) {
    if (l.mlp.hidden > kMaxDim) return false;
    for (const auto& h : l.heads)
      if (h.key_dim > kMaxDim || h.value_dim > kMaxDim) return false;
  }
  for (const auto& in : c.config.initialisers)
    if (in.length > kMaxInitBytes || in.offset > kMaxInitBytes || in.values.size() > kMaxInitBytes ||
        in.columns > kMaxDim)
      return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::chip;
  std::shared_ptr<const Chip> chip;
  try {
    chip = std::make_shared<const Chip>(parse_chip(std::vector<std::uint8_t>(data, data + size)));
  } catch (const FormatError&) {
    return 0;
  }
  if (!small_enough(*chip)) return 0;
  CpuExecutor ex(chip, 1);
  ex.set_audit(true);
  try {
    try {
      ex.reset(0, GuestImage{});
    } catch (const ImageError&) {
      // The chip's initialisers name sections: reset from an image that has them (zeros).
      GuestImage image;
      for (const auto& in : chip->config.initialisers)
        if (!in.is_const && in.source == ByteSourceKind::Section)
          image.sections[in.section].resize(std::max<std::size_t>(image.sections[in.section].size(),
                                                                  in.offset + in.length));
      ex.reset(0, image);
    }
    ex.free_running(0, 0, kMaxSteps);
    (void)ex.hash(0);
    // A checkpoint of the stream restores into a fresh stream with the same hash.
    const std::vector<std::uint8_t> ck = ex.save(0);
    CpuExecutor ex2(chip, 1);
    ex2.restore(0, ck);
    if (ex2.hash(0) != ex.hash(0) || ex2.steps(0) != ex.steps(0)) __builtin_trap();
  } catch (const ImageError&) {
  } catch (const UsageError&) {
  }
  return 0;
}
