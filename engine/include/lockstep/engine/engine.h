// The lock-step engine: the reference model (ref::Machine) and a chip
// (any chip::ChipBackend) run side by side over guests, one trace token per
// step, and every step is compared (docs/engine.md).
//
//   teacher-forced  the chip is fed the reference's token t_{n-1} and its
//                   prediction is compared with t_n;
//   free-running    the chip is fed its own previous prediction, and its whole
//                   stream is compared with the reference's at every step.
//
// Several guests run as one batch: stream i of the backend runs guest i and
// every step is one ChipBackend::step_batch call over the active streams.
// On the first divergence of a stream the engine builds a Divergence: the step,
// the instruction, the trace field, both tokens and the differing bits, the
// last instructions, the layer the probe map blames, and (after a teacher-
// forced replay from the last snapshot) whether it was a single-step fault or
// corrupted state.  Long runs write checkpoints (both sides' states, zstd,
// written atomically) from which a run resumes to the same result.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/chip/backend.hpp"
#include "lockstep/format/elf.h"

namespace lockstep::engine {

/// How the chip's input tokens are chosen.
enum class Mode {
  kForced,  ///< teacher-forced: the chip is fed the reference's tokens
  kFree,    ///< free-running: the chip is fed its own predictions
};
/// "forced" / "free".
std::string_view to_string(Mode mode);
/// Parses "forced" or "free"; nullopt otherwise.
std::optional<Mode> parse_mode(std::string_view text);

/// When tokens are compared.
enum class Compare {
  kEveryStep,  ///< every step; the first differing token ends the stream
  kEnd,        ///< only the digests and lengths of the whole streams at the end;
               ///< a difference is then located by bisection over the checkpoints
};
/// "step" / "end".
std::string_view to_string(Compare compare);
/// Parses "step" or "end"; nullopt otherwise.
std::optional<Compare> parse_compare(std::string_view text);

/// One guest program of a run.
struct Guest {
  std::string name;             ///< shown in reports (e.g. the ELF file's stem)
  std::filesystem::path path;   ///< where it was read from (may be empty)
  format::GuestImage image;
};

/// One executed instruction as the reference saw it.
struct InstructionRecord {
  std::uint64_t first_step = 0;  ///< step (1-based) of its first token
  std::uint32_t pc = 0;
  std::uint32_t word = 0;        ///< 0 when the fetch faulted
  std::vector<std::uint32_t> tokens;
  /// ref::disassemble(word, pc), or "<fetch fault>".
  std::string disassembly() const;
  nlohmann::json to_json() const;
};

/// One probe-map field compared during layer attribution.
struct ProbeCheck {
  int layer = -1;           ///< -1: after the embedding
  std::string after;        ///< "embed" | "memory" | "mlp"
  std::string field;        ///< e.g. "next_kind"
  std::string meaning;      ///< e.g. "one-hot of the next token's kind"
  bool agrees = true;
  std::vector<float> expected, actual;
  std::vector<std::uint32_t> differing;  ///< element indices that differ (first 16)
  /// Non-empty: the field was not compared, and why (a next-token field that a
  /// later sublayer still writes into, or an input-token field that an earlier
  /// sublayer has written into: docs/engine.md §3).
  std::string skipped;
  nlohmann::json to_json() const;
};

/// Which layer the probe map blames for a wrong token (docs/engine.md,
/// "Layer attribution").
struct Attribution {
  /// "layer": first disagreement at a layer's probe point; "embedding": at the
  /// embedding; "unembedding": every checked field agrees, so the wrong token
  /// comes from the unembedding/argmax; "unprobed": every compared field
  /// agrees but the unembedding reads a dimension no compared next-token field
  /// shows in its final form (layer/sublayer/field name its last writer: the
  /// culprit is a sublayer writing it, or the unembedding); "unavailable": the
  /// probe map has no field of the convention (or probing failed: see text). Beside a chip file
  /// (--dut-chip, docs/engine.md §3.1) "layer"/"embedding" name the first probe where the chip
  /// under test differs from the file on the CPU executor, and "unembedding"/"unprobed" that
  /// every probe agreed while the file computed the right token; a file that computes the wrong
  /// token is attributed by its own probes, as above.
  std::string status = "unavailable";
  int layer = -1;
  std::string sublayer;  ///< "memory" | "mlp" | "embed" | ""
  std::string field;
  std::string text;      ///< one line
  std::vector<ProbeCheck> checks;  ///< in execution order, up to the first disagreement
  /// The interval (docs/engine.md §3): the last probe point, before the first disagreeing one,
  /// where a compared field agrees ("embedding", "layer 3 (mlp)"; "" when none), and the point
  /// where the first field disagrees ("unembedding" when every compared field agrees).
  std::string last_agreeing, first_disagreeing;
  /// Every sublayer that can have produced the wrong value, in execution order ("embedding",
  /// "layer 4 (memory)", "layer 4 (mlp)", "unembedding"): the writers of the differing field up
  /// to the disagreeing point, and, recursively, the writers of every field they read, except
  /// a field a compared probe shows correct where it is read. With the chip's dataflow unknown (a
  /// chip under test: its probe map has writers only), every sublayer up to the point.
  std::vector<std::string> candidates;
  bool dataflow_known = false;  ///< candidates come from the chip's readers and writers
  /// Beside a chip file (--dut-chip, docs/engine.md §3.1), which of the two is wrong at this step:
  /// "executor" (the chip under test parts from the file, whose token is right, or a probe differs),
  /// "file" (the file computes the same wrong token), "both" (it computes another wrong token),
  /// "not compared" (the file fell out of step: the text says why); "" without a file.
  std::string chip_file_verdict;
  /// Beside a chip file: the chip under test's probes passed over, one line each, because the
  /// field differs from the file's at that point but agrees at a later point with no sublayer of
  /// the file writing it between (the probe does not show what the executor computes there).
  std::vector<std::string> probe_notes;
  /// The step whose probes gave this attribution: the divergent step, or, beside a chip file, an
  /// earlier step whose probes already differed from the file's though its token agreed
  /// (EngineOptions::chip_file_probe_steps). 0: not recorded (no probes were compared).
  std::uint64_t probe_step = 0;
  /// When probe_step is earlier than the divergent step (beside a chip file): the divergent
  /// step's own first differing point ("layer 9 (mlp)", "embedding", "unembedding" when every
  /// probe agreed there, "none" when nothing was compared) and its candidates, and the candidates
  /// of probe_step (`candidates`) that are candidates at the divergent step too, in execution
  /// order: one wrong sublayer that made both differences is among them. All three are empty
  /// when probe_step is the divergent step; shared_candidates is empty also when the divergent
  /// step's own verdict is not "executor" (its candidates then say nothing about the executor).
  std::string divergent_step_first_disagreeing;
  std::vector<std::string> divergent_step_candidates, shared_candidates;
  nlohmann::json to_json() const;
};

/// Whether the probes of stream `s`'s last step (recorded: ChipBackend::set_probe_recording) agree
/// with that step's tokens, `input` in and `next` out, as layer attribution reads them
/// (docs/engine.md §3). Meant for a step the chip predicted right (`next` is its prediction and
/// the reference's): then every compared convention field must agree, and a disagreeing one means
/// the probes are not the values the chip computes, so a run would blame the wrong layer on them.
/// Returns "" when they agree (or the map has no comparable field), else one line: the first
/// disagreeing field with both values, or why the probes are uninformative (every value the
/// same), or why probing failed.
std::string probe_inconsistency(const chip::ChipBackend& be, chip::StreamId s, std::uint32_t input,
                                std::uint32_t next);

/// Result of the teacher-forced replay after a divergence.
enum class FaultClass {
  kSingleStep,      ///< reproduced at the step; every later step of the window agrees
  kCorruptedState,  ///< reproduced, and later steps still disagree when fed correct tokens
  kNotReproduced,   ///< the replay from the snapshot does not reproduce the divergence
  /// Not reproduced by the replay's one STEP request at the divergent step, but reproduced when
  /// the same steps are sent as FORCED requests (a chip with MULTI_STEP whose paths disagree).
  kRequestDependent,
  /// Reproduced, and later steps still disagree when fed correct tokens, but only as a fixed
  /// substitution of token ids: every occurrence of a wrong-answered token is answered with the
  /// same other token and every other token agrees (a wrong vocabulary map or unembedding).
  kTokenMapping,
  /// Reproduced, and later steps disagree only within the divergent instruction's own tokens;
  /// every step after the instruction agrees (one instruction's output wrong, the state intact).
  kSingleInstruction,
  /// Reproduced, every later execution in the window of the divergent operation (ref::decode's
  /// op, at any pc) disagrees, and every other step agrees: consistent with an operation wrong
  /// each time it runs, from an intact state.
  kRecurringInstruction,
  /// The replay that classifies the divergence did not finish: the run was interrupted, or the
  /// chip failed (a chip under test timed out, died or broke the protocol) during it. The
  /// divergence itself stands; fault_text says what stopped the replay.
  kUnclassified,
};
/// "single-step" / "corrupted-state" / "not-reproduced" / "request-dependent" / "token-mapping" /
/// "single-instruction" / "recurring-instruction" / "unclassified".
std::string_view to_string(FaultClass fault);

/// What a divergence's two tokens say by their kinds alone, as one line, or "":
///  - the chip emits TRAP(c) where the reference emits a token of another kind: the chip does not
///    implement the instruction (a chip that compiles only part of the machine raises TRAP(1),
///    ILLEGAL_INSTRUCTION, on the rest) or decodes it wrongly;
///  - the reference emits TRAP(c) and the chip does not: the chip misses a trap check;
///  - the chip's prediction is no token at all: an id its vocabulary map does not name
///    (format::kUnmappedChipId; with the default map, beyond trace.md's ids: --dut-vocab is
///    missing), or an id of trace.md's range that trace-v3 cannot produce (BR(2)).
/// `expected`, `actual`: token ids (trace.md section 2).
std::string divergence_note(std::uint32_t expected, std::uint32_t actual);

/// Everything known about the first divergence of a stream.
struct Divergence {
  std::string guest;
  std::size_t stream = 0;
  std::uint64_t step = 0;          ///< 1-based step that produced the differing token
  Mode mode = Mode::kForced;       ///< how the chip was fed at that step
  std::uint32_t pc = 0, word = 0;  ///< the instruction (reference) that emits the token
  std::string disassembly;
  std::uint32_t token_in_instruction = 0;  ///< index of the token among the instruction's
  std::string field;               ///< kind name of the expected token ("W2", "BR", ...)
  int byte_index = -1;             ///< byte of the value for W/A/S/AC kinds, else -1
  /// Where the token falls in the instruction's vector stream (format::stream_position: "word
  /// element 214, byte 0", "row 300, chunk 2"); empty for a token of no vector stream.
  std::string position;
  std::uint32_t expected = 0, actual = 0;
  std::string expected_text, actual_text;  ///< format::token_name
  /// The chip's own ids of the two tokens, for a chip that numbers them another way
  /// (ChipBackend::own_token_id: a chip under test with --dut-vocab); empty otherwise.
  std::optional<std::uint32_t> expected_chip_id, actual_chip_id;
  std::uint32_t differing_bits = 0;        ///< expected ^ actual (token ids)
  std::string bits_text;                   ///< e.g. "payload bits 0x10 (bit 4)"
  /// One line when the two tokens' kinds alone say what went wrong (divergence_note), else empty.
  std::string note;
  std::vector<InstructionRecord> recent;   ///< last instructions, the divergent one last
  Attribution attribution;
  FaultClass fault = FaultClass::kNotReproduced;
  std::string fault_text;                  ///< one line
  std::uint64_t replay_from = 0;           ///< snapshot step the replay started from
  std::uint64_t replay_window = 0;         ///< steps replayed after the divergent step
  std::uint64_t replay_mismatches = 0;     ///< mismatches among those
  std::vector<std::uint64_t> replay_mismatch_steps;  ///< their steps (first 16)
  nlohmann::json bisection;                ///< null, or how bisection found the step

