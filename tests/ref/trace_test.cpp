// Exact traces (trace.md §4-5), step limits, the step-wise and pull APIs,
// save/restore.
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

// trace.md §5: addi a0, x0, -1; sw a0, 0(sp) with sp = 0x0010fffc; ecall exit.
Machine spec_example() {
  Machine m = machine_with({0xfff00513u, 0x00a12023u, kEcall});
  m.set_reg(2, 0x0010fffcu);
  m.set_reg(17, 93);
  return m;
}
// The id column of trace.md §5's table: PCH0(0x00), PCL(0x00), W(-1); PCL(0x01),
// A(0x10fffc), S0..S3; PCL(0x02), EXIT(0xff).
const Tokens kSpecExample = {11520, 11264, 511,  767,  1023, 1279,  11265, 1532, 1791,
                             1808,  2048,  2559, 2815, 3071, 3327, 11266, 8191};

TEST(Trace, ExampleOfTraceMd5) {
  Machine m = spec_example();
  Tokens got;
  const auto r = m.run(1000, [&](std::span<const u32> t) { got.insert(got.end(), t.begin(), t.end()); });
  EXPECT_EQ(got, kSpecExample);
  EXPECT_EQ(r.stop, Stop::kExit);
  EXPECT_EQ(r.steps, 17u);
  EXPECT_EQ(r.instructions, 3u);
  EXPECT_EQ(m.exit_status(), 0xffu);
  EXPECT_EQ(m.read_word(0x10fffc), 0xffffffffu);
}

TEST(Trace, CanonicalNopIs7680) {
  Machine m;
  // trace.md §5: the canonical NOP emits its pc tokens, then NOP(0) = 7680.
  EXPECT_EQ(exec1(m, 0x00000013u), (Tokens{11520, 11264, 7680}));
}

TEST(Trace, PcTokensWhereThePageChanges) {
  // trace.md §4.0: words 0..256 are `addi x0, x0, 0`, word 257 is `jal x0, -8`
  // (back to word 255).  PCH0(0x00) before word 0; PCL alone up to word 255;
  // PCH0(0x01) before word 256; word 257 PCL(0x01); word 255 again PCH0(0x00),
  // PCL(0xff); word 256 again PCH0(0x01), PCL(0x00).
  std::vector<u32> code(257, 0x00000013u);
  code.push_back(encode::j(Op::kJal, 0, static_cast<u32>(-8)));
  Machine m = machine_with(code);
  Tokens got;
  m.run(2 + 1 + 255 * 2 + 3 + 2 + 3 + 3, [&](std::span<const u32> t) { got.insert(got.end(), t.begin(), t.end()); });
  Tokens want = cat({PC(0, true), NOP()});
  for (u32 w = 1; w < 256; ++w) want = cat({want, PC(w, false), NOP()});
  want = cat({want, PC(256, true), NOP(), PC(257, false), NOP(), PC(255, true), NOP(), PC(256, true), NOP()});
  EXPECT_EQ(got, want);
  EXPECT_EQ(want[2 + 1 + 255 * 2], 11521u) << "PCH0(0x01)";
  EXPECT_EQ(m.pc(), kCode + 257 * 4);
}

TEST(Trace, PcTokensOfTheExampleOfTraceMd5) {
  // trace.md §5: the instruction at 0x50400 (w = 0x10100) reached from the one
  // at 0x503fc (w = 0x100ff) begins with PCH1(0x01) (id 11777), PCL(0x00).
  Machine m = machine_with({kEbreak});
  const u32 addi = encode::i(Op::kAddi, 10, 10, 1);
  const std::uint8_t bytes[8] = {static_cast<std::uint8_t>(addi), static_cast<std::uint8_t>(addi >> 8),
                                 static_cast<std::uint8_t>(addi >> 16), static_cast<std::uint8_t>(addi >> 24),
                                 static_cast<std::uint8_t>(addi), static_cast<std::uint8_t>(addi >> 8),
                                 static_cast<std::uint8_t>(addi >> 16), static_cast<std::uint8_t>(addi >> 24)};
  m.write_memory(0x503fc, bytes);
  m.set_pc(0x503fc);
  auto s = m.step();
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({tok(Kind::PCH1, 0x00), tok(Kind::PCL, 0xff), W(1)}));
  s = m.step();
  EXPECT_EQ(Tokens(s.begin(), s.end()), cat({Tokens{11777}, tok(Kind::PCL, 0x00), W(2)}));
}

