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

/// The BOS token id of llama2.c's sentencepiece vocabulary.
inline constexpr int kBosToken = 1;

/// What greedy decoding does when the model generates BOS (docs/guests.md).
enum class AtBos {
  kStop,      ///< llama2.c: BOS delimits stories, the story ends (BOS is not part of it)
  kContinue,  ///< keep decoding through BOS (a sequence for teacher-forced measurements)
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
  /// head_size() * n_kv_heads, computed in 64 bits (dim * n_kv_heads overflows an int at
  /// dim = 65536, n_kv_heads = 32768); never above dim when n_kv_heads divides n_heads.
  int kv_dim() const {
    return static_cast<int>(static_cast<std::int64_t>(dim) * n_kv_heads / n_heads);
  }
};

/// The largest run state a checkpoint may imply (floats): the float model's K and V caches
/// (2 * n_layers * seq_len * kv_dim) plus its attention scores (n_heads * seq_len).  2^28
/// floats = 1 GiB; stories260K needs 167,936.  Larger headers are rejected before anything is
/// allocated (the file size alone does not bound seq_len * n_layers).
inline constexpr std::uint64_t kMaxRunStateFloats = std::uint64_t{1} << 28;

/// What a checkpoint header implies, every size computed in 64 bits with overflow checks.
struct CheckpointLayout {
  Config config;
  /// Floats of each tensor in file order: token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1,
  /// w2, w3, rms_final, the legacy RoPE tables, and wcls when the classifier is not shared.
  std::vector<std::uint64_t> tensor_floats;
  std::uint64_t file_bytes = 0;        ///< 28 + 4 * (sum of tensor_floats)
  std::uint64_t run_state_floats = 0;  ///< 2 * n_layers * seq_len * kv_dim + n_heads * seq_len
};

/// Validates the 28-byte header `header` of a checkpoint file of `file_size` bytes without
/// reading (or allocating) the tensors: header values as parse_checkpoint says, the implied
/// file size equal to `file_size`, the run state at most kMaxRunStateFloats.  Throws ModelError
/// (one line naming `name` and the field) otherwise.
CheckpointLayout checkpoint_layout(std::span<const std::uint8_t> header, std::uint64_t file_size,
                                   std::string_view name);

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
/// by n_heads, n_heads not divisible by n_kv_heads, odd head size, any shape above 2^16, a
/// vocab_size below 3, which has no ids 0 <unk>, 1 BOS and 2 EOS of llama2.c's vocabulary); a file
/// size different from the one the header implies (checkpoint_layout: 64-bit, overflow-checked);
/// a run state above kMaxRunStateFloats; a non-finite float (named by tensor and index).
/// Nothing is allocated before the header and the file size have been checked.
Checkpoint parse_checkpoint(std::span<const std::uint8_t> bytes, std::string_view name);

/// Reads and parses a checkpoint file (read_checkpoint_bytes, then parse_checkpoint; ModelError
/// also when it cannot be read).
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

/// The most bytes read_file_bytes reads by default (256 MiB): 250 times stories260K's checkpoint,
/// and below what a wrong file (a 6 GB sparse file, /dev/zero behind a link) would make it
/// allocate; a larger (header-consistent) checkpoint is refused by this size.
inline constexpr std::uint64_t kMaxModelFileBytes = std::uint64_t{256} << 20;

/// Reads a whole regular file (a symbolic link is followed) of at most `max_bytes` bytes.
/// Throws a one-line ModelError naming `path` (and the system's reason) when it is missing, a
/// directory or anything else that is not a regular file (a device, a FIFO, a socket), larger
/// than `max_bytes` (checked before anything is read), or cannot be opened or read.
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path,
                                          std::uint64_t max_bytes = kMaxModelFileBytes);

/// Reads a checkpoint file's bytes after checking its header against its size
/// (checkpoint_layout): a file of the wrong size is refused by that one line before its tensors
/// are read or allocated.  ModelError as read_file_bytes and checkpoint_layout.
std::vector<std::uint8_t> read_checkpoint_bytes(const std::filesystem::path& path);

/// The smallest seq_len the vector build takes: convert_vx's GPTQ calibration runs the float
/// model over kCalibrationLength (vx.h) positions.
inline constexpr int kVectorBuildMinSeqLen = 256;

/// Why the vector build of the story (golden/vx.h convert_vx, guests/stories_vx) cannot take a
/// checkpoint of shape `c`, in one clause ("dim 32, not stories260K's 64"), or empty when it can:
/// it takes stories260K's shapes (dim 64, hidden_dim 172, n_layers 5, n_heads 8, n_kv_heads 4,
/// vocab_size 512) with a seq_len of at least kVectorBuildMinSeqLen.
std::string vector_build_refusal(const Config& c);

/// Writes `bytes` to `path` (created or truncated), flushing and closing it before returning.
/// Throws a one-line ModelError "<path>: cannot write (<reason>)" when the file cannot be
/// created (missing parent folder, a directory at `path`, no permission) or a write fails (a
/// full disk, /dev/full); a partly written regular file is then removed so that no truncated
/// output is left looking complete.
void write_file_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

/// write_file_bytes for text (JSON, manifests).
void write_file_text(const std::filesystem::path& path, std::string_view text);

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
