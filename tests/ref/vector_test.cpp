// The vector unit (vector.md): tables (§3, SHA-256 of the spec), each op
// with hand-computed values (rounding half up, saturation, argmax ties),
// traps (§6, lowest code wins), tokens (§5, trace-v2: each carries its micro-step position, after
// the instruction's pc tokens, trace.md §4.0) and section loading (§2.6).
#include <elf.h>

#include <cstring>
#include <span>

#include <gtest/gtest.h>

#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

// ---- a compact SHA-256 (FIPS 180-4) for the table digests of §3
std::string sha256(const std::vector<std::uint8_t>& msg) {
  static const u32 k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
      0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
      0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
      0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
      0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
      0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
      0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  u32 h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::vector<std::uint8_t> m = msg;
  const std::uint64_t bits = 8ull * msg.size();
  m.push_back(0x80);
  while (m.size() % 64 != 56) m.push_back(0);
  for (int i = 7; i >= 0; --i) m.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
  auto rotr = [](u32 x, int n) { return (x >> n) | (x << (32 - n)); };
  for (std::size_t off = 0; off < m.size(); off += 64) {
    u32 w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = u32{m[off + 4 * i]} << 24 | u32{m[off + 4 * i + 1]} << 16 | u32{m[off + 4 * i + 2]} << 8 | m[off + 4 * i + 3];
    }
    for (int i = 16; i < 64; ++i) {
      const u32 s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const u32 s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    u32 a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const u32 t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const u32 t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  char out[65];
  for (int i = 0; i < 8; ++i) std::snprintf(out + 8 * i, 9, "%08x", h[i]);
  return out;
}

template <class It>
std::string table_digest(It begin, It end) {
  std::vector<std::uint8_t> bytes;
  for (It it = begin; it != end; ++it) {
    const u32 v = static_cast<u32>(*it);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  return sha256(bytes);
}

TEST(VectorTables, Sha256OfVectorMd3) {
  EXPECT_EQ(sha256({'a', 'b', 'c'}), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const auto& t = vector_tables();
  EXPECT_EQ(table_digest(t.exp.begin(), t.exp.end()), "c26fdf2176392e1aead5d77178e3b9cbf85a7cbf9123ef286913801863464ef6");
  EXPECT_EQ(table_digest(t.rsq.begin() + 64, t.rsq.end()), "5cdab279aceba054bf27e1fea6109f71d6346b53a763d3042cf8fa38bf6624be");
  EXPECT_EQ(table_digest(t.rcp.begin() + 128, t.rcp.end()), "8e96bf1297d74ac9d1f25a71caa311bd45e00363a3cda27682a2870faafecab7");
  EXPECT_EQ(table_digest(t.sig.begin(), t.sig.end()), "db76a69faaeb9466f873c355fb8f113de0bf1067f43be90956ef9e341acff076");
  std::vector<std::int32_t> cs, sn;
  for (int p = 0; p < 64; ++p) {
    for (int j = 0; j < 4; ++j) {
      cs.push_back(t.cos[p][j]);
      sn.push_back(t.sin[p][j]);
    }
  }
  EXPECT_EQ(table_digest(cs.begin(), cs.end()), "e97b07cdcd8c1d45b841124e9235cc2a25f76c3d68e991cac3bf7de3ae60f8af");
  EXPECT_EQ(table_digest(sn.begin(), sn.end()), "785e46430e76bd9b40b2072bc71c1ad7597a6d942ea8f0a3de04d5156ea39f1f");
  // Spot values worked by hand.
  EXPECT_EQ(t.exp[0], 65536);
  EXPECT_EQ(t.exp[64], 24109);  // 65536/e
  EXPECT_EQ(t.exp[754], 1);
  EXPECT_EQ(t.exp[755], 0);
  EXPECT_EQ(t.sig[512], 32768);
  EXPECT_EQ(t.sig[0], 22);
  EXPECT_EQ(t.rcp[128], 1069563840);  // floor((2^39 + 257) / 514)
  EXPECT_EQ(t.rsq[64], 16712062);     // 2^27 / sqrt(64.5)
  EXPECT_EQ(t.cos[1][0], 35409);
  EXPECT_EQ(t.sin[1][0], 55147);
  EXPECT_EQ(t.cos[0][3], 65536);
  EXPECT_EQ(t.sin[0][2], 0);
}

// ---- running one vector instruction
constexpr u32 kMinI = 0x80000000u;
u32 vword(u32 f3, u32 f7, u32 rd = 0, u32 rs1 = 11, u32 rs2 = 12) {
  return f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | 0x2b;
}
u32 ab(u32 lo, u32 hi) { return hi << 16 | lo; }  // (B << 16) | A, (N << 16) | C

// trace.md §4.0: the first instruction of a run, at kCode (word index 0), begins with
// PCH0(0x00), PCL(0x00).  Checks them and returns the instruction's other tokens.
Tokens after_pc(std::span<const u32> s) {
  const Tokens pc = {token_id(Kind::PCH0, 0), token_id(Kind::PCL, 0)};
  EXPECT_GE(s.size(), 2u);
  if (s.size() < 2) return {s.begin(), s.end()};
  EXPECT_EQ(Tokens(s.begin(), s.begin() + 2), pc) << "pc tokens of the instruction at kCode";
  return {s.begin() + 2, s.end()};
}

struct V {
  Machine m;
  // Executes one vector word with X(rs1) = x1, X(rs2) = x2 and the vector
  // state prepared by `setup`; returns its tokens.
  template <class Setup>
  Tokens run(u32 word, u32 x1, u32 x2, Setup setup) {
    m = machine_with({word, kEbreak});
    setup(m.vector());
    m.set_reg(11, x1);
    m.set_reg(12, x2);
    return after_pc(m.step());
  }
  Tokens run(u32 word, u32 x1, u32 x2) {
    return run(word, x1, x2, [](VectorState&) {});
  }
  std::int32_t vr(unsigned i) const { return m.vector().vr[i]; }
};

Tokens toks(Kind k, std::initializer_list<u32> payloads) {
  Tokens t;
  for (u32 p : payloads) t.push_back(token_id(k, p));
  return t;
}

// ------------------------------------------------------------------ VMAT
TEST(Vmat, DotProductScaleAndRoundHalfUp) {
  V v;
  // ACT block 0 = [1, 2, 0...], chunk 0 = [3, -4, 0...]: acc = 3 - 8 = -5;
  // WSCALE 32768, ASH 1: -5 * 32768 * 2 = -327680; rnd(-327680, 16) = floor(-4.5) = -5.
  auto t = v.run(vword(0, 1), ab(100, 0), ab(0, 1), [](VectorState& s) {
    s.act[0] = 1;
    s.act[1] = 2;
    s.wmem[0] = 3;
    s.wmem[1] = -4;
    s.wscale[0] = 32768;
    s.ash[0] = 1;
  });
  EXPECT_EQ(t, toks(Kind::VMC0, {0})) << "one chunk (r, j) = (0, 0)";
  EXPECT_EQ(v.vr(100), -5);
  EXPECT_EQ(v.vr(101), 0) << "only R words written";
  // Ties round up: acc = 3 -> 1.5 -> 2; acc = -3 -> -1.5 -> -1.
  v.run(vword(0, 1), ab(10, 0), ab(0, 2), [](VectorState& s) {
    s.act[0] = 1;
    s.wmem[0] = 3;
    s.wmem[64] = -3;
    s.wscale[0] = s.wscale[1] = 32768;
  });
  EXPECT_EQ(v.vr(10), 2);
  EXPECT_EQ(v.vr(11), -1);
}

TEST(Vmat, SaturatesAndUsesKChunksPerRow) {
  V v;
  // K = 2: row 0 = chunks 0, 1 over blocks 0, 1; all ACT 127, W 7 / -8, WSCALE 65535, ASH 25.
  auto t = v.run(vword(0, 2), ab(0, 0), ab(0, 2), [](VectorState& s) {
    std::fill(s.act.begin(), s.act.begin() + 128, std::int8_t{127});
    std::fill(s.wmem.begin(), s.wmem.begin() + 128, std::int8_t{7});     // row 0
    std::fill(s.wmem.begin() + 128, s.wmem.begin() + 256, std::int8_t{-8});  // row 1
    s.wscale.fill(65535);
    s.ash.fill(25);
  });
  // acc = 64*127*7 = 56896 per chunk of row 0, -65024 for row 1; tokens VMC_j(r).
  EXPECT_EQ(t, cat({toks(Kind::VMC0, {0}), toks(Kind::VMC1, {0}), toks(Kind::VMC0, {1}), toks(Kind::VMC1, {1})}));
  EXPECT_EQ(v.vr(0), 2147483647);
  EXPECT_EQ(v.vr(1), -2147483647 - 1);
}

TEST(Vmat, ArgmaxTiesLowestIndexWins) {
  V v;
  // Rows 0..2 with y = 5, 7, 7 (WSCALE 65536/65536 impossible: use 32768 and ASH 1).
  auto t = v.run(vword(0, 8 | 1, 10), 0, ab(0, 3), [](VectorState& s) {
    s.act[0] = 1;
    s.ash[0] = 1;
    s.wmem[0] = 5;
    s.wmem[64] = 7;
    s.wmem[128] = 7;
    s.wscale[0] = s.wscale[1] = s.wscale[2] = 32768;
  });
  EXPECT_EQ(t, cat({toks(Kind::VMC0, {0, 1, 2}), W(1)}));
  EXPECT_EQ(v.m.reg(10), 1u);
  EXPECT_EQ(v.vr(0), 0) << "argmax mode writes no register word";
  // rd = x0 in argmax mode: VMC tokens then NOP.
  t = v.run(vword(0, 8 | 1, 0), 0, ab(0, 1));
  EXPECT_EQ(t, cat({toks(Kind::VMC0, {0}), NOP()}));
  // All negative: max is the least negative.
  v.run(vword(0, 8 | 1, 10), 0, ab(0, 3), [](VectorState& s) {
    s.act[0] = 1;
    s.ash[0] = 1;
    s.wmem[0] = -5;
    s.wmem[64] = -2;
    s.wmem[128] = -7;
    s.wscale[0] = s.wscale[1] = s.wscale[2] = 32768;
  });
  EXPECT_EQ(v.m.reg(10), 1u);
}

TEST(Vmat, RowHighPartBeforeRows256And512) {
  V v;
  // R = 513, K = 1: VMC0(r & 0xFF) per row, VMH(r >> 8) before rows 256 and 512 (vector.md §5).
  const auto t = v.run(vword(0, 1), ab(0, 0), ab(0, 513));
  Tokens want;
  for (u32 r = 0; r < 513; ++r) {
    if (r > 0 && r % 256 == 0) want.push_back(token_id(Kind::VMH, r / 256));
    want.push_back(token_id(Kind::VMC0, r % 256));
  }
  ASSERT_EQ(t.size(), 515u);
  EXPECT_EQ(t, want);
  EXPECT_EQ(t[256], token_id(Kind::VMH, 1));
  EXPECT_EQ(t[257], token_id(Kind::VMC0, 0));
  EXPECT_EQ(t[513], token_id(Kind::VMH, 2));
}

TEST(Vmat, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(0, 0), 0, ab(0, 1)), TRAP(16)) << "K = 0";
  EXPECT_EQ(v.run(vword(0, 7), 0, ab(0, 1)), TRAP(16)) << "K = 7";
  EXPECT_EQ(v.run(vword(0, 0x11), 0, ab(0, 1)), TRAP(16)) << "reserved bit";
  EXPECT_EQ(v.run(vword(0, 1, 5), 0, ab(0, 1)), TRAP(16)) << "write mode with rd != x0";
  EXPECT_EQ(v.run(vword(0, 1), ab(1020, 0), ab(0, 5)), TRAP(17));
  EXPECT_EQ(v.run(vword(0, 9, 5), ab(1020, 0), ab(0, 5)).size(), 9u) << "argmax mode ignores A: 5 VMC + W";
  EXPECT_EQ(v.run(vword(0, 1), 0, ab(0, 0)), TRAP(18)) << "R = 0";
  EXPECT_EQ(v.run(vword(0, 2), ab(0, 5), ab(0, 1)), TRAP(19)) << "b0 + K > 6";
  EXPECT_EQ(v.run(vword(0, 3), 0, ab(4150, 1)), TRAP(21)) << "c0 + R*K > 4152";
  EXPECT_EQ(v.run(vword(0, 1), 0, ab(4151, 1)).size(), 1u);
  EXPECT_EQ(v.run(vword(0, 0), ab(1020, 6), ab(4152, 0)), TRAP(16)) << "lowest code wins";
  EXPECT_EQ(v.run(vword(0, 2), ab(1020, 6), ab(4152, 10)), TRAP(17));
  EXPECT_EQ(v.m.pc(), kCode) << "a trapping instruction changes nothing";
  EXPECT_EQ(v.m.instructions_retired(), 0u);
}

// ------------------------------------------------------------------ VMATR
TEST(Vmatr, KModeScoresHeadMajor) {
  V v;
  auto setup = [](unsigned ash) {
    return [ash](VectorState& s) {
      s.act[64 + 0] = 1;    // head 0 lane 0 (block 1)
      s.act[64 + 8] = 2;    // head 1 lane 0
      s.act[64 + 16] = -1;  // head 2 lane 0 (KV head 1)
      s.kc[0] = 10;         // row 0, KV head 0 lane 0
      s.kc[8] = 5;          // row 0, KV head 1 lane 0
      s.ash[1] = static_cast<std::uint8_t>(ash);
      s.ksh[0] = 6;
      s.vr[512 + 1] = 99;   // position 1 of head 0: written (row 1 is zero)
      s.vr[512 + 2] = 77;   // t >= T: untouched
    };
  };
  // e = 10 + 6 = 16: scores 10, 20, -5 exactly.  Tokens (t << 2) | lo2(sum of s):
  // t = 0: 10 + 20 - 5 = 25 -> 1; t = 1 (row 1 is zero): 4.
  auto t = v.run(vword(1, 0), ab(512, 1), ab(0, 2), setup(10));
  EXPECT_EQ(t, toks(Kind::VMK, {1, 4}));
  EXPECT_EQ(v.vr(512), 10);
  EXPECT_EQ(v.vr(512 + 64), 20);
  EXPECT_EQ(v.vr(512 + 128), -5);
  EXPECT_EQ(v.vr(512 + 1), 0);
  EXPECT_EQ(v.vr(512 + 2), 77);
  // e = 17: times 2.  e = 15: rnd(s, 1): 10 -> 5, 20 -> 10, -5 -> floor(-4/2) = -2.
  v.run(vword(1, 0), ab(512, 1), ab(0, 1), setup(11));
  EXPECT_EQ(v.vr(512 + 64), 40);
  v.run(vword(1, 0), ab(512, 1), ab(0, 1), setup(9));
  EXPECT_EQ(v.vr(512), 5);
  EXPECT_EQ(v.vr(512 + 64), 10);
  EXPECT_EQ(v.vr(512 + 128), -2);
}

TEST(Vmatr, VModeClampsProbabilities) {
  V v;
  auto t = v.run(vword(1, 1), ab(64, 512), ab(0, 1), [](VectorState& s) {
    s.vr[512] = 65536;            // p_{0,0} = 1.0
    s.vr[512 + 64] = 70000;       // p_{1,0} clamped to 65536
    s.vr[512 + 128] = -5;         // p_{2,0} clamped to 0
    s.vr[512 + 192] = 3;          // p_{3,0} = 3 (KV head 1)
    for (int d = 0; d < 8; ++d) s.vc[d] = static_cast<std::int8_t>(d + 1);
    s.vc[8] = 5;
    s.vsh[0] = 1;
  });
  // digest (no VSH): 65536*36 + 65536*36 + 0 + 3*5 = 3 (mod 4); t = 0: VMV(0 << 2 | 3)
  EXPECT_EQ(t, toks(Kind::VMV, {3}));
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(v.vr(64 + d), 2 * (d + 1)) << "head 0: 65536*(d+1)*2 / 2^16";
    EXPECT_EQ(v.vr(64 + 8 + d), 2 * (d + 1)) << "head 1 (clamped)";
    EXPECT_EQ(v.vr(64 + 16 + d), 0) << "head 2 (clamped to 0)";
  }
  EXPECT_EQ(v.vr(64 + 24), 0) << "head 3: rnd(30, 16) = 0";
}

