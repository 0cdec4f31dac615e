// The lockstep executable end to end: run / story / replay / report, their
// exit codes and report files; kill -9 and --resume through the command; and
// directed guests through the built chip (when it exists).
#include <sys/file.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>
#include <pty.h>
#include <termios.h>

#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <optional>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/cuda_executor.hpp"
#include "lockstep/engine/check.h"
#include "lockstep/engine/digest.h"
#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"
#include "../cli/cli_run.h"
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

// Starts lockstep (cli_run.h's spawn_lockstep) with `env` entries given as "NAME=VALUE".
pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
            const std::vector<std::string>& env = {}) {
  std::map<std::string, std::string> vars;
  for (const std::string& e : env) {
    const auto eq = e.find('=');
    vars[e.substr(0, eq)] = eq == std::string::npos ? "" : e.substr(eq + 1);
  }
  return cli_test::spawn_lockstep(args, out, err, vars);
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
  // written beside it and renamed: tests running at once write the same file, and one reading it
  // meanwhile must never see it half-written
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  format::write_elf_file(tmp, testing::make_loop_guest(iterations).image);
  fs::rename(tmp, p);
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
    expect_one_error_line(p, "no built chip");
    EXPECT_NE(p.err.find("pass --chip FILE"), std::string::npos) << p.err;
  }
  // dut-check --ops: the list is checked before the chip is started.
  expect_one_error_line(run({"dut-check", "--dut", "true", "--ops", "nosuch"}), "--ops: unknown op or class 'nosuch'");
  expect_one_error_line(run({"dut-check", "--dut", "true", "--ops", "rv32i", "--guest", elf}),
                        "--ops chooses generated programs: leave out --guest");
  // An option the mode does not use is refused, not silently ignored (an outside tester).
  expect_one_error_line(run({"run", loop_elf(3).string(), "--teacher-forced-steps", "10"}),
                        "--teacher-forced-steps N is for --mode free");
}

// A guest that stops at an illegal instruction is never read as a pass: with chip and reference
// agreeing, `lockstep run` ends with one error line naming the trap, its pc and word (and, for an
// ELF marked RVC, the compressed-instruction hint), exit 2, and a run folder whose status is
// "error" with the steps compared; --allow-trap makes the same run exact.
TEST(RunCommand, AGuestThatTrapsIsAnErrorUnlessAllowed) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build";
  Guest g = testing::make_loop_guest(2);
  g.image.segments[0].bytes[8 * 4 + 0] = 0xff;  // word 8 (the loop's lw, pc 0x10020) becomes 0xffffffff
  g.image.segments[0].bytes[8 * 4 + 1] = 0xff;
  g.image.segments[0].bytes[8 * 4 + 2] = 0xff;
  g.image.segments[0].bytes[8 * 4 + 3] = 0xff;
  g.image.e_flags = format::kEfRiscvRvc;
  const fs::path elf = temp_dir("trap-guest") / "illegal.elf";
  format::write_elf_file(elf, g.image);
  const fs::path dir = temp_dir("trap-run");
  const Proc p = run({"run", elf.string(), "--report", dir.string()});
  expect_one_error_line(p, "the guest ended in trap 1 ILLEGAL_INSTRUCTION at pc 0x00010020 (word 0xffffffff)");
  EXPECT_NE(p.err.find("the ELF is marked RVC"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("--allow-trap"), std::string::npos) << p.err;
  const json s = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(s["status"], "error") << s.dump();
  EXPECT_EQ(s["mismatches"], 0) << s.dump();
  EXPECT_GT(s["steps"].get<std::uint64_t>(), 0u) << s.dump();
  EXPECT_NE(s["error"].get<std::string>().find("trap 1"), std::string::npos) << s.dump();
  for (const char* mode : {"forced", "free"}) {
    const Proc ok = run({"run", elf.string(), "--allow-trap", "--mode", mode});
    EXPECT_EQ(ok.rc, 0) << mode << ": " << ok.err;
    EXPECT_NE(ok.out.find("mismatches 0"), std::string::npos) << ok.out;
    // Allowed, the trap is still named, with its pc, word and build hint, in the text and in --json.
    EXPECT_NE(ok.out.find("the guest ended in trap 1 ILLEGAL_INSTRUCTION at pc 0x00010020 (word 0xffffffff); the "
                          "ELF is marked RVC"),
              std::string::npos)
        << ok.out;
  }
  // --allow-trap is the run's, as its case.json records it: --resume judges the end as the run
  // did, and refuses the flag given again (found by an outside tester: a resume that added or
  // dropped it flipped the verdict).
  const fs::path allowed = temp_dir("trap-run-allowed");
  ASSERT_EQ(run({"run", elf.string(), "--allow-trap", "--report", allowed.string(), "--checkpoint-every", "2"}).rc, 0);
  EXPECT_EQ(json::parse(slurp(allowed / "case.json"))["allow_trap"], true);
  const Proc again = run({"run", "--resume", allowed.string()});
  EXPECT_EQ(again.rc, 0) << again.err;
  expect_one_error_line(run({"run", "--resume", allowed.string(), "--allow-trap"}),
                        "--allow-trap cannot be given with --resume: the run continues as " +
                            (allowed / "case.json").string() + " says (with --allow-trap)");
  EXPECT_EQ(json::parse(slurp(dir / "case.json"))["allow_trap"], false);
  expect_one_error_line(run({"run", "--resume", dir.string(), "--allow-trap"}),
                        "--allow-trap cannot be given with --resume: the run continues as " +
                            (dir / "case.json").string() + " says (without --allow-trap)");
  const Proc j = run({"run", elf.string(), "--allow-trap", "--json"});
  const json t = json::parse(j.out.substr(j.out.find('{')));
  EXPECT_EQ(t["end"], "trap") << t.dump();
  EXPECT_EQ(t["trap_code"], 1) << t.dump();
  EXPECT_EQ(t["trap_name"], "ILLEGAL_INSTRUCTION") << t.dump();
}

// A guest's exit status is how a self-checking guest says pass or fail: run shows it (text and
// --json), though the chip's verdict does not depend on it (isa.md section 5: a0 & 0xff).
TEST(RunCommand, ShowsTheGuestsExitStatus) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build";
  const Proc p = run({"run", loop_elf(3).string()});
  ASSERT_EQ(p.rc, 0) << p.err;
  EXPECT_NE(p.out.find("the guest exited with status 0\nsteps compared "), std::string::npos) << p.out;
  const Proc j = run({"run", loop_elf(3).string(), "--json"});
  const json s = json::parse(j.out.substr(j.out.find('{')));
  EXPECT_EQ(s["end"], "exit") << s.dump();
  EXPECT_EQ(s["exit_status"], 0) << s.dump();
  // A run cut short by --steps says so in the text, not only in --json's "end" (outside tester E).
  const Proc cut = run({"run", loop_elf(3).string(), "--steps", "10"});
  ASSERT_EQ(cut.rc, 0) << cut.err;
  EXPECT_NE(cut.out.find("the guest had not ended: stopped at the step limit after 10 steps\nsteps compared 10"),
            std::string::npos)
      << cut.out;
}

// ref never writes its trace or signature over its guest (found by an outside tester: `ref --trace
// G.elf G.elf` replaced the guest with its trace and exited 0), over one another, or into a file
// it cannot seek in; each is one line, exit 2, and the guest stays as it was.
TEST(RefCommand, RefusesToWriteOverItsGuestOrIntoAPipe) {
  const fs::path dir = temp_dir("ref-outputs");
  const fs::path elf = dir / "hi.elf";
  format::write_elf_file(elf, testing::make_loop_guest(2).image);
  const std::string before = slurp(elf);
  fs::create_symlink(elf, dir / "link.elf");
  struct Row {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Row> rows = {
      {{"ref", "--trace", elf.string(), elf.string()}, "--trace " + elf.string() + " is the guest " + elf.string() + " itself"},
      {{"ref", "--trace", (dir / "link.elf").string(), elf.string()}, " itself: writing it would destroy the guest"},
      {{"ref", "--signature", elf.string(), elf.string()}, "--signature " + elf.string() + " is the guest "},
      {{"ref", "--trace", (dir / "t").string(), "--signature", (dir / "t").string(), elf.string()},
       "--trace and --signature name one file"},
      {{"ref", "--trace", "/dev/null", elf.string()}, "--trace /dev/null is not a regular file"},
  };
  for (const Row& r : rows) {
    const Proc p = run(r.args);
    EXPECT_EQ(p.rc, 2) << r.says << p.err;
    EXPECT_NE(p.err.find("lockstep: error: " + r.args[1]), std::string::npos) << p.err;
    EXPECT_NE(p.err.find(r.says), std::string::npos) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    EXPECT_EQ(slurp(elf), before) << "the guest was written over";
  }
}

// `ref --steps N` writes only the console bytes whose OUT/ERR tokens are in the N steps, as
// `run` and the trace do (trace.md §1; found by an outside tester: a step limit inside a write
// printed the whole write). Its report starts a line of its own after guest output to fd 2 that
// did not end in a newline (guests.md: the last stderr line is the report).
TEST(RefCommand, AStepLimitInsideAWriteWritesOnlyTheBytesOfItsSteps) {
  const fs::path dir = temp_dir("ref-cut-write");
  const Guest g = testing::make_loop_guest(2);  // ends with write(1, "hi\n", 3) and exit(0)
  const fs::path elf = dir / "hi.elf";
  format::write_elf_file(elf, g.image);
  const std::vector<std::uint32_t> trace = testing::reference_trace(g);
  const std::uint32_t out_kind = static_cast<std::uint32_t>(format::Kind::OUT);
  const auto first_out = std::find_if(trace.begin(), trace.end(), [&](std::uint32_t t) { return (t >> 8) == out_kind; });
  ASSERT_NE(first_out, trace.end());
  const std::string steps = std::to_string(first_out - trace.begin() + 1);  // the 'h' and nothing after it
  const Proc cut = run({"ref", elf.string(), "--steps", steps});
  EXPECT_EQ(cut.rc, 0) << cut.err;
  EXPECT_EQ(cut.out, "h");
  const Proc cut_json = run({"--json", "ref", elf.string(), "--steps", steps});
  const json cj = json::parse(cut_json.out);
  EXPECT_EQ(cj["stdout"], "h") << cj.dump();
  EXPECT_EQ(cj["stdout_bytes"], 1) << cj.dump();
  EXPECT_EQ(run({"ref", elf.string()}).out, "hi\n");
  EXPECT_EQ(run({"ref", elf.string(), "--steps", std::to_string(trace.size())}).out, "hi\n");

  // The same write to fd 2, two bytes ("hi" with no newline): the report line still starts a line.
  Guest g2 = g;
  std::vector<std::uint8_t>& code = g2.image.segments[0].bytes;
  auto put = [&](std::size_t word, std::uint32_t w) {
    for (int b = 0; b < 4; ++b) code[word * 4 + b] = static_cast<std::uint8_t>(w >> (8 * b));
  };
  put(13, ref::encode::i(ref::Op::kAddi, 12, 0, 2));  // a2 = 2
  put(14, ref::encode::i(ref::Op::kAddi, 10, 0, 2));  // a0 = 2 (fd 2)
  const fs::path elf2 = dir / "hi2.elf";
  format::write_elf_file(elf2, g2.image);
  const Proc e = run({"ref", elf2.string()});
  EXPECT_EQ(e.rc, 0) << e.err;
  EXPECT_EQ(e.err.rfind("hi\nlockstep ref: hi2.elf: exit 0, ", 0), 0u) << e.err;
}

// A guest that reaches a jump to itself would run forever: run stops after comparing the jump
// once and fails with one line (exit 2, summary end "self_loop", a red JUnit case); --steps
// still runs to its limit; ref stops too.
TEST(RunCommand, AGuestThatJumpsToItselfIsAnErrorNotAHang) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build";
  const fs::path dir = temp_dir("spin");
  const fs::path elf = dir / "spin.elf";
  format::write_elf_file(elf, testing::make_spin_guest().image);
  const fs::path report = dir / "report";
  const Proc p = run({"run", elf.string(), "--report", report.string()});
  expect_one_error_line(p, "the guest jumps to itself at pc 0x00010008 (jal");
  // addi (PCH PCL W0..W3), addi (PCL W0..W3), then the jump once (PCL NOP).
  EXPECT_NE(p.err.find("and can never exit: stopped after 13 steps"), std::string::npos) << p.err;
  const json s = json::parse(testing::slurp(report / "summary.json"));
  EXPECT_EQ(s["status"], "error") << s.dump();
  EXPECT_EQ(s["mismatches"], 0) << s.dump();
  EXPECT_EQ(s["steps"], 13) << s.dump();
  EXPECT_EQ(s["run"]["streams"][0]["end"], "self_loop") << s.dump();
  EXPECT_EQ(s["run"]["streams"][0]["loop_pc"], 0x10008) << s.dump();
  const Proc j = run({"run", elf.string(), "--json"});
  EXPECT_EQ(j.rc, 2) << j.err;
  const json js = json::parse(j.out);
  EXPECT_EQ(js["end"], "self_loop") << js.dump();
  EXPECT_EQ(js["status"], "error") << js.dump();
  EXPECT_NE(testing::slurp(report / "junit.xml").find("the guest jumps to itself and can never exit"),
            std::string::npos);
  const Proc limited = run({"run", elf.string(), "--steps", "200"});
  EXPECT_EQ(limited.rc, 0) << limited.err;
  EXPECT_NE(limited.out.find("steps compared 200, mismatches 0"), std::string::npos) << limited.out;
  const Proc ref = run({"ref", elf.string(), "--json"});
  EXPECT_EQ(ref.rc, 2) << ref.err;
  EXPECT_NE(ref.err.find("spin.elf: jumps to itself at pc 0x00010008 (jal"), std::string::npos) << ref.err;
  // ref stops at the very step run stops at: the same trace (found by an outside tester: ref went
  // on to 4,194,304 steps).
  EXPECT_EQ(json::parse(ref.out)["steps"], 13) << ref.out;
  // A spin-wait (two instructions whose state repeats): the same, from run and from ref.
  const fs::path wait_elf = dir / "spinwait.elf";
  format::write_elf_file(wait_elf, testing::make_spin_wait_guest().image);
  const Proc w = run({"run", wait_elf.string(), "--mode", "free"});
  expect_one_error_line(w, "the guest loops forever: from pc 0x0001000");
  EXPECT_NE(w.err.find("the same 2 instructions repeat from the same registers"), std::string::npos) << w.err;
  const Proc wref = run({"ref", wait_elf.string(), "--json"});
  EXPECT_EQ(wref.rc, 2) << wref.err;
  EXPECT_NE(wref.err.find("spinwait.elf: loops forever: from pc 0x0001000"), std::string::npos) << wref.err;
  const json wj = json::parse(wref.out);
  EXPECT_EQ(wj["end"], "self_loop") << wj.dump();
  EXPECT_EQ(wj["loop_period"], 2) << wj.dump();
  const Proc wjson = run({"run", wait_elf.string(), "--mode", "free", "--json"});
  EXPECT_EQ(wj["steps"], json::parse(wjson.out)["steps"]) << wj.dump() << wjson.out;
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
  // (the step limit is in the name, whatever the outcome: the guest ends within it here)
  EXPECT_NE(junit.find("<testcase classname=\"lockstep.run.free\" name=\"loop5 (first 300 steps)\""), std::string::npos)
      << junit;
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
  EXPECT_EQ(rr.rc, p.rc) << rr.err;  // the run's verdict
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
  // Its case records no result: a replay says so (found by an outside tester: no verdict at all).
  const Proc rp = run({"--json", "replay", dir.string()});
  EXPECT_EQ(rp.rc, full.rc) << rp.err;
  EXPECT_NE(rp.out.find("the case records no result (the run that wrote it did not finish"), std::string::npos) << rp.out;
  EXPECT_FALSE(json::parse(rp.out.substr(rp.out.find('{'))).contains("reproduced")) << rp.out;
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


// ------------------------------------------------------------------ issue 27

// Whether `pid` has a handler installed for `sig` (/proc/PID/status, SigCgt).
bool catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1) & 1) != 0;
  }
  return false;
}

