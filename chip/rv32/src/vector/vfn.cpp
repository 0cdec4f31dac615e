// VFN (vector.md section 4.6): RSQRT and RECIP from the RSQ and RCP tables, SILU from SIG.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VFN RSQRT and RECIP (vector.md section 4.6), on the word stream compile_vew() sequences: from x =
// VR[src + e] (port x),
// - layer 7: x gated to these steps; layer 8: the leading nonzero nibble of a positive x
//   (one-hot; none for x <= 0);
// - layer 9: k = floor_log2(max(x, 1)) (one-hot 0..30);
// - layer 10: the bits of ix, selected by k (RECIP: bits k - 7 .. k - 1 under the leading 1;
//   RSQRT: bits k2 - 6 .. k2 + 1, k2 = k - k mod 2; bits below 0 are 0: the left shifts);
// - layer 11: z as nibble one-hots from one table over (ix's bits, k) per function, every entry
//   computed here from section 3's formulas (RCP, RSQ) and section 4.6's;
// - layer 12: byte m of z for the next token.
std::int64_t VectorUnit::rnd_shift(std::int64_t x, int s) { return s == 0 ? x : (x + (1LL << (s - 1))) >> s; }

void VectorUnit::compile_vfn() {
  const Lin one = Lin::constant(1);
  const OH& tm = TM_;
  const Lin more = one - LASTW_[0];
  // z is formed on a word's first value step only; its one-hots wait in a slot of layer 12 for
  // the other three (hold_rows(), issue 30's lever 2)
  const FieldRef XV = gated_copy(7, "vfn_x", {VRX}, GVFN1_);  // x on RSQRT/RECIP first value steps only
  auto bit = [&](int b) {  // bit b of x, linear in its nibble one-hots (0 outside 0..31)
    return b < 0 || b > 31 ? Lin() : digit_bit(XV, static_cast<std::uint32_t>(b));
  };
  const Lin g = GVFN1_;  // an RSQRT or RECIP word's first value step
  const FieldRef LN = B.field("vfn_lead_nibble", 8);
  for (std::uint32_t i = 0; i < 8; ++i) {
    std::vector<Lin> conds = {any_of(nib(XV, i), [i](unsigned v) { return v != 0 && (i < 7 || v < 8); }), g};
    for (std::uint32_t j = i + 1; j < 8; ++j) conds.push_back(nib(XV, j)[0]);
    when(L(8), conds, {{LN.dim(i), 1.0}});
  }
  const FieldRef KF = B.field("vfn_log2", 31);
  Lin lead;
  for (std::uint32_t i = 0; i < 8; ++i) {
    lead += LN[i];
    for (unsigned v = 1; v < (i == 7 ? 8u : 16u); ++v) {
      const unsigned fl = v >= 8 ? 3 : v >= 4 ? 2 : v >= 2 ? 1 : 0;
      when(L(9), {LN[i], nib(XV, i)[v]}, {{KF.dim(4 * i + fl), 1.0}});
    }
  }
  L(9).unit_out(L(9).relu_unit(g - lead), KF.dim(0), 1.0);  // x <= 0: u = 1, k = 0
  const FieldRef IXR = B.field("vfn_recip_ix_bits", 7), IXS = B.field("vfn_rsqrt_ix_bits", 8);
  for (int kk = 0; kk <= 30; ++kk) {
    for (int t = 0; t < 7; ++t) {
      const Lin b = bit(kk - 7 + t);
      if (!b.terms.empty())
        when(L(10), {KF[static_cast<std::uint32_t>(kk)], b, EFN[1], lead}, {{IXR.dim(static_cast<std::uint32_t>(t)), 1.0}});
    }
    for (int t = 0; t < 8; ++t) {
      const Lin b = bit(kk - kk % 2 - 6 + t);
      if (!b.terms.empty())
        when(L(10), {KF[static_cast<std::uint32_t>(kk)], b, EFN[0], lead}, {{IXS.dim(static_cast<std::uint32_t>(t)), 1.0}});
    }
  }
  // x <= 0 (no leading nibble): u = 1, so RSQRT's ix = 1 << 6 (RECIP's: the implicit leading 1, 128)
  L(10).unit_out(L(10).relu_unit(g + EFN[0] - 1.0 - lead), IXS.dim(6), 1.0);
  const FieldRef Z = B.field("vfn_z", 128);
  auto word_out = [&](std::uint32_t z) {
    SparseVec o;
    for (std::uint32_t n = 0; n < 8; ++n) o.push_back({Z.dim(16 * n + ((z >> (4 * n)) & 15)), 1.0});
    return o;
  };
  std::vector<OH> parts;
  for (std::uint32_t t = 0; t < 7; ++t) parts.push_back(OH{one - IXR[t], IXR[t]});
  parts.push_back(field_oh(KF, 0, 31));
  table(L(11), parts, [&](const std::vector<unsigned>& v) {
    unsigned low = 0;
    for (unsigned t = 0; t < 7; ++t) low |= v[t] << t;
    const int kk = static_cast<int>(v[7]);
    if (kk < 7 && (low & ((1u << (7 - kk)) - 1)) != 0) return SparseVec{};  // u << (7 - k): those bits are 0
    const std::int64_t r = rcp_entry(128 + low);
    const std::int64_t z = kk <= 2 ? std::min<std::int64_t>(r << (2 - kk), 0x7FFFFFFF) : rnd_shift(r, kk - 2);
    return word_out(static_cast<std::uint32_t>(z));
  }, {EFN[1]});
  parts.clear();
  for (std::uint32_t t = 0; t < 8; ++t) parts.push_back(OH{one - IXS[t], IXS[t]});
  OH k2(16);
  for (std::uint32_t h = 0; h < 16; ++h) k2[h] = KF[2 * h] + (2 * h + 1 < 31 ? KF[2 * h + 1] : Lin());
  parts.push_back(k2);
  table(L(11), parts, [&](const std::vector<unsigned>& v) {
    unsigned ix = 0;
    for (unsigned t = 0; t < 8; ++t) ix |= v[t] << t;
    const int kk2 = 2 * static_cast<int>(v[8]);
    if (ix < 64 || (kk2 < 6 && (ix & ((1u << (6 - kk2)) - 1)) != 0)) return SparseVec{};
    return word_out(static_cast<std::uint32_t>(rnd_shift(rsq_entry(ix), kk2 / 2)));
  }, {EFN[0]});
  LayerBuilder& l12 = L(12);
  hold_rows(l12, Z, 0, 128, g, GVFN_ - g);
  for (std::uint32_t m = 0; m < 4; ++m)
    for (unsigned v = 0; v < 16; ++v) {
      l12.unit_out(l12.relu_unit(Z[16 * (2 * m) + v] + tm[m] + more - 2.0), NPL.dim(v), 1.0);
      l12.unit_out(l12.relu_unit(Z[16 * (2 * m + 1) + v] + tm[m] + more - 2.0), NPH.dim(v), 1.0);
    }
  silu();
}

