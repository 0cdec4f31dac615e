// TEST-ONLY.  ScriptedBackend is not a chip: it implements ChipBackend by
// replaying a reference trace given to it (computed by ref::Machine in the
// test), with faults planted on purpose, so that the engine's mechanics
// (divergence detection, reports, replay classification, attribution,
// checkpoints, bisection) can be tested without a compiled chip.  It lives
// only in tests/engine/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/error.hpp"

namespace lockstep::engine::testing {

/// A planted fault.
struct Fault {
  enum class Kind {
    kFlip,         ///< the prediction of step `step` is XORed with `mask` (every time)
    kCorruptFrom,  ///< from step `step` on the state is corrupted: the 1st, 3rd, 5th... W0
                   ///< prediction at or after `step` has payload bit 0 flipped (so a value is
                   ///< answered right at one step and wrong at another)
    kMapFrom,      ///< from step `step` on, every W0 prediction has its payload XORed with `mask`:
                   ///< a fixed substitution of token ids (a wrong vocabulary map), the state intact
    kFlaky,        ///< like kFlip, but only the first time step `step` is predicted
    kForcedOnly,   ///< like kFlip, but only in teacher_forced_batch/free_running_batch calls (a
                   ///< chip whose FORCED/FREE path is wrong and STEP right); the backend then
                   ///< announces multi_step
    kBadRestore,   ///< restore() leaves the stream desynced (every later prediction ^ 2): an
                   ///< inexact RESTORE, which hash() shows
  };
  Kind kind = Kind::kFlip;
  std::uint64_t step = 0;
  std::uint32_t mask = 1;
  /// Probe points at layers >= `layer` see the faulty token (layer 0: next_kind,
  /// layer 1: next_payload_lo/hi; 2: no probe sees it -> "unembedding").
  int layer = 1;
};

class ScriptedBackend final : public chip::ChipBackend {
 public:
  /// Token kinds 0..80 (trace.md §2, trace-v3).
  static constexpr std::uint32_t kKinds = 81;

  /// scripts[s] is the reference trace t_1..t_N stream s predicts.
  explicit ScriptedBackend(std::vector<std::vector<chip::Token>> scripts, std::vector<Fault> faults = {})
      : scripts_(std::move(scripts)), faults_(std::move(faults)) {
    for (const auto& script : scripts_) {  // w0_[s][k]: W0 tokens among steps 1..k of stream s
      std::vector<std::uint64_t> w(script.size() + 1, 0);
      for (std::size_t k = 0; k < script.size(); ++k) w[k + 1] = w[k] + (script[k] >> 8 == 1);
      w0_.push_back(std::move(w));
    }
    chip_ = std::make_shared<chip::Chip>();
    auto& c = chip_->config;
    c.vocab_size = 256 * kKinds;  // trace.md §2: V = 256 * 81, every trace-v3 kind
    std::uint32_t off = 0;
    for (auto [name, w] : std::vector<std::pair<std::string, std::uint32_t>>{
             {"kind", kKinds}, {"payload", 1}, {"next_kind", kKinds}, {"next_payload_lo", 16}, {"next_payload_hi", 16}}) {
      c.fields.push_back({name, off, w});
      off += w;
    }
    c.d_model = off;
    c.probes.push_back({-1, chip::Sublayer::Embed, {"kind", "payload"}});
    c.probes.push_back({1, chip::Sublayer::Mlp, {"next_payload_lo", "next_payload_hi"}});
    c.probes.push_back({0, chip::Sublayer::Mlp, {"next_kind"}});  // out of order on purpose
  }

  /// Sleep per step (for the kill test), and a flag raised when any stream reaches step `stop_at`.
  std::chrono::microseconds delay{0};
  std::atomic<bool>* stop_flag = nullptr;
  std::uint64_t stop_at = 0;
  std::uint64_t batch_calls = 0, multi_stream_batches = 0;
  /// Every probe answers zeros (its width kept): probes that show nothing.
  bool zero_probes = false;

