// `lockstep bench --quick --json`: the summary carries every figure with a
// positive value (or a reason it was skipped).  Never asserts a speed.
#include <cstdlib>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lockstep::cli_test::Result;
using lockstep::cli_test::slurp;

Result run(const std::vector<std::string>& args) { return lockstep::cli_test::run_lockstep(args); }

bool have_directed_guest() {
  const fs::path g = fs::path(LOCKSTEP_BINARY_DIR) / "guests";
  return fs::exists(g / "muldiv.elf") || fs::exists(g / "crc32.elf");
}

void expect_positive(const json& j, const std::string& path) {
  const json* at = &j;
  std::string walked;
  std::stringstream ss(path);
  std::string key;
  while (std::getline(ss, key, '.')) {
    walked += (walked.empty() ? "" : ".") + key;
    ASSERT_TRUE(at->is_object() && at->contains(key)) << "missing " << walked << " in " << j.dump();
    at = &(*at)[key];
  }
  ASSERT_TRUE(at->is_number()) << path << " = " << at->dump();
  EXPECT_GT(at->get<double>(), 0.0) << path;
}

// A skipped figure says why in one non-empty string.
void expect_skipped(const json& j, const std::string& what) {
  ASSERT_TRUE(j.contains("skipped")) << what << ": " << j.dump();
  ASSERT_TRUE(j["skipped"].is_string());
  EXPECT_FALSE(j["skipped"].get<std::string>().empty()) << what;
}

}  // namespace

