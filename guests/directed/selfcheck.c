/* selfcheck: a guest that checks its own arithmetic and exits 0 only if all passed.
 *
 * Each check issues one instruction through inline asm (so nothing is folded
 * at compile time) and compares with a value written by hand from the ISA
 * (docs/spec/isa.md): the division table of section 4.3, the high-product
 * variants, shift amounts taken mod 32, signed/unsigned compares, load sign
 * and zero extension, sub-word stores, JALR clearing bit 0, writes to x0,
 * the Zba shifts and the write ecall's return value.  A failed check prints
 * "FAIL <name>: got <hex> want <hex>" on fd 2; the last line on fd 1 is
 * "selfcheck: <passed>/<total> passed".  Exit status: 0 or 1.
 */
#include "rt.h"

static uint32_t total, passed;

static void check(const char *name, uint32_t got, uint32_t want) {
  total++;
  if (got == want) {
    passed++;
    return;
  }
  rt_puts(&rt_stderr, "FAIL ");
  rt_puts(&rt_stderr, name);
  rt_puts(&rt_stderr, ": got ");
  rt_put_hex_w(&rt_stderr, got, 8);
  rt_puts(&rt_stderr, " want ");
  rt_put_hex_w(&rt_stderr, want, 8);
  rt_putc(&rt_stderr, '\n');
}

#define RR(op)                                                                  \
  static uint32_t op##_(uint32_t a, uint32_t b) {                               \
    uint32_t r;                                                                 \
    __asm__ volatile(#op " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));            \
    return r;                                                                   \
  }
RR(add) RR(sub) RR(sll) RR(srl) RR(sra) RR(slt) RR(sltu) RR(xor) RR(or) RR(and)
RR(mul) RR(mulh) RR(mulhsu) RR(mulhu) RR(div) RR(divu) RR(rem) RR(remu)
RR(sh1add) RR(sh2add) RR(sh3add)

#define INT_MIN_U 0x80000000u
#define M1 0xFFFFFFFFu

static void check_divide(void) {
  /* isa.md 4.3, division by zero */
  check("div x/0", div_(1234, 0), M1);
  check("div -x/0", div_((uint32_t)-5, 0), M1);
  check("divu x/0", divu_(1234, 0), M1);
  check("rem x/0", rem_((uint32_t)-5, 0), (uint32_t)-5);
  check("remu x/0", remu_(0xDEADBEEFu, 0), 0xDEADBEEFu);
  check("div 0/0", div_(0, 0), M1);
  check("rem 0/0", rem_(0, 0), 0);
  /* overflow */
  check("div min/-1", div_(INT_MIN_U, M1), INT_MIN_U);
  check("rem min/-1", rem_(INT_MIN_U, M1), 0);
  check("divu min/-1", divu_(INT_MIN_U, M1), 0);
  check("remu min/-1", remu_(INT_MIN_U, M1), INT_MIN_U);
  /* rounding toward zero, remainder has the dividend's sign */
  check("div 7/2", div_(7, 2), 3);
  check("div -7/2", div_((uint32_t)-7, 2), (uint32_t)-3);
  check("div 7/-2", div_(7, (uint32_t)-2), (uint32_t)-3);
  check("div -7/-2", div_((uint32_t)-7, (uint32_t)-2), 3);
  check("rem 7/2", rem_(7, 2), 1);
  check("rem -7/2", rem_((uint32_t)-7, 2), (uint32_t)-1);
  check("rem 7/-2", rem_(7, (uint32_t)-2), 1);
  check("rem -7/-2", rem_((uint32_t)-7, (uint32_t)-2), (uint32_t)-1);
  check("divu big", divu_(0xFFFFFFFEu, 3), 0x55555554u);
  check("remu big", remu_(0xFFFFFFFEu, 3), 2);
  check("div min/1", div_(INT_MIN_U, 1), INT_MIN_U);
  check("div min/2", div_(INT_MIN_U, 2), 0xC0000000u);
  check("divu 1/2", divu_(1, 2), 0);
  check("rem min/3", rem_(INT_MIN_U, 3), (uint32_t)-2);
}

