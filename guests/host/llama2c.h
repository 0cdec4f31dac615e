// llama2.c checkpoint ("version 0") and tokenizer reader.
//
// Format: /work/shared/models/README.md (seven little-endian int32 header
// values, then float32 tensors in llama2.c order, then the legacy RoPE tables,
// then the classifier when vocab_size is negative).  Every malformed input is
// rejected with a one-line lockstep::host::ModelError.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::host {

/// One-line error for a malformed checkpoint or tokenizer (message names the file and the problem).
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Shapes from the checkpoint header.
struct Config {
  int dim = 0;         ///< transformer width (stories260K: 64)
  int hidden_dim = 0;  ///< feed-forward width (172)
  int n_layers = 0;    ///< 5
  int n_heads = 0;     ///< 8
  int n_kv_heads = 0;  ///< 4
  int vocab_size = 0;  ///< 512 (absolute value of the header field)
  int seq_len = 0;     ///< 512
  bool shared_classifier = true;  ///< header vocab_size > 0: classifier = token embedding

  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return dim * n_kv_heads / n_heads; }
};

/// Float32 weights, row-major, shapes as in llama2.c run.c.
struct Weights {
  std::vector<float> token_embedding;  ///< (vocab, dim)
  std::vector<float> rms_att;          ///< (layer, dim)
  std::vector<float> wq;               ///< (layer, dim, dim)      out x in
  std::vector<float> wk;               ///< (layer, kv_dim, dim)
  std::vector<float> wv;               ///< (layer, kv_dim, dim)
  std::vector<float> wo;               ///< (layer, dim, dim)
  std::vector<float> rms_ffn;          ///< (layer, dim)
  std::vector<float> w1;               ///< (layer, hidden, dim)
  std::vector<float> w2;               ///< (layer, dim, hidden)
  std::vector<float> w3;               ///< (layer, hidden, dim)
  std::vector<float> rms_final;        ///< (dim)
  std::vector<float> wcls;             ///< (vocab, dim); a copy of token_embedding when shared
};

/// A loaded checkpoint.
struct Checkpoint {
  Config config;
  Weights w;
};

/// Parses a checkpoint image; `name` is used in error messages.  Throws ModelError on: a file
/// shorter than the header; a header value out of range (non-positive shapes, dim not divisible
/// by n_heads, n_heads not divisible by n_kv_heads, odd head size, any shape above 2^16); a file
/// size different from the one the header implies; a non-finite float (named by tensor and index).
Checkpoint parse_checkpoint(std::span<const std::uint8_t> bytes, std::string_view name);

/// Reads and parses a checkpoint file (ModelError also when it cannot be read).
Checkpoint read_checkpoint(const std::filesystem::path& path);

/// Serialises a checkpoint in the version-0 layout (legacy RoPE tables written as zeros).
std::vector<std::uint8_t> serialize_checkpoint(const Checkpoint& ck);

/// The sentencepiece vocabulary in llama2.c tokenizer.bin format.
struct Tokenizer {
  int max_token_length = 0;
  std::vector<float> scores;
  std::vector<std::string> pieces;

  /// Text of `token` following `prev` exactly as llama2.c decode(): a leading space is dropped
  /// after BOS (id 1), and pieces "<0xHH>" are the raw byte HH.
  std::string decode(int prev, int token) const;
  /// Concatenated decode of a token sequence whose first element is the previous token (BOS).
  std::string decode_all(std::span<const int> tokens) const;
};

/// Parses tokenizer bytes for a vocabulary of `vocab_size` pieces (ModelError on truncation,
/// a negative or oversize length, trailing bytes, or a non-finite score).
Tokenizer parse_tokenizer(std::span<const std::uint8_t> bytes, int vocab_size, std::string_view name);
Tokenizer read_tokenizer(const std::filesystem::path& path, int vocab_size);

/// Reads a whole file (ModelError when it cannot be opened).
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path);

/// Lower-case hex SHA-256 of `bytes` (FIPS 180-4).
std::string sha256_hex(std::span<const std::uint8_t> bytes);

/// SHA-256 of the genuine stories260K.bin and tok512.bin (models/README.md).
inline constexpr std::string_view kStories260KSha256 =
    "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696";
inline constexpr std::string_view kTok512Sha256 =
    "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312";

/// The models folder: $LOCKSTEP_MODELS when set, else `<source_root>/../shared/models`.
std::filesystem::path models_dir(const std::filesystem::path& source_root);

}  // namespace lockstep::host
