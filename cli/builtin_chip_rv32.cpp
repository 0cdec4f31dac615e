// register_rv32_backend() in a build with the chip compiler (chip/rv32); cli/CMakeLists.txt
// compiles this file or builtin_chip_none.cpp.
#include "cli/builtin_chip.h"

#include "lockstep/chip/rv32/rv32_chip.hpp"

namespace lockstep::cli {

bool register_rv32_backend(engine::BackendFactory& factory) {
  if (factory.has_chip(engine::kBuiltChipName)) return false;
  try {
    factory.add_chip(engine::kBuiltChipName, [] { return chip::rv32::compile_rv32_chip(); });
  } catch (const std::invalid_argument&) {  // registered by another thread meanwhile
    return false;
  }
  return true;
}

}  // namespace lockstep::cli
