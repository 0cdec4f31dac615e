// The chip file beside the chip under test (`--dut-chip FILE`, docs/engine.md "The chip file
// beside the chip under test"): a chip under test that executes a chip file of chip-format.md in
// its own executor (PyTorch on a GPU, most often) is run with that same file on Lockstep's CPU
// executor, fed exactly the inputs the chip under test is fed. Tokens are still compared only
// with the reference; at a divergence the two executors' probes are compared point by point, so
// that a bug in the chip under test's executor is named by the first sublayer where the two part,
// and a bug in the chip file itself (the CPU executor computes the same wrong token) is attributed
// with the file's own probes and dataflow.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/chip/backend.hpp"

namespace lockstep::engine {

/// A chip under test (`dut`) with a shadow: every call goes to the chip under test, whose
/// answers, capabilities, identity, probes and hashes are the backend's; the shadow (the CPU
/// executor of the chip file) is stepped after each of the chip under test's steps with the same
/// inputs (teacher-forced, whatever the mode: a free-running step's input is the chip under
/// test's own last token). The shadow never changes a result: a shadow that cannot follow (an
/// input outside its vocabulary, a failure of its own, a snapshot without its part) is marked out
/// of step for that stream until the next reset() or restore() of a snapshot that carries it, and
/// is then not compared. save() joins both states (a "LSSHADW1" header, the chip under test's
/// bytes, the shadow's); restore() of bytes without that header restores the chip under test
/// alone.
class ShadowedBackend final : public chip::ChipBackend {
 public:
  /// `dut` and `shadow` must not be null; `chip_file` is the file's path as given (for texts),
  /// `chip_hash` its XXH3-64 (hex). Sets the shadow's stream count to the chip under test's.
  ShadowedBackend(std::unique_ptr<chip::ChipBackend> dut, std::unique_ptr<chip::ChipBackend> shadow,
                  std::string chip_file, std::string chip_hash);

  chip::ChipBackend& dut() { return *dut_; }
  const chip::ChipBackend& shadow() const { return *shadow_; }
  const std::string& chip_file() const { return chip_file_; }
  const std::string& chip_hash() const { return chip_hash_; }
  /// Whether stream s of the shadow has followed the chip under test since its last reset() or
  /// restore(), so that its state and last token are the chip file's on the same inputs.
  bool in_step(chip::StreamId s) const { return s < in_step_.size() && in_step_[s]; }
  /// The shadow's token at stream s's last step (meaningful when in_step(s) and a step was made).
  std::optional<chip::Token> last_token(chip::StreamId s) const;
  /// Why stream s fell out of step ("" while in step).
  std::string out_of_step_why(chip::StreamId s) const;

  std::string name() const override { return dut_->name(); }
  void load(std::shared_ptr<const chip::Chip> chip) override { dut_->load(std::move(chip)); }
  const chip::Chip& chip() const override { return dut_->chip(); }
  chip::Capabilities capabilities() const override { return dut_->capabilities(); }
  std::uint32_t vocab_size() const override { return dut_->vocab_size(); }
  std::string identity() const override { return dut_->identity(); }
  chip::ProbeMap probe_map() const override { return dut_->probe_map(); }
  std::uint32_t preferred_chunk() const override { return dut_->preferred_chunk(); }
  double answer_deadline_s() const override { return dut_->answer_deadline_s(); }
  std::string fault() const override { return dut_->fault(); }
  bool fault_is_out_of_step() const override { return dut_->fault_is_out_of_step(); }
  bool continue_after_error() override { return dut_->continue_after_error(); }
  void end_continue_after_error(bool dismiss, const std::string& finding) override {
    dut_->end_continue_after_error(dismiss, finding);
  }
  std::size_t max_streams() const override { return dut_->max_streams(); }
  std::optional<std::uint32_t> own_token_id(std::uint32_t token) const override { return dut_->own_token_id(token); }

  void set_num_streams(std::size_t n) override;
  std::size_t num_streams() const override { return dut_->num_streams(); }
  void reset(chip::StreamId s, const chip::GuestImage& image) override;
  void step_batch(std::span<const chip::StreamId> streams, std::span<const chip::Token> inputs,
                  std::span<chip::Token> out) override;
  void teacher_forced_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                            std::span<const chip::Token> inputs, std::span<chip::Token> out) override;
  void free_running_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                          std::span<const chip::Token> first, std::span<chip::Token> out) override;
  void free_running_batch_expecting(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                                    std::span<const chip::Token> first, std::span<const chip::Token> expected,
                                    std::span<chip::Token> out) override;
  std::uint64_t hash(chip::StreamId s) const override { return dut_->hash(s); }
  std::vector<std::uint8_t> save(chip::StreamId s) const override;
  void restore(chip::StreamId s, const std::vector<std::uint8_t>& bytes) override;
  std::uint64_t steps(chip::StreamId s) const override { return dut_->steps(s); }
  void set_probe_recording(bool on) override;
  std::vector<float> probe(chip::StreamId s, int layer, chip::Sublayer after, const std::string& field) const override {
    return dut_->probe(s, layer, after, field);
  }
  void set_audit(bool on) override { dut_->set_audit(on); }
  std::optional<chip::AuditViolation> audit_violation(chip::StreamId s) const override {
    return dut_->audit_violation(s);
  }
  void set_decision_coverage(bool on) override { dut_->set_decision_coverage(on); }
  chip::DecisionCoverage decision_coverage() const override { return dut_->decision_coverage(); }
  void clear_decision_coverage() override { dut_->clear_decision_coverage(); }

 private:
  // Steps the shadow's streams teacher-forced on `inputs` (layout as teacher_forced_batch's);
  // a stream already out of step is left out, a failure puts every stream of the call out of step.
  void follow(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
              std::span<const chip::Token> inputs);
  void out_of_step(chip::StreamId s, const std::string& why);
  // Runs `call` on the chip under test; when it throws, every stream of the call is out of step.
  void dut_call(std::span<const chip::StreamId> streams, const std::function<void()>& call);
  void grow(std::size_t n);

  std::unique_ptr<chip::ChipBackend> dut_, shadow_;
  std::string chip_file_, chip_hash_;
  std::vector<bool> in_step_;
  std::vector<std::string> why_;
  std::vector<std::optional<chip::Token>> last_;
};

/// The chip under test `dut` beside the chip file `chip_file` (a ShadowedBackend), or `dut` itself
/// when `chip_file` is empty. Loads the file (CheckError "NAMED_BY: ..." when it does not load,
/// `named_by` saying where the path came from) and, when the chip under test announces PROBES, checks that every field of its probe map
/// is a field of the file with the same width (CheckError naming the first that is not).
std::unique_ptr<chip::ChipBackend> with_chip_file(std::unique_ptr<chip::ChipBackend> dut,
                                                  const std::string& chip_file,
                                                  const std::string& named_by = "--dut-chip");

}  // namespace lockstep::engine