TEST(Vmatr, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(1, 2), ab(512, 1), ab(0, 1)), TRAP(16));
  EXPECT_EQ(v.run(vword(1, 0, 3), ab(512, 1), ab(0, 1)), TRAP(16)) << "rd != x0";
  EXPECT_EQ(v.run(vword(1, 0), ab(600, 1), ab(0, 1)), TRAP(17)) << "600 + 448 + 1 > 1024";
  EXPECT_EQ(v.run(vword(1, 0), ab(575, 1), ab(0, 1)).size(), 1u) << "575 + 448 + 1 = 1024";
  EXPECT_EQ(v.run(vword(1, 0), ab(512, 1), ab(0, 0)), TRAP(18));
  EXPECT_EQ(v.run(vword(1, 0), ab(0, 1), ab(0, 65)), TRAP(18));
  EXPECT_EQ(v.run(vword(1, 0), ab(512, 6), ab(0, 1)), TRAP(19));
  EXPECT_EQ(v.run(vword(1, 0), ab(512, 1), ab(300, 21)), TRAP(22));
  EXPECT_EQ(v.run(vword(1, 1), ab(512 + 10, 512), ab(0, 1)), TRAP(20)) << "dst span covers a probability word";
  EXPECT_EQ(v.run(vword(1, 1), ab(0, 512), ab(0, 1)).size(), 1u);
}

