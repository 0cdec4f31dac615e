// register_rv32_backend() in a build without the chip compiler (-DLOCKSTEP_COMPILE_CHIP=OFF):
// nothing to register; the built chip is then the prebuilt file, if any (engine/CMakeLists.txt).
#include "cli/builtin_chip.h"

namespace lockstep::cli {

bool register_rv32_backend(engine::BackendFactory&) { return false; }

}  // namespace lockstep::cli
