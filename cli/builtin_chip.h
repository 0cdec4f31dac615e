// The chips this build compiles itself, registered into the engine's backend factory
// (lockstep/engine/backend_factory.h).  The engine knows no concrete chip; the `lockstep` main
// makes this one explicit call before it parses the command line, and so may any other program
// or test that wants the built chip compiled when its file is missing.
#pragma once

#include "lockstep/engine/backend_factory.h"

namespace lockstep::cli {

/// Registers chip/rv32's compiler (chip::rv32::compile_rv32_chip()) as engine::kBuiltChipName
/// ("rv32") in `factory`.  Returns false, registering nothing, in a build without the chip
/// compiler (-DLOCKSTEP_COMPILE_CHIP=OFF) and when `factory` already has a chip of that name
/// (so that calling it twice is harmless).  Throws nothing.
bool register_rv32_backend(engine::BackendFactory& factory = engine::backend_factory());

}  // namespace lockstep::cli
