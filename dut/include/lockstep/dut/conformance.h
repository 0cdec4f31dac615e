// `lockstep dut-check`: the conformance checks a chip builder runs on an adapter before anything
// else (docs/hook-up-your-chip.md). They test the protocol's promises (docs/spec/dut-protocol.md
// §3, §4): the handshake, reset, independence of batch size and stream order, determinism, the
// multi-step messages against single steps, the optional capabilities, and the answers to bad
// frames. Whether the tokens are right is the lock-step run's business, but the agreement of
// the teacher-forced tokens with the golden model's is reported too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/chip/guest_image.hpp"
#include "lockstep/dut/dut_backend.h"

namespace lockstep::dut {

/// One guest of the checks: its image and the golden model's token stream (trace.md §2 ids;
/// tokens[0] is the first predicted token, the input of step k is tokens[k-2], START for k = 1).
struct ConformanceGuest {
  std::string name;
  chip::GuestImage image;
  std::vector<std::uint32_t> tokens;
  /// Optional: for each token, the instruction that emits it as a failure line names it
  /// ("pc 0x10074 mulhsu a0, a1, a2"); the golden-model check's first difference gives it.
  std::vector<std::string> where{};
  /// A second stream of the guest before it (a single --guest runs twice, since the batch
  /// checks need two streams): not counted again by the golden-model check.
  bool copy = false;
  /// A reset probe: a guest that reads state it never writes (every register, and RAM outside its
  /// image; or a vector guest without its sections, which reads the vector unit's memories where
  /// its own run left values), run only by the "reset clears the state" check, on the stream other
  /// guests left;
  /// its tokens are the reference's from the reset state. Not one of the guests of the other
  /// checks (nor counted in "at least 2").
  bool reset_probe = false;
  /// What a reset probe reads and finds at its reset value, for its pass line ("every register 0,
  /// RAM outside its image 0").
  std::string probe_reads{};
};

/// The result of one check, printed as one line.
struct CheckLine {
  std::string name;
  enum class Verdict { kPass, kFail, kSkip } verdict = Verdict::kPass;
  std::string detail;  ///< why it failed / was skipped, or what was checked
  std::string to_string() const;  ///< "pass  handshake: ..." / "FAIL  ..." / "skip  ..."
};

/// Judges the probes of a stream's last step, recorded, which the chip predicted right (`input` in,
/// `next` out; trace.md §2 ids): "" when they agree with the tokens as layer attribution reads
/// them, else one line saying what disagrees. The engine's convention (docs/engine.md §3) lives
/// in the engine (engine::probe_inconsistency), which this library may not use: the caller
/// passes it in.
using ProbeJudge = std::function<std::string(const chip::ChipBackend& backend, chip::StreamId stream,
                                             chip::Token input, chip::Token next)>;

/// Runs every check on the chip of `config` with `guests` (at least 2; each with at least 2
/// tokens), calling `on_line` as each check ends; returns them all. Each check that needs a
/// fresh session opens one, so that a fault in one check does not hide the others. The probes
/// check fails when every probe value it reads is the same number, and, with `judge`, when the
/// probes of a step the chip predicted right do not agree with its tokens.
///
/// With config.stop (SIGINT/SIGTERM), a stop ends the checks at once: the check it interrupted is
/// left out (a wait given up is no finding about the chip), the lines of the checks done are
/// returned and `*stopped` (when given) is set.
std::vector<CheckLine> run_conformance(const DutConfig& config, const std::vector<ConformanceGuest>& guests,
                                       const std::function<void(const CheckLine&)>& on_line,
                                       const ProbeJudge& judge = {}, bool* stopped = nullptr);

/// Opens the transport of `config` without a handshake (for raw-frame checks and tests).
/// Throws DutError.
std::unique_ptr<Connection> open_connection(const DutConfig& config);

}  // namespace lockstep::dut