  std::string name() const override { return "scripted"; }
  void load(std::shared_ptr<const chip::Chip>) override { throw chip::UsageError("scripted: no chips"); }
  const chip::Chip& chip() const override { return *chip_; }
  void set_num_streams(std::size_t n) override { streams_.resize(n); }
  std::size_t num_streams() const override { return streams_.size(); }
  void reset(chip::StreamId s, const chip::GuestImage&) override { at(s) = Stream{}; }

  void step_batch(std::span<const chip::StreamId> ids, std::span<const chip::Token> in,
                  std::span<chip::Token> out) override {
    ++batch_calls;
    if (ids.size() > 1) ++multi_stream_batches;
    if (delay.count()) std::this_thread::sleep_for(delay);
    for (std::size_t i = 0; i < ids.size(); ++i) out[i] = step_one(ids[i], in[i]);
  }

  /// Counts the engine's multi-step calls (then steps as the default implementation does).
  std::uint64_t multi_calls = 0, most_steps_per_call = 0;
  void teacher_forced_batch(std::span<const chip::StreamId> ids, std::span<const std::uint32_t> counts,
                            std::span<const chip::Token> in, std::span<chip::Token> out) override {
    count_multi(counts);
    in_multi_ = true;
    ChipBackend::teacher_forced_batch(ids, counts, in, out);
    in_multi_ = false;
  }
  void free_running_batch(std::span<const chip::StreamId> ids, std::span<const std::uint32_t> counts,
                          std::span<const chip::Token> first, std::span<chip::Token> out) override {
    count_multi(counts);
    in_multi_ = true;
    ChipBackend::free_running_batch(ids, counts, first, out);
    in_multi_ = false;
  }
  chip::Capabilities capabilities() const override {
    chip::Capabilities c;
    c.multi_step = has(Fault::Kind::kForcedOnly);
    return c;
  }

  std::uint64_t hash(chip::StreamId s) const override {
    const Stream& st = streams_.at(s);
    return st.k * 0x9E3779B97F4A7C15ull ^ (st.corrupted ? 0xdeadbeefull : 0) ^ (st.desynced ? 0x1234ull : 0);
  }
  std::vector<std::uint8_t> save(chip::StreamId s) const override {
    const Stream& st = streams_.at(s);
    std::vector<std::uint8_t> b(10);
    std::memcpy(b.data(), &st.k, 8);
    b[8] = st.corrupted;
    b[9] = st.desynced;
    return b;
  }
  void restore(chip::StreamId s, const std::vector<std::uint8_t>& b) override {
    if (b.size() != 10) throw chip::FormatError("scripted: bad checkpoint");
    Stream& st = at(s);
    st = Stream{};
    std::memcpy(&st.k, b.data(), 8);
    st.corrupted = b[8];
    st.desynced = b[9] || has(Fault::Kind::kBadRestore);
  }
  std::uint64_t steps(chip::StreamId s) const override { return streams_.at(s).k; }
  void set_probe_recording(bool on) override { record_ = on; }
  std::vector<float> probe(chip::StreamId s, int layer, chip::Sublayer after,
                           const std::string& field) const override {
    std::vector<float> v = probe_values(s, layer, after, field);
    if (zero_probes) std::fill(v.begin(), v.end(), 0.0f);
    return v;
  }
  std::vector<float> probe_values(chip::StreamId s, int layer, chip::Sublayer after, const std::string& field) const {
    const Stream& st = streams_.at(s);
    if (!st.recorded) throw chip::UsageError("scripted: recording was off");
    const chip::Token tok = after == chip::Sublayer::Embed ? st.last_in
                            : layer >= st.fault_layer      ? st.last_out
                                                           : st.last_correct;
    const std::uint32_t kind = tok >> 8, payload = tok & 255;
    if (field == "kind" || field == "next_kind") {
      std::vector<float> v(kKinds, 0.0f);
      if (kind < kKinds) v[kind] = 1;
      return v;
    }
    if (field == "payload") return {static_cast<float>(payload)};
    if (field == "next_payload_lo" || field == "next_payload_hi") {
      std::vector<float> v(16, 0.0f);
      v[field == "next_payload_lo" ? payload & 15 : payload >> 4] = 1;
      return v;
    }
    throw chip::UsageError("scripted: no field " + field);
  }
  void set_audit(bool) override {}
  std::optional<chip::AuditViolation> audit_violation(chip::StreamId) const override { return std::nullopt; }