TEST(Trace, UntracedRunCountsTheSameSteps) {
  Machine m = spec_example();
  const auto r = m.run(1000);
  EXPECT_EQ(r.stop, Stop::kExit);
  EXPECT_EQ(r.steps, 17u);
  EXPECT_EQ(m.steps(), 17u);
  EXPECT_EQ(m.instructions_retired(), 3u);
}

TEST(Trace, StepLimitInsideAnInstructionLeavesTokensPending) {
  for (int traced = 0; traced < 2; ++traced) {
    Machine m = spec_example();
    Tokens got;
    auto sink = [&](std::span<const u32> t) { got.insert(got.end(), t.begin(), t.end()); };
    // 9 steps: the addi (6 tokens), then PCL(0x01), A0, A1 of the store.
    const auto r = traced ? m.run(9, sink) : m.run(9);
    EXPECT_EQ(r.stop, Stop::kStepLimit);
    EXPECT_EQ(r.steps, 9u);
    EXPECT_EQ(m.steps(), 9u);
    EXPECT_EQ(m.instructions_retired(), 2u) << "the cut store executed completely";
    EXPECT_EQ(m.read_word(0x10fffc), 0xffffffffu);
    // The rest of the store's tokens come first, then the next instruction's.
    EXPECT_EQ(m.next_token(), std::optional<u32>(1808));
    auto s = m.step();
    EXPECT_EQ(Tokens(s.begin(), s.end()), (Tokens{2048, 2559, 2815, 3071, 3327})) << "pending rest of the store";
    s = m.step();
    EXPECT_EQ(Tokens(s.begin(), s.end()), (Tokens{11266, 8191}));
    EXPECT_TRUE(m.step().empty());
    EXPECT_EQ(m.steps(), 17u);
    if (traced) {
      EXPECT_EQ(got, Tokens(kSpecExample.begin(), kSpecExample.begin() + 9));
    }
  }
}

TEST(Trace, ZeroStepLimitRunsNothing) {
  Machine m = spec_example();
  const auto r = m.run(0);
  EXPECT_EQ(r.stop, Stop::kStepLimit);
  EXPECT_EQ(m.instructions_retired(), 0u);
  EXPECT_EQ(m.steps(), 0u);
}

TEST(Trace, PullApiMatchesRun) {
  Machine a = spec_example();
  Tokens pulled;
  while (auto t = a.next_token()) pulled.push_back(*t);
  EXPECT_EQ(pulled, kSpecExample);
  EXPECT_FALSE(a.active());
}

TEST(Trace, DivisionMicroSteps) {
  // DIVU 7 / 2: ua = 7, ub = 2.  Bits 31..3 of 7 are 0: r stays 0 < 2, q = 0.
  // i=2: r = 1 (<2) q=0; i=1: r = 3 -> 1, q=1; i=0: r = 3 -> 1, q=1.  Quotient 3.
  Machine m;
  auto t = exec1(m, encode::r(Op::kDivu, 10, 11, 12), {{11, 7}, {12, 2}});
  Tokens want = PC0();
  for (u32 i = 31; i >= 2; --i) want.push_back(token_id(Kind::DQ, 2 * i));
  want.push_back(token_id(Kind::DQ, 2 * 1 + 1));
  want.push_back(token_id(Kind::DQ, 2 * 0 + 1));
  const Tokens w3 = W(3);
  want.insert(want.end(), w3.begin(), w3.end());
  EXPECT_EQ(t, want);
}

TEST(Trace, DivisionByZeroHasAllQuotientBitsOne) {
  for (Op op : {Op::kDiv, Op::kDivu, Op::kRem, Op::kRemu}) {
    Machine m;
    auto t = exec1(m, encode::r(op, 10, 11, 12), {{11, 0x1234}, {12, 0}});
    ASSERT_EQ(t.size(), 38u) << "PCH, PCL, 32 DQ, 4 W";
    EXPECT_EQ(Tokens(t.begin(), t.begin() + 2), PC0());
    for (u32 k = 0; k < 32; ++k) EXPECT_EQ(t[2 + k], token_id(Kind::DQ, 2 * (31 - k) + 1));
    const bool rem = op == Op::kRem || op == Op::kRemu;
    EXPECT_EQ(Tokens(t.begin() + 34, t.end()), W(rem ? 0x1234u : 0xffffffffu));
  }
}

