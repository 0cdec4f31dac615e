// The lockstep executable end to end: run / story / replay / report, their
// exit codes and report files; kill -9 and --resume through the command; and
// directed guests through the built chip (when it exists).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "lockstep/chip/cuda_executor.hpp"
#include "lockstep/engine/check.h"
#include "lockstep/engine/digest.h"
#include "lockstep/format/elf.h"
#include "test_files.h"
#include "test_guest.h"

namespace lockstep::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_dir(const std::string& name) { return testing::fresh_temp_dir("engine-cli", name); }

using testing::slurp;

struct Proc {
  int rc = -1;
  std::string out, err;
};

pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
            const std::vector<std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    freopen(out.c_str(), "w", stdout);
    freopen(err.c_str(), "w", stderr);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    std::string exe = LOCKSTEP_EXE;
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

Proc run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  const fs::path d = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli";
  fs::create_directories(d);
  const fs::path o = d / ("out-" + std::to_string(getpid())), e = d / ("err-" + std::to_string(getpid()));
  const pid_t pid = spawn(args, o, e, env);
  int status = 0;
  waitpid(pid, &status, 0);
  Proc p;
  p.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  p.out = slurp(o);
  p.err = slurp(e);
  return p;
}

std::string cmdline(const std::vector<std::string>& args) {
  std::string s = "lockstep";
  for (const auto& a : args) s += " " + a;
  return s;
}

// The in-memory loop guest written as an ELF file.
fs::path loop_elf(std::uint32_t iterations) {
  const fs::path p = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli" /
                     ("loop" + std::to_string(iterations) + ".elf");
  fs::create_directories(p.parent_path());
  format::write_elf_file(p, testing::make_loop_guest(iterations).image);
  return p;
}

