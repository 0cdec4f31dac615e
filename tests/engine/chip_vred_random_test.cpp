// Random VRED SUM, SUMSQ and MAX programs (vector.md sections 4.7, 5 and 6), with VEW ADD rounds that
// change VR between them, through the built RV32 chip and the reference in lock-step,
// teacher-forced and free-running, every step compared: 0 mismatches. The reference is the oracle
// (through the engine); this test only sums the source words it placed, to check that every path
// of section 4.7 was generated.
//
//   VRED SUM    VR[dst] <- sat32(rnd(sum_{i<n} VR[src + i], SH))         f7 = SH << 2 | 1
//   VRED SUMSQ  VR[dst] <- sat32(rnd(sum_{i<n} VR[src + i]^2, 16 + SH))  f7 = SH << 2
//   VRED MAX    VR[dst] <- max_{i<n} VR[src + i]                         f7 = 2
//   X(rs1) = dst | src << 16, X(rs2) = C | n << 16 (C unused: random), rd = x0
//
// Each program's initial VR comes from a `.lockstep.vreg` section (section 2.1) drawn from one of
// six profiles, so that sums saturate both ways and round on ties: any words; words near
// INT32_MAX; words near INT32_MIN; small words (-64..64: with SH = 1..7 the low bits of the sum
// are often exactly 2^(SH-1), a tie of rnd); a mix of the classes (0, -1, +-2^k, INT32_MIN,
// INT32_MAX, small, any); 0, +-128 and +-2^8..2^15 (SUMSQ's ties of rnd(., 16)); words whose
// high halves are -1, 0 or 1 (MAX decided by the low half, and ties of the maximum). The program sets x1..x30 to random edge values and points x31 at a
// 256-byte scratch area, then runs 1..4 rounds of: a random scalar body of 2..12 instructions,
// `li` of the two operand registers, then a VRED SUM, SUMSQ or MAX (about equally often) or, one
// later round in five, a VEW ADD in
// place (chains: a VRED whose source holds an earlier VRED's or VEW's destination). Operands reach
// every case: n from 1 to 1024 (1, 63, 64, 65, multiples of 64 and one past them: the last
// group full, or of one word; programs 0, 4, 8, 12 mod 64 begin with n = 1024, 1023, 960, 961),
// spans anywhere and ending at word 1023, dst anywhere (inside the source span too: one word
// written after all reads), SH 0..31 (0, 1, 16, 17 (the last shift that can overflow and the
// first that cannot), 31 weighted), rs1 = rs2 (then src = n and dst = C). Programs 4j + 3 (one in
// four) end with a VRED that traps (16: MODE = 3, MAX with SH != 0, or rd != x0; 17: the source
// span past word 1023 or dst >= 1024; 18: n = 0 or n > 1024), one condition alone for even j, else
// any combination, of any MODE; the code raised must be the lowest of the conditions built.
// The default suite runs a share (kPrograms); the `long` label runs 10,000 (ctest -L long -R
// chip_vred_random), printing its progress every 128 programs. The seed of each batch is printed
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

#ifdef LOCKSTEP_CHIP_VRED_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 256;
#endif
constexpr unsigned kBatch = 64;
constexpr std::uint64_t kSeed = 0x5eed'07ed'0013ull;

constexpr std::uint32_t kWords = 1024;  // VR (vector.md section 2)
constexpr unsigned kSumsq = 0, kSum = 1, kMax = 2;

