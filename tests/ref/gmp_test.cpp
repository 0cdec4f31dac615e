// The bignum unit (bignum.md) checked against GMP through guest programs
// built from instruction words: multi-limb add, subtract, compare and
// product-scanning multiply of random operands up to 4,096 bits.
// Seed: $LOCKSTEP_SEED, else from the clock; always printed.
#include <gmp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

constexpr u32 kA = 0xc0000, kB = 0xc1000, kR = 0xc2000;
constexpr unsigned kMaxLimbs = 128;  // 4,096 bits
constexpr unsigned s0 = 8, s1 = 9, s2 = 18, t0 = 5, t1 = 6, t2 = 7, t3 = 28, t4 = 29, t5 = 30, t6 = 31;

enum class BnOp { kAdd, kSub, kCmp, kMul };
const char* name(BnOp op) {
  switch (op) {
    case BnOp::kAdd: return "add";
    case BnOp::kSub: return "sub";
    case BnOp::kCmp: return "cmp";
    case BnOp::kMul: return "mul";
  }
  return "?";
}

std::vector<u32> program(BnOp op, unsigned n, unsigned m) {
  std::vector<u32> c;
  progen::emit_li(c, s0, kA);
  progen::emit_li(c, s1, kB);
  progen::emit_li(c, s2, kR);
  const u32 xchgc = encode::r(Op::kBnXchgc, 0, 0, 0);
  if (op == BnOp::kMul) {
    // bignum.md §3: accclr; for k: for i + j = k: mac a_i, b_j; accrd p_k; finally accrd p_{n+m-1}.
    c.push_back(encode::r(Op::kBnAccclr, 0, 0, 0));
    for (unsigned k = 0; k + 1 < n + m; ++k) {
      for (unsigned i = 0; i < n; ++i) {
        if (k < i || k - i >= m) continue;
        c.push_back(encode::i(Op::kLw, t0, s0, 4 * i));
        c.push_back(encode::i(Op::kLw, t1, s1, 4 * (k - i)));
        c.push_back(encode::r(Op::kBnMac, 0, t0, t1));
      }
      c.push_back(encode::r(Op::kBnAccrd, t2, 0, 0));
      c.push_back(encode::s(Op::kSw, s2, t2, 4 * k));
    }
    c.push_back(encode::r(Op::kBnAccrd, t2, 0, 0));
    c.push_back(encode::s(Op::kSw, s2, t2, 4 * (n + m - 1)));
  } else {
    // n limbs each (the shorter operand zero-padded); c cleared first.
    c.push_back(xchgc);
    c.push_back(encode::i(Op::kAddi, t4, 0, 0));
    for (unsigned i = 0; i < n; ++i) {
      c.push_back(encode::i(Op::kLw, t0, s0, 4 * i));
      c.push_back(encode::i(Op::kLw, t1, s1, 4 * i));
      c.push_back(encode::r(op == BnOp::kAdd ? Op::kBnAddc : Op::kBnSubb, t2, t0, t1));
      c.push_back(encode::s(Op::kSw, s2, t2, 4 * i));
      c.push_back(encode::r(Op::kOr, t4, t4, t2));
    }
    c.push_back(encode::r(Op::kBnXchgc, t3, 0, 0));  // t3 = carry/borrow out, c cleared
    c.push_back(encode::s(Op::kSw, s2, t3, 4 * n));
    // compare: borrow ? -1 : (any limb != 0 ? 1 : 0) = (or != 0) - 2 * borrow
    c.push_back(encode::r(Op::kSltu, t5, 0, t4));
    c.push_back(encode::i(Op::kSlli, t3, t3, 1));
    c.push_back(encode::r(Op::kSub, t6, t5, t3));
    c.push_back(encode::s(Op::kSw, s2, t6, 4 * (n + 1)));
  }
  progen::emit_li(c, 17, 93);
  progen::emit_li(c, 10, 0);
  c.push_back(kEcall);
  return c;
}

