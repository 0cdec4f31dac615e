/* mulcarry_search: the operand pairs of guests/directed/mulcarry_pairs.h (a host tool, not
 * part of the build). Draws candidate pairs (x, y) from SplitMix64 (seed 0x1234567) with a few
 * shapes (random, runs of ones, dense ones, ...) and keeps each pair whose unsigned product
 * makes a nibble-column carry chain no kept pair made (see mulcarry_pairs.h for the columns;
 * the decomposition follows docs/chip-design.md, MUL). Prints the kept pairs, one per line,
 * and the chains covered on stderr.
 *
 *   cc -O2 -o mulcarry_search mulcarry_search.c && ./mulcarry_search 20000000
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static uint64_t s = 0x1234567;
static uint64_t nx(void) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static void nus(uint32_t x, uint32_t y, int nu[16]) {
  int NC[16] = {0};
  for (int n = 0; n < 8; n++)
    for (int m = 0; m < 8; m++) {
      int a = (x >> (4 * n)) & 15, b = (y >> (4 * m)) & 15, p = a * b;
      NC[n + m] += p & 15;
      if (n + m + 1 < 16)
        NC[n + m + 1] += p >> 4;
    }
  int D[16], C1[16], E[16], C2[16];
  for (int p = 0; p < 16; p++) {
    D[p] = NC[p] % 16;
    C1[p] = NC[p] / 16;
  }
  for (int p = 0; p < 16; p++) {
    int t = D[p] + (p ? C1[p - 1] : 0);
    E[p] = t % 16;
    C2[p] = t / 16;
  }
  for (int p = 0; p < 16; p++)
    nu[p] = E[p] + (p ? C2[p - 1] : 0);
}
static int cov[2][16][16];
static int units(uint32_t x, uint32_t y, int mark) {
  int nu[16], G[16], P[16], n = 0;
  nus(x, y, nu);
  for (int p = 0; p < 16; p++) {
    G[p] = nu[p] >= 16;
    P[p] = nu[p] == 15;
  }
  for (int p = 0; p < 16; p++)
    for (int q = 0; q < p; q++) {
      if (!G[q])
        continue;
      int ok = 1;
      for (int r = q + 1; r < p; r++)
        if (!P[r]) {
          ok = 0;
          break;
        }
      if (!ok)
        continue;
      if (!cov[0][q][p]) {
        n++;
        if (mark)
          cov[0][q][p] = 1;
      }
      if (P[p] && !cov[1][q][p]) {
        n++;
        if (mark)
          cov[1][q][p] = 1;
      }
    }
  return n;
}
static uint32_t r32(void) { return (uint32_t)nx(); }
int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mulcarry_search CANDIDATES\n");
    return 2;
  }
  long iters = atol(argv[1]);
  int kept = 0;
  for (long it = 0; it < iters; it++) {
    uint32_t x, y;
    int k = nx() % 7;
    switch (k) {
      case 0:
        x = r32();
        y = r32();
        break;
      case 1:
        x = (uint32_t)((1ull << (1 + nx() % 32)) - 1);
        y = r32();
        break;
      case 2:
        x = ~(r32() & r32() & r32());
        y = r32();
        break;
      case 3:
        x = r32() | 0xF0F0F0F0u;
        y = 0x11111111u * (nx() % 16);
        break;
      case 4:
        x = r32();
        y = (1u << (nx() % 32)) + (1u << (nx() % 32));
        break;
      case 5:
        x = ~(r32() & r32() & r32() & r32());
        y = ~(r32() & r32() & r32());
        break;
      default: {
        uint32_t c = (uint32_t)((1ull << (1 + nx() % 32)) - 1);
        x = c * (1 + nx() % 15) + (r32() & 15);
        y = r32() | 1;
      }
    }
    if (units(x, y, 0)) {
      units(x, y, 1);
      printf("0x%08xu,0x%08xu,\n", x, y);
      kept++;
    }
  }
  int c0 = 0, c1 = 0;
  for (int p = 0; p < 16; p++)
    for (int q = 0; q < p; q++) {
      c0 += cov[0][q][p];
      c1 += cov[1][q][p];
    }
  fprintf(stderr, "kept %d pairs; carry_in units %d/120, wrap units %d/120\n", kept, c0, c1);
  fprintf(stderr, "carry8->10: %d\n", cov[0][8][10]);
}
