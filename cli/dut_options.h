// The `--dut*` options shared by every command that runs a chip (run, story, fuzz, replay, bench,
// dut-check): a chip under test started as a child process or reached over a socket
// (docs/spec/dut-protocol.md), and the partial result of a run that a chip fault ended.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/context.h"
#include "lockstep/dut/dut_backend.h"
#include "lockstep/engine/check.h"

namespace lockstep::cli {

/// Adds --dut, --dut-connect, --dut-vocab, --dut-timeout and --dut-token-file to `cmd`, stored
/// in `config`.
void add_dut_options(CLI::App* cmd, dut::DutConfig& config);

/// Adds --dut-chip FILE to `cmd` (run, story, fuzz, replay: the commands that attribute a
/// divergence), stored in config.chip_file.
void add_dut_chip_option(CLI::App* cmd, dut::DutConfig& config);

/// Checks the options' combination: not both --dut and --dut-connect, --dut-vocab/--dut-timeout/
/// --dut-start-timeout/--dut-token-file/--dut-chip only with one of them (a timeout counts as given when it
/// is on `cmd`'s command line, even at its default), and no --chip or a --backend other than cpu
/// beside them (`backend` and `chip` as given). `cmd` is the command add_dut_options() added the
/// options to. `for_recorded_dut`: --dut-vocab, --dut-timeout, --dut-start-timeout and
/// --dut-token-file may come alone, for the chip under test a case records (replay, which checks
/// that it records one). Throws UsageError. Returns whether a chip under test was asked for.
bool check_dut_options(const CLI::App* cmd, const dut::DutConfig& config, const std::string& chip,
                       const std::string& backend, bool for_recorded_dut = false);

/// A stream's first divergence, or why its divergence is unlocated (Compare::kEnd), into the
/// --json summary ("divergence", "divergence_unlocated"), as run, story, replay and a failed run
/// report them.
void summarise_divergence(Context& ctx, const engine::StreamResult& stream);

/// The facts of a finished check's summary.json (engine::CheckOutcome::summary, from
/// engine::summary_json and add_to_summary) that --json gives at its top level too, copied under
/// the same names, so that the two agree by construction: digest, chip, chip_hash, guest, mode,
/// backend, seconds, steps_per_second, diagnosis_seconds, end, exit_status, trap_code, trap_name
/// (each when the summary has it).
void summarise_run(Context& ctx, const nlohmann::json& summary);

/// Writes the line that follows a run's closing line on stdout when its report could not be
/// written (docs/ci.md): `not recorded: WHY`, control characters escaped, flushed.
void say_not_recorded(std::ostream& out, const std::string& why);

/// Records a run that failed after it started (RunFailed): its steps and mismatches go to the
/// summary, its closing text and the capability notes to ctx.out(); the caller then throws the
/// one-line error.
void report_partial(Context& ctx, const engine::RunFailed& failed);

/// --resume DIR continues the run as DIR/case.json says: throws UsageError when the case was
/// written by another command than `cmd` (a `run` folder given to `story --resume`), or naming the first of
/// `names` (options of `cmd`) that was given beside it, e.g. "--steps cannot be given with
/// --resume: the run continues as DIR/case.json says (steps 5000)".
void reject_with_resume(const CLI::App* cmd, const std::vector<std::string>& names, const std::string& dir,
                        const engine::Case& the_case);

/// After a run with mismatches, one stderr line with the command that reruns it: "lockstep:
/// replay it: lockstep replay DIR" (or, without a report folder, how to get one).
void print_replay_hint(const engine::RunResult& result, const std::filesystem::path& report_dir);

/// What the guest printed on the chip, as decoded from the chip's own trace (Options::on_console):
/// fd 1 and fd 2 bytes of stream 0, compared with the reference's before they are kept (the first
/// ConsoleHead::kLimit bytes of each, and the counts).
struct ChipConsole {
  ConsoleHead out, err;  ///< fd 1, fd 2
  char last_out = '\n';  ///< the last byte on fd 1 ('\n' before the first)
  void add(int fd, char c) {
    (fd == 1 ? out : err).add(std::string_view(&c, 1));
    if (fd == 1) last_out = c;
  }
  /// One line saying where the chip's output stopped matching the reference's, or "" when the
  /// run did not diverge.
  std::string stopped_matching(const engine::RunResult& result) const;
  /// Summary fields: "stdout", "stderr" (valid UTF-8), and "output_stopped_matching" when diverged.
  void record(Summary& summary, const engine::RunResult& result) const;
};

/// The "; continue with: lockstep COMMAND --resume DIR" part of an interrupted run's line, from
/// the newest checkpoint in DIR/checkpoints: "" when there is none (nothing to resume from), and
/// when it is older than the `steps` compared (a chip under test stopped mid-request takes no
/// checkpoint at the stop), the step it resumes from.
std::string resume_hint(const std::string& command, const std::filesystem::path& dir, std::uint64_t steps);

/// The capability notes of a chip under test, one "note: ..." line each, to ctx.out().
void print_capability_notes(Context& ctx, const std::vector<std::string>& notes);

/// A chip under test that failed after a divergence (CheckOutcome::chip_fault): sets "chip_fault"
/// in the command's summary and writes one `lockstep: warn:` line on stderr saying that the
/// divergence stands and the run ends as a mismatch. Does nothing for an empty `fault`.
void note_chip_fault(Context& ctx, const std::string& fault);

/// A free-running run (`c.mode` free) whose compared steps all fell within its first
/// `c.teacher_forced_steps` (teacher-forced) steps compared no free-running step: the summary's
/// "free_running_steps" says how many it compared, and a run with none says so in one
/// "note: ..." line to ctx.out(), so that a teacher-forced check is never read as a free one.
void note_free_running_steps(Context& ctx, const engine::Case& c, const engine::RunResult& r);
/// The free-running steps of run `r` of case `c` (its steps past c.teacher_forced_steps; meaningful
/// in free mode), the summaries' "free_running_steps".
std::uint64_t free_running_steps(const engine::Case& c, const engine::RunResult& r);

}  // namespace lockstep::cli
