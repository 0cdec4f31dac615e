// ShadowedBackend (engine/include/lockstep/engine/shadow.h): the chip file stepped beside a chip
// under test follows its inputs in every kind of call, and its snapshots carry both states. Both
// sides are the CPU executor of the built chip here, so the shadow's token is the chip under
// test's at every step.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/engine/shadow.h"
#include "test_guest.h"

namespace lockstep::engine {
namespace {

struct Pair {
  LoadedChip chip = load_chip_or_built("");
  ShadowedBackend be{std::make_unique<chip::CpuExecutor>(chip.chip, 1), std::make_unique<chip::CpuExecutor>(chip.chip, 1),
                     "built.chip", chip.hash};
  chip::GuestImage image = to_chip_image(testing::make_loop_guest(50).image);
};

TEST(ShadowedBackend, FollowsFreeRunningStepsWithTheChipUnderTestsOwnTokens) {
  Pair p;
  p.be.reset(0, p.image);
  ASSERT_TRUE(p.be.in_step(0));
  EXPECT_FALSE(p.be.last_token(0).has_value());
  const std::vector<chip::Token> out = p.be.free_running(0, 0, 40);  // START, then its own tokens
  ASSERT_EQ(out.size(), 40u);
  EXPECT_TRUE(p.be.in_step(0)) << p.be.out_of_step_why(0);
  EXPECT_EQ(p.be.last_token(0), out.back());
  EXPECT_EQ(p.be.shadow().steps(0), 40u);
  EXPECT_EQ(p.be.shadow().hash(0), p.be.dut().hash(0));  // the same chip, the same inputs

  // free_running_batch_expecting: the shadow follows up to and including the first miss.
  std::vector<chip::Token> expected(out.begin(), out.end());
  p.be.reset(0, p.image);
  expected[9] ^= 1;  // a miss at the tenth entry
  const chip::StreamId s = 0;
  const std::uint32_t count = 40;
  const chip::Token first = 0;
  std::vector<chip::Token> got(40);
  p.be.free_running_batch_expecting({&s, 1}, {&count, 1}, {&first, 1}, expected, got);
  EXPECT_EQ(p.be.shadow().steps(0), 10u);
  EXPECT_EQ(p.be.last_token(0), out[9]);
}

TEST(ShadowedBackend, SnapshotsCarryBothStatesAndPlainOnesPutTheShadowOutOfStep) {
  Pair p;
  p.be.reset(0, p.image);
  const std::vector<chip::Token> a = p.be.teacher_forced(0, std::vector<chip::Token>{0});
  const std::vector<std::uint8_t> joined = p.be.save(0);
  ASSERT_GE(joined.size(), 8u);
  EXPECT_EQ(std::string(joined.begin(), joined.begin() + 8), "LSSHADW1");
  const std::vector<chip::Token> later = p.be.free_running(0, a.back(), 30);

  p.be.reset(0, p.image);
  p.be.restore(0, joined);
  EXPECT_TRUE(p.be.in_step(0)) << p.be.out_of_step_why(0);
  EXPECT_EQ(p.be.shadow().steps(0), 1u);
  EXPECT_EQ(p.be.free_running(0, a.back(), 30), later);
  EXPECT_EQ(p.be.last_token(0), later.back());

  // The chip under test's bytes alone (a snapshot written without --dut-chip).
  p.be.reset(0, p.image);
  p.be.teacher_forced(0, std::vector<chip::Token>{0});
  const std::vector<std::uint8_t> plain = p.be.dut().save(0);
  p.be.restore(0, plain);
  EXPECT_FALSE(p.be.in_step(0));
  EXPECT_NE(p.be.out_of_step_why(0).find("without the chip file's state"), std::string::npos) << p.be.out_of_step_why(0);
  p.be.free_running(0, a.back(), 5);  // the chip under test runs on; the shadow stays out of step
  EXPECT_FALSE(p.be.in_step(0));
  p.be.reset(0, p.image);  // until the next reset
  EXPECT_TRUE(p.be.in_step(0));
}

}  // namespace
}  // namespace lockstep::engine
