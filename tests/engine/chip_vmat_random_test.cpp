// Random VMAT programs (vector.md sections 4.1, 5 and 6), write and argmax mode, with VEW ADD rounds
// between them, through the built RV32 chip and the reference in lock-step, teacher-forced and
// free-running, every step compared: 0 mismatches. The reference is the oracle (through the
// engine); this test only computes y_r of the VMATs it built, to check that every path of section
// 4.1 was generated.
//
//   VMAT  f7 = K | ARGMAX << 3: rows r < R, chunks c0 + r K + j (j < K) times ACT blocks b0 + j:
//         VMH(r >> 8) where r > 0 and r & 0xFF = 0, VMC_j(r & 0xFF), then VY0..VY3 (VYN3 for a new
//         maximum in argmax mode), written to VR[dst + r] (write mode) or W(r*) (argmax)
//   X(rs1) = dst | b0 << 16, X(rs2) = c0 | R << 16; rd = x0 in write mode, any in argmax mode
//
// Each program's ACT, ASH, WMEM and WSCALE come from `.lockstep.act`, `.ash`, `.wmem` and
// `.wscale` sections (section 2.1) drawn from profiles: activations anywhere, at -128/127, small or
// zero; weights anywhere, at -8/7, or chunks copied from a pool of 4 (so rows tie); scales
// anywhere, 65,535, powers of two (ties of rnd) or small; shifts 0..25 (25 and 0 weighted). The
// program sets x1..x30 to random edge values and points x31 at a 256-byte scratch area, then runs
// 1..4 rounds of: a random scalar body, `li` of the two operand registers, then a VMAT (argmax two
// times in five) or, one later round in five, a VEW ADD in place, or, one round in four before the
// last, a VQ ACT that writes ACT blocks and their ASH for the VMATs after it. K is 1..6, b0 up to 6 - K, R
// mostly 1..8, sometimes up to 600 (rows past 256: VMH), in argmax mode one time in 16 up to
// 4152 / K; c0 + R K reaches 4,152 and dst + R reaches 1,024. Programs 4j + 3 (one in four) end with
// a VMAT that traps (16: K = 0 or 7, a reserved f7 bit, or rd != x0 in write mode; 17: dst + R >
// 1024 in write mode; 18: R = 0; 19: b0 + K > 6; 21: c0 + R K > 4152), one condition alone for even
// j, else any combination; the code raised must be the lowest of the conditions built.
// The default suite runs a share (kPrograms); the `long` label runs 10,000 (ctest -L long -R
// chip_vmat_random), printing its progress every 128 programs. The seed of each batch is printed
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

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VMAT_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 96;
#endif
constexpr unsigned kBatch = 32;
constexpr std::uint64_t kSeed = 0x5eed'07ed'0015ull;

constexpr std::uint32_t kWords = 1024;   // VR (vector.md section 2)
constexpr std::uint32_t kChunks = 4152;  // WMEM

// The vector memories VMAT reads, as the program's sections set them.
struct Memories {
  std::array<std::int8_t, 384> act{};
  std::array<std::uint8_t, 6> ash{};
  std::vector<std::array<std::int8_t, 64>> w = std::vector<std::array<std::int8_t, 64>>(kChunks);
  std::vector<std::uint16_t> wscale = std::vector<std::uint16_t>(kChunks);
};

struct Vmat {
  std::uint32_t dst = 0, b0 = 0, c0 = 0, rows = 0;
  unsigned k = 1, argmax = 0, f7_extra = 0, rd = 0;
  bool same = false;  // rs1 = rs2 (dst = c0, b0 = R)
  unsigned f7() const { return k | argmax << 3 | f7_extra; }
  std::uint32_t x1() const { return dst | (b0 << 16); }
  std::uint32_t x2() const { return c0 | (rows << 16); }
};

struct Coverage {
  unsigned vmats = 0, vews = 0, vqs = 0, reads_vq = 0, write = 0, argmax = 0, argmax_x0 = 0;
  std::array<unsigned, 7> by_k{};
  unsigned rows_1 = 0, vmh = 0, last_chunk = 0, last_block = 0, ends_1023 = 0, same_reg = 0;
  unsigned sat_up = 0, sat_down = 0, ties = 0, argmax_ties = 0, later_max = 0;
  std::uint64_t rows = 0;
  std::array<unsigned, 5> trap_alone{};  // one condition alone: 16, 17, 18, 19, 21
  test::DrawnTraps drawn;
};

std::int64_t rnd16(std::int64_t x) { return (x + (std::int64_t{1} << 15)) >> 16; }

