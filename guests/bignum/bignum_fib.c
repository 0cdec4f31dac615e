/* bignum_fib: Fibonacci numbers up to F(5000) (3,471 bits) with bn.addc chains.
 *
 * F(0) = 0, F(1) = 1, F(i+1) = F(i) + F(i-1).  At each checkpoint the guest
 * prints "fib(i) = 0x<hex>".  It then checks the doubling identity
 * F(2n) = F(n) * (2 F(n+1) - F(n)) at n = 2500 with bn_add_n, bn_sub_n
 * (bn.subb) and the product-scanning bn_mul (bn.mac / bn.accrd), and prints
 * "identity(2500) = ok" or "= FAILED".  Exit 0 when the identity held.
 * tests/guests compares the numbers with GMP's mpz_fib_ui.
 */
#include "bn.h"
#include "rt.h"

#define N_MAX 5000
#define LIMBS 120 /* F(5001) needs 109 */

static uint32_t buf[3][LIMBS];
static uint32_t fn[LIMBS], fn1[LIMBS], t[LIMBS], prod[2 * LIMBS];

static const int checkpoints[] = {0, 1, 2, 10, 47, 48, 93, 94, 100, 500, 1000, 2000, 2500, 5000};

int main(void) {
  uint32_t *a = buf[0], *b = buf[1], *c = buf[2]; /* a = F(i), b = F(i+1) */
  b[0] = 1;
  int n = 1, next_cp = 0, ok = 1;
  for (int i = 0; i <= N_MAX; i++) {
    if (i == checkpoints[next_cp]) {
      bn_print("fib", (uint32_t)i, a, n);
      next_cp++;
    }
    if (i == 2500) {
      for (int j = 0; j < LIMBS; j++) {
        fn[j] = a[j];
        fn1[j] = b[j];
      }
    }
    if (i == N_MAX) break;
    /* c = a + b; all three are kept zero above their length */
    uint32_t carry = bn_add_n(c, a, b, n);
    if (carry) c[n++] = carry;
    uint32_t *old = a;
    a = b;
    b = c;
    c = old;
  }
  /* a = F(5000).  t = 2 F(2501) - F(2500); prod = F(2500) * t. */
  int m = bn_norm(fn1, LIMBS) + 1;
  bn_add_n(t, fn1, fn1, m);
  bn_sub_n(t, t, fn, m);
  int tn = bn_norm(t, m), fnn = bn_norm(fn, LIMBS);
  bn_mul(prod, fn, fnn, t, tn);
  int pn = fnn + tn;
  int an = bn_norm(a, LIMBS);
  if (bn_norm(prod, pn) != an || bn_cmp_n(prod, a, an) != 0) ok = 0;
  print_str(ok ? "identity(2500) = ok\n" : "identity(2500) = FAILED\n");
  return ok ? 0 : 1;
}
