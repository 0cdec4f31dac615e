// Helpers shared by the golden/ tests: where the real model lives.
#pragma once

#include <filesystem>
#include <optional>
#include <sstream>

#include "quality.h"

namespace lockstep::host::test {

/// The real stories260K model when present ($LOCKSTEP_MODELS or <repo>/../shared/models).
inline std::optional<LoadedModel> real_model() {
  const auto dir = models_dir(LOCKSTEP_SOURCE_DIR);
  if (!std::filesystem::exists(dir / "stories260K.bin") || !std::filesystem::exists(dir / "tok512.bin"))
    return std::nullopt;
  std::ostringstream log;
  return load_model(dir, false, log);
}

}  // namespace lockstep::host::test
