// Bignum guests against GMP.  The numbers each guest prints are recomputed
// here with GMP (mpz_fac_ui, mpz_fib_ui, mpz_ui_pow_ui).  Two runs per guest:
//   - NAME_soft.elf (software model of the bignum unit) under qemu-riscv32,
//     which checks the guest algorithms and output format;
//   - NAME.elf (custom-0 bignum instructions) on the reference model through
//     `lockstep ref`, skipped until that command exists.
#include <gmp.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "bignum_expected.h"
#include "run_process.h"

namespace lockstep::guests_test {
namespace {

struct BignumCase {
  const char* guest;
  std::string (*expected)();
};

/// Test names carry the guest name, not the struct's bytes (ctest names must be stable).
void PrintTo(const BignumCase& c, std::ostream* os) { *os << c.guest; }

class BignumGuest : public ::testing::TestWithParam<BignumCase> {};

TEST_P(BignumGuest, SoftwareUnitUnderQemuMatchesGmp) {
  if (qemu_path().empty()) GTEST_SKIP() << "qemu-riscv32 not found (apt-get install qemu-user)";
  const BignumCase& c = GetParam();
  ProcessResult r = run_process({qemu_path(), guest_elf(std::string(c.guest) + "_soft")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, c.expected());
}

TEST_P(BignumGuest, BignumUnitOnReferenceModelMatchesGmp) {
  std::string exe = lockstep_ref_exe();
  if (exe.empty())
    GTEST_SKIP() << "`lockstep ref` is not available yet (" << LOCKSTEP_BINARY_DIR
                 << "/bin/lockstep ref --help failed); the custom-0 build needs the reference model";
  const BignumCase& c = GetParam();
  RefRun r = run_on_reference(guest_elf(c.guest));
  EXPECT_EQ(r.end, "exit") << r.process.err;
  EXPECT_EQ(r.exit_status, 0) << r.process.err;
  EXPECT_EQ(r.console, c.expected());
}

INSTANTIATE_TEST_SUITE_P(Guests, BignumGuest,
                         ::testing::Values(BignumCase{"bignum_fact", expected_fact},
                                           BignumCase{"bignum_fib", expected_fib},
                                           BignumCase{"bignum_pow", expected_pow}),
                         [](const auto& info) { return std::string(info.param.guest); });

TEST(BignumExpectations, SpotValuesFromGmpAreRight) {
  // Guard the generator itself with values known by hand.
  mpz_t v;
  mpz_init(v);
  mpz_fac_ui(v, 20);
  EXPECT_EQ(hex_line("fact", 20, v), "fact(20) = 0x21c3677c82b40000\n");  // 2432902008176640000
  mpz_fib_ui(v, 93);
  EXPECT_EQ(hex_line("fib", 93, v), "fib(93) = 0xa94fad42221f2702\n");  // 12200160415121876738
  mpz_clear(v);
}

}  // namespace
}  // namespace lockstep::guests_test
