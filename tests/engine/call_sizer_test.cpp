// CallSizer: how many steps a stream the engine asks a chip for in one call, on modelled chips
// (a call of n steps of s streams takes latency + n * s * per_step seconds).
#include "lockstep/engine/call_sizer.h"

#include <gtest/gtest.h>

namespace lockstep::engine {
namespace {

struct ModelChip {
  double latency = 0, per_step = 0;
  double call(std::uint32_t steps, std::size_t streams) const {
    return latency + static_cast<double>(steps) * static_cast<double>(streams) * per_step;
  }
};

// Runs `calls` calls; returns the longest.
double run(CallSizer& sizer, const ModelChip& chip, std::size_t streams, int calls) {
  double longest = 0;
  for (int i = 0; i < calls; ++i) {
    const double t = chip.call(sizer.steps(), streams);
    longest = std::max(longest, t);
    sizer.took(t);
  }
  return longest;
}

TEST(CallSizer, WithoutADeadlineStartsAt64AndGrowsToItsLimit) {
  CallSizer sizer(4096, 0, 32);
  EXPECT_EQ(sizer.steps(), 64u);
  run(sizer, {0, 1e-7}, 32, 20);
  EXPECT_EQ(sizer.steps(), 4096u);
}

TEST(CallSizer, AChipThatSlowsAHundredTimesNeverOutlastsItsDeadline) {
  // The outside tester's chip: about 24 us a step, then 2 ms a step, under --dut-timeout 5
  // (the engine grew its calls to 4,096 steps, 8 s at the new speed, and failed a correct chip).
  for (const double deadline : {1.0, 5.0, 120.0}) {
    for (const std::size_t streams : {std::size_t{1}, std::size_t{32}}) {
      CallSizer sizer(4096, deadline, streams);
      const double fast = 0.002 / 100;
      run(sizer, {0, fast}, streams, 40);
      const double slow_call = ModelChip{0, fast * 100}.call(sizer.steps(), streams);
      EXPECT_LT(slow_call, deadline) << "deadline " << deadline << " s, streams " << streams << ", "
                                     << sizer.steps() << " steps a stream";
    }
  }
}

TEST(CallSizer, ManyStreamsStartWithSixtyFourStreamStepsUnderADeadline) {
  EXPECT_EQ(CallSizer(4096, 5, 32).steps(), 2u);
  EXPECT_EQ(CallSizer(4096, 5, 1).steps(), 64u);
  EXPECT_EQ(CallSizer(4096, 5, 1000).steps(), 1u);
  EXPECT_EQ(CallSizer(16, 5, 1).steps(), 16u);
  EXPECT_EQ(CallSizer(0, 0, 1).steps(), 1u);
}

TEST(CallSizer, ASlowChipShrinksItsCallsToTheSlowestItCanTake) {
  // 50 ms a step under --dut-timeout 5: calls shrink until one takes under 5 / 128 s... to one step
  CallSizer sizer(4096, 5, 1);
  const double longest_after = [&] {
    run(sizer, {0, 0.05}, 1, 10);
    return run(sizer, {0, 0.05}, 1, 10);
  }();
  EXPECT_EQ(sizer.steps(), 1u);
  EXPECT_LT(longest_after, 5.0);
}

TEST(CallSizer, AFixedLatencyDoesNotCollapseCallsToOneStep) {
  // 0.6 s a request, whatever its size (the outside tester's chip fell to one step a request,
  // 1.6 steps/s): halving from 64 to 32 did not help, so 32 it stays
  CallSizer sizer(4096, 5, 1);
  run(sizer, {0.6, 1e-6}, 1, 30);
  EXPECT_EQ(sizer.steps(), 32u);
}

TEST(CallSizer, ACallCutShortIsScaledUpToTheSizeItStoodFor) {
  // 100 us a step under --dut-timeout 5 (grow under 5/512 s, halve past 5/128 s): 64 steps take
  // 6.4 ms and grow to 128 (12.8 ms), where calls stay
  const ModelChip chip{0, 1e-4};
  CallSizer sizer(4096, 5, 1);
  run(sizer, chip, 1, 10);
  ASSERT_EQ(sizer.steps(), 128u);
  // a call cut to 8 steps by a checkpoint boundary takes 0.8 ms: as 128 steps it would take
  // 12.8 ms, too long to grow on (read as a call of 128 steps, it grew calls to 256)
  sizer.took(chip.call(8, 1), 8);
  EXPECT_EQ(sizer.steps(), 128u);
  // a short call that would be fast at full size still lets calls grow
  CallSizer fast(4096, 5, 1);
  fast.took(ModelChip{0, 1e-6}.call(8, 1), 8);
  EXPECT_EQ(fast.steps(), 128u);
  // and a short call past the halving bound still halves
  CallSizer slow(4096, 5, 1);
  slow.took(ModelChip{0, 0.01}.call(8, 1), 8);
  EXPECT_EQ(slow.steps(), 32u);
}

}  // namespace
}  // namespace lockstep::engine
