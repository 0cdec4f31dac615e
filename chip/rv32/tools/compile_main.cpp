// lockstep-compile --out FILE : compiles the RV32 chip and writes the chip file.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "lockstep/chip/rv32/rv32_chip.hpp"

int main(int argc, char** argv) {
  std::string out;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: lockstep-compile --out FILE\n");
      return 0;
    } else {
      std::fprintf(stderr, "lockstep-compile: unknown argument '%s' (usage: lockstep-compile --out FILE)\n", argv[i]);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "lockstep-compile: --out FILE is required\n");
    return 2;
  }
  try {
    const lockstep::chip::Chip chip = lockstep::chip::rv32::compile_rv32_chip();
    lockstep::chip::save_chip(chip, out);
    std::printf("wrote %s: d_model %u, %zu layers, vocab %u\n", out.c_str(), chip.config.d_model,
                chip.layers.size(), chip.config.vocab_size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep-compile: error: %s\n", e.what());
    return 2;  // an error, as lockstep's exit status 2 (1 means a mismatch there)
  }
  return 0;
}
