/* mulsweep: every entry of a nibble-by-nibble multiplier, in every nibble position.
 *
 * For each pair (a, b) of nibble values 0..15 the guest multiplies
 * x = a * 0x11111111 (a in all eight nibbles) by y = b * 0x11111111 with
 * MUL, MULH, MULHSU and MULHU, so that every nibble of x meets every nibble
 * of y with every value pair: 256 pairs, 1,024 products. It prints the four
 * sums of the results over all pairs (mod 2^32) as 8-digit hex, one line per
 * instruction; tests/guests derives the same lines on the host from the ISA
 * definitions. A chip that multiplies by lookup tables (docs/chip-design.md,
 * MUL) exercises each table entry here, which random operands reach only
 * after thousands of products; the mutation score's corpus includes it.
 */
#include "insn.h"
#include "rt.h"

RT_RTYPE(mul)
RT_RTYPE(mulh)
RT_RTYPE(mulhsu)
RT_RTYPE(mulhu)

int main(void) {
  uint32_t s_mul = 0, s_mulh = 0, s_mulhsu = 0, s_mulhu = 0;
  for (uint32_t a = 0; a < 16; a++)
    for (uint32_t b = 0; b < 16; b++) {
      const uint32_t x = a * 0x11111111u, y = b * 0x11111111u;
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
