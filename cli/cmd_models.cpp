// `lockstep models`: shows which model directory a run would use.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace lockstep::cli {

void add_models_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "models", "Show which model directory (or the synthetic model) would be used");
  cmd->callback([&ctx] {
    const ModelChoice& choice = ctx.models();
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : choice.files) files.push_back({{"name", f.name}, {"bytes", f.bytes}});
    ctx.summary.set("models", {{"source", to_string(choice.source)},
                               {"synthetic", choice.synthetic()},
                               {"dir", choice.synthetic() ? "" : choice.dir.string()},
                               {"files", files}});

    auto& out = ctx.out();
    if (choice.synthetic()) {
      out << "models: synthetic (deterministic model of the stories260K shape)\n";
    } else {
      out << "models: " << choice.dir.string() << " (from " << to_string(choice.source)
          << ")\n";
      for (const auto& f : choice.files) out << "  " << f.name << "  " << f.bytes << " bytes\n";
    }
  });
}

}  // namespace lockstep::cli
