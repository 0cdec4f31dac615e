// Compiler primitives: small, named building blocks with exact integer semantics
// (docs/spec/chip-format.md, "Compiler primitives"; docs COMPILED-LAYERS.md for the identities).
// Each adds hidden units (and/or memory heads) to one layer and ADDS its result into residual
// dimensions that must hold 0 before (fresh fields), unless stated otherwise.
// "Integer x in [lo, hi]" is a precondition the caller guarantees; outside it results are
// unspecified but still finite.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/chip/compiler/builder.hpp"

namespace lockstep::chip::compiler {

/// A sparse residual vector: (dimension, value) pairs.
using SparseVec = std::vector<std::pair<std::uint32_t, double>>;

/// A one-hot predicate vector: entry v is a 0/1 linear form that is 1 when the encoded value is
/// v; at most one entry is 1 (all may be 0: no value). Entries that are the constant 0 (see
/// is_zero()) mark values that cannot occur and cost nothing in table().
using OneHot = std::vector<Lin>;

/// True when l is the constant 0 (no terms, c = 0).
bool is_zero(const Lin& l);

/// Condition (AND of 0/1 conditions): x[d] += v * [all conditions are 1] for every (d, v) of
/// `outs`, with one unit ReLU(sum conds - (n - 1)), n = conds.size() >= 1. Precondition: every
/// condition is an integer <= 1 (0/1, or a difference of 0/1 forms that is <= 1); a condition <= 0
/// makes the output 0. The unit's value is 1 when all hold and 0 otherwise.
void when(LayerBuilder& L, const std::vector<Lin>& conds, const SparseVec& outs);

/// Table over one-hot parts: for every combination (v_0, ..., v_{p-1}) of part values (skipping
/// entries that are the constant 0) whose fn(values) is non-empty, one unit
///   ReLU(sum_i parts[i][v_i] + sum gates - (p + g - 1))
/// that is 1 exactly when every part has that value and every gate is 1; its output is
/// fn(values). So x += fn(v) when each part i encodes v_i and all gates are 1, and nothing when a
/// part encodes no value or a gate is 0. Preconditions: parts are one-hots (OneHot), gates are
/// 0/1. Cost: one unit per combination with a non-empty result (the product of the part sizes at
/// most), so callers mask parts down to the bits they need.
void table(LayerBuilder& L, const std::vector<OneHot>& parts,
           const std::function<SparseVec(const std::vector<unsigned>&)>& fn, const std::vector<Lin>& gates = {});

/// Table of a small integer: out += table[x] for integer x in [0, n) where n = table.size();
/// adds 0 for integer x <= -1 or x >= n. n + 2 ReLU units r_j = ReLU(x - j), j = -1..n, using
/// [x = i] = r_{i-1} - 2 r_i + r_{i+1}. Hidden values are bounded by max|x| + 1; every partial
/// sum of the output is bounded by 4 max|table| (n + 2)(max|x| + 1), which must stay below 2^24
/// (the audit checks it).
void decode_lookup(LayerBuilder& L, const Lin& x, const std::vector<SparseVec>& table);

/// One-hot decode: out[i] += [x = i] for integer x, i in [0, out.width). n + 2 units.
void onehot_decode(LayerBuilder& L, const Lin& x, const FieldRef& out);

/// Table lookup of a one-hot (entries 0/1, at most one 1): out += table[i] where onehot[i] = 1.
/// One pass-through unit ReLU(onehot[i]) per non-empty table row.
void lookup(LayerBuilder& L, const FieldRef& onehot, const std::vector<SparseVec>& table);

/// Threshold: x[out] += coef * [x >= t] for integer x. Two units ReLU(x-t+1) - ReLU(x-t).
/// With an enable bit e (0/1) and hi = max x: coef * [x >= t AND e], the enable folded into the
/// bias as -(hi - t + 1)(1 - e).
void threshold(LayerBuilder& L, const Lin& x, double t, std::uint32_t out, double coef = 1);
void threshold_if(LayerBuilder& L, const Lin& x, double t, double hi, const Lin& enable, std::uint32_t out,
                  double coef = 1);

/// Compare: x[out] += [a >= b] for integers a, b.
void compare_ge(LayerBuilder& L, const Lin& a, const Lin& b, std::uint32_t out);

/// Add with carry in base `base` (default bytes): a, b in [0, base), cin in {0, 1}:
///   s = a + b + cin; x[sum] += s mod base; x[carry] += [s >= base].
/// Three units: ReLU(s), ReLU(s - base + 1), ReLU(s - base). With `enable` (0/1), both outputs
/// are multiplied by the enable bit (the first unit becomes the gated unit s (.) ReLU(enable)).
/// The output partial sums reach base^2, so base must be an integer in [2, 4096) for fp32
/// exactness (std::logic_error otherwise); wider words go across tokens or use nibble digits.
void add_with_carry(LayerBuilder& L, const Lin& a, const Lin& b, const Lin& cin, std::uint32_t sum,
                    std::uint32_t carry, double base = 256);
void add_with_carry_if(LayerBuilder& L, const Lin& a, const Lin& b, const Lin& cin, const Lin& enable,
                       std::uint32_t sum, std::uint32_t carry, double base = 256);

/// Gated product / select: x[out] += coef * u * ReLU(g). With g a bit: u if g else 0.
/// For x >= 0 small integers: the product u * x. One gated unit.
void gated_product(LayerBuilder& L, const Lin& u, const Lin& g, std::uint32_t out, double coef = 1);

/// AND of bits: x[out] += coef * [all bits are 1] = coef * ReLU(sum bits - (n - 1)). One unit.
void and_bits(LayerBuilder& L, const std::vector<Lin>& bits, std::uint32_t out, double coef = 1);

/// Pass-through of a non-negative value: x[out] += coef * v (one unit ReLU(v)).
void pass(LayerBuilder& L, const Lin& v, std::uint32_t out, double coef = 1);

/// A memory of `slots` slots of `width` values held in delta-rule state of one layer, spread
/// over heads of key_dim <= max_key_dim (slot s lives in head s / key_dim, column s % key_dim).
struct Memory {
  std::string name;
  std::uint32_t layer = 0;
  std::uint32_t slots = 0, width = 0, key_dim = 0;
  std::vector<std::uint32_t> heads;  ///< head indices in the layer
};

/// Allocates the heads of a memory in layer `layer`.
Memory add_memory(ChipBuilder& B, std::uint32_t layer, const std::string& name, std::uint32_t slots,
                  std::uint32_t width, std::uint32_t max_key_dim = 64);

/// Write: when enable = 1 and addr_onehot has a 1 at slot s, slot s := value (width forms); when
/// enable = 0 or no address bit is set, nothing changes. Per head: k = the head's slice of the
/// address one-hot, beta = ReLU(enable + sum(slice) - 1), v = value. One write per memory and step.
void memory_write(ChipBuilder& B, const Memory& m, const FieldRef& addr_onehot, const std::vector<Lin>& value,
                  const Lin& enable);
/// Write to a constant slot (a register): k = e_slot (bias), beta = ReLU(enable).
void memory_write_slot(ChipBuilder& B, const Memory& m, std::uint32_t slot, const std::vector<Lin>& value,
                       const Lin& enable);
/// Read: out[i] += slot[s][i] where addr_onehot has its 1 at s (0 if none). Reads happen after
/// the layer's writes (a read of the slot written in the same step sees the new value).
void memory_read(ChipBuilder& B, const Memory& m, const FieldRef& addr_onehot, const FieldRef& out);
/// Read of a constant slot.
void memory_read_slot(ChipBuilder& B, const Memory& m, std::uint32_t slot, const FieldRef& out);

/// Initial contents from guest bytes: slot first_slot + i / bytes_per_slot gets byte i of the
/// source, encoded at row (i % bytes_per_slot) * rows(encoding). One initialiser per head touched.
/// `proto` supplies name, source, address/section/offset, length and encoding.
void memory_init_bytes(ChipBuilder& B, const Memory& m, std::uint32_t first_slot, Initialiser proto);
/// Initial constant contents: rows [0, values.size()) of slots [first_slot, first_slot + count).
void memory_init_const(ChipBuilder& B, const Memory& m, const std::string& name, std::uint32_t first_slot,
                       std::uint32_t count, const std::vector<float>& values);

/// A vocabulary made of token kinds, each with `count` payload values: token = base + payload.
class TokenSpace {
 public:
  struct Kind {
    std::string name;
    Token base = 0;
    std::uint32_t count = 0;
  };
  /// Adds a kind with payloads [0, count); returns its index.
  std::uint32_t add_kind(const std::string& name, std::uint32_t count);
  Token token(std::uint32_t kind, std::uint32_t payload) const;
  /// (kind, payload) of a token; throws std::out_of_range outside the vocabulary.
  std::pair<std::uint32_t, std::uint32_t> decode(Token t) const;
  std::uint32_t vocab_size() const { return next_; }
  const std::vector<Kind>& kinds() const { return kinds_; }
  std::string name(Token t) const;

 private:
  std::vector<Kind> kinds_;
  Token next_ = 0;
};

/// Output emission with integer margins. With kind_onehot (one 1 among kinds) and payload_onehot
/// (one 1 among payloads), the logit of token (k, p) is
///   margin * (kind[k] + payload[p])   for kinds with count > 1,
///   2 * margin * kind[k]              for kinds with a single token.
/// The intended token scores 2 margin, every other at most margin: the argmax is exact and wins
/// by `margin`. Also names every token.
void emit_onehot(ChipBuilder& B, const TokenSpace& ts, const FieldRef& kind_onehot, const FieldRef& payload_onehot,
                 double margin = 2);

}  // namespace lockstep::chip::compiler
