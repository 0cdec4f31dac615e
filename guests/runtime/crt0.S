/* Start-up code for Lockstep guests.
 *
 * Sets gp (with relaxation off, so `la` is not itself turned into a
 * gp-relative access before gp exists) and sp = RAM_END, then calls
 * main(0, 0) and exits with its return value through rt_exit (which flushes
 * buffered output and issues ecall 93).  .bss needs no clearing: both the
 * reference loader and qemu zero p_memsz beyond p_filesz.
 */
    .section .text.start, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    .option push
    .option norelax
    la   gp, __global_pointer$
    .option pop
    la   sp, __stack_top
    li   a0, 0
    li   a1, 0
    call main
    call rt_exit
1:  j    1b
    .size _start, . - _start
