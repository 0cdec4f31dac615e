// ECALL write (isa.md section 5; trace.md section 4.5): the buffer check [a1, a1 + len) in RAM
// and the write's byte stream ([OIH] OI OUT/ERR per byte) from the RAM copy of layer 15.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// ECALL write buffer check (isa.md section 5): [a1, a1 + len) inside RAM, as a 33-bit sum of
// 16-bit halves (every value < 2^18).
void Machine::write_buffer_check() {
  const Lin alo = half(RA1, 0), ahi = half(RA1, 1), llo = half(RA2, 0), lhi = half(RA2, 1);
  WK = B.field("wbuf_carry", 1);
  threshold(L(6), alo + llo, 65536, WK.dim());
  WSH = B.field("wbuf_checks", 4);  // [s_hi <= 16], [s_hi >= 17], [s_hi >= 18], [s_lo' >= 1]
  const Lin shi = ahi + lhi + WK[0];
  pass(L(7), cls(ECALL), WSH.dim(0));
  threshold(L(7), shi, 17, WSH.dim(0), -1);
  threshold(L(7), shi, 17, WSH.dim(1));
  threshold(L(7), shi, 18, WSH.dim(2));
  threshold(L(7), alo + llo - WK[0] * 65536.0, 1, WSH.dim(3));
  WOK = B.field("wbuf_ok", 1);
  WBAD = B.field("wbuf_bad", 1);
  // ok = a1 >= 0x10000 and (s_hi <= 16 or (s_hi == 17 and s_lo' == 0))
  threshold(L(7), ahi, 1, WOK.dim());  // a1 >= 0x10000
  when(L(8), {WOK[0], WSH[0]}, {{WBAD.dim(), -1.0}});
  when(L(8), {WOK[0], WSH[1] - WSH[2], Lin::constant(1) - WSH[3]}, {{WBAD.dim(), -1.0}});
  pass(L(8), cls(ECALL), WBAD.dim());
}

