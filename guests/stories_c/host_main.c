/* stories_c_host: the host golden model of the stories_c guest.
 *
 * Usage: stories_c_host IMAGE.bin
 * Runs model.c (the very source the guest runs, compiled for the host) over
 * the same image and writes exactly what the guest writes to fd 1; the exit
 * status is the guest's (0, or 2 for a bad image; 3 if the file is unreadable).
 */
#include <stdio.h>
#include <stdlib.h>

#include "image_c.h"
#include "model.h"

void stories_emit(const char *bytes, int n) { fwrite(bytes, 1, (size_t)n, stdout); }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s IMAGE.bin\n", argv[0]);
    return 3;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "stories_c_host: cannot open %s\n", argv[1]);
    return 3;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* 16-byte aligned copy, as the guest's .incbin */
  uint8_t *buf = aligned_alloc(16, ((size_t)size + 15) & ~(size_t)15);
  if (!buf || size <= 0 || fread(buf, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "stories_c_host: cannot read %s\n", argv[1]);
    return 3;
  }
  fclose(f);
  /* model.c trusts total_size for its bounds checks: it must not exceed the file. */
  if ((size_t)size < sizeof(imgc_header) || ((const imgc_header *)(const void *)buf)->total_size > (uint32_t)size) {
    printf("error: bad stories_c image (truncated)\n");
    free(buf);
    return 2;
  }
  int status = stories_run(buf);
  fflush(stdout);
  free(buf);
  return status;
}
