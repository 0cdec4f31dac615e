#include "cli/models.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <system_error>

#include "cli/errors.h"

namespace lockstep::cli {

namespace fs = std::filesystem;

const char* to_string(ModelSource source) {
  switch (source) {
    case ModelSource::flag: return "flag";
    case ModelSource::environment: return "env";
    case ModelSource::source_tree: return "source-tree";
    case ModelSource::executable: return "executable";
    case ModelSource::synthetic: return "synthetic";
  }
  return "unknown";
}

fs::path ModelChoice::checkpoint() const {
  if (synthetic()) throw std::logic_error("the synthetic model has no checkpoint file");
  return dir / kCheckpointFile;
}

fs::path ModelChoice::tokenizer() const {
  if (synthetic()) throw std::logic_error("the synthetic model has no tokenizer file");
  return dir / kTokenizerFile;
}

std::vector<std::string> missing_model_files(const fs::path& dir) {
  std::vector<std::string> missing;
  for (const char* name : {kCheckpointFile, kTokenizerFile}) {
    std::error_code ec;
    if (!fs::is_regular_file(dir / name, ec)) missing.emplace_back(name);
  }
  return missing;
}

bool usable_model_dir(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_directory(dir, ec) && missing_model_files(dir).empty();
}

namespace {

fs::path absolute_normal(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  return abs.lexically_normal();
}

ModelChoice make_choice(ModelSource source, const fs::path& dir,
                        std::vector<fs::path> rejected) {
  ModelChoice choice;
  choice.source = source;
  choice.dir = absolute_normal(dir);
  choice.rejected = std::move(rejected);
  for (const char* name : {kCheckpointFile, kTokenizerFile}) {
    std::error_code ec;
    const auto bytes = fs::file_size(choice.dir / name, ec);
    choice.files.push_back({name, ec ? 0 : static_cast<std::uint64_t>(bytes)});
  }
  return choice;
}

// Resolves an explicit --models / $LOCKSTEP_MODELS value or throws InputError.
ModelChoice explicit_choice(ModelSource source, const std::string& value, const char* what) {
  if (value == "synthetic") {
    ModelChoice choice;
    choice.source = ModelSource::synthetic;
    return choice;
  }
  const fs::path dir(value);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(std::string(what) + " names '" + value +
                     "', which is not a directory (expected a folder holding " +
                     kCheckpointFile + " and " + kTokenizerFile + ", or 'synthetic')");
  }
  const auto missing = missing_model_files(dir);
  if (!missing.empty()) {
    // A name that is there but no file (a folder, a socket) is said as such, not as missing.
    // A folder whose names cannot be looked up (no search permission) is said as such, not as
    // lacking the files (found by an outside tester: `chmod 000` read as "lacks the files").
    if (::access(dir.c_str(), X_OK) != 0 && errno == EACCES)
      throw InputError(std::string(what) + " names '" + value + "', a folder this user may not open (" +
                       std::strerror(EACCES) + "): it should hold " + kCheckpointFile + " and " + kTokenizerFile);
    std::string list;
    for (const auto& m : missing) {
      const fs::file_status st = fs::status(dir / m, ec);
      const std::string why = fs::is_directory(st) ? " (a folder of that name is there, not a file)"
                              : fs::exists(st)     ? " (a name that is there but is no regular file)"
                                                   : "";
      list += (list.empty() ? "" : " and ") + m + why;
    }
    throw InputError(std::string(what) + " names '" + value + "', which lacks the file" +
                     (missing.size() > 1 ? "s " : " ") + list);
  }
  return make_choice(source, dir, {});
}

}  // namespace

ModelChoice discover_models(const ModelSearch& search) {
  if (search.flag) return explicit_choice(ModelSource::flag, *search.flag, "--models");
  if (search.environment && !search.environment->empty()) {
    return explicit_choice(ModelSource::environment, *search.environment, "LOCKSTEP_MODELS");
  }

  std::vector<fs::path> rejected;
  // A default folder holding one of the two files is half a model, not "no model": it is refused
  // (found by an outside tester: a folder with the checkpoint and no tokenizer fell back to the
  // synthetic model with "no model checkpoint found", where lockstep-model refused it).
  auto refuse_half = [](const fs::path& dir) {
    const auto missing = missing_model_files(dir);
    std::error_code ec;
    if (missing.size() == 1 && fs::is_directory(dir, ec))
      throw InputError(dir.string() + " holds " +
                       (missing[0] == kCheckpointFile ? kTokenizerFile : kCheckpointFile) + " but not " + missing[0] +
                       " (a regular file): complete it, or pass --models DIR (or --models synthetic)");
  };
  if (!search.source_root.empty()) {
    const fs::path dir = absolute_normal(search.source_root / ".." / "shared" / "models");
    if (usable_model_dir(dir)) return make_choice(ModelSource::source_tree, dir, rejected);
    refuse_half(dir);
    rejected.push_back(dir);
  }
  if (!search.executable.empty()) {
    fs::path ancestor = absolute_normal(search.executable).parent_path();
    for (int up = 0; up <= 4 && !ancestor.empty(); ++up) {
      const fs::path dir = ancestor / "shared" / "models";
      if (usable_model_dir(dir)) return make_choice(ModelSource::executable, dir, rejected);
      refuse_half(dir);
      rejected.push_back(dir);
      if (ancestor == ancestor.root_path()) break;
      ancestor = ancestor.parent_path();
    }
  }
  ModelChoice choice;
  choice.source = ModelSource::synthetic;
  choice.rejected = std::move(rejected);
  return choice;
}

std::string synthetic_model_notice(const ModelChoice& choice) {
  std::string looked;
  std::vector<fs::path> seen;
  for (const fs::path& d : choice.rejected) {
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;  // the source tree's is an ancestor's too
    seen.push_back(d);
    looked += (looked.empty() ? "" : ", ") + d.string();
  }
  return std::string("no model folder found") + (looked.empty() ? "" : " (looked in " + looked + ")") +
         "; using the deterministic synthetic model (for the real one pass --models DIR or set LOCKSTEP_MODELS to a "
         "folder holding " +
         kCheckpointFile + " and " + kTokenizerFile + ", e.g. ../shared/models)";
}

}  // namespace lockstep::cli
