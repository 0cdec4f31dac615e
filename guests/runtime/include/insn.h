/* insn.h: one-instruction wrappers for directed guests.
 *
 * RT_RTYPE(name) defines `static uint32_t op_<name>(uint32_t a, uint32_t b)`,
 * which issues the R-type instruction `name rd, a, b` by inline asm (volatile:
 * the compiler can neither fold nor drop it) and returns rd. Any mnemonic GNU as
 * accepts for -march=rv32im_zba works: add, mulhsu, sh2add, sra, ...
 */
#ifndef LOCKSTEP_GUEST_INSN_H
#define LOCKSTEP_GUEST_INSN_H

#include <stdint.h>

#define RT_RTYPE(name)                                                 \
  static uint32_t op_##name(uint32_t a, uint32_t b) {                  \
    uint32_t r;                                                        \
    __asm__ volatile(#name " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b)); \
    return r;                                                          \
  }

#endif
