// VLD (vector.md section 4.8): its trace (the bytes of M, then VLG(g) and VLB_m per element) and
// its words sat32(sext8(b) M) for VR.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// ---- the vector unit: VLD (vector.md sections 4.8, 5, 6) -----------------------------------
// VLD's trace (its words sat32(sext8(b) M) go to VR through vld_product() and vr_file()).
// After the pc tokens: VLB0..VLB3, the bytes of M
// at a .. a + 3 ("M phase": no VLG consumed since PCL), then per element group g: VLG(g) and
// VLB_m(b_{4g+m}) at a + 4 + 4g + m. Every byte is read from the RAM copy (layer 15): in the M
// phase at a itself (RV1), in the element phase at a + 4 + 4g from the lookahead adder (steps
// that consume VLG or VLB0..VLB2). The lane is the byte's m (a is 4-aligned once the traps pass).
// The last element i = n - 1 is found by comparing (g, m) with ((n - 1) >> 2, (n - 1) & 3).
void VectorUnit::compile_vld() {
  const Lin v = cls(VLD), f = fetch(), one = Lin::constant(1);
  // the element group g of the last VLG and whether one was consumed since PCL: a slot written
  // on VLG and PCL, read (layer 6) only on VLD's steps
  VGS = B.field("vlg_slot", 33);  // layer 0: VR's write index (vr_file()) needs g by layer 5
  slot_head(L(0), 1, [&](std::uint32_t) { return k(kVlg) + k(kPcl); }, [&](std::uint32_t r) { return VLGN[r]; }, VGS,
            int8_stream());
  const Lin seen = VGS[32];
  const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
  // Trap 5 (a < RAM_BASE or a + 4 + n > RAM_END; the other codes: vector_traps()), with
  // a + 4 + n as a 33-bit sum of 16-bit halves: lo = a_lo + 4 + n < 2^17 for an aligned a
  // (a misaligned a is trap 4, which wins).
  const Lin alo = vhalf(1, {VLD}, 0), ahi = vhalf(1, {VLD}, 1), n = vhalf(2, {VLD}, 1);
  const Lin lo = alo + n + 4.0;
  VK = B.field("vld_lo_carry", 1);
  VZ = B.field("vld_lo_is_2p16", 1);
  threshold(L(6), lo, 65536, VK.dim());
  threshold(L(6), lo, 65536, VZ.dim());
  threshold(L(6), lo, 65537, VZ.dim(), -1);
  VSH = B.field("vld_hi_checks", 3);  // [s_hi <= 16], [s_hi >= 17], [s_hi >= 18]
  VOK = B.field("vld_a_ge_ram_base", 1);
  const Lin shi = ahi + VK[0];
  pass(L(7), v, VSH.dim(0));
  threshold(L(7), shi, 17, VSH.dim(0), -1);
  threshold(L(7), shi, 17, VSH.dim(1));
  threshold(L(7), shi, 18, VSH.dim(2));
  threshold(L(7), ahi, 1, VOK.dim());
  LANEX = B.field("out_lane", 4);
  RDM = B.field("vld_read_m", 1);
  RDE = B.field("vld_read_element", 1);
  LayerBuilder& l9 = L(9);
  // the fetch step without a trap (VLB0 of M, read at a): vector_traps()
  // M phase: VLB_{m+1} after VLB_m, VLG(0) after VLB3
  for (std::uint32_t m = 0; m < 3; ++m)
    when(l9, {v, k(kVlb0 + m), one - seen}, {{NK.dim(kVlb0 + m + 1), 1.0}, {LANEX.dim(m + 1), 1.0}, {RDM.dim(), 1.0}});
  when(l9, {v, k(kVlb0 + 3), one - seen}, token_out(kVlg, 0));
  // element phase: VLB0 after VLG(g); the adder computes a + 4 + 4g on VLG and VLB0..VLB2 steps
  // (the word of the next byte); VGE is g gated to those steps.
  VEG = B.field("vld_adder_gate", 1);
  VGE = B.field("vld_group_gated", 32);
  when(l9, {v, k(kVlg)}, {{NK.dim(kVlb0), 1.0}, {LANEX.dim(0), 1.0}, {RDE.dim(), 1.0}});
  const Lin kv = k(kVlg) + k(kVlb0) + k(kVlb0 + 1) + k(kVlb0 + 2);
  when(l9, {v, seen, kv}, {{VEG.dim(), 1.0}});
  for (unsigned j = 0; j < 16; ++j) {
    when(l9, {v, seen, kv, glo[j]}, {{VGE.dim(j), 1.0}});
    when(l9, {v, seen, kv, ghi[j]}, {{VGE.dim(16 + j), 1.0}});
  }
  // last element: c = n - 1 (n <= 1024: nibbles 4..6 of rs2), target (c >> 2, c & 3)
  VC0 = B.field("vld_c_nib0", 16);
  VC1 = B.field("vld_c_nib1", 16);
  VC2 = B.field("vld_c_nib2", 16);
  VZ45 = B.field("vld_n_low_byte_zero", 1);
  // (VC0 and VGT serve VEW and VFN too: compile_vew())
  const OH n4 = vnib(2, {VLD, VEW, VFN}, 4), n5 = vnib(2, {VLD, VEW, VFN}, 5), n6 = vnib(2, {VLD, VEW, VFN}, 6);
  table(L(6), {n4}, [&](const std::vector<unsigned>& x) { return SparseVec{{VC0.dim((x[0] + 15) & 15), 1.0}}; });
  table(L(6), {n5, OH{one - n4[0], n4[0]}},
        [&](const std::vector<unsigned>& x) { return SparseVec{{VC1.dim((x[0] + 16 - x[1]) & 15), 1.0}}; });
  when(L(6), {n4[0], n5[0]}, {{VZ45.dim(), 1.0}});
  table(L(7), {n6, OH{one - VZ45[0], VZ45[0]}},
        [&](const std::vector<unsigned>& x) { return SparseVec{{VC2.dim((x[0] + 16 - x[1]) & 15), 1.0}}; });
  VGT = B.field("vld_last_group", 32);
  const OH c0 = field_oh(VC0, 0, 16), c1 = field_oh(VC1, 0, 16), c2 = field_oh(VC2, 0, 16);
  table(L(8), {masked(c0, 0xC), masked(c1, 3)},
        [&](const std::vector<unsigned>& x) { return SparseVec{{VGT.dim((x[0] >> 2) | ((x[1] & 3) << 2)), 1.0}}; });
  table(L(8), {masked(c1, 0xC), masked(c2, 3)},
        [&](const std::vector<unsigned>& x) { return SparseVec{{VGT.dim(16 + ((x[0] >> 2) | ((x[1] & 3) << 2))), 1.0}}; });
  VEQ = B.field("vld_last_eq", 3);  // g lo, g hi, m equal to the last element's
  const OH cm = masked(c0, 3);
  for (unsigned j = 0; j < 16; ++j) {
    when(l9, {glo[j], VGT[j]}, {{VEQ.dim(0), 1.0}});
    when(l9, {ghi[j], VGT[16 + j]}, {{VEQ.dim(1), 1.0}});
  }
  for (std::uint32_t m = 0; m < 4; ++m) when(l9, {k(kVlb0 + m), cm[m]}, {{VEQ.dim(2), 1.0}});
  VLAST = B.field("vld_last", 1);
  when(L(10), {v, seen, VEQ[0], VEQ[1], VEQ[2]}, {{VLAST.dim(), 1.0}});
  // element phase, after VLB_m: VLB_{m+1} (m < 3) or VLG(g + 1) (m = 3); after the last: the end
  LayerBuilder& l11 = L(11);
  const Lin nl = one - VLAST[0];
  for (std::uint32_t m = 0; m < 3; ++m)
    when(l11, {v, seen, k(kVlb0 + m), nl}, {{NK.dim(kVlb0 + m + 1), 1.0}, {LANEX.dim(m + 1), 1.0}, {RDE.dim(), 1.0}});
  const std::vector<Lin> next_group = {v, seen, k(kVlb0 + 3), nl};
  when(l11, next_group, {{NK.dim(kVlg), 1.0}});
  table(l11, {glo}, [&](const std::vector<unsigned>& x) { return SparseVec{{NPL.dim((x[0] + 1) & 15), 1.0}}; }, next_group);
  table(l11, {ghi, OH{one - glo[15], glo[15]}},
        [&](const std::vector<unsigned>& x) { return SparseVec{{NPH.dim((x[0] + x[1]) & 15), 1.0}}; }, next_group);
  const Lin vlb = vlb_any();
  when(l11, {v, seen, vlb, VLAST[0]}, {{ENDI.dim(), 1.0}});
}

