// State commits and the next pc (docs/chip-design.md section 3.2; trace.md section 4.0): the
// bignum c and acc commits, the lookahead adder's operands, the next pc (layers 10..14) and the
// pc tokens PCH/PCL of the next instruction (layers 15..17).
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

// State commits from consumed tokens (docs/chip-design.md section 3.2): the bignum c (on CF),
// acc (on AC11; zero on bn.accclr's NOP), and the CF bit computed on the fetch step.
void Machine::commits() {
  // BNSTATE (layer 7): c and acc as nibble one-hots, each in a slot head read every step.
  BNV = B.field("bn_commit_value", 416);
  ACCLR = B.field("bn_accclr_commit", 1);
  LayerBuilder& lv = L(6);
  for (std::uint32_t j = 0; j < 32; ++j) when(lv, {PN[j], k(kCf)}, {{BNV.dim(j), 1.0}});
  for (std::uint32_t j = 0; j < 384; ++j) when(lv, {ACR[j], k(kAc0 + 11)}, {{BNV.dim(32 + j), 1.0}});
  {
    SparseVec zero = {{ACCLR.dim(), 1.0}};
    for (std::uint32_t i = 0; i < 12; ++i) {
      zero.push_back({BNV.dim(32 + 32 * i), 1.0});
      zero.push_back({BNV.dim(32 + 32 * i + 16), 1.0});
    }
    when(lv, {cls(BN_ACCCLR), k(kNop)}, zero);
  }
  {  // c (one byte) and acc (12 bytes), one slot head each (layer 7)
    FieldRef cn{CN.name, CN.offset, CN.width}, acn{ACN.name, ACN.offset, ACN.width};
    const std::uint32_t hc = slot_head(L(7), 1, [&](std::uint32_t) { return k(kCf); },
                                       [&](std::uint32_t r) { return BNV[r]; }, cn);
    const std::uint32_t ha = slot_head(L(7), 1, [&](std::uint32_t) { return k(kAc0 + 11) + ACCLR[0]; },
                                       [&](std::uint32_t r) { return BNV[32 + r]; }, acn);
    Initialiser c;  // bignum.md reset values unless the image has bytes at kRegImageAddress + 128..140
    c.name = "bn_c";
    c.layer = 7;
    c.head = hc;
    c.source = ByteSourceKind::Image;
    c.address = kRegImageAddress + 128;
    c.length = 1;
    c.encoding = ByteEncoding::Nibbles;
    c.bytes_per_column = 1;
    B.initialiser(c);
    Initialiser a = c;
    a.name = "bn_acc";
    a.head = ha;
    a.address = kRegImageAddress + 129;
    a.length = 12;
    a.bytes_per_column = 12;
    B.initialiser(a);
  }
  {  // CF slot (layer 10): the bit computed on the fetch step, read on the CF step
    CFR = B.field("bn_cf_slot", 1);
    LayerBuilder& l = L(10);
    slot_head(l, 1, [&](std::uint32_t) { return fetch(); }, [&](std::uint32_t) { return CFV[0]; }, CFR);
    const Lin g = CFG[0] + CFG[1] + CFG[2];
    pass(l, g, NPH.dim(0));
    when(l, {g, CFR[0]}, {{NPL.dim(1), 1.0}});
    when(l, {g, Lin::constant(1) - CFR[0]}, {{NPL.dim(0), 1.0}});
  }
}

