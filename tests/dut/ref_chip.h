// TEST-ONLY: a chip under test whose every prediction is the reference model's (ref::Machine),
// for the dut-check tests of a chip's RESET. With Dirty::kRegisters, a RESET of a stream that ran
// a guest keeps that guest's registers x1..x31 (the image, pc and RAM are loaded afresh): the bug
// of a compiled chip whose register memory is not cleared (found by an outside tester, whose
// chip of that kind passed every dut-check and 200 fuzz programs). With Dirty::kVectorRegisters
// it keeps VR's words that the new image's `.lockstep.vreg` section does not write (a chip whose
// vector register memory is not cleared, found by an outside tester: it passed every check). A test binary may use both
// ref/ and chip/; ref/ and chip/ themselves never include each other.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/error.hpp"
#include "lockstep/format/elf.h"
#include "lockstep/ref/machine.h"

namespace lockstep::dut::testing {

class RefChip final : public chip::ChipBackend {
 public:
  enum class Dirty { kNone, kRegisters, kVectorRegisters };
  explicit RefChip(Dirty dirty) : dirty_(dirty) {}

  std::string name() const override { return dirty_ == Dirty::kNone ? "ref" : "ref-dirty-reset"; }
  void load(std::shared_ptr<const chip::Chip>) override {}
  const chip::Chip& chip() const override { throw chip::UsageError("ref chip has no chip file"); }
  std::string identity() const override { return name(); }
  std::uint32_t vocab_size() const override { return 20736; }  // trace-v3's ids (trace.md section 2)
  chip::ProbeMap probe_map() const override { return {}; }
  void set_num_streams(std::size_t n) override { streams_.clear(), streams_.resize(n); }
  std::size_t num_streams() const override { return streams_.size(); }
  void reset(chip::StreamId s, const chip::GuestImage& image) override {
    Stream& st = at(s);
    format::GuestImage g;
    g.entry = static_cast<std::uint32_t>(image.entry);
    for (const chip::Segment& seg : image.segments)
      g.segments.push_back({static_cast<std::uint32_t>(seg.address), static_cast<std::uint32_t>(seg.bytes.size()),
                            format::kPfR | format::kPfW | format::kPfX, seg.bytes});
    g.sections = image.sections;
    std::vector<std::uint32_t> kept(32, 0);
    ref::VectorState kept_vector;
    if (st.m) {
      for (unsigned r = 1; r < 32; ++r) kept[r] = st.m->reg(r);
      kept_vector = st.m->vector();
    }
    const bool used = st.m != nullptr;
    st.m = std::make_unique<ref::Machine>();
    st.m->load(g);
    if (dirty_ == Dirty::kRegisters && used)
      for (unsigned r = 1; r < 32; ++r) st.m->set_reg(r, kept[r]);
    if (dirty_ == Dirty::kVectorRegisters && used) {
      const auto vreg = g.sections.find(".lockstep.vreg");
      const std::size_t written = vreg == g.sections.end() ? 0 : (vreg->second.size() + 3) / 4;
      for (std::size_t w = written; w < kept_vector.vr.size(); ++w) st.m->vector().vr[w] = kept_vector.vr[w];
    }
    st.pending.clear();
    st.steps = 0;
  }
  // Each input is ignored but for counting: the prediction is the reference's next token.
  void step_batch(std::span<const chip::StreamId> streams, std::span<const chip::Token>,
                  std::span<chip::Token> out) override {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      Stream& st = at(streams[i]);
      if (!st.m) throw chip::UsageError("ref chip: stream not reset");
      while (st.pending.empty() && st.m->active()) {
        const auto t = st.m->step();
        if (t.empty()) break;
        st.pending.insert(st.pending.end(), t.begin(), t.end());
      }
      out[i] = st.pending.empty() ? 0 : st.pending.front();
      if (!st.pending.empty()) st.pending.pop_front();
      ++st.steps;
    }
  }
  std::uint64_t hash(chip::StreamId s) const override { return streams_.at(s).steps; }
  std::vector<std::uint8_t> save(chip::StreamId) const override { throw chip::UsageError("ref chip: no save"); }
  void restore(chip::StreamId, const std::vector<std::uint8_t>&) override {
    throw chip::UsageError("ref chip: no restore");
  }
  std::uint64_t steps(chip::StreamId s) const override { return streams_.at(s).steps; }
  void set_probe_recording(bool) override {}
  std::vector<float> probe(chip::StreamId, int, chip::Sublayer, const std::string&) const override {
    throw chip::UsageError("ref chip: no probes");
  }
  void set_audit(bool) override {}
  std::optional<chip::AuditViolation> audit_violation(chip::StreamId) const override { return std::nullopt; }

 private:
  struct Stream {
    std::unique_ptr<ref::Machine> m;
    std::deque<std::uint32_t> pending;
    std::uint64_t steps = 0;
  };
  Stream& at(chip::StreamId s) {
    if (s >= streams_.size()) throw chip::UsageError("ref chip: stream out of range");
    return streams_[s];
  }
  Dirty dirty_;
  std::vector<Stream> streams_;
};

}  // namespace lockstep::dut::testing
