// Random VFN RSQRT/RECIP/SILU programs (vector.md sections 4.6 and 6), with VEW ADD/MUL reading
// their results (section 4.5), through the built RV32 chip and the reference in lock-step,
// teacher-forced and free-running, every step compared: 0 mismatches. The reference is the oracle
// (through the engine); this test does not model the functions (it only classifies the source
// words it placed, to check that every path of section 4.6 was generated).
//
//   VFN   VR[dst + i] <- f(VR[src + i]), 0 <= i < n;  X(rs1) = dst | src << 16, X(rs2) = C | n << 16
//         (C unused: random), f7 = FN (0 RSQRT, 1 RECIP, 2 SILU), rd = x0
//
// Each program's initial VR comes from a `.lockstep.vreg` section (section 2.1, 4,096 bytes) of
// words chosen to reach every path of section 4.6: x <= 0 (0, -1, INT32_MIN, random negatives;
// u = max(x, 1) = 1), 1, 2, 3, every 2^k, 2^k - 1 and 2^k + 1 (k = 0..30: every floor_log2, both
// ends of every table interval, RSQRT's left shifts for k2 < 6, RECIP's sat32 path for k <= 2),
// INT32_MAX, values around 65536 (1.0); for SILU the clamp edges of ix = rnd(x, 10) + 512
// (x = 522,751 / 522,752: ix 1022 / 1023; x = -523,776 / -523,777: ix 1 / 0, and next to them),
// values around 0, multiples of 512 and 1024 plus -1, 0, 1 (ties of rnd(x, 10) at 512 mod 1024),
// magnitudes near INT32_MAX and INT32_MIN (|x * SIG| < 2^47: SILU cannot saturate, but the
// largest products are compared), random words. The program sets x1..x30 to random edge values
// and points x31 at a 256-byte scratch area, then runs 1..4 rounds of: a random scalar body of 2..12
// instructions (fuzz/progen), `li` of the two operand registers, then a VFN (RSQRT, RECIP or SILU,
// about equally often) or, one later round in four, a VEW ADD or MUL. Operands reach every case of the
// op: n from 1 to 1024 (every residue mod 4, 1..5; 1021..1024 forced: programs 0, 4, 8 and 12 mod
// 64 begin with a VFN of n = 1021, 1022, 1023, 1024), spans anywhere and ending at word
// 1023, in place (dst = src), disjoint spans next to each other, sources that read earlier VFNs' and
// VEWs' destinations (chains: SILU of RSQRT, RECIP of RECIP, ...), VEWs that read VFN
// destinations, rs1 = rs2 (src = n, dst = C), rs1 = x0 (dst = src = 0). Programs 4j + 3 (one in
// four) end with a VFN that traps (16: FN >= 3, any f7 bit 6..2, rd != x0; 17: a span past word
// 1023; 18: n = 0 (also rs2 = x0) or n > 1024; 20: the two spans share a word and are not
// identical), one condition alone for even j (each of the four in turn), else any combination; the
// code raised must be the lowest of the conditions built (section 6), and the others exit. The default suite runs a share (kPrograms); the
// `long` label runs 10,000 (ctest -L long -R chip_vfn_random), printing its progress every 96
// programs (two batches). The seed of each batch is printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VFN_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 48;
#endif
constexpr unsigned kBatch = 48;
constexpr std::uint64_t kSeed = 0x5eed'0f70'0012ull;

constexpr std::uint32_t kWords = 1024;  // VR (vector.md section 2)

// VFN FN (f7, vector.md section 4.0).
constexpr unsigned kRsqrt = 0, kRecip = 1, kSilu = 2;
constexpr const char* kFnNames[3] = {"RSQRT", "RECIP", "SILU"};

// SILU's clamp edges (section 4.6): ix = rnd(x, 10) + 512 is 1023 from x = 522,752 up and 0 from
// x = -523,777 down.
constexpr std::int64_t kSiluHigh = 522752, kSiluLow = -523777;

// A custom-1 word: f7, rs2, rs1, f3, rd (vector.md section 4.0; VEW f3 = 4, VFN f3 = 5).
std::uint32_t vector_word(unsigned f7, unsigned rs2, unsigned rs1, unsigned f3, unsigned rd) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x2Bu;
}

