// The vector unit (vector.md): tables (§3, SHA-256 of the spec), each op
// with hand-computed values (rounding half up, saturation, argmax ties),
// traps (§6, lowest code wins), tokens (§5, trace-v3: every value written is on the bus, each
// token carries its micro-step position; after the instruction's pc tokens, trace.md §4.0) and
// section loading (§2.1).  Every token expectation is worked by hand from vector.md §5 and the
// op's page (docs/spec/vector/<op>.md §2).
#include <elf.h>

#include <cstring>
#include <span>

#include <gtest/gtest.h>

#include "ref_test_util.h"
#include "sha256.h"

namespace lockstep::ref::test {
namespace {

// SHA-256 for the table digests of §3 (tests/support/sha256.h)
using test_support::sha256;
using test_support::table_digest;

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

// trace-v3 spellings (vector.md §5).  Payload bytes are written out by hand in the tests; the
// helpers only name the kinds: VY(b0..b3) = VY0(b0) VY1(b1) VY2(b2) VY3(b3), VYN(..) ends in
// VYN3, VXM(..) = VXM0..VXM3, VW(q, b0..b3) = VW_q0..VW_q3 (kind 61 + 4q + m).
Kind kplus(Kind k, u32 i) { return static_cast<Kind>(static_cast<u32>(k) + i); }
Tokens four(Kind k0, u32 b0, u32 b1, u32 b2, u32 b3) {
  return {token_id(k0, b0), token_id(kplus(k0, 1), b1), token_id(kplus(k0, 2), b2), token_id(kplus(k0, 3), b3)};
}
Tokens VY(u32 b0, u32 b1, u32 b2, u32 b3) { return four(Kind::VY0, b0, b1, b2, b3); }
Tokens VYN(u32 b0, u32 b1, u32 b2, u32 b3) {
  return {token_id(Kind::VY0, b0), token_id(Kind::VY1, b1), token_id(Kind::VY2, b2), token_id(Kind::VYN3, b3)};
}
Tokens VXM(u32 b0, u32 b1, u32 b2, u32 b3) { return four(Kind::VXM0, b0, b1, b2, b3); }
Tokens VW(u32 q, u32 b0, u32 b1, u32 b2, u32 b3) { return four(kplus(Kind::VW00, 4 * q), b0, b1, b2, b3); }
Tokens VWG(u32 g) { return tok(Kind::VWG, g); }
Tokens VLG(u32 g) { return tok(Kind::VLG, g); }
Tokens VLB(u32 m, u32 b) { return tok(kplus(Kind::VLB0, m), b); }
Tokens VMC(u32 j, u32 r) { return tok(kplus(Kind::VMC0, j), r); }
// Whole quads of zero words: VWG(g) and 16 zero bytes, for g = from .. to-1.
Tokens zero_quads(u32 from, u32 to) {
  Tokens t;
  for (u32 g = from; g < to; ++g) t = cat({t, VWG(g), VW(0, 0, 0, 0, 0), VW(1, 0, 0, 0, 0), VW(2, 0, 0, 0, 0), VW(3, 0, 0, 0, 0)});
  return t;
}
// Whole int8 groups of zeros: VLG(g) VLB0(0) .. VLB3(0), for g = from .. to-1.
Tokens zero_int8(u32 from, u32 to) {
  Tokens t;
  for (u32 g = from; g < to; ++g) t = cat({t, VLG(g), VLB(0, 0), VLB(1, 0), VLB(2, 0), VLB(3, 0)});
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
  // One chunk (r, j) = (0, 0), then y_0 = -5 = 0xfffffffb: R(K + 4) = 5 tokens.
  EXPECT_EQ(t, cat({VMC(0, 0), VY(0xfb, 0xff, 0xff, 0xff)}));
  EXPECT_EQ(v.vr(100), -5);
  EXPECT_EQ(v.vr(101), 0) << "only R words written";
  // Ties round up: acc = 3 -> 1.5 -> 2; acc = -3 -> -1.5 -> -1.
  t = v.run(vword(0, 1), ab(10, 0), ab(0, 2), [](VectorState& s) {
    s.act[0] = 1;
    s.wmem[0] = 3;
    s.wmem[64] = -3;
    s.wscale[0] = s.wscale[1] = 32768;
  });
  EXPECT_EQ(v.vr(10), 2);
  EXPECT_EQ(v.vr(11), -1);
  EXPECT_EQ(t, cat({VMC(0, 0), VY(0x02, 0, 0, 0), VMC(0, 1), VY(0xff, 0xff, 0xff, 0xff)}));
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
  // acc = 64*127*7 = 56896 per chunk of row 0, -65024 for row 1; tokens VMC_j(r), then the
  // bytes of y_0 = 2^31 - 1 (ff ff ff 7f) and y_1 = -2^31 (00 00 00 80).
  EXPECT_EQ(t, cat({VMC(0, 0), VMC(1, 0), VY(0xff, 0xff, 0xff, 0x7f), VMC(0, 1), VMC(1, 1), VY(0, 0, 0, 0x80)}));
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
  // Row 0 is always a new maximum (VYN3); 7 > 5 is one; the tie 7 = 7 is not (VY3); W(1).
  EXPECT_EQ(t, cat({VMC(0, 0), VYN(5, 0, 0, 0), VMC(0, 1), VYN(7, 0, 0, 0), VMC(0, 2), VY(7, 0, 0, 0), W(1)}));
  EXPECT_EQ(v.m.reg(10), 1u);
  EXPECT_EQ(v.vr(0), 0) << "argmax mode writes no register word";
  // rd = x0 in argmax mode: y_0 = 0 (a new maximum), then NOP.
  t = v.run(vword(0, 8 | 1, 0), 0, ab(0, 1));
  EXPECT_EQ(t, cat({VMC(0, 0), VYN(0, 0, 0, 0), NOP()}));
  // All negative: max is the least negative.  y = -5 (fb ff ff ff, new), -2 (fe ff ff ff, new),
  // -7 (f9 ff ff ff, not new).
  t = v.run(vword(0, 8 | 1, 10), 0, ab(0, 3), [](VectorState& s) {
    s.act[0] = 1;
    s.ash[0] = 1;
    s.wmem[0] = -5;
    s.wmem[64] = -2;
    s.wmem[128] = -7;
    s.wscale[0] = s.wscale[1] = s.wscale[2] = 32768;
  });
  EXPECT_EQ(v.m.reg(10), 1u);
  EXPECT_EQ(t, cat({VMC(0, 0), VYN(0xfb, 0xff, 0xff, 0xff), VMC(0, 1), VYN(0xfe, 0xff, 0xff, 0xff), VMC(0, 2),
                    VY(0xf9, 0xff, 0xff, 0xff), W(1)}));
}

TEST(Vmat, ArgmaxNewMaximumKindWithTiesAndALaterMaximum) {
  V v;
  // ACT[0] = 1, ASH 1, WSCALE 32768, so y_r = acc = W[r][0]: rows y = -3, -3, -5, 2, 2, 1.
  // "VYN3 when y_r > y_r' for every r' < r": r = 0 (always), r = 3 (2 > -3); the ties r = 1
  // and r = 4 and the smaller rows 2, 5 get VY3.  r* = 3 (the first row of the maximum 2).
  // Bytes: -3 = fd ff ff ff, -5 = fb ff ff ff, 2 = 02 00 00 00, 1 = 01 00 00 00.
  // Count R(K + 4) + floor((R-1)/256) + |W| = 6*5 + 0 + 4 = 34.
  auto setup = [](VectorState& s) {
    s.act[0] = 1;
    s.ash[0] = 1;
    const std::int8_t w[6] = {-3, -3, -5, 2, 2, 1};
    for (int r = 0; r < 6; ++r) {
      s.wmem[64 * r] = w[r];
      s.wscale[r] = 32768;
    }
  };
  auto t = v.run(vword(0, 8 | 1, 10), 0, ab(0, 6), setup);
  const Tokens want = cat({VMC(0, 0), VYN(0xfd, 0xff, 0xff, 0xff), VMC(0, 1), VY(0xfd, 0xff, 0xff, 0xff),
                           VMC(0, 2), VY(0xfb, 0xff, 0xff, 0xff), VMC(0, 3), VYN(0x02, 0, 0, 0),
                           VMC(0, 4), VY(0x02, 0, 0, 0), VMC(0, 5), VY(0x01, 0, 0, 0), W(3)});
  ASSERT_EQ(t.size(), 34u);
  EXPECT_EQ(t, want);
  EXPECT_EQ(v.m.reg(10), 3u);
  // Write mode: the same rows, every byte 3 is VY3 (VYN3 is argmax mode only), no W: 30 tokens.
  t = v.run(vword(0, 1), ab(40, 0), ab(0, 6), setup);
  EXPECT_EQ(t, cat({VMC(0, 0), VY(0xfd, 0xff, 0xff, 0xff), VMC(0, 1), VY(0xfd, 0xff, 0xff, 0xff), VMC(0, 2),
                    VY(0xfb, 0xff, 0xff, 0xff), VMC(0, 3), VY(0x02, 0, 0, 0), VMC(0, 4), VY(0x02, 0, 0, 0),
                    VMC(0, 5), VY(0x01, 0, 0, 0)}));
  EXPECT_EQ(v.vr(43), 2);
}

TEST(Vmat, RowHighPartBeforeRows256And512) {
  V v;
  // R = 513, K = 1; ACT[0] = 1, ASH 1, WSCALE 32768 and W[r][0] = (r mod 16) - 8, so
  // y_r = (r mod 16) - 8 (bytes: y, 0, 0, 0 for y >= 0; 256 + y, ff, ff, ff for y < 0).
  // vector.md §5: per row VMH(r >> 8) before r = 256 and 512, VMC0(r & 0xFF), VY0..VY3.
  // Count R(K + 4) + floor((R-1)/256) = 513*5 + 2 = 2567; VMH(1) after rows 0..255 (1280
  // tokens) at index 1280, VMH(2) after 1281 + 256*5 at index 2561.
  const auto t = v.run(vword(0, 1), ab(0, 0), ab(0, 513), [](VectorState& s) {
    s.act[0] = 1;
    s.ash[0] = 1;
    for (int r = 0; r < 513; ++r) {
      s.wmem[64 * r] = static_cast<std::int8_t>(r % 16 - 8);
      s.wscale[r] = 32768;
    }
  });
  Tokens want;
  for (u32 r = 0; r < 513; ++r) {
    if (r > 0 && r % 256 == 0) want.push_back(token_id(Kind::VMH, r / 256));
    want.push_back(token_id(Kind::VMC0, r % 256));
    const int y = static_cast<int>(r % 16) - 8;
    want = cat({want, y >= 0 ? VY(static_cast<u32>(y), 0, 0, 0) : VY(static_cast<u32>(256 + y), 0xff, 0xff, 0xff)});
  }
  ASSERT_EQ(t.size(), 2567u);
  EXPECT_EQ(t, want);
  EXPECT_EQ(t[1280], token_id(Kind::VMH, 1));
  EXPECT_EQ(t[1281], token_id(Kind::VMC0, 0));
  EXPECT_EQ(t[1282], token_id(Kind::VY0, 0xf8)) << "row 256: y = 256 mod 16 - 8 = -8";
  EXPECT_EQ(t[2561], token_id(Kind::VMH, 2));
  EXPECT_EQ(t[2566], token_id(Kind::VY3, 0xff)) << "row 512: y = -8";
  EXPECT_EQ(v.vr(15), 7);
  EXPECT_EQ(v.vr(512), -8);
}

TEST(Vmat, SpecExampleK2R300) {
  V v;
  // vector/vmat.md §2's example: K = 2, R = 300 (zero state, y = 0): rows 0..255 are 6 tokens each
  // (1536), then VMH(1) VMC0(0) VMC1(0) VY0 .. VY3 ... up to VMC1(43) VY0 .. VY3: 1,801 tokens
  // = R(K + 4) + floor(299/256).
  const auto t = v.run(vword(0, 2), ab(0, 0), ab(0, 300));
  ASSERT_EQ(t.size(), 1801u);
  EXPECT_EQ(Tokens(t.begin(), t.begin() + 6), cat({VMC(0, 0), VMC(1, 0), VY(0, 0, 0, 0)}));
  EXPECT_EQ(Tokens(t.begin() + 1536, t.begin() + 1539), cat({tok(Kind::VMH, 1), VMC(0, 0), VMC(1, 0)}));
  EXPECT_EQ(Tokens(t.end() - 6, t.end()), cat({VMC(0, 43), VMC(1, 43), VY(0, 0, 0, 0)}));
}

TEST(Vmat, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(0, 0), 0, ab(0, 1)), TRAP(16)) << "K = 0";
  EXPECT_EQ(v.run(vword(0, 7), 0, ab(0, 1)), TRAP(16)) << "K = 7";
  EXPECT_EQ(v.run(vword(0, 0x11), 0, ab(0, 1)), TRAP(16)) << "reserved bit";
  EXPECT_EQ(v.run(vword(0, 1, 5), 0, ab(0, 1)), TRAP(16)) << "write mode with rd != x0";
  EXPECT_EQ(v.run(vword(0, 1), ab(1020, 0), ab(0, 5)), TRAP(17));
  EXPECT_EQ(v.run(vword(0, 9, 5), ab(1020, 0), ab(0, 5)).size(), 29u) << "argmax mode ignores A: 5 (VMC + 4 VY) + W";
  EXPECT_EQ(v.run(vword(0, 1), 0, ab(0, 0)), TRAP(18)) << "R = 0";
  EXPECT_EQ(v.run(vword(0, 2), ab(0, 5), ab(0, 1)), TRAP(19)) << "b0 + K > 6";
  EXPECT_EQ(v.run(vword(0, 3), 0, ab(4150, 1)), TRAP(21)) << "c0 + R*K > 4152";
  EXPECT_EQ(v.run(vword(0, 1), 0, ab(4151, 1)).size(), 5u);
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
  // e = 10 + 6 = 16: scores 10, 20, -5 exactly (heads 0, 1, 2; heads 3..7 and all of t = 1: 0).
  // Word stream of e = 8t + h: t = 0 is quads 0 (h 0..3: 10, 20, -5, 0) and 1 (zeros), t = 1
  // is quads 2, 3 (zeros).  -5 = fb ff ff ff.  34T = 68 tokens.
  auto t = v.run(vword(1, 0), ab(512, 1), ab(0, 2), setup(10));
  ASSERT_EQ(t.size(), 68u);
  EXPECT_EQ(t, cat({VWG(0), VW(0, 0x0a, 0, 0, 0), VW(1, 0x14, 0, 0, 0), VW(2, 0xfb, 0xff, 0xff, 0xff), VW(3, 0, 0, 0, 0),
                    zero_quads(1, 4)}));
  EXPECT_EQ(v.vr(512), 10);
  EXPECT_EQ(v.vr(512 + 64), 20);
  EXPECT_EQ(v.vr(512 + 128), -5);
  EXPECT_EQ(v.vr(512 + 1), 0);
  EXPECT_EQ(v.vr(512 + 2), 77);
  // e = 17: times 2.  e = 15: rnd(s, 1): 10 -> 5, 20 -> 10, -5 -> floor(-4/2) = -2.
  t = v.run(vword(1, 0), ab(512, 1), ab(0, 1), setup(11));
  EXPECT_EQ(v.vr(512 + 64), 40);
  EXPECT_EQ(t, cat({VWG(0), VW(0, 20, 0, 0, 0), VW(1, 40, 0, 0, 0), VW(2, 0xf6, 0xff, 0xff, 0xff), VW(3, 0, 0, 0, 0),
                    zero_quads(1, 2)}))
      << "values as written: 20, 40, -10 (f6 ff ff ff)";
  v.run(vword(1, 0), ab(512, 1), ab(0, 1), setup(9));
  EXPECT_EQ(v.vr(512), 5);
  EXPECT_EQ(v.vr(512 + 64), 10);
  EXPECT_EQ(v.vr(512 + 128), -2);
}

