/* bignum_fact: factorials up to 1000! (8,530 bits) through the bignum unit.
 *
 * k! is built by k successive bn_mul_1 (bn.mac / bn.accrd) steps.  At the
 * checkpoints below the guest prints "fact(k) = 0x<hex>" and "bits(k) = <n>".
 * As a check that also exercises bn.subb and bn.addc, for every tenth k and
 * every checkpoint it verifies (k+1)! - k! = k * k! and k! + k * k! = (k+1)!.  Last line: "bignum_fact: ok"
 * (exit 0) or "bignum_fact: FAILED" (exit 1).  tests/guests compares the
 * numbers with GMP's mpz_fac_ui.
 */
#include "bn.h"
#include "rt.h"

#define LIMBS 300 /* 1000! needs 267 */

static uint32_t f[LIMBS], next[LIMBS], kf[LIMBS], t[LIMBS];

static const int checkpoints[] = {0, 1, 2, 5, 10, 13, 20, 21, 34, 35, 50, 100, 170, 250, 500, 1000};

int main(void) {
  int ok = 1, n = 1, next_cp = 0;
  f[0] = 1; /* 0! */
  for (int k = 0; k <= 1000; k++) {
    if (k == checkpoints[next_cp]) {
      bn_print("fact", (uint32_t)k, f, n);
      bn_print_u32("bits", (uint32_t)k, bn_bits(f, n));
      next_cp++;
    }
    if (k == 1000) break;
    /* next = (k+1)! with one extra limb of room */
    next[n] = bn_mul_1(next, f, n, (uint32_t)(k + 1));
    int m = next[n] ? n + 1 : n;
    /* check: next - f == k * f, and f + k * f == next */
    for (int i = n; i < m; i++) f[i] = 0;
    if (k % 10 != 0 && k + 1 != checkpoints[next_cp]) {
      for (int i = 0; i < m; i++) f[i] = next[i];
      n = m;
      continue;
    }
    kf[n] = bn_mul_1(kf, f, n, (uint32_t)k);
    for (int i = n + 1; i <= m; i++) kf[i] = 0;
    if (bn_sub_n(t, next, f, m) != 0 || bn_cmp_n(t, kf, m) != 0) ok = 0;
    if (bn_add_n(t, f, kf, m) != 0 || bn_cmp_n(t, next, m) != 0) ok = 0;
    for (int i = 0; i < m; i++) f[i] = next[i];
    n = m;
  }
  print_str(ok ? "bignum_fact: ok\n" : "bignum_fact: FAILED\n");
  return ok ? 0 : 1;
}