// VFN SILU (vector.md section 4.6): z = sat32(rnd(x SIG[ix], 16)), ix = min(1023, max(0,
// rnd(x, 10) + 512)). rnd(x, 10) + 512 = floor((x + 2^19 + 2^9) / 2^10): for -523,776 <= x <=
// 522,751 it is bits 10..19 of w = x + 0x80200 (20 bits, no wrap); above, ix = 1023, below, 0.
// - layer 7: x gated to SILU's steps; layer 8: the two clamps (nibble compares against
//   0x0007FA00 and 0xFFF801FF) and ix's pieces: bits 0..5 from (x2, x3), bits 6..9 from (x4 and
//   the carry into it: x3 = 15 and x2 >= 14);
// - layer 9: SIG[ix] as 5 signed nibbles (one table over ix's two pieces; the clamps' entries);
// - layers 10..13: x SIG[ix] + 2^15 modulo 2^52 (product_digits); 14: overflow from bits 47..51;
//   15: byte m of the result.
void VectorUnit::silu() {
  const Lin one = Lin::constant(1);
  const Lin gs = GSILU1_;  // a SILU word's first value step (the other three: the digits' slot)
  const FieldRef XS = gated_copy(7, "vfn_silu_x", {VRX}, gs);  // x on SILU steps only
  auto x = [&](std::uint32_t n) { return nib(XS, n); };
  auto isv = [&](std::uint32_t n, const std::function<bool(unsigned)>& p) { return any_of(x(n), p); };
  LayerBuilder& l7 = L(8);
  const FieldRef CL = B.field("vfn_silu_clamp", 2);  // [ix = 1023], [ix = 0]
  // x >= 0x7FA00 (and x >= 0)
  when(l7, {isv(7, [](unsigned v) { return v >= 1 && v < 8; }), gs}, {{CL.dim(0), 1.0}});
  when(l7, {x(7)[0], isv(6, [](unsigned v) { return v != 0; }), gs}, {{CL.dim(0), 1.0}});
  when(l7, {x(7)[0], x(6)[0], isv(5, [](unsigned v) { return v != 0; }), gs}, {{CL.dim(0), 1.0}});
  when(l7, {x(7)[0], x(6)[0], x(5)[0], isv(4, [](unsigned v) { return v >= 8; }), gs}, {{CL.dim(0), 1.0}});
  when(l7, {x(7)[0], x(6)[0], x(5)[0], x(4)[7], x(3)[15], isv(2, [](unsigned v) { return v >= 10; }), gs},
       {{CL.dim(0), 1.0}});
  // x <= -523,777 = 0xFFF801FF
  when(l7, {isv(7, [](unsigned v) { return v >= 8 && v < 15; }), gs}, {{CL.dim(1), 1.0}});
  when(l7, {x(7)[15], isv(6, [](unsigned v) { return v != 15; }), gs}, {{CL.dim(1), 1.0}});
  when(l7, {x(7)[15], x(6)[15], isv(5, [](unsigned v) { return v != 15; }), gs}, {{CL.dim(1), 1.0}});
  when(l7, {x(7)[15], x(6)[15], x(5)[15], isv(4, [](unsigned v) { return v < 8; }), gs}, {{CL.dim(1), 1.0}});
  when(l7, {x(7)[15], x(6)[15], x(5)[15], x(4)[8], x(3)[0], isv(2, [](unsigned v) { return v <= 1; }), gs},
       {{CL.dim(1), 1.0}});
  const FieldRef IXL = B.field("vfn_silu_ix_lo", 64), IXH = B.field("vfn_silu_ix_hi", 16);
  table(l7, {x(2), x(3)}, [&](const std::vector<unsigned>& v) {
    const unsigned n2 = (v[0] + 2) & 15, c3 = v[0] >= 14 ? 1 : 0, n3 = (v[1] + c3) & 15;
    return SparseVec{{IXL.dim((n2 >> 2) | (n3 << 2)), 1.0}};
  }, {gs});
  const Lin x2hi = isv(2, [](unsigned v) { return v >= 14; });
  table(l7, {x(4), OH{one - x(3)[15], x(3)[15]}, OH{one - x2hi, x2hi}}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{IXH.dim((v[0] + 8 + (v[1] & v[2])) & 15), 1.0}};
  }, {gs});
  // layer 8: SIG[ix]
  const FieldRef SN = B.field("vfn_silu_sig", 80);
  auto sig_out = [&](std::int64_t sv) {
    SparseVec o;
    for (std::uint32_t n = 0; n < 5; ++n) o.push_back({SN.dim(16 * n + static_cast<std::uint32_t>((sv >> (4 * n)) & 15)), 1.0});
    return o;
  };
  table(L(9), {field_oh(IXL, 0, 64), field_oh(IXH, 0, 16)},
        [&](const std::vector<unsigned>& v) { return sig_out(sig_entry(static_cast<int>(v[0] | (v[1] << 6)))); },
        {one - CL[0] - CL[1]});
  when(L(9), {CL[0], gs}, sig_out(sig_entry(1023)));
  when(L(9), {CL[1], gs}, sig_out(sig_entry(0)));
  std::vector<OH> xn, sn;
  for (std::uint32_t n = 0; n < 8; ++n) xn.push_back(x(n));
  for (std::uint32_t n = 0; n < 5; ++n) sn.push_back(field_oh(SN, 16 * n, 16));
  std::uint32_t done = 0;
  const FieldRef DG = product_digits("vfn_silu", 10, {{xn, sn}}, 13, 1ULL << 15, gs, &done);
  if (done != 13) throw std::logic_error("silu: the digits are not ready at layer 13");
  const FieldRef OV = B.field("vfn_silu_overflow", 2);
  hold_digits(L(14), DG, 4, 13, gs, GSILU_ - gs);
  overflow_flags(L(14), DG, 11, 13, OV, one);
  emit_rounded(L(15), DG, OV);
}

}  // namespace lockstep::chip::rv32::detail