TEST(LockstepBench, QuickJsonHasEveryFigure) {
  if (!have_directed_guest()) GTEST_SKIP() << "no directed guest built in " << LOCKSTEP_BINARY_DIR << "/guests";
  const Result r = run({"bench", "--quick", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "stdout must be one JSON object: " << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["status"], "exact");
  EXPECT_EQ(j["command"], "bench");
  EXPECT_EQ(j["quick"], true);
  ASSERT_TRUE(j["guest"].is_string());
  // How the CPU figures were measured: pipelined where the process may use two CPUs, unless
  // $LOCKSTEP_CPU_THREADS says (before, neither the JSON nor the header line said).
  ASSERT_TRUE(j["usable_cpus"].is_number_unsigned()) << j.dump();
  EXPECT_GE(j["usable_cpus"].get<unsigned>(), 1u);
  ASSERT_TRUE(j["cpu_pipelining"].is_boolean()) << j.dump();
  if (!std::getenv("LOCKSTEP_CPU_THREADS")) {
    EXPECT_EQ(j["cpu_pipelining"].get<bool>(), j["usable_cpus"].get<unsigned>() >= 2);
  }

  for (const char* f : {"reference.instructions", "reference.trace_tokens", "reference.instructions_per_second",
                        "reference.trace_tokens_per_second", "chip.layers", "chip.d_model",
                        "chip.single.steps", "chip.single.tokens_per_second", "chip.batched.streams",
                        "chip.batched.tokens_per_second", "chip.batched.over_single",
                        "anchors.original_trace_tokens_per_story_token", "anchors.original_tokens_per_second_l4",
                        "anchors.original_checkpoint_bytes", "anchors.public_vm_tokens_per_second_cpu"}) {
    expect_positive(j, f);
  }
  // Whether the chip's free-running tokens equal the reference's is reported (not judged here).
  EXPECT_TRUE(j["chip"]["single"]["agrees_with_reference"].is_boolean()) << j["chip"].dump();
  EXPECT_TRUE(j["chip"]["batched"]["agrees_with_reference"].is_boolean()) << j["chip"].dump();
  // The first differing step is a 1-based step, or null when there is none (it was 0, a step
  // number that reads as "differs at once").
  for (const char* row : {"single", "batched"}) {
    const json& r = j["chip"][row];
    if (r["agrees_with_reference"] == true)
      EXPECT_TRUE(r["first_difference_step"].is_null()) << r.dump();
    else
      EXPECT_GT(r["first_difference_step"].get<std::int64_t>(), 0) << r.dump();
  }
  // The build's chip file is there (rv32_chip_file): its size and load time.
  if (fs::exists(fs::path(LOCKSTEP_BINARY_DIR) / "chips" / "rv32.chip")) {
    expect_positive(j, "chip.file_bytes");
    expect_positive(j, "chip.load_seconds");
  } else {
    expect_positive(j, "chip.compile_seconds");
  }
  // qemu-riscv32 beside the reference, or why not.
  ASSERT_TRUE(j["qemu"].is_object());
  if (j["qemu"].contains("reference_over_qemu")) {
    expect_positive(j, "qemu.instructions_per_second");
    expect_positive(j, "qemu.seconds_per_run");
    expect_positive(j, "qemu.reference_over_qemu");
  } else {
    expect_skipped(j["qemu"], "qemu");
  }
  // The CUDA executor's figures, or one line saying why not (no CUDA build, no device).
  ASSERT_TRUE(j["cuda"].is_object());
  if (j["cuda"].contains("skipped")) {
    expect_skipped(j["cuda"], "cuda");
  } else {
    expect_positive(j, "cuda.single_host_steps.tokens_per_second");
    expect_positive(j, "cuda.single_device_run.tokens_per_second");
    expect_positive(j, "cuda.batched_device_run.tokens_per_second");
  }
  // Story guests: figures, or why they were skipped.
  for (const char* s : {"stories_c", "stories_vx"}) {
    ASSERT_TRUE(j["stories"].contains(s)) << j.dump();
    const json& st = j["stories"][s];
    if (st.contains("skipped")) {
      expect_skipped(st, s);
    } else {
      expect_positive(j, std::string("stories.") + s + ".steps");
      expect_positive(j, std::string("stories.") + s + ".story_tokens");
      expect_positive(j, std::string("stories.") + s + ".trace_tokens_per_story_token");
    }
  }
  // The lock-step rates (reference and CPU executor, every step compared): the scalar guest's 20,000
  // steps with 0 mismatches, and the story's first 20,000 beside it, or why not.
  ASSERT_TRUE(j["lockstep"].is_object()) << j.dump();
  EXPECT_EQ(j["lockstep"]["scalar"]["steps"], 20000) << j["lockstep"].dump();
  EXPECT_EQ(j["lockstep"]["scalar"]["mismatches"], 0) << j["lockstep"].dump();
  expect_positive(j, "lockstep.scalar.steps_per_cpu_second");
  if (j["lockstep"]["story"].contains("skipped")) {
    expect_skipped(j["lockstep"]["story"], "lockstep.story");
  } else {
    EXPECT_EQ(j["lockstep"]["story"]["steps"], 20000) << j["lockstep"].dump();
    EXPECT_EQ(j["lockstep"]["story"]["mismatches"], 0) << j["lockstep"].dump();
    expect_positive(j, "lockstep.story.steps_per_cpu_second");
    expect_positive(j, "lockstep.story_over_scalar");
  }
  ASSERT_TRUE(j["story_check"].is_object());
  if (!j["story_check"].contains("skipped")) {
    expect_positive(j, "story_check.steps");
    expect_positive(j, "story_check.wall_seconds");
  }
  // The human table went to stderr.
  EXPECT_NE(r.err.find("reference, untraced"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
}

// --cuda-only (the device pack's bench): the reference, the chip file and the CUDA executor (or
// why it was skipped); qemu, the CPU executor, the protocol and the stories are left out. Without
// a CUDA device nothing asked for was measured: status error, exit 2, one line (before: exact, 0).
TEST(LockstepBench, CudaOnlyLeavesTheRestOut) {
  if (!have_directed_guest()) GTEST_SKIP() << "no directed guest built in " << LOCKSTEP_BINARY_DIR << "/guests";
  const Result r = run({"bench", "--quick", "--cuda-only", "--steps", "2000", "--cuda-streams", "4", "--json"});
  const json j = json::parse(r.out);
  ASSERT_TRUE(j["cuda"].is_object()) << r.out;
  if (j["cuda"].contains("skipped")) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(j["status"], "error");
    EXPECT_NE(r.err.find("lockstep: error: --cuda-only: the CUDA executor was not measured (CUDA executor: "),
              std::string::npos) << r.err;
  } else {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(j["status"], "exact");
  }
  expect_positive(j, "reference.trace_tokens_per_second");
  expect_positive(j, "chip.d_model");
  EXPECT_EQ(j["qemu"]["skipped"], "--cuda-only") << j["qemu"].dump();
  EXPECT_EQ(j["chip"]["skipped"], "--cuda-only") << j["chip"].dump();
  EXPECT_FALSE(j["chip"].contains("single")) << j["chip"].dump();
  EXPECT_FALSE(j.contains("dut")) << j.dump();
  EXPECT_EQ(j["stories"]["skipped"], "--cuda-only") << j["stories"].dump();
  EXPECT_EQ(j["lockstep"]["skipped"], "--cuda-only") << j["lockstep"].dump();
  ASSERT_TRUE(j["cuda"].is_object());
  if (j["cuda"].contains("skipped")) {
    expect_skipped(j["cuda"], "cuda");
  } else {
    expect_positive(j, "cuda.single_device_run.tokens_per_second");
    expect_positive(j, "cuda.batched_device_run.tokens_per_second");
  }
}

// The figures are of whole runs of a guest that exits, at least as long as the rows check (found
// by an outside tester: a 13-step guest gave "40000 steps, every token equal to the reference's",
// and a trapping one exited 0). A chip under test that cannot be reached is one error line (it is
// now started before the other measurements, not after a minute of them).
TEST(LockstepBench, AGuestShorterThanItsRowsOrThatTrapsIsRefused) {
  const fs::path nodata = fs::path(LOCKSTEP_BINARY_DIR) / "guests" / "nodata.elf";
  if (!fs::exists(nodata)) GTEST_SKIP() << "no directed guest nodata.elf";
  const Result r = run({"bench", "--quick", "--guest", nodata.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("lockstep: error: --guest: " + nodata.string() + " exits after 13 trace steps, fewer than the 40000"),
            std::string::npos)
      << r.err;
  const Result dut = run({"bench", "--quick", "--dut-connect", "unix:/nonexistent/lockstep-bench.sock"});
  EXPECT_EQ(dut.exit_code, 2) << dut.err;
  EXPECT_NE(dut.err.find("cannot connect"), std::string::npos) << dut.err;
}

TEST(LockstepBench, BadInputIsOneLineExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bench", "--steps", "0"}, {"bench", "--streams", "0"},
        {"bench", "--lockstep-steps", "0"}, {"bench", "--cuda-streams", "0"},
        {"bench", "--guest", "/nonexistent/guest.elf"}}) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("lockstep: error: ", 0), 0u) << r.err;
  }
}
