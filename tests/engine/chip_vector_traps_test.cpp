// Random trapping instructions of the vector unit's seven other ops (VMAT, VMATR, VQ, VEXP, VEW,
// VFN, VRED; vector.md section 6) through the built RV32 chip and the reference in lock-step,
// teacher-forced and free-running, every step compared (issue 8): 0 mismatches.
//
// This test claims the ops' decode and trap checks: each program loads the two operand registers and runs one
// vector instruction whose operand fields (A, B, C, N), f7 and rd are drawn around every boundary
// of section 6 (spans at the end of VR, counts 0/1/32/64/65/384/1024, ACT blocks, WMEM and cache
// rows, overlaps of every kind, reserved f7 bits, rd != x0). The reference (the golden model)
// classifies each candidate; candidates it runs without a trap are counted and not used (every op
// has a random test of its own for its execution).
// Every kept program ends in the reference's TRAP(16..23), which the chip must reproduce token for
// token. Codes seen per op are printed, and every code an op can raise
// must appear (kPerOp programs per op; the `long` label runs 10,000 per op:
// ctest -L long -R chip_vector_traps). The seed is printed on failure.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"
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

const std::array<const char*, 7> kOps = {"VMAT", "VMATR", "VQ", "VEXP", "VEW", "VFN", "VRED"};
// The codes each op can raise (section 6).
const std::array<std::set<unsigned>, 7> kCodes = {{
    {16, 17, 18, 19, 21},  // VMAT
    {16, 17, 18, 19, 20, 22},  // VMATR
    {16, 17, 18, 19, 22},  // VQ
    {16, 17, 18, 20},  // VEXP
    {16, 17, 18, 20, 23},  // VEW
    {16, 17, 18, 20},  // VFN
    {16, 17, 18},  // VRED
}};

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

// An f7 value the op accepts (so that the operand checks decide).
std::uint32_t f7_for(progen::Random& rng, unsigned op) {
  switch (op) {
    case 0: return 1 + rng.below(6) + (rng.chance(3) ? 8 : 0);  // K, ARGMAX
    case 1: return rng.below(2);                                // VMODE
    case 2: return rng.below(3);                                // TARGET
    case 3: return rng.below(8);                                // G - 1
    case 4: {                                                   // MODE, GS
      const std::uint32_t mode = rng.below(4);
      return mode | (mode == 2 ? rng.below(7) << 2 : 0);
    }
    case 5: return rng.below(3);                                // FN
    default: {                                                  // MODE, SH
      const std::uint32_t mode = rng.below(3);
      return mode | (mode == 2 ? 0 : rng.below(32) << 2);
    }
  }
}

struct Candidate {
  Guest guest;
  unsigned op = 0;
};

Candidate candidate(std::uint64_t seed, unsigned index, unsigned op) {
  progen::Random rng(seed);
  std::uint32_t a, b, c, n, f7;
  unsigned rd = 0;
  if (rng.chance(3)) {  // every field anywhere (mostly the low codes: 16, 17)
    a = field(rng), b = field(rng), c = field(rng), n = field(rng);
    f7 = rng.chance(5) ? rng.below(128) : f7_for(rng, op);
    rd = rng.chance(8) ? 1 + rng.below(31) : 0;
  } else {  // operands an op could accept, then one field moved to a boundary (the higher codes)
    a = rng.below(600), b = rng.below(6);
    c = rng.chance(2) ? rng.below(6) : rng.below(600), n = rng.chance(op == 2 ? 2 : 4) ? 32 : 1 + rng.below(64);  // VQ K/V: n = 32
    f7 = f7_for(rng, op);
    if (op == 0 && (f7 & 8)) rd = rng.below(32);  // VMAT argmax: any rd
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
  if (rng.chance(3)) {
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
  code.push_back((f7 << 25) | (rs2 << 20) | (rs1 << 15) | (op << 12) | (rd << 7) | 0x2Bu);
  progen::emit_li(code, 17, 93);  // exit (reached only when the instruction does not trap)
  code.push_back(0x00000073u);
  Candidate cand;
  cand.op = op;
  cand.guest.name = std::string(kOps[op]) + "_" + std::to_string(index);
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
  std::array<std::map<unsigned, unsigned>, 7> seen;
  std::array<unsigned, 7> dropped{};
  std::vector<Guest> kept;
  for (unsigned op = 0; op < 7; ++op) {
    unsigned have = 0;
    for (unsigned i = 0; have < kPerOp; ++i) {
      ASSERT_LT(i, 20 * kPerOp) << "seed " << kSeed << ": too few trapping candidates for " << kOps[op];
      Candidate cand = candidate(kSeed * 1000003ull + 7919ull * op + i, i, op);
      const unsigned code = reference_trap(cand.guest);
      if (code < 16 || code > 23) {
        ++dropped[op];
        continue;
      }
      ++seen[op][code];
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
  for (unsigned op = 0; op < 7; ++op) {
    std::cout << "[ chip     ] " << kOps[op] << ": " << kPerOp << " trapping programs (" << dropped[op]
              << " candidates ran without a trap, not used); codes";
    for (const auto& [code, count] : seen[op]) std::cout << " " << code << ":" << count;
    std::cout << "\n";
    for (unsigned code : kCodes[op])
      EXPECT_GT(seen[op].count(code), 0u) << kOps[op] << " never raised code " << code << " (seed " << kSeed << ")";
    for (const auto& [code, count] : seen[op])
      EXPECT_TRUE(kCodes[op].count(code)) << kOps[op] << " raised code " << code << ", not one of its codes";
  }
  std::cout << "[ chip     ] " << kept.size() << " trapping vector programs, " << to_string(mode) << ": " << steps
            << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVectorTraps, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVectorTraps, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
