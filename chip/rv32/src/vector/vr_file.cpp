// VR and the word streams (vector.md sections 2, 5): the stream slots, VR's read ports and
// banked write keys (index sums), the 1,024-word register file in layer 7 with every op's write
// values, and the lane and span heads the reductions read.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

FieldRef VectorUnit::gated_copy(std::uint32_t l, const std::string& name, const std::vector<FieldRef>& srcs, const Lin& gate) {
  const FieldRef out = B.field(name, 128);
  for (std::uint32_t i = 0; i < 128; ++i) {
    Lin x;
    for (const FieldRef& f : srcs) x += f[i];
    L(l).unit_out(L(l).relu_unit(x + gate - 1.0), out.dim(i), 1.0);
  }
  return out;
}

OH VectorUnit::stream_target_q() const {
  OH q(4);
  q[0] += k(kVwg);
  for (std::uint32_t j = 0; j < 4; ++j) {
    for (std::uint32_t m = 0; m < 3; ++m) q[j] += k(vw(j, m));
    if (j < 3) q[j + 1] += k(vw(j, 3));
  }
  return q;
}

Lin VectorUnit::stream_word_end() const {
  Lin l;
  for (std::uint32_t q = 0; q < 4; ++q) l += k(vw(q, 3));
  return l;
}

void VectorUnit::index_sum(const std::string& name, const FieldRef& gslot, const OH& x0, const OH& x1, const OH& x2, const OH& q,
               const std::vector<Lin>& gates, const KeyOut& out) {
  const OH glo = field_oh(gslot, 0, 16), ghi = field_oh(gslot, 16, 16);
  sum_pieces(name, {x0, masked(glo, 3), q}, [](const std::vector<unsigned>& v) { return v[0] + 4 * v[1] + v[2]; },
             oh_value(x0) + oh_value(masked(glo, 3)) * 4.0 + oh_value(q),
             {x1, masked(glo, 0xC), masked(ghi, 3)}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 2) + ((v[2] & 3) << 2); },
             {x2, masked(ghi, 0xC)}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 2); }, gates, out);
}

void VectorUnit::index_sum_nibbles(const std::string& name, const OH& x0, const OH& x1, const OH& x2, const OH& e0, const OH& e1,
                       const OH& e2, const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base) {
  auto add2 = [](const std::vector<unsigned>& v) { return v[0] + v[1]; };
  sum_pieces(name, {x0, e0}, add2, oh_value(x0) + oh_value(e0), {x1, e1}, add2, {x2, e2}, add2, gates, out, base);
}

void VectorUnit::sum_pieces(const std::string& name, const std::vector<OH>& parts0, const std::function<unsigned(const std::vector<unsigned>&)>& f0,
                const Lin& lin0, const std::vector<OH>& parts1, const std::function<unsigned(const std::vector<unsigned>&)>& f1,
                const std::vector<OH>& parts2, const std::function<unsigned(const std::vector<unsigned>&)>& f2,
                const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base) {
  const bool banked = out.lo.size() == 2;
  LayerBuilder& l5 = L(base);
  const FieldRef PAR = B.field(name + "_parity", 2);
  table(l5, parts0, [&](const std::vector<unsigned>& v) {
    const unsigned s0 = f0(v);
    SparseVec o{{out.lo[banked ? (s0 & 1) : 0].dim(s0 & 15), 1.0}};
    if (banked) o.push_back({PAR.dim(s0 & 1), 1.0});
    return o;
  }, gates);
  const FieldRef C1 = B.field(name + "_c1", 1), T1 = B.field(name + "_t1", 31), T2 = B.field(name + "_t2", 7);
  threshold(l5, lin0, 16, C1.dim());
  table(l5, parts1, [&](const std::vector<unsigned>& v) { return SparseVec{{T1.dim(f1(v)), 1.0}}; }, gates);
  table(l5, parts2, [&](const std::vector<unsigned>& v) { return SparseVec{{T2.dim(f2(v)), 1.0}}; }, gates);
  const Lin one = Lin::constant(1);
  std::vector<OH> parts = {field_oh(T1, 0, 31), OH{one - C1[0], C1[0]}, field_oh(T2, 0, 7)};
  if (banked) parts.push_back(field_oh(PAR, 0, 2));
  table(L(base + 1), parts, [&](const std::vector<unsigned>& v) {
    const unsigned s1 = v[0] + v[1];
    return SparseVec{{out.hi[banked ? v[3] : 0].dim((s1 & 15) + 16 * ((v[2] + (s1 >> 4)) & 3)), 1.0}};
  });
  last_parity_ = PAR;
}

