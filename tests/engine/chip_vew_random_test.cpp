// Random VEW ADD programs (vector.md section 4.5, `VR[dst + i] <- sat32(VR[a + i] + VR[b + i])`)
// through the built RV32 chip and the reference in lock-step, teacher-forced and free-running,
// every step compared: 0 mismatches. The reference is the oracle (through the engine); this test
// does not model the op.
//
// Each program's initial VR comes from a `.lockstep.vreg` section (section 2.1) of random words
// biased to the edges of sat32 (INT32_MAX, INT32_MIN, near +-2^30 and +-2^31, 0, -1, small), so that
// sums saturate often both ways; one program in eight has no section (VR all zero) or a shorter one.
// The program sets x1..x30 to random edge values and points x31 at a 256-byte scratch area, then
// runs 1..6 rounds of: a random scalar body of 2..12 instructions (fuzz/progen), `li` of the VEW's
// two operand registers, the VEW ADD word. Operands reach every path of the op: n from 1 to 1024
// (every residue mod 4, the group boundaries 1..5, 63..65, 255..257, 1021..1024), spans anywhere
// and ending at word 1023, sources that read earlier VEWs' destinations, in place (dst = a, dst = b,
// a = b, all three equal), rs1 = rs2 (one value in both roles), rs1 = x0. One program in four ends
// with a VEW ADD that traps (16, 17, 18 or 20, and combinations, where the lowest code must win);
// the others exit. A program ends in a trap exactly when it was drawn to, and every one of the four
// codes must be raised. The default suite runs a share (kPrograms); the `long` label runs 10,000
// (ctest -L long -R chip_vew_random). The seed of each batch is printed on failure.
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

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VEW_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 64;
#endif
constexpr unsigned kBatch = 32;
constexpr std::uint64_t kSeed = 0x5eed'0e3a'0008ull;

constexpr std::uint32_t kWords = 1024;  // VR (vector.md section 2)

// VEW rd, rs1, rs2 with funct7 f7 (vector.md section 4.0: f3 = 4 of custom-1; f7 bits 1..0 MODE,
// 0 = ADD).
std::uint32_t vew_word(unsigned f7, unsigned rs2, unsigned rs1, unsigned rd) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (4u << 12) | (rd << 7) | 0x2Bu;
}

// Spans [x, x + n) and [y, y + n) share a word and are not identical (section 6, code 20).
bool conflict(std::uint32_t x, std::uint32_t y, std::uint32_t n) {
  const std::uint32_t d = x > y ? x - y : y - x;
  return d >= 1 && d < n;
}

// What the generator produced, so that the test can check that every class was reached.
struct Coverage {
  std::array<unsigned, 4> n_mod4{};  // valid VEWs by n mod 4
  unsigned n_short = 0;              // n in 1..5
  unsigned n_64 = 0;                 // n in 63..65
  unsigned n_256 = 0;                // n in 255..257
  unsigned n_last = 0;               // n in 1021..1024
  unsigned dst_a = 0, dst_b = 0, a_b = 0, all_three = 0;  // in place
  unsigned same_reg = 0, x0_reg = 0;  // rs1 = rs2; rs1 = x0
  unsigned ends_1023 = 0;            // some span ends at word 1023
  unsigned reads_earlier = 0;        // a or b span shares a word with an earlier VEW's destination
  unsigned vews = 0;                 // valid VEWs
  unsigned short_sections = 0, no_sections = 0;
  std::vector<bool> traps;            // by program index: its last VEW was drawn to trap
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
};

// A start for a span of n words (0..1024 - n): often one that shares words with an earlier
// destination (so the VEW reads an earlier VEW's results), sometimes the end of VR or word 0.
std::uint32_t draw_start(progen::Random& rng, std::uint32_t n, const std::vector<Span>& written) {
  const std::int64_t hi = kWords - n;
  if (!written.empty() && rng.below(8) < 5) {
    const Span& w = written[rng.below(static_cast<std::uint32_t>(written.size()))];
    const std::int64_t lo = static_cast<std::int64_t>(w.start) - n + 1, top = w.start + w.n - 1;
    const std::int64_t s = rng.chance(3) ? w.start : lo + rng.below(static_cast<std::uint32_t>(top - lo + 1));
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(s, 0, hi));
  }
  if (rng.chance(5)) return static_cast<std::uint32_t>(hi);  // ends at word 1023
  if (rng.chance(8)) return 0;
  return rng.below(static_cast<std::uint32_t>(hi) + 1);
}

struct Vew {
  std::uint32_t dst = 0, a = 0, b = 0, n = 0;  // A, B, C, N
  unsigned f7 = 0, rd = 0;
  bool same = false;                 // rs1 = rs2 (then dst = b and a = n)
  bool zero1 = false, zero2 = false;  // rs1 = x0 (dst = a = 0); rs2 = x0 (b = n = 0)
  std::uint32_t x1() const { return dst | (a << 16); }
  std::uint32_t x2() const { return b | (n << 16); }
};