TEST(Vmatr, KModeStreamIsPositionMajor) {
  V v;
  // T = 3, only head 7 (KV head 3, cache lanes 24..31) nonzero: query lane 0 of head 7 = 1,
  // K rows 0, 1, 2 lane 24 = 1, 2, 3; ASH + KSH = 16: s_{7,t} = t + 1.  Element e = 8t + 7 is
  // word 3 of quad 2t + 1: quads 0, 2, 4 are zero, quads 1, 3, 5 end with 1, 2, 3.  34*3 = 102.
  const auto t = v.run(vword(1, 0), ab(0, 0), ab(10, 3), [](VectorState& s) {
    s.act[56] = 1;
    for (int r = 0; r < 3; ++r) {
      s.kc[32 * (10 + r) + 24] = static_cast<std::int8_t>(r + 1);
      s.ksh[10 + r] = 16;
    }
  });
  Tokens want;
  for (u32 tt = 0; tt < 3; ++tt) {
    want = cat({want, zero_quads(2 * tt, 2 * tt + 1), VWG(2 * tt + 1), VW(0, 0, 0, 0, 0), VW(1, 0, 0, 0, 0),
                VW(2, 0, 0, 0, 0), VW(3, tt + 1, 0, 0, 0)});
  }
  ASSERT_EQ(t.size(), 102u);
  EXPECT_EQ(t, want);
  EXPECT_EQ(v.vr(448 + 2), 3) << "head 7, t = 2: VR[dst + 64h + t]";
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
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(v.vr(64 + d), 2 * (d + 1)) << "head 0: 65536*(d+1)*2 / 2^16";
    EXPECT_EQ(v.vr(64 + 8 + d), 2 * (d + 1)) << "head 1 (clamped)";
    EXPECT_EQ(v.vr(64 + 16 + d), 0) << "head 2 (clamped to 0)";
  }
  EXPECT_EQ(v.vr(64 + 24), 0) << "head 3: rnd(30, 16) = 0";
  // VMV(0), then the 64 words e = 8h + d: heads 0 and 1 are 2, 4, .., 16 (quads 0..3), the
  // rest zero (quads 4..15).  T + 272 = 273 tokens.
  ASSERT_EQ(t.size(), 273u);
  EXPECT_EQ(t, cat({tok(Kind::VMV, 0), VWG(0), VW(0, 2, 0, 0, 0), VW(1, 4, 0, 0, 0), VW(2, 6, 0, 0, 0), VW(3, 8, 0, 0, 0),
                    VWG(1), VW(0, 10, 0, 0, 0), VW(1, 12, 0, 0, 0), VW(2, 14, 0, 0, 0), VW(3, 16, 0, 0, 0),
                    VWG(2), VW(0, 2, 0, 0, 0), VW(1, 4, 0, 0, 0), VW(2, 6, 0, 0, 0), VW(3, 8, 0, 0, 0),
                    VWG(3), VW(0, 10, 0, 0, 0), VW(1, 12, 0, 0, 0), VW(2, 14, 0, 0, 0), VW(3, 16, 0, 0, 0),
                    zero_quads(4, 16)}));
  // T = 3 on a zero state: VMV(0) VMV(1) VMV(2), then 64 zero words: 275 tokens.
  t = v.run(vword(1, 1), ab(64, 512), ab(0, 3));
  EXPECT_EQ(t, cat({toks(Kind::VMV, {0, 1, 2}), zero_quads(0, 16)}));
}

