// Random VQ programs (vector.md sections 4.3, 5 and 6), with VEW ADD rounds that change VR between
// them, through the built RV32 chip and the reference in lock-step, teacher-forced and
// free-running, every step compared: 0 mismatches. The reference is the oracle (through the
// engine); this test only computes e_k of the groups it placed, to check that every path of
// section 4.3 was generated.
//
//   VQ ACT  f7 = 0: groups k of 64 words of [src, src + n), n = 1..384: VQE((k << 5) | e_k), then
//           the 64 values q_i = rnd(x_i, e_k) of block b0 + k (zeros past n)
//   VQ K/V  f7 = 1 / 2: n = 32, row < 320: VQE(e_0), then the 32 values
//   X(rs1) = A | src << 16 (A: b0 or row), X(rs2) = C | n << 16 (C unused: random), rd = x0
//
// Each program's initial VR comes from a `.lockstep.vreg` section (section 2.1) drawn from one of
// ten profiles, with a magnitude `scale` (0..31) per program: any words; small words (-300..300:
// e_k 0..2, and x = 127, 128); words at the edges of E (+-(255 2^s + d), s = scale mod 24 or one
// less, d = -1 or 0 (also 1 for an odd scale), and +-127, +-128, so that amax sits on either side
// of a threshold); ties of rnd for e = 1 + scale mod 24 (j 2^e + 2^(e-1)); powers of two and
// their negatives; INT32_MIN (e_k = 25) and INT32_MAX; a mix of those; groups of zeros (e_k = 0)
// and a few words; words below 2^scale in magnitude. The program sets x1..x30 to random edge
// values and points x31 at a 256-byte scratch area, then runs 1..4 rounds of: a random scalar body
// of 2..12 instructions, `li` of the two operand registers, then a VQ (ACT three times in five, K
// or V otherwise) or, one later round in five, a VEW ADD in place. Operands reach every case: n
// from 1 to 384 (1, 63, 64, 65, 128, 320, 321, 384 weighted; programs 0, 4, 8, 12 mod 64 begin
// with n = 384, 383, 321, 65), spans anywhere and ending at word 1023, b0 up to 6 - ceil(n/64),
// rows 0..319 (0 and 319 weighted), rs1 = rs2. Programs 4j + 3 (one in four) end with a VQ that
// traps (16: TARGET = 3, a reserved f7 bit or rd != x0; 17: the source span past word 1023; 18:
// n = 0, n > 384 (ACT) or n != 32 (K/V); 19: b0 + ceil(n/64) > 6 (ACT); 22: row >= 320 (K/V)),
// one condition alone for even j, else any combination; the code raised must be the lowest of the
// conditions built.
// The default suite runs a share (kPrograms); the `long` label runs 10,000 (ctest -L long -R
// chip_vq_random), printing its progress every 128 programs. The seed of each batch is printed
// on failure.
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

#ifdef LOCKSTEP_CHIP_VQ_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 256;
#endif
constexpr unsigned kBatch = 64;
constexpr std::uint64_t kSeed = 0x5eed'07ed'0014ull;

constexpr std::uint32_t kWords = 1024;  // VR (vector.md section 2)
constexpr unsigned kAct = 0, kK = 1, kV = 2;

std::int64_t rnd(std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; }

// E(a): the smallest e >= 0 with rnd(a, e) <= 127 (section 4.3), for 0 <= a <= 2^31.
unsigned shift_of(std::int64_t a) {
  unsigned e = 0;
  while (rnd(a, e) > 127) ++e;
  return e;
}

struct Coverage {
  unsigned vqs = 0, vews = 0;          // valid VQs, VEW ADDs
  std::array<unsigned, 3> by_target{};  // valid VQs: ACT, K, V
  std::array<unsigned, 7> by_groups{};  // valid ACTs by ceil(n/64)
  unsigned padded = 0;                  // ACT with n % 64 != 0 (zeros after the last value)
  unsigned n_384 = 0, n_1 = 0, ends_1023 = 0, same_reg = 0, row_0 = 0, row_319 = 0, last_block = 0;
  unsigned reads_vew = 0;  // the source span holds an earlier VEW's destination
  // groups whose words were all still initial: by e_k; amax at a threshold of E (E(amax) >
  // E(amax - 1)); amax from a negative word only; a value that is a tie of rnd
  unsigned known_groups = 0, at_threshold = 0, neg_amax = 0, ties = 0;
  std::array<unsigned, 26> by_e{};
  std::array<unsigned, 3> trap_target{};  // trapping VQs by the TARGET drawn (0..2)
  std::array<unsigned, 5> trap_alone{};   // ... with one condition alone: 16, 17, 18, 19, 22
  test::DrawnTraps drawn;
};