// Starts `lockstep ARGS` (which checkpoints into DIR/checkpoints), waits for its first
// checkpoint (at most 120 s) and kills it with SIGKILL. Returns the wait status; its stderr is
// left in DIR/../TAG.err.
int sigkill_after_first_checkpoint(const std::vector<std::string>& args, const fs::path& dir, const std::string& tag) {
  const pid_t pid = spawn(args, dir.parent_path() / (tag + ".out"), dir.parent_path() / (tag + ".err"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (list_checkpoints(dir / "checkpoints").empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

void expect_one_error_line(const Proc& p, const std::string& needle) {
  EXPECT_EQ(p.rc, 2) << p.err;
  EXPECT_EQ(p.err.rfind("lockstep: error: ", 0), 0u) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
  EXPECT_NE(p.err.find(needle), std::string::npos) << p.err;
}

TEST(RunCommand, BadInputIsExitTwoWithOneLine) {
  const std::string elf = loop_elf(5).string();
  expect_one_error_line(run({"run"}), "PROGRAM.elf is required");
  expect_one_error_line(run({"run", elf, "--mode", "sideways"}), "--mode must be forced or free");
  if (!lockstep::chip::cuda_available())  // with a GPU, --backend cuda runs (tests/chip_cuda)
    expect_one_error_line(run({"run", elf, "--backend", "cuda"}), "--backend cuda");
  expect_one_error_line(run({"run", elf, "--backend", "tpu"}), "--backend must be cpu or cuda");
  expect_one_error_line(run({"run", elf, "--checkpoint-every", "10"}), "--report DIR");
  expect_one_error_line(run({"run", "/no/such/file.elf"}), "/no/such/file.elf");
  expect_one_error_line(run({"run", elf, "--chip", "/no/such/chip"}), "/no/such/chip");
  expect_one_error_line(run({"run", "--resume", temp_dir("empty-resume").string()}), "case");
  expect_one_error_line(run({"report", temp_dir("no-summary").string()}), "summary.json");
  if (!have_built_chip()) {
    const Proc p = run({"run", elf});
    expect_one_error_line(p, "no built chip yet: pass --chip FILE");
  }
}

TEST(StoryCommand, ReferenceOnlyPrintsTheStoryStepsAndDigest) {
  const fs::path elf = loop_elf(30);
  const Proc p = run({"story", "--guest", elf.string(), "--reference-only"});
  ASSERT_EQ(p.rc, 0) << p.err;
  const auto trace = testing::reference_trace(testing::make_loop_guest(30));
  const std::string digest = hex64(XXH3_64bits(trace.data(), trace.size() * 4));
  EXPECT_EQ(p.out.rfind("hi\n", 0), 0u) << p.out;
  EXPECT_NE(p.out.find("reference: " + std::to_string(trace.size()) + " steps, end exit, digest " + digest),
            std::string::npos)
      << p.out;
  const Proc j = run({"story", "--guest", elf.string(), "--reference-only", "--json"});
  ASSERT_EQ(j.rc, 0);
  const json s = json::parse(j.out);
  EXPECT_EQ(s["reference_steps"], trace.size());
  EXPECT_EQ(s["digest"], digest);
  expect_one_error_line(run({"story", "--build", "z"}), "--build must be vx or c");
  expect_one_error_line(run({"story", "--guest", elf.string(), "--tokens", "3"}), "stories_image");
  expect_one_error_line(run({"story", "--guest", elf.string(), "--checkpoint-every", "10"}), "--report DIR");
  expect_one_error_line(run({"story", "--resume", temp_dir("empty-story-resume").string()}), "case");
}

// kill -9 in the middle of `lockstep story --report DIR --checkpoint-every N`, then
// `lockstep story --resume DIR`: the same steps, mismatches and digest as an uninterrupted
// check (the loop guest stands in for the story; the whole story is in the `long` label).
TEST(StoryCommand, SigkillThenResumeGivesTheSameResult) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(1000);
  const std::vector<std::string> base = {"story", "--guest", elf.string(), "--teacher-forced-steps", "200",
                                         "--checkpoint-every", "500", "--json"};
  const fs::path full_dir = temp_dir("story-full");
  std::vector<std::string> full_args = base;
  full_args.insert(full_args.end(), {"--report", full_dir.string()});
  const Proc full = run(full_args);
  ASSERT_TRUE(full.rc == 0 || full.rc == 1) << full.err;
  const json fs_ = json::parse(full.out.substr(full.out.find('{')));
  ASSERT_GT(fs_["steps"].get<std::uint64_t>(), 2000u) << "the check must be long enough to be killed after a checkpoint";
  const fs::path dir = temp_dir("story-kill");
  std::vector<std::string> kill_args = base;
  kill_args.insert(kill_args.end(), {"--report", dir.string()});
  const int status = sigkill_after_first_checkpoint(kill_args, dir, "story-kill");
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the check was not killed partway (status " << status << "): " << slurp(dir.parent_path() / "story-kill.err");
  const Proc r = run({"story", "--resume", dir.string(), "--json"});
  ASSERT_EQ(r.rc, full.rc) << r.err;
  const json rs = json::parse(r.out.substr(r.out.find('{')));
  for (const char* k : {"status", "steps", "mismatches", "digest"}) EXPECT_EQ(rs[k], fs_[k]) << k;
  std::cout << "[ resume   ] story killed with SIGKILL and resumed: " << rs["status"] << ", " << rs["steps"]
            << " steps, digest " << rs["digest"] << "\n";
}

// run --report, then replay and report on the folder it wrote.  Works with
// whatever the built chip does on the loop guest (exact or not): the exit
// code, summary, JUnit and replay must agree with each other.
TEST(RunCommand, ReportReplayAndReportAgree) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32): nothing to run";
  const fs::path elf = loop_elf(5);
  const fs::path dir = temp_dir("report");
  const Proc p = run({"run", elf.string(), "--mode", "free", "--steps", "300", "--report", dir.string()});
  ASSERT_TRUE(p.rc == 0 || p.rc == 1) << p.err;
  const json s = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(s["status"], p.rc == 0 ? "exact" : "mismatch");
  EXPECT_EQ(s["mismatches"].get<int>(), p.rc);
  const std::string junit = slurp(dir / "junit.xml");
  EXPECT_NE(junit.find("failures=\"" + std::to_string(p.rc) + "\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"lockstep.run\" name=\"loop5\""), std::string::npos) << junit;
  const std::string html = slurp(dir / "report.html");
  EXPECT_NE(html.find("<h1>Lockstep run"), std::string::npos);
  EXPECT_NE(html.find(s["digest"].get<std::string>()), std::string::npos);
  const json c = json::parse(slurp(dir / "case.json"));
  EXPECT_EQ(c["lockstep_case"], 1);
  EXPECT_EQ(c["mode"], "free");
  EXPECT_EQ(c["steps"], 300);
  EXPECT_TRUE(c["guest"].contains("elf_base64"));
  const Proc r = run({"replay", dir.string()});
  EXPECT_EQ(r.rc, p.rc) << r.err;
  EXPECT_NE(r.out.find("the case reproduces"), std::string::npos) << r.out;
  fs::remove(dir / "report.html");
  const Proc rr = run({"report", dir.string()}, {"LOCKSTEP_GNUPLOT=none"});
  EXPECT_EQ(rr.rc, 0) << rr.err;
  EXPECT_NE(slurp(dir / "report.html").find("plots not rendered: gnuplot was not found"), std::string::npos);
}

// kill -9 in the middle of `lockstep run --mode free --report DIR
// --checkpoint-every N`, then `lockstep run --resume DIR`: the same result
// (status, steps compared, mismatches, digests, end) and the same report as an
// uninterrupted run.  Works whatever the chip does on the guest, as long as
// the run is long enough to be killed after its first checkpoint.
TEST(RunCommand, SigkillThenResumeGivesTheSameResultAndReport) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(1000);
  const std::string every = "500";
  const fs::path full_dir = temp_dir("sigkill-full");
  const Proc full = run({"run", elf.string(), "--mode", "free", "--json", "--report", full_dir.string(),
                         "--checkpoint-every", every});
  ASSERT_TRUE(full.rc == 0 || full.rc == 1) << full.err;
  const json fs_ = json::parse(full.out);
  ASSERT_GT(fs_["steps"].get<std::uint64_t>(), 4 * std::stoull(every))
      << "the run must be long enough to be killed after a checkpoint";
  const fs::path dir = temp_dir("sigkill");
  const int status = sigkill_after_first_checkpoint(
      {"run", elf.string(), "--mode", "free", "--report", dir.string(), "--checkpoint-every", every}, dir, "kill");
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the run was not killed partway (status " << status << "): " << slurp(dir.parent_path() / "kill.err");
  // Killed: no summary of a finished run yet, but a checkpoint.
  ASSERT_FALSE(list_checkpoints(dir / "checkpoints").empty());
  const Proc r = run({"run", "--resume", dir.string(), "--json"});
  ASSERT_EQ(r.rc, full.rc) << r.err;
  const json rs = json::parse(r.out);
  for (const char* k : {"status", "steps", "mismatches", "digest", "end"}) EXPECT_EQ(rs[k], fs_[k]) << k;
  EXPECT_EQ(rs.contains("divergence"), fs_.contains("divergence"));
  if (fs_.contains("divergence")) {
    EXPECT_EQ(rs["divergence"]["step"], fs_["divergence"]["step"]);
  }
  EXPECT_GT(rs["resumed_from"].get<std::uint64_t>(), 0u);
  EXPECT_LT(rs["resumed_from"].get<std::uint64_t>(), fs_["steps"].get<std::uint64_t>());
  std::cout << "[ resume   ] killed with SIGKILL, resumed from step " << rs["resumed_from"] << " of " << fs_["steps"]
            << ": " << rs["status"] << ", mismatches " << rs["mismatches"] << ", digest " << rs["digest"] << "\n";
  // The report: the same summary (but for timings and the resume point).
  for (const char* f : {"summary.json", "junit.xml", "report.html", "case.json"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  const json a = json::parse(slurp(full_dir / "summary.json"));
  const json b = json::parse(slurp(dir / "summary.json"));
  for (const char* k : {"status", "steps", "mismatches", "digest"}) EXPECT_EQ(b[k], a[k]) << k;
  ASSERT_EQ(b["run"]["streams"].size(), a["run"]["streams"].size());
  for (std::size_t i = 0; i < a["run"]["streams"].size(); ++i) {
    const json& x = a["run"]["streams"][i];
    const json& y = b["run"]["streams"][i];
    for (const char* k : {"guest", "steps", "ref_steps", "mismatches", "end", "digest", "chip_digest", "console",
                          "class_steps"})
      EXPECT_EQ(y[k], x[k]) << "stream " << i << " " << k;
  }
  EXPECT_GT(b["run"]["resumed_from"].get<std::uint64_t>(), 0u);
  const std::string ja = slurp(full_dir / "junit.xml"), jb = slurp(dir / "junit.xml");
  for (const std::string& attr : {std::string("tests=\"1\""), "failures=\"" + std::to_string(full.rc) + "\""}) {
    EXPECT_NE(ja.find(attr), std::string::npos) << ja;
    EXPECT_NE(jb.find(attr), std::string::npos) << jb;
  }
  EXPECT_NE(slurp(dir / "report.html").find(fs_["digest"].get<std::string>()), std::string::npos);
}

// Directed, bignum and vector guests (built by guests/) through the built chip in
// both modes, their first 20,000 steps: every one must be exact (the stories are
// chip_stories_vx's and chip_story_c's); the whole runs are in the `long` label
// (ctest -L long -R chip_guest_free).
TEST(BuiltChip, DirectedGuestsInBothModes) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  std::vector<fs::path> dirs;
  if (const char* e = std::getenv("LOCKSTEP_GUEST_DIR")) dirs.emplace_back(e);
  dirs.push_back(fs::path(LOCKSTEP_BINARY_DIR) / "guests");
  dirs.push_back(fs::path(LOCKSTEP_SOURCE_DIR) / "build" / "guests");
  fs::path dir;
  for (const fs::path& d : dirs)
    if (fs::exists(d / "hello.elf")) {
      dir = d;
      break;
    }
  if (dir.empty()) GTEST_SKIP() << "directed guests not built (no hello.elf in $LOCKSTEP_GUEST_DIR, build/guests)";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".elf") continue;
    const std::string name = entry.path().stem().string();
    if (name.rfind("stories", 0) == 0) continue;
    for (const char* mode : {"forced", "free"}) {
      const std::vector<std::string> args = {"run", entry.path().string(), "--mode", mode, "--steps", "20000",
                                             "--json", "--classify-window", "64"};
      const Proc p = run(args);
      ASSERT_TRUE(p.rc == 0 || p.rc == 1) << cmdline(args) << ": " << p.err;
      const json s = json::parse(p.out);
      std::cout << "[ guest    ] " << name << " " << mode << ": " << s["steps"] << " steps, "
                << (p.rc == 0 ? std::string("exact") : "diverges at step " + s["divergence"]["step"].dump()) << "\n";
      EXPECT_EQ(p.rc, 0) << cmdline(args) << "\n" << p.out;
    }
  }
}

}  // namespace
}  // namespace lockstep::engine