// A VEW ADD that does not trap: n in 1..1024, every span inside VR, the destination span identical
// to or disjoint from each source span.
Vew valid_vew(progen::Random& rng, const std::vector<Span>& written) {
  Vew v;
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

// A VEW ADD that traps, with one or more of the conditions of section 6 (16: a nonzero GS or
// reserved f7 bit with MODE = 0, or rd != x0; 17: a span outside VR; 18: n = 0 or n > 1024;
// 20: the destination span overlaps a source span partially). Each chosen condition holds by
// construction; which code is raised (the lowest) is the reference's to say.
Vew trapping_vew(progen::Random& rng, const std::vector<Span>& written) {
  Vew v = valid_vew(rng, written);
  v.same = v.zero1 = false;
  // which conditions to break: one alone half the time (so that each code is raised alone), else any
  // combination
  const unsigned mask = rng.chance(2) ? 1u << rng.below(4) : 1 + rng.below(15);
  if (mask & 8) {  // 20: n in 2..256 and a start at distance 1..n-1 from a (or b)
    v.n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
    const std::uint32_t hi = kWords - v.n;
    v.a = std::min(v.a, hi);
    v.b = rng.chance(4) ? v.a : std::min(v.b, hi);
    const std::uint32_t base = rng.chance(2) ? v.a : v.b, d = 1 + rng.below(v.n - 1);
    v.dst = base + d <= hi ? base + d : base - d;  // base >= d here: n <= 256 leaves >= 768 starts
  }
  if (mask & 2) {  // 17
    switch (rng.below(4)) {
      case 0: v.n = kWords + 1 + rng.below(65536 - kWords - 1); break;  // also 18
      case 1: v.dst = outside(rng, v.n); break;
      case 2: v.a = outside(rng, v.n); break;
      default: v.b = outside(rng, v.n); break;
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
    if (k != 1) v.f7 = 4 * (1 + rng.below(31));  // MODE = 0 (ADD), some of GS and bits 6..5
    if (k != 0) v.rd = 1 + rng.below(31);
  }
  return v;
}

void count(Coverage& cov, const Vew& v, const std::vector<Span>& written) {
  ++cov.vews;
  ++cov.n_mod4[v.n % 4];
  cov.n_short += v.n <= 5;
  cov.n_64 += v.n >= 63 && v.n <= 65;
  cov.n_256 += v.n >= 255 && v.n <= 257;
  cov.n_last += v.n >= 1021;
  cov.dst_a += v.dst == v.a;
  cov.dst_b += v.dst == v.b;
  cov.a_b += v.a == v.b;
  cov.all_three += v.dst == v.a && v.a == v.b;
  cov.same_reg += v.same;
  cov.x0_reg += v.zero1;
  cov.ends_1023 += std::max({v.dst, v.a, v.b}) + v.n == kWords;
  bool earlier = false;
  for (const Span& w : written)
    for (const std::uint32_t s : {v.a, v.b}) earlier |= s < w.start + w.n && w.start < s + v.n;
  cov.reads_earlier += earlier;
}

// An initial VR word: an edge of sat32 (so that a sum of two saturates, either way) or random.
std::uint32_t vr_word(progen::Random& rng) {
  switch (rng.below(12)) {
    case 0: return 0x7FFFFFFFu;
    case 1: return 0x80000000u;
    case 2: return 0x7FFFFFFFu - rng.below(16);
    case 3: return 0x80000000u + rng.below(16);
    case 4: return 0x40000000u + rng.below(64) - 32;  // near 2^30
    case 5: return 0xC0000000u + rng.below(64) - 32;  // near -2^30
    case 6: return rng.below(33) - 16;                // small, 0 and -1 included
    case 7: return 0x40000000u + rng.below(0x40000000u);  // 2^30..2^31-1: two of them saturate
    case 8: return 0x80000000u + rng.below(0x40000000u);  // -2^31..-2^30-1
    case 9: return rng.operand();
    default: return static_cast<std::uint32_t>(rng.next());
  }
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  (void)scratch;
  const unsigned rounds = 1 + rng.below(6);
  const bool trap_last = rng.chance(4);
  if (cov.traps.size() <= index) cov.traps.resize(index + 1);
  cov.traps[index] = trap_last;
  std::vector<Span> written;
  for (unsigned k = 0; k < rounds; ++k) {
    progen::BodyOptions opt;
    opt.length = 2 + rng.below(11);
    opt.base_reg = 31;
    opt.scratch_bytes = 256;
    const std::vector<std::uint32_t> body = progen::random_body(rng, opt);
    code.insert(code.end(), body.begin(), body.end());
    const bool trap = trap_last && k + 1 == rounds;
    const Vew v = trap ? trapping_vew(rng, written) : valid_vew(rng, written);
    if (!trap) {
      count(cov, v, written);
      written.push_back({v.dst, v.n});
    }
    const unsigned rs1 = v.zero1 ? 0 : 1 + rng.below(30);
    unsigned rs2 = v.zero2 ? 0 : v.same ? rs1 : 1 + rng.below(30);
    while (!v.same && !v.zero2 && rs2 == rs1) rs2 = 1 + rng.below(30);
    if (rs1 != 0) progen::emit_li(code, rs1, v.x1());
    if (!v.same && rs2 != 0) progen::emit_li(code, rs2, v.x2());
    code.push_back(vew_word(v.f7, rs2, rs1, v.rd));
  }
  progen::emit_li(code, 17, 93);  // exit(a0)
  code.push_back(0x00000073u);
  const format::Segment scr = test::random_data_segment(rng, scratch, 256);
  Guest g;
  g.name = "vew" + std::to_string(index);
  g.image = progen::image_from_code(code, 0x10000, {scr});
  // VR's initial words (section 2.1); one program in eight: no section, or a shorter one
  std::uint32_t bytes = 4 * kWords;
  if (rng.chance(8)) {
    bytes = rng.chance(2) ? 0 : 1 + rng.below(4 * kWords - 1);
    ++(bytes == 0 ? cov.no_sections : cov.short_sections);
  }
  if (bytes != 0) {
    std::vector<std::uint8_t> vr;
    for (std::uint32_t w = 0; w < kWords && vr.size() < bytes; ++w) {
      const std::uint32_t x = vr_word(rng);
      for (unsigned m = 0; m < 4; ++m) vr.push_back(static_cast<std::uint8_t>(x >> (8 * m)));
    }
    vr.resize(bytes);
    g.image.sections[".lockstep.vreg"] = std::move(vr);
  }
  return g;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  unsigned traps = 0;
  std::map<unsigned, unsigned> codes;  // trap code -> programs
  Coverage cov;
  const std::uint64_t steps = test::run_seeded_chip_programs(
      kPrograms, kBatch, kSeed, mode,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); },
      [&](unsigned i, const StreamResult& st) {
        EXPECT_TRUE(st.end == "exit" || st.end == "trap") << "program " << i << " (run seed " << kSeed << "): ended " << st.end;
        traps += st.end == "trap";
        // the last VEW traps exactly where one of section 6's conditions was built in; which code
        // is raised is the reference's to say, and it is one of VEW ADD's
        if (st.end == "exit" || st.end == "trap") {
          EXPECT_EQ(st.end == "trap", i < cov.traps.size() && cov.traps[i])
              << "program " << i << " (run seed " << kSeed << "): ended " << st.end << " (code " << st.trap_code << ")";
        }
        if (st.end == "trap") {
          ++codes[st.trap_code];
          EXPECT_TRUE(st.trap_code == 16 || st.trap_code == 17 || st.trap_code == 18 || st.trap_code == 20)
              << "program " << i << " (run seed " << kSeed << "): TRAP(" << st.trap_code << ")";
        }
      });
  if (::testing::Test::HasFailure()) return;
  // about one program in four ends in a trap; both outcomes must be exercised
  EXPECT_GT(traps, 0u) << "seed " << kSeed;
  EXPECT_LT(traps, kPrograms) << "seed " << kSeed;
  for (const unsigned c : {16u, 17u, 18u, 20u}) EXPECT_GT(codes[c], 0u) << "no program raised " << c << ", seed " << kSeed;
  // every class of operands was generated (and so compared)
  for (unsigned r = 0; r < 4; ++r) EXPECT_GT(cov.n_mod4[r], 0u) << "n = " << r << " mod 4, seed " << kSeed;
  const std::pair<const char*, unsigned> classes[] = {
      {"n 1..5", cov.n_short},         {"n 63..65", cov.n_64},          {"n 255..257", cov.n_256},
      {"n 1021..1024", cov.n_last},    {"dst = a", cov.dst_a},          {"dst = b", cov.dst_b},
      {"a = b", cov.a_b},              {"dst = a = b", cov.all_three},  {"rs1 = rs2", cov.same_reg},
      {"rs1 = x0", cov.x0_reg},        {"a span ends at 1023", cov.ends_1023},
      {"reads an earlier destination", cov.reads_earlier},
      {"short .lockstep.vreg", cov.short_sections}, {"no .lockstep.vreg", cov.no_sections}};
  for (const auto& [name, c] : classes) EXPECT_GT(c, 0u) << "no valid VEW with " << name << ", seed " << kSeed;
  std::string seen;
  for (const auto& [c, k] : codes) seen += (seen.empty() ? "" : " ") + std::to_string(c) + ":" + std::to_string(k);
  std::cout << "[ chip     ] " << kPrograms << " random VEW ADD programs (" << traps << " end in a trap, codes " << seen
            << "; "
            << cov.vews << " valid VEWs: " << cov.reads_earlier << " read an earlier destination, " << cov.all_three
            << " all in place, " << cov.same_reg << " rs1 = rs2, " << cov.n_last << " n >= 1021), "
            << to_string(mode) << ": " << steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVewRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVewRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
