// VMAT (vector.md section 4.1): its slots (VMC, VMH, VY bytes, the running maximum), the int8 x
// int4 row-chunk products from WMEM/WSCALE and ACT/ASH, and y_r in write or argmax mode.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VMAT's slots and payload embeddings (layers 0, 1; the fields MCS_ .. RSN_ and VQEK_ in
// compiler_context.hpp), before vr_file(), which writes y_r from VYB_ and VY3N_ at dst + r.
void VectorUnit::vmat_slots() {
  Lin vmc, vy;
  for (std::uint32_t j = 0; j < 6; ++j) vmc += k(kVmc0 + j);
  for (std::uint32_t m = 0; m < 4; ++m) vy += k(kVy0 + m);
  vy += k(kVyn3);
  const Lin vy3 = k(kVy0 + 3) + k(kVyn3);
  const FieldRef HVN = B.field("vmh_payload_nibbles", 32);
  VY3N_ = B.field("vy3_payload_nibbles", 32);
  for (std::uint32_t p = 0; p < 256; ++p) {
    B.embed(256 * kVmh + p, HVN.dim(p & 15), 1);
    B.embed(256 * kVmh + p, HVN.dim(16 + (p >> 4)), 1);
    for (std::uint32_t kd : {kVy0 + 3, static_cast<std::uint32_t>(kVyn3)}) {
      B.embed(256 * kd + p, VY3N_.dim(p & 15), 1);
      B.embed(256 * kd + p, VY3N_.dim(16 + (p >> 4)), 1);
    }
  }
  VQEK_ = B.field("vqe_group_shift", 6 + 26);  // VQE((k << 5) | e): k (6), then e (26) as one-hots
  for (std::uint32_t k = 0; k < 6; ++k)
    for (std::uint32_t e = 0; e < 26; ++e) {
      B.embed(256 * kVqe + (k << 5 | e), VQEK_.dim(k), 1);
      B.embed(256 * kVqe + (k << 5 | e), VQEK_.dim(6 + e), 1);
    }
  MCS_ = B.field("vmc_slot", 32);
  slot_head(L(0), 1, [&](std::uint32_t) { return vmc; }, [&](std::uint32_t r) { return PN[r]; }, MCS_, vmc + vy);
  HSN_ = B.field("vmh_slot", 32);
  slot_head(L(0), 1, [&](std::uint32_t) { return k(kVmh) + fetch(); }, [&](std::uint32_t r) { return HVN[r]; }, HSN_,
            vmc + vy + k(kVmh));
  VYB_ = B.field("vy_byte_slots", 96);
  block_slots(L(0), "vy_bytes", 3, [](std::uint32_t m) { return std::vector<std::uint32_t>{kVy0 + m}; },
              k(kVy0) + k(kVy0 + 1) + k(kVy0 + 2), vy3, VYB_);
  MAXN_ = B.field("vmat_max_slot", 128);
  slot_head(L(1), 1, [&](std::uint32_t) { return k(kVyn3); },
            [&](std::uint32_t r) { return r < 96 ? VYB_[r] : VY3N_[r - 96]; }, MAXN_, k(kVy0 + 2));
  RSN_ = B.field("vmat_argmax_row_slot", 64);
  slot_head(L(1), 1, [&](std::uint32_t) { return k(kVyn3); },
            [&](std::uint32_t r) { return r < 32 ? MCS_[r] : HSN_[r - 32]; }, RSN_, vy3 + k(kW0));
}

