// GMP computations of what the bignum guests print (guests/bignum/*.c).
#pragma once

#include <gmp.h>

#include <string>

namespace lockstep::guests_test {

/// "<name>(<k>) = 0x<hex>\n" exactly as guests/bignum/bn.c prints it.
std::string hex_line(const std::string& name, unsigned long k, const mpz_t v);
/// Whole expected stdout of bignum_fact, bignum_fib and bignum_pow.
std::string expected_fact();
std::string expected_fib();
std::string expected_pow();

}  // namespace lockstep::guests_test
