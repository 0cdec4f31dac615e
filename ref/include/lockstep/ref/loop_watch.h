// Detection of a guest that can never end because its state repeats.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "lockstep/ref/machine.h"

namespace lockstep::ref {

/// Watches a Machine, one call per instruction, for a loop that can never end: the machine comes
/// back to a state (pc and x1..x31) it was in before, and every instruction executed in between
/// changes nothing but x registers and pc. Those are the instructions of the classes alu,
/// alu-imm, upper, mul, div, zba, load, branch, jal, jalr and fence (encoding.h InsnClass): no
/// store, ecall, ebreak, bignum or vector instruction, so RAM, the bignum state (c, acc) and the
/// vector memories are unchanged and, isa.md §1, the same state executes the same instructions
/// with the same tokens forever. A spin-wait such as `1: lw t0, 0(a0); beqz t0, 1b` on memory
/// nothing writes is one. A loop that stores, calls the system or uses a custom unit is never
/// reported, even when it does repeat.
///
/// Brent's cycle detection (R. P. Brent, "An improved Monte Carlo factorization algorithm",
/// BIT 20 (1980), §2), with the saved state taken at powers of two up to kMaxPeriod: a loop of
/// period p <= kMaxPeriod instructions is reported at most about 2 * max(p, start) + p
/// instructions after it starts, or 2 * kMaxPeriod + p once the run is long; a longer period is
/// never reported. Cost: one decode and one pc compare per call, and 31 register compares when
/// the pc matches the saved one. Not thread-safe.
class LoopWatch {
 public:
  /// The longest loop, in instructions, that is detected.
  static constexpr std::uint64_t kMaxPeriod = std::uint64_t{1} << 16;

  /// Call with `m` before each instruction it executes (m.status() == kRunning). True when the
  /// state now equals the state of an earlier call with only the instructions above executed
  /// since: from here the guest repeats period() instructions forever. Once true, stays true
  /// for the same state; call reset() before watching another run.
  bool repeats(const Machine& m);
  /// The loop's length in instructions once repeats() returned true (1 for `jal zero, 0`).
  std::uint64_t period() const { return period_; }
  /// Forgets every state seen.
  void reset();

 private:
  bool saved_ = false;
  std::uint32_t saved_pc_ = 0;
  std::array<std::uint32_t, 32> saved_x_{};
  std::uint64_t power_ = 1, lambda_ = 0, period_ = 0;
};

/// A loop that can never end, as the one-line reports say it after "the guest ": "jumps to itself
/// at pc 0x00010008 (jal zero, 0x10008)" (`period` 1, Machine::jumps_to_itself), or "loops
/// forever: from pc 0x0001000c (...) the same P instructions repeat from the same registers,
/// with no store, ecall or custom-unit instruction among them," (LoopWatch). `word` is the
/// instruction at `pc`.
std::string describe_loop(std::uint32_t pc, std::uint32_t word, std::uint64_t period);

}  // namespace lockstep::ref
