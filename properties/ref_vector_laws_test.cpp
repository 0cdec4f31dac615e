// Algebraic laws of the reference's vector ops (docs/spec/vector.md §4), as RapidCheck
// properties over ref::execute_vector. Every expected value is computed here from the spec's
// formulas (exact integers), never taken from the reference.
//
//   VMAT   a one-hot activation returns the hot column of the chunks, scaled exactly as §4.1
//          (WSCALE = 1 and ASH = 16: the int4 weights themselves); argmax mode returns the
//          lowest index of the maximum of what write mode writes (ties made on purpose)
//   VQ     quantise then dequantise: |x - q·2^e| <= 2^(e-1) (q = x when e = 0), |q| <= 127,
//          e is the smallest such shift (§4.3), padding zeros, K/V rows likewise
//   VEW    ADD commutes and is sat32(x + y); MUL by 65536 (1.0) and MULS by a scalar 65536 are
//          the identity; ROT at position 0 is the identity
//   VRED   SUM = sat32(rnd(Σx, SH)), SUMSQ = sat32(rnd(Σx², 16 + SH)), MAX = max (sums here)
//   VEXP   every p in 0..65536, each group's maximum score gives 65536, S_g = Σ p, p is
//          non-increasing in (m - s)
//   VLD    with M = 1 the bytes sign-extended
//   tokens each op emits the number of tokens §5 gives
//
// RapidCheck prints its seed ("Using configuration: seed=...") and on failure a reproduce
// string: RC_PARAMS="reproduce=..." (properties/README.md).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ref {
namespace {

using u32 = std::uint32_t;
using i64 = std::int64_t;
using i128 = __int128;

// Op indices (the f3 field, vector.md §4.0).
constexpr unsigned kVmat = 0, kVq = 2, kVexp = 3, kVew = 4, kVred = 6, kVld = 7;

u32 ab(u32 lo, u32 hi) { return hi << 16 | lo; }  // (B << 16) | A, (N << 16) | C

/// rnd(x, s) of vector.md §1.2: floor((x + 2^(s-1)) / 2^s), round half up.
template <class T>
T rnd(T x, unsigned s) {
  if (s == 0) return x;
  const T half = T{1} << (s - 1);
  const T y = x + half;
  // floor division by 2^s (an arithmetic shift, written out for clarity)
  const T q = y / (T{1} << s);
  return (y < 0 && q * (T{1} << s) != y) ? q - 1 : q;
}
template <class T>
std::int32_t sat32(T x) {
  if (x > T{std::numeric_limits<std::int32_t>::max()}) return std::numeric_limits<std::int32_t>::max();
  if (x < T{std::numeric_limits<std::int32_t>::min()}) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(x);
}
unsigned groups(unsigned n) { return (n + 63) / 64; }

struct Exec {
  u32 code = 0;
  std::vector<u32> tokens;
  bool writes_rd = false;
  u32 rd_value = 0;
};
Exec run(VectorState& s, unsigned op, u32 f7, unsigned rd, u32 x1, u32 x2, std::span<const std::uint8_t> ram = {}) {
  Exec e;
  e.code = execute_vector(s, op, f7, rd, x1, x2, ram, e.tokens, e.writes_rd, e.rd_value);
  return e;
}

/// An int32 of any magnitude: uniform, shifted right by a random amount, or an edge value.
rc::Gen<std::int32_t> word() {
  return rc::gen::weightedOneOf<std::int32_t>({
      {4, rc::gen::map(rc::gen::pair(rc::gen::arbitrary<std::int32_t>(), rc::gen::inRange(0, 32)),
                       [](std::pair<std::int32_t, int> p) { return p.first >> p.second; })},
      {1, rc::gen::element<std::int32_t>(0, 1, -1, std::numeric_limits<std::int32_t>::min(),
                                         std::numeric_limits<std::int32_t>::max(), 65536, -65536)},
  });
}
std::vector<std::int32_t> words(unsigned n) { return *rc::gen::container<std::vector<std::int32_t>>(n, word()); }

// ------------------------------------------------------------------ VMAT

// §4.1 with ACT zero except ACT[64(b0+jh) + ih] = a: acc_{r,j} = a·W[c_{r,jh}][ih] for j = jh,
// 0 otherwise, so y_r = sat32(rnd(a·W[c0 + rK + jh][ih]·WSCALE·2^ASH[b0+jh], 16)).
RC_GTEST_PROP(VmatLaws, OneHotActivationReturnsTheChunkColumn, ()) {
  VectorState s;
  const unsigned K = *rc::gen::inRange(1u, 7u);
  const unsigned b0 = *rc::gen::inRange(0u, 7u - K);
  const unsigned R = *rc::gen::inRange(1u, 65u);
  const unsigned c0 = *rc::gen::inRange(0u, kWChunks - R * K + 1);
  const unsigned jh = *rc::gen::inRange(0u, K), ih = *rc::gen::inRange(0u, 64u);
  const bool plain = *rc::gen::arbitrary<bool>();  // WSCALE = 1, ASH = 16, a = 1: the weights
  const int a = plain ? 1 : *rc::gen::element(1, -1, 127, -128, *rc::gen::inRange(-128, 128));
  for (unsigned c = c0; c < c0 + R * K; ++c) {
    for (unsigned i = 0; i < 64; ++i) s.wmem[64 * c + i] = static_cast<std::int8_t>(*rc::gen::inRange(-8, 8));
    s.wscale[c] = plain ? 1 : *rc::gen::arbitrary<std::uint16_t>();
  }
  for (unsigned b = 0; b < kActBlocks; ++b) s.ash[b] = plain ? 16 : static_cast<std::uint8_t>(*rc::gen::inRange(0, 26));
  s.act[64 * (b0 + jh) + ih] = static_cast<std::int8_t>(a);
  const unsigned dst = *rc::gen::inRange(0u, kVrWords - R + 1);
  const Exec e = run(s, kVmat, K, 0, ab(dst, b0), ab(c0, R));
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == std::size_t{R} * K + (R - 1) / 256);
  for (unsigned r = 0; r < R; ++r) {
    const unsigned c = c0 + r * K + jh;
    const i64 w = s.wmem[64 * c + ih];
    const i64 y = rnd(a * w * i64{s.wscale[c]} * (i64{1} << s.ash[b0 + jh]), 16);
    RC_ASSERT(s.vr[dst + r] == sat32(y));
    if (plain) RC_ASSERT(s.vr[dst + r] == w);  // the chunk's element itself
  }
}

