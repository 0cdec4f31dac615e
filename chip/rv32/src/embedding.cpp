// The embedding (docs/chip-design.md section 3.1): the kind one-hot K, the payload's nibble
// one-hots PN and scalar PS, and the per-kind payload placements the layer-0 slots read.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// ---- embedding: kind one-hot, payload nibble one-hots, payload scalar, A-byte slots ----
void Machine::embedding() {
  K = B.field("kind", kNumKinds);
  PN = B.field("payload_nibbles", 32);
  PS = B.field("payload", 1);
  APN = B.field("a_byte_nibbles", 128);
  DQI = B.field("dq_index", 32);          // DQ(2 i + q): one-hot of i
  DQBP = B.field("dq_bit_at_index", 32);  // DQ(2 i + q): q at row i
  NEXTI = B.field("div_next_index", 32);  // the quotient bit the next DQ shows (START: 31, DQ i: i - 1)
  ALLQ = B.field("div_all_bits", 1);      // DQ(q_0), W0..W2: the whole quotient is known
  for (std::uint32_t p = 0; p < 64; ++p) {
    const Token t = 256 * kDq + p;
    const std::uint32_t i = p >> 1;
    B.embed(t, DQI.dim(i), 1);
    if (p & 1) B.embed(t, DQBP.dim(i), 1);
    if (i >= 1) B.embed(t, NEXTI.dim(i - 1), 1);
    else B.embed(t, ALLQ.dim(), 1);
  }
  for (std::uint32_t p = 0; p < 256; ++p) B.embed(256 * kPcl + p, NEXTI.dim(31), 1);  // first DQ: bit 31
  // Payload nibbles placed at the block of their position, for the slots of layer 0:
  // W0..W3 (block 32 i), AC0..AC11 (block 32 i); OIH payloads, and the value 0 on PCL
  // (every instruction starts with OIH = 0: the high byte of an ECALL write index).
  WPN = B.field("w_byte_nibbles", 128);
  ACPN = B.field("ac_byte_nibbles", 384);
  OIHN = B.field("oih_nibbles", 32);
  PCLN = B.field("pcl_nibbles", 32);  // the PCL payload, only on PCL tokens (the fetch keys)
  for (std::uint32_t p = 0; p < 256; ++p) {
    B.embed(256 * kPcl + p, PCLN.dim(p & 15), 1);
    B.embed(256 * kPcl + p, PCLN.dim(16 + (p >> 4)), 1);
    for (std::uint32_t i = 0; i < 4; ++i) {
      B.embed(256 * (kW0 + i) + p, WPN.dim(32 * i + (p & 15)), 1);
      B.embed(256 * (kW0 + i) + p, WPN.dim(32 * i + 16 + (p >> 4)), 1);
    }
    for (std::uint32_t i = 0; i < 12; ++i) {
      B.embed(256 * (kAc0 + i) + p, ACPN.dim(32 * i + (p & 15)), 1);
      B.embed(256 * (kAc0 + i) + p, ACPN.dim(32 * i + 16 + (p >> 4)), 1);
    }
    B.embed(256 * kOih + p, OIHN.dim(p & 15), 1);
    B.embed(256 * kOih + p, OIHN.dim(16 + (p >> 4)), 1);
    B.embed(256 * kPcl + p, OIHN.dim(0), 1);
    B.embed(256 * kPcl + p, OIHN.dim(16), 1);
  }
  // VLD: VLG(g) payload nibbles and a 1 (an element group seen); PCL: g = 0, none seen
  VLGN = B.field("vlg_nibbles", 33);
  for (std::uint32_t p = 0; p < 256; ++p) {
    B.embed(256 * kVlg + p, VLGN.dim(p & 15), 1);
    B.embed(256 * kVlg + p, VLGN.dim(16 + (p >> 4)), 1);
    B.embed(256 * kVlg + p, VLGN.dim(32), 1);
    B.embed(256 * kPcl + p, VLGN.dim(0), 1);
    B.embed(256 * kPcl + p, VLGN.dim(16), 1);
  }
  for (std::uint32_t kd = kW0; kd < kW0 + 3; ++kd)
    for (std::uint32_t p = 0; p < 256; ++p) B.embed(256 * kd + p, ALLQ.dim(), 1);
  // VRED: VRD(k)'s group k as a one-hot (k = 0..15; compile_vred())
  VRDK_ = B.field("vrd_group", 16);
  for (std::uint32_t p = 0; p < 16; ++p) B.embed(256 * kVrd + p, VRDK_.dim(p), 1);
  for (std::uint32_t kd = 0; kd < kNumKinds; ++kd)
    for (std::uint32_t p = 0; p < 256; ++p) {
      const Token t = 256 * kd + p;
      B.embed(t, K.dim(kd), 1);
      B.embed(t, PN.dim(p & 15), 1);
      B.embed(t, PN.dim(16 + (p >> 4)), 1);
      if (p) B.embed(t, PS.dim(), p);
      if (kd >= kA0 && kd < kA0 + 4) {
        const std::uint32_t i = kd - kA0;
        B.embed(t, APN.dim(32 * i + (p & 15)), 1);
        B.embed(t, APN.dim(32 * i + 16 + (p >> 4)), 1);
      }
    }
}

}  // namespace lockstep::chip::rv32::detail