std::vector<std::uint8_t> limbs_bytes(const std::vector<u32>& v) {
  std::vector<std::uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct Mpz {
  mpz_t z;
  Mpz() { mpz_init(z); }
  explicit Mpz(const std::vector<u32>& limbs) {
    mpz_init(z);
    mpz_import(z, limbs.size(), -1, 4, 0, 0, limbs.data());
  }
  ~Mpz() { mpz_clear(z); }
  Mpz(const Mpz&) = delete;
  Mpz& operator=(const Mpz&) = delete;
  std::string hex() const {
    char* s = mpz_get_str(nullptr, 16, z);
    std::string out(s);
    void (*freefunc)(void*, size_t);
    mp_get_memory_functions(nullptr, nullptr, &freefunc);
    freefunc(s, out.size() + 1);
    return out;
  }
};

std::uint64_t run_seed() {
  if (const char* s = std::getenv("LOCKSTEP_SEED")) return std::strtoull(s, nullptr, 0);
  return static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
}

TEST(BignumVsGmp, RandomAddSubCmpMulUpTo4096Bits) {
  const std::uint64_t seed = run_seed();
  std::printf("[ bignum-gmp ] seed %llu (rerun with LOCKSTEP_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  progen::Random rng(seed);
  constexpr unsigned kCases = 240;
  for (unsigned k = 0; k < kCases; ++k) {
    const BnOp op = static_cast<BnOp>(k % 4);
    const unsigned n = 1 + rng.below(kMaxLimbs), mlen = 1 + rng.below(kMaxLimbs);
    auto random_limbs = [&](unsigned len) {
      std::vector<u32> v(len);
      const unsigned style = rng.below(5);
      for (auto& x : v) x = style == 0 ? 0xffffffffu : style == 1 ? (rng.chance(4) ? rng.operand() : 0) : rng.operand();
      return v;
    };
    std::vector<u32> a = random_limbs(n), b = random_limbs(op == BnOp::kMul ? mlen : n);
    if (op != BnOp::kMul && rng.chance(4)) b = a;                            // equal operands
    if (op != BnOp::kMul && rng.chance(4) && n > 1) b[n - 1] = a[n - 1], b[0] ^= 1;  // differ in the lowest limb only
    const unsigned len_b = static_cast<unsigned>(b.size());
    const std::string where = "case " + std::to_string(k) + " (" + name(op) + ", " + std::to_string(n) + " x " +
                              std::to_string(len_b) + " limbs), seed " + std::to_string(seed);
    SCOPED_TRACE(where);

    Machine m;
    m.load(progen::image_from_code(program(op, n, len_b), kCode,
                                   {format::Segment{kA, 4 * kMaxLimbs, 6, limbs_bytes(a)},
                                    format::Segment{kB, 4 * kMaxLimbs, 6, limbs_bytes(b)},
                                    format::Segment{kR, 8 * kMaxLimbs + 8, 6, {}}}));
    const auto r = m.run(1ull << 40);
    ASSERT_EQ(r.stop, Stop::kExit) << "trap " << m.trap_code();

    Mpz A(a), B(b), want;
    if (op == BnOp::kMul) {
      mpz_mul(want.z, A.z, B.z);
      std::vector<u32> p(n + len_b);
      for (unsigned i = 0; i < n + len_b; ++i) p[i] = m.read_word(kR + 4 * i);
      Mpz got(p);
      ASSERT_EQ(mpz_cmp(got.z, want.z), 0) << "product: got " << got.hex() << ", want " << want.hex();
      continue;
    }
    std::vector<u32> res(n);
    for (unsigned i = 0; i < n; ++i) res[i] = m.read_word(kR + 4 * i);
    const u32 carry = m.read_word(kR + 4 * n);
    const auto cmp = static_cast<std::int32_t>(m.read_word(kR + 4 * (n + 1)));
    Mpz got(res);
    if (op == BnOp::kAdd) {
      mpz_add(want.z, A.z, B.z);
      Mpz full;
      mpz_mul_2exp(full.z, Mpz(std::vector<u32>{carry}).z, 32 * n);
      mpz_add(full.z, full.z, got.z);
      ASSERT_EQ(mpz_cmp(full.z, want.z), 0) << "sum: got " << full.hex() << ", want " << want.hex();
    } else {
      // A - B = got - carry * 2^(32n) (the final borrow), and cmp = sign(A - B).
      mpz_sub(want.z, A.z, B.z);
      Mpz full;
      mpz_mul_2exp(full.z, Mpz(std::vector<u32>{carry}).z, 32 * n);
      mpz_sub(full.z, got.z, full.z);
      ASSERT_EQ(mpz_cmp(full.z, want.z), 0) << "difference: got " << full.hex() << ", want " << want.hex();
      const int sign = mpz_cmp(A.z, B.z);
      ASSERT_EQ(cmp, (sign > 0) - (sign < 0)) << "compare";
    }
  }
}

}  // namespace
}  // namespace lockstep::ref::test
