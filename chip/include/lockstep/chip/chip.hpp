// The compiled chip in memory: configuration plus sparse weights, and its file format
// (docs/spec/chip-format.md). The chip knows nothing about any guest ISA: it is generic layer
// math (embedding, delta-rule memory blocks, ReLU/gated MLPs, unembedding, argmax).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/chip/error.hpp"
#include "lockstep/chip/safetensors.hpp"

namespace lockstep::chip {

using Token = std::uint32_t;

inline constexpr int kFormatVersion = 2;
/// The oldest format version readers accept (version 1 stores every map's columns as col_ptr;
/// chip-format.md section 3.2).
inline constexpr int kMinFormatVersion = 1;
inline constexpr const char* kSpecVersion = "chip-format/1";
inline constexpr const char* kMetadataKey = "lockstep.chip";

enum class Activation : std::uint8_t { Identity, Relu };
/// Number format a layer declares safe for its activations (the executors here compute fp32;
/// the declaration tells the audit which exact range to enforce: fp32 2^24, fp16 2^11, bf16 2^8).
enum class NumberFormat : std::uint8_t { Fp32, Bf16, Fp16 };
enum class MlpKind : std::uint8_t { None, Relu, Gated };

/// A sparse matrix, compressed sparse column (CSC): rows x cols.
/// Column j's entries are row_idx/values[col_ptr[j] .. col_ptr[j+1]), rows strictly increasing.
struct SparseMatrix {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::vector<std::uint32_t> col_ptr;  ///< (cols + 1)
  std::vector<std::uint32_t> row_idx;  ///< (nnz)
  std::vector<float> values;           ///< (nnz)
  std::size_t nnz() const { return values.size(); }
};

/// y = act(W x + b). W is (rows x cols) sparse; bias is dense (rows), mostly zero.
struct LinearMap {
  SparseMatrix w;
  std::vector<float> bias;  ///< (rows)
  Activation act = Activation::Identity;
};

/// XXH3-64 of a map's weights: its shape, CSC arrays and bias as bits (not its activation).
/// Maps with the same_weights() hash alike.
std::uint64_t weights_hash(const LinearMap& m);

/// True when a and b have the same shape, CSC arrays and bias, bit for bit (so +0 and -0
/// differ); the activation is not compared. The test behind map aliases (chip-format.md
/// section 3.2) and behind the executors' evaluating equal maps once.
bool same_weights(const LinearMap& a, const LinearMap& b);

/// One delta-rule memory head. State S is (value_dim x key_dim) fp32.
///   k = act_k(W_k x + b_k)      (key_dim)        q = act_q(W_q x + b_q)   (key_dim)
///   v = W_v x + b_v             (value_dim)      beta = act_beta(w_beta . x + b_beta) (scalar)
///   S <- S + beta (v - S k) k^T ; o = S q ; x += W_o o      (W_o: d_model x value_dim)
struct Head {
  std::uint32_t key_dim = 0;
  std::uint32_t value_dim = 0;
  LinearMap k, q, v, beta, o;
};

/// Plain: x += W2 ReLU(W1 x + b1) + b2.  Gated: x += W2 (u (.) ReLU(g)) + b2, u = Wu x + bu,
/// g = Wg x + bg.  None: no MLP in this layer.  hidden = number of hidden units.
struct Mlp {
  MlpKind kind = MlpKind::None;
  std::uint32_t hidden = 0;
  LinearMap w1;  ///< plain only: (hidden x d_model), act Relu
  LinearMap wu;  ///< gated only: (hidden x d_model)
  LinearMap wg;  ///< gated only: (hidden x d_model), act Relu
  LinearMap w2;  ///< (d_model x hidden)
};

struct Layer {
  NumberFormat format = NumberFormat::Fp32;
  std::vector<Head> heads;
  Mlp mlp;
};

/// A named range of residual dimensions [offset, offset + width).
struct Field {
  std::string name;
  std::uint32_t offset = 0;
  std::uint32_t width = 0;
};

/// Where in a step a residual snapshot is taken.
enum class Sublayer : std::uint8_t { Embed, Memory, Mlp };

/// Probe point: after the embedding (layer ignored, -1) or after layer `layer`'s memory block /
/// MLP; `fields` names the residual fields that hold meaningful values there.
struct ProbePoint {
  int layer = -1;
  Sublayer after = Sublayer::Embed;
  std::vector<std::string> fields;
};

/// Declared bound of one activation kind (docs/spec/chip-format.md, "Numerics"):
/// every value v of `activation` in `layer` satisfies |v| <= bound and v * 2^frac_bits is an
/// integer. layer is -1 for the layer-less activations "embed" and "logits".
struct Bound {
  std::string activation;
  int layer = -1;
  double bound = 0;
  int frac_bits = 0;
};

/// Encoding of one byte into rows of a state column.
///   Scalar: 1 row = b;  Bits: 8 rows, row j = bit j;  OneHot: 256 rows, row b = 1;
///   Nibbles: 32 rows, row (b & 15) = 1 and row 16 + (b >> 4) = 1.
enum class ByteEncoding : std::uint8_t { Scalar, Bits, OneHot, Nibbles };
std::uint32_t encoding_rows(ByteEncoding e);

/// Where an initialiser's bytes come from.
enum class ByteSourceKind : std::uint8_t { Image, Section, Entry };

/// A named state initialiser applied (in file order) after a reset zeroes the state.
/// kind "bytes": source byte i (i = 0..length-1) is encoded (ByteEncoding) into column
///   column + i / bytes_per_column, rows starting at row + (i % bytes_per_column) * encoding_rows.
/// kind "const": rows [row, row + values.size()) of each column in [column, column + columns)
///   are set to `values`.
struct Initialiser {
  std::string name;
  std::uint32_t layer = 0;
  std::uint32_t head = 0;
  std::uint32_t column = 0;
  std::uint32_t row = 0;
  bool is_const = false;
  // bytes
  ByteSourceKind source = ByteSourceKind::Image;
  std::uint64_t address = 0;   ///< Image: first guest address
  std::string section;         ///< Section: name
  std::uint64_t offset = 0;    ///< Section: first byte within the section
  /// Section: a missing section reads as `length` zero bytes (still encoded, so e.g. Nibbles
  /// gives the one-hots of 0) instead of throwing ImageError (chip-format.md section 2;
  /// vector.md section 2.1: a missing `.lockstep.*` section leaves its memory zero).
  bool optional = false;
  std::uint64_t length = 0;    ///< number of bytes (Entry: 1..8, little-endian bytes of entry)
  std::uint32_t stride = 1;    ///< Image/Section: byte i is at address (offset) + i * stride; >= 1
  ByteEncoding encoding = ByteEncoding::Scalar;
  std::uint32_t bytes_per_column = 1;
  // const
  std::vector<float> values;
  std::uint32_t columns = 1;
};

/// Everything in the JSON configuration besides the layer shapes (which live in `layers`).
struct ChipConfig {
  int format_version = kFormatVersion;
  std::string spec_version = kSpecVersion;
  std::string compiler;  ///< free text: compiler name and version
  std::string machine;   ///< free text: what the chip computes
  std::uint32_t d_model = 0;
  std::uint32_t vocab_size = 0;
  NumberFormat number_format = NumberFormat::Fp32;
  std::vector<Field> fields;
  std::vector<ProbePoint> probes;
  std::vector<Bound> bounds;
  std::vector<Initialiser> initialisers;
  std::vector<std::string> token_names;  ///< optional: (vocab_size) names, or empty
};

/// A whole chip: configuration and weights.
///   embed: (d_model x vocab_size), column t is E[t]; act Identity
///   unembed: (vocab_size x d_model) + bias
struct Chip {
  ChipConfig config;
  LinearMap embed;
  std::vector<Layer> layers;
  LinearMap unembed;

