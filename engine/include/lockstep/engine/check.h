// A whole check as the `lockstep run`, `story` and `replay` commands run it:
// choosing the chip and backend, the replay case file, signal handling, the
// live progress line, and the report written at the end (also when the run
// is interrupted or fails).  docs/engine.md describes the case format.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/chip/backend.hpp"
#include "lockstep/dut/dut_backend.h"
#include "lockstep/engine/backend_factory.h"
#include "lockstep/engine/engine.h"

namespace lockstep::engine {

/// Bad input to a check (missing file, unknown backend, no chip...): the CLI
/// prints what() as its one error line and exits with status 2.
class CheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A check that started and then failed (a chip under test that died, answered ERROR or timed
/// out; a report folder that could not be written): what() is the one line, `partial` holds
/// every step compared before the failure, so that the caller can still print and summarise it
/// (docs/spec/dut-protocol.md §8: the steps compared before a fault are kept).
class RunFailed : public CheckError {
 public:
  RunFailed(const std::string& what, RunResult partial_result, nlohmann::json summary_json)
      : CheckError(what), partial(std::move(partial_result)), summary(std::move(summary_json)) {}
  RunResult partial;
  nlohmann::json summary;  ///< the summary written (or that could not be written), status "error"
  /// The run ended (with a verdict or stopped) but its report folder could not be written: an
  /// error whether or not a stop came (docs/ci.md: exit 2), never read as "interrupted".
  bool report_unwritten = false;
};

/// Whether there is a built chip: the chip file this build compiled (or the prebuilt one it was
/// configured with) exists, or a chip is registered as kBuiltChipName in backend_factory()
/// (backend_factory.h; the `lockstep` main registers chip/rv32's compiler).
bool have_built_chip();

/// The chip file the built chip is loaded from: the file this build's chip compiler writes
/// (build/chips/rv32.chip), or the prebuilt file the build was configured with
/// (-DLOCKSTEP_COMPILE_CHIP=OFF -DLOCKSTEP_PREBUILT_CHIP=FILE); empty when the build has neither.
/// The file may not exist (not compiled yet, or moved away).
std::filesystem::path built_chip_file();

/// A chip ready to run, and where it came from.
struct LoadedChip {
  std::shared_ptr<const chip::Chip> chip;
  std::string source;  ///< the chip file's path, "built", or "prebuilt FILE" (a build without the chip compiler)
  std::string hash;    ///< XXH3-64 (hex) of the serialised chip
};

/// Loads `path` (a chip file), or, when path is empty, the built chip: the build's chip file
/// when it exists, else the chip registered as kBuiltChipName in backend_factory(), compiled.
/// Throws CheckError "--chip: ..." when `path` does not load, "the built chip file: ..." when
/// the build's file exists but does not load, and "no built chip in this build: pass --chip
/// FILE" when there is neither a file nor a registered chip; "--chip PATH: vocab_size N is below
/// trace-v3's 20736 ..." for a chip whose vocabulary cannot hold every trace token (trace.md §2).
/// `named_by` replaces "--chip" in those messages where the path came from elsewhere (a case
/// file's chip.path).
LoadedChip load_chip_or_built(const std::string& path, const std::string& named_by = "--chip");

/// A backend over `chip` with one stream, made by backend_factory() (backend_factory.h): "cpu",
/// or "cuda" (chip/cuda_executor.hpp; throws CheckError with one line when this build has no
/// CUDA support or no device is present; with a null `chip` it only checks that and returns
/// nullptr).  Throws CheckError "--backend must be cpu or cuda (got 'NAME')" (every registered
/// backend named) for a name the factory does not know.
std::unique_ptr<chip::ChipBackend> make_backend(const std::string& name,
                                                std::shared_ptr<const chip::Chip> chip);

/// Reads a guest ELF file and loads it on a reference machine (its segments inside RAM, its entry
/// point, its vector sections: ref::Machine::load).  Throws CheckError naming the file on any problem.
Guest read_guest(const std::filesystem::path& path);

/// A replayable case (docs/engine.md, "Cases"): everything needed to run a
/// check again.
struct Case {
  /// The command that wrote the case ("run", "story", ...); empty in cases written before
  /// lockstep recorded it. `--resume` continues a case only with the command that wrote it.
  std::string command;
  std::string guest_name;
  std::filesystem::path guest_path;    ///< may be empty when bytes are embedded
  std::vector<std::uint8_t> guest_elf; ///< the ELF file's bytes (embedded), may be empty
  std::string guest_digest;            ///< image_digest of the guest
  std::string chip_path;               ///< empty: the built chip
  std::string chip_hash;               ///< LoadedChip::hash (checked on replay when set)
  std::string backend = "cpu";         ///< "cpu", "cuda", or "dut" (then `dut` says how)
  std::optional<dut::DutConfig> dut;   ///< a chip under test (docs/spec/dut-protocol.md)
  Mode mode = Mode::kForced;
  std::uint64_t teacher_forced_steps = 0;
  Compare compare = Compare::kEveryStep;
  std::uint64_t steps = 0;             ///< max steps (0: to the end)
  std::uint64_t checkpoint_every = 0;
  /// --hash-every N (0: none) and --classify-window N of the run: recorded so that --resume and
  /// replay run with them too (found by an outside tester: a resumed run stopped recording hashes,
  /// and a replay classified with another window). Absent in a case.json: 0 and 4096.
  std::uint64_t hash_every = 0, classify_window = 4096;
  /// `run --allow-trap`: a guest that ends in a trap with no mismatch is exact, not an error.
  /// Recorded so that --resume judges the run's end as the run would have (found by an outside
  /// tester: a resumed run took or dropped the flag and flipped the verdict). Absent: false.
  bool allow_trap = false;
  nlohmann::json expect;               ///< informational: what the run found

  /// What a case's "expect" records of a divergence (docs/engine.md, "Cases"): its step as
  /// first_divergence, its pc, field and both token ids (which replay compares), and the tokens'
  /// names for the reader.
  static nlohmann::json expect_of(const Divergence& d);

  nlohmann::json to_json() const;
  /// Throws CheckError (one line) on a malformed case.
  static Case from_json(const nlohmann::json& j);
  /// Reads a case: a JSON file, or a directory holding case.json.
  static Case read(const std::filesystem::path& path);
  /// The guest: the embedded bytes when present, else the file at guest_path.
  Guest guest() const;
};

/// Installs SIGINT/SIGTERM handlers that set the returned flag (first signal),
/// restoring the default action so that a second signal ends the process.
const std::atomic<bool>* install_stop_handlers();
/// Makes signal `sig` a stop request too, as SIGINT and SIGTERM are (call after
/// install_stop_handlers). `lockstep fuzz --shard mpi` adds SIGUSR1 and SIGUSR2, the signals
/// Open MPI's mpirun forwards to every rank (`kill -USR1 <mpirun>` stops an MPI campaign with
/// every shard's report written; SIGINT to mpirun makes Open MPI end the ranks itself).
void add_stop_signal(int sig);

/// The live progress line on stderr: on a terminal one line rewritten in
/// place (steps, steps/s, ETA, the tail of the story so far), cut to the
/// terminal's width (terminal_columns(), read again at every refresh) so that
/// it never wraps and "\r\033[K" always erases all of it; otherwise a plain
/// line every `plain_interval` seconds.
class ProgressLine {
 public:
  explicit ProgressLine(std::ostream& err, bool terminal, double plain_interval = 10.0);
  /// Options::on_progress target.
  void update(const Progress& p);
  /// Appends an output byte to the story tail (the last 48; a control byte shows as a space,
  /// a byte >= 0x80 as '?': only printable ASCII reaches the terminal).
  void output(char c);
  /// Clears the live line (terminal) before other output.
  void clear();
  /// Seconds between engine progress callbacks this line wants.
  double interval() const { return terminal_ ? 0.5 : plain_interval_; }
  bool terminal() const { return terminal_; }

 private:
  std::ostream& err_;
  bool terminal_;
  double plain_interval_;
  std::string tail_;
  bool shown_ = false;
};

/// The width of the terminal on stderr: ioctl(TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_columns();

/// `line` cut to at most `columns` characters (UTF-8 sequences count as one, and are never
/// split).
std::string fit_columns(const std::string& line, int columns);

/// True when stderr is a terminal (and TERM is not "dumb").
bool stderr_is_terminal();

/// Everything a command needs to run one check.
struct CheckRequest {
  std::string command = "run";
  Case the_case;
  Options options;                        ///< mode etc. are filled from the_case
  std::filesystem::path report_dir;       ///< empty: no report
  bool resume = false;                    ///< continue from report_dir/checkpoints
  /// The caller has claimed report_dir for this run already (claim_run_folder, before its own
  /// checks of the options), so run_check does not claim it again.
  bool folder_claimed = false;
  std::function<void(std::size_t, char)> on_output;  ///< chip stream's OUT bytes
  /// The chip stream's console bytes once compared: (stream, fd 1 or 2, byte); Options::on_console.
  std::function<void(std::size_t, int, char)> on_console;
  /// What named the case's chip file, for its errors: "--chip", or a case file's "chip.path".
  std::string chip_named_by = "--chip";
  /// How a load error of the chip under test's --dut-chip file names it ("--dut-chip", or, for a
  /// replay that did not give one, "the case's dut.chip_file").
  std::string chip_file_named_by = "--dut-chip";
  /// When set, used instead of loading the case's chip and backend (tests).
  chip::ChipBackend* backend = nullptr;
  /// A guest that ends in a trap (isa.md §6, vector.md §6) with no mismatch ends the check as an
  /// error: status "error", one line naming the trap, its pc and word, and the steps compared (all
  /// exact), so that a guest that stopped at an illegal instruction is never read as a pass. Set
  /// by `lockstep run` and `story` unless --allow-trap; replays and campaigns, whose programs may
  /// be drawn to trap, leave it off.
  bool trap_is_error = false;
  /// Adds the command's own fields to every summary the check writes or returns (summary.json of
  /// a pass, a mismatch, an interruption or a failure): `story`'s story_complete,
  /// free_running_steps and reference_end, so that the saved report says what stdout says. The
  /// summary of a run that failed after it started already has its "status" ("error", or
  /// "interrupted" when a stop request ended it) when this is called.
  std::function<void(nlohmann::json& summary, const RunResult& result)> add_to_summary;
};

/// What a trap may owe to how the guest was built, from its ELF's e_flags: "; the ELF is marked
/// RVC (compressed instructions, ...)" for any trap, "; the ELF is built for hard float (...)"
/// (float ABI ilp32f/ilp32d) for ILLEGAL_INSTRUCTION; empty when neither applies.
std::string trap_build_hint(const format::GuestImage& image, std::uint32_t trap_code);

/// The one line for a guest that ended in a trap with chip and reference agreeing: "the guest
/// ended in trap CODE NAME at pc 0x... (word 0x...) after N steps, ...". Runs the reference on
/// `guest` again to find the pc (cheap: the reference runs at about 10^8 steps/s). Adds a hint
/// when the ELF is marked RVC (compressed instructions, which the machine does not have).
std::string trap_end_line(const Guest& guest, const StreamResult& stream);
/// The one line for a stream that ended "self_loop" with chip and reference agreeing: "the guest
/// jumps to itself at pc 0x... (jal zero, 0x...) and can never exit: stopped after N steps, ...",
/// or, for a longer loop (StreamResult::loop_period > 1), "the guest loops forever: from pc 0x...
/// (...) the same P instructions repeat from the same registers, ...", with how to end a guest or
/// bound the run.
std::string self_loop_line(const StreamResult& stream);
/// How a stream's guest ended, one line: "the guest exited with status 3" (isa.md §5: a0 &
/// 0xff), "the guest ended in trap 3 EBREAK at pc 0x00010040 (word 0x00100073)" (isa.md §6),
/// "the guest had not ended: stopped at the step limit after N steps", or "" for any other end
/// (a divergence, an interruption).
std::string guest_end_text(const Guest& guest, const StreamResult& stream);

/// The lock file of a run folder (lock_run_folder).
inline constexpr const char* kRunFolderLock = ".lockstep.lock";

/// Takes `dir` (created when missing) for this process until it ends: an exclusive flock(2) on
/// DIR/.lockstep.lock, which holds the pid. Throws CheckError "the run folder DIR is in use by
/// another lockstep run (pid N); give each run its own --report folder" when another process
/// holds it, so that two runs never write one folder's summary, case or checkpoints. Taking a
/// folder this process holds already does nothing.
void lock_run_folder(const std::filesystem::path& dir);

/// The folder inside a run folder where claim_run_folder keeps the earlier run's files until the
/// new run ends with a verdict of its own: "earlier-run".
inline constexpr const char* kEarlierRunFolder = "earlier-run";

/// Makes `dir` the run folder of a new run of `command` (not a resume): locks it
/// (lock_run_folder), moves what an earlier run left there (its summary.json, junit.xml,
/// report.html, case.json, checkpoints/, plots/; fuzz's fuzz.json, programs.tsv and fail-*
/// case folders) into DIR/earlier-run when it holds more than a report (an earlier-run of its
/// own goes inside: DIR/earlier-run/earlier-run, when that one ended with a verdict, exact or
/// mismatch; one without a verdict is removed and its own earlier run goes inside instead, so
/// that a folder keeps at most the run it replaces and the last run with a verdict before it:
/// found by an outside tester, a command stopped and started again eight times nested eight
/// runs, checkpoints and all), and writes a summary.json, junit.xml and
/// report.html of status "error" saying the run did not finish (with "earlier_run", its absolute
/// path, when one is kept), which the run's own report replaces. So a run that fails before its
/// report, or is killed, never leaves an earlier run's pass or case in the folder (docs/ci.md),
/// and a command that fails or is stopped before a verdict loses nothing: DIR/earlier-run is the
/// earlier run's folder as it was, until retire_earlier_run. Throws CheckError (one line) when
/// the folder cannot be written; when it holds files and is not a run folder (neither
/// DIR/.lockstep.lock nor a summary.json naming its command): someone's folder is refused, never
/// cleared; or when the earlier run to be moved keeps one that another process is using.
/// Returns a note to print ("" when none): the unfinished run it removed, and how to continue one.
[[nodiscard]] std::string claim_run_folder(const std::filesystem::path& dir, const std::string& command);

/// Whether `summary` (a run folder's summary.json) is claim_run_folder's placeholder, which says
/// the run did not finish (it is running, or ended before it wrote its result), not the run's own.
bool is_unfinished_placeholder(const nlohmann::json& summary);

/// Names the run in DIR's "did not finish" summary (claim_run_folder), as its own report will:
/// the fields of `identity` (an object: "guest", "run" with "mode", "max_steps" and "streams"
/// of one {"guest": name, "end": "running", "steps": 0, "mismatches": 0}, a campaign's "fuzz"),
/// so that the JUnit file of a run that fails or is killed before its own report has the test
/// names the run's report would have, not the command's. Kept by fail_claimed_run_folders.
/// Does nothing when this process did not claim DIR or the run has written its own summary;
/// a folder that cannot be written keeps its placeholder (no error).
void name_claimed_run(const std::filesystem::path& dir, const nlohmann::json& identity);

/// What a run's report names it by, for name_claimed_run: {"guest": guest, "run": {"mode": mode
/// (left out when ""), "max_steps": max_steps, "streams": [{"guest": stream_guest, "end":
/// "running", "steps": 0, "mismatches": 0}]}}, as summary_json has them. `guest` is the guest's
/// path as given (or its name when it has none), `stream_guest` its name (the path's stem).
nlohmann::json run_identity(const std::string& guest, const std::string& stream_guest, const std::string& mode,
                            std::uint64_t max_steps);

/// The run in `dir` (new or resumed) ended with a verdict of its own (exact or mismatch, not
/// interrupted): DIR/earlier-run, the earlier run it replaces, is removed. Returns "" or a note
/// line: kept because another process is using it (a `--resume DIR/earlier-run` running), or
/// could not be removed. Never throws.
std::string retire_earlier_run(const std::filesystem::path& dir);

/// The absolute path of DIR/earlier-run when `dir` keeps one, else "".
std::string earlier_run_of(const std::filesystem::path& dir);

/// The command failed (`status` "error") or was interrupted ("interrupted") with `message` (its
/// one line) before writing its report: every run folder this process claimed whose summary.json
/// is still claim_run_folder's "did not finish" gets a summary, JUnit and page of that status
/// with that message, so that the folder says why (a bad ELF, an option). A folder that keeps an
/// earlier run says where, in the summary's "earlier_run". `steps`: the steps the command
/// compared before it failed, the summary's "steps" (a report that could not be written loses
/// nothing it can say). Never throws: a folder that cannot be written keeps its placeholder,
/// which is an error too.
struct FailedRunFolders {
  std::vector<std::string> notes;         ///< one line per kept earlier run, for the command's stderr
  std::vector<std::string> earlier_runs;  ///< each kept earlier run's folder (absolute), for --json
};
FailedRunFolders fail_claimed_run_folders(const std::string& status, const std::string& message,
                                          std::uint64_t steps = 0);

/// Whether this process has claimed a run folder (claim_run_folder).
bool claimed_a_run_folder();

/// Whether this process holds `dir`'s lock (lock_run_folder: a folder it claimed, resumes, or
/// took and refused).
bool holds_run_folder(const std::filesystem::path& dir);

/// What a check produced.
struct CheckOutcome {
  RunResult result;
  nlohmann::json summary;  ///< the report's summary.json
  std::string chip_source, chip_hash;
  /// One line per capability the chip under test lacks, saying what that ruled out (empty for
  /// the built-in executors; docs/spec/dut-protocol.md §7).
  std::vector<std::string> capability_notes;
  /// How a one-guest run's guest ended, one line (guest_end_text), or "".
  std::string end_text;
  /// The chip under test's fault line when it failed after a divergence was found (the run is
  /// then a mismatch, exit 1, and stops; summary.json's "chip_fault"), else "".
  std::string chip_fault;
};

/// The lines of CheckOutcome::capability_notes for a backend's capabilities; `chip_file`: the
/// chip under test runs beside its chip file (--dut-chip, shadow.h), which locates its divergences.
std::vector<std::string> capability_notes(const chip::Capabilities& caps, bool chip_file = false);

/// A backend for a chip under test; throws CheckError (one line) when it cannot be started,
/// reached or spoken to.
/// Beside `config.chip_file` when it is given (shadow.h), whose load errors begin with
/// `chip_file_named_by`.
std::unique_ptr<chip::ChipBackend> make_dut_backend(const dut::DutConfig& config,
                                                    const std::string& chip_file_named_by = "--dut-chip");

/// Runs a check: loads the chip and guest of the case (or starts the chip under test of
/// `the_case.dut`), runs (or resumes) the engine with checkpoints in report_dir/checkpoints when
/// asked, and writes the report (summary.json, junit.xml, report.html, case.json) to report_dir
/// -- also when the run is interrupted or fails (then with status "interrupted" / "error" and
/// the steps done so far). A refused --resume (no usable checkpoint, or one written for another
/// run) throws CheckError and leaves the folder as it was. On resume, "lockstep: resumed from
/// step N (FILE)" and every skipped checkpoint go to `err`, one line each. With a report folder
/// the summary has "replay": "lockstep replay DIR". Throws CheckError for bad input found
/// before the run starts, and
/// RunFailed (with the partial result) when the run fails after it started, when the chip under
/// test faulted, or when the report cannot be written.
CheckOutcome run_check(const CheckRequest& request, std::ostream& err);

/// The closing text of a check: each divergence's report, then one line
/// "steps compared N, mismatches M, digest D (T s, R steps/s)"; after a divergence "(T s: C s
/// comparing at R steps/s, D s diagnosing the divergence)": the rate never counts the replay.
std::string result_text(const RunResult& result);

/// The summary JSON of a result, as summary.json holds it: status ("exact", "mismatch",
/// "interrupted"), command, steps, mismatches, digest, chip, chip_hash, mode, backend, seconds,
/// steps_per_second, diagnosis_seconds (the names --json uses at its top level), with one stream
/// its end (and exit_status, or trap_code and trap_name), then the whole result as "run".
nlohmann::json summary_json(const std::string& command, const RunResult& result,
                            const std::string& chip_source, const std::string& chip_hash);

}  // namespace lockstep::engine