TEST(Trace, SignedDivisionUsesMagnitudes) {
  // DIV -2^31 / -1: magnitudes 2^31 and 1, so q_31 = 1 and all other bits 0;
  // the DQ tokens ignore the overflow special case, the W shows -2^31.
  Machine m;
  // Tokens 0, 1 are the pc tokens, 2..33 the DQ, 34..37 the W.
  auto t = exec1(m, encode::r(Op::kDiv, 10, 11, 12), {{11, 0x80000000u}, {12, 0xffffffffu}});
  ASSERT_EQ(t.size(), 38u);
  EXPECT_EQ(Tokens(t.begin(), t.begin() + 2), PC0());
  EXPECT_EQ(t[2], token_id(Kind::DQ, 63));
  for (u32 k = 1; k < 32; ++k) EXPECT_EQ(t[2 + k], token_id(Kind::DQ, 2 * (31 - k))) << k;
  EXPECT_EQ(Tokens(t.begin() + 34, t.end()), W(0x80000000u));
  // REM -7 % 2: magnitudes 7 and 2 (same digits as the DIVU example), result -1.
  t = exec1(m, encode::r(Op::kRem, 10, 11, 12), {{11, static_cast<u32>(-7)}, {12, 2}});
  EXPECT_EQ(t[2 + 30], token_id(Kind::DQ, 3));
  EXPECT_EQ(t[2 + 31], token_id(Kind::DQ, 1));
  EXPECT_EQ(t[2 + 29], token_id(Kind::DQ, 4));
  EXPECT_EQ(Tokens(t.begin() + 34, t.end()), W(0xffffffffu));
}

TEST(Trace, LongWriteCutByAStepLimitInAnUntracedRun) {
  // write(1, kData, 100) then exit(0): PCL, 100 x (OI, OUT), W(100), cut in
  // the middle.  Every li is lui + addi: words 0..7 emit 2 + 4, then 7 x (1 + 4)
  // = 41 tokens; the write (word 8) 1 + 200 + 4 = 205; words 9..12 4 x 5 and
  // the exit (word 13) PCL, EXIT.
  std::vector<u32> code;
  progen::emit_li(code, 17, 64);
  progen::emit_li(code, 10, 1);
  progen::emit_li(code, 11, kData);
  progen::emit_li(code, 12, 100);
  code.push_back(kEcall);
  progen::emit_li(code, 17, 93);
  progen::emit_li(code, 10, 0);
  code.push_back(kEcall);
  std::vector<std::uint8_t> text(100);
  for (int i = 0; i < 100; ++i) text[i] = static_cast<std::uint8_t>('a' + i % 26);
  ASSERT_EQ(code.size(), 14u);
  Machine m = machine_with(code, text);
  const auto r = m.run(41 + 1 + 2 * 50);  // cut after byte 49
  EXPECT_EQ(r.stop, Stop::kStepLimit);
  EXPECT_EQ(m.console_out().size(), 100u);
  auto s = m.step();
  ASSERT_EQ(s.size(), 104u);
  EXPECT_EQ(s[0], token_id(Kind::OI, 50));
  EXPECT_EQ(s[1], token_id(Kind::OUT, 'a' + 50 % 26));
  EXPECT_EQ(Tokens(s.end() - 4, s.end()), W(100));
  const auto r2 = m.run(1000);
  EXPECT_EQ(r2.stop, Stop::kExit);
  EXPECT_EQ(m.steps(), 41u + 205 + 20 + 2);
}

TEST(Trace, SaveRestoreReplaysExactly) {
  // A loop: x10 counts down from 50, storing into memory each iteration.
  const std::vector<u32> code = {
      encode::i(Op::kAddi, 10, 0, 50),          // 0
      encode::u(Op::kLui, 11, kData),           // 4
      encode::s(Op::kSw, 11, 10, 0),            // 8
      encode::i(Op::kAddi, 11, 11, 4),          // 12
      encode::i(Op::kAddi, 10, 10, 0xfff),      // 16
      encode::b(Op::kBne, 10, 0, 0xfffffff4u),  // 20 -> 8
      encode::i(Op::kAddi, 17, 0, 93),          // 24
      kEcall};
  Machine m = machine_with(code);
  Tokens first_part;
  auto sink1 = [&](std::span<const u32> t) { first_part.insert(first_part.end(), t.begin(), t.end()); };
  m.run(103, sink1);
  const MachineState snap = m.save();
  Tokens rest1, rest2;
  m.run(1u << 20, [&](std::span<const u32> t) { rest1.insert(rest1.end(), t.begin(), t.end()); });
  const auto end_steps = m.steps();
  m.restore(snap);
  EXPECT_EQ(m.steps(), 103u);
  m.run(1u << 20, [&](std::span<const u32> t) { rest2.insert(rest2.end(), t.begin(), t.end()); });
  EXPECT_EQ(rest1, rest2);
  EXPECT_EQ(m.steps(), end_steps);
  EXPECT_EQ(m.status(), Status::kExited);
  EXPECT_EQ(m.read_word(kData), 50u);
  EXPECT_EQ(m.read_word(kData + 49 * 4), 1u);
  // addi (PCH, PCL, W) and lui (PCL, W); 50 x (sw: PCL, A, S0..S3; two addi:
  // PCL, W; bne: PCL, BR); addi (PCL, W); exit (PCL, EXIT).
  EXPECT_EQ(end_steps, 6u + 5 + 50 * (9 + 5 + 5 + 2) + 5 + 2);
}

}  // namespace
}  // namespace lockstep::ref::test

