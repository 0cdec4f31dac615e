/* stories_c: the integer forward pass of stories260K shared by the RISC-V
 * guest (stories_c.elf) and the host golden model (stories_c_host).
 *
 * model.c is compiled twice from the same source, for RV32IM and for the
 * host; it uses only fixed-width integer types and -fwrapv semantics, so both
 * builds compute bit-identical results.  The includer supplies stories_emit.
 */
#ifndef LOCKSTEP_STORIES_C_MODEL_H
#define LOCKSTEP_STORIES_C_MODEL_H

#include <stdint.h>

/* Output sink: the guest writes to fd 1 (buffered), the host to stdout. */
void stories_emit(const char *bytes, int n);

/* Decodes greedily from BOS for at most the image's n_steps tokens and emits
 *   "<story text>\n"
 *   "tokens: <id> <id> ...\n"
 * A generated BOS ends the story, as in llama2.c: it is neither printed nor
 * listed, and no further token is generated.
 * Returns the exit status: 0, or 2 (after an "error: ..." line) when the
 * image is malformed or exceeds the static buffers. */
int stories_run(const uint8_t *image);

/* The token ids of the last stories_run (for the host golden model's tests). */
extern int32_t stories_tokens[];
extern int32_t stories_token_count;

#endif