void VectorUnit::muls_index(const OH& qt, const Lin& reads, const KeyOut& out) {
  const FieldRef ES = B.field("vew_muls_element", 36);  // e >> GS: nibbles 0, 1 (16 each), 2 (4)
  const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
  struct Piece {
    OH oh;
    unsigned lo, width;
  };
  const std::array<Piece, 3> pieces = {Piece{qt, 0, 2}, Piece{glo, 2, 4}, Piece{ghi, 6, 4}};
  const OH f7lo = field_oh(VIN, 0, 16), f7hi = field_oh(VIN, 16, 16);  // inst nibbles 6, 7
  for (unsigned gs = 0; gs <= 6; ++gs) {
    // VEW, MODE = 2, GS = gs (f7 = inst[31:25]: MODE = inst[26:25], GS = inst[29:27])
    const std::vector<Lin> gates = {reads, PRE[VEW], masked(f7lo, 0xE)[4 | ((gs & 1) << 3)], masked(f7hi, 3)[gs >> 1]};
    for (unsigned n = 0; n < 3; ++n) {
      const unsigned first = gs + 4 * n, bits = n < 2 ? 4 : 2;  // bits first .. first + bits - 1 of e
      std::vector<OH> parts;
      std::vector<unsigned> masks, los;
      for (const Piece& p : pieces) {
        unsigned mask = 0;
        for (unsigned b = 0; b < p.width; ++b)
          if (p.lo + b >= first && p.lo + b < first + bits) mask |= 1u << b;
        if (mask == 0) continue;
        OH o(p.oh.size());
        for (unsigned j = 0; j < p.oh.size(); ++j) o[j & mask] += p.oh[j];
        parts.push_back(o);
        masks.push_back(mask);
        los.push_back(p.lo);
      }
      const std::uint32_t base = 16 * n;
      if (parts.empty()) {  // e >> GS has no bits here: the nibble is 0
        when(L(5), gates, {{ES.dim(base), 1.0}});
        continue;
      }
      table(L(5), parts, [&, first, bits, base](const std::vector<unsigned>& v) {
        unsigned e = 0;
        for (std::size_t i = 0; i < v.size(); ++i) e |= (v[i] & masks[i]) << los[i];
        return SparseVec{{ES.dim(base + ((e >> first) & ((1u << bits) - 1))), 1.0}};
      }, gates);
    }
  }
  index_sum_nibbles("vr_muls_index", vindex(2, {VEW}, 0), field_oh(ES, 0, 16),
                    field_oh(ES, 16, 16), field_oh(ES, 32, 4), {reads, PRE[VEW]}, out, 6);
}

