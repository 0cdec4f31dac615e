// VQ (vector.md section 4.3): per group the shift e_k (VQE), then the int8 stream of rnd(x, e_k)
// into ACT/ASH or a K/V cache row.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VQ (vector.md sections 4.3, 5): for each group k of 64 source words, VQE((k << 5) | e_k), then
// the group's q_i = rnd(x_i, e_k) as part of one int8 stream (ACT: 64 values per group, zeros
// past n; K/V: the 32 values of the one group).
// - e_k on the step that emits VQE(k) (the fetch step, or the one consuming the previous group's
//   last VLB3): E is monotone, so e_k = max_i E(|x_i|), and E(|x|) >= t iff |x| >= c 2^s with
//   (c, s) = (1, 7) for t = 1, (255, t - 2) for t = 2..25 (rnd(a, e) <= 127 iff a < 255 2^(e-1)).
//   With the group's words on the lanes (VLANE_, layer 7; the span from vred_span()): for x >= 0,
//   floor(x / 2^s) >= c; for x < 0, |x| = ~x + 1, floor(|x| / 2^s) = floor(~x / 2^s) + [the low
//   s bits of x are 0] (Z_s, layer 7); each floor is linear in the bits, with every bit from
//   s + 8 up weighted 256 instead (the sum stays exact and >= c iff the floor is). One threshold
//   per lane, t and sign (layer 8) into counts C_t; [C_t >= 1] (layer 9) is e_k's thermometer,
//   and its differences the payload's nibbles (layer 11, gated by VQF_).
// - Value steps (consuming VLG(g) or VLB_{m-1}; element j = 4 g + m): x_j from port x
//   (vr_file(), layer 7), e_k from the VQE slot (layer 0), x_j + 2^(e_k - 1) modulo 2^36 as
//   digits (column_digits(), layers 7..9), bits e_k .. e_k + 7 (layer 10), their nibbles (11).
//   ACT elements j >= n are padding: the byte is 0.
// - The sequence (layer 9): VLG(16 k) after VQE; VLB0 after VLG(g); VLB_{m+1} after VLB_m;
//   after VLB3, the end at the stream's last element (ACT: g = 16 ceil(n/64) - 1, K/V: g = 7),
//   else VQE(k + 1) at a group's end (g & 15 = 15), else VLG(g + 1).
// The writes of ACT and ASH (compile_vmat()) and of KC, KSH, VC and VSH (cache_heads()) are made there.
void VectorUnit::compile_vq() {
  const Lin one = Lin::constant(1), vq = cls(VQ), gq = GQ_[0];
  const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
  // ---- e_k (the VQE steps)
  auto lane = [&](std::uint32_t l, std::uint32_t i, std::uint32_t v) { return VLANE_[128 * l + 16 * i + v]; };
  auto bit = [&](std::uint32_t l, std::uint32_t b) { return digit_bit(VLANE_, b, 128 * l); };  // bit b of lane l's word
  const FieldRef Z = B.field("vq_low_bits_zero", 64 * 24);  // Z_s for s = 1..23 (index 24 l + s)
  LayerBuilder& l7 = L(7);
  for (std::uint32_t l = 0; l < 64; ++l) {
    Lin ones;
    for (std::uint32_t s = 1; s <= 23; ++s) {
      ones += bit(l, s - 1);
      pass(l7, gq - ones, Z.dim(24 * l + s));
    }
  }
  const FieldRef C = B.field("vq_amax_counts", 25);  // C_t, t = 1..25
  LayerBuilder& l8 = L(8);
  constexpr double BIG = 8192;  // > every floor sum below (<= 255 + 256 * 23 + 1)
  for (std::uint32_t l = 0; l < 64; ++l) {
    Lin sign;
    for (std::uint32_t v = 8; v < 16; ++v) sign += lane(l, 7, v);
    for (std::uint32_t t = 1; t <= 25; ++t) {
      const std::uint32_t s = t == 1 ? 7 : t - 2;
      const double c = t == 1 ? 1 : 255;
      Lin pos, neg = s == 0 ? gq : Z[24 * l + s];
      for (std::uint32_t i = s; i <= 30; ++i) {
        const double w = i - s >= 8 ? 256.0 : static_cast<double>(1u << (i - s));
        const Lin b = bit(l, i);
        pos += b * w;
        neg += (one - b) * w;
      }
      threshold(l8, pos - sign * BIG + gq * BIG - BIG, c, C.dim(t - 1));
      threshold(l8, neg + sign * BIG + gq * BIG - 2 * BIG, c, C.dim(t - 1));
    }
  }
  const FieldRef QT = B.field("vq_shift_thermometer", 25);  // [e_k >= t], t = 1..25
  for (std::uint32_t t = 1; t <= 25; ++t) threshold(L(9), C[t - 1], 1, QT.dim(t - 1));
  // the payload (k << 5) | e_k: low nibble e_k & 15, high nibble 2 k + (e_k >> 4) (layer 11)
  LayerBuilder& l11 = L(11);
  const Lin f = VQF_[0];
  pass(l11, f, NPL.dim(0));
  for (std::uint32_t t = 1; t <= 25; ++t) {
    const std::uint32_t u = l11.relu_unit(QT[t - 1] + f - 1.0);
    l11.unit_out(u, NPL.dim(t & 15), 1.0);
    l11.unit_out(u, NPL.dim((t - 1) & 15), -1.0);
  }
  for (std::uint32_t j = 0; j < 6; ++j) {
    when(l11, {f, KQ_[j]}, {{NPH.dim(2 * j), 1.0}});
    when(l11, {f, KQ_[j], QT[15]}, {{NPH.dim(2 * j), -1.0}, {NPH.dim(2 * j + 1), 1.0}});
  }
  // ---- the sequence (layer 9; the last element from layer 7)
  const FieldRef EQG = B.field("vq_at_last_group", 1), QL = B.field("vq_last", 1);
  for (std::uint32_t j = 0; j < 16; ++j) when(L(6), {ghi[j], VKL_[j]}, {{EQG.dim(), 1.0}});
  const Lin vlb3 = k(kVlb0 + 3);
  when(L(7), {vq, f7_mode(0), vlb3, glo[15], EQG[0]}, {{QL.dim(), 1.0}});
  when(L(7), {vq, f7_mode(1) + f7_mode(2), vlb3, glo[7], ghi[0]}, {{QL.dim(), 1.0}});
  LayerBuilder& l9 = L(9);
  when(l9, {vq, k(kVqe)}, {{NK.dim(kVlg), 1.0}, {NPL.dim(0), 1.0}});
  table(l9, {field_oh(PN, 16, 16)}, [&](const std::vector<unsigned>& v) { return SparseVec{{NPH.dim(v[0] >> 1), 1.0}}; },
        {vq, k(kVqe)});
  when(l9, {vq, k(kVlg)}, {{NK.dim(kVlb0), 1.0}});
  for (std::uint32_t m = 0; m < 3; ++m) when(l9, {vq, k(kVlb0 + m)}, {{NK.dim(kVlb0 + m + 1), 1.0}});
  when(l9, {QL[0]}, {{ENDI.dim(), 1.0}});
  when(l9, {vq, vlb3, glo[15], one - QL[0]}, {{NK.dim(kVqe), 1.0}, {VQF_.dim(), 1.0}});
  const std::vector<Lin> next_group = {vq, vlb3, one - glo[15], one - QL[0]};
  when(l9, next_group, {{NK.dim(kVlg), 1.0}});
  table(l9, {glo}, [&](const std::vector<unsigned>& v) { return SparseVec{{NPL.dim((v[0] + 1) & 15), 1.0}}; }, next_group);
  table(l9, {ghi}, [&](const std::vector<unsigned>& v) { return SparseVec{{NPH.dim(v[0]), 1.0}}; }, next_group);
  // ---- the value steps
  VQV_ = B.field("vq_value_step", 1);
  when(L(5), {PRE[VQ], VQR_[0]}, {{VQV_.dim(), 1.0}});
  const Lin gv = VQV_[0];
  const FieldRef QS = B.field("vqe_slot", 32);  // the last VQE's payload nibbles
  slot_head(L(0), 1, [&](std::uint32_t) { return k(kVqe); }, [&](std::uint32_t r) { return PN[r]; }, QS, int8_stream());
  const FieldRef QE = B.field("vq_shift", 26);  // e_k one-hot on the value steps (layer 6)
  const OH qlo = field_oh(QS, 0, 16);
  const Lin qhi_odd = any_of(field_oh(QS, 16, 16), [](unsigned v) { return (v & 1) != 0; });
  for (std::uint32_t e = 0; e < 26; ++e)
    when(L(6), {gv, qlo[e & 15], e >= 16 ? qhi_odd : one - qhi_odd}, {{QE.dim(e), 1.0}});
  // padding: j = 64 (g >> 4) + 4 (g & 15) + m >= n (ACT only: K/V elements are < 32 = n)
  const FieldRef PAD = B.field("vq_padding", 1);
  const Lin jv = oh_value(ghi) * 64.0 + oh_value(glo) * 4.0 + k(kVlb0) + k(kVlb0 + 1) * 2.0 + k(kVlb0 + 2) * 3.0;
  threshold_if(L(6), jv - vhalf(2, {VQ}, 1), 0, 1100, gv, PAD.dim());
  // x + 2^(e - 1) modulo 2^36 (column 8: x's sign extension)
  std::vector<Lin> X(9);
  std::vector<unsigned> max_cs(9, 15);
  for (std::uint32_t c = 0; c < 8; ++c) X[c] = oh_value(nib(VRX, c));
  for (std::uint32_t e = 1; e < 26; ++e) {
    X[(e - 1) >> 2] += QE[e] * static_cast<double>(1u << ((e - 1) & 3));
    max_cs[(e - 1) >> 2] = 15 + 8;
  }
  X[8] = any_of(nib(VRX, 7), [](unsigned v) { return v >= 8; }) * 15.0;
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vq_round", 7, X, max_cs, gv, &done);
  if (done != 9) throw std::logic_error("vq: the digits are not ready at layer 9");
  const FieldRef RB = B.field("vq_byte_bits", 8);  // bits e .. e + 7 (layer 10)
  for (std::uint32_t j = 0; j < 8; ++j)
    for (std::uint32_t e = 0; e < 26; ++e) when(L(10), {QE[e], digit_bit(DG, j + e)}, {{RB.dim(j), 1.0}});
  for (std::uint32_t h = 0; h < 2; ++h)
    for (std::uint32_t v = 0; v < 16; ++v) {
      Lin pre = gv - PAD[0] - 4.0;
      for (std::uint32_t b = 0; b < 4; ++b) pre += ((v >> b) & 1) ? RB[4 * h + b] : one - RB[4 * h + b];
      l11.unit_out(l11.relu_unit(pre), h == 0 ? NPL.dim(v) : NPH.dim(v), 1.0);
    }
  pass(l11, PAD[0], NPL.dim(0));
  pass(l11, PAD[0], NPH.dim(0));
}

}  // namespace lockstep::chip::rv32::detail
