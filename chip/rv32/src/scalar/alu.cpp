// The scalar step cases, layer by layer (docs/chip-design.md sections 3.3, 3.4): jump alignment,
// ECALL's argument checks and the compare operand (layer 6), the byte-serial adder / logic unit's
// operand selection (a_src, b_src), each class's next token per step (layers 7..10: W bytes,
// loads' A bytes and sign extension, stores' S bytes, compares, the branch decision). These
// share units per layer across the families, so they stay together in layer order.
#include "compiler_context.hpp"

namespace lockstep::chip::rv32::detail {

void Machine::operand_checks() {
  LayerBuilder& l5 = L(6);
  MISJ = B.field("jump_misaligned", 1);
  // JAL: imm_j[1] = inst[21]; JALR: bit 1 of (rs1 + imm_i) (bit 0 is cleared, bit 1 decides).
  when(l5, {cls(JAL), any_of(nib(IN, 5), [](unsigned j) { return (j & 2) != 0; })}, {{MISJ.dim(), 1.0}});
  table(l5, {masked(nib(R1, 0), 3), masked(nib(IN, 5), 3)}, [&](const std::vector<unsigned>& v) {
    return ((v[0] + v[1]) & 2) ? SparseVec{{MISJ.dim(), 1.0}} : SparseVec{};
  }, {cls(JALR)});
  EQ93 = B.field("a7_is_93", 1);
  EQ64 = B.field("a7_is_64", 1);
  FDOK = B.field("fd_ok", 1);
  LEN0 = B.field("len_zero", 1);
  auto equals = [&](const FieldRef& f, std::uint32_t value, std::uint32_t out) {
    std::vector<Lin> conds;
    for (std::uint32_t n = 0; n < 8; ++n) conds.push_back(nib(f, n)[(value >> (4 * n)) & 15]);
    when(l5, conds, {{out, 1.0}});
  };
  equals(R1, 93, EQ93.dim());
  equals(R1, 64, EQ64.dim());
  equals(R2, 1, FDOK.dim());
  equals(R2, 2, FDOK.dim());
  equals(RA2, 0, LEN0.dim());
  FD2 = B.field("fd_is_2", 1);
  equals(R2, 2, FD2.dim());
  LENBIG = B.field("len_too_big", 1);  // ECALL and a2 > 65,535 (trace.md section 4.5)
  pass(l5, WECALL[0], LENBIG.dim());
  when(l5, {nib(RA2, 4)[0], nib(RA2, 5)[0], nib(RA2, 6)[0], nib(RA2, 7)[0]}, {{LENBIG.dim(), -1.0}});
  // compare operand: rs2 (SLT, SLTU, branches) or imm_i (SLTI, SLTIU), all 8 nibbles
  BF = B.field("cmp_operand", 128);
  for (std::uint32_t n = 0; n < 8; ++n) {
    const OH r2 = nib(R2, n), im = imm_i(n);
    for (std::uint32_t v = 0; v < 16; ++v) {
      when(l5, {r2[v], cmp_reg()}, {{BF.dim(16 * n + v), 1.0}});
      when(l5, {r2[15 - v], cls(BN_ADDC)}, {{BF.dim(16 * n + v), 1.0}});  // ~rs2: carry = a > ~b (or = with c)
      if (!is_zero(im[v])) when(l5, {im[v], cmp_imm()}, {{BF.dim(16 * n + v), 1.0}});
    }
  }
}

void Machine::step_cases() {
  LayerBuilder& l6 = L(7);
  NK = B.field("next_kind", kNumKinds);
  NPL = B.field("next_payload_lo", 16);
  NPH = B.field("next_payload_hi", 16);
  GA = B.field("gate_a", 4 * kNumASrc);
  GB = B.field("gate_b", 4 * kNumBSrc);
  OPF = B.field("alu_op", kNumOp);
  CIN = B.field("carry_in0", 1);
  CSLT = B.field("slt_w0", 1);
  CB = B.field("branch_case", 6);
  LG = B.field("load_gate", 5 * 4);
  SG = B.field("store_gate", 4);
  GEXIT = B.field("exit_gate", 1);
  WEG = B.field("write_len_gate", 4);  // ECALL write: W_i shows byte i of len (a2)
  BNC0 = B.field("bn_addc_byte0", 1);
  BNS0 = B.field("bn_subb_byte0", 1);
  CFG = B.field("bn_cf_gate", 3);
  XW0 = B.field("bn_xchgc_w0", 1);
  AR = B.field("bn_accrd_gate", 4);
  ARS = B.field("bn_accrd_shift_gate", 12);
  const Lin start = fetch();
  const Lin rd0 = RD[0];
  const Lin rdnz = Lin::constant(1) - RD[0];
  const Lin nomis = Lin::constant(1) - MISJ[0];

  // Byte-serial ALU classes: W0..W3 (or A0..A3), byte i of the result per step.
  for (const AluUse& u : alu_uses()) {
    const bool jump = u.cls == JAL || u.cls == JALR;
    for (std::uint32_t i = 0; i < 4; ++i) {
      std::vector<Lin> conds = {cls(u.cls)};
      if (u.addr) {
        conds.push_back(i == 0 ? start : k(kA0 + i - 1));
      } else if (i == 0) {
        conds.push_back(start);
        conds.push_back(rdnz);
        if (jump) conds.push_back(nomis);
      } else {
        conds.push_back(k(kW0 + i - 1));
      }
      SparseVec outs = {{NK.dim((u.addr ? kA0 : kW0) + i), 1.0}, {ga(u.a, i), 1.0}, {gb(u.b, i), 1.0},
                        {OPF.dim(u.op), 1.0}};
      if (u.cls == SUB && i == 0) outs.push_back({CIN.dim(), 1.0});
      if (u.cls == BN_ADDC && i == 0) outs.push_back({BNC0.dim(), 1.0});
      if (u.cls == BN_SUBB && i == 0) outs.push_back({BNS0.dim(), 1.0});
      when(l6, conds, outs);
    }
    if (!u.addr) {
      std::vector<Lin> conds = {cls(u.cls), start, rd0};
      if (jump) conds.push_back(nomis);
      when(l6, conds, token_out(kNop, 0));
    }
    if (jump) when(l6, {cls(u.cls), start, MISJ[0]}, token_out(kTrap, 2));
  }
  // Multiply: W_i shows byte i (MUL) or byte 4 + i (MULH*) of the product.
  MULW = B.field("mul_gate", 8);
  {
    const std::array<Cls, 4> mc = {MUL, MULH, MULHSU, MULHU};
    for (Cls c : mc) {
      const std::uint32_t mode = c == MUL ? 0 : 1;
      when(l6, {cls(c), start, rd0}, token_out(kNop, 0));
      when(l6, {cls(c), start, rdnz}, {{NK.dim(kW0), 1.0}, {MULW.dim(4 * mode), 1.0}});
      for (std::uint32_t i = 1; i < 4; ++i)
        when(l6, {cls(c), k(kW0 + i - 1)}, {{NK.dim(kW0 + i), 1.0}, {MULW.dim(4 * mode + i), 1.0}});
    }
  }
  MACG = B.field("mac_gate", 12);
  when(l6, {cls(BN_MAC), start}, {{NK.dim(kAc0), 1.0}, {MACG.dim(0), 1.0}});
  for (std::uint32_t i = 1; i < 12; ++i)
    when(l6, {cls(BN_MAC), k(kAc0 + i - 1)}, {{NK.dim(kAc0 + i), 1.0}, {MACG.dim(i), 1.0}});
  // Division: 32 DQ steps (bit index n = the next one), then W (DIV/DIVU: the quotient).
  DQG = B.field("div_dq_gate", 32);
  DQACT = B.field("div_active", 1);
  DQW = B.field("div_w_gate", 4);
  for (std::uint32_t n = 0; n < 32; ++n)
    when(l6, {div_cls(), NEXTI[n]}, {{NK.dim(kDq), 1.0}, {DQG.dim(n), 1.0}, {DQACT.dim(), 1.0}});
  RW = B.field("rem_w_gate", 4);
  const Lin quo = sum_cls({DIV, DIVU}), rem = sum_cls({REM, REMU});
  when(l6, {quo, k(kDq), DQI[0], rdnz}, {{NK.dim(kW0), 1.0}, {DQW.dim(0), 1.0}});
  when(l6, {rem, k(kDq), DQI[0], rdnz}, {{NK.dim(kW0), 1.0}, {RW.dim(0), 1.0}});
  when(l6, {div_cls(), k(kDq), DQI[0], rd0}, token_out(kNop, 0));
  for (std::uint32_t i = 1; i < 4; ++i) {
    when(l6, {quo, k(kW0 + i - 1)}, {{NK.dim(kW0 + i), 1.0}, {DQW.dim(i), 1.0}});
    when(l6, {rem, k(kW0 + i - 1)}, {{NK.dim(kW0 + i), 1.0}, {RW.dim(i), 1.0}});
  }
  // Bignum: CF after W3 (or after NOP when rd = 0); xchgc W(old c); accrd W(acc); accclr NOP.
  {
    const Lin done = k(kW0 + 3) + k(kNop);
    for (std::uint32_t c = 0; c < 3; ++c) when(l6, {cls(cf_cls[c]), done}, {{NK.dim(kCf), 1.0}, {CFG.dim(c), 1.0}});
    when(l6, {cls(BN_XCHGC), start, rdnz}, {{NK.dim(kW0), 1.0}, {XW0.dim(), 1.0}});
    for (Cls c : {BN_XCHGC, BN_ACCRD}) when(l6, {cls(c), start, rd0}, token_out(kNop, 0));
    for (std::uint32_t i = 1; i < 4; ++i) when(l6, {cls(BN_XCHGC), k(kW0 + i - 1)}, token_out(kW0 + i, 0));
    when(l6, {cls(BN_ACCRD), start, rdnz}, {{NK.dim(kW0), 1.0}, {AR.dim(0), 1.0}});
    for (std::uint32_t i = 1; i < 4; ++i) when(l6, {cls(BN_ACCRD), k(kW0 + i - 1)}, {{NK.dim(kW0 + i), 1.0}, {AR.dim(i), 1.0}});
    when(l6, {cls(BN_ACCCLR), start}, token_out(kNop, 0));
    // bn.accrd: after W (or NOP), AC0..AC11 of acc >> 32 (trace.md section 4.6)
    when(l6, {cls(BN_ACCRD), k(kW0 + 3) + k(kNop)}, {{NK.dim(kAc0), 1.0}, {ARS.dim(0), 1.0}});
    for (std::uint32_t i = 1; i < 12; ++i)
      when(l6, {cls(BN_ACCRD), k(kAc0 + i - 1)}, {{NK.dim(kAc0 + i), 1.0}, {ARS.dim(i), 1.0}});
  }
  // SLT family: W0 = [a < b], W1..W3 = 0.
  for (Cls c : {SLT, SLTU, SLTI, SLTIU}) {
    when(l6, {cls(c), start, rdnz}, {{NK.dim(kW0), 1.0}, {CSLT.dim(), 1.0}});
    when(l6, {cls(c), start, rd0}, token_out(kNop, 0));
    for (std::uint32_t i = 1; i < 4; ++i) when(l6, {cls(c), k(kW0 + i - 1)}, token_out(kW0 + i, 0));
  }
  // Branches: decided at L8/L9.
  const std::array<Cls, 6> br = {BEQ, BNE, BLT, BGE, BLTU, BGEU};
  for (std::uint32_t b = 0; b < br.size(); ++b) when(l6, {cls(br[b]), start}, {{CB.dim(b), 1.0}});
  // Loads: after A3, misaligned -> TRAP(4), out of range -> TRAP(5), else W (or NOP for rd = 0).
  const OH a0lo = nib(ADDR, 0);
  const std::array<Cls, 5> ld = {LB, LH, LW, LBU, LHU};
  const std::array<unsigned, 5> ld_n = {1, 2, 4, 1, 2};
  for (std::uint32_t c = 0; c < ld.size(); ++c) {
    const unsigned n = ld_n[c];
    const Lin mis = any_of(a0lo, [&](unsigned j) { return (j & (n - 1)) != 0; });
    const Lin a3 = k(kA0 + 3);
    if (n > 1) when(l6, {cls(ld[c]), a3, mis}, token_out(kTrap, 4));
    when(l6, {cls(ld[c]), a3, Lin::constant(1) - mis, Lin::constant(1) - INR[0]}, token_out(kTrap, 5));
    when(l6, {cls(ld[c]), a3, Lin::constant(1) - mis, INR[0], rd0}, token_out(kNop, 0));
    when(l6, {cls(ld[c]), a3, Lin::constant(1) - mis, INR[0], rdnz},
         {{NK.dim(kW0), 1.0}, {LG.dim(4 * c + 0), 1.0}});
    for (std::uint32_t i = 1; i < 4; ++i)
      when(l6, {cls(ld[c]), k(kW0 + i - 1)}, {{NK.dim(kW0 + i), 1.0}, {LG.dim(4 * c + i), 1.0}});
  }
  // Stores: after A3, misaligned -> TRAP(6), out of range -> TRAP(7), else S0..S(n-1).
  const std::array<Cls, 3> st = {SB, SH, SW};
  const std::array<unsigned, 3> st_n = {1, 2, 4};
  for (std::uint32_t c = 0; c < st.size(); ++c) {
    const unsigned n = st_n[c];
    const Lin mis = any_of(a0lo, [&](unsigned j) { return (j & (n - 1)) != 0; });
    const Lin a3 = k(kA0 + 3);
    if (n > 1) when(l6, {cls(st[c]), a3, mis}, token_out(kTrap, 6));
    when(l6, {cls(st[c]), a3, Lin::constant(1) - mis, Lin::constant(1) - INR[0]}, token_out(kTrap, 7));
    when(l6, {cls(st[c]), a3, Lin::constant(1) - mis, INR[0]}, {{NK.dim(kS0), 1.0}, {SG.dim(0), 1.0}});
    for (std::uint32_t i = 1; i < n; ++i)
      when(l6, {cls(st[c]), k(kS0 + i - 1)}, {{NK.dim(kS0 + i), 1.0}, {SG.dim(i), 1.0}});
  }
  // FENCE, EBREAK, illegal words, fetch outside RAM.
  when(l6, {cls(FENCE), start}, token_out(kNop, 0));
  when(l6, {cls(EBREAK), start}, token_out(kTrap, 9));
  when(l6, {ILL[0], start}, token_out(kTrap, 1));
  // ECALL: exit; write (isa.md section 5: fd, then len <= 65,535, then the buffer; trace.md
  // section 4.5); bad numbers and fds. W(len) after the bytes: see write_bytes().
  const Lin ec = cls(ECALL);
  when(l6, {ec, start, EQ93[0]}, {{NK.dim(kExit), 1.0}, {GEXIT.dim(), 1.0}});
  when(l6, {ec, start, EQ64[0], FDOK[0], Lin::constant(1) - LENBIG[0], LEN0[0]}, {{NK.dim(kW0), 1.0}, {WEG.dim(0), 1.0}});
  when(l6, {ec, start, EQ64[0], FDOK[0], LENBIG[0]}, token_out(kTrap, 8));
  when(l6, {ec, start, EQ64[0], Lin::constant(1) - FDOK[0]}, token_out(kTrap, 8));
  when(l6, {ec, start, Lin::constant(1) - EQ93[0] - EQ64[0]}, token_out(kTrap, 8));
  for (std::uint32_t i = 1; i < 4; ++i) when(l6, {ec, k(kW0 + i - 1)}, {{NK.dim(kW0 + i), 1.0}, {WEG.dim(i), 1.0}});
  // The consumed token ends its instruction: the next token is the next instruction's pc
  // token (or TRAP(3)); see pc_tokens().
  ENDI = B.field("instruction_end", 1);
  {
    const Lin cfcls = sum_cls({BN_ADDC, BN_SUBB, BN_XCHGC, BN_ACCRD});  // CF / AC0..AC11 follow
    const std::uint32_t u = l6.relu_unit(k(kW0 + 3) + k(kNop) - cfcls);
    l6.unit_out(u, ENDI.dim(), 1.0);
    pass(l6, k(kBr) + k(kCf) + k(kAc0 + 11), ENDI.dim());
    when(l6, {cls(SB), k(kS0)}, {{ENDI.dim(), 1.0}});
    when(l6, {cls(SH), k(kS0 + 1)}, {{ENDI.dim(), 1.0}});
    when(l6, {cls(SW), k(kS0 + 3)}, {{ENDI.dim(), 1.0}});
  }
  // CF of bn.addc / bn.subb / bn.xchgc is computed on the fetch step (the operands may be
  // overwritten by the write-back on W3) and kept in a slot; see carries_and_payloads() and commits().
  CFF = B.field("bn_cf_fetch_gate", 3);
  for (std::uint32_t c = 0; c < 3; ++c) when(l6, {cls(cf_cls[c]), start}, {{CFF.dim(c), 1.0}});

  // Nibble compares of rs1 with the compare operand: LT_n = [a_n < b_n], EQ_n = [a_n = b_n];
  // the top nibble compares with bit 3 flipped for signed compares.
  LTN = B.field("cmp_lt_nibble", 8);
  EQN = B.field("cmp_eq_nibble", 8);
  const Lin sgn = cmp_signed();
  const Lin uns = cmp_reg() + cmp_imm() + cls(BN_ADDC) - cmp_signed();
  // rs1 copied for the compare classes only (layer 6), so the tables are idle on other steps
  const FieldRef R1C = B.field("rs1_for_compare", 128);
  for (std::uint32_t j = 0; j < 128; ++j) when(L(6), {R1[j], sgn + uns}, {{R1C.dim(j), 1.0}});
  for (std::uint32_t n = 0; n < 8; ++n) {
    auto f = [&, n](unsigned flip) {
      return [&, n, flip](const std::vector<unsigned>& v) {
        const unsigned a = v[0] ^ flip, b = v[1] ^ flip;
        SparseVec out;
        if (a < b) out.push_back({LTN.dim(n), 1.0});
        if (a == b) out.push_back({EQN.dim(n), 1.0});
        return out;
      };
    };
    const std::vector<OH> parts = {nib(R1C, n), field_oh(BF, 16 * n, 16)};
    if (n < 7) {
      table(l6, parts, f(0));
    } else {
      table(l6, parts, f(8), {sgn});
      table(l6, parts, f(0), {uns});
    }
  }
}

OH Machine::a_src(ASrc s, std::uint32_t n) const {
  switch (s) {
    case A_RS1: return nib(R1, n);
    case A_PC: return nib(PCN, n);
    case A_SHL: return nib(SHL, n);
    default: return const_oh(16, 0);
  }
}

OH Machine::b_src(BSrc s, std::uint32_t n) const {
  switch (s) {
    case B_RS2: return nib(R2, n);
    case B_RS2INV: {
      const OH r = nib(R2, n);
      OH o(16);
      for (unsigned v = 0; v < 16; ++v) o[v] = r[15 - v];
      return o;
    }
    case B_IMMI: return imm_i(n);
    case B_IMMS: return imm_s(n);
    case B_IMMU: return imm_u(n);
    default: return const_oh(16, n == 0 ? 4 : 0);
  }
}

void Machine::select_operand(LayerBuilder& l, const std::function<OH(std::uint32_t)>& src, std::uint32_t gate_dim,
                    std::uint32_t i, const FieldRef& cur, const FieldRef& prev) {
  const Lin g = Lin::dim(gate_dim);
  for (std::uint32_t h = 0; h < 2; ++h) {
    const OH o = src(2 * i + h);
    for (std::uint32_t v = 0; v < 16; ++v)
      if (!is_zero(o[v])) when(l, {o[v], g}, {{cur.dim(16 * h + v), 1.0}});
  }
  if (i > 0) {  // value * g for value in [0, 255], g in {0, 1}: ReLU(value - 255 (1 - g))
    const Lin value = byte_value(src(2 * (i - 1)), src(2 * (i - 1) + 1));
    if (!value.terms.empty() || value.c != 0) pass(l, value + g * 255.0 - 255.0, prev.dim());
  }
}

void Machine::operands_and_compares() {
  LayerBuilder& l7 = L(8);
  ACUR = B.field("alu_a", 32);
  BCUR = B.field("alu_b", 32);
  APREV = B.field("alu_a_prev", 1);
  BPREV = B.field("alu_b_prev", 1);
  for (std::uint32_t i = 0; i < 4; ++i) {
    for (std::uint32_t s = 0; s < kNumASrc; ++s)
      select_operand(l7, [&, s](std::uint32_t n) { return a_src(static_cast<ASrc>(s), n); }, ga(static_cast<ASrc>(s), i), i, ACUR, APREV);
    for (std::uint32_t s = 0; s < kNumBSrc; ++s)
      select_operand(l7, [&, s](std::uint32_t n) { return b_src(static_cast<BSrc>(s), n); }, gb(static_cast<BSrc>(s), i), i, BCUR, BPREV);
  }
  // Lexicographic compare over nibbles 7..0.
  LT = B.field("cmp_lt", 1);
  EQ = B.field("cmp_eq", 1);
  for (std::uint32_t n = 0; n < 8; ++n) {
    std::vector<Lin> conds = {LTN[n]};
    for (std::uint32_t m = n + 1; m < 8; ++m) conds.push_back(EQN[m]);
    when(l7, conds, {{LT.dim(), 1.0}});
  }
  {
    std::vector<Lin> conds;
    for (std::uint32_t m = 0; m < 8; ++m) conds.push_back(EQN[m]);
    when(l7, conds, {{EQ.dim(), 1.0}});
  }
  // Loads: which data byte W_i shows (offset + i), or the extension of byte offset + n - 1.
  SELB = B.field("load_byte", 4);
  SEXT = B.field("load_sext_byte", 4);
  ZEXT = B.field("load_zext", 1);
  const OH a0lo = nib(ADDR, 0);
  const std::array<unsigned, 5> ld_n = {1, 2, 4, 1, 2};
  const std::array<bool, 5> ld_signed = {true, true, true, false, false};
  for (std::uint32_t c = 0; c < 5; ++c) {
    const unsigned n = ld_n[c];
    for (unsigned off = 0; off < 4; off += n) {
      const Lin at = any_of(a0lo, [&](unsigned j) { return (j & 3) == off; });
      for (std::uint32_t i = 0; i < 4; ++i) {
        const std::uint32_t out = i < n ? SELB.dim(off + i) : (ld_signed[c] ? SEXT.dim(off + n - 1) : ZEXT.dim());
        when(l7, {LG[4 * c + i], at}, {{out, 1.0}});
      }
    }
  }
  // Stores: S_i = byte i of rs2. EXIT: a0 & 0xFF (REG2 reads a0 for ECALL).
  for (std::uint32_t i = 0; i < 4; ++i)
    for (std::uint32_t h = 0; h < 2; ++h) {
      const OH o = nib(R2, 2 * i + h);
      for (std::uint32_t v = 0; v < 16; ++v)
        when(l7, {o[v], SG[i]}, {{(h ? NPH : NPL).dim(v), 1.0}});
    }
  for (std::uint32_t h = 0; h < 2; ++h) {
    const OH o = nib(R2, h);
    for (std::uint32_t v = 0; v < 16; ++v) when(l7, {o[v], GEXIT[0]}, {{(h ? NPH : NPL).dim(v), 1.0}});
  }
  const Lin cbit = CN[1];
  when(l7, {XW0[0], cbit}, {{NPL.dim(1), 1.0}, {NPH.dim(0), 1.0}});
  when(l7, {XW0[0], Lin::constant(1) - cbit}, {{NPL.dim(0), 1.0}, {NPH.dim(0), 1.0}});
  for (std::uint32_t i = 0; i < 4; ++i)
    for (std::uint32_t h = 0; h < 2; ++h) {
      const OH o = field_oh(ACN, 32 * i + 16 * h, 16);
      for (std::uint32_t v = 0; v < 16; ++v) when(l7, {o[v], AR[i]}, {{(h ? NPH : NPL).dim(v), 1.0}});
    }
  for (std::uint32_t i = 0; i < 12; ++i)
    for (std::uint32_t h = 0; h < 2; ++h) {
      if (i + 4 >= 12) {
        pass(l7, ARS[i], (h ? NPH : NPL).dim(0));
        continue;
      }
      const OH o = field_oh(ACN, 32 * (i + 4) + 16 * h, 16);
      for (std::uint32_t v = 0; v < 16; ++v) when(l7, {o[v], ARS[i]}, {{(h ? NPH : NPL).dim(v), 1.0}});
    }
}

void Machine::carries_and_payloads() {
  LayerBuilder& l8 = L(9);
  // Carry into byte i (i >= 1): the consumed token is byte i-1 of the result, r = (a + b + c) mod 256,
  // so carry out = [a + b - r >= 1]. Byte 0: the SUB carry-in.
  C1 = B.field("alu_carry", 1);
  threshold(l8, APREV[0] + BPREV[0] - PS[0], 1, C1.dim());
  pass(l8, CIN[0], C1.dim());
  when(l8, {BNC0[0], CN[1]}, {{C1.dim(), 1.0}});                          // addc: carry-in c
  when(l8, {BNS0[0], Lin::constant(1) - CN[1]}, {{C1.dim(), 1.0}});       // subb: a + ~b + (1 - c)
  // CF: addc carry = [a > ~b] + c [a = ~b]; subb borrow = [a < b] + c [a = b]; xchgc: a & 1.
  CFV = B.field("bn_cf_value", 1);
  auto cf_bit = [&](std::uint32_t g, const std::vector<std::vector<Lin>>& ones) {
    for (std::vector<Lin> conds : ones) {
      conds.insert(conds.begin(), CFF[g]);
      when(l8, conds, {{CFV.dim(), 1.0}});
    }
  };
  cf_bit(0, {{Lin::constant(1) - LT[0] - EQ[0]}, {EQ[0], CN[1]}});
  cf_bit(1, {{LT[0]}, {EQ[0], CN[1]}});
  cf_bit(2, {{any_of(nib(R1, 0), [](unsigned j) { return (j & 1) != 0; })}});
  // Logic ops, one nibble at a time.
  for (std::uint32_t h = 0; h < 2; ++h) {
    const std::vector<OH> parts = {field_oh(ACUR, 16 * h, 16), field_oh(BCUR, 16 * h, 16)};
    const FieldRef& out = h ? NPH : NPL;
    table(l8, parts, [&](const std::vector<unsigned>& v) { return SparseVec{{out.dim(v[0] ^ v[1]), 1.0}}; }, {OPF[OP_XOR]});
    table(l8, parts, [&](const std::vector<unsigned>& v) { return SparseVec{{out.dim(v[0] | v[1]), 1.0}}; }, {OPF[OP_OR]});
    table(l8, parts, [&](const std::vector<unsigned>& v) { return SparseVec{{out.dim(v[0] & v[1]), 1.0}}; }, {OPF[OP_AND]});
  }
  // SLT W0 payload.
  when(l8, {CSLT[0], LT[0]}, {{NPL.dim(1), 1.0}, {NPH.dim(0), 1.0}});
  when(l8, {CSLT[0], Lin::constant(1) - LT[0]}, {{NPL.dim(0), 1.0}, {NPH.dim(0), 1.0}});
  // Branch taken.
  TK = B.field("branch_taken", 1);
  when(l8, {CB[0], EQ[0]}, {{TK.dim(), 1.0}});                          // BEQ
  when(l8, {CB[1], Lin::constant(1) - EQ[0]}, {{TK.dim(), 1.0}});       // BNE
  when(l8, {CB[2], LT[0]}, {{TK.dim(), 1.0}});                          // BLT
  when(l8, {CB[3], Lin::constant(1) - LT[0]}, {{TK.dim(), 1.0}});       // BGE
  when(l8, {CB[4], LT[0]}, {{TK.dim(), 1.0}});                          // BLTU
  when(l8, {CB[5], Lin::constant(1) - LT[0]}, {{TK.dim(), 1.0}});       // BGEU
  // Load payload: a data byte, or the extension.
  for (std::uint32_t b = 0; b < 4; ++b) {
    for (std::uint32_t h = 0; h < 2; ++h) {
      const OH o = nib(DN, 2 * b + h);
      for (std::uint32_t v = 0; v < 16; ++v) when(l8, {o[v], SELB[b]}, {{(h ? NPH : NPL).dim(v), 1.0}});
    }
    const Lin neg = any_of(nib(DN, 2 * b + 1), [](unsigned j) { return j >= 8; });
    when(l8, {SEXT[b], neg}, {{NPL.dim(15), 1.0}, {NPH.dim(15), 1.0}});
    when(l8, {SEXT[b], Lin::constant(1) - neg}, {{NPL.dim(0), 1.0}, {NPH.dim(0), 1.0}});
  }
  when(l8, {ZEXT[0]}, {{NPL.dim(0), 1.0}, {NPH.dim(0), 1.0}});
}

void Machine::byte_adder_and_branch() {
  LayerBuilder& l9 = L(10);
  LayerBuilder& l10 = L(11);
  // Byte adder: nibble sums without carries (layer 10: every unit has only two one-hot parts, so
  // a part's dimension reaches 16 units), then the carries (layers 11, 12, gated by the ADD op).
  const FieldRef LS = B.field("alu_sum_lo", 16), HS = B.field("alu_sum_hi", 16);
  const FieldRef LGP = B.field("alu_lo_gen_prop", 2);
  CM = B.field("alu_carry_mid", 1);
  table(l9, {field_oh(ACUR, 0, 16), field_oh(BCUR, 0, 16)}, [&](const std::vector<unsigned>& v) {
    const unsigned sum = v[0] + v[1];
    SparseVec out = {{LS.dim(sum & 15), 1.0}};
    if (sum >= 16) out.push_back({LGP.dim(0), 1.0});
    if (sum == 15) out.push_back({LGP.dim(1), 1.0});
    return out;
  });
  table(l9, {field_oh(ACUR, 16, 16), field_oh(BCUR, 16, 16)}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{HS.dim((v[0] + v[1]) & 15), 1.0}};
  });
  const OH c = {Lin::constant(1) - C1[0], C1[0]};
  table(l10, {field_oh(LS, 0, 16), c}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{NPL.dim((v[0] + v[1]) & 15), 1.0}};
  }, {OPF[OP_ADD]});
  when(l10, {LGP[0], OPF[OP_ADD]}, {{CM.dim(), 1.0}});
  when(l10, {LGP[1], C1[0], OPF[OP_ADD]}, {{CM.dim(), 1.0}});
  table(L(12), {field_oh(HS, 0, 16), OH{Lin::constant(1) - CM[0], CM[0]}}, [&](const std::vector<unsigned>& v) {
    return SparseVec{{NPH.dim((v[0] + v[1]) & 15), 1.0}};
  }, {OPF[OP_ADD]});
  // Branch token: TRAP(2) when taken to a misaligned target (imm_b[1] = inst[8]), else BR(taken).
  Lin brc;
  for (std::uint32_t b = 0; b < 6; ++b) brc += CB[b];
  const Lin misb = any_of(nib(IN, 2), [](unsigned j) { return (j & 1) != 0; });
  when(l9, {TK[0], misb}, token_out(kTrap, 2));
  when(l9, {TK[0], Lin::constant(1) - misb}, token_out(kBr, 1));
  when(l9, {brc - TK[0]}, token_out(kBr, 0));
}

}  // namespace lockstep::chip::rv32::detail
