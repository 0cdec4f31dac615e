// Bignum guests against GMP.  The numbers each guest prints are recomputed
// here with GMP (mpz_fac_ui, mpz_fib_ui, mpz_ui_pow_ui).  Two runs per guest:
//   - NAME_soft.elf (software model of the bignum unit) under qemu-riscv32,
//     which checks the guest algorithms and output format;
//   - NAME.elf (custom-0 bignum instructions) on the reference model through
//     `lockstep ref`, skipped until that command exists.
#include <gmp.h>
#include <gtest/gtest.h>

#include <string>

#include "run_process.h"

namespace lockstep::guests_test {
namespace {

/// "<name>(<k>) = 0x<hex>\n" exactly as guests/bignum/bn.c prints it.
std::string hex_line(const std::string& name, unsigned long k, const mpz_t v) {
  char* s = mpz_get_str(nullptr, 16, v);
  std::string line = name + "(" + std::to_string(k) + ") = 0x" + s + "\n";
  void (*freefunc)(void*, size_t) = nullptr;
  mp_get_memory_functions(nullptr, nullptr, &freefunc);
  freefunc(s, std::char_traits<char>::length(s) + 1);
  return line;
}

std::string expected_fact() {
  const unsigned long cps[] = {0, 1, 2, 5, 10, 13, 20, 21, 34, 35, 50, 100, 170, 250, 500, 1000};
  std::string want;
  mpz_t f;
  mpz_init(f);
  for (unsigned long k : cps) {
    mpz_fac_ui(f, k);
    want += hex_line("fact", k, f);
    want += "bits(" + std::to_string(k) + ") = " + std::to_string(mpz_sizeinbase(f, 2)) + "\n";
  }
  mpz_clear(f);
  return want + "bignum_fact: ok\n";
}

std::string expected_fib() {
  const unsigned long cps[] = {0, 1, 2, 10, 47, 48, 93, 94, 100, 500, 1000, 2000, 2500, 5000};
  std::string want;
  mpz_t f;
  mpz_init(f);
  for (unsigned long k : cps) {
    mpz_fib_ui(f, k);
    want += hex_line("fib", k, f);
  }
  mpz_clear(f);
  return want + "identity(2500) = ok\n";
}

std::string expected_pow() {
  std::string want;
  mpz_t v, w;
  mpz_init(v);
  mpz_init(w);
  for (unsigned long e : {0ul, 1ul, 20ul, 21ul, 40ul, 41ul, 100ul, 1000ul, 5000ul}) {
    mpz_ui_pow_ui(v, 3, e);
    want += hex_line("pow3", e, v);
  }
  mpz_ui_pow_ui(v, 10, 1000);
  want += hex_line("pow10", 1000, v);
  mpz_ui_pow_ui(v, 0xFFFFFFFFul, 300);
  want += hex_line("powffffffff", 300, v);
  mpz_ui_pow_ui(v, 0x100000001ul, 500);
  want += hex_line("pow100000001", 500, v);
  mpz_ui_pow_ui(v, 2, 4096);
  mpz_ui_pow_ui(w, 3, 2000);
  mpz_sub(v, v, w);
  want += hex_line("diff", 4096, v);
  mpz_clear(v);
  mpz_clear(w);
  return want + "bignum_pow: ok\n";
}

struct BignumCase {
  const char* guest;
  std::string (*expected)();
};

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
