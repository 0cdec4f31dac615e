// Random VEW ADD/MUL/MULS/ROT and VLD programs (vector.md sections 4.5 and 4.8) through the built
// RV32 chip and the reference in lock-step, teacher-forced and free-running, every step compared:
// 0 mismatches. The reference is the oracle (through the engine); this test does not model the ops
// (it only classifies the operand words it placed, to check that the hard cases were generated).
//
//   ADD   VR[dst + i] <- sat32(VR[a + i] + VR[b + i])
//   MUL   VR[dst + i] <- sat32(rnd(VR[a + i] * VR[b + i], 16))
//   MULS  VR[dst + i] <- sat32(rnd(VR[a + i] * VR[b + (i >> GS)], 16)), GS = 0..6
//   ROT   pairs k < n/2 of u = VR[a + 2k], v = VR[a + 2k + 1], c = COS[p][k mod 4], s = SIN[p][k mod 4]
//         (p = b): VR[dst + 2k] <- sat32(rnd(u c - v s, 16)), VR[dst + 2k + 1] <- sat32(rnd(u s + v c, 16))
//   VLD   VR[dst + i] <- sat32(sext8(b_i) * M), the record M, b_0 .. b_{n-1} in RAM
//
// Each program's initial VR comes from a `.lockstep.vreg` section (section 2.1) of random words
// biased to the edges of sat32 (INT32_MAX, INT32_MIN, near +-2^30 and +-2^31, 0, -1, small, so that
// sums saturate both ways), to products near +-2^47 (words of magnitude 2^15..2^31, so that MUL and
// MULS saturate both ways) and to rnd's half-up ties (+-1, +-3, +-0x8000, +-0x18000, 0x2AAB, so that
// x * y has low 16 bits 0x8000, positive and negative); about one word in five is half of a ROT
// pair: two words of magnitude 2^30..2^31 (signs alike or opposite: u c -+ v s passes +-2^47 both
// ways) or two multiples of 0x8000 (a tie of rnd where COS or SIN is odd). One program in eight has
// no section (VR all zero) or a shorter one. The program sets x1..x30 to random edge values and
// points x31 at a 256-byte scratch area, then runs 1..6 rounds of: a random scalar body of 2..12
// instructions (fuzz/progen), `li` of the two operand registers, then a VEW (ADD, MUL, MULS or ROT,
// about equally often) or, one round in three, a VLD of a record in an 8 KiB data area (M biased to
// +-2^31, +-2^24, 0, small and values where b * M saturates; bytes random with -128 and 127 often).
// VEW operands reach every path of the op: n from 1 to 1024 (every residue mod 4, the group
// boundaries 1..5, 63..65, 255..257, 1021..1024), spans anywhere and ending at word 1023, sources
// that read earlier VEWs' (ROTs' included) and VLDs' destinations, in place (dst = a, dst = b,
// a = b, all three equal), rs1 = rs2, rs1 = x0; MULS with every GS and n not a multiple of 2^GS, its
// scalar span [b, b + ((n-1) >> GS) + 1) inside VR and sharing no word with the destination (it may
// share words with the a span); ROT with n even (2, 4, 6, 8, 62, 64, 66, 1022, 1024 often), a odd
// or even (pairs count from the span's start), p = 0..63 (0, 1 and 63 often), in place (dst = a)
// about three times in five, else disjoint. One program in four (4 k + 3) ends with a VEW that
// traps, by the plans of kTrapPlans in turn: each code alone (16, 17, 18, 20; ROT also n odd: 18,
// and b >= 64: 23) and random combinations of every MODE, where the lowest code must win (MULS also
// GS = 7 and a scalar span that shares any word with the destination, identical start included);
// the others exit. A program ends in a trap exactly when it was drawn to, every one of the codes
// must be raised (23 by ROTs alone, and ROTs must raise 18 and 23), and a program whose only broken
// condition is one of them (with the other fields valid) must raise exactly that code. The default
// suite runs a share (kPrograms); the `long` label runs 10,000 (ctest -L long -R chip_vew_random),
// printing its progress every 1,000 programs. The seed of each batch is printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"
#include "lockstep/ref/vector.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VEW_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 36;
#endif
constexpr unsigned kBatch = 32;
constexpr std::uint64_t kSeed = 0x5eed'0e3a'0010ull;

constexpr std::uint32_t kWords = 1024;                       // VR (vector.md section 2)
constexpr std::uint32_t kArea = 0x60000, kAreaBytes = 8192;  // VLD records (in RAM, isa.md section 2)

// VEW MODE (f7 bits 1..0, vector.md section 4.0).
constexpr unsigned kAdd = 0, kMul = 1, kMuls = 2, kRot = 3;
constexpr const char* kModeNames[4] = {"ADD", "MUL", "MULS", "ROT"};

// VEW rd, rs1, rs2 with funct7 f7 (vector.md section 4.0: f3 = 4 of custom-1; f7 bits 1..0 MODE,
// bits 4..2 GS).
std::uint32_t vew_word(unsigned f7, unsigned rs2, unsigned rs1, unsigned rd) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (4u << 12) | (rd << 7) | 0x2Bu;
}

// VLD x0, rs1, rs2 (vector.md section 4.0: f3 = 7 of custom-1, f7 = 0).
std::uint32_t vld_word(unsigned rs2, unsigned rs1) { return (rs2 << 20) | (rs1 << 15) | (7u << 12) | 0x2Bu; }

// Spans [x, x + n) and [y, y + n) share a word and are not identical (section 6, code 20).
bool conflict(std::uint32_t x, std::uint32_t y, std::uint32_t n) {
  const std::uint32_t d = x > y ? x - y : y - x;
  return d >= 1 && d < n;
}

// Spans [x, x + nx) and [y, y + ny) share a word (an empty span shares none).
bool shares(std::uint32_t x, std::uint32_t nx, std::uint32_t y, std::uint32_t ny) {
  return nx > 0 && ny > 0 && x < y + ny && y < x + nx;
}

// The length of MULS's scalar span for n >= 1 words and group shift gs (section 6).
std::uint32_t scalar_words(std::uint32_t n, unsigned gs) { return ((n - 1) >> gs) + 1; }