// ------------------------------------------------------------------ VQ
TEST(Vq, ActTargetExponentRoundingPadding) {
  V v;
  auto t = v.run(vword(2, 0), ab(2, 100), ab(0, 4), [](VectorState& s) {
    s.vr[100] = 100;
    s.vr[101] = -300;
    s.vr[102] = 254;
    s.vr[103] = 0;
    std::fill(s.act.begin() + 128, s.act.begin() + 192, std::int8_t{9});  // block 2: padding must clear it
  });
  // One group, amax 300: rnd(300,1) = 150 > 127, rnd(300,2) = 75 -> e = 2.
  // q = rnd(100,2) = 25, rnd(-300,2) = floor(-74.5) = -75, rnd(254,2) = 64, 0.  Sum 14.
  // Group 0: VQE(0 << 5 | 2), VQB(0 << 5 | lo5(14)).
  EXPECT_EQ(t, cat({toks(Kind::VQE, {2}), toks(Kind::VQB, {14})}));
  EXPECT_EQ(v.m.vector().act[128], 25);
  EXPECT_EQ(v.m.vector().act[129], -75);
  EXPECT_EQ(v.m.vector().act[130], 64);
  EXPECT_EQ(v.m.vector().act[131], 0);
  EXPECT_EQ(v.m.vector().act[191], 0) << "zero padding to the whole block";
  EXPECT_EQ(v.m.vector().ash[2], 2);
}

