// Static checks of the independence principle: ref/ (the golden model) and
// chip/ (the device under test) share no code.  Neither side may include a
// file of the other, and neither side's CMake may name the other's library
// target or reach into the other's folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lockstep::independence {

/// One side of the independence wall.
struct Side {
  std::string folder;  ///< top-level folder name, e.g. "ref"
  std::string target;  ///< its CMake library target, e.g. "lockstep_ref"
};

/// One broken rule, with where and why.
struct Violation {
  std::string file;    ///< path relative to the repository root
  int line = 0;        ///< 1-based line number
  std::string reason;  ///< human-readable: what was included / named
};

/// One `#include` line.
struct Include {
  int line = 0;       ///< 1-based line number
  std::string path;   ///< what is between the quotes or angle brackets
  bool quoted = false;  ///< "..." rather than <...>
};

/// Every `#include "..."` / `#include <...>` line of a C/C++/CUDA source text.
std::vector<Include> includes_of(const std::string& source_text);

/// Removes CMake line comments (`# ...` outside double-quoted strings).
std::string strip_cmake_comments(const std::string& cmake_text);

/// Checks every source file under <root>/<from.folder> for includes that reach
/// <root>/<other.folder>: an include path with a component equal to the other
/// folder's name, one that resolves relative to the including file into the
/// other folder, or a quoted include that matches (as a path suffix) a file
/// that exists only in the other folder and nowhere else in the tree.  Build folders (build*),
/// .git and hidden folders are ignored.  A missing folder yields no violations.
std::vector<Violation> include_violations(const std::filesystem::path& root, const Side& from,
                                          const Side& other);

/// Checks every CMakeLists.txt and *.cmake under <root>/<from.folder> for the
/// other side's target name (`lockstep_chip` or `lockstep_chip_<anything>`) or
/// a path into the other folder (`/chip` after a variable or `..`).
std::vector<Violation> cmake_violations(const std::filesystem::path& root, const Side& from,
                                        const Side& other);

/// One line per violation: "file:line: reason".
std::string describe(const std::vector<Violation>& violations);

}  // namespace lockstep::independence