// What the generator produced, so that the test can check that every class was reached.
struct Coverage {
  std::array<unsigned, 4> n_mod4{};  // valid VEWs by n mod 4
  unsigned n_short = 0;              // n in 1..5
  unsigned n_64 = 0;                 // n in 63..65
  unsigned n_256 = 0;                // n in 255..257
  unsigned n_last = 0;               // n in 1021..1024
  unsigned dst_a = 0, dst_b = 0, a_b = 0, all_three = 0;  // in place (ADD, MUL)
  unsigned same_reg = 0, x0_reg = 0;  // rs1 = rs2; rs1 = x0
  unsigned ends_1023 = 0;            // some span ends at word 1023
  unsigned reads_earlier = 0;        // a or b span shares a word with an earlier destination
  unsigned reads_vld = 0;            // ... with an earlier VLD's destination
  unsigned reads_rot = 0;            // ... with an earlier ROT's destination (any VEW)
  unsigned vews = 0;                 // valid VEWs
  std::array<unsigned, 4> by_mode{};  // valid VEWs by MODE
  std::array<unsigned, 7> gs{};       // valid MULS by GS
  std::array<unsigned, 7> gs_ragged{};  // ... with n not a multiple of 2^GS
  unsigned muls_dst_a = 0;            // MULS in place on a
  unsigned muls_scalar_in_a = 0;      // MULS scalar span shares words with the a span
  unsigned muls_scalar_at_dst = 0;    // MULS scalar span just below or above the destination span
  // valid ROTs: in place (dst = a), disjoint, a odd, n = 2, n >= 1022, some span ending at word
  // 1023, p = 0 (exact: COS = 65536, SIN = 0), p = 63, a span sharing words with an earlier VLD's
  // destination
  unsigned rot_in_place = 0, rot_disjoint = 0, rot_odd_a = 0, rot_n2 = 0, rot_n_last = 0, rot_ends_1023 = 0;
  unsigned rot_p0 = 0, rot_p63 = 0, rot_reads_vld = 0;
  // element pairs whose two source words still hold their initial values, by MODE: the exact
  // result leaves int32 upwards / downwards; MUL/MULS: x * y ends in 0x8000 (rnd's tie), x * y > 0
  // / < 0; ROT: the same for each of u c - v s and u s + v c (two results a pair)
  std::array<unsigned, 4> sat_hi{}, sat_lo{}, tie_pos{}, tie_neg{};
  unsigned vlds = 0, vld_sat_hi = 0, vld_sat_lo = 0, vld_n_last = 0;  // VLD elements with b * M out of int32
  std::array<unsigned, 4> trap_mode{};  // trapping VEWs built, by MODE
  unsigned trap_gs7 = 0, trap_scalar = 0;  // ... MULS with GS = 7; with a scalar span on the destination
  unsigned trap_rot_odd = 0, trap_rot_pos = 0;  // ... ROT with n odd; with b >= 64
  unsigned short_sections = 0, no_sections = 0;
  std::vector<bool> traps;               // by program index: its last VEW was drawn to trap
  std::vector<unsigned> expected_code;   // by program index: the one code its trap must raise (0: any)
  std::vector<unsigned> trap_vew_mode;   // by program index: the MODE of its trapping VEW (if drawn)
};

// n in 1..1024: every residue mod 4, the group boundaries, up to the whole VR.
std::uint32_t draw_n(progen::Random& rng) {
  switch (rng.below(10)) {
    case 0: return 1 + rng.below(5);                        // 1..5
    case 1: return 63 + rng.below(3);                       // 63..65
    case 2: return 255 + rng.below(3);                      // 255..257
    case 3: return 1021 + rng.below(4);                     // 1021..1024
    case 4: return 4 * (1 + rng.below(16)) + rng.below(4);  // every residue near group ends
    case 5: case 6: return 1 + rng.below(64);
    case 7: case 8: return 1 + rng.below(256);
    default: return 1 + rng.below(kWords);
  }
}

struct Span {
  std::uint32_t start = 0, n = 0;
  bool vld = false;  // written by a VLD
  bool rot = false;  // written by a VEW ROT
};

// A start for a span of n words (0..1024 - n): often one that shares words with an earlier
// destination (so the op reads an earlier VEW's or VLD's results; a VLD's half the time where there
// is one), sometimes the end of VR or word 0.
std::uint32_t draw_start(progen::Random& rng, std::uint32_t n, const std::vector<Span>& written) {
  const std::int64_t hi = kWords - n;
  if (!written.empty() && rng.below(8) < 5) {
    std::vector<const Span*> pool;
    if (rng.chance(2))
      for (const Span& w : written)
        if (w.vld) pool.push_back(&w);
    if (pool.empty())
      for (const Span& w : written) pool.push_back(&w);
    const Span& w = *pool[rng.below(static_cast<std::uint32_t>(pool.size()))];
    const std::int64_t lo = static_cast<std::int64_t>(w.start) - n + 1, top = w.start + w.n - 1;
    const std::int64_t s = rng.chance(3) ? w.start : lo + rng.below(static_cast<std::uint32_t>(top - lo + 1));
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(s, 0, hi));
  }
  if (rng.chance(5)) return static_cast<std::uint32_t>(hi);  // ends at word 1023
  if (rng.chance(8)) return 0;
  return rng.below(static_cast<std::uint32_t>(hi) + 1);
}

struct Vew {
  std::uint32_t dst = 0, a = 0, b = 0, n = 0;  // A, B, C (ROT: the position p), N
  unsigned mode = kAdd, gs = 0;                // as drawn (f7 holds the word's field, maybe broken)
  unsigned f7 = 0, rd = 0;
  bool same = false;                 // rs1 = rs2 (then dst = b and a = n)
  bool zero1 = false, zero2 = false;  // rs1 = x0 (dst = a = 0); rs2 = x0 (b = n = 0)
  std::uint32_t x1() const { return dst | (a << 16); }
  std::uint32_t x2() const { return b | (n << 16); }
  // words read through b: n (ADD, MUL), the scalar span (MULS) or none (ROT: b is a position); n >= 1
  std::uint32_t b_words() const { return mode == kRot ? 0 : mode == kMuls ? scalar_words(n, gs) : n; }
};

