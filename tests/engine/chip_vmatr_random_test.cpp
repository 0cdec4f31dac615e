// Random VMATR programs, K and V mode (vector.md sections 4.2, 5 and 6), with VQ K, VQ V and VQ ACT
// rounds that write the cache rows and ACT blocks they read and VEW ADD rounds that change VR,
// through the built RV32 chip and the reference in lock-step, teacher-forced and free-running,
// every step compared: 0 mismatches. The reference is the oracle (through the engine); this test
// only computes the scores and sums of the VMATRs it built, to check that every path of section
// 4.2 was generated.
//
//   VMATR K  f7 = 0: for t < T and head h < 8, s = sum_d ACT[64 src + 8 h + d] KC[r0 + t][8 (h >> 1)
//            + d], e = ASH[src] + KSH[r0 + t]; the word stream of e = 8 t + h with the scores
//            sat32(s 2^(e - 16)) (e >= 16) or sat32(rnd(s, 16 - e)), written to VR[dst + 64 h + t]
//   VMATR V  f7 = 1: VMV(t) for t < T, then the word stream of the 64 sums sat32(rnd(o_{h,d}, 16)),
//            o = sum_t clamp(VR[src + 64 h + t], 0, 65536) VC[r0 + t][8 (h >> 1) + d] 2^VSH[r0 + t],
//            written to VR[dst + 8 h + d]
//   X(rs1) = dst | src << 16, X(rs2) = r0 | T << 16, rd = x0
//
// Each program's ACT, ASH, KC, KSH, VC and VSH come from their sections (section 2.1) drawn from
// profiles: values anywhere, at -128/127, small or zero; shifts 0..25 (0, 16 and 25 weighted); VR
// holds probabilities 0..65,536, any words, or their edges (65,536, 65,537, -1, 0). The program
// sets x1..x30 to random edge values and points x31 at a 256-byte scratch area, then runs 1..4
// rounds of: a random scalar body, `li` of the two operand registers, then a VMATR (V mode half
// the time), or, one round in four before the last, a VQ K or V (a cache row and its shift) or a
// VQ ACT (blocks and their ASH) that a later VMATR may read (half the time it does), or, one
// later round in five, a VEW ADD in place. T is 1..64 (1 and 64 weighted), r0 + T reaches 320,
// K's dst + 448 + T reaches 1,024, V's dst lies before the probability spans or after the last.
// Programs 4j + 3 (one in four) end with a VMATR that traps (16: a reserved f7 bit or rd != x0;
// 17: a span outside VR; 18: T = 0 or T > 64; 19: src > 5 (K); 20: dst meets a probability span
// (V); 22: r0 + T > 320), one condition alone for even j, else any combination; the code raised
// must be the lowest of the conditions built.
// The default suite runs a share (kPrograms); the `long` label runs 10,000 (ctest -L long -R
// chip_vmatr_random), printing its progress every 128 programs. The seed of each batch is printed
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

#ifdef LOCKSTEP_CHIP_VMATR_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 96;
#endif
constexpr unsigned kBatch = 32;
constexpr std::uint64_t kSeed = 0x5eed'07ed'0016ull;

constexpr std::uint32_t kWords = 1024;  // VR (vector.md section 2)
constexpr std::uint32_t kRows = 320;    // KC

struct Memories {
  std::array<std::int8_t, 384> act{};
  std::array<std::uint8_t, 6> ash{};
  std::vector<std::array<std::int8_t, 32>> kc = std::vector<std::array<std::int8_t, 32>>(kRows);
  std::vector<std::uint8_t> ksh = std::vector<std::uint8_t>(kRows);
  std::vector<std::array<std::int8_t, 32>> vc = std::vector<std::array<std::int8_t, 32>>(kRows);
  std::vector<std::uint8_t> vsh = std::vector<std::uint8_t>(kRows);
  std::vector<std::int64_t> vr = std::vector<std::int64_t>(kWords);  // VR's initial words
};

struct Vmatr {
  std::uint32_t dst = 0, src = 0, r0 = 0, t = 1;
  unsigned vmode = 0, f7_extra = 0, rd = 0;
  std::uint32_t x1() const { return dst | (src << 16); }
  std::uint32_t x2() const { return r0 | (t << 16); }
};

