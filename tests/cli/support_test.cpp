// Unit tests of lockstep_cli_support: model discovery order, the summary and
// its exit codes, logging levels.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/app.h"
#include "cli/context.h"
#include "cli/models.h"

namespace fs = std::filesystem;
using namespace lockstep::cli;

namespace {

// A fresh temporary directory per test, removed afterwards.
class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            (std::string("lockstep-cli-") + info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Creates dir/stories260K.bin (`ckpt` bytes) and dir/tok512.bin (`tok` bytes).
  fs::path make_models(const fs::path& dir, std::size_t ckpt = 10, std::size_t tok = 3) {
    fs::create_directories(dir);
    std::ofstream(dir / kCheckpointFile, std::ios::binary) << std::string(ckpt, 'c');
    std::ofstream(dir / kTokenizerFile, std::ios::binary) << std::string(tok, 't');
    return dir;
  }

  fs::path root_;
};

}  // namespace

TEST_F(TempTree, FlagWinsOverEverything) {
  const auto flag = make_models(root_ / "flag", 11, 4);
  const auto env = make_models(root_ / "env");
  make_models(root_ / "shared" / "models");
  ModelSearch s{flag.string(), env.string(), root_ / "repo", root_ / "repo/build/bin/lockstep"};
  const auto choice = discover_models(s);
  EXPECT_EQ(choice.source, ModelSource::flag);
  EXPECT_EQ(choice.dir, flag);
  ASSERT_EQ(choice.files.size(), 2u);
  EXPECT_EQ(choice.files[0].name, "stories260K.bin");
  EXPECT_EQ(choice.files[0].bytes, 11u);
  EXPECT_EQ(choice.files[1].name, "tok512.bin");
  EXPECT_EQ(choice.files[1].bytes, 4u);
  EXPECT_EQ(choice.checkpoint(), flag / "stories260K.bin");
  EXPECT_EQ(choice.tokenizer(), flag / "tok512.bin");
}

TEST_F(TempTree, EnvironmentWinsOverSourceTree) {
  const auto env = make_models(root_ / "env");
  make_models(root_ / "shared" / "models");
  ModelSearch s{std::nullopt, env.string(), root_ / "repo", {}};
  const auto choice = discover_models(s);
  EXPECT_EQ(choice.source, ModelSource::environment);
  EXPECT_EQ(choice.dir, env);
}

TEST_F(TempTree, EmptyEnvironmentCountsAsUnset) {
  const auto shared = make_models(root_ / "shared" / "models");
  ModelSearch s{std::nullopt, std::string(), root_ / "repo", {}};
  const auto choice = discover_models(s);
  EXPECT_EQ(choice.source, ModelSource::source_tree);
  EXPECT_EQ(choice.dir, shared);
}

TEST_F(TempTree, SourceTreeSiblingSharedModels) {
  const auto shared = make_models(root_ / "shared" / "models", 1056540 % 97, 5);
  ModelSearch s{std::nullopt, std::nullopt, root_ / "repo", root_ / "elsewhere/bin/lockstep"};
  const auto choice = discover_models(s);
  EXPECT_EQ(choice.source, ModelSource::source_tree);
  EXPECT_EQ(choice.dir, shared);
  EXPECT_EQ(choice.files[1].bytes, 5u);
}

TEST_F(TempTree, ExecutableRelativeWhenSourceRootMoved) {
  // Source root recorded at configure time no longer exists; the executable
  // sits at <root>/tree/build/bin/lockstep and <root>/shared/models exists.
  const auto shared = make_models(root_ / "shared" / "models");
  ModelSearch s{std::nullopt, std::nullopt, root_ / "gone" / "repo",
                root_ / "tree" / "build" / "bin" / "lockstep"};
  const auto choice = discover_models(s);
  EXPECT_EQ(choice.source, ModelSource::executable);
  EXPECT_EQ(choice.dir, shared);
  EXPECT_EQ(choice.rejected.front(), root_ / "gone" / "shared" / "models");
}