// A VEW MULS that does not trap: GS 0..6, n in 1..1024 with n + scalar span <= 1024 (so that
// the two can be disjoint), the a span identical to or disjoint from the destination, the scalar
// span inside VR and sharing no word with the destination (it may overlap the a span).
// gs: the group shift to use, with a ragged last group where it is >= 1 (-1: drawn, ragged one time
// in three).
Vew valid_muls(progen::Random& rng, const std::vector<Span>& written, int gs = -1) {
  Vew v;
  v.mode = kMuls;
  v.gs = gs >= 0 ? static_cast<unsigned>(gs) : rng.below(7);
  v.f7 = kMuls | (v.gs << 2);
  const std::uint32_t g = 1u << v.gs;
  std::uint32_t nmax = kWords;
  while (nmax + scalar_words(nmax, v.gs) > kWords) --nmax;
  v.n = draw_n(rng);
  if (v.gs > 0 && (gs >= 0 || rng.chance(3)))  // ragged last group
    v.n = g * rng.below(kWords / g / 2) + 1 + rng.below(g - 1);
  if (v.n > nmax) v.n = rng.chance(2) ? nmax : 1 + rng.below(nmax);
  const std::uint32_t m = scalar_words(v.n, v.gs), hi = kWords - v.n;
  if (rng.chance(24)) {  // rs1 = x0: dst = a = 0, scalar span above it
    v.zero1 = true;
    v.b = v.n + (rng.chance(3) ? 0 : rng.below(kWords - m - v.n + 1));
    return v;
  }
  v.a = draw_start(rng, v.n, written);
  v.dst = v.a;
  for (unsigned tries = 0; tries < 16; ++tries) {
    const std::uint32_t d = rng.chance(2) ? v.a : rng.chance(4) ? hi : draw_start(rng, v.n, written);
    if (!conflict(d, v.a, v.n)) {
      v.dst = d;
      break;
    }
  }
  for (unsigned tries = 0; tries < 16; ++tries) {
    std::int64_t b = 0;
    switch (rng.below(6)) {
      case 0: b = v.a + rng.below(v.n); break;                        // inside the a span
      case 1: b = rng.chance(2) ? v.dst + v.n : std::int64_t{v.dst} - m; break;  // next to the destination
      case 2: b = kWords - m; break;
      default: b = draw_start(rng, m, written); break;
    }
    if (b >= 0 && b + m <= kWords && !shares(static_cast<std::uint32_t>(b), m, v.dst, v.n)) {
      v.b = static_cast<std::uint32_t>(b);
      return v;
    }
  }
  if (v.dst >= m) {
    v.b = rng.below(v.dst - m + 1);
  } else if (v.dst + v.n + m <= kWords) {
    v.b = v.dst + v.n + rng.below(kWords - m - v.dst - v.n + 1);
  } else {  // in place at the top, the scalar span below
    v.dst = v.a = hi;
    v.b = rng.below(hi - m + 1);
  }
  return v;
}

// ROT's count: even, 2..1024; often 2, the edges of a head's four pairs (4, 6, 8), of 64 words
// (62, 64, 66) and of VR (1022, 1024); else draw_n's count made even.
std::uint32_t draw_rot_n(progen::Random& rng) {
  static constexpr std::uint32_t kEdges[] = {4, 6, 8, 62, 64, 66, 1022, 1024};
  switch (rng.below(8)) {
    case 0: return 2;
    case 1: case 2: return kEdges[rng.below(8)];
    default: {
      const std::uint32_t n = draw_n(rng);
      return n % 2 == 0 ? n : n == 1 || rng.chance(2) ? n + 1 : n - 1;
    }
  }
}

// ROT's position p = C, 0..63: 0 (COS = 65536, SIN = 0: exact), 1 and 63 often.
std::uint32_t draw_position(progen::Random& rng) {
  switch (rng.below(6)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 63;
    default: return rng.below(64);
  }
}

// A VEW ROT that does not trap: n even in 2..1024, a anywhere (odd a included: pairs count from
// the span's start), p in 0..63, the destination span identical to the a span (in place) about
// three times in five, otherwise disjoint from it (in place where no disjoint start was found).
Vew valid_rot(progen::Random& rng, const std::vector<Span>& written) {
  Vew v;
  v.mode = kRot;
  v.f7 = kRot;
  if (rng.chance(16)) {  // rs1 = rs2: C = A (p = dst) and N = B (n = a): n even in 2..62, dst < 64
    v.same = true;
    v.n = 2 * (1 + rng.below(31));
    v.a = v.n;
    const std::uint32_t k = rng.below(3);
    if (k == 0) v.dst = 0;                                     // disjoint, below a's span
    else if (k == 1 || 2 * v.n > 63) v.dst = v.n;              // in place
    else v.dst = 2 * v.n + rng.below(64 - 2 * v.n);            // disjoint, above
    v.b = v.dst;
    return v;
  }
  v.n = draw_rot_n(rng);
  v.b = draw_position(rng);
  if (rng.chance(24)) {  // rs1 = x0: dst = a = 0, in place
    v.zero1 = true;
    return v;
  }
  const std::uint32_t hi = kWords - v.n;
  v.a = draw_start(rng, v.n, written);
  v.dst = v.a;
  if (rng.below(5) < 3) return v;
  for (unsigned tries = 0; tries < 16; ++tries) {
    const std::uint32_t d = rng.chance(4) ? hi : rng.chance(6) ? 0 : draw_start(rng, v.n, written);
    if (!shares(d, v.n, v.a, v.n)) {
      v.dst = d;
      break;
    }
  }
  return v;
}

// A VEW ADD or MUL (mode) that does not trap: n in 1..1024, every span inside VR, the destination
// span identical to or disjoint from each source span; or a valid MULS (valid_muls) or ROT
// (valid_rot).
Vew valid_vew(progen::Random& rng, const std::vector<Span>& written, unsigned mode, int gs = -1) {
  if (mode == kMuls) return valid_muls(rng, written, gs);
  if (mode == kRot) return valid_rot(rng, written);
  Vew v;
  v.mode = mode;
  v.f7 = mode;
  if (rng.chance(16)) {  // rs1 = rs2: A = C (dst = b) and B = N (a = n); a + n <= 1024
    v.same = true;
    v.n = draw_n(rng);
    if (v.n > kWords / 2) v.n = 1 + rng.below(kWords / 2);
    v.a = v.n;
    const std::uint32_t k = rng.below(3);
    if (k == 0) v.dst = 0;                    // disjoint, below a's span
    else if (k == 1 || 3 * v.n > kWords) v.dst = v.n;  // in place on both sources
    else v.dst = 2 * v.n + rng.below(kWords - 3 * v.n + 1);  // disjoint, above
    v.b = v.dst;
    return v;
  }
  v.n = draw_n(rng);
  const std::uint32_t hi = kWords - v.n;
  if (rng.chance(24)) {  // rs1 = x0: dst = a = 0
    v.zero1 = true;
    v.b = rng.chance(3) || v.n > hi ? 0 : v.n + rng.below(hi - v.n + 1);
    return v;
  }
  v.a = draw_start(rng, v.n, written);
  v.b = rng.chance(6) ? v.a : draw_start(rng, v.n, written);
  for (unsigned tries = 0; tries < 16; ++tries) {
    switch (rng.below(6)) {
      case 0: v.dst = v.a; break;
      case 1: v.dst = v.b; break;
      case 2: v.dst = hi; break;
      default: v.dst = draw_start(rng, v.n, written); break;
    }
    if (!conflict(v.dst, v.a, v.n) && !conflict(v.dst, v.b, v.n)) return v;
  }
  v.dst = v.a;  // in place on a; b as well where it would overlap partially
  if (conflict(v.dst, v.b, v.n)) v.b = v.a;
  return v;
}

