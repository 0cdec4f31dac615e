/* zba: the Zba address-generation instructions sh1add, sh2add, sh3add.
 *
 * Part 1 issues each instruction by inline asm over edge-case operand pairs
 * and prints "a b | sh1add sh2add sh3add" (hex; rd = rs2 + (rs1 << k) mod
 * 2^32).  Part 2 indexes arrays of 16-, 32- and 64-bit elements with
 * compiled code (gcc emits shNadd for it at -O2 with -march=rv32im_zba) and
 * prints the sums, computable on the host as closed forms.
 */
#include "rt.h"

#define SH(k)                                                                   \
  static uint32_t sh##k(uint32_t a, uint32_t b) {                               \
    uint32_t r;                                                                 \
    __asm__ volatile("sh" #k "add %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));     \
    return r;                                                                   \
  }
SH(1)
SH(2)
SH(3)

static const uint32_t operands[] = {0x00000000u, 0x00000001u, 0x7FFFFFFFu, 0x80000000u,
                                    0xFFFFFFFFu, 0x40000000u, 0x20000001u, 0x12345678u};

#define N 100
static uint16_t h[N];
static uint32_t w[N];
static uint64_t d[N];

/* Sums elements at a stride through an index array, so the element address
 * is base + (idx << log2 size): one shNadd each. */
static uint32_t __attribute__((noinline)) gather(const volatile int *idx, int n) {
  uint32_t s = 0;
  for (int i = 0; i < n; i++) {
    int k = idx[i];
    s += h[k] + w[k] + (uint32_t)d[k] + (uint32_t)(d[k] >> 32);
  }
  return s;
}

int main(void) {
  const unsigned n = sizeof operands / sizeof operands[0];
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++) {
      uint32_t a = operands[i], b = operands[j];
      print_hex32(a);
      print_char(' ');
      print_hex32(b);
      print_str(" | ");
      print_hex32(sh1(a, b));
      print_char(' ');
      print_hex32(sh2(a, b));
      print_char(' ');
      print_hex32(sh3(a, b));
      print_char('\n');
    }
  for (int i = 0; i < N; i++) {
    h[i] = (uint16_t)(3 * i);
    w[i] = (uint32_t)(5 * i);
    d[i] = ((uint64_t)i << 32) | (uint32_t)(7 * i);
  }
  static volatile int idx[N];
  for (int i = 0; i < N; i++) idx[i] = (i * 37) % N; /* a permutation of 0..99 */
  print_str("gather sum = ");
  print_udec(gather(idx, N));
  print_char('\n');
  return 0;
}
