// Random VEXP programs (vector.md sections 4.4, 5 and 6), with VEW ADD rounds that change VR between
// them, through the built RV32 chip and the reference in lock-step, teacher-forced and
// free-running, every step compared: 0 mismatches. The reference is the oracle (through the
// engine); this test only computes the indices i of the groups it placed, to check that every
// path of section 4.4 was generated.
//
//   VEXP  f7 = G - 1 (G = 1..8 groups); X(rs1) = dst | src << 16, X(rs2) = sums | T << 16 (T = 1..64)
//         m_g = max_t VR[src + 64 g + t]; p = EXP[min(1023, rnd(m_g - s, 10))] -> VR[dst + 64 g + t];
//         S_g = sum_t p -> VR[sums + g]; tokens VXM0..VXM3 (m_g), the word stream of p, then of S_g
//
// Each program's initial VR comes from a `.lockstep.vreg` section (section 2.1) whose 64-word
// blocks are drawn from one of seven profiles: any words; scores within 2^16 of a base (i in
// 0..64, the usual softmax range); differences that are ties of rnd(., 10) (m - s = 1024 j + 512);
// differences around 2^20 (i = 1023 exactly, or clamped) and around 755 * 1024 (EXP turns 0);
// INT32_MAX with INT32_MIN (m - s = 2^32 - 1); all equal (every p = 65536: S = 65536 T, up to
// 2^22); a few distinct values (ties of the maximum). A block's base word is random; programs 0
// mod 32 begin with a VEXP of T = 64 over blocks of one repeated word (S = 2^22). The program
// sets x1..x30 to random edge values and points x31 at a 256-byte scratch area, then runs 1..3
// rounds of: a random scalar body of 2..12 instructions, `li` of the two operand registers, then a
// VEXP or, one later round in five, a VEW ADD in place. Operands: G 1..8 (8 weighted), T 1..64 (1,
// 4, 5, 63, 64 weighted); src a multiple of 64 one time in four (each group one profile's block);
// dst = src (in place) a third of the time, or in the gaps between the
// source groups (T <= 32), or elsewhere; the sums after the groups, in a gap between groups, or
// elsewhere; every layout is checked against section 6's overlap rule (a drawn one that would
// trap is replaced by a safe one). Programs 4j + 3 (one in four) end with a VEXP that traps (16:
// f7 bits 6..3 or rd != x0; 17: a span past word 1023; 18: T = 0 or T > 64; 20: an overlap), one
// condition alone for even j, else any combination; the code raised must be the lowest of the
// conditions that hold. The default suite runs a share (kPrograms); the `long` label runs 10,000
// (ctest -L long -R chip_vexp_random), printing its progress every 128 programs. The seed of each
// batch is printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VEXP_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 192;
#endif
constexpr unsigned kBatch = 64;
constexpr std::uint64_t kSeed = 0x5eed'07ed'0015ull;

constexpr std::uint32_t kWords = 1024;  // VR (vector.md section 2)

struct Vexp {
  std::uint32_t dst = 0, src = 0, sums = 0, t = 1, g = 1;  // A, B, C, N = T; G
  unsigned f7_extra = 0, rd = 0;
  unsigned f7() const { return (g - 1) | f7_extra; }
  std::uint32_t x1() const { return dst | (src << 16); }
  std::uint32_t x2() const { return sums | (t << 16); }
  std::uint32_t span() const { return 64 * (g - 1) + t; }  // a group layout's extent
};

// [x, x + n) and [y, y + m) share a word.
bool meet(std::int64_t x, std::int64_t n, std::int64_t y, std::int64_t m) { return x < y + m && y < x + n; }

// Section 6's code 20 for VEXP (G, T valid): dst != src and a destination group meets a source
// group, or the sums meet a group of either.
bool overlaps(const Vexp& v) {
  for (std::uint32_t a = 0; a < v.g; ++a) {
    for (std::uint32_t b = 0; b < v.g && v.dst != v.src; ++b)
      if (meet(v.dst + 64 * a, v.t, v.src + 64 * b, v.t)) return true;
    if (meet(v.sums, v.g, v.src + 64 * a, v.t) || meet(v.sums, v.g, v.dst + 64 * a, v.t)) return true;
  }
  return false;
}

