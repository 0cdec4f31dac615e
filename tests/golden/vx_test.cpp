// The vx golden model: tables equal vector.md §3, ops on hand-worked values (vector.md §4),
// tokens (§5, trace-v3) and their counts (§7.3), image layout (§2.1, §7.1), and the story's first tokens.
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

// Reads a word stream (vector.md §5) back: VWG(p) sets the quad, kind 61 + 4q + m is byte m of
// element 4p + q.  Returns (e, value) in stream order; fails the test on a byte out of order.
std::vector<std::pair<int, std::int32_t>> read_words(const std::vector<VxToken>& t, std::size_t from, std::size_t to) {
  std::vector<std::pair<int, std::int32_t>> out;
  int quad = -1;
  std::uint32_t v = 0;
  for (std::size_t i = from; i < to; ++i) {
    if (t[i].kind == 43) { quad = t[i].payload; continue; }
    EXPECT_GE(t[i].kind, 61) << "token " << i;
    EXPECT_LE(t[i].kind, 76) << "token " << i;
    const int q = (t[i].kind - 61) / 4, m = (t[i].kind - 61) % 4;
    EXPECT_GE(quad, 0) << "token " << i << ": no VWG before the first word";
    if (m == 0) v = 0;
    else EXPECT_EQ(t[i - 1].kind, t[i].kind - 1) << "token " << i << ": bytes of a word out of order";
    v |= static_cast<std::uint32_t>(t[i].payload) << (8 * m);
    if (m == 3) out.emplace_back(4 * quad + q, static_cast<std::int32_t>(v));
  }
  return out;
}

TEST_F(VxOps, VmatOneChunk) {
  // ACT block 0 = 1, 2, 3, 0...; chunk 7 = 7, -8, 1, 0...; scale 0x8000 (0.5); ASH 4.
  u.act[0] = 1; u.act[1] = 2; u.act[2] = 3;
  img.wmem[7 * 64 + 0] = 7; img.wmem[7 * 64 + 1] = -8; img.wmem[7 * 64 + 2] = 1;
  img.wscale[7] = 0x8000;
  u.aexp[0] = 4;
  u.vmat(100, 0, 7, 1, 1, false);
  // acc = 7 - 16 + 3 = -6; y = rnd(-6 * 32768 * 16, 16) = -48 = 0xFFFFFFD0
  EXPECT_EQ(u.vreg[100], -48);
  // vector.md §5: VMC0 (33) of row 0, then VY0..VY3 (51..54), the bytes of y_0
  const std::vector<std::pair<int, int>> want = {{33, 0}, {51, 0xD0}, {52, 0xFF}, {53, 0xFF}, {54, 0xFF}};
  ASSERT_EQ(u.trace.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(u.trace[i].kind, want[i].first) << i;
    EXPECT_EQ(u.trace[i].payload, want[i].second) << i;
  }
}

TEST_F(VxOps, VmatArgmaxMarksEachNewMaximum) {
  // Rows y = 5, 5, 7, -1, 7 (ACT[0] = 1, ASH 16, scale 1: y_r = W[c][0]); chunks 20..24.
  u.act[0] = 1;
  u.aexp[0] = 16;
  const int w[5] = {5, 5, 7, -1, 7};
  for (int r = 0; r < 5; ++r) {
    img.wmem[static_cast<std::size_t>((20 + r) * 64)] = static_cast<std::int8_t>(w[r]);
    img.wscale[static_cast<std::size_t>(20 + r)] = 1;
  }
  EXPECT_EQ(u.vmat(0, 0, 20, 5, 1, true), 2);  // the first 7 (ties: lowest index)
  // vector.md §5: 5 tokens per row; byte 3 is VYN3 (55) when y_r beats every earlier row
  // (rows 0 and 2; the ties at rows 1 and 4 are not new maxima), else VY3 (54); then W(2).
  ASSERT_EQ(u.trace.size(), 5u * 5u + 4u);
  const int byte3_kind[5] = {55, 54, 55, 54, 54};
  for (int r = 0; r < 5; ++r) {
    const std::size_t b = static_cast<std::size_t>(5 * r);
    EXPECT_EQ(u.trace[b].kind, 33); EXPECT_EQ(u.trace[b].payload, r);
    EXPECT_EQ(u.trace[b + 1].kind, 51); EXPECT_EQ(u.trace[b + 1].payload, w[r] & 0xFF);
    EXPECT_EQ(u.trace[b + 2].kind, 52); EXPECT_EQ(u.trace[b + 2].payload, w[r] < 0 ? 0xFF : 0);
    EXPECT_EQ(u.trace[b + 3].kind, 53); EXPECT_EQ(u.trace[b + 3].payload, w[r] < 0 ? 0xFF : 0);
    EXPECT_EQ(u.trace[b + 4].kind, byte3_kind[r]) << "row " << r;
    EXPECT_EQ(u.trace[b + 4].payload, w[r] < 0 ? 0xFF : 0);
  }
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(u.trace[25 + static_cast<std::size_t>(k)].kind, 1 + k);  // W0..W3
    EXPECT_EQ(u.trace[25 + static_cast<std::size_t>(k)].payload, k == 0 ? 2 : 0);
  }
  // write mode: byte 3 is always VY3
  u.trace.clear();
  u.vmat(600, 0, 20, 5, 1, false);
  ASSERT_EQ(u.trace.size(), 25u);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(u.trace[static_cast<std::size_t>(5 * r + 4)].kind, 54);
}

