// fuzz_elf_loader: bytes -> format::parse_elf -> ref::Machine::load -> at most kMaxSteps steps.
// Expected rejections (format::FormatError, ref::LoadError) are the normal outcome; anything
// else (a crash, a sanitizer report, any other exception) is a finding.  A fresh machine per
// input (STYLE.md: crashes on a reused machine can almost never be reproduced).
#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/format/elf.h"
#include "lockstep/format/error.h"
#include "lockstep/ref/machine.h"

namespace {
constexpr std::uint64_t kMaxSteps = 2000;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep;
  format::GuestImage image;
  try {
    image = format::parse_elf(std::span<const std::uint8_t>(data, size));
  } catch (const format::FormatError&) {
    return 0;
  }
  ref::Machine machine;
  try {
    machine.load(image);
  } catch (const ref::LoadError&) {
    return 0;
  }
  // Half untraced (fast path), half traced (token materialisation), as the engine does.
  machine.run(kMaxSteps / 2);
  std::uint64_t tokens = 0;
  machine.run(kMaxSteps / 2, [&](std::span<const std::uint32_t> t) { tokens += t.size(); });
  if (tokens > kMaxSteps / 2) __builtin_trap();  // the step cap is a promise of run()
  return 0;
}
