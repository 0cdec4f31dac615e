/* The stories_vx model image (vector.md 7.1), written by
 * `lockstep-model convert --build vx` at build time:
 *   - the vector memories WMEM and WSCALE as non-allocated `.lockstep.*`
 *     sections (vector.md 2.1; link.ld keeps them, in no segment);
 *   - the embedding VLD records (emb.bin, 512 x 68 bytes, 4-byte aligned)
 *     and the decoded token pieces (pieces.bin) in read-only RAM data;
 *   - the number of story tokens to generate (STORIES_VX_TOKENS).
 * The paths come from the build as string macros (CMakeLists.txt). */
    .section .lockstep.wmem, "", @progbits
    .incbin STORIES_VX_WMEM
    .section .lockstep.wscale, "", @progbits
    .incbin STORIES_VX_WSCALE

    .section .rodata.stories_vx_emb, "a", @progbits
    .balign 4
    .globl stories_vx_emb
    .type stories_vx_emb, @object
stories_vx_emb:
    .incbin STORIES_VX_EMB
    .size stories_vx_emb, . - stories_vx_emb

    .section .rodata.stories_vx_pieces, "a", @progbits
    .balign 4
    .globl stories_vx_pieces
    .type stories_vx_pieces, @object
stories_vx_pieces:
    .incbin STORIES_VX_PIECES
    .size stories_vx_pieces, . - stories_vx_pieces

    .section .rodata.stories_vx_tokens, "a", @progbits
    .balign 4
    .globl stories_vx_tokens
    .type stories_vx_tokens, @object
stories_vx_tokens:
    .word STORIES_VX_TOKENS
    .size stories_vx_tokens, 4