// A start field (16 bits) whose span of n words (1..1024) ends past word 1023.
std::uint32_t outside(progen::Random& rng, std::uint32_t n) {
  const std::uint32_t lo = kWords + 1 - n;
  return lo + (rng.chance(2) ? rng.below(n + 64) : rng.below(65536 - lo));
}

// A VEW ROT that traps, with one or more of the conditions of section 6: 16 (GS != 0 or f7 bits
// 6..5 set, or rd != x0), 17 (n > 1024, or the destination or a span past word 1023), 18 (n odd,
// or n = 0), 20 (the destination span overlaps the a span partially), 23 (b >= 64, up to 65535).
// `plan` is the set of conditions to build (1: 16, 2: 17, 4: 18, 8: 20, 16: 23), or 0: draw it (one
// condition alone five times in eight, 18 and 23 more often, else any combination; with plan 4
// alone n is odd, drawn alone it is 0 one time in five). Each chosen condition holds by
// construction (17 is built after 18 and 20, which it may undo); which code is raised is the
// reference's to say, except where one condition alone was built: then `expected` is its code (the
// other fields as drawn are valid, so no lower code can hold).
Vew trapping_rot(progen::Random& rng, const std::vector<Span>& written, unsigned plan, Coverage& cov,
                 unsigned& expected) {
  Vew v = valid_rot(rng, written);
  v.same = v.zero1 = false;
  unsigned mask = plan;
  if (mask == 0) {
    switch (rng.below(8)) {
      case 0: case 1: mask = 4; break;
      case 2: case 3: mask = 16; break;
      case 4: mask = 1u << rng.below(5); break;
      default: mask = 1 + rng.below(31); break;
    }
  }
  if (mask & 8) {  // 20: n even in 2..256, dst at distance 1..n-1 from a
    v.n = rng.chance(3) ? 2 * (1 + rng.below(3)) : 2 * (1 + rng.below(128));
    const std::uint32_t hi = kWords - v.n, d = 1 + rng.below(v.n - 1);
    v.a = std::min(v.a, hi);
    v.dst = v.a + d <= hi ? v.a + d : v.a - d;  // a >= d here: n <= 256 leaves >= 768 starts
  }
  if (mask & 4) {  // 18: n = 0 (one in five), else n odd (n + 1 with 20, so that the overlap stays partial)
    if (plan != 4 && rng.chance(5)) {
      v.n = 0;
      if (!(mask & 16) && rng.chance(4)) {  // rs2 = x0
        v.zero2 = true;
        v.b = 0;
      }
    } else {
      v.n = mask & 8 ? v.n + 1 : v.n - 1;
      ++cov.trap_rot_odd;
    }
  }
  if (mask & 2) {  // 17
    switch (rng.below(3)) {
      case 0: v.n = kWords + 1 + rng.below(65536 - kWords - 1); break;  // also 18
      case 1: v.dst = outside(rng, v.n); break;
      default: v.a = outside(rng, v.n); break;
    }
  }
  if (mask & 16) {  // 23
    switch (rng.below(4)) {
      case 0: v.b = 64; break;
      case 1: v.b = 65535; break;
      default: v.b = 64 + rng.below(65536 - 64); break;
    }
    ++cov.trap_rot_pos;
  }
  if (mask & 1) {  // 16
    const unsigned k = rng.below(3);
    if (k != 1) v.f7 = kRot | (4 * (1 + rng.below(31)));  // some of GS and bits 6..5
    if (k != 0) v.rd = 1 + rng.below(31);
  }
  expected = mask == 1 ? 16 : mask == 2 ? 17 : mask == 4 ? 18 : mask == 8 ? 20 : mask == 16 ? 23 : 0;
  return v;
}

// A VEW of `mode` that traps, with one or more of the conditions of section 6 (16: a nonzero GS
// outside MULS, GS = 7, a reserved f7 bit, or rd != x0; 17: a span outside VR; 18: n = 0 or
// n > 1024; 20: the destination span overlaps the a span (or ADD/MUL's b span) partially, or MULS's
// scalar span shares any word with it). Each chosen condition holds by construction; which code is
// raised (the lowest) is the reference's to say, except where the one broken condition leaves
// every span as drawn valid, or the one condition is a span outside VR: then `expected` is set to
// its code (16, 17, ADD/MUL's overlap or MULS's scalar overlap: 20). `plan` chooses the conditions
// (1: 16, 2: 17, 4: 18, 8: 20; MULS also 32: GS = 7 alone, 64: its scalar overlap alone; ROT:
// trapping_rot's), or 0: drawn here (MULS's own one time in three; else one condition alone half
// the time, else any combination).
Vew trapping_vew(progen::Random& rng, const std::vector<Span>& written, unsigned mode, unsigned plan, Coverage& cov,
                 unsigned& expected) {
  if (mode == kRot) return trapping_rot(rng, written, plan, cov, expected);
  Vew v = valid_vew(rng, written, mode);
  v.same = v.zero1 = false;
  expected = 0;
  if (mode == kMuls && (plan == 0 ? rng.chance(3) : plan >= 32)) {  // MULS's own conditions alone
    if (plan == 0 ? rng.chance(2) : plan == 32) {  // GS = 7 (bits 6..5 zero or not)
      v.f7 = kMuls | (7u << 2) | (rng.below(4) << 5);
      ++cov.trap_gs7;
      expected = 16;
    } else {  // the scalar span shares a word with the destination (a third of them: b = dst)
      const std::uint32_t m = v.b_words();
      if (rng.chance(3)) {
        v.b = std::min(v.dst, kWords - m);  // b = dst unless the scalar span would leave VR
      } else {
        const std::int64_t w = v.dst + rng.below(v.n);
        v.b = static_cast<std::uint32_t>(std::clamp<std::int64_t>(w - rng.below(m), 0, kWords - m));
      }
      ++cov.trap_scalar;
      expected = 20;
    }
    return v;
  }
  // which conditions to break: one alone half the time (so that each code is raised alone), else any
  // combination
  const unsigned mask = plan != 0 ? plan : rng.chance(2) ? 1u << rng.below(4) : 1 + rng.below(15);
  if (mask & 8) {  // 20
    if (mode == kMuls && rng.chance(2)) {  // the scalar span shares a word with the destination
      const std::int64_t w = v.dst + rng.below(v.n), m = v.b_words();
      v.b = static_cast<std::uint32_t>(std::clamp<std::int64_t>(w - rng.below(static_cast<std::uint32_t>(m)), 0, kWords - m));
      ++cov.trap_scalar;
    } else {  // n in 2..256 and a start at distance 1..n-1 from a (or b)
      v.n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
      const std::uint32_t hi = kWords - v.n;
      v.a = std::min(v.a, hi);
      v.b = rng.chance(4) ? v.a : std::min(v.b, hi);
      const std::uint32_t base = rng.chance(2) || mode == kMuls ? v.a : v.b, d = 1 + rng.below(v.n - 1);
      v.dst = base + d <= hi ? base + d : base - d;  // base >= d here: n <= 256 leaves >= 768 starts
    }
  }
  if (mask & 2) {  // 17
    switch (rng.below(4)) {
      case 0: v.n = kWords + 1 + rng.below(65536 - kWords - 1); break;  // also 18
      case 1: v.dst = outside(rng, v.n); break;
      case 2: v.a = outside(rng, v.n); break;
      default: v.b = outside(rng, v.b_words()); break;
    }
  }
  if (mask & 4) {  // 18: n = 0
    v.n = 0;
    if (rng.chance(4)) {  // rs2 = x0
      v.zero2 = true;
      v.b = 0;
    }
  }
  if (mask & 1) {  // 16
    const unsigned k = rng.below(3);
    if (k != 1) {
      if (mode != kMuls) {
        v.f7 = mode | (4 * (1 + rng.below(31)));  // some of GS and bits 6..5
      } else if (rng.chance(2)) {
        v.f7 = kMuls | (7u << 2) | (rng.below(4) << 5);  // GS = 7
        ++cov.trap_gs7;
      } else {
        v.f7 = kMuls | (v.gs << 2) | ((1 + rng.below(3)) << 5);  // bits 6..5
      }
    }
    if (k != 0) v.rd = 1 + rng.below(31);
    if (mask == 1) expected = 16;
  }
  if (mask == 2) expected = 17;
  if (mask == 8 && mode != kMuls) expected = 20;  // (MULS: the new n may push the scalar span out of VR)
  return v;
}

