// Random VLD programs (vector.md section 4.8) through the built RV32 chip and the reference in
// lock-step, teacher-forced and free-running, every step compared (issue 8, the one vector op the
// chip compiles so far): 0 mismatches.
//
// Each program sets x1..x30 to random edge values and points x31 at a 256-byte scratch area, then
// runs 1..6 rounds of: a random scalar body of 2..12 instructions (fuzz/progen), `li` of the VLD's two operand
// registers, the VLD word. Operands are drawn to reach every path of the op: records anywhere in a
// random 8 KiB area, in the scratch area the bodies store into, and ending at (or 1..7 bytes
// before) RAM_END, n from 1 to 1024 (every group length, the
// 256-element VLG wrap of the low nibble, n = 1024), dst from 0 to 1024 - n, rs1 = rs2, rs1 = x0.
// One program in four ends with a VLD that traps (4, 5, 16, 17 or 18, and combinations, where the
// lowest code must win); the others exit. The default suite runs a share (kPrograms); the `long`
// label runs 10,000 (ctest -L long -R chip_vld_random). The seed of each batch is printed on
// failure.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VLD_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 64;
#endif
constexpr unsigned kBatch = 32;
constexpr std::uint64_t kSeed = 0x5eed'0f1d'0008ull;

constexpr std::uint32_t kRamBase = 0x10000, kRamEnd = 0x110000;  // isa.md section 2
constexpr std::uint32_t kArea = 0x60000, kAreaBytes = 8192;      // the random records

// VLD rd, rs1, rs2 with funct7 f7 (vector.md section 4.0: f3 = 7 of custom-1).
std::uint32_t vld_word(unsigned f7, unsigned rs2, unsigned rs1, unsigned rd) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (7u << 12) | (rd << 7) | 0x2Bu;
}

// n in 1..1024, weighted toward short records but reaching every length class.
std::uint32_t draw_n(progen::Random& rng) {
  switch (rng.below(8)) {
    case 0: return 1 + rng.below(4);
    case 1: return 4 * (1 + rng.below(4)) + rng.below(2);  // group boundaries
    case 2: case 3: return 1 + rng.below(64);
    case 4: case 5: return 1 + rng.below(256);
    case 6: return 1021 + rng.below(4);  // 1021..1024: the last group, VLG up to 255
    default: return 1 + rng.below(1024);
  }
}

struct Vld {
  std::uint32_t a = 0, rs2 = 0;  // X(rs1), X(rs2)
  unsigned f7 = 0, rd = 0;
  bool same = false, zero = false;  // rs1 = rs2; rs1 = x0
};

// A VLD that does not trap: an aligned record inside RAM, dst + n <= 1024. One in four reads the
// 256-byte scratch area that the random bodies store into (a store then a VLD of the same bytes).
Vld valid_vld(progen::Random& rng, std::uint32_t scratch) {
  Vld v;
  const bool in_scratch = rng.chance(4);
  const std::uint32_t n = in_scratch ? 1 + rng.below(64) : draw_n(rng);
  const std::uint32_t dst = rng.below(1024 - n + 1);
  v.rs2 = dst | (n << 16);
  if (in_scratch) v.a = scratch + 4 * rng.below((256 - 4 - n) / 4 + 1);
  else if (rng.chance(8)) v.a = kRamEnd - 4 - n - 4 * rng.below(2);  // ends at RAM_END (or 4 bytes before)
  else v.a = kArea + 4 * rng.below((kAreaBytes - 4 - n) / 4 + 1);
  v.a &= ~3u;
  if (rng.chance(16)) {  // rs1 = rs2: one value that is a record address and dst | n << 16 at once
    const std::uint32_t hi = 2 + rng.below(14);        // n = 2..15, a in 0x20000..0xFFFFC
    const std::uint32_t lo = 4 * rng.below((1024 - hi) / 4 + 1);  // dst, aligned, dst + n <= 1024
    v.a = (hi << 16) | lo;
    v.rs2 = v.a;
    v.same = true;
  }
  return v;
}

