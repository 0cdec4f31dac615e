// `lockstep report DIR`: renders junit.xml and report.html again from DIR/summary.json.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <ostream>

#include "cli/commands.h"
#include "lockstep/engine/check.h"
#include "lockstep/reports/report.h"

namespace lockstep::cli {

void add_report_command(CLI::App& app, Context& ctx) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("report", "Render the HTML and JUnit reports again from DIR/summary.json");
  cmd->add_option("dir", *dir, "Report folder written by run --report, story --report or replay --report")
      ->required();
  cmd->callback([&ctx, dir] {
    // A folder a running run holds is that run's to write: its summary says "did not finish"
    // until it ends (found by an outside tester: report rewrote the pages of a running run)
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(*dir) / engine::kRunFolderLock, ec)) {
      try {
        engine::lock_run_folder(*dir);
      } catch (const engine::CheckError& e) {
        throw InputError(std::string("report: ") + e.what() + "; render it once that run has ended");
      }
    }
    reports::ReportFiles f;
    try {
      f = reports::render_report(*dir);
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    ctx.summary.set("report", {{"html", f.html.string()}, {"junit", f.junit.string()},
                               {"plots", f.plot_note.empty()}, {"plot_note", f.plot_note}});
    ctx.out() << "wrote " << f.html.string() << " and " << f.junit.string() << "\n";
    if (!f.plot_note.empty()) ctx.out() << f.plot_note << "\n";
    // The answer is the run's verdict (status, steps, mismatches, exit code), not "the pages
    // were rendered": `lockstep report DIR` in a CI job fails as the run did.
    const nlohmann::json& s = f.summary_json;
    const std::string status = s.value("status", std::string("error"));
    ctx.summary.add_steps(s.value("steps", std::uint64_t{0}));
    ctx.summary.add_mismatches(s.value("mismatches", std::uint64_t{0}));
    if (s.contains("digest")) ctx.summary.set("digest", s["digest"]);
    if (s.contains("replay")) ctx.summary.set("replay", s["replay"]);
    ctx.out() << "the run's status: " << status << "\n";
    // with the one line every interrupted command gives (found by an outside tester: exit 3 and
    // no "lockstep: interrupted:" line)
    if (status == "interrupted") throw Interrupted("the run in " + *dir + " was interrupted after " +
                                                   std::to_string(s.value("steps", std::uint64_t{0})) + " steps");
    if (status == "error") {
      throw InputError("the run in " + *dir + " ended in an error: " + s.value("error", std::string("?")));
    }
  });
}

}  // namespace lockstep::cli