// The lowest code of section 6 that a VEXP with these fields raises, 0 if none.
unsigned vexp_code(const Vexp& v) {
  if (v.f7_extra != 0 || v.rd != 0) return 16;
  const std::int64_t ext = 64 * (static_cast<std::int64_t>(v.g) - 1) + v.t;
  if (v.src + ext > kWords || v.dst + ext > kWords || v.sums + v.g > kWords) return 17;
  if (v.t == 0 || v.t > 64) return 18;
  if (overlaps(v)) return 20;
  return 0;
}

struct Coverage {
  unsigned vexps = 0, vews = 0;
  std::array<unsigned, 9> by_g{};
  unsigned t_1 = 0, t_64 = 0, in_place = 0, dst_in_gaps = 0, sums_in_gaps = 0;
  // groups on initial words: indices i = 0 (scores at the maximum), in 1..1022, 1023 exactly
  // (not clamped), clamped (d + 512 >= 2^20), ties of rnd(d, 10), p = 0 (i >= 755) with i <
  // 1023, d = 2^32 - 1, S = 2^22 (64 scores at the maximum)
  unsigned known_groups = 0, i_zero = 0, i_mid = 0, i_1023 = 0, clamped = 0, ties = 0, p_zero = 0, d_max = 0, s_max = 0;
  std::array<unsigned, 4> trap_alone{};  // 16, 17, 18, 20 alone
  test::DrawnTraps drawn;
};

std::uint32_t draw_t(progen::Random& rng) {
  static constexpr std::array<std::uint32_t, 5> kEdges = {1, 4, 5, 63, 64};
  return rng.chance(3) ? kEdges[rng.below(5)] : 1 + rng.below(64);
}

// A valid VEXP: G, T, then a layout from the drawn classes, replaced by a safe one (src anywhere,
// in place, the sums right after the last group) when it would trap.
Vexp valid_vexp(progen::Random& rng) {
  Vexp v;
  v.g = rng.chance(4) ? 8 : 1 + rng.below(8);
  v.t = draw_t(rng);
  const std::uint32_t ext = v.span();
  for (int tries = 0; tries < 16; ++tries) {
    v.src = rng.chance(4) ? 64 * rng.below((kWords - ext) / 64 + 1) : rng.below(kWords - ext + 1);  // blocks: one profile
    const unsigned d = rng.below(3);
    if (d == 0) v.dst = v.src;
    else if (d == 1 && v.t <= 32) v.dst = v.src + v.t + rng.below(64 - 2 * v.t + 1);  // in the gaps
    else v.dst = rng.below(kWords - ext + 1);
    const unsigned s = rng.below(3);
    if (s == 0) v.sums = v.src + ext + rng.below(4);                                        // after the groups
    else if (s == 1 && 64 - v.t >= v.g) v.sums = v.src + 64 * rng.below(v.g) + v.t + rng.below(64 - v.t - v.g + 1);  // a gap
    else v.sums = rng.below(kWords - v.g + 1);
    if (vexp_code(v) == 0) return v;
  }
  v.src = rng.below(kWords - ext - v.g + 1);
  v.dst = v.src;
  v.sums = v.src + ext;
  return v;
}

// A VEXP that traps: conditions 16, 17, 18, 20 (bits 0..3 of the mask) built into a valid one;
// one alone when j is even (condition j / 2 mod 4), else any combination.
Vexp trapping_vexp(progen::Random& rng, unsigned j, unsigned& alone) {
  Vexp v = valid_vexp(rng);
  const unsigned mask = j % 2 == 0 ? 1u << (j / 2 % 4) : 1 + rng.below(15);
  alone = mask == 1 ? 0 : mask == 2 ? 1 : mask == 4 ? 2 : mask == 8 ? 3 : 4;
  if (mask & 8) {  // 20: dst one word off src (G = 1: T >= 2), or the sums on a group's last word
    v.t = std::max<std::uint32_t>(v.t, 2);
    v.src = std::min(v.src, kWords - v.span() - 1);
    if (rng.chance(2)) {
      v.dst = v.src + 1;
    } else {
      v.dst = v.src;
      v.sums = v.src + 64 * rng.below(v.g) + v.t - 1;
    }
  }
  if (mask & 2) {  // 17
    switch (rng.below(3)) {
      case 0: v.src = kWords + 1 - v.span() + rng.below(64 + (rng.chance(4) ? 60000 : 0)); break;
      case 1: v.dst = kWords + 1 - v.span() + rng.below(64 + (rng.chance(4) ? 60000 : 0)); break;
      default: v.sums = kWords + 1 - v.g + rng.below(64 + (rng.chance(4) ? 60000 : 0)); break;
    }
  }
  if (mask & 4) v.t = rng.chance(2) ? 0 : 65 + rng.below(rng.chance(2) ? 64 : 65000);  // 18
  if (mask & 1) {  // 16
    if (rng.chance(2)) v.f7_extra = (1 + rng.below(15)) << 3;
    else v.rd = 1 + rng.below(31);
  }
  return v;
}