// What the generator produced, so that the test can check that every class was reached.
struct Coverage {
  unsigned vfns = 0, vews = 0;         // valid VFNs, VEWs
  std::array<unsigned, 3> by_fn{};     // valid VFNs by FN
  std::array<unsigned, 3> in_place{};  // ... with dst = src
  std::array<unsigned, 4> n_mod4{};    // valid VFNs by n mod 4
  unsigned n_short = 0;                // n in 1..5
  std::array<unsigned, 4> n_last{};    // n = 1021..1024
  unsigned adjacent = 0;               // dst span just below or above the src span
  unsigned same_reg = 0, x0_reg = 0;   // rs1 = rs2; rs1 = x0
  unsigned ends_1023 = 0;              // a span ends at word 1023
  unsigned reads_earlier = 0;          // src span shares a word with an earlier destination
  unsigned reads_vfn = 0;              // ... with an earlier VFN's
  unsigned reads_vew = 0;              // ... with an earlier VEW's
  unsigned vew_reads_vfn = 0;          // a VEW source shares a word with an earlier VFN's destination
  // source elements still holding their initial word, by FN: x <= 0; for RSQRT and RECIP
  // floor_log2(x) = k (x >= 1) and x = 2^k, 2^k - 1, 2^k + 1 (k = 0..30)
  std::array<unsigned, 3> nonpos{};
  std::array<std::array<unsigned, 31>, 2> log2{}, pow{}, pow_minus{}, pow_plus{};
  unsigned x_max = 0, x_min = 0;       // INT32_MAX, INT32_MIN into any FN
  // SILU's initial source elements: ix clamped to 0 / 1023; x at the four edges (522,751,
  // 522,752, -523,776, -523,777); a tie of rnd(x, 10) (x = 512 mod 1024), positive / negative
  unsigned silu_low = 0, silu_high = 0, silu_tie_pos = 0, silu_tie_neg = 0;
  std::array<unsigned, 4> silu_edge{};
  std::array<unsigned, 3> trap_fn{};     // trapping VFNs built, by the FN drawn before breaking fields
  std::array<unsigned, 4> trap_alone{};  // ... with one condition alone: 16, 17, 18, 20
  test::DrawnTraps drawn;                // by program index: its last VFN drawn to trap, its lowest code
};

// n in 1..1024: every residue mod 4, short spans, up to the whole VR; weighted toward short spans
// (a VFN of n words is ceil(n/4) + 4n steps; 1021..1024 are forced instead, see random_program).
std::uint32_t draw_n(progen::Random& rng) {
  const std::uint32_t c = rng.below(32);
  if (c < 3) return 1 + rng.below(5);                               // 1..5
  if (c < 9) return 4 * (1 + rng.below(16)) + rng.below(4);         // every residue
  if (c < 20) return 1 + rng.below(64);
  if (c < 29) return 1 + rng.below(256);
  if (c < 31) return 1 + rng.below(128);
  return 1 + rng.below(kWords);
}

struct Span {
  std::uint32_t start = 0, n = 0;
  bool vfn = false;  // written by a VFN (else a VEW)
};

struct Vfn {
  std::uint32_t dst = 0, src = 0, n = 0, c = 0;  // A, B, N, C
  unsigned f7 = kRsqrt, rd = 0;
  bool same = false;                  // rs1 = rs2 (then src = n and dst = C)
  bool zero1 = false, zero2 = false;  // rs1 = x0 (dst = src = 0); rs2 = x0 (n = C = 0)
  std::uint32_t x1() const { return dst | (src << 16); }
  std::uint32_t x2() const { return c | (n << 16); }
};