 private:
  struct Stream {
    std::uint64_t k = 0;  // steps done
    bool corrupted = false, desynced = false;
    bool recorded = false;
    chip::Token last_in = 0, last_out = 0, last_correct = 0;
    int fault_layer = 99;
  };
  Stream& at(chip::StreamId s) {
    if (s >= streams_.size()) throw chip::UsageError("scripted: bad stream");
    return streams_[s];
  }

  bool has(Fault::Kind k) const {
    return std::any_of(faults_.begin(), faults_.end(), [k](const Fault& f) { return f.kind == k; });
  }

  void count_multi(std::span<const std::uint32_t> counts) {
    ++multi_calls;
    for (std::uint32_t c : counts) most_steps_per_call = std::max<std::uint64_t>(most_steps_per_call, c);
  }

  chip::Token step_one(chip::StreamId s, chip::Token input) {
    Stream& st = at(s);
    const auto& script = scripts_.at(s);
    const std::uint64_t n = st.k + 1;  // the step being predicted
    const chip::Token want_in = st.k == 0 ? 0 : script.at(std::min<std::size_t>(st.k - 1, script.size() - 1));
    if (input != want_in) st.desynced = true;  // fed a token the script did not expect
    const chip::Token correct = script.at(std::min<std::size_t>(st.k, script.size() - 1));
    chip::Token out = correct;
    st.fault_layer = 99;
    for (const Fault& f : faults_) {
      const bool hit = (f.kind == Fault::Kind::kFlip && n == f.step) ||
                       (f.kind == Fault::Kind::kForcedOnly && n == f.step && in_multi_) ||
                       (f.kind == Fault::Kind::kFlaky && n == f.step && !flaky_fired_) ||
                       ((f.kind == Fault::Kind::kCorruptFrom || f.kind == Fault::Kind::kMapFrom) && n >= f.step);
      if (f.kind == Fault::Kind::kCorruptFrom && n >= f.step) st.corrupted = true;
      if (!hit) continue;
      if (f.kind == Fault::Kind::kCorruptFrom) {
        const auto& w = w0_.at(s);
        const std::size_t last = w.size() - 1;
        const std::uint64_t w0s = w[std::min<std::size_t>(n, last)] - w[std::min<std::size_t>(f.step - 1, last)];
        if (out >> 8 == 1 && w0s % 2 == 1) out ^= 1;  // W0 payload bit 0, every other W0
      } else if (f.kind == Fault::Kind::kMapFrom) {
        if (out >> 8 == 1) out ^= f.mask;  // W0(x) named W0(x ^ mask)
      } else {
        out ^= f.mask;
        if (f.kind == Fault::Kind::kFlaky) flaky_fired_ = true;
      }
      if (out != correct) st.fault_layer = f.layer;
    }
    if (st.desynced) out ^= 2;
    st.recorded = record_;
    st.last_in = input;
    st.last_out = out;
    st.last_correct = correct;
    ++st.k;
    if (stop_flag && stop_at && st.k >= stop_at) stop_flag->store(true);
    return out;
  }

  std::vector<std::vector<chip::Token>> scripts_;
  std::vector<std::vector<std::uint64_t>> w0_;  // W0 counts per stream (kCorruptFrom)
  std::vector<Fault> faults_;
  std::shared_ptr<chip::Chip> chip_;
  std::vector<Stream> streams_;
  bool record_ = false;
  bool flaky_fired_ = false;
  bool in_multi_ = false;  // inside teacher_forced_batch / free_running_batch
};

}  // namespace lockstep::engine::testing