TEST(Vmatr, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(1, 2), ab(512, 1), ab(0, 1)), TRAP(16));
  EXPECT_EQ(v.run(vword(1, 0, 3), ab(512, 1), ab(0, 1)), TRAP(16)) << "rd != x0";
  EXPECT_EQ(v.run(vword(1, 0), ab(600, 1), ab(0, 1)), TRAP(17)) << "600 + 448 + 1 > 1024";
  EXPECT_EQ(v.run(vword(1, 0), ab(575, 1), ab(0, 1)).size(), 34u) << "575 + 448 + 1 = 1024; 34T";
  EXPECT_EQ(v.run(vword(1, 0), ab(512, 1), ab(0, 0)), TRAP(18));
  EXPECT_EQ(v.run(vword(1, 0), ab(0, 1), ab(0, 65)), TRAP(18));
  EXPECT_EQ(v.run(vword(1, 0), ab(512, 6), ab(0, 1)), TRAP(19));
  EXPECT_EQ(v.run(vword(1, 0), ab(512, 1), ab(300, 21)), TRAP(22));
  EXPECT_EQ(v.run(vword(1, 1), ab(512 + 10, 512), ab(0, 1)), TRAP(20)) << "dst span covers a probability word";
  EXPECT_EQ(v.run(vword(1, 1), ab(0, 512), ab(0, 1)).size(), 273u) << "T + 272";
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
  // q = rnd(100,2) = 25, rnd(-300,2) = floor(-74.5) = -75, rnd(254,2) = 64, 0.
  // Tokens: VQE(0 << 5 | 2), then block 2's 64 values as an int8 stream: VLG(0) 0x19 0xb5
  // (lo8(-75) = 181) 0x40 0x00, then 60 padding zeros (VLG(1..15)): 81 tokens.
  ASSERT_EQ(t.size(), 81u);
  EXPECT_EQ(t, cat({tok(Kind::VQE, 2), VLG(0), VLB(0, 0x19), VLB(1, 0xb5), VLB(2, 0x40), VLB(3, 0), zero_int8(1, 16)}));
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
    s.vr[70] = 5000;  // beyond n: not quantised, block 1 padding stays 0
  });
  // Group 0: e_0 = E(1) = 0, q = 1, 0 x 63; group 1: e_1 = 3, q = 125 (0x7d), -2 (0xfe), 0 x 4
  // and 58 padding zeros.  One int8 stream: j = 64k + i, so group 1 starts at VLG(16).
  // VQE payloads (k << 5) | e_k: 0 and 35.  81 * ceil(70/64) = 162 tokens.
  ASSERT_EQ(t.size(), 162u);
  EXPECT_EQ(t, cat({tok(Kind::VQE, 0), VLG(0), VLB(0, 1), VLB(1, 0), VLB(2, 0), VLB(3, 0), zero_int8(1, 16),
                    tok(Kind::VQE, 35), VLG(16), VLB(0, 0x7d), VLB(1, 0xfe), VLB(2, 0), VLB(3, 0), zero_int8(17, 32)}));
  EXPECT_EQ(v.m.vector().act[0], 1);
  EXPECT_EQ(v.m.vector().act[64], 125);
  EXPECT_EQ(v.m.vector().act[65], -2);
  EXPECT_EQ(v.m.vector().act[66], 0);
  EXPECT_EQ(v.m.vector().act[70], 0);
  EXPECT_EQ(v.m.vector().ash[0], 0);
  EXPECT_EQ(v.m.vector().ash[1], 3);
}