TEST_F(TempTree, SyntheticWhenNothingFound) {
  // An empty shared/models folder: nothing found, the folder is named among those looked in.
  fs::create_directories(root_ / "shared" / "models");
  ModelSearch s{std::nullopt, std::nullopt, root_ / "repo", {}};
  const auto choice = discover_models(s);
  EXPECT_TRUE(choice.synthetic());
  EXPECT_TRUE(choice.dir.empty());
  EXPECT_TRUE(choice.files.empty());
  ASSERT_EQ(choice.rejected.size(), 1u);
  EXPECT_EQ(choice.rejected[0], root_ / "shared" / "models");
  EXPECT_THROW((void)choice.checkpoint(), std::logic_error);
  const std::string notice = synthetic_model_notice(choice);
  EXPECT_EQ(notice.rfind("no model folder found (looked in " + (root_ / "shared" / "models").string() + ")", 0), 0u)
      << notice;
}

// A default folder with one of the two files is half a model: refused by name, not a fallback
// to the synthetic model (found by an outside tester: "no model checkpoint found" beside a
// checkpoint, where lockstep-model refused the folder).
TEST_F(TempTree, AHalfDefaultFolderIsAnInputError) {
  const fs::path dir = root_ / "shared" / "models";
  fs::create_directories(dir);
  std::ofstream(dir / kCheckpointFile) << "x";
  EXPECT_EQ(missing_model_files(dir), std::vector<std::string>{"tok512.bin"});
  try {
    (void)discover_models({std::nullopt, std::nullopt, root_ / "repo", {}});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + " holds stories260K.bin but not tok512.bin (a regular file): "
                                     "complete it, or pass --models DIR (or --models synthetic)");
  }
}

TEST_F(TempTree, ExplicitSyntheticValue) {
  make_models(root_ / "shared" / "models");
  EXPECT_TRUE(discover_models({"synthetic", std::nullopt, root_ / "repo", {}}).synthetic());
  EXPECT_TRUE(discover_models({std::nullopt, "synthetic", root_ / "repo", {}}).synthetic());
}

TEST_F(TempTree, UnusableExplicitDirectoryIsAnInputError) {
  fs::create_directories(root_ / "half");
  std::ofstream(root_ / "half" / kTokenizerFile) << "x";
  try {
    (void)discover_models({(root_ / "half").string(), std::nullopt, {}, {}});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--models"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stories260K.bin"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("tok512.bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)discover_models({std::nullopt, (root_ / "nope").string(), {}, {}}),
               InputError);
  // A folder where a model file belongs is named as a folder, not as missing (found by an outside
  // tester: it said the directory "lacks" a file it could see).
  fs::create_directories(root_ / "half" / kCheckpointFile);
  try {
    (void)discover_models({(root_ / "half").string(), std::nullopt, {}, {}});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--models names '" + (root_ / "half").string() +
                                         "', which lacks the file stories260K.bin (a folder of that name is there, "
                                         "not a file)");
  }
}

TEST_F(TempTree, ContextReadsEnvironment) {
  const auto env = make_models(root_ / "env");
  ASSERT_EQ(::setenv("LOCKSTEP_MODELS", env.c_str(), 1), 0);
  Context ctx(root_ / "repo", {});
  EXPECT_EQ(ctx.models().source, ModelSource::environment);
  EXPECT_EQ(ctx.models().dir, env);
  ::unsetenv("LOCKSTEP_MODELS");
}