// y_r before sat32's cut and whether rnd met a tie (section 4.1).
std::pair<std::int64_t, bool> row_value(const Memories& m, const Vmat& v, std::uint32_t r) {
  std::int64_t sum = 0;
  for (std::uint32_t j = 0; j < v.k; ++j) {
    const std::uint32_t c = v.c0 + r * v.k + j, b = v.b0 + j;
    std::int64_t acc = 0;
    for (std::uint32_t i = 0; i < 64; ++i) acc += std::int64_t{m.act[64 * b + i]} * m.w[c][i];
    sum += acc * m.wscale[c] * (std::int64_t{1} << m.ash[b]);
  }
  return {rnd16(sum), (sum & 0xFFFF) == 0x8000};
}

void count(Coverage& cov, const Memories& m, const Vmat& v) {
  ++cov.vmats;
  ++cov.by_k[v.k];
  (v.argmax ? cov.argmax : cov.write)++;
  cov.argmax_x0 += v.argmax && v.rd == 0;
  cov.rows += v.rows;
  cov.rows_1 += v.rows == 1;
  cov.vmh += v.rows > 256;
  cov.last_chunk += v.c0 + v.rows * v.k == kChunks;
  cov.last_block += v.b0 + v.k == 6;
  cov.ends_1023 += !v.argmax && v.dst + v.rows == kWords;
  cov.same_reg += v.same;
  std::int64_t best = 0;
  bool tie_seen = false;
  for (std::uint32_t r = 0; r < v.rows; ++r) {
    const auto [y, tie] = row_value(m, v, r);
    cov.sat_up += y > 0x7FFFFFFF;
    cov.sat_down += y < -0x80000000LL;
    cov.ties += tie;
    const std::int64_t ys = std::clamp<std::int64_t>(y, -0x80000000LL, 0x7FFFFFFF);
    if (!v.argmax) continue;
    if (r > 0 && ys == best) tie_seen = true;
    if (r > 0 && ys > best && tie_seen) ++cov.later_max;
    if (r == 0 || ys > best) best = ys;
  }
  cov.argmax_ties += tie_seen;
}

std::uint32_t draw_rows(progen::Random& rng, const Vmat& v) {
  const std::uint32_t cap_w = v.argmax ? kChunks : std::min<std::uint32_t>(kChunks, kWords * v.k);
  const std::uint32_t cap = cap_w / v.k;  // R K <= 4152 (and R <= 1024 in write mode)
  const unsigned c = rng.below(16);
  if (c == 0 && v.argmax) return 1 + rng.below(cap);
  if (c < 3) return std::min(cap, 200 + rng.below(400));
  if (c < 5) return 1;
  return std::min(cap, 1 + rng.below(8));
}

Vmat valid_vmat(progen::Random& rng) {
  Vmat v;
  v.argmax = rng.below(5) < 2;
  v.k = 1 + rng.below(6);
  v.b0 = rng.chance(4) ? 6 - v.k : rng.below(7 - v.k);
  v.rows = draw_rows(rng, v);
  const std::uint32_t ctop = kChunks - v.rows * v.k;
  v.c0 = rng.chance(5) ? ctop : rng.below(ctop + 1);
  if (v.argmax) {
    v.dst = rng.below(65536);  // ignored
    v.rd = rng.chance(4) ? 0 : 1 + rng.below(30);  // not x31, the scratch pointer
  } else {
    const std::uint32_t dtop = kWords - v.rows;
    v.dst = rng.chance(5) ? dtop : rng.below(dtop + 1);
  }
  return v;
}

// The lowest code of section 6 that a VMAT with these fields raises, 0 if none.
unsigned vmat_code(const Vmat& v) {
  if (v.k == 0 || v.k == 7 || v.f7_extra != 0 || (!v.argmax && v.rd != 0)) return 16;
  if (!v.argmax && v.dst + v.rows > kWords) return 17;
  if (v.rows == 0) return 18;
  if (v.b0 + v.k > 6) return 19;
  if (v.c0 + std::uint64_t{v.rows} * v.k > kChunks) return 21;
  return 0;
}

