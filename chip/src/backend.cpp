#include <cmath>
#include <cstring>
#include <sstream>

#include "lockstep/chip/backend.hpp"

namespace lockstep::chip {

std::string AuditViolation::to_string() const {
  std::ostringstream os;
  os.precision(17);
  os << "audit: step " << step << " ";
  if (layer >= 0) os << "layer " << layer << " ";
  os << activation;
  if (head >= 0) os << " head " << head;
  os << " [" << index << "]";
  if (!field.empty()) os << " (field " << field << ")";
  os << " = " << value << ": " << reason;
  return os.str();
}

std::size_t DecisionCoverage::units() const {
  std::size_t n = 0;
  for (const Layer& l : layers) n += l.active.size();
  return n;
}

std::size_t DecisionCoverage::both_sides() const {
  std::size_t n = 0;
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (std::size_t u = 0; u < layers[l].active.size(); ++u) n += seen_active(l, u) && seen_inactive(l, u);
  return n;
}

void DecisionCoverage::merge(const DecisionCoverage& o) {
  if (layers.empty()) {
    *this = o;
    return;
  }
  bool same = o.layers.size() == layers.size();
  for (std::size_t l = 0; same && l < layers.size(); ++l)
    same = o.layers[l].active.size() == layers[l].active.size() && o.layers[l].head_writes.size() == layers[l].head_writes.size();
  if (!same) throw UsageError("DecisionCoverage::merge: records of differently shaped chips");
  for (std::size_t l = 0; l < layers.size(); ++l) {
    layers[l].evaluations += o.layers[l].evaluations;
    for (std::size_t u = 0; u < layers[l].active.size(); ++u) layers[l].active[u] += o.layers[l].active[u];
    for (std::size_t h = 0; h < layers[l].head_writes.size(); ++h) layers[l].head_writes[h] += o.layers[l].head_writes[h];
  }
}

void ChipBackend::set_decision_coverage(bool on) {
  if (on) throw UsageError("decision coverage is not supported by the " + name() + " backend");
}

DecisionCoverage ChipBackend::decision_coverage() const {
  throw UsageError("decision coverage is not supported by the " + name() + " backend");
}

void ChipBackend::clear_decision_coverage() {}

Token ChipBackend::step(StreamId s, Token input) {
  Token out = 0;
  step_batch(std::span<const StreamId>(&s, 1), std::span<const Token>(&input, 1), std::span<Token>(&out, 1));
  return out;
}

std::vector<Token> ChipBackend::teacher_forced(StreamId s, std::span<const Token> inputs) {
  std::vector<Token> out(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) out[i] = step(s, inputs[i]);
  return out;
}

std::vector<Token> ChipBackend::free_running(StreamId s, Token first, std::size_t n) {
  std::vector<Token> out(n);
  Token t = first;
  for (std::size_t i = 0; i < n; ++i) t = out[i] = step(s, t);
  return out;
}

namespace {
constexpr char kCheckpointMagic[4] = {'L', 'K', 'C', 'S'};
constexpr std::uint32_t kCheckpointVersion = 1;
constexpr std::size_t kCheckpointHeader = 4 + 4 + 8 + 8 + 8;
}  // namespace

std::vector<std::uint8_t> encode_checkpoint(std::uint64_t fingerprint, std::uint64_t steps,
                                            std::span<const float> state) {
  std::vector<std::uint8_t> out(kCheckpointHeader + state.size() * 4);
  std::uint8_t* p = out.data();
  const std::uint64_t n = state.size();
  std::memcpy(p, kCheckpointMagic, 4);
  std::memcpy(p + 4, &kCheckpointVersion, 4);
  std::memcpy(p + 8, &fingerprint, 8);
  std::memcpy(p + 16, &steps, 8);
  std::memcpy(p + 24, &n, 8);
  if (n) std::memcpy(p + kCheckpointHeader, state.data(), n * 4);
  return out;
}

DecodedCheckpoint decode_checkpoint(std::span<const std::uint8_t> bytes, std::uint64_t fingerprint,
                                    std::size_t state_size) {
  if (bytes.size() < kCheckpointHeader) throw FormatError("checkpoint: truncated header");
  if (std::memcmp(bytes.data(), kCheckpointMagic, 4) != 0) throw FormatError("checkpoint: bad magic (not a stream checkpoint)");
  std::uint32_t version;
  std::uint64_t fp, n;
  DecodedCheckpoint d;
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&fp, bytes.data() + 8, 8);
  std::memcpy(&d.steps, bytes.data() + 16, 8);
  std::memcpy(&n, bytes.data() + 24, 8);
  if (version != kCheckpointVersion) throw FormatError("checkpoint: unsupported version " + std::to_string(version));
  if (fp != fingerprint) throw FormatError("checkpoint: made for a different chip (fingerprint mismatch)");
  if (n != state_size) throw FormatError("checkpoint: state has " + std::to_string(n) + " floats, chip needs " + std::to_string(state_size));
  if (bytes.size() != kCheckpointHeader + n * 4)
    throw FormatError("checkpoint: size " + std::to_string(bytes.size()) + ", expected " + std::to_string(kCheckpointHeader + n * 4));
  d.state.resize(n);
  if (n) std::memcpy(d.state.data(), bytes.data() + kCheckpointHeader, n * 4);
  for (float v : d.state)
    if (!std::isfinite(v)) throw FormatError("checkpoint: non-finite state value");
  return d;
}

std::pair<std::size_t, std::size_t> find_probe(const Chip& chip, int layer, Sublayer after,
                                               const std::string& field) {
  const auto& probes = chip.config.probes;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const ProbePoint& p = probes[i];
    if (p.after != after || (after != Sublayer::Embed && p.layer != layer)) continue;
    for (std::size_t f = 0; f < p.fields.size(); ++f)
      if (p.fields[f] == field) return {i, f};
  }
  throw UsageError("probe: field '" + field + "' is not in the probe map after layer " + std::to_string(layer) +
                   " " + to_string(after));
}

}  // namespace lockstep::chip