TEST(Summary, StatusStepsMismatchesAndExitCodes) {
  Summary s;
  EXPECT_EQ(s.status(), "exact");
  EXPECT_EQ(s.exit_code(), ExitCode::exact);
  s.add_steps(30000);
  s.add_steps(5);
  s.set("program", "addi-chain");
  EXPECT_EQ(s.to_json()["steps"], 30005u);
  EXPECT_EQ(s.to_json()["status"], "exact");
  s.add_mismatches(1);
  EXPECT_EQ(s.status(), "mismatch");
  EXPECT_EQ(static_cast<int>(s.exit_code()), 1);
  s.fail("bad\nfile");
  EXPECT_EQ(s.status(), "error");
  EXPECT_EQ(static_cast<int>(s.exit_code()), 2);
  const auto j = s.to_json();
  EXPECT_EQ(j["error"], "bad file");
  EXPECT_EQ(j["mismatches"], 1u);
  EXPECT_EQ(j["program"], "addi-chain");
  EXPECT_EQ(j.begin().key(), "status");
  // "interrupted" is true in --json as in summary.json, its line beside it (found by an outside
  // tester: a string here and a boolean there)
  Summary i;
  i.interrupt("after 7\nsteps");
  EXPECT_EQ(i.status(), "interrupted");
  EXPECT_EQ(i.to_json()["interrupted"], true);
  EXPECT_EQ(i.to_json()["interrupted_reason"], "after 7 steps");
}

TEST(Summary, ReservedKeysAndSingleEmit) {
  Summary s;
  EXPECT_THROW(s.set("status", "exact"), std::logic_error);
  EXPECT_THROW(s.set("steps", 1), std::logic_error);
  std::ostringstream out;
  EXPECT_TRUE(s.emit(out));
  EXPECT_FALSE(s.emit(out));
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  const auto parsed = nlohmann::json::parse(text);
  EXPECT_EQ(parsed["status"], "exact");
  EXPECT_EQ(parsed["steps"], 0u);
}

// A guest's console is kept up to 1 MiB per fd, with the count of what it wrote.
TEST(ConsoleHead, KeepsTheFirstMebibyteAndCountsTheRest) {
  ConsoleHead h;
  const std::string chunk(300000, 'x');
  for (int i = 0; i < 4; ++i) h.add(chunk);
  h.add("tail");
  EXPECT_EQ(h.kept.size(), ConsoleHead::kLimit);
  EXPECT_EQ(h.total, 1200004u);
  EXPECT_TRUE(h.truncated());
  Summary s;
  h.record(s, "stdout");
  const auto j = s.to_json();
  EXPECT_EQ(j["stdout_bytes"], 1200004u);
  EXPECT_EQ(j["stdout_truncated"], true);
  EXPECT_EQ(j["stdout"].get<std::string>().size(), ConsoleHead::kLimit);
  ConsoleHead small;
  small.add("hi\n");
  EXPECT_FALSE(small.truncated());
  Summary t;
  small.record(t, "stderr");
  EXPECT_EQ(t.to_json()["stderr"], "hi\n");
  EXPECT_EQ(t.to_json()["stderr_bytes"], 3u);
}

// Printed commands name the executable as it was invoked.
TEST(CommandName, IsTheInvokedPathOrLockstep) {
  set_command_name("lockstep");
  EXPECT_EQ(as_invoked("lockstep replay r"), "lockstep replay r");
  set_command_name("build/bin/lockstep");
  EXPECT_EQ(as_invoked("lockstep replay r"), "build/bin/lockstep replay r");
  set_command_name("/opt/my tools/lockstep");
  EXPECT_EQ(as_invoked("lockstep run --resume r"), "'/opt/my tools/lockstep' run --resume r");
  EXPECT_EQ(as_invoked("note"), "note");
  set_command_name(nullptr);
  EXPECT_EQ(command_name(), "lockstep");
}

TEST(Logging, LevelsAndErrors) {
  auto logger = setup_logging("warn");
  EXPECT_EQ(logger->level(), spdlog::level::warn);
  EXPECT_EQ(setup_logging("off")->level(), spdlog::level::off);
  EXPECT_EQ(spdlog::default_logger().get(), logger.get());
  EXPECT_THROW(setup_logging("loud"), UsageError);
}

TEST(OneLine, CollapsesControlCharacters) {
  EXPECT_EQ(one_line("a\nb\r\n\tc\n"), "a b c");
  EXPECT_EQ(one_line("\nx"), "x");
}

