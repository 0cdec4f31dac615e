/* vector_ops: every vector-unit instruction (docs/spec/vector.md) once or more.
 *
 * The unit's registers cannot be read back by scalar code, so this guest is
 * checked through its trace (reference model against the chip) and through
 * one observable result: VMAT in argmax mode.  Steps:
 *   VLD     VR[i] = (i - 32) * 65536 from a RAM record (M = 65536)
 *   VEW     ADD, MUL, MULS (GS 6), ROT;  VRED SUM, SUMSQ, MAX;  VFN RSQRT,
 *           RECIP, SILU
 *   VQ      VR[0..63] -> ACT block 0: amax 2^21 gives shift 15, ACT[i] = 2(i-32)
 *   VMAT    4 rows (chunks of vector_data.S: all +1, all -1, +1 on the upper
 *           half, all 0; WSCALE 1): accumulators -64, 64, 992, 0 -> argmax 2,
 *           once in write mode and once in argmax mode
 *   VQ K/V, VQ ACT (query), VMATR K, VEXP (G 8), VMATR V on one position.
 * Prints "vector_ops: argmax = <r>" and exits 0 when r = 2.
 */
#include "rt.h"
#include "vector.h"

/* VLD record: int32 multiplier, then 64 int8 values (vector.md 4.8). */
static struct {
  int32_t m;
  int8_t b[64];
} __attribute__((aligned(4))) record;

int main(void) {
  record.m = 65536;
  for (int i = 0; i < 64; i++) record.b[i] = (int8_t)(i - 32);

  vx_vld(&record, 0, 64);           /* VR[0..63]    = (i-32) * 2^16 */
  vx_vew_add(64, 0, 0, 64);         /* VR[64..127]  = 2 (i-32) * 2^16 */
  vx_vew_mul(128, 0, 0, 64);        /* VR[128..191] = (i-32)^2 * 2^16 */
  VX_VRED_SUM(0, 480, 0, 64);       /* VR[480] = -32 * 2^16 */
  VX_VRED_SUMSQ(6, 481, 0, 64);     /* VR[481] = 21856 * 2^10 */
  vx_vred_max(482, 0, 64);          /* VR[482] = 31 * 2^16 */
  VX_VEW_MULS(6, 192, 128, 482, 64);
  vx_vew_rot(256, 64, 5, 64);
  vx_vfn_rsqrt(320, 128, 64);
  vx_vfn_recip(384, 64, 64);
  vx_vfn_silu(448, 0, 32);

  vx_vq_act(0, 0, 64); /* ACT block 0 = 2 (i-32), ASH[0] = 15 */
  VX_VMAT(1, 500, 0, 0, 4);
  uint32_t best = VX_VMAT_ARGMAX(1, 0, 0, 4);

  vx_vq_k(0, 0);          /* K row 0 from VR[0..31] */
  vx_vq_v(0, 32);         /* V row 0 from VR[32..63] */
  vx_vq_act(1, 64, 64);   /* query into ACT block 1 */
  vx_vmatr_k(512, 1, 0, 1);
  VX_VEXP(8, 512, 512, 488, 1);
  vx_vmatr_v(0, 512, 0, 1);

  print_str("vector_ops: argmax = ");
  print_udec(best);
  print_char('\n');
  return best == 2 ? 0 : 1;
}
