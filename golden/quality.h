// Model loading (real or synthetic), the tokenizer pieces blob, the genuineness check and the
// quality measurement of the vx build against float32 (docs/quality.md).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llama2c.h"

namespace lockstep::host {

/// The story the genuine checkpoint tells greedily from BOS begins with this text.
inline constexpr std::string_view kExpectedStoryPrefix =
    "Once upon a time, there was a little girl named Lily";

/// A model and its tokenizer, with a line saying which one it is.
struct LoadedModel {
  Checkpoint ck;
  Tokenizer tok;
  bool real = false;  ///< loaded from stories260K.bin
  /// "stories260K.bin (sha256 ...), tok512.bin (sha256 ...)" or "synthetic model (SplitMix64 seed 0x...)"
  std::string description;
  std::string checkpoint_sha256;  ///< lower-case hex SHA-256 of stories260K.bin; empty for the synthetic model
  std::string tokenizer_sha256;   ///< of tok512.bin; empty for the synthetic model
};

/// Loads `dir`/stories260K.bin and tok512.bin; falls back to the synthetic model and tokenizer
/// (logging one line to `log`) when both files are absent or `force_synthetic`.  A tokenizer
/// without a checkpoint is half a model, an error (ModelError), as is a present but malformed
/// file: never a silent fallback.
LoadedModel load_model(const std::filesystem::path& dir, bool force_synthetic, std::ostream& log);

/// A models folder and who chose it: `named_by` is "--models" or "LOCKSTEP_MODELS" when the user
/// named it, empty for the default `<source>/../shared/models`.
struct ModelsFolder {
  std::filesystem::path dir;
  std::string named_by;
};

/// The models folder of the host tools: `flag` (a given --models value) when set, else
/// $LOCKSTEP_MODELS when set and non-empty, else `<source_root>/../shared/models` (the default,
/// the only one that may silently lack the model).  The same order as the `lockstep` CLI.
ModelsFolder find_models_folder(const std::optional<std::string>& flag, const std::filesystem::path& source_root);

/// Loads the model from `folder`.  A folder the user named (named_by non-empty) must be a
/// directory holding stories260K.bin and tok512.bin: otherwise a one-line ModelError names the
/// folder and what is missing, never the synthetic model.  The named value "synthetic" is the
/// synthetic model, as for `lockstep` (cli/models.h).  With `force_synthetic` the folder is
/// not looked at; from the default folder this is load_model (synthetic when the checkpoint is
/// absent, logged).
LoadedModel load_model(const ModelsFolder& folder, bool force_synthetic, std::ostream& log);

/// The synthetic tokenizer: piece 0 "<unk>", 1 "\n<s>\n", 2 "\n</s>\n", 3..258 "<0xHH>",
/// i >= 259 " w<i>" (decimal); scores 0; max_token_length 16.
Tokenizer synthetic_tokenizer();

/// Token pieces for the guest (vector.md §7.1): 513 little-endian u32 offsets, then the decoded
/// piece bytes (byte-fallback pieces as their single byte); piece i is [off[i], off[i+1]).
std::vector<std::uint8_t> pieces_blob(const Tokenizer& tok);

/// Whether `m` is the genuine stories260K: SHA-256 of the file and the float greedy story.
/// The message says what was found (a transposed public copy fails both).
std::pair<bool, std::string> check_genuine(const LoadedModel& m);

/// Figures of docs/quality.md.
struct QualityReport {
  std::string model;
  std::vector<int> float_tokens;    ///< float32 greedy, 256 tokens from BOS (not stopped)
  std::string float_text;           ///< first 63 tokens decoded
  std::vector<int> vx_tokens;       ///< vx hardware build (64 positions) greedy, 63 tokens (not stopped)
  std::string vx_text;
  int long_positions = 0;           ///< host long-cache variant: positions measured
  int long_agree = 0;               ///< of those, vx top-1 == float top-1 (teacher-forced)
  int window_positions = 0;         ///< hardware build: 4 windows x 64 positions
  int window_agree = 0;
  int first_window_agree = 0;       ///< positions 0..63 of the float story (hardware build)
  int greedy_common_prefix = 0;     ///< tokens of the two greedy stories that agree from the start
};

/// Measures the figures of docs/quality.md; `positions` is the length of the long-cache
/// measurement.  Throws ModelError when `positions` is outside 1..seq_len or the checkpoint's
/// seq_len is under the 256 positions of the hardware windows (no figure is then defined).
QualityReport measure_quality(const Checkpoint& ck, const Tokenizer& tok, int positions);
/// The figures as the text lines `lockstep-model quality` prints.
std::string format_quality(const QualityReport& q);
/// The figures as the JSON object of `lockstep-model quality --json`.
nlohmann::json quality_json(const QualityReport& q);

}  // namespace lockstep::host
