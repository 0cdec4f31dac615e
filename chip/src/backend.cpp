#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <xxhash.h>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/error.hpp"

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

const ProbeMap::Field* ProbeMap::find(const std::string& name) const {
  for (const Field& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {
// ProbeMap::Dataflow of a chip file: every dimension's readers and writers, gathered into parts.
ProbeMap::Dataflow dataflow_of(const Chip& chip) {
  const std::uint32_t D = chip.config.d_model;
  ProbeMap::Dataflow df;
  std::vector<std::int64_t> owner(D, -1);
  for (const Field& f : chip.config.fields) {
    for (std::uint32_t d = f.offset; d < f.offset + f.width && d < D; ++d) owner[d] = static_cast<std::int64_t>(df.parts.size());
    df.parts.push_back({f.name, {}, {}, false, false});
  }
  // Per dimension: touched by anything; then unnamed touched runs become parts.
  std::vector<std::vector<SublayerRef>> readers(D), writers(D);
  std::vector<char> embedded(D, 0), unembedded(D, 0);
  auto add = [](std::vector<SublayerRef>& v, SublayerRef at) {
    if (v.empty() || !(v.back() == at)) v.push_back(at);
  };
  auto reads = [&](const LinearMap& m, SublayerRef at) {
    for (std::uint32_t c = 0; c < m.w.cols && c < D; ++c)
      if (m.w.col_ptr[c + 1] != m.w.col_ptr[c]) add(readers[c], at);
  };
  auto writes = [&](const LinearMap& m, SublayerRef at) {
    for (std::uint32_t r : m.w.row_idx)
      if (r < D) add(writers[r], at);
    for (std::uint32_t r = 0; r < m.bias.size() && r < D; ++r)
      if (m.bias[r] != 0.0f) add(writers[r], at);
  };
  for (std::uint32_t r : chip.embed.w.row_idx)
    if (r < D) embedded[r] = 1;
  for (std::uint32_t r = 0; r < chip.embed.bias.size() && r < D; ++r)
    if (chip.embed.bias[r] != 0.0f) embedded[r] = 1;
  for (std::uint32_t c = 0; c < chip.unembed.w.cols && c < D; ++c)
    unembedded[c] = chip.unembed.w.col_ptr[c + 1] != chip.unembed.w.col_ptr[c];
  for (int l = 0; l < static_cast<int>(chip.layers.size()); ++l) {
    const Layer& L = chip.layers[static_cast<std::size_t>(l)];
    const SublayerRef mem{l, Sublayer::Memory}, mlp{l, Sublayer::Mlp};
    if (!L.heads.empty()) df.sublayers.push_back(mem);
    for (const Head& h : L.heads) {
      for (const LinearMap* m : {&h.k, &h.q, &h.v, &h.beta}) reads(*m, mem);
      writes(h.o, mem);
    }
    if (L.mlp.kind == MlpKind::None) continue;
    df.sublayers.push_back(mlp);
    for (const LinearMap* m : {&L.mlp.w1, &L.mlp.wu, &L.mlp.wg}) reads(*m, mlp);
    writes(L.mlp.w2, mlp);
  }
  auto touched = [&](std::uint32_t d) {
    return embedded[d] || unembedded[d] || !readers[d].empty() || !writers[d].empty();
  };
  for (std::uint32_t d = 0; d < D;) {
    if (owner[d] >= 0 || !touched(d)) {
      ++d;
      continue;
    }
    std::uint32_t e = d;
    while (e < D && owner[e] < 0 && touched(e)) owner[e++] = static_cast<std::int64_t>(df.parts.size());
    df.parts.push_back({"dims[" + std::to_string(d) + ".." + std::to_string(e) + ")", {}, {}, false, false});
    d = e;
  }
  auto merge = [](std::vector<SublayerRef>& into, const std::vector<SublayerRef>& from) {
    into.insert(into.end(), from.begin(), from.end());
  };
  for (std::uint32_t d = 0; d < D; ++d) {
    if (owner[d] < 0) continue;
    ProbeMap::Dataflow::Part& p = df.parts[static_cast<std::size_t>(owner[d])];
    merge(p.readers, readers[d]);
    merge(p.writers, writers[d]);
    p.embedded = p.embedded || embedded[d];
    p.unembedded = p.unembedded || unembedded[d];
  }
  for (ProbeMap::Dataflow::Part& p : df.parts)
    for (auto* v : {&p.readers, &p.writers}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  return df;
}
}  // namespace

ProbeMap probe_map_of(const Chip& chip) {
  const std::uint32_t D = chip.config.d_model;
  // Residual dimension -> field index (named fields, then the unnamed runs the unembedding reads).
  ProbeMap pm;
  std::vector<std::int64_t> owner(D, -1);
  for (const Field& f : chip.config.fields) {
    for (std::uint32_t d = f.offset; d < f.offset + f.width && d < D; ++d) owner[d] = static_cast<std::int64_t>(pm.fields.size());
    pm.fields.push_back({f.name, f.width, {}});
  }
  std::vector<bool> read(D, false);
  for (std::uint32_t d = 0; d < chip.unembed.w.cols && d < D; ++d) read[d] = chip.unembed.w.col_ptr[d + 1] != chip.unembed.w.col_ptr[d];
  for (std::uint32_t d = 0; d < D;) {
    if (owner[d] >= 0 || !read[d]) {
      ++d;
      continue;
    }
    std::uint32_t e = d;
    while (e < D && owner[e] < 0 && read[e]) owner[e++] = static_cast<std::int64_t>(pm.fields.size());
    pm.fields.push_back({"dims[" + std::to_string(d) + ".." + std::to_string(e) + ")", e - d, {}});
    d = e;
  }
  auto mark = [&](const LinearMap& m, SublayerRef at) {
    auto touch = [&](std::uint32_t r) {
      if (r >= D || owner[r] < 0) return;
      auto& w = pm.fields[static_cast<std::size_t>(owner[r])].writers;
      if (w.empty() || !(w.back() == at)) w.push_back(at);
    };
    for (std::uint32_t r : m.w.row_idx) touch(r);
    for (std::uint32_t r = 0; r < m.bias.size(); ++r)
      if (m.bias[r] != 0.0f) touch(r);
  };
  for (int l = 0; l < static_cast<int>(chip.layers.size()); ++l) {
    const Layer& L = chip.layers[static_cast<std::size_t>(l)];
    for (const Head& h : L.heads) mark(h.o, {l, Sublayer::Memory});
    if (L.mlp.kind != MlpKind::None) mark(L.mlp.w2, {l, Sublayer::Mlp});
  }
  pm.points = chip.config.probes;
  pm.dataflow = dataflow_of(chip);
  std::vector<bool> listed(pm.fields.size(), false);
  for (std::uint32_t d = 0; d < D; ++d) {
    if (!read[d] || owner[d] < 0 || listed[static_cast<std::size_t>(owner[d])]) continue;
    listed[static_cast<std::size_t>(owner[d])] = true;
    pm.unembed_reads.push_back(pm.fields[static_cast<std::size_t>(owner[d])].name);
  }
  return pm;
}

std::uint32_t ChipBackend::vocab_size() const { return chip().config.vocab_size; }

std::string ChipBackend::identity() const {
  const std::string cfg = config_json(chip());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(cfg.data(), cfg.size())));
  return hex;
}

ProbeMap ChipBackend::probe_map() const { return probe_map_of(chip()); }

namespace {
// Offsets of each entry's tokens in the concatenated inputs/outputs; checks the spans.
std::vector<std::size_t> entry_offsets(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                       std::size_t out_size, const char* what) {
  if (streams.size() != counts.size()) throw UsageError(std::string(what) + ": streams and counts differ in length");
  std::vector<std::size_t> off(streams.size() + 1, 0);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (counts[i] == 0) throw UsageError(std::string(what) + ": a count of 0");
    off[i + 1] = off[i] + counts[i];
  }
  if (off.back() != out_size) throw UsageError(std::string(what) + ": output size is not the sum of the counts");
  return off;
}

// Steps entry i of (streams, counts) counts[i] times, one step_batch per round over the entries
// that still have steps; the input of entry i's step k is input(i, k), which may read out.
template <typename Input>
void step_rounds(ChipBackend& be, std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                 const std::vector<std::size_t>& off, std::span<Token> out, Input input) {
  const std::uint32_t rounds = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  std::vector<StreamId> ids;
  std::vector<Token> in, o;
  std::vector<std::size_t> at;
  for (std::uint32_t k = 0; k < rounds; ++k) {
    ids.clear();
    in.clear();
    at.clear();
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (k >= counts[i]) continue;
      ids.push_back(streams[i]);
      in.push_back(input(i, k));
      at.push_back(off[i] + k);
    }
    o.assign(ids.size(), 0);
    be.step_batch(ids, in, o);
    for (std::size_t j = 0; j < ids.size(); ++j) out[at[j]] = o[j];
  }
}
}  // namespace