TEST_F(VxOps, VmatHighRowToken) {
  // vector.md §5's example: K = 2, R = 300 in write mode is 1,801 tokens, VMH(1) before row 256.
  u.vmat(0, 0, 0, 300, 2, false);
  ASSERT_EQ(u.trace.size(), 1801u);
  EXPECT_EQ(u.trace[256 * 6].kind, 39);
  EXPECT_EQ(u.trace[256 * 6].payload, 1);
  EXPECT_EQ(u.trace[256 * 6 + 1].kind, 33);
  EXPECT_EQ(u.trace[256 * 6 + 1].payload, 0);
  EXPECT_EQ(u.trace.back().kind, 54);
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
  // vector.md §5: per group VQE (42) = (k << 5) | e_k, then its 64 block values (padding zeros
  // included) as elements j = 64k + i of one int8 stream: VLG (56) = j >> 2 when j & 3 = 0,
  // then VLB_{j & 3} (57 + (j & 3)) = lo8(q).  81 tokens per group.
  ASSERT_EQ(u.trace.size(), 162u);
  EXPECT_EQ(u.trace[0].kind, 42); EXPECT_EQ(u.trace[0].payload, 2);
  EXPECT_EQ(u.trace[1].kind, 56); EXPECT_EQ(u.trace[1].payload, 0);
  EXPECT_EQ(u.trace[2].kind, 57); EXPECT_EQ(u.trace[2].payload, 75);
  EXPECT_EQ(u.trace[3].kind, 58); EXPECT_EQ(u.trace[3].payload, 256 - 75);
  EXPECT_EQ(u.trace[4].kind, 59); EXPECT_EQ(u.trace[4].payload, 0);
  EXPECT_EQ(u.trace[6].kind, 56); EXPECT_EQ(u.trace[6].payload, 1);  // j = 4
  EXPECT_EQ(u.trace[80].kind, 60);                                   // j = 63
  EXPECT_EQ(u.trace[81].kind, 42); EXPECT_EQ(u.trace[81].payload, 32 + 0);
  EXPECT_EQ(u.trace[82].kind, 56); EXPECT_EQ(u.trace[82].payload, 16);  // j = 64
  EXPECT_EQ(u.trace[83].kind, 57); EXPECT_EQ(u.trace[83].payload, 5);
  EXPECT_EQ(u.trace[84].kind, 58); EXPECT_EQ(u.trace[84].payload, 0);  // padding
  EXPECT_EQ(u.trace[161].kind, 60); EXPECT_EQ(u.trace[161].payload, 0);
  // K row: one group of 32 values, 41 tokens
  u.trace.clear();
  u.vq(1, 3, 10, 32);
  EXPECT_EQ(u.kc[3 * 32 + 1], -75);
  EXPECT_EQ(u.ke[3], 2);
  ASSERT_EQ(u.trace.size(), 41u);
  EXPECT_EQ(u.trace[0].kind, 42); EXPECT_EQ(u.trace[0].payload, 2);
  EXPECT_EQ(u.trace[40].kind, 60); EXPECT_EQ(u.trace[40].payload, 0);
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
  // each VFN of one word: VWG(0), VW00..VW03 (vector.md §5); the last is 47911 = 0x0000BB27
  ASSERT_EQ(u.trace.size(), 4u * 5u);
  EXPECT_EQ(u.trace[15].kind, 43); EXPECT_EQ(u.trace[15].payload, 0);
  EXPECT_EQ(u.trace[16].kind, 61); EXPECT_EQ(u.trace[16].payload, 0x27);
  EXPECT_EQ(u.trace[17].kind, 62); EXPECT_EQ(u.trace[17].payload, 0xBB);
}