TEST(Vq, EachGroupHasItsOwnShift) {
  V v;
  auto t = v.run(vword(2, 0), ab(0, 0), ab(0, 70), [](VectorState& s) {
    s.vr[0] = 1;
    s.vr[64] = 1000;  // E(1000) = 3 (rnd(1000, 3) = 125)
    s.vr[65] = -13;   // rnd(-13, 3) = floor(-9/8) = -2
  });
  // Group 0: e_0 = E(1) = 0, q = 1; group 1: e_1 = 3, q = 125, -2 (sum 123), then padding.
  // Tokens (k << 5) | e_k and (k << 5) | lo5(sum): 0, 1, 32 + 3, 32 + 27.
  EXPECT_EQ(t, Tokens({token_id(Kind::VQE, 0), token_id(Kind::VQB, 1), token_id(Kind::VQE, 35), token_id(Kind::VQB, 59)}));
  EXPECT_EQ(v.m.vector().act[0], 1);
  EXPECT_EQ(v.m.vector().act[64], 125);
  EXPECT_EQ(v.m.vector().act[65], -2);
  EXPECT_EQ(v.m.vector().act[66], 0);
  EXPECT_EQ(v.m.vector().ash[0], 0);
  EXPECT_EQ(v.m.vector().ash[1], 3);
}

TEST(Vq, MostNegativeValueAndCacheRows) {
  V v;
  // x = -2^31: E(2^31) = 25 (rnd(2^31, 24) = 128.5 -> 128 > 127; rnd(2^31, 25) = 64); q = rnd(-2^31, 25) = floor(-63.5) = -64.
  auto t = v.run(vword(2, 1), ab(5, 0), ab(0, 32), [](VectorState& s) { s.vr[0] = INT32_MIN; });
  EXPECT_EQ(t, cat({toks(Kind::VQE, {25}), toks(Kind::VQB, {0})})) << "lo5(-64) = 0";
  EXPECT_EQ(v.m.vector().kc[32 * 5], -64);
  EXPECT_EQ(v.m.vector().ksh[5], 25);
  v.run(vword(2, 2), ab(319, 0), ab(0, 32), [](VectorState& s) { s.vr[31] = -7; });
  EXPECT_EQ(v.m.vector().vc[32 * 319 + 31], -7);
  EXPECT_EQ(v.m.vector().vsh[319], 0);
}