struct Span {
  std::uint32_t start = 0, n = 0;
};

struct Vq {
  std::uint32_t a = 0, src = 0, n = 0, c = 0;  // A (b0 or row), B, N, C
  unsigned target = kAct, f7_extra = 0, rd = 0;
  bool same = false, zero2 = false;  // rs1 = rs2; rs2 = x0
  unsigned f7() const { return target | f7_extra; }
  std::uint32_t x1() const { return a | (src << 16); }
  std::uint32_t x2() const { return c | (n << 16); }
};

std::uint32_t draw_n(progen::Random& rng) {
  static constexpr std::array<std::uint32_t, 8> kEdges = {1, 63, 64, 65, 128, 320, 321, 384};
  const std::uint32_t c = rng.below(8);
  if (c < 3) return kEdges[rng.below(8)];
  if (c < 5) return 1 + rng.below(64);
  return 1 + rng.below(384);
}

std::uint32_t blocks(std::uint32_t n) { return (n + 63) / 64; }

Vq valid_vq(progen::Random& rng, const std::vector<Span>& written) {
  Vq v;
  const unsigned t = rng.below(5);
  v.target = t < 3 ? kAct : t == 3 ? kK : kV;
  v.c = rng.below(65536);
  if (v.target == kAct) {
    v.n = draw_n(rng);
    const std::uint32_t top = 6 - blocks(v.n);  // b0 + ceil(n/64) <= 6
    v.a = rng.chance(4) ? top : rng.below(top + 1);
  } else {
    v.n = 32;
    const unsigned r = rng.below(6);
    v.a = r == 0 ? 0 : r == 1 ? 319 : rng.below(320);
  }
  if (rng.chance(16)) {  // rs1 = rs2: src = n, C = A
    v.same = true;
    v.src = v.n;
    v.c = v.a;
    return v;
  }
  v.src = test::draw_vr_start(rng, v.n, written);
  return v;
}

// The lowest code of section 6 that a VQ with these fields raises, 0 if none.
unsigned vq_code(const Vq& v) {
  if (v.target == 3 || v.f7_extra != 0 || v.rd != 0) return 16;
  if (v.src + v.n > kWords) return 17;
  if (v.target == kAct ? (v.n == 0 || v.n > 384) : v.n != 32) return 18;
  if (v.target == kAct && v.a + blocks(v.n) > 6) return 19;
  if (v.target != kAct && v.a >= 320) return 22;
  return 0;
}

// A VQ that traps: conditions 16, 17, 18, 19 (ACT) or 22 (K/V) (bits 0..3 of the mask) built into
// a valid VQ of TARGET `target` (0..2); one alone when j is even (condition j / 2 mod 4), else any
// combination.
Vq trapping_vq(progen::Random& rng, const std::vector<Span>& written, unsigned target, unsigned j, unsigned& alone) {
  Vq v = valid_vq(rng, written);
  while (v.target != target) v = valid_vq(rng, written);
  v.same = false;
  const unsigned mask = j % 2 == 0 ? 1u << (j / 2 % 4) : 1 + rng.below(15);
  alone = 5;
  if (mask == 1) alone = 0;
  if (mask == 2) alone = 1;
  if (mask == 4) alone = 2;
  if (mask == 8) alone = target == kAct ? 3 : 4;
  if (mask & 2) v.src = kWords + 1 - v.n + rng.below(v.n + 64 + (rng.chance(4) ? 60000 : 0));  // 17
  if (mask & 4) {                                                                               // 18
    if (target == kAct) {
      if (rng.chance(2)) {
        v.n = 0;
        if (rng.chance(3)) {
          v.zero2 = true;
          v.c = 0;
        }
      } else {
        v.n = 385 + rng.below(rng.chance(2) ? 64 : 65536 - 385);
      }
    } else {
      v.n = rng.chance(2) ? rng.below(32) : 33 + rng.below(rng.chance(2) ? 400 : 65536 - 33);
    }
  }
  if (mask & 8) {  // 19 (ACT) or 22 (K/V)
    if (target == kAct) v.a = 6 - std::min(6u, blocks(v.n)) + 1 + rng.below(rng.chance(2) ? 4 : 65000);
    else v.a = 320 + rng.below(rng.chance(2) ? 8 : 65536 - 320);
  }
  if (mask & 1) {  // 16
    switch (rng.below(3)) {
      case 0: v.target = 3; break;
      case 1: v.f7_extra = (1 + rng.below(31)) << 2; break;
      default: v.rd = 1 + rng.below(31); break;
    }
  }
  return v;
}