// Starts `lockstep ARGS` (with SIGINT ignored on entry when `ignore_sigint`, as a background job
// of a non-interactive shell has it), waits until it has installed its SIGINT handler and then
// `delay`, sends `sig` (`twice`: twice, 5 ms apart, as GNU timeout does at once), and waits (at most 60 s) for it
// to end.
// A ready() for run_and_signal: `file` exists and is not the file that was there when this was
// called (another inode). A run folder's case.json from the run before stays until the new run
// claims the folder; a stop sent when it merely exists could land before the claim (under load:
// "it has no result to keep", and no earlier run moved or retired).
std::function<bool()> written_anew(const fs::path& file) {
  const auto inode = [file] {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 ? st.st_ino : ino_t{0};
  };
  return [inode, before = inode()] {
    const ino_t now = inode();
    return now != 0 && now != before;
  };
}

Proc run_and_signal(const std::vector<std::string>& args, int sig, std::chrono::milliseconds delay,
                    bool ignore_sigint = false, const std::function<bool()>& ready = {}, bool twice = false) {
  const fs::path d = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli";
  fs::create_directories(d);
  const fs::path o = d / ("sig-out-" + std::to_string(getpid())), e = d / ("sig-err-" + std::to_string(getpid()));
  if (ignore_sigint) std::signal(SIGINT, SIG_IGN);  // inherited by the child through exec
  const pid_t pid = spawn(args, o, e);
  if (ignore_sigint) std::signal(SIGINT, SIG_DFL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!catches(pid, SIGINT) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(delay);
  while (ready && !ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, sig);
  if (twice) {  // the second after the first was handled (two pending signals would merge into one)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    kill(pid, sig);
  }
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline + std::chrono::seconds(30)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Proc p;
  p.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  p.out = slurp(o);
  p.err = slurp(e);
  return p;
}

// The last line of `text`.
std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Item 2: every numeric option of every subcommand refuses a negative, an overflowing, an
// exponent or a fractional value with one line naming the option (CLI11 wrapped "-1" to 2^64-1).
TEST(NumericOptions, EveryOptionRefusesValuesThatWouldWrap) {
  const std::string elf = loop_elf(5).string();
  struct Row {
    std::vector<std::string> cmd;
    std::string option;
    bool floating = false;
  };
  const std::vector<Row> rows = {
      {{"run", elf}, "--steps"}, {{"run", elf}, "--teacher-forced-steps"}, {{"run", elf}, "--checkpoint-every"},
      {{"run", elf}, "--hash-every"}, {{"run", elf}, "--classify-window"}, {{"run", elf}, "--dut-timeout", true},
      {{"story", "--guest", elf}, "--steps"}, {{"story", "--guest", elf}, "--teacher-forced-steps"},
      {{"story", "--guest", elf}, "--checkpoint-every"}, {{"story", "--guest", elf}, "--tokens"},
      {{"ref", elf}, "--max-steps"},
      {{"fuzz"}, "--programs"}, {{"fuzz"}, "--first"}, {{"fuzz"}, "--seed"}, {{"fuzz"}, "--batch"},
      {{"fuzz"}, "--shrink-runs"}, {{"fuzz"}, "--shrink-time", true},
      {{"bench"}, "--steps"}, {{"bench"}, "--streams"}, {{"bench"}, "--cuda-streams"},
      {{"mutate"}, "--mutants"}, {{"mutate"}, "--corpus-steps"}, {{"mutate"}, "--target", true},
      {{"dut-check", "--dut", "true"}, "--steps"}, {{"dut-check", "--dut", "true"}, "--seed"},
      {{"chip-server"}, "--sessions"}, {{"chip-server"}, "--max-streams"},
  };
  int checked = 0;
  for (const Row& row : rows) {
    const std::vector<std::string> values =
        row.floating ? std::vector<std::string>{"-1", "abc", "inf", "nan"}
                     : std::vector<std::string>{"-1", "99999999999999999999", "1e20", "1.5", "abc", "+3"};
    for (const std::string& v : values) {
      std::vector<std::string> args = row.cmd;
      args.insert(args.end(), {row.option, v});
      const Proc p = run(args);
      EXPECT_EQ(p.rc, 2) << cmdline(args) << ": " << p.err;
      EXPECT_EQ(p.err.rfind("lockstep: error: " + row.option + ": must be a ", 0), 0u) << cmdline(args) << ": " << p.err;
      EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << cmdline(args) << ": " << p.err;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * 4 + 24 * 6);
  // The ranges of the options themselves.
  expect_one_error_line(run({"run", elf, "--steps", "1000000000000001"}), "from 1 to 1000000000000000");
  // An explicit 0 is refused where leaving the option out means "no limit" (never read as it).
  expect_one_error_line(run({"run", elf, "--steps", "0"}), "--steps: must be a whole number from 1");
  expect_one_error_line(run({"story", "--guest", elf, "--steps", "0"}), "--steps: must be a whole number from 1");
  expect_one_error_line(run({"ref", elf, "--max-steps", "0"}), "--max-steps: must be a whole number from 1");
  expect_one_error_line(run({"ref", elf, "--steps", "0"}), "--steps: must be a whole number from 1");
  expect_one_error_line(run({"chip-server", "--stdio", "--sessions", "0"}), "--sessions: must be a whole number from 1");
  expect_one_error_line(run({"mutate", "--mutants", "0"}), "--mutants: must be a whole number from 1");
  // A fraction out of [0, 1] reads like the other range errors.
  expect_one_error_line(run({"mutate", "--target", "1.5"}), "--target: must be a fraction from 0 to 1 (got '1.5')");
  expect_one_error_line(run({"fuzz", "--batch", "0"}), "--batch: must be a whole number from 1 to 65536");
  expect_one_error_line(run({"story", "--guest", elf, "--tokens", "0"}), "--tokens: must be a whole number from 1");
  // bench's ranges are the parser's (found by an outside tester: 0 was refused with another line
  // than its range said, and 2^64-1 steps was an internal error).
  expect_one_error_line(run({"bench", "--steps", "0"}), "--steps: must be a whole number from 1 to 10000000");
  expect_one_error_line(run({"bench", "--steps", "18446744073709551615"}), "--steps: must be a whole number from 1 to");
  expect_one_error_line(run({"bench", "--lockstep-steps", "0"}), "--lockstep-steps: must be a whole number from 1");
  expect_one_error_line(run({"bench", "--streams", "4097"}), "--streams: must be a whole number from 1 to 4096");
  expect_one_error_line(run({"fuzz", "--shrink-time", "1e308"}),
                        "--shrink-time: must be a number of seconds more than 0 and at most 86400");
}

// A whole number with leading zeros is read in decimal, as written: CLI11 alone reads "010" as
// octal 8 and refuses "08" (found by an outside tester: a seed from `date +%m%d` became another).
// Words no option takes are named in the order given (CLI11 lists them last first).
TEST(RunCommand, UnexpectedWordsAreNamedInTheirOrder) {
  expect_one_error_line(run({"run", loop_elf(5).string(), "b", "c", "d"}), "not expected: b c d (see lockstep --help)");
}

// "--chip=" with nothing after the '=' is refused by name: CLI11 took the next word as its value.
TEST(RunCommand, AnEmptyValueAfterTheEqualsSignIsRefused) {
  expect_one_error_line(run({"run", loop_elf(5).string(), "--chip=", "--mode", "free"}),
                        "--chip= has an empty value: give --chip VALUE");
  expect_one_error_line(run({"run", "--chip=", loop_elf(5).string()}), "--chip= has an empty value");
}

TEST(NumericOptions, LeadingZerosAreDecimalNotOctal) {
  const std::string elf = loop_elf(50).string();
  for (const auto& [text, steps] : std::vector<std::pair<std::string, int>>{{"010", 10}, {"08", 8}, {"00012", 12}}) {
    const Proc p = run({"--json", "ref", elf, "--steps", text});
    ASSERT_EQ(p.rc, 0) << "--steps " << text << ": " << p.err;
    EXPECT_EQ(nlohmann::json::parse(p.out).at("steps").get<int>(), steps) << "--steps " << text;
  }
  // Zeros alone are 0, refused where 0 is out of range; a sign or hex digits stay refused.
  expect_one_error_line(run({"ref", elf, "--steps", "000"}), "--steps: must be a whole number from 1");
  expect_one_error_line(run({"ref", elf, "--steps", "0x10"}), "--steps: must be a whole number from 1");
  expect_one_error_line(run({"run", elf, "--steps", "-010"}), "--steps: must be a whole number from 1");
}

// GNU timeout sends SIGTERM to the process and then to its process group: two signals at once
// are one request, and the run still ends with its report (exit 3), never killed without one.
TEST(Interruption, TwoSignalsAtOnceAreOneRequest) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(50'000'000);
  const fs::path dir = temp_dir("interrupted-twice");
  const Proc p = run_and_signal({"run", elf.string(), "--report", dir.string()}, SIGTERM, std::chrono::milliseconds(0),
                                false, [&] { return fs::exists(dir / "case.json"); }, /*twice=*/true);
  ASSERT_EQ(p.rc, 3) << p.err;
  EXPECT_EQ(json::parse(slurp(dir / "summary.json"))["status"], "interrupted");
}

// A run that fails before its end, or never starts, replaces what an earlier run left in its
// folder: its pass can never be read as this run's (summary.json, junit.xml, `lockstep report`).
TEST(RunFolder, AFailedRunNeverLeavesAnEarlierPassInItsFolder) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("reused-folder");
  const std::string elf = loop_elf(3).string();
  ASSERT_EQ(run({"run", elf, "--report", dir.string(), "--checkpoint-every", "50"}).rc, 0);
  ASSERT_EQ(json::parse(slurp(dir / "summary.json"))["status"], "exact");
  ASSERT_FALSE(list_checkpoints(dir / "checkpoints").empty());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", elf, "--chip", (dir / "no-such.chip").string(), "--report", dir.string()},
        std::vector<std::string>{"run", (dir / "no-such.elf").string(), "--report", dir.string()},
        std::vector<std::string>{"run", elf, "--mode", "sideways", "--report", dir.string()},
        // Refused by the command before it took the folder (found by an outside tester: these
        // left the earlier pass in place).
        std::vector<std::string>{"run", elf, "--report", dir.string(), "--dut-vocab", (dir / "v").string()},
        // Refused by the option parser, before the command ran (found by an outside tester:
        // these left the earlier pass in place).
        std::vector<std::string>{"run", elf, "--report", dir.string(), "--steps", "0"},
        std::vector<std::string>{"run", elf, "--report", dir.string(), "--no-such-flag"}}) {
    SCOPED_TRACE(args[1] + " " + args[2]);
    const Proc p = run(args);
    EXPECT_EQ(p.rc, 2) << p.err;
    const json s = json::parse(slurp(dir / "summary.json"));
    EXPECT_EQ(s["status"], "error") << s.dump();
    // The folder says why: the error line itself (found by an outside tester: it said "the run
    // did not finish" for a bad ELF).
    ASSERT_EQ(p.err.rfind("lockstep: error: ", 0), 0u) << p.err;
    std::string line = p.err.substr(std::string("lockstep: error: ").size());
    line = line.substr(0, line.find('\n'));
    EXPECT_EQ(s["error"], line) << s.dump();
    EXPECT_NE(slurp(dir / "junit.xml").find("<error"), std::string::npos);
    // Its JUnit case is the run's own, by the guest's name (the one given, else the earlier
    // run's): a CI's test history sees that test turn red (found by an outside tester: a refused
    // chip file and a refused option gave a case named "run").
    const std::string guest = fs::path(args[1]).stem().string();
    EXPECT_NE(slurp(dir / "junit.xml").find("name=\"" + guest + "\""), std::string::npos) << slurp(dir / "junit.xml");
    EXPECT_FALSE(fs::exists(dir / "checkpoints")) << "an earlier run's checkpoints are not this run's";
    EXPECT_FALSE(fs::exists(dir / "case.json")) << "nor is its case (replay would run the earlier run's)";
    EXPECT_EQ(run({"report", dir.string()}).rc, 2);
    // Nothing is lost: the command failed before its run began, so the earlier run's folder is
    // kept, whole, in DIR/earlier-run, and the folder and stderr say so (found in review: a typo
    // in an option deleted the checkpoints of an interrupted run it was given the folder of).
    const fs::path kept = dir / "earlier-run";
    EXPECT_EQ(json::parse(slurp(kept / "summary.json"))["status"], "exact");
    EXPECT_TRUE(fs::exists(kept / "case.json"));
    EXPECT_FALSE(list_checkpoints(kept / "checkpoints").empty());
    EXPECT_EQ(s["earlier_run"], kept.string()) << s.dump();
    EXPECT_NE(p.err.find("\nlockstep: note: the earlier run in " + dir.string() + " is kept, as it was, in " + kept.string()),
              std::string::npos)
        << p.err;
  }
  // The chip's own error is what the folder says.
  run({"run", elf, "--chip", (dir / "no-such.chip").string(), "--report", dir.string()});
  EXPECT_NE(json::parse(slurp(dir / "summary.json"))["error"].get<std::string>().find("no-such.chip"), std::string::npos);
  // The kept folder is a run folder: --resume DIR says where the run is, and continues it there.
  expect_one_error_line(run({"run", "--resume", dir.string()}), "its earlier run is kept in " + (dir / "earlier-run").string());
  const Proc resumed = run({"run", "--resume", (dir / "earlier-run").string()});
  EXPECT_EQ(resumed.rc, 0) << resumed.err;
  EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "summary.json"))["status"], "exact");
  // A new run that begins replaces the earlier one, as it always does.
  ASSERT_EQ(run({"run", elf, "--report", dir.string()}).rc, 0);
  EXPECT_EQ(json::parse(slurp(dir / "summary.json"))["status"], "exact");
  EXPECT_FALSE(fs::exists(dir / "earlier-run"));
  EXPECT_TRUE(fs::exists(dir / "case.json"));
}

