// Errors thrown by the chip library.
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep::chip {

/// A chip file, checkpoint or configuration is malformed: truncated, wrong size, index out of
/// range, shape inconsistent with the configuration, non-finite value, unknown tensor...
/// what() is one line naming the problem. The CLI maps it to exit status 2.
class FormatError : public std::runtime_error {
 public:
  explicit FormatError(const std::string& message) : std::runtime_error(message) {}
};

/// A guest image lacks data that a chip's state initialiser requires (e.g. a named section).
class ImageError : public std::runtime_error {
 public:
  explicit ImageError(const std::string& message) : std::runtime_error(message) {}
};

/// A chip API was used wrongly (stream id out of range, token outside the vocabulary, ...).
class UsageError : public std::invalid_argument {
 public:
  explicit UsageError(const std::string& message) : std::invalid_argument(message) {}
};

}  // namespace lockstep::chip
