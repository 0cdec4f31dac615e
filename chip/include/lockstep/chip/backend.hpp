// ChipBackend: the one executor interface (CPU now, CUDA later). Every executor computes
// exactly the layer math of docs/spec/chip-format.md; the CPU executor is the oracle.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/guest_image.hpp"

namespace lockstep::chip {

using StreamId = std::uint32_t;

/// The first numerics-audit violation seen by a stream.
struct AuditViolation {
  std::uint64_t step = 0;      ///< stream step index (0 = first step after reset)
  int layer = -1;              ///< -1 for "embed" / "logits"
  std::string activation;      ///< e.g. "mem.k", "mlp.hidden", "logits" (chip-format.md)
  int head = -1;               ///< for "mem.*" activations
  std::uint32_t index = 0;     ///< element index within the activation vector (for
                               ///< "mem.state": column * value_dim + row; residual: dimension)
  std::string field;           ///< residual field holding index (residual activations), else ""
  double value = 0;
  std::string reason;          ///< "not an integer", "exceeds declared bound 255", ...
  std::string to_string() const;  ///< one line, all of the above
};

/// Decision coverage (fuzz/README.md, "Chip decision units"): which compiled thresholds a
/// workload exercised on both sides. Every MLP hidden unit is a threshold decision: unit j of
/// layer l is *active* in a step when its pre-activation (W_1 x + b_1)_j (plain) or g_j
/// (gated) is > 0, else *inactive* (chip-format.md 1.2). Counts are summed over every stream
/// and step since the record was last cleared. A head's write decision (beta != 0) is counted
/// too. Exact, not sampled: a sparse executor that skips a unit must know its side anyway (the
/// CPU executor skips only units whose pre-activation is their bias <= 0, i.e. inactive).
struct DecisionCoverage {
  struct Layer {
    std::uint64_t evaluations = 0;            ///< (stream, step) pairs that ran this layer
    std::vector<std::uint64_t> active;        ///< per hidden unit (size F_l): steps it was active
    std::vector<std::uint64_t> head_writes;   ///< per head: steps with beta != 0
  };
  std::vector<Layer> layers;  ///< one per chip layer

  bool seen_active(std::size_t l, std::size_t u) const { return layers[l].active[u] > 0; }
  bool seen_inactive(std::size_t l, std::size_t u) const { return layers[l].active[u] < layers[l].evaluations; }
  std::size_t units() const;       ///< hidden units of every layer
  std::size_t both_sides() const;  ///< units seen active and inactive
  /// Adds `other`'s counts (same chip shape; throws UsageError otherwise).
  void merge(const DecisionCoverage& other);
};

/// One sublayer of a chip in execution order: layer `layer`'s memory block or its MLP.
struct SublayerRef {
  int layer = -1;
  Sublayer sublayer = Sublayer::Memory;  ///< Memory or Mlp (never Embed)
  /// Execution order: by layer, the memory block before the MLP.
  friend bool operator<(const SublayerRef& a, const SublayerRef& b) {
    return a.layer != b.layer ? a.layer < b.layer : a.sublayer < b.sublayer;
  }
  friend bool operator==(const SublayerRef& a, const SublayerRef& b) = default;
};

/// What the harness needs to attribute a wrong token to a layer (docs/engine.md §3): the named
/// residual fields, which sublayers write into each, the probe points and the fields the
/// unembedding reads. A built-in executor derives it from the chip file (probe_map_of); a chip
/// under test sends it (docs/spec/dut-protocol.md §3.7, PROBE_MAP).
struct ProbeMap {
  struct Field {
    std::string name;
    std::uint32_t width = 0;             ///< values
    std::vector<SublayerRef> writers;    ///< sublayers writing into it, in execution order
  };
  /// Which sublayers read and write which part of the residual: what the harness needs to
  /// name every sublayer that can have produced a wrong value (docs/engine.md §3, the candidate
  /// set). Known for a chip file (probe_map_of); empty for a chip under test, whose protocol
  /// carries writers only: the harness then counts every sublayer before the point as a candidate.
  struct Dataflow {
    /// A part of the residual: a named field (same name as in `fields`), or a maximal run of
    /// unnamed dimensions that something reads or writes, "dims[a..b)". Readers and writers are
    /// the unions over its dimensions (a superset of each dimension's: conservative).
    struct Part {
      std::string name;
      std::vector<SublayerRef> readers;  ///< heads' k/q/v/beta maps or MLP w1/wu/wg read it
      std::vector<SublayerRef> writers;  ///< heads' o maps or MLP w2 (weights or biases) write it
      bool embedded = false;             ///< the embedding writes a dimension of it
      bool unembedded = false;           ///< the unembedding reads a dimension of it
    };
    std::vector<SublayerRef> sublayers;  ///< every sublayer of the chip, execution order
    std::vector<Part> parts;
    bool known() const { return !sublayers.empty(); }
  };