// The earlier run stays until the new run's own verdict: a new run stopped before one keeps it
// (found by an outside tester: a Ctrl-C in a new run's first second deleted the earlier run's
// checkpoints), and a later failure moves the stopped run aside with the earlier one inside it.
TEST(RunFolder, TheEarlierRunStaysUntilTheNewRunsVerdict) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("earlier-until-verdict");
  const std::string short_elf = loop_elf(3).string(), long_elf = loop_elf(50'000'000).string();
  ASSERT_EQ(run({"run", short_elf, "--report", dir.string(), "--checkpoint-every", "50"}).rc, 0);
  const std::string first_digest = json::parse(slurp(dir / "summary.json"))["digest"];
  const Proc stopped = run_and_signal({"run", long_elf, "--report", dir.string(), "--checkpoint-every", "1000"}, SIGINT,
                                      std::chrono::milliseconds(0), false, written_anew(dir / "case.json"));
  ASSERT_EQ(stopped.rc, 3) << stopped.err;
  const json s = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["earlier_run"], (dir / "earlier-run").string()) << s.dump();
  EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "summary.json"))["digest"], first_digest);
  EXPECT_FALSE(list_checkpoints(dir / "earlier-run" / "checkpoints").empty());
  // A failed command now keeps both: the stopped run in earlier-run, the first inside it.
  const Proc failed = run({"run", (dir / "no-such.elf").string(), "--report", dir.string(), "--json"});
  EXPECT_EQ(failed.rc, 2) << failed.err;
  // --json's summary names the kept run as summary.json does (found by an outside tester: only
  // the file had it), and the moved run's summary names its own earlier run where it now is.
  EXPECT_EQ(json::parse(failed.out)["earlier_run"], (dir / "earlier-run").string()) << failed.out;
  EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "summary.json"))["status"], "interrupted");
  EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "summary.json"))["earlier_run"],
            (dir / "earlier-run" / "earlier-run").string());
  EXPECT_TRUE(fs::exists(dir / "earlier-run" / "case.json"));
  EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "earlier-run" / "summary.json"))["digest"], first_digest);
  // An earlier run another process holds (a `--resume DIR/earlier-run` running) makes the folder
  // in use: refused, untouched (found by the re-test: a new run was taken beside the resume).
  {
    const int fd = ::open((dir / "earlier-run" / ".lockstep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    const std::string before = slurp(dir / "summary.json");
    expect_one_error_line(run({"run", short_elf, "--report", dir.string()}),
                          "the run folder " + dir.string() + " keeps an earlier run in " + (dir / "earlier-run").string() +
                              ", which another lockstep run is using");
    EXPECT_EQ(slurp(dir / "summary.json"), before);
    EXPECT_TRUE(fs::exists(dir / "earlier-run" / "earlier-run" / "case.json"));
    ::close(fd);
  }
  // A move that a SIGKILL cut short between its renames (the older run left in
  // DIR/.earlier-run.moving): the next command puts it back, never removes it.
  fs::rename(dir / "earlier-run", dir / ".earlier-run.moving");
  EXPECT_EQ(run({"run", (dir / "no-such.elf").string(), "--report", dir.string()}).rc, 2);
  EXPECT_FALSE(fs::exists(dir / ".earlier-run.moving"));
  EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "earlier-run" / "summary.json"))["digest"], first_digest);
  // A new run's verdict replaces them all.
  ASSERT_EQ(run({"run", short_elf, "--report", dir.string()}).rc, 0);
  EXPECT_FALSE(fs::exists(dir / "earlier-run"));
  EXPECT_EQ(json::parse(slurp(dir / "summary.json"))["status"], "exact");
}

// A run stopped and started again, and again (not resumed), keeps two runs, not one a start: the
// one it replaces and the last one with a verdict (found by an outside tester: eight starts of a
// CI job that its timeout stopped nested eight runs, checkpoints and all).
TEST(RunFolder, ARunStoppedAndStartedAgainKeepsTwoRunsNotOneAStart) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("stopped-again");
  const std::string short_elf = loop_elf(3).string(), long_elf = loop_elf(50'000'000).string();
  ASSERT_EQ(run({"run", short_elf, "--report", dir.string(), "--checkpoint-every", "50"}).rc, 0);
  const std::string first_digest = json::parse(slurp(dir / "summary.json"))["digest"];
  for (int start = 1; start <= 3; ++start) {
    const Proc stopped = run_and_signal({"run", long_elf, "--report", dir.string(), "--checkpoint-every", "1000"}, SIGINT,
                                        std::chrono::milliseconds(0), false, written_anew(dir / "case.json"));
    ASSERT_EQ(stopped.rc, 3) << "start " << start << ": " << stopped.err;
    EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "summary.json"))["status"], start == 1 ? "exact" : "interrupted");
    if (start >= 2) {
      EXPECT_EQ(json::parse(slurp(dir / "earlier-run" / "earlier-run" / "summary.json"))["digest"], first_digest);
      EXPECT_FALSE(fs::exists(dir / "earlier-run" / "earlier-run" / "earlier-run")) << "start " << start;
      EXPECT_FALSE(list_checkpoints(dir / "earlier-run" / "checkpoints").empty());  // the run stopped last
    }
    // the third start removed the second's stopped run, and says so
    const std::string removed = "/earlier-run (interrupted, ";
    EXPECT_EQ(stopped.err.find(removed) != std::string::npos, start == 3) << stopped.err;
    if (start == 3) {
      EXPECT_NE(stopped.err.find("no verdict) is removed: a run folder keeps the run it replaces and the last one with "
                                 "a verdict; `--resume " + dir.string() + "` continues a stopped run instead of starting "
                                 "it again"),
                std::string::npos)
          << stopped.err;
    }
  }
}

// A campaign killed with SIGKILL (the out-of-memory killer, a lost node) keeps its whole batches:
// its fuzz.json, written after each, says how far it came and where the rest begins, and `fuzz
// --merge` takes it as a partial campaign (found by an outside tester: a campaign killed after 160
// of 300 programs left "programs 0" and no fuzz.json).
TEST(RunFolder, AKilledFuzzCampaignKeepsItsWholeBatches) {
  const fs::path dir = temp_dir("fuzz-killed"), merged = temp_dir("fuzz-killed-merged");
  const Proc killed = run_and_signal({"fuzz", "--seed", "7", "--programs", "100000", "--batch", "8", "--ops", "add",
                                      "--report", dir.string()},
                                     SIGKILL, std::chrono::milliseconds(0), false,
                                     [&] { return fs::exists(dir / "fuzz.json"); });
  ASSERT_EQ(killed.rc, 128 + SIGKILL) << killed.err;
  const json f = json::parse(slurp(dir / "fuzz.json"));
  const std::uint64_t programs = f["programs"];
  EXPECT_GT(programs, 0u) << f.dump(1);
  EXPECT_EQ(programs % 8, 0u) << f.dump(1);  // whole batches
  EXPECT_EQ(f["next"], programs) << f.dump(1);
  EXPECT_EQ(f["interrupted"], true);
  EXPECT_NE(f.value("unfinished", "").find("(the rest: --first " + std::to_string(programs) + " --programs " +
                                           std::to_string(100000 - programs) + ")"),
            std::string::npos)
      << f.dump(1);
  EXPECT_EQ(json::parse(slurp(dir / "summary.json"))["status"], "error");  // the run did not finish
  const Proc m = run({"fuzz", "--merge", dir.string(), "--report", merged.string()});
  EXPECT_EQ(m.rc, 3) << m.err;  // a partial campaign
  EXPECT_EQ(json::parse(slurp(merged / "fuzz.json"))["programs"], programs);
}

// A run folder that holds a user's file where a run keeps a folder (checkpoints, plots) or where
// it writes summary.json (a folder of that name): refused with one line, the user's file kept,
// and no half-written summary.json.tmp left behind (found by an outside tester: the file was
// replaced by a folder, and the .tmp was left).
TEST(RunFolder, AUsersFilesInTheFolderAreNeverReplaced) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const std::string elf = loop_elf(3).string();
  for (const char* name : {"checkpoints", "plots"}) {
    SCOPED_TRACE(name);
    const fs::path dir = temp_dir(std::string("users-") + name);
    fs::create_directories(dir);
    // an earlier run's folder, which a user put a file in
    std::ofstream(dir / "summary.json") << R"({"command": "run", "status": "exact"})";
    std::ofstream(dir / name) << "mine\n";
    expect_one_error_line(run({"run", elf, "--report", dir.string()}),
                          "the run folder " + dir.string() + " holds a file named '" + name + "' where a run keeps its " +
                              name + " folder; move it, or give another --report folder");
    EXPECT_EQ(slurp(dir / name), "mine\n");
  }
  const fs::path dir = temp_dir("users-summary");
  fs::create_directories(dir / "summary.json");
  const Proc p = run({"run", elf, "--report", dir.string()});
  expect_one_error_line(p, "summary.json");
  EXPECT_TRUE(fs::is_directory(dir / "summary.json"));
  EXPECT_FALSE(fs::exists(dir / "summary.json.tmp")) << p.err;
}

// A folder of someone else's files is never made a run folder (found by an outside tester: `run
// --report .` in a project folder deleted its checkpoints/ and plots/): refused with one line and
// nothing in it touched, by run and by replay. A new, an empty or an earlier run's folder is taken.
TEST(RunFolder, AFolderOfOtherFilesIsRefusedNotCleared) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const std::string elf = loop_elf(3).string();
  const fs::path dir = temp_dir("project");
  fs::create_directories(dir / "checkpoints");
  fs::create_directories(dir / "plots");
  std::ofstream(dir / "checkpoints" / "model-epoch3.pt") << "weights\n";
  std::ofstream(dir / "plots" / "fig1.svg") << "<svg/>\n";
  std::ofstream(dir / "main.c") << "int main;\n";
  const std::string says = "--report " + dir.string() +
                           ": the folder holds files and is not a lockstep run folder (no readable summary.json of an earlier run)";
  expect_one_error_line(run({"run", elf, "--report", dir.string()}), says);
  const fs::path runs = temp_dir("project-run");
  ASSERT_EQ(run({"run", elf, "--report", runs.string()}).rc, 0);
  expect_one_error_line(run({"replay", runs.string(), "--report", dir.string()}), says);
  EXPECT_EQ(slurp(dir / "checkpoints" / "model-epoch3.pt"), "weights\n");
  EXPECT_EQ(slurp(dir / "plots" / "fig1.svg"), "<svg/>\n");
  EXPECT_EQ(slurp(dir / "main.c"), "int main;\n");
  EXPECT_FALSE(fs::exists(dir / "summary.json"));
  EXPECT_FALSE(fs::exists(dir / ".lockstep.lock"));
  // A failed --resume of it leaves no lock file that would make it look like a run's folder, and
  // another tool's summary.json with a "command" is not a run's (found by the re-test: either let
  // the next run delete the folder's checkpoints/ and plots/).
  EXPECT_EQ(run({"run", "--resume", dir.string()}).rc, 2);
  EXPECT_FALSE(fs::exists(dir / ".lockstep.lock"));
  std::ofstream(dir / "summary.json") << R"({"command": "pytest -k foo", "status": "ok"})";
  expect_one_error_line(run({"run", elf, "--report", dir.string()}), says);
  // fuzz --merge takes its folder as every run does
  const fs::path shard = temp_dir("project-shard");
  ASSERT_EQ(run({"fuzz", "--programs", "1", "--report", shard.string()}).rc, 0);
  expect_one_error_line(run({"fuzz", "--merge", shard.string(), "--report", dir.string()}), says);
  EXPECT_EQ(slurp(dir / "checkpoints" / "model-epoch3.pt"), "weights\n");
  EXPECT_EQ(slurp(dir / "plots" / "fig1.svg"), "<svg/>\n");
  EXPECT_EQ(slurp(dir / "summary.json"), R"({"command": "pytest -k foo", "status": "ok"})");
  // An empty folder, or one with only a repository's placeholder, is taken, and once it is a run
  // folder, taken again.
  const fs::path empty = temp_dir("project-empty");
  fs::create_directories(empty);
  std::ofstream(empty / ".gitkeep") << "";
  EXPECT_EQ(run({"run", elf, "--report", empty.string()}).rc, 0);
  EXPECT_EQ(run({"run", elf, "--report", empty.string()}).rc, 0);
  EXPECT_TRUE(fs::exists(empty / ".gitkeep"));
}

// Two runs into one folder: the second is refused while the first holds it (never two writers of
// one summary, case or checkpoints), and may take it once the first has ended.
TEST(RunFolder, ARunFolderInUseIsRefused) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("folder-in-use");
  const fs::path elf = loop_elf(50'000'000);
  const pid_t first = spawn({"run", elf.string(), "--report", dir.string()}, dir.parent_path() / "in-use.out",
                            dir.parent_path() / "in-use.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(dir / "case.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const Proc second = run({"run", loop_elf(3).string(), "--report", dir.string()});
  // nor does `report` render it while the run holds it (found by an outside tester)
  const Proc render = run({"report", dir.string()});
  const Proc resume = run({"run", "--resume", dir.string()});
  kill(first, SIGINT);
  int status = 0;
  waitpid(first, &status, 0);
  expect_one_error_line(second, "the run folder " + dir.string() + " is in use by another lockstep run (pid " +
                                    std::to_string(first) + ")");
  expect_one_error_line(render, "report: the run folder " + dir.string() + " is in use by another lockstep run (pid " +
                                    std::to_string(first) + ")");
  expect_one_error_line(resume, "the run folder " + dir.string() + " is in use by another lockstep run (pid " +
                                    std::to_string(first) + ")");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
  EXPECT_EQ(json::parse(slurp(dir / "summary.json"))["status"], "interrupted");  // the first run's own
  EXPECT_EQ(run({"run", loop_elf(3).string(), "--report", dir.string()}).rc, 0);
}