// Argmax mode writes X(rd) = the smallest r with y_r = max y (ties: lowest index), where y is
// what write mode writes; rows copied from the maximal row make ties.
RC_GTEST_PROP(VmatLaws, ArgmaxIsTheLowestIndexOfTheMaximum, ()) {
  VectorState s;
  const unsigned K = *rc::gen::inRange(1u, 7u);
  const unsigned b0 = *rc::gen::inRange(0u, 7u - K);
  const unsigned R = *rc::gen::inRange(1u, 40u);
  const unsigned c0 = *rc::gen::inRange(0u, kWChunks - R * K + 1);
  for (unsigned i = 0; i < kActBytes; ++i) s.act[i] = static_cast<std::int8_t>(*rc::gen::inRange(-128, 128));
  for (unsigned b = 0; b < kActBlocks; ++b) s.ash[b] = static_cast<std::uint8_t>(*rc::gen::inRange(0, 26));
  for (unsigned c = c0; c < c0 + R * K; ++c) {
    for (unsigned i = 0; i < 64; ++i) s.wmem[64 * c + i] = static_cast<std::int8_t>(*rc::gen::inRange(-8, 8));
    s.wscale[c] = *rc::gen::arbitrary<std::uint16_t>();
  }
  // Ties: copy row `from` over a few other rows.
  const unsigned from = *rc::gen::inRange(0u, R), copies = *rc::gen::inRange(0u, 4u);
  for (unsigned k = 0; k < copies; ++k) {
    const unsigned to = *rc::gen::inRange(0u, R);
    for (unsigned j = 0; j < K; ++j) {
      std::copy_n(s.wmem.begin() + 64 * (c0 + from * K + j), 64, s.wmem.begin() + 64 * (c0 + to * K + j));
      s.wscale[c0 + to * K + j] = s.wscale[c0 + from * K + j];
    }
  }
  VectorState w = s;
  const Exec ew = run(w, kVmat, K, 0, ab(0, b0), ab(c0, R));
  RC_ASSERT(ew.code == 0u);
  const unsigned rd = *rc::gen::inRange(1u, 32u);
  VectorState m = s;
  const Exec em = run(m, kVmat, 8 | K, rd, ab(0, b0), ab(c0, R));
  RC_ASSERT(em.code == 0u);
  RC_ASSERT(em.writes_rd);
  RC_ASSERT(m.vr == s.vr);  // argmax mode writes no register word
  const auto best = std::max_element(w.vr.begin(), w.vr.begin() + R);  // the first maximum
  RC_ASSERT(em.rd_value == static_cast<u32>(best - w.vr.begin()));
  // Independently of write mode: the formula of §4.1.
  std::vector<i64> y(R);
  for (unsigned r = 0; r < R; ++r) {
    i128 sum = 0;
    for (unsigned j = 0; j < K; ++j) {
      const unsigned c = c0 + r * K + j;
      i64 acc = 0;
      for (unsigned i = 0; i < 64; ++i) acc += i64{s.act[64 * (b0 + j) + i]} * s.wmem[64 * c + i];
      sum += i128{acc} * s.wscale[c] * (i128{1} << s.ash[b0 + j]);
    }
    y[r] = sat32(rnd(sum, 16));
    RC_ASSERT(w.vr[r] == y[r]);
  }
  unsigned first = 0;
  for (unsigned r = 1; r < R; ++r)
    if (y[r] > y[first]) first = r;
  RC_ASSERT(em.rd_value == first);
}