// VR (vector.md section 2): 1,024 words as nibble one-hots (128 rows), in layer 7, as two read
// ports x and y, each two heads by parity (bank b holds the words w = 2 c + b in column c), all
// with the same writes and initialised from .lockstep.vreg (a missing or short section leaves
// the rest zero). Banks let VEW ROT write its pair's two words in one step.
// - Word streams: a word is written when its last byte (VW_q3) is consumed: bytes 0..2 from the
//   byte slots, byte 3 from the token; the ports read the next value's operands on the same
//   step, after the write. VEW: read x at a + e, y at b + e (MULS: b + (e >> GS); ROT: a + (e ^ 1),
//   the pair's other word), write dst + e. ROT keeps the pair's first word z_{2k} in slots and
//   writes it with z_{2k+1} (at dst + e - 1, the other bank), so that an in-place ROT still
//   reads the old x_{2k} for z_{2k+1}.
// - VLD writes its element i = 4 g + m (vector.md section 4.8) at dst + i when VLB_m is consumed
//   in the element phase, with the value vld_product() computes.
void VectorUnit::vr_file() {
  VWBS = B.field("vw_byte_slots", 96);
  const OH qt = stream_target_q();
  Lin reads_k;
  for (const Lin& l : qt) reads_k += l;
  // one dimension each (layer 0), so that gates cost one term: the next token is a value byte
  // of a word stream; the consumed token ends a word
  const FieldRef SR = B.field("stream_value_step", 1);
  pass(L(0), reads_k, SR.dim());
  const Lin reads = SR[0];
  SREAD_ = reads;
  const Lin ends = stream_word_end();
  const Lin ends_odd = k(vw(1, 3)) + k(vw(3, 3)), ends_even = k(vw(0, 3)) + k(vw(2, 3));
  Lin vw_low;  // VW_qm, m < 3
  for (std::uint32_t q = 0; q < 4; ++q)
    for (std::uint32_t m = 0; m < 3; ++m) vw_low += k(vw(q, m));
  block_slots(L(0), "vw_bytes", 3, [](std::uint32_t m) { return std::vector<std::uint32_t>{vw(0, m), vw(1, m), vw(2, m), vw(3, m)}; },
              vw_low, ends, VWBS);
  // the bytes of the last even element (q = 0, 2), read where an odd element ends
  const FieldRef PEB = B.field("vw_even_word_slots", 128);
  Lin vw_even;
  for (std::uint32_t m = 0; m < 4; ++m) vw_even += k(vw(0, m)) + k(vw(2, m));
  block_slots(L(0), "vw_even_bytes", 4, [](std::uint32_t m) { return std::vector<std::uint32_t>{vw(0, m), vw(2, m)}; }, vw_even,
              ends_odd, PEB);
  OH qw(4), qp(4);  // the element that ends (q); ROT's pending first word of the pair (q - 1)
  for (std::uint32_t q = 0; q < 4; ++q) qw[q] = k(vw(q, 3));
  qp[0] = k(vw(1, 3));
  qp[2] = k(vw(3, 3));
  OH qx(4);  // ROT: the pair's other element, e ^ 1
  for (std::uint32_t q = 0; q < 4; ++q) qx[q] = qt[q ^ 1];
  const Lin vew = PRE[VEW];
  const OH f7lo = field_oh(VIN, 0, 16);  // inst nibble 6 on custom-1 words (0 elsewhere)
  const Lin muls = masked(f7lo, 6)[4], rot = masked(f7lo, 6)[6];  // f7's MODE = 2, 3 (on a VEW word)
  const FieldRef NX0 = B.field("vr_x_key_lo", 16), NX12 = B.field("vr_x_key_hi", 64);
  const FieldRef NY0 = B.field("vr_y_key_lo", 16), NY12 = B.field("vr_y_key_hi", 64);
  const KeyOut kx{{NX0}, {NX12}}, ky{{NY0}, {NY12}};
  KeyOut kw;
  for (std::uint32_t b = 0; b < 2; ++b) {
    kw.lo.push_back(B.field("vr_w_key_lo_bank" + std::to_string(b), 16));
    kw.hi.push_back(B.field("vr_w_key_hi_bank" + std::to_string(b), 64));
  }
  const Lin one = Lin::constant(1);
  const Lin vew_vfn = vew + PRE[VFN];  // VFN: src = B, dst = A, like VEW's a and dst
  index_sum("vr_x_index", VWGS, vindex(1, {VEW, VFN}, 1), qt, {reads, vew_vfn}, kx);  // a + e
  index_sum("vr_y_index", VWGS, vindex(2, {VEW}, 0), qt, {reads, vew, one - muls - rot},
            ky);  // b + e
  const FieldRef NS0 = B.field("vr_s_key_lo", 16), NS12 = B.field("vr_s_key_hi", 64);
  muls_index(qt, reads, KeyOut{{NS0}, {NS12}});  // MULS: b + (e >> GS), for the port of layer 8
  index_sum("vr_rot_index", VWGS, vindex(1, {VEW}, 1), qx, {reads, vew, rot}, ky);  // a + (e ^ 1)
  index_sum("vr_w_index", VWGS, vindex(1, {VEW, VFN, VRED}, 0), qw, {ends, vew_vfn + PRE[VRED]},
            kw);  // dst + e (VRED: dst, e = 0)
  const FieldRef PARW = last_parity_;
  index_sum("vr_pending_index", VWGS, vindex(1, {VEW}, 0), qp, {ends_odd, vew, rot},
            kw);  // ROT: dst + e - 1
  const FieldRef PARP = last_parity_;
  // VEXP (compile_vexp()): the scores s = VR[src + e] on port x (e < 512); the writes p -> dst + e (e <
  // 512) and S_g -> sums + g (e = 512 + g: the VWG slot with g' - 128, i.e. ghi 8 -> 0)
  const Lin ghi8 = VWGS[16 + 8];
  index_sum("vexp_x_index", VWGS, vindex(1, {VEXP}, 1), qt, {reads, PRE[VEXP]}, kx);  // src + e
  index_sum("vexp_w_index", VWGS, vindex(1, {VEXP}, 0), qw, {ends, PRE[VEXP], one - ghi8},
            kw);  // dst + e
  const FieldRef PARX = last_parity_;
  const FieldRef XWG = B.field("vexp_sum_slot", 32);  // the VWG slot in the sums' phase, g' - 128
  for (std::uint32_t v = 0; v < 16; ++v) when(L(1), {VWGS[v], ghi8}, {{XWG.dim(v), 1.0}});
  pass(L(1), ghi8, XWG.dim(16));
  index_sum("vexp_sum_index", XWG, vindex(2, {VEXP}, 0), qw, {ends, PRE[VEXP], ghi8},
            kw);  // sums + (e - 512)
  const FieldRef PARS = last_parity_;
  // VLD: dst = X(rs2) & 0xFFFF, element i = 4 g + m (g: compile_vld()'s VLG slot)
  OH qv(4);
  for (std::uint32_t m = 0; m < 4; ++m) qv[m] = k(kVlb0 + m);
  const Lin vlb = vlb_any(), seen = VGS[32];
  index_sum("vr_vld_index", VGS, vindex(2, {VLD}, 0), qv, {vlb, seen, PRE[VLD]}, kw);
  // VQ (compile_vq()): x_j = VR[src + j] on port x, j = 4 g + m the element of the next value byte
  // (consuming VLG(g): m = 0; VLB_{m-1}: m)
  OH qr(4);
  qr[0] = k(kVlg);
  for (std::uint32_t m = 1; m < 4; ++m) qr[m] = k(kVlb0 + m - 1);
  VQR_ = B.field("vq_value_read", 1);
  pass(L(0), qr[0] + qr[1] + qr[2] + qr[3], VQR_.dim());
  index_sum("vr_vq_index", VGS, vindex(1, {VQ}, 1), qr, {VQR_[0], PRE[VQ]}, kx);  // src + j
  // VMAT write mode (compile_vmat()): y_r -> dst + r when VY3 is consumed, r = 256 h + p (the VMC and
  // VMH slots; r < 1,024 where the write is valid, so h <= 3)
  OH h2(4);
  h2[0] = one;  // h = 0: the slot is empty (reset by PCL; VMH's payload is >= 1)
  for (std::uint32_t v = 1; v < 16; ++v) h2[0] -= HSN_[v];
  h2[0] -= HSN_[16 + 1];
  for (std::uint32_t v = 1; v < 4; ++v) h2[v] = HSN_[v];
  index_sum_nibbles("vmat_w_index", vindex_of(vmat_chunk_port(1), 0), field_oh(MCS_, 0, 16),
                    field_oh(MCS_, 16, 16), h2, {k(kVy0 + 3), PRE[VMAT]}, kw);  // dst + r
  const FieldRef PARM = last_parity_;
  // VMATR K mode (compile_vmatr()): the element e = 4 g + q that ends -> dst + 64 h + t (t = g >> 1, h =
  // 4 (g & 1) + q)
  {
    const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
    const std::array<OH, 3> dst = vindex(1, {VMATR}, 0);
    sum_pieces("vmatr_w_index", {dst[0], masked(glo, 0xE), masked(ghi, 1)},
               [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1) + ((v[2] & 1) << 3); },
               oh_value(dst[0]) + oh_value(masked(glo, 0xE)) * 0.5 + oh_value(masked(ghi, 1)) * 8.0,
               {dst[1], masked(ghi, 6), qw}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1) + (v[2] << 2); },
               {dst[2], masked(glo, 1)}, [](const std::vector<unsigned>& v) { return v[0] + v[1]; },
               {ends, PRE[VMATR], masked(field_oh(VIN, 0, 16), 2)[0]}, kw);
  }
  const FieldRef PARK = last_parity_;
  index_sum("vmatr_v_w_index", VWGS, vindex(1, {VMATR}, 0), qw,
            {ends, PRE[VMATR], masked(field_oh(VIN, 0, 16), 2)[2]}, kw);  // VMATR V: dst + e
  const FieldRef PARV = last_parity_;
  const FieldRef VAL = vld_product();
  // the words that are written (layer 6): the stream's word (byte slots and the VW_q3 token's
  // payload) in the bank of its index, ROT's pending word in the other, or VLD's word
  const FieldRef VW3 = B.field("vw3_payload_nibbles", 32);
  for (std::uint32_t q = 0; q < 4; ++q)
    for (std::uint32_t p = 0; p < 256; ++p) {
      B.embed(256 * vw(q, 3) + p, VW3.dim(p & 15), 1);
      B.embed(256 * vw(q, 3) + p, VW3.dim(16 + (p >> 4)), 1);
    }
  std::array<FieldRef, 2> VB;
  for (std::uint32_t b = 0; b < 2; ++b) {
    VB[b] = B.field("vr_write_value_bank" + std::to_string(b), 128);
    for (std::uint32_t i = 0; i < 128; ++i) {
      when(L(6), {i < 96 ? VWBS[i] : VW3[i - 96], PARW[b]}, {{VB[b].dim(i), 1.0}});
      when(L(6), {PEB[i], PARP[b]}, {{VB[b].dim(i), 1.0}});
      when(L(6), {i < 96 ? VWBS[i] : VW3[i - 96], PARX[b]}, {{VB[b].dim(i), 1.0}});
      when(L(6), {i < 96 ? VWBS[i] : VW3[i - 96], PARS[b]}, {{VB[b].dim(i), 1.0}});
      when(L(6), {i < 96 ? VYB_[i] : VY3N_[i - 96], PARM[b]}, {{VB[b].dim(i), 1.0}});
      when(L(6), {i < 96 ? VWBS[i] : VW3[i - 96], PARK[b]}, {{VB[b].dim(i), 1.0}});
      when(L(6), {i < 96 ? VWBS[i] : VW3[i - 96], PARV[b]}, {{VB[b].dim(i), 1.0}});
    }
  }
  // the value steps of ROT and of VFN's functions, one dimension each (layer 6; from f7's
  // custom-1 copy, so that the tables they gate in layers 7.. have a one-term gate)
  // and the same on a word's first value step only (byte 0 is next: VWG or VW_q3, q < 3,
  // consumed), where those ops form the whole word; the other three steps take its digits from a
  // slot (hold_digits(); issue 30's lever 2)
  const FieldRef GV = B.field("vector_value_steps", 3), GV1 = B.field("vector_first_value_steps", 3);
  const OH f7m = masked(f7lo, 0xE), f7h = masked(field_oh(VIN, 16, 16), 1);
  TM_ = OH(4);  // the next token is value byte m of a word: VWG or VW_q3 (q < 3), VW_q(m-1) consumed
  for (std::uint32_t q = 0; q < 4; ++q) {
    if (q < 3) TM_[0] += k(vw(q, 3));
    for (std::uint32_t m = 1; m < 4; ++m) TM_[m] += k(vw(q, m - 1));
  }
  TM_[0] += k(kVwg);
  SFIRST_ = TM_[0];
  for (const bool first : {false, true}) {
    const FieldRef& g = first ? GV1 : GV;
    auto conds = [&](std::vector<Lin> c) {
      c.push_back(reads);
      if (first) c.push_back(SFIRST_);
      return c;
    };
    when(L(6), conds({PRE[VEW], rot}), {{g.dim(0), 1.0}});
    when(L(6), conds({PRE[VFN], f7m[0] + f7m[2], f7h[0]}), {{g.dim(1), 1.0}});
    when(L(6), conds({PRE[VFN], f7m[4], f7h[0]}), {{g.dim(2), 1.0}});
  }
  GROT_ = GV[0];
  GVFN_ = GV[1];
  GSILU_ = GV[2];
  GROT1_ = GV1[0];
  GVFN1_ = GV1[1];
  GSILU1_ = GV1[2];
  const FieldRef WR = B.field("vr_write", 1);
  when(L(6), {ends_odd, cls(VEW) + cls(VFN)}, {{WR.dim(), 1.0}});
  when(L(6), {ends_even, cls(VEW), one - rot}, {{WR.dim(), 1.0}});  // ROT: with the pair's second word
  when(L(6), {ends_even, cls(VFN)}, {{WR.dim(), 1.0}});
  when(L(6), {k(vw(0, 3)), cls(VRED)}, {{WR.dim(), 1.0}});  // VRED's one word z
  when(L(6), {ends, cls(VEXP)}, {{WR.dim(), 1.0}});         // VEXP's p and S_g
  when(L(6), {vlb, seen, cls(VLD)}, {{WR.dim(), 1.0}});
  when(L(6), {k(kVy0 + 3), cls(VMAT), f7_pred([](unsigned x) { return (x & 8) == 0; })}, {{WR.dim(), 1.0}});  // VMAT write mode
  when(L(6), {ends, cls(VMATR)}, {{WR.dim(), 1.0}});  // VMATR K and V
  VRX = B.field("vr_x", 128);
  VRY = B.field("vr_y", 128);
  VRYS = B.field("vr_y_muls", 128);
  // A head in `layer` holding the `count` words w = first + step c (column c; all of one parity,
  // so that the banked write keys address them), written like every copy of VR and initialised
  // from .lockstep.vreg; it reads with query q(w) (activation act_q) into out[base .. base + 128).
  auto vr_head = [&](std::uint32_t layer, const std::string& name, std::uint32_t first, std::uint32_t step,
                     std::uint32_t count, const std::function<Lin(std::uint32_t)>& q, Activation act_q,
                     const FieldRef& out, std::uint32_t base) {
    LayerBuilder& lh = L(layer);
    const std::uint32_t b = first & 1, h = lh.add_head(count, 128, Activation::Relu, act_q);
    HeadBuilder& H = lh.head(h);
    for (std::uint32_t c = 0; c < count; ++c) {
      const std::uint32_t w = first + step * c;
      H.q[c] = q(w);
      H.k[c] = kw.lo[b][w & 15] + kw.hi[b][w >> 4] - 1.0;
    }
    for (std::uint32_t i = 0; i < 128; ++i) {
      H.v[i] = VB[b][i] + VAL[i];
      H.out.emplace_back(i, out.dim(base + i), 1.0);
    }
    H.beta = WR[0];
    for (std::uint32_t m = 0; m < 4; ++m) {  // byte m of word first + step c: section byte 4 (first + step c) + m
      Initialiser in;
      in.name = name + "_byte" + std::to_string(m);
      in.layer = layer;
      in.head = h;
      in.row = 32 * m;
      in.source = ByteSourceKind::Section;
      in.section = ".lockstep.vreg";
      in.optional = true;
      in.offset = 4 * first + m;
      in.stride = 4 * step;
      in.length = count;
      in.encoding = ByteEncoding::Nibbles;
      in.bytes_per_column = 1;
      B.initialiser(in);
    }
  };
  // bank b of a read port (word 2 c + b in column c)
  auto bank = [&](std::uint32_t layer, const std::string& name, std::uint32_t b, const std::function<Lin(std::uint32_t)>& q,
                  const FieldRef& out, Activation act_q = Activation::Relu, std::uint32_t base = 0) {
    vr_head(layer, name + "_bank" + std::to_string(b), b, 2, 512, q, act_q, out, base);
  };
  for (const auto& [N0, N12, out, name, layer] :
       {std::tuple{NX0, NX12, VRX, "vr_port_x", 7u}, std::tuple{NY0, NY12, VRY, "vr_port_y", 7u},
        std::tuple{NS0, NS12, VRYS, "vr_port_s", 8u}})
    for (std::uint32_t b = 0; b < 2; ++b)
      bank(layer, name, b, [&, N0 = N0, N12 = N12](std::uint32_t w) { return N0[w & 15] + N12[w >> 4] - 1.0; }, out);
  // VMATR V's reads (compile_vmatr_v()): one head per register c and parity b, into VVP_'s block c & 7
  for (std::uint32_t c = 0; c < 16; ++c)
    for (std::uint32_t b = 0; b < 2; ++b)
      vr_head(7, "vr_register" + std::to_string(c) + "_bank" + std::to_string(b), 64 * c + b, 2, 32, VVQ_, Activation::Relu,
              VVP_, 128 * (c & 7));
  // VRED's span read (compile_vred()): the words of group k's span, [lo, hi) (VSPAN_, layer 6), both
  // banks into one field: per nibble i and value v, the number of words of the span whose
  // nibble i is v (<= 64)
  VRCNT_ = B.field("vred_nibble_counts", 128);
  for (std::uint32_t b = 0; b < 2; ++b) bank(7, "vr_span", b, [&](std::uint32_t w) { return VSPAN_[w]; }, VRCNT_);
  // VRED SUMSQ (compile_vred()): 64 lane heads (lane l holds the words 64 c + l), read with the span
  // mask (a group's span has at most one word per lane): the group's words side by side
  // (layer 7); then, per nibble j, the query q_j(w) = s_j(w), word w's nibble j (nibble 7
  // signed) where w is in the span (layer 7's MLP, on SUMSQ's VRD steps only), and 8 heads
  // per bank (layer 8) reading with it: R_j[i][a] = sum over the span of s_j(w) [d_i(w) = a],
  // so that the sum of squares is linear in them (a read is linear in its query).
  VLANE_ = B.field("vr_lanes", 64 * 128);
  for (std::uint32_t l = 0; l < 64; ++l)
    vr_head(7, "vr_lane" + std::to_string(l), l, 64, 16, [&](std::uint32_t w) { return VSPAN_[w]; }, Activation::Relu, VLANE_,
            128 * l);
  const FieldRef WQ = B.field("vred_square_queries", 8 * 1024);
  LayerBuilder& l7 = L(7);
  for (std::uint32_t w = 0; w < 1024; ++w) {
    const std::uint32_t l = w & 63;
    for (std::uint32_t j = 0; j < 8; ++j) {
      Lin pos, neg;
      for (std::uint32_t v = 0; v < 16; ++v) {
        const Lin d = VLANE_[128 * l + 16 * j + v];
        if (j == 7 && v >= 8) neg += d * static_cast<double>(16 - v);
        else pos += d * static_cast<double>(v);
      }
      const Lin on = VSPAN_[w] * 16.0 + VRQ_[0] * 16.0 - 32.0;
      l7.unit_out(l7.relu_unit(pos + on), WQ.dim(1024 * j + w), 1.0);
      if (j == 7) l7.unit_out(l7.relu_unit(neg + on), WQ.dim(1024 * j + w), -1.0);
    }
  }
  VRSQ_ = B.field("vred_square_reads", 8 * 128);
  for (std::uint32_t j = 0; j < 8; ++j)
    for (std::uint32_t b = 0; b < 2; ++b)
      bank(8, "vr_square" + std::to_string(j), b, [&, j](std::uint32_t w) { return WQ[1024 * j + w]; }, VRSQ_,
           Activation::Identity, 128 * j);
}