// ECALL write (trace.md section 4.5): per byte i, [OIH(i >> 8)] OI(i & 0xFF) OUT/ERR(byte);
// then W(len). i is on the bus (OI/OIH slots); the byte is read from a second RAM port
// (layer 15) at a1 + i, computed by the next-pc adder on the OI step.
void Machine::write_bytes() {
  const Lin outc = k(kOut) + k(kErr);
  // last byte: i + 1 = len (len <= 65,535: nibbles 4..7 of a2 are 0)
  EQL = B.field("oi_next_eq_len", 1);
  for (std::uint32_t n = 0; n < 4; ++n)
    for (unsigned v = 0; v < 16; ++v) when(L(6), {INC[16 * n + v], nib(RA2, n)[v]}, {{EQL.dim(), 1.0}});
  LAST = B.field("oi_last", 1);
  threshold(L(7), EQL[0], 4, LAST.dim());
  OUTG = B.field("oi_gate", 2);  // next: OIH(i + 1 >> 8), OI(i + 1 & 0xFF)
  LayerBuilder& l8 = L(8);
  const std::uint32_t ul = l8.relu_unit(outc + LAST[0] - 1.0);
  for (auto [d, c] : SparseVec{{WEG.dim(0), 1.0}, {NK.dim(kW0), 1.0}, {OUTG.dim(1), -1.0}, {NK.dim(kOi), -1.0}})
    l8.unit_out(ul, d, c);
  const std::uint32_t uw = l8.relu_unit(outc - LAST[0] + INC[0] + INC[16] - 2.0);
  for (auto [d, c] : SparseVec{{OUTG.dim(0), 1.0}, {NK.dim(kOih), 1.0}, {OUTG.dim(1), -1.0}, {NK.dim(kOi), -1.0}})
    l8.unit_out(uw, d, c);
  const std::uint32_t uo = l8.relu_unit(outc);
  l8.unit_out(uo, OUTG.dim(1), 1.0);
  l8.unit_out(uo, NK.dim(kOi), 1.0);
  LayerBuilder& l9 = L(9);
  for (unsigned v = 0; v < 16; ++v) {
    when(l9, {OUTG[0], INC[32 + v]}, {{NPL.dim(v), 1.0}});
    when(l9, {OUTG[0], INC[48 + v]}, {{NPH.dim(v), 1.0}});
    when(l9, {OUTG[1], INC[v]}, {{NPL.dim(v), 1.0}});
    when(l9, {OUTG[1], INC[16 + v]}, {{NPH.dim(v), 1.0}});
    for (std::uint32_t i = 0; i < 4; ++i) {
      when(l9, {WEG[i], nib(RA2, 2 * i)[v]}, {{NPL.dim(v), 1.0}});
      when(l9, {WEG[i], nib(RA2, 2 * i + 1)[v]}, {{NPH.dim(v), 1.0}});
    }
  }
  // the first byte, after the fetch of a write with len > 0 and a good buffer; OI(0) after OIH
  when(l9, {cls(ECALL), fetch(), EQ64[0], FDOK[0], Lin::constant(1) - LEN0[0], Lin::constant(1) - LENBIG[0],
            Lin::constant(1) - WBAD[0]}, token_out(kOi, 0));
  pass(l9, k(kOih), NK.dim(kOi));
  pass(l9, k(kOih), NPL.dim(0));
  pass(l9, k(kOih), NPH.dim(0));
  // the byte: OUT (fd 1) or ERR (fd 2), read at a1 + i
  when(l9, {k(kOi), Lin::constant(1) - FD2[0]}, {{NK.dim(kOut), 1.0}});
  when(l9, {k(kOi), FD2[0]}, {{NK.dim(kErr), 1.0}});
  XWL = B.field("out_wl", 512);
  XWH = B.field("out_wh", 512);
  key_pieces(L(14), ADNO, XWL, XWH, k(kOi));
  key_pieces(L(14), vec_port(1, VLD), XWL, XWH, RDM[0]);  // VLD: the bytes of M at a
  key_pieces(L(14), ADNV, XWL, XWH, RDE[0]);  // VLD: element bytes at a + 4 + 4g
  for (unsigned b = 0; b < 4; ++b)
    when(L(14), {any_of(nib(ADNO, 0), [b](unsigned j) { return (j & 3) == b; }), k(kOi)}, {{LANEX.dim(b), 1.0}});
  const FieldRef OBB = B.field("out_word", 4);
  {  // RAM copy (layer 15): one head, 2^18 words x 4 byte scalars, read at a1 + i on the OI
     // step; on every store byte it takes the whole word as layer 1 reads it after that byte's
     // commit, so it always equals the RAM.
    LayerBuilder& l = L(15);
    const std::uint32_t h = l.add_head(kWords, 4, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l.head(h);
    Lin stores;
    for (std::uint32_t i = 0; i < 4; ++i) stores += k(kS0 + i);
    for (std::uint32_t w = 0; w < kWords; ++w) {
      H.q[w] = XWL[w & 511] + XWH[w >> 9] - 1.0;
      H.k[w] = WL[w & 511] + WH[w >> 9] - 1.0;
    }
    for (std::uint32_t b = 0; b < 4; ++b) {
      H.v[b] = IWB[b];
      H.out.emplace_back(b, OBB.dim(b), 1.0);
    }
    H.beta = stores;
    Initialiser in;
    in.name = "ram_copy";
    in.layer = 15;
    in.head = h;
    in.source = ByteSourceKind::Image;
    in.address = kRamBase;
    in.length = kRamSize;
    in.encoding = ByteEncoding::Scalar;
    in.bytes_per_column = 4;
    B.initialiser(in);
  }
  OB = B.field("out_byte", 1);
  for (std::uint32_t b = 0; b < 4; ++b) pass(L(15), OBB[b] + LANEX[b] * 255.0 - 255.0, OB.dim());
  // byte -> NPH one-hot (thresholds) and NPL (one-hot of the low nibble, offset by 1 so that
  // no byte decodes to nothing)
  OBLO = B.field("out_byte_lo", 1);
  LayerBuilder& m3 = L(16);
  const Lin y = OB[0];
  const Lin shown = k(kOi) + RDM[0] + RDE[0];  // a byte of the RAM copy is the next payload
  pass(m3, shown, NPH.dim(0));
  pass(m3, y, OBLO.dim());
  pass(m3, shown, OBLO.dim());
  for (std::uint32_t j = 1; j < 16; ++j) {
    const std::uint32_t u1 = m3.relu_unit(y - (16.0 * j - 1));
    const std::uint32_t u2 = m3.relu_unit(y - 16.0 * j);
    for (auto [u, sgn] : {std::pair{u1, 1.0}, std::pair{u2, -1.0}}) {
      m3.unit_out(u, NPH.dim(j), sgn);
      m3.unit_out(u, NPH.dim(j - 1), -sgn);
      m3.unit_out(u, OBLO.dim(), -16 * sgn);
    }
  }
  std::vector<SparseVec> tab(17);
  for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{NPL.dim(v - 1), 1.0}};
  decode_lookup(L(17), OBLO[0], tab);
}

}  // namespace lockstep::chip::rv32::detail
