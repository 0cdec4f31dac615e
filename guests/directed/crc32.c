/* crc32: CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) two ways.
 *
 * A bitwise implementation and a 256-entry table built at run time must
 * agree on every input.  Prints "crc32(<name>) = <8 hex digits>" for the
 * empty string, "123456789" (the standard check value cbf43926), a pangram,
 * and a 4096-byte LCG buffer (x <- 1103515245 x + 12345, seed 1, byte =
 * bits 16..23), then "crc32: ok" and exits 0 when both ways agreed.
 */
#include "rt.h"

static uint32_t table[256];
static uint8_t buffer[4096];

static uint32_t crc32_bitwise(const uint8_t *p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

static void build_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int b = 0; b < 8; b++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    table[i] = c;
  }
}

static uint32_t crc32_table(const uint8_t *p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

static int ok = 1;

static void report(const char *name, const uint8_t *p, size_t n) {
  uint32_t a = crc32_bitwise(p, n), b = crc32_table(p, n);
  if (a != b) ok = 0;
  print_str("crc32(");
  print_str(name);
  print_str(") = ");
  print_hex32(b);
  print_char('\n');
}

int main(void) {
  build_table();
  report("", (const uint8_t *)"", 0);
  report("123456789", (const uint8_t *)"123456789", 9);
  static const char fox[] = "The quick brown fox jumps over the lazy dog";
  report(fox, (const uint8_t *)fox, sizeof fox - 1);
  uint32_t x = 1;
  for (size_t i = 0; i < sizeof buffer; i++) {
    x = x * 1103515245u + 12345u;
    buffer[i] = (uint8_t)(x >> 16);
  }
  report("lcg4096", buffer, sizeof buffer);
  print_str(ok ? "crc32: ok\n" : "crc32: MISMATCH\n");
  return ok ? 0 : 1;
}