std::int64_t rnd(std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; }
std::int64_t exp_entry(std::int64_t i) { return std::llround(65536.0 * std::exp(-static_cast<double>(i) / 64.0)); }

void count(Coverage& cov, const Vexp& v, const test::InitialVr& known) {
  ++cov.vexps;
  ++cov.by_g[v.g];
  cov.t_1 += v.t == 1;
  cov.t_64 += v.t == 64;
  cov.in_place += v.dst == v.src;
  cov.dst_in_gaps += v.dst > v.src && v.dst < v.src + 64 - v.t;
  for (std::uint32_t a = 0; a < v.g; ++a) cov.sums_in_gaps += v.sums >= v.src + 64 * a + v.t && v.sums + v.g <= v.src + 64 * a + 64;
  for (std::uint32_t g = 0; g < v.g; ++g) {
    const std::uint32_t lo = v.src + 64 * g;
    bool initial = true;
    std::int64_t m = INT64_MIN;
    for (std::uint32_t t = 0; t < v.t; ++t) {
      initial = initial && known.initial[lo + t];
      m = std::max(m, known.value[lo + t]);
    }
    if (!initial) continue;
    ++cov.known_groups;
    std::int64_t s_sum = 0;
    for (std::uint32_t t = 0; t < v.t; ++t) {
      const std::int64_t d = m - known.value[lo + t], r = rnd(d, 10), i = std::min<std::int64_t>(1023, r);
      cov.i_zero += i == 0;
      cov.i_mid += i > 0 && i < 1023;
      cov.i_1023 += r == 1023;
      cov.clamped += r > 1023;
      cov.ties += d % 1024 == 512;
      cov.p_zero += i >= 755 && r < 1023;
      cov.d_max += d == 0xFFFFFFFFll;
      s_sum += exp_entry(i);
    }
    cov.s_max += s_sum == (std::int64_t{1} << 22);
  }
}