// A VFN that does not trap: FN 0..2, n in 1..1024, both spans inside VR, dst = src or disjoint.
Vfn valid_vfn(progen::Random& rng, const std::vector<Span>& written, unsigned fn) {
  Vfn v;
  v.f7 = fn;
  if (rng.chance(16)) {  // rs1 = rs2: B = N (src = n) and A = C (dst); 2n <= 1024
    v.same = true;
    v.n = draw_n(rng);
    if (v.n > kWords / 2) v.n = 1 + rng.below(kWords / 2);
    v.src = v.n;
    const std::uint32_t k = rng.below(3);
    if (k == 0) v.dst = 0;                                         // disjoint, below the src span
    else if (k == 1 || 3 * v.n > kWords) v.dst = v.n;             // in place
    else v.dst = 2 * v.n + rng.below(kWords - 3 * v.n + 1);       // disjoint, above
    v.c = v.dst;
    return v;
  }
  v.n = draw_n(rng);
  v.c = rng.below(65536);
  const std::uint32_t hi = kWords - v.n;
  if (rng.chance(24)) {  // rs1 = x0: dst = src = 0, in place
    v.zero1 = true;
    return v;
  }
  v.src = test::draw_vr_start(rng, v.n, written);
  for (unsigned tries = 0; tries < 16; ++tries) {
    std::int64_t d = 0;
    switch (rng.below(6)) {
      case 0: case 1: d = v.src; break;  // in place
      case 2: d = rng.chance(2) ? std::int64_t{v.src} + v.n : std::int64_t{v.src} - v.n; break;  // adjacent
      case 3: d = hi; break;
      default: d = test::draw_vr_start(rng, v.n, written); break;
    }
    if (d >= 0 && d <= hi && !test::spans_conflict(static_cast<std::uint32_t>(d), v.src, v.n)) {
      v.dst = static_cast<std::uint32_t>(d);
      return v;
    }
  }
  v.dst = v.src;
  return v;
}

// A start field (16 bits) whose span of n words (1..1024) ends past word 1023.
std::uint32_t outside(progen::Random& rng, std::uint32_t n) {
  const std::uint32_t lo = kWords + 1 - n;
  return lo + (rng.chance(2) ? rng.below(n + 64) : rng.below(65536 - lo));
}

// The lowest code of section 6 that a VFN with these fields raises, 0 if none.
unsigned vfn_code(const Vfn& v) {
  if (v.f7 >= 3 || v.rd != 0) return 16;
  if (v.src + v.n > kWords || v.dst + v.n > kWords) return 17;
  if (v.n == 0 || v.n > kWords) return 18;
  if (test::spans_conflict(v.dst, v.src, v.n)) return 20;
  return 0;
}

// A VFN that traps: one or more of the conditions of section 6 built into a valid VFN (16: FN >= 3
// (bits 1..0 = 3, or a nonzero bit 6..2), or rd != x0; 17: a span past word 1023; 18: n = 0 or
// n > 1024; 20: dst at distance 1..n-1 from src). The trapping VFN number j (program 4j + 3) has
// one condition alone when j is even, condition (j / 2) mod 4, so that each code is raised alone
// within 32 programs; else any combination. `alone` is set to the condition's index (0..3) when
// only one was built, else 4.
Vfn trapping_vfn(progen::Random& rng, const std::vector<Span>& written, unsigned fn, unsigned j, unsigned& alone) {
  Vfn v = valid_vfn(rng, written, fn);
  v.same = v.zero1 = false;
  const unsigned mask = j % 2 == 0 ? 1u << (j / 2 % 4) : 1 + rng.below(15);
  alone = 4;
  for (unsigned b = 0; b < 4; ++b)
    if (mask == 1u << b) alone = b;
  if (mask & 8) {  // 20: n in 2..256, dst at distance 1..n-1 from src
    v.n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
    const std::uint32_t hi = kWords - v.n, d = 1 + rng.below(v.n - 1);
    v.src = std::min(v.src, hi);
    v.dst = v.src + d <= hi ? v.src + d : v.src - d;  // src >= d here: n <= 256 leaves >= 768 starts
  }
  if (mask & 2) {  // 17
    switch (rng.below(3)) {
      case 0: v.n = kWords + 1 + rng.below(65536 - kWords - 1); break;  // also 18
      case 1: v.dst = outside(rng, v.n); break;
      default: v.src = outside(rng, v.n); break;
    }
  }
  if (mask & 4) {  // 18: n = 0 (a third of them: rs2 = x0, C = 0 too)
    v.n = 0;
    if (rng.chance(3)) {
      v.zero2 = true;
      v.c = 0;
    }
  }
  if (mask & 1) {  // 16
    switch (rng.below(4)) {
      case 0: v.f7 = 3; break;
      case 1: v.f7 = 3 + rng.below(125); break;                      // any FN 3..127
      case 2: v.f7 = fn | ((1 + rng.below(31)) << 2); break;        // a valid FN with a bit 6..2 set
      default: v.rd = 1 + rng.below(31); break;                      // rd != x0
    }
    if (rng.chance(4)) v.rd = 1 + rng.below(31);  // both
  }
  return v;
}

