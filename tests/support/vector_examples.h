// The vector unit's worked examples, docs/spec/vectors/vector_<op>.json (one file per op,
// vector.md §8, written by gen_vector.py from the spec alone), loaded for tests on either side
// of the independence wall: plain data, no semantics. Header-only, test code only: neither ref/
// nor chip/ includes it. Add `${PROJECT_SOURCE_DIR}/tests/support` to a test's include
// directories and `#include "vector_examples.h"`; it needs nlohmann_json.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::test_support {

/// The per-op example files `<source_dir>/docs/spec/vectors/vector_*.json`, sorted by name.
/// Throws std::runtime_error when the folder holds none (a missing file must fail a test, not
/// shrink it).
inline std::vector<std::filesystem::path> vector_example_files(const std::filesystem::path& source_dir) {
  const std::filesystem::path dir = source_dir / "docs" / "spec" / "vectors";
  std::vector<std::filesystem::path> out;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("vector_", 0) == 0 && e.path().extension() == ".json") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) throw std::runtime_error("no vector_*.json in " + dir.string());
  return out;
}

/// Every example object (README.md's layout: name, initial, code, steps, final, ...) of every
/// vector_*.json under `source_dir`, file by file in name order, each file's examples in its
/// order. Throws std::runtime_error for an unreadable file, nlohmann::json::exception for a
/// malformed one. (43 examples when the files were split from vector_ops.json; never fewer.)
inline std::vector<nlohmann::json> load_vector_examples(const std::filesystem::path& source_dir) {
  std::vector<nlohmann::json> out;
  for (const auto& path : vector_example_files(source_dir)) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const nlohmann::json& e : doc.at("examples")) out.push_back(e);
  }
  return out;
}

}  // namespace lockstep::test_support