TEST(Vq, MostNegativeValueAndCacheRows) {
  V v;
  // x = -2^31: E(2^31) = 25 (rnd(2^31, 24) = 128.5 -> 128 > 127; rnd(2^31, 25) = 64); q = rnd(-2^31, 25) = floor(-63.5) = -64.
  // Tokens: VQE(25), then the row's 32 values: lo8(-64) = 0xc0, 31 zeros: 1 + 8 + 32 = 41.
  auto t = v.run(vword(2, 1), ab(5, 0), ab(0, 32), [](VectorState& s) { s.vr[0] = INT32_MIN; });
  EXPECT_EQ(t, cat({tok(Kind::VQE, 25), VLG(0), VLB(0, 0xc0), VLB(1, 0), VLB(2, 0), VLB(3, 0), zero_int8(1, 8)}));
  EXPECT_EQ(v.m.vector().kc[32 * 5], -64);
  EXPECT_EQ(v.m.vector().ksh[5], 25);
  // V row: q_31 = -7 (amax 7: e = 0), the last value of group VLG(7): VLB3(0xf9).
  t = v.run(vword(2, 2), ab(319, 0), ab(0, 32), [](VectorState& s) { s.vr[31] = -7; });
  EXPECT_EQ(t, cat({tok(Kind::VQE, 0), zero_int8(0, 7), VLG(7), VLB(0, 0), VLB(1, 0), VLB(2, 0), VLB(3, 0xf9)}));
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
  // EXP[64] = 24109 = 0x5e2d, EXP[65] = 23736 = 0x5cb8, EXP[0] = 65536 = 0x10000;
  // S = 113381 = 0x1bae5.  Tokens: VXM bytes of m (00 00 01 00), VWG(0) and words e = 0..2,
  // then e = 512: VWG(128) and S.  1*(4 + 1 + 12) + 1 + 4 = 22.
  EXPECT_EQ(t, cat({VXM(0, 0, 1, 0), VWG(0), VW(0, 0x2d, 0x5e, 0, 0), VW(1, 0xb8, 0x5c, 0, 0), VW(2, 0, 0, 1, 0),
                    VWG(128), VW(0, 0xe5, 0xba, 0x01, 0)}));
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
  // m_0 = 2^31-1 (ff ff ff 7f), p = 65536, 0; m_1 = 5, p = 65536, 65536 (group 1 starts at
  // e = 64: VWG(16)); sums at e = 512, 513: 65536, 131072 (00 00 02 00).  2*13 + 1 + 8 = 35.
  EXPECT_EQ(t, cat({VXM(0xff, 0xff, 0xff, 0x7f), VWG(0), VW(0, 0, 0, 1, 0), VW(1, 0, 0, 0, 0),
                    VXM(5, 0, 0, 0), VWG(16), VW(0, 0, 0, 1, 0), VW(1, 0, 0, 1, 0),
                    VWG(128), VW(0, 0, 0, 1, 0), VW(1, 0, 0, 2, 0)}));
  EXPECT_EQ(v.vr(512), 65536);
  EXPECT_EQ(v.vr(513), 0);
  EXPECT_EQ(v.vr(576), 65536);
  EXPECT_EQ(v.vr(900), 65536);
  EXPECT_EQ(v.vr(901), 131072);
}