// The next pc, computed on the fetch step by one 32-bit carry-lookahead adder over nibbles
// (layers 10..13): pc + 4, pc + imm_b (branch taken), pc + imm_j (JAL), (rs1 + imm_i) & ~1
// (JALR); on the steps that consume OI(i) the same adder computes a1 + i (the ECALL write
// byte's address). The next pc is kept in the NPC head (layer 14; initially the entry).
void Machine::adder_operands() {
  LayerBuilder& l = L(10);
  ADA = B.field("add_a", 128);
  ADB = B.field("add_b", 128);
  const Lin jalr = cls(JALR), jal = cls(JAL), f = fetch(), oi = k(kOi);
  auto put = [&](const FieldRef& out, std::uint32_t n, const OH& src, const std::vector<Lin>& gates) {
    for (unsigned v = 0; v < 16; ++v) {
      if (is_zero(src[v])) continue;
      std::vector<Lin> conds = gates;
      conds.push_back(src[v]);
      when(l, conds, {{out.dim(16 * n + v), 1.0}});
    }
  };
  auto inib = [&](std::uint32_t n) { return n < 2 ? field_oh(OIS, 16 * n, 16) : field_oh(OIHS, 16 * (n - 2), 16); };
  for (std::uint32_t n = 0; n < 8; ++n) {
    put(ADA, n, nib(PCN, n), {f, Lin::constant(1) - jalr});
    put(ADA, n, nib(R1, n), {f, jalr});
    put(ADA, n, nib(RA1, n), {oi});
    put(ADB, n, imm_i(n), {f, jalr});
    when(l, {f, Lin::constant(1) - jal - jalr - TK[0]}, {{ADB.dim(16 * n + (n == 0 ? 4 : 0)), 1.0}});
    if (n < 4) put(ADB, n, inib(n), {oi});
    else pass(l, oi, ADB.dim(16 * n));
    put(ADA, n, vnib(1, {VLD}, n), {VEG[0]});  // VLD element phase: a + 4 + 4g
    if (n >= 3) pass(l, VEG[0], ADB.dim(16 * n));
  }
  table(l, {field_oh(VGE, 0, 16), field_oh(VGE, 16, 16)}, [&](const std::vector<unsigned>& v) {
    const unsigned x = 4 * (v[0] | (v[1] << 4)) + 4;
    return SparseVec{{ADB.dim(x & 15), 1.0}, {ADB.dim(16 + ((x >> 4) & 15)), 1.0}, {ADB.dim(32 + (x >> 8)), 1.0}};
  });
  // imm_j: nibble 0 = inst[23:21] << 1, 1 = inst[27:24], 2 = inst[20] : inst[30:28],
  // 3 = inst[15:12], 4 = inst[19:16], 5..7 = sign (RISC-V Unpriv. section 2.3).
  table(l, {masked(nib(IN, 5), 0xE)}, [&](const std::vector<unsigned>& v) { return SparseVec{{ADB.dim(v[0]), 1.0}}; },
        {f, jal});
  put(ADB, 1, nib(IN, 6), {f, jal});
  table(l, {masked(nib(IN, 7), 7), masked(nib(IN, 5), 1)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{ADB.dim(32 + (v[0] | (v[1] << 3))), 1.0}};
  }, {f, jal});
  put(ADB, 3, nib(IN, 3), {f, jal});
  put(ADB, 4, nib(IN, 4), {f, jal});
  for (std::uint32_t n = 5; n < 8; ++n) put(ADB, n, sign_oh(), {f, jal});
  // imm_b: nibble 0 = inst[10:8] << 1, 1 = inst[27:25] : inst[11], 2 = inst[7] : inst[30:28],
  // 3..7 = sign.
  table(l, {masked(nib(IN, 2), 7)}, [&](const std::vector<unsigned>& v) { return SparseVec{{ADB.dim((v[0] & 7) << 1), 1.0}}; },
        {f, TK[0]});
  table(l, {masked(nib(IN, 2), 8), masked(nib(IN, 6), 0xE)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{ADB.dim(16 + ((v[0] >> 3) | v[1])), 1.0}};
  }, {f, TK[0]});
  table(l, {masked(nib(IN, 7), 7), masked(nib(IN, 1), 8)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{ADB.dim(32 + (v[0] | v[1])), 1.0}};
  }, {f, TK[0]});
  for (std::uint32_t n = 3; n < 8; ++n) put(ADB, n, sign_oh(), {f, TK[0]});
}

void Machine::next_pc() {
  adder_operands();
  ADS = B.field("add_digit", 128);
  ADG = B.field("add_generate", 8);
  ADP = B.field("add_propagate", 8);
  for (std::uint32_t n = 0; n < 8; ++n)
    table(L(11), {field_oh(ADA, 16 * n, 16), field_oh(ADB, 16 * n, 16)}, [&, n](const std::vector<unsigned>& v) {
      const unsigned sum = v[0] + v[1];
      SparseVec out = {{ADS.dim(16 * n + (sum & 15)), 1.0}};
      if (sum >= 16) out.push_back({ADG.dim(n), 1.0});
      if (sum == 15) out.push_back({ADP.dim(n), 1.0});
      return out;
    });
  ADC = B.field("add_carry", 8);
  for (std::uint32_t n = 1; n < 8; ++n)
    for (std::uint32_t j = 0; j < n; ++j) {
      std::vector<Lin> conds = {ADG[j]};
      for (std::uint32_t m = j + 1; m < n; ++m) conds.push_back(ADP[m]);
      when(L(12), conds, {{ADC.dim(n), 1.0}});
    }
  // The sum's nibbles: ADN on every step, ADNO (the ECALL write address a1 + i) on OI steps
  // only, so the write-byte key tables of layer 14 are idle on the fetch steps.
  ADN = B.field("add_result", 128);
  ADNO = B.field("add_result_oi", 128);
  ADNV = B.field("add_result_vld", 128);  // VLD: a + 4 + 4g
  for (const auto& [out, gates] : {std::pair{ADN, std::vector<Lin>{}}, std::pair{ADNO, std::vector<Lin>{k(kOi)}},
                                   std::pair{ADNV, std::vector<Lin>{VEG[0]}}}) {
    const FieldRef f = out;
    table(L(13), {field_oh(ADS, 0, 16), OH{Lin::constant(1) - cls(JALR), cls(JALR)}}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{f.dim(v[1] ? (v[0] & 0xE) : v[0]), 1.0}};
    }, gates);
    for (std::uint32_t n = 1; n < 8; ++n)
      table(L(13), {field_oh(ADS, 16 * n, 16), OH{Lin::constant(1) - ADC[n], ADC[n]}}, [&, n](const std::vector<unsigned>& v) {
        return SparseVec{{f.dim(16 * n + ((v[0] + v[1]) & 15)), 1.0}};
      }, gates);
  }
  // NPC (layer 14): written on the fetch step; read (q = 1) only where the pc tokens need it:
  // after the last token of an instruction or START, and on the PCH step (PCL follows), so
  // its tables are idle on the other steps. Initially the entry.
  NPCR = B.field("next_pc", 128);
  const std::uint32_t h = slot_head(L(14), 1, [&](std::uint32_t) { return fetch(); },
                                    [&](std::uint32_t r) { return ADN[r]; }, NPCR,
                                    ENDI[0] + k(kCtrl) + any_pch());
  Initialiser in;
  in.name = "next_pc";
  in.layer = 14;
  in.head = h;
  in.source = ByteSourceKind::Entry;
  in.length = 4;
  in.encoding = ByteEncoding::Nibbles;
  in.bytes_per_column = 4;
  B.initialiser(in);
}