TEST(Vq, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(2, 3), 0, ab(0, 4)), TRAP(16)) << "TARGET = 3";
  EXPECT_EQ(v.run(vword(2, 4), 0, ab(0, 4)), TRAP(16));
  EXPECT_EQ(v.run(vword(2, 0), ab(0, 1000), ab(0, 30)), TRAP(17));
  EXPECT_EQ(v.run(vword(2, 0), 0, ab(0, 0)), TRAP(18));
  EXPECT_EQ(v.run(vword(2, 0), 0, ab(0, 385)), TRAP(18));
  EXPECT_EQ(v.run(vword(2, 0), ab(5, 0), ab(0, 65)), TRAP(19));
  EXPECT_EQ(v.run(vword(2, 1), 0, ab(0, 31)), TRAP(18));
  EXPECT_EQ(v.run(vword(2, 2), ab(320, 0), ab(0, 32)), TRAP(22));
}

// ------------------------------------------------------------------ VEXP
TEST(Vexp, SoftmaxNumeratorsAndSums) {
  V v;
  auto t = v.run(vword(3, 0), ab(600, 512), ab(700, 3), [](VectorState& s) {
    s.vr[512] = 0;
    s.vr[513] = -640;
    s.vr[514] = 65536;
  });
  // m = 65536; m - s = 65536, 66176, 0 -> i = 64, 65 (66688/1024 = 65.1), 0.
  // EXP[64] = 24109, EXP[65] = 23736, EXP[0] = 65536; S = 113381 (lo5 5); lo5(m) = 0.
  EXPECT_EQ(t, cat({toks(Kind::VXM, {0}), toks(Kind::VXS, {5})}));
  EXPECT_EQ(v.vr(600), 24109);
  EXPECT_EQ(v.vr(601), 23736);
  EXPECT_EQ(v.vr(602), 65536);
  EXPECT_EQ(v.vr(700), 113381);
}

TEST(Vexp, FarScoresAndGroupsInPlace) {
  V v;
  // G = 2, T = 2, in place (dst = src): group 0 = [2^31-1, -2^31] -> i = min(1023, ...) -> EXP[1023] = 0.
  auto t = v.run(vword(3, 1), ab(512, 512), ab(900, 2), [](VectorState& s) {
    s.vr[512] = INT32_MAX;
    s.vr[513] = INT32_MIN;
    s.vr[576] = 5;
    s.vr[577] = 5;
  });
  // (g << 5) | lo5: m_0 = 2^31-1 -> 31, S_0 = 65536 -> 0; m_1 = 5 -> 32 + 5, S_1 = 131072 -> 32.
  EXPECT_EQ(t, cat({toks(Kind::VXM, {31}), toks(Kind::VXS, {0}), toks(Kind::VXM, {37}), toks(Kind::VXS, {32})}));
  EXPECT_EQ(v.vr(512), 65536);
  EXPECT_EQ(v.vr(513), 0);
  EXPECT_EQ(v.vr(576), 65536);
  EXPECT_EQ(v.vr(900), 65536);
  EXPECT_EQ(v.vr(901), 131072);
}

TEST(Vexp, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(3, 8), ab(600, 512), ab(700, 3)), TRAP(16));
  EXPECT_EQ(v.run(vword(3, 0), ab(600, 512), ab(700, 0)), TRAP(18));
  EXPECT_EQ(v.run(vword(3, 7), ab(600, 512), ab(700, 3)), TRAP(17)) << "512 + 64*7 + 3 > 1024";
  EXPECT_EQ(v.run(vword(3, 0), ab(600, 512), ab(513, 3)), TRAP(20)) << "sums inside the scores";
  EXPECT_EQ(v.run(vword(3, 0), ab(513, 512), ab(700, 3)), TRAP(20)) << "dst overlaps src, not identical";
}

