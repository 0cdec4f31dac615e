/* The bignum unit (docs/spec/bignum.md) as inline functions.
 *
 * Each function is one custom-0 instruction written with `.insn r CUSTOM_0,
 * f3, 0, rd, rs1, rs2` (bignum.md section 1).  The unit has hidden state (the
 * carry c and the 96-bit accumulator acc), so every asm statement is volatile:
 * gcc keeps them in program order and never drops one whose result is unused.
 * Nothing else in a guest may touch c or acc between related instructions,
 * which holds because only these functions use the unit.
 *
 * With BN_SOFT defined, the same functions are computed in plain C over a
 * software copy of (c, acc): such builds run under qemu-riscv32 (which cannot
 * execute custom instructions) and check the guest algorithms on their own.
 */
#ifndef LOCKSTEP_GUEST_BIGNUM_H
#define LOCKSTEP_GUEST_BIGNUM_H

#include <stdint.h>

#ifndef BN_SOFT

/* bn.addc: rd = a + b + c mod 2^32; c = carry out. */
static inline uint32_t bn_addc(uint32_t a, uint32_t b) {
  uint32_t r;
  __asm__ volatile(".insn r CUSTOM_0, 0, 0, %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
/* bn.subb: rd = a - b - c mod 2^32; c = borrow out. */
static inline uint32_t bn_subb(uint32_t a, uint32_t b) {
  uint32_t r;
  __asm__ volatile(".insn r CUSTOM_0, 1, 0, %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
/* bn.xchgc: returns the old c; c = a & 1. */
static inline uint32_t bn_xchgc(uint32_t a) {
  uint32_t r;
  __asm__ volatile(".insn r CUSTOM_0, 2, 0, %0, %1, x0" : "=r"(r) : "r"(a));
  return r;
}
/* bn.xchgc x0, x0: c = 0. */
static inline void bn_clrc(void) { __asm__ volatile(".insn r CUSTOM_0, 2, 0, x0, x0, x0"); }
/* bn.mac: acc = acc + a * b mod 2^96. */
static inline void bn_mac(uint32_t a, uint32_t b) {
  __asm__ volatile(".insn r CUSTOM_0, 3, 0, x0, %0, %1" : : "r"(a), "r"(b));
}
/* bn.accrd: returns acc mod 2^32; acc >>= 32. */
static inline uint32_t bn_accrd(void) {
  uint32_t r;
  __asm__ volatile(".insn r CUSTOM_0, 4, 0, %0, x0, x0" : "=r"(r));
  return r;
}
/* bn.accclr: acc = 0. */
static inline void bn_accclr(void) { __asm__ volatile(".insn r CUSTOM_0, 5, 0, x0, x0, x0"); }

#else /* BN_SOFT: a software model of the unit (for qemu runs) */

/* State of the software unit: carry and a 96-bit accumulator in three limbs. */
extern uint32_t bn_soft_c;
extern uint32_t bn_soft_acc[3];

static inline uint32_t bn_addc(uint32_t a, uint32_t b) {
  uint64_t s = (uint64_t)a + b + bn_soft_c;
  bn_soft_c = (uint32_t)(s >> 32);
  return (uint32_t)s;
}
static inline uint32_t bn_subb(uint32_t a, uint32_t b) {
  uint64_t d = (uint64_t)a - b - bn_soft_c;
  bn_soft_c = (uint32_t)(d >> 63);
  return (uint32_t)d;
}
static inline uint32_t bn_xchgc(uint32_t a) {
  uint32_t t = bn_soft_c;
  bn_soft_c = a & 1;
  return t;
}
static inline void bn_clrc(void) { bn_soft_c = 0; }
static inline void bn_mac(uint32_t a, uint32_t b) {
  uint64_t p = (uint64_t)a * b;
  uint64_t s0 = (uint64_t)bn_soft_acc[0] + (uint32_t)p;
  uint64_t s1 = (uint64_t)bn_soft_acc[1] + (uint32_t)(p >> 32) + (s0 >> 32);
  bn_soft_acc[0] = (uint32_t)s0;
  bn_soft_acc[1] = (uint32_t)s1;
  bn_soft_acc[2] += (uint32_t)(s1 >> 32);
}
static inline uint32_t bn_accrd(void) {
  uint32_t r = bn_soft_acc[0];
  bn_soft_acc[0] = bn_soft_acc[1];
  bn_soft_acc[1] = bn_soft_acc[2];
  bn_soft_acc[2] = 0;
  return r;
}
static inline void bn_accclr(void) { bn_soft_acc[0] = bn_soft_acc[1] = bn_soft_acc[2] = 0; }

#define BN_SOFT_STATE_DEFINE \
  uint32_t bn_soft_c;        \
  uint32_t bn_soft_acc[3];

#endif /* BN_SOFT */

#endif
