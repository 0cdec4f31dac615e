/* Lockstep guest runtime: system calls and a small buffered printer.
 *
 * Guests run on the machine of docs/spec/isa.md and unmodified under
 * qemu-riscv32, so the only system calls are Linux's write (64) and exit (93).
 * Output is buffered per stream and written with one ecall per line (or when
 * the buffer fills, or at exit), not one per byte.  There is no printf: the
 * helpers below print strings, hexadecimal and decimal numbers.
 */
#ifndef LOCKSTEP_GUEST_RT_H
#define LOCKSTEP_GUEST_RT_H

#include <stddef.h>
#include <stdint.h>

#define RT_RAM_BASE 0x00010000u /* first RAM byte (isa.md section 2) */
#define RT_RAM_END 0x00110000u  /* one past the last RAM byte; initial sp */

#define RT_SYS_WRITE 64
#define RT_SYS_EXIT 93

#ifdef __cplusplus
extern "C" {
#endif

/* Raw write ecall: writes len bytes of buf to fd (1 or 2); returns a0. */
static inline long rt_sys_write(int fd, const void *buf, size_t len) {
  register long a0 __asm__("a0") = fd;
  register long a1 __asm__("a1") = (long)buf;
  register long a2 __asm__("a2") = (long)len;
  register long a7 __asm__("a7") = RT_SYS_WRITE;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0;
}

/* Raw exit ecall: ends the run with status & 0xFF; buffered output is lost. */
static inline __attribute__((noreturn)) void rt_sys_exit(int status) {
  register long a0 __asm__("a0") = status;
  register long a7 __asm__("a7") = RT_SYS_EXIT;
  __asm__ volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
  __builtin_unreachable();
}

/* Flushes stdout and stderr, then exits with status (what main's return does). */
__attribute__((noreturn)) void rt_exit(int status);

/* A buffered output stream (line-buffered: flushed at '\n', when full, at exit). */
#define RT_STREAM_BUF 256
typedef struct rt_stream {
  int fd;
  unsigned len;
  char buf[RT_STREAM_BUF];
} rt_stream;

extern rt_stream rt_stdout; /* fd 1 */
extern rt_stream rt_stderr; /* fd 2 */

void rt_flush(rt_stream *s);
void rt_putc(rt_stream *s, char c);
void rt_puts(rt_stream *s, const char *str); /* no newline added */
void rt_putn(rt_stream *s, const char *str, size_t n);
void rt_put_hex(rt_stream *s, uint32_t v);          /* lowercase, no leading zeros, no prefix */
void rt_put_hex_w(rt_stream *s, uint32_t v, int w); /* exactly w (1..8) low digits */
void rt_put_udec(rt_stream *s, uint32_t v);
void rt_put_dec(rt_stream *s, int32_t v);
void rt_put_udec64(rt_stream *s, uint64_t v);

/* Shorthands for stdout. */
static inline void print_char(char c) { rt_putc(&rt_stdout, c); }
static inline void print_str(const char *s) { rt_puts(&rt_stdout, s); }
static inline void print_hex(uint32_t v) { rt_put_hex(&rt_stdout, v); }
static inline void print_hex32(uint32_t v) { rt_put_hex_w(&rt_stdout, v, 8); }
static inline void print_udec(uint32_t v) { rt_put_udec(&rt_stdout, v); }
static inline void print_dec(int32_t v) { rt_put_dec(&rt_stdout, v); }
static inline void print_flush(void) { rt_flush(&rt_stdout); }

/* Divide by 10 without a DIV instruction (a DIV costs 36 trace tokens):
 * exact for every uint32_t (multiply by ceil(2^35 / 10), keep bits 35..). */
static inline uint32_t rt_div10(uint32_t x) {
  return (uint32_t)(((uint64_t)x * 0xCCCCCCCDu) >> 35);
}

/* Freestanding string functions (gcc may also emit calls to these). */
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

/* Linker-script symbols (link.ld). */
extern char __heap_start[];
extern char __stack_top[];

#ifdef __cplusplus
}
#endif

#endif
