// Per-instruction semantics with hand-written expected values (isa.md §4,
// bignum.md §2/§4) and the token rules of trace.md §4, edge cases spelled out.
#include <array>

#include <gtest/gtest.h>

#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

using enc = Op;
constexpr u32 kMin = 0x80000000u, kMax = 0x7fffffffu, kM1 = 0xffffffffu;

// Runs `op rd=x10, rs1=x11, rs2=x12` with the given operands; returns x10.
u32 rop(Op op, u32 a, u32 b) {
  Machine m;
  const auto t = exec1(m, encode::r(op, 10, 11, 12), {{11, a}, {12, b}});
  EXPECT_EQ(m.status(), Status::kRunning);
  return m.reg(10);
}
// `op x10, x11, imm` (also shifts: imm = shamt).
u32 iop(Op op, u32 a, u32 imm) {
  Machine m;
  exec1(m, encode::i(op, 10, 11, imm), {{11, a}});
  EXPECT_EQ(m.status(), Status::kRunning);
  return m.reg(10);
}

TEST(Alu, AddSubWrap) {
  EXPECT_EQ(rop(enc::kAdd, kMax, 1), kMin);
  EXPECT_EQ(rop(enc::kAdd, kM1, 1), 0u);
  EXPECT_EQ(rop(enc::kSub, 0, 1), kM1);
  EXPECT_EQ(rop(enc::kSub, kMin, 1), kMax);
  EXPECT_EQ(iop(enc::kAddi, 5, 0xfff), 4u) << "imm -1";
  EXPECT_EQ(iop(enc::kAddi, kMax, 1), kMin);
  EXPECT_EQ(iop(enc::kAddi, 0, 0x800), 0xfffff800u) << "imm -2048";
}

TEST(Alu, ShiftsMaskTheAmountToFiveBits) {
  EXPECT_EQ(rop(enc::kSll, 1, 33), 2u);
  EXPECT_EQ(rop(enc::kSll, 1, 32), 1u);
  EXPECT_EQ(rop(enc::kSll, 1, 31), kMin);
  EXPECT_EQ(rop(enc::kSrl, kMin, 35), 0x10000000u);
  EXPECT_EQ(rop(enc::kSrl, kMin, kM1), 1u) << "amount 0xffffffff & 31 = 31";
  EXPECT_EQ(rop(enc::kSra, kMin, 31), kM1);
  EXPECT_EQ(rop(enc::kSra, kMin, 32), kMin) << "amount 32 & 31 = 0";
  EXPECT_EQ(rop(enc::kSra, 0x40000000u, 30), 1u);
  EXPECT_EQ(rop(enc::kSra, 0xf0000000u, 4), 0xff000000u);
  EXPECT_EQ(iop(enc::kSlli, 3, 31), kMin);
  EXPECT_EQ(iop(enc::kSrli, kMin, 4), 0x08000000u);
  EXPECT_EQ(iop(enc::kSrai, kMin, 4), 0xf8000000u);
  EXPECT_EQ(iop(enc::kSrai, kMax, 31), 0u);
  EXPECT_EQ(iop(enc::kSrai, 5, 0), 5u);
}

TEST(Alu, Compares) {
  EXPECT_EQ(rop(enc::kSlt, kM1, 0), 1u);
  EXPECT_EQ(rop(enc::kSlt, 0, kM1), 0u);
  EXPECT_EQ(rop(enc::kSlt, kMin, kMax), 1u);
  EXPECT_EQ(rop(enc::kSlt, 3, 3), 0u);
  EXPECT_EQ(rop(enc::kSltu, kM1, 0), 0u);
  EXPECT_EQ(rop(enc::kSltu, 0, kM1), 1u);
  EXPECT_EQ(rop(enc::kSltu, kMax, kMin), 1u);
  EXPECT_EQ(iop(enc::kSlti, 0, 0xfff), 0u) << "0 < -1 is false";
  EXPECT_EQ(iop(enc::kSlti, kMin, 0), 1u);
  EXPECT_EQ(iop(enc::kSltiu, 5, 0xfff), 1u) << "imm sign-extended to 0xffffffff first";
  EXPECT_EQ(iop(enc::kSltiu, 0, 1), 1u);
  EXPECT_EQ(iop(enc::kSltiu, 1, 1), 0u);
}

TEST(Alu, Bitwise) {
  EXPECT_EQ(rop(enc::kXor, 0xff00ff00u, 0x0ff00ff0u), 0xf0f0f0f0u);
  EXPECT_EQ(rop(enc::kOr, 0xff00ff00u, 0x0ff00ff0u), 0xfff0fff0u);
  EXPECT_EQ(rop(enc::kAnd, 0xff00ff00u, 0x0ff00ff0u), 0x0f000f00u);
  EXPECT_EQ(iop(enc::kXori, 0x12345678u, 0xfff), 0xedcba987u) << "xori -1 = not";
  EXPECT_EQ(iop(enc::kOri, 0x10u, 0x800), 0xfffff810u);
  EXPECT_EQ(iop(enc::kAndi, 0x12345678u, 0x7ff), 0x678u);
}

TEST(Upper, LuiAuipc) {
  Machine m;
  exec1(m, encode::u(enc::kLui, 10, 0x12345000u));
  EXPECT_EQ(m.reg(10), 0x12345000u);
  exec1(m, encode::u(enc::kAuipc, 10, 0x1000u));
  EXPECT_EQ(m.reg(10), 0x11000u);
  exec1(m, encode::u(enc::kAuipc, 10, 0xfff00000u));
  EXPECT_EQ(m.reg(10), 0xfff10000u) << "pc + imm mod 2^32";
}

