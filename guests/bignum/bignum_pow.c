/* bignum_pow: powers with thousands of bits by square-and-multiply.
 *
 * Squarings use the product-scanning bn_mul (bn.mac / bn.accrd); multiplying
 * by a one-limb base uses bn_mul_1.  Prints "<name>(e) = 0x<hex>" for
 *   pow3(e)       3^e for e in {0, 1, 20, 21, 40, 41, 100, 1000, 5000}
 *   pow10(1000)   10^1000
 *   powffffffff(300)  (2^32 - 1)^300    (every carry chain saturated)
 *   pow100000001(500) (2^32 + 1)^500    (a two-limb base: full bn_mul)
 *   diff(4096)    2^4096 - 3^2000        (bn.subb)
 * and checks 3^5000 = (3^2500)^2 and (2^32+1)^500 = (2^32+1)^250 squared.
 * Exit 0 when both checks held.  tests/guests compares with GMP.
 */
#include "bn.h"
#include "rt.h"

#define LIMBS 1100

static uint32_t r[LIMBS], sq[2 * LIMBS], s2[2 * LIMBS], tmp[LIMBS];

/* r = base^e (base has bn limbs); returns the limb count of r. */
static int bn_pow(uint32_t *out, const uint32_t *base, int bn, uint32_t e) {
  int n = 1;
  out[0] = 1;
  int top = 31;
  while (top >= 0 && !((e >> top) & 1)) top--;
  for (int bit = top; bit >= 0; bit--) {
    bn_mul(sq, out, n, out, n);
    n = bn_norm(sq, 2 * n);
    for (int i = 0; i < n; i++) out[i] = sq[i];
    if ((e >> bit) & 1) {
      if (bn == 1) {
        uint32_t hi = bn_mul_1(out, out, n, base[0]);
        if (hi) out[n++] = hi;
      } else {
        bn_mul(sq, out, n, base, bn);
        n = bn_norm(sq, n + bn);
        for (int i = 0; i < n; i++) out[i] = sq[i];
      }
    }
  }
  return n;
}

static int check_square(const uint32_t *big, int bign, const uint32_t *base, int bn, uint32_t half) {
  int hn = bn_pow(tmp, base, bn, half);
  bn_mul(s2, tmp, hn, tmp, hn);
  int n2 = bn_norm(s2, 2 * hn);
  return n2 == bign && bn_cmp_n(s2, big, n2) == 0;
}

int main(void) {
  static const uint32_t three[1] = {3}, ten[1] = {10}, ones[1] = {0xFFFFFFFFu}, twoplus[2] = {1, 1};
  static const uint32_t exps[] = {0, 1, 20, 21, 40, 41, 100, 1000, 5000};
  int ok = 1, n;
  for (unsigned i = 0; i < sizeof exps / sizeof exps[0]; i++) {
    n = bn_pow(r, three, 1, exps[i]);
    bn_print("pow3", exps[i], r, n);
  }
  ok &= check_square(r, n, three, 1, 2500);
  n = bn_pow(r, ten, 1, 1000);
  bn_print("pow10", 1000, r, n);
  n = bn_pow(r, ones, 1, 300);
  bn_print("powffffffff", 300, r, n);
  n = bn_pow(r, twoplus, 2, 500);
  bn_print("pow100000001", 500, r, n);
  ok &= check_square(r, n, twoplus, 2, 250);
  /* 2^4096 - 3^2000: 129 limbs */
  n = bn_pow(r, three, 1, 2000);
  for (int i = 0; i < 129; i++) tmp[i] = 0;
  tmp[128] = 1;
  for (int i = n; i < 129; i++) r[i] = 0;
  uint32_t borrow = bn_sub_n(r, tmp, r, 129);
  if (borrow) ok = 0;
  bn_print("diff", 4096, r, 129);
  print_str(ok ? "bignum_pow: ok\n" : "bignum_pow: FAILED\n");
  return ok ? 0 : 1;
}