// Item 3: SIGINT or SIGTERM to a running check: status "interrupted" and exit 3 everywhere:
// --json stdout, summary.json, JUnit (an error, never green), the HTML page, one stderr line.
TEST(Interruption, OneStatusAndExitCodeInEveryPlace) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(50'000'000);
  // (SIGHUP, a closed terminal, as SIGTERM: found by an outside tester, it killed the run unreported)
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const fs::path dir = temp_dir(std::string("interrupted-") + (sig == SIGINT ? "int" : sig == SIGTERM ? "term" : "hup"));
    // SIGINT ignored on entry, as `lockstep run ... --json &` in a script has it.
    // Signalled 1 s after the run started (its case.json is written just before the engine starts).
    std::optional<std::chrono::steady_clock::time_point> started;
    const Proc p = run_and_signal({"run", elf.string(), "--report", dir.string(), "--json"}, sig,
                                  std::chrono::milliseconds(0), true, [&] {
                                    if (!started && fs::exists(dir / "case.json")) started = std::chrono::steady_clock::now();
                                    return started && std::chrono::steady_clock::now() - *started > std::chrono::seconds(1);
                                  });
    ASSERT_EQ(p.rc, 3) << p.err;
    const json j = json::parse(p.out);
    EXPECT_EQ(j["status"], "interrupted");
    EXPECT_GT(j["steps"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(last_line(p.err).rfind("lockstep: interrupted: after " + j["steps"].dump() + " steps", 0), 0u) << p.err;
    // No --checkpoint-every: nothing to resume from, so no "continue with: lockstep run --resume".
    EXPECT_EQ(p.err.find("--resume"), std::string::npos) << p.err;
    const json s = json::parse(slurp(dir / "summary.json"));
    EXPECT_EQ(s["status"], "interrupted");
    EXPECT_EQ(s["steps"], j["steps"]);
    const std::string junit = slurp(dir / "junit.xml");
    EXPECT_NE(junit.find("errors=\"1\""), std::string::npos) << junit;
    EXPECT_NE(junit.find("<error message=\"interrupted after"), std::string::npos) << junit;
    EXPECT_NE(slurp(dir / "report.html").find("<span class=\"interrupted\">interrupted</span>"), std::string::npos);
  }
  // A signal during the chip's loading, right after the handler is in place: the same answer.
  const Proc early = run_and_signal({"run", elf.string(), "--json"}, SIGINT, std::chrono::milliseconds(0));
  ASSERT_EQ(early.rc, 3) << early.err;
  EXPECT_EQ(json::parse(early.out)["status"], "interrupted");
  // The reference alone.
  const Proc r = run_and_signal({"ref", elf.string(), "--json"}, SIGINT, std::chrono::milliseconds(300));
  ASSERT_EQ(r.rc, 3) << r.err;
  const json rj = json::parse(r.out);
  EXPECT_EQ(rj["status"], "interrupted");
  EXPECT_EQ(rj["end"], "interrupted");
  EXPECT_GT(rj["steps"].get<std::uint64_t>(), 0u);
  // A fuzz campaign: summary.json and JUnit must not read as a pass.
  const fs::path fdir = temp_dir("interrupted-fuzz");
  const Proc f = run_and_signal({"fuzz", "--seed", "27", "--programs", "1000000", "--mode", "forced", "--no-shrink",
                                 "--report", fdir.string(), "--json"},
                                SIGINT, std::chrono::milliseconds(0), false, [&] {
                                  const std::string t = slurp(fdir / "programs.tsv");
                                  return std::count(t.begin(), t.end(), '\n') > 1;
                                });
  ASSERT_EQ(f.rc, 3) << f.err;
  EXPECT_EQ(json::parse(f.out)["status"], "interrupted");
  const json fs_ = json::parse(slurp(fdir / "summary.json"));
  EXPECT_EQ(fs_["status"], "interrupted");
  EXPECT_NE(slurp(fdir / "junit.xml").find("errors=\"1\""), std::string::npos) << slurp(fdir / "junit.xml");
}

// Item 6: `report` answers with the run's verdict; an empty summary is called empty; the HTML
// page folds the raw JSON, shows the replay command and draws no plot of a single point.
TEST(ReportCommand, VerdictEmptySummaryAndPage) {
  const fs::path dir = temp_dir("report-verdict");
  std::ofstream(dir / "summary.json") << json{{"status", "mismatch"}, {"command", "run"}, {"steps", 42},
                                              {"mismatches", 1}, {"digest", "00000000000000aa"},
                                              {"replay", "lockstep replay " + dir.string()}}
                                             .dump();
  const Proc p = run({"report", dir.string(), "--json"});
  EXPECT_EQ(p.rc, 1) << p.err;
  const json j = json::parse(p.out);
  EXPECT_EQ(j["status"], "mismatch");
  EXPECT_EQ(j["steps"], 42);
  EXPECT_EQ(j["mismatches"], 1);
  const std::string html = slurp(dir / "report.html");
  EXPECT_NE(html.find("<details><summary>Summary JSON"), std::string::npos);
  EXPECT_NE(html.find("lockstep replay " + dir.string()), std::string::npos);
  EXPECT_EQ(html.find("<h2>Plots</h2>"), std::string::npos) << "nothing here is worth a plot";
  // An interrupted run's folder: exit 3 and the one line every interrupted command gives (found
  // by an outside tester: no such line)
  std::ofstream(dir / "summary.json", std::ios::trunc)
      << json{{"status", "interrupted"}, {"command", "run"}, {"steps", 42}, {"mismatches", 0}}.dump();
  const Proc stopped = run({"report", dir.string(), "--json"});
  EXPECT_EQ(stopped.rc, 3) << stopped.err;
  EXPECT_NE(stopped.err.find("lockstep: interrupted: the run in " + dir.string() + " was interrupted after 42 steps\n"),
            std::string::npos)
      << stopped.err;
  EXPECT_EQ(json::parse(stopped.out)["interrupted"], true);
  std::ofstream(dir / "summary.json", std::ios::trunc).close();
  expect_one_error_line(run({"report", dir.string()}), (dir / "summary.json").string() + " is empty (0 bytes)");
}

// Item 6: a short run's page (no one-point plots, gnuplot never complains), the replay command
// on stderr at a mismatch, story's steps/s, and story --reference-only's steps.
TEST(RunCommand, ShortRunPageAndStoryFigures) {
  const fs::path elf = loop_elf(30);
  const Proc ro = run({"story", "--guest", elf.string(), "--reference-only", "--json"});
  ASSERT_EQ(ro.rc, 0) << ro.err;
  const json r = json::parse(ro.out);
  EXPECT_EQ(r["steps"], r["reference_steps"]);
  EXPECT_GT(r["steps"].get<std::uint64_t>(), 0u);
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  // (10 teacher-forced steps: the loop guest is shorter than the default 30,000)
  const Proc st = run({"story", "--guest", elf.string(), "--teacher-forced-steps", "10"});
  ASSERT_TRUE(st.rc == 0 || st.rc == 1) << st.err;
  EXPECT_NE(st.out.find(" steps/s\n"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("tokens/s"), std::string::npos) << st.out;
  const fs::path dir = temp_dir("short-page");
  const Proc p = run({"run", elf.string(), "--report", dir.string()});
  ASSERT_TRUE(p.rc == 0 || p.rc == 1) << p.err;
  EXPECT_EQ(p.err.find("plot"), std::string::npos) << p.err;
  // One throughput sample and one stream: no throughput or divergence plot; the steps per
  // class (several classes) stay. gnuplot has nothing to complain about ("empty x range").
  EXPECT_EQ(slurp(dir / "plots" / "gnuplot.log"), "");
  EXPECT_FALSE(fs::exists(dir / "plots" / "throughput.svg"));
  EXPECT_FALSE(fs::exists(dir / "plots" / "divergence.svg"));
  const std::string html = slurp(dir / "report.html");
  EXPECT_EQ(html.find("Throughput over the run"), std::string::npos);
  EXPECT_EQ(html.find("Where divergences happened"), std::string::npos);
  EXPECT_NE(html.find("<th>replay</th><td>lockstep replay " + dir.string() + "</td>"), std::string::npos);
  EXPECT_EQ(json::parse(slurp(dir / "summary.json"))["replay"], "lockstep replay " + dir.string());
}

// story --steps N below the story's length compares a prefix: exit 0 when it agrees, but its last
// line says it is a partial check and the summary's story_complete is false; the whole story
// says nothing of the kind and story_complete is true.
// A step limit equal to the guest's length compares the whole guest, which ended within it: end
// "exit"; one step fewer cuts its last instruction: "step_limit", in the engine and in the
// story's reference run alike (found by an outside tester: both were off by one step).
TEST(RunCommand, AStepLimitAtTheGuestsLastStepIsItsEnd) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(5);
  const Proc whole = run({"run", elf.string(), "--json"});
  ASSERT_EQ(whole.rc, 0) << whole.err;
  const std::uint64_t n = json::parse(whole.out)["steps"];
  const json at = json::parse(run({"run", elf.string(), "--steps", std::to_string(n), "--json"}).out);
  EXPECT_EQ(at["end"], "exit") << at.dump();
  EXPECT_EQ(at["digest"], json::parse(whole.out)["digest"]);
  const json before = json::parse(run({"run", elf.string(), "--steps", std::to_string(n - 1), "--json"}).out);
  EXPECT_EQ(before["end"], "step_limit") << before.dump();
  const json ref_before =
      json::parse(run({"story", "--guest", elf.string(), "--reference-only", "--steps", std::to_string(n - 1), "--json"}).out);
  EXPECT_EQ(ref_before["reference_end"], "step_limit") << ref_before.dump();
  const json ref_at =
      json::parse(run({"story", "--guest", elf.string(), "--reference-only", "--steps", std::to_string(n), "--json"}).out);
  EXPECT_EQ(ref_at["reference_end"], "exit") << ref_at.dump();
}

// summary.json has the facts --json gives at its top level, under the same names and with the same
// values, for run and story alike (found by an outside tester: a dashboard reading summary.json
// found no guest, backend or mode); a story that fails with an error still says story_complete
// false, so that a gate on it never reads a missing field.
TEST(RunCommand, SummaryJsonHasTheFactsOfJsonStdout) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(30);
  const fs::path dir = temp_dir("summary-facts");
  for (const std::string cmd : {"run", "story"}) {
    std::vector<std::string> args = {cmd};
    if (cmd == "story") args.push_back("--guest");
    args.insert(args.end(), {elf.string(), "--steps", "20", "--json", "--report", (dir / cmd).string()});
    const Proc p = run(args);
    ASSERT_EQ(p.rc, 0) << p.err;
    const json out = json::parse(p.out), saved = json::parse(slurp(dir / cmd / "summary.json"));
    for (const char* k : {"status", "command", "guest", "backend", "mode", "end", "steps", "mismatches", "digest", "chip",
                          "chip_hash", "steps_per_second"}) {
      ASSERT_TRUE(out.contains(k)) << cmd << " --json lacks " << k << ": " << p.out;
      ASSERT_TRUE(saved.contains(k)) << cmd << " summary.json lacks " << k << ": " << saved.dump();
      EXPECT_EQ(saved[k], out[k]) << cmd << " " << k;
    }
    EXPECT_EQ(out["guest"], elf.string());
    EXPECT_EQ(out["end"], "step_limit");
    EXPECT_EQ(out["backend"], "cpu");
    if (cmd == "run") {  // its replay's --json says the same
      const Proc rp = run({"replay", (dir / cmd).string(), "--json"});
      ASSERT_EQ(rp.rc, 0) << rp.err;
      const json r = json::parse(rp.out);
      for (const char* k : {"mode", "backend", "end", "chip", "chip_hash", "digest", "steps"})
        EXPECT_EQ(r[k], out[k]) << "replay " << k << ": " << rp.out;
    }
  }
  const Proc bad = run({"story", "--guest", elf.string(), "--chip", (dir / "no-such.chip").string(), "--json"});
  EXPECT_EQ(bad.rc, 2) << bad.err;
  EXPECT_EQ(json::parse(bad.out)["story_complete"], false) << bad.out;
}

// A run that fails before its report (here its ELF cannot be read; a killed run leaves the same
// placeholder) has the JUnit names its passing run has, so that a CI's test history shows that
// test failing, not a new test "run" (found by an outside tester).
TEST(RunCommand, AFailedRunKeepsItsTestNames) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("failed-names");
  const fs::path elf = loop_elf(30), gone = dir / "loop.elf";
  fs::copy_file(elf, gone);
  const Proc ok = run({"run", gone.string(), "--steps", "20", "--mode", "free", "--report", (dir / "r").string()});
  ASSERT_EQ(ok.rc, 0) << ok.err;
  auto names = [](const std::string& x) {  // the suite's name, the case's classname and name
    std::string out;
    for (const char* k : {"<testsuite name=\"", "<testcase classname=\"", "\" name=\""}) {
      const auto at = x.find(k, x.find("<testsuite "));
      if (at == std::string::npos) return std::string("?");
      const auto from = at + std::string(k).size();
      out += x.substr(from, x.find('"', from) - from) + "|";
    }
    return out;
  };
  const std::string passing = slurp(dir / "r" / "junit.xml");
  fs::remove(gone);
  const Proc bad = run({"run", gone.string(), "--steps", "20", "--mode", "free", "--json", "--report", (dir / "r").string()});
  ASSERT_EQ(bad.rc, 2) << bad.err;
  // --json names the guest and mode too, as the folder's summary does
  EXPECT_EQ(json::parse(bad.out)["guest"], gone.string()) << bad.out;
  EXPECT_EQ(json::parse(bad.out)["mode"], "free") << bad.out;
  const std::string failed = slurp(dir / "r" / "junit.xml");
  EXPECT_EQ(names(failed), names(passing)) << failed;
  EXPECT_NE(failed.find("name=\"loop (first 20 steps)\""), std::string::npos) << failed;
  EXPECT_NE(failed.find("<error message=\"the run failed after 0 steps, before this guest&#39;s end: "), std::string::npos)
      << failed;
  EXPECT_EQ(json::parse(slurp(dir / "r" / "summary.json"))["status"], "error");
}