TEST(Mul, AllFourVariantsAndSignCases) {
  EXPECT_EQ(rop(enc::kMul, kM1, kM1), 1u);
  EXPECT_EQ(rop(enc::kMul, 0x10000u, 0x10000u), 0u);
  EXPECT_EQ(rop(enc::kMul, 7, 6), 42u);
  EXPECT_EQ(rop(enc::kMulh, kM1, kM1), 0u) << "(-1)(-1) = 1";
  EXPECT_EQ(rop(enc::kMulh, kMin, kMin), 0x40000000u) << "2^62";
  EXPECT_EQ(rop(enc::kMulh, kMin, kM1), 0u) << "2^31";
  EXPECT_EQ(rop(enc::kMulh, kM1, 1), kM1) << "-1: high word all ones";
  EXPECT_EQ(rop(enc::kMulh, kMax, kMax), 0x3fffffffu);
  EXPECT_EQ(rop(enc::kMulhu, kM1, kM1), 0xfffffffeu);
  EXPECT_EQ(rop(enc::kMulhu, kMin, 2), 1u);
  EXPECT_EQ(rop(enc::kMulhsu, kM1, kM1), kM1) << "-1 * (2^32-1) = -2^32 + 1";
  EXPECT_EQ(rop(enc::kMulhsu, kMin, kM1), kMin) << "-2^31 * (2^32-1) = 0x80000000_80000000";
  EXPECT_EQ(rop(enc::kMulhsu, 1, kM1), 0u);
  EXPECT_EQ(rop(enc::kMulhsu, kM1, 1), kM1);
}

TEST(Div, SpecialCasesOfIsa43) {
  // b = 0
  EXPECT_EQ(rop(enc::kDiv, 7, 0), kM1);
  EXPECT_EQ(rop(enc::kDivu, 7, 0), kM1);
  EXPECT_EQ(rop(enc::kRem, 7, 0), 7u);
  EXPECT_EQ(rop(enc::kRemu, 7, 0), 7u);
  EXPECT_EQ(rop(enc::kDiv, kMin, 0), kM1);
  EXPECT_EQ(rop(enc::kRem, kMin, 0), kMin);
  // overflow
  EXPECT_EQ(rop(enc::kDiv, kMin, kM1), kMin);
  EXPECT_EQ(rop(enc::kRem, kMin, kM1), 0u);
  EXPECT_EQ(rop(enc::kDivu, kMin, kM1), 0u) << "unsigned: no special case";
  EXPECT_EQ(rop(enc::kRemu, kMin, kM1), kMin);
}

TEST(Div, RoundsTowardZeroRemainderHasDividendSign) {
  EXPECT_EQ(rop(enc::kDiv, static_cast<u32>(-7), 2), static_cast<u32>(-3));
  EXPECT_EQ(rop(enc::kRem, static_cast<u32>(-7), 2), static_cast<u32>(-1));
  EXPECT_EQ(rop(enc::kDiv, 7, static_cast<u32>(-2)), static_cast<u32>(-3));
  EXPECT_EQ(rop(enc::kRem, 7, static_cast<u32>(-2)), 1u);
  EXPECT_EQ(rop(enc::kDiv, static_cast<u32>(-7), static_cast<u32>(-2)), 3u);
  EXPECT_EQ(rop(enc::kRem, static_cast<u32>(-7), static_cast<u32>(-2)), static_cast<u32>(-1));
  EXPECT_EQ(rop(enc::kDiv, kMin, 2), 0xc0000000u);
  EXPECT_EQ(rop(enc::kDivu, 0xfffffff9u, 2), 0x7ffffffcu);
  EXPECT_EQ(rop(enc::kRemu, 0xfffffff9u, 2), 1u);
  EXPECT_EQ(rop(enc::kDivu, 5, 7), 0u);
  EXPECT_EQ(rop(enc::kRemu, 5, 7), 5u);
}

TEST(Zba, ShiftAdd) {
  EXPECT_EQ(rop(enc::kSh1add, 0x80000001u, 1), 3u);
  EXPECT_EQ(rop(enc::kSh2add, 3, 100), 112u);
  EXPECT_EQ(rop(enc::kSh3add, 0x20000000u, 5), 5u);
  EXPECT_EQ(rop(enc::kSh3add, kM1, 8), 0u);
}

TEST(X0, WritesAreDiscardedAndShowNop) {
  Machine m;
  auto t = exec1(m, encode::i(enc::kAddi, 0, 0, 5));
  EXPECT_EQ(m.reg(0), 0u);
  EXPECT_EQ(t, cat({PC0(), NOP()}));
  EXPECT_EQ(m.instructions_retired(), 1u);
  t = exec1(m, encode::r(enc::kDiv, 0, 11, 12), {{11, 7}, {12, 2}});
  ASSERT_EQ(t.size(), 35u) << "PCH, PCL, 32 DQ then NOP";
  EXPECT_EQ(t.back(), NOP()[0]);
  EXPECT_EQ(m.reg(0), 0u);
  m.set_reg(0, 5);
  EXPECT_EQ(m.reg(0), 0u);
}

class Memory : public ::testing::Test {
 protected:
  // Loads `word` with x11 = addr, data segment has bytes 80 ff 00 80 12 34 56 78 at kData.
  Tokens run(u32 word, u32 addr, u32 x12 = 0) {
    m = machine_with({word, kEbreak}, {0x80, 0xff, 0x00, 0x80, 0x12, 0x34, 0x56, 0x78});
    m.set_reg(11, addr);
    m.set_reg(12, x12);
    m.set_reg(10, 0xdeadbeefu);
    auto s = m.step();
    return {s.begin(), s.end()};
  }
  Machine m;
};

