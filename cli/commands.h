// Every `lockstep` subcommand, one registration function each.
//
// To add a subcommand <name>:
//   1. write cli/cmd_<name>.cpp defining
//        void add_<name>_command(CLI::App& app, lockstep::cli::Context& ctx);
//      which calls app.add_subcommand("<name>", "...") and sets its callback;
//      the callback reports through ctx.summary (add_steps, add_mismatches,
//      set("field", value)), prints human text to ctx.out(), and throws
//      lockstep::cli::InputError / UsageError for bad input (exit 2);
//   2. declare it below (one line);
//   3. add it to the list in cli/main.cpp (one line);
//   4. add the file to LOCKSTEP_CLI_COMMANDS in cli/CMakeLists.txt and link
//      your library to the `lockstep` target there;
//   5. add a test under tests/cli/ (see cli_test.cpp) or tests/<yours>/.
#pragma once

#include "cli/app.h"
#include "cli/context.h"

namespace CLI {
class App;
}

namespace lockstep::cli {

/// `lockstep models`: which model directory (or the synthetic model) a run
/// would use, with the file sizes.
void add_models_command(CLI::App& app, Context& ctx);

/// The SHA-256 (hex) of a model folder's two files, once both passed the converter's own checks
/// (golden/llama2c.h: parse_checkpoint, parse_tokenizer against the checkpoint's vocab_size).
struct ModelDigests {
  std::string checkpoint_sha256, tokenizer_sha256;
  /// Why the vector build (stories_vx) cannot take this checkpoint, or empty when it can
  /// (golden/llama2c.h vector_build_refusal).
  std::string vector_build_refusal;
};
/// Checks `choice`'s stories260K.bin and tok512.bin as `lockstep models` does; every command
/// that reads a model folder uses it, so no command accepts files another refuses. Throws
/// InputError (one line naming the file) for a file the converter would refuse, and
/// std::logic_error for the synthetic model.
ModelDigests check_model_files(const ModelChoice& choice);
/// run_main's on_failure for the executable: a command that failed or was interrupted before
/// writing its report leaves its reason in the run folder it claimed
/// (engine::fail_claimed_run_folders); a `run`, `story`, `fuzz` or `replay` that failed before it
/// claimed its --report DIR (its command line or an option refused), where DIR holds an earlier
/// run's summary.json (for replay, an earlier replay's), claims DIR and leaves the refusal there,
/// so that a bad option never leaves an earlier run's pass (docs/ci.md); not with --resume (the
/// folder is the resumed run's) nor --shard mpi. Prints a note line per earlier run kept, and
/// returns their folders (absolute), which --json's summary names as "earlier_run".
std::vector<std::string> settle_run_folders(const CommandFailure& failure);

/// engine::claim_run_folder(dir, command), its note (an unfinished earlier run it removed) printed
/// as a `lockstep: note:` line on stderr. Throws what claim_run_folder throws (CheckError).
void claim_run_folder_noted(const std::filesystem::path& dir, const std::string& command);


/// `lockstep run PROGRAM.elf`: reference and chip in lock-step (docs/engine.md).
void add_run_command(CLI::App& app, Context& ctx);
/// `lockstep story`: the story guest teacher-forced, then free-running (docs/engine.md).
void add_story_command(CLI::App& app, Context& ctx);
/// `lockstep replay CASE`: re-runs a saved case (docs/engine.md, "Cases").
void add_replay_command(CLI::App& app, Context& ctx);
/// `lockstep fuzz`: random programs in lock-step, coverage, shrunk failure cases (fuzz/README.md).
void add_fuzz_command(CLI::App& app, Context& ctx);
/// `lockstep report DIR`: renders the HTML/JUnit report again from DIR/summary.json.
void add_report_command(CLI::App& app, Context& ctx);

/// `lockstep ref PROGRAM.elf`: runs a guest on the reference model.
void add_ref_command(CLI::App& app, Context& ctx);
/// `lockstep compile [--out FILE]`: compiles the scalar chip and writes its chip file.
void add_compile_command(CLI::App& app, Context& ctx);
/// `lockstep bench [--quick]`: speed figures beside their anchors (docs/performance.md).
void add_bench_command(CLI::App& app, Context& ctx);
void add_mutate_command(CLI::App& app, Context& ctx);
/// `lockstep chip-server CHIP`: the built-in executors over the chip-under-test protocol.
void add_chip_server_command(CLI::App& app, Context& ctx);
/// `lockstep dut-check --dut CMD`: conformance checks of a chip under test's adapter.
void add_dut_check_command(CLI::App& app, Context& ctx);

}  // namespace lockstep::cli