TEST(RunCommand, StoryPrefixIsCalledAPartialCheck) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(30);
  const fs::path dir = temp_dir("story-prefix");
  const Proc part = run({"story", "--guest", elf.string(), "--steps", "20", "--json", "--report", (dir / "part").string()});
  ASSERT_EQ(part.rc, 0) << part.err;
  EXPECT_EQ(json::parse(part.out)["story_complete"], false) << part.out;
  EXPECT_EQ(json::parse(part.out)["steps"], 20) << part.out;
  // The saved report says the same (found by an outside tester: summary.json lacked it).
  const json saved = json::parse(slurp(dir / "part" / "summary.json"));
  EXPECT_EQ(saved["story_complete"], false) << saved.dump();
  EXPECT_EQ(saved["reference_end"], "step_limit") << saved.dump();
  // and so do the JUnit file and the page a CI dashboard shows (an outside tester found them all
  // green with nothing to say it was a prefix)
  const std::string junit = slurp(dir / "part" / "junit.xml");
  EXPECT_NE(junit.find(" (first 20 steps)\""), std::string::npos) << junit;  // the name: the command's scope
  EXPECT_NE(junit.find("partial check: 20 steps, not the whole story"), std::string::npos) << junit;
  const std::string page = slurp(dir / "part" / "report.html");
  EXPECT_NE(page.find("</span> (partial check)</h1>"), std::string::npos) << page.substr(0, 2000);
  const Proc text = run({"story", "--guest", elf.string(), "--steps", "20"});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("story: 20 steps compared, 0 mismatches"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the story had not ended: stopped at the step limit (--steps), a partial check\n"),
            std::string::npos)
      << text.out;
  // (the loop guest is shorter than the default 30,000 teacher-forced steps: 10 here, then free)
  const Proc whole = run({"story", "--guest", elf.string(), "--teacher-forced-steps", "10", "--json", "--report",
                          (dir / "whole").string()});
  ASSERT_EQ(whole.rc, 0) << whole.err;
  EXPECT_EQ(json::parse(whole.out)["story_complete"], true) << whole.out;
  EXPECT_EQ(json::parse(slurp(dir / "whole" / "summary.json"))["story_complete"], true);
  EXPECT_EQ(slurp(dir / "whole" / "junit.xml").find("partial check"), std::string::npos);
  EXPECT_EQ(slurp(dir / "whole" / "report.html").find("partial check"), std::string::npos);
  EXPECT_GT(json::parse(whole.out)["steps"].get<std::uint64_t>(), 20u) << whole.out;
  const Proc whole_text = run({"story", "--guest", elf.string(), "--teacher-forced-steps", "10"});
  EXPECT_EQ(whole_text.out.find("partial check"), std::string::npos) << whole_text.out;
  // Every step teacher-forced: the whole story compared, but not the story check (teacher-forced,
  // then free-running), so not story_complete (found by an outside tester: it read true)
  const Proc forced = run({"story", "--guest", elf.string(), "--teacher-forced-steps", "100000", "--json", "--report",
                           (dir / "forced").string()});
  ASSERT_EQ(forced.rc, 0) << forced.err;
  EXPECT_EQ(json::parse(forced.out)["story_complete"], false) << forced.out;
  EXPECT_EQ(json::parse(forced.out)["free_running_steps"], 0) << forced.out;
  EXPECT_NE(slurp(dir / "forced" / "junit.xml").find("teacher-forced only: no free-running step, not the story check"),
            std::string::npos);
  const Proc forced_text = run({"story", "--guest", elf.string(), "--teacher-forced-steps", "100000"});
  EXPECT_NE(forced_text.out.find("; every step teacher-forced (--teacher-forced-steps), none free-running: not the story check\n"),
            std::string::npos)
      << forced_text.out;
}

// The built chip with OUT('i') made unreachable (its unembedding bias far below every other
// token's): the loop guest, which prints "hi\n", diverges at its second output byte.
fs::path chip_that_cannot_print_i() {
  static fs::path path;
  if (!path.empty()) return path;
  chip::Chip c = *load_chip_or_built("").chip;
  c.unembed.bias.at(format::token_id(format::Kind::OUT, 'i')) -= 1e6f;
  path = temp_dir("broken-chip") / "no-i.chip";
  chip::save_chip(c, path.string());
  return path;
}

// A chip file whose vocabulary cannot hold every trace token is refused at load, by name, in
// both modes (before: forced mode failed at step 0 with the executor's "token outside
// vocabulary", free mode reported a mismatch).
TEST(RunCommand, AChipWithTooSmallAVocabularyIsRefusedAtLoad) {
  chip::Chip c;
  c.config.d_model = 1;
  c.config.vocab_size = 2;
  c.embed.w = {1, 2, {0, 0, 0}, {}, {}};
  c.embed.bias = {0.0f};
  c.unembed.w = {2, 1, {0, 0}, {}, {}};
  c.unembed.bias = {0.0f, 0.0f};
  const fs::path path = temp_dir("small-vocab") / "two-tokens.chip";
  chip::save_chip(c, path.string());
  const fs::path elf = loop_elf(5);
  for (const char* mode : {"forced", "free"}) {
    SCOPED_TRACE(mode);
    const Proc p = run({"run", elf.string(), "--mode", mode, "--chip", path.string()});
    EXPECT_EQ(p.rc, 2) << p.err;
    EXPECT_EQ(last_line(p.err), "lockstep: error: --chip " + path.string() +
                                    ": vocab_size 2 is below trace-v3's 20736 (a chip file takes the trace's token "
                                    "ids, trace.md \u00a72)")
        << p.err;
  }
}

// Item 9: what the guest printed on the chip, live on stdout and in --json; and at a divergence
// one line saying where the chip's output stopped matching, and the replay command.
TEST(RunCommand, ShowsWhatTheGuestPrintedOnTheChip) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(30);
  const Proc p = run({"run", elf.string(), "--mode", "free"});
  ASSERT_EQ(p.rc, 0) << p.err;
  EXPECT_EQ(p.out.rfind("hi\n", 0), 0u) << p.out;
  const Proc j = run({"run", elf.string(), "--mode", "free", "--json"});
  ASSERT_EQ(j.rc, 0) << j.err;
  const json s = json::parse(j.out);
  EXPECT_EQ(s["stdout"], "hi\n");
  EXPECT_EQ(s["stderr"], "");
  EXPECT_FALSE(s.contains("output_stopped_matching"));

  const fs::path chip = chip_that_cannot_print_i();
  const fs::path dir = temp_dir("output-diverged");
  const Proc b = run({"run", elf.string(), "--mode", "free", "--chip", chip.string(), "--json", "--report", dir.string(),
                      "--classify-window", "16"});
  ASSERT_EQ(b.rc, 1) << b.err;
  const json bs = json::parse(b.out);
  EXPECT_EQ(bs["stdout"], "h");
  const std::string line = bs["output_stopped_matching"];
  EXPECT_EQ(line.rfind("the chip's output matched the reference's for 1 bytes on fd 1 and 0 on fd 2, up to step " +
                           bs["divergence"]["step"].dump() + ", where the reference printed byte 2 on fd 1 (OUT(0x69)",
                       0),
            0u)
      << line;
  EXPECT_NE(b.err.find("lockstep: " + line + "\n"), std::string::npos) << b.err;
  // The command to paste names the executable as it was invoked (here by its path).
  EXPECT_NE(b.err.find("lockstep: replay it: " + std::string(LOCKSTEP_EXE) + " replay " + dir.string() + "\n"),
            std::string::npos)
      << b.err;
}

// Item 8: resume says where it resumed from and which corrupt checkpoint it skipped, refuses
// --steps, and a refused resume leaves the folder's summary.json as it was.
TEST(RunCommand, ResumeSaysWhatItDidAndARefusalKeepsTheSummary) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(1000);
  const fs::path dir = temp_dir("resume-notes");
  const Proc full = run({"run", elf.string(), "--report", dir.string(), "--checkpoint-every", "500", "--json"});
  ASSERT_TRUE(full.rc == 0 || full.rc == 1) << full.err;
  const json fj = json::parse(full.out);
  const std::vector<std::uint64_t> cps = list_checkpoints(dir / "checkpoints");
  ASSERT_GE(cps.size(), 2u);
  expect_one_error_line(run({"run", "--resume", dir.string(), "--steps", "5"}),
                        "--steps cannot be given with --resume: the run continues as " + (dir / "case.json").string());
  // The newest checkpoint truncated: skipped, with a line saying so; resumed from the one before.
  char name[32];
  std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(cps.back()));
  fs::resize_file(dir / "checkpoints" / name, 100);
  const Proc r = run({"run", "--resume", dir.string(), "--json"});
  ASSERT_EQ(r.rc, full.rc) << r.err;
  EXPECT_NE(r.err.find("lockstep: skipped checkpoint " + std::string(name) + " (step " + std::to_string(cps.back()) + "): "),
            std::string::npos)
      << r.err;
  std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(cps[cps.size() - 2]));
  EXPECT_NE(r.err.find("lockstep: resumed from step " + std::to_string(cps[cps.size() - 2]) + " (" + name + ")"),
            std::string::npos)
      << r.err;
  const json rj = json::parse(r.out);
  EXPECT_EQ(rj["resumed_from"], cps[cps.size() - 2]);
  EXPECT_EQ(rj["digest"], fj["digest"]);
  EXPECT_EQ(rj["skipped_checkpoints"].size(), 1u);
  // Every checkpoint unreadable: refused, and the good summary stays.
  const std::string summary = slurp(dir / "summary.json");
  for (const auto& e : fs::directory_iterator(dir / "checkpoints")) fs::resize_file(e.path(), 10);
  const Proc refused = run({"run", "--resume", dir.string()});
  expect_one_error_line(refused, "no readable checkpoint");
  EXPECT_EQ(slurp(dir / "summary.json"), summary);
}

// A checkpoint damaged on disk where it still decompresses (16 bytes overwritten in the middle):
// its zstd content checksum refuses it, so the resume skips it, never reading the damage as the
// chip's state (found by an outside tester: the resumed story reported a mismatch, exit 1).
TEST(RunCommand, ADamagedCheckpointIsSkippedNotResumedFrom) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(1000);
  const fs::path dir = temp_dir("resume-damaged");
  const Proc full = run({"run", elf.string(), "--report", dir.string(), "--checkpoint-every", "500", "--json"});
  ASSERT_EQ(full.rc, 0) << full.err;
  const std::vector<std::uint64_t> cps = list_checkpoints(dir / "checkpoints");
  ASSERT_GE(cps.size(), 2u);
  char name[32];
  std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(cps.back()));
  const fs::path newest = dir / "checkpoints" / name;
  {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(newest) / 2));
    f.write("\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef", 16);
  }
  const Proc r = run({"run", "--resume", dir.string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("lockstep: skipped checkpoint " + std::string(name)), std::string::npos) << r.err;
  const json rj = json::parse(r.out);
  EXPECT_EQ(rj["resumed_from"], cps[cps.size() - 2]);
  EXPECT_EQ(rj["digest"], json::parse(full.out)["digest"]);
}

// A checkpoint of a vector guest carries the reference's vector unit (VR, ACT, WMEM, caches):
// resumed from each of its checkpoints in turn, vector_ops gives the uninterrupted run's digest
// (LSENGCK3 lost the vector unit, and a resume then diverged at the first vector read).
TEST(RunCommand, AVectorGuestResumesExactlyFromEveryCheckpoint) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  fs::path elf;
  for (const fs::path& d : {fs::path(LOCKSTEP_BINARY_DIR) / "guests", fs::path(LOCKSTEP_SOURCE_DIR) / "build" / "guests"})
    if (elf.empty() && fs::exists(d / "vector_ops.elf")) elf = d / "vector_ops.elf";
  if (elf.empty()) GTEST_SKIP() << "vector_ops.elf not built (no RISC-V toolchain)";
  const fs::path dir = temp_dir("resume-vector");
  const Proc full = run({"run", elf.string(), "--mode", "free", "--report", dir.string(), "--checkpoint-every", "1000", "--json"});
  ASSERT_EQ(full.rc, 0) << full.err;
  const json fj = json::parse(full.out);
  std::vector<std::uint64_t> cps = list_checkpoints(dir / "checkpoints");
  ASSERT_GE(cps.size(), 3u) << "vector_ops should run past 3,000 steps";
  for (auto target = cps.rbegin(); target != cps.rend(); ++target) {
    // A resumed run writes its later checkpoints again: keep only those up to the target.
    for (std::uint64_t c : list_checkpoints(dir / "checkpoints")) {
      char name[32];
      std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(c));
      if (c > *target) fs::remove(dir / "checkpoints" / name);
    }
    const Proc r = run({"run", "--resume", dir.string(), "--json"});
    ASSERT_EQ(r.rc, 0) << "resumed from step " << *target << ": " << r.err;
    const json rj = json::parse(r.out);
    EXPECT_EQ(rj["resumed_from"], *target);
    EXPECT_EQ(rj["steps"], fj["steps"]);
    EXPECT_EQ(rj["digest"], fj["digest"]) << "resumed from step " << *target;
  }
}