static void check_multiply(void) {
  check("mul -1*-1", mul_(M1, M1), 1);
  check("mulh -1*-1", mulh_(M1, M1), 0);
  check("mulhu -1*-1", mulhu_(M1, M1), 0xFFFFFFFEu);
  check("mulhsu -1*-1", mulhsu_(M1, M1), M1);
  check("mulh min*min", mulh_(INT_MIN_U, INT_MIN_U), 0x40000000u);
  check("mul min*min", mul_(INT_MIN_U, INT_MIN_U), 0);
  check("mulhu min*min", mulhu_(INT_MIN_U, INT_MIN_U), 0x40000000u);
  check("mulhsu min*min", mulhsu_(INT_MIN_U, INT_MIN_U), 0xC0000000u);
  check("mulh min*-1", mulh_(INT_MIN_U, M1), 0);
  check("mul min*-1", mul_(INT_MIN_U, M1), INT_MIN_U);
  check("mulhsu 1*-1", mulhsu_(1, M1), 0);
  check("mulhsu -2*3", mulhsu_((uint32_t)-2, 3), M1);
  check("mul 0x12345678*0x9abcdef0", mul_(0x12345678u, 0x9ABCDEF0u), 0x242D2080u);
  check("mulhu 0x12345678*0x9abcdef0", mulhu_(0x12345678u, 0x9ABCDEF0u), 0x0B00EA4Eu);
  check("mulh 0x12345678*0x9abcdef0", mulh_(0x12345678u, 0x9ABCDEF0u), 0xF8CC93D6u);
  check("mulhsu 0x9abcdef0*0x12345678", mulhsu_(0x9ABCDEF0u, 0x12345678u), 0xF8CC93D6u);
}

static void check_alu(void) {
  check("add wrap", add_(M1, 2), 1);
  check("sub wrap", sub_(0, 1), M1);
  check("sll 33", sll_(1, 33), 2);
  check("srl 36", srl_(0x80000000u, 36), 0x08000000u);
  check("sra 31", sra_(0x80000000u, 31), M1);
  check("sra 63", sra_(0x80000000u, 63), M1);
  check("sra pos", sra_(0x40000000u, 30), 1);
  check("slt -1<1", slt_(M1, 1), 1);
  check("sltu -1<1", sltu_(M1, 1), 0);
  check("slt min<max", slt_(INT_MIN_U, 0x7FFFFFFFu), 1);
  check("sltu 0<1", sltu_(0, 1), 1);
  check("slt eq", slt_(5, 5), 0);
  check("xor", xor_(0xF0F0F0F0u, 0xFF00FF00u), 0x0FF00FF0u);
  check("or", or_(0xF0F0F0F0u, 0x0F000000u), 0xFFF0F0F0u);
  check("and", and_(0xF0F0F0F0u, 0xFF00FF00u), 0xF000F000u);
  uint32_t r;
  __asm__ volatile("li %0, -1\n\tsrai %0, %0, 4" : "=r"(r));
  check("srai", r, M1);
  __asm__ volatile("lui %0, 0xfffff" : "=r"(r));
  check("lui", r, 0xFFFFF000u);
  __asm__ volatile("addi %0, x0, -2048" : "=r"(r));
  check("addi -2048", r, 0xFFFFF800u);
  __asm__ volatile("li %0, 5\n\tsltiu %0, %0, -1" : "=r"(r));
  check("sltiu imm sign-extended", r, 1);
  __asm__ volatile("li %0, 7\n\txori %0, %0, -1" : "=r"(r));
  check("xori -1 (not)", r, 0xFFFFFFF8u);
  /* a write to x0 is discarded */
  __asm__ volatile("addi x0, x0, 5\n\tmv %0, x0" : "=r"(r));
  check("x0 stays zero", r, 0);
  check("sh1add", sh1add_(0x80000001u, 1), 3);
  check("sh2add", sh2add_(0x40000000u, 0x10u), 0x10u);
  check("sh3add", sh3add_(0x12345678u, 0xFFFFFFFFu), 0x91A2B3BFu);
}