// The initial VR words (sign-extended) and which of them no op has written yet.
struct Known {
  std::vector<std::int64_t> value = std::vector<std::int64_t>(kWords, 0);
  std::vector<bool> initial = std::vector<bool>(kWords, true);
  void written(std::uint32_t start, std::uint32_t n) {
    for (std::uint32_t i = start; i < start + n; ++i) initial[i] = false;
  }
};

// Counts a valid VEW's classes, and its element pairs whose inputs are still initial words by what
// the exact result does (leaves int32 up or down; MUL/MULS: a tie of rnd(., 16)).
void count(Coverage& cov, const Vew& v, const std::vector<Span>& written, const Known& known) {
  ++cov.vews;
  ++cov.by_mode[v.mode];
  ++cov.n_mod4[v.n % 4];
  cov.n_short += v.n <= 5;
  cov.n_64 += v.n >= 63 && v.n <= 65;
  cov.n_256 += v.n >= 255 && v.n <= 257;
  cov.n_last += v.n >= 1021;
  const std::uint32_t m = v.b_words();
  if (v.mode == kRot) {
    cov.rot_in_place += v.dst == v.a;
    cov.rot_disjoint += v.dst != v.a;
    cov.rot_odd_a += v.a % 2;
    cov.rot_n2 += v.n == 2;
    cov.rot_n_last += v.n >= 1022;
    cov.rot_ends_1023 += std::max(v.dst, v.a) + v.n == kWords;
    cov.rot_p0 += v.b == 0;
    cov.rot_p63 += v.b == 63;
  } else if (v.mode == kMuls) {
    ++cov.gs[v.gs];
    cov.gs_ragged[v.gs] += v.n % (1u << v.gs) != 0;
    cov.muls_dst_a += v.dst == v.a;
    cov.muls_scalar_in_a += shares(v.b, m, v.a, v.n);
    cov.muls_scalar_at_dst += v.b + m == v.dst || v.dst + v.n == v.b;
  } else {
    cov.dst_a += v.dst == v.a;
    cov.dst_b += v.dst == v.b;
    cov.a_b += v.a == v.b;
    cov.all_three += v.dst == v.a && v.a == v.b;
  }
  cov.same_reg += v.same;
  cov.x0_reg += v.zero1;
  cov.ends_1023 += std::max({v.dst + v.n, v.a + v.n, v.b + m}) == kWords;
  bool earlier = false, vld = false, rot = false;
  for (const Span& w : written) {
    const bool s = shares(v.a, v.n, w.start, w.n) || shares(v.b, m, w.start, w.n);
    earlier |= s;
    vld |= s && w.vld;
    rot |= s && w.rot;
  }
  cov.reads_earlier += earlier;
  cov.reads_vld += vld;
  cov.reads_rot += rot;
  if (v.mode == kRot) cov.rot_reads_vld += vld;
  constexpr std::int64_t kMax = 0x7FFFFFFF, kMin = -kMax - 1, k47 = std::int64_t{1} << 47;
  if (v.mode == kRot) {  // pair k: u = x_2k, v = x_2k+1, c = COS[p][k mod 4], s = SIN[p][k mod 4]
    const ref::VectorTables& t = ref::vector_tables();
    for (std::uint32_t k = 0; k < v.n / 2; ++k) {
      const std::uint32_t xu = v.a + 2 * k;
      if (!known.initial[xu] || !known.initial[xu + 1]) continue;
      const std::int64_t u = known.value[xu], w = known.value[xu + 1], c = t.cos[v.b][k % 4], s = t.sin[v.b][k % 4];
      for (const std::int64_t e : {u * c - w * s, u * s + w * c}) {  // |e| < 2^48
        cov.sat_hi[kRot] += e >= k47;
        cov.sat_lo[kRot] += e < -k47 - 0x8000;
        if ((e & 0xFFFF) == 0x8000) ++(e > 0 ? cov.tie_pos : cov.tie_neg)[kRot];
      }
    }
    return;
  }
  for (std::uint32_t i = 0; i < v.n; ++i) {
    const std::uint32_t xa = v.a + i, ya = v.b + (v.mode == kMuls ? i >> v.gs : i);
    if (!known.initial[xa] || !known.initial[ya]) continue;
    const std::int64_t x = known.value[xa], y = known.value[ya];
    if (v.mode == kAdd) {
      cov.sat_hi[kAdd] += x + y > kMax;
      cov.sat_lo[kAdd] += x + y < kMin;
      continue;
    }
    const std::int64_t p = x * y;  // |p| <= 2^62
    cov.sat_hi[v.mode] += p >= k47;  // rnd(p, 16) >= 2^31 from p >= 2^47 - 2^15
    cov.sat_lo[v.mode] += p < -k47 - 0x8000;
    if ((p & 0xFFFF) == 0x8000) ++(p > 0 ? cov.tie_pos : cov.tie_neg)[v.mode];
  }
}