// A resumed run's output is the whole guest's, also what it printed before the checkpoint: in
// --json's "stdout" and on stdout (found by an outside tester: only the text after the checkpoint).
TEST(RunCommand, AResumedRunShowsTheOutputFromBeforeItsCheckpoint) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli" / "chatty.elf";
  fs::create_directories(elf.parent_path());
  format::write_elf_file(elf, testing::make_chatty_loop_guest(100).image);
  const fs::path dir = temp_dir("resume-output");
  const Proc full = run({"run", elf.string(), "--mode", "free", "--report", dir.string(), "--checkpoint-every", "100", "--json"});
  ASSERT_EQ(full.rc, 0) << full.err;
  const json fj = json::parse(full.out);
  ASSERT_EQ(fj["stdout"], "hi\nhi\n");
  // Resumed from the first checkpoint: the first "hi\n" was printed before it.
  const std::vector<std::uint64_t> cps = list_checkpoints(dir / "checkpoints");
  ASSERT_GE(cps.size(), 2u);
  for (std::uint64_t c : cps) {
    char name[32];
    std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(c));
    if (c != cps.front()) fs::remove(dir / "checkpoints" / name);
  }
  const Proc r = run({"run", "--resume", dir.string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json rj = json::parse(r.out);
  EXPECT_EQ(rj["resumed_from"], cps.front());
  EXPECT_EQ(rj["stdout"], fj["stdout"]);
  EXPECT_EQ(rj["stdout_bytes"], 6);
  EXPECT_EQ(rj["digest"], fj["digest"]);
  const Proc t = run({"run", "--resume", dir.string()});
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_EQ(t.out.rfind("hi\nhi\n", 0), 0u) << t.out;
}

// Item 7: on a narrow terminal the live progress line is cut to its width: every refresh fits.
TEST(RunCommand, ProgressLineFitsANarrowTerminal) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(50'000'000);
  struct winsize ws{};
  ws.ws_col = 30;
  ws.ws_row = 24;
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("TERM", "xterm", 1);
    unsetenv("COLUMNS");
    std::string exe = LOCKSTEP_EXE, a1 = "run", a2 = elf.string(), a3 = "--steps", a4 = "100000000";
    char* argv[] = {exe.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
    execv(exe.c_str(), argv);
    _exit(127);
  }
  std::string screen;
  // Until three refreshes were shown (the chip loads first), at most 60 s.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  fcntl(master, F_SETFL, O_NONBLOCK);
  char buf[4096];
  auto refreshes = [&screen] {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = screen.find("\r\033[Kstep", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  while (std::chrono::steady_clock::now() < until && refreshes() < 3) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) screen.append(buf, static_cast<std::size_t>(n));
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  std::size_t lines = 0, at = 0;
  const std::string clear = "\r\033[K";
  while ((at = screen.find(clear, at)) != std::string::npos) {
    at += clear.size();
    const std::size_t end = std::min(screen.find('\r', at), screen.find('\n', at));
    const std::string shown = screen.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (shown.empty()) continue;
    ++lines;
    EXPECT_LE(shown.size(), 29u) << "'" << shown << "'";
    EXPECT_EQ(shown.rfind("step ", 0), 0u) << "'" << shown << "'";
  }
  EXPECT_GE(lines, 2u) << screen;
}

// Item 10: file errors name the file and say what was wrong, never the C++ library's words.
TEST(FileErrors, NameTheFileAndTheReason) {
  const fs::path dir = temp_dir("file-errors");
  fs::create_directories(dir / "summary.json");
  expect_one_error_line(run({"report", dir.string()}), (dir / "summary.json").string() + ": it is a directory, not a file");
  fs::create_directories(dir / "case.json");
  expect_one_error_line(run({"replay", dir.string()}), "cannot read " + (dir / "case.json").string() + ": it is a directory");
  fs::create_directories(dir / "m" / "fuzz.json");
  expect_one_error_line(run({"fuzz", "--merge", (dir / "m").string()}),
                        "cannot read " + (dir / "m" / "fuzz.json").string() + ": it is a directory");
  // A folder where a guest or chip file is expected (ELF, trace and chip readers alike).
  const std::string elf = loop_elf(5).string();
  expect_one_error_line(run({"ref", dir.string()}), "ELF: cannot read " + dir.string() + ": it is a directory, not a file");
  expect_one_error_line(run({"run", dir.string()}), "ELF: cannot read " + dir.string() + ": it is a directory, not a file");
  expect_one_error_line(run({"run", elf, "--chip", dir.string()}), "'" + dir.string() + "' is a directory, not a chip file");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"report", dir.string()}, {"replay", dir.string()}, {"ref", dir.string()}, {"run", elf, "--chip", dir.string()}}) {
    const Proc p = run(args);
    EXPECT_EQ(p.err.find("basic_filebuf"), std::string::npos) << p.err;
    EXPECT_EQ(p.err.find("safetensors"), std::string::npos) << p.err;
  }
}

// stdout that cannot take the output (a full disk; a pipe whose reader has gone) is an error,
// exit 2 with one line, never exit 0 with the output lost, nor death by SIGPIPE (status 141).
TEST(FileErrors, StdoutThatCannotBeWrittenIsAnError) {
  const std::string elf = loop_elf(5).string();
  const fs::path d = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli";
  const fs::path err = d / ("full-err-" + std::to_string(getpid()));
  // (--help and --version too: found by an outside tester, they exited 0)
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--json", "ref", elf}, std::vector<std::string>{"ref", elf},
        std::vector<std::string>{"--help"}, std::vector<std::string>{"run", "--help"},
        std::vector<std::string>{"--version"}}) {
    const pid_t pid = spawn(args, "/dev/full", err);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << cmdline(args) << ": status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 2) << cmdline(args);
    EXPECT_NE(slurp(err).find("lockstep: error: cannot write stdout"), std::string::npos) << slurp(err);
  }
  // A pipe whose read end is closed before the child starts: every write fails with EPIPE.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ::close(fds[0]);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    freopen(err.c_str(), "w", stderr);
    std::string exe = LOCKSTEP_EXE, cmd = "ref", path = elf;
    char* argv[] = {exe.data(), cmd.data(), path.data(), nullptr};
    execv(exe.c_str(), argv);
    _exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(slurp(err).find("lockstep: error: cannot write stdout"), std::string::npos) << slurp(err);
}

// A named pipe (FIFO) where an input file belongs is never waited for: open() of one with no
// writer blocked forever, and the first stop signal only set a flag (an outside tester's
// `timeout 10 lockstep ref fifo` lived for ten minutes). The ELF reader reads a pipe that has a
// writer (`<(cat guest.elf)`); every other reader refuses a FIFO by name.
TEST(FileErrors, ANamedPipeIsNeverWaitedFor) {
  const fs::path dir = temp_dir("fifo");
  const fs::path fifo = dir / "guest.elf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  expect_one_error_line(run({"ref", fifo.string()}),
                        "ELF: cannot read " + fifo.string() + ": it is a named pipe (FIFO) and nothing wrote to it");
  const std::string elf = loop_elf(5).string();
  expect_one_error_line(run({"run", elf, "--chip", fifo.string()}),
                        "'" + fifo.string() + "' is a named pipe (FIFO), not a chip file");
  const fs::path case_dir = dir / "case";
  fs::create_directories(case_dir);
  ASSERT_EQ(::mkfifo((case_dir / "case.json").c_str(), 0600), 0);
  expect_one_error_line(run({"replay", case_dir.string()}),
                        "cannot read " + (case_dir / "case.json").string() + ": it is a named pipe (FIFO)");
  // A pipe with a writer is read to its end, as a file is.
  const std::string cmd = "bash -c '" + std::string(LOCKSTEP_EXE) + " ref <(cat " + elf + ") >/dev/null 2>&1'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// A device, or a regular file larger than a reader's limit or than the memory available, is
// refused by name before a byte is read (found by an outside tester: summary.json linked to
// /dev/zero, `replay /dev/zero` and a sparse 50 GB --chip were read until the kernel killed the
// process at 24 GB).
TEST(FileErrors, ADeviceOrAFileLargerThanMemoryIsNeverRead) {
  const fs::path dir = temp_dir("devices");
  const std::string elf = loop_elf(5).string();
  fs::create_directories(dir / "ck");
  fs::create_symlink("/dev/zero", dir / "ck" / "summary.json");
  expect_one_error_line(run({"report", (dir / "ck").string()}), "summary.json: it is a device, not a regular file");
  expect_one_error_line(run({"replay", "/dev/zero"}), "cannot read /dev/zero: it is a device, not a regular file");
  expect_one_error_line(run({"ref", "/dev/zero"}), "ELF: cannot read /dev/zero: it is a device, not a regular file");
  // 1 TiB, sparse: more than any reader's limit and than this machine's memory
  const fs::path huge = dir / "huge";
  { std::ofstream(huge) << ""; }
  fs::resize_file(huge, std::uintmax_t{1} << 40);
  expect_one_error_line(run({"run", elf, "--chip", huge.string()}), "MiB are more than the memory available");
  expect_one_error_line(run({"replay", huge.string()}), "larger than 1073741824 bytes");
  expect_one_error_line(run({"run", elf, "--dut-vocab", huge.string(), "--dut", "/nonexistent/chip"}),
                        "larger than 64 MiB, not a vocabulary map");
  expect_one_error_line(run({"run", elf, "--dut-vocab", "/dev/zero", "--dut", "/nonexistent/chip"}),
                        "it is a device, not a regular file");
  expect_one_error_line(run({"run", elf, "--dut-token-file", "/dev/zero", "--dut-connect", "unix:/nonexistent"}),
                        "it is a device, not a regular file");
  // a directory: each reader's own line, with the bare reason of read_input_file
  expect_one_error_line(run({"run", elf, "--dut-vocab", dir.string(), "--dut", "/nonexistent/chip"}),
                        dir.string() + ": cannot read the vocabulary map: it is a directory, not a file");
  expect_one_error_line(run({"run", elf, "--dut-token-file", dir.string(), "--dut-connect", "unix:/nonexistent"}),
                        "--dut-token-file " + dir.string() + ": it is a directory, not a file");
  fs::remove(huge);
  // a path the system will not look at: the path and the reason, not "filesystem error: status:"
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  expect_one_error_line(run({"replay", (dir / "loop-a").string()}), (dir / "loop-a").string() + ": Too many levels of symbolic links");
  expect_one_error_line(run({"report", (dir / "loop-a").string()}), "Too many levels of symbolic links");
}

// A closed stdout is output that cannot be written, also with --report (found by an outside
// tester: the run folder's lock file became fd 1, the run's output went into it, exit 0); a file
// size limit is a failed write, one line and exit 2, not SIGXFSZ (status 153).
TEST(FileErrors, AClosedStdoutAndAFileSizeLimitAreFailedWrites) {
  const fs::path dir = temp_dir("closed-stdout");
  const std::string elf = loop_elf(5).string();
  const std::string exe = LOCKSTEP_EXE;
  const fs::path err = dir / "err";
  std::string cmd = "bash -c '" + exe + " run " + elf + " --report " + (dir / "r").string() + " >&- 2>" + err.string() + "'";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << "\n" << slurp(err);
  EXPECT_NE(slurp(err).find("lockstep: error: cannot write stdout"), std::string::npos) << slurp(err);
  EXPECT_EQ(slurp(dir / "r" / ".lockstep.lock").find("steps compared"), std::string::npos);
  // 8 KiB: a 20,000-step trace (80 KB) passes it
  cmd = "bash -c 'ulimit -f 8; " + exe + " ref " + loop_elf(100000).string() + " --steps 20000 --trace " +
        (dir / "t.trace").string() + " >/dev/null 2>" + err.string() + "'";
  status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd << ": killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << "\n" << slurp(err);
  const std::string limit_err = slurp(err);
  EXPECT_EQ(std::count(limit_err.begin(), limit_err.end(), '\n'), 1) << limit_err;
  EXPECT_EQ(limit_err.rfind("lockstep: error: ", 0), 0u) << limit_err;
  // A run whose report cannot be written (its summary.json, with a hash a step, past the limit)
  // is an error, and stdout says so below its closing line (found by an outside tester: a full
  // disk left stdout reading "mismatches 0", the error on stderr alone).
  const fs::path out = dir / "out";
  cmd = "bash -c 'ulimit -f 32; " + exe + " run " + loop_elf(100000).string() + " --steps 400 --hash-every 1 --report " +
        (dir / "unwritten").string() + " >" + out.string() + " 2>" + err.string() + "'";
  status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << "\n" << slurp(out) << slurp(err);
  const std::string said = slurp(out);
  const auto closing = said.find("steps compared "), unrecorded = said.find("\nnot recorded: cannot write the report to ");
  EXPECT_NE(closing, std::string::npos) << said;
  EXPECT_NE(unrecorded, std::string::npos) << said;
  EXPECT_LT(closing, unrecorded) << said;
  EXPECT_NE(slurp(err).find("lockstep: error: cannot write the report to "), std::string::npos) << slurp(err);
  // A campaign's fuzz.json is replaced whole or not at all: never left cut at the limit (found by
  // an outside tester: 8,192 bytes of broken JSON, which fuzz --merge then refused)
  if (have_built_chip()) {
    const fs::path rep = dir / "campaign";
    cmd = "bash -c 'ulimit -f 8; " + exe + " fuzz --programs 4 --seed 1 --ops add --report " + rep.string() +
          " >" + out.string() + " 2>" + err.string() + "'";
    status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << cmd;
    EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << "\n" << slurp(err);
    // and its stdout says so below the closing line, as run's does (found by an outside tester)
    const std::string fuzz_said = slurp(out);
    const auto fuzz_closing = fuzz_said.find("mismatching runs 0"),
               fuzz_unrecorded = fuzz_said.find("\nnot recorded: report: cannot write " + rep.string() + "/fuzz.json: ");
    EXPECT_NE(fuzz_closing, std::string::npos) << fuzz_said;
    EXPECT_NE(fuzz_unrecorded, std::string::npos) << fuzz_said;
    EXPECT_LT(fuzz_closing, fuzz_unrecorded) << fuzz_said;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(rep)) {
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
      if (e.path().extension() == ".json") {
        EXPECT_TRUE(json::accept(slurp(e.path()))) << e.path();
      }
    }
  }
}

// A case continues only with the command that wrote it (a `run` folder is not a story check to
// resume), and `story --guest` takes a story guest, never another program checked as one.
TEST(StoryCommand, RefusesAnotherCommandsCaseAndAGuestThatIsNoStory) {
  const fs::path elf = loop_elf(5);
  for (const char* writer : {"run", "story", "fuzz"}) {
    const fs::path dir = temp_dir(std::string("case-of-") + writer);
    Case c;
    c.command = writer;
    c.guest_path = elf;
    c.guest_name = "loop5";
    c.checkpoint_every = 100;
    std::ofstream(dir / "case.json") << c.to_json().dump(2) << "\n";
    for (const char* resumer : {"run", "story"}) {
      if (std::string(writer) == resumer) continue;
      expect_one_error_line(run({resumer, "--resume", dir.string()}),
                            "--resume " + dir.string() + ": its case.json was written by `lockstep " + writer +
                                "`; continue it with " + std::string(LOCKSTEP_EXE) + " " + writer + " --resume " + dir.string());
    }
  }
  Guest g = testing::make_loop_guest(5);
  g.image.symbols["main"] = g.image.entry;  // a program with symbols, none of them a story image
  const fs::path named = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli" / "loop5-main.elf";
  format::write_elf_file(named, g.image);
  expect_one_error_line(run({"story", "--guest", named.string()}),
                        "--guest " + named.string() + " is not a story guest");
}

// A guest that prints bytes that are not UTF-8 (0xff): the run folder is still written (the
// console's bad bytes become U+FFFD in JSON), and the run's verdict is kept (was: exit 2, no
// summary.json, and a mismatch would have been reported as an error).
TEST(RunCommand, BinaryConsoleOutputStillGivesAReport) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build";
  Guest g = testing::make_loop_guest(2);
  bool patched = false;
  for (auto& s : g.image.segments)
    if (s.bytes.size() == 3 && s.bytes[0] == 'h') {
      s.bytes[0] = 0xff;
      patched = true;
    }
  ASSERT_TRUE(patched) << "the loop guest's \"hi\\n\" segment moved";
  const fs::path elf = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "engine-cli" / "binary-console.elf";
  format::write_elf_file(elf, g.image);
  const fs::path dir = temp_dir("binary-console");
  const Proc p = run({"run", elf.string(), "--report", dir.string()});
  EXPECT_EQ(p.rc, 0) << p.err;
  const json s = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(s["status"], "exact");
  EXPECT_TRUE(fs::exists(dir / "junit.xml"));
  EXPECT_NE(slurp(dir / "summary.json").find("\xef\xbf\xbdi\\n"), std::string::npos) << slurp(dir / "summary.json");
}