TEST(Vexp, FiveGroupsOfFiveCrossQuads) {
  V v;
  // G = 5, T = 5 (not a multiple of 4), src 0, dst 512, sums 1000.  Group g's scores are c_g
  // except t = g, which is c_g - 65536: m_g = c_g; m - s = 65536 -> i = rnd(65536, 10) = 64,
  // p = EXP[64] = 24109 (2d 5e 00 00) at t = g, 65536 (00 00 01 00) elsewhere;
  // S_g = 4*65536 + 24109 = 286253 = 0x45e2d (2d 5e 04 00).
  // c = -1 (ff ff ff ff), 0x12345678, 0x80010000 (its low score is -2^31), 256, 2^31 - 1.
  // Each group: VXM0..3, VWG(16g) + 4 words (t 0..3), VWG(16g + 1) + 1 word (t = 4);
  // sums e = 512..516: VWG(128) + 4 words, VWG(129) + 1 word.
  // Count G(4 + ceil(T/4) + 4T) + ceil(G/4) + 4G = 5*26 + 2 + 20 = 152.
  const std::int32_t c[5] = {-1, 0x12345678, static_cast<std::int32_t>(0x80010000u), 256, INT32_MAX};
  auto t = v.run(vword(3, 4), ab(512, 0), ab(1000, 5), [&](VectorState& s) {
    for (int g = 0; g < 5; ++g) {
      for (int tt = 0; tt < 5; ++tt) s.vr[64 * g + tt] = tt == g ? c[g] - 65536 : c[g];
    }
  });
  const Tokens one = VW(0, 0, 0, 1, 0);  // 65536 as word 0 of a quad
  auto P = [](u32 q, bool low) { return low ? VW(q, 0x2d, 0x5e, 0, 0) : VW(q, 0, 0, 1, 0); };
  const Tokens want = cat({
      VXM(0xff, 0xff, 0xff, 0xff), VWG(0), P(0, true), P(1, false), P(2, false), P(3, false), VWG(1), one,
      VXM(0x78, 0x56, 0x34, 0x12), VWG(16), P(0, false), P(1, true), P(2, false), P(3, false), VWG(17), one,
      VXM(0x00, 0x00, 0x01, 0x80), VWG(32), P(0, false), P(1, false), P(2, true), P(3, false), VWG(33), one,
      VXM(0x00, 0x01, 0x00, 0x00), VWG(48), P(0, false), P(1, false), P(2, false), P(3, true), VWG(49), one,
      VXM(0xff, 0xff, 0xff, 0x7f), VWG(64), P(0, false), P(1, false), P(2, false), P(3, false), VWG(65),
      VW(0, 0x2d, 0x5e, 0, 0),
      VWG(128), VW(0, 0x2d, 0x5e, 4, 0), VW(1, 0x2d, 0x5e, 4, 0), VW(2, 0x2d, 0x5e, 4, 0), VW(3, 0x2d, 0x5e, 4, 0),
      VWG(129), VW(0, 0x2d, 0x5e, 4, 0)});
  ASSERT_EQ(t.size(), 152u);
  EXPECT_EQ(t, want);
  EXPECT_EQ(v.vr(512 + 64 * 4 + 4), 24109);
  EXPECT_EQ(v.vr(512 + 64 * 2 + 0), 65536);
  EXPECT_EQ(v.vr(1004), 286253);
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
  // z = 2^31-1 (ff ff ff 7f), -2^31 (00 00 00 80), -2 (fe ff ff ff): ceil(3/4) + 12 = 13.
  EXPECT_EQ(t, cat({VWG(0), VW(0, 0xff, 0xff, 0xff, 0x7f), VW(1, 0, 0, 0, 0x80), VW(2, 0xfe, 0xff, 0xff, 0xff)}));
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
  EXPECT_EQ(t, cat({VWG(0), VW(0, 2, 0, 0, 0), VW(1, 4, 0, 0, 0), VW(2, 9, 0, 0, 0), VW(3, 12, 0, 0, 0)})) << "one full quad: 17";
}

