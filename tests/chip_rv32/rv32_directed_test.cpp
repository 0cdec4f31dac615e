// Directed programs: instruction words encoded here from the Unpriv bit layouts, expected tokens
// worked by hand from docs/spec/isa.md and trace.md (never from the chip).
#include <gtest/gtest.h>

#include <optional>

#include "rv32_test_util.hpp"

namespace lockstep::chip::rv32 {
namespace {

// Unpriv section 2.2 instruction formats.
std::uint32_t r_type(std::uint32_t f7, std::uint32_t rs2, std::uint32_t rs1, std::uint32_t f3, std::uint32_t rd, std::uint32_t op) {
  return f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}
std::uint32_t i_type(std::int32_t imm, std::uint32_t rs1, std::uint32_t f3, std::uint32_t rd, std::uint32_t op) {
  return (static_cast<std::uint32_t>(imm) & 0xFFF) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}
std::uint32_t s_type(std::int32_t imm, std::uint32_t rs2, std::uint32_t rs1, std::uint32_t f3) {
  const std::uint32_t u = static_cast<std::uint32_t>(imm);
  return ((u >> 5) & 0x7F) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (u & 0x1F) << 7 | 0x23;
}
std::uint32_t b_type(std::int32_t imm, std::uint32_t rs2, std::uint32_t rs1, std::uint32_t f3) {
  const std::uint32_t u = static_cast<std::uint32_t>(imm);
  return ((u >> 12) & 1) << 31 | ((u >> 5) & 0x3F) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | ((u >> 1) & 0xF) << 8 |
         ((u >> 11) & 1) << 7 | 0x63;
}
std::uint32_t u_type(std::uint32_t imm20, std::uint32_t rd, std::uint32_t op) { return imm20 << 12 | rd << 7 | op; }

Token T(std::uint32_t kind, std::uint32_t payload) { return 256 * kind + payload; }
enum : std::uint32_t { W0 = 1, A0 = 5, S0 = 9, BR = 13, NOP = 30, EXIT = 31, TRAP = 32 };
std::vector<Token> W(std::uint32_t v) {
  return {T(W0, v & 0xFF), T(W0 + 1, (v >> 8) & 0xFF), T(W0 + 2, (v >> 16) & 0xFF), T(W0 + 3, v >> 24)};
}
std::vector<Token> A(std::uint32_t v) {
  return {T(A0, v & 0xFF), T(A0 + 1, (v >> 8) & 0xFF), T(A0 + 2, (v >> 16) & 0xFF), T(A0 + 3, v >> 24)};
}
std::vector<Token> cat(std::vector<Token> a, const std::vector<Token>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// trace.md section 4.0: the pc tokens of the instruction at `pc`, given the pc of the instruction
// executed before it (none: the first of the run, which always shows PCH).
enum : std::uint32_t { PCL = 44, PCH0 = 45 };
std::vector<Token> pc_tokens(std::uint32_t pc, std::optional<std::uint32_t> prev) {
  if (pc < 0x10000 || pc > 0x10FFFC) return {T(TRAP, 3)};  // fetch outside RAM: TRAP(3) alone
  const std::uint32_t w = (pc - 0x10000) / 4;
  std::vector<Token> t;
  if (!prev || ((*prev - 0x10000) / 4) >> 8 != w >> 8) t.push_back(T(PCH0 + (w >> 16), (w >> 8) & 0xFF));
  t.push_back(T(PCL, w & 0xFF));
  return t;
}
// One instruction at `pc` with the run's first pc tokens in front and, unless it ends the run
// (EXIT, TRAP), the next instruction's pc tokens behind (`next`, default pc + 4).
std::vector<Token> one(std::uint32_t pc, const std::vector<Token>& tokens, std::optional<std::uint32_t> next = {}) {
  std::vector<Token> t = cat(pc_tokens(pc, {}), tokens);
  const std::uint32_t last = tokens.back() / 256;
  if (last != EXIT && last != TRAP) t = cat(t, pc_tokens(next.value_or(pc + 4), pc));
  return t;
}

void run(std::uint32_t word, const std::map<int, std::uint32_t>& regs, const std::vector<Token>& want,
         const std::string& what, const std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>>& mem = {},
         std::uint32_t pc = 0x10000, std::optional<std::uint32_t> next = {}) {
  test::expect_trace(test::make_image(pc, {word}, regs, mem), one(pc, want, next), what);
}

TEST(Rv32Directed, TraceMdExampleFirstInstruction) {
  // trace.md section 5: addi a0, x0, -1 = 0xfff00513 -> W(0xffffffff)
  EXPECT_EQ(i_type(-1, 0, 0, 10, 0x13), 0xfff00513u);
  run(0xfff00513u, {}, W(0xFFFFFFFFu), "addi a0, x0, -1");
}

TEST(Rv32Directed, CarryChains) {
  run(r_type(0, 11, 10, 0, 12, 0x33), {{10, 0x00FFFFFF}, {11, 1}}, W(0x01000000u), "add carry through 3 bytes");
  run(r_type(0x20, 11, 10, 0, 12, 0x33), {{10, 0}, {11, 1}}, W(0xFFFFFFFFu), "sub borrow through 4 bytes");
  run(r_type(0x20, 11, 10, 0, 12, 0x33), {{10, 0x12345678}, {11, 0x12345678}}, W(0), "sub equal");
  run(i_type(-2048, 10, 0, 5, 0x13), {{10, 0x800}}, W(0), "addi -2048 to 0x800");
  run(i_type(1, 10, 0, 5, 0x13), {{10, 0x7FFFFFFF}}, W(0x80000000u), "addi overflow to INT_MIN");
}

TEST(Rv32Directed, UpperImmediates) {
  run(u_type(0x12345, 10, 0x37), {}, W(0x12345000u), "lui");
  // auipc a0, 0xfffff at 0x10000: 0x10000 + 0xfffff000 = 0x0000f000 (mod 2^32)
  run(u_type(0xFFFFF, 10, 0x17), {}, W(0x0000F000u), "auipc wraps");
  run(u_type(0x12345, 0, 0x37), {}, {T(NOP, 0)}, "lui x0");
}

TEST(Rv32Directed, LogicAndCompare) {
  run(r_type(0, 11, 10, 4, 12, 0x33), {{10, 0xF0F0A5A5}, {11, 0x0FF05A5A}}, W(0xFF00FFFFu), "xor");
  run(r_type(0, 11, 10, 6, 12, 0x33), {{10, 0x80000001}, {11, 0x00010000}}, W(0x80010001u), "or");
  run(i_type(0x0F0, 10, 7, 12, 0x13), {{10, 0xFFFFFF3C}}, W(0x00000030u), "andi");
  run(i_type(-1, 10, 6, 12, 0x13), {{10, 0x1234}}, W(0xFFFFFFFFu), "ori -1");
  run(r_type(0, 11, 10, 2, 12, 0x33), {{10, 0x80000000}, {11, 0x7FFFFFFF}}, W(1), "slt INT_MIN < INT_MAX");
  run(r_type(0, 11, 10, 3, 12, 0x33), {{10, 0x80000000}, {11, 0x7FFFFFFF}}, W(0), "sltu 0x80000000 !< 0x7fffffff");
  run(i_type(-1, 10, 3, 12, 0x13), {{10, 0xFFFFFFFE}}, W(1), "sltiu vs 0xffffffff");
  run(i_type(0, 10, 2, 12, 0x13), {{10, 0x00000100}}, W(0), "slti 256 < 0 is false");
}

TEST(Rv32Directed, Shifts) {
  // slli a0, a1, 13: 0x81234567 << 13 = 0x468ACE000 mod 2^32 = 0x68ace000
  run(i_type(13, 11, 1, 10, 0x13), {{11, 0x81234567}}, W(0x68ACE000u), "slli 13");
  // srli a0, a1, 7: 0x81234567 >> 7 = 0x0102468a
  run(i_type(7, 11, 5, 10, 0x13), {{11, 0x81234567}}, W(0x0102468Au), "srli 7");
  // srai a0, a1, 7 (imm = 0x400 | 7): sign bits shifted in -> 0xff02468a
  run(i_type(0x407, 11, 5, 10, 0x13), {{11, 0x81234567}}, W(0xFF02468Au), "srai 7");
  // sra a0, a1, a2 with a2 = 0xffffffe1: amount 1 -> 0xc091a2b3
  run(r_type(0x20, 12, 11, 5, 10, 0x33), {{11, 0x81234567}, {12, 0xFFFFFFE1}}, W(0xC091A2B3u), "sra by 33 & 31");
  // sll by 31 and srl by 31
  run(r_type(0, 12, 11, 1, 10, 0x33), {{11, 3}, {12, 31}}, W(0x80000000u), "sll 31");
  run(r_type(0, 12, 11, 5, 10, 0x33), {{11, 0x80000000}, {12, 31}}, W(1), "srl 31");
  run(r_type(0, 12, 11, 5, 0, 0x33), {{11, 0x80000000}, {12, 31}}, {T(NOP, 0)}, "srl x0");
}

TEST(Rv32Directed, Branches) {
  run(b_type(8, 11, 10, 4), {{10, 0xFFFFFFFF}, {11, 0}}, {T(BR, 1)}, "blt -1 < 0 taken", {}, 0x10000, 0x10008);
  run(b_type(8, 11, 10, 6), {{10, 0xFFFFFFFF}, {11, 0}}, {T(BR, 0)}, "bltu 0xffffffff < 0 not taken");
  run(b_type(8, 11, 10, 1), {{10, 0x00010000}, {11, 0x00000000}}, {T(BR, 1)}, "bne differs in byte 2", {}, 0x10000, 0x10008);
  run(b_type(6, 0, 0, 0), {}, {T(TRAP, 2)}, "beq x0, x0 to pc + 6: misaligned");
  run(b_type(6, 0, 0, 1), {}, {T(BR, 0)}, "bne x0, x0 to pc + 6: not taken, no trap");
  run(b_type(-4, 11, 10, 7), {{10, 5}, {11, 5}}, {T(BR, 1)}, "bgeu equal taken backwards", {}, 0x10400, 0x103FC);
  run(b_type(-4096, 0, 0, 0), {}, {T(BR, 1)}, "beq x0, x0, -4096 across 16 pages", {}, 0x10800, 0xF800);
  run(b_type(4092, 0, 0, 0), {}, {T(BR, 1)}, "beq x0, x0, +4092: next page (PCH)", {}, 0x10000, 0x10FFC);
}

TEST(Rv32Directed, JumpsLinkAndMisalignment) {
  // jal ra, +8 at 0x10000 -> W(0x10004); jal ra, +2 -> TRAP(2)
  run(0x008000EFu, {}, W(0x10004), "jal ra, .+8", {}, 0x10000, 0x10008);
  run(0x002000EFu, {}, {T(TRAP, 2)}, "jal ra, .+2");
  // jalr ra, 0(a0) with a0 = 0x10103 -> target 0x10102 (bit 0 cleared), bit 1 set: TRAP(2)
  run(i_type(0, 10, 0, 1, 0x67), {{10, 0x10103}}, {T(TRAP, 2)}, "jalr misaligned after clearing bit 0");
  // jalr x0, 1(a0) with a0 = 0x10007 -> 0x10008: aligned, rd = 0 -> NOP
  run(i_type(1, 10, 0, 0, 0x67), {{10, 0x10007}}, {T(NOP, 0)}, "jalr x0 aligned after add", {}, 0x10000, 0x10008);
  // link value at the top of RAM: pc 0x10fffc, pc + 4 = 0x110000
  run(i_type(0, 10, 0, 5, 0x67), {{10, 0x10000}}, W(0x00110000u), "jalr link at RAM end", {}, 0x10FFFC, 0x10000);
  run(i_type(0, 0, 0, 0, 0x67), {}, {T(NOP, 0)}, "jalr x0, 0(x0): fetch outside RAM next", {}, 0x10000, 0);
}

TEST(Rv32Directed, LoadsAndStores) {
  const std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> mem = {{0x20000, {0x11, 0x80, 0x7F, 0xFE}}};
  run(i_type(1, 11, 0, 10, 0x03), {{11, 0x20000}}, cat(A(0x20001), W(0xFFFFFF80u)), "lb sign-extends", mem);
  run(i_type(1, 11, 4, 10, 0x03), {{11, 0x20000}}, cat(A(0x20001), W(0x00000080u)), "lbu zero-extends", mem);
  run(i_type(2, 11, 1, 10, 0x03), {{11, 0x20000}}, cat(A(0x20002), W(0xFFFFFE7Fu)), "lh upper half", mem);
  run(i_type(0, 11, 2, 10, 0x03), {{11, 0x20000}}, cat(A(0x20000), W(0xFE7F8011u)), "lw", mem);
  run(i_type(2, 11, 2, 10, 0x03), {{11, 0x20000}}, cat(A(0x20002), {T(TRAP, 4)}), "lw misaligned", mem);
  run(i_type(-4, 11, 2, 10, 0x03), {{11, 0x10000}}, cat(A(0xFFFC), {T(TRAP, 5)}), "lw below RAM", mem);
  run(i_type(0, 11, 0, 0, 0x03), {{11, 0x20000}}, cat(A(0x20000), {T(NOP, 0)}), "lb x0", mem);
  run(s_type(-1, 12, 11, 2), {{11, 0x20001}, {12, 0xDEADBEEF}},
      cat(A(0x20000), {T(S0, 0xEF), T(S0 + 1, 0xBE), T(S0 + 2, 0xAD), T(S0 + 3, 0xDE)}), "sw with negative offset");
  run(s_type(3, 12, 11, 1), {{11, 0x20000}, {12, 0x1234}}, cat(A(0x20003), {T(TRAP, 6)}), "sh misaligned");
  run(s_type(0, 12, 11, 0), {{11, 0x110000}, {12, 0x55}}, cat(A(0x110000), {T(TRAP, 7)}), "sb at RAM end");
  run(s_type(0, 12, 11, 0), {{11, 0x10FFFF}, {12, 0x155}}, cat(A(0x10FFFF), {T(S0, 0x55)}), "sb last byte");
}

TEST(Rv32Directed, Multiply) {
  // 0x12345678 * 0x9abcdef0 = 0x0b00ea4e_242d2080 (worked with 64-bit integer arithmetic by hand)
  run(r_type(1, 12, 11, 0, 10, 0x33), {{11, 0x12345678}, {12, 0x9ABCDEF0}}, W(0x242D2080u), "mul low");
  run(r_type(1, 12, 11, 3, 10, 0x33), {{11, 0x12345678}, {12, 0x9ABCDEF0}}, W(0x0B00EA4Eu), "mulhu");
  run(r_type(1, 12, 11, 3, 10, 0x33), {{11, 0xFFFFFFFF}, {12, 0xFFFFFFFF}}, W(0xFFFFFFFEu), "mulhu max*max");
  // mulh: (-1) * (-1) = 1 -> high 0; INT_MIN * INT_MAX = -2^62 + 2^31 -> high 0xc0000000
  run(r_type(1, 12, 11, 1, 10, 0x33), {{11, 0xFFFFFFFF}, {12, 0xFFFFFFFF}}, W(0), "mulh -1*-1");
  run(r_type(1, 12, 11, 1, 10, 0x33), {{11, 0x80000000}, {12, 0x7FFFFFFF}}, W(0xC0000000u), "mulh INT_MIN*INT_MAX");
  // mulhsu: (-2) * 0xfffffffd = -2^33 + 6 -> high 0xfffffffe
  run(r_type(1, 12, 11, 2, 10, 0x33), {{11, 0xFFFFFFFE}, {12, 0xFFFFFFFD}}, W(0xFFFFFFFEu), "mulhsu -2*0xfffffffd");
  run(r_type(1, 12, 11, 0, 0, 0x33), {{11, 3}, {12, 5}}, {T(NOP, 0)}, "mul x0");
}

// trace.md section 4.4: 32 DQ tokens (quotient bits of |a| / |b|, restoring division), then W.
std::vector<Token> dq(std::uint32_t q) {
  std::vector<Token> t;
  for (int i = 31; i >= 0; --i) t.push_back(T(14, 2 * static_cast<std::uint32_t>(i) + ((q >> i) & 1)));
  return t;
}
TEST(Rv32Directed, Divide) {
  run(r_type(1, 12, 11, 5, 10, 0x33), {{11, 100}, {12, 7}}, cat(dq(14), W(14)), "divu 100 / 7");
  run(r_type(1, 12, 11, 7, 10, 0x33), {{11, 100}, {12, 7}}, cat(dq(14), W(2)), "remu 100 % 7");
  // rem -7 % 2: |a| / |b| = 7 / 2 -> q = 3; remainder -1 (sign of the dividend)
  run(r_type(1, 12, 11, 6, 10, 0x33), {{11, 0xFFFFFFF9}, {12, 2}}, cat(dq(3), W(0xFFFFFFFF)), "rem -7 % 2");
  // div 7 / -2 = -3
  run(r_type(1, 12, 11, 4, 10, 0x33), {{11, 7}, {12, 0xFFFFFFFE}}, cat(dq(3), W(0xFFFFFFFD)), "div 7 / -2");
  // divu by zero: every bit 1, W(2^32 - 1); rem by zero: a
  run(r_type(1, 12, 11, 5, 10, 0x33), {{11, 5}}, cat(dq(0xFFFFFFFF), W(0xFFFFFFFF)), "divu by 0");
  run(r_type(1, 12, 11, 6, 10, 0x33), {{11, 0x80000005}}, cat(dq(0xFFFFFFFF), W(0x80000005)), "rem by 0");
  run(r_type(1, 12, 11, 6, 0, 0x33), {{11, 9}, {12, 4}}, cat(dq(2), {T(NOP, 0)}), "rem x0");
}

// bignum.md section 4 worked examples (tokens: trace.md section 4.6).
TEST(Rv32Directed, BignumWorkedExamples) {
  enum : std::uint32_t { CF = 15 };
  auto bn = [](std::uint32_t f3, std::uint32_t rd, std::uint32_t rs1, std::uint32_t rs2) { return r_type(0, rs2, rs1, f3, rd, 0x0B); };
  auto img = [](std::uint32_t word, std::map<int, std::uint32_t> regs, std::uint8_t c, std::vector<std::uint8_t> acc) {
    acc.resize(12, 0);
    return test::make_image(0x10000, {word}, regs, {}, c, acc);
  };
  auto bn_expect = [](const GuestImage& image, const std::vector<Token>& want, const std::string& what) {
    test::expect_trace(image, one(0x10000, want), what);
  };
  bn_expect(img(bn(0, 10, 11, 12), {{11, 0xFFFFFFFF}, {12, 1}}, 0, {}), cat(W(0), {T(CF, 1)}), "addc c=0 max+1");
  bn_expect(img(bn(0, 10, 11, 12), {{11, 0xFFFFFFFF}, {12, 0xFFFFFFFF}}, 1, {}), cat(W(0xFFFFFFFF), {T(CF, 1)}), "addc c=1 max+max");
  bn_expect(img(bn(1, 10, 11, 12), {{11, 0}, {12, 1}}, 0, {}), cat(W(0xFFFFFFFF), {T(CF, 1)}), "subb 0-1");
  bn_expect(img(bn(1, 10, 11, 12), {{11, 5}, {12, 4}}, 1, {}), cat(W(0), {T(CF, 0)}), "subb c=1 5-4");
  bn_expect(img(bn(1, 0, 11, 12), {{11, 5}, {12, 5}}, 1, {}), {T(NOP, 0), T(CF, 1)}, "subb x0 c=1 5-5 borrows");
  bn_expect(img(bn(2, 10, 11, 0), {{11, 2}}, 1, {}), cat(W(1), {T(CF, 0)}), "xchgc c=1 a=2");
  // accrd: W(acc mod 2^32), then AC0..AC11 of acc >> 32 = 0x00000001_00000002
  bn_expect(img(bn(4, 10, 0, 0), {}, 0, {3, 0, 0, 0, 2, 0, 0, 0, 1}),
            cat(W(3), {T(16, 2), T(17, 0), T(18, 0), T(19, 0), T(20, 1), T(21, 0), T(22, 0), T(23, 0), T(24, 0),
                       T(25, 0), T(26, 0), T(27, 0)}),
            "accrd");
  auto ac = [](std::vector<std::uint8_t> bytes) {
    std::vector<Token> t;
    for (std::uint32_t i = 0; i < 12; ++i) t.push_back(T(16 + i, bytes[i]));
    return t;
  };
  bn_expect(img(bn(3, 0, 11, 12), {{11, 0xFFFFFFFF}, {12, 0xFFFFFFFF}}, 0, {}),
                     ac({0x01, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}), "mac max*max");
  bn_expect(img(bn(3, 0, 11, 12), {{11, 1}, {12, 1}}, 0, std::vector<std::uint8_t>(12, 0xFF)),
                     ac(std::vector<std::uint8_t>(12, 0)), "mac wraps 2^96");
  bn_expect(img(bn(5, 0, 0, 0), {}, 1, {5}), {T(NOP, 0)}, "accclr");
}

TEST(Rv32Directed, SystemAndIllegal) {
  run(0x00000073u, {{17, 93}, {10, 0x1234}}, {T(EXIT, 0x34)}, "ecall exit");
  run(0x00000073u, {{17, 64}, {10, 3}}, {T(TRAP, 8)}, "ecall write fd 3");
  run(0x00000073u, {{17, 64}, {10, 2}, {12, 0}}, W(0), "ecall write len 0");
  run(0x00000073u, {{17, 93 + 256}}, {T(TRAP, 8)}, "ecall number 349");
  run(0x00100073u, {}, {T(TRAP, 9)}, "ebreak");
  run(0x0000000Fu, {}, {T(NOP, 0)}, "fence with zero fields");
  run(0x0000100Fu, {}, {T(TRAP, 1)}, "fence.i");
  run(0x00000000u, {}, {T(TRAP, 1)}, "all zero");
  run(r_type(0x20, 11, 10, 4, 12, 0x33), {}, {T(TRAP, 1)}, "OP f7=0100000 f3=100");
  run(r_type(0, 11, 10, 6, 12, 0x0B), {}, {T(TRAP, 1)}, "custom-0 f3=6");
}

}  // namespace
}  // namespace lockstep::chip::rv32