// An initial VR word: an edge of sat32 (so that a sum of two saturates, either way), a magnitude
// whose products reach +-2^47 (MUL/MULS saturate), a tie maker for rnd(x * y, 16), or random.
std::uint32_t vr_word(progen::Random& rng) {
  static constexpr std::uint32_t kTies[] = {1, 0xFFFFFFFFu, 3, 0xFFFFFFFDu, 0x8000, 0xFFFF8000u, 0x18000,
                                            0xFFFE8000u, 0x2AAB, 0xFFFFD555u, 0x10000, 0xFFFF0000u};
  const std::uint32_t sign = rng.chance(2) ? 0 : 0xFFFFFFFFu;  // negate: (x ^ sign) - sign
  switch (rng.below(18)) {
    case 0: return 0x7FFFFFFFu;
    case 1: return 0x80000000u;
    case 2: return 0x7FFFFFFFu - rng.below(16);
    case 3: return 0x80000000u + rng.below(16);
    case 4: return 0x40000000u + rng.below(64) - 32;  // near 2^30
    case 5: return 0xC0000000u + rng.below(64) - 32;  // near -2^30
    case 6: return rng.below(33) - 16;                // small, 0 and -1 included
    case 7: return 0x40000000u + rng.below(0x40000000u);  // 2^30..2^31-1: two of them saturate
    case 8: return 0x80000000u + rng.below(0x40000000u);  // -2^31..-2^30-1
    case 9: {  // +-2^k + small, k = 15..30: products of two near +-2^47 and past it
      const std::uint32_t x = (1u << (15 + rng.below(16))) + rng.below(9) - 4;
      return (x ^ sign) - sign;
    }
    case 10: {  // magnitude in 2^23..2^31: with a word of 2^16..2^24 the product passes 2^47
      const std::uint32_t x = (1u << 23) + rng.below(0x7F800000u);
      return (x ^ sign) - sign;
    }
    case 11: case 12: case 13: return kTies[rng.below(12)];
    case 14: return rng.operand();
    default: return static_cast<std::uint32_t>(rng.next());
  }
}

// Two adjacent initial words for ROT's pairs: both of magnitude 2^30..2^31 (INT32_MAX and INT32_MIN
// among them), signs alike or opposite, so that u c - v s and u s + v c pass +-2^47 both ways for
// most angles; or both multiples of 0x8000 (+-k 0x8000, k = 0..15), so that the exact result ends in
// 0x8000 (a tie of rnd(., 16)) where COS or SIN is odd.
std::pair<std::uint32_t, std::uint32_t> rot_pair(progen::Random& rng) {
  auto word = [&](bool big) {
    const std::uint32_t sign = rng.chance(2) ? 0 : 0xFFFFFFFFu;
    if (!big) return ((rng.below(16) * 0x8000u) ^ sign) - sign;
    switch (rng.below(6)) {
      case 0: return 0x7FFFFFFFu;
      case 1: return 0x80000000u;
      default: return ((0x40000000u + rng.below(0x40000000u)) ^ sign) - sign;
    }
  };
  const bool big = rng.chance(2);
  const std::uint32_t x = word(big);
  return {x, word(big)};
}

// VLD's multiplier M: +-2^31 (INT32_MIN, INT32_MAX), +-2^24 (and next to them: -2^24 * -128 = 2^31
// just saturates), 0, small, magnitudes past 2^24 (b * M saturates for large |b|) or random.
std::uint32_t vld_m(progen::Random& rng) {
  switch (rng.below(10)) {
    case 0: return rng.chance(2) ? 0x80000000u : 0x7FFFFFFFu;
    case 1: return (rng.chance(2) ? 0x01000000u : 0xFF000000u) + rng.below(5) - 2;
    case 2: return 0;
    case 3: return rng.below(33) - 16;
    case 4: case 5: {
      const std::uint32_t x = 0x01000000u + rng.below(0x7F000000u), sign = rng.chance(2) ? 0 : 0xFFFFFFFFu;
      return (x ^ sign) - sign;
    }
    case 6: return rng.operand();
    case 7: return 0x10000u << rng.below(8);  // 2^16..2^23: Q16.16 scales, no saturation
    default: return static_cast<std::uint32_t>(rng.next());
  }
}

std::uint8_t vld_byte(progen::Random& rng) {
  switch (rng.below(8)) {
    case 0: return 0x80;  // -128
    case 1: return 0x7F;  // 127
    default: return static_cast<std::uint8_t>(rng.next());
  }
}