// A VMAT that traps: conditions 16, 17, 18, 19, 21 (bits 0..4 of the mask; 17 only in write mode)
// built into a valid VMAT; one alone when j is even (condition j / 2 mod 5), else any combination.
Vmat trapping_vmat(progen::Random& rng, unsigned j, unsigned& alone) {
  Vmat v = valid_vmat(rng);
  unsigned mask = j % 2 == 0 ? 1u << (j / 2 % 5) : 1 + rng.below(31);
  if ((mask & 2) && v.argmax) v.argmax = 0, v.rd = 0, v.rows = std::min<std::uint32_t>(v.rows, kWords);
  alone = 5;
  for (unsigned b = 0; b < 5; ++b)
    if (mask == 1u << b) alone = b;
  if (mask & 2) v.dst = kWords + 1 - v.rows + rng.below(rng.chance(2) ? 64 : 65536 - (kWords + 1 - v.rows));  // 17
  if (mask & 4) v.rows = 0;                                                                                        // 18
  if (mask & 8) v.b0 = 7 - v.k + rng.below(rng.chance(2) ? 4 : 65000);                                             // 19
  if (mask & 16) v.c0 = kChunks - v.rows * v.k + 1 + rng.below(rng.chance(2) ? 8 : 60000);                         // 21
  if (mask & 1) {                                                                                                  // 16
    switch (rng.below(3)) {
      case 0: v.k = rng.chance(2) ? 0 : 7; break;
      case 1: v.f7_extra = (1 + rng.below(7)) << 4; break;
      default:
        v.argmax = 0;
        v.rd = 1 + rng.below(31);
        break;
    }
  }
  return v;
}

Memories draw_memories(progen::Random& rng) {
  Memories m;
  const unsigned pa = rng.below(4), pw = rng.below(4), ps = rng.below(4);
  for (auto& a : m.act) {
    switch (pa) {
      case 0: a = static_cast<std::int8_t>(rng.next()); break;
      case 1: a = rng.chance(2) ? -128 : 127; break;
      case 2: a = static_cast<std::int8_t>(static_cast<int>(rng.below(9)) - 4); break;
      default: a = rng.chance(4) ? static_cast<std::int8_t>(rng.next()) : 0; break;
    }
  }
  for (auto& s : m.ash) s = static_cast<std::uint8_t>(rng.chance(4) ? 25 : rng.chance(4) ? 0 : rng.below(26));
  std::array<std::array<std::int8_t, 64>, 4> pool{};
  for (auto& c : pool)
    for (auto& x : c) x = static_cast<std::int8_t>(static_cast<int>(rng.below(16)) - 8);
  for (std::uint32_t c = 0; c < kChunks; ++c) {
    for (std::uint32_t i = 0; i < 64; ++i) {
      switch (pw) {
        case 0: m.w[c][i] = static_cast<std::int8_t>(static_cast<int>(rng.below(16)) - 8); break;
        case 1: m.w[c][i] = rng.chance(2) ? -8 : 7; break;
        case 2: m.w[c][i] = pool[c % 4][i]; break;
        default: m.w[c][i] = pool[rng.below(4)][i]; break;
      }
    }
    switch (ps) {
      case 0: m.wscale[c] = static_cast<std::uint16_t>(rng.next()); break;
      case 1: m.wscale[c] = 65535; break;
      case 2: m.wscale[c] = static_cast<std::uint16_t>(1u << rng.below(16)); break;
      default: m.wscale[c] = static_cast<std::uint16_t>(rng.below(4)); break;
    }
  }
  return m;
}