struct Coverage {
  unsigned vmatrs = 0, vews = 0, vq_k = 0, vq_act = 0, vq_v = 0, reads_vq = 0;
  unsigned v_mode = 0, v_known = 0, p_neg = 0, p_big = 0, p_65536 = 0, v_sat = 0, v_ties = 0, dst_after = 0;
  std::array<unsigned, 2> trap_v{};  // V mode: 20 alone, 22 alone
  unsigned t_1 = 0, t_64 = 0, last_row = 0, row_0 = 0, ends_1023 = 0, src_5 = 0;
  unsigned e_lt16 = 0, e_ge16 = 0, sat_up = 0, sat_down = 0, ties = 0;
  std::uint64_t scores = 0;
  std::array<unsigned, 5> trap_alone{};  // one condition alone: 16, 17, 18, 19, 22
  test::DrawnTraps drawn;
};

// V mode (section 4.2) from the initial VR, VC and VSH: clamps of p, saturation and ties of o.
void count_v(Coverage& cov, const Memories& m, const Vmatr& v) {
  ++cov.v_known;
  for (std::uint32_t h = 0; h < 8; ++h)
    for (std::uint32_t d = 0; d < 8; ++d) {
      __int128 o = 0;
      for (std::uint32_t t = 0; t < v.t; ++t) {
        const std::int64_t x = m.vr[v.src + 64 * h + t];
        if (d == 0) {
          cov.p_neg += x < 0;
          cov.p_big += x > 65536;
          cov.p_65536 += x == 65536;
        }
        const std::int64_t p = std::clamp<std::int64_t>(x, 0, 65536);
        o += static_cast<__int128>(p) * m.vc[v.r0 + t][8 * (h >> 1) + d] * (std::int64_t{1} << m.vsh[v.r0 + t]);
      }
      const __int128 y = (o + (1 << 15)) >> 16;
      cov.v_sat += y > 0x7FFFFFFF || y < -static_cast<__int128>(0x80000000LL);
      cov.v_ties += (o & 0xFFFF) == 0x8000;
    }
}

void count(Coverage& cov, const Memories& m, const Vmatr& v) {
  ++cov.vmatrs;
  cov.t_1 += v.t == 1;
  cov.t_64 += v.t == 64;
  cov.last_row += v.r0 + v.t == kRows;
  cov.row_0 += v.r0 == 0;
  cov.ends_1023 += v.dst + 448 + v.t == kWords;
  cov.src_5 += v.src == 5;
  for (std::uint32_t t = 0; t < v.t; ++t)
    for (std::uint32_t h = 0; h < 8; ++h) {
      std::int64_t s = 0;
      for (std::uint32_t d = 0; d < 8; ++d) s += std::int64_t{m.act[64 * v.src + 8 * h + d]} * m.kc[v.r0 + t][8 * (h >> 1) + d];
      const unsigned e = m.ash[v.src] + m.ksh[v.r0 + t];
      ++cov.scores;
      (e < 16 ? cov.e_lt16 : cov.e_ge16)++;
      const std::int64_t x = s * (std::int64_t{1} << e);  // |s 2^e| < 2^68 does not fit: e <= 50, |s| <= 2^17
      if (e <= 46) {
        const std::int64_t y = (x + (std::int64_t{1} << 15)) >> 16;
        cov.sat_up += y > 0x7FFFFFFF;
        cov.sat_down += y < -0x80000000LL;
        cov.ties += e < 16 && (x & 0xFFFF) == 0x8000;
      } else {
        cov.sat_up += s > 0;
        cov.sat_down += s < 0;
      }
    }
}

Vmatr valid_vmatr(progen::Random& rng) {
  Vmatr v;
  const unsigned c = rng.below(8);
  v.t = c == 0 ? 1 : c == 1 ? 64 : 1 + rng.below(64);
  v.src = rng.chance(4) ? 5 : rng.below(6);
  const std::uint32_t rtop = kRows - v.t;
  v.r0 = rng.chance(5) ? rtop : rng.chance(8) ? 0 : rng.below(rtop + 1);
  const std::uint32_t dtop = kWords - 448 - v.t;
  v.dst = rng.chance(5) ? dtop : rng.below(dtop + 1);
  return v;
}

// A valid VMATR V: the 8 probability spans [src + 64 h, + T) and dst's 64 words apart.
Vmatr valid_vmatr_v(progen::Random& rng) {
  Vmatr v;
  v.vmode = 1;
  const unsigned c = rng.below(8);
  v.t = c == 0 ? 1 : c == 1 ? 64 : 1 + rng.below(64);
  const std::uint32_t rtop = kRows - v.t;
  v.r0 = rng.chance(5) ? rtop : rng.chance(8) ? 0 : rng.below(rtop + 1);
  if (rng.chance(2)) {  // dst before src
    v.src = 64 + rng.below(kWords - 448 - v.t - 64 + 1);
    v.dst = rng.chance(4) ? v.src - 64 : rng.below(v.src - 64 + 1);
  } else {  // dst after the last span
    v.src = rng.below(kWords - 448 - v.t - 64 + 1);
    const std::uint32_t lo = v.src + 448 + v.t;
    v.dst = rng.chance(4) ? lo : lo + rng.below(kWords - 64 - lo + 1);
  }
  return v;
}