struct Coverage {
  unsigned vreds = 0, vews = 0;  // valid VRED SUMs and SUMSQs, VEW ADDs
  std::array<unsigned, 3> by_mode{};  // valid VREDs: SUMSQ, SUM, MAX
  std::array<unsigned, 32> by_sh{};
  unsigned groups_many = 0;      // n > 64
  unsigned n_full = 0;           // n a multiple of 64 (the last group full)
  unsigned n_one_past = 0;       // n = 64 k + 1, k >= 1 (the last group has one word)
  unsigned n_1024 = 0, n_1 = 0;
  unsigned dst_in_src = 0;       // dst inside the source span
  unsigned ends_1023 = 0;        // the source span ends at word 1023
  unsigned same_reg = 0;         // rs1 = rs2
  unsigned reads_vred = 0;       // the source span holds an earlier VRED's destination
  unsigned reads_vew = 0;        // ... an earlier VEW's
  // sums of spans whose words were all still initial: saturated up / down (the result before
  // sat32), a tie of rnd (SH >= 1, acc = 2^(SH-1) mod 2^SH), a negative and a positive result
  unsigned known = 0, sat_up = 0, sat_down = 0, ties = 0, negative = 0, positive = 0;
  // SUMSQ on initial words: saturated (up), a tie of rnd(., 16 + SH), a result of 0 (all words 0
  // or rounded away), the sum of squares at least 2^62 (a word of -2^31 or many large ones)
  unsigned sq_known = 0, sq_sat = 0, sq_ties = 0, sq_zero = 0, sq_large = 0;
  // MAX on initial words: the maximum held by two or more words, negative, INT32_MIN (every
  // word), decided by the low half (the largest two distinct words share their high half)
  unsigned mx_known = 0, mx_ties = 0, mx_neg = 0, mx_min = 0, mx_lo = 0;
  std::array<unsigned, 3> trap_mode{};   // trapping VREDs by the MODE drawn
  std::array<unsigned, 3> trap_alone{};  // ... with one condition alone: 16, 17, 18
  test::DrawnTraps drawn;
};

std::uint32_t draw_n(progen::Random& rng) {
  const std::uint32_t c = rng.below(16);
  if (c == 0) return 1 + rng.below(3);
  if (c == 1) return 63 + rng.below(3);                      // 63, 64, 65
  if (c == 2) return 64 * (1 + rng.below(16));               // the last group full
  if (c == 3) return 64 * (1 + rng.below(15)) + 1;           // ... of one word
  if (c < 8) return 1 + rng.below(64);
  if (c < 13) return 1 + rng.below(256);
  return 1 + rng.below(kWords);
}

unsigned draw_sh(progen::Random& rng) {
  switch (rng.below(8)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 16 + rng.below(2);
    case 3: return 31;
    case 4: return 1 + rng.below(7);
    default: return rng.below(32);
  }
}

struct Span {
  std::uint32_t start = 0, n = 0;
  bool vred = false;
};

struct Vred {
  std::uint32_t dst = 0, src = 0, n = 0, c = 0;  // A, B, N, C
  unsigned mode = kSum, sh = 0, rd = 0;
  bool same = false, zero2 = false;  // rs1 = rs2; rs2 = x0
  unsigned f7() const { return (sh << 2) | mode; }
  std::uint32_t x1() const { return dst | (src << 16); }
  std::uint32_t x2() const { return c | (n << 16); }
};

Vred valid_vred(progen::Random& rng, const std::vector<Span>& written) {
  Vred v;
  v.mode = rng.below(3);
  v.sh = v.mode == kMax ? 0 : draw_sh(rng);
  if (rng.chance(16)) {  // rs1 = rs2: src = n, dst = C; src + n <= 1024
    v.same = true;
    v.n = 1 + rng.below(kWords / 2);
    v.src = v.n;
    v.dst = v.c = rng.below(kWords);
    return v;
  }
  v.n = draw_n(rng);
  v.c = rng.below(65536);
  v.src = test::draw_vr_start(rng, v.n, written);
  switch (rng.below(4)) {
    case 0: v.dst = v.src + rng.below(v.n); break;  // inside the source span
    case 1: v.dst = kWords - 1; break;
    default: v.dst = rng.below(kWords); break;
  }
  return v;
}

// The lowest code of section 6 that a VRED with these fields raises, 0 if none.
unsigned vred_code(const Vred& v) {
  if (v.mode == 3 || (v.mode == kMax && v.sh != 0) || v.rd != 0) return 16;
  if (v.src + v.n > kWords || v.dst >= kWords) return 17;
  if (v.n == 0 || v.n > kWords) return 18;
  return 0;
}

