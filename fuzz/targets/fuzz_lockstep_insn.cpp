// fuzz_lockstep_insn: bytes -> (FuzzedDataProvider) initial registers and a list of 32-bit
// instruction words -> a fresh ref::Machine loaded from an ELF image built with format's
// writer (code at 0x10000), run with a step cap.
//
// Reference only (fuzz/README.md): the lock-step comparison with the RV32 chip runs in
// tests/engine/chip_random_test.cpp and `lockstep fuzz`, where the chip is loaded once for many
// programs. Here the reference model is checked against itself: the image survives write_elf -> parse_elf, and a
// traced run (tokens delivered in chunks), a step-wise run (step()) and an untraced run
// (fast path) of the same program agree on steps, tokens, status and final state, and
// every instruction begins with the pc tokens of trace.md §4.0 (a fetch outside RAM emits
// TRAP(3) alone).
// Any disagreement, crash, sanitizer report or exception is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_program.h"
#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"
#include "lockstep/ref/machine.h"

namespace {

using namespace lockstep;

constexpr std::uint64_t kMaxSteps = 4000;
constexpr std::size_t kMaxWords = 256;
constexpr std::uint32_t kCodeBase = 0x10000;

using Program = fuzz::FuzzProgram;

Program split(FuzzedDataProvider& in) {
  fuzz::DecodeOptions opt;
  opt.max_words = kMaxWords;
  opt.edges = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, kCodeBase, 0x10ffffu, 0x110000u};
  return fuzz::decode_program(in, opt);
}

format::GuestImage image_of(const Program& p) {
  format::GuestImage img;
  img.entry = kCodeBase;
  format::Segment seg;
  seg.vaddr = kCodeBase;
  seg.flags = format::kPfR | format::kPfW | format::kPfX;
  for (std::uint32_t w : p.words)
    for (int i = 0; i < 4; ++i) seg.bytes.push_back(static_cast<std::uint8_t>(w >> (8 * i)));
  seg.memsz = static_cast<std::uint32_t>(seg.bytes.size()) + 4096;  // zero words after the code
  img.segments.push_back(std::move(seg));
  return img;
}

void fresh(ref::Machine& m, const format::GuestImage& img, const Program& p) {
  m.load(img);
  for (const auto& [r, v] : p.regs) m.set_reg(r, v);
}

[[noreturn]] void finding() { __builtin_trap(); }

void same_state(const ref::Machine& a, const ref::Machine& b) {
  if (a.status() != b.status() || a.pc() != b.pc() || a.steps() != b.steps() ||
      a.instructions_retired() != b.instructions_retired() || a.exit_status() != b.exit_status() ||
      a.trap_code() != b.trap_code() || a.carry() != b.carry() ||
      a.console_out() != b.console_out() || a.console_err() != b.console_err())
    finding();
  for (unsigned i = 0; i < 32; ++i)
    if (a.reg(i) != b.reg(i)) finding();
  if (!std::equal(a.ram().begin(), a.ram().end(), b.ram().begin(), b.ram().end())) finding();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const Program p = split(in);
  if (p.words.empty()) return 0;
  // The writer's output must read back as the same image (no validation errors expected:
  // the image is well formed and inside RAM).
  const format::GuestImage img = format::parse_elf(format::write_elf(image_of(p)));

  // Traced run: every token delivered, in chunks.
  ref::Machine traced;
  fresh(traced, img, p);
  std::vector<std::uint32_t> tokens;
  const ref::RunResult rt =
      traced.run(kMaxSteps, [&](std::span<const std::uint32_t> t) { tokens.insert(tokens.end(), t.begin(), t.end()); });
  if (tokens.size() != rt.steps || rt.steps > kMaxSteps || traced.steps() != rt.steps) finding();
  if (rt.stop == ref::Stop::kStepLimit && rt.steps != kMaxSteps) finding();

  // Untraced run (fast path): same counters and state.
  ref::Machine fast;
  fresh(fast, img, p);
  const ref::RunResult rf = fast.run(kMaxSteps);
  if (rf.stop != rt.stop || rf.steps != rt.steps || rf.instructions != rt.instructions) finding();
  same_state(traced, fast);

  // Step-wise run: the same tokens in the same order, each instruction's starting with
  // PCH_k((w >> 8) & 0xFF), k = w >> 16, when w >> 8 differs from the previous
  // instruction's (or it is the first), then PCL(w & 0xFF), w = (pc - 0x10000) / 4.
  ref::Machine stepped;
  fresh(stepped, img, p);
  std::size_t at = 0;
  std::uint32_t page = ~0u;
  using format::Kind;
  using format::token_id;
  while (at < tokens.size()) {
    const std::uint32_t pc = stepped.pc();
    const std::span<const std::uint32_t> t = stepped.step();
    if (t.empty()) finding();
    if (pc >= ref::kRamBase && pc < ref::kRamEnd) {
      const std::uint32_t w = (pc - ref::kRamBase) / 4;
      std::size_t k = 0;
      if (w >> 8 != page && t[k++] != token_id(static_cast<std::uint32_t>(Kind::PCH0) + (w >> 16), (w >> 8) & 0xff)) {
        finding();
      }
      if (k >= t.size() || t[k] != token_id(Kind::PCL, w & 0xff)) finding();
      page = w >> 8;
    } else if (t.size() != 1 || t[0] != token_id(Kind::TRAP, 3)) {
      finding();
    }
    for (std::uint32_t id : t) {
      if (at >= tokens.size()) break;  // the cap fell inside this instruction's tokens
      if (id != tokens[at++]) finding();
    }
  }
  return 0;
}