namespace lockstep::ref::test {
namespace {

// Consistency of the three ways to run (untraced, traced, step-wise) and of
// step limits, on random programs including bignum ops.  Seeded (printed).
TEST(TraceConsistency, UntracedTracedStepwiseAndCutsAgree) {
  const std::uint64_t seed = 20261129;
  std::printf("[ trace-consistency ] seed %llu\n", static_cast<unsigned long long>(seed));
  progen::Random rng(seed);
  for (int k = 0; k < 20; ++k) {
    const progen::Batch batch = progen::make_batch(seed + k, 5, 60);
    auto image = batch.image;
    // Sprinkle bignum ops: replace a few body words (they write registers and c/acc only).
    for (const auto& b : batch.bodies) {
      for (u32 a = b.code_begin; a < b.code_end; a += 4) {
        if (!rng.chance(6)) continue;
        static constexpr Op kBn[] = {Op::kBnAddc, Op::kBnSubb, Op::kBnXchgc, Op::kBnMac, Op::kBnAccrd, Op::kBnAccclr};
        const Op op = kBn[rng.below(6)];
        const auto& row = encoding_of(op);
        u32 rd = (row.operands & kOpdRd) ? rng.below(32) : 0;
        if (rd == b.base_reg) rd = 0;
        const u32 w = encode::r(op, rd, (row.operands & kOpdRs1) ? rng.below(32) : 0, (row.operands & kOpdRs2) ? rng.below(32) : 0);
        std::memcpy(image.segments[0].bytes.data() + (a - image.segments[0].vaddr), &w, 4);
      }
    }
    SCOPED_TRACE("seed " + std::to_string(seed) + ", program " + std::to_string(k));
    Machine fast, traced, stepwise;
    fast.load(image);
    traced.load(image);
    stepwise.load(image);
    fast.run(~0ull);
    Tokens all;
    traced.run(~0ull, [&](std::span<const u32> t) { all.insert(all.end(), t.begin(), t.end()); });
    Tokens stepped;
    for (auto s = stepwise.step(); !s.empty(); s = stepwise.step()) stepped.insert(stepped.end(), s.begin(), s.end());
    ASSERT_EQ(all, stepped);
    ASSERT_EQ(fast.steps(), all.size());
    for (const Machine* m : {&traced, &stepwise}) {
      EXPECT_EQ(m->status(), fast.status());
      EXPECT_EQ(m->instructions_retired(), fast.instructions_retired());
      EXPECT_EQ(m->console_out(), fast.console_out());
      EXPECT_EQ(m->carry(), fast.carry());
      EXPECT_EQ(m->acc(), fast.acc());
      for (unsigned r = 0; r < 32; ++r) EXPECT_EQ(m->reg(r), fast.reg(r));
    }
    // Cut at random points with untraced runs, then trace the rest: same tail.
    for (int cut = 0; cut < 5; ++cut) {
      const std::uint64_t at = rng.below(static_cast<u32>(all.size()));
      Machine m;
      m.load(image);
      m.run(at);
      ASSERT_EQ(m.steps(), at);
      Tokens rest;
      m.run(~0ull, [&](std::span<const u32> t) { rest.insert(rest.end(), t.begin(), t.end()); });
      ASSERT_EQ(rest, Tokens(all.begin() + static_cast<std::ptrdiff_t>(at), all.end())) << "cut at " << at;
    }
  }
}

}  // namespace
}  // namespace lockstep::ref::test
