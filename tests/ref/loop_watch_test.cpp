// ref::LoopWatch: a state that repeats with only register-writing instructions between is a loop
// that can never end; anything else (a store, an ecall, a custom-unit instruction, a state that
// never repeats, a loop longer than kMaxPeriod) is never reported.
#include "lockstep/ref/loop_watch.h"

#include <gtest/gtest.h>

#include "lockstep/ref/encoding.h"
#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

using enc = Op;
enum : unsigned { zero = 0, t0 = 5, t1 = 6, a0 = 10, a1 = 11, a2 = 12, a7 = 17 };

struct Watched {
  bool reported = false;
  std::uint64_t period = 0;
  std::uint64_t at = 0;  // instructions executed when it was reported
  u32 pc = 0;
  Status status = Status::kRunning;
};

// Runs `m` for up to `limit` instructions, asking the watch before each one.
Watched watch(Machine m, std::uint64_t limit) {
  LoopWatch w;
  Watched out;
  for (std::uint64_t i = 0; i < limit && m.status() == Status::kRunning; ++i) {
    if (w.repeats(m)) {
      out.reported = true;
      out.period = w.period();
      out.at = i;
      out.pc = m.pc();
      break;
    }
    m.step();
  }
  out.status = m.status();
  return out;
}

Machine with_regs(const std::vector<u32>& code, std::initializer_list<std::pair<unsigned, u32>> regs) {
  Machine m = machine_with(code);
  for (auto [r, v] : regs) m.set_reg(r, v);
  return m;
}

TEST(LoopWatch, ReportsALoopWhoseStateRepeats) {
  const u32 back4 = static_cast<u32>(-4), back8 = static_cast<u32>(-8);
  struct Case {
    const char* what;
    Machine m;
    std::uint64_t period;
    std::uint64_t within;  // instructions
  };
  const Case cases[] = {
      {"spin-wait on a word nothing writes: lw t0, 0(a0); beq t0, zero, -4",
       with_regs({encode::i(enc::kLw, t0, a0, 0), encode::b(enc::kBeq, t0, zero, back4)}, {{a0, kData}}), 2, 8},
      {"jal zero, 0", machine_with({encode::j(enc::kJal, zero, 0)}), 1, 4},
      {"xori t0, t0, 1; jal zero, -4 (the state repeats every second pass)",
       machine_with({encode::i(enc::kXori, t0, t0, 1), encode::j(enc::kJal, zero, back4)}), 4, 16},
      {"addi t0, t0, 1; andi t0, t0, 1023; jal zero, -8",
       machine_with({encode::i(enc::kAddi, t0, t0, 1), encode::i(enc::kAndi, t0, t0, 1023), encode::j(enc::kJal, zero, back8)}),
       3072, 4 * 3072},
      {"addi t0, t0, 1; and t0, t0, t1; jal zero, -8 (t1 = 0x3fff): 49,152 instructions",
       with_regs({encode::i(enc::kAddi, t0, t0, 1), encode::r(enc::kAnd, t0, t0, t1), encode::j(enc::kJal, zero, back8)},
                 {{t1, 0x3fff}}),
       3 * 16384, 4 * 3 * 16384},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Watched w = watch(c.m, 4 * LoopWatch::kMaxPeriod + 1000);
    ASSERT_TRUE(w.reported);
    EXPECT_EQ(w.period, c.period);
    EXPECT_LE(w.at, c.within);
    EXPECT_EQ(w.status, Status::kRunning);
  }
}

TEST(LoopWatch, NeverReportsALoopThatCanEndOrChangesMoreThanRegisters) {
  const u32 back4 = static_cast<u32>(-4), back8 = static_cast<u32>(-8);
  struct Case {
    const char* what;
    Machine m;
    Status ends;
  };
  const Case cases[] = {
      {"a counter: addi t0, t0, 1; jal zero, -4 (no state repeats)",
       machine_with({encode::i(enc::kAddi, t0, t0, 1), encode::j(enc::kJal, zero, back4)}), Status::kRunning},
      {"a store in the loop: sw t0, 0(a0); jal zero, -4 (the same state, but memory is written)",
       with_regs({encode::s(enc::kSw, a0, t0, 0), encode::j(enc::kJal, zero, back4)}, {{a0, kData}}), Status::kRunning},
      {"an ecall in the loop: write(1, a1, 1) (a0 = 1 again); jal zero, -4",
       with_regs({kEcall, encode::j(enc::kJal, zero, back4)}, {{a0, 1}, {a1, kData}, {a2, 1}, {a7, 64}}),
       Status::kRunning},
      {"a bignum instruction in the loop: bn.addc zero, zero, zero; jal zero, -4",
       machine_with({encode::r(enc::kBnAddc, zero, zero, zero), encode::j(enc::kJal, zero, back4)}), Status::kRunning},
      {"a countdown that ends: addi t0, t0, -1; bne t0, zero, -4; ebreak",
       with_regs({encode::i(enc::kAddi, t0, t0, static_cast<u32>(-1)), encode::b(enc::kBne, t0, zero, back4), kEbreak},
                 {{t0, 5000}}),
       Status::kTrapped},
      {"a period over kMaxPeriod: addi t0, t0, 1; and t0, t0, t1; jal zero, -8 (t1 = 0x7fff: 98,304 instructions)",
       with_regs({encode::i(enc::kAddi, t0, t0, 1), encode::r(enc::kAnd, t0, t0, t1), encode::j(enc::kJal, zero, back8)},
                 {{t1, 0x7fff}}),
       Status::kRunning},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Watched w = watch(c.m, 8 * LoopWatch::kMaxPeriod);
    EXPECT_FALSE(w.reported) << "period " << w.period << " at pc 0x" << std::hex << w.pc;
    EXPECT_EQ(w.status, c.ends);
  }
}

}  // namespace
}  // namespace lockstep::ref::test