// VMAT (vector.md sections 4.1, 5): per row r, VMH(r >> 8) where r > 0 and r & 0xFF = 0, VMC_j(r
// & 0xFF) for j < K, then the bytes of y_r = sat32(rnd(sum_j acc_j WSCALE_j 2^ASH_j, 16)) as
// VY0..VY3 (argmax mode: VYN3 for a new maximum; then W(r*)).
// - Chunk (r, j) is computed on the step that emits VMC_j (the fetch step, or the one consuming
//   VMC_{j-1}, the previous row's VY3 / VYN3, or VMH): r from the slots (linear); r K + j
//   (layer 4, K from inst nibble 6); c = c0 + r K + j and its one-hots c >> 6 (layer 5) and
//   c & 63 (layer 6); WMEM (4,152 x 64 weights as 4 bit rows each, and WSCALE's 16 bits), ACT
//   (64 lane heads keyed by block, 8 bits each) and ASH (a one-hot) read (layer 7);
//   P_t = sum_i [bit t of w_i] a_i (2,048 ANDs of bits, |P_t| <= 2^13; layer 7), so acc =
//   P_0 + 2 P_1 + 4 P_2 - 8 P_3; the contribution acc WSCALE 2^ASH = sum_e 2^e Q_e with Q_e =
//   sum over t + b + ASH = e of +-[bit b of WSCALE] P_t (|Q_e| <= 2^15, 44 columns; layer 8),
//   written to the slot of j (layer 9).
// - Value steps (consuming VMC_{K-1}, VY0, VY1, VY2): one read of the slots j < K gives
//   D_e = sum_j Q_{j,e} (layer 9). y_pre + 2^15 modulo 2^64 as digits: nibble columns
//   X_c = sum_t 2^t D_{4c+t} + 2^22 (>= 0, < 2^23) with the offsets and the rounding bit as
//   constant nibbles; splits at 2^16 (layer 9), 2^8 (10) and 2^4 (11); column_digits()
//   (12..15). y is bits 16..47; overflow iff bits 47..63 are not all equal (16); the byte (17).
//   Layers 9..15 run on the first value step only (consuming VMC_{K-1}); a slot of layer 16
//   keeps y's digits for the other three (hold_digits(), issue 30's lever 2).
// - Argmax (on the step consuming VY2): y_r > M (the running maximum, slot MAXN_) by nibble
//   compares of the 48-bit y with M sign-extended (16, 17), and M != 2^31 - 1 (sat32 is
//   monotone); row 0 is always a new maximum (18).
// - The sequence (layer 9): VMC_{j+1}(p) or VY0 after VMC_j(p); VY_{m+1} after VY_m; after VY3 /
//   VYN3: VMC0(p + 1), VMH(h + 1) (p = 255), or at the last row (r + 1 = R) the end (write
//   mode) or W(r*) (argmax: W0 = r* & 0xFF, W1 = r* >> 8, W2 = W3 = 0; NOP(0) for rd = x0).
Lin VectorUnit::vmat_chunk_kinds() const {
  Lin cek = k(kVy0 + 3) + k(kVyn3) + k(kVmh);
  for (std::uint32_t j = 0; j < 6; ++j) cek += k(kVmc0 + j);
  return cek;
}

FieldRef VectorUnit::vmat_chunk_port(std::uint32_t which) {
  return operand_port(which, "vmat_chunk", vmat_chunk_kinds() + fetch() + PRE[VMAT] - 1.0);  // e5's steps
}

