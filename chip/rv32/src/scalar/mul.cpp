// MUL, MULH, MULHSU, MULHU and bignum bn.mac (isa.md section 3, bignum.md section 2): the
// 64-bit product as nibble columns (nibble-product tables), carry-save splits, a carry-lookahead,
// then the nibbles of the byte W_i shows; the divider's multiply by the trial quotient.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

void Machine::split16(LayerBuilder& l, const Lin& x, std::uint32_t max_carry, std::uint32_t carry, std::uint32_t digit) {
  pass(l, x, digit);
  for (std::uint32_t j = 1; j <= max_carry; ++j) {
    const std::uint32_t u1 = l.relu_unit(x - (16.0 * j - 1));
    const std::uint32_t u2 = l.relu_unit(x - 16.0 * j);
    l.unit_out(u1, carry, 1);
    l.unit_out(u2, carry, -1);
    l.unit_out(u1, digit, -16);
    l.unit_out(u2, digit, 16);
  }
}

Lin Machine::nib_value(const OH& o, bool inverted) const {
  Lin l;
  for (unsigned v = 0; v < 16; ++v) l += o[v] * static_cast<double>(inverted ? 15 - v : v);
  return l;
}

void Machine::multiply() {
  R1M = B.field("rs1_for_mul", 128);
  R2M = B.field("rs2_for_mul", 128);
  for (std::uint32_t j = 0; j < 128; ++j) {
    when(L(M0 + 0), {R1[j], mul_cls()}, {{R1M.dim(j), 1.0}});
    when(L(M0 + 0), {R2[j], mul_cls()}, {{R2M.dim(j), 1.0}});
    // division: ub x T (trial quotient), or ub x Q on the W steps
    pass(L(M0 + 0), UB[j], R1M.dim(j));
    when(L(M0 + 0), {TN[j], div_cls()}, {{R2M.dim(j), 1.0}});
  }
  // L7: nibble columns NC_p (p = 0..15) of the unsigned product, plus the signed corrections
  // -2^32 (a31 b) and -2^32 (b31 a) as + 2^32 (~x + 1) (mod 2^64) for MULH / MULHSU.
  NC = B.field("mul_col", 16);
  for (std::uint32_t n = 0; n < 8; ++n)
    for (std::uint32_t m = 0; m < 8; ++m)
      table(L(M0 + 1), {field_oh(R1M, 16 * n, 16), field_oh(R2M, 16 * m, 16)}, [&, n, m](const std::vector<unsigned>& v) {
        const unsigned prod = v[0] * v[1];
        SparseVec out;
        if (prod & 15) out.push_back({NC.dim(n + m), static_cast<double>(prod & 15)});
        if ((prod >> 4) && n + m + 1 < 16) out.push_back({NC.dim(n + m + 1), static_cast<double>(prod >> 4)});
        return out;
      });
  const Lin a31 = any_of(field_oh(R1M, 112, 16), [](unsigned j) { return j >= 8; });
  const Lin b31 = any_of(field_oh(R2M, 112, 16), [](unsigned j) { return j >= 8; });
  const Lin a_signed = sum_cls({MULH, MULHSU}), b_signed = cls(MULH);
  for (std::uint32_t m = 0; m < 8; ++m) {
    pass(L(M0 + 1), nib_value(field_oh(R2M, 16 * m, 16), true) + (a31 + a_signed - 1.0) * 15.0 - 15.0, NC.dim(8 + m));
    pass(L(M0 + 1), nib_value(field_oh(R1M, 16 * m, 16), true) + (b31 + b_signed - 1.0) * 15.0 - 15.0, NC.dim(8 + m));
  }
  when(L(M0 + 1), {a31, a_signed}, {{NC.dim(8), 1.0}});
  when(L(M0 + 1), {b31, b_signed}, {{NC.dim(8), 1.0}});
  // L8, L9: NC_p = D_p + 16 C1_p; NT_p = D_p + C1_{p-1} = E_p + 16 C2_p; NU_p = E_p + C2_{p-1} <= 17.
  C1N = B.field("mul_carry1", 16);
  DN1 = B.field("mul_digit1", 16);
  C2N = B.field("mul_carry2", 16);
  EN = B.field("mul_digit2", 16);
  for (std::uint32_t p = 0; p < 16; ++p) split16(L(M0 + 2), NC[p], 17, C1N.dim(p), DN1.dim(p));
  for (std::uint32_t p = 0; p < 16; ++p) split16(L(M0 + 3), DN1[p] + (p ? C1N[p - 1] : Lin()), 2, C2N.dim(p), EN.dim(p));
  auto nu = [&](std::uint32_t p) { return EN[p] + (p ? C2N[p - 1] : Lin()); };
  // L10: generate / propagate; L11: carries in and wraps (lookahead).
  GN = B.field("mul_generate", 16);
  PPN = B.field("mul_propagate", 16);
  for (std::uint32_t p = 0; p < 16; ++p) {
    threshold(L(M0 + 4), nu(p), 16, GN.dim(p));
    threshold(L(M0 + 4), nu(p), 15, PPN.dim(p));
    threshold(L(M0 + 4), nu(p), 16, PPN.dim(p), -1);
  }
  CIN_ = B.field("mul_carry_in", 16);
  WRN = B.field("mul_wrap", 16);
  for (std::uint32_t p = 0; p < 16; ++p)
    for (std::uint32_t q = 0; q < p; ++q) {
      std::vector<Lin> conds = {GN[q]};
      for (std::uint32_t r = q + 1; r < p; ++r) conds.push_back(PPN[r]);
      when(L(M0 + 5), conds, {{CIN_.dim(p), 1.0}});
      conds.push_back(PPN[p]);
      when(L(M0 + 5), conds, {{WRN.dim(p), 1.0}});
    }
  // Division: q = [ua >= ub x T]: the product's high word is 0 and its low word <= ua.
  {
    LayerBuilder& c1 = L(M0 + 6);
    LayerBuilder& c2 = L(M0 + 7);
    LayerBuilder& c3 = L(M0 + 8);
    DGT = B.field("div_gt", 8);
    DEQ = B.field("div_eq", 8);
    DHZ = B.field("div_high_zero", 1);
    QBIT = B.field("div_qbit", 1);
    auto f = [&](std::uint32_t p) { return nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0; };
    const Lin act = Lin::dim(DQACT.dim());
    for (std::uint32_t p = 0; p < 8; ++p) {
      const Lin d = nib_value(field_oh(UA, 16 * p, 16), false) - f(p);
      threshold_if(c1, d, 1, 15, act, DGT.dim(p));        // ua_p - f_p >= 1
      threshold_if(c1, d, 0, 15, act, DEQ.dim(p));        // ua_p - f_p >= 0 ...
      threshold_if(c1, d, 1, 15, act, DEQ.dim(p), -1);    // ... and not >= 1
    }
    Lin high;
    for (std::uint32_t p = 8; p < 16; ++p) high += f(p);
    pass(c1, act, DHZ.dim());
    threshold(c1, high, 1, DHZ.dim(), -1);
    {
      std::vector<Lin> conds = {DHZ[0]};
      for (std::uint32_t p = 0; p < 8; ++p) conds.push_back(DEQ[p]);
      when(c2, conds, {{QBIT.dim(), 1.0}});
    }
    for (std::uint32_t p = 0; p < 8; ++p) {
      std::vector<Lin> conds = {DHZ[0], DGT[p]};
      for (std::uint32_t m = p + 1; m < 8; ++m) conds.push_back(DEQ[m]);
      when(c2, conds, {{QBIT.dim(), 1.0}});
    }
    // DQ(2 n + q) for the next bit index n
    for (std::uint32_t n = 0; n < 32; ++n) {
      when(c3, {DQG[n], QBIT[0]}, {{NPL.dim((2 * n + 1) & 15), 1.0}, {NPH.dim((2 * n + 1) >> 4), 1.0}});
      when(c3, {DQG[n], Lin::constant(1) - QBIT[0]}, {{NPL.dim((2 * n) & 15), 1.0}, {NPH.dim((2 * n) >> 4), 1.0}});
    }
  }
  // REM/REMU: r = ua - ub x Q (the multiplier's low word on the W steps), borrow lookahead,
  // negated for REM with a negative dividend; then the two nibbles of byte i.
  {
    LayerBuilder& r1 = L(M0 + 6);
    LayerBuilder& r2 = L(M0 + 7);
    LayerBuilder& r3 = L(M0 + 8);
    LayerBuilder& r4 = L(M0 + 9);
    LayerBuilder& r5 = L(M0 + 10);
    auto f = [&](std::uint32_t p) { return nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0; };
    Lin ract;
    for (std::uint32_t i = 0; i < 4; ++i) ract += RW[i];
    RG = B.field("rem_borrow_gen", 8);
    RP = B.field("rem_borrow_prop", 8);
    auto d = [&](std::uint32_t p) { return nib_value(field_oh(UA, 16 * p, 16), false) - f(p); };
    for (std::uint32_t p = 0; p < 8; ++p) {
      threshold_if(r1, Lin() - d(p), 1, 15, ract, RG.dim(p));      // d <= -1
      threshold_if(r1, d(p), 0, 15, ract, RP.dim(p));               // d == 0
      threshold_if(r1, d(p), 1, 15, ract, RP.dim(p), -1);
    }
    RBI = B.field("rem_borrow_in", 8);
    RWR = B.field("rem_wrap", 8);
    for (std::uint32_t p = 0; p < 8; ++p)
      for (std::uint32_t q = 0; q < p; ++q) {
        std::vector<Lin> conds = {RG[q]};
        for (std::uint32_t m = q + 1; m < p; ++m) conds.push_back(RP[m]);
        when(r2, conds, {{RBI.dim(p), 1.0}});
        conds.push_back(RP[p]);
        when(r2, conds, {{RWR.dim(p), 1.0}});
      }
    // r_p = d_p - b_p + 16 (g_p + wrap_p), in [0, 15]
    auto rn = [&](std::uint32_t p) { return d(p) - RBI[p] + (RG[p] + RWR[p]) * 16.0; };
    // z_k = [r_0 .. r_{k-1} all 0] (k = 0..8), active only with ract
    RZ = B.field("rem_zero_prefix", 9);
    for (std::uint32_t kk = 0; kk <= 8; ++kk) {
      Lin sum;
      for (std::uint32_t j = 0; j < kk; ++j) sum += rn(j);
      pass(r3, ract, RZ.dim(kk));
      if (kk > 0) threshold_if(r3, sum, 1, 120, ract, RZ.dim(kk), -1);  // |r_j| <= 15 even when idle
    }
    RSEL = B.field("rem_nibbles", 2);
    RACT = B.field("rem_active", 1);
    const Lin nega = NEGA[0];
    for (std::uint32_t i = 0; i < 4; ++i) {
      pass(r4, RW[i], RACT.dim());
      for (std::uint32_t h = 0; h < 2; ++h) {
        const std::uint32_t p = 2 * i + h;
        const Lin neg = Lin::constant(15) - rn(p) + RZ[p] - RZ[p + 1] * 16.0;  // nibble p of -r
        pass(r4, neg + (RW[i] + nega - 2.0) * 32.0, RSEL.dim(h));   // idle: neg <= 30 < 32
        pass(r4, rn(p) + (RW[i] - nega - 1.0) * 32.0, RSEL.dim(h));
      }
    }
    for (std::uint32_t h = 0; h < 2; ++h) {
      std::vector<SparseVec> tab(17);
      for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{(h ? NPH : NPL).dim(v - 1), 1.0}};
      decode_lookup(r5, RSEL[h] + RACT[0], tab);
    }
  }
  // bn.mac: AC_i = byte i of acc + a x b (mod 2^96); carry into byte i from the consumed AC_{i-1}.
  {
    LayerBuilder& m1 = L(M0 + 6);
    LayerBuilder& m2 = L(M0 + 7);
    LayerBuilder& m3 = L(M0 + 8);
    LayerBuilder& m4 = L(M0 + 9);
    auto f = [&](std::uint32_t p) { return nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0; };
    auto byte_sum = [&](std::uint32_t i) {  // acc_i + P_i (P_i = 0 for i >= 8)
      Lin v = byte_value(field_oh(ACN, 32 * i, 16), field_oh(ACN, 32 * i + 16, 16));
      if (i < 8) v += f(2 * i) + f(2 * i + 1) * 16.0;
      return v;
    };
    MSUM = B.field("mac_sum", 1);
    MPREV = B.field("mac_prev", 1);
    MACT2 = B.field("mac_active", 1);
    for (std::uint32_t i = 0; i < 12; ++i) {
      pass(m1, byte_sum(i) + MACG[i] * 510.0 - 510.0, MSUM.dim());
      if (i > 0) pass(m1, byte_sum(i - 1) + MACG[i] * 510.0 - 510.0, MPREV.dim());
      pass(m1, MACG[i], MACT2.dim());
    }
    MC = B.field("mac_carry", 1);
    threshold(m2, MPREV[0] - PS[0], 1, MC.dim());
    // y = sum + carry in [0, 511]: high nibble one-hot of y mod 256, low nibble (+1) scalar
    MLO = B.field("mac_lo", 1);
    const Lin y = MSUM[0] + MC[0];
    pass(m3, MACT2[0], NPH.dim(0));
    pass(m3, y, MLO.dim());
    pass(m3, MACT2[0], MLO.dim());
    for (std::uint32_t j = 1; j < 32; ++j) {
      const std::uint32_t u1 = m3.relu_unit(y - (16.0 * j - 1));
      const std::uint32_t u2 = m3.relu_unit(y - 16.0 * j);
      for (auto [u, sgn] : {std::pair{u1, 1.0}, std::pair{u2, -1.0}}) {
        m3.unit_out(u, NPH.dim(j % 16), sgn);
        m3.unit_out(u, NPH.dim((j - 1) % 16), -sgn);
        m3.unit_out(u, MLO.dim(), -16 * sgn);
      }
    }
    std::vector<SparseVec> tab(17);
    for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{NPL.dim(v - 1), 1.0}};
    decode_lookup(m4, MLO[0], tab);
  }
  // L12: the two nibbles W_i shows (+1 offset so that "no multiply" decodes to nothing); L13: one-hots.
  SELN = B.field("mul_nibbles", 2);
  MACT = B.field("mul_active", 1);
  for (std::uint32_t mode = 0; mode < 2; ++mode)
    for (std::uint32_t i = 0; i < 4; ++i) {
      const Lin g = MULW[4 * mode + i];
      pass(L(M0 + 6), g, MACT.dim());
      for (std::uint32_t h = 0; h < 2; ++h) {
        const std::uint32_t p = 8 * mode + 2 * i + h;
        const Lin f = nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0;
        pass(L(M0 + 6), f + g * 15.0 - 15.0, SELN.dim(h));
      }
    }
  for (std::uint32_t h = 0; h < 2; ++h) {
    std::vector<SparseVec> tab(17);
    for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{(h ? NPH : NPL).dim(v - 1), 1.0}};
    decode_lookup(L(M0 + 7), SELN[h] + MACT[0], tab);
  }
}

}  // namespace lockstep::chip::rv32::detail