  std::vector<Field> fields;
  std::vector<ProbePoint> points;        ///< each point's fields by name (names from `fields`)
  std::vector<std::string> unembed_reads;  ///< fields the unembedding reads (residual order)
  Dataflow dataflow;                     ///< empty when unknown

  /// The field named `name`, or nullptr.
  const Field* find(const std::string& name) const;
};

/// The probe map of a chip file (chip-format.md §3.1 `fields` and `probes`): a field's writers
/// are the sublayers whose heads' `o` maps or MLP `w2` (weights or non-zero biases) touch one of
/// its dimensions; `unembed_reads` are the fields holding a dimension the unembedding has a
/// weight for. Dimensions outside every field are named "dims[a..b)" (a maximal unnamed run).
/// `dataflow` is filled from every map's non-zero entries (and non-zero biases for writes).
ProbeMap probe_map_of(const Chip& chip);

/// What a backend can do beyond stepping (docs/spec/dut-protocol.md §7). The built-in executors
/// can do everything; a chip under test announces its capabilities in its handshake.
struct Capabilities {
  bool multi_step = false;    ///< teacher_forced_batch / free_running_batch are native calls
  bool probes = true;         ///< probe_map(), set_probe_recording(), probe()
  bool hash = true;           ///< hash()
  bool save_restore = true;   ///< save(), restore(): snapshots, checkpoints, resume
  bool audit = true;          ///< set_audit(), audit_violation()
};

/// Abstract executor. Streams are independent machines sharing one chip's weights.
/// Methods throw UsageError for a bad stream id or token, FormatError for bad checkpoint bytes.
class ChipBackend {
 public:
  virtual ~ChipBackend() = default;

  virtual std::string name() const = 0;
  /// Takes a validated chip; drops all streams.
  virtual void load(std::shared_ptr<const Chip> chip) = 0;
  /// The chip file's chip. A chip under test has none: throws UsageError.
  virtual const Chip& chip() const = 0;

