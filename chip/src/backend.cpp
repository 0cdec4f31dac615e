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