// ------------------------------------------------------------------ VQ

RC_GTEST_PROP(VqLaws, QuantiseThenDequantiseIsWithinHalfAStep, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 385u);
  const unsigned nb = groups(n);
  const unsigned b0 = *rc::gen::inRange(0u, 7u - nb);
  const unsigned src = *rc::gen::inRange(0u, kVrWords - n + 1);
  // Each group with its own magnitude.
  for (unsigned k = 0; k < nb; ++k) {
    const int shift = *rc::gen::inRange(0, 32);
    for (unsigned i = 64 * k; i < std::min(n, 64 * k + 64); ++i) s.vr[src + i] = *word() >> shift;
  }
  std::fill(s.act.begin(), s.act.end(), std::int8_t{99});  // padding must be overwritten with 0
  const Exec e = run(s, kVq, 0, 0, ab(b0, src), ab(0, n));
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == 2u * nb);
  for (unsigned k = 0; k < nb; ++k) {
    const unsigned e_k = s.ash[b0 + k];
    RC_ASSERT(e_k <= 25u);
    i64 amax = 0;
    for (unsigned i = 64 * k; i < std::min(n, 64 * k + 64); ++i) {
      const i64 x = s.vr[src + i];
      const i64 q = s.act[64 * (b0 + k) + (i - 64 * k)];
      amax = std::max(amax, x < 0 ? -x : x);
      RC_ASSERT(q >= -127 && q <= 127);
      const i64 err = x - q * (i64{1} << e_k);
      if (e_k == 0) {
        RC_ASSERT(err == 0);
      } else {
        RC_ASSERT(err <= (i64{1} << (e_k - 1)) && -err <= (i64{1} << (e_k - 1)));
        RC_ASSERT(q == rnd(x, e_k));
      }
    }
    // E(amax): the smallest e with rnd(amax, e) <= 127.
    RC_ASSERT(rnd(amax, e_k) <= 127);
    if (e_k > 0) RC_ASSERT(rnd(amax, e_k - 1) > 127);
    for (unsigned i = n; i < 64 * k + 64; ++i) RC_ASSERT(s.act[64 * (b0 + k) + (i - 64 * k)] == 0);
  }
}

RC_GTEST_PROP(VqLaws, CacheRowsQuantiseWithinHalfAStep, ()) {
  VectorState s;
  const bool v = *rc::gen::arbitrary<bool>();
  const unsigned row = *rc::gen::inRange(0u, kCacheRows);
  const unsigned src = *rc::gen::inRange(0u, kVrWords - 32 + 1);
  const int shift = *rc::gen::inRange(0, 32);
  for (unsigned i = 0; i < 32; ++i) s.vr[src + i] = *word() >> shift;
  const Exec e = run(s, kVq, v ? 2 : 1, 0, ab(row, src), ab(0, 32));
  RC_ASSERT(e.code == 0u);
  const auto& cache = v ? s.vc : s.kc;
  const unsigned e0 = (v ? s.vsh : s.ksh)[row];
  for (unsigned i = 0; i < 32; ++i) {
    const i64 x = s.vr[src + i], q = cache[32 * row + i];
    const i64 err = x - q * (i64{1} << e0);
    const bool within = e0 == 0u ? err == 0 : (err <= (i64{1} << (e0 - 1)) && -err <= (i64{1} << (e0 - 1)));
    RC_ASSERT(within);
  }
}

