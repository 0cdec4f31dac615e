// RapidCheck properties of the primitives where the input range is too large to enumerate.
// RapidCheck prints its seed ("Using configuration: seed=..."); replay a failure with
// RC_PARAMS="reproduce=..." as printed, or RC_PARAMS="seed=N".
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "../../properties/rc_full_range.h"  // whole-range generators at every size
#include "primitive_rig.hpp"

namespace lockstep::chip {
namespace {

using namespace compiler;
using test::ProbeSpec;
using test::Rig;

TEST(PrimitiveProperties, GatedProductOfLargeOperands) {
  Rig rig({{-4000, 4000}, {-4000, 4000}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    gated_product(B.layer(1), in[0], in[1], B.field("out", 1).dim());
    return ProbeSpec{1, Sublayer::Mlp, {"out"}};
  });
  const bool ok = rc::check("u * ReLU(g) is exact for |u|, |g| <= 4000", [&] {
    const int u = *rcfull::in_range(-4000, 4001);
    const int g = *rcfull::in_range(-4000, 4001);
    rig.set(0, u);
    rig.set(1, g);
    RC_ASSERT(rig.out1("out") == static_cast<float>(u * std::max(g, 0)));
  });
  EXPECT_TRUE(ok);
  EXPECT_FALSE(rig.executor().audit_violation(0).has_value());
}

TEST(PrimitiveProperties, AddWithCarryOfElevenBitDigits) {
  const int base = 2048;  // the widest power of two with base^2 < 2^24
  Rig rig({{0, base - 1}, {0, base - 1}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    const FieldRef sum = B.field("sum", 1), carry = B.field("carry", 1);
    add_with_carry(B.layer(1), in[0], in[1], in[2], sum.dim(), carry.dim(), base);
    return ProbeSpec{1, Sublayer::Mlp, {"sum", "carry"}};
  });
  const bool ok = rc::check("11-bit add with carry is exact", [&] {
    const int a = *rc::gen::oneOf(rcfull::in_range(0, base), rc::gen::element(0, 1, base - 2, base - 1));
    const int b = *rc::gen::oneOf(rcfull::in_range(0, base), rc::gen::element(0, 1, base - 2, base - 1));
    const int c = *rcfull::in_range(0, 2);
    rig.set(0, a);
    rig.set(1, b);
    rig.set(2, c);
    RC_ASSERT(rig.out1("sum") == static_cast<float>((a + b + c) % base));
    RC_ASSERT(rig.out1("carry") == static_cast<float>((a + b + c) / base));
  });
  EXPECT_TRUE(ok);
  EXPECT_FALSE(rig.executor().audit_violation(0).has_value());
  EXPECT_THROW(add_with_carry(*std::make_unique<LayerBuilder>(), Lin(), Lin(), Lin(), 0, 1, 65536), std::logic_error);
}

// The same three units with base 2^16 are NOT exact (partial sums reach 2^32): the audit must say
// so, naming the layer and the residual field, at the first step where it happens.
TEST(PrimitiveProperties, AuditFlagsInexactSixteenBitCarry) {
  const double base = 65536;
  Rig rig({{0, 65535}, {0, 65535}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    LayerBuilder& L = B.layer(1);
    const FieldRef sum = B.field("sum", 1);
    const Lin s = in[0] + in[1];
    const auto r0 = L.relu_unit(s), r1 = L.relu_unit(s - (base - 1)), r2 = L.relu_unit(s - base);
    L.unit_out(r0, sum.dim(), 1);
    L.unit_out(r1, sum.dim(), -base);
    L.unit_out(r2, sum.dim(), base);
    return ProbeSpec{1, Sublayer::Mlp, {"sum"}};
  });
  rig.set(0, 259);
  EXPECT_FALSE(rig.executor().audit_violation(0).has_value());
  rig.set(1, 65534);
  const auto v = rig.executor().audit_violation(0);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->layer, 1);
  EXPECT_EQ(v->activation, "mlp.resid");
  EXPECT_EQ(v->field, "sum[0]");
  std::printf("%s\n", v->to_string().c_str());
}

TEST(PrimitiveProperties, ThresholdIfWideRange) {
  Rig rig({{-5000, 5000}, {-5000, 5000}, {0, 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
    B.add_layer();
    // [x - t >= 0 AND e] with x - t in [-10000, 10000]
    threshold_if(B.layer(1), in[0] - in[1], 0, 10000, in[2], B.field("out", 1).dim());
    return ProbeSpec{1, Sublayer::Mlp, {"out"}};
  });
  const bool ok = rc::check("threshold_if over a wide range", [&] {
    const int x = *rcfull::in_range(-5000, 5001);
    const int t = *rcfull::in_range(-5000, 5001);
    const int e = *rcfull::in_range(0, 2);
    rig.set(0, x);
    rig.set(1, t);
    rig.set(2, e);
    RC_ASSERT(rig.out1("out") == ((x >= t && e) ? 1.0f : 0.0f));
  });
  EXPECT_TRUE(ok);
}

// Table values up to 1000 keep 4 * 1000 * (n + 2) * (n + 2) < 2^24 (decode_lookup's precondition),
// so the audit must stay clean too.
TEST(PrimitiveProperties, DecodeLookupOfRandomTables) {
  const bool ok = rc::check("decode_lookup returns table[x] for any table", [] {
    const int n = *rcfull::in_range(1, 24);
    const auto table = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n), rcfull::in_range(-1000, 1001));
    Rig rig({{-2, n + 1}}, [&](ChipBuilder& B, const std::vector<Lin>& in) {
      B.add_layer();
      const FieldRef out = B.field("out", 1);
      std::vector<SparseVec> t(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = {{out.dim(), table[static_cast<std::size_t>(i)]}};
      decode_lookup(B.layer(1), in[0], t);
      return ProbeSpec{1, Sublayer::Mlp, {"out"}};
    });
    for (int x = -2; x <= n + 1; ++x) {
      rig.set(0, x);
      RC_ASSERT(rig.out1("out") == (x >= 0 && x < n ? static_cast<float>(table[static_cast<std::size_t>(x)]) : 0.0f));
    }
    RC_ASSERT(!rig.executor().audit_violation(0).has_value());
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace lockstep::chip