// The trapping VEWs, in turn (program 4 k + 3 ends with plan k mod 12): a MODE and trapping_vew's
// plan (0: conditions drawn at random). Every code (16, 17, 18, 20 and ROT's 23) alone in the first
// eight (so that a share of 32 programs raises each), then random combinations of every MODE; ROT
// five in twelve, MULS three, ADD and MUL two each.
struct TrapPlan {
  unsigned mode, plan;
};
constexpr TrapPlan kTrapPlans[] = {{kRot, 4}, {kMuls, 32}, {kAdd, 2}, {kRot, 16}, {kMul, 8},  {kMuls, 64},
                                   {kRot, 1}, {kRot, 8},   {kRot, 0}, {kAdd, 0},  {kMuls, 0}, {kMul, 0}};

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  // VR's initial words (section 2.1); one program in eight: no section, or a shorter one
  Known known;
  std::vector<std::uint8_t> vr;
  std::uint32_t bytes = 4 * kWords;
  if (rng.chance(8)) {
    bytes = rng.chance(2) ? 0 : 1 + rng.below(4 * kWords - 1);
    ++(bytes == 0 ? cov.no_sections : cov.short_sections);
  }
  auto push_word = [&](std::uint32_t x) {
    for (unsigned m = 0; m < 4; ++m) vr.push_back(static_cast<std::uint8_t>(x >> (8 * m)));
  };
  for (std::uint32_t w = 0; w < kWords && vr.size() < bytes; ++w) {
    if (w + 1 < kWords && rng.chance(8)) {  // about one word in five is half of a ROT pair
      const auto [x, y] = rot_pair(rng);
      push_word(x);
      push_word(y);
      ++w;
    } else {
      push_word(vr_word(rng));
    }
  }
  vr.resize(bytes);
  for (std::uint32_t i = 0; i < bytes; ++i)
    known.value[i / 4] = static_cast<std::int32_t>(static_cast<std::uint32_t>(known.value[i / 4]) | (std::uint32_t{vr[i]} << (8 * (i % 4))));
  format::Segment area = test::random_data_segment(rng, kArea, kAreaBytes);
  std::uint32_t area_used = 0;
  const unsigned rounds = 1 + rng.below(6);
  const bool trap_last = index % 4 == 3;
  if (cov.traps.size() <= index) {
    cov.traps.resize(index + 1);
    cov.expected_code.resize(index + 1);
    cov.trap_vew_mode.resize(index + 1);
  }
  cov.traps[index] = trap_last;
  cov.expected_code[index] = 0;
  std::vector<Span> written;
  bool first_vew = true;  // no valid VEW yet
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && rng.chance(3)) {  // VLD: a record at the next free aligned bytes of the area
      const std::uint32_t n = draw_n(rng), dst = draw_start(rng, n, written);
      const std::uint32_t at = area_used, mul = vld_m(rng);
      area_used += (4 + n + 3) / 4 * 4 + 4 * rng.below(4);  // at most 6 x 1040 < 8192
      for (unsigned m = 0; m < 4; ++m) area.bytes[at + m] = static_cast<std::uint8_t>(mul >> (8 * m));
      for (std::uint32_t i = 0; i < n; ++i) {
        area.bytes[at + 4 + i] = vld_byte(rng);
        const std::int64_t p = std::int64_t{static_cast<std::int8_t>(area.bytes[at + 4 + i])} * static_cast<std::int32_t>(mul);
        cov.vld_sat_hi += p > 0x7FFFFFFF;
        cov.vld_sat_lo += p < -0x80000000ll;
      }
      ++cov.vlds;
      cov.vld_n_last += n >= 1021;
      written.push_back({dst, n, true, false});
      known.written(dst, n);
      progen::emit_li(code, rs1, kArea + at);
      progen::emit_li(code, rs2, dst | (n << 16));
      code.push_back(vld_word(rs2, rs1));
      continue;
    }
    // valid: each MODE a quarter (the program's first valid VEW: MODE index mod 4, MULS with GS
    // (index / 4) mod 7 and a ragged last group, so that a share of 28 programs reaches every GS);
    // trapping: the next plan of kTrapPlans
    const TrapPlan& tp = kTrapPlans[index / 4 % std::size(kTrapPlans)];
    const unsigned mode = trap ? tp.mode : first_vew ? index % 4 : rng.below(4);
    const int gs = first_vew && mode == kMuls ? static_cast<int>(index / 4 % 7) : -1;
    unsigned expected = 0;
    const Vew v = trap ? trapping_vew(rng, written, mode, tp.plan, cov, expected) : valid_vew(rng, written, mode, gs);
    first_vew = first_vew && trap;
    if (trap) {
      ++cov.trap_mode[mode];
      cov.expected_code[index] = expected;
      cov.trap_vew_mode[index] = mode;
    } else {
      count(cov, v, written, known);
      written.push_back({v.dst, v.n, false, mode == kRot});
      known.written(v.dst, v.n);
    }
    const unsigned r1 = v.zero1 ? 0 : rs1;
    const unsigned r2 = v.zero2 ? 0 : v.same ? r1 : rs2;
    if (r1 != 0) progen::emit_li(code, r1, v.x1());
    if (!v.same && r2 != 0) progen::emit_li(code, r2, v.x2());
    code.push_back(vew_word(v.f7, r2, r1, v.rd));
  }
  progen::emit_li(code, 17, 93);  // exit(a0)
  code.push_back(0x00000073u);
  const format::Segment scr = test::random_data_segment(rng, scratch, 256);
  Guest g;
  g.name = "vew" + std::to_string(index);
  g.image = progen::image_from_code(code, 0x10000, {scr, area});
  if (bytes != 0) g.image.sections[".lockstep.vreg"] = std::move(vr);
  return g;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  unsigned traps = 0;
  std::map<unsigned, unsigned> codes, rot_codes;  // trap code -> programs (whose trapping VEW is a ROT)
  Coverage cov;
  const std::uint64_t steps = test::run_seeded_chip_programs(
      kPrograms, kBatch, kSeed, mode,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); },
      [&](unsigned i, const StreamResult& st) {
        EXPECT_TRUE(st.end == "exit" || st.end == "trap") << "program " << i << " (run seed " << kSeed << "): ended " << st.end;
        traps += st.end == "trap";
        // the last VEW traps exactly where one of section 6's conditions was built in; which code
        // is raised is the reference's to say (one of VEW's), except where one condition alone was
        const bool drawn = i < cov.traps.size() && cov.traps[i];
        if (st.end == "exit" || st.end == "trap") {
          EXPECT_EQ(st.end == "trap", drawn) << "program " << i << " (run seed " << kSeed << "): ended " << st.end
                                             << " (code " << st.trap_code << ")";
        }
        if (st.end == "trap") {
          ++codes[st.trap_code];
          const bool rot = drawn && cov.trap_vew_mode[i] == kRot;  // 23 is ROT's alone
          if (rot) ++rot_codes[st.trap_code];
          EXPECT_TRUE(st.trap_code == 16 || st.trap_code == 17 || st.trap_code == 18 || st.trap_code == 20 ||
                      (rot && st.trap_code == 23))
              << "program " << i << " (run seed " << kSeed << "): TRAP(" << st.trap_code << ")";
          if (drawn && cov.expected_code[i] != 0) {
            EXPECT_EQ(st.trap_code, cov.expected_code[i]) << "program " << i << " (run seed " << kSeed << ")";
          }
        }
#ifdef LOCKSTEP_CHIP_VEW_FULL
        if ((i + 1) % 1000 == 0)
          std::cout << "[ chip     ] " << to_string(mode) << ": programs 0.." << i << " compared (seed " << kSeed << ")"
                    << std::endl;
#endif
      });
  if (::testing::Test::HasFailure()) return;
  // about one program in four ends in a trap; both outcomes must be exercised
  EXPECT_GT(traps, 0u) << "seed " << kSeed;
  EXPECT_LT(traps, kPrograms) << "seed " << kSeed;
  for (const unsigned c : {16u, 17u, 18u, 20u}) EXPECT_GT(codes[c], 0u) << "no program raised " << c << ", seed " << kSeed;
  for (const unsigned c : {18u, 23u})
    EXPECT_GT(rot_codes[c], 0u) << "no trapping ROT raised " << c << ", seed " << kSeed;
  // every class of operands was generated (and so compared)
  for (unsigned r = 0; r < 4; ++r) EXPECT_GT(cov.n_mod4[r], 0u) << "n = " << r << " mod 4, seed " << kSeed;
  for (unsigned m = 0; m < 4; ++m) {
    EXPECT_GT(cov.by_mode[m], 0u) << "no valid VEW " << kModeNames[m] << ", seed " << kSeed;
    EXPECT_GT(cov.trap_mode[m], 0u) << "no trapping VEW " << kModeNames[m] << ", seed " << kSeed;
    EXPECT_GT(cov.sat_hi[m], 0u) << kModeNames[m] << ": no element saturating upwards, seed " << kSeed;
    EXPECT_GT(cov.sat_lo[m], 0u) << kModeNames[m] << ": no element saturating downwards, seed " << kSeed;
    if (m == kAdd) continue;  // MUL, MULS, ROT round
    EXPECT_GT(cov.tie_pos[m], 0u) << kModeNames[m] << ": no positive tie of rnd, seed " << kSeed;
    EXPECT_GT(cov.tie_neg[m], 0u) << kModeNames[m] << ": no negative tie of rnd, seed " << kSeed;
  }
  for (unsigned s = 0; s < 7; ++s) {
    EXPECT_GT(cov.gs[s], 0u) << "no valid MULS with GS = " << s << ", seed " << kSeed;
    if (s > 0) {
      EXPECT_GT(cov.gs_ragged[s], 0u) << "no valid MULS with GS = " << s << " and n mod 2^GS != 0, seed " << kSeed;
    }
  }
  const std::pair<const char*, unsigned> classes[] = {
      {"n 1..5", cov.n_short},         {"n 63..65", cov.n_64},          {"n 255..257", cov.n_256},
      {"n 1021..1024", cov.n_last},    {"dst = a", cov.dst_a},          {"dst = b", cov.dst_b},
      {"a = b", cov.a_b},              {"dst = a = b", cov.all_three},  {"rs1 = rs2", cov.same_reg},
      {"rs1 = x0", cov.x0_reg},        {"a span ends at 1023", cov.ends_1023},
      {"reads an earlier destination", cov.reads_earlier}, {"reads a VLD's destination", cov.reads_vld},
      {"MULS dst = a", cov.muls_dst_a}, {"MULS scalar span in the a span", cov.muls_scalar_in_a},
      {"MULS scalar span next to the destination", cov.muls_scalar_at_dst},
      {"VLD (some)", cov.vlds},         {"VLD element saturating upwards", cov.vld_sat_hi},
      {"VLD element saturating downwards", cov.vld_sat_lo},
      {"trapping MULS with GS = 7", cov.trap_gs7},
      {"trapping MULS with its scalar span on the destination", cov.trap_scalar},
      {"ROT in place", cov.rot_in_place},  {"ROT disjoint", cov.rot_disjoint}, {"ROT with a odd", cov.rot_odd_a},
      {"ROT n = 2", cov.rot_n2},           {"ROT n >= 1022", cov.rot_n_last},
      {"ROT span ends at 1023", cov.rot_ends_1023}, {"ROT p = 0", cov.rot_p0}, {"ROT p = 63", cov.rot_p63},
      {"ROT reads a VLD's destination", cov.rot_reads_vld}, {"VEW reads an earlier ROT's destination", cov.reads_rot},
      {"trapping ROT with n odd", cov.trap_rot_odd}, {"trapping ROT with b >= 64", cov.trap_rot_pos},
      {"short .lockstep.vreg", cov.short_sections}, {"no .lockstep.vreg", cov.no_sections}};
  for (const auto& [name, c] : classes) EXPECT_GT(c, 0u) << "not generated: " << name << ", seed " << kSeed;
  std::string seen;
  for (const auto& [c, k] : codes) seen += (seen.empty() ? "" : " ") + std::to_string(c) + ":" + std::to_string(k);
  std::string gs;
  for (unsigned s = 0; s < 7; ++s) gs += (s ? "/" : "") + std::to_string(cov.gs[s]);
  std::string rot_seen;
  for (const auto& [c, k] : rot_codes)
    rot_seen += (rot_seen.empty() ? "" : " ") + std::to_string(c) + ":" + std::to_string(k);
  std::cout << "[ chip     ] " << kPrograms << " random VEW ADD/MUL/MULS/ROT and VLD programs (" << traps
            << " end in a trap, codes " << seen << "; trapping VEWs ADD " << cov.trap_mode[kAdd] << ", MUL "
            << cov.trap_mode[kMul] << ", MULS " << cov.trap_mode[kMuls] << " (GS = 7: " << cov.trap_gs7
            << ", scalar span on dst: " << cov.trap_scalar << "), ROT " << cov.trap_mode[kRot] << " (n odd: "
            << cov.trap_rot_odd << ", b >= 64: " << cov.trap_rot_pos << "; codes " << rot_seen << "); " << cov.vews
            << " valid VEWs: ADD " << cov.by_mode[kAdd] << ", MUL " << cov.by_mode[kMul] << ", MULS "
            << cov.by_mode[kMuls] << " (by GS " << gs << "), ROT " << cov.by_mode[kRot] << " (" << cov.rot_in_place
            << " in place, " << cov.rot_odd_a << " a odd, " << cov.rot_n2 << " n = 2, p = 0/63: " << cov.rot_p0 << "/"
            << cov.rot_p63 << ", " << cov.rot_reads_vld << " read a VLD's destination), " << cov.reads_earlier
            << " read an earlier destination, " << cov.reads_vld << " a VLD's, " << cov.reads_rot << " a ROT's, "
            << cov.all_three << " all in place, " << cov.same_reg << " rs1 = rs2, " << cov.n_last
            << " n >= 1021; initial-word element pairs saturating up/down ADD " << cov.sat_hi[kAdd] << "/"
            << cov.sat_lo[kAdd] << ", MUL " << cov.sat_hi[kMul] << "/" << cov.sat_lo[kMul] << ", MULS "
            << cov.sat_hi[kMuls] << "/" << cov.sat_lo[kMuls] << ", ROT " << cov.sat_hi[kRot] << "/" << cov.sat_lo[kRot]
            << ", rnd ties +/- MUL " << cov.tie_pos[kMul] << "/" << cov.tie_neg[kMul] << ", MULS " << cov.tie_pos[kMuls]
            << "/" << cov.tie_neg[kMuls] << ", ROT " << cov.tie_pos[kRot] << "/" << cov.tie_neg[kRot] << "; "
            << cov.vlds << " VLDs, elements saturating up/down " << cov.vld_sat_hi << "/" << cov.vld_sat_lo << "), "
            << to_string(mode) << ": " << steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVewRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVewRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
