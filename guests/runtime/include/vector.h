/* The vector unit (docs/spec/vector.md) as inline functions and macros.
 *
 * Every op is one custom-1 instruction, `.insn r CUSTOM_1, f3, f7, rd, rs1,
 * rs2` (vector.md 4.0).  Operand words: rs1 = A | B << 16, rs2 = C | N << 16
 * (VLD: rs1 = a RAM address, rs2 = dst | n << 16).  Ops whose f7 carries a
 * parameter (VMAT's K, VEXP's G, VEW MULS's GS, VRED's SH) are macros, since
 * f7 must be an assemble-time constant; the others are inline functions.
 * All asm statements are volatile with a "memory" clobber: the unit's state
 * (VR, ACT, caches) is invisible to the compiler and VLD reads RAM.
 *
 * Vector memories are initialised from non-allocated sections
 * (vector.md §2.1), e.g. in a .S file:
 *     .section .lockstep.wmem, "", @progbits
 *     .incbin "wmem.bin"
 * qemu-riscv32 cannot execute these instructions.
 */
#ifndef LOCKSTEP_GUEST_VECTOR_H
#define LOCKSTEP_GUEST_VECTOR_H

#include <stdint.h>

/* Packs two 16-bit operand fields: lo | hi << 16. */
static inline uint32_t vx_pack(uint32_t lo, uint32_t hi) { return (lo & 0xFFFFu) | (hi << 16); }

#define VX_INSN_(f3, f7, rs1v, rs2v)                                                 \
  __asm__ volatile(".insn r CUSTOM_1, " #f3 ", %2, x0, %0, %1"                      \
                   :                                                                 \
                   : "r"((uint32_t)(rs1v)), "r"((uint32_t)(rs2v)), "i"(f7)         \
                   : "memory")

/* ---- VMAT (f3 0): int8 activations x int4 row-chunks (4.1) ---- */
/* VR[dst + r] = row r of chunks c0 + r*K .. times ACT blocks b0 .. b0+K-1, r < rows. */
#define VX_VMAT(K, dst, b0, c0, rows) VX_INSN_(0, (K), vx_pack((dst), (b0)), vx_pack((c0), (rows)))
/* Index of the largest row result (ties: lowest index); no register word written. */
#define VX_VMAT_ARGMAX(K, b0, c0, rows)                                               \
  __extension__({                                                                     \
    uint32_t vx_r_;                                                                   \
    __asm__ volatile(".insn r CUSTOM_1, 0, %3, %0, %1, %2"                           \
                     : "=r"(vx_r_)                                                    \
                     : "r"(vx_pack(0, (b0))), "r"(vx_pack((c0), (rows))), "i"(8 | (K)) \
                     : "memory");                                                     \
    vx_r_;                                                                            \
  })

/* ---- VMATR (f3 1): attention over cache rows (4.2) ---- */
/* K mode: scores of the query in ACT block src against rows r0 .. r0+T-1, head h at dst + 64h. */
static inline void vx_vmatr_k(uint32_t dst, uint32_t src, uint32_t r0, uint32_t T) {
  VX_INSN_(1, 0, vx_pack(dst, src), vx_pack(r0, T));
}
/* V mode: weighted sums of V rows with the probabilities at src + 64h + t into dst .. dst+63. */
static inline void vx_vmatr_v(uint32_t dst, uint32_t src, uint32_t r0, uint32_t T) {
  VX_INSN_(1, 1, vx_pack(dst, src), vx_pack(r0, T));
}

/* ---- VQ (f3 2): quantise a register span (4.3) ---- */
/* n words at src into ACT blocks b0 .. (groups of 64, each with its own shift). */
static inline void vx_vq_act(uint32_t b0, uint32_t src, uint32_t n) {
  VX_INSN_(2, 0, vx_pack(b0, src), vx_pack(0, n));
}
/* 32 words at src into K cache row `row` (VQ_V: V cache). */
static inline void vx_vq_k(uint32_t row, uint32_t src) { VX_INSN_(2, 1, vx_pack(row, src), vx_pack(0, 32)); }
static inline void vx_vq_v(uint32_t row, uint32_t src) { VX_INSN_(2, 2, vx_pack(row, src), vx_pack(0, 32)); }

/* ---- VEXP (f3 3): softmax numerators of G groups of T scores (4.4) ---- */
#define VX_VEXP(G, dst, src, sums, T) VX_INSN_(3, (G) - 1, vx_pack((dst), (src)), vx_pack((sums), (T)))

/* ---- VEW (f3 4): element-wise (4.5) ---- */
static inline void vx_vew_add(uint32_t dst, uint32_t a, uint32_t b, uint32_t n) {
  VX_INSN_(4, 0, vx_pack(dst, a), vx_pack(b, n));
}
static inline void vx_vew_mul(uint32_t dst, uint32_t a, uint32_t b, uint32_t n) {
  VX_INSN_(4, 1, vx_pack(dst, a), vx_pack(b, n));
}
/* One scalar VR[b + (i >> GS)] per group of 2^GS elements (GS 0..6). */
#define VX_VEW_MULS(GS, dst, a, b, n) VX_INSN_(4, 2 | ((GS) << 2), vx_pack((dst), (a)), vx_pack((b), (n)))
/* RoPE rotation of n (even) words at a by position pos (0..63). */
static inline void vx_vew_rot(uint32_t dst, uint32_t a, uint32_t pos, uint32_t n) {
  VX_INSN_(4, 3, vx_pack(dst, a), vx_pack(pos, n));
}

/* ---- VFN (f3 5): table functions (4.6) ---- */
static inline void vx_vfn_rsqrt(uint32_t dst, uint32_t src, uint32_t n) {
  VX_INSN_(5, 0, vx_pack(dst, src), vx_pack(0, n));
}
static inline void vx_vfn_recip(uint32_t dst, uint32_t src, uint32_t n) {
  VX_INSN_(5, 1, vx_pack(dst, src), vx_pack(0, n));
}
static inline void vx_vfn_silu(uint32_t dst, uint32_t src, uint32_t n) {
  VX_INSN_(5, 2, vx_pack(dst, src), vx_pack(0, n));
}

/* ---- VRED (f3 6): reductions into VR[dst] (4.7) ---- */
#define VX_VRED_SUMSQ(SH, dst, src, n) VX_INSN_(6, 0 | ((SH) << 2), vx_pack((dst), (src)), vx_pack(0, (n)))
#define VX_VRED_SUM(SH, dst, src, n) VX_INSN_(6, 1 | ((SH) << 2), vx_pack((dst), (src)), vx_pack(0, (n)))
static inline void vx_vred_max(uint32_t dst, uint32_t src, uint32_t n) {
  VX_INSN_(6, 2, vx_pack(dst, src), vx_pack(0, n));
}

/* ---- VLD (f3 7): VR[dst + i] = sext8(b_i) * M from the RAM record at addr (4.8) ---- */
/* The record: int32 M, then n int8 bytes; addr must be 4-byte aligned. */
static inline void vx_vld(const void *record, uint32_t dst, uint32_t n) {
  VX_INSN_(7, 0, (uint32_t)(uintptr_t)record, vx_pack(dst, n));
}

#endif