TEST_F(Memory, LoadsExtend) {
  EXPECT_EQ(run(encode::i(enc::kLb, 10, 11, 0), kData), cat({PC0(), A(kData), W(0xffffff80u)}));
  EXPECT_EQ(run(encode::i(enc::kLbu, 10, 11, 0), kData), cat({PC0(), A(kData), W(0x80u)}));
  EXPECT_EQ(run(encode::i(enc::kLh, 10, 11, 2), kData), cat({PC0(), A(kData + 2), W(0xffff8000u)}));
  EXPECT_EQ(run(encode::i(enc::kLhu, 10, 11, 2), kData), cat({PC0(), A(kData + 2), W(0x8000u)}));
  EXPECT_EQ(run(encode::i(enc::kLh, 10, 11, 0), kData), cat({PC0(), A(kData), W(0xffffff80u)}));
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 4), kData), cat({PC0(), A(kData + 4), W(0x78563412u)}));
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 0xffc), kData + 8), cat({PC0(), A(kData + 4), W(0x78563412u)})) << "imm -4";
  EXPECT_EQ(run(encode::i(enc::kLw, 0, 11, 0), kData), cat({PC0(), A(kData), NOP()}));
}

TEST_F(Memory, MisalignedLoadTrapsAfterAddress) {
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 2), kData), cat({PC0(), A(kData + 2), TRAP(4)}));
  EXPECT_EQ(m.status(), Status::kTrapped);
  EXPECT_EQ(m.trap_code(), 4u);
  EXPECT_EQ(m.reg(10), 0xdeadbeefu) << "trapping instruction changes no register";
  EXPECT_EQ(m.pc(), kCode) << "pc stays on the trapping instruction";
  EXPECT_EQ(m.instructions_retired(), 0u);
  EXPECT_EQ(run(encode::i(enc::kLh, 10, 11, 1), kData), cat({PC0(), A(kData + 1), TRAP(4)}));
  EXPECT_EQ(run(encode::i(enc::kLhu, 10, 11, 3), kData), cat({PC0(), A(kData + 3), TRAP(4)}));
  // Misalignment is checked before range.
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 1), 0), cat({PC0(), A(1), TRAP(4)}));
}

TEST_F(Memory, OutOfRangeLoadFaults) {
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 0), 0), cat({PC0(), A(0), TRAP(5)}));
  EXPECT_EQ(run(encode::i(enc::kLb, 10, 11, 0), 0xffff), cat({PC0(), A(0xffff), TRAP(5)}));
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 0), 0x110000), cat({PC0(), A(0x110000), TRAP(5)}));
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 0), 0xfffffffcu), cat({PC0(), A(0xfffffffcu), TRAP(5)})) << "no wrap-around";
  EXPECT_EQ(m.reg(10), 0xdeadbeefu);
  // The last word and byte of RAM are in range.
  EXPECT_EQ(run(encode::i(enc::kLw, 10, 11, 0), 0x10fffc), cat({PC0(), A(0x10fffc), W(0)}));
  EXPECT_EQ(run(encode::i(enc::kLbu, 10, 11, 0), 0x10ffff), cat({PC0(), A(0x10ffff), W(0)}));
  EXPECT_EQ(run(encode::i(enc::kLbu, 10, 11, 0), 0x10000), cat({PC0(), A(0x10000), W(0x03)})) << "low byte of lbu's own word";
}

TEST_F(Memory, Stores) {
  auto t = run(encode::s(enc::kSw, 11, 12, 8), kData, 0xa1b2c3d4u);
  EXPECT_EQ(t, cat({PC0(), A(kData + 8), tok(Kind::S0, 0xd4), tok(Kind::S1, 0xc3), tok(Kind::S2, 0xb2), tok(Kind::S3, 0xa1)}));
  EXPECT_EQ(m.read_word(kData + 8), 0xa1b2c3d4u);
  t = run(encode::s(enc::kSh, 11, 12, 2), kData, 0xa1b2c3d4u);
  EXPECT_EQ(t, cat({PC0(), A(kData + 2), tok(Kind::S0, 0xd4), tok(Kind::S1, 0xc3)}));
  EXPECT_EQ(m.read_word(kData), 0xc3d4ff80u);
  t = run(encode::s(enc::kSb, 11, 12, 1), kData, 0xa1b2c3d4u);
  EXPECT_EQ(t, cat({PC0(), A(kData + 1), tok(Kind::S0, 0xd4)}));
  EXPECT_EQ(m.read_word(kData), 0x8000d480u);
}

TEST_F(Memory, StoreTrapsLeaveMemoryUnchanged) {
  EXPECT_EQ(run(encode::s(enc::kSw, 11, 12, 2), kData, 1), cat({PC0(), A(kData + 2), TRAP(6)}));
  EXPECT_EQ(m.read_word(kData), 0x8000ff80u);
  EXPECT_EQ(m.read_word(kData + 4), 0x78563412u);
  EXPECT_EQ(run(encode::s(enc::kSh, 11, 12, 1), kData, 1), cat({PC0(), A(kData + 1), TRAP(6)}));
  EXPECT_EQ(run(encode::s(enc::kSb, 11, 12, 0), 0x110000, 1), cat({PC0(), A(0x110000), TRAP(7)}));
  EXPECT_EQ(run(encode::s(enc::kSw, 11, 12, 0), 0xfffc, 1), cat({PC0(), A(0xfffc), TRAP(7)}));
  EXPECT_EQ(m.trap_code(), 7u);
}

