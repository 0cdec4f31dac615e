// VRED (vector.md section 4.7): SUM, SUMSQ and MAX over groups of 64 words, then the word
// stream of the result.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// VRED SUM (vector.md sections 4.7, 5): VRD(k) for every group k = 0 .. (n - 1) >> 6, then the
// word stream of z = sat32(rnd(acc, SH)), acc = sum_i x_i (SUMSQ: vred_sumsq(), the same
// sequence).
// - VRD(k) step: the span heads (layer 7) give per nibble i and value v the number of the
//   group's words with that nibble; the group's column sums S_i = sum_v v cnt_i[v] (nibble 7
//   signed: |S_7| <= 8 * 64) are linear in them and go to the slot of k (layer 8).
// - Value steps (VWG(0), VW00..VW02 consumed): one read of the slots of groups 0..(n - 1) >> 6
//   gives T_i = sum_k S_{k,i}, acc = sum_i 16^i T_i (|acc| <= 2^41). acc + 2^(SH-1) (SH >= 1)
//   modulo 2^48 as digits: column sums T_i (T_7 + 8,192 and -2^41 as constant nibbles, so
//   that every column is >= 0), the rounding bit by SH, column_digits() (layers 8..12); the
//   bits of floor(. / 2^SH) selected by SH (13); overflow iff bits 31 + SH .. 47 are not all
//   equal (counts of ones and zeros, 13; flags, 14); the byte's nibble one-hots (14); the byte
//   or a byte of 2^31 - 1 / -2^31 (15).
// The sequence: VRD(k + 1) after VRD(k) until k = (n - 1) >> 6, then VWG(0), VW00..VW03; after
// VW03 the instruction ends (its word is written by vr_file()). SUMSQ: vred_sumsq(); MAX:
// vred_max().
void VectorUnit::compile_vred() {
  const Lin one = Lin::constant(1), red = cls(VRED);
  VRG_ = B.field("vred_value_steps", 4);  // [VRED SUM, the next token is value byte m] (layer 6)
  const FieldRef VRGQ = B.field("vred_sumsq_value_steps", 4);  // ... of VRED SUMSQ
  const FieldRef VRGM = B.field("vred_max_value_steps", 4);    // ... of VRED MAX
  for (std::uint32_t m = 0; m < 4; ++m) {
    const Lin consumed = m == 0 ? k(kVwg) : k(vw(0, m - 1));
    when(L(6), {red, consumed, f7_mode(1)}, {{VRG_.dim(m), 1.0}});
    when(L(6), {red, consumed, f7_mode(0)}, {{VRGQ.dim(m), 1.0}});
    when(L(6), {red, consumed, f7_mode(2)}, {{VRGM.dim(m), 1.0}});
  }
  const Lin gv = VRG_[0] + VRG_[1] + VRG_[2] + VRG_[3];
  // the sequence (layer 9; the last group from layer 6)
  const FieldRef EQK = B.field("vred_at_last_group", 1);
  for (std::uint32_t j = 0; j < 16; ++j) when(L(6), {VRDK_[j], VKL_[j]}, {{EQK.dim(), 1.0}});
  LayerBuilder& l9 = L(9);
  const std::vector<Lin> more = {red, k(kVrd), one - EQK[0]};
  when(l9, more, {{NK.dim(kVrd), 1.0}});
  table(l9, {field_oh(VRDK_, 0, 16)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{NPL.dim((v[0] + 1) & 15), 1.0}, {NPH.dim((v[0] + 1) >> 4), 1.0}};
  }, more);
  when(l9, {red, k(kVrd), EQK[0]}, token_out(kVwg, 0));
  when(l9, {red, k(kVwg)}, {{NK.dim(vw(0, 0)), 1.0}});
  for (std::uint32_t m = 0; m < 3; ++m) when(l9, {red, k(vw(0, m))}, {{NK.dim(vw(0, m + 1)), 1.0}});
  when(l9, {red, k(vw(0, 3))}, {{ENDI.dim(), 1.0}});
  // the group slots (layer 8): key k, value S_0..S_7; read on the value steps over k <= last
  const FieldRef T = B.field("vred_column_sums", 8);
  LayerBuilder& l8 = L(8);
  const std::uint32_t h = l8.add_head(16, 8, Activation::Relu, Activation::Relu);
  HeadBuilder& H = l8.head(h);
  for (std::uint32_t j = 0; j < 16; ++j) {
    H.k[j] = VRDK_[j];
    Lin upto;  // [j <= last]
    for (std::uint32_t kk = j; kk < 16; ++kk) upto += VKL_[kk];
    H.q[j] = upto + gv - 1.0;
  }
  for (std::uint32_t c = 0; c < 8; ++c) {
    Lin sc;
    for (int v = 0; v < 16; ++v) sc += VRCNT_[16 * c + static_cast<std::uint32_t>(v)] * static_cast<double>(c == 7 && v >= 8 ? v - 16 : v);
    H.v[c] = sc;
    H.out.emplace_back(c, T.dim(c), 1.0);
  }
  H.beta = k(kVrd);
  // SH (f7 = SH << 2 | 1) on the value steps, and the rounding bit 2^(SH - 1) (layer 7)
  const FieldRef SHG = B.field("vred_shift", 32), RC = B.field("vred_round_bit", 8), XB = B.field("vred_bias", 1);
  LayerBuilder& l7 = L(7);
  for (std::uint32_t p = 0; p < 32; ++p) {
    SparseVec out{{SHG.dim(p), 1.0}};
    if (p >= 1) out.push_back({RC.dim((p - 1) >> 2), static_cast<double>(1u << ((p - 1) & 3))});
    when(l7, {F7X_[4 * p + 1], gv}, out);
  }
  pass(l7, gv, XB.dim());
  std::vector<Lin> X(12);
  std::vector<unsigned> max_cs(12, 0);
  for (std::uint32_t c = 0; c < 8; ++c) {
    X[c] = T[c] + RC[c];
    max_cs[c] = 1024 * 15 + 8;  // at most 1,024 words
  }
  X[7] += XB[0] * 8192.0;  // T_7 >= -8 * 1024
  X[10] = XB[0] * 14.0;    // -8,192 * 16^7 = -2^41 = 0xFE << 40 (mod 2^48)
  X[11] = XB[0] * 15.0;
  max_cs[10] = 14;
  max_cs[11] = 15;
  const auto [X2, next] = presplit("vred_sum", 8, X, max_cs);
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vred_sum", 10, X2, next, gv, &done);
  if (done != 12) throw std::logic_error("vred: the digits are not ready at layer 12");
  auto bit = [&](std::uint32_t i) { return digit_bit(DG, i); };  // of acc + 2^(SH-1) modulo 2^48
  // layer 13: r = floor(. / 2^SH)'s bits 0..31 (bit 47 above 47); ones and zeros among bits
  // 31 + SH .. 47 (SH <= 16; for SH >= 17 the result fits: |r| < 2^25)
  const FieldRef RB = B.field("vred_result_bits", 32), UZ = B.field("vred_high_bits", 2);
  LayerBuilder& l13 = L(13);
  for (std::uint32_t j = 0; j < 32; ++j)
    for (std::uint32_t p = 0; p < 32; ++p) when(l13, {SHG[p], bit(std::min(j + p, 47u))}, {{RB.dim(j), 1.0}});
  for (std::uint32_t p = 0; p <= 16; ++p) {
    Lin ones;
    for (std::uint32_t i = 31 + p; i < 48; ++i) ones += bit(i);
    l13.unit_out(l13.relu_unit(ones + SHG[p] * 17.0 - 17.0), UZ.dim(0), 1.0);
    l13.unit_out(l13.relu_unit(SHG[p] * 17.0 - static_cast<double>(p) - ones), UZ.dim(1), 1.0);
  }
  // layer 14: overflow up (r > 2^31 - 1: non-negative with a one there) and down; the nibble
  // one-hots of the value byte
  const Lin sign = bit(47);
  const FieldRef OV = B.field("vred_overflow", 2), RN = B.field("vred_byte_nibbles", 32);
  LayerBuilder& l14 = L(14);
  threshold(l14, UZ[0] - sign * 17.0, 1, OV.dim(0));
  threshold(l14, UZ[1] + sign * 17.0 - 17.0, 1, OV.dim(1));
  for (std::uint32_t m = 0; m < 4; ++m)
    for (std::uint32_t half_ = 0; half_ < 2; ++half_)
      for (std::uint32_t v = 0; v < 16; ++v) {
        Lin pre = VRG_[m] - 4.0;
        for (std::uint32_t b = 0; b < 4; ++b) {
          const Lin rb = RB[8 * m + 4 * half_ + b];
          pre += ((v >> b) & 1) ? rb : one - rb;
        }
        l14.unit_out(l14.relu_unit(pre), RN.dim(16 * half_ + v), 1.0);
      }
  // layer 15: the byte, or a byte of 2^31 - 1 / -2^31
  LayerBuilder& l15 = L(15);
  for (std::uint32_t v = 0; v < 16; ++v) {
    l15.unit_out(l15.relu_unit(RN[v] - OV[0] - OV[1]), NPL.dim(v), 1.0);
    l15.unit_out(l15.relu_unit(RN[16 + v] - OV[0] - OV[1]), NPH.dim(v), 1.0);
  }
  for (std::uint32_t m = 0; m < 4; ++m) {
    const unsigned hi = m < 3 ? 0xFF : 0x7F, lo = m < 3 ? 0x00 : 0x80;
    when(l15, {OV[0], VRG_[m]}, {{NPL.dim(hi & 15), 1.0}, {NPH.dim(hi >> 4), 1.0}});
    when(l15, {OV[1], VRG_[m]}, {{NPL.dim(lo & 15), 1.0}, {NPH.dim(lo >> 4), 1.0}});
  }
  vred_sumsq(VRGQ);
  vred_max(VRGM);
}