// A VRED that traps: conditions 16, 17, 18 (bits 0, 1, 2 of the mask) built into a valid VRED of
// MODE `mode`; one alone when j is even (condition j / 2 mod 3), else any combination.
Vred trapping_vred(progen::Random& rng, const std::vector<Span>& written, unsigned mode, unsigned j, unsigned& alone) {
  Vred v = valid_vred(rng, written);
  v.same = false;
  v.mode = mode;
  if (mode == kMax) v.sh = 0;
  const unsigned mask = j % 2 == 0 ? 1u << (j / 2 % 3) : 1 + rng.below(7);
  alone = mask == 1 ? 0 : mask == 2 ? 1 : mask == 4 ? 2 : 3;
  if (mask & 2) {  // 17
    switch (rng.below(3)) {
      case 0: v.src = kWords + 1 - v.n + rng.below(v.n + 64); break;
      case 1: v.src = kWords + 1 - v.n + rng.below(65536 - (kWords + 1 - v.n)); break;
      default: v.dst = kWords + rng.below(65536 - kWords); break;
    }
  }
  if (mask & 4) {  // 18
    if (rng.chance(2)) {
      v.n = 0;
      if (rng.chance(3)) {
        v.zero2 = true;
        v.c = 0;
      }
    } else {
      v.n = kWords + 1 + rng.below(65536 - kWords - 1);  // also 17
    }
  }
  if (mask & 1) {  // 16
    switch (rng.below(3)) {
      case 0: v.mode = 3; break;
      case 1: v.mode = kMax; v.sh = 1 + rng.below(31); break;
      default: v.rd = 1 + rng.below(31); break;
    }
  }
  return v;
}

std::int64_t rnd(std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; }

void count(Coverage& cov, const Vred& v, const std::vector<Span>& written, const test::InitialVr& known) {
  ++cov.vreds;
  ++cov.by_mode[v.mode];
  ++cov.by_sh[v.sh];
  cov.groups_many += v.n > 64;
  cov.n_full += v.n % 64 == 0;
  cov.n_one_past += v.n > 64 && v.n % 64 == 1;
  cov.n_1024 += v.n == kWords;
  cov.n_1 += v.n == 1;
  cov.dst_in_src += v.dst >= v.src && v.dst < v.src + v.n;
  cov.ends_1023 += v.src + v.n == kWords;
  cov.same_reg += v.same;
  bool vred = false, vew = false;
  for (const Span& w : written) {
    const bool s = test::spans_share(v.src, v.n, w.start, w.n);
    vred |= s && w.vred;
    vew |= s && !w.vred;
  }
  cov.reads_vred += vred;
  cov.reads_vew += vew;
  for (std::uint32_t i = 0; i < v.n; ++i)
    if (!known.initial[v.src + i]) return;
  if (v.mode == kMax) {
    std::int64_t mx = INT64_MIN, second = INT64_MIN;
    unsigned at_max = 0;
    for (std::uint32_t i = 0; i < v.n; ++i) {
      const std::int64_t x = known.value[v.src + i];
      if (x > mx) {
        second = mx;
        mx = x;
        at_max = 1;
      } else if (x == mx) {
        ++at_max;
      } else if (x > second) {
        second = x;
      }
    }
    ++cov.mx_known;
    cov.mx_ties += at_max >= 2;
    cov.mx_neg += mx < 0;
    cov.mx_min += mx == -0x80000000ll;
    cov.mx_lo += second != INT64_MIN && (mx >> 16) == (second >> 16);
    return;
  }
  if (v.mode == kSumsq) {
    unsigned __int128 sq = 0;
    for (std::uint32_t i = 0; i < v.n; ++i) {
      const std::int64_t x = known.value[v.src + i];
      sq += static_cast<unsigned __int128>(x * x);
    }
    const unsigned s = 16 + v.sh;
    const unsigned __int128 r = (sq + (static_cast<unsigned __int128>(1) << (s - 1))) >> s;
    ++cov.sq_known;
    cov.sq_sat += r > 0x7FFFFFFFu;
    cov.sq_zero += r == 0;
    cov.sq_large += sq >= (static_cast<unsigned __int128>(1) << 62);
    cov.sq_ties += (sq & ((static_cast<unsigned __int128>(1) << s) - 1)) == (static_cast<unsigned __int128>(1) << (s - 1));
    return;
  }
  std::int64_t acc = 0;
  for (std::uint32_t i = 0; i < v.n; ++i) acc += known.value[v.src + i];
  ++cov.known;
  const std::int64_t r = rnd(acc, v.sh);
  cov.sat_up += r > 0x7FFFFFFFll;
  cov.sat_down += r < -0x80000000ll;
  cov.negative += r < 0;
  cov.positive += r > 0;
  if (v.sh >= 1) {
    const std::int64_t m = std::int64_t{1} << v.sh;
    cov.ties += ((acc % m) + m) % m == m / 2;
  }
}

