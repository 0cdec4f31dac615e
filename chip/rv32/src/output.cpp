// Output (layer 19) and the declared numerics: the next-token one-hots become the logits
// (emission()), and every layer's activation bounds (declare(); chip-format.md, "Numerics").
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// Output (layer 19): the payload's nibble one-hots become a payload one-hot NP (256) and a
// (kind, high nibble) one-hot NKH (61 x 16), then logit(k, p) = 2 NKH[k, p >> 4] + 2 NP[p]:
// the intended token scores 4, every other token at most 2 (a token sharing the kind and high
// nibble, or the payload, scores 2). An NKH dimension touches 16 logits and an NP dimension
// 61, so the output costs 77 logit rows a step (2 NK[k] + 2 NP[p] touched 256 + 61).
void Machine::emission() {
  const FieldRef NP = B.field("next_payload", 256);
  const FieldRef NKH = B.field("next_kind_payload_hi", kNumKinds * 16);
  table(L(kNumLayers - 1), {field_oh(NPL, 0, 16), field_oh(NPH, 0, 16)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{NP.dim(v[0] | (v[1] << 4)), 1.0}}; });
  table(L(kNumLayers - 1), {field_oh(NK, 0, kNumKinds), field_oh(NPH, 0, 16)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{NKH.dim(16 * v[0] + v[1]), 1.0}}; });
  for (std::uint32_t kd = 0; kd < kNumKinds; ++kd)
    for (std::uint32_t p = 0; p < 256; ++p) {
      const Token t = 256 * kd + p;
      B.unembed(t, NKH.dim(16 * kd + (p >> 4)), 2);
      B.unembed(t, NP.dim(p), 2);
    }
}