void count(Coverage& cov, const Vq& v, const std::vector<Span>& written, const test::InitialVr& known) {
  ++cov.vqs;
  ++cov.by_target[v.target];
  if (v.target == kAct) {
    ++cov.by_groups[blocks(v.n)];
    cov.padded += v.n % 64 != 0;
    cov.last_block += v.a + blocks(v.n) == 6;
  } else {
    cov.row_0 += v.a == 0;
    cov.row_319 += v.a == 319;
  }
  cov.n_384 += v.n == 384;
  cov.n_1 += v.n == 1;
  cov.ends_1023 += v.src + v.n == kWords;
  cov.same_reg += v.same;
  for (const Span& w : written) cov.reads_vew += test::spans_share(v.src, v.n, w.start, w.n);
  for (std::uint32_t k = 0; k < blocks(v.n); ++k) {
    const std::uint32_t lo = v.src + 64 * k, hi = std::min(v.src + v.n, lo + 64);
    std::int64_t amax = 0;
    bool initial = true;
    for (std::uint32_t w = lo; w < hi; ++w) {
      initial = initial && known.initial[w];
      amax = std::max(amax, known.value[w] < 0 ? -known.value[w] : known.value[w]);
    }
    if (!initial) continue;
    bool from_neg = amax > 0;  // no word is +amax
    for (std::uint32_t w = lo; w < hi; ++w) from_neg = from_neg && known.value[w] != amax;
    const unsigned e = shift_of(amax);
    ++cov.known_groups;
    ++cov.by_e[e];
    cov.at_threshold += amax > 0 && shift_of(amax - 1) < e;
    cov.neg_amax += from_neg;
    if (e >= 1)
      for (std::uint32_t w = lo; w < hi; ++w) {
        const std::int64_t m = std::int64_t{1} << e;
        cov.ties += ((known.value[w] % m) + m) % m == m / 2;
      }
  }
}

