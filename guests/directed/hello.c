/* hello: the smallest guest; prints one line through the buffered runtime and exits 0. */
#include "rt.h"

int main(void) {
  print_str("Hello from a Lockstep guest!\n");
  return 0;
}
