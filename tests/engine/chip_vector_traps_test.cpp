// Random trapping instructions of every vector op (the registry of fuzz/ops: VMAT, VMATR, VQ,
// VEXP, VEW, VFN, VRED, VLD; vector.md section 6) through the built RV32 chip and the reference in
// lock-step, teacher-forced and free-running, every step compared (issue 8): 0 mismatches.
//
// This test claims the ops' decode and trap checks: each program loads the two operand registers and runs one
// vector instruction whose operand fields (A, B, C, N), f7 and rd are drawn around every boundary
// of section 6 (spans at the end of VR, counts 0/1/32/64/65/384/1024, ACT blocks, WMEM and cache
// rows, overlaps of every kind, reserved f7 bits, rd != x0), or, one candidate in four, by the
// op's case breaking the one condition of each of its codes in turn (OpCase::draw_trapping). The reference (the golden model)
// classifies each candidate, and the op's case (OpCase::trap_code) must give the same code, 0
// included; candidates it runs without a trap are counted and not used (every op has random
// programs of its own for its execution: chip_vector_ops_random). Every kept program ends in the
// reference's TRAP (4..23), which the chip must reproduce token for token. Codes seen per op are
// printed, and every code an op can raise (OpCase::codes) must appear (kPerOp programs per op; the `long` label runs 10,000 per op:
// ctest -L long -R chip_vector_traps). The seed is printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"
#include "lockstep/ops/op_case.h"
#include "lockstep/ref/machine.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VECTOR_TRAPS_FULL
constexpr unsigned kPerOp = 10000;
#else
constexpr unsigned kPerOp = 48;
#endif
constexpr unsigned kBatch = 32;
constexpr std::uint64_t kSeed = 0x5eed'7a95'0008ull;

// A 16-bit operand field near one of the boundaries of section 6, or anywhere.
std::uint32_t field(progen::Random& rng) {
  static constexpr std::uint32_t kEdges[] = {0,   1,   2,   5,   6,   7,   8,   31,  32,  33,   63,   64,
                                             65,  319, 320, 321, 383, 384, 385, 447, 448, 512,  575,  576,
                                             577, 960, 961, 962, 1000, 1023, 1024, 1025, 4088, 4151, 4152, 4153};
  switch (rng.below(6)) {
    case 0: case 1: return kEdges[rng.below(sizeof kEdges / sizeof kEdges[0])];
    case 2: return (kEdges[rng.below(sizeof kEdges / sizeof kEdges[0])] + rng.below(5) + 0xFFFE) & 0xFFFF;  // edge - 2 .. edge + 2
    case 3: return rng.below(1100);
    case 4: return rng.below(70);
    default: return rng.below(65536);
  }
}

// An f7 value the op accepts (so that the operand checks decide): a valid instruction's.
std::uint32_t f7_for(progen::Random& rng, const ops::OpCase& op) {
  ops::DrawContext ctx(rng);
  return op.draw_valid(ctx).f7;
}

struct Candidate {
  Guest guest;
  ops::Fields fields;
};

Candidate candidate(std::uint64_t seed, unsigned index, const ops::OpCase& op) {
  const bool vmat = op.op() == ref::Op::kVmat, vq = op.op() == ref::Op::kVq;
  progen::Random rng(seed);
  std::uint32_t a, b, c, n, f7;
  unsigned rd = 0;
  const bool drawn = index % 4 == 3;  // one in four: the op's case breaks one condition, each code in turn
  if (drawn) {
    ops::DrawContext ctx(rng);
    const std::vector<unsigned> codes = op.codes();
    const ops::Fields f = op.draw_trapping(ctx, codes[index / 4 % codes.size()]);
    a = f.a, b = f.b, c = f.c, n = f.n, f7 = f.f7, rd = f.rd;
  } else if (rng.chance(3)) {  // every field anywhere (mostly the low codes: 16, 17)
    a = field(rng), b = field(rng), c = field(rng), n = field(rng);
    f7 = rng.chance(5) ? rng.below(128) : f7_for(rng, op);
    rd = rng.chance(8) ? 1 + rng.below(31) : 0;
  } else {  // operands an op could accept, then one field moved to a boundary (the higher codes)
    a = rng.below(600), b = rng.below(6);
    c = rng.chance(2) ? rng.below(6) : rng.below(600), n = rng.chance(vq ? 2 : 4) ? 32 : 1 + rng.below(64);  // VQ K/V: n = 32
    f7 = f7_for(rng, op);
    if (vmat && (f7 & 8)) rd = rng.below(32);  // VMAT argmax: any rd
    switch (rng.below(7)) {
      case 0: a = field(rng); break;
      case 1: b = field(rng); break;
      case 2: c = rng.chance(2) ? field(rng) : 4100 + rng.below(60); break;  // WMEM's end for VMAT
      case 3: case 4: n = rng.chance(3) ? 0 : field(rng); break;
      case 5: f7 = rng.below(128); break;
      default: rd = 1 + rng.below(31); break;
    }
  }
  // overlaps: put one span right next to or inside another
  if (!drawn && rng.chance(3)) {
    const int d = static_cast<int>(rng.below(130)) - 65;
    const std::uint32_t base = rng.below(1024);
    a = base;
    if (rng.chance(2)) b = static_cast<std::uint32_t>(static_cast<int>(base) + d) & 0xFFFF;
    else c = static_cast<std::uint32_t>(static_cast<int>(base) + d) & 0xFFFF;
  }
  const unsigned rs1 = 1 + rng.below(30);
  unsigned rs2 = 1 + rng.below(30);
  while (rs2 == rs1) rs2 = 1 + rng.below(30);
  std::vector<std::uint32_t> code;
  progen::emit_li(code, rs1, (b << 16) | a);
  progen::emit_li(code, rs2, (n << 16) | c);
  code.push_back(ref::encode::r(op.op(), rd, rs1, rs2) | f7 << 25);
  progen::emit_li(code, 17, 93);  // exit (reached only when the instruction does not trap)
  code.push_back(0x00000073u);
  Candidate cand;
  cand.fields = ops::Fields::of((b << 16) | a, (n << 16) | c, f7, rd);
  cand.guest.name = std::string(op.name()) + "_" + std::to_string(index);
  cand.guest.image = progen::image_from_code(code, 0x10000);
  return cand;
}

