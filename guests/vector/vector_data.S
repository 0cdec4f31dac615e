/* Vector memories of vector_ops (vector.md §2.1): non-allocated sections. */
/* WMEM: 4 chunks of 64 int4 weights, two per byte (low nibble first). */
    .section .lockstep.wmem, "", @progbits
    .fill 32, 1, 0x11      /* chunk 0: all +1 */
    .fill 32, 1, 0xff      /* chunk 1: all -1 */
    .fill 16, 1, 0x00      /* chunk 2: 0 for i < 32 ... */
    .fill 16, 1, 0x11      /*          +1 for i >= 32 */
    .fill 32, 1, 0x00      /* chunk 3: all 0 */
/* WSCALE: uint16 per chunk */
    .section .lockstep.wscale, "", @progbits
    .short 1, 1, 1, 1