// ------------------------------------------------------------------ VEW

RC_GTEST_PROP(VewLaws, AddCommutesAndSaturates, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 257u);
  const unsigned a = *rc::gen::inRange(0u, 45u), b = *rc::gen::inRange(300u, 345u), dst = *rc::gen::inRange(600u, 645u);
  for (unsigned i = 0; i < n; ++i) {
    s.vr[a + i] = *word();
    s.vr[b + i] = *word();
  }
  VectorState t = s;
  const Exec e1 = run(s, kVew, 0, 0, ab(dst, a), ab(b, n));
  const Exec e2 = run(t, kVew, 0, 0, ab(dst, b), ab(a, n));
  RC_ASSERT(e1.code == 0u);
  RC_ASSERT(e2.code == 0u);
  RC_ASSERT(e1.tokens.size() == groups(n));
  RC_ASSERT(s.vr == t.vr);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[dst + i] == sat32(i64{s.vr[a + i]} + s.vr[b + i]));
}

RC_GTEST_PROP(VewLaws, MultiplyingByOneAndRotatingByZeroAreIdentities, ()) {
  VectorState s;
  const unsigned n = 2 * *rc::gen::inRange(1u, 129u);
  const unsigned a = *rc::gen::inRange(0u, 45u), ones = *rc::gen::inRange(300u, 345u), dst = *rc::gen::inRange(600u, 645u);
  const auto x = words(n);
  std::copy(x.begin(), x.end(), s.vr.begin() + a);
  std::fill(s.vr.begin() + ones, s.vr.begin() + ones + n, 65536);
  const unsigned gs = *rc::gen::inRange(0u, 7u);
  const unsigned mode = *rc::gen::element(1u, 2u, 3u);  // MUL, MULS, ROT (position 0)
  const u32 f7 = mode | (mode == 2 ? gs << 2 : 0u);
  const Exec e = run(s, kVew, f7, 0, ab(dst, a), ab(mode == 3 ? 0u : ones, n));
  RC_ASSERT(e.code == 0u);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[dst + i] == x[i]);
  // In place (identical spans) is allowed and gives the same.
  const Exec ip = run(s, kVew, f7, 0, ab(a, a), ab(mode == 3 ? 0u : ones, n));
  RC_ASSERT(ip.code == 0u);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[a + i] == x[i]);
}

// ------------------------------------------------------------------ VRED

RC_GTEST_PROP(VredLaws, SumSumsqAndMaxMatchTheirDefinitions, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 1025u);
  const unsigned src = *rc::gen::inRange(0u, kVrWords - n + 1);
  const unsigned dst = *rc::gen::inRange(0u, kVrWords);
  const unsigned sh = *rc::gen::inRange(0u, 32u);
  const auto x = words(n);
  std::copy(x.begin(), x.end(), s.vr.begin() + src);
  i64 sum = 0;
  i128 sumsq = 0;
  std::int32_t mx = std::numeric_limits<std::int32_t>::min();
  for (std::int32_t v : x) {
    sum += v;
    sumsq += i128{v} * v;
    mx = std::max(mx, v);
  }
  VectorState t = s, u = s;
  const Exec e1 = run(s, kVred, 1 | sh << 2, 0, ab(dst, src), ab(0, n));
  RC_ASSERT(e1.code == 0u);
  RC_ASSERT(e1.tokens.size() == groups(n));
  RC_ASSERT(s.vr[dst] == sat32(rnd(sum, sh)));
  const Exec e0 = run(t, kVred, 0 | sh << 2, 0, ab(dst, src), ab(0, n));
  RC_ASSERT(e0.code == 0u);
  RC_ASSERT(t.vr[dst] == sat32(rnd(sumsq, 16 + sh)));
  const Exec e2 = run(u, kVred, 2, 0, ab(dst, src), ab(0, n));
  RC_ASSERT(e2.code == 0u);
  RC_ASSERT(u.vr[dst] == mx);
  // Only the destination word changes.
  for (unsigned i = 0; i < kVrWords; ++i)
    if (i != dst) RC_ASSERT(s.vr[i] == t.vr[i] && t.vr[i] == u.vr[i]);
}