  /// What the backend can do (default: everything but native multi-step calls).
  virtual Capabilities capabilities() const { return {}; }
  /// Token ids are 0 .. vocab_size() - 1 (default: the chip's vocab_size).
  virtual std::uint32_t vocab_size() const;
  /// A string that changes whenever the chip's behaviour may change; run fingerprints and
  /// checkpoints record it (default: XXH3-64 of config_json(chip()), 16 hex digits).
  virtual std::string identity() const;
  /// The probe map (default: probe_map_of(chip())). Throws UsageError without probes.
  virtual ProbeMap probe_map() const;
  /// Steps per multi-step call the engine should use (its chunk); 1 for the in-process
  /// executors, more for a backend whose calls cost a round trip.
  virtual std::uint32_t preferred_chunk() const { return 1; }
  /// Seconds within which the backend must answer one multi-step call, or fail it (a chip under
  /// test's --dut-timeout, dut-protocol.md §5); 0: no deadline (the in-process executors). The
  /// engine sizes its calls so that a chip that slows down between calls is not failed by it.
  virtual double answer_deadline_s() const { return 0; }
  /// The fault that ended a chip under test's session (dut-protocol.md §8), one line; empty while
  /// it works and always for the in-process executors. Once set, every further call throws it, so
  /// a caller that caught one exception (say, a probe) can still see that the chip failed.
  virtual std::string fault() const { return {}; }
  /// Whether fault() shows that a chip under test's answers were out of step with the requests
  /// (dut-protocol.md §8: a frame nobody asked for, or an answer of another request's type): an
  /// answer read before the fault may then be another request's, so a divergence found before
  /// it is no finding about the chip. Always false for the in-process executors.
  virtual bool fault_is_out_of_step() const { return false; }
  /// After a chip under test answered STEP, FORCED or FREE with ERROR (dut-protocol.md §3.10: its
  /// session may go on), lets further calls through while fault() still returns the fault, so
  /// that the engine can look for a divergence the ERROR hid (docs/engine.md §2) and returns
  /// true. Returns false, and changes nothing, for any other fault (the chip exited, timed out, or
  /// sent a malformed frame), for none, and always for the in-process executors.
  virtual bool continue_after_error() { return false; }
  /// Ends continue_after_error(): `dismiss` true forgets the fault (the caller found what preceded
  /// it and reports that instead); false keeps it, with `finding` (what the caller found instead,
  /// one clause; may be empty) appended, and every later call throws it again.
  virtual void end_continue_after_error(bool /*dismiss*/, const std::string& /*finding*/) {}
  /// The most streams set_num_streams() takes (a chip under test announces it; unbounded here).
  virtual std::size_t max_streams() const { return static_cast<std::size_t>(-1); }
  /// The chip's own id of trace token `token` (trace.md §2), for a chip that numbers its tokens
  /// another way (a chip under test with a vocabulary map, dut-protocol.md §6), so that a report
  /// can name the logit to look at; nullopt when the chip's ids are the spec's (the default).
  virtual std::optional<std::uint32_t> own_token_id(std::uint32_t /*token*/) const { return std::nullopt; }

  /// Sets the number of streams to n (new streams have zero state, step 0).
  virtual void set_num_streams(std::size_t n) = 0;
  virtual std::size_t num_streams() const = 0;

  /// Zeroes the stream's state, applies the chip's initialisers to `image`, step count 0,
  /// clears the audit record. Throws ImageError if the image lacks a required section.
  virtual void reset(StreamId s, const GuestImage& image) = 0;

  /// One step of each listed stream: out[i] = next token of streams[i] fed inputs[i].
  /// Streams must be distinct. Spans have equal lengths.
  virtual void step_batch(std::span<const StreamId> streams, std::span<const Token> inputs,
                          std::span<Token> out) = 0;

  /// Several teacher-forced steps of several streams (docs/spec/dut-protocol.md §3.5): stream
  /// streams[i] makes counts[i] steps fed its inputs in order; `inputs` and `out` hold the
  /// entries' tokens one entry after the other (size sum of counts), out[j] the prediction after
  /// inputs[j]. Streams distinct, counts >= 1. The default makes one step_batch per round over
  /// the streams that still have steps: the same tokens and states as single steps.
  virtual void teacher_forced_batch(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                    std::span<const Token> inputs, std::span<Token> out);
  /// Several free-running steps (dut-protocol.md §3.6): stream streams[i] consumes first[i], then
  /// its own predictions, counts[i] steps; `out` as for teacher_forced_batch.
  virtual void free_running_batch(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                  std::span<const Token> first, std::span<Token> out);

  /// free_running_batch for a caller that knows what each output should be (`expected`, one
  /// token per entry of `out`, in the same layout): `out` is exactly free_running_batch's up to
  /// and including each stream's first entry that differs from its expected token. After such a
  /// miss the stream's later entries and its state are unspecified: the caller must reset() or
  /// restore() it before using it again (the engine does: a divergence ends the lane and its
  /// replay restores a snapshot). A backend may use the expected tokens to run the steps with
  /// their inputs known in advance (the CPU executor pipelines them); the default ignores them.
  virtual void free_running_batch_expecting(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                            std::span<const Token> first, std::span<const Token> expected,
                                            std::span<Token> out);