// ------------------------------------------------------------------ VEW
TEST(Vew, AddMulMulsSaturateAndRound) {
  V v;
  auto t = v.run(vword(4, 0), ab(10, 0), ab(4, 3), [](VectorState& s) {
    s.vr[0] = INT32_MAX;
    s.vr[4] = 1;
    s.vr[1] = INT32_MIN;
    s.vr[5] = -1;
    s.vr[2] = 7;
    s.vr[6] = -9;
  });
  // z = 2^31-1, -2^31, -2: sum = -3 -> group 0: VEW(0 << 4 | lo4(-3) = 13)
  EXPECT_EQ(t, toks(Kind::VEW, {13}));
  EXPECT_EQ(v.vr(10), INT32_MAX);
  EXPECT_EQ(v.vr(11), INT32_MIN);
  EXPECT_EQ(v.vr(12), -2);
  // MUL: 1.5 * 1.0 = 1.5; 1 * 32768 -> rnd(0.5) = 1; -1 * 32768 -> rnd(-0.5) = 0; saturation.
  v.run(vword(4, 1), ab(10, 0), ab(4, 4), [](VectorState& s) {
    s.vr[0] = 98304, s.vr[4] = 65536;
    s.vr[1] = 1, s.vr[5] = 32768;
    s.vr[2] = -1, s.vr[6] = 32768;
    s.vr[3] = INT32_MIN, s.vr[7] = INT32_MIN;
  });
  EXPECT_EQ(v.vr(10), 98304);
  EXPECT_EQ(v.vr(11), 1);
  EXPECT_EQ(v.vr(12), 0);
  EXPECT_EQ(v.vr(13), INT32_MAX) << "2^62 / 2^16 saturates";
  // MULS GS = 1: scalars [2.0, 3.0] for pairs of elements.
  t = v.run(vword(4, 2 | 1 << 2), ab(10, 0), ab(100, 4), [](VectorState& s) {
    for (int i = 0; i < 4; ++i) s.vr[i] = i + 1;
    s.vr[100] = 2 * 65536;
    s.vr[101] = 3 * 65536;
  });
  EXPECT_EQ(v.vr(10), 2);
  EXPECT_EQ(v.vr(11), 4);
  EXPECT_EQ(v.vr(12), 9);
  EXPECT_EQ(v.vr(13), 12);
  EXPECT_EQ(t, toks(Kind::VEW, {11})) << "sum 27, lo4 = 11";
}

TEST(Vew, RotAndInPlace) {
  V v;
  // p = 1: pair 0 uses j = 0 (cos 1 = 35409, sin 1 = 55147), pair 1 j = 1 (cos 0.1 = 65209, sin 0.1 = 6543).
  v.run(vword(4, 3), ab(0, 0), ab(1, 4), [](VectorState& s) {
    s.vr[0] = 65536;
    s.vr[1] = 0;
    s.vr[2] = 0;
    s.vr[3] = 65536;
  });
  EXPECT_EQ(v.vr(0), 35409);
  EXPECT_EQ(v.vr(1), 55147);
  EXPECT_EQ(v.vr(2), -6543) << "u*c - v*s with u = 0, v = 1.0";
  EXPECT_EQ(v.vr(3), 65209);
  // Position 0 is the identity.
  v.run(vword(4, 3), ab(0, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = -12345;
    s.vr[1] = 777;
  });
  EXPECT_EQ(v.vr(0), -12345);
  EXPECT_EQ(v.vr(1), 777);
}

TEST(Vew, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(4, 0 | 1 << 2), ab(10, 0), ab(4, 3)), TRAP(16)) << "GS != 0 outside MULS";
  EXPECT_EQ(v.run(vword(4, 2 | 7 << 2), ab(10, 0), ab(4, 3)), TRAP(16)) << "GS = 7";
  EXPECT_EQ(v.run(vword(4, 1 << 5), ab(10, 0), ab(4, 3)), TRAP(16));
  EXPECT_EQ(v.run(vword(4, 0), ab(1022, 0), ab(4, 3)), TRAP(17));
  EXPECT_EQ(v.run(vword(4, 0), ab(10, 0), ab(4, 0)), TRAP(18));
  EXPECT_EQ(v.run(vword(4, 0), ab(10, 0), ab(4, 1025)), TRAP(17)) << "span check first (17 < 18)";
  EXPECT_EQ(v.run(vword(4, 3), ab(10, 0), ab(4, 3)), TRAP(18)) << "ROT n odd";
  EXPECT_EQ(v.run(vword(4, 3), ab(10, 0), ab(64, 2)), TRAP(23)) << "ROT position 64";
  EXPECT_EQ(v.run(vword(4, 0), ab(1, 0), ab(100, 4)), TRAP(20)) << "dst overlaps a, not identical";
  EXPECT_EQ(v.run(vword(4, 0), ab(0, 0), ab(100, 4)).size(), 1u) << "in place is allowed";
  EXPECT_EQ(v.run(vword(4, 2 | 1 << 2), ab(10, 0), ab(11, 4)), TRAP(20)) << "MULS scalar inside dst";
}

// ------------------------------------------------------------------ VFN
TEST(Vfn, RsqrtRecipSilu) {
  V v;
  auto t = v.run(vword(5, 0), ab(10, 0), ab(0, 3), [](VectorState& s) {
    s.vr[0] = 65536;
    s.vr[1] = 0;   // u = max(x, 1) = 1: k = 0, ix = 64, z = RSQ[64]
    s.vr[2] = -7;  // same
  });
  EXPECT_EQ(v.vr(10), 65281) << "vector.md §4.6: u = 65536 gives 65,281";
  EXPECT_EQ(v.vr(11), 16712062);
  EXPECT_EQ(v.vr(12), 16712062);
  EXPECT_EQ(t, toks(Kind::VFN, {(65281u + 2u * 16712062u) & 0xf})) << "group 0: lo4 of the sum";
  v.run(vword(5, 1), ab(10, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = 65536;
    s.vr[1] = 0;  // k = 0: RCP[128] * 4 saturates
  });
  EXPECT_EQ(v.vr(10), 65281) << "vector.md §4.6: u = 65536 gives 65,281";
  EXPECT_EQ(v.vr(11), INT32_MAX);
  v.run(vword(5, 2), ab(10, 0), ab(0, 3), [](VectorState& s) {
    s.vr[0] = 0;
    s.vr[1] = 65536;     // ix = 64 + 512, SIG[576] = 47911
    s.vr[2] = INT32_MIN;  // ix = 0, SIG[0] = 22: -2^31 * 22 / 2^16 = -720896
  });
  EXPECT_EQ(v.vr(10), 0);
  EXPECT_EQ(v.vr(11), 47911);
  EXPECT_EQ(v.vr(12), -720896);
}