// A free-running run whose steps all lie in its teacher-forced prefix compared no free step: it
// says so, and the summary counts the free-running steps it did compare.
TEST(RunCommand, FreeRunThatNeverRanFreeSaysSo) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build";
  const fs::path elf = loop_elf(20);
  const Proc all_forced = run({"run", elf.string(), "--mode", "free", "--teacher-forced-steps", "100000", "--json"});
  ASSERT_EQ(all_forced.rc, 0) << all_forced.err;
  const json a = json::parse(all_forced.out.substr(all_forced.out.find('{')));
  const std::uint64_t n = a["steps"].get<std::uint64_t>();
  ASSERT_GT(n, 100u);
  EXPECT_EQ(a["free_running_steps"], 0);
  const Proc text = run({"run", elf.string(), "--mode", "free", "--teacher-forced-steps", "100000"});
  EXPECT_NE(text.out.find("note: no free-running step was compared: all " + std::to_string(n) +
                          " steps compared were within the first 100000 (--teacher-forced-steps)"),
            std::string::npos)
      << text.out;
  const Proc some_free = run({"run", elf.string(), "--mode", "free", "--teacher-forced-steps", "10", "--json"});
  ASSERT_EQ(some_free.rc, 0) << some_free.err;
  const json b = json::parse(some_free.out.substr(some_free.out.find('{')));
  EXPECT_EQ(b["free_running_steps"], n - 10);
  EXPECT_EQ(some_free.out.find("note: no free-running step"), std::string::npos);
}

// Open MPI's rank and size must be numbers; a shard that holds no program is refused (it would
// compare nothing and pass).
TEST(FuzzCommand, ShardsThatWouldRunNothingAreRefused) {
  expect_one_error_line(run({"fuzz", "--shard", "5/10", "--programs", "4"}),
                        "--shard 5/10 holds none of the campaign's 4 programs (indices 0..3)");
  expect_one_error_line(run({"fuzz", "--shard", "1/3", "--programs", "1", "--first", "9"}),
                        "--shard 1/3 holds none of the campaign's 1 programs (indices 9..9)");
  expect_one_error_line(run({"fuzz", "--shard", "mpi", "--report", temp_dir("mpi-rank").string()},
                            {"OMPI_COMM_WORLD_RANK=one", "OMPI_COMM_WORLD_SIZE=2"}),
                        "--shard mpi: OMPI_COMM_WORLD_RANK is 'one', not a whole number");
}

// `report DIR` on a summary.json edited to contradict its status (an outside tester's edits of an
// exact run's summary, each rendered with exit 0 before): one line naming the file and the field,
// exit 2, and no junit.xml that disagrees with the exit code.
TEST(ReportCommand, ASummaryThatContradictsItsStatusIsExitTwo) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("report-contradiction");
  const Proc p = run({"run", loop_elf(5).string(), "--mode", "free", "--report", dir.string()});
  ASSERT_EQ(p.rc, 0) << p.err;
  const json exact = json::parse(slurp(dir / "summary.json"));
  ASSERT_EQ(exact["status"], "exact");
  struct Edit {
    std::function<void(json&)> edit;
    std::string says;
  };
  const std::vector<Edit> edits = {
      {[](json& s) { s["run"]["mismatches"] = 5; }, "\"run.mismatches\" is 5 but \"mismatches\" is 0"},
      {[](json& s) { s["run"]["streams"][0]["mismatches"] = 2; },
       "\"status\" \"exact\" with \"run.streams[0].mismatches\" 2"},
      {[](json& s) { s["run"]["streams"][0]["divergence"] = {{"step", 5}}; },
       "\"status\" \"exact\" with a divergence in \"run.streams[0].divergence\""},
      {[](json& s) { s["run"]["interrupted"] = true; }, "\"status\" \"exact\" with \"run.interrupted\" true"},
      {[](json& s) { s["status"] = "mismatch"; s["mismatches"] = 1; },
       "\"run.mismatches\" is 0 but \"mismatches\" is 1 (status \"mismatch\")"},
  };
  for (const Edit& e : edits) {
    json s = exact;
    e.edit(s);
    SCOPED_TRACE(s.dump().substr(0, 200));
    std::ofstream(dir / "summary.json", std::ios::trunc) << s.dump(2);
    fs::remove(dir / "junit.xml");
    expect_one_error_line(run({"report", dir.string()}, {"LOCKSTEP_GNUPLOT=none"}),
                          (dir / "summary.json").string() + ": " + e.says);
    EXPECT_FALSE(fs::exists(dir / "junit.xml"));
  }
  std::ofstream(dir / "summary.json", std::ios::trunc) << exact.dump(2);
  const Proc ok = run({"report", dir.string()}, {"LOCKSTEP_GNUPLOT=none"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(slurp(dir / "junit.xml").find("failures=\"0\" errors=\"0\""), std::string::npos);
}

// story --reference-only runs no chip: an option that only matters for the chip's run is refused
// by name (before, each was silently ignored).
TEST(StoryCommand, ReferenceOnlyRefusesTheChipRunsOptions) {
  const std::string elf = loop_elf(30).string();
  const std::vector<std::vector<std::string>> options = {
      {"--report", temp_dir("story-ro-report").string()},
      {"--checkpoint-every", "10"},
      {"--chip", "my.chip"},
      {"--backend", "cpu"},
      {"--teacher-forced-steps", "5"},
      {"--dut", "true"},
      {"--dut-connect", "unix:/nonexistent.sock"},
      {"--dut-vocab", "my.vocab"},
      {"--dut-timeout", "5"},
      {"--dut-start-timeout", "5"},
      {"--dut-token-file", "my.token"},
  };
  for (const auto& o : options) {
    std::vector<std::string> args = {"story", "--guest", elf, "--reference-only"};
    args.insert(args.end(), o.begin(), o.end());
    SCOPED_TRACE(cmdline(args));
    expect_one_error_line(run(args), o[0] + " cannot be given with --reference-only: ");
  }
  EXPECT_EQ(run({"story", "--guest", elf, "--reference-only", "--steps", "20"}).rc, 0);
}

// --dut-timeout and --dut-start-timeout without a chip under test are refused as --dut-vocab is, in
// every command that has the --dut options (before, accepted and ignored), even at their defaults.
TEST(DutOptions, TimeoutsWithoutAChipUnderTestAreRefused) {
  const std::string elf = loop_elf(30).string();
  const std::vector<std::vector<std::string>> commands = {
      {"run", elf}, {"story", "--guest", elf}, {"fuzz", "--programs", "1"}, {"bench", "--quick"}, {"dut-check"}};
  // (replay applies them to the case's own chip under test, and refuses them for a case of a
  // built-in executor: DutCli.AReplayWhoseChipFailsBeforeTheRecordedStepIsNotConclusive)
  for (const auto& c : commands) {
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"--dut-timeout", "5"}, {"--dut-start-timeout", "5"}, {"--dut-timeout", "120"}}) {
      std::vector<std::string> args = c;
      args.insert(args.end(), {name, value});
      SCOPED_TRACE(cmdline(args));
      expect_one_error_line(run(args), name + " needs --dut or --dut-connect");
    }
  }
}

// dut-check's --steps: the help and the error give the same range, 2..100000 (the FREE check
// free-runs all but one step).
TEST(DutOptions, DutCheckStepsHelpAndErrorAgree) {
  const Proc h = run({"dut-check", "--help"});
  EXPECT_EQ(h.rc, 0) << h.err;
  EXPECT_NE(h.out.find("Steps per guest (2..100000)"), std::string::npos) << h.out;
  for (const char* bad : {"-1", "0", "86401", "abc"})  // --dut-timeout likewise: one range
    expect_one_error_line(run({"run", "x.elf", "--dut", "true", "--dut-timeout", bad}),
                          std::string("--dut-timeout: must be a number of seconds more than 0 and at most 86400 (got '") + bad + "')");
  for (const char* bad : {"1", "100001", "abc"})  // one range, whatever is wrong with the number
    expect_one_error_line(run({"dut-check", "--dut", "true", "--steps", bad}),
                          std::string("--steps: must be a whole number from 2 to 100000 (got '") + bad + "')");
}

// A replay stopped by SIGINT before it could tell is no verdict: "not conclusive (interrupted
// after N steps)", exit 3 (before: "the case does NOT reproduce").
TEST(ReplayCommand, AnInterruptedReplayIsNotConclusive) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(50'000'000);
  // Signalled 0.5 s after the check started comparing (its case.json is written just before).
  auto comparing_for_a_while = [](const fs::path& dir) {
    return [dir, started = std::optional<std::chrono::steady_clock::time_point>()]() mutable {
      if (!started && fs::exists(dir / "case.json")) started = std::chrono::steady_clock::now();
      return started && std::chrono::steady_clock::now() - *started > std::chrono::milliseconds(500);
    };
  };
  // The case an interrupted run leaves: to the guest's end, recorded with the digest of the steps
  // it compared before the signal.
  const fs::path dir = temp_dir("replay-interrupted-case");
  Case c;
  c.command = "run";
  c.guest_name = "loop50000000";
  c.guest_path = elf;
  c.expect = {{"digest", "b81e031ef83cf7ff"}, {"steps", 18368}};
  std::ofstream(dir / "case.json") << c.to_json().dump(2);
  const fs::path rdir = temp_dir("replay-interrupted-replay");
  const Proc r = run_and_signal({"replay", dir.string(), "--report", rdir.string()}, SIGINT,
                                std::chrono::milliseconds(0), false, comparing_for_a_while(rdir));
  ASSERT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.out.find("reproduce"), std::string::npos) << r.out;
  const std::string steps = json::parse(slurp(rdir / "summary.json"))["steps"].dump();
  EXPECT_NE(steps, "0") << "the replay must have compared steps before the signal";
  EXPECT_NE(r.out.find("the replay is not conclusive: interrupted after " + steps + " steps"), std::string::npos)
      << r.out;
}

// replay compares what the case recorded: a pass's step count and digest both (a case edited to
// another count or digest does NOT reproduce), and for a run that was interrupted, only that its
// compared prefix has no divergence (before: an interrupted run's case never reproduced, since
// its digest is the prefix's).
// replay --report never takes another command's run folder (its own case's, above all): that
// would replace the run's result and delete the checkpoints it could resume from. A new folder,
// or an earlier replay's, is fine.
TEST(ReplayCommand, NeverReplacesARunsFolder) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("replay-into-run");
  const std::string elf = loop_elf(3).string();
  ASSERT_EQ(run({"run", elf, "--report", dir.string(), "--checkpoint-every", "50"}).rc, 0);
  const std::string summary = slurp(dir / "summary.json"), the_case = slurp(dir / "case.json");
  const std::size_t checkpoints = list_checkpoints(dir / "checkpoints").size();
  ASSERT_GT(checkpoints, 0u);
  expect_one_error_line(run({"replay", dir.string(), "--report", dir.string()}),
                        "--report " + dir.string() +
                            ": that is the run folder of a lockstep run (its report and checkpoints), which the "
                            "replay would replace: give the replay a folder of its own");
  EXPECT_EQ(slurp(dir / "summary.json"), summary);
  EXPECT_EQ(slurp(dir / "case.json"), the_case);
  EXPECT_EQ(list_checkpoints(dir / "checkpoints").size(), checkpoints);
  const fs::path mine = temp_dir("replay-into-run-own");
  for (int k = 0; k < 2; ++k) {  // a new folder, then the same folder again (an earlier replay's)
    const Proc p = run({"replay", dir.string(), "--report", mine.string()});
    EXPECT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(json::parse(slurp(mine / "summary.json"))["command"], "replay");
  }
}

// A saved failure checked against another chip file (the fixed one): --chip runs the case on it
// without the recorded hash check, and the fixed chip does not reproduce it (found by an outside
// tester: the hash check refused it, exit 2, with no way around).
TEST(ReplayCommand, ACaseRunsOnAnotherChipWithChip) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  // The build's chip file, compiled or prebuilt (found by an outside tester: a prebuilt chip's
  // build skipped this test).
  const fs::path built = built_chip_file();
  if (!fs::exists(built)) GTEST_SKIP() << "no built chip file";
  const fs::path dir = temp_dir("replay-other-chip");
  const Proc bad = run({"run", loop_elf(3).string(), "--chip", chip_that_cannot_print_i().string(), "--report", dir.string()});
  ASSERT_EQ(bad.rc, 1) << bad.err;
  const Proc same = run({"replay", dir.string(), "--json"});
  EXPECT_EQ(same.rc, 1) << same.err;
  EXPECT_EQ(json::parse(same.out)["reproduced"], true);
  const Proc fixed = run({"replay", dir.string(), "--chip", built.string(), "--json"});
  EXPECT_EQ(fixed.rc, 0) << fixed.err;
  EXPECT_EQ(json::parse(fixed.out)["reproduced"], false) << fixed.out;
  EXPECT_EQ(json::parse(fixed.out)["chip"], built.string()) << fixed.out;
}

