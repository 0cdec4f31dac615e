// VMATR (vector.md section 4.2): the K and V caches (KC/KSH, VC/VSH, written by VQ), K mode's
// word stream of scores and V mode's VMV steps and weighted sums.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VMATR's mode flags and V mode's word keys (layers 5, 6), before vr_file() (which reads VVP_
// through VVQ_) and vew() (whose word-stream sequence runs VMATR K's stream too): [VMATR, VMODE
// = 1] (VVM_) and = 0 (VKM_), VMV's payload t as a one-hot (VMVT_).
void VectorUnit::vmatr_slots() {
  VVM_ = B.field("vmatr_v_mode", 1);
  when(L(6), {cls(VMATR), f7_pred([](unsigned x) { return (x & 1) == 1; })}, {{VVM_.dim(), 1.0}});
  VMVT_ = B.field("vmv_position", 64);
  for (std::uint32_t t = 0; t < 64; ++t) B.embed(256 * kVmv + t, VMVT_.dim(t), 1);
  VVP_ = B.field("vmatr_v_words", 8 * 128);
  // VMATR V (compile_vmatr_v()): w = src + t (t: VMV's payload) as key pieces (layers 5, 6); the 32 VR
  // heads of vr_file() (register c, parity b) read word 64 c + l where l = w & 63 and c0 <= c <
  // c0 + 8 (c0 = w >> 6; N12's index n is w >> 4)
  PW0_ = B.field("vmatr_v_p_key_lo", 16);
  PW12_ = B.field("vmatr_v_p_key_hi", 64);
  index_sum_nibbles("vmatr_v_p_index", vindex(1, {VMATR}, 1), field_oh(PN, 0, 16),
                    masked(field_oh(PN, 16, 16), 3), const_oh(4, 0), {k(kVmv), PRE[VMATR]}, KeyOut{{PW0_}, {PW12_}});
  VVQ_ = [this](std::uint32_t w) {
    auto c0_of = [](std::uint32_t n) { return ((n & 15) >> 2) + 4 * (n >> 4); };
    const std::uint32_t l = w & 63, c = w >> 6;
    Lin q = PW0_[l & 15] - 1.0;
    for (std::uint32_t n = 0; n < 64; ++n)
      if ((n & 3) == (l >> 4) && c0_of(n) <= c && c < c0_of(n) + 8) q += PW12_[n];
    return q;
  };
  VKM_ = B.field("vmatr_k_mode", 1);  // [VMATR, VMODE = 0] (layer 6)
  when(L(6), {cls(VMATR), f7_pred([](unsigned x) { return (x & 1) == 0; })}, {{VKM_.dim(), 1.0}});
}

