#include "lockstep/ref/loop_watch.h"

#include <cstdio>

#include "lockstep/ref/encoding.h"

namespace lockstep::ref {

namespace {

// The instruction at `pc` changes nothing but x registers and pc (LoopWatch's list), or traps.
bool changes_only_registers(const Machine& m, std::uint32_t pc) {
  std::uint32_t word = 0;
  try {
    word = m.read_word(pc);
  } catch (const std::out_of_range&) {
    return false;  // the fetch traps (isa.md §6)
  }
  const Decoded d = decode(word);
  if (d.op == Op::kUndecoded || d.op == Op::kIllegal || d.op == Op::kCount) return false;
  switch (encoding_of(d.op).cls) {
    case InsnClass::kAlu:
    case InsnClass::kAluImm:
    case InsnClass::kUpper:
    case InsnClass::kMul:
    case InsnClass::kDiv:
    case InsnClass::kZba:
    case InsnClass::kLoad:
    case InsnClass::kBranch:
    case InsnClass::kJal:
    case InsnClass::kJalr:
    case InsnClass::kFence:
      return true;
    case InsnClass::kStore:
    case InsnClass::kSystem:
    case InsnClass::kBignum:
    case InsnClass::kVector:
      return false;
  }
  return false;
}

}  // namespace

void LoopWatch::reset() { *this = LoopWatch(); }

bool LoopWatch::repeats(const Machine& m) {
  const std::uint32_t pc = m.pc();
  if (!changes_only_registers(m, pc)) {
    // The loop, if any, has not started: watch again from the next instruction.
    saved_ = false;
    power_ = 1;
    lambda_ = 0;
    return false;
  }
  if (saved_ && pc == saved_pc_) {
    bool same = true;
    for (unsigned i = 1; i < 32 && same; ++i) same = m.reg(i) == saved_x_[i];
    if (same) {
      period_ = lambda_;
      return true;
    }
  }
  if (!saved_ || lambda_ == power_) {
    if (saved_ && power_ < kMaxPeriod) power_ <<= 1;
    saved_ = true;
    saved_pc_ = pc;
    for (unsigned i = 1; i < 32; ++i) saved_x_[i] = m.reg(i);
    lambda_ = 0;
  }
  ++lambda_;
  return false;
}

std::string describe_loop(std::uint32_t pc, std::uint32_t word, std::uint64_t period) {
  char at[16];
  std::snprintf(at, sizeof at, "0x%08x", pc);
  const std::string insn = disassemble(word, pc);
  if (period <= 1) return std::string("jumps to itself at pc ") + at + " (" + insn + ")";
  return std::string("loops forever: from pc ") + at + " (" + insn + ") the same " + std::to_string(period) +
         " instructions repeat from the same registers, with no store, ecall or custom-unit instruction among them,";
}

}  // namespace lockstep::ref
