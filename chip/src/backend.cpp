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

}  // namespace lockstep::chip