TEST(Vew, StreamOfFiveCrossesAQuad) {
  V v;
  // vector/vew.md §2's example: n = 5 is VWG(0), words 0..3 on VW00..VW33, VWG(1), word 4 on
  // VW00..VW03: 22 tokens.  ADD with z = 1 (01 00 00 00), -1 (ff ff ff ff), 256 (00 01 00 00),
  // 0x01020304 (04 03 02 01), 127 + 128 = 255 (ff 00 00 00).
  const auto t = v.run(vword(4, 0), ab(20, 0), ab(8, 5), [](VectorState& s) {
    s.vr[0] = 1;
    s.vr[1] = -1;
    s.vr[2] = 256;
    s.vr[3] = 0x01020304;
    s.vr[4] = 127;
    s.vr[12] = 128;
  });
  const Tokens want = {
      token_id(Kind::VWG, 0),
      token_id(Kind::VW00, 0x01), token_id(kplus(Kind::VW00, 1), 0x00), token_id(kplus(Kind::VW00, 2), 0x00), token_id(kplus(Kind::VW00, 3), 0x00),
      token_id(kplus(Kind::VW00, 4), 0xff), token_id(kplus(Kind::VW00, 5), 0xff), token_id(kplus(Kind::VW00, 6), 0xff), token_id(kplus(Kind::VW00, 7), 0xff),
      token_id(kplus(Kind::VW00, 8), 0x00), token_id(kplus(Kind::VW00, 9), 0x01), token_id(kplus(Kind::VW00, 10), 0x00), token_id(kplus(Kind::VW00, 11), 0x00),
      token_id(kplus(Kind::VW00, 12), 0x04), token_id(kplus(Kind::VW00, 13), 0x03), token_id(kplus(Kind::VW00, 14), 0x02), token_id(Kind::VW33, 0x01),
      token_id(Kind::VWG, 1),
      token_id(Kind::VW00, 0xff), token_id(kplus(Kind::VW00, 1), 0x00), token_id(kplus(Kind::VW00, 2), 0x00), token_id(kplus(Kind::VW00, 3), 0x00)};
  ASSERT_EQ(t.size(), 22u);
  EXPECT_EQ(t, want);
  EXPECT_EQ(t[17], 256u * 43 + 1) << "VWG(1) is id 256*43 + 1";
  EXPECT_EQ(t[16], 256u * 76 + 1) << "VW33(0x01) is id 256*76 + 1";
  EXPECT_EQ(v.vr(24), 255);
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
  EXPECT_EQ(v.run(vword(4, 0), ab(0, 0), ab(100, 4)).size(), 17u) << "in place is allowed; ceil(4/4) + 16";
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
  EXPECT_EQ(v.vr(10), 65281) << "vector/vfn.md §1: u = 65536 gives 65,281";
  EXPECT_EQ(v.vr(11), 16712062);
  EXPECT_EQ(v.vr(12), 16712062);
  // 65281 = 0xff01 (01 ff 00 00), 16712062 = 0xff017e (7e 01 ff 00): ceil(3/4) + 12 = 13.
  EXPECT_EQ(t, cat({VWG(0), VW(0, 0x01, 0xff, 0, 0), VW(1, 0x7e, 0x01, 0xff, 0), VW(2, 0x7e, 0x01, 0xff, 0)}));
  v.run(vword(5, 1), ab(10, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = 65536;
    s.vr[1] = 0;  // k = 0: RCP[128] * 4 saturates
  });
  EXPECT_EQ(v.vr(10), 65281) << "vector/vfn.md §1: u = 65536 gives 65,281";
  EXPECT_EQ(v.vr(11), INT32_MAX);
  t = v.run(vword(5, 2), ab(10, 0), ab(0, 3), [](VectorState& s) {
    s.vr[0] = 0;
    s.vr[1] = 65536;     // ix = 64 + 512, SIG[576] = 47911
    s.vr[2] = INT32_MIN;  // ix = 0, SIG[0] = 22: -2^31 * 22 / 2^16 = -720896
  });
  EXPECT_EQ(v.vr(10), 0);
  EXPECT_EQ(v.vr(11), 47911);
  EXPECT_EQ(v.vr(12), -720896);
  // 47911 = 0xbb27 (27 bb 00 00); -720896 = -0xb0000 = 0xfff50000 (00 00 f5 ff).
  EXPECT_EQ(t, cat({VWG(0), VW(0, 0, 0, 0, 0), VW(1, 0x27, 0xbb, 0, 0), VW(2, 0, 0, 0xf5, 0xff)}));
}