// ------------------------------------------------------------------ VEXP

RC_GTEST_PROP(VexpLaws, NumeratorsAreInRangeWithTheMaximumAt65536, ()) {
  VectorState s;
  const unsigned T = *rc::gen::inRange(1u, 65u);
  const bool in_place = *rc::gen::arbitrary<bool>();
  const unsigned G = *rc::gen::inRange(1u, in_place ? 9u : 8u);
  const unsigned src = 0, dst = in_place ? 0u : 512u, sums = 1016;
  for (unsigned g = 0; g < G; ++g) {
    const int shift = *rc::gen::inRange(0, 32);
    for (unsigned t = 0; t < T; ++t) s.vr[src + 64 * g + t] = *word() >> shift;
  }
  const VectorState before = s;
  const Exec e = run(s, kVexp, G - 1, 0, ab(dst, src), ab(sums, T));
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == 2u * G);
  for (unsigned g = 0; g < G; ++g) {
    i64 m = std::numeric_limits<i64>::min(), total = 0;
    for (unsigned t = 0; t < T; ++t) m = std::max<i64>(m, before.vr[src + 64 * g + t]);
    bool has_max = false;
    for (unsigned t = 0; t < T; ++t) {
      const std::int32_t p = s.vr[dst + 64 * g + t];
      RC_ASSERT(p >= 0 && p <= 65536);
      total += p;
      if (before.vr[src + 64 * g + t] == m) {
        RC_ASSERT(p == 65536);
        has_max = true;
      }
      for (unsigned t2 = 0; t2 < T; ++t2)  // p non-increasing in m - s
        if (before.vr[src + 64 * g + t2] <= before.vr[src + 64 * g + t]) RC_ASSERT(s.vr[dst + 64 * g + t2] <= p);
    }
    RC_ASSERT(has_max);
    RC_ASSERT(s.vr[sums + g] == total);
    RC_ASSERT(total >= 65536 && total <= 64 * 65536);
  }
}

// ------------------------------------------------------------------ VLD

RC_GTEST_PROP(VldLaws, MultiplierOneLoadsTheBytesSignExtended, ()) {
  VectorState s;
  const unsigned n = *rc::gen::inRange(1u, 1025u);
  const unsigned dst = *rc::gen::inRange(0u, kVrWords - n + 1);
  const auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(n, rc::gen::arbitrary<std::uint8_t>());
  std::vector<std::uint8_t> ram(4096, 0);
  const unsigned at = 4 * *rc::gen::inRange(0u, 256u);
  ram[at] = 1;  // M = 1
  std::copy(bytes.begin(), bytes.end(), ram.begin() + at + 4);
  const Exec e = run(s, kVld, 0, 0, kRamBase + at, ab(dst, n), ram);
  RC_ASSERT(e.code == 0u);
  RC_ASSERT(e.tokens.size() == 4u + n + (n + 3) / 4);
  for (unsigned i = 0; i < n; ++i) RC_ASSERT(s.vr[dst + i] == static_cast<std::int8_t>(bytes[i]));
}

// The helpers above follow vector.md §1.2's examples (so the laws use the spec's rnd).
TEST(VectorLawHelpers, RndAndSat32AsVectorMd12) {
  EXPECT_EQ(rnd<i64>(3, 1), 2);
  EXPECT_EQ(rnd<i64>(-3, 1), -1);
  EXPECT_EQ(rnd<i64>(-5, 2), -1);
  EXPECT_EQ(rnd<i64>(6, 2), 2);
  EXPECT_EQ(rnd<i64>(-6, 2), -1);
  EXPECT_EQ(rnd<i128>(-6, 2), -1);
  EXPECT_EQ(sat32<i64>(i64{1} << 40), 2147483647);
  EXPECT_EQ(sat32<i64>(-(i64{1} << 40)), -2147483647 - 1);
}

}  // namespace
}  // namespace lockstep::ref
