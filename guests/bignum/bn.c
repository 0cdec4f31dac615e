/* Multi-precision helpers over the bignum unit (see bn.h). */
#include "bn.h"

#include "rt.h"

#ifdef BN_SOFT
BN_SOFT_STATE_DEFINE
#endif

uint32_t bn_add_n(uint32_t *r, const uint32_t *a, const uint32_t *b, int n) {
  bn_clrc();
  for (int i = 0; i < n; i++) r[i] = bn_addc(a[i], b[i]);
  return bn_xchgc(0); /* read the carry and clear it */
}

uint32_t bn_sub_n(uint32_t *r, const uint32_t *a, const uint32_t *b, int n) {
  bn_clrc();
  for (int i = 0; i < n; i++) r[i] = bn_subb(a[i], b[i]);
  return bn_xchgc(0);
}

uint32_t bn_mul_1(uint32_t *r, const uint32_t *a, int n, uint32_t k) {
  bn_accclr();
  for (int i = 0; i < n; i++) {
    bn_mac(a[i], k); /* acc = previous high part + a[i] * k < 2^64 */
    r[i] = bn_accrd();
  }
  return bn_accrd();
}

void bn_mul(uint32_t *r, const uint32_t *a, int n, const uint32_t *b, int m) {
  bn_accclr();
  for (int k = 0; k <= n + m - 2; k++) {
    int lo = k - m + 1 > 0 ? k - m + 1 : 0;
    int hi = k < n - 1 ? k : n - 1;
    const uint32_t *bp = b + (k - lo);
    for (int i = lo; i <= hi; i++) bn_mac(a[i], *bp--);
    r[k] = bn_accrd();
  }
  r[n + m - 1] = bn_accrd();
}

int bn_norm(const uint32_t *a, int n) {
  while (n > 0 && a[n - 1] == 0) n--;
  return n;
}

int bn_cmp_n(const uint32_t *a, const uint32_t *b, int n) {
  uint32_t any = 0;
  bn_clrc();
  for (int i = 0; i < n; i++) any |= bn_subb(a[i], b[i]);
  uint32_t borrow = bn_xchgc(0);
  if (borrow) return -1;
  return any != 0;
}

static void bn_print_name(const char *name, uint32_t k) {
  print_str(name);
  print_char('(');
  print_udec(k);
  print_str(") = ");
}

void bn_print_u32(const char *name, uint32_t k, uint32_t v) {
  bn_print_name(name, k);
  print_udec(v);
  print_char('\n');
}

void bn_print(const char *name, uint32_t k, const uint32_t *a, int n) {
  n = bn_norm(a, n);
  bn_print_name(name, k);
  print_str("0x");
  if (n == 0) {
    print_char('0');
  } else {
    print_hex(a[n - 1]);
    for (int i = n - 2; i >= 0; i--) print_hex32(a[i]);
  }
  print_char('\n');
}

uint32_t bn_bits(const uint32_t *a, int n) {
  n = bn_norm(a, n);
  if (n == 0) return 0;
  uint32_t top = a[n - 1], bits = 32u * (uint32_t)(n - 1);
  while (top) {
    bits++;
    top >>= 1;
  }
  return bits;
}