  /// Checks every invariant of docs/spec/chip-format.md (shapes vs configuration, CSC
  /// structure, index ranges, finiteness, formats, initialiser targets, field/probe ranges).
  /// Throws FormatError with a one-line message naming the first problem.
  void validate() const;

  /// The field covering residual dimension `dim`, or nullptr.
  const Field* field_at(std::uint32_t dim) const;
  /// The field named `name`, or nullptr.
  const Field* find_field(const std::string& name) const;
  /// Total number of state floats of one stream (sum over heads of key_dim * value_dim).
  std::size_t state_size() const;
};

/// Reads and validates a chip file. Throws FormatError on any problem (one-line message).
Chip load_chip(const std::string& path);
/// Parses and validates a chip from the bytes of a chip file. Throws FormatError.
Chip parse_chip(const std::vector<std::uint8_t>& bytes);
/// Serialises a chip (validated first; throws FormatError if invalid).
std::vector<std::uint8_t> serialize_chip(const Chip& chip);
/// serialize_chip + write. Throws FormatError on I/O failure.
void save_chip(const Chip& chip, const std::string& path);

/// The configuration JSON (as stored in the metadata) of a chip.
std::string config_json(const Chip& chip);

/// Exact-integer range of a format: 2^24 (fp32), 2^11 (fp16), 2^8 (bf16).
double exact_limit(NumberFormat f);
/// Whether float v is exactly representable in format f.
bool representable(float v, NumberFormat f);

const char* to_string(NumberFormat f);
const char* to_string(Sublayer s);

}  // namespace lockstep::chip
