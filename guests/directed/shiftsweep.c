/* shiftsweep: SLL, SRL and SRA by every amount of every word whose nibbles are all equal.
 *
 * For each nibble value v (1..15; 0 is the fill of every shift) and shift
 * amount s (0..31) the guest shifts x = v * 0x11111111 with SLL, SRL and SRA
 * (every nibble window of every result byte sees every value, at every
 * amount): 1,440 shifts. It prints
 * the sum of each instruction's results (mod 2^32) as 8-digit hex, one line
 * per instruction; tests/guests derives the same lines on the host from the
 * ISA definitions. A chip that shifts through nibble windows exercises each
 * window entry here; the mutation score's corpus includes it.
 */
#include "insn.h"
#include "rt.h"

RT_RTYPE(sll)
RT_RTYPE(srl)
RT_RTYPE(sra)

int main(void) {
  uint32_t s_sll = 0, s_srl = 0, s_sra = 0;
  for (uint32_t v = 1; v < 16; v++)
    for (uint32_t s = 0; s < 32; s++) {
      const uint32_t x = v * 0x11111111u;
      s_sll += op_sll(x, s);
      s_srl += op_srl(x, s);
      s_sra += op_sra(x, s);
    }
  print_str("sll ");
  print_hex32(s_sll);
  print_str("\nsrl ");
  print_hex32(s_srl);
  print_str("\nsra ");
  print_hex32(s_sra);
  print_char('\n');
  return 0;
}