TEST_F(VxOps, VewFiveWords) {
  // vector.md §5's example: VEW with n = 5 is VWG(0) VW00..VW33 (words 0..3), VWG(1) VW00..VW03.
  for (int i = 0; i < 5; ++i) { u.vreg[static_cast<std::size_t>(i)] = 1000 * i - 2500; u.vreg[static_cast<std::size_t>(10 + i)] = i; }
  u.vew(0, 0, 20, 0, 10, 5);
  ASSERT_EQ(u.trace.size(), 22u);
  EXPECT_EQ(u.trace[0].kind, 43); EXPECT_EQ(u.trace[0].payload, 0);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(u.trace[static_cast<std::size_t>(1 + k)].kind, 61 + k);
  EXPECT_EQ(u.trace[17].kind, 43); EXPECT_EQ(u.trace[17].payload, 1);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(u.trace[static_cast<std::size_t>(18 + k)].kind, 61 + k);
  const auto words = read_words(u.trace, 0, u.trace.size());
  ASSERT_EQ(words.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(words[static_cast<std::size_t>(i)].first, i);
    EXPECT_EQ(words[static_cast<std::size_t>(i)].second, 1001 * i - 2500);  // e.g. -2500 = 0xFFFFF63C
  }
  EXPECT_EQ(u.trace[1].payload, 0x3C);
  EXPECT_EQ(u.trace[4].payload, 0xFF);
}

TEST_F(VxOps, VredGroupsThenOneWord) {
  for (int i = 0; i < 130; ++i) u.vreg[static_cast<std::size_t>(100 + i)] = i - 64;  // sum = 1 + ... = 65
  u.vred(1, 0, 5, 100, 130);  // SUM, SH 0
  EXPECT_EQ(u.vreg[5], 65);
  // vector.md §5: VRD(k) (41) for k = 0..2, then VWG(0) and the bytes of z: 8 tokens
  const std::vector<std::pair<int, int>> want = {{41, 0}, {41, 1}, {41, 2}, {43, 0}, {61, 65}, {62, 0}, {63, 0}, {64, 0}};
  ASSERT_EQ(u.trace.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(u.trace[i].kind, want[i].first) << i;
    EXPECT_EQ(u.trace[i].payload, want[i].second) << i;
  }
}

TEST_F(VxOps, VexpMaxSumAndTokens) {
  // one group, T = 3: scores 0, -65536 (1.0 below), 0
  u.vreg[512] = 0; u.vreg[513] = -65536; u.vreg[514] = 0;
  u.vexp(1, 512, 512, 500, 3);
  EXPECT_EQ(u.vreg[512], 65536);
  EXPECT_EQ(u.vreg[513], 24109);  // EXP[64] = nearest(65536 / e)
  EXPECT_EQ(u.vreg[514], 65536);
  EXPECT_EQ(u.vreg[500], 65536 * 2 + 24109);
  // vector.md §5: VXM0..VXM3 (77..80) of m_0 = 0; the word stream e = 0..2 (p), then e = 512
  // (S_0 = 155181): G(4 + ceil(T/4) + 4T) + ceil(G/4) + 4G = 17 + 1 + 4 = 22 tokens.
  ASSERT_EQ(u.trace.size(), 22u);
  for (int m = 0; m < 4; ++m) {
    EXPECT_EQ(u.trace[static_cast<std::size_t>(m)].kind, 77 + m);
    EXPECT_EQ(u.trace[static_cast<std::size_t>(m)].payload, 0);
  }
  EXPECT_EQ(u.trace[4].kind, 43); EXPECT_EQ(u.trace[4].payload, 0);
  EXPECT_EQ(u.trace[17].kind, 43); EXPECT_EQ(u.trace[17].payload, 128);  // VWG(512 >> 2)
  const auto words = read_words(u.trace, 4, u.trace.size());
  const std::vector<std::pair<int, std::int32_t>> want = {{0, 65536}, {1, 24109}, {2, 65536}, {512, 155181}};
  EXPECT_EQ(words, want);
  // group maximum as bytes: a negative m_1 in a second group (G = 2)
  u.trace.clear();
  u.vreg[576] = -70000; u.vreg[577] = -80000; u.vreg[578] = -75000;  // m_1 = -70000 = 0xFFFEEE90
  u.vexp(2, 512, 512, 500, 3);
  ASSERT_EQ(u.trace.size(), 2u * 17u + 1u + 8u);
  const std::size_t g1 = 17;
  EXPECT_EQ(u.trace[g1].kind, 77); EXPECT_EQ(u.trace[g1].payload, 0x90);
  EXPECT_EQ(u.trace[g1 + 1].kind, 78); EXPECT_EQ(u.trace[g1 + 1].payload, 0xEE);
  EXPECT_EQ(u.trace[g1 + 2].kind, 79); EXPECT_EQ(u.trace[g1 + 2].payload, 0xFE);
  EXPECT_EQ(u.trace[g1 + 3].kind, 80); EXPECT_EQ(u.trace[g1 + 3].payload, 0xFF);
  EXPECT_EQ(u.trace[g1 + 4].kind, 43); EXPECT_EQ(u.trace[g1 + 4].payload, 16);  // VWG(64 >> 2)
  const auto w2 = read_words(u.trace, g1 + 4, u.trace.size());
  ASSERT_EQ(w2.size(), 5u);
  EXPECT_EQ(w2[0], (std::pair<int, std::int32_t>{64, 65536}));
  EXPECT_EQ(w2[3].first, 512);
  EXPECT_EQ(w2[4].first, 513);
  EXPECT_EQ(w2[4].second, u.vreg[501]);
}