// VRED MAX (vector.md section 4.7): z = max_i x_i, on compile_vred()'s sequence, by all-pairs
// comparison twice: of the group's words on each VRD(k) step, of the groups' maxima on the value
// steps. Words compare as (hi, lo): hi = x >> 16 (signed) + 32,769 for a word that is there (0
// for a lane outside the span: it loses to every word), lo = x & 0xFFFF, both exact scalars; x_a
// >= x_b iff [hi_a > hi_b] + ReLU([lo_a >= lo_b] - [hi_a > hi_b] - [hi_b > hi_a]) (one unit
// per ordered pair on top of the two thresholds); a candidate wins when it is >= every other
// (a count of 63, or 15), and the winners (all equal) give the maximum's nibbles: counts of
// the winners' nibble values, then [count >= 1].
// - VRD(k) step: the lanes' words (vr_file(), layer 7); hi, lo (7's MLP, on MAX's VRD steps
//   only); the pairs' thresholds (8), the >= units (9), the winners (10), their nibble counts
//   (11), the group's maximum as nibble one-hots (12); into the slot of k (layer 13).
// - Value steps: 16 heads read the slots 0..15 (each the slot of its group, when the group is
//   <= (n - 1) >> 6; layer 13) and the same comparison over the 16 (13..17) gives the bytes of
//   the maximum (18).
void VectorUnit::vred_max(const FieldRef& VRGM) {
  const Lin red = cls(VRED);
  // [MAX's VRD step] (layer 6); also VEXP's VXM0 steps (compile_vexp(): the same lane tournament)
  const FieldRef GMX = B.field("vred_max_group_step", 1);
  GMX_ = GMX;
  when(L(6), {k(kVrd), red, f7_mode(2)}, {{GMX.dim(), 1.0}});
  const Lin gm = GMX[0];
  const Lin gvm = VRGM[0] + VRGM[1] + VRGM[2] + VRGM[3];
  auto sv = [](std::uint32_t i, std::uint32_t v) { return (i == 7 && v >= 8) ? static_cast<double>(v) - 16 : static_cast<double>(v); };
  // (hi, lo) of a word held as nibble one-hots oh(i) (16 rows each), as linear forms; hi is 0
  // when no word is there (all rows 0)
  auto hilo = [&](const std::function<Lin(std::uint32_t, std::uint32_t)>& oh) {
    Lin hi, lo;
    for (std::uint32_t i = 0; i < 8; ++i)
      for (std::uint32_t v = 0; v < 16; ++v) {
        if (i < 4) lo += oh(i, v) * (static_cast<double>(v) * static_cast<double>(1u << (4 * i)));
        else hi += oh(i, v) * (sv(i, v) * static_cast<double>(1u << (4 * (i - 4))));
        if (i == 7) hi += oh(i, v) * 32769.0;
      }
    return std::pair<Lin, Lin>{hi, lo};
  };
  // The comparison of `n` candidates whose (hi, lo) are the dims HL[2c], HL[2c + 1] (layer l's
  // input) and whose nibble one-hots are oh(c, i, v): winners (layer l + 2), their nibble
  // counts into CNT (16 i + v; layer l + 3). `gate` (one dimension) is 1 on the steps it runs.
  auto tournament = [&](const std::string& name, std::uint32_t l, std::uint32_t n, const FieldRef& HL,
                        const std::function<Lin(std::uint32_t, std::uint32_t, std::uint32_t)>& oh, const Lin& gate,
                        const FieldRef& CNT) {
    const FieldRef GT = B.field(name + "_hi_greater", n * n), LE = B.field(name + "_lo_at_least", n * n);
    LayerBuilder& la = L(l);
    for (std::uint32_t a = 0; a < n; ++a)
      for (std::uint32_t b = 0; b < n; ++b) {
        if (a == b) continue;
        threshold(la, HL[2 * a] - HL[2 * b], 1, GT.dim(n * a + b));
        threshold_if(la, HL[2 * a + 1] - HL[2 * b + 1], 0, 65535, gate, LE.dim(n * a + b));
      }
    const FieldRef WU = B.field(name + "_at_least", n);
    LayerBuilder& lb = L(l + 1);
    for (std::uint32_t a = 0; a < n; ++a)
      for (std::uint32_t b = 0; b < n; ++b)
        if (a != b) lb.unit_out(lb.relu_unit(LE[n * a + b] - GT[n * a + b] - GT[n * b + a]), WU.dim(a), 1.0);
    const FieldRef W = B.field(name + "_winner", n);
    LayerBuilder& lc = L(l + 2);
    for (std::uint32_t a = 0; a < n; ++a) {
      Lin wc = WU[a];
      for (std::uint32_t b = 0; b < n; ++b)
        if (a != b) wc += GT[n * a + b];
      threshold(lc, wc, static_cast<double>(n - 1), W.dim(a));
    }
    LayerBuilder& ld = L(l + 3);
    for (std::uint32_t a = 0; a < n; ++a)
      for (std::uint32_t i = 0; i < 8; ++i)
        for (std::uint32_t v = 0; v < 16; ++v) when(ld, {W[a], oh(a, i, v)}, {{CNT.dim(16 * i + v), 1.0}});
  };
  // the group (VRD(k) step): the lanes' (hi, lo) on MAX's VRD steps (layer 7)
  const FieldRef LHL = B.field("vred_max_lane_hilo", 128);
  LayerBuilder& l7 = L(7);
  for (std::uint32_t l = 0; l < 64; ++l) {
    const auto [hi, lo] = hilo([&](std::uint32_t i, std::uint32_t v) { return VLANE_[128 * l + 16 * i + v]; });
    constexpr double M = 131072;
    pass(l7, hi + gm * M - M, LHL.dim(2 * l));
    pass(l7, lo + gm * M - M, LHL.dim(2 * l + 1));
  }
  const FieldRef GC = B.field("vred_max_group_counts", 128);
  tournament("vred_max_lanes", 8, 64, LHL, [&](std::uint32_t a, std::uint32_t i, std::uint32_t v) { return VLANE_[128 * a + 16 * i + v]; },
             gm, GC);
  const FieldRef GOH = B.field("vred_max_group_max", 128);  // the group's maximum (layer 12)
  GOH_ = GOH;
  for (std::uint32_t r = 0; r < 128; ++r) threshold(L(12), GC[r], 1, GOH.dim(r));
  // the slots (layer 13): 16 heads, equal writes (key k, value the maximum's one-hots); head g
  // reads slot g on the value steps when g <= (n - 1) >> 6
  const FieldRef SL = B.field("vred_max_slot_reads", 16 * 128);
  LayerBuilder& l13 = L(13);
  for (std::uint32_t g = 0; g < 16; ++g) {
    const std::uint32_t h = l13.add_head(16, 128, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l13.head(h);
    for (std::uint32_t j = 0; j < 16; ++j) H.k[j] = VRDK_[j];
    Lin upto;
    for (std::uint32_t kk = g; kk < 16; ++kk) upto += VKL_[kk];
    H.q[g] = upto + gvm - 1.0;
    for (std::uint32_t r = 0; r < 128; ++r) {
      H.v[r] = GOH[r];
      H.out.emplace_back(r, SL.dim(128 * g + r), 1.0);
    }
    H.beta = gm;
  }
  // the groups' maxima (value steps): (hi, lo) (layer 13), the tournament (14..17), the byte (18)
  const FieldRef SHL = B.field("vred_max_slot_hilo", 32);
  for (std::uint32_t g = 0; g < 16; ++g) {
    const auto [hi, lo] = hilo([&](std::uint32_t i, std::uint32_t v) { return SL[128 * g + 16 * i + v]; });
    pass(l13, hi, SHL.dim(2 * g));
    pass(l13, lo, SHL.dim(2 * g + 1));
  }
  const FieldRef MC = B.field("vred_max_counts", 128);
  tournament("vred_max_groups", 14, 16, SHL, [&](std::uint32_t a, std::uint32_t i, std::uint32_t v) { return SL[128 * a + 16 * i + v]; },
             gvm, MC);
  LayerBuilder& l18 = L(18);
  for (std::uint32_t m = 0; m < 4; ++m)
    for (std::uint32_t half_ = 0; half_ < 2; ++half_)
      for (std::uint32_t v = 0; v < 16; ++v) {
        const Lin c = MC[16 * (2 * m + half_) + v] + VRGM[m] * 16.0;  // [count >= 1] on value step m
        const std::uint32_t d = half_ == 0 ? NPL.dim(v) : NPH.dim(v);
        l18.unit_out(l18.relu_unit(c - 16.0), d, 1.0);
        l18.unit_out(l18.relu_unit(c - 17.0), d, -1.0);
      }
}

// VRED SUMSQ (vector.md section 4.7): z = sat32(rnd(sum_i x_i^2, 16 + SH)), on compile_vred()'s sequence.
// - VRD(k) step: vr_file()'s square reads give R_j[i][a] = sum over the group's span of
//   s_j(w) [d_i(w) = a] (layer 8), so the group's sum of squares sum_{i,j} 16^(i+j) sum_a
//   s_i(a) R_j[i][a] is linear in them (s: a nibble's value, nibble 7 signed): column sums per
//   i + j, each biased to >= 0 with the biases' total subtracted as constant nibbles, modulo
//   2^72 (the group's sum is < 2^68); presplit() (layers 8, 9), column_digits() (10..13);
//   the 18 digits go to the slot of k (layer 14).
// - Value steps: one read of the slots 0..(n - 1) >> 6 (column sums <= 240; layer 14), plus
//   the rounding bit 2^(15 + SH), column_digits() modulo 2^76 (layers 14..16); the bits of
//   floor(. / 2^(16 + SH)) and the ones among bits 47 + SH .. 75 (17: the sum is >= 0, so the
//   result saturates only up, when one of them is set); the byte or a byte of 2^31 - 1 (18).
void VectorUnit::vred_sumsq(const FieldRef& VRGQ) {
  const Lin gq = VRQ_[0];
  const Lin gvq = VRGQ[0] + VRGQ[1] + VRGQ[2] + VRGQ[3];
  constexpr std::uint32_t kCols = 18;
  std::vector<Lin> X(kCols);
  std::vector<long long> lo(kCols, 0), hi(kCols, 0);  // bounds of the columns' values
  auto sv = [](std::uint32_t i, std::uint32_t a) { return (i == 7 && a >= 8) ? static_cast<int>(a) - 16 : static_cast<int>(a); };
  for (std::uint32_t i = 0; i < 8; ++i)
    for (std::uint32_t j = 0; j < 8; ++j) {
      Lin P;
      for (std::uint32_t a = 0; a < 16; ++a) {
        const int v = sv(i, a);
        if (v != 0) P += VRSQ_[128 * j + 16 * i + a] * static_cast<double>(v);
      }
      X[i + j] += P;
      const long long mi = i == 7 ? -8 : 0, Mi = i == 7 ? 7 : 15, mj = j == 7 ? -8 : 0, Mj = j == 7 ? 7 : 15;
      const std::array<long long, 4> pr = {mi * mj, mi * Mj, Mi * mj, Mi * Mj};
      lo[i + j] += 64 * *std::min_element(pr.begin(), pr.end());
      hi[i + j] += 64 * *std::max_element(pr.begin(), pr.end());
    }
  std::vector<unsigned> max_cs(kCols, 0);
  const unsigned __int128 mod = static_cast<unsigned __int128>(1) << (4 * kCols);
  unsigned __int128 bias_total = 0;
  for (std::uint32_t c = 0; c < kCols; ++c) {
    const long long bias = -lo[c];
    if (bias > 0) X[c] += gq * static_cast<double>(bias);
    max_cs[c] = static_cast<unsigned>(hi[c] + bias);
    bias_total = (bias_total + (static_cast<unsigned __int128>(bias) << (4 * c))) % mod;
  }
  const unsigned __int128 konst = (mod - bias_total) % mod;  // -sum bias_c 16^c modulo 2^72
  for (std::uint32_t c = 0; c < kCols; ++c) {
    const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
    if (kc == 0) continue;
    X[c] += gq * static_cast<double>(kc);
    max_cs[c] += kc;
  }
  const auto [X2, next] = presplit("vred_sumsq", 8, X, max_cs);
  std::uint32_t done = 0;
  const FieldRef DG = column_digits("vred_sumsq_group", 10, X2, next, gq, &done);
  if (done != 13) throw std::logic_error("vred_sumsq: the group's digits are not ready at layer 13");
  // the group slots (layer 14): key k, value the 18 digits; read on the value steps over k <= last
  const FieldRef T = B.field("vred_sumsq_column_sums", kCols);
  LayerBuilder& l14 = L(14);
  const std::uint32_t h = l14.add_head(16, kCols, Activation::Relu, Activation::Relu);
  HeadBuilder& H = l14.head(h);
  for (std::uint32_t j = 0; j < 16; ++j) {
    H.k[j] = VRDK_[j];
    Lin upto;
    for (std::uint32_t kk = j; kk < 16; ++kk) upto += VKL_[kk];
    H.q[j] = upto + gvq - 1.0;
  }
  for (std::uint32_t c = 0; c < kCols; ++c) {
    H.v[c] = oh_value(field_oh(DG, 16 * c, 16));
    H.out.emplace_back(c, T.dim(c), 1.0);
  }
  H.beta = gq;
  // SH (f7 = SH << 2) on the value steps, and the rounding bit 2^(15 + SH) (layer 7)
  constexpr std::uint32_t kCols2 = 19;  // the total is <= 1,024 * 2^62 = 2^72
  const FieldRef SHG = B.field("vred_sumsq_shift", 32), RC = B.field("vred_sumsq_round_bit", kCols2);
  for (std::uint32_t p = 0; p < 32; ++p)
    when(L(7), {F7X_[4 * p], gvq}, {{SHG.dim(p), 1.0}, {RC.dim((15 + p) >> 2), static_cast<double>(1u << ((15 + p) & 3))}});
  std::vector<Lin> Y(kCols2);
  std::vector<unsigned> ymax(kCols2, 0);
  for (std::uint32_t c = 0; c < kCols2; ++c) {
    if (c < kCols) Y[c] += T[c];
    Y[c] += RC[c];
    ymax[c] = (c < kCols ? 16 * 15 : 0) + 8;
  }
  const FieldRef DA = column_digits("vred_sumsq_acc", 14, Y, ymax, gvq, &done);
  if (done != 16) throw std::logic_error("vred_sumsq: the sum's digits are not ready at layer 16");
  auto bit = [&](std::uint32_t i) { return digit_bit(DA, i); };  // of acc + 2^(15 + SH) (< 2^76)
  // layer 17: the result's bits 0..31 and the ones among bits 47 + SH .. 75
  const FieldRef RB = B.field("vred_sumsq_result_bits", 32), U = B.field("vred_sumsq_high_ones", 1);
  LayerBuilder& l17 = L(17);
  for (std::uint32_t j = 0; j < 32; ++j)
    for (std::uint32_t p = 0; p < 32; ++p)
      if (j + 16 + p < 4 * kCols2) when(l17, {SHG[p], bit(j + 16 + p)}, {{RB.dim(j), 1.0}});
  for (std::uint32_t p = 0; 47 + p < 4 * kCols2; ++p) {
    Lin ones;
    for (std::uint32_t i = 47 + p; i < 4 * kCols2; ++i) ones += bit(i);
    const double span = 4.0 * kCols2 - 47.0;  // >= the number of those bits
    l17.unit_out(l17.relu_unit(ones + SHG[p] * span - span), U.dim(), 1.0);
  }
  // layer 18: the byte (not when a bit above is set), or a byte of 2^31 - 1
  LayerBuilder& l18 = L(18);
  const Lin one = Lin::constant(1);
  for (std::uint32_t m = 0; m < 4; ++m) {
    for (std::uint32_t half_ = 0; half_ < 2; ++half_)
      for (std::uint32_t v = 0; v < 16; ++v) {
        Lin pre = VRGQ[m] - 4.0 - U[0];
        for (std::uint32_t b = 0; b < 4; ++b) {
          const Lin rb = RB[8 * m + 4 * half_ + b];
          pre += ((v >> b) & 1) ? rb : one - rb;
        }
        l18.unit_out(l18.relu_unit(pre), half_ == 0 ? NPL.dim(v) : NPH.dim(v), 1.0);
      }
    const unsigned sat = m < 3 ? 0xFF : 0x7F;
    const std::uint32_t a = l18.relu_unit(U[0] + VRGQ[m] * 30.0 - 30.0), b = l18.relu_unit(U[0] + VRGQ[m] * 30.0 - 31.0);
    for (const std::uint32_t d : {NPL.dim(sat & 15), NPH.dim(sat >> 4)}) {
      l18.unit_out(a, d, 1.0);
      l18.unit_out(b, d, -1.0);
    }
  }
}

}  // namespace lockstep::chip::rv32::detail