// A VLD that traps, with one or more of the conditions of section 6.
Vld trapping_vld(progen::Random& rng, std::uint32_t scratch) {
  Vld v = valid_vld(rng, scratch);
  v.same = false;
  const std::uint32_t n = v.rs2 >> 16;
  const unsigned mask = 1 + rng.below(31);  // which conditions to break (any combination)
  if (mask & 1) v.a += 1 + rng.below(3);    // 4: misaligned
  if (mask & 2) {                            // 5: outside RAM
    switch (rng.below(4)) {
      case 0: v.a = rng.below(kRamBase) & ~3u; break;
      case 1: v.a = kRamEnd - 4 - n + 4 * (1 + rng.below(4)); break;  // runs past RAM_END
      case 2: v.a = 0xFFFFFFFCu; break;
      default: v.zero = true; v.a = 0; break;  // rs1 = x0
    }
    if (mask & 1) v.a |= 1 + rng.below(3);
  }
  if (mask & 4) {  // 16: a nonzero f7 or rd
    if (rng.chance(2)) v.f7 = 1 + rng.below(127);
    else v.rd = 1 + rng.below(31);
  }
  if (mask & 8) {  // 17: dst + n > 1024 (n up to 65,535)
    const std::uint32_t dst = rng.chance(2) ? 1025 - n + rng.below(n + 64) : rng.below(65536);
    const std::uint32_t nn = rng.chance(4) ? 1025 + rng.below(65536 - 1025) : n;
    v.rs2 = (dst & 0xFFFF) | (nn << 16);
    if ((dst & 0xFFFF) + nn <= 1024) v.rs2 = (1024 - nn + 1 + rng.below(nn)) | (nn << 16);
  }
  if (mask & 16) v.rs2 &= 0xFFFF;  // 18: n = 0
  return v;
}

Guest random_program(std::uint64_t seed, unsigned index) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  const unsigned rounds = 1 + rng.below(6);
  const bool trap_last = rng.chance(4);
  for (unsigned k = 0; k < rounds; ++k) {
    progen::BodyOptions opt;
    opt.length = 2 + rng.below(11);  // with stores into the scratch area, which VLD also reads
    opt.base_reg = 31;
    opt.scratch_bytes = 256;
    const std::vector<std::uint32_t> body = progen::random_body(rng, opt);
    code.insert(code.end(), body.begin(), body.end());
    const Vld v = trap_last && k + 1 == rounds ? trapping_vld(rng, scratch) : valid_vld(rng, scratch);
    const unsigned rs1 = v.zero ? 0 : 1 + rng.below(30);
    unsigned rs2 = v.same ? rs1 : 1 + rng.below(30);
    while (!v.same && rs2 == rs1) rs2 = 1 + rng.below(30);
    if (rs1 != 0) progen::emit_li(code, rs1, v.a);
    if (!v.same) progen::emit_li(code, rs2, v.rs2);
    code.push_back(vld_word(v.f7, rs2, rs1, v.rd));
  }
  progen::emit_li(code, 17, 93);  // exit(a0)
  code.push_back(0x00000073u);
  const format::Segment data = test::random_data_segment(rng, kArea, kAreaBytes);
  const format::Segment scr = test::random_data_segment(rng, scratch, 256);
  Guest g;
  g.name = "vld" + std::to_string(index);
  g.image = progen::image_from_code(code, 0x10000, {data, scr});
  return g;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  unsigned traps = 0;
  const std::uint64_t steps =
      test::run_seeded_chip_programs(kPrograms, kBatch, kSeed, mode, random_program, [&](unsigned i, const StreamResult& st) {
        EXPECT_TRUE(st.end == "exit" || st.end == "trap") << "program " << i << " (run seed " << kSeed << "): ended " << st.end;
        traps += st.end == "trap";
      });
  if (::testing::Test::HasFailure()) return;
  // about one program in four ends in a trap; both outcomes must be exercised
  EXPECT_GT(traps, 0u) << "seed " << kSeed;
  EXPECT_LT(traps, kPrograms) << "seed " << kSeed;
  std::cout << "[ chip     ] " << kPrograms << " random VLD programs (" << traps << " end in a trap), "
            << to_string(mode) << ": " << steps << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipVldRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipVldRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