// VMATR K's stream is e = 8t + h (position-major) with head h's score at position t, for the
// hardware's 64-word head stride and for the host-only long cache (hstride 128).
TEST(VxOpsLayout, VmatrKStreamIsPositionMajor) {
  VxImage img;
  img.wmem.assign(static_cast<std::size_t>(kChunks) * 64, 0);
  img.wscale.assign(kChunks, 0);
  for (int positions : {64, 128}) {
    VxUnit u(img, positions);
    u.record = true;
    u.aexp[1] = 16;  // ASH + KSH = 16: VR = s exactly
    for (int h = 0; h < 8; ++h) u.act[static_cast<std::size_t>(64 + 8 * h)] = static_cast<std::int8_t>(h + 1);
    for (int t = 0; t < 3; ++t)
      for (int kv = 0; kv < 4; ++kv) u.kc[static_cast<std::size_t>(32 * t + 8 * kv)] = static_cast<std::int8_t>(-(t + 1));
    u.vmatr(false, 512, 1, 0, 3);  // s_{h,t} = -(h + 1)(t + 1)
    ASSERT_EQ(u.trace.size(), 34u * 3u) << positions;
    const auto words = read_words(u.trace, 0, u.trace.size());
    ASSERT_EQ(words.size(), 24u) << positions;
    for (int t = 0; t < 3; ++t)
      for (int h = 0; h < 8; ++h) {
        const auto& [e, v] = words[static_cast<std::size_t>(8 * t + h)];
        EXPECT_EQ(e, 8 * t + h) << positions;
        EXPECT_EQ(v, -(h + 1) * (t + 1)) << positions << " t " << t << " h " << h;
        EXPECT_EQ(u.vreg[static_cast<std::size_t>(512 + u.hstride * h + t)], v);
      }
  }
}

TEST_F(VxOps, VmatrVPositionsThenSums) {
  // T = 3, p = 1.0 for head 0 at t = 0..2, V row t element d = t + 1 (VSH 0): o_{0,d} = 6.
  for (int t = 0; t < 3; ++t) {
    u.vreg[static_cast<std::size_t>(512 + t)] = 65536;
    for (int d = 0; d < 8; ++d) u.vc[static_cast<std::size_t>(32 * t + d)] = static_cast<std::int8_t>(t + 1);
  }
  u.vmatr(true, 64, 512, 0, 3);
  EXPECT_EQ(u.vreg[64], 6);
  // vector.md §5: VMV(t) (40) for t = 0..2, then the word stream of the 64 sums e = 8h + d
  ASSERT_EQ(u.trace.size(), 3u + 272u);
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(u.trace[static_cast<std::size_t>(t)].kind, 40);
    EXPECT_EQ(u.trace[static_cast<std::size_t>(t)].payload, t);
  }
  const auto words = read_words(u.trace, 3, u.trace.size());
  ASSERT_EQ(words.size(), 64u);
  for (int e = 0; e < 64; ++e) {
    EXPECT_EQ(words[static_cast<std::size_t>(e)].first, e);
    EXPECT_EQ(words[static_cast<std::size_t>(e)].second, e < 8 ? 6 : 0);
  }
}

TEST(VxModelTest, TokensPerStoryToken) {
  const VxImage img = convert_vx(synthetic_checkpoint(), VxQuant::kRtn);
  VxModel m(img);
  for (int pos = 0; pos < 6; ++pos) {
    const auto before = m.unit.tokens;
    m.forward(pos == 0 ? 1 : 7, pos);
    // vector.md §7.3 (trace-v3): 39,740 + 335T + 40 ceil(T/4) tokens per forward pass (the
    // argmax's 4 W included), T = pos + 1
    const std::uint64_t T = static_cast<std::uint64_t>(pos + 1);
    EXPECT_EQ(m.unit.tokens - before, 39740u + 335u * T + 40u * ((T + 3) / 4)) << "pos " << pos;
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