// Counts a valid VFN's classes, and its source elements that are still initial words by the path
// of section 4.6 they take.
void count(Coverage& cov, const Vfn& v, const std::vector<Span>& written, const test::InitialVr& known) {
  const unsigned fn = v.f7;
  ++cov.vfns;
  ++cov.by_fn[fn];
  cov.in_place[fn] += v.dst == v.src;
  ++cov.n_mod4[v.n % 4];
  cov.n_short += v.n <= 5;
  if (v.n >= 1021) ++cov.n_last[v.n - 1021];
  cov.adjacent += v.dst + v.n == v.src || v.src + v.n == v.dst;
  cov.same_reg += v.same;
  cov.x0_reg += v.zero1;
  cov.ends_1023 += std::max(v.dst, v.src) + v.n == kWords;
  bool earlier = false, vfn = false, vew = false;
  for (const Span& w : written) {
    const bool s = test::spans_share(v.src, v.n, w.start, w.n);
    earlier |= s;
    vfn |= s && w.vfn;
    vew |= s && !w.vfn;
  }
  cov.reads_earlier += earlier;
  cov.reads_vfn += vfn;
  cov.reads_vew += vew;
  for (std::uint32_t i = 0; i < v.n; ++i) {
    if (!known.initial[v.src + i]) continue;
    const std::int64_t x = known.value[v.src + i];
    cov.x_max += x == 0x7FFFFFFF;
    cov.x_min += x == -0x80000000ll;
    if (x <= 0) ++cov.nonpos[fn];
    if (fn == kSilu) {
      cov.silu_low += x <= kSiluLow;
      cov.silu_high += x >= kSiluHigh;
      const std::int64_t edges[4] = {kSiluHigh - 1, kSiluHigh, kSiluLow + 1, kSiluLow};
      for (unsigned e = 0; e < 4; ++e) cov.silu_edge[e] += x == edges[e];
      if (((x % 1024) + 1024) % 1024 == 512) ++(x > 0 ? cov.silu_tie_pos : cov.silu_tie_neg);
      continue;
    }
    if (x <= 0) continue;
    unsigned k = 0;
    while ((x >> (k + 1)) != 0) ++k;  // floor_log2(x), 0..30
    ++cov.log2[fn][k];
    for (unsigned j = 0; j <= 30; ++j) {
      const std::int64_t p = std::int64_t{1} << j;
      cov.pow[fn][j] += x == p;
      cov.pow_minus[fn][j] += j >= 1 && x == p - 1;
      cov.pow_plus[fn][j] += x == p + 1;
    }
  }
}

