// GMP computations of what the bignum guests print (see bignum_expected.h).
#include "bignum_expected.h"

namespace lockstep::guests_test {

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

}  // namespace lockstep::guests_test
