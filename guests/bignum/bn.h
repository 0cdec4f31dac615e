/* Multi-precision helpers for the bignum guests, built on the bignum unit
 * (runtime/include/bignum.h, docs/spec/bignum.md).
 *
 * Numbers are little-endian arrays of 32-bit limbs with an explicit length;
 * a length-0 number is zero.  Results must not overlap inputs unless stated.
 */
#ifndef LOCKSTEP_GUEST_BN_H
#define LOCKSTEP_GUEST_BN_H

#include <stdint.h>

#include "bignum.h"

/* r = a + b over n limbs (bn.addc chain); returns the carry out.  r may alias a or b. */
uint32_t bn_add_n(uint32_t *r, const uint32_t *a, const uint32_t *b, int n);
/* r = a - b over n limbs (bn.subb chain); returns the borrow.  r may alias a or b. */
uint32_t bn_sub_n(uint32_t *r, const uint32_t *a, const uint32_t *b, int n);
/* r = a * k over n limbs (bn.mac / bn.accrd); returns the high limb.  r may alias a. */
uint32_t bn_mul_1(uint32_t *r, const uint32_t *a, int n, uint32_t k);
/* r[0 .. n+m) = a[0 .. n) * b[0 .. m), product scanning (bignum.md 3). n, m >= 1. */
void bn_mul(uint32_t *r, const uint32_t *a, int n, const uint32_t *b, int m);
/* Length without leading zero limbs. */
int bn_norm(const uint32_t *a, int n);
/* Compares a and b (n limbs each) with bn.subb: -1, 0 or 1. */
int bn_cmp_n(const uint32_t *a, const uint32_t *b, int n);
/* Prints "<name>(<k>) = 0x<lowercase hex without leading zeros>\n" ("0x0" for zero). */
void bn_print(const char *name, uint32_t k, const uint32_t *a, int n);
/* Prints "<name>(<k>) = <decimal v>\n". */
void bn_print_u32(const char *name, uint32_t k, uint32_t v);
/* Number of significant bits of a. */
uint32_t bn_bits(const uint32_t *a, int n);

#endif