TEST(ReplayCommand, ComparesTheRecordedStepsDigestAndInterruption) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(5);
  const fs::path dir = temp_dir("replay-verdict-run");
  const Proc p = run({"run", elf.string(), "--report", dir.string()});
  ASSERT_EQ(p.rc, 0) << p.err;
  const json c = json::parse(slurp(dir / "case.json"));
  const std::uint64_t steps = c["expect"]["steps"].get<std::uint64_t>();
  const std::string digest = c["expect"]["digest"].get<std::string>();
  ASSERT_GT(steps, 100u);
  EXPECT_FALSE(c["expect"].contains("interrupted"));
  auto replay_with = [&](const std::string& name, const json& expect) {
    const fs::path d = temp_dir("replay-verdict-" + name);
    json edited = c;
    edited["expect"] = expect;
    std::ofstream(d / "case.json") << edited.dump(2);
    // --json: the summary on stdout, the verdict's line on stderr
    const Proc r = run({"replay", d.string(), "--json"});
    EXPECT_EQ(r.rc, 0) << name << ": " << r.err;  // the replay itself is exact
    json summary = json::object();
    try {
      summary = json::parse(r.out);
    } catch (const std::exception&) {
      ADD_FAILURE() << name << ": stdout is not one JSON object: " << r.out;
    }
    return std::make_pair(r.err, summary);
  };
  const auto [same, same_s] = replay_with("same", c["expect"]);
  EXPECT_NE(same.find("the case reproduces: recorded no divergence, " + std::to_string(steps) + " steps, digest " + digest),
            std::string::npos) << same;
  EXPECT_EQ(same_s.value("reproduced", false), true);
  const auto [more, more_s] = replay_with("steps", {{"steps", steps + 1}, {"digest", digest}});
  EXPECT_NE(more.find("the case does NOT reproduce: recorded no divergence, " + std::to_string(steps + 1) + " steps"),
            std::string::npos) << more;
  EXPECT_EQ(more_s.value("reproduced", true), false);
  const auto [other, other_s] = replay_with("digest", {{"steps", steps}, {"digest", "0123456789abcdef"}});
  EXPECT_NE(other.find("the case does NOT reproduce"), std::string::npos) << other;
  EXPECT_EQ(other_s.value("reproduced", true), false);
  // An interrupted run's case: 40 steps compared, with that prefix's digest. The replay compares
  // those 40 steps only (found by an outside tester: it ran on to the guest's end), and their
  // digest must be the recorded one.
  const Proc prefix = run({"run", elf.string(), "--steps", "40", "--json"});
  ASSERT_EQ(prefix.rc, 0) << prefix.err;
  const std::string prefix_digest = json::parse(prefix.out)["digest"];
  const auto [cut, cut_s] = replay_with("interrupted", {{"steps", 40}, {"digest", prefix_digest}, {"interrupted", true}});
  EXPECT_NE(cut.find("the case reproduces: recorded no divergence in the first 40 steps, digest " + prefix_digest +
                     " (that run was interrupted there)"),
            std::string::npos) << cut;
  EXPECT_NE(cut.find("the recorded run was interrupted after 40 steps: the replay compared those"), std::string::npos) << cut;
  EXPECT_EQ(cut_s.value("reproduced", false), true);
  EXPECT_EQ(cut_s["steps"], 40);
  const auto [cut2, cut2_s] = replay_with("interrupted-digest", {{"steps", 40}, {"digest", "0123456789abcdef"}, {"interrupted", true}});
  EXPECT_NE(cut2.find("the case does NOT reproduce"), std::string::npos) << cut2;
  EXPECT_EQ(cut2_s.value("reproduced", true), false);
  // A recorded divergence the replay does not meet.
  const auto [div, div_s] = replay_with("divergence", {{"steps", steps}, {"digest", digest}, {"first_divergence", 17}});
  EXPECT_NE(div.find("the case does NOT reproduce: recorded first divergence at step 17"), std::string::npos) << div;
  EXPECT_EQ(div_s.value("reproduced", true), false);
}

// A case records what diverged at its step (pc, field, both tokens): a replay that diverges at the
// same step with other tokens does NOT reproduce it (found by an outside tester: any divergence at
// the step "reproduced"). The replay's own report names the case and its verdict; a relative
// chip.path is the case folder's, and one that does not load is named as the case's.
TEST(ReplayCommand, TheSameStepWithOtherTokensDoesNotReproduce) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("replay-tokens");
  const fs::path bad_chip = chip_that_cannot_print_i();
  ASSERT_EQ(run({"run", loop_elf(3).string(), "--chip", bad_chip.string(), "--report", dir.string()}).rc, 1);
  const json c = json::parse(slurp(dir / "case.json"));
  const json& ex = c["expect"];
  ASSERT_TRUE(ex.contains("first_divergence") && ex.contains("pc") && ex.contains("field") &&
              ex.contains("expected_token") && ex.contains("actual_token"))
      << ex.dump();
  EXPECT_NE(ex["expected_token"], ex["actual_token"]);
  auto replay_edited = [&](const std::string& name, const json& edited, std::vector<std::string> more = {}) {
    const fs::path d = temp_dir("replay-tokens-" + name);
    std::ofstream(d / "case.json") << edited.dump(2);
    std::vector<std::string> args = {"replay", (d / "case.json").string()};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_pair(d, run(args));
  };
  json other = c;
  other["expect"]["actual_token"] = ex["actual_token"].get<std::uint32_t>() + 1;
  const auto [od, o] = replay_edited("other", other, {"--json"});
  EXPECT_EQ(o.rc, 1) << o.err;
  EXPECT_EQ(json::parse(o.out)["reproduced"], false) << o.out;
  EXPECT_NE(o.err.find("the case does NOT reproduce: recorded first divergence at step " +
                       std::to_string(ex["first_divergence"].get<std::uint64_t>())),
            std::string::npos) << o.err;
  EXPECT_NE(o.err.find("it diverges at the same step, but differently"), std::string::npos) << o.err;
  // The replay's report: which case, and the verdict, on the page and in the JUnit file.
  const fs::path rep = temp_dir("replay-tokens-report");
  const Proc same = run({"replay", dir.string(), "--report", rep.string()});
  EXPECT_EQ(same.rc, 1) << same.err;
  const json rs = json::parse(slurp(rep / "summary.json"));
  EXPECT_EQ(rs["reproduced"], true);
  EXPECT_EQ(rs["replayed_case"], fs::absolute(dir).string());
  EXPECT_EQ(rs["replay_verdict"].get<std::string>().rfind("the case reproduces: recorded first divergence at step", 0), 0u);
  EXPECT_NE(slurp(rep / "report.html").find("<th>replay verdict</th><td>the case reproduces"), std::string::npos);
  EXPECT_NE(slurp(rep / "junit.xml").find("<property name=\"replay_verdict\" value=\"the case reproduces"),
            std::string::npos);
  // A replay refused into that folder keeps its JUnit case's name, the guest's (found by the
  // re-test: it read "replay"), for a chip that cannot be loaded and an option the parser refuses.
  const std::string guest_case = "name=\"" + rs["run"]["streams"][0]["guest"].get<std::string>() + "\"";
  ASSERT_NE(slurp(rep / "junit.xml").find(guest_case), std::string::npos) << slurp(rep / "junit.xml");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", dir.string(), "--report", rep.string(), "--chip", (rep / "none.chip").string()},
        std::vector<std::string>{"replay", dir.string(), "--report", rep.string(), "--no-such-flag"}}) {
    SCOPED_TRACE(cmdline(args));
    EXPECT_EQ(run(args).rc, 2);
    EXPECT_EQ(json::parse(slurp(rep / "summary.json"))["status"], "error");
    EXPECT_NE(slurp(rep / "junit.xml").find(guest_case), std::string::npos) << slurp(rep / "junit.xml");
    fs::remove_all(rep / "earlier-run");
    ASSERT_EQ(run({"replay", dir.string(), "--report", rep.string()}).rc, 1);
  }
  // chip.path relative to the case file's folder, from any working folder
  const fs::path moved = temp_dir("replay-tokens-moved");
  fs::copy_file(bad_chip, moved / "mine.chip");
  json rel = c;
  rel["chip"]["path"] = "mine.chip";
  std::ofstream(moved / "case.json") << rel.dump(2);
  const Proc r = run({"replay", (moved / "case.json").string(), "--json"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(json::parse(r.out)["reproduced"], true) << r.out;
  // The field is compared too, and what diverged is recorded whole or not at all.
  json field = c;
  field["expect"]["field"] = "W3";
  const auto [fd, fr] = replay_edited("field", field, {"--json"});
  EXPECT_EQ(json::parse(fr.out)["reproduced"], false) << fr.out;
  json partial = c;
  partial["expect"].erase("pc");
  const auto [pd, pr] = replay_edited("partial", partial);
  expect_one_error_line(pr, "case: \"expect\" has some of pc, field, expected_token and actual_token: give all four");
  rel["chip"]["path"] = "gone.chip";
  const auto [gd, g] = replay_edited("gone", rel);
  expect_one_error_line(g, "the case's chip.path (replay --chip FILE runs the case on another): ");
  EXPECT_NE(g.err.find((gd / "gone.chip").string()), std::string::npos) << g.err;
}

// Hand-edited cases that contradict themselves are refused with one line (found by an outside
// tester: they were run as written).
TEST(ReplayCommand, ACaseThatContradictsItselfIsRefused) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("replay-contradiction");
  ASSERT_EQ(run({"run", loop_elf(3).string(), "--report", dir.string()}).rc, 0);
  const json c = json::parse(slurp(dir / "case.json"));
  auto refused = [&](const std::string& name, const json& edited, const std::string& says) {
    SCOPED_TRACE(name);
    const fs::path d = temp_dir("replay-contradiction-" + name);
    std::ofstream(d / "case.json") << edited.dump(2);
    expect_one_error_line(run({"replay", d.string()}), says);
  };
  json tf = c;
  tf["mode"] = "forced";
  tf["teacher_forced_steps"] = 10;
  refused("forced", tf, "case: \"teacher_forced_steps\" is 10, not 0 unless mode is free");
  json past = c;
  past["expect"]["first_divergence"] = c["expect"]["steps"].get<std::uint64_t>() + 1;
  refused("past", past, "case: \"expect.first_divergence\" is");
  json empty = c;
  empty["guest"]["elf_base64"] = "";
  refused("empty-elf", empty, "case: \"guest.elf_base64\" is \"\", not the guest ELF in base64");
}

// A run stopped by --steps before its guest ended is exact as far as it went and no more: its page
// and its JUnit case say "partial check" (found by an outside tester: "exact", all green).
TEST(RunCommand, AStepLimitedRunIsCalledAPartialCheck) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("partial-run");
  const Proc p = run({"run", loop_elf(30).string(), "--steps", "40", "--report", dir.string()});
  ASSERT_EQ(p.rc, 0) << p.err;
  const std::string html = slurp(dir / "report.html");
  EXPECT_NE(html.find("<title>Lockstep run: exact (partial check)</title>"), std::string::npos) << html;
  EXPECT_NE(html.find("the guest had not ended when the run stopped at its step limit (--steps; "), std::string::npos);
  EXPECT_NE(slurp(dir / "junit.xml").find(" (first 40 steps)\""), std::string::npos);
  EXPECT_NE(slurp(dir / "junit.xml").find("partial check: the first 40 steps, the guest had not ended"), std::string::npos);
  const fs::path whole = temp_dir("whole-run");
  ASSERT_EQ(run({"run", loop_elf(30).string(), "--report", whole.string()}).rc, 0);
  EXPECT_EQ(slurp(whole / "report.html").find("partial"), std::string::npos);
  EXPECT_EQ(slurp(whole / "junit.xml").find("partial"), std::string::npos);
}

// --json output stays JSON when a path or a message holds bytes that are not UTF-8: they are
// written as U+FFFD. nlohmann-json's dump() threw there, and the command ended in std::terminate
// (exit 134) after its verdict, with no summary (found by an outside tester: a chip at a path
// named "\xff.chip", and a chip file whose header held the byte 0xC0).
TEST(RunCommand, JsonOutputSurvivesBytesThatAreNotUtf8) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path dir = temp_dir("not-utf8");
  const fs::path elf = loop_elf(5);
  const fs::path chip = dir / "chip-\xff.chip";
  if (!fs::exists(built_chip_file())) GTEST_SKIP() << "no built chip file";
  fs::create_symlink(fs::absolute(built_chip_file()), chip);  // compiled or prebuilt (found by an outside tester)
  const Proc ok = run({"run", elf.string(), "--chip", chip.string(), "--json"});
  ASSERT_EQ(ok.rc, 0) << ok.err;
  const json j = json::parse(ok.out);
  EXPECT_EQ(j["status"], "exact") << ok.out;
  EXPECT_NE(ok.out.find("chip-\xef\xbf\xbd.chip"), std::string::npos) << ok.out;  // U+FFFD
  // A saved case cannot hold those bytes: said at once, with the option replay takes instead.
  const Proc saved = run({"run", elf.string(), "--chip", chip.string(), "--report", (dir / "rep").string()});
  ASSERT_EQ(saved.rc, 0) << saved.err;
  EXPECT_NE(saved.err.find("lockstep: note: case.json records the chip path (replay it with --chip FILE) with U+FFFD"),
            std::string::npos)
      << saved.err;
  EXPECT_EQ(run({"replay", (dir / "rep").string(), "--chip", chip.string()}).rc, 0);
  const Proc bad = run({"run", elf.string(), "--chip", (dir / "missing-\xc0.chip").string(), "--json"});
  EXPECT_EQ(bad.rc, 2) << bad.err;
  EXPECT_EQ(json::parse(bad.out)["status"], "error") << bad.out;
  fs::remove_all(dir);
}

// Out of memory is said in words, not "std::bad_alloc", and is not blamed on the chip file
// ("the built chip file: std::bad_alloc (rebuild, ...)"; found by an outside tester).
TEST(RunCommand, OutOfMemoryIsSaidInWords) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const std::string cmd = "ulimit -v 300000; exec '" LOCKSTEP_EXE "' run '" + loop_elf(5).string() + "' --steps 10 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_EQ(out.rfind("lockstep: error: out of memory: an allocation failed", 0), 0u) << out;
  EXPECT_EQ(out.find("rebuild"), std::string::npos) << out;
}

// --hash-every and --classify-window are the case's: case.json records them, so --resume goes on
// recording hashes and replay classifies with the same window, and --resume refuses them given
// again; summary.json has free_running_steps as --json does (found by an outside tester: a resumed
// run stopped recording hashes). --classify-window 0 is refused (it called every divergence
// single-step without replaying one step).
TEST(RunCommand, HashEveryAndClassifyWindowAreTheCases) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path elf = loop_elf(5);
  const fs::path dir = temp_dir("hash-every-case");
  const Proc r = run({"run", elf.string(), "--mode", "free", "--teacher-forced-steps", "50", "--hash-every", "20",
                      "--classify-window", "300", "--checkpoint-every", "40", "--report", (dir / "run").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json c = json::parse(slurp(dir / "run" / "case.json"));
  EXPECT_EQ(c["hash_every"], 20);
  EXPECT_EQ(c["classify_window"], 300);
  const json s = json::parse(slurp(dir / "run" / "summary.json"));
  const std::uint64_t steps = s["steps"];
  EXPECT_EQ(s["free_running_steps"], steps - 50) << s.dump();
  const std::size_t hashes = s["run"]["streams"][0]["hashes"].size();
  EXPECT_EQ(hashes, steps / 20) << s.dump();
  const Proc again = run({"run", "--resume", (dir / "run").string(), "--json"});
  EXPECT_EQ(again.rc, 0) << again.err;
  const json s2 = json::parse(slurp(dir / "run" / "summary.json"));
  EXPECT_EQ(s2["run"]["streams"][0]["hashes"].size(), hashes) << s2.dump();
  const Proc refused = run({"run", "--resume", (dir / "run").string(), "--hash-every", "7"});
  EXPECT_EQ(refused.rc, 2);
  EXPECT_NE(refused.err.find("--hash-every cannot be given with --resume"), std::string::npos) << refused.err;
  const Proc zero = run({"run", elf.string(), "--classify-window", "0"});
  EXPECT_EQ(zero.rc, 2);
  EXPECT_NE(zero.err.find("--classify-window: must be a whole number from 1"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace lockstep::engine
