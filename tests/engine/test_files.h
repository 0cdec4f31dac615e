// File helpers shared by the engine and reports tests: a fresh scratch folder under the
// build tree, and a whole file read into a string.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lockstep::engine::testing {

/// An empty folder build/test-tmp/<area>/<name> (removed and recreated on each call).
inline std::filesystem::path fresh_temp_dir(const std::string& area, const std::string& name) {
  const std::filesystem::path d = std::filesystem::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / area / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// The whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace lockstep::engine::testing
