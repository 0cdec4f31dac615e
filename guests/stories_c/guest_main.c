/* stories_c guest: stories260K greedy decoding in plain RV32IM (no custom
 * instructions, no floating point).  The model image (image_c.h) is linked in
 * by image.S; the forward pass is model.c, shared with stories_c_host. */
#include "model.h"
#include "rt.h"

extern const uint8_t stories_image[];

void stories_emit(const char *bytes, int n) { rt_putn(&rt_stdout, bytes, (size_t)n); }

int main(void) { return stories_run(stories_image); }