// KC or VC (32 element heads keyed by row, 8 bits each) and KSH or VSH (a one-hot of 0..25) in
// layer 7 (vector.md section 2), initialised from their sections, read into BITS (element j's
// bits at 8 j) and SHO with the row key pieces RQ0, RQ12 (row r: ReLU(RQ0[r & 15] + RQ12[r >> 4]
// - 1)), and written by VQ with TARGET `target` (section 4.3): row A, element j = 4 g + m (g: the
// VLG slot) when VLB_m is consumed, e_0 when VQE is.
void VectorUnit::cache_heads(const std::string& name, const std::string& cache_section, const std::string& sh_section, unsigned target,
                 const FieldRef& RQ0, const FieldRef& RQ12, const FieldRef& BITS, const FieldRef& SHO) {
  LayerBuilder& l5 = L(5);
  const FieldRef WQ0 = B.field(name + "_write_row_lo", 16), WQ12 = B.field(name + "_write_row_hi", 64);
  const Lin qk = PRE[VQ] + masked(field_oh(VIN, 0, 16), 6)[2 * target] - 1.0;  // VQ, TARGET (1 or <= 0)
  const OH zero16 = const_oh(16, 0);
  index_sum_nibbles(name + "_write_row", vindex(1, {VQ}, 0), zero16, zero16, const_oh(4, 0),
                    {qk, vlb_any() + k(kVqe)}, KeyOut{{WQ0}, {WQ12}});
  const FieldRef WLK = B.field(name + "_write_element", 32), WKS = B.field(name + "_write_shift", 1);
  OH mq(4);
  for (std::uint32_t m = 0; m < 4; ++m) mq[m] = k(kVlb0 + m);
  table(l5, {field_oh(VGS, 0, 8), mq}, [&](const std::vector<unsigned>& v) { return SparseVec{{WLK.dim(4 * v[0] + v[1]), 1.0}}; },
        {qk, vlb_any()});
  when(l5, {qk, k(kVqe)}, {{WKS.dim(), 1.0}});
  constexpr std::uint32_t kRows = 320;
  LayerBuilder& l7 = L(7);
  auto rowq = [&](std::uint32_t r) { return RQ0[r & 15] + RQ12[r >> 4] - 1.0; };
  auto rowk = [&](std::uint32_t r) { return WQ0[r & 15] + WQ12[r >> 4] - 1.0; };
  for (std::uint32_t j = 0; j < 32; ++j) {
    const std::uint32_t h = l7.add_head(kRows, 8, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l7.head(h);
    for (std::uint32_t r = 0; r < kRows; ++r) {
      H.q[r] = rowq(r);
      H.k[r] = rowk(r);
    }
    for (std::uint32_t b = 0; b < 8; ++b) {
      H.v[b] = payload_bit(b);
      H.out.emplace_back(b, BITS.dim(8 * j + b), 1.0);
    }
    H.beta = WLK[j];
    section_init(name + "_element" + std::to_string(j), 7, h, 0, cache_section, j, 32, kRows, ByteEncoding::Bits, 1);
  }
  const std::uint32_t h = l7.add_head(kRows, 256, Activation::Relu, Activation::Relu);
  HeadBuilder& H = l7.head(h);
  for (std::uint32_t r = 0; r < kRows; ++r) {
    H.q[r] = rowq(r);
    H.k[r] = rowk(r);
  }
  for (std::uint32_t e = 0; e < 26; ++e) {
    H.v[e] = VQEK_[6 + e];
    H.out.emplace_back(e, SHO.dim(e), 1.0);
  }
  H.beta = WKS[0];
  section_init(name + "_shift", 7, h, 0, sh_section, 0, 1, kRows, ByteEncoding::OneHot, 1);
}

// VMATR K mode (vector.md sections 4.2, 5): the word stream of the 8 T elements e = 8 t + h,
// value sat32(rnd(s_{h,t} 2^e', 16)) with s_{h,t} = sum_d ACT[64 src + 8h + d] KC[r0 + t][8 (h
// >> 1) + d] and e' = ASH[src] + KSH[r0 + t] (for e' >= 16 the rounding adds nothing below the
// cut, so one formula covers both cases of section 4.2), written to VR[dst + 64 h + t].
// - Value steps (the next token is a value byte; VWG(g) or VW_q(m-1) consumed, e = 4 g + q):
//   t = g >> 1, h = 4 (g & 1) + q. The row r0 + t as key pieces (layers 5, 6); KC (32 element
//   heads keyed by row, 8 bits each) and KSH (a one-hot) read (7), ACT block src and ASH
//   (compile_vmat(), 7). The product's bit columns C_p = sum over i + j = p of +-[bit i of a][bit j of
//   kc] (p < 15, |C_p| <= 64; 4,096 three-input ANDs with the one-hot of h) and e' as a one-hot
//   (a table of ASH and KSH) (7); the columns moved to bits p + e' as nibble columns X_c (c <
//   17, |X_c| <= 960) (8); X_c + 2^10 with the offsets and the rounding bit as constant nibbles,
//   and an 18th column of constants only, modulo 2^72, by column_digits() (9..12); overflow iff
//   bits 47..71 are not all equal (13). s 2^e' + 2^15 lies in [-130,048 2^50, 2^67 + 2^15]: the
//   top, s = 2^17 (every product (-128)(-128)) at e' = 50, needs the 72nd bit (modulo 2^68 it
//   read as -2^67, INT_MIN for 0x7FFFFFFF);
//   the byte (14, emit_rounded()).
// - The sequence is the word stream's (compile_vew(), with VKM_); the last element (g = 2 T - 1, VW33)
//   is added to LASTW (layer 10).
// - VQ K (TARGET = 1) writes KC[row] (element j = 4 g + m when VLB_m is consumed) and KSH[row]
//   (e_0, when VQE is consumed).
void VectorUnit::compile_vmatr() {
  const Lin one = Lin::constant(1);
  const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
  const OH qt = stream_target_q();
  const Lin kbit = masked(field_oh(VIN, 0, 16), 2)[0];  // f7 bit 0 = 0 (inst bit 25; custom-1 words)
  // GK[0]: a value step; GK[1]: a word's first value step, the only one that forms the word (the
  // cache row and ACT block are read, the product and its digits formed); its digits wait in a
  // slot of layer 13 for the other three (hold_digits(), issue 30's lever 2)
  const FieldRef GK = B.field("vmatr_k_value_steps", 2), HH = B.field("vmatr_k_head", 8);
  LayerBuilder& l5 = L(5);
  when(l5, {SREAD_, PRE[VMATR], kbit}, {{GK.dim(0), 1.0}});
  when(l5, {SREAD_, SFIRST_, PRE[VMATR], kbit}, {{GK.dim(1), 1.0}});
  table(l5, {masked(glo, 1), qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{HH.dim(4 * v[0] + v[1]), 1.0}}; },
        {SREAD_, SFIRST_, PRE[VMATR], kbit});
  // the row r0 + t (t = g >> 1 < 64): key pieces (layers 5, 6)
  const FieldRef RQ0 = B.field("vmatr_row_key_lo", 16), RQ12 = B.field("vmatr_row_key_hi", 64);
  const std::array<OH, 3> r0 = vindex(2, {VMATR}, 0);
  sum_pieces("vmatr_row", {r0[0], masked(glo, 0xE), masked(ghi, 1)},
             [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1) + ((v[2] & 1) << 3); },
             oh_value(r0[0]) + oh_value(masked(glo, 0xE)) * 0.5 + oh_value(masked(ghi, 1)) * 8.0,
             {r0[1], masked(ghi, 6)}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1); },
             {r0[2]}, [](const std::vector<unsigned>& v) { return v[0]; }, {SREAD_, SFIRST_, PRE[VMATR], kbit},
             KeyOut{{RQ0}, {RQ12}});
  const FieldRef KB = B.field("vmatr_kc_bits", 256), KSHO = B.field("vmatr_ksh", 26);
  cache_heads("kcache", ".lockstep.kcache", ".lockstep.ksh", 1, RQ0, RQ12, KB, KSHO);
  LayerBuilder& l7 = L(7);
  // layer 7: C_p and e' = ASH + KSH
  const FieldRef CP = B.field("vmatr_k_bit_columns", 15), EO = B.field("vmatr_k_shift", 51);
  for (std::uint32_t h = 0; h < 8; ++h)
    for (std::uint32_t d = 0; d < 8; ++d)
      for (std::uint32_t i = 0; i < 8; ++i)
        for (std::uint32_t j = 0; j < 8; ++j) {
          const double sg = ((i == 7) != (j == 7)) ? -1.0 : 1.0;
          when(l7, {AB_[8 * (8 * h + d) + i], KB[8 * (8 * (h >> 1) + d) + j], HH[h]}, {{CP.dim(i + j), sg}});
        }
  table(l7, {field_oh(ASHO_, 0, 26), field_oh(KSHO, 0, 26)},
        [&](const std::vector<unsigned>& v) { return SparseVec{{EO.dim(v[0] + v[1]), 1.0}}; }, {GK[1]});
  // layer 8: the nibble columns of s 2^e' (+ 2^10 each); bits p + e' <= 64 reach column 16, and
  // column 17 holds only the constants (the sign of s 2^e' = 2^67 is bit 71, not 67)
  constexpr std::uint32_t kXc = 18;
  const FieldRef X = B.field("vmatr_k_columns", kXc);
  LayerBuilder& l8 = L(8);
  for (std::uint32_t p = 0; p < 15; ++p)
    for (std::uint32_t v = 0; v < 51; ++v) {
      const std::uint32_t bpos = p + v, c = bpos >> 2;
      const double w = static_cast<double>(1u << (bpos & 3));
      l8.unit_out(l8.relu_unit(CP[p] + 64.0 - (one - EO[v]) * 128.0), X.dim(c), w);
      when(l8, {EO[v]}, {{X.dim(c), -64.0 * w}});
    }
  std::vector<Lin> cols;
  std::vector<unsigned> max_cs;
  unsigned __int128 ones = 0;  // sum_{c<18} 16^c
  for (std::uint32_t c = 0; c < kXc; ++c) ones = (ones << 4) | 1;
  const unsigned __int128 konst = (static_cast<unsigned __int128>(1) << 15) - (static_cast<unsigned __int128>(1) << 10) * ones;
  for (std::uint32_t c = 0; c < kXc; ++c) {
    const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
    cols.push_back(X[c] + GK[1] * (1024.0 + kc));
    max_cs.push_back(1024 + (c + 1 < kXc ? 960 : 0) + kc);
  }
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vmatr_k", 9, cols, max_cs, GK[1], &done);
  if (done != 12) throw std::logic_error("vmatr: the digits are not ready at layer 12");
  const FieldRef OV = B.field("vmatr_k_overflow", 2);
  hold_digits(L(13), DG, 4, kXc, GK[1], GK[0] - GK[1]);
  overflow_flags(L(13), DG, 11, kXc, OV, GK[0]);
  emit_rounded(L(14), DG, OV);
  // the last element: VW33 with g = 2 T - 1 (layer 6), into LASTW (layer 10)
  const FieldRef EQT = B.field("vmatr_k_last", 1);
  const Lin gx = oh_value(glo) + oh_value(ghi) * 16.0 + 1.0 - vhalf(2, {VMATR}, 1) * 2.0;
  auto thr2 = [&](double t, double c) {
    threshold_if(L(6), gx, t, 512, k(vw(3, 3)), EQT.dim(), c);
  };
  thr2(0, 1.0);
  thr2(1, -1.0);
  when(L(10), {VKM_[0], EQT[0]}, {{LASTW_.dim(), 1.0}});
}

