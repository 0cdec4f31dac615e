// Exhaustive exactness tests of the compiler primitives over their whole (small) input ranges,
// run through the real CPU executor with the numerics audit on. Expected values are written
// from each primitive's definition, never produced by the chip.
#include <gtest/gtest.h>

#include <random>

#include "primitive_rig.hpp"
#include "test_util.hpp"

namespace lockstep::chip {
namespace {

using namespace compiler;
using test::ProbeSpec;
using test::Rig;

void expect_clean_audit(const Rig& rig) {
  const auto v = rig.executor().audit_violation(0);
  EXPECT_FALSE(v.has_value()) << v->to_string();
}

TEST(Primitives, OneHotDecodeAllN) {
  for (std::uint32_t n : {1u, 2u, 3u, 5u, 16u, 64u, 256u}) {
    Rig rig({{-3, static_cast<int>(n) + 3}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
      B.add_layer();
      onehot_decode(B.layer(1), in[0], B.field("oh", n));
      return ProbeSpec{1, Sublayer::Mlp, {"oh"}};
    });
    for (int x = -3; x <= static_cast<int>(n) + 3; ++x) {
      rig.set(0, x);
      const auto oh = rig.out("oh");
      for (std::uint32_t i = 0; i < n; ++i)
        ASSERT_EQ(oh[i], x == static_cast<int>(i) ? 1.0f : 0.0f) << "onehot_decode n=" << n << " x=" << x << " i=" << i;
    }
    expect_clean_audit(rig);
  }
}

TEST(Primitives, DecodeLookupAnyTable) {
  const std::uint64_t seed = test::seed_for("Primitives.DecodeLookupAnyTable", 11);
  std::mt19937_64 rng(seed);
  const int n = 37;
  std::vector<std::array<int, 3>> tab(n);
  for (auto& row : tab)
    for (int& v : row) v = static_cast<int>(rng() % 2001) - 1000;
  Rig rig({{-2, n + 2}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef out = B.field("out", 3);
    std::vector<SparseVec> table(n);
    for (int i = 0; i < n; ++i)
      for (std::uint32_t j = 0; j < 3; ++j) table[i].emplace_back(out.dim(j), tab[i][j]);
    decode_lookup(B.layer(1), in[0], table);
    return ProbeSpec{1, Sublayer::Mlp, {"out"}};
  });
  for (int x = -2; x <= n + 2; ++x) {
    rig.set(0, x);
    const auto out = rig.out("out");
    for (int j = 0; j < 3; ++j)
      ASSERT_EQ(out[j], x >= 0 && x < n ? static_cast<float>(tab[x][j]) : 0.0f) << "x=" << x << " j=" << j << " seed " << seed;
  }
  expect_clean_audit(rig);
}

TEST(Primitives, LookupOfOneHot) {
  const int n = 20;
  Rig rig({{-1, n - 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef oh = B.field("oh", n);
    onehot_decode(B.layer(1), in[0], oh);
    B.add_layer();
    const FieldRef out = B.field("out", 2);
    std::vector<SparseVec> table(n);
    for (int i = 0; i < n; ++i) table[i] = {{out.dim(0), i * i - 7}, {out.dim(1), 3 * i}};
    lookup(B.layer(2), oh, table);
    return ProbeSpec{2, Sublayer::Mlp, {"out"}};
  });
  for (int x = -1; x < n; ++x) {
    rig.set(0, x);
    const auto out = rig.out("out");
    ASSERT_EQ(out[0], x >= 0 ? static_cast<float>(x * x - 7) : 0.0f) << "x=" << x;
    ASSERT_EQ(out[1], x >= 0 ? static_cast<float>(3 * x) : 0.0f) << "x=" << x;
  }
  expect_clean_audit(rig);
}

TEST(Primitives, ThresholdAndCompare) {
  const std::vector<int> ts = {-5, 0, 7, 255};
  Rig rig({{-300, 300}, {-20, 20}, {-20, 20}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef th = B.field("th", static_cast<std::uint32_t>(ts.size()));
    const FieldRef ge = B.field("ge", 1);
    for (std::uint32_t i = 0; i < ts.size(); ++i) threshold(B.layer(1), in[0], ts[i], th.dim(i));
    compare_ge(B.layer(1), in[1], in[2], ge.dim());
    return ProbeSpec{1, Sublayer::Mlp, {"th", "ge"}};
  });
  for (int x = -300; x <= 300; ++x) {
    rig.set(0, x);
    const auto th = rig.out("th");
    for (std::size_t i = 0; i < ts.size(); ++i) ASSERT_EQ(th[i], x >= ts[i] ? 1.0f : 0.0f) << "threshold x=" << x << " t=" << ts[i];
  }
  for (int a = -20; a <= 20; ++a) {
    rig.set(1, a);
    for (int b = -20; b <= 20; ++b) {
      rig.set(2, b);
      ASSERT_EQ(rig.out1("ge"), a >= b ? 1.0f : 0.0f) << "compare_ge a=" << a << " b=" << b;
    }
  }
  expect_clean_audit(rig);
}

TEST(Primitives, ThresholdIfAllInputs) {
  Rig rig({{-50, 50}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef out = B.field("out", 1);
    threshold_if(B.layer(1), in[0], 3, 50, in[1], out.dim(), 5);
    return ProbeSpec{1, Sublayer::Mlp, {"out"}};
  });
  for (int e = 0; e <= 1; ++e) {
    rig.set(1, e);
    for (int x = -50; x <= 50; ++x) {
      rig.set(0, x);
      ASSERT_EQ(rig.out1("out"), (x >= 3 && e == 1) ? 5.0f : 0.0f) << "threshold_if x=" << x << " e=" << e;
    }
  }
  expect_clean_audit(rig);
}

TEST(Primitives, AddWithCarryAllBytePairs) {
  Rig rig({{0, 255}, {0, 255}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef sum = B.field("sum", 1), carry = B.field("carry", 1);
    add_with_carry(B.layer(1), in[0], in[1], in[2], sum.dim(), carry.dim());
    return ProbeSpec{1, Sublayer::Mlp, {"sum", "carry"}};
  });
  std::size_t cases = 0;
  for (int a = 0; a < 256; ++a) {
    rig.set(0, a);
    for (int b = 0; b < 256; ++b) {
      rig.set(1, b);
      for (int c = 0; c <= 1; ++c) {
        rig.set(2, c);
        const int s = a + b + c;
        ASSERT_EQ(rig.out1("sum"), static_cast<float>(s % 256)) << "add_with_carry a=" << a << " b=" << b << " cin=" << c;
        ASSERT_EQ(rig.out1("carry"), static_cast<float>(s / 256)) << "add_with_carry a=" << a << " b=" << b << " cin=" << c;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 256u * 256u * 2u);
  expect_clean_audit(rig);
}

class AddWithCarryIf : public ::testing::TestWithParam<int> {};

TEST_P(AddWithCarryIf, AllInputsForEnable) {
  const int e = GetParam();
  Rig rig({{0, 255}, {0, 255}, {0, 1}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef sum = B.field("sum", 1), carry = B.field("carry", 1);
    add_with_carry_if(B.layer(1), in[0], in[1], in[2], in[3], sum.dim(), carry.dim());
    return ProbeSpec{1, Sublayer::Mlp, {"sum", "carry"}};
  });
  rig.set(3, e);
  for (int a = 0; a < 256; ++a) {
    rig.set(0, a);
    for (int b = 0; b < 256; ++b) {
      rig.set(1, b);
      for (int c = 0; c <= 1; ++c) {
        rig.set(2, c);
        const int s = a + b + c;
        ASSERT_EQ(rig.out1("sum"), static_cast<float>(e * (s % 256))) << "a=" << a << " b=" << b << " cin=" << c << " e=" << e;
        ASSERT_EQ(rig.out1("carry"), static_cast<float>(e * (s / 256))) << "a=" << a << " b=" << b << " cin=" << c << " e=" << e;
      }
    }
  }
  expect_clean_audit(rig);
}
INSTANTIATE_TEST_SUITE_P(Primitives, AddWithCarryIf, ::testing::Values(0, 1));

TEST(Primitives, GatedProductAndSelect) {
  Rig rig({{-300, 300}, {-3, 3}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef out = B.field("out", 1);
    gated_product(B.layer(1), in[0], in[1], out.dim());
    return ProbeSpec{1, Sublayer::Mlp, {"out"}};
  });
  for (int g = -3; g <= 3; ++g) {
    rig.set(1, g);
    for (int u = -300; u <= 300; ++u) {
      rig.set(0, u);
      ASSERT_EQ(rig.out1("out"), static_cast<float>(u * std::max(g, 0))) << "gated_product u=" << u << " g=" << g;
    }
  }
  expect_clean_audit(rig);
}

TEST(Primitives, AndOfBits) {
  Rig rig({{0, 1}, {0, 1}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef and3 = B.field("and3", 1), and2 = B.field("and2", 1);
    and_bits(B.layer(1), {in[0], in[1], in[2]}, and3.dim());
    and_bits(B.layer(1), {in[0], in[1]}, and2.dim(), 7);
    return ProbeSpec{1, Sublayer::Mlp, {"and3", "and2"}};
  });
  for (int a = 0; a <= 1; ++a)
    for (int b = 0; b <= 1; ++b)
      for (int c = 0; c <= 1; ++c) {
        rig.set(0, a);
        rig.set(1, b);
        rig.set(2, c);
        ASSERT_EQ(rig.out1("and3"), static_cast<float>(a & b & c)) << a << b << c;
        ASSERT_EQ(rig.out1("and2"), static_cast<float>(7 * (a & b))) << a << b << c;
      }
  expect_clean_audit(rig);
}

TEST(Primitives, WhenIsTheAndOfItsConditions) {
  // Three 0/1 conditions, a negated one (1 - c) and a constant: every combination.
  Rig rig({{0, 1}, {0, 1}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef all3 = B.field("all3", 2), one = B.field("one", 1), neg = B.field("neg", 1);
    when(B.layer(1), {in[0], in[1], in[2]}, {{all3.dim(0), 1.0}, {all3.dim(1), -5.0}});
    when(B.layer(1), {in[1]}, {{one.dim(), 3.0}});
    when(B.layer(1), {in[0], Lin::constant(1) - in[1], Lin::constant(1)}, {{neg.dim(), 2.0}});
    EXPECT_EQ(B.layer(1).num_units(), 3u);  // one unit per when()
    return ProbeSpec{1, Sublayer::Mlp, {"all3", "one", "neg"}};
  });
  for (int a = 0; a <= 1; ++a)
    for (int b = 0; b <= 1; ++b)
      for (int c = 0; c <= 1; ++c) {
        rig.set(0, a);
        rig.set(1, b);
        rig.set(2, c);
        const auto all3 = rig.out("all3");
        ASSERT_EQ(all3[0], static_cast<float>(a & b & c)) << a << b << c;
        ASSERT_EQ(all3[1], static_cast<float>(-5 * (a & b & c))) << a << b << c;
        ASSERT_EQ(rig.out1("one"), static_cast<float>(3 * b)) << a << b << c;
        ASSERT_EQ(rig.out1("neg"), static_cast<float>(2 * (a & (1 - b)))) << a << b << c;
      }
  expect_clean_audit(rig);
}

TEST(Primitives, TableOverOneHotPartsAndGates) {
  // Parts: x in [0, 3) and y in [0, 4) as one-hots (outside: no value), y masked to its low bit
  // in a second table; gate g in {0, 1}. fn is empty for (x, y) = (1, 2): no unit, no output.
  auto fn = [](unsigned x, unsigned y) { return static_cast<int>(7 * x + y) - 4; };
  std::uint32_t units = 0, units_xy = 0;
  Rig rig({{-1, 3}, {-1, 4}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef x = B.field("x_oh", 3), y = B.field("y_oh", 4);
    onehot_decode(B.layer(1), in[0], x);
    onehot_decode(B.layer(1), in[1], y);
    B.add_layer();
    const FieldRef out = B.field("out", 2), low = B.field("low", 2);
    OneHot xo, yo;
    for (std::uint32_t i = 0; i < 3; ++i) xo.push_back(x[i]);
    for (std::uint32_t i = 0; i < 4; ++i) yo.push_back(y[i]);
    LayerBuilder& l2 = B.layer(2);
    table(l2, {xo, yo}, [&](const std::vector<unsigned>& v) {
      if (v[0] == 1 && v[1] == 2) return SparseVec{};
      return SparseVec{{out.dim(0), static_cast<double>(fn(v[0], v[1]))}, {out.dim(1), 1.0}};
    }, {in[2]});
    units = units_xy = l2.num_units();
    // y's low bit: entries 2, 3 fold into 0, 1; the constant-0 entries 2, 3 are skipped
    OneHot ylow(4);
    for (unsigned j = 0; j < 4; ++j) ylow[j & 1] += yo[j];
    table(l2, {ylow}, [&](const std::vector<unsigned>& v) { return SparseVec{{low.dim(v[0]), 1.0}}; });
    units = l2.num_units() - units;
    return ProbeSpec{2, Sublayer::Mlp, {"out", "low"}};
  });
  EXPECT_EQ(units_xy, 3u * 4u - 1u);  // one unit per combination with a non-empty result
  EXPECT_EQ(units, 2u);               // one unit per non-constant entry of ylow
  for (int g = 0; g <= 1; ++g)
    for (int x = -1; x <= 3; ++x)
      for (int y = -1; y <= 4; ++y) {
        rig.set(2, g);
        rig.set(0, x);
        rig.set(1, y);
        const bool valid = x >= 0 && x < 3 && y >= 0 && y < 4;
        const bool hit = g == 1 && valid && !(x == 1 && y == 2);
        const auto out = rig.out("out");
        ASSERT_EQ(out[0], hit ? static_cast<float>(fn(x, y)) : 0.0f) << "g=" << g << " x=" << x << " y=" << y;
        ASSERT_EQ(out[1], hit ? 1.0f : 0.0f) << "g=" << g << " x=" << x << " y=" << y;
        const auto low = rig.out("low");
        const bool yv = y >= 0 && y < 4;
        ASSERT_EQ(low[0], yv && (y & 1) == 0 ? 1.0f : 0.0f) << "y=" << y;
        ASSERT_EQ(low[1], yv && (y & 1) == 1 ? 1.0f : 0.0f) << "y=" << y;
      }
  expect_clean_audit(rig);
}

TEST(Primitives, MemoryRowWriteThenReadAcrossHeads) {
  // 40 slots in heads of 16 columns: write slot w := v when e, read slot r, every step.
  const int slots = 40;
  Rig rig({{-1, slots - 1}, {-1, slots - 1}, {-9, 300}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef w = B.field("w_oh", slots), r = B.field("r_oh", slots);
    onehot_decode(B.layer(1), in[0], w);
    onehot_decode(B.layer(1), in[1], r);
    B.add_layer();
    const Memory mem = add_memory(B, 2, "mem", slots, 2, 16);
    EXPECT_EQ(mem.heads.size(), 3u);
    const FieldRef out = B.field("out", 2);
    memory_write(B, mem, w, {in[2], in[2] * 2.0 + 1.0}, in[3]);
    memory_read(B, mem, r, out);
    return ProbeSpec{2, Sublayer::Memory, {"out"}};
  });
  std::vector<std::array<float, 2>> model(slots, {0.0f, 0.0f});
  const std::uint64_t seed = test::seed_for("Primitives.MemoryRowWriteThenReadAcrossHeads", 12);
  std::mt19937_64 rng(seed);
  int regs[4] = {-1, -1, -9, 0};
  for (int step = 0; step < 20000; ++step) {
    const int which = static_cast<int>(rng() % 4);
    const int lo[4] = {-1, -1, -9, 0}, hi[4] = {slots - 1, slots - 1, 300, 1};
    regs[which] = lo[which] + static_cast<int>(rng() % static_cast<unsigned>(hi[which] - lo[which] + 1));
    rig.set(static_cast<std::uint32_t>(which), regs[which]);
    if (regs[3] == 1 && regs[0] >= 0) model[regs[0]] = {static_cast<float>(regs[2]), static_cast<float>(2 * regs[2] + 1)};
    const auto out = rig.out("out");
    const std::array<float, 2> want = regs[1] >= 0 ? model[regs[1]] : std::array<float, 2>{0.0f, 0.0f};
    ASSERT_EQ(out[0], want[0]) << "step " << step << " w=" << regs[0] << " r=" << regs[1] << " v=" << regs[2] << " e=" << regs[3] << " seed " << seed;
    ASSERT_EQ(out[1], want[1]) << "step " << step << " seed " << seed;
  }
  expect_clean_audit(rig);
}

TEST(Primitives, EmissionEveryTokenWinsByItsMargin) {
  TokenSpace ts;
  ts.add_kind("ONE", 1);
  ts.add_kind("SMALL", 16);
  ts.add_kind("BYTE", 256);
  ts.add_kind("OTHER", 256);
  Rig rig({{0, 3}, {0, 255}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef k = B.field("k_oh", 4), p = B.field("p_oh", 256);
    onehot_decode(B.layer(1), in[0], k);
    onehot_decode(B.layer(1), in[1], p);
    emit_onehot(B, ts, k, p, 2);
    return ProbeSpec{1, Sublayer::Mlp, {"k_oh"}};
  }, ts.vocab_size());
  std::size_t checked = 0;
  for (std::uint32_t kind = 0; kind < 4; ++kind) {
    rig.set(0, static_cast<int>(kind));
    const std::uint32_t count = ts.kinds()[kind].count;
    for (std::uint32_t p = 0; p < 256; ++p) {
      rig.set(1, static_cast<int>(p));
      if (count > 1 && p >= count) continue;  // no such token: not a valid emission
      const Token want = ts.token(kind, count == 1 ? 0 : p);
      ASSERT_EQ(rig.token(), want) << "emit kind " << kind << " payload " << p;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 256u + 16u + 256u + 256u);
  expect_clean_audit(rig);
}

}  // namespace
}  // namespace lockstep::chip
