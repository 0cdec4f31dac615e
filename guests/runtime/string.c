/* Freestanding string functions for Lockstep guests.
 *
 * memcpy and memset move whole aligned words when they can (fewer trace
 * steps than byte loops).  All accesses are naturally aligned: the machine
 * traps on misaligned accesses (isa.md section 2).  This file is compiled
 * with -fno-tree-loop-distribute-patterns so that gcc does not turn these
 * loops back into calls to themselves.
 */
#include "rt.h"

void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  if ((((uintptr_t)d ^ (uintptr_t)s) & 3) == 0) {
    while (n > 0 && ((uintptr_t)d & 3) != 0) {
      *d++ = *s++;
      n--;
    }
    uint32_t *dw = (uint32_t *)d;
    const uint32_t *sw = (const uint32_t *)s;
    while (n >= 16) {
      uint32_t a = sw[0], b = sw[1], c = sw[2], e = sw[3];
      dw[0] = a;
      dw[1] = b;
      dw[2] = c;
      dw[3] = e;
      dw += 4;
      sw += 4;
      n -= 16;
    }
    while (n >= 4) {
      *dw++ = *sw++;
      n -= 4;
    }
    d = (unsigned char *)dw;
    s = (const unsigned char *)sw;
  }
  while (n > 0) {
    *d++ = *s++;
    n--;
  }
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) return memcpy(dst, src, n);
  while (n > 0) {
    n--;
    d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = (unsigned char *)dst;
  unsigned char b = (unsigned char)c;
  while (n > 0 && ((uintptr_t)d & 3) != 0) {
    *d++ = b;
    n--;
  }
  uint32_t w = b * 0x01010101u;
  uint32_t *dw = (uint32_t *)d;
  while (n >= 16) {
    dw[0] = w;
    dw[1] = w;
    dw[2] = w;
    dw[3] = w;
    dw += 4;
    n -= 16;
  }
  while (n >= 4) {
    *dw++ = w;
    n -= 4;
  }
  d = (unsigned char *)dw;
  while (n > 0) {
    *d++ = b;
    n--;
  }
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = (const unsigned char *)a;
  const unsigned char *y = (const unsigned char *)b;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

int strcmp(const char *a, const char *b) {
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}
