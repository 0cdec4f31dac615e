/* fd2: output on both consoles and a masked exit status.
 *
 * Writes two lines to fd 1 and three to fd 2 (interleaved; each line is one
 * write ecall), one raw unbuffered write to fd 2, and returns 0x1203 from
 * main: the exit status is a0 & 0xFF = 3 (isa.md section 5).
 */
#include "rt.h"

int main(void) {
  print_str("stdout line 1\n");
  rt_puts(&rt_stderr, "stderr line 1\n");
  rt_puts(&rt_stderr, "stderr value ");
  rt_put_dec(&rt_stderr, -12345);
  rt_putc(&rt_stderr, '\n');
  print_str("stdout line 2\n");
  long n = rt_sys_write(2, "raw write\n", 10);
  rt_puts(&rt_stderr, "write returned ");
  rt_put_dec(&rt_stderr, (int32_t)n);
  rt_putc(&rt_stderr, '\n');
  return 0x1203;
}
