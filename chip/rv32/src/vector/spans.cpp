// Group spans (vector.md sections 4.3, 4.4, 4.7): [lo, hi) of the group a VRED, VQ or VEXP step
// reads, as a 1,024-word mask (layers 5, 6) for VR's span and lane heads.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VRED (vector.md section 4.7) on the step that consumes VRD(k): group k's span [lo, hi) of the
// source, lo = src + 64 k and hi = min(lo + 64, src + n) (layer 5, one dimension each, 0 on
// every other step), then VSPAN_[w] = [lo <= w < hi] for every word w (layer 6, four units per
// word); VR's span heads (vr_file(), layer 7) read the span's nibble counts with it. Also the
// last group's k, (n - 1) >> 6, as a one-hot on VRED words (VKL_, layer 5).
void VectorUnit::vred_span() {
  // src = X(rs1) >> 16 and n = X(rs2) >> 16, from each op's own operand copies (zero on the other
  // ops' steps: docs/chip-design.md section 3.6, "Operand ports")
  const Lin g = k(kVrd), one = Lin::constant(1);
  const Lin Bv = vhalf(1, {VRED}, 1), N = vhalf(2, {VRED}, 1);
  const Lin kv = oh_value(field_oh(VRDK_, 0, 16));
  constexpr double M = 131072;  // > src + 64 k + 64 for every src < 2^16: the units are 0 off VRD steps
  const FieldRef LH = B.field("vred_span_bounds", 2);  // lo, hi
  LayerBuilder& l5 = L(5);
  pass(l5, Bv + kv * 64.0 + g * M - M, LH.dim(0));
  pass(l5, Bv + kv * 64.0 + 64.0 + g * M - M, LH.dim(1));
  pass(l5, kv * 64.0 + 64.0 - N + g * M - M, LH.dim(1), -1);  // min(lo + 64, src + n) = lo + 64 - ReLU(64 k + 64 - n)
  // VQ (compile_vq()): the step that emits VQE(k) reads group k: the fetch step (k = 0) and the step
  // that consumes VLB3 of element 64 k - 1 (g = 16 k - 1: g & 15 = 15, k = (g >> 4) + 1 <= 5);
  // KG_[k] (layer 1) without the class, then KQ_[k] = [VQ] KG_[k] and GQ_ = sum_k KQ_[k]
  // (layer 5). After the last group the span is empty: hi = lo when 64 k >= n.
  {
    const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
    const Lin Bq = vhalf(1, {VQ}, 1), Nq = vhalf(2, {VQ}, 1);
    KG_ = B.field("vq_group_start", 6);
    for (std::uint32_t j = 1; j < 6; ++j) when(L(1), {k(kVlb0 + 3), glo[15], ghi[j - 1]}, {{KG_.dim(j), 1.0}});
    KQ_ = B.field("vq_group_step", 6);
    GQ_ = B.field("vq_group_step_any", 1);
    constexpr double MQ = 70000;  // > src + 64 k + 64 (k <= 5): the units are 0 off the step
    for (std::uint32_t j = 0; j < 6; ++j) {
      const Lin kg = j == 0 ? fetch() : KG_[j];
      when(l5, {PRE[VQ], kg}, {{KQ_.dim(j), 1.0}, {GQ_.dim(), 1.0}});
      const Lin off = (PRE[VQ] + kg) * MQ - 2 * MQ;
      const double base = 64.0 * j;
      pass(l5, Bq + base + off, LH.dim(0));
      pass(l5, Bq + base + 64.0 + off, LH.dim(1));
      pass(l5, Lin::constant(base + 64.0) - Nq + off, LH.dim(1), -1);
      pass(l5, Lin::constant(base) - Nq + off, LH.dim(1));
    }
  }
  // VEXP (compile_vexp()): the step that emits VXM0 of group g reads the group's scores [src + 64 g,
  // src + 64 g + min(T, 64)): the fetch step (g = 0) and the step that consumes the VW_q3 of a
  // group's last score (g = (e >> 6) + 1 = ghi + 1 of the VWG slot). Which VW_q3 ends a group
  // is known only at layer 5 (LX_: (e & 63) + 1 = T, e = 4 g' + q), so the bounds are formed on
  // every VW_q3 step of group ghi < 8 (KXG, layer 1) and the mask (layer 6) is gated by LX_.
  {
    const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
    const Lin Bx = vhalf(1, {VEXP}, 1), Nx = vhalf(2, {VEXP}, 1);
    const FieldRef KXG = B.field("vexp_group_end", 9);  // [VW_q3 consumed, ghi = j - 1], j = 1..8
    const Lin ends = stream_word_end();
    for (std::uint32_t j = 1; j <= 8; ++j) when(L(1), {ends, ghi[j - 1]}, {{KXG.dim(j), 1.0}});
    constexpr double MX = 70000;
    for (std::uint32_t j = 0; j < 8; ++j) {
      const Lin kg = j == 0 ? fetch() : KXG[j];
      const Lin off = (PRE[VEXP] + kg) * MX - 2 * MX;
      const double base = 64.0 * j;
      pass(l5, Bx + base + off, LH.dim(0));
      pass(l5, Bx + base + 64.0 + off, LH.dim(1));  // hi = lo + min(T, 64) = lo + 64 - ReLU(64 - T)
      pass(l5, Lin::constant(64.0) - Nx + off, LH.dim(1), -1);
    }
    Lin e1, q;
    for (std::uint32_t j = 1; j <= 8; ++j) e1 += KXG[j];
    for (std::uint32_t qq = 1; qq < 4; ++qq) q += k(vw(qq, 3)) * static_cast<double>(qq);
    LX_ = B.field("vexp_group_last", 1);
    const Lin x = oh_value(glo) * 4.0 + q + 1.0 - Nx;  // (e & 63) + 1 - T
    threshold_if(l5, x, 0, 64, PRE[VEXP] + e1 - 1.0, LX_.dim());
    threshold_if(l5, x, 1, 64, PRE[VEXP] + e1 - 1.0, LX_.dim(), -1);
    XG0_ = B.field("vexp_fetch", 1);  // the fetch step of a VEXP word (group 0's span)
    when(l5, {PRE[VEXP], fetch()}, {{XG0_.dim(), 1.0}});
  }
  VKL_ = B.field("vred_last_group", 16);
  {
    const OH n4 = vnib(2, {VRED, VQ}, 4);
    table(l5, {OH{one - n4[0], n4[0]}, vnib(2, {VRED, VQ}, 5), masked(vnib(2, {VRED, VQ}, 6), 7)},
          [&](const std::vector<unsigned>& v) {
            // n - 1 = (n & 15) - 1 + 16 (n >> 4): (n - 1) >> 6 = (16 (n >> 4) - [n & 15 = 0]) >> 6
            const int x = 16 * static_cast<int>(v[1] + 16 * v[2]) - static_cast<int>(v[0]);
            return x < 0 ? SparseVec{} : SparseVec{{VKL_.dim(static_cast<std::uint32_t>(x >> 6) & 15), 1.0}};
          },
          {PRE[VRED] + PRE[VQ]});
  }
  VRQ_ = B.field("vred_sumsq_group_step", 1);  // the step consumes VRD(k) of a VRED SUMSQ (layer 6)
  when(L(6), {g, cls(VRED), f7_mode(0)}, {{VRQ_.dim(), 1.0}});
  VSPAN_ = B.field("vred_span", 1024);
  LayerBuilder& l6 = L(6);
  const Lin off = (g + GQ_[0] + LX_[0] + XG0_[0]) * 2048.0 - 2048.0;  // [lo <= w] - [hi <= w], each ReLU(w + 1 - x) - ReLU(w - x)
  for (std::uint32_t w = 0; w < 1024; ++w) {
    const double wd = w;
    l6.unit_out(l6.relu_unit(off + (wd + 1.0) - LH[0]), VSPAN_.dim(w), 1.0);
    l6.unit_out(l6.relu_unit(off + wd - LH[0]), VSPAN_.dim(w), -1.0);
    l6.unit_out(l6.relu_unit(off + (wd + 1.0) - LH[1]), VSPAN_.dim(w), -1.0);
    l6.unit_out(l6.relu_unit(off + wd - LH[1]), VSPAN_.dim(w), 1.0);
  }
}

}  // namespace lockstep::chip::rv32::detail