// The lowest code of section 6 that a VMATR with these fields raises, 0 if none.
unsigned vmatr_code(const Vmatr& v) {
  if (v.f7_extra != 0 || v.rd != 0) return 16;
  if (v.vmode == 0 ? v.dst + 448 + v.t > kWords : v.src + 448 + v.t > kWords || v.dst + 64 > kWords) return 17;
  if (v.t == 0 || v.t > 64) return 18;
  if (v.vmode == 0 && v.src > 5) return 19;
  if (v.vmode == 1)
    for (std::uint32_t h = 0; h < 8; ++h)
      if (v.dst < v.src + 64 * h + v.t && v.src + 64 * h < v.dst + 64) return 20;
  if (v.r0 + v.t > kRows) return 22;
  return 0;
}

// A VMATR V that traps with 20 (dst meets a probability span) or 22 (r0 + T > 320) alone.
Vmatr trapping_vmatr_v(progen::Random& rng, unsigned which) {
  Vmatr v = valid_vmatr_v(rng);
  while (which == 0) {  // until dst meets a span (a clamp to VR may have moved it off)
    const std::uint32_t h = rng.below(8);
    const std::int64_t lo = static_cast<std::int64_t>(v.src) + 64 * h - 63, hi = v.src + 64 * h + v.t - 1;
    v.dst = static_cast<std::uint32_t>(std::clamp<std::int64_t>(lo + rng.below(static_cast<std::uint32_t>(hi - lo + 1)), 0, kWords - 64));
    if (vmatr_code(v) == 20) break;
  }
  if (which == 1) v.r0 = kRows - v.t + 1 + rng.below(rng.chance(2) ? 8 : 60000);
  return v;
}

// A VMATR K that traps: conditions 16, 17, 18, 19, 22 (bits 0..4 of the mask) built into a valid
// one; one alone when j is even (condition j / 2 mod 5), else any combination.
Vmatr trapping_vmatr(progen::Random& rng, unsigned j, unsigned& alone) {
  Vmatr v = valid_vmatr(rng);
  const unsigned mask = j % 2 == 0 ? 1u << (j / 2 % 5) : 1 + rng.below(31);
  alone = 5;
  for (unsigned b = 0; b < 5; ++b)
    if (mask == 1u << b) alone = b;
  if (mask & 4) v.t = rng.chance(2) ? 0 : 65 + rng.below(rng.chance(2) ? 8 : 500);  // 18
  if (mask & 2) v.dst = kWords - 448 - std::min<std::uint32_t>(v.t, 64) + 1 + rng.below(rng.chance(2) ? 8 : 60000);  // 17
  if (mask & 8) v.src = 6 + rng.below(rng.chance(2) ? 4 : 65000);                                                  // 19
  if (mask & 16) v.r0 = kRows - std::min<std::uint32_t>(v.t, kRows) + 1 + rng.below(rng.chance(2) ? 8 : 60000);   // 22
  if (mask & 1) {                                                                                                  // 16
    if (rng.chance(2)) v.f7_extra = (1 + rng.below(63)) << 1;
    else v.rd = 1 + rng.below(30);
  }
  return v;
}

Memories draw_memories(progen::Random& rng) {
  Memories m;
  const unsigned pa = rng.below(4), pk = rng.below(4);
  auto value = [&](unsigned p) -> std::int8_t {
    switch (p) {
      case 0: return static_cast<std::int8_t>(rng.next());
      case 1: return rng.chance(2) ? -128 : 127;
      case 2: return static_cast<std::int8_t>(static_cast<int>(rng.below(9)) - 4);
      default: return rng.chance(4) ? static_cast<std::int8_t>(rng.next()) : 0;
    }
  };
  auto shift = [&] { return static_cast<std::uint8_t>(rng.chance(6) ? 25 : rng.chance(6) ? 0 : rng.chance(6) ? 16 : rng.below(26)); };
  for (auto& a : m.act) a = value(pa);
  for (auto& s : m.ash) s = shift();
  for (auto& row : m.kc)
    for (auto& x : row) x = value(pk);
  for (auto& s : m.ksh) s = shift();
  for (auto& row : m.vc)
    for (auto& x : row) x = value(pk);
  for (auto& s : m.vsh) s = shift();
  const unsigned pp = rng.below(3);  // VR: probabilities 0..65536, any words, or their edges
  for (auto& w : m.vr) {
    const unsigned c = pp == 2 ? rng.below(6) : pp;
    switch (c) {
      case 0: w = rng.below(65537); break;
      case 1: w = static_cast<std::int32_t>(rng.next()); break;
      case 2: w = 65536; break;
      case 3: w = 65537; break;
      case 4: w = -1; break;
      default: w = 0; break;
    }
  }
  return m;
}

