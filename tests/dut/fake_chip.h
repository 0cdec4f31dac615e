// TEST-ONLY: a deterministic chip behind chip::ChipBackend that knows nothing of any machine. Each
// stream's state is a 64-bit mix of its image and every input it consumed; each prediction is a
// producible trace-v3 token picked by that state (through an optional id shift, to test
// vocabulary maps). Used to test the protocol's transport, codec, server and harness side
// without compiling a chip.
#pragma once

#include <cstring>
#include <vector>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/error.hpp"
#include "lockstep/dut/vocab.h"

namespace lockstep::dut::testing {

class FakeChip final : public chip::ChipBackend {
 public:
  /// Token ids on the wire are spec ids + `shift` (0: the spec's ids). `nondeterministic`: every
  /// 97th prediction this chip makes (over all its streams and calls) is another token, so the
  /// same stream reset and fed the same inputs does not predict the same tokens (§4's MUST).
  explicit FakeChip(std::uint32_t shift = 0, bool nondeterministic = false)
      : shift_(shift), nondeterministic_(nondeterministic), tokens_(producible_tokens()) {}

  std::string name() const override { return "fake"; }
  void load(std::shared_ptr<const chip::Chip>) override {}
  const chip::Chip& chip() const override { throw chip::UsageError("fake chip has no chip file"); }
  chip::Capabilities capabilities() const override { return {}; }
  std::uint32_t vocab_size() const override { return 20736 + shift_; }
  std::string identity() const override { return "fake-" + std::to_string(shift_); }
  chip::ProbeMap probe_map() const override {
    chip::ProbeMap m;
    m.fields.push_back({"next_kind", 3, {{0, chip::Sublayer::Mlp}}});
    m.fields.push_back({"in_kind", 2, {}});
    m.points.push_back({-1, chip::Sublayer::Embed, {"in_kind"}});
    m.points.push_back({0, chip::Sublayer::Mlp, {"next_kind", "in_kind"}});
    m.unembed_reads = {"next_kind"};
    return m;
  }
  void set_num_streams(std::size_t n) override { state_.assign(n, 0), steps_.assign(n, 0); }
  std::size_t num_streams() const override { return state_.size(); }
  void reset(chip::StreamId s, const chip::GuestImage& image) override {
    need(s);
    if (image.sections.count(".needs-missing")) throw chip::ImageError("missing section .missing");
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ image.entry;
    for (const auto& seg : image.segments) {
      h = mix(h, seg.address);
      for (std::uint8_t b : seg.bytes) h = mix(h, b);
    }
    for (const auto& [name, data] : image.sections) {
      for (char c : name) h = mix(h, static_cast<std::uint8_t>(c));
      for (std::uint8_t b : data) h = mix(h, b);
    }
    state_[s] = h;
    steps_[s] = 0;
  }
  void step_batch(std::span<const chip::StreamId> streams, std::span<const chip::Token> inputs,
                  std::span<chip::Token> out) override {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      need(streams[i]);
      std::uint64_t& st = state_[streams[i]];
      st = mix(st, inputs[i]);
      out[i] = tokens_[(st + (nondeterministic_ && ++predictions_ % 97 == 0)) % tokens_.size()] + shift_;
      last_in_ = inputs[i];
      ++steps_[streams[i]];
    }
  }
  std::uint64_t hash(chip::StreamId s) const override { return state_.at(s); }
  std::vector<std::uint8_t> save(chip::StreamId s) const override {
    std::vector<std::uint8_t> b(8);
    std::memcpy(b.data(), &state_.at(s), 8);
    return b;
  }
  void restore(chip::StreamId s, const std::vector<std::uint8_t>& b) override {
    need(s);
    if (b.size() != 8) throw chip::FormatError("fake blob: not 8 bytes");
    std::memcpy(&state_[s], b.data(), 8);
  }
  std::uint64_t steps(chip::StreamId s) const override { return steps_.at(s); }
  void set_probe_recording(bool on) override { recording_ = on; }
  std::vector<float> probe(chip::StreamId, int layer, chip::Sublayer, const std::string& field) const override {
    if (!recording_) throw chip::UsageError("probe: recording is off");
    if (field == "next_kind") return {1, 0, static_cast<float>(layer)};
    if (field == "in_kind") return {static_cast<float>(last_in_ % 7), 1};
    throw chip::UsageError("probe: no field " + field);
  }
  void set_audit(bool) override {}
  std::optional<chip::AuditViolation> audit_violation(chip::StreamId) const override { return std::nullopt; }

 private:
  static std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
  }
  void need(chip::StreamId s) const {
    if (s >= state_.size()) throw chip::UsageError("fake: stream out of range");
  }
  std::uint32_t shift_;
  bool nondeterministic_;
  std::uint64_t predictions_ = 0;
  std::vector<std::uint32_t> tokens_;
  std::vector<std::uint64_t> state_, steps_;
  bool recording_ = false;
  std::uint32_t last_in_ = 0;
};

}  // namespace lockstep::dut::testing
