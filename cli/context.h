// The shared state of one `lockstep` run: global options, the JSON summary,
// the logger and the chosen model directory.  Every subcommand receives a
// Context& (see commands.h) and reports its results through ctx.summary.
//
// Exit-code contract (every subcommand, every error path):
//   0  everything compared was exact (also: nothing to compare, e.g. `models`)
//   1  at least one mismatch was recorded (Summary::add_mismatches)
//   2  bad input or usage (UsageError, InputError, CLI11 parse errors, or any
//      other exception); stderr carries exactly one line "lockstep: error: ...".
//   3  interrupted (SIGINT/SIGTERM) before the end with no mismatch so far
//      (Interrupted); stderr carries one line "lockstep: interrupted: ...".
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "cli/errors.h"
#include "cli/models.h"

namespace lockstep::cli {

/// Options that apply to every subcommand.  They may appear before or after
/// the subcommand name (`lockstep --json models` == `lockstep models --json`).
struct GlobalOptions {
  /// spdlog level name: trace, debug, info, warn, error or off.
  std::string log_level = "info";
  /// When true, stdout carries exactly one JSON object (the Summary) and all
  /// human-readable text goes to stderr (see Context::out()).
  bool json = false;
  /// --models DIR; empty when not given.
  std::string models_dir;
};

/// The run summary: a JSON object with at least
///   status      "exact" | "mismatch" | "interrupted" | "error"
///   steps       number of trace tokens compared (unsigned)
///   mismatches  number of trace tokens that differed (unsigned)
/// plus any fields a command adds with set().  The status is derived: "error"
/// once fail() was called, else "mismatch" when mismatches > 0, else
/// "interrupted" once interrupt() was called, else "exact".  An interrupted
/// summary also carries "interrupted": true and "interrupted_reason": "<one line>" (also beside "mismatch").
/// The driver (run_main) emits it exactly once, also when a command throws, so
/// a partial summary (e.g. steps compared before the error) is never lost.
class Summary {
 public:
  Summary();

  /// Adds or replaces a command-specific field.  Throws std::logic_error for
  /// the reserved keys "status", "steps", "mismatches" and "error".
  void set(const std::string& key, nlohmann::json value);
  /// Counts `n` more compared trace tokens.
  void add_steps(std::uint64_t n);
  /// Counts `n` more differing trace tokens.
  void add_mismatches(std::uint64_t n);
  /// Marks the run as failed with a one-line reason (status "error").
  void fail(const std::string& message);
  /// Marks the run as stopped by a signal before its end, with a one-line note (status
  /// "interrupted" unless a mismatch or error outranks it).
  void interrupt(const std::string& message);
  bool interrupted() const { return interrupted_.has_value(); }

  std::uint64_t steps() const { return steps_; }
  std::uint64_t mismatches() const { return mismatches_; }
  /// "exact", "mismatch", "interrupted" or "error".
  std::string status() const;
  /// The exit code that matches status().
  ExitCode exit_code() const;
  /// The whole summary as one JSON object: status, steps, mismatches, error
  /// (only when failed), then the command's fields in insertion order.
  nlohmann::ordered_json to_json() const;

  /// Writes to_json() as one line to `out` the first time it is called and
  /// does nothing afterwards.  Returns true when it wrote.
  bool emit(std::ostream& out);
  bool emitted() const { return emitted_; }

 private:
  nlohmann::ordered_json fields_;
  std::uint64_t steps_ = 0;
  std::uint64_t mismatches_ = 0;
  std::optional<std::string> error_;
  std::optional<std::string> interrupted_;
  bool emitted_ = false;
};

/// Everything a subcommand needs from the driver.
class Context {
 public:
  /// `source_root`: the repository root known at configure time;
  /// `executable`: the path of the running executable (may be empty).
  Context(std::filesystem::path source_root, std::filesystem::path executable);

  GlobalOptions options;
  Summary summary;
  /// The flag SIGINT/SIGTERM sets (engine::install_stop_handlers()), once a command installed
  /// the handlers; nullptr before. An error thrown after it is set (a chip under test ended by
  /// the same signal, a wait given up) ends the run as interrupted (exit 3), not as an error.
  const std::atomic<bool>* stop = nullptr;

  /// The "lockstep" logger (writes to stderr; level from --log-level).
  spdlog::logger& log() const;

  /// Stream for human-readable output: stdout normally, stderr under --json
  /// (stdout then carries only the summary object).
  std::ostream& out() const;

  /// The model directory to use, resolved once (see models.h for the order).
  /// When it falls back to the synthetic model, announces that on stderr in
  /// one line, once.  Throws InputError when --models or $LOCKSTEP_MODELS
  /// names a directory that is not usable.
  const ModelChoice& models();

  /// Folders searched for guest ELFs (story, bench, mutate), in order and each once:
  /// $LOCKSTEP_GUEST_DIR, the executable's ../guests, then the source tree's build/guests.
  /// Throws InputError when $LOCKSTEP_GUEST_DIR is set (not empty) and names no folder.
  std::vector<std::filesystem::path> guest_dirs() const;

  const std::filesystem::path& source_root() const { return source_root_; }
  const std::filesystem::path& executable() const { return executable_; }

 private:
  std::filesystem::path source_root_;
  std::filesystem::path executable_;
  std::optional<ModelChoice> models_;
};

/// Creates (or re-levels) the "lockstep" spdlog logger on stderr and makes it
/// spdlog's default logger, so libraries that log through spdlog never write
/// to stdout.  `level` is one of trace|debug|info|warn|error|off; throws
/// UsageError otherwise.  Returns the logger.
std::shared_ptr<spdlog::logger> setup_logging(const std::string& level);

/// Console bytes as valid UTF-8 (each byte of an invalid sequence becomes U+FFFD), for JSON.
std::string valid_utf8(const std::string& bytes);

/// What a guest wrote to one fd: its first kLimit bytes (1 MiB) and how many it wrote in all, so
/// that a guest printing for hours never has all its output in memory or in summary.json.
struct ConsoleHead {
  static constexpr std::size_t kLimit = std::size_t{1} << 20;
  std::string kept;         ///< the first min(total, kLimit) bytes
  std::uint64_t total = 0;  ///< bytes written
  void add(std::string_view bytes) {
    total += bytes.size();
    if (kept.size() < kLimit) kept.append(bytes.substr(0, kLimit - kept.size()));
  }
  bool truncated() const { return total > kept.size(); }
  /// Summary fields NAME (kept, as valid UTF-8), NAME_bytes (total) and NAME_truncated.
  void record(Summary& summary, const std::string& name) const;
};

/// How this process was invoked, for the commands it prints to be pasted into a shell (replay,
/// repeat and resume commands): argv[0] as a shell word when it names a path
/// (`build/bin/lockstep`), else `lockstep` (found on PATH). Set by run_main (app.h).
const std::string& command_name();
void set_command_name(const char* argv0);
/// `command` ("lockstep replay DIR", as summary.json and fuzz.json keep it) with its leading
/// "lockstep" written as command_name(), for a line printed to the terminal.
std::string as_invoked(const std::string& command);

/// Replaces newlines and other control characters with spaces so an error
/// message fits the one-line stderr contract; a message over 864 bytes keeps its first 600 and
/// last 200 bytes (at UTF-8 boundaries) around a "[... N characters left out ...]" marker.
std::string one_line(const std::string& message);

}  // namespace lockstep::cli