static void check_memory(void) {
  static volatile uint32_t word = 0x8081F2F3u;
  volatile uint8_t *bytes = (volatile uint8_t *)&word;
  volatile uint16_t *halves = (volatile uint16_t *)&word;
  uint32_t r;
  __asm__ volatile("lb %0, 0(%1)" : "=r"(r) : "r"(bytes));
  check("lb sign", r, 0xFFFFFFF3u);
  __asm__ volatile("lbu %0, 3(%1)" : "=r"(r) : "r"(bytes));
  check("lbu", r, 0x80u);
  __asm__ volatile("lh %0, 2(%1)" : "=r"(r) : "r"(bytes));
  check("lh sign", r, 0xFFFF8081u);
  __asm__ volatile("lhu %0, 0(%1)" : "=r"(r) : "r"(bytes));
  check("lhu", r, 0xF2F3u);
  __asm__ volatile("lb %0, 2(%1)" : "=r"(r) : "r"(bytes));
  check("lb 0x81", r, 0xFFFFFF81u);
  bytes[1] = 0x11;
  check("sb", word, 0x808111F3u);
  halves[1] = 0x7654;
  check("sh", word, 0x765411F3u);
  __asm__ volatile("sw %1, 0(%2)\n\tlw %0, 0(%2)" : "=r"(r) : "r"(0xCAFEBABEu), "r"(&word) : "memory");
  check("sw/lw", r, 0xCAFEBABEu);
}

static void check_control(void) {
  uint32_t r, target;
  /* JALR clears bit 0 of the target; the link register is pc + 4. */
  __asm__ volatile(
      "la %1, 1f\n\t"
      "addi %1, %1, 1\n\t"
      "li %0, 0\n\t"
      "jalr t0, 0(%1)\n\t"
      "li %0, 99\n"
      "1:\n\t"
      "addi %0, %0, 7\n\t"
      "sub %1, t0, %1\n\t"
      : "=&r"(r), "=&r"(target)
      :
      : "t0");
  check("jalr odd target", r, 7);
  check("jalr link = pc+4", target, (uint32_t)-5); /* (jalr+4) - (label+1), label = jalr+8 */
  /* auipc 0 equals the address of the instruction itself */
  __asm__ volatile("1: auipc %0, 0\n\tla %1, 1b\n\tsub %0, %0, %1" : "=&r"(r), "=&r"(target));
  check("auipc", r, 0);
  /* branches: signed versus unsigned comparisons of -1 and 1 */
  uint32_t m1 = M1, one = 1;
  __asm__ volatile("li %0, 0\n\tblt %1, %2, 1f\n\tli %0, 1\n1:" : "=&r"(r) : "r"(m1), "r"(one));
  check("blt -1<1 taken", r, 0);
  __asm__ volatile("li %0, 0\n\tbltu %1, %2, 1f\n\tli %0, 1\n1:" : "=&r"(r) : "r"(m1), "r"(one));
  check("bltu -1<1 not taken", r, 1);
  __asm__ volatile("li %0, 0\n\tbgeu %1, %2, 1f\n\tli %0, 1\n1:" : "=&r"(r) : "r"(m1), "r"(one));
  check("bgeu taken", r, 0);
  __asm__ volatile("li %0, 0\n\tbge %1, %2, 1f\n\tli %0, 1\n1:" : "=&r"(r) : "r"(m1), "r"(one));
  check("bge not taken", r, 1);
}

static void check_ecall(void) {
  rt_flush(&rt_stdout);
  long n = rt_sys_write(1, "write returns its length\n", 25);
  check("write returns len", (uint32_t)n, 25);
}

int main(void) {
  check_divide();
  check_multiply();
  check_alu();
  check_memory();
  check_control();
  check_ecall();
  print_str("selfcheck: ");
  print_udec(passed);
  print_char('/');
  print_udec(total);
  print_str(" passed\n");
  return passed == total ? 0 : 1;
}