std::uint32_t vr_word(progen::Random& rng, unsigned profile) {
  switch (profile) {
    case 1: return 0x7FFFFFFFu - rng.below(1u << 24);             // near INT32_MAX
    case 2: return 0x80000000u + rng.below(1u << 24);             // near INT32_MIN
    case 3: return static_cast<std::uint32_t>(static_cast<std::int32_t>(rng.below(129)) - 64);
    case 4:
      switch (rng.below(8)) {
        case 0: return 0;
        case 1: return 0xFFFFFFFFu;
        case 2: return 0x80000000u;
        case 3: return 0x7FFFFFFFu;
        case 4: return rng.chance(2) ? 1u << rng.below(31) : 0u - (1u << rng.below(31));
        case 5: return static_cast<std::uint32_t>(static_cast<std::int32_t>(rng.below(129)) - 64);
        default: return static_cast<std::uint32_t>(rng.next());
      }
    case 5:  // 0, +-128 (square 2^14) and +-2^8..2^15 (squares multiples of 2^16): a sum of squares is
             // a tie of rnd(., 16) when the count of +-128 is 2 mod 4
      if (rng.chance(2)) return 0;
      if (rng.chance(2)) return rng.chance(2) ? 128u : 0u - 128u;
      return (rng.chance(2) ? 1u : 0xFFFFFFFFu) * (1u << (8 + rng.below(8)));
    case 6:  // high half -1, 0 or 1, the low half from a few values or any
      return ((rng.below(3) - 1) << 16) | (rng.chance(2) ? rng.below(4) * 0x5555u : rng.below(65536));
    case 7: return rng.chance(8) ? 0x80000000u - rng.below(2) * 0x80000000u : 0x80000000u;  // INT32_MIN (and a few 0)
    default: return static_cast<std::uint32_t>(rng.next());
  }
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  test::InitialVr known;
  std::vector<std::uint8_t> vr;
  const unsigned profile = rng.below(8);
  for (std::uint32_t w = 0; w < kWords; ++w) {
    const std::uint32_t x = vr_word(rng, profile);
    known.value[w] = static_cast<std::int32_t>(x);
    for (unsigned m = 0; m < 4; ++m) vr.push_back(static_cast<std::uint8_t>(x >> (8 * m)));
  }
  const unsigned rounds = 1 + rng.below(4);
  const bool trap_last = index % 4 == 3;
  static constexpr std::array<std::uint32_t, 4> kForced = {1024, 1023, 960, 961};
  const std::uint32_t forced_n = index % 64 < 16 && index % 4 == 0 ? kForced[index % 64 / 4] : 0;
  cov.drawn.set(index, trap_last, 0);
  std::vector<Span> written;
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && k > 0 && rng.chance(5)) {  // VEW ADD in place on a span that may hold VRED results
      const std::uint32_t n = draw_n(rng), a = test::draw_vr_start(rng, n, written);
      ++cov.vews;
      written.push_back({a, n, false});
      known.written(a, n);
      test::emit_vew_add_in_place(code, rs1, rs2, a, n);
      continue;
    }
    unsigned alone = 3;
    const unsigned mode = rng.below(3);
    Vred v = trap ? trapping_vred(rng, written, mode, index / 4, alone) : valid_vred(rng, written);
    if (k == 0 && forced_n != 0) {
      v = Vred{};
      v.mode = index % 192 / 64;  // SUMSQ, SUM, MAX
      v.n = forced_n;
      v.sh = v.mode == kMax ? 0 : draw_sh(rng);
      v.c = rng.below(65536);
      v.src = rng.below(kWords - forced_n + 1);
      v.dst = rng.below(kWords);
    }
    if (trap) {
      ++cov.trap_mode[mode];
      if (alone < 3) ++cov.trap_alone[alone];
      cov.drawn.set(index, true, vred_code(v));
    } else {
      count(cov, v, written, known);
      written.push_back({v.dst, 1, true});
      known.written(v.dst, 1);
    }
    const unsigned r1 = rs1;
    const unsigned r2 = v.zero2 ? 0 : v.same ? r1 : rs2;
    progen::emit_li(code, r1, v.x1());
    if (!v.same && r2 != 0) progen::emit_li(code, r2, v.x2());
    code.push_back(test::vector_word(v.f7(), r2, r1, 6, v.rd));
  }
  return test::vector_guest(rng, std::move(code), scratch, "vred" + std::to_string(index), std::move(vr));
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  Coverage cov;
  const test::TrapRun run = test::run_trap_programs(
      kPrograms, kBatch, kSeed, mode, kPrograms > 1000,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); }, cov.drawn, {16, 17, 18});
  if (::testing::Test::HasFailure()) return;
  for (const unsigned sh : {0u, 1u, 16u, 17u, 31u}) EXPECT_GT(cov.by_sh[sh], 0u) << "no VRED with SH = " << sh << ", seed " << kSeed;
  test::expect_generated(
      {{"n > 64", cov.groups_many},
      {"n a multiple of 64", cov.n_full},
      {"n = 64 k + 1", cov.n_one_past},
      {"n = 1024", cov.n_1024},
      {"n = 1", cov.n_1},
      {"dst inside the source span", cov.dst_in_src},
      {"source span ends at 1023", cov.ends_1023},
      {"rs1 = rs2", cov.same_reg},
      {"reads an earlier VRED's destination", cov.reads_vred},
      {"reads an earlier VEW's destination", cov.reads_vew},
      {"valid SUM", cov.by_mode[kSum]},
      {"valid SUMSQ", cov.by_mode[kSumsq]},
      {"valid MAX", cov.by_mode[kMax]},
      {"MAX held by two or more words", cov.mx_ties},
      {"MAX negative", cov.mx_neg},
      {"MAX of INT32_MIN words", cov.mx_min},
      {"MAX decided by the low half", cov.mx_lo},
      {"SUMSQ saturates", cov.sq_sat},
      {"SUMSQ a tie of rnd", cov.sq_ties},
      {"SUMSQ result 0", cov.sq_zero},
      {"SUMSQ sum of squares >= 2^62", cov.sq_large},
      {"saturates up", cov.sat_up},
      {"saturates down", cov.sat_down},
      {"a tie of rnd", cov.ties},
      {"negative result", cov.negative},
      {"positive result", cov.positive},
      {"trapping SUMSQ", cov.trap_mode[kSumsq]},
      {"trapping SUM", cov.trap_mode[kSum]},
      {"trapping MAX", cov.trap_mode[kMax]},
      {"trap 16 alone", cov.trap_alone[0]},
      {"trap 17 alone", cov.trap_alone[1]},
      {"trap 18 alone", cov.trap_alone[2]}},
      kSeed);
  std::cout << "[ chip     ] " << kPrograms << " random VRED programs (" << run.traps << " end in a trap, codes " << run.codes
            << "; " << cov.vreds << " valid VREDs (SUM " << cov.by_mode[kSum] << ", SUMSQ " << cov.by_mode[kSumsq]
            << ", MAX " << cov.by_mode[kMax] << "): " << cov.groups_many << " over more than one group, " << cov.n_1024
            << " of n = 1024, " << cov.dst_in_src << " with dst inside the source, " << cov.reads_vred
            << " read an earlier VRED's result; of " << cov.known << " on initial words: saturated up " << cov.sat_up
            << ", down " << cov.sat_down << ", rnd ties " << cov.ties << "; SUMSQ of " << cov.sq_known
            << " on initial words: saturated " << cov.sq_sat << ", rnd ties " << cov.sq_ties << ", 0 " << cov.sq_zero
            << "; MAX of " << cov.mx_known << " on initial words: ties " << cov.mx_ties << ", negative " << cov.mx_neg
            << ", INT32_MIN " << cov.mx_min << ", decided by the low half " << cov.mx_lo
            << "; " << cov.vews << " VEW ADDs), "
            << to_string(mode) << ": " << run.steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVredRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVredRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