// An initial VR word: one of the input classes of section 4.6 (see the file comment), or random.
std::uint32_t vr_word(progen::Random& rng) {
  const std::uint32_t k = rng.below(31);
  const std::uint32_t sign = rng.chance(2) ? 0 : 0xFFFFFFFFu;  // negate: (x ^ sign) - sign
  switch (rng.below(32)) {  // 2^k, 2^k - 1, 2^k + 1: 3/32 each
    case 0: return 0;
    case 1: return 0xFFFFFFFFu;                         // -1
    case 2: return 0x80000000u;                         // INT32_MIN
    case 3: return 0x80000000u + rng.below(0x80000000u);  // any negative
    case 4: return 0u - (1 + rng.below(4096));          // small negatives
    case 5: return 1 + rng.below(3);                    // 1, 2, 3
    case 6: case 20: case 21: return 1u << k;
    case 7: case 22: case 23: return (1u << k) - 1;
    case 8: case 24: case 25: return (1u << k) + 1;
    case 9: return 0x7FFFFFFFu;
    case 10: return 65536 + rng.below(257) - 128;       // around 1.0
    case 11: return static_cast<std::uint32_t>(kSiluHigh - 4 + rng.below(9));  // SILU's upper clamp edge
    case 12: return static_cast<std::uint32_t>(kSiluLow - 4 + rng.below(9));   // ... lower
    case 13: return rng.below(4097) - 2048;             // around 0
    case 14: return 512 * (rng.below(2101) - 1050) + rng.below(3) - 1;  // 512 m + {-1, 0, 1}, |x| < 538,000
    case 15: return 1024 * (rng.below(2101) - 1050) + 512;  // ties of rnd(x, 10)
    case 16: return ((0x7FFFFFFFu - rng.below(1u << 20)) ^ sign) - sign;  // near INT32_MAX / -INT32_MAX
    case 17: return static_cast<std::uint32_t>(kSiluLow + 1 + rng.below(static_cast<std::uint32_t>(kSiluHigh - kSiluLow - 1)));  // unclamped
    case 18: case 26: return ((1u << k) + rng.below(1u << k)) ^ sign;  // floor_log2 = k, or its negation - 1
    case 19: return rng.operand();
    default: return static_cast<std::uint32_t>(rng.next());
  }
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  // VR's initial words (section 2.1)
  test::InitialVr known;
  std::vector<std::uint8_t> vr;
  for (std::uint32_t w = 0; w < kWords; ++w) {
    const std::uint32_t x = vr_word(rng);
    known.value[w] = static_cast<std::int32_t>(x);
    for (unsigned m = 0; m < 4; ++m) vr.push_back(static_cast<std::uint8_t>(x >> (8 * m)));
  }
  // 1..4 rounds; programs 4j + 3 end with a trapping VFN (one in four); programs 0, 4, 8, 12
  // (mod 64) begin with a valid VFN of n = 1021, 1022, 1023, 1024
  const unsigned rounds = 1 + rng.below(4);
  const bool trap_last = index % 4 == 3;
  const std::uint32_t forced_n = index % 64 < 16 && index % 4 == 0 ? 1021 + index % 64 / 4 : 0;
  cov.drawn.set(index, trap_last, 0);
  std::vector<Span> written;
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && k > 0 && rng.chance(4)) {  // VEW ADD or MUL in place on an earlier destination
      const unsigned mode = rng.below(2);
      const std::uint32_t n = draw_n(rng), a = test::draw_vr_start(rng, n, written);
      std::uint32_t b = rng.chance(4) ? a : test::draw_vr_start(rng, n, written);
      if (test::spans_conflict(a, b, n)) b = a;  // dst = a: b identical or disjoint
      bool reads_vfn = false;
      for (const Span& w : written)
        reads_vfn |= w.vfn && (test::spans_share(a, n, w.start, w.n) || test::spans_share(b, n, w.start, w.n));
      ++cov.vews;
      cov.vew_reads_vfn += reads_vfn;
      written.push_back({a, n, false});
      known.written(a, n);
      progen::emit_li(code, rs1, a | (a << 16));
      progen::emit_li(code, rs2, b | (n << 16));
      code.push_back(vector_word(mode, rs2, rs1, 4, 0));
      continue;
    }
    const unsigned fn = rng.below(3);
    unsigned alone = 4;
    Vfn v = trap ? trapping_vfn(rng, written, fn, index / 4, alone) : valid_vfn(rng, written, fn);
    if (k == 0 && forced_n != 0) {  // dst = src or disjoint: both at 0, or 1024 - n and 0
      v = Vfn{};
      v.f7 = fn;
      v.n = forced_n;
      v.c = rng.below(65536);
      v.src = rng.below(kWords - forced_n + 1);
      v.dst = rng.chance(2) ? v.src : kWords - forced_n - v.src;
      if (test::spans_conflict(v.dst, v.src, v.n)) v.dst = v.src;
    }
    if (trap) {
      ++cov.trap_fn[fn];
      if (alone < 4) ++cov.trap_alone[alone];
      cov.drawn.set(index, true, vfn_code(v));
    } else {
      count(cov, v, written, known);
      written.push_back({v.dst, v.n, true});
      known.written(v.dst, v.n);
    }
    const unsigned r1 = v.zero1 ? 0 : rs1;
    const unsigned r2 = v.zero2 ? 0 : v.same ? r1 : rs2;
    if (r1 != 0) progen::emit_li(code, r1, v.x1());
    if (!v.same && r2 != 0) progen::emit_li(code, r2, v.x2());
    code.push_back(vector_word(v.f7, r2, r1, 5, v.rd));
  }
  return test::vector_guest(rng, std::move(code), scratch, "vfn" + std::to_string(index), std::move(vr));
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  Coverage cov;
  const test::TrapRun run = test::run_trap_programs(
      kPrograms, kBatch, kSeed, mode, kPrograms > 1000,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); }, cov.drawn, {16, 17, 18, 20});
  if (::testing::Test::HasFailure()) return;
  // every class of operands and source words was generated (and so compared)
  for (unsigned r = 0; r < 4; ++r) {
    EXPECT_GT(cov.n_mod4[r], 0u) << "n = " << r << " mod 4, seed " << kSeed;
    EXPECT_GT(cov.n_last[r], 0u) << "n = " << 1021 + r << ", seed " << kSeed;
  }
  for (unsigned f = 0; f < 3; ++f) {
    EXPECT_GT(cov.by_fn[f], 0u) << "no valid VFN " << kFnNames[f] << ", seed " << kSeed;
    EXPECT_GT(cov.in_place[f], 0u) << "no in-place VFN " << kFnNames[f] << ", seed " << kSeed;
    EXPECT_GT(cov.trap_fn[f], 0u) << "no trapping VFN drawn as " << kFnNames[f] << ", seed " << kSeed;
    EXPECT_GT(cov.nonpos[f], 0u) << kFnNames[f] << ": no initial source word <= 0, seed " << kSeed;
  }
  for (unsigned f = 0; f < 2; ++f) {
    for (unsigned k = 0; k <= 30; ++k) {
      EXPECT_GT(cov.log2[f][k], 0u) << kFnNames[f] << ": no initial source word with floor_log2 " << k << ", seed " << kSeed;
      EXPECT_GT(cov.pow[f][k], 0u) << kFnNames[f] << ": no initial source word 2^" << k << ", seed " << kSeed;
      EXPECT_GT(cov.pow_plus[f][k], 0u) << kFnNames[f] << ": no initial source word 2^" << k << " + 1, seed " << kSeed;
      if (k > 0) {
        EXPECT_GT(cov.pow_minus[f][k], 0u) << kFnNames[f] << ": no initial source word 2^" << k << " - 1, seed " << kSeed;
      }
    }
  }
  for (unsigned e = 0; e < 4; ++e) EXPECT_GT(cov.silu_edge[e], 0u) << "SILU: clamp edge " << e << " not reached, seed " << kSeed;
  test::expect_generated(
      {{"n 1..5", cov.n_short},
      {"dst next to src", cov.adjacent},
      {"rs1 = rs2", cov.same_reg},
      {"rs1 = x0", cov.x0_reg},
      {"span ends at 1023", cov.ends_1023},
      {"reads an earlier destination", cov.reads_earlier},
      {"reads an earlier VFN's destination", cov.reads_vfn},
      {"reads an earlier VEW's destination", cov.reads_vew},
      {"VEW reads a VFN's destination", cov.vew_reads_vfn},
      {"INT32_MAX source", cov.x_max},
      {"INT32_MIN source", cov.x_min},
      {"SILU ix clamped to 0", cov.silu_low},
      {"SILU ix clamped to 1023", cov.silu_high},
      {"SILU positive tie of rnd(x, 10)", cov.silu_tie_pos},
      {"SILU negative tie of rnd(x, 10)", cov.silu_tie_neg},
      {"trap 16 alone", cov.trap_alone[0]},
      {"trap 17 alone", cov.trap_alone[1]},
      {"trap 18 alone", cov.trap_alone[2]},
      {"trap 20 alone", cov.trap_alone[3]}},
      kSeed);
  std::cout << "[ chip     ] " << kPrograms << " random VFN programs (" << run.traps << " end in a trap, codes " << run.codes
            << "; " << cov.vfns << " valid VFNs: RSQRT " << cov.by_fn[kRsqrt] << ", RECIP " << cov.by_fn[kRecip]
            << ", SILU " << cov.by_fn[kSilu] << ", in place " << cov.in_place[kRsqrt] << "/" << cov.in_place[kRecip]
            << "/" << cov.in_place[kSilu] << ", " << cov.reads_vfn << " read an earlier VFN's destination, "
            << cov.same_reg << " rs1 = rs2, " << cov.x0_reg << " rs1 = x0, n 1021..1024: " << cov.n_last[0] << "/"
            << cov.n_last[1] << "/" << cov.n_last[2] << "/" << cov.n_last[3] << "; " << cov.vews << " VEWs ("
            << cov.vew_reads_vfn << " read a VFN's destination); initial source words x <= 0 "
            << cov.nonpos[kRsqrt] << "/" << cov.nonpos[kRecip] << "/" << cov.nonpos[kSilu]
            << ", SILU clamped low/high " << cov.silu_low << "/" << cov.silu_high << ", rnd(x, 10) ties +/- "
            << cov.silu_tie_pos << "/" << cov.silu_tie_neg << "), " << to_string(mode) << ": " << run.steps
            << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVfnRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVfnRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