void add_sections(Guest& g, const Memories& m) {
  auto& act = g.image.sections[".lockstep.act"];
  for (const std::int8_t a : m.act) act.push_back(static_cast<std::uint8_t>(a));
  g.image.sections[".lockstep.ash"].assign(m.ash.begin(), m.ash.end());
  auto& kc = g.image.sections[".lockstep.kcache"];
  for (const auto& row : m.kc)
    for (const std::int8_t x : row) kc.push_back(static_cast<std::uint8_t>(x));
  g.image.sections[".lockstep.ksh"] = m.ksh;
  auto& vc = g.image.sections[".lockstep.vcache"];
  for (const auto& row : m.vc)
    for (const std::int8_t x : row) vc.push_back(static_cast<std::uint8_t>(x));
  g.image.sections[".lockstep.vsh"] = m.vsh;
}

Guest random_program(std::uint64_t seed, unsigned index, Coverage& cov) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  const Memories mem = draw_memories(rng);
  std::vector<std::uint8_t> vr;
  for (const std::int64_t w : mem.vr)
    for (unsigned b = 0; b < 4; ++b) vr.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(w) >> (8 * b)));
  bool vr_changed = false;
  const unsigned rounds = 1 + rng.below(4);
  const bool trap_last = index % 4 == 3;
  cov.drawn.set(index, trap_last, 0);
  std::array<bool, 6> act_written{};
  std::vector<bool> row_written(kRows);
  for (unsigned k = 0; k < rounds; ++k) {
    test::emit_scratch_body(rng, code);
    const bool trap = trap_last && k + 1 == rounds;
    const auto [rs1, rs2] = test::operand_regs(rng);
    if (!trap && k > 0 && rng.chance(5)) {  // VEW ADD in place
      const std::uint32_t n = 1 + rng.below(kWords), a = rng.below(kWords - n + 1);
      ++cov.vews;
      vr_changed = true;
      test::emit_vew_add_in_place(code, rs1, rs2, a, n);
      continue;
    }
    if (!trap && k + 1 < rounds && rng.chance(4)) {  // VQ K (a cache row) or VQ ACT (blocks)
      const std::uint32_t src = rng.below(kWords - 128 + 1);  // n <= 128
      if (rng.chance(2)) {  // VQ K or V: a cache row
        const std::uint32_t row = rng.below(kRows);
        const unsigned target = rng.chance(2) ? 1 : 2;
        (target == 1 ? cov.vq_k : cov.vq_v)++;
        row_written[row] = true;
        test::emit_vq(code, rs1, rs2, target, row, src, 32);
      } else {
        const std::uint32_t n = 1 + rng.below(128), nb = (n + 63) / 64, b0 = rng.below(7 - nb);
        ++cov.vq_act;
        for (std::uint32_t b = b0; b < b0 + nb; ++b) act_written[b] = true;
        test::emit_vq(code, rs1, rs2, 0, b0, src, n);
      }
      continue;
    }
    unsigned alone = 5;
    const bool vmode = rng.chance(2);
    Vmatr v;
    if (trap && vmode && index / 4 % 3 == 0) {  // V mode: 20 or 22 alone
      const unsigned which = rng.below(2);
      v = trapping_vmatr_v(rng, which);
      ++cov.trap_v[which];
    } else {
      v = trap ? trapping_vmatr(rng, index / 4, alone) : vmode ? valid_vmatr_v(rng) : valid_vmatr(rng);
    }
    if (!trap && rng.chance(2)) {  // read what a VQ wrote: a written row inside [r0, r0 + T), a written block
      std::vector<std::uint32_t> rows, blocks;
      for (std::uint32_t r = 0; r < kRows; ++r)
        if (row_written[r]) rows.push_back(r);
      for (std::uint32_t b = 0; b < 6; ++b)
        if (act_written[b]) blocks.push_back(b);
      if (!rows.empty()) {
        const std::uint32_t r = rows[rng.below(static_cast<std::uint32_t>(rows.size()))];
        v.r0 = std::min(r - std::min(r, rng.below(v.t)), kRows - v.t);
      }
      if (!blocks.empty() && v.vmode == 0) v.src = blocks[rng.below(static_cast<std::uint32_t>(blocks.size()))];
    }
    if (trap) {
      if (alone < 5) ++cov.trap_alone[alone];
      cov.drawn.set(index, true, vmatr_code(v));
    } else if (v.vmode == 1) {
      ++cov.v_mode;
      cov.dst_after += v.dst > v.src;
      bool reads_vq = false;
      for (std::uint32_t t = 0; t < v.t; ++t) reads_vq = reads_vq || row_written[v.r0 + t];
      if (reads_vq) ++cov.reads_vq;
      else if (!vr_changed) count_v(cov, mem, v);
    } else {
      bool reads_vq = act_written[v.src];
      for (std::uint32_t t = 0; t < v.t; ++t) reads_vq = reads_vq || row_written[v.r0 + t];
      if (reads_vq) ++cov.reads_vq;
      else count(cov, mem, v);  // scores from the sections (no VQ wrote what it reads)
    }
    progen::emit_li(code, rs1, v.x1());
    progen::emit_li(code, rs2, v.x2());
    code.push_back(test::vector_word(v.vmode | v.f7_extra, rs2, rs1, 1, v.rd));
    if (v.vmode == 1 && !trap) vr_changed = true;  // it wrote dst
  }
  Guest g = test::vector_guest(rng, std::move(code), scratch, "vmatr" + std::to_string(index), std::move(vr));
  add_sections(g, mem);
  return g;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  Coverage cov;
  const test::TrapRun run = test::run_trap_programs(
      kPrograms, kBatch, kSeed, mode, kPrograms > 1000,
      [&](std::uint64_t seed, unsigned index) { return random_program(seed, index, cov); }, cov.drawn, {16, 17, 18, 19, 20, 22});
  if (::testing::Test::HasFailure()) return;
  test::expect_generated({{"T = 1", cov.t_1},
                          {"T = 64", cov.t_64},
                          {"r0 + T = 320", cov.last_row},
                          {"r0 = 0", cov.row_0},
                          {"dst + 448 + T = 1024", cov.ends_1023},
                          {"src = 5", cov.src_5},
                          {"a VMATR reading what a VQ wrote", cov.reads_vq},
                          {"VQ K", cov.vq_k},
                          {"VQ ACT", cov.vq_act},
                          {"e < 16", cov.e_lt16},
                          {"e >= 16", cov.e_ge16},
                          {"a score > 2^31 - 1", cov.sat_up},
                          {"a score < -2^31", cov.sat_down},
                          {"a tie of rnd", cov.ties},
                          {"trap 16 alone", cov.trap_alone[0]},
                          {"trap 17 alone", cov.trap_alone[1]},
                          {"trap 18 alone", cov.trap_alone[2]},
                          {"trap 19 alone", cov.trap_alone[3]},
                          {"trap 22 alone", cov.trap_alone[4]},
                          {"V mode", cov.v_mode},
                          {"V mode, dst after the spans", cov.dst_after},
                          {"VQ V", cov.vq_v},
                          {"p < 0 (clamped to 0)", cov.p_neg},
                          {"p > 65536 (clamped)", cov.p_big},
                          {"p = 65536", cov.p_65536},
                          {"V: a sum that saturates", cov.v_sat},
                          {"V: a tie of rnd", cov.v_ties},
                          {"V mode: trap 20 alone", cov.trap_v[0]},
                          {"V mode: trap 22 alone", cov.trap_v[1]}},
                         kSeed);
  std::cout << "[ chip     ] " << kPrograms << " random VMATR programs (" << run.traps << " end in a trap, codes "
            << run.codes << "; " << cov.vmatrs + cov.reads_vq << " valid VMATRs, " << cov.reads_vq
            << " read what a VQ wrote; of the others' " << cov.scores << " scores: e < 16 " << cov.e_lt16 << ", e >= 16 "
            << cov.e_ge16 << ", saturated up " << cov.sat_up << ", down " << cov.sat_down << ", rnd ties " << cov.ties << "; V mode "
            << cov.v_mode << " (" << cov.v_known << " on initial words: p < 0 " << cov.p_neg << ", > 65536 " << cov.p_big
            << ", = 65536 " << cov.p_65536 << ", saturated " << cov.v_sat << ", ties " << cov.v_ties << "); " << cov.vq_v
            << " VQ V, "
            << cov.vq_k << " VQ K, " << cov.vq_act << " VQ ACT, " << cov.vews << " VEW ADDs), " << to_string(mode) << ": "
            << run.steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVmatrRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVmatrRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
