// Model discovery: which directory holds the stories260K checkpoint.
//
// Order (first match wins):
//   1. --models DIR                          (explicit: must be usable, else InputError)
//   2. $LOCKSTEP_MODELS                      (explicit: must be usable, else InputError)
//   3. <source root>/../shared/models        (source root known at configure time)
//   4. <ancestor of the executable>/shared/models, for the executable's directory
//      and up to four parents (covers build/bin/lockstep beside a moved tree)
//   5. the deterministic synthetic model
// The explicit value "synthetic" (for --models or $LOCKSTEP_MODELS) selects the
// synthetic model on purpose.  An empty $LOCKSTEP_MODELS counts as unset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::cli {

/// The files a model directory must hold to be usable.
inline constexpr const char* kCheckpointFile = "stories260K.bin";
inline constexpr const char* kTokenizerFile = "tok512.bin";

/// Where a model choice came from.
enum class ModelSource {
  flag,          ///< --models DIR
  environment,   ///< $LOCKSTEP_MODELS
  source_tree,   ///< ../shared/models beside the repository root
  executable,    ///< shared/models above the executable
  synthetic,     ///< no checkpoint: the deterministic synthetic model
};

/// Short stable name of a source ("flag", "env", "source-tree", "executable",
/// "synthetic"), used in JSON output.
const char* to_string(ModelSource source);

/// One file of a model directory.
struct ModelFile {
  std::string name;
  std::uint64_t bytes = 0;  ///< file size in bytes
};

/// The outcome of discovery.
struct ModelChoice {
  ModelSource source = ModelSource::synthetic;
  /// Absolute directory; empty for the synthetic model.
  std::filesystem::path dir;
  /// The checkpoint and tokenizer with their sizes; empty for synthetic.
  std::vector<ModelFile> files;
  /// Candidate directories looked at and rejected, for messages.
  std::vector<std::filesystem::path> rejected;

  bool synthetic() const { return source == ModelSource::synthetic; }
  /// Full path of the checkpoint (stories260K.bin); throws std::logic_error
  /// for the synthetic model.
  std::filesystem::path checkpoint() const;
  /// Full path of the tokenizer (tok512.bin); throws std::logic_error for the
  /// synthetic model.
  std::filesystem::path tokenizer() const;
};

/// Inputs of discovery, separated from the process so tests can drive it.
struct ModelSearch {
  std::optional<std::string> flag;         ///< value of --models, if given
  std::optional<std::string> environment;  ///< value of $LOCKSTEP_MODELS, if set
  std::filesystem::path source_root;       ///< repository root (may be empty)
  std::filesystem::path executable;        ///< path of the executable (may be empty)
};

/// Returns the missing required file names of `dir` (empty when usable).
std::vector<std::string> missing_model_files(const std::filesystem::path& dir);

/// True when `dir` is a directory holding stories260K.bin and tok512.bin.
bool usable_model_dir(const std::filesystem::path& dir);

/// Applies the order documented above.  Throws InputError (context.h) when the
/// flag or the environment names a directory that is not usable, naming the
/// directory and the missing file, and when a default folder holds one of the two
/// files but not the other (half a model is no reason to fall back).
ModelChoice discover_models(const ModelSearch& search);

/// The one-line stderr announcement for the synthetic fallback: the folders `choice` looked in
/// (its `rejected`) and how to use the real checkpoint.
std::string synthetic_model_notice(const ModelChoice& choice);

}  // namespace lockstep::cli
