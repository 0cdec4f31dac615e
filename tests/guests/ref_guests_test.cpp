// Every guest on the reference model (the lockstep_ref library, run directly):
//   - directed guests: console, error console and exit status equal qemu-riscv32's;
//   - bignum guests (real custom-0 instructions): output equals GMP's numbers;
//   - vector_ops (custom-1): the hand-computed argmax;
//   - stories_c (real and synthetic): output equals the host golden model's,
//     and the instructions / trace steps per story token are reported.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <ostream>
#include <string>

#include "bignum_expected.h"
#include "lockstep/ref/machine.h"
#include "run_process.h"

namespace lockstep::guests_test {
namespace {

struct RefResult {
  ref::Status status;
  std::uint32_t exit_status;
  std::uint32_t trap_code;
  std::uint64_t instructions;
  std::uint64_t steps;
  std::string out, err;
};

RefResult run_ref(const std::string& name, std::uint64_t max_steps = 20'000'000'000ull) {
  auto machine = std::make_unique<ref::Machine>();  // large (RAM, vector unit): not on the stack
  ref::Machine& m = *machine;
  m.load_elf_file(guest_elf(name));
  m.run(max_steps);
  return {m.status(), m.exit_status(), m.trap_code(), m.instructions_retired(), m.steps(),
          m.console_out(), m.console_err()};
}

class DirectedOnRef : public ::testing::TestWithParam<const char*> {};

TEST_P(DirectedOnRef, MatchesQemu) {
  if (qemu_path().empty()) GTEST_SKIP() << "qemu-riscv32 not found (apt-get install qemu-user)";
  RefResult r = run_ref(GetParam());
  ProcessResult q = run_process({qemu_path(), guest_elf(GetParam())});
  ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
  EXPECT_EQ(static_cast<int>(r.exit_status), q.exit_code);
  EXPECT_EQ(r.out, q.out);
  EXPECT_EQ(r.err, q.err);
  std::printf("%s: %llu instructions, %llu trace steps\n", GetParam(),
              static_cast<unsigned long long>(r.instructions), static_cast<unsigned long long>(r.steps));
}

INSTANTIATE_TEST_SUITE_P(Guests, DirectedOnRef,
                         ::testing::Values("hello", "sort", "crc32", "memops", "muldiv", "mulsweep", "mulcarry", "zbasweep", "alusweep", "shiftsweep", "ldstsweep", "zba",
                                           "selfcheck", "fd2", "bignum_fact_soft", "bignum_fib_soft",
                                           "bignum_pow_soft"),
                         [](const auto& info) { return std::string(info.param); });

struct BignumCase {
  const char* guest;
  std::string (*expected)();
};

/// Test names carry the guest name, not the struct's bytes (ctest names must be stable).
void PrintTo(const BignumCase& c, std::ostream* os) { *os << c.guest; }

class BignumOnRef : public ::testing::TestWithParam<BignumCase> {};

TEST_P(BignumOnRef, BignumUnitMatchesGmp) {
  RefResult r = run_ref(GetParam().guest);
  ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
  EXPECT_EQ(r.exit_status, 0u);
  EXPECT_EQ(r.out, GetParam().expected());
  std::printf("%s: %llu instructions, %llu trace steps\n", GetParam().guest,
              static_cast<unsigned long long>(r.instructions), static_cast<unsigned long long>(r.steps));
}

INSTANTIATE_TEST_SUITE_P(Guests, BignumOnRef,
                         ::testing::Values(BignumCase{"bignum_fact", expected_fact},
                                           BignumCase{"bignum_fib", expected_fib},
                                           BignumCase{"bignum_pow", expected_pow}),
                         [](const auto& info) { return std::string(info.param.guest); });

TEST(VectorOnRef, VectorOpsArgmaxIsTheHandComputedRow) {
  // guests/vector/vector_ops.c: ACT block 0 = 2(i-32) (shift 15); rows all +1,
  // all -1, +1 on i >= 32, all 0 give accumulators -64, 64, 992, 0.
  RefResult r = run_ref("vector_ops");
  ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
  EXPECT_EQ(r.exit_status, 0u);
  EXPECT_EQ(r.out, "vector_ops: argmax = 2\n");
  EXPECT_EQ(r.err, "");
}

#ifdef LOCKSTEP_STORIES_HOST
class StoriesOnRef : public ::testing::TestWithParam<const char*> {};

TEST_P(StoriesOnRef, MatchesHostGolden) {
  std::string name = GetParam();
  if (name == "stories_c" && !LOCKSTEP_STORIES_REAL) GTEST_SKIP() << "stories260K.bin not found at configure time";
  ProcessResult h = run_process({LOCKSTEP_STORIES_HOST, std::string(LOCKSTEP_GUEST_DIR) + "/" + name + ".bin"});
  ASSERT_EQ(h.exit_code, 0);
  RefResult r = run_ref(name);
  ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
  EXPECT_EQ(r.exit_status, 0u);
  EXPECT_EQ(r.out, h.out);
  const double tokens = 63.0;
  std::printf("%s: %llu instructions, %llu trace steps; per story token: %.0f instructions, %.0f trace steps\n",
              name.c_str(), static_cast<unsigned long long>(r.instructions),
              static_cast<unsigned long long>(r.steps), r.instructions / tokens, r.steps / tokens);
  RecordProperty("instructions", std::to_string(r.instructions));
  RecordProperty("steps", std::to_string(r.steps));
}

INSTANTIATE_TEST_SUITE_P(Models, StoriesOnRef, ::testing::Values("stories_c", "stories_c_synthetic"),
                         [](const auto& info) { return std::string(info.param); });
#endif

}  // namespace
}  // namespace lockstep::guests_test
