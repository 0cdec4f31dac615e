// The CUDA executor (docs/cuda.md): the layer math of docs/spec/chip-format.md on an NVIDIA GPU,
// bit-identical to CpuExecutor (tokens, states, state hashes, checkpoints) for every program,
// batch size and stream order within the spec's exactness guarantee (section 1.3).
// Built only when nvcc works (LOCKSTEP_HAVE_CUDA); otherwise the factory below throws.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/chip/backend.hpp"

namespace lockstep::chip {

/// Whether this build contains the CUDA executor (configured where nvcc works).
bool cuda_compiled();
/// Whether the CUDA executor can run here: compiled in and a device present. When not, `why`
/// (if given) receives one line, e.g. "no CUDA device (CUDA runtime: no CUDA-capable device is detected)".
bool cuda_available(std::string* why = nullptr);

/// The CUDA executor over `chip` with `num_streams` streams. Throws UsageError with one line
/// ("cuda backend: this build has no CUDA support ..." / "cuda backend: no CUDA device (...)")
/// when cuda_available() is false; FormatError when the chip is invalid.
std::unique_ptr<ChipBackend> make_cuda_executor(std::shared_ptr<const Chip> chip, std::size_t num_streams = 1);

/// The CUDA executor. One thread block per stream; a step_batch call is one kernel launch for
/// all its streams; free_run_batch() runs many steps per launch. The chip's weights live on the
/// device once (about 8 bytes per stacked weight); each stream has its state plus about 16 bytes
/// per row of the largest stacked map (gpu/chip_image.hpp). No audit mode (set_audit(true)
/// throws UsageError: use the CPU executor); probes are recorded on the device.
class CudaExecutor final : public ChipBackend {
 public:
  /// Throws UsageError when no device is available (see cuda_available()).
  explicit CudaExecutor(std::shared_ptr<const Chip> chip, std::size_t num_streams = 1);
  ~CudaExecutor() override;

  std::string name() const override { return "cuda"; }
  void load(std::shared_ptr<const Chip> chip) override;
  const Chip& chip() const override;
  void set_num_streams(std::size_t n) override;
  std::size_t num_streams() const override;
  void reset(StreamId s, const GuestImage& image) override;
  void step_batch(std::span<const StreamId> streams, std::span<const Token> inputs,
                  std::span<Token> out) override;
  std::uint64_t hash(StreamId s) const override;
  std::vector<std::uint8_t> save(StreamId s) const override;
  void restore(StreamId s, const std::vector<std::uint8_t>& bytes) override;
  std::uint64_t steps(StreamId s) const override;
  void set_probe_recording(bool on) override;
  std::vector<float> probe(StreamId s, int layer, Sublayer after,
                           const std::string& field) const override;
  void set_audit(bool on) override;
  std::optional<AuditViolation> audit_violation(StreamId s) const override;

  /// Free running on the device in one launch: stream streams[i] is fed firsts[i], then n - 1 of
  /// its own predictions; returns the n predictions of each stream, stream-major
  /// (out[i * n + t]). Same results as n step_batch calls.
  std::vector<Token> free_run_batch(std::span<const StreamId> streams, std::span<const Token> firsts,
                                    std::size_t n);
  /// Teacher forcing on the device in one launch: inputs[i * n + t] is stream i's input at step
  /// t; returns the predictions in the same layout.
  std::vector<Token> forced_batch(std::span<const StreamId> streams, std::span<const Token> inputs,
                                  std::size_t n);
  /// The raw state of a stream (as CpuExecutor::state()), copied from the device.
  std::vector<float> state(StreamId s) const;
  /// "NVIDIA H200 (sm_90)".
  std::string device() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::chip
