// The reference's bignum unit (docs/spec/bignum.md) against GMP, as RapidCheck properties.
//
//   single instructions  bn.addc, bn.subb, bn.xchgc, bn.mac, bn.accrd, bn.accclr on random
//                        registers (rs1 = rs2 and rd = x0 included), carry and 96-bit
//                        accumulator (set directly); the whole state after it (every register,
//                        c, acc, pc) compared with mpz arithmetic of §2
//   multi-limb programs  n-limb add, subtract (with compare) and m×n product-scanning multiply
//                        (bignum.md §3) run as guest programs on ref::Machine, limbs biased to
//                        0, 1 and 0xffffffff (long carry chains), compared with mpz_add/sub/mul
//
// RapidCheck prints its seed ("Using configuration: seed=...") and on failure a reproduce
// string: RC_PARAMS="reproduce=..." (properties/README.md).
#include <gmp.h>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lockstep/progen/progen.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/machine.h"
#include "rc_full_range.h"

namespace lockstep::ref {
namespace {

using u32 = std::uint32_t;

constexpr u32 kCode = 0x10000, kA = 0x80000, kB = 0x84000, kR = 0x88000;
constexpr u32 kEbreak = 0x00100073u;

/// RAII mpz_t.
struct Z {
  mpz_t v;
  Z() { mpz_init(v); }
  explicit Z(const std::vector<u32>& limbs) : Z() { set(limbs); }
  ~Z() { mpz_clear(v); }
  Z(const Z&) = delete;
  Z& operator=(const Z&) = delete;
  /// Little-endian 32-bit limbs.
  void set(const std::vector<u32>& limbs) { mpz_import(v, limbs.size(), -1, sizeof(u32), 0, 0, limbs.data()); }
  std::string hex() const {
    char* s = mpz_get_str(nullptr, 16, v);
    std::string out(s);
    void (*freefunc)(void*, size_t);
    mp_get_memory_functions(nullptr, nullptr, &freefunc);
    freefunc(s, out.size() + 1);
    return out;
  }
};
bool operator==(const Z& a, const Z& b) { return mpz_cmp(a.v, b.v) == 0; }

/// A limb: mostly 0, 1, 0xffffffff or 0xfffffffe (long carry and borrow chains), else uniform.
rc::Gen<u32> limb() {
  return rc::gen::weightedOneOf<u32>({{3, rc::gen::element<u32>(0u, 1u, 0xffffffffu, 0xfffffffeu, 0x80000000u)},
                                      {2, rcfull::any<u32>()}});
}
std::vector<u32> limbs(unsigned n) { return *rc::gen::container<std::vector<u32>>(n, limb()); }

Machine machine_with(const std::vector<u32>& code, const std::vector<u32>& a = {}, const std::vector<u32>& b = {}) {
  auto seg = [](u32 at, const std::vector<u32>& w, u32 bytes) {
    format::Segment s;
    s.vaddr = at;
    s.memsz = bytes;
    s.flags = format::kPfR | format::kPfW;
    for (u32 x : w)
      for (int i = 0; i < 4; ++i) s.bytes.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
    return s;
  };
  Machine m;
  m.load(progen::image_from_code(code, kCode, {seg(kA, a, 0x4000), seg(kB, b, 0x4000), seg(kR, {}, 0x4000)}));
  return m;
}

std::vector<u32> read_limbs(const Machine& m, u32 at, unsigned n) {
  std::vector<u32> out(n);
  for (unsigned i = 0; i < n; ++i) out[i] = m.read_word(at + 4 * i);
  return out;
}

// ------------------------------------------------------------------ single instructions

std::string hex(u32 v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}
std::string hex(const sem::Acc96& a) { return hex(a.limb[2]) + "_" + hex(a.limb[1]).substr(2) + "_" + hex(a.limb[0]).substr(2); }

struct One {
  Machine m;
  u32 a, b, c;
  sem::Acc96 acc;
  unsigned rd, rs1, rs2;      ///< the fields (rd = 0 for a row without rd)
  std::array<u32, 32> before;  ///< x0..x31 before the instruction
};
/// Runs `op` once: every register x1..x31 random, a = X(rs1) and b = X(rs2) from limb() (rs1 ==
/// rs2 one case in four: then b = a), rd any register (x0 one case in eight, sometimes rs1 or
/// rs2), carry 0 or 1 evenly, a random accumulator. Logs the operands in hex.
One run_one(Op op) {
  std::array<u32, 32> before{};
  for (unsigned r = 1; r < 32; ++r) before[r] = *rcfull::any<u32>();
  const unsigned rs1 = *rcfull::in_range(1u, 32u);
  const unsigned rs2 = *rc::gen::weightedOneOf<unsigned>({{1, rc::gen::just(rs1)}, {3, rcfull::in_range(1u, 32u)}});
  unsigned rd = *rc::gen::weightedOneOf<unsigned>({{1, rc::gen::just(0u)}, {1, rc::gen::element(rs1, rs2)}, {6, rcfull::in_range(1u, 32u)}});
  before[rs1] = *limb();
  if (rs2 != rs1) before[rs2] = *limb();
  const u32 c = *rcfull::in_range(0u, 2u);
  sem::Acc96 acc;
  for (u32& l : acc.limb) l = *limb();
  const auto& row = encoding_of(op);
  if (!(row.operands & kOpdRd)) rd = 0;
  const u32 word = encode::r(op, rd, row.operands & kOpdRs1 ? rs1 : 0, row.operands & kOpdRs2 ? rs2 : 0);
  RC_LOG() << row.mnemonic << " rd=x" << rd << " rs1=x" << rs1 << " rs2=x" << rs2 << ": a=" << hex(before[rs1])
           << " b=" << hex(before[rs2]) << " c=" << c << " acc=" << hex(acc) << "\n";
  // One Machine per case, built in place (a default-constructed one replaced by another costs
  // a fresh megabyte of RAM per case).
  One o{machine_with({word, kEbreak}), before[rs1], before[rs2], c, acc, rd, rs1, rs2, before};
  for (unsigned r = 1; r < 32; ++r) o.m.set_reg(r, before[r]);
  o.m.set_carry(c);
  o.m.set_acc(acc);
  o.m.step();
  RC_ASSERT(o.m.status() == Status::kRunning);
  return o;
}
std::vector<u32> acc_limbs(const sem::Acc96& a) { return {a.limb[0], a.limb[1], a.limb[2]}; }
u32 low32(const Z& z) {
  Z r;
  mpz_fdiv_r_2exp(r.v, z.v, 32);
  return static_cast<u32>(mpz_get_ui(r.v));
}
sem::Acc96 acc_of(const Z& z) {  // z mod 2^96 as three limbs
  sem::Acc96 out;
  Z r;
  mpz_fdiv_r_2exp(r.v, z.v, 96);
  for (int i = 0; i < 3; ++i) {
    out.limb[i] = low32(r);
    mpz_fdiv_q_2exp(r.v, r.v, 32);
  }
  return out;
}
/// The state after the instruction: X(rd) = `rd_value` when rd != 0 (a write to x0 is
/// discarded), every other register as before, x0 = 0, carry and accumulator as given, pc on the
/// next instruction. Logs what differs.
void expect_state(const One& o, u32 rd_value, u32 carry, const sem::Acc96& acc) {
  for (unsigned r = 0; r < 32; ++r) {
    const u32 want = r != 0 && r == o.rd ? rd_value : o.before[r];
    if (o.m.reg(r) != want) RC_LOG() << "x" << r << " = " << hex(o.m.reg(r)) << ", expected " << hex(want) << "\n";
    RC_ASSERT(o.m.reg(r) == want);
  }
  if (o.m.carry() != carry) RC_LOG() << "c = " << o.m.carry() << ", expected " << carry << "\n";
  RC_ASSERT(o.m.carry() == carry);
  if (!(o.m.acc() == acc)) RC_LOG() << "acc = " << hex(o.m.acc()) << ", expected " << hex(acc) << "\n";
  RC_ASSERT(o.m.acc() == acc);
  RC_ASSERT(o.m.pc() == kCode + 4);
}

RC_GTEST_PROP(BignumGmp, AddcIsTheExactSum, ()) {
  const One o = run_one(Op::kBnAddc);
  Z sum, carry;  // a + b + c == rd + 2^32 c'
  mpz_set_ui(sum.v, o.a);
  mpz_add_ui(sum.v, sum.v, o.b);
  mpz_add_ui(sum.v, sum.v, o.c);
  mpz_fdiv_q_2exp(carry.v, sum.v, 32);
  RC_ASSERT(mpz_cmp_ui(carry.v, 1) <= 0);
  expect_state(o, low32(sum), static_cast<u32>(mpz_get_ui(carry.v)), o.acc);
}

RC_GTEST_PROP(BignumGmp, SubbIsTheExactDifference, ()) {
  const One o = run_one(Op::kBnSubb);
  Z diff, q;  // a - b - c == rd - 2^32 c'
  mpz_set_ui(diff.v, o.a);
  mpz_sub_ui(diff.v, diff.v, o.b);
  mpz_sub_ui(diff.v, diff.v, o.c);
  mpz_fdiv_q_2exp(q.v, diff.v, 32);  // floor(d / 2^32) = -c'
  mpz_neg(q.v, q.v);
  RC_ASSERT(mpz_cmp_ui(q.v, 1) <= 0 && mpz_sgn(q.v) >= 0);
  expect_state(o, low32(diff), static_cast<u32>(mpz_get_ui(q.v)), o.acc);
}

RC_GTEST_PROP(BignumGmp, XchgcSwapsTheCarryWithBitZero, ()) {
  const One o = run_one(Op::kBnXchgc);
  expect_state(o, o.c, o.a & 1u, o.acc);
}

RC_GTEST_PROP(BignumGmp, MacIsTheProductAddedModulo2To96, ()) {
  const One o = run_one(Op::kBnMac);
  Z want(acc_limbs(o.acc)), p;
  mpz_set_ui(p.v, o.a);
  mpz_mul_ui(p.v, p.v, o.b);
  mpz_add(want.v, want.v, p.v);
  expect_state(o, 0, o.c, acc_of(want));  // no rd; c unchanged
}

RC_GTEST_PROP(BignumGmp, AccrdReadsTheLowLimbAndShifts, ()) {
  const One o = run_one(Op::kBnAccrd);
  Z acc(acc_limbs(o.acc)), high;
  mpz_fdiv_q_2exp(high.v, acc.v, 32);
  expect_state(o, low32(acc), o.c, acc_of(high));
}

RC_GTEST_PROP(BignumGmp, AccclrZeroesOnlyTheAccumulator, ()) {
  const One o = run_one(Op::kBnAccclr);
  expect_state(o, 0, o.c, sem::Acc96{});
}

// ------------------------------------------------------------------ multi-limb programs

constexpr unsigned s0 = 8, s1 = 9, s2 = 18, t0 = 5, t1 = 6, t2 = 7;

std::vector<u32> prologue() {
  std::vector<u32> c;
  progen::emit_li(c, s0, kA);
  progen::emit_li(c, s1, kB);
  progen::emit_li(c, s2, kR);
  return c;
}
void epilogue(std::vector<u32>& c) {
  progen::emit_li(c, 17, 93);
  c.push_back(0x00000073u);
}
Machine run_program(const std::vector<u32>& code, const std::vector<u32>& a, const std::vector<u32>& b) {
  Machine m = machine_with(code, a, b);
  const RunResult r = m.run(10'000'000);
  RC_ASSERT(r.stop == Stop::kExit);
  return m;
}

/// n-limb A ± B (bignum.md §3): clear c; per limb lw, lw, bn.addc/bn.subb, sw; store c as limb n.
std::vector<u32> add_sub_program(unsigned n, bool sub) {
  std::vector<u32> c = prologue();
  c.push_back(encode::r(Op::kBnXchgc, 0, 0, 0));
  for (unsigned i = 0; i < n; ++i) {
    c.push_back(encode::i(Op::kLw, t0, s0, 4 * i));
    c.push_back(encode::i(Op::kLw, t1, s1, 4 * i));
    c.push_back(encode::r(sub ? Op::kBnSubb : Op::kBnAddc, t2, t0, t1));
    c.push_back(encode::s(Op::kSw, s2, t2, 4 * i));
  }
  c.push_back(encode::r(Op::kBnXchgc, t2, 0, 0));
  c.push_back(encode::s(Op::kSw, s2, t2, 4 * n));
  epilogue(c);
  return c;
}

RC_GTEST_PROP(BignumGmp, MultiLimbAddEqualsMpzAdd, ()) {
  const unsigned n = *rcfull::in_range(1u, 65u);
  const auto a = limbs(n), b = limbs(n);
  const Machine m = run_program(add_sub_program(n, false), a, b);
  Z za(a), zb(b), want, got(read_limbs(m, kR, n + 1));
  mpz_add(want.v, za.v, zb.v);
  RC_ASSERT(want == got);
}

RC_GTEST_PROP(BignumGmp, MultiLimbSubtractAndCompareEqualMpz, ()) {
  const unsigned n = *rcfull::in_range(1u, 65u);
  const auto a = limbs(n);
  auto b = limbs(n);
  if (*rcfull::in_range(0, 4) == 0) b = a;  // equal operands: difference 0, no borrow
  const Machine m = run_program(add_sub_program(n, true), a, b);
  const auto r = read_limbs(m, kR, n + 1);
  Z za(a), zb(b), want, got(std::vector<u32>(r.begin(), r.begin() + n));
  // A - B mod 2^(32n), and the final borrow is A < B (bignum.md §3: compare = subtract).
  mpz_sub(want.v, za.v, zb.v);
  mpz_fdiv_r_2exp(want.v, want.v, 32 * n);
  RC_ASSERT(want == got);
  RC_ASSERT(r[n] == (mpz_cmp(za.v, zb.v) < 0 ? 1u : 0u));
}

RC_GTEST_PROP(BignumGmp, ProductScanningMultiplyEqualsMpzMul, ()) {
  const unsigned n = *rcfull::in_range(1u, 17u), k = *rcfull::in_range(1u, 17u);
  const auto a = limbs(n), b = limbs(k);
  // bignum.md §3: accclr; for col: for i + j = col: mac a_i, b_j; accrd p_col; last accrd.
  std::vector<u32> c = prologue();
  c.push_back(encode::r(Op::kBnAccclr, 0, 0, 0));
  for (unsigned col = 0; col + 1 < n + k; ++col) {
    for (unsigned i = 0; i < n; ++i) {
      if (col < i || col - i >= k) continue;
      c.push_back(encode::i(Op::kLw, t0, s0, 4 * i));
      c.push_back(encode::i(Op::kLw, t1, s1, 4 * (col - i)));
      c.push_back(encode::r(Op::kBnMac, 0, t0, t1));
    }
    c.push_back(encode::r(Op::kBnAccrd, t2, 0, 0));
    c.push_back(encode::s(Op::kSw, s2, t2, 4 * col));
  }
  c.push_back(encode::r(Op::kBnAccrd, t2, 0, 0));
  c.push_back(encode::s(Op::kSw, s2, t2, 4 * (n + k - 1)));
  epilogue(c);
  const Machine m = run_program(c, a, b);
  Z za(a), zb(b), want, got(read_limbs(m, kR, n + k));
  mpz_mul(want.v, za.v, zb.v);
  RC_LOG() << "a=" << za.hex() << " b=" << zb.hex() << " want=" << want.hex() << " got=" << got.hex() << "\n";
  RC_ASSERT(want == got);
  RC_ASSERT(m.acc() == sem::Acc96{});  // every column read out
}

}  // namespace
}  // namespace lockstep::ref
