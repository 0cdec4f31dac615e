// settle_run_folders (commands.h): what a failed command leaves in its run folder.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "lockstep/engine/check.h"
#include "lockstep/reports/files.h"

namespace lockstep::cli {

namespace {
// The commands whose --report DIR is a run folder they own (claim_run_folder).
bool owns_report_folder(const std::string& command) {
  return command == "run" || command == "story" || command == "fuzz" || command == "replay";
}

// The "command" of DIR/summary.json, or "" when there is none or it cannot be read.
std::string summary_command(const std::filesystem::path& dir) {
  try {
    const auto s = reports::parse_json_text(reports::read_file_text(dir / "summary.json"), "summary.json");
    return s.is_object() ? s.value("command", std::string()) : std::string();
  } catch (const std::exception&) {
    return {};
  }
}
}  // namespace

std::vector<std::string> settle_run_folders(const CommandFailure& failure) {
  if (failure.argv && !engine::claimed_a_run_folder()) {
    // The command failed before it claimed its folder (its command line refused by the parser, or
    // an option, the guest or the chip by the command before it took the folder): read the
    // subcommand (the first word that is no option or global option's value) and its --report
    // from argv, and claim the folder now, so that an earlier run's pass never stays there (found
    // by outside testers: `story --build xx --report DIR` exited 2 and left DIR's pass).
    std::string command, report;
    bool resume = false, shards = false;
    for (int i = 1; i < failure.argc; ++i) {
      const std::string a = failure.argv[i];
      if (a == "--log-level" || a == "--models") {
        ++i;  // a global option's value
      } else if (a == "--report" && i + 1 < failure.argc) {
        report = failure.argv[++i];
      } else if (a.rfind("--report=", 0) == 0) {
        report = a.substr(9);
      } else if (a == "--resume" || a.rfind("--resume=", 0) == 0) {
        resume = true;  // DIR is the resumed run's: a refused resume leaves it as it was
      } else if (a == "--shard" && i + 1 < failure.argc && std::string(failure.argv[i + 1]) == "mpi") {
        shards = true;  // the ranks' folders are DIR/shard-<rank>
      } else if (command.empty() && !a.empty() && a[0] != '-') {
        command = a;
      }
    }
    std::error_code ec;
    const std::filesystem::path dir(report);
    // A folder the command also reads (`fuzz --merge S0 S1 --report S0`, `replay DIR --report DIR`)
    // was refused for that: it is left as it is.
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(dir, ec);
    for (int i = 1; i < failure.argc && !report.empty(); ++i) {
      const std::string a = failure.argv[i];
      if (a == report && std::string(failure.argv[i - 1]) == "--report") continue;
      if (a.empty() || a[0] == '-') continue;
      std::error_code e2;
      if (std::filesystem::weakly_canonical(a, e2) == canonical && !e2) return {};
    }
    // Only a folder that holds an earlier run's summary: a typo never creates one. A replay takes
    // only an earlier replay's folder (it refuses another command's).
    // Nor one this process took already (and then refused, or resumes).
    if (owns_report_folder(command) && !resume && !shards && !report.empty() && !engine::holds_run_folder(dir) &&
        std::filesystem::is_regular_file(dir / "summary.json", ec) &&
        (command != "replay" || summary_command(dir) == "replay")) {
      // The command never said what it runs: its placeholder takes the earlier run's names (of
      // the same command), so that a CI's test history sees that test turn red, not a new test
      // named after the command (found by an outside tester: six refused guests' folders all read
      // "lockstep.run / run", and their passing cases vanished).
      nlohmann::json identity;
      try {
        const auto earlier = reports::parse_json_text(reports::read_file_text(dir / "summary.json"), "summary.json");
        if (earlier.is_object() && earlier.value("command", std::string()) == command &&
            (command == "run" || command == "story" || command == "replay") && earlier.contains("run") &&
            earlier["run"].is_object() &&
            earlier["run"].contains("streams") && earlier["run"]["streams"].is_array() &&
            earlier["run"]["streams"].size() == 1 && earlier["run"]["streams"][0].is_object()) {
          const nlohmann::json& run = earlier["run"];
          const nlohmann::json& stream = run["streams"][0];
          identity = engine::run_identity(earlier.value("guest", stream.value("guest", std::string())),
                                          stream.value("guest", std::string()), run.value("mode", std::string()),
                                          run.value("max_steps", std::uint64_t{0}));
        }
      } catch (const std::exception&) {
        identity = nullptr;  // unnamed, as before
      }
      try {
        claim_run_folder_noted(dir, command);
      } catch (const std::exception&) {
        return {};  // in use by another run, or not writable: left as it is
      }
      if (identity.is_object()) engine::name_claimed_run(dir, identity);
    }
  }
  const engine::FailedRunFolders settled = engine::fail_claimed_run_folders(failure.status, failure.message, failure.steps);
  for (const std::string& note : settled.notes) std::cerr << "lockstep: note: " << note << "\n" << std::flush;
  return settled.earlier_runs;
}

void claim_run_folder_noted(const std::filesystem::path& dir, const std::string& command) {
  if (const std::string note = engine::claim_run_folder(dir, command); !note.empty())
    std::cerr << "lockstep: note: " << note << "\n" << std::flush;
}

}  // namespace lockstep::cli