// VLD's word sat32(sext8(b) M) (vector.md section 4.8) on its element steps, as nibble one-hots
// (128) in layer 6's output, for VR's write. M: a slot per byte (layer 1), written by VLB_m in
// the M phase (no VLG since PCL: compile_vld()'s slot, layer 0), read on VLB steps; b: the consumed
// payload. The product (|b M| <= 2^38) modulo 2^40 by product_digits() (layers 1..4), overflow
// from bits 31..39 (layer 5), then the digits of nibbles 0..7 or the bytes of 2^31 - 1 or
// -2^31 (layer 6).
FieldRef VectorUnit::vld_product() {
  const Lin vlb = vlb_any(), seen = VGS[32];
  const FieldRef ELF = B.field("vld_element_step", 1);  // 1 on VLD's element steps (layer 0: one term for the gates)
  when(L(0), {vlb, seen}, {{ELF.dim(), 1.0}});
  const Lin el = ELF[0];
  const FieldRef MS = B.field("vld_m_slots", 128);
  block_slots(L(1), "vld_m", 4, [](std::uint32_t m) { return std::vector<std::uint32_t>{kVlb0 + m}; }, vlb - seen, vlb, MS);
  // b's nibbles, embedded for the VLB kinds only (so that the product tables are idle elsewhere)
  const FieldRef BN = B.field("vlb_payload_nibbles", 32);
  for (std::uint32_t m = 0; m < 4; ++m)
    for (std::uint32_t p = 0; p < 256; ++p) {
      B.embed(256 * (kVlb0 + m) + p, BN.dim(p & 15), 1);
      B.embed(256 * (kVlb0 + m) + p, BN.dim(16 + (p >> 4)), 1);
    }
  std::vector<OH> ms, bs;
  for (std::uint32_t i = 0; i < 8; ++i) ms.push_back(nib(MS, i));
  for (std::uint32_t j = 0; j < 2; ++j) bs.push_back(field_oh(BN, 16 * j, 16));
  std::uint32_t done = 0;
  const FieldRef DG = product_digits("vld", 1, {{ms, bs}}, 10, 0, el, &done);
  if (done != 4) throw std::logic_error("vld_product: the digits are not ready at layer 4");
  const FieldRef OV = B.field("vld_overflow", 2);
  overflow_flags(L(5), DG, 7, 10, OV, Lin::constant(1));
  const FieldRef VAL = B.field("vld_word", 128);
  LayerBuilder& l6 = L(6);
  for (std::uint32_t c = 0; c < 8; ++c)
    for (unsigned v = 0; v < 16; ++v)
      l6.unit_out(l6.relu_unit(DG[16 * c + v] - OV[0] - OV[1]), VAL.dim(16 * c + v), 1.0);
  for (std::uint32_t c = 0; c < 8; ++c) {
    const std::uint32_t hi = (0x7FFFFFFFu >> (4 * c)) & 15, lo = (0x80000000u >> (4 * c)) & 15;
    pass(l6, OV[0], VAL.dim(16 * c + hi));
    pass(l6, OV[1], VAL.dim(16 * c + lo));
  }
  return VAL;
}

}  // namespace lockstep::chip::rv32::detail