TEST(Vfn, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(5, 3), ab(10, 0), ab(0, 3)), TRAP(16));
  EXPECT_EQ(v.run(vword(5, 0), ab(1, 0), ab(0, 3)), TRAP(20));
  EXPECT_EQ(v.run(vword(5, 0), ab(0, 0), ab(0, 3)).size(), 1u) << "in place";
  EXPECT_EQ(v.run(vword(5, 0), ab(0, 0), ab(0, 0)), TRAP(18));
}

// ------------------------------------------------------------------ VRED
TEST(Vred, SumsqSumMax) {
  V v;
  auto t = v.run(vword(6, 0 | 1 << 2), ab(900, 0), ab(0, 2), [](VectorState& s) { s.vr[0] = s.vr[1] = 65536; });
  EXPECT_EQ(v.vr(900), 65536) << "2^33 / 2^17";
  EXPECT_EQ(t, toks(Kind::VRD, {0}));
  t = v.run(vword(6, 0), ab(900, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = 3;
    s.vr[1] = 4;
  });
  EXPECT_EQ(t, toks(Kind::VRD, {9})) << "lo4(25)";
  EXPECT_EQ(v.vr(900), 0);
  t = v.run(vword(6, 1 | 1 << 2), ab(900, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = 5;
    s.vr[1] = -7;
  });
  EXPECT_EQ(t, toks(Kind::VRD, {14})) << "lo4(-2)";
  EXPECT_EQ(v.vr(900), -1) << "rnd(-2, 1) = floor(-1/2) = -1";
  t = v.run(vword(6, 2), ab(900, 0), ab(0, 3), [](VectorState& s) {
    s.vr[0] = -5;
    s.vr[1] = -3;
    s.vr[2] = -9;
  });
  EXPECT_EQ(t, toks(Kind::VRD, {13})) << "group maximum -3, lo4 = 13";
  EXPECT_EQ(v.vr(900), -3);
  // Saturation (64 * 2^62 = 2^68) and one token per source group k: (k << 4) | lo4(its contribution).
  t = v.run(vword(6, 0), ab(900, 0), ab(0, 65), [](VectorState& s) { std::fill(s.vr.begin(), s.vr.begin() + 65, INT32_MIN); });
  EXPECT_EQ(v.vr(900), INT32_MAX);
  EXPECT_EQ(t, toks(Kind::VRD, {0, 16}));
  t = v.run(vword(6, 1), ab(900, 0), ab(0, 65), [](VectorState& s) { std::fill(s.vr.begin(), s.vr.begin() + 65, 1); });
  EXPECT_EQ(t, toks(Kind::VRD, {0, 17})) << "group sums 64 (lo4 0) and 1";
  EXPECT_EQ(v.vr(900), 65);
}

TEST(Vred, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(6, 3), ab(900, 0), ab(0, 2)), TRAP(16));
  EXPECT_EQ(v.run(vword(6, 2 | 1 << 2), ab(900, 0), ab(0, 2)), TRAP(16)) << "MAX with SH != 0";
  EXPECT_EQ(v.run(vword(6, 0), ab(1024, 0), ab(0, 2)), TRAP(17));
  EXPECT_EQ(v.run(vword(6, 0), ab(900, 0), ab(0, 0)), TRAP(18));
}

// ------------------------------------------------------------------ VLD
TEST(Vld, ScaledBytesAndTokens) {
  V v;
  Machine& m = v.m;
  m = machine_with({vword(7, 0), kEbreak}, {3, 0, 0, 0, 0x80, 0x7f, 0x01, 0, 0xff, 0xff, 0xff, 0x7f, 0x80});
  m.set_reg(11, kData);
  m.set_reg(12, ab(20, 3));
  // M's bytes on lanes VLB0..VLB3, then element group 0: VLG(0), b_0..b_2 on lanes 0..2.
  EXPECT_EQ(after_pc(m.step()), cat({toks(Kind::VLB0, {3}), toks(Kind::VLB1, {0}), toks(Kind::VLB2, {0}),
                                     toks(Kind::VLB3, {0}), toks(Kind::VLG, {0}), toks(Kind::VLB0, {0x80}),
                                     toks(Kind::VLB1, {0x7f}), toks(Kind::VLB2, {0x01})}));
  EXPECT_EQ(v.vr(20), -384);
  EXPECT_EQ(v.vr(21), 381);
  EXPECT_EQ(v.vr(22), 3);
  // M = 2^31 - 1, byte -128: saturates to -2^31.
  m = machine_with({vword(7, 0), kEbreak}, {3, 0, 0, 0, 0x80, 0x7f, 0x01, 0, 0xff, 0xff, 0xff, 0x7f, 0x80});
  m.set_reg(11, kData + 8);
  m.set_reg(12, ab(20, 1));
  m.step();
  EXPECT_EQ(v.vr(20), INT32_MIN);
}

