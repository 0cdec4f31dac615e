// Runs the built `lockstep` executable and checks its observable contract:
// help, version, exit codes, the one-line error, the --json summary.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace fs = std::filesystem;

namespace {

using lockstep::cli_test::Result;
using lockstep::cli_test::slurp;

// Runs LOCKSTEP_EXE with `args`; `env` entries are set (empty value: unset).
Result run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return lockstep::cli_test::run_lockstep(args, env);
}

long count_lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

}  // namespace

TEST(LockstepCommand, HelpListsSubcommands) {
  const auto r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("models"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--log-level"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--models"), std::string::npos) << r.out;
}

TEST(LockstepCommand, VersionNamesProjectAndTraceSpec) {
  const auto r = run({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "lockstep 0.1.0 (trace spec trace-v3)\n");
}

TEST(LockstepCommand, UnknownFlagIsOneLineUsageError) {
  const auto r = run({"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("lockstep: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
}

TEST(LockstepCommand, HelpOfUnknownSubcommandIsUsageError) {
  // ci/demo relies on this to detect whether `lockstep story` exists.
  const auto r = run({"no-such-command", "--help"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no-such-command"), std::string::npos) << r.err;
}

TEST(LockstepCommand, SubcommandHelp) {
  const auto r = run({"models", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Usage: lockstep models"), std::string::npos) << r.out;
}

TEST(LockstepCommand, MissingSubcommandIsUsageError) {
  const auto r = run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("subcommand"), std::string::npos) << r.err;
}

TEST(LockstepCommand, BadLogLevelIsUsageError) {
  const auto r = run({"--log-level", "loud", "models"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

TEST(LockstepCommand, ModelsJsonSynthetic) {
  const auto r = run({"models", "--json"}, {{"LOCKSTEP_MODELS", "synthetic"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "exact");
  EXPECT_EQ(j["steps"], 0);
  EXPECT_EQ(j["mismatches"], 0);
  EXPECT_EQ(j["command"], "models");
  EXPECT_EQ(j["models"]["source"], "synthetic");
  EXPECT_EQ(j["models"]["synthetic"], true);
  EXPECT_EQ(j["models"]["files"].size(), 0u);
}

TEST(LockstepCommand, ModelsJsonWithDirectory) {
  // The real checkpoint and tokenizer, copied into a folder of their own (skipped without them).
  const fs::path shared = fs::path(LOCKSTEP_SOURCE_DIR).parent_path() / "shared" / "models";
  if (!fs::exists(shared / "stories260K.bin") || !fs::exists(shared / "tok512.bin"))
    GTEST_SKIP() << "no stories260K.bin / tok512.bin in " << shared;
  const fs::path dir = fs::temp_directory_path() / ("lockstep-models-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(shared / "stories260K.bin", dir / "stories260K.bin", fs::copy_options::overwrite_existing);
  fs::copy_file(shared / "tok512.bin", dir / "tok512.bin", fs::copy_options::overwrite_existing);
  // Global option after the subcommand name, as well as before it.
  for (const auto& args : {std::vector<std::string>{"models", "--json", "--models", dir.string()},
                           std::vector<std::string>{"--json", "--models", dir.string(), "models"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["status"], "exact");
    EXPECT_EQ(j["models"]["source"], "flag");
    EXPECT_EQ(j["models"]["dir"], dir.string());
    EXPECT_EQ(j["models"]["files"][0]["name"], "stories260K.bin");
    EXPECT_EQ(j["models"]["files"][0]["bytes"], fs::file_size(shared / "stories260K.bin"));
    EXPECT_EQ(j["models"]["checkpoint_sha256"], "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
    EXPECT_EQ(j["models"]["genuine_stories260K"], true);
  }
  // A broken tokenizer beside the genuine checkpoint: `models` and `story` refuse it alike.
  std::ofstream(dir / "tok512.bin", std::ios::trunc) << std::string(56, 't');
  for (const std::vector<std::string>& args : {std::vector<std::string>{"models", "--models", dir.string()},
                                              {"story", "--models", dir.string(), "--reference-only", "--steps", "10"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.out;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("tok512.bin"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

TEST(LockstepCommand, ModelsRejectsFilesTheConverterRejects) {
  // A 0-byte checkpoint and random bytes are bad input (issue 27), named in one line.
  const fs::path dir = fs::temp_directory_path() / ("lockstep-badmodels-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tok512.bin") << std::string(56, 't');
  for (const std::string& content : {std::string(), std::string(1234, 'w')}) {
    std::ofstream(dir / "stories260K.bin", std::ios::trunc) << content;
    const auto r = run({"models", "--json", "--models", dir.string()});
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("stories260K.bin"), std::string::npos) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["status"], "error");
    // story reads the same folder with the same checks.
    const auto st = run({"story", "--models", dir.string(), "--reference-only", "--steps", "10"});
    EXPECT_EQ(st.exit_code, 2) << st.out;
    EXPECT_NE(st.err.find("stories260K.bin"), std::string::npos) << st.err;
  }
  // --models where no model is read is refused, not ignored.
  const auto r = run({"run", "x.elf", "--models", "synthetic"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("`run` does not use a model"), std::string::npos) << r.err;
  // story --models /nonexistent is the one-line error of an unusable folder.
  const auto s = run({"story", "--models", "/nonexistent/models", "--reference-only"});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("/nonexistent/models"), std::string::npos) << s.err;
  fs::remove_all(dir);
}

TEST(LockstepCommand, StoryHonoursModels) {
  const fs::path guests = fs::path(LOCKSTEP_BINARY_DIR) / "guests";
  if (!fs::exists(guests / "stories_vx_synthetic.elf")) GTEST_SKIP() << "story guests not built";
  const auto r = run({"story", "--models", "synthetic", "--reference-only", "--steps", "2000", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["guest"].get<std::string>().find("stories_vx_synthetic.elf"), std::string::npos) << j.dump();
  EXPECT_EQ(j["guest_model"], "synthetic model (SplitMix64 seed 0x4C4F434B53544550)");
  // The saved report names it too (found by an outside tester: only a stderr line did).
  const fs::path report = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "story-guest-model";
  fs::remove_all(report);
  const auto c = run({"story", "--models", "synthetic", "--steps", "2000", "--report", report.string()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::ifstream in(report / "summary.json");
  const auto saved = nlohmann::json::parse(in);
  EXPECT_EQ(saved["guest_model"], "synthetic model (SplitMix64 seed 0x4C4F434B53544550)") << saved.dump();
  if (fs::exists(guests / "stories_vx.elf")) {
    const auto real = run({"story", "--reference-only", "--steps", "2000", "--json"});
    ASSERT_EQ(real.exit_code, 0) << real.err;
    const auto k = nlohmann::json::parse(real.out);
    EXPECT_NE(k["digest"], j["digest"]) << "--models synthetic ran the real model's guest";
  }
}

// The manifest beside a story guest names its checkpoint only when it describes that guest: its
// sections' SHA-256 are the ELF's (found by an outside tester: the synthetic build's manifest beside
// the real guest labelled it "built from synthetic model"); a $LOCKSTEP_GUEST_DIR that is not a
// folder is refused, as $LOCKSTEP_MODELS's is.
TEST(LockstepCommand, StoryTakesOnlyAManifestThatDescribesItsGuest) {
  const fs::path guests = fs::path(LOCKSTEP_BINARY_DIR) / "guests";
  if (!fs::exists(guests / "stories_vx_synthetic.elf") || !fs::exists(guests / "stories_vx.elf"))
    GTEST_SKIP() << "story guests not built";
  const fs::path dir = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "story-stale-manifest";
  fs::remove_all(dir);
  fs::create_directories(dir / "stories_vx");
  fs::copy_file(guests / "stories_vx_synthetic.elf", dir / "stories_vx.elf");
  fs::copy_file(guests / "stories_vx" / "manifest.json", dir / "stories_vx" / "manifest.json");
  const auto stale = run({"story", "--reference-only", "--steps", "10", "--json"}, {{"LOCKSTEP_GUEST_DIR", dir.string()}});
  ASSERT_EQ(stale.exit_code, 0) << stale.err;
  EXPECT_EQ(nlohmann::json::parse(stale.out)["guest_model"], "") << stale.out;
  EXPECT_NE(stale.err.find("records another .lockstep.wmem than the guest's"), std::string::npos) << stale.err;
  EXPECT_EQ(stale.err.find(": built from"), std::string::npos) << stale.err;
  // the manifest of the guest itself is taken
  fs::copy_file(guests / "stories_vx.elf", dir / "stories_vx.elf", fs::copy_options::overwrite_existing);
  const auto own = run({"story", "--reference-only", "--steps", "10", "--json"}, {{"LOCKSTEP_GUEST_DIR", dir.string()}});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_NE(nlohmann::json::parse(own.out)["guest_model"].get<std::string>().find("stories260K.bin (sha256 "),
            std::string::npos)
      << own.out;
  const auto none = run({"story", "--reference-only", "--steps", "10"}, {{"LOCKSTEP_GUEST_DIR", (dir / "none").string()}});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("LOCKSTEP_GUEST_DIR " + (dir / "none").string() + ": no such folder"), std::string::npos)
      << none.err;
  fs::remove_all(dir);
}

TEST(LockstepCommand, UnusableModelsDirIsInputErrorWithJsonSummary) {
  const auto r = run({"--json", "models"}, {{"LOCKSTEP_MODELS", "/nonexistent/models"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("LOCKSTEP_MODELS"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["command"], "models");
  EXPECT_NE(j["error"].get<std::string>().find("/nonexistent/models"), std::string::npos);
}

TEST(LockstepCommand, ModelsHumanOutput) {
  const auto r = run({"models"}, {{"LOCKSTEP_MODELS", "synthetic"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("models: synthetic", 0), 0u) << r.out;
}

// A command without partial results to keep (compile, bench) stopped by SIGINT ends at once with
// exit status 3 and one "lockstep: interrupted:" line (with --json, a summary of status
// "interrupted"), and compile leaves the chip file it would have replaced as it was, with no .tmp
// beside it (found by an outside tester: exit 130, nothing said).
TEST(LockstepCommand, AStoppedCommandWithoutResultsExitsThreeWithOneLine) {
  const fs::path dir = fs::temp_directory_path() / ("lockstep-stopped-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "old.chip";
  std::ofstream(file) << "an earlier chip";
  struct Case {
    std::vector<std::string> args;
    std::string command;
  };
  for (const Case& c : {Case{{"--json", "compile", "--out", file.string()}, "compile"},
                        Case{{"--json", "bench", "--quick"}, "bench"}}) {
    const fs::path out = dir / (c.command + ".out"), err = dir / (c.command + ".err");
    const pid_t pid = lockstep::cli_test::spawn_lockstep(c.args, out, err);
    ::usleep(300 * 1000);
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << c.command << ": " << status;
    EXPECT_EQ(WEXITSTATUS(status), 3) << c.command << ": " << slurp(err);
    const std::string e = slurp(err);
    EXPECT_NE(e.find("lockstep: interrupted: lockstep " + c.command + " was stopped by SIGINT, SIGTERM or SIGHUP before it finished"),
              std::string::npos)
        << e;
    const nlohmann::json j = nlohmann::json::parse(slurp(out));
    EXPECT_EQ(j["status"], "interrupted") << j.dump();
    EXPECT_EQ(j["command"], c.command) << j.dump();
  }
  EXPECT_EQ(slurp(file), "an earlier chip");
  for (const auto& e : fs::directory_iterator(dir))  // no temporary file left (old.chip.tmp.PID)
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  fs::remove_all(dir);
}

// $LOCKSTEP_CPU_THREADS is checked by every command that runs the CPU executor, with one line and
// exit 2 (found by an outside tester: bench and mutate took 7, as they made their executors
// themselves, and ran on with their default).
TEST(LockstepCommand, EveryChipCommandChecksLockstepCpuThreads) {
  const std::string hello = std::string(LOCKSTEP_BINARY_DIR) + "/guests/hello.elf";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", hello}, {"fuzz", "--programs", "1"}, {"bench", "--quick"},
        {"mutate", "--mutants", "1"}}) {
    const auto r = lockstep::cli_test::run_lockstep(args, {{"LOCKSTEP_CPU_THREADS", "7"}});
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err, "lockstep: error: LOCKSTEP_CPU_THREADS is '7': 1 (one thread a stream) or 2 (pipelined), or unset\n")
        << args[0];
  }
}

// An option given twice is named in words, not in CLI11's "At Most 1 required but received 2"
// (found by an outside tester).
TEST(LockstepCommand, AnOptionGivenTwiceSaysSo) {
  const auto r = run({"run", "x.elf", "--steps", "3", "--steps", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "lockstep: error: --steps: given 2 times; give it once (see lockstep --help)\n");
}

TEST(LockstepCommand, CompileWritesALoadableChipFile) {
  const fs::path dir = fs::temp_directory_path() / ("lockstep-compile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "rv32.chip";
  // a file of the user's named like a temporary one is not taken for one (found by an outside
  // tester: compile deleted rv32.chip.tmp)
  std::ofstream(dir / "rv32.chip.tmp") << "the user's own file";
  const auto r = run({"--json", "compile", "--out", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir / "rv32.chip.tmp"), "the user's own file");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("status"), "exact");
  EXPECT_EQ(j.at("chip").at("file"), file.string());
  EXPECT_EQ(j.at("chip").at("vocab_size"), 20736);  // trace.md §2: V = 256 * 81
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(j.at("chip").at("bytes").get<std::uintmax_t>(), fs::file_size(file));
  // The header is safetensors: an 8-byte little-endian length, then a JSON object.
  std::ifstream in(file, std::ios::binary);
  unsigned char len[8] = {};
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | len[i];
  ASSERT_GT(n, 2u);
  ASSERT_LT(n, fs::file_size(file));
  EXPECT_EQ(in.get(), '{');
  fs::remove_all(dir);

  const auto bad = run({"compile", "--out", "/nonexistent-dir/x.chip"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}