TEST(Vfn, Traps) {
  V v;
  EXPECT_EQ(v.run(vword(5, 3), ab(10, 0), ab(0, 3)), TRAP(16));
  EXPECT_EQ(v.run(vword(5, 0), ab(1, 0), ab(0, 3)), TRAP(20));
  EXPECT_EQ(v.run(vword(5, 0), ab(0, 0), ab(0, 3)).size(), 13u) << "in place; ceil(3/4) + 12";
  EXPECT_EQ(v.run(vword(5, 0), ab(0, 0), ab(0, 0)), TRAP(18));
}

// ------------------------------------------------------------------ VRED
TEST(Vred, SumsqSumMax) {
  V v;
  // Each: VRD(k) per source group, then the one-element word stream VWG(0) VW00..VW03 of z.
  auto t = v.run(vword(6, 0 | 1 << 2), ab(900, 0), ab(0, 2), [](VectorState& s) { s.vr[0] = s.vr[1] = 65536; });
  EXPECT_EQ(v.vr(900), 65536) << "2^33 / 2^17";
  EXPECT_EQ(t, cat({tok(Kind::VRD, 0), VWG(0), VW(0, 0, 0, 1, 0)}));
  t = v.run(vword(6, 0), ab(900, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = 3;
    s.vr[1] = 4;
  });
  EXPECT_EQ(t, cat({tok(Kind::VRD, 0), VWG(0), VW(0, 0, 0, 0, 0)})) << "rnd(25, 16) = 0";
  EXPECT_EQ(v.vr(900), 0);
  t = v.run(vword(6, 1 | 1 << 2), ab(900, 0), ab(0, 2), [](VectorState& s) {
    s.vr[0] = 5;
    s.vr[1] = -7;
  });
  EXPECT_EQ(t, cat({tok(Kind::VRD, 0), VWG(0), VW(0, 0xff, 0xff, 0xff, 0xff)})) << "z = -1";
  EXPECT_EQ(v.vr(900), -1) << "rnd(-2, 1) = floor(-1/2) = -1";
  t = v.run(vword(6, 2), ab(900, 0), ab(0, 3), [](VectorState& s) {
    s.vr[0] = -5;
    s.vr[1] = -3;
    s.vr[2] = -9;
  });
  EXPECT_EQ(t, cat({tok(Kind::VRD, 0), VWG(0), VW(0, 0xfd, 0xff, 0xff, 0xff)})) << "maximum -3";
  EXPECT_EQ(v.vr(900), -3);
  // Saturation (64 * 2^62 = 2^68) and one VRD per source group: n = 65 is groups 0, 1.
  t = v.run(vword(6, 0), ab(900, 0), ab(0, 65), [](VectorState& s) { std::fill(s.vr.begin(), s.vr.begin() + 65, INT32_MIN); });
  EXPECT_EQ(v.vr(900), INT32_MAX);
  EXPECT_EQ(t, cat({toks(Kind::VRD, {0, 1}), VWG(0), VW(0, 0xff, 0xff, 0xff, 0x7f)}));
  t = v.run(vword(6, 1), ab(900, 0), ab(0, 65), [](VectorState& s) { std::fill(s.vr.begin(), s.vr.begin() + 65, 1); });
  EXPECT_EQ(t, cat({toks(Kind::VRD, {0, 1}), VWG(0), VW(0, 65, 0, 0, 0)})) << "z = 65";
  EXPECT_EQ(v.vr(900), 65);
}

TEST(Vred, ManyGroups) {
  V v;
  // n = 1000: ceil(1000/64) = 16 groups, VRD(0) .. VRD(15), then z: SUM of 1000 ones = 1000
  // = 0x3e8 (e8 03 00 00).  ceil(n/64) + 5 = 21 tokens.
  auto t = v.run(vword(6, 1), ab(1020, 0), ab(0, 1000), [](VectorState& s) { std::fill(s.vr.begin(), s.vr.begin() + 1000, 1); });
  ASSERT_EQ(t.size(), 21u);
  EXPECT_EQ(t, cat({toks(Kind::VRD, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}), VWG(0), VW(0, 0xe8, 0x03, 0, 0)}));
  EXPECT_EQ(v.vr(1020), 1000);
  // n = 129: groups 0, 1, 2 (the last one holds only element 128).  MAX = 7 at element 128.
  t = v.run(vword(6, 2), ab(1020, 0), ab(0, 129), [](VectorState& s) { s.vr[128] = 7; });
  EXPECT_EQ(t, cat({toks(Kind::VRD, {0, 1, 2}), VWG(0), VW(0, 7, 0, 0, 0)}));
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

// ------------------------------------------------------------------ §2.1 sections
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
