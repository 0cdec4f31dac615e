// The driver of the `lockstep` command: global options, subcommand
// registration, error mapping and the --json summary.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/context.h"

#include <CLI/CLI.hpp>

namespace lockstep::cli {

/// Registers one subcommand on `app` (see commands.h for the convention).
using CommandRegistrar = void (*)(CLI::App& app, Context& ctx);

/// "lockstep 0.1.0 (trace spec trace-v3)": project version and the trace
/// specification version this build implements.
std::string version_line();

/// The trace specification version, e.g. "trace-v3".
std::string trace_spec_version();

/// Most steps any step-count option takes: 10^15 steps are about 470 years at the chip's
/// 67,000 steps/s; a larger number is a typo, not a plan.
inline constexpr std::uint64_t kMaxStepsOption = 1'000'000'000'000'000ull;

/// A CLI11 check for an unsigned option: its text is a plain decimal number (no sign, no
/// exponent) from `lo` to `hi`; else "must be a whole number from LO to HI (got 'TEXT')".
CLI::Validator count_range(std::uint64_t lo, std::uint64_t hi);

/// A CLI11 check for a FLOAT option that is a fraction: its value is from 0 to 1; else
/// "must be a fraction from 0 to 1 (got 'TEXT')", also for text that is not a number (it runs
/// before check_numeric_options' check, which the option also gets).
CLI::Validator fraction_range();

/// A CLI11 check for a FLOAT option that is a time in seconds: more than 0 and at most `most`;
/// else "must be a number of seconds more than 0 and at most MOST (got 'TEXT')", also for text
/// that is no number (nan, inf, a sign or a space included).
CLI::Validator seconds_range(double most);

/// Adds to every numeric option of `app` and its subcommands (CLI11 type UINT, INT or FLOAT) a
/// check that its text is a plain number of that kind that fits (UINT: 0..2^64-1, no sign; FLOAT:
/// finite and not negative), so that "-1", "99999999999999999999" or "1e20" is one usage error
/// naming the option instead of a wrapped value. Commands add their own narrower ranges.
void check_numeric_options(CLI::App& app);

/// A command that ended without its result: what run_main's `on_failure` is told.
struct CommandFailure {
  std::string status;   ///< "error" or "interrupted"
  std::string message;  ///< the one line printed after "lockstep: error: " / "lockstep: interrupted: "
  bool parse_error = false;  ///< the command line was refused before any command ran
  int argc = 0;
  char** argv = nullptr;
  std::uint64_t steps = 0;  ///< the steps the command compared before it failed (its summary's)
};

/// A command that stops at once on SIGINT/SIGTERM, without its result (`bench`, `compile`,
/// `dut-check`, `models`, `report`): run_main installs, before every command's callback, a
/// handler that writes one line `lockstep: interrupted: lockstep CMD was stopped before it
/// finished; ...` (and, with --json, a summary object of status "interrupted") and ends the
/// process with exit status 3 (docs/ci.md), removing the file named here first (a half-written
/// output; empty: none). A command that keeps partial results installs its own handlers instead
/// (engine::install_stop_handlers). The path is at most 4,095 bytes (longer: not removed).
void remove_on_interrupt(const std::string& path);

/// A function the fallback SIGINT/SIGTERM handler (remove_on_interrupt) calls before it ends the
/// process: it must be async-signal-safe (main.cpp: dut::kill_chip_processes_now, so that no
/// chip under test outlives the command). nullptr: none.
void set_interrupt_hook(void (*hook)() noexcept);

/// Runs the lockstep command line: parses argv with every registrar's
/// subcommand, runs the chosen one, prints the summary (under --json) and
/// returns the process exit code (0 exact, 1 mismatch, 2 error, 3 interrupted; see errors.h).
/// `on_failure` (may be empty) is called once when the command ends in an error or an
/// interruption, after its line is printed (the executable settles its run folders there:
/// cli/commands.h settle_run_folders); the earlier runs it returns (folders kept in the failed
/// command's run folders) go into the --json summary as "earlier_run". Never throws.
int run_main(int argc, char** argv, const std::vector<CommandRegistrar>& registrars,
             const std::function<std::vector<std::string>(const CommandFailure&)>& on_failure = {});

}  // namespace lockstep::cli
