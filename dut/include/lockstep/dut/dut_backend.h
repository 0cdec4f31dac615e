// DutBackend: a chip under test that Lockstep did not build, reached over the chip-under-test
// protocol (docs/spec/dut-protocol.md) and driven through the same ChipBackend interface as the
// built-in executors. Like them it knows nothing about RISC-V: it moves guest images in and
// token ids out, translating ids through the chip's vocabulary map (§6).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/chip/backend.hpp"
#include "lockstep/dut/protocol.h"
#include "lockstep/dut/transport.h"
#include "lockstep/dut/vocab.h"

namespace lockstep::dut {

/// A fault of the chip under test (§8): it could not be started or reached, died, timed out,
/// sent a malformed or wrong frame, answered ERROR, or predicted an id outside its map.
/// what() is one line starting "chip under test: ".
class DutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How to reach a chip under test (the `--dut*` options).
struct DutConfig {
  std::string command;            ///< --dut 'COMMAND ARGS': started as a child process
  std::string connect;            ///< --dut-connect unix:PATH | tcp:HOST:PORT
  std::filesystem::path vocab;    ///< --dut-vocab FILE (empty: the chip's ids are the spec's)
  double timeout_s = 120;         ///< --dut-timeout: seconds a chip may take to answer a request (> 0)
  double start_timeout_s = 600;   ///< --dut-start-timeout: seconds to start (or reach) and answer HELLO,
                                  ///< loading its weights included (> 0)
  std::filesystem::path workdir;  ///< --dut: the folder the command runs in (empty: the harness's)
  std::filesystem::path token_file;  ///< --dut-token-file: the shared secret sent in HELLO (§9)
  /// --dut-chip FILE: the chip file (chip-format.md) that the chip under test executes. The
  /// harness runs it on its own CPU executor beside the chip under test, fed the same inputs,
  /// and at a divergence compares the two probe by probe (docs/engine.md, "The chip file beside
  /// the chip under test"). Empty: none. DutBackend itself never reads it.
  std::filesystem::path chip_file;
  /// The XXH3-64 (hex) of chip_file as a run read it, recorded in its case: a resume or replay
  /// beside a file whose hash differs is refused (the file changed). Empty: not checked.
  std::string chip_file_hash;
  /// Set by SIGINT/SIGTERM (engine::install_stop_handlers()): a wait for the chip's answer ends
  /// within 100 ms of it (DutError "... stopped ..."; the chip process is killed). Not saved in
  /// case files; nullptr: waits end only at --dut-timeout / --dut-start-timeout.
  const std::atomic<bool>* stop = nullptr;

  bool empty() const { return command.empty() && connect.empty(); }
  /// "--dut 'python3 x.py'" / "--dut-connect unix:/tmp/s", for reports and replay commands.
  std::string describe() const;
  /// For case files (docs/engine.md "Cases"): {"command", "workdir", "connect", "vocab",
  /// "timeout_s", "start_timeout_s", "token_file", "chip_file", "chip_file_hash"} with empty members left out; a command's
  /// workdir is made absolute (the harness's folder when empty), so that a replay from another
  /// folder starts the chip the same way.
  nlohmann::json to_json() const;
  /// Throws std::invalid_argument (one line) on a malformed object.
  static DutConfig from_json(const nlohmann::json& j);
};

/// The secret of --dut-token-file `path` as HELLO's `auth` carries it (§9: every trailing CR and
/// LF removed; empty or over 65,535 bytes refused). Throws DutError, one line starting with
/// `named` (the harness's option, or a server's own: `chip-server --token-file` reads its secret
/// here too, so that it never takes one no harness could send).
std::string read_token_file(const std::filesystem::path& path,
                            const std::string& named = "chip under test: --dut-token-file");

/// The harness side of lockstep-dut/1 behind chip::ChipBackend.
///
/// Token ids in and out of the ChipBackend methods are trace.md §2 ids; on the wire they are the
/// chip's (through the VocabMap). Every failure of the chip throws DutError and is kept: after
/// the first one, every call throws the same error (fault() returns it), so that a run can never
/// read a chip that failed mid-run as a pass. UsageError for a bad stream or a capability the chip
/// did not announce (the harness checks capabilities before asking).
class DutBackend final : public chip::ChipBackend {
 public:
  /// Starts or connects to the chip and runs the handshake (HELLO, §3.1): checks its protocol and
  /// trace versions and loads the vocabulary map against its vocab_size. Throws DutError.
  explicit DutBackend(const DutConfig& config);
  /// Sends BYE and ends the session (§1): the child is waited for, then terminated.
  ~DutBackend() override;
  /// Ends the session now as the destructor does, and returns what broke the protocol's rules for
  /// its end, "" when nothing did: BYE not answered with OK within --dut-timeout (§3.10), a chip
  /// process that did not exit within 5 s of the end of its input (§1). A process the chip left
  /// running is a `warn:` line on stderr, as at the destructor. A SIGINT, SIGTERM or SIGHUP (the
  /// stop flag) during the wait for the chip to exit kills it at once and returns "stopped by
  /// SIGINT, SIGTERM or SIGHUP ...": no finding about the chip. Afterwards every request throws.
  std::string end_session();