TEST(SelfModifyingCode, StoreIntoCodeIsSeenByTheNextFetch) {
  // 0: sw x12, 8(x11)   4: addi x10, x0, 1   8: ebreak (overwritten with addi x10, x10, 2)   12: ebreak
  const u32 patch = encode::i(enc::kAddi, 10, 10, 2);
  Machine m = machine_with({encode::s(enc::kSw, 11, 12, 8), encode::i(enc::kAddi, 10, 0, 1), kEbreak, kEbreak});
  m.set_reg(11, kCode);
  m.set_reg(12, patch);
  m.run(1000);
  EXPECT_EQ(m.reg(10), 3u);
  EXPECT_EQ(m.trap_code(), 9u);
  EXPECT_EQ(m.pc(), kCode + 12);
  // Cached slot invalidation: run the same code again from a restored state,
  // with the patched word already decoded once.
  Machine m2 = machine_with({encode::i(enc::kAddi, 10, 10, 1), encode::s(enc::kSw, 11, 12, 0),
                             encode::j(enc::kJal, 0, static_cast<u32>(-8))});
  // 0: addi x10,x10,1   4: sw x12, 0(x11) (replaces word 0 by ebreak)   8: jal x0, -8
  m2.set_reg(11, kCode);
  m2.set_reg(12, kEbreak);
  m2.run(1000);
  EXPECT_EQ(m2.reg(10), 1u);
  EXPECT_EQ(m2.trap_code(), 9u);
  EXPECT_EQ(m2.pc(), kCode);
}

TEST(Jumps, JalAndJalr) {
  Machine m;
  auto t = exec1(m, encode::j(enc::kJal, 1, 0x100));
  EXPECT_EQ(t, cat({PC0(), W(kCode + 4)}));
  EXPECT_EQ(m.pc(), kCode + 0x100);
  EXPECT_EQ(m.reg(1), kCode + 4);
  // jalr x1, 0(x1): reads x1 before writing it.
  t = exec1(m, encode::i(enc::kJalr, 1, 1, 0), {{1, 0x10100}});
  EXPECT_EQ(m.pc(), 0x10100u);
  EXPECT_EQ(m.reg(1), kCode + 4);
  EXPECT_EQ(t, cat({PC0(), W(kCode + 4)}));
  // bit 0 of the target is cleared
  exec1(m, encode::i(enc::kJalr, 5, 6, 1), {{6, 0x10100}});
  EXPECT_EQ(m.pc(), 0x10100u);
  EXPECT_EQ(m.reg(5), kCode + 4);
  exec1(m, encode::i(enc::kJalr, 0, 6, 0xfff), {{6, 0x10101}});
  EXPECT_EQ(m.pc(), 0x10100u) << "imm -1";
  // rd = x0: NOP token
  t = exec1(m, encode::j(enc::kJal, 0, 8));
  EXPECT_EQ(t, cat({PC0(), NOP()}));
}

