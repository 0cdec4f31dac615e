// CPU executor: fp32, exact by construction, sparse. Cost per step scales with the non-zero
// activations and the weights they touch, not with dense sizes.
#pragma once

#include <optional>
#include <memory>

#include "lockstep/chip/backend.hpp"

namespace lockstep::chip {

class CpuExecutor final : public ChipBackend {
 public:
  CpuExecutor();
  explicit CpuExecutor(std::shared_ptr<const Chip> chip, std::size_t num_streams = 1);
  ~CpuExecutor() override;

  std::string name() const override { return "cpu"; }
  void load(std::shared_ptr<const Chip> chip) override;
  const Chip& chip() const override;
  void set_num_streams(std::size_t n) override;
  std::size_t num_streams() const override;
  void reset(StreamId s, const GuestImage& image) override;
  void step_batch(std::span<const StreamId> streams, std::span<const Token> inputs,
                  std::span<Token> out) override;
  /// One stream's steps (counts.size() == 1, at least 8 of them, audit, probes and coverage
  /// off) go through a two-thread pipeline when pipelining() is on: the same tokens and state as
  /// serial steps. Anything else: ChipBackend's serial default.
  void teacher_forced_batch(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                            std::span<const Token> inputs, std::span<Token> out) override;
  /// Pipelined as teacher_forced_batch, fed `first` and then the expected tokens; stops at the
  /// first miss. After a miss the stream's state has run ahead of it: every step, hash() and
  /// save() of the stream throws UsageError until reset() or restore().
  void free_running_batch_expecting(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                    std::span<const Token> first, std::span<const Token> expected,
                                    std::span<Token> out) override;
  /// 1024 steps per call with pipelining on (the engine's rounds, fed to the pipeline), else 1.
  std::uint32_t preferred_chunk() const override;
  /// Pipelining: on by default where this process may run on two or more CPUs (its affinity
  /// mask: `taskset -c 0` or a one-CPU container counts one), unless set_default_pipelining()
  /// decided. Off: every step runs on the calling thread (no worker thread is started).
  void set_pipelining(bool on);
  bool pipelining() const;
  /// The pipelining of every CpuExecutor made after the call (the commands set it once from
  /// $LOCKSTEP_CPU_THREADS, so that executors they make themselves, as bench's and mutate's, obey
  /// it as the backend factory's do); nullopt: the default above.
  static void set_default_pipelining(std::optional<bool> on);
  /// Whether a CpuExecutor made now pipelines (set_default_pipelining's choice, else the rule
  /// above), for reports of how a figure was measured.
  static bool default_pipelining();
  /// The CPUs this process may run on (its affinity mask), at least 1.
  static unsigned usable_cpus();
  /// An MLP's input columns with at least `nnz` weights (default 256; 0: none) are not scattered:
  /// the rows that read them are evaluated by groups of equal dense weights (cpu_executor.cpp,
  /// DenseGroups), with the same values after the ReLU. Takes effect at the next load(). For
  /// tests (a small threshold exercises it on small chips) and measurements.
  void set_dense_column_threshold(std::uint32_t nnz);
  std::uint64_t hash(StreamId s) const override;
  std::vector<std::uint8_t> save(StreamId s) const override;
  void restore(StreamId s, const std::vector<std::uint8_t>& bytes) override;
  std::uint64_t steps(StreamId s) const override;
  void set_probe_recording(bool on) override;
  std::vector<float> probe(StreamId s, int layer, Sublayer after,
                           const std::string& field) const override;
  void set_audit(bool on) override;
  std::optional<AuditViolation> audit_violation(StreamId s) const override;
  void set_decision_coverage(bool on) override;
  DecisionCoverage decision_coverage() const override;
  void clear_decision_coverage() override;

  /// The raw state of a stream (layers, heads in order; each S column-major: column c's
  /// value_dim floats contiguous). For tests and the CUDA executor's comparison.
  std::span<const float> state(StreamId s) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Applies a chip's initialisers to a zeroed state buffer (layout as CpuExecutor::state()).
/// Shared by every executor so that resets agree. Throws ImageError.
void apply_initialisers(const Chip& chip, const GuestImage& image, std::span<float> state);

}  // namespace lockstep::chip
