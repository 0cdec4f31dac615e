// stories_vx (stories260K on the vector unit, docs/spec/vector.md section 7) through the built
// RV32 chip and the reference in lock-step, every step compared: 0 mismatches, on the guest built
// over the real checkpoint (stories_vx.elf, when the models were found at configure time) and on
// the one built over the synthetic checkpoint (stories_vx_synthetic.elf).
//
// The default suite runs the first 30,000 steps teacher-forced (the model's first RMSNorm, its
// first VQs and VMATs). The `long` label (ctest -L long -R chip_stories_vx) runs the whole default
// story free-running to the guest's exit, and prints its steps, its wall time and the trace
// tokens per story token.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "lockstep/engine/check.h"
#include "lockstep/engine/engine.h"

namespace lockstep::engine {
namespace {

namespace fs = std::filesystem;

#ifdef LOCKSTEP_CHIP_STORIES_FULL
constexpr bool kFull = true;
#else
constexpr bool kFull = false;
#endif
constexpr std::uint64_t kForcedSteps = 30000;
constexpr int kStoryTokens = LOCKSTEP_STORIES_VX_TOKENS;  // the images' count (CMake cache)

fs::path guest_path(const std::string& name) { return fs::path(LOCKSTEP_BINARY_DIR) / "guests" / (name + ".elf"); }

void run_story(const std::string& name) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const fs::path path = guest_path(name);
  if (!fs::exists(path)) GTEST_SKIP() << path << " not built";
  const LoadedChip chip = load_chip_or_built("");
  auto backend = make_backend("cpu", chip.chip);
  Options opt;
  opt.mode = kFull ? Mode::kFree : Mode::kForced;
  opt.max_steps = kFull ? 0 : kForcedSteps;
  opt.classify_window = 64;
  Engine engine(*backend, {read_guest(path)}, opt);
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = engine.run();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.streams.size(), 1u);
  const StreamResult& st = r.streams[0];
  EXPECT_EQ(st.mismatches, 0u) << name << ": " << st.to_json().dump();
  if (kFull) {
    EXPECT_EQ(st.end, "exit") << name << ": " << st.to_json().dump();
    std::cout << "[ story    ] " << name << " free-running on the chip: " << r.steps << " steps, 0 mismatches, " << secs
              << " s, " << static_cast<double>(r.steps) / kStoryTokens << " trace tokens per story token (" << kStoryTokens
              << " story tokens)\n";
  } else {
    EXPECT_EQ(r.steps, kForcedSteps) << name << ": " << st.to_json().dump();
    std::cout << "[ story    ] " << name << " teacher-forced on the chip: the first " << r.steps << " steps, 0 mismatches, "
              << secs << " s\n";
  }
}

TEST(ChipStoriesVx, RealCheckpoint) { run_story("stories_vx"); }
TEST(ChipStoriesVx, SyntheticCheckpoint) { run_story("stories_vx_synthetic"); }

}  // namespace
}  // namespace lockstep::engine
