// VEW (vector.md section 4.5): ADD, MUL, MULS and ROT on one word stream (section 5), and the
// word stream's sequence (VWG, VW_qm) shared with VFN and VMATR.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VEW ADD and MUL (vector.md section 4.5), one word stream (section 5). ADD, z = sat32(x + y):
// the value byte m of the next token, from the two words the ports read:
// - no overflow: (x_m + y_m + c_m) mod 256, the carry c_m into byte m (m >= 1) from the
//   consumed byte r = byte m - 1 of z: [x_{m-1} + y_{m-1} - r >= 1] (as the scalar adder);
//   nibble sums (layer 7), the low nibble with c_m and its carry (8), the high nibble (11);
// - overflow (layer 8, from nibble generate/propagate bits, layer 7): z > 2^31 - 1 iff both
//   signs are 0 and the carry into bit 31 is 1; z < -2^31 iff both are 1 and it is 0; then the
//   bytes of 2^31 - 1 or -2^31.
// Sequence: VWG(0) on the fetch step (vector_traps()), VW_{q,m+1} after VW_qm, VW_{q+1,0} after
// VW_q3 (q < 3), VWG(g + 1) after VW_33, the instruction's end after element n - 1 (the
// (g, q) of n - 1 from compile_vld()'s VGT and VC0).
void VectorUnit::compile_vew() {
  const Lin one = Lin::constant(1), ea = EADD, ev = cls(VEW) + cls(VFN);
  const OH& tm = TM_;  // the next token is value byte m (vr_file())
  LayerBuilder& l7 = L(7);
  const FieldRef GP = B.field("vew_add_gp", 16);  // G_i (i < 8), P_i (8 + i) of nibble sums
  for (std::uint32_t i = 0; i < 8; ++i) {
    const Lin s = i < 7 ? oh_value(nib(VRX, i)) + oh_value(nib(VRY, i))
                        : oh_value(masked(nib(VRX, 7), 7)) + oh_value(masked(nib(VRY, 7), 7));  // bits 28..30
    const double base = i < 7 ? 16 : 8;
    threshold(l7, s, base, GP.dim(i));
    threshold(l7, s, base - 1, GP.dim(8 + i));
    threshold(l7, s, base, GP.dim(8 + i), -1);
  }
  const FieldRef CIN = B.field("vew_add_carry_in", 1);
  const FieldRef VWP = B.field("vw_payload", 1);  // the consumed byte, embedded for the VW kinds only
  for (std::uint32_t j = 0; j < 16; ++j)
    for (std::uint32_t p = 0; p < 256; ++p) B.embed(256 * (kVw00 + j) + p, VWP.dim(), static_cast<double>(p));
  for (std::uint32_t m = 1; m < 4; ++m)
    threshold_if(l7, byte_of(VRX, m - 1) + byte_of(VRY, m - 1) - VWP[0], 1, 512, tm[m], CIN.dim());
  const FieldRef LS = B.field("vew_add_lo_sum", 31), HS = B.field("vew_add_hi_sum", 31);
  for (std::uint32_t m = 0; m < 4; ++m) {
    table(l7, {nib(VRX, 2 * m), nib(VRY, 2 * m)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{LS.dim(v[0] + v[1]), 1.0}}; }, {tm[m], ea});
    table(l7, {nib(VRX, 2 * m + 1), nib(VRY, 2 * m + 1)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{HS.dim(v[0] + v[1]), 1.0}}; }, {tm[m], ea});
  }
  LayerBuilder& l8 = L(8);
  const FieldRef OV = B.field("vew_add_overflow", 2);  // [x + y > 2^31 - 1], [x + y < -2^31]
  Lin xs, ys;                                           // the sign bits
  for (unsigned j = 8; j < 16; ++j) {
    xs += nib(VRX, 7)[j];
    ys += nib(VRY, 7)[j];
  }
  for (std::uint32_t i = 0; i < 8; ++i) {  // carry into bit 31 generated at nibble i, propagated above
    std::vector<Lin> t = {GP[i], ea};
    for (std::uint32_t j = i + 1; j < 8; ++j) t.push_back(GP[8 + j]);
    std::vector<Lin> tp = t, tn = t;
    tp.push_back(one - xs);
    tp.push_back(one - ys);
    when(l8, tp, {{OV.dim(0), 1.0}});
    tn.push_back(xs);
    tn.push_back(ys);
    when(l8, tn, {{OV.dim(1), -1.0}});
  }
  when(l8, {xs, ys, ea}, {{OV.dim(1), 1.0}});
  const FieldRef LO = B.field("vew_add_lo", 16), CL = B.field("vew_add_lo_carry", 1);
  table(l8, {field_oh(LS, 0, 31), OH{one - CIN[0], CIN[0]}}, [&](const std::vector<unsigned>& v) {
    const unsigned s = v[0] + v[1];
    SparseVec out{{LO.dim(s & 15), 1.0}};
    if (s >= 16) out.push_back({CL.dim(), 1.0});
    return out;
  });
  // the last element: (g, q) = ((n - 1) >> 2, (n - 1) & 3) on a VW_q3 step
  const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
  const FieldRef EQW = B.field("vew_last_eq", 3), LASTW = B.field("vew_last", 1);
  LASTW_ = LASTW;
  LayerBuilder& l9 = L(9);
  for (unsigned j = 0; j < 16; ++j) {
    when(l9, {glo[j], VGT[j]}, {{EQW.dim(0), 1.0}});
    when(l9, {ghi[j], VGT[16 + j]}, {{EQW.dim(1), 1.0}});
  }
  const OH cm = masked(field_oh(VC0, 0, 16), 3);
  for (std::uint32_t q = 0; q < 4; ++q) when(l9, {k(vw(q, 3)), cm[q]}, {{EQW.dim(2), 1.0}});
  when(L(10), {ev, EQW[0], EQW[1], EQW[2]}, {{LASTW.dim(), 1.0}});
  // the next kind (VEW, VFN and VMATR K mode, whose stream is the 8 T elements 0 .. 8 T - 1:
  // compile_vmatr() adds its last element to LASTW)
  const Lin seq = ev + VKM_[0] + VVM_[0];
  when(l9, {seq, k(kVwg)}, {{NK.dim(vw(0, 0)), 1.0}});
  for (std::uint32_t q = 0; q < 4; ++q)
    for (std::uint32_t m = 0; m < 3; ++m) when(l9, {seq, k(vw(q, m))}, {{NK.dim(vw(q, m + 1)), 1.0}});
  LayerBuilder& l11 = L(11);
  const Lin more = one - LASTW[0];
  for (std::uint32_t q = 0; q < 3; ++q) when(l11, {seq, k(vw(q, 3)), more}, {{NK.dim(vw(q + 1, 0)), 1.0}});
  const std::vector<Lin> next_group = {seq, k(vw(3, 3)), more};
  when(l11, next_group, {{NK.dim(kVwg), 1.0}});
  table(l11, {glo}, [&](const std::vector<unsigned>& x) { return SparseVec{{NPL.dim((x[0] + 1) & 15), 1.0}}; }, next_group);
  table(l11, {ghi, OH{one - glo[15], glo[15]}},
        [&](const std::vector<unsigned>& x) { return SparseVec{{NPH.dim((x[0] + x[1]) & 15), 1.0}}; }, next_group);
  when(l11, {seq, stream_word_end(), LASTW[0]}, {{ENDI.dim(), 1.0}});
  // the value byte (not after the last element, whose "next" element is outside the span)
  for (unsigned v = 0; v < 16; ++v) l11.unit_out(l11.relu_unit(LO[v] - OV[0] - OV[1] - LASTW[0]), NPL.dim(v), 1.0);
  table(l11, {field_oh(HS, 0, 31), OH{one - CL[0], CL[0]}},
        [&](const std::vector<unsigned>& v) { return SparseVec{{NPH.dim((v[0] + v[1]) & 15), 1.0}}; },
        {one - OV[0] - OV[1] - LASTW[0]});
  for (std::uint32_t m = 0; m < 4; ++m) {
    const unsigned hi = m < 3 ? 0xFF : 0x7F, lo = m < 3 ? 0x00 : 0x80;
    when(l11, {OV[0], tm[m], more}, {{NPL.dim(hi & 15), 1.0}, {NPH.dim(hi >> 4), 1.0}});
    when(l11, {OV[1], tm[m], more}, {{NPL.dim(lo & 15), 1.0}, {NPH.dim(lo >> 4), 1.0}});
  }
  // MUL: rnd(x y, 16) = floor((x y + 2^15) / 2^16): the digits of x y + 2^15 modulo 2^64
  // (product_digits(), layers 7..10), overflow from bits 47..63 (11), then byte m of the result
  // is columns 4 + 2m and 5 + 2m, or a byte of 2^31 - 1 or -2^31 (12).
  // (x and y gated to MUL/MULS steps first: layers 7, 8; MULS's y from port s, layer 8)
  // The word is formed on its first value step only (byte 0 next: GMF[1]); its digits wait in a
  // slot of layer 13 for the other three (hold_digits(), issue 30's lever 2).
  const FieldRef GMF = B.field("vew_mul_steps", 2);  // MUL or MULS value step; the first of a word (layer 6)
  const OH f7m = masked(field_oh(VIN, 0, 16), 6);
  when(L(6), {SREAD_, PRE[VEW], f7m[2] + f7m[4]}, {{GMF.dim(0), 1.0}});
  when(L(6), {SREAD_, SFIRST_, PRE[VEW], f7m[2] + f7m[4]}, {{GMF.dim(1), 1.0}});
  const Lin gm = GMF[1];
  const FieldRef XM = gated_copy(7, "vew_mul_x", {VRX}, gm), YM = gated_copy(8, "vew_mul_y", {VRY, VRYS}, gm);
  std::vector<OH> xn, ymn;
  for (std::uint32_t i = 0; i < 8; ++i) {
    xn.push_back(nib(XM, i));
    ymn.push_back(nib(YM, i));
  }
  std::uint32_t done = 0;
  const FieldRef MD = product_digits("vew_mul", 9, {{xn, ymn}}, 16, 1ULL << 15, gm, &done);
  if (done != 12) throw std::logic_error("vew: MUL's digits are not ready at layer 12");
  const FieldRef MOV = B.field("vew_mul_overflow", 2);
  hold_digits(L(13), MD, 4, 16, gm, GMF[0] - GMF[1]);
  overflow_flags(L(13), MD, 11, 16, MOV, one);
  emit_rounded(L(14), MD, MOV);
  // ROT: z_e = rnd(x c + y s', 16) with x = VR[a + e], y = VR[a + (e ^ 1)] (the pair's other
  // word), c = COS[p][j], s' = -SIN[p][j] for an even e and +SIN[p][j] for an odd e, j = (e >> 1)
  // & 3, p = b (vector.md section 4.5). c and s' as 5 signed nibbles each (|.| <= 2^16), from
  // one table over (p, q, g & 1) (layer 6); the sum of the two products plus 2^15 modulo 2^52
  // (layers 7..11), overflow from bits 47..51 (12), the byte (13).
  const FieldRef CSN = B.field("vew_rot_cos_sin", 160);
  const Lin rotw = masked(field_oh(VIN, 0, 16), 6)[6];  // MODE = 3 (VIN: custom-1 words only)
  const OH p0 = vnib(2, {VEW}, 0), p1 = masked(vnib(2, {VEW}, 1), 3);  // p = b = X(rs2) & 63
  table(L(6), {p0, p1, stream_target_q(), masked(glo, 1)}, [&](const std::vector<unsigned>& v) {
    const unsigned p = v[0] | ((v[1] & 3) << 4), q = v[2], e = 4 * (v[3] & 1) + q, j = (e >> 1) & 3;
    const long long c = cos_entry(p, j), sn = sin_entry(p, j);
    const long long sp = (e & 1) ? sn : -sn;
    SparseVec out;
    for (unsigned n = 0; n < 5; ++n) {
      out.push_back({CSN.dim(16 * n + static_cast<unsigned>((static_cast<unsigned long long>(c) >> (4 * n)) & 15)), 1.0});
      out.push_back({CSN.dim(80 + 16 * n + static_cast<unsigned>((static_cast<unsigned long long>(sp) >> (4 * n)) & 15)), 1.0});
    }
    return out;
  }, {SREAD_, SFIRST_, PRE[VEW], rotw});
  std::vector<OH> cn, sn, xr, yr;
  for (std::uint32_t n = 0; n < 5; ++n) {
    cn.push_back(field_oh(CSN, 16 * n, 16));
    sn.push_back(field_oh(CSN, 80 + 16 * n, 16));
  }
  const FieldRef XR = gated_copy(7, "vew_rot_x", {VRX}, GROT1_), YR = gated_copy(7, "vew_rot_y", {VRY}, GROT1_);
  for (std::uint32_t i = 0; i < 8; ++i) {
    xr.push_back(nib(XR, i));
    yr.push_back(nib(YR, i));
  }
  const FieldRef RD_ = product_digits("vew_rot", 8, {{xr, cn}, {yr, sn}}, 13, 1ULL << 15, GROT1_, &done);
  if (done != 12) throw std::logic_error("vew: ROT's digits are not ready at layer 12");
  const FieldRef ROV = B.field("vew_rot_overflow", 2);
  hold_digits(L(13), RD_, 4, 13, GROT1_, GROT_ - GROT1_);
  overflow_flags(L(13), RD_, 11, 13, ROV, one);
  emit_rounded(L(14), RD_, ROV);
}

}  // namespace lockstep::chip::rv32::detail
