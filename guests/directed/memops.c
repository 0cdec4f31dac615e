/* memops: the runtime's memcpy, memmove and memset against byte-at-a-time references.
 *
 * For every destination offset 0..3, source offset 0..3 and the lengths in
 * `lengths` (all of 0..19, then around the 16-byte unrolled block and word
 * boundaries up to 70) the word-wise routines must give the same buffer as a
 * byte loop, without touching guard bytes; memmove also over overlapping
 * ranges with offsets 0..7.  Prints the number of cases of each routine
 * ("memcpy: 464 cases, 0 failures", ...) and a final "memops: ok"; exits 0
 * when there were no failures.
 */
#include "rt.h"

#define BUF 96
static const int lengths[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                              15, 16, 17, 18, 19, 31, 32, 33, 47, 48, 63, 64, 65, 70};
#define NLEN ((int)(sizeof lengths / sizeof lengths[0]))
static const int move_lengths[] = {0, 1, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33};
#define NMOVE ((int)(sizeof move_lengths / sizeof move_lengths[0]))

static uint8_t src[BUF], dst[BUF], ref[BUF];

static void pattern(uint8_t *p, uint32_t seed) {
  for (int i = 0; i < BUF; i++) p[i] = (uint8_t)(seed * 101u + (uint32_t)i * 37u + ((uint32_t)i >> 3));
}

/* Byte-wise reference copy through volatile pointers (never turned into a call). */
static void ref_copy(volatile uint8_t *d, const volatile uint8_t *s, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = s[i];
}

static int same(const uint8_t *a, const uint8_t *b) {
  for (int i = 0; i < BUF; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static void summary(const char *name, uint32_t cases, uint32_t failures) {
  print_str(name);
  print_str(": ");
  print_udec(cases);
  print_str(" cases, ");
  print_udec(failures);
  print_str(" failures\n");
}

int main(void) {
  uint32_t failures = 0, total_failures = 0, cases = 0;

  /* memcpy: distinct buffers. */
  for (int doff = 0; doff < 4; doff++)
    for (int soff = 0; soff < 4; soff++)
      for (int li = 0; li < NLEN; li++) {
        int n = lengths[li];
        pattern(src, 1u + (uint32_t)n);
        pattern(dst, 7u);
        pattern(ref, 7u);
        ref_copy(ref + 8 + doff, src + 8 + soff, (size_t)n);
        void *r = memcpy(dst + 8 + doff, src + 8 + soff, (size_t)n);
        cases++;
        if (!same(dst, ref) || r != dst + 8 + doff) failures++;
      }
  summary("memcpy", cases, failures);
  total_failures += failures;

  /* memmove: overlapping ranges inside one buffer, both directions. */
  failures = cases = 0;
  for (int doff = 0; doff < 8; doff++)
    for (int soff = 0; soff < 8; soff++)
      for (int li = 0; li < NMOVE; li++) {
        int n = move_lengths[li];
        pattern(dst, 3u + (uint32_t)n);
        pattern(ref, 3u + (uint32_t)n);
        uint8_t tmp[BUF];
        ref_copy(tmp, ref + 10 + soff, (size_t)n);
        ref_copy(ref + 10 + doff, tmp, (size_t)n);
        memmove(dst + 10 + doff, dst + 10 + soff, (size_t)n);
        cases++;
        if (!same(dst, ref)) failures++;
      }
  summary("memmove", cases, failures);
  total_failures += failures;

  /* memset: every offset, length and a few fill values. */
  failures = cases = 0;
  static const int values[] = {0, 0xA5, 0x17F};
  for (int v = 0; v < 3; v++)
    for (int doff = 0; doff < 4; doff++)
      for (int li = 0; li < NLEN; li++) {
        int n = lengths[li];
        pattern(dst, 11u);
        pattern(ref, 11u);
        volatile uint8_t *rp = ref + 8 + doff;
        for (int i = 0; i < n; i++) rp[i] = (uint8_t)values[v];
        void *r = memset(dst + 8 + doff, values[v], (size_t)n);
        cases++;
        if (!same(dst, ref) || r != dst + 8 + doff) failures++;
      }
  summary("memset", cases, failures);
  total_failures += failures;

  /* memcmp / strlen / strcmp spot checks. */
  failures = cases = 0;
  static const char a[] = "lockstep", b[] = "lockstop";
  cases++, failures += memcmp(a, b, 8) >= 0;
  cases++, failures += memcmp(a, b, 6) != 0;
  cases++, failures += memcmp(b, a, 8) <= 0;
  cases++, failures += strlen(a) != 8;
  cases++, failures += strlen("") != 0;
  cases++, failures += strcmp(a, b) >= 0;
  cases++, failures += strcmp(a, a) != 0;
  summary("memcmp/strlen/strcmp", cases, failures);
  total_failures += failures;

  print_str(total_failures == 0 ? "memops: ok\n" : "memops: FAILED\n");
  return total_failures == 0 ? 0 : 1;
}