  std::string name() const override;
  void load(std::shared_ptr<const chip::Chip>) override;
  const chip::Chip& chip() const override;
  chip::Capabilities capabilities() const override;
  std::uint32_t vocab_size() const override;
  /// vocab().to_chip(token) under a --dut-vocab map (nullopt under the default map, or for a
  /// token the map does not name).
  std::optional<std::uint32_t> own_token_id(std::uint32_t token) const override;
  std::string identity() const override { return hello_.identity; }
  chip::ProbeMap probe_map() const override;
  std::uint32_t preferred_chunk() const override;
  /// --dut-timeout (DutConfig::timeout_s): the most a FORCED or FREE may take.
  double answer_deadline_s() const override { return config_.timeout_s; }
  std::string fault() const override { return fault_; }
  bool fault_is_out_of_step() const override { return out_of_step_; }
  /// True, and requests go through again, when the fault is an ERROR answer to STEP, FORCED or
  /// FREE and the connection is open; a failure meanwhile ends it (the first fault is kept).
  bool continue_after_error() override;
  void end_continue_after_error(bool dismiss, const std::string& finding) override;
  std::size_t max_streams() const override { return hello_.max_streams; }

  void set_num_streams(std::size_t n) override;
  std::size_t num_streams() const override { return steps_.size(); }
  void reset(chip::StreamId s, const chip::GuestImage& image) override;
  void step_batch(std::span<const chip::StreamId> streams, std::span<const chip::Token> inputs,
                  std::span<chip::Token> out) override;
  void teacher_forced_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                            std::span<const chip::Token> inputs, std::span<chip::Token> out) override;
  void free_running_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                          std::span<const chip::Token> first, std::span<chip::Token> out) override;
  std::uint64_t hash(chip::StreamId s) const override;
  /// The chip's blob wrapped with the stream's step count ("LKDB", version 1, steps, blob).
  std::vector<std::uint8_t> save(chip::StreamId s) const override;
  /// Throws chip::FormatError for bytes that are no save() of a DutBackend; DutError when the chip
  /// refuses the blob.
  void restore(chip::StreamId s, const std::vector<std::uint8_t>& bytes) override;
  std::uint64_t steps(chip::StreamId s) const override;
  void set_probe_recording(bool on) override;
  std::vector<float> probe(chip::StreamId s, int layer, chip::Sublayer after, const std::string& field) const override;
  /// A chip under test has no numerics audit: turning it on throws UsageError.
  void set_audit(bool on) override;
  std::optional<chip::AuditViolation> audit_violation(chip::StreamId) const override { return std::nullopt; }

  /// The chip's handshake answer.
  const HelloOk& hello() const { return hello_; }
  const DutConfig& config() const { return config_; }
  const VocabMap& vocab() const { return vocab_; }

  /// Sends one raw frame and returns the chip's answer (for `lockstep dut-check`'s bad-frame
  /// checks); the session's fault state is not touched. Throws TransportError/Malformed.
  std::optional<Frame> raw_exchange(std::uint32_t type, std::span<const std::uint8_t> payload);

 private:
  /// Sends a request and returns the payload of its success response; throws DutError (and
  /// records the fault) on anything else.
  /// `timeout_s` <= 0: --dut-timeout.
  std::vector<std::uint8_t> request(std::uint32_t type, const std::vector<std::uint8_t>& payload,
                                    double timeout_s = 0) const;
  /// Records the fault (the first one stands) and throws it. `error_answer`: the chip answered a
  /// step request with ERROR, with the wrong number of tokens or with an id not below vocab_size,
  /// after which the session may go on (continue_after_error).
  [[noreturn]] void fail(const std::string& message, bool error_answer = false) const;
  void check_stream(chip::StreamId s, const char* what) const;
  chip::Token from_chip(std::uint32_t id, chip::StreamId s, std::uint64_t step) const;
  Connection::Clock::time_point deadline(double seconds) const;

  DutConfig config_;
  std::unique_ptr<Connection> conn_;
  HelloOk hello_;
  VocabMap vocab_;
  std::vector<std::uint64_t> steps_;   ///< per stream: steps since reset
  mutable std::string fault_;
  mutable bool out_of_step_ = false;   ///< fault_ is a frame nobody asked for, or another request's answer
  std::size_t last_answer_tokens_ = ~std::size_t{0};  ///< tokens of the last TOKENS answer taken
  /// Whether a TOKENS answer of the wrong size, `tokens` long, is as long as the answer before it
  /// (then it may be that answer sent twice: out_of_step_ is set).
  bool repeats_last_answer(std::size_t tokens) const;
  mutable std::string last_request_;  ///< request_text of the last request answered (for a frame nobody asked for)
  mutable bool error_answer_ = false;  ///< fault_ is an ERROR answer to STEP, FORCED or FREE
  mutable bool continuing_ = false;    ///< continue_after_error(): requests pass despite fault_
  mutable std::optional<chip::ProbeMap> probe_map_;
};

}  // namespace lockstep::dut
