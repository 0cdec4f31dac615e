// Where the CUDA tests find the chip and the guests. In a build tree: the build's chip file and
// guests (compile-time paths). In a device pack (ci/device-pack), where those paths do not exist:
// $LOCKSTEP_CHIP (a chip file) and $LOCKSTEP_GUEST_DIR (a folder of guest ELFs), searched first.
// With $LOCKSTEP_GUEST_DIR set, a guest missing from every folder is a test failure, not the
// in-memory loop guest: the pack must carry what the tests run.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/check.h"

namespace lockstep::cuda_test {

// $LOCKSTEP_CHIP, else the build's chip (compiled in process when its file is missing).
inline engine::LoadedChip load_test_chip() {
  const char* file = std::getenv("LOCKSTEP_CHIP");
  engine::LoadedChip c = engine::load_chip_or_built(file != nullptr ? file : "");
  std::cout << "[ chip     ] " << c.source << " (xxh3 " << c.hash << ")\n";
  return c;
}

// The guest ELF `name`.elf: $LOCKSTEP_GUEST_DIR, the build's guests, the source tree's build/guests.
inline std::optional<std::filesystem::path> find_guest_elf(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  const char* env = std::getenv("LOCKSTEP_GUEST_DIR");
  if (env != nullptr && *env != '\0') dirs.emplace_back(env);
  dirs.push_back(fs::path(LOCKSTEP_BINARY_DIR) / "guests");
  dirs.push_back(fs::path(LOCKSTEP_SOURCE_DIR) / "build" / "guests");
  for (const fs::path& d : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(d / (name + ".elf"), ec)) return d / (name + ".elf");
  }
  if (env != nullptr && *env != '\0') ADD_FAILURE() << name << ".elf is not in LOCKSTEP_GUEST_DIR=" << env;
  return std::nullopt;
}

}  // namespace lockstep::cuda_test
