// Exit codes and the error types every subcommand may throw.
#pragma once

#include <stdexcept>

namespace lockstep::cli {

/// Process exit codes of the `lockstep` command.  Any exception that leaves a
/// subcommand maps to `error`: UsageError/InputError/other std::exception with
/// their message, std::logic_error as "internal error: <message>".
enum class ExitCode : int {
  exact = 0,     ///< everything compared was exact
  mismatch = 1,  ///< at least one trace token differed
  error = 2,     ///< bad input or usage; one line on stderr says what
};

/// Wrong command line (unknown value, missing option, conflicting flags).
/// Thrown from a subcommand; mapped to exit code 2 and one stderr line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input data (missing or malformed file, unusable model directory).
/// Thrown from a subcommand; mapped to exit code 2 and one stderr line.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lockstep::cli