void ChipBackend::teacher_forced_batch(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                       std::span<const Token> inputs, std::span<Token> out) {
  const auto off = entry_offsets(streams, counts, out.size(), "teacher_forced_batch");
  if (inputs.size() != out.size()) throw UsageError("teacher_forced_batch: inputs and outputs differ in size");
  step_rounds(*this, streams, counts, off, out, [&](std::size_t i, std::uint32_t k) { return inputs[off[i] + k]; });
}

void ChipBackend::free_running_batch(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                     std::span<const Token> first, std::span<Token> out) {
  const auto off = entry_offsets(streams, counts, out.size(), "free_running_batch");
  if (first.size() != streams.size()) throw UsageError("free_running_batch: one first token per stream");
  step_rounds(*this, streams, counts, off, out,
              [&](std::size_t i, std::uint32_t k) { return k == 0 ? first[i] : out[off[i] + k - 1]; });
}

void ChipBackend::free_running_batch_expecting(std::span<const StreamId> streams, std::span<const std::uint32_t> counts,
                                               std::span<const Token> first, std::span<const Token> expected,
                                               std::span<Token> out) {
  if (expected.size() != out.size()) throw UsageError("free_running_batch_expecting: expected and out differ in size");
  free_running_batch(streams, counts, first, out);
}

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
