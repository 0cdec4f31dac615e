/* mulcarry_pairs.h: operand pairs whose unsigned 32 x 32-bit products carry across many
 * nibbles (the guest mulcarry and its host check in tests/guests/directed_test.cpp).
 *
 * Chosen for coverage, not for meaning: written as the 64-bit product's nibble columns
 * (column p: the sum over nibbles n + m = p of the low nibble of x_n * y_m, and over
 * n + m = p - 1 of the high nibble, reduced twice to a digit plus carry), a column "generates"
 * when its value is at least 16 and "propagates" when it is 15. Each pair makes some chain,
 * a generate at column q followed by propagates at q+1..p-1 (and, for a wrap, at p), that no
 * earlier pair makes. A greedy random search (guests/directed/tools/mulcarry_search.c, 20M
 * candidates) found the 49 pairs below; they make 56 of the 120 generate-propagate chains
 * and 44 of the 120 wraps; a hill-climbing search found no other. Random operands make chain
 * (8, 10) about once in 1,600 products; the mutation score's only survivor of 2026-11-30
 * (docs/quality.md) dropped that carry.
 */
#define MULCARRY_PAIRS \
  {0xffffefffu, 0xffff1ffdu}, \
  {0xfb5fffbfu, 0x7fffffffu}, \
  {0x7fffffdfu, 0xbfff7bffu}, \
  {0xfeffffffu, 0xffffffbfu}, \
  {0xdf7fdfffu, 0xdbf7dbffu}, \
  {0x11ffffffu, 0xdc779ccdu}, \
  {0xdffd6fffu, 0x93ab83aeu}, \
  {0xff7bffffu, 0x9e85dbdau}, \
  {0xfefff6f0u, 0x66666666u}, \
  {0xbffdffffu, 0xd7ff7bffu}, \
  {0x7fffffffu, 0xbfffffabu}, \
  {0xfdd9ffefu, 0xe8954108u}, \
  {0xffffffffu, 0xfffff79fu}, \
  {0x7fefeffbu, 0xf72908e6u}, \
  {0xf7fafdf1u, 0x11111111u}, \
  {0xff7ff7ffu, 0xf7efffffu}, \
  {0xff7fedffu, 0xff7ffdfbu}, \
  {0xa57fe0e2u, 0xf1508344u}, \
  {0x07ffffffu, 0x2fe1ee86u}, \
  {0xfe7fffffu, 0xffeff7fau}, \
  {0xffff7fffu, 0xfffbf4ffu}, \
  {0xffffffffu, 0xffff4dffu}, \
  {0xffffffffu, 0xfffffffbu}, \
  {0xffbfffffu, 0xfeffbfffu}, \
  {0x9effffffu, 0x578c141bu}, \
  {0xfff0fff1u, 0xddddddddu}, \
  {0xfffcf6fdu, 0xccccccccu}, \
  {0xfffbffffu, 0xf7ff7fffu}, \
  {0x13f7b06eu, 0x0d52561bu}, \
  {0xf7ffffffu, 0xf7bfff7fu}, \
  {0xffffdfffu, 0xffefffffu}, \
  {0x7fbfffffu, 0xdfeff7ffu}, \
  {0x9fffffffu, 0xa33333e7u}, \
  {0xfeffffffu, 0xfdfdffbfu}, \
  {0xfddffdffu, 0xfeffffffu}, \
  {0xffffffefu, 0xfffffff1u}, \
  {0xffffffffu, 0xfffffff1u}, \
  {0xfffdffffu, 0xfffeffffu}, \
  {0xbfefbffdu, 0xeabebeafu}, \
  {0xffffefffu, 0xffbfeffdu}, \
  {0xffefffffu, 0xddefdeffu}, \
  {0xff7fffffu, 0xff7fbfe7u}, \
  {0xf7ffffffu, 0xf7bdf5efu}, \
  {0xdffe9bffu, 0xa4934f14u}, \
  {0xffeff7ffu, 0xff7ffffdu}, \
  {0xffeffffdu, 0xfbffbfffu}, \
  {0x7ffeffffu, 0xfffe7fffu}, \
  {0x7ffe7fffu, 0xfffeffffu}, \
  {0xeeeeeffau, 0x77ffff7fu}
