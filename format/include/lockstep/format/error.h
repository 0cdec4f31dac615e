// Errors of the shared data formats.
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep::format {

/// A malformed input file (ELF image, trace file).  what() is one line that
/// names the problem, e.g. "ELF: wrong machine 62 (expected EM_RISCV 243)".
class FormatError : public std::runtime_error {
 public:
  explicit FormatError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace lockstep::format