// The reference's trap code for the candidate (0: it does not trap).
unsigned reference_trap(const Guest& g) {
  ref::Machine m;
  m.load(g.image);
  m.run(1000);
  return m.status() == ref::Status::kTrapped ? m.trap_code() : 0;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const LoadedChip chip = load_chip_or_built("");
  const std::span<const ops::OpCase* const> cases = ops::registry();
  std::vector<std::map<unsigned, unsigned>> seen(cases.size());
  std::vector<unsigned> dropped(cases.size());
  std::vector<Guest> kept;
  for (unsigned k = 0; k < cases.size(); ++k) {
    const ops::OpCase& op = *cases[k];
    const unsigned f3 = (ref::encoding_of(op.op()).match >> 12) & 7;
    unsigned have = 0;
    for (unsigned i = 0; have < kPerOp; ++i) {
      ASSERT_LT(i, 20 * kPerOp) << "seed " << kSeed << ": too few trapping candidates for " << op.name();
      Candidate cand = candidate(kSeed * 1000003ull + 7919ull * f3 + i, i, op);
      const unsigned code = reference_trap(cand.guest);
      ASSERT_EQ(op.trap_code(cand.fields), code) << "seed " << kSeed << " " << cand.guest.name << ": "
                                                 << op.describe(cand.fields) << ": the reference raised " << code;
      if (code == 0) {
        ++dropped[k];
        continue;
      }
      ++seen[k][code];
      kept.push_back(std::move(cand.guest));
      ++have;
    }
  }
  const std::uint64_t steps = test::run_chip_programs(
      static_cast<unsigned>(kept.size()), kBatch, mode,
      [&](unsigned first, unsigned n) { return std::vector<Guest>(kept.begin() + first, kept.begin() + first + n); },
      [&](unsigned i) { return "seed " + std::to_string(kSeed) + " program " + kept[i].name; }, 8,
      [&](unsigned i, const StreamResult& st) {
        EXPECT_EQ(st.end, "trap") << "seed " << kSeed << " program " << kept[i].name;
      });
  if (::testing::Test::HasFailure()) return;
  for (unsigned k = 0; k < cases.size(); ++k) {
    const ops::OpCase& op = *cases[k];
    std::cout << "[ chip     ] " << op.name() << ": " << kPerOp << " trapping programs (" << dropped[k]
              << " candidates ran without a trap, not used); codes";
    for (const auto& [code, count] : seen[k]) std::cout << " " << code << ":" << count;
    std::cout << "\n";
    const std::vector<unsigned> codes = op.codes();
    for (unsigned code : codes)
      EXPECT_GT(seen[k].count(code), 0u) << op.name() << " never raised code " << code << " (seed " << kSeed << ")";
    for (const auto& [code, count] : seen[k])
      EXPECT_TRUE(std::count(codes.begin(), codes.end(), code)) << op.name() << " raised code " << code << ", not one of its codes";
  }
  std::cout << "[ chip     ] " << kept.size() << " trapping vector programs, " << to_string(mode) << ": " << steps
            << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVectorTraps, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVectorTraps, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