Lin VectorUnit::f7_mode(unsigned mode) const {  // [f7 & 3 = mode] on custom-1 words (F7X_, layer 5)
  Lin l;
  for (unsigned x = 0; x < 128; ++x)
    if ((x & 3) == mode) l += F7X_[x];
  return l;
}

// The word streams' VWG slot (layer 0): g of the last VWG(g), read on word-stream steps.
void VectorUnit::vwg_slot() {
  VWGS = B.field("vwg_slot", 32);
  Lin stream = k(kVwg);  // any word-stream token
  for (std::uint32_t j = 0; j < 16; ++j) stream += k(kVw00 + j);
  slot_head(L(0), 1, [&](std::uint32_t) { return k(kVwg); }, [&](std::uint32_t r) { return PN[r]; }, VWGS, stream);
}

Lin VectorUnit::f7_pred(const std::function<bool(unsigned)>& pred) const {
  Lin l;
  for (unsigned x = 0; x < 128; ++x)
    if (pred(x)) l += F7X_[x];
  return l;
}

Lin VectorUnit::payload_bit(std::uint32_t b) const {
  Lin bit;
  for (std::uint32_t v = 0; v < 16; ++v)
    if ((v >> (b & 3)) & 1) bit += PN[(b < 4 ? 0 : 16) + v];
  return bit;
}

void VectorUnit::section_init(const std::string& name, std::uint32_t layer, std::uint32_t head, std::uint32_t row,
                  const std::string& section, std::uint64_t offset, std::uint32_t stride, std::uint64_t length,
                  ByteEncoding enc, std::uint32_t bytes_per_column) {
  Initialiser in;
  in.name = name;
  in.layer = layer;
  in.head = head;
  in.row = row;
  in.source = ByteSourceKind::Section;
  in.section = section;
  in.optional = true;
  in.offset = offset;
  in.stride = stride;
  in.length = length;
  in.encoding = enc;
  in.bytes_per_column = bytes_per_column;
  B.initialiser(in);
}

}  // namespace lockstep::chip::rv32::detail
