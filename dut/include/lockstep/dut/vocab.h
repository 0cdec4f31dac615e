// The token vocabulary map of a chip under test (docs/spec/dut-protocol.md §6): how the chip
// numbers the trace tokens of trace.md §2. Plain data over format/'s token table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "lockstep/format/tokens.h"

namespace lockstep::dut {

/// A map that breaks a rule of §6; what() is one line naming the file, the line and the rule.
class VocabError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One-to-one map between trace-v3 token ids (trace.md §2: 256·kind + payload) and a chip's
/// ids (0 .. chip_vocab − 1) over every token trace-v3 produces (required_tokens()), and at
/// most the 18,785 of the kinds' payload ranges (producible_tokens()).
class VocabMap {
 public:
  /// The default map: the chip's ids are the spec's ids. Throws VocabError when chip_vocab is
  /// below the spec's vocabulary size (20,736).
  static VocabMap identity(std::uint32_t chip_vocab);
  /// Parses `text` (the file format of §6; `source` names it in errors). Throws VocabError when
  /// a line is malformed, a token is not one trace-v3 can produce, a token is mapped twice, two
  /// tokens share an id, an id is ≥ chip_vocab, or a producible token is missing.
  static VocabMap parse(const std::string& text, std::uint32_t chip_vocab, const std::string& source);
  /// parse() of a file; VocabError also when it cannot be read.
  static VocabMap load(const std::filesystem::path& path, std::uint32_t chip_vocab);
  /// The text of a vocabulary map file, for parse(); throws VocabError ("PATH: cannot read the
  /// vocabulary map: REASON", REASON as format::read_input_file's, such as "it is a directory,
  /// not a file"; "PATH: larger than 64 MiB, not a vocabulary map"). Lets a harness find an unreadable
  /// map before it starts the chip, whose vocab_size parse() needs.
  static std::string read(const std::filesystem::path& path);

  bool is_identity() const { return identity_; }
  /// The chip's id of spec token `spec_id`. Precondition: spec_id is a producible token (or START).
  std::uint32_t to_chip(std::uint32_t spec_id) const {
    if (spec_id & format::kUnmappedChipId) return spec_id & ~format::kUnmappedChipId;  // to_spec's, back
    return identity_ ? spec_id : to_chip_[spec_id];
  }
  /// The spec id of chip id `chip_id` (§6): the token the map gives it; for an id below the
  /// chip's vocab_size that names no token (a wrong prediction, as an argmax over the chip's
  /// logits can make), the id itself under the default map when it is below the spec's
  /// vocabulary size (it prints as its kind and payload, e.g. "BR(2)"), else
  /// format::kUnmappedChipId | chip_id. nullopt when chip_id ≥ vocab_size: a protocol error.
  std::optional<std::uint32_t> to_spec(std::uint32_t chip_id) const;
  /// Tokens mapped (18,785 for trace-v3).
  std::size_t size() const;

 private:
  bool identity_ = true;
  std::uint32_t chip_vocab_ = 0;
  std::vector<std::uint32_t> to_chip_;                     ///< spec id -> chip id (non-identity)
  std::unordered_map<std::uint32_t, std::uint32_t> to_spec_;  ///< chip id -> spec id (non-identity)
};

/// Every token a vocabulary map may name: START and each payload in each kind's payload range
/// (format::kinds(): BR 0–1, DQ 0–63, VMH 0–16, OIH 0–255, TRAP 0–255, ...), 18,785 tokens, in id
/// order. A KIND(*) line covers a kind's whole range.
std::vector<std::uint32_t> producible_tokens();

/// The tokens a vocabulary map must name (dut-protocol.md §6): producible_tokens() less those
/// trace-v3 never produces within a kind's range (trace.md §2: OIH(0), VMH(0), and TRAP codes that
/// isa.md §6 and vector.md §6 define no trap for), 18,544 tokens with START, in id order.
std::vector<std::uint32_t> required_tokens();

}  // namespace lockstep::dut