void Machine::declare() {
  B.probe(-1, Sublayer::Embed, {"kind", "payload_nibbles", "payload"});
  B.probe(0, Sublayer::Memory, {"pch_slot", "pcl_slot", "addr_nibbles", "w_slot"});
  B.probe(0, Sublayer::Mlp, {"pc_nibbles", "addr_in_ram", "store_lane"});
  B.probe(1, Sublayer::Memory, {"ram_bytes"});
  B.probe(2, Sublayer::Memory, {"latched_words"});
  B.probe(3, Sublayer::Mlp, {"inst_nibbles", "data_nibbles"});
  B.probe(4, Sublayer::Mlp, {"rd", "rs1", "rs2", "class_candidate", "f7_class", "vmat_chunk_step", "vmat_chunk_offset",
                             "vmat_value_steps", "vmat_argmax"});
  B.probe(5, Sublayer::Memory, {"rs1_value", "rs2_value"});
  B.probe(5, Sublayer::Mlp, {"class", "illegal"});
  B.probe(7, Sublayer::Mlp, {"gate_a", "gate_b", "alu_op", "cmp_lt_nibble", "cmp_eq_nibble"});
  B.probe(8, Sublayer::Mlp, {"alu_a", "alu_b", "alu_a_prev", "alu_b_prev", "cmp_lt", "cmp_eq"});
  B.probe(7, Sublayer::Memory, {"bn_c", "bn_acc"});
  B.probe(13, Sublayer::Mlp, {"add_a", "add_b", "add_result"});
  B.probe(14, Sublayer::Memory, {"next_pc"});
  B.probe(18, Sublayer::Mlp, {"next_kind", "next_payload_lo", "next_payload_hi"});  // final: layer 19 only reads them
  B.probe(19, Sublayer::Mlp, {"next_kind", "next_payload", "next_kind_payload_hi"});
  B.probe(6, Sublayer::Mlp, {"vred_span", "vred_value_steps", "vred_at_last_group"});
  B.probe(7, Sublayer::Memory, {"vred_nibble_counts"});
  B.probe(7, Sublayer::Mlp, {"vred_shift", "vred_round_bit"});
  B.probe(8, Sublayer::Memory, {"vred_column_sums"});
  B.probe(12, Sublayer::Mlp, {"vred_sum_digits"});
  B.probe(13, Sublayer::Mlp, {"vred_result_bits", "vred_high_bits"});
  B.probe(6, Sublayer::Mlp, {"vmat_chunk_hi_onehot", "vmat_chunk_lo_onehot", "vmat_act_block"});
  B.probe(7, Sublayer::Memory, {"vmat_weight_bits", "vmat_scale_bits", "vmat_weight_bit_counts", "vmat_act_lo_nibbles", "vmat_act_hi_nibbles", "vmatr_act_bits", "vmat_ash"});
  B.probe(7, Sublayer::Mlp, {"vmat_bit_products_lo", "vmat_bit_products_hi"});
  B.probe(8, Sublayer::Mlp, {"vmat_contribution_columns"});
  B.probe(9, Sublayer::Memory, {"vmat_column_sums"});
  B.probe(9, Sublayer::Mlp, {"vmat_split1"});
  B.probe(10, Sublayer::Mlp, {"vmat_split2"});
  B.probe(11, Sublayer::Mlp, {"vmat_digit_sums"});
  B.probe(15, Sublayer::Mlp, {"vmat_y_digits"});
  B.probe(16, Sublayer::Mlp, {"vmat_overflow"});
  B.bound("embed", -1, 255);
  B.bound("logits", -1, 4);
  for (int l = 0; l < static_cast<int>(kNumLayers); ++l) {
    for (const char* a : {"mem.k", "mem.beta"}) B.bound(a, l, 1);
    B.bound("mem.q", l, l == 8 ? 16 : 1);  // layer 8: VRED SUMSQ's weighted queries (|q| <= 15)
    // layer 8 holds VRED's group sums (|S| <= 960) and their total (<= 15,360; compile_vred())
    // layer 13 VEXP's sums of p's nibbles (<= 64 * 15)
    // layer 9 VMAT's contribution slots (|Q| <= 2^15) and their sums (<= 6 * 2^15; compile_vmat())
    // layer 10 VMATR V's position slots (|.| <= 120) and their sums (<= 64 * 120; compile_vmatr_v())
    for (const char* a : {"mem.v", "mem.state", "mem.o"})
      B.bound(a, l, l == 8 ? 16384 : l == 9 ? 262144 : l == 10 ? 8192 : l == 13 ? 1024 : 255);
    // deeper residuals hold byte sums (<= 511); from layer 5 VRED's span bounds (<= 1,088),
    // from layer 7 VRED MAX's (hi, lo) (<= 65,536) and SUM's column sums (<= 15,368; compile_vred())
    // (from layer 5 VMAT's r K + j and c - 64 (c >> 6), < 2^17 even where the VMAT traps)
    const double resid = l == 0 ? 255 : l < 4 ? 1024 : l < 5 ? 32768 : 262144;
    B.bound("mem.resid", l, resid);
    // layers 6-7 hold the ECALL buffer check's 16-bit half sums (< 2^18); layer 5 VRED's span
    // bounds (|pre| < 2^18); layer 7 the vector ops' operand checks (|pre| < 2^24,
    // vector_traps()); layers 8..10 VRED's column splits (<= 15,368), layers 8, 13, 14 VRED
    // MAX's (hi, lo) differences (|.| <= 131,072)
    // layer 4 VMAT's r K (|pre| < 2^15); layers 9..11 VMAT's column splits (< 2^23; compile_vmat())
    // layer 5 VMAT's chunk thresholds (|pre| < 2^19)
    // (layer 12 VMATR V's presplit, < 2^15)
    const double pre = l == 7 || (l >= 9 && l <= 11) ? 16777216 : l == 5 ? 1048576 : l == 4 ? 32768
                       : (l >= 6 && l <= 8) || (l >= 12 && l <= 14) ? 262144 : 1024;
    for (const char* a : {"mlp.pre", "mlp.u", "mlp.hidden"}) B.bound(a, l, pre);
    B.bound("mlp.resid", l, resid);
  }
}

}  // namespace lockstep::chip::rv32::detail