// The words of one 64-word block of VR (profile drawn per block).
void fill_block(progen::Random& rng, std::uint32_t* w) {
  const std::int32_t base = static_cast<std::int32_t>(rng.next());
  const unsigned profile = rng.below(8);
  for (unsigned k = 0; k < 64; ++k) {
    std::int64_t x = base;
    switch (profile) {
      case 1: x = static_cast<std::int64_t>(base >> 2) + rng.below(1u << 16); break;  // within 2^16
      case 2: x = static_cast<std::int64_t>(base >> 2) + 1024 * rng.below(64) + (rng.chance(2) ? 512 : 0); break;
      case 3: {  // around 2^20 and 755 * 1024 below the block's base (the base is often the maximum)
        const std::int64_t at = rng.chance(2) ? (1 << 20) - 512 : 755 * 1024 - 512;
        x = static_cast<std::int64_t>(base >> 2) - (rng.chance(4) ? 0 : at + static_cast<std::int64_t>(rng.below(5)) - 2);
        break;
      }
      case 4: x = rng.chance(2) ? INT32_MAX : INT32_MIN; break;
      case 5: x = base; break;  // all equal
      case 6: x = static_cast<std::int64_t>(base >> 4) * static_cast<std::int64_t>(rng.below(3)); break;  // few values
      default: x = static_cast<std::int32_t>(rng.next()); break;
    }
    w[k] = static_cast<std::uint32_t>(std::clamp<std::int64_t>(x, INT32_MIN, INT32_MAX));
  }
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  test::InitialVr known;
  std::vector<std::uint32_t> words(kWords);
  for (std::uint32_t b = 0; b < kWords; b += 64) fill_block(rng, &words[b]);
  // programs 0 mod 32 begin with a VEXP of T = 64 on blocks of equal scores (S = 2^22)
  Vexp forced;
  if (index % 32 == 0) {
    forced.t = 64;
    forced.g = 1 + rng.below(8);
    forced.src = forced.dst = 64 * rng.below(16 - forced.g);
    forced.sums = forced.src + 64 * forced.g;
    const std::uint32_t x = static_cast<std::uint32_t>(rng.next());
    std::fill(words.begin() + forced.src, words.begin() + forced.sums, x);
  }
  std::vector<std::uint8_t> vr;
  for (std::uint32_t w = 0; w < kWords; ++w) {
    known.value[w] = static_cast<std::int32_t>(words[w]);
    for (unsigned m = 0; m < 4; ++m) vr.push_back(static_cast<std::uint8_t>(words[w] >> (8 * m)));
  }
  const unsigned rounds = 1 + rng.below(3);
  const bool trap_last = index % 4 == 3;
  cov.drawn.set(index, trap_last, 0);
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && k > 0 && rng.chance(5)) {  // VEW ADD in place: the next VEXP may read its sums
      const std::uint32_t n = 1 + rng.below(kWords), a = rng.below(kWords - n + 1);
      ++cov.vews;
      known.written(a, n);
      test::emit_vew_add_in_place(code, rs1, rs2, a, n);
      continue;
    }
    unsigned alone = 4;
    const Vexp v = k == 0 && index % 32 == 0 ? forced : trap ? trapping_vexp(rng, index / 4, alone) : valid_vexp(rng);
    if (trap) {
      if (alone < 4) ++cov.trap_alone[alone];
      cov.drawn.set(index, true, vexp_code(v));
    } else {
      count(cov, v, known);
      for (std::uint32_t g = 0; g < v.g; ++g) known.written(v.dst + 64 * g, v.t);
      known.written(v.sums, v.g);
    }
    progen::emit_li(code, rs1, v.x1());
    progen::emit_li(code, rs2, v.x2());
    code.push_back(test::vector_word(v.f7(), rs2, rs1, 3, v.rd));
  }
  return test::vector_guest(rng, std::move(code), scratch, "vexp" + std::to_string(index), std::move(vr));
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  Coverage cov;
  const test::TrapRun run = test::run_trap_programs(
      kPrograms, kBatch, kSeed, mode, kPrograms > 1000,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); }, cov.drawn, {16, 17, 18, 20});
  if (::testing::Test::HasFailure()) return;
  for (unsigned g = 1; g <= 8; ++g) EXPECT_GT(cov.by_g[g], 0u) << "no VEXP of " << g << " groups, seed " << kSeed;
  test::expect_generated({{"T = 1", cov.t_1},
                          {"T = 64", cov.t_64},
                          {"in place", cov.in_place},
                          {"dst in the source's gaps", cov.dst_in_gaps},
                          {"sums in a gap", cov.sums_in_gaps},
                          {"i = 0", cov.i_zero},
                          {"i in 1..1022", cov.i_mid},
                          {"i = 1023 unclamped", cov.i_1023},
                          {"i clamped", cov.clamped},
                          {"a tie of rnd(d, 10)", cov.ties},
                          {"p = 0 below the clamp", cov.p_zero},
                          {"d = 2^32 - 1", cov.d_max},
                          {"S = 2^22", cov.s_max},
                          {"trap 16 alone", cov.trap_alone[0]},
                          {"trap 17 alone", cov.trap_alone[1]},
                          {"trap 18 alone", cov.trap_alone[2]},
                          {"trap 20 alone", cov.trap_alone[3]}},
                         kSeed);
  std::cout << "[ chip     ] " << kPrograms << " random VEXP programs (" << run.traps << " end in a trap, codes " << run.codes
            << "; " << cov.vexps << " valid VEXPs, " << cov.in_place << " in place, " << cov.dst_in_gaps
            << " dst in the gaps, " << cov.sums_in_gaps << " sums in a gap; " << cov.known_groups
            << " groups on initial words: i = 0 " << cov.i_zero << ", 1..1022 " << cov.i_mid << ", 1023 " << cov.i_1023
            << ", clamped " << cov.clamped << ", rnd ties " << cov.ties << ", p = 0 " << cov.p_zero << ", d = 2^32 - 1 "
            << cov.d_max << ", S = 2^22 " << cov.s_max << "; " << cov.vews << " VEW ADDs), " << to_string(mode) << ": "
            << run.steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVexpRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVexpRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
