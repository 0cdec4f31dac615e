// A test rig that runs one compiler primitive through the real CPU executor on chosen integer
// operands. Operand i is a register (layer 0 memory) set by feeding a token of kind i whose
// payload encodes the value; later layers (built by the test) compute the primitive from the
// registers every step, and probes read the output fields exactly.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/chip/compiler/primitives.hpp"
#include "lockstep/chip/cpu_executor.hpp"

namespace lockstep::chip::test {

using compiler::ChipBuilder;
using compiler::FieldRef;
using compiler::Lin;

struct ProbeSpec {
  int layer = 1;
  Sublayer after = Sublayer::Mlp;
  std::vector<std::string> fields;
};

class Rig {
 public:
  using BuildFn = std::function<ProbeSpec(ChipBuilder&, const std::vector<Lin>& operands)>;

  /// ranges: [lo, hi] per operand. build: adds layers 1.. and returns the probe of the outputs.
  Rig(std::vector<std::pair<int, int>> ranges, const BuildFn& build, std::uint32_t min_vocab = 0)
      : ranges_(std::move(ranges)) {
    std::uint32_t vocab = 0;
    for (const auto& [lo, hi] : ranges_) {
      bases_.push_back(vocab);
      vocab += static_cast<std::uint32_t>(hi - lo + 1);
    }
    vocab = std::max(vocab, min_vocab);
    ChipBuilder B("primitive rig", vocab);
    const auto n = static_cast<std::uint32_t>(ranges_.size());
    const FieldRef kind = B.field("rig.kind", n);
    const FieldRef val = B.field("rig.val", 1);
    for (std::uint32_t i = 0; i < n; ++i)
      for (int v = ranges_[i].first; v <= ranges_[i].second; ++v) {
        const Token t = bases_[i] + static_cast<Token>(v - ranges_[i].first);
        B.embed(t, kind.dim(i), 1);
        if (v != 0) B.embed(t, val.dim(), v);
      }
    B.add_layer();
    std::vector<Lin> ops;
    for (std::uint32_t i = 0; i < n; ++i) {
      const FieldRef in = B.field("rig.in" + std::to_string(i), 1);
      const auto reg = compiler::add_memory(B, 0, "reg" + std::to_string(i), 1, 1);
      compiler::memory_write_slot(B, reg, 0, {val[0]}, kind[i]);
      compiler::memory_read_slot(B, reg, 0, in);
      ops.push_back(in[0]);
    }
    probe_ = build(B, ops);
    B.probe(probe_.layer, probe_.after, probe_.fields);
    chip_ = std::make_shared<const Chip>(B.build());
    ex_ = std::make_unique<CpuExecutor>(chip_, 1);
    ex_->set_probe_recording(true);
    ex_->set_audit(true);
    ex_->reset(0, GuestImage{});
    values_.assign(n, 0);
    for (std::uint32_t i = 0; i < n; ++i) set(i, ranges_[i].first);
  }

  /// Sets operand i to v (one step). Returns the token the chip predicts.
  Token set(std::uint32_t i, int v) {
    values_[i] = v;
    last_ = ex_->step(0, bases_[i] + static_cast<Token>(v - ranges_[i].first));
    return last_;
  }
  /// Output field values after the last step.
  std::vector<float> out(const std::string& field) const { return ex_->probe(0, probe_.layer, probe_.after, field); }
  float out1(const std::string& field) const { return out(field).at(0); }
  Token token() const { return last_; }
  const CpuExecutor& executor() const { return *ex_; }
  const Chip& chip() const { return *chip_; }

 private:
  std::vector<std::pair<int, int>> ranges_;
  std::vector<Token> bases_;
  std::vector<int> values_;
  ProbeSpec probe_;
  std::shared_ptr<const Chip> chip_;
  std::unique_ptr<CpuExecutor> ex_;
  Token last_ = 0;
};

}  // namespace lockstep::chip::test