// A word of `profile`; `scale` (0..31, one per program) sets the magnitude of profiles 2, 3, 8,
// so that a group's e_k takes every value (a group's maximum of words at many scales is near the
// largest).
std::uint32_t vr_word(progen::Random& rng, unsigned profile, unsigned scale) {
  auto sign = [&](std::int64_t x) { return static_cast<std::uint32_t>(rng.chance(2) ? x : -x); };
  switch (profile) {
    case 1: return static_cast<std::uint32_t>(static_cast<std::int32_t>(rng.below(601)) - 300);
    case 2: {  // the edges of E: +-(255 2^s + d) with s = scale mod 24 or one less, +-127, +-128
      if (rng.chance(8)) return sign(127 + rng.below(2));
      const unsigned sc = scale % 24;
      const std::int64_t t = std::int64_t{255} << (sc - (sc > 0 && rng.chance(2) ? 1 : 0));
      const std::int64_t d = static_cast<std::int64_t>(rng.below(scale % 2 == 0 ? 2 : 3)) - 1;  // even scale: amax on a threshold
      return sign(std::min<std::int64_t>(t + d, 0x7FFFFFFF));
    }
    case 3: {  // ties of rnd: j 2^e + 2^(e-1), e = 1 + scale mod 24
      const unsigned e = 1 + scale % 24;
      return sign((static_cast<std::int64_t>(rng.below(256)) << e) + (std::int64_t{1} << (e - 1)));
    }
    case 4: return sign(std::int64_t{1} << rng.below(31));
    case 5: return rng.chance(2) ? 0x80000000u : rng.chance(2) ? 0x7FFFFFFFu : static_cast<std::uint32_t>(rng.next());
    case 6: return vr_word(rng, rng.below(9), scale);
    case 7: return rng.chance(16) ? static_cast<std::uint32_t>(rng.next()) : 0u;
    case 8: return sign(static_cast<std::int64_t>(rng.next() & ((std::uint64_t{1} << scale) - 1)));  // |x| < 2^scale
    default: return static_cast<std::uint32_t>(rng.next());
  }
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  test::InitialVr known;
  std::vector<std::uint8_t> vr;
  const unsigned profile = rng.below(10), scale = rng.below(32);
  for (std::uint32_t w = 0; w < kWords; ++w) {
    const std::uint32_t x = vr_word(rng, profile, scale);
    known.value[w] = static_cast<std::int32_t>(x);
    for (unsigned m = 0; m < 4; ++m) vr.push_back(static_cast<std::uint8_t>(x >> (8 * m)));
  }
  const unsigned rounds = 1 + rng.below(4);
  const bool trap_last = index % 4 == 3;
  static constexpr std::array<std::uint32_t, 4> kForced = {384, 383, 321, 65};
  const std::uint32_t forced_n = index % 64 < 16 && index % 4 == 0 ? kForced[index % 64 / 4] : 0;
  cov.drawn.set(index, trap_last, 0);
  std::vector<Span> written;
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && k > 0 && rng.chance(5)) {  // VEW ADD in place: the next VQ may read its sums
      const std::uint32_t n = 1 + rng.below(kWords), a = test::draw_vr_start(rng, n, written);
      ++cov.vews;
      written.push_back({a, n});
      known.written(a, n);
      test::emit_vew_add_in_place(code, rs1, rs2, a, n);
      continue;
    }
    unsigned alone = 5;
    const unsigned target = rng.below(3);
    Vq v = trap ? trapping_vq(rng, written, target, index / 4, alone) : valid_vq(rng, written);
    if (k == 0 && forced_n != 0) {
      v = Vq{};
      v.n = forced_n;
      v.c = rng.below(65536);
      v.src = rng.below(kWords - forced_n + 1);
      v.a = rng.below(6 - blocks(forced_n) + 1);
    }
    if (trap) {
      ++cov.trap_target[target];
      if (alone < 5) ++cov.trap_alone[alone];
      cov.drawn.set(index, true, vq_code(v));
    } else {
      count(cov, v, written, known);
    }
    const unsigned r1 = rs1;
    const unsigned r2 = v.zero2 ? 0 : v.same ? r1 : rs2;
    progen::emit_li(code, r1, v.x1());
    if (!v.same && r2 != 0) progen::emit_li(code, r2, v.x2());
    code.push_back(test::vector_word(v.f7(), r2, r1, 2, v.rd));
  }
  return test::vector_guest(rng, std::move(code), scratch, "vq" + std::to_string(index), std::move(vr));
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  Coverage cov;
  const test::TrapRun run = test::run_trap_programs(
      kPrograms, kBatch, kSeed, mode, kPrograms > 1000,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); }, cov.drawn, {16, 17, 18, 19, 22});
  if (::testing::Test::HasFailure()) return;
  for (unsigned g = 1; g <= 6; ++g) EXPECT_GT(cov.by_groups[g], 0u) << "no VQ ACT of " << g << " groups, seed " << kSeed;
  for (const unsigned e : {0u, 1u, 2u, 8u, 16u, 24u, 25u}) EXPECT_GT(cov.by_e[e], 0u) << "no group with e = " << e << ", seed " << kSeed;
  test::expect_generated({{"valid ACT", cov.by_target[kAct]},
                          {"valid K row", cov.by_target[kK]},
                          {"valid V row", cov.by_target[kV]},
                          {"ACT padded", cov.padded},
                          {"ACT into block 5", cov.last_block},
                          {"n = 384", cov.n_384},
                          {"n = 1", cov.n_1},
                          {"source span ends at 1023", cov.ends_1023},
                          {"rs1 = rs2", cov.same_reg},
                          {"row 0", cov.row_0},
                          {"row 319", cov.row_319},
                          {"reads an earlier VEW's destination", cov.reads_vew},
                          {"amax at a threshold of E", cov.at_threshold},
                          {"amax from a negative word", cov.neg_amax},
                          {"a tie of rnd", cov.ties},
                          {"trapping ACT", cov.trap_target[kAct]},
                          {"trapping K", cov.trap_target[kK]},
                          {"trapping V", cov.trap_target[kV]},
                          {"trap 16 alone", cov.trap_alone[0]},
                          {"trap 17 alone", cov.trap_alone[1]},
                          {"trap 18 alone", cov.trap_alone[2]},
                          {"trap 19 alone", cov.trap_alone[3]},
                          {"trap 22 alone", cov.trap_alone[4]}},
                         kSeed);
  std::string es;
  for (unsigned e = 0; e < 26; ++e) es += (e == 0 ? "" : " ") + std::to_string(cov.by_e[e]);
  std::cout << "[ chip     ] " << kPrograms << " random VQ programs (" << run.traps << " end in a trap, codes " << run.codes
            << "; " << cov.vqs << " valid VQs (ACT " << cov.by_target[kAct] << ", K " << cov.by_target[kK] << ", V "
            << cov.by_target[kV] << "), " << cov.padded << " ACT padded; " << cov.known_groups
            << " groups on initial words: e_k 0..25 " << es << "; amax at a threshold " << cov.at_threshold
            << ", from a negative word " << cov.neg_amax << ", rnd ties " << cov.ties << "; " << cov.vews << " VEW ADDs), "
            << to_string(mode) << ": " << run.steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVqRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVqRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
