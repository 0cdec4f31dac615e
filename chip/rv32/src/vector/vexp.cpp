// VEXP (vector.md section 4.4): per group the maximum m_g (VXM0..VXM3), the word stream of
// EXP[min(1023, rnd(m_g - s, 10))], then the sums S_g.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VEXP (vector.md sections 4.4, 5): for each group g < G, VXM0..VXM3 (the bytes of m_g = the
// group's maximum score), then the word stream of p_{g,t} = EXP[min(1023, rnd(m_g - s_{g,t},
// 10))], t < T (elements e = 64 g + t); then the elements e = 512 + g, S_g = sum_t p_{g,t}.
// - m_g on the step that emits VXM0 of g (the fetch step, or the one consuming the VW_q3 of
//   group g - 1's last score, LX_): the group's scores on the lanes (the span from
//   vred_span()) and vred_max()'s lane tournament (gate GMX_), the maximum's nibble one-hots
//   at layer 12 (GOH_); VXM0's byte (layer 13), bytes 1..3 into a slot (layer 13) read on the
//   VXM0..VXM2 steps (layer 14).
// - Element steps (group phase, ghi < 8): m from the consumed VXM bytes (a slot, layer 0), s on
//   port x (layer 7); d + 512 + 2^32 with d = m - s = (m ^ 2^31) + ~(s ^ 2^31) + 1 as digits
//   modulo 2^36 (layers 7..9); i = bits 10..19, or 1023 when d + 512 >= 2^20 (bits 20..31 or
//   33; layers 10, 11: the 1,024-way one-hot of i); byte m of EXP[i] (layer 12). p's nibbles,
//   as 5 scalars, go to a memory keyed by e (layer 13, 512 columns).
// - Sum steps (ghi = 8, element 512 + g): the memory read with the query [e in group g, t < T]
//   gives the column sums of S_g (<= 64 * 15; layer 13); column_digits() (13..16); the byte
//   (17).
// - The sequence (layer 9): VXM_{m+1} after VXM_m; VWG(16 g) after VXM3 (g from a slot of the
//   last VWG's high nibble, reset by PCL); the word-stream steps as usual, except after a
//   group's last score: VXM0 of the next group, or VWG(128) after the last group; the end
//   after S_{G-1}.
void VectorUnit::compile_vexp() {
  const Lin one = Lin::constant(1), ex = cls(VEXP);
  const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
  const Lin ghi8 = ghi[8], reads = SREAD_;
  const OH& tm = TM_;
  OH qt = stream_target_q();
  auto f7g = [&](std::function<bool(unsigned)> pred) {  // [pred(G)] on a VEXP word, G = (f7 & 7) + 1
    Lin l;
    for (unsigned x = 0; x < 8; ++x)
      if (pred(x + 1)) l += F7X_[x];
    return l;
  };
  // ---- flags (layer 6): VXM0 of a later group (XF), the value steps of p (GXP; S: GXS, layer
  // 7), the end of the sums (SL)
  // GV: a score's value step (0), a sum's (1), and the same on a word's first value step (2, 3),
  // the only one that forms the word: its byte one-hots wait in a slot for the other three
  // (hold_rows(), issue 30's lever 2)
  const FieldRef XF = B.field("vexp_next_group", 1), GV = B.field("vexp_value_steps", 4), SL = B.field("vexp_sums_last", 1);
  LayerBuilder& l6 = L(6);
  for (std::uint32_t j = 0; j < 7; ++j)
    when(l6, {LX_[0], ghi[j], f7g([j](unsigned G) { return G >= j + 2; })}, {{XF.dim(), 1.0}, {GMX_.dim(), 1.0}});
  when(l6, {fetch(), ex}, {{GMX_.dim(), 1.0}});
  when(l6, {reads, ex, one - ghi8, one - LX_[0]}, {{GV.dim(0), 1.0}});
  when(l6, {reads, SFIRST_, ex, one - ghi8, one - LX_[0]}, {{GV.dim(2), 1.0}});
  for (std::uint32_t g = 0; g < 8; ++g)
    when(l6, {ex, ghi8, glo[g >> 2], k(vw(g & 3, 3)), f7g([g](unsigned G) { return G == g + 1; })}, {{SL.dim(), 1.0}});
  when(L(7), {reads, ex, ghi8, one - SL[0]}, {{GV.dim(1), 1.0}});  // layer 7: not after S_{G-1}
  when(L(7), {reads, SFIRST_, ex, ghi8, one - SL[0]}, {{GV.dim(3), 1.0}});
  const Lin gxp = GV[2], gxs = GV[3];  // the first value steps
  // ---- the sequence (layer 9)
  const FieldRef XGS = B.field("vexp_vwg_high_slot", 17);  // the last VWG's high nibble; [seen since PCL]
  const FieldRef XGN = B.field("vwg_high_nibble", 17);
  for (std::uint32_t p = 0; p < 256; ++p) {
    B.embed(256 * kVwg + p, XGN.dim(p >> 4), 1);
    B.embed(256 * kVwg + p, XGN.dim(16), 1);
  }
  slot_head(L(0), 1, [&](std::uint32_t) { return k(kVwg) + k(kPcl); }, [&](std::uint32_t r) { return XGN[r]; }, XGS,
            k(kVxm0 + 3));
  LayerBuilder& l9 = L(9);
  for (std::uint32_t m = 0; m < 3; ++m) when(l9, {ex, k(kVxm0 + m)}, {{NK.dim(kVxm0 + m + 1), 1.0}});
  when(l9, {ex, k(kVxm0 + 3)}, {{NK.dim(kVwg), 1.0}, {NPL.dim(0), 1.0}});
  for (std::uint32_t v = 0; v < 15; ++v) when(l9, {ex, k(kVxm0 + 3), XGS[v], XGS[16]}, {{NPH.dim(v + 1), 1.0}});
  when(l9, {ex, k(kVxm0 + 3), one - XGS[16]}, {{NPH.dim(0), 1.0}});
  when(l9, {ex, k(kVwg)}, {{NK.dim(vw(0, 0)), 1.0}});
  for (std::uint32_t q = 0; q < 4; ++q)
    for (std::uint32_t m = 0; m < 3; ++m) when(l9, {ex, k(vw(q, m))}, {{NK.dim(vw(q, m + 1)), 1.0}});
  when(l9, {XF[0]}, {{NK.dim(kVxm0), 1.0}, {XFN_.dim(), 1.0}});
  when(l9, {ex, LX_[0], one - XF[0]}, token_out(kVwg, 128));
  const Lin more = one - LX_[0] - SL[0];
  for (std::uint32_t q = 0; q < 3; ++q) when(l9, {ex, k(vw(q, 3)), more}, {{NK.dim(vw(q + 1, 0)), 1.0}});
  const std::vector<Lin> next_quad = {ex, k(vw(3, 3)), more};
  when(l9, next_quad, {{NK.dim(kVwg), 1.0}});
  table(l9, {glo}, [&](const std::vector<unsigned>& x) { return SparseVec{{NPL.dim((x[0] + 1) & 15), 1.0}}; }, next_quad);
  table(l9, {ghi, OH{one - glo[15], glo[15]}},
        [&](const std::vector<unsigned>& x) { return SparseVec{{NPH.dim((x[0] + x[1]) & 15), 1.0}}; }, next_quad);
  when(l9, {SL[0]}, {{ENDI.dim(), 1.0}});
  // ---- VXM0..VXM3: byte 0 of GOH_ (layer 13), bytes 1..3 from a slot (layer 13, read 14)
  LayerBuilder& l13 = L(13);
  for (std::uint32_t r = 0; r < 32; ++r)
    l13.unit_out(l13.relu_unit(GOH_[r] + XFN_[0] - 1.0), r < 16 ? NPL.dim(r) : NPH.dim(r - 16), 1.0);
  const FieldRef MXS = B.field("vexp_max_slot", 96);
  slot_head(l13, 1, [&](std::uint32_t) { return XFN_[0]; }, [&](std::uint32_t r) { return GOH_[32 + r]; }, MXS,
            k(kVxm0) + k(kVxm0 + 1) + k(kVxm0 + 2));
  LayerBuilder& l14 = L(14);
  for (std::uint32_t m = 0; m < 3; ++m)
    for (std::uint32_t r = 0; r < 32; ++r)
      when(l14, {k(kVxm0 + m), MXS[32 * m + r]}, {{r < 16 ? NPL.dim(r) : NPH.dim(r - 16), 1.0}});
  // ---- p on the element steps
  VXMS_ = B.field("vxm_bytes", 128);  // m's nibbles from the consumed VXM0..VXM3 (layer 0)
  Lin vxm;
  for (std::uint32_t m = 0; m < 4; ++m) vxm += k(kVxm0 + m);
  Lin reads_k;
  for (const Lin& l : qt) reads_k += l;
  block_slots(L(0), "vxm", 4, [](std::uint32_t m) { return std::vector<std::uint32_t>{kVxm0 + m}; }, vxm, reads_k, VXMS_);
  std::vector<Lin> X(9);
  std::vector<unsigned> max_cs(9, 30);
  for (std::uint32_t c = 0; c < 8; ++c) {
    const unsigned flip = c == 7 ? 8 : 0;  // x ^ 2^31: unsigned order
    Lin mb, sb;
    for (unsigned v = 0; v < 16; ++v) {
      mb += VXMS_[16 * c + v] * static_cast<double>(v ^ flip);
      sb += VRX[16 * c + v] * static_cast<double>(v ^ flip);
    }
    const double kc = c == 0 ? 1 : c == 2 ? 2 : 0;  // + 1 (of ~s + 1) + 512
    X[c] = mb - sb + gxp * (15.0 + kc);
    max_cs[c] = 30 + static_cast<unsigned>(kc);
  }
  X[8] = Lin();
  max_cs[8] = 0;
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vexp_diff", 7, X, max_cs, gxp, &done);
  if (done != 9) throw std::logic_error("vexp: the digits are not ready at layer 9");
  auto bit = [&](std::uint32_t i) { return digit_bit(DG, i); };
  const FieldRef OVX = B.field("vexp_index_clamped", 1);  // d + 512 >= 2^20 (layer 10)
  Lin high = bit(33);
  for (std::uint32_t b = 20; b < 32; ++b) high += bit(b);
  threshold(L(10), high, 1, OVX.dim());
  const FieldRef I = B.field("vexp_index", 1024);  // i one-hot (layer 11)
  LayerBuilder& l11 = L(11);
  for (std::uint32_t i = 0; i < 1024; ++i) {
    Lin pre = gxp - OVX[0] - 10.0;
    for (std::uint32_t b = 0; b < 10; ++b) pre += ((i >> b) & 1) ? bit(10 + b) : one - bit(10 + b);
    l11.unit_out(l11.relu_unit(pre), I.dim(i), 1.0);
  }
  pass(l11, OVX[0], I.dim(1023));
  // layer 12: byte m of EXP[i]; p's nibbles as scalars (for S)
  LayerBuilder& l12 = L(12);
  const FieldRef PV = B.field("vexp_p_nibbles", 5), PN8 = B.field("vexp_p_onehots", 128);
  std::array<Lin, 5> pv;
  std::array<Lin, 128> pn8;  // p's eight nibbles as one-hots
  for (std::uint32_t i = 0; i < 1024; ++i) {
    const std::uint32_t e = static_cast<std::uint32_t>(exp_entry(static_cast<int>(i)));
    for (std::uint32_t n = 0; n < 8; ++n) pn8[16 * n + ((e >> (4 * n)) & 15)] += I[i];
    for (std::uint32_t c = 0; c < 5; ++c)
      if ((e >> (4 * c)) & 15) pv[c] += I[i] * static_cast<double>((e >> (4 * c)) & 15);
  }
  for (std::uint32_t c = 0; c < 5; ++c) pass(l12, pv[c], PV.dim(c));
  for (std::uint32_t r = 0; r < 128; ++r)
    if (!is_zero(pn8[r])) pass(l12, pn8[r], PN8.dim(r));
  // p's byte m (layer 13), its one-hots from the slot on the word's later value steps
  hold_rows(L(13), PN8, 0, 128, gxp, GV[0] - gxp);
  for (std::uint32_t m = 0; m < 4; ++m)
    for (std::uint32_t v = 0; v < 16; ++v) {
      when(L(13), {PN8[16 * (2 * m) + v], tm[m]}, {{NPL.dim(v), 1.0}});
      when(L(13), {PN8[16 * (2 * m + 1) + v], tm[m]}, {{NPH.dim(v), 1.0}});
    }
  // ---- S_g: the memory of p's nibbles keyed by e (layer 13); keys (layer 6): e & 15 = 4 (g' &
  // 3) + q, e >> 4 = (g' >> 2) = (glo >> 2) + 4 ghi; the query on the sums' steps (layer 6):
  // [e >> 6 = g] [e & 63 < T], g = 4 (g' & 1) + q
  const FieldRef KEL = B.field("vexp_key_lo", 16), KEH = B.field("vexp_key_hi", 32), GG = B.field("vexp_sum_group", 8),
                 TT = B.field("vexp_t_below_T", 64);
  table(l6, {masked(glo, 3), qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{KEL.dim(4 * v[0] + v[1]), 1.0}}; },
        {reads, ex, one - ghi8});
  table(l6, {masked(glo, 0xC), masked(ghi, 7)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{KEH.dim((v[0] >> 2) + 4 * v[1]), 1.0}}; },
        {reads, ex, one - ghi8});
  table(l6, {masked(glo, 1), qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{GG.dim(4 * v[0] + v[1]), 1.0}}; },
        {reads, SFIRST_, ex, ghi8});
  const Lin T = vhalf(2, {VEXP}, 1);
  for (std::uint32_t t = 0; t < 64; ++t) threshold_if(l6, T, t + 1, 65535, ex, TT.dim(t));
  const FieldRef XS = B.field("vexp_sum_columns", 5);
  const std::uint32_t h = l13.add_head(512, 5, Activation::Relu, Activation::Relu);
  HeadBuilder& H = l13.head(h);
  for (std::uint32_t c = 0; c < 512; ++c) {
    H.k[c] = KEL[c & 15] + KEH[c >> 4] - 1.0;
    H.q[c] = GG[c >> 6] + TT[c & 63] - 1.0;
  }
  for (std::uint32_t r = 0; r < 5; ++r) {
    H.v[r] = PV[r];
    H.out.emplace_back(r, XS.dim(r), 1.0);
  }
  H.beta = gxp;
  std::vector<Lin> SX(8);
  std::vector<unsigned> smax(8, 0);
  for (std::uint32_t c = 0; c < 5; ++c) {
    SX[c] = XS[c];
    smax[c] = c < 4 ? 64 * 15 : 64;
  }
  const FieldRef SD = column_digits("vexp_sum", 13, SX, smax, gxs, &done);
  if (done != 16) throw std::logic_error("vexp: the sum's digits are not ready at layer 16");
  hold_digits(L(17), SD, 0, 8, gxs, GV[1] - gxs);
  LayerBuilder& l17 = L(17);
  for (std::uint32_t m = 0; m < 4; ++m)
    for (std::uint32_t v = 0; v < 16; ++v) {
      when(l17, {SD[16 * (2 * m) + v], tm[m]}, {{NPL.dim(v), 1.0}});
      when(l17, {SD[16 * (2 * m + 1) + v], tm[m]}, {{NPH.dim(v), 1.0}});
    }
}

}  // namespace lockstep::chip::rv32::detail
