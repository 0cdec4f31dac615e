// `lockstep compile [--out FILE]`: compiles the scalar chip (chip/rv32) and writes its chip file
// (docs/spec/chip-format.md). The weights are computed from docs/spec alone; see
// docs/chip-design.md for what the chip executes so far.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstring>
#include <cerrno>
#include <unistd.h>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "lockstep/chip/chip.hpp"
#include "lockstep/engine/backend_factory.h"

#include "cli/app.h"

namespace lockstep::cli {

void add_compile_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("compile", "Compile the scalar chip and write its chip file");
  auto out_path = std::make_shared<std::string>("lockstep.chip");
  cmd->add_option("--out", *out_path, "Chip file to write (safetensors, docs/spec/chip-format.md)")
      ->capture_default_str();
  cmd->callback([&ctx, out_path] {
    const std::string& out = *out_path;
    const auto t0 = std::chrono::steady_clock::now();
    // The built chip's compiler, registered by main.cpp (cli/builtin_chip.h).
    const engine::BackendFactory& factory = engine::backend_factory();
    if (!factory.has_chip(engine::kBuiltChipName)) {
      throw InputError("this build has no chip compiler (configured with -DLOCKSTEP_COMPILE_CHIP=OFF)");
    }
    const chip::Chip c = factory.compile_chip(engine::kBuiltChipName);
    // A new or plain file is written beside and renamed over: a failed or interrupted write never
    // leaves a truncated chip file, nor replaces an earlier one with it (an interruption removes
    // the .tmp: app.h). Anything else (a device such as /dev/null, a FIFO, a symbolic link) is
    // written in place, never replaced.
    std::error_code sec;
    const auto st = std::filesystem::symlink_status(out, sec);
    const bool in_place = std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
    // A file the user may not write is not replaced behind its mode (the rename would), as `cp`
    // refuses it; the temporary name is this process's own, so no file of the user's is taken
    // for it (found by an outside tester: a FILE.tmp of theirs was deleted).
    if (std::filesystem::is_regular_file(st) && ::access(out.c_str(), W_OK) != 0)
      throw InputError("cannot write chip file '" + out + "': " + std::strerror(errno) + " (it is not writable)");
    const std::string tmp = in_place ? out : out + ".tmp." + std::to_string(::getpid());
    if (!in_place) remove_on_interrupt(tmp);
    try {
      chip::save_chip(c, tmp);
      if (!in_place && std::filesystem::is_regular_file(st))  // the replaced file's mode is kept
        std::filesystem::permissions(tmp, st.permissions(), std::filesystem::perm_options::replace);
      if (!in_place) std::filesystem::rename(tmp, out);
    } catch (const std::exception& e) {
      std::error_code ec;
      if (!in_place) std::filesystem::remove(tmp, ec);
      remove_on_interrupt("");
      throw InputError("cannot write chip file '" + out + "': " + e.what());
    }
    remove_on_interrupt("");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto bytes = std::filesystem::file_size(out);
    ctx.summary.set("chip", {{"file", out},
                             {"bytes", bytes},
                             {"d_model", c.config.d_model},
                             {"layers", c.layers.size()},
                             {"vocab_size", c.config.vocab_size},
                             {"seconds", secs}});
    ctx.out() << "wrote " << out << ": " << bytes << " bytes, d_model " << c.config.d_model << ", "
              << c.layers.size() << " layers, vocabulary " << c.config.vocab_size << " (" << secs
              << " s)\n";
  });
}

}  // namespace lockstep::cli