// VMATR V mode (vector.md sections 4.2, 5): VMV(t) for t < T, then the word stream of the 64
// elements e = 8 h + d, value sat32(rnd(o_{h,d}, 16)), o_{h,d} = sum_t p_{h,t} VC[r0 + t][8 (h >>
// 1) + d] 2^VSH[r0 + t], p = min(max(VR[src + 64 h + t], 0), 65536), written to VR[dst + e].
// - The step that consumes VMV(t) computes position t's contribution to all 64 sums: the words
//   src + 64 h + t (h < 8) share the lane w & 63 of w = src + t and lie in the registers c0 ..
//   c0 + 7, c0 = w >> 6: 32 VR heads (one per register and parity, vr_file()) read with [lane]
//   and [c0 <= c < c0 + 8] (key pieces of w, layers 5, 6), into one field per c & 7 (7); the
//   row r0 + t of VC and VSH (7). p_{h,.}'s 17 bits from the copy (c0 + h) & 7, clamped (7); p
//   2^VSH as 42 bits (8); per output (h, d) the AND of those bits with VC's (8 (h >> 1) + d)'s
//   as 13 nibble columns (|.| <= 120; 9); into the slot of t (10).
// - Value steps (element e = 4 g + q): one read of the slots t < T gives the 64 sums' columns
//   (layer 10); element e's 13 (+ 2^13 each) (10); presplit() (11, 12), column_digits() modulo
//   2^56 (13..15); overflow iff bits 47..55 are not all equal (16); the byte (17).
// - The sequence: VMV(t + 1) after VMV(t) while t + 1 < T, then VWG(0) (layer 9); the word
//   stream's (compile_vew(), with VVM_); its last element (g = 15, VW33) into LASTW (layer 10).
void VectorUnit::compile_vmatr_v() {
  const Lin one = Lin::constant(1);
  const Lin vbit = masked(field_oh(VIN, 0, 16), 2)[2];  // f7 bit 0 = 1 (custom-1 words)
  const OH plo = field_oh(PN, 0, 16), phi = field_oh(PN, 16, 16);
  const std::vector<Lin> gmv = {k(kVmv), PRE[VMATR]};
  LayerBuilder& l5 = L(5);
  // r0 + t as key pieces (t: VMV's payload, < 64; w = src + t: vmatr_slots())
  const FieldRef PW12 = PW12_;
  const FieldRef RQ0 = B.field("vmatr_v_row_key_lo", 16), RQ12 = B.field("vmatr_v_row_key_hi", 64);
  index_sum_nibbles("vmatr_v_row", vindex(2, {VMATR}, 0), plo, masked(phi, 3), const_oh(4, 0), gmv,
                    KeyOut{{RQ0}, {RQ12}});
  const FieldRef VB2 = B.field("vmatr_vc_bits", 256), VSHO = B.field("vmatr_vsh", 26);
  cache_heads("vcache", ".lockstep.vcache", ".lockstep.vsh", 2, RQ0, RQ12, VB2, VSHO);
  auto c0_of = [](std::uint32_t n) { return ((n & 15) >> 2) + 4 * (n >> 4); };
  OH rot(8);  // c0 & 7
  for (std::uint32_t n = 0; n < 64; ++n) rot[c0_of(n) & 7] += PW12[n];
  // layer 7: p_{h, i} from copy h' = (c0 + h) & 7 with rot = c0 & 7: [bit i] unless the word is
  // negative or >= 2^16 (Z = number of nonzero nibbles 4..7), bit 16 = [Z >= 1, not negative]
  const FieldRef PB = B.field("vmatr_v_p_bits", 8 * 17);
  LayerBuilder& l7 = L(7);
  for (std::uint32_t hp = 0; hp < 8; ++hp) {
    Lin z, neg;
    for (std::uint32_t n = 4; n < 8; ++n)
      for (std::uint32_t v = 1; v < 16; ++v) z += VVP_[128 * hp + 16 * n + v];
    for (std::uint32_t v = 8; v < 16; ++v) neg += VVP_[128 * hp + 16 * 7 + v];
    for (std::uint32_t h = 0; h < 8; ++h) {
      const Lin r = rot[(hp - h) & 7];
      for (std::uint32_t i = 0; i < 16; ++i) {
        Lin bit;
        for (std::uint32_t v = 0; v < 16; ++v)
          if ((v >> (i & 3)) & 1) bit += VVP_[128 * hp + 16 * (i >> 2) + v];
        l7.unit_out(l7.relu_unit(bit + r - 1.0 - z), PB.dim(17 * h + i), 1.0);
      }
      const Lin x = z - neg * 5.0 + r * 5.0 - 5.0;
      threshold(l7, x, 1, PB.dim(17 * h + 16));
    }
  }
  // layer 8: p 2^VSH (bits 0..41); layer 9: per output the nibble columns of p 2^VSH VC[.]
  const FieldRef PS2 = B.field("vmatr_v_p_shifted", 8 * 42);
  LayerBuilder& l8 = L(8);
  for (std::uint32_t h = 0; h < 8; ++h)
    for (std::uint32_t i = 0; i < 17; ++i)
      for (std::uint32_t s = 0; s < 26; ++s) when(l8, {PB[17 * h + i], VSHO[s]}, {{PS2.dim(42 * h + i + s), 1.0}});
  constexpr std::uint32_t kC = 13;
  const FieldRef XO = B.field("vmatr_v_columns", 64 * kC);
  LayerBuilder& l9 = L(9);
  for (std::uint32_t h = 0; h < 8; ++h)
    for (std::uint32_t d = 0; d < 8; ++d)
      for (std::uint32_t kb = 0; kb < 42; ++kb)
        for (std::uint32_t j = 0; j < 8; ++j) {
          const std::uint32_t q = kb + j;
          const double w = static_cast<double>(1u << (q & 3)) * (j == 7 ? -1.0 : 1.0);
          when(l9, {PS2[42 * h + kb], VB2[8 * (8 * (h >> 1) + d) + j]}, {{XO.dim(kC * (8 * h + d) + (q >> 2)), w}});
        }
  // layer 10: the position slots (key t), read over t < T on the value steps
  // GV[0]: a value step; GV[1]: a word's first value step, the only one that reads the sums and
  // forms the word; its digits wait in a slot of layer 16 for the other three (hold_digits(),
  // issue 30's lever 2)
  const FieldRef GV = B.field("vmatr_v_value_steps", 2), EL = B.field("vmatr_v_element", 64), TT = B.field("vmatr_v_positions", 64);
  when(l5, {SREAD_, PRE[VMATR], vbit}, {{GV.dim(0), 1.0}});
  when(l5, {SREAD_, SFIRST_, PRE[VMATR], vbit}, {{GV.dim(1), 1.0}});
  {
    const OH glo = field_oh(VWGS, 0, 16), qt = stream_target_q();
    table(l5, {glo, qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{EL.dim(4 * v[0] + v[1]), 1.0}}; },
          {SREAD_, SFIRST_, PRE[VMATR], vbit});
  }
  const Lin T = vhalf(2, {VMATR}, 1);
  for (std::uint32_t t = 0; t < 64; ++t) threshold_if(L(6), T, t + 1, 65536, GV[1], TT.dim(t));  // [T > t]
  const FieldRef OS = B.field("vmatr_v_sums", 64 * kC);
  {
    LayerBuilder& l10 = L(10);
    const std::uint32_t h = l10.add_head(64, 64 * kC, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l10.head(h);
    for (std::uint32_t t = 0; t < 64; ++t) {
      H.k[t] = VMVT_[t] + PRE[VMATR] - 1.0;
      H.q[t] = TT[t];
    }
    for (std::uint32_t r = 0; r < 64 * kC; ++r) {
      H.v[r] = XO[r];
      H.out.emplace_back(r, OS.dim(r), 1.0);
    }
    H.beta = k(kVmv);
  }
  // layer 10: element e's columns (+ 2^13); y + 2^15 modulo 2^56
  constexpr std::uint32_t kD = 14;
  const FieldRef SC = B.field("vmatr_v_element_columns", kD);
  LayerBuilder& l10 = L(10);
  for (std::uint32_t e = 0; e < 64; ++e)
    for (std::uint32_t c = 0; c < kC; ++c)
      l10.unit_out(l10.relu_unit(OS[kC * e + c] + 8192.0 - (one - EL[e]) * 16384.0), SC.dim(c), 1.0);
  unsigned __int128 ones = 0;  // sum_{c<13} 16^c
  for (std::uint32_t c = 0; c < kC; ++c) ones = (ones << 4) | 1;
  const unsigned __int128 konst = (static_cast<unsigned __int128>(1) << 15) - (static_cast<unsigned __int128>(1) << 13) * ones;
  std::vector<Lin> cols;
  std::vector<unsigned> max_cs;
  for (std::uint32_t c = 0; c < kD; ++c) {
    const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
    cols.push_back(SC[c] + GV[1] * static_cast<double>(kc));
    max_cs.push_back((c < kC ? 16384 : 0) + kc);
  }
  const auto [X2, next] = presplit("vmatr_v", 11, cols, max_cs);
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vmatr_v", 13, X2, next, GV[1], &done);
  if (done != 15) throw std::logic_error("vmatr_v: the digits are not ready at layer 15");
  const FieldRef OV = B.field("vmatr_v_overflow", 2);
  hold_digits(L(16), DG, 4, kD, GV[1], GV[0] - GV[1]);
  overflow_flags(L(16), DG, 11, kD, OV, GV[0]);
  emit_rounded(L(17), DG, OV);
  // the sequence: [t + 1 = T] on VMV steps (layer 6); VMV(t + 1) or VWG(0) (9); the last element
  const FieldRef LT = B.field("vmatr_v_last_position", 1), EQV = B.field("vmatr_v_last", 1);
  const Lin tx = oh_value(plo) + oh_value(phi) * 16.0 + 1.0 - T;
  threshold_if(L(6), tx, 0, 512, k(kVmv), LT.dim(), 1.0);
  threshold_if(L(6), tx, 1, 512, k(kVmv), LT.dim(), -1.0);
  LayerBuilder& s9 = L(9);
  when(s9, {k(kVmv), one - LT[0]}, {{NK.dim(kVmv), 1.0}});
  table(s9, {plo, OH(phi.begin(), phi.begin() + 4)}, [&](const std::vector<unsigned>& v) {  // t < 64
    const unsigned t = v[0] + 16 * v[1] + 1;
    return SparseVec{{NPL.dim(t & 15), 1.0}, {NPH.dim(t >> 4), 1.0}};
  }, {k(kVmv), one - LT[0]});
  when(s9, {k(kVmv), LT[0]}, token_out(kVwg, 0));
  const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
  when(L(6), {k(vw(3, 3)), glo[15], ghi[0]}, {{EQV.dim(), 1.0}});
  when(L(10), {VVM_[0], EQV[0]}, {{LASTW_.dim(), 1.0}});
}

}  // namespace lockstep::chip::rv32::detail