TEST(Vld, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(7, 1), kData + 2, ab(0, 1)), TRAP(4)) << "misaligned wins over a bad f7";
  EXPECT_EQ(v.run(vword(7, 0), 0x10fffc, ab(0, 1)), TRAP(5)) << "a + 4 + n > RAM_END";
  EXPECT_EQ(v.run(vword(7, 0), 0xfffc, ab(0, 1)), TRAP(5));
  EXPECT_EQ(v.run(vword(7, 0), 0x10fff8, ab(0, 4)).size(), 9u) << "exactly up to RAM_END: 4 + VLG + 4";
  EXPECT_EQ(v.run(vword(7, 0, 1), kData, ab(0, 1)), TRAP(16));
  EXPECT_EQ(v.run(vword(7, 0), kData, ab(1020, 5)), TRAP(17));
  EXPECT_EQ(v.run(vword(7, 0), kData, ab(0, 0)), TRAP(18));
}

TEST(VectorDecode, CustomOneIsAlwaysVectorAndDisassembles) {
  EXPECT_EQ(decode(vword(0, 0x7f, 31, 31, 31)).op, Op::kVmat);
  EXPECT_EQ(decode(vword(7, 0x7f)).op, Op::kVld);
  EXPECT_EQ(disassemble(vword(0, 3)), "vmat.k3 zero, a1, a2");
  EXPECT_EQ(disassemble(vword(0, 9, 10)), "vmat.k1.argmax a0, a1, a2");
  EXPECT_EQ(disassemble(vword(4, 2 | 6 << 2)), "vew.muls.gs6 zero, a1, a2");
  EXPECT_EQ(disassemble(vword(6, 0 | 6 << 2)), "vred.sumsq.sh6 zero, a1, a2");
  EXPECT_EQ(disassemble(vword(2, 3)), "vq.f7=0x03 zero, a1, a2");
  EXPECT_EQ(disassemble(vword(7, 0)), "vld zero, a1, a2");
}

// ------------------------------------------------------------------ §2.6 sections
TEST(VectorSections, LoadAndReject) {
  auto img = progen::image_from_code({kEbreak});
  img.sections[".lockstep.wmem"] = {0x8f, 0x17};  // W[0][0] = -1, W[0][1] = -8, W[0][2] = 7, W[0][3] = 1
  img.sections[".lockstep.wscale"] = {0x34, 0x12, 0xff};
  img.sections[".lockstep.vreg"] = {0xff, 0xff, 0xff, 0xff, 5};
  img.sections[".lockstep.ash"] = {25, 3};
  img.sections[".lockstep.vcache"] = {0x80};
  // Through the file format (section headers) as well as in memory.
  const auto parsed = format::parse_elf(format::write_elf(img));
  for (const format::GuestImage* image : std::initializer_list<const format::GuestImage*>{&img, &parsed}) {
    Machine m;
    m.load(*image);
    const auto& s = m.vector();
    EXPECT_EQ(s.wmem[0], -1);
    EXPECT_EQ(s.wmem[1], -8);
    EXPECT_EQ(s.wmem[2], 7);
    EXPECT_EQ(s.wmem[3], 1);
    EXPECT_EQ(s.wmem[4], 0);
    EXPECT_EQ(s.wscale[0], 0x1234);
    EXPECT_EQ(s.wscale[1], 0xff);
    EXPECT_EQ(s.vr[0], -1);
    EXPECT_EQ(s.vr[1], 5);
    EXPECT_EQ(s.ash[0], 25);
    EXPECT_EQ(s.ash[1], 3);
    EXPECT_EQ(s.vc[0], -128);
    EXPECT_EQ(s.kc[0], 0);
  }
  auto reject = [](format::GuestImage im, const std::string& needle) {
    Machine m;
    try {
      m.load(im);
      FAIL() << "accepted; expected " << needle;
    } catch (const LoadError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto bad = progen::image_from_code({kEbreak});
  bad.sections[".lockstep.weights"] = {1};
  reject(bad, "section .lockstep.weights: unknown");
  bad = progen::image_from_code({kEbreak});
  bad.sections[".lockstep.act"] = std::vector<std::uint8_t>(385, 0);
  reject(bad, "section .lockstep.act: 385 bytes, more than its maximum 384");
  bad = progen::image_from_code({kEbreak});
  bad.sections[".lockstep.ksh"] = {0, 26};
  reject(bad, "section .lockstep.ksh: byte 1 is 26, above 25");
  bad = progen::image_from_code({kEbreak});
  bad.section_headers = {{".lockstep.act", SHT_PROGBITS, SHF_ALLOC, 4}};
  reject(bad, "section .lockstep.act: has SHF_ALLOC");
  bad.section_headers = {{".lockstep.act", SHT_NOBITS, 0, 4}};
  reject(bad, "section .lockstep.act: is not SHT_PROGBITS");
  bad.section_headers = {{".lockstep.act", SHT_PROGBITS, 0, 4}, {".lockstep.act", SHT_PROGBITS, 0, 4}};
  reject(bad, "section .lockstep.act: appears twice");
}

TEST(VectorState, SaveRestoreIncludesTheVectorUnit) {
  Machine m = machine_with({kEbreak});
  m.vector().vr[5] = 42;
  m.vector().ksh[3] = 7;
  const auto snap = m.save();
  m.vector().vr[5] = 0;
  m.restore(snap);
  EXPECT_EQ(m.vector().vr[5], 42);
  EXPECT_EQ(m.vector().ksh[3], 7);
}

}  // namespace
}  // namespace lockstep::ref::test
