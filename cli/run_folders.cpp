// settle_run_folders (commands.h): what a failed command leaves in its run folder.
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "lockstep/engine/check.h"

namespace lockstep::cli {

namespace {
// The commands whose --report DIR is a run folder they own (claim_run_folder).
bool owns_report_folder(const std::string& command) { return command == "run" || command == "story" || command == "fuzz"; }
}  // namespace

void settle_run_folders(const CommandFailure& failure) {
  if (failure.parse_error && failure.argv) {
    // The command line was refused, so nothing claimed the folder: read the subcommand (the first
    // word that is no option or global option's value) and its --report from argv.
    std::string command, report;
    for (int i = 1; i < failure.argc; ++i) {
      const std::string a = failure.argv[i];
      if (a == "--log-level" || a == "--models") {
        ++i;  // a global option's value
      } else if (a == "--report" && i + 1 < failure.argc) {
        report = failure.argv[++i];
      } else if (a.rfind("--report=", 0) == 0) {
        report = a.substr(9);
      } else if (command.empty() && !a.empty() && a[0] != '-') {
        command = a;
      }
    }
    std::error_code ec;
    // Only a folder that holds an earlier run's summary: a typo never creates one.
    if (owns_report_folder(command) && !report.empty() &&
        std::filesystem::is_regular_file(std::filesystem::path(report) / "summary.json", ec)) {
      try {
        engine::claim_run_folder(report, command);
      } catch (const std::exception&) {
        return;  // in use by another run, or not writable: left as it is
      }
    }
  }
  for (const std::string& note : engine::fail_claimed_run_folders(failure.status, failure.message))
    std::cerr << "lockstep: note: " << note << "\n" << std::flush;
}

}  // namespace lockstep::cli
