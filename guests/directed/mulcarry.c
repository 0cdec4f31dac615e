/* mulcarry: MUL, MULH, MULHSU and MULHU of operand pairs with long carry chains.
 *
 * The 49 pairs of mulcarry_pairs.h each make a chain of carries across the 64-bit product's
 * nibble columns that no other pair makes (a generate followed by propagates; how they were
 * found is in that header). The nibble sweep (mulsweep) drives every entry of a nibble-by-
 * nibble multiplier table but few such chains, and random operands reach the rarer ones only
 * after thousands of products. The guest prints the four sums of the results over all pairs
 * (mod 2^32) as 8-digit hex, one line per instruction; tests/guests derives the same lines on
 * the host from the ISA definitions. The mutation score's corpus includes it.
 */
#include "insn.h"
#include "mulcarry_pairs.h"
#include "rt.h"

RT_RTYPE(mul)
RT_RTYPE(mulh)
RT_RTYPE(mulhsu)
RT_RTYPE(mulhu)

static const uint32_t pairs[][2] = {MULCARRY_PAIRS};

int main(void) {
  uint32_t s_mul = 0, s_mulh = 0, s_mulhsu = 0, s_mulhu = 0;
  for (uint32_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    const uint32_t x = pairs[i][0], y = pairs[i][1];
    s_mul += op_mul(x, y);
    s_mulh += op_mulh(x, y);
    s_mulhsu += op_mulhsu(x, y);
    s_mulhu += op_mulhu(x, y);
  }
  print_str("mul ");
  print_hex32(s_mul);
  print_str("\nmulh ");
  print_hex32(s_mulh);
  print_str("\nmulhsu ");
  print_hex32(s_mulhsu);
  print_str("\nmulhu ");
  print_hex32(s_mulhu);
  print_char('\n');
  return 0;
}
