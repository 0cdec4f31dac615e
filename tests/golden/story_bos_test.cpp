// A generated BOS ends the story (issue 28, class 4; docs/guests.md), as in llama2.c: the host
// golden models (float32 greedy_float, vector-unit greedy_vx) stop there and do not return BOS.
// The model: the synthetic checkpoint with a separate classifier whose BOS row is the
// direction of the final normalised hidden state at position kBosAt, scaled so that BOS wins
// there by a clear margin and loses at every earlier position.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bos_model.h"
#include "story.h"
#include "vx.h"

namespace lockstep::host {
namespace {

TEST(StoryBos, TheModelPrefersBosAtItsPosition) {
  const Checkpoint ck = bos_preferring_checkpoint();
  EXPECT_FALSE(ck.config.shared_classifier);
  // Decoding through BOS shows where the classifier prefers it.
  const std::vector<int> through = greedy_float(ck, 8, AtBos::kContinue);
  ASSERT_EQ(through.size(), 8u);
  EXPECT_EQ(through[kBosAt], kBosToken);
  for (int p = 0; p < kBosAt; ++p) EXPECT_NE(through[static_cast<std::size_t>(p)], kBosToken) << p;
  // The unmodified synthetic model's first tokens are the same up to there.
  const std::vector<int> plain = greedy_float(synthetic_checkpoint(), kBosAt, AtBos::kContinue);
  EXPECT_EQ(std::vector<int>(through.begin(), through.begin() + kBosAt), plain);
}

TEST(StoryBos, FloatGreedyStopsAtBos) {
  const Checkpoint ck = bos_preferring_checkpoint();
  const std::vector<int> story = greedy_float(ck, 63);
  const std::vector<int> through = greedy_float(ck, 63, AtBos::kContinue);
  ASSERT_EQ(story.size(), static_cast<std::size_t>(kBosAt));  // 63 before the fix
  EXPECT_EQ(story, (std::vector<int>{246, 246, 6}));
  EXPECT_EQ(story, std::vector<int>(through.begin(), through.begin() + kBosAt));
  // The synthetic model (no BOS within 63 tokens) is unchanged: 63 tokens either way.
  EXPECT_EQ(greedy_float(synthetic_checkpoint(), 63).size(), 63u);
}

TEST(StoryBos, VxGreedyStopsAtBos) {
  const VxImage img = convert_vx(bos_preferring_checkpoint(), VxQuant::kRtn);
  const std::vector<int> through = greedy_vx(img, 8, kCachePositions, AtBos::kContinue);
  ASSERT_EQ(through.size(), 8u);
  // The int4 build prefers BOS one position earlier than float32 (after 246 6, where float32
  // has 246 246 6): the story is what comes before its first BOS.
  EXPECT_EQ(std::vector<int>(through.begin(), through.begin() + 4), (std::vector<int>{246, 6, 1, 1}));
  const std::vector<int> story = greedy_vx(img, 63);
  EXPECT_EQ(story, (std::vector<int>{246, 6}));  // 63 tokens before the fix
  EXPECT_EQ(greedy_vx(img, 2), story);
  EXPECT_EQ(greedy_vx(img, 1), std::vector<int>{246});
}

}  // namespace
}  // namespace lockstep::host