// Machine::jumps_to_itself: true exactly when the instruction at pc will run forever, each time
// from the same state with the same tokens (so a harness may stop the run after one execution).
TEST(Jumps, JumpsToItselfOnlyAtAFixedPoint) {
  using Regs = std::vector<std::pair<unsigned, u32>>;
  auto at = [](u32 word, const Regs& regs) {
    Machine m = machine_with({word, kEbreak});
    for (auto [r, v] : regs) m.set_reg(r, v);
    return m;
  };
  const u32 minus4 = 0xfffffffcu;
  struct Case {
    const char* what;
    u32 word;
    Regs regs;
    bool loops;
  };
  const Case cases[] = {
      {"jal zero, 0", encode::j(enc::kJal, 0, 0), {}, true},
      {"jal ra, 0 (writes pc + 4 again each time)", encode::j(enc::kJal, 1, 0), {}, true},
      {"jal zero, 8", encode::j(enc::kJal, 0, 8), {}, false},
      {"beq equal, 0", encode::b(enc::kBeq, 5, 6, 0), {{5, 7}, {6, 7}}, true},
      {"beq unequal, 0", encode::b(enc::kBeq, 5, 6, 0), {{5, 7}, {6, 8}}, false},
      {"bne unequal, 0", encode::b(enc::kBne, 5, 6, 0), {{5, 7}, {6, 8}}, true},
      {"blt -1 < 0, 0", encode::b(enc::kBlt, 5, 6, 0), {{5, kM1}, {6, 0}}, true},
      {"bltu 0xffffffff < 0, 0", encode::b(enc::kBltu, 5, 6, 0), {{5, kM1}, {6, 0}}, false},
      {"bge 0 >= -1, 0", encode::b(enc::kBge, 5, 6, 0), {{5, 0}, {6, kM1}}, true},
      {"bgeu 0 >= 0xffffffff, 0", encode::b(enc::kBgeu, 5, 6, 0), {{5, 0}, {6, kM1}}, false},
      {"beq zero, zero, 8", encode::b(enc::kBeq, 0, 0, 8), {}, false},
      {"jalr zero, 0(t0), t0 = pc", encode::i(enc::kJalr, 0, 5, 0), {{5, kCode}}, true},
      {"jalr zero, 0(t0), t0 = pc + 1 (bit 0 cleared)", encode::i(enc::kJalr, 0, 5, 0), {{5, kCode + 1}}, true},
      {"jalr zero, 0(t0), t0 = pc + 8", encode::i(enc::kJalr, 0, 5, 0), {{5, kCode + 8}}, false},
      {"jalr ra, 0(t0), t0 = pc", encode::i(enc::kJalr, 1, 5, 0), {{5, kCode}}, true},
      {"jalr t0, 0(t0), t0 = pc (then t0 = pc + 4: the next target)", encode::i(enc::kJalr, 5, 5, 0), {{5, kCode}},
       false},
      {"jalr t0, -4(t0), t0 = pc + 4 (t0 = pc + 4 again)", encode::i(enc::kJalr, 5, 5, minus4), {{5, kCode + 4}}, true},
      {"addi zero, zero, 0", encode::i(enc::kAddi, 0, 0, 0), {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Machine m = at(c.word, c.regs);
    EXPECT_EQ(m.jumps_to_itself(), c.loops);
    m.step();
    if (!c.loops) continue;
    // A fixed point: the same pc, registers and tokens on every later execution (from the
    // second on: the first of a run also emits PCH, trace.md §4.0).
    EXPECT_EQ(m.pc(), kCode);
    const auto second = m.step();
    const Tokens t1(second.begin(), second.end());
    std::array<u32, 32> regs{};
    for (unsigned r = 0; r < 32; ++r) regs[r] = m.reg(r);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(m.pc(), kCode);
      EXPECT_TRUE(m.jumps_to_itself());
      const auto next = m.step();
      EXPECT_EQ(Tokens(next.begin(), next.end()), t1);
      for (unsigned r = 0; r < 32; ++r) EXPECT_EQ(m.reg(r), regs[r]) << "x" << r;
    }
  }
  // The jalr t0, 0(t0) case really leaves pc: its second execution goes to pc + 4.
  Machine m = at(encode::i(enc::kJalr, 5, 5, 0), {{5, kCode}});
  m.step();
  EXPECT_EQ(m.pc(), kCode);
  m.step();
  EXPECT_EQ(m.pc(), kCode + 4);
  // Not running: false.
  m = at(kEbreak, {});
  m.step();
  EXPECT_EQ(m.status(), Status::kTrapped);
  EXPECT_FALSE(m.jumps_to_itself());
}

TEST(Jumps, MisalignedTargetRaisesFetchMisalignedOnTheJump) {
  Machine m;
  auto t = exec1(m, encode::j(enc::kJal, 1, 2));
  EXPECT_EQ(t, cat({PC0(), TRAP(2)}));
  EXPECT_EQ(m.reg(1), 0u) << "writes no register";
  EXPECT_EQ(m.pc(), kCode);
  t = exec1(m, encode::i(enc::kJalr, 1, 6, 2), {{6, 0x10100}});
  EXPECT_EQ(t, cat({PC0(), TRAP(2)}));
  EXPECT_EQ(m.reg(1), 0u);
  t = exec1(m, encode::i(enc::kJalr, 6, 6, 0), {{6, 0x10103}});
  EXPECT_EQ(t, cat({PC0(), TRAP(2)})) << "0x10103 & ~1 = 0x10102";
  EXPECT_EQ(m.reg(6), 0x10103u);
  // Taken branch to a misaligned target traps; not taken does not.
  t = exec1(m, encode::b(enc::kBeq, 0, 0, 6));
  EXPECT_EQ(t, cat({PC0(), TRAP(2)}));
  t = exec1(m, encode::b(enc::kBne, 0, 0, 6));
  EXPECT_EQ(t, cat({PC0(), tok(Kind::BR, 0)}));
  EXPECT_EQ(m.pc(), kCode + 4);
}

TEST(Jumps, TargetOutsideRamFaultsOnTheNextFetch) {
  Machine m = machine_with({encode::i(enc::kJalr, 1, 6, 0), kEbreak});
  m.set_reg(6, 0x110000);
  auto t = m.step();
  EXPECT_EQ(Tokens(t.begin(), t.end()), cat({PC0(), W(kCode + 4)}));
  EXPECT_EQ(m.pc(), 0x110000u);
  t = m.step();
  EXPECT_EQ(Tokens(t.begin(), t.end()), TRAP(3)) << "a failed fetch emits no pc tokens";
  EXPECT_EQ(m.trap_code(), 3u);
  EXPECT_EQ(m.instructions_retired(), 1u);
  // falling off the end of RAM
  m = machine_with({kEbreak});
  m.set_pc(0x10fffc);
  t = m.step();
  // w = (0x10fffc - 0x10000) / 4 = 0x3ffff: PCH3(0xff), PCL(0xff).
  EXPECT_EQ(Tokens(t.begin(), t.end()), cat({tok(Kind::PCH3, 0xff), tok(Kind::PCL, 0xff), TRAP(1)}))
      << "zero word is illegal";
  m = machine_with({encode::j(enc::kJal, 0, static_cast<u32>(-4))});
  t = m.step();
  EXPECT_EQ(Tokens(t.begin(), t.end()), cat({PC0(), NOP()}));
  EXPECT_EQ(m.pc(), 0xfffcu);
  t = m.step();
  EXPECT_EQ(Tokens(t.begin(), t.end()), TRAP(3));
}

TEST(Branches, AllSixConditions) {
  struct Case {
    Op op;
    u32 a, b;
    bool taken;
  } cases[] = {
      {enc::kBeq, 5, 5, true},      {enc::kBeq, 5, 6, false},     {enc::kBne, 5, 6, true},
      {enc::kBne, 5, 5, false},     {enc::kBlt, kM1, 0, true},    {enc::kBlt, 0, kM1, false},
      {enc::kBlt, 3, 3, false},     {enc::kBge, 3, 3, true},      {enc::kBge, kMin, kMax, false},
      {enc::kBge, kMax, kMin, true}, {enc::kBltu, 0, kM1, true},  {enc::kBltu, kM1, 0, false},
      {enc::kBgeu, kM1, 0, true},   {enc::kBgeu, 3, 3, true},     {enc::kBgeu, 0, 1, false},
  };
  for (const auto& c : cases) {
    Machine m;
    auto t = exec1(m, encode::b(c.op, 11, 12, 0xfffffff0u), {{11, c.a}, {12, c.b}});
    EXPECT_EQ(t, cat({PC0(), tok(Kind::BR, c.taken ? 1 : 0)})) << encoding_of(c.op).mnemonic << " " << c.a << " " << c.b;
    EXPECT_EQ(m.pc(), c.taken ? kCode - 16 : kCode + 4);
  }
}

TEST(System, FenceEbreakIllegal) {
  Machine m;
  EXPECT_EQ(exec1(m, 0x0ff0000fu), cat({PC0(), NOP()}));
  EXPECT_EQ(m.pc(), kCode + 4);
  EXPECT_EQ(exec1(m, kEbreak), cat({PC0(), TRAP(9)}));
  EXPECT_EQ(m.instructions_retired(), 0u);
  for (u32 w : {0x00000000u, 0xffffffffu, 0x0000100fu, 0x40001013u, 0x0000700bu}) {
    EXPECT_EQ(exec1(m, w), cat({PC0(), TRAP(1)})) << std::hex << w << ": pc tokens, then TRAP(1)";
    EXPECT_EQ(m.trap_code(), 1u);
    EXPECT_EQ(m.pc(), kCode);
  }
  // After a trap nothing more runs.
  EXPECT_TRUE(m.step().empty());
  EXPECT_FALSE(m.next_token().has_value());
}

// write(1, kData, 3) then write(2, kData+3, 1) then exit(status): 21 words (every li is lui +
// addi), the ecalls at words 8, 15 and 20. With the data "hi\n!" it prints "hi\n" and "!".
std::vector<u32> write_write_exit(u32 status) {
  std::vector<u32> code;
  progen::emit_li(code, 17, 64);
  progen::emit_li(code, 10, 1);
  progen::emit_li(code, 11, kData);
  progen::emit_li(code, 12, 3);
  code.push_back(kEcall);
  progen::emit_li(code, 10, 2);
  progen::emit_li(code, 11, kData + 3);
  progen::emit_li(code, 12, 1);
  code.push_back(kEcall);
  progen::emit_li(code, 17, 93);
  progen::emit_li(code, 10, status);
  code.push_back(kEcall);
  return code;
}

TEST(Ecall, WriteExitAndBadCalls) {
  const std::vector<u32> code = write_write_exit(0x1ff);
  Machine m = machine_with(code, {'h', 'i', '\n', '!'});
  Tokens all;
  while (auto t = m.next_token()) all.push_back(*t);
  EXPECT_EQ(m.console_out(), "hi\n");
  EXPECT_EQ(m.console_err(), "!");
  EXPECT_EQ(m.status(), Status::kExited);
  EXPECT_EQ(m.exit_status(), 0xffu);
  EXPECT_EQ(m.instructions_retired(), code.size());
  // Every li is lui + addi: 8 instructions, then the first ecall (word 8),
  // 6 more, the second ecall (word 15), 4 more, exit (word 20).  Each
  // instruction starts with PCL (PCH0(0x00) only before the first, all words
  // are below 256): 2 + 4 tokens for word 0, 1 + 4 for the other li words.
  ASSERT_EQ(code.size(), 21u);
  ASSERT_EQ(code[8], kEcall);
  ASSERT_EQ(code[15], kEcall);
  const std::size_t first_at = 6 + 7 * 5;  // tokens of words 0..7
  Tokens first(all.begin() + first_at, all.begin() + first_at + 11);
  EXPECT_EQ(first, cat({PC(8, false), tok(Kind::OI, 0), tok(Kind::OUT, 'h'), tok(Kind::OI, 1),
                        tok(Kind::OUT, 'i'), tok(Kind::OI, 2), tok(Kind::OUT, '\n'), W(3)}));
  const std::size_t second_at = first_at + 11 + 6 * 5;
  Tokens second(all.begin() + second_at, all.begin() + second_at + 7);
  EXPECT_EQ(second, cat({PC(15, false), tok(Kind::OI, 0), tok(Kind::ERR, '!'), W(1)}));
  EXPECT_EQ(Tokens(all.end() - 2, all.end()), cat({PC(20, false), tok(Kind::EXIT, 0xff)}));
  EXPECT_EQ(m.steps(), all.size());
  EXPECT_EQ(all.size(), second_at + 7 + 4 * 5 + 2);
}

// isa.md §6: retired means completed. An instruction a step limit cut (its tokens pending) is
// executed and counted by instructions_retired(), but not by instructions_completed().
TEST(Retired, AnInstructionCutByTheStepLimitIsNotCompleted) {
  Machine m = machine_with({0x00000013u, kEbreak});  // nop: PCH0, PCL, NOP; ebreak: PCL, TRAP(9)
  EXPECT_EQ(m.run(2).stop, Stop::kStepLimit);
  EXPECT_EQ(m.instructions_retired(), 1u);
  EXPECT_EQ(m.instructions_completed(), 0u);
  m.run(1);
  EXPECT_EQ(m.instructions_completed(), 1u);
  m.run(1);  // the ebreak's PCL: its TRAP pending; a trapping instruction never retires
  EXPECT_EQ(m.instructions_retired(), 1u);
  EXPECT_EQ(m.instructions_completed(), 1u);
  EXPECT_EQ(m.run(1).stop, Stop::kTrap);
  EXPECT_EQ(m.instructions_completed(), 1u);
  // An exit cut after its pc tokens: retired, not completed until EXIT is delivered.
  std::vector<u32> code;
  progen::emit_li(code, 17, 93);
  code.push_back(kEcall);
  Machine e = machine_with(code);
  const std::uint64_t before_exit = 2 + 4 + 1 + 4;  // li = lui (PCH0, PCL, W) + addi (PCL, W)
  e.run(before_exit + 1);                           // the ecall's PCL; EXIT pending
  EXPECT_EQ(e.status(), Status::kExited);
  EXPECT_EQ(e.instructions_retired(), 3u);
  EXPECT_EQ(e.instructions_completed(), 2u);
  EXPECT_EQ(e.run(1).stop, Stop::kExit);
  EXPECT_EQ(e.instructions_completed(), 3u);
}

TEST(Ecall, ConsoleSinkReceivesWritesAndNothingIsKept) {
  // The same writes and exit(0), with a console sink set.
  Machine m = machine_with(write_write_exit(0), {'h', 'i', '\n', '!'});
  std::vector<std::pair<int, std::string>> writes;
  m.set_console_sink([&](int fd, std::string_view b) { writes.emplace_back(fd, std::string(b)); });
  const Machine plain = m;
  const RunResult r = m.run(1000);
  EXPECT_EQ(r.stop, Stop::kExit);
  EXPECT_EQ(writes, (std::vector<std::pair<int, std::string>>{{1, "hi\n"}, {2, "!"}}));
  EXPECT_EQ(m.console_out(), "") << "a sink keeps nothing";
  EXPECT_EQ(m.console_err(), "");
  // The same run without a sink keeps the bytes, with the same tokens.
  Machine kept = plain;
  kept.set_console_sink({});
  EXPECT_EQ(kept.run(1000).steps, r.steps);
  EXPECT_EQ(kept.console_out(), "hi\n");
  EXPECT_EQ(kept.console_err(), "!");
  EXPECT_EQ(writes.size(), 2u) << "the copy's empty sink does not reach the original's";
}

TEST(Ecall, BadFdBadBufferUnknownNumber) {
  auto run = [](u32 a7, u32 a0, u32 a1, u32 a2) {
    Machine m = machine_with({kEcall});
    m.set_reg(17, a7);
    m.set_reg(10, a0);
    m.set_reg(11, a1);
    m.set_reg(12, a2);
    auto s = m.step();
    return std::make_pair(Tokens(s.begin(), s.end()), m);
  };
  EXPECT_EQ(run(64, 3, kData, 1).first, cat({PC0(), TRAP(8)}));
  EXPECT_EQ(run(64, 0, kData, 1).first, cat({PC0(), TRAP(8)}));
  EXPECT_EQ(run(64, 1, 0xfff0, 0x20).first, cat({PC0(), TRAP(5)})) << "buffer starts below RAM";
  EXPECT_EQ(run(64, 1, 0x10fff0, 0x11).first, cat({PC0(), TRAP(5)})) << "buffer ends past RAM";
  // the last 16 bytes of RAM are zero
  EXPECT_EQ(run(64, 1, 0x10fff0, 0x10).first,
            cat({PC0(), WRITE(Kind::OUT, std::vector<std::uint8_t>(16, 0)), W(0x10)}));
  auto [t, m] = run(64, 1, 0, 0);
  EXPECT_EQ(t, cat({PC0(), W(0)})) << "len 0: buffer not checked";
  EXPECT_EQ(m.reg(10), 0u);
  EXPECT_EQ(run(65, 1, kData, 1).first, cat({PC0(), TRAP(8)}));
  EXPECT_EQ(run(0, 1, kData, 1).first, cat({PC0(), TRAP(8)}));
  // isa.md §5: len > 65,535 traps BAD_ECALL, after the fd check and before
  // the buffer check.
  auto [t2, m2] = run(64, 2, kData, 0xffffffffu);
  EXPECT_EQ(t2, cat({PC0(), TRAP(8)})) << "len checked before the buffer";
  EXPECT_EQ(m2.reg(10), 2u) << "trap changes no register";
  EXPECT_EQ(run(64, 1, kData, 65536).first, cat({PC0(), TRAP(8)})) << "buffer in RAM, len 65,536";
  EXPECT_EQ(run(64, 3, 0, 65536).first, cat({PC0(), TRAP(8)})) << "bad fd";
  EXPECT_EQ(run(64, 1, 0x100002, 65535).first, cat({PC0(), TRAP(5)})) << "len 65,535 passes, buffer ends past RAM";
  auto [t3, m3] = run(64, 1, 0x100000, 65535);
  ASSERT_EQ(t3.size(), 2 + 2 * 65535 + 255 + 4u) << "OIH(1..255), OI and OUT per byte";
  EXPECT_EQ(Tokens(t3.begin() + 2 + 2 * 256, t3.begin() + 2 + 2 * 256 + 3),
            cat({tok(Kind::OIH, 1), tok(Kind::OI, 0), tok(Kind::OUT, 0)}));
  EXPECT_EQ(Tokens(t3.end() - 6, t3.end()), cat({tok(Kind::OI, 0xfe), tok(Kind::OUT, 0), W(65535)})) << "last byte i = 65534";
  EXPECT_EQ(m3.reg(10), 65535u);
}

TEST(Bignum, WorkedExamplesOfBignumMd4) {
  const u32 addc = encode::r(enc::kBnAddc, 10, 11, 12), subb = encode::r(enc::kBnSubb, 10, 11, 12);
  struct Case {
    u32 word, c, a, b, rd, c_after;
  } cases[] = {
      {addc, 0, 0xffffffffu, 1, 0, 1},
      {addc, 1, 0xffffffffu, 0xffffffffu, 0xffffffffu, 1},
      {subb, 0, 0, 1, 0xffffffffu, 1},
      {subb, 1, 5, 4, 0, 0},
      {addc, 1, 1, 2, 4, 0},
      {subb, 1, 0, 0xffffffffu, 0, 1},
  };
  for (const auto& c : cases) {
    Machine m = machine_with({c.word});
    m.set_carry(c.c);
    m.set_reg(11, c.a);
    m.set_reg(12, c.b);
    auto s = m.step();
    EXPECT_EQ(Tokens(s.begin(), s.end()), cat({PC0(), W(c.rd), tok(Kind::CF, c.c_after)}));
    EXPECT_EQ(m.reg(10), c.rd);
    EXPECT_EQ(m.carry(), c.c_after);
  }
  // bn.xchgc: c=1, a=2 -> rd=1, c=0
  Machine m = machine_with({encode::r(enc::kBnXchgc, 10, 11, 0)});
  m.set_carry(1);
  m.set_reg(11, 2);
  auto s = m.step();
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({PC0(), W(1), tok(Kind::CF, 0)}));
  EXPECT_EQ(m.carry(), 0u);
  // bn.xchgc x0, x0 clears the carry: NOP, CF(0)
  m = machine_with({encode::r(enc::kBnXchgc, 0, 0, 0)});
  m.set_carry(1);
  s = m.step();
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({PC0(), NOP(), tok(Kind::CF, 0)}));
  EXPECT_EQ(m.carry(), 0u);
  // bn.addc with rd = x0 still updates c
  m = machine_with({encode::r(enc::kBnAddc, 0, 11, 12)});
  m.set_reg(11, 0xffffffffu);
  m.set_reg(12, 1);
  s = m.step();
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({PC0(), NOP(), tok(Kind::CF, 1)}));
  EXPECT_EQ(m.carry(), 1u);
}

