/* zbasweep: SH1ADD, SH2ADD and SH3ADD over every ordered pair of neighbouring nibbles.
 *
 * For each pair (a, b) of nibble values 0..15 the guest shifts
 * x = a * 0x10101010 + b * 0x01010101 (a in the odd nibbles, b in the even
 * ones) with each Zba instruction and adds y = (a << 4 | b) * 0x01000193, so
 * that every nibble of the shifted operand meets every value of its lower
 * neighbour: 256 pairs, 768 instructions. It prints the three sums of the
 * results over all pairs (mod 2^32) as 8-digit hex, one line per
 * instruction; tests/guests derives the same lines on the host from the ISA
 * definitions. A chip that shifts by nibble lookup tables exercises each
 * table entry here; the mutation score's corpus includes it.
 */
#include "insn.h"
#include "rt.h"

RT_RTYPE(sh1add)
RT_RTYPE(sh2add)
RT_RTYPE(sh3add)

int main(void) {
  uint32_t s1 = 0, s2 = 0, s3 = 0;
  for (uint32_t a = 0; a < 16; a++)
    for (uint32_t b = 0; b < 16; b++) {
      const uint32_t x = a * 0x10101010u + b * 0x01010101u, y = ((a << 4) | b) * 0x01000193u;
      s1 += op_sh1add(x, y);
      s2 += op_sh2add(x, y);
      s3 += op_sh3add(x, y);
    }
  print_str("sh1add ");
  print_hex32(s1);
  print_str("\nsh2add ");
  print_hex32(s2);
  print_str("\nsh3add ");
  print_hex32(s3);
  print_char('\n');
  return 0;
}