  /// XXH3-64 of the stream's state floats (chip-format.md, "State hash").
  virtual std::uint64_t hash(StreamId s) const = 0;
  /// Checkpoint of one stream (chip-format.md, "Stream checkpoint").
  virtual std::vector<std::uint8_t> save(StreamId s) const = 0;
  /// Restores a checkpoint made by save() of the same chip. Throws FormatError otherwise.
  virtual void restore(StreamId s, const std::vector<std::uint8_t>& bytes) = 0;
  virtual std::uint64_t steps(StreamId s) const = 0;

  /// Probe recording: when on, each step keeps the residual values of the fields the chip's
  /// probe map names at each probe point, for probe().
  virtual void set_probe_recording(bool on) = 0;
  /// Values of residual field `field` at the probe point (layer, after) of the stream's last
  /// step. Throws UsageError if recording was off, or the point/field is not in the probe map.
  virtual std::vector<float> probe(StreamId s, int layer, Sublayer after,
                                   const std::string& field) const = 0;

  /// Audit mode: check every activation (chip-format.md, "Numerics audit"); the first
  /// violation per stream is kept until reset.
  virtual void set_audit(bool on) = 0;
  virtual std::optional<AuditViolation> audit_violation(StreamId s) const = 0;

  /// Decision coverage recording (DecisionCoverage), off by default; turning it on does not
  /// clear the record. Costs nothing in the step loop while off. The default implementation
  /// (a backend without it) throws UsageError "decision coverage is not supported by the <name>
  /// backend" when asked to turn it on or for the record.
  virtual void set_decision_coverage(bool on);
  /// The record since load() or the last clear (shaped like the chip: one Layer per layer).
  virtual DecisionCoverage decision_coverage() const;
  /// Zeroes the record.
  virtual void clear_decision_coverage();

  // Convenience loops (non-virtual, built on step_batch).

  /// One step of one stream.
  Token step(StreamId s, Token input);
  /// Teacher forcing: feeds inputs[i] and returns the prediction after each (same length).
  std::vector<Token> teacher_forced(StreamId s, std::span<const Token> inputs);
  /// Free running: feeds `first`, then n - 1 of its own predictions; returns the n predictions.
  std::vector<Token> free_running(StreamId s, Token first, std::size_t n);
};

// Shared by the executors (the same bytes and errors from every backend).

/// A stream checkpoint (chip-format.md, "Stream checkpoint"): magic "LKCS", version 1, the
/// chip's config fingerprint, the step count, the number of state floats, then the state
/// (fp32 little-endian).
std::vector<std::uint8_t> encode_checkpoint(std::uint64_t fingerprint, std::uint64_t steps,
                                            std::span<const float> state);
/// A checkpoint's contents: the step count and exactly `state_size` finite state floats.
struct DecodedCheckpoint {
  std::uint64_t steps = 0;
  std::vector<float> state;
};
/// Parses `bytes` as a checkpoint of the chip with `fingerprint` and `state_size` floats.
/// Throws FormatError (one line) for a truncated header, bad magic, another version, another
/// chip, a state size or byte count that does not match, or a non-finite state value.
DecodedCheckpoint decode_checkpoint(std::span<const std::uint8_t> bytes, std::uint64_t fingerprint,
                                    std::size_t state_size);
/// Position of `field` in the chip's probe map at (layer, after): {probe point index, field
/// index within it}. `layer` is ignored for Sublayer::Embed. Throws UsageError when the point
/// or the field is not in the probe map.
std::pair<std::size_t, std::size_t> find_probe(const Chip& chip, int layer, Sublayer after,
                                               const std::string& field);

}  // namespace lockstep::chip