// A message quoting its whole input (a JSON parser's "last read" of a damaged 200 KB chip
// header) keeps its start and end; a short one is unchanged.
TEST(OneLine, KeepsTheStartAndEndOfAVeryLongMessage) {
  const std::string start = "safetensors: header is not valid JSON: last read: '";
  const std::string middle(226'000, 'x');
  const std::string end = "' (at byte 225816)";
  const std::string line = one_line(start + middle + end);
  EXPECT_LT(line.size(), 900u);
  EXPECT_EQ(line.rfind(start, 0), 0u);
  EXPECT_EQ(line.substr(line.size() - end.size()), end);
  EXPECT_NE(line.find(" characters left out ...] "), std::string::npos) << line.substr(0, 900);
  const std::string short_one(864, 'y');
  EXPECT_EQ(one_line(short_one), short_one);
  // Multi-byte UTF-8 characters are not cut in half.
  std::string utf;
  for (int i = 0; i < 2000; ++i) utf += "\xc2\xa7";  // U+00A7
  const std::string cut = one_line(utf);
  EXPECT_LT(cut.size(), utf.size());
  EXPECT_EQ(cut.find("\xc2\xa7 ["), 598u);
}

TEST(Version, NamesProjectAndTraceSpec) {
  EXPECT_EQ(version_line(), "lockstep 0.1.0 (trace spec trace-v3)");
  EXPECT_EQ(trace_spec_version(), "trace-v3");
}

// ---- run_main in-process: exit codes and the partial summary ------------

namespace {

struct Captured {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs run_main with `args` and one extra subcommand "probe" whose behaviour
// is chosen by `mode`, capturing std::cout and std::cerr.
Captured run_probe(std::vector<std::string> args, int mode) {
  static int probe_mode = 0;
  probe_mode = mode;
  CommandRegistrar probe = [](CLI::App& app, Context& ctx) {
    app.add_subcommand("probe", "test subcommand")->callback([&ctx] {
      ctx.summary.add_steps(7);
      ctx.summary.set("probe", "ran");
      if (probe_mode == 1) ctx.summary.add_mismatches(2);
      if (probe_mode == 2) throw InputError("bad file\nsecond line");
      if (probe_mode == 3) throw std::logic_error("broken invariant");
    });
  };
  std::vector<std::string> storage{"lockstep"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  Captured c;
  c.code = run_main(static_cast<int>(argv.size()), argv.data(), {probe});
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  c.out = out.str();
  c.err = err.str();
  return c;
}

}  // namespace

TEST(RunMain, ExactRunExitsZeroWithSummary) {
  const auto c = run_probe({"--json", "probe"}, 0);
  EXPECT_EQ(c.code, 0) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["status"], "exact");
  EXPECT_EQ(j["steps"], 7);
  EXPECT_EQ(j["command"], "probe");
  EXPECT_EQ(j["probe"], "ran");
}

TEST(RunMain, MismatchExitsOne) {
  const auto c = run_probe({"probe", "--json"}, 1);
  EXPECT_EQ(c.code, 1);
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["status"], "mismatch");
  EXPECT_EQ(j["mismatches"], 2);
}

TEST(RunMain, ThrowingCommandKeepsPartialSummaryAndPrintsOneLine) {
  const auto c = run_probe({"--json", "probe"}, 2);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err, "lockstep: error: bad file second line\n");
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["steps"], 7);
  EXPECT_EQ(j["probe"], "ran");
  EXPECT_EQ(j["error"], "bad file second line");
}

TEST(RunMain, LogicErrorIsInternalError) {
  const auto c = run_probe({"probe"}, 3);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.err, "lockstep: error: internal error: broken invariant\n");
}

TEST(RunMain, WithoutJsonStdoutHasNoSummary) {
  const auto c = run_probe({"probe"}, 1);
  EXPECT_EQ(c.code, 1);
  EXPECT_EQ(c.out, "");
}
