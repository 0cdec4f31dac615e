/* nodata: a guest with code only (no .data, .sdata or .rodata), linked with
 * runtime/link.ld and no runtime.  It exits with status 7 (isa.md section 5).
 * Its writable segment (bss, heap and stack) must still start on a page of
 * its own, so that qemu-riscv32 can map it apart from the code
 * (tests/guests/elf_layout_test.cpp; an outside tester's assembly guests
 * crashed qemu when link.ld let that segment share the code's page). */
  .section .text.start, "ax"
  .globl _start
_start:
  li a0, 7
  li a7, 93
  ecall
