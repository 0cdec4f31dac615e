/* Lockstep guest runtime: buffered output streams and exit (see rt.h). */
#include "rt.h"

rt_stream rt_stdout = {1, 0, {0}};
rt_stream rt_stderr = {2, 0, {0}};

void rt_flush(rt_stream *s) {
  unsigned off = 0;
  while (off < s->len) {
    long n = rt_sys_write(s->fd, s->buf + off, s->len - off);
    if (n <= 0) break;
    off += (unsigned)n;
  }
  s->len = 0;
}

void rt_putc(rt_stream *s, char c) {
  s->buf[s->len++] = c;
  if (c == '\n' || s->len == RT_STREAM_BUF) rt_flush(s);
}

void rt_puts(rt_stream *s, const char *str) {
  while (*str) rt_putc(s, *str++);
}

void rt_putn(rt_stream *s, const char *str, size_t n) {
  for (size_t i = 0; i < n; i++) rt_putc(s, str[i]);
}

static const char rt_hex_digits[16] = "0123456789abcdef";

void rt_put_hex_w(rt_stream *s, uint32_t v, int w) {
  for (int i = w - 1; i >= 0; i--) rt_putc(s, rt_hex_digits[(v >> (4 * i)) & 15]);
}

void rt_put_hex(rt_stream *s, uint32_t v) {
  int w = 1;
  while (w < 8 && (v >> (4 * w)) != 0) w++;
  rt_put_hex_w(s, v, w);
}

void rt_put_udec(rt_stream *s, uint32_t v) {
  char tmp[10];
  int n = 0;
  do {
    uint32_t q = rt_div10(v);
    tmp[n++] = (char)('0' + (v - q * 10));
    v = q;
  } while (v != 0);
  while (n > 0) rt_putc(s, tmp[--n]);
}

void rt_put_dec(rt_stream *s, int32_t v) {
  if (v < 0) {
    rt_putc(s, '-');
    rt_put_udec(s, 0u - (uint32_t)v);
  } else {
    rt_put_udec(s, (uint32_t)v);
  }
}

void rt_put_udec64(rt_stream *s, uint64_t v) {
  /* Base-10^9 chunks; the 64-bit divisions come from libgcc (not hot). */
  uint32_t parts[3];
  int n = 0;
  do {
    parts[n++] = (uint32_t)(v % 1000000000u);
    v /= 1000000000u;
  } while (v != 0);
  rt_put_udec(s, parts[--n]);
  while (n > 0) {
    uint32_t p = parts[--n];
    char tmp[9];
    for (int i = 8; i >= 0; i--) {
      uint32_t q = rt_div10(p);
      tmp[i] = (char)('0' + (p - q * 10));
      p = q;
    }
    rt_putn(s, tmp, 9);
  }
}

void rt_exit(int status) {
  rt_flush(&rt_stdout);
  rt_flush(&rt_stderr);
  rt_sys_exit(status);
}