void VectorUnit::compile_vmat() {
  const Lin one = Lin::constant(1), mat = cls(VMAT);
  const Lin vy3 = k(kVy0 + 3) + k(kVyn3);
  const OH mlo = field_oh(MCS_, 0, 16), mhi = field_oh(MCS_, 16, 16);
  const Lin hs = byte_value(field_oh(HSN_, 0, 16), field_oh(HSN_, 16, 16));
  const Lin rrow = hs * 256.0 + byte_value(mlo, mhi) + vy3;  // the row of the chunk step (<= 4,352)
  OH jn(6);                                                  // j of the chunk they emit
  jn[0] = fetch() + vy3 + k(kVmh);
  for (std::uint32_t j = 0; j < 5; ++j) jn[j + 1] = k(kVmc0 + j);
  Lin hz = one;  // [h = 0] (the VMH slot is empty or holds 16: low nibble 0)
  for (std::uint32_t v = 1; v < 16; ++v) hz -= HSN_[v];
  // layer 4 (PRE, the class candidate, is ready from layer 5; VMC, VY and VMH tokens are
  // VMAT's alone): r K + j (SP), the value steps (GY); layer 5: the chunk step (CE: those kinds,
  // or the fetch step of a VMAT; e5 is CE as a linear form in layer 5, 1 or <= 0), argmax
  // mode (AM)
  const OH n6 = nib(IN, 6);
  auto kp = [&](unsigned kk) { return n6[2 * kk] + n6[2 * kk + 1]; };  // K = f7 & 7 = inst[27:25]
  const FieldRef CE4 = B.field("vmat_chunk_kinds", 1), CE = B.field("vmat_chunk_step", 1), SP = B.field("vmat_chunk_offset", 1);
  const FieldRef GY = B.field("vmat_value_steps", 4), AM = B.field("vmat_argmax", 1);
  const Lin cek = vmat_chunk_kinds();  // the steps after the first that may emit VMC_j
  LayerBuilder& l4 = L(4);
  pass(l4, cek, CE4.dim());
  for (unsigned kk = 1; kk <= 6; ++kk)
    l4.unit_out(l4.relu_unit(rrow - (one * 2.0 - kp(kk) - cek) * 8192.0), SP.dim(), kk);
  Lin jsum;
  for (std::uint32_t j = 0; j < 5; ++j) jsum += k(kVmc0 + j) * static_cast<double>(j + 1);
  pass(l4, jsum, SP.dim());
  for (std::uint32_t j = 0; j < 6; ++j) when(l4, {k(kVmc0 + j), kp(j + 1)}, {{GY.dim(0), 1.0}});
  for (std::uint32_t m = 0; m < 3; ++m) pass(l4, k(kVy0 + m), GY.dim(m + 1));
  const Lin e5 = CE4[0] + PRE[VMAT] + fetch() - 1.0;
  pass(L(5), e5, CE.dim());
  when(L(5), {PRE[VMAT], masked(nib(IN, 7), 1)[1]}, {{AM.dim(), 1.0}});
  const Lin gya = GY[0] + GY[1] + GY[2] + GY[3];
  // a threshold [x >= t] when `e` is 1 (x <= hi), into several outputs
  auto thr = [&](LayerBuilder& l, const Lin& x, double t, double hi, const Lin& e, const SparseVec& outs) {
    const double M = hi - t + 1;
    const Lin off = e * M - M;
    const std::uint32_t a = l.relu_unit(x - (t - 1) + off), b = l.relu_unit(x - t + off);
    for (const auto& [d, c] : outs) {
      l.unit_out(a, d, c);
      l.unit_out(b, d, -c);
    }
  };
  // layer 5: c = c0 + r K + j and its one-hot H_m = [c >> 6 = m] (m = 0..64, c < 2^17; none for
  // c >= 4,160) as the difference of two thresholds [c >= 64 m] - [c >= 64 (m + 1)], each a
  // pair of units (four terms of at most 2^17 per dimension: exact in fp32); the ACT block
  // b0 + j as a one-hot. Layer 6: c & 63 = c - 64 sum_m m H_m and its one-hot L_l = [c & 63 =
  // l] (l = 0..63) the same way. WMEM's key reads one dimension of each (issue 30's lever 3:
  // before, thermometers [c >= 64 m] and [c & 63 >= l], of which the key read up to 128).
  constexpr double kHiS = 131072;  // > c0 + r K + j
  // The operands on the chunk steps only (e5's steps; fetch and CE4's kinds exclude each other):
  // zero on the value steps and on every other op's, so these units are idle there.
  const FieldRef RC1 = vmat_chunk_port(1), RC2 = vmat_chunk_port(2);
  const Lin S = SP[0] + half(RC2, 0);
  const FieldRef HO = B.field("vmat_chunk_hi_onehot", 65), LO = B.field("vmat_chunk_lo_onehot", 64);
  // [x >= step m] - [x >= step (m + 1)] into dimension m of `oh`, m = 0..n - 1 (when `e` is 1)
  auto onehot = [&](LayerBuilder& l, const Lin& x, double step, std::uint32_t n, const Lin& e, const FieldRef& oh) {
    for (std::uint32_t m = 0; m <= n; ++m) {
      SparseVec outs;
      if (m < n) outs.push_back({oh.dim(m), 1.0});
      if (m > 0) outs.push_back({oh.dim(m - 1), -1.0});
      thr(l, x, step * m, kHiS, e, outs);
    }
  };
  LayerBuilder& l5 = L(5);
  onehot(l5, S, 64.0, 65, e5, HO);
  Lin lo = S;
  for (std::uint32_t m = 1; m < 65; ++m) lo -= HO[m] * (64.0 * m);
  const FieldRef QB = B.field("vmat_act_block", 6);
  table(l5, {nib(RC1, 4), jn}, [&](const std::vector<unsigned>& v) {
    return v[0] + v[1] < 6 ? SparseVec{{QB.dim(v[0] + v[1]), 1.0}} : SparseVec{};
  }, {e5, nib(RC1, 5)[0], nib(RC1, 6)[0], nib(RC1, 7)[0]});
  LayerBuilder& l6 = L(6);
  onehot(l6, lo, 1.0, 64, CE[0], LO);
  // layer 7: WMEM and WSCALE (one head: 4,152 columns, key ReLU(H[c >> 6] + L[c & 63] - 1)),
  // ACT (64 lane heads: lane i holds ACT[64 b + i]'s bits in column b), ASH (a one-hot)
  LayerBuilder& l7 = L(7);
  const FieldRef WB = B.field("vmat_weight_bits", 256), WSB = B.field("vmat_scale_bits", 16);
  const FieldRef NT = B.field("vmat_weight_bit_counts", 4);  // N_t: how many of the 64 weights have bit t
  {
    const std::uint32_t h = l7.add_head(kChunks, 272, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l7.head(h);
    for (std::uint32_t c = 0; c < kChunks; ++c) {
      H.q[c] = HO[c >> 6] + LO[c & 63] - 1.0;
      H.k[c] = H.q[c];
    }
    for (std::uint32_t r = 0; r < 272; ++r) H.out.emplace_back(r, r < 256 ? WB.dim(r) : WSB.dim(r - 256), 1.0);
    for (std::uint32_t r = 0; r < 256; ++r) H.out.emplace_back(r, NT.dim(r & 3), 1.0);
    section_init("wmem", 7, h, 0, ".lockstep.wmem", 0, 1, 32 * kChunks, ByteEncoding::Bits, 32);
    section_init("wscale", 7, h, 256, ".lockstep.wscale", 0, 1, 2 * kChunks, ByteEncoding::Bits, 2);
  }
  // VQ ACT writes them (vector.md section 4.3): element j = 4 g + m (g: the VLG slot) when VLB_m
  // is consumed, the payload's bits into lane j & 63 of block b0 + (j >> 6); e_k into ASH[b0 +
  // k] when VQE((k << 5) | e_k) is consumed (the block one-hots and the lane, layer 5)
  const FieldRef WBLK = B.field("vq_act_write_block", 6), WLANE = B.field("vq_act_write_lane", 64);
  const FieldRef ABLK = B.field("vq_ash_write_block", 6);
  {
    const Lin act = PRE[VQ] + masked(field_oh(VIN, 0, 16), 6)[0] - 1.0;  // VQ, TARGET = 0 (1 or <= 0)
    const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
    OH mq(4);
    for (std::uint32_t m = 0; m < 4; ++m) mq[m] = k(kVlb0 + m);
    table(l5, {vnib(1, {VQ}, 0), ghi}, [&](const std::vector<unsigned>& v) {
      return v[0] + v[1] < 6 ? SparseVec{{WBLK.dim(v[0] + v[1]), 1.0}} : SparseVec{};
    }, {act, vlb_any()});
    table(l5, {glo, mq}, [&](const std::vector<unsigned>& v) { return SparseVec{{WLANE.dim(4 * v[0] + v[1]), 1.0}}; },
          {act, vlb_any()});
    table(l5, {vnib(1, {VQ}, 0), field_oh(VQEK_, 0, 6)}, [&](const std::vector<unsigned>& v) {
      return v[0] + v[1] < 6 ? SparseVec{{ABLK.dim(v[0] + v[1]), 1.0}} : SparseVec{};
    }, {act, k(kVqe)});
  }
  // VMATR K mode reads block src on its value steps (QBR_, layer 5)
  QBR_ = B.field("vmatr_act_block", 6);
  {
    const FieldRef R1R = vec_port(1, VMATR);
    for (std::uint32_t b = 0; b < 6; ++b)
      when(l5, {nib(R1R, 4)[b], SREAD_, SFIRST_, PRE[VMATR], masked(field_oh(VIN, 0, 16), 2)[0], nib(R1R, 5)[0],
                nib(R1R, 6)[0], nib(R1R, 7)[0]},
           {{QBR_.dim(b), 1.0}});
  }
  // ACT's 64 lanes, twice: VMAT's copy (read with QB) gives each a_i as two numbers, its low
  // nibble (0..15) and signed high nibble (-8..7); VMATR's (read with QBR_) gives its 8 bits.
  // Both are written alike (VQ), so they hold the same values.
  const FieldRef ALO = B.field("vmat_act_lo_nibbles", 64), AHI = B.field("vmat_act_hi_nibbles", 64);
  const FieldRef AB = B.field("vmatr_act_bits", 512), ASHO = B.field("vmat_ash", 26);
  AB_ = AB;
  ASHO_ = ASHO;
  for (const bool numbers : {true, false})
    for (std::uint32_t i = 0; i < 64; ++i) {
      const std::uint32_t h = l7.add_head(6, 8);
      HeadBuilder& H = l7.head(h);
      for (std::uint32_t b = 0; b < 6; ++b) {
        H.q[b] = numbers ? QB[b] : QBR_[b];
        H.k[b] = WBLK[b];
      }
      for (std::uint32_t r = 0; r < 8; ++r) {
        H.v[r] = payload_bit(r);
        if (!numbers) H.out.emplace_back(r, AB.dim(8 * i + r), 1.0);
        else if (r < 4) H.out.emplace_back(r, ALO.dim(i), static_cast<double>(1u << r));
        else H.out.emplace_back(r, AHI.dim(i), r < 7 ? static_cast<double>(1u << (r - 4)) : -8.0);
      }
      H.beta = WLANE[i];
      section_init((numbers ? "vmat_act_lane" : "act_lane") + std::to_string(i), 7, h, 0, ".lockstep.act", i, 64, 6,
                   ByteEncoding::Bits, 1);
    }
  {
    const std::uint32_t h = l7.add_head(6, 256);
    HeadBuilder& H = l7.head(h);
    Lin any;
    for (std::uint32_t b = 0; b < 6; ++b) {
      H.q[b] = QB[b] + QBR_[b];
      H.k[b] = ABLK[b];
      any += ABLK[b];
    }
    for (std::uint32_t r = 0; r < 26; ++r) {
      H.v[r] = VQEK_[6 + r];
      H.out.emplace_back(r, ASHO.dim(r), 1.0);
    }
    H.beta = any;
    section_init("ash", 7, h, 0, ".lockstep.ash", 0, 1, 6, ByteEncoding::OneHot, 1);
  }
  // P_t = sum_i [bit t of w_i] a_i in two parts (layer 7): a_i's low nibble (PL_t, 0..960) and
  // its signed high nibble (PH_t, -512..448), so that P_t = PL_t + 16 PH_t. Per (i, t) one unit
  // each, [bit] lo_i = ReLU(lo_i + 16 [bit] - 16) and [bit] (hi_i + 8) = ReLU(hi_i + 16 [bit] - 8)
  // (lo_i <= 15, hi_i <= 7: zero where the bit is 0); the 8 per set bit comes off PH_t through
  // N_t, the count of bit t over the 64 weights, which the WMEM read writes beside the bits.
  const FieldRef PL = B.field("vmat_bit_products_lo", 4), PH = B.field("vmat_bit_products_hi", 4);
  for (std::uint32_t i = 0; i < 64; ++i)
    for (std::uint32_t t = 0; t < 4; ++t) {
      l7.unit_out(l7.relu_unit(ALO[i] + WB[4 * i + t] * 16.0 - 16.0), PL.dim(t), 1.0);
      l7.unit_out(l7.relu_unit(AHI[i] + WB[4 * i + t] * 16.0 - 8.0), PH.dim(t), 1.0);
    }
  for (std::uint32_t t = 0; t < 4; ++t) l7.unit_out(l7.relu_unit(NT[t]), PH.dim(t), -8.0);
  // G_{b,s} = [bit b of WSCALE] [ASH = s] (layer 7, 416 one-unit ANDs), so that each unit of
  // layer 8 reads one gate instead of both (a set scale bit's column fed 234 units of layer 8).
  const FieldRef G = B.field("vmat_scale_shift_gates", 16 * 26);
  for (std::uint32_t b = 0; b < 16; ++b)
    for (std::uint32_t s = 0; s < 26; ++s) when(l7, {WSB[b], ASHO[s]}, {{G.dim(26 * b + s), 1.0}});
  // Q_e (layer 8): sign_t G_{b,s} P_t (PL_t into e = t + b + s, PH_t into e + 4);
  // |Q_e| <= 4 * 960 + 4 * 512
  constexpr std::uint32_t kCols = 48;
  const FieldRef Q = B.field("vmat_contribution_columns", kCols);
  LayerBuilder& l8 = L(8);
  for (std::uint32_t b = 0; b < 16; ++b)
    for (std::uint32_t s = 0; s < 26; ++s) {
      const Lin g = G[26 * b + s], off = (one - g) * 1024.0;
      SparseVec fix;  // PH_t + 512 is what the units pass: -512 per t where the gate is 1
      for (std::uint32_t t = 0; t < 4; ++t) {
        const double sg = t < 3 ? 1.0 : -1.0;
        const std::uint32_t e = t + b + s;
        l8.unit_out(l8.relu_unit(PL[t] - off), Q.dim(e), sg);
        l8.unit_out(l8.relu_unit(PH[t] + 512.0 - off), Q.dim(e + 4), sg);
        fix.push_back({Q.dim(e + 4), -512.0 * sg});
      }
      when(l8, {g}, fix);
    }
  // layer 9: the contribution slots (column j), read over j < K on the value steps
  const FieldRef D = B.field("vmat_column_sums", kCols);
  {
    LayerBuilder& l9 = L(9);
    const std::uint32_t h = l9.add_head(6, kCols, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l9.head(h);
    for (std::uint32_t j = 0; j < 6; ++j) {
      H.k[j] = jn[j] + CE[0] - 1.0;
      H.q[j] = f7_pred([j](unsigned x) { return (x & 7) > j && (x & 7) <= 6; }) + GY[0] - 1.0;
    }
    for (std::uint32_t e = 0; e < kCols; ++e) {
      H.v[e] = Q[e];
      H.out.emplace_back(e, D.dim(e), 1.0);
    }
    H.beta = CE[0];
  }
  // y_pre + 2^15 modulo 2^64 from the nibble columns X'_c = sum_t 2^t D_{4c+t} + 2^20 (c < 12;
  // |X_c| <= 15 * 6 * 5,888 < 2^20): thermometers [X'_c >= 2^16 m] (layer 9), [R1_c >= 2^8 m]
  // for R1_c = X'_c - 2^16 H1_c (10), then R2_c = R1_c - 2^8 H2_c split at 16 (11), each
  // threshold in a dimension of its own (a sum of large threshold pairs would lose exactness);
  // the column sums (H1 into c + 4, H2 into c + 2, R2 into c and c + 1, the offsets and the
  // rounding bit as constant nibbles) to column_digits() (12..15).
  constexpr std::uint32_t kX = 12, kDg = 16;
  const std::uint64_t konst = (1ULL << 15) - (1ULL << 20) * 0x111111111111ULL;  // mod 2^64
  const double xmax = 1048576.0 + 15.0 * 6 * 5888;
  const unsigned nh1 = static_cast<unsigned>(xmax / 65536);
  const FieldRef T1 = B.field("vmat_split1", kX * nh1), T2 = B.field("vmat_split2", kX * 255), CS = B.field("vmat_digit_sums", kDg);
  std::vector<unsigned> max_cs(kDg, 0);
  LayerBuilder& l9 = L(9);
  LayerBuilder& l10 = L(10);
  LayerBuilder& l11 = L(11);
  for (std::uint32_t c = 0; c < kX; ++c) {
    Lin x = GY[0] * 1048576.0;
    for (std::uint32_t t = 0; t < 4; ++t) x += D[4 * c + t] * static_cast<double>(1u << t);
    Lin h1, h2;
    for (unsigned m = 1; m <= nh1; ++m) {
      thr(l9, x, 65536.0 * m, xmax, one, {{T1.dim(nh1 * c + m - 1), 1.0}});
      h1 += T1[nh1 * c + m - 1];
    }
    const Lin r1 = x - h1 * 65536.0;
    if (c + 4 < kDg) pass(l10, h1, CS.dim(c + 4));
    max_cs[std::min(c + 4, kDg - 1)] += c + 4 < kDg ? nh1 : 0;
    for (unsigned m = 1; m <= 255; ++m) {
      thr(l10, r1, 256.0 * m, 65535, one, {{T2.dim(255 * c + m - 1), 1.0}});
      h2 += T2[255 * c + m - 1];
    }
    const Lin r2 = r1 - h2 * 256.0;
    pass(l11, h2, CS.dim(c + 2));
    max_cs[c + 2] += 255;
    pass(l11, r2, CS.dim(c));
    for (unsigned m = 1; m <= 15; ++m) thr(l11, r2, 16.0 * m, 255, one, {{CS.dim(c), -16.0}, {CS.dim(c + 1), 1.0}});
    max_cs[c] += 15;
    max_cs[c + 1] += 15;
  }
  for (std::uint32_t c = 0; c < kDg; ++c) {
    const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
    if (kc != 0) pass(l9, GY[0] * static_cast<double>(kc), CS.dim(c));
    max_cs[c] += kc;
  }
  std::vector<Lin> cols;
  for (std::uint32_t c = 0; c < kDg; ++c) cols.push_back(CS[c]);
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vmat_y", 12, cols, max_cs, GY[0], &done);
  if (done != 15) throw std::logic_error("vmat: the digits are not ready at layer 15");
  // y_r is formed once, on the step that consumes VMC_{K-1}; its digits 4..15 wait in a slot of
  // layer 16 for the steps that consume VY0..VY2 (the overflow, the byte and argmax's compare
  // read them there)
  hold_digits(L(16), DG, 4, kDg, GY[0], GY[1] + GY[2] + GY[3]);
  auto dg = [&](std::uint32_t c) { return field_oh(DG, 16 * c, 16); };
  // layer 16: overflow; layer 17: the byte or a byte of 2^31 - 1 / -2^31
  const FieldRef OV = B.field("vmat_overflow", 2);
  LayerBuilder& l16 = L(16);
  LayerBuilder& l17 = L(17);
  overflow_flags(l16, DG, 11, kDg, OV, gya);
  emit_rounded(l17, DG, OV, field_oh(GY, 0, 4), Lin());
  // argmax: y_r > M (layers 16, 17), row 0 (10), M = 2^31 - 1 (16); VYN3 instead of VY3 (18)
  const Lin amf = f7_pred([](unsigned x) { return (x & 8) != 0; });
  const FieldRef CMPG = B.field("vmat_compare_step", 1), R0 = B.field("vmat_row0", 1);
  when(L(9), {GY[3], AM[0]}, {{CMPG.dim(), 1.0}});
  when(L(10), {CMPG[0], mlo[0], mhi[0], hz - HSN_[16 + 1]}, {{R0.dim(), 1.0}});
  const FieldRef GTN = B.field("vmat_gt_nibble", 12), EQN2 = B.field("vmat_eq_nibble", 12), MX7 = B.field("vmat_max_is_top", 1);
  {
    std::vector<Lin> top = {CMPG[0]};
    for (std::uint32_t n = 0; n < 7; ++n) top.push_back(nib(MAXN_, n)[15]);
    top.push_back(nib(MAXN_, 7)[7]);
    when(l16, top, {{MX7.dim(), 1.0}});
    const OH m7 = nib(MAXN_, 7);
    const OH msign = {any_of(m7, [](unsigned v) { return v < 8; }), any_of(m7, [](unsigned v) { return v >= 8; })};
    for (std::uint32_t n = 0; n < 12; ++n) {
      const OH md = n < 8 ? nib(MAXN_, n) : msign;
      table(l16, {dg(4 + n), md}, [&, n](const std::vector<unsigned>& v) {
        unsigned a = v[0], b = n < 8 ? v[1] : (v[1] ? 15u : 0u);
        if (n == 11) {
          a ^= 8;
          b ^= 8;
        }
        if (a > b) return SparseVec{{GTN.dim(n), 1.0}};
        if (a == b) return SparseVec{{EQN2.dim(n), 1.0}};
        return SparseVec{};
      }, {CMPG[0]});
    }
  }
  const FieldRef GTY = B.field("vmat_new_max", 1);
  for (std::uint32_t n = 0; n < 12; ++n) {
    std::vector<Lin> conds = {GTN[n]};
    for (std::uint32_t n2 = n + 1; n2 < 12; ++n2) conds.push_back(EQN2[n2]);
    when(l17, conds, {{GTY.dim(), 1.0}});
  }
  LayerBuilder& l18 = L(18);
  const std::uint32_t nm = l18.relu_unit(GTY[0] - MX7[0] - R0[0]);
  l18.unit_out(nm, NK.dim(kVyn3), 1.0);
  l18.unit_out(nm, NK.dim(kVy0 + 3), -1.0);
  const std::uint32_t z = l18.relu_unit(R0[0]);
  l18.unit_out(z, NK.dim(kVyn3), 1.0);
  l18.unit_out(z, NK.dim(kVy0 + 3), -1.0);
  // the sequence (layer 9); the last row: [r + 1 = R] where VY3 / VYN3 is consumed (layer 6)
  const FieldRef LR = B.field("vmat_last_row", 1);
  thr(L(6), rrow - half(RC2, 1), 0, 8192, vy3, {{LR.dim(), 1.0}});  // RC2: vy3 is a chunk step
  thr(L(6), rrow - half(RC2, 1), 1, 8192, vy3, {{LR.dim(), -1.0}});
  LayerBuilder& s9 = L(9);
  for (std::uint32_t j = 0; j < 6; ++j) {
    const Lin more = f7_pred([j](unsigned x) { return (x & 7) > j + 1 && (x & 7) <= 6; });
    if (j + 1 < 6) {
      when(s9, {k(kVmc0 + j), more}, {{NK.dim(kVmc0 + j + 1), 1.0}});
      for (std::uint32_t v = 0; v < 16; ++v) {
        when(s9, {k(kVmc0 + j), more, PN[v]}, {{NPL.dim(v), 1.0}});
        when(s9, {k(kVmc0 + j), more, PN[16 + v]}, {{NPH.dim(v), 1.0}});
      }
    }
    when(s9, {k(kVmc0 + j), f7_pred([j](unsigned x) { return (x & 7) == j + 1; })}, {{NK.dim(kVy0), 1.0}});
  }
  for (std::uint32_t m = 0; m < 3; ++m) when(s9, {k(kVy0 + m), mat}, {{NK.dim(kVy0 + m + 1), 1.0}});
  when(s9, {k(kVmh), mat}, token_out(kVmc0, 0));
  table(s9, {mlo, mhi}, [&](const std::vector<unsigned>& v) {
    const unsigned p = v[0] + 16 * v[1];
    if (p == 255) return SparseVec{};
    return token_out(kVmc0, p + 1);
  }, {vy3, one - LR[0]});
  {
    OH hoh(16);  // h (0..15) of the VMH slot
    hoh[0] = hz;
    for (std::uint32_t v = 1; v < 16; ++v) hoh[v] = HSN_[v];
    table(s9, {hoh}, [&](const std::vector<unsigned>& v) { return token_out(kVmh, v[0] + 1); },
          {vy3, one - LR[0], mlo[15], mhi[15]});
  }
  when(s9, {vy3, LR[0], one - amf}, {{ENDI.dim(), 1.0}});
  when(s9, {vy3, LR[0], amf, one - RD[0]}, {{NK.dim(kW0), 1.0}});
  for (std::uint32_t v = 0; v < 16; ++v) {
    when(s9, {vy3, LR[0], amf, one - RD[0], RSN_[v]}, {{NPL.dim(v), 1.0}});
    when(s9, {vy3, LR[0], amf, one - RD[0], RSN_[16 + v]}, {{NPH.dim(v), 1.0}});
  }
  when(s9, {vy3, LR[0], amf, RD[0]}, token_out(kNop, 0));
  Lin rz = one;  // r* >> 8 (0..16): its low nibble is 0 when the slot holds 0 or 16
  for (std::uint32_t v = 1; v < 16; ++v) {
    rz -= RSN_[32 + v];
    when(s9, {mat, k(kW0), RSN_[32 + v]}, {{NPL.dim(v), 1.0}});
  }
  when(s9, {mat, k(kW0)}, {{NK.dim(kW0 + 1), 1.0}});
  when(s9, {mat, k(kW0), rz}, {{NPL.dim(0), 1.0}});
  when(s9, {mat, k(kW0), RSN_[48 + 1]}, {{NPH.dim(1), 1.0}});
  when(s9, {mat, k(kW0), one - RSN_[48 + 1]}, {{NPH.dim(0), 1.0}});
  when(s9, {mat, k(kW0 + 1)}, token_out(kW0 + 2, 0));
  when(s9, {mat, k(kW0 + 2)}, token_out(kW0 + 3, 0));
}

}  // namespace lockstep::chip::rv32::detail