TEST(Bignum, AccumulatorExamples) {
  // acc=0, a=b=0xFFFFFFFF -> acc = 0x00000000_FFFFFFFE_00000001
  Machine m = machine_with({encode::r(enc::kBnMac, 0, 11, 12)});
  m.set_reg(11, 0xffffffffu);
  m.set_reg(12, 0xffffffffu);
  auto s = m.step();
  EXPECT_EQ(m.acc(), (sem::Acc96{{0x00000001u, 0xfffffffeu, 0}}));
  EXPECT_EQ(Tokens(s.begin(), s.end()),
            (Tokens{11520, 11264, token_id(Kind::AC0, 0x01), token_id(17, 0), token_id(18, 0), token_id(19, 0),
                    token_id(20, 0xfe), token_id(21, 0xff), token_id(22, 0xff), token_id(23, 0xff),
                    token_id(24, 0), token_id(25, 0), token_id(26, 0), token_id(27, 0)}));
  // acc = 2^96-1, a=b=1 -> 0 (wraps)
  m = machine_with({encode::r(enc::kBnMac, 0, 11, 12)});
  m.set_acc({{0xffffffffu, 0xffffffffu, 0xffffffffu}});
  m.set_reg(11, 1);
  m.set_reg(12, 1);
  s = m.step();
  EXPECT_EQ(m.acc(), (sem::Acc96{{0, 0, 0}}));
  EXPECT_EQ(s.size(), 14u) << "PCH, PCL, AC0..AC11";
  // carry across limbs: acc = 0x0_ffffffff_ffffffff + 1
  m = machine_with({encode::r(enc::kBnMac, 0, 11, 12)});
  m.set_acc({{0xffffffffu, 0xffffffffu, 0x7}});
  m.set_reg(11, 1);
  m.set_reg(12, 1);
  m.step();
  EXPECT_EQ(m.acc(), (sem::Acc96{{0, 0, 8}}));
  // bn.accrd: acc=0x00000001_00000002_00000003 -> rd=3, acc=0x0_00000001_00000002
  m = machine_with({encode::r(enc::kBnAccrd, 10, 0, 0), encode::r(enc::kBnAccclr, 0, 0, 0)});
  m.set_acc({{3, 2, 1}});
  s = m.step();
  // trace.md §4.6: W(acc mod 2^32), then AC0..AC11 of the new acc (2, 0, 0, 0, 1, 0, ...)
  Tokens shifted;
  for (std::uint32_t i = 0; i < 12; ++i) shifted.push_back(token_id(16 + i, i == 0 ? 2 : i == 4 ? 1 : 0));
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({PC0(), W(3), shifted}));
  EXPECT_EQ(m.acc(), (sem::Acc96{{2, 1, 0}}));
  s = m.step();
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({PC(1, false), NOP()}));
  EXPECT_EQ(m.acc(), (sem::Acc96{{0, 0, 0}}));
}

