// Command-line conventions of the host tools lockstep-model and lockstep-image-c, the same as
// the `lockstep` CLI's (cli/errors.h): exit 0 on success, 2 on bad input or usage with one line
// on stderr "<tool>: <what>" naming the flag or path; never an abort or a silent fallback.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "llama2c.h"
#include "quality.h"

namespace lockstep::host::tool {

/// Exit status for bad input or usage (the `lockstep` CLI's ExitCode::error).
inline constexpr int kExitBadInput = 2;

/// Refuses an empty text value (`--out ""`, `--json "$UNSET"`): left as it is, it would read as
/// "not given" and silently pick the default.
inline CLI::Validator nonempty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "is empty (give a value, or leave the option out)" : "";
      },
      "", "nonempty");
}

/// The model options both tools take: `--models DIR` and `--synthetic`.
struct ModelOptions {
  std::string dir;
  bool synthetic = false;
  CLI::Option* dir_option = nullptr;

  /// Adds --models (a folder that must hold the model when named) and --synthetic to `app`.
  void add(CLI::App& app) {
    dir_option = app.add_option("--models", dir,
                                "folder holding stories260K.bin and tok512.bin (default: $LOCKSTEP_MODELS, else "
                                "../shared/models; a folder named here or there must hold both)")
                     ->check(nonempty());
    app.add_flag("--synthetic", synthetic, "use the synthetic model (the models folder is not read)");
  }

  /// The model the options choose: find_models_folder (the given --models, else $LOCKSTEP_MODELS,
  /// else `source_root`/../shared/models), then load_model.  Throws ModelError as load_model does.
  LoadedModel load(const std::filesystem::path& source_root, std::ostream& log) const {
    const std::optional<std::string> named = dir_option && dir_option->count() ? std::optional<std::string>(dir) : std::nullopt;
    return load_model(find_models_folder(named, source_root), synthetic, log);
  }
};

/// Parses the command line.  Returns nothing when the tool should go on; otherwise its exit
/// status: 0 after --help (printed by CLI11), 2 after any parse error (an unknown flag, a
/// missing or bad value, a missing subcommand), printed as one stderr line
/// "<tool>: <what> (see <tool> --help)".
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const std::string& tool) {
  auto usage_error = [&](std::string what) {
    for (char& c : what)
      if (c == '\n' || c == '\r') c = ' ';
    std::cerr << tool << ": " << what << " (see " << tool << " --help)\n";
    return kExitBadInput;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    // CLI11 answers --help before it rejects unknown words (`tool bogus --help`).
    if (!app.remaining().empty()) return usage_error("unexpected argument " + app.remaining().front());
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    if (!app.remaining().empty()) return usage_error("unexpected argument " + app.remaining().front());
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    return usage_error(what.empty() ? e.get_name() : what);
  }
  return std::nullopt;
}

/// Flushes standard output; throws ModelError when what the tool printed could not be written
/// (a full disk, `> /dev/full`), so that the tool does not exit 0 having lost it.
inline void finish_stdout() {
  std::cout.flush();
  if (!std::cout) throw ModelError("cannot write standard output");
}

}  // namespace lockstep::host::tool
