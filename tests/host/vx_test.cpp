// The vx golden model: tables equal vector.md §3, ops on hand-worked values (vector.md §4),
// token counts (§5, §7.3), image layout (§2.6, §7.1), and the story's first tokens.
#include <gtest/gtest.h>

#include <cstring>

#include "story.h"
#include "test_support.h"
#include "vx.h"

namespace lockstep::host {
namespace {

std::string table_sha(const std::int32_t* v, std::size_t n) {
  std::vector<std::uint8_t> b(4 * n);
  std::memcpy(b.data(), v, 4 * n);  // x86/ARM hosts are little-endian
  return sha256_hex(b);
}

TEST(VxTables, MatchVectorMdHashes) {
  const VxTables t;
  EXPECT_EQ(table_sha(t.exp.data(), 1024), "c26fdf2176392e1aead5d77178e3b9cbf85a7cbf9123ef286913801863464ef6");
  EXPECT_EQ(table_sha(t.rsq.data() + 64, 192), "5cdab279aceba054bf27e1fea6109f71d6346b53a763d3042cf8fa38bf6624be");
  EXPECT_EQ(table_sha(t.rcp.data() + 128, 128), "8e96bf1297d74ac9d1f25a71caa311bd45e00363a3cda27682a2870faafecab7");
  EXPECT_EQ(table_sha(t.sig.data(), 1024), "db76a69faaeb9466f873c355fb8f113de0bf1067f43be90956ef9e341acff076");
  EXPECT_EQ(table_sha(t.cos.data(), 256), "e97b07cdcd8c1d45b841124e9235cc2a25f76c3d68e991cac3bf7de3ae60f8af");
  EXPECT_EQ(table_sha(t.sin.data(), 256), "785e46430e76bd9b40b2072bc71c1ad7597a6d942ea8f0a3de04d5156ea39f1f");
  EXPECT_EQ(t.exp[0], 65536);
  EXPECT_EQ(t.exp[754], 1);
  EXPECT_EQ(t.exp[755], 0);
  EXPECT_EQ(t.sig[512], 32768);
  EXPECT_EQ(t.rsq[64], 16712062);
  EXPECT_EQ(t.rcp[128], 1069563840);
}

// A unit over an all-zero image (no weights needed by these ops).
struct VxOps : ::testing::Test {
  VxImage img = [] {
    VxImage i;
    i.wmem.assign(static_cast<std::size_t>(kChunks) * 64, 0);
    i.wscale.assign(kChunks, 0);
    return i;
  }();
  VxUnit u{img};
  void SetUp() override { u.record = true; }
};

TEST_F(VxOps, VmatOneChunk) {
  // ACT block 0 = 1, 2, 3, 0...; chunk 7 = 7, -8, 1, 0...; scale 0x8000 (0.5); ASH 4.
  u.act[0] = 1; u.act[1] = 2; u.act[2] = 3;
  img.wmem[7 * 64 + 0] = 7; img.wmem[7 * 64 + 1] = -8; img.wmem[7 * 64 + 2] = 1;
  img.wscale[7] = 0x8000;
  u.aexp[0] = 4;
  u.vmat(100, 0, 7, 1, 1, false);
  // acc = 7 - 16 + 3 = -6; y = rnd(-6 * 32768 * 16, 16) = -48
  EXPECT_EQ(u.vreg[100], -48);
  ASSERT_EQ(u.trace.size(), 1u);
  EXPECT_EQ(u.trace[0].kind, 33);     // vector.md §5: VMC0, chunk j = 0
  EXPECT_EQ(u.trace[0].payload, 0);   // of row r = 0
}

TEST_F(VxOps, VqPerGroupShiftsAndPadding) {
  u.vreg[10] = 300;   // group 0 amax 300 -> e = 2 (rnd(300,1)=150 > 127, rnd(300,2)=75)
  u.vreg[11] = -301;  // rnd(-301, 2) = floor(-299/4) = -75
  u.vreg[74] = 5;     // group 1 (i = 64): amax 5 -> e = 0
  u.vq(0, 2, 10, 65);
  EXPECT_EQ(u.act[128], 75);
  EXPECT_EQ(u.act[129], -75);
  EXPECT_EQ(u.act[192], 5);
  EXPECT_EQ(u.act[193], 0);  // padding
  EXPECT_EQ(u.aexp[2], 2);
  EXPECT_EQ(u.aexp[3], 0);
  ASSERT_EQ(u.trace.size(), 4u);
  // vector.md §5: VQE (42) = (k << 5) | e_k, VQB (43) = (k << 5) | lo5(sum)
  EXPECT_EQ(u.trace[0].kind, 42); EXPECT_EQ(u.trace[0].payload, 2);
  EXPECT_EQ(u.trace[1].kind, 43); EXPECT_EQ(u.trace[1].payload, 0);  // 75 - 75
  EXPECT_EQ(u.trace[2].kind, 42); EXPECT_EQ(u.trace[2].payload, 32 + 0);
  EXPECT_EQ(u.trace[3].kind, 43); EXPECT_EQ(u.trace[3].payload, 32 + 5);
}

TEST_F(VxOps, TableFunctionsAtOne) {
  u.vreg[0] = 65536;
  u.vfn(0, 1, 0, 1);
  EXPECT_EQ(u.vreg[1], 65281);  // RSQRT(1.0), vector.md §4.6
  u.vfn(1, 2, 0, 1);
  EXPECT_EQ(u.vreg[2], 65281);  // RECIP(1.0)
  u.vreg[3] = 0;
  u.vfn(1, 4, 3, 1);
  EXPECT_EQ(u.vreg[4], 2147483647);  // RECIP(0): u = 1, RCP[128] << 2 saturates
  u.vfn(2, 5, 0, 1);
  // SILU(1.0): ix = 64 + 512, SIG[576] = nearest(65536 * sigmoid(1)) = 47911
  EXPECT_EQ(u.vreg[5], 47911);
}

TEST_F(VxOps, VexpMaxSumAndTokens) {
  // one group, T = 3: scores 0, -65536 (1.0 below), 0
  u.vreg[512] = 0; u.vreg[513] = -65536; u.vreg[514] = 0;
  u.vexp(1, 512, 512, 500, 3);
  EXPECT_EQ(u.vreg[512], 65536);
  EXPECT_EQ(u.vreg[513], 24109);  // EXP[64] = nearest(65536 / e)
  EXPECT_EQ(u.vreg[514], 65536);
  EXPECT_EQ(u.vreg[500], 65536 * 2 + 24109);
  ASSERT_EQ(u.trace.size(), 2u);
  // vector.md §5: VXM (54) = (g << 5) | lo5(m), VXS (55) = (g << 5) | lo5(S); S = 155181
  EXPECT_EQ(u.trace[0].kind, 54); EXPECT_EQ(u.trace[0].payload, 0);
  EXPECT_EQ(u.trace[1].kind, 55); EXPECT_EQ(u.trace[1].payload, 13);
}

TEST(VxModelTest, TokensPerStoryToken) {
  const VxImage img = convert_vx(synthetic_checkpoint(), VxQuant::kRtn);
  VxModel m(img);
  for (int pos = 0; pos < 4; ++pos) {
    const auto before = m.unit.tokens;
    m.forward(pos == 0 ? 1 : 7, pos);
    // vector.md §7.3 (trace-v2): 4,508 + 10T tokens (the argmax's 4 W included), T = pos + 1
    EXPECT_EQ(m.unit.tokens - before, 4508u + 10u * static_cast<unsigned>(pos + 1)) << "pos " << pos;
  }
}

TEST(VxImageTest, SectionSizesAndPacking) {
  const VxImage img = convert_vx(synthetic_checkpoint(), VxQuant::kRtn);
  const auto wm = img.wmem_section(), ws = img.wscale_section();
  EXPECT_EQ(wm.size(), 132864u);
  EXPECT_EQ(ws.size(), 8304u);
  EXPECT_EQ(img.emb.size(), 512u * 68u);
  for (std::size_t k = 0; k < 64; ++k) {  // first two chunks: low nibble = even weight
    EXPECT_EQ(static_cast<std::int8_t>(static_cast<std::uint8_t>(wm[k] << 4)) >> 4, img.wmem[2 * k]);
    EXPECT_EQ(static_cast<std::int8_t>(wm[k]) >> 4, img.wmem[2 * k + 1]);
  }
  for (auto w : img.wmem) {
    EXPECT_GE(w, -8);
    EXPECT_LE(w, 7);
  }
  EXPECT_EQ(ws[0] | (ws[1] << 8), img.wscale[0]);
}

TEST(VxGolden, SyntheticFirstTokens) {
  const Checkpoint ck = synthetic_checkpoint();
  const std::vector<int> want_gptq = {246, 6, 6, 6, 455, 334, 298, 489};
  EXPECT_EQ(greedy_vx(convert_vx(ck), 8), want_gptq);
  const std::vector<int> want_rtn = {246, 6, 148, 172, 489, 127, 458, 108};
  EXPECT_EQ(greedy_vx(convert_vx(ck, VxQuant::kRtn), 8), want_rtn);
}

TEST(VxGolden, RealStoryBegins) {
  const auto m = test::real_model();
  if (!m) GTEST_SKIP() << "stories260K.bin/tok512.bin not found (set LOCKSTEP_MODELS or put them in ../shared/models)";
  const auto toks = greedy_vx(convert_vx(m->ck), 20);
  std::vector<int> with_bos{1};
  with_bos.insert(with_bos.end(), toks.begin(), toks.end());
  const std::string text = m->tok.decode_all(with_bos);
  EXPECT_EQ(text.rfind("Once upon a time, there was a little girl named Lily", 0), 0u) << text;
}

}  // namespace
}  // namespace lockstep::host
