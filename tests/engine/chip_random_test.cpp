// Random RV32IM + Zba + bignum programs through the built RV32 chip and the reference in
// lock-step, teacher-forced and free-running, every step compared (issue 7): 0 mismatches.
// Each program sets x1..x30 to random edge values, points x31 at a random 256-byte scratch area,
// runs a random body (fuzz/progen: forward branches and jumps, loads and stores in the scratch
// area, bignum ops), then exits. The default suite runs a share (kDefaultPrograms); the `long`
// label runs 10,000 (ctest -L long -R chip_random). The seed of each batch is printed on failure.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "chip_programs.h"
#include "lockstep/format/elf.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_RANDOM_FULL
constexpr unsigned kPrograms = 10000;
#else
constexpr unsigned kPrograms = 96;
#endif
constexpr unsigned kBatch = 32;  // streams per engine run (8.5 MB of chip state each)
constexpr std::uint64_t kSeed = 0x5eed'c41b'0007ull;

Guest random_program(std::uint64_t seed, unsigned index) {
  progen::Random rng(seed);
  std::vector<std::uint32_t> code;
  const std::uint32_t scratch = test::emit_register_prologue(rng, index, code);
  progen::BodyOptions opt;
  opt.length = 40;
  opt.base_reg = 31;
  opt.scratch_bytes = 256;
  opt.bignum = true;
  const std::vector<std::uint32_t> body = progen::random_body(rng, opt);
  code.insert(code.end(), body.begin(), body.end());
  progen::emit_li(code, 17, 93);  // exit(a0)
  code.push_back(0x00000073u);
  const format::Segment data = test::random_data_segment(rng, scratch, 256);
  Guest g;
  g.name = "random" + std::to_string(index);
  g.image = progen::image_from_code(code, 0x10000, {data});
  return g;
}

void run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const std::uint64_t steps =
      test::run_seeded_chip_programs(kPrograms, kBatch, kSeed, mode, random_program, [&](unsigned i, const StreamResult& st) {
        EXPECT_EQ(st.end, "exit") << "program " << i << " (run seed " << kSeed << "): the program must exit";
      });
  if (::testing::Test::HasFailure()) return;
  std::cout << "[ chip     ] " << kPrograms << " random programs, " << to_string(mode) << ": " << steps
            << " steps compared, 0 mismatches (seed " << kSeed << ")\n";
}

TEST(ChipRandomPrograms, TeacherForced) { run_programs(Mode::kForced); }
TEST(ChipRandomPrograms, FreeRunning) { run_programs(Mode::kFree); }

}  // namespace
}  // namespace lockstep::engine
