/* alusweep: ADD, SUB, AND, OR and XOR over every pair of nibble values in every position.
 *
 * For each pair (a, b) of nibble values 0..15 the guest computes ADD, SUB,
 * AND, OR and XOR of x = a * 0x11111111 and y = b * 0x11111111 (every nibble
 * of x meets every nibble of y with every value pair, and carries and
 * borrows run through whole words). It prints the sum of each instruction's results over all pairs (mod 2^32)
 * as 8-digit hex, one line per instruction; tests/guests derives the same
 * lines on the host from the ISA definitions. A chip that computes by nibble
 * lookup tables exercises each table entry here; the mutation score's corpus
 * includes it.
 */
#include "insn.h"
#include "rt.h"

RT_RTYPE(add)
RT_RTYPE(sub)
RT_RTYPE(and)
RT_RTYPE(or)
RT_RTYPE(xor)

static void line(const char *name, uint32_t v) {
  print_str(name);
  print_char(' ');
  print_hex32(v);
  print_char('\n');
}

int main(void) {
  uint32_t s[5] = {0};
  for (uint32_t a = 0; a < 16; a++)
    for (uint32_t b = 0; b < 16; b++) {
      const uint32_t x = a * 0x11111111u, y = b * 0x11111111u;
      s[0] += op_add(x, y);
      s[1] += op_sub(x, y);
      s[2] += op_and(x, y);
      s[3] += op_or(x, y);
      s[4] += op_xor(x, y);
    }
  static const char *const names[5] = {"add", "sub", "and", "or", "xor"};
  for (int i = 0; i < 5; i++) line(names[i], s[i]);
  return 0;
}
