// Synthetic model determinism, float32 forward pass, genuineness check on the real model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "story.h"
#include "test_support.h"
#include "vx.h"

namespace lockstep::host {
namespace {

TEST(Synthetic, DeterministicFromSeed) {
  std::printf("synthetic seed: 0x%016llX\n", static_cast<unsigned long long>(kSyntheticSeed));
  const Checkpoint a = synthetic_checkpoint(), b = synthetic_checkpoint(kSyntheticSeed);
  EXPECT_EQ(a.w.token_embedding, b.w.token_embedding);
  EXPECT_EQ(a.w.w2, b.w.w2);
  EXPECT_EQ(a.w.rms_final, b.w.rms_final);
  // Pinned values of the generator documented in story.h / docs/quality.md.
  EXPECT_FLOAT_EQ(a.w.token_embedding[0], 0.40179956f);
  EXPECT_FLOAT_EQ(a.w.token_embedding[1], 0.582373977f);
  EXPECT_FLOAT_EQ(a.w.rms_att[0], 1.02640057f);
  EXPECT_FLOAT_EQ(a.w.rms_final[63], 0.785797119f);
  const Checkpoint c = synthetic_checkpoint(kSyntheticSeed + 1);
  EXPECT_NE(a.w.token_embedding, c.w.token_embedding);
}

TEST(Synthetic, SplitMix64FirstOutput) {
  // SplitMix64 reference value: state 0 -> first output 0xE220A8397B1DCDAF.
  SplitMix64 r{0};
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFull);
}

TEST(FloatModel, SyntheticGreedyTokens) {
  const Checkpoint ck = synthetic_checkpoint();
  const std::vector<int> want = {246, 246, 6, 6, 492, 200, 334, 334};
  EXPECT_EQ(greedy_float(ck, 8), want);
}

TEST(FloatModel, RealGreedyStory) {
  const auto m = test::real_model();
  if (!m) GTEST_SKIP() << "stories260K.bin/tok512.bin not found (set LOCKSTEP_MODELS or put them in ../shared/models)";
  const auto toks = greedy_float(m->ck, 63);
  std::vector<int> with_bos{1};
  with_bos.insert(with_bos.end(), toks.begin(), toks.end());
  const std::string text = m->tok.decode_all(with_bos);
  EXPECT_EQ(text.rfind("Once upon a time, there was a little girl named Lily. She loved to play "
                       "outside in the park. One day, she saw a big, red ball.", 0), 0u)
      << text;
  const auto res = check_genuine(*m);
  EXPECT_TRUE(res.first) << res.second;
}

TEST(FloatModel, TransposedCopyIsDetected) {
  const auto m = test::real_model();
  if (!m) GTEST_SKIP() << "stories260K.bin/tok512.bin not found (set LOCKSTEP_MODELS or put them in ../shared/models)";
  // Store every matrix transposed, as the broken public copy does: same size, same values.
  LoadedModel bad = *m;
  auto transpose = [](std::vector<float>& t, int layers, int rows, int cols) {
    std::vector<float> out(t.size());
    for (int l = 0; l < layers; ++l)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          out[static_cast<std::size_t>(l * rows * cols + c * rows + r)] = t[static_cast<std::size_t>(l * rows * cols + r * cols + c)];
    t = out;
  };
  transpose(bad.ck.w.wq, 5, 64, 64);
  transpose(bad.ck.w.wk, 5, 32, 64);
  transpose(bad.ck.w.wv, 5, 32, 64);
  transpose(bad.ck.w.wo, 5, 64, 64);
  transpose(bad.ck.w.w1, 5, 172, 64);
  transpose(bad.ck.w.w2, 5, 64, 172);
  transpose(bad.ck.w.w3, 5, 172, 64);
  const auto bytes = serialize_checkpoint(bad.ck);
  EXPECT_EQ(bytes.size(), 1056540u);  // the file size cannot tell
  bad.ck = parse_checkpoint(bytes, "transposed.bin");
  bad.checkpoint_sha256 = sha256_hex(bytes);
  bad.description = "transposed.bin (sha256 " + bad.checkpoint_sha256 + ")";
  const auto res = check_genuine(bad);
  EXPECT_FALSE(res.first) << res.second;
  EXPECT_NE(res.second.find("SHA-256 differs"), std::string::npos) << res.second;
  EXPECT_NE(res.second.find("does not begin"), std::string::npos) << res.second;
}

// A changed tokenizer beside the genuine checkpoint is not genuine, and a story it decodes
// otherwise is put down to the tokenizer, not to transposed matrices (found by an outside
// tester: " Lily" changed to " Lucy" in tok512.bin was called genuine by its hash alone).
TEST(FloatModel, AChangedTokenizerIsNotGenuine) {
  auto m = test::real_model();
  if (!m) GTEST_SKIP() << "stories260K.bin/tok512.bin not found (set LOCKSTEP_MODELS or put them in ../shared/models)";
  auto it = std::find(m->tok.pieces.begin(), m->tok.pieces.end(), " Lily");
  ASSERT_NE(it, m->tok.pieces.end());
  *it = " Lucy";
  m->tokenizer_sha256 = std::string(64, '0');
  const auto res = check_genuine(*m);
  EXPECT_FALSE(res.first) << res.second;
  EXPECT_NE(res.second.find("checkpoint SHA-256 matches; tokenizer SHA-256 differs from the genuine tok512"),
            std::string::npos)
      << res.second;
  EXPECT_NE(res.second.find("(the tokenizer decodes the genuine checkpoint's tokens otherwise)"), std::string::npos)
      << res.second;
}

// A checkpoint the float model's cache cannot hold a position of is refused, never written past
// (found by an outside tester: seq_len 32 corrupted the heap in the vx converter's calibration).
TEST(FloatModel, APositionOrTokenOutsideTheCheckpointIsAnError) {
  Checkpoint ck = synthetic_checkpoint();
  ck.config.seq_len = 4;
  FloatModel fm(ck);
  for (int pos = 0; pos < 4; ++pos) (void)fm.forward(1, pos);
  EXPECT_THROW((void)fm.forward(1, 4), ModelError);
  FloatModel fresh(ck);
  EXPECT_THROW((void)fresh.forward(512, 0), ModelError);
  EXPECT_THROW((void)fresh.forward(-1, 0), ModelError);
  EXPECT_EQ(vector_build_refusal(synthetic_checkpoint().config), "");
  EXPECT_EQ(vector_build_refusal(ck.config), "seq_len 4, below the 256 its calibration runs");
  EXPECT_THROW((void)convert_vx(ck, VxQuant::kRtn), ModelError);
}

}  // namespace
}  // namespace lockstep::host
