/* muldiv: every M-extension instruction over a table of edge-case operands.
 *
 * For each ordered pair (a, b) of the 12 operands below the guest prints one
 * line: "a b | mul mulh mulhsu mulhu | div divu rem remu", all as 8-digit hex.
 * The operands include 0, +-1, INT_MIN and INT_MAX, so the line set covers
 * the division-by-zero and overflow rows of isa.md section 4.3.  Each
 * instruction is issued by inline asm so the compiler cannot fold it.
 * tests/guests derives the same lines on the host from the ISA definitions.
 */
#include "insn.h"
#include "rt.h"

RT_RTYPE(mul)
RT_RTYPE(mulh)
RT_RTYPE(mulhsu)
RT_RTYPE(mulhu)
RT_RTYPE(div)
RT_RTYPE(divu)
RT_RTYPE(rem)
RT_RTYPE(remu)

static const uint32_t operands[] = {
    0x00000000u, 0x00000001u, 0x00000002u, 0x00000007u, 0xFFFFFFFFu, 0xFFFFFFFEu,
    0xFFFFFFF9u, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0x0001F00Du, 0xDEADBEEFu,
};

int main(void) {
  const unsigned n = sizeof operands / sizeof operands[0];
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++) {
      uint32_t a = operands[i], b = operands[j];
      uint32_t r[8] = {op_mul(a, b), op_mulh(a, b), op_mulhsu(a, b), op_mulhu(a, b),
                       op_div(a, b), op_divu(a, b), op_rem(a, b),    op_remu(a, b)};
      print_hex32(a);
      print_char(' ');
      print_hex32(b);
      for (int k = 0; k < 8; k++) {
        print_str(k == 0 || k == 4 ? " | " : " ");
        print_hex32(r[k]);
      }
      print_char('\n');
    }
  print_str("muldiv: ");
  print_udec(n * n);
  print_str(" pairs\n");
  return 0;
}