TEST(Loader, RamRangeAndEntryChecksAreOneLine) {
  auto expect_load_error = [](format::GuestImage img, const std::string& needle) {
    Machine m;
    try {
      m.load(img);
      FAIL() << "accepted; expected " << needle;
    } catch (const LoadError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos);
    }
  };
  expect_load_error(progen::image_from_code({kEbreak}, 0xfffc), "ELF: program header 0 (PT_LOAD) [0xfffc, 0x10000) is not inside RAM [0x10000, 0x110000); link for the machine's RAM: see guests/runtime/link.ld (docs/guests.md)");
  expect_load_error(progen::image_from_code({kEbreak}, 0x10fffc, {format::Segment{0x10fff0, 0x20, 6, {}}}),
                    "program header 1 (PT_LOAD) [0x10fff0, 0x110010) is not inside RAM");
  // A segment read from a file is named by its program header's index (readelf -l's numbering).
  auto from_file = progen::image_from_code({kEbreak}, 0x10000, {format::Segment{0x12000, 0x200000, 6, {}}});
  from_file.segments[0].phdr_index = 1;
  from_file.segments[1].phdr_index = 2;
  expect_load_error(from_file, "ELF: program header 2 (PT_LOAD) [0x12000, 0x212000) is not inside RAM");
  auto img = progen::image_from_code({kEbreak, kEbreak});
  img.entry = 0x10002;
  expect_load_error(img, "entry point 0x10002 is not a multiple of 4");
  // Largest image that fits: the whole RAM.
  format::GuestImage whole = progen::image_from_code({kEbreak});
  whole.segments[0].memsz = kRamSize;
  Machine m;
  EXPECT_NO_THROW(m.load(whole));
  // Segment bytes are copied, the rest of memsz and RAM is zero.
  format::Segment d{0x20000, 8, 6, {1, 2}};
  m.load(progen::image_from_code({kEbreak}, kCode, {d}));
  EXPECT_EQ(m.read_word(0x20000), 0x0201u);
  EXPECT_EQ(m.read_word(0x20004), 0u);
  EXPECT_EQ(m.pc(), kCode);
  EXPECT_EQ(m.reg(2), 0u) << "reset leaves sp = 0";
}

}  // namespace
}  // namespace lockstep::ref::test