void add_sections(Guest& g, const Memories& m) {
  auto& act = g.image.sections[".lockstep.act"];
  for (const std::int8_t a : m.act) act.push_back(static_cast<std::uint8_t>(a));
  g.image.sections[".lockstep.ash"].assign(m.ash.begin(), m.ash.end());
  auto& w = g.image.sections[".lockstep.wmem"];
  w.assign(32 * kChunks, 0);
  for (std::uint32_t c = 0; c < kChunks; ++c)
    for (std::uint32_t i = 0; i < 64; ++i) w[32 * c + i / 2] |= static_cast<std::uint8_t>((m.w[c][i] & 15) << (4 * (i & 1)));
  auto& s = g.image.sections[".lockstep.wscale"];
  for (const std::uint16_t x : m.wscale) {
    s.push_back(static_cast<std::uint8_t>(x));
    s.push_back(static_cast<std::uint8_t>(x >> 8));
  }
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  std::vector<std::uint8_t> vr;
  for (std::uint32_t w = 0; w < 4 * kWords; ++w) vr.push_back(static_cast<std::uint8_t>(rng.next()));
  const Memories mem = draw_memories(rng);
  const unsigned rounds = 1 + rng.below(4);
  const bool trap_last = index % 4 == 3;
  cov.drawn.set(index, trap_last, 0);
  std::array<bool, 6> quantised{};  // ACT blocks a VQ has written
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && k > 0 && rng.chance(5)) {  // VEW ADD in place: changes VR between the VMATs
      const std::uint32_t n = 1 + rng.below(kWords), a = rng.below(kWords - n + 1);
      ++cov.vews;
      test::emit_vew_add_in_place(code, rs1, rs2, a, n);
      continue;
    }
    if (!trap && rng.chance(4) && k + 1 < rounds) {  // VQ ACT: quantises VR words into blocks b0.. and their ASH
      const std::uint32_t n = 1 + rng.below(384), nb = (n + 63) / 64, b0 = rng.below(7 - nb);
      const std::uint32_t src = rng.below(kWords - n + 1);
      ++cov.vqs;
      for (std::uint32_t b = b0; b < b0 + nb; ++b) quantised[b] = true;
      test::emit_vq(code, rs1, rs2, 0, b0, src, n);
      continue;
    }
    unsigned alone = 5;
    Vmat v = trap ? trapping_vmat(rng, index / 4, alone) : valid_vmat(rng);
    if (!trap && rng.chance(24) && v.rows <= 6 && v.k <= 6 - v.rows) {  // rs1 = rs2: dst = c0, b0 = R
      v.same = true;
      v.b0 = v.rows;
      v.dst = v.c0 = std::min<std::uint32_t>(v.c0, kWords - v.rows);
    }
    if (trap) {
      if (alone < 5) ++cov.trap_alone[alone];
      cov.drawn.set(index, true, vmat_code(v));
    } else {
      bool reads_vq = false;
      for (std::uint32_t b = v.b0; b < v.b0 + v.k; ++b) reads_vq = reads_vq || quantised[b];
      if (reads_vq) ++cov.reads_vq;
      else count(cov, mem, v);  // y_r from the sections (a VQ changed none of the blocks read)
    }
    const unsigned r1 = rs1, r2 = v.same ? rs1 : rs2;
    progen::emit_li(code, r1, v.x1());
    if (!v.same) progen::emit_li(code, r2, v.x2());
    code.push_back(test::vector_word(v.f7(), r2, r1, 0, v.rd));
  }
  Guest g = test::vector_guest(rng, std::move(code), scratch, "vmat" + std::to_string(index), std::move(vr));
  add_sections(g, mem);
  return g;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  Coverage cov;
  const test::TrapRun run = test::run_trap_programs(
      kPrograms, kBatch, kSeed, mode, kPrograms > 1000,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); }, cov.drawn, {16, 17, 18, 19, 21});
  if (::testing::Test::HasFailure()) return;
  for (unsigned kk = 1; kk <= 6; ++kk) EXPECT_GT(cov.by_k[kk], 0u) << "no valid VMAT with K = " << kk << ", seed " << kSeed;
  test::expect_generated({{"write mode", cov.write},
                          {"a VMAT reading ACT blocks a VQ wrote", cov.reads_vq},
                          {"argmax mode", cov.argmax},
                          {"argmax with rd = x0", cov.argmax_x0},
                          {"R = 1", cov.rows_1},
                          {"rows past 256 (VMH)", cov.vmh},
                          {"c0 + R K = 4152", cov.last_chunk},
                          {"b0 + K = 6", cov.last_block},
                          {"dst + R = 1024", cov.ends_1023},
                          {"y_r > 2^31 - 1", cov.sat_up},
                          {"y_r < -2^31", cov.sat_down},
                          {"a tie of rnd", cov.ties},
                          {"argmax: a row equal to the maximum", cov.argmax_ties},
                          {"argmax: a new maximum after a tie", cov.later_max},
                          {"trap 16 alone", cov.trap_alone[0]},
                          {"trap 17 alone", cov.trap_alone[1]},
                          {"trap 18 alone", cov.trap_alone[2]},
                          {"trap 19 alone", cov.trap_alone[3]},
                          {"trap 21 alone", cov.trap_alone[4]}},
                         kSeed);
  std::cout << "[ chip     ] " << kPrograms << " random VMAT programs (" << run.traps << " end in a trap, codes " << run.codes
            << "; " << cov.vmats << " valid VMATs (write " << cov.write << ", argmax " << cov.argmax << "), " << cov.rows
            << " rows, " << cov.vmh << " past row 256; saturated up " << cov.sat_up << ", down " << cov.sat_down
            << "; rnd ties " << cov.ties << "; argmax ties " << cov.argmax_ties << "; " << cov.reads_vq
            << " read blocks a VQ wrote; " << cov.vqs << " VQ ACTs, " << cov.vews << " VEW ADDs), "
            << to_string(mode) << ": " << run.steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVmatRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVmatRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