// The pc tokens (trace.md section 4.0) of the next instruction, or TRAP(3) when its fetch is
// outside RAM: after START, after the last token of an instruction (ENDI), and PCL after PCH.
void Machine::pc_tokens() {
  const OH p0 = nib(NPCR, 0), p1 = nib(NPCR, 1), p2 = nib(NPCR, 2), p3 = nib(NPCR, 3), p4 = nib(NPCR, 4);
  LayerBuilder& l14 = L(14);
  NV = B.field("next_pc_in_ram", 1);
  in_ram(l14, NPCR, NV.dim());
  // w nibbles of the next pc: w = (pc - RAM_BASE) >> 2; u4 = (pc[19:16] - 1) & 15.
  WNX = B.field("next_w", 68);
  auto pair = [&](std::uint32_t n, const OH& lo, const OH& hi) {
    table(l14, {masked(lo, 0xC), masked(hi, 3)}, [&, n](const std::vector<unsigned>& v) {
      return SparseVec{{WNX.dim(16 * n + ((v[0] >> 2) | ((v[1] & 3) << 2))), 1.0}};
    });
  };
  pair(0, p0, p1);
  pair(1, p1, p2);
  pair(2, p2, p3);
  table(l14, {masked(p3, 0xC), p4}, [&](const std::vector<unsigned>& v) {
    const unsigned u4 = (v[1] + 15) & 15;
    return SparseVec{{WNX.dim(48 + ((v[0] >> 2) | ((u4 & 3) << 2))), 1.0}, {WNX.dim(64 + (u4 >> 2)), 1.0}};
  });
  auto wn = [&](std::uint32_t n) { return field_oh(WNX, 16 * n, n == 4 ? 4 : 16); };
  // Is w >> 8 the same as the current instruction's (the PCH slot)?
  EQH = B.field("next_w_high_same", 1);
  for (std::uint32_t n = 2; n < 5; ++n) {
    const OH cur = wnib(n), nxt = wn(n);
    for (unsigned v = 0; v < nxt.size(); ++v) when(L(15), {cur[v], nxt[v]}, {{EQH.dim(), 1.0}});
  }
  GPCH = B.field("emit_pch", 1);
  GPCL = B.field("emit_pcl", 1);
  LayerBuilder& l16 = L(16);
  const Lin emit = ENDI[0] + k(kCtrl);
  const std::uint32_t same = l16.relu_unit(ENDI[0] + NV[0] + EQH[0] - 4.0);
  l16.unit_out(same, GPCL.dim(), 1.0);
  l16.unit_out(same, GPCH.dim(), -1.0);
  const std::uint32_t valid = l16.relu_unit(emit + NV[0] - 1.0);
  l16.unit_out(valid, GPCH.dim(), 1.0);
  when(l16, {emit, Lin::constant(1) - NV[0]}, token_out(kTrap, 3));
  LayerBuilder& l17 = L(17);
  for (std::uint32_t kk = 0; kk < 4; ++kk) when(l17, {GPCH[0], wn(4)[kk]}, {{NK.dim(kPch0 + kk), 1.0}});
  for (unsigned v = 0; v < 16; ++v) {
    when(l17, {GPCH[0], wn(2)[v]}, {{NPL.dim(v), 1.0}});
    when(l17, {GPCH[0], wn(3)[v]}, {{NPH.dim(v), 1.0}});
  }
  const Lin pcl = GPCL[0] + any_pch();
  pass(l17, pcl, NK.dim(kPcl));
  for (unsigned v = 0; v < 16; ++v) {
    when(l17, {pcl, wn(0)[v]}, {{NPL.dim(v), 1.0}});
    when(l17, {pcl, wn(1)[v]}, {{NPH.dim(v), 1.0}});
  }
}

}  // namespace lockstep::chip::rv32::detail
