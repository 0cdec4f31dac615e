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
  /// Stopped by SIGINT/SIGTERM before the end, with no mismatch found so far: the steps done
  /// are reported (and written to the report folder) but nothing says the rest is exact. Not
  /// 130/143 (the shell's "killed by a signal"): the process ended on its own, wrote its
  /// results, and SIGINT and SIGTERM get the same code.
  interrupted = 3,
};

/// Wrong command line (unknown value, missing option, conflicting flags).
/// Thrown from a subcommand; mapped to exit code 2 and one stderr line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The run was stopped by SIGINT/SIGTERM before its end. Thrown from a subcommand after it
/// recorded its partial results; mapped to status "interrupted", exit code 3 (1 when a mismatch
/// was already recorded) and one stderr line "lockstep: interrupted: <what>".
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input data (missing or malformed file, unusable model directory).
/// Thrown from a subcommand; mapped to exit code 2 and one stderr line (status "interrupted",
/// exit 3, when a stop came first: an error met while stopping, such as a chip under test the
/// stop ended).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An error that stands whether or not a stop came: a report folder that could not be written.
/// Exit code 2 and one stderr line, never "interrupted" (docs/ci.md).
class ReportError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace lockstep::cli