  nlohmann::json to_json() const;
  /// Multi-line human-readable report.
  std::string to_text() const;
};

/// A state-hash record.
struct HashRecord {
  std::uint64_t step = 0;
  std::uint64_t chip = 0;  ///< ChipBackend::hash
  std::uint64_t ref = 0;   ///< XXH3-64 of the reference's architectural state
};

/// Outcome of one stream.
struct StreamResult {
  std::string guest;
  std::uint64_t steps = 0;        ///< steps compared (chip steps)
  std::uint64_t ref_steps = 0;    ///< reference tokens produced
  std::uint64_t mismatches = 0;
  /// "exit", "trap", "step_limit", "diverged", "interrupted", "running", or "self_loop": a run
  /// without a step limit stopped where the guest could never end: after its first execution of
  /// an instruction that jumps to itself (ref::Machine::jumps_to_itself), or where its state
  /// repeats a state of loop_period instructions before with no store, ecall or custom-unit
  /// instruction between (ref::LoopWatch).
  std::string end = "running";
  std::uint32_t exit_status = 0, trap_code = 0;
  /// end "self_loop": the instruction that jumps to itself, or the first of the loop's
  /// instructions not yet executed again (the stream stopped before it).
  std::uint32_t loop_pc = 0, loop_word = 0;
  std::uint64_t loop_period = 0;  ///< end "self_loop": instructions in the loop (1: a jump to itself)
  std::string digest;       ///< TraceDigest hex of the reference's tokens
  std::string chip_digest;  ///< TraceDigest hex of the chip's tokens
  std::string console;      ///< what the reference wrote to fd 1: its first 1 MiB (the rest is not kept)
  std::uint32_t max_token = 0;  ///< largest reference token id (run_reference only)
  std::map<std::string, std::uint64_t> class_steps;  ///< steps per instruction class
  std::vector<HashRecord> hashes;
  std::optional<Divergence> divergence;
  /// Compare::kEnd, a run stopped before its end: the reference's and the chip's digests of the
  /// steps compared differ, so a divergence lies among them, not located (the stop came before
  /// the bisection); `mismatches` is then 1 and `divergence` empty.
  bool divergence_unlocated = false;
  /// Why it is unlocated, one clause (the stop came before the bisection; or the bisection's
  /// step-by-step replay met no wrong token).
  std::string unlocated_why;
  nlohmann::json to_json() const;
};

/// One point of the throughput curve.
struct ThroughputSample {
  double seconds = 0;
  std::uint64_t steps = 0;  ///< all streams together
};

/// Outcome of a run (also of an interrupted one).
struct RunResult {
  std::string mode, compare, backend;
  /// The step limit each stream ran under (Options::max_steps; 0: until the reference ends).
  std::uint64_t max_steps = 0;
  std::vector<StreamResult> streams;
  std::uint64_t steps = 0, mismatches = 0;
  double seconds = 0;  ///< the whole run, diagnosis included
  /// Of `seconds`, the time spent diagnosing divergences (the teacher-forced replay that classifies
  /// a divergence and attributes it to a layer).
  double diagnosis_seconds = 0;
  /// Steps compared per second of comparing: steps / (seconds - diagnosis_seconds).
  double steps_per_second = 0;
  bool interrupted = false;
  std::uint64_t resumed_from = 0;   ///< step of the checkpoint resumed from (0: fresh)
  std::uint64_t checkpoints_written = 0;
  /// The step (per stream) of the newest checkpoint this run wrote or resumed from; 0: none, so
  /// that --resume has nothing to go on from.
  std::uint64_t last_checkpoint = 0;
  /// Checkpoints that --resume passed over, newest first: "FILE: why" (a truncated or corrupt
  /// file, e.g. one being written when the run was killed).
  std::vector<std::string> skipped_checkpoints;
  /// One stream: its digest.  Several: XXH3-64 of their digests (u64 LE each).
  std::string digest;
  std::vector<ThroughputSample> throughput;
  nlohmann::json to_json() const;
};

/// Passed to Options::on_progress.
struct Progress {
  std::uint64_t round = 0;        ///< batch steps done (= steps of each active stream)
  std::uint64_t steps = 0;        ///< all streams together
  std::uint64_t expected_round = 0;  ///< rounds expected in all (0: unknown)
  double seconds = 0;
  double steps_per_second = 0;    ///< over the last interval
  std::size_t active = 0;         ///< streams still running
};

/// Run options.
struct Options {
  Mode mode = Mode::kForced;
  /// Mode::kFree: the first N steps are teacher-forced (the story check).
  std::uint64_t teacher_forced_steps = 0;
  Compare compare = Compare::kEveryStep;
  /// Steps per stream; 0 = until the reference exits or traps.
  std::uint64_t max_steps = 0;
  /// What identifies the chip beyond ChipBackend::identity() (which hashes the chip's
  /// configuration, not its weights): the chip file's hash (run_check sets it). Checkpoints
  /// record it, so a resume never continues from another chip's checkpoint.
  std::string chip_identity;
  /// Disk checkpoints every N steps into checkpoint_dir (0: none).
  std::uint64_t checkpoint_every = 0;
  std::filesystem::path checkpoint_dir;
  /// Disk checkpoints kept (older ones are deleted); 0 = all.  Compare::kEnd
  /// needs them all for bisection.
  std::size_t keep_checkpoints = 0;
  /// State-hash record every N steps (0: none).
  std::uint64_t hash_every = 0;
  /// In-memory snapshots (the replay after a divergence starts from the
  /// latest) every N steps.
  std::uint64_t snapshot_every = 65536;
  /// Steps replayed teacher-forced after a divergence to classify it.
  std::uint64_t classify_window = 4096;
  /// Beside a chip file (--dut-chip, docs/engine.md §3.1): how many steps before the divergent
  /// step the replay compares probe by probe with the file (at most back to the snapshot it
  /// starts from). The first of them whose probes differ, though its token agreed, gives the
  /// attribution (Attribution::probe_step). 0: only the divergent step's probes are compared.
  std::uint64_t chip_file_probe_steps = 256;
  /// Most steps per chip call (ChipBackend::teacher_forced_batch / free_running_batch); 0: the
  /// backend's preferred_chunk(). The engine starts at 64 (or less) and doubles while a round
  /// takes under 0.1 s (less under a backend's answer_deadline_s(): dut-protocol.md §5). Results
  /// never depend on it: only how often the chip is called.
  std::uint32_t chunk = 0;
  /// Instructions kept for Divergence::recent.
  std::size_t history = 8;
  /// Rounds expected in all, for the progress ETA (0: unknown).
  std::uint64_t expected_rounds = 0;
  /// Set from another thread or a signal handler: the run stops at the next
  /// step, writes a checkpoint (when checkpoint_dir is set) and returns with
  /// RunResult::interrupted.
  const std::atomic<bool>* stop = nullptr;
  /// Called about every progress_interval seconds.
  std::function<void(const Progress&)> on_progress;
  double progress_interval = 1.0;
  /// Called for each OUT byte of a stream's chip stream once it is compared
  /// (the story as the chip writes it). A resumed run first gives the bytes printed before its
  /// checkpoint (the checkpoint keeps fd 1's first 1 MiB).
  std::function<void(std::size_t stream, char byte)> on_output;
  /// Called for each byte the chip stream writes, once compared: fd 1 for OUT tokens, fd 2 for
  /// ERR tokens (what the guest's write calls printed, as decoded from the chip's own trace). A
  /// resumed run first gives fd 1's bytes printed before its checkpoint (its first 1 MiB; fd 2's
  /// earlier bytes are not kept).
  std::function<void(std::size_t stream, int fd, char byte)> on_console;
  /// Called with one line for each unreadable checkpoint resume() passed over ("skipped
  /// checkpoint FILE (step N): why") and for the one it continues from ("resumed from step N
  /// (FILE)"), when it does continue.
  std::function<void(const std::string& line)> on_note;
};

/// Engine::resume() found nothing to continue from (no checkpoint, none readable, or written
/// for other guests, another chip or other options): nothing ran, nothing should be written.
class ResumeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A periodic checkpoint could not be written (a full disk, a folder made read-only): the run
/// stops there. what() is the write's line; `round` the step (per stream) whose checkpoint
/// failed (RunResult::last_checkpoint says which one --resume would go on from).
class CheckpointWriteError : public std::runtime_error {
 public:
  CheckpointWriteError(const std::string& what, std::uint64_t round_) : std::runtime_error(what), round(round_) {}
  std::uint64_t round;
};

/// Runs guests through a backend.  One Engine, one run.
class Engine {
 public:
  /// The backend's streams are resized to guests.size(). Throws std::invalid_argument (one
  /// line) when the options need a capability the backend lacks: hash_every needs a state hash;
  /// checkpoint_every and Compare::kEnd need save/restore (ChipBackend::capabilities()). Without
  /// save/restore no snapshots are taken: the replay after a divergence starts from the reset.
  Engine(chip::ChipBackend& backend, std::vector<Guest> guests, Options options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs from reset.
  RunResult run();
  /// Continues from the newest valid checkpoint in options.checkpoint_dir
  /// (a truncated or corrupt newer file is skipped, and said through
  /// options.on_note and RunResult::skipped_checkpoints).  Throws ResumeError
  /// when there is none, or when it was written for other guests, another chip
  /// or other options.
  RunResult resume();
  /// The result so far (for a report after an exception).
  RunResult partial_result() const;
  /// The result so far of a run whose chip call failed because the run was being stopped
  /// (SIGINT/SIGTERM: a chip under test's wait given up, or its process ended by the signal):
  /// `interrupted` set and every unfinished stream's end "interrupted", as when the stop comes
  /// between two rounds. No checkpoint is written (the chip's state is mid-request).
  RunResult interrupted_result();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Steps of the checkpoints in `dir`, ascending (file names only; validity
/// is checked when one is read).
std::vector<std::uint64_t> list_checkpoints(const std::filesystem::path& dir);

/// The instruction class of a word for the per-class statistics: "alu",
/// "alu-imm", "upper", "mul", "div", "zba", "load", "store", "branch", "jal",
/// "jalr", "fence", "system", "bignum", "vector" (format::kInsnClassNames), or
/// "other" (a word that decodes to no row).
std::string_view instruction_class(std::uint32_t word);

/// Runs the reference alone (fast path) over `image` for at most max_steps
/// tokens (0: to the end).  Returns the stream result (steps, end, digest,
/// console, class_steps) without any chip.
StreamResult run_reference(const Guest& guest, std::uint64_t max_steps,
                           const std::function<void(char)>& on_output = {},
                           const std::atomic<bool>* stop = nullptr);

}  // namespace lockstep::engine
