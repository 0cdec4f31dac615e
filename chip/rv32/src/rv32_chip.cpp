// The RV32 chip compiler's driver and layer plan (docs/chip-design.md). Every weight is computed
// from docs/spec/isa.md, bignum.md, vector.md and trace.md (trace-v3); the executor only runs
// generic layer math. Where the code for each stage lives: compiler_context.hpp (the shared
// context types Machine and VectorUnit) and docs/chip-design.md, "Where things are".
//
// Vocabulary: kinds 0..80, id = 256 kind + payload (trace.md section 2; every vector kind is
// produced). Output: logit(k, p) = 2 NKH[k, p >> 4] + 2 NP[p]: the intended token scores 4, every
// other token at most 2.
//
// Layer plan (stage = one memory block then one MLP; docs/chip-design.md section 3):
//   L0  mem: slots of consumed tokens (PCH, PCL, A, W, AC, OI, OIH, DQ bits)
//       mlp: current pc, fetch key (PCL step), data key and store lane (A3, S steps), i + 1
//   L1  mem: RAM (4 byte-lane heads: fetch, load, store commits)
//   L2  mem: latches (instruction word, data word); L2, L3 mlp: bytes -> nibble one-hots
//   L4  mlp: decode
//   L5  mem: register file (4 read ports; write-back when W3 is consumed); mlp: class
//   L6  mlp: ECALL checks, compare operand, shift amount, divider signs, commit values
//   L7  mem: bignum c and acc (commits on CF, AC11, bn.accclr); mlp: step cases, end of instruction
//   L8..L9  mlp: operands, compares, loads, stores, carries, branch decision, CF bit
//   L10 mem: CF slot; L10..L13 mlp: byte adder, next-pc / write-address adder (lookahead);
//       L9..L10 mlp: shift result nibbles (two bit fields, then joined)
//   L14 mem: next pc; mlp: its w nibbles, in-RAM check, write-byte key
//   L15 mem: RAM copy for ECALL write bytes; L15..L17 mlp: pc tokens, write bytes
//   L8..L18 mlp: multiplier, divider compare, remainder, bn.mac (only active on their classes)
//   L19 mlp: payload and (kind, payload high nibble) one-hots for the output
//   Vector unit: L0 mem: word-stream and VLG slots; L1 mem: VLD's M; L1..L6 mlp: VLD's product;
//   L4..L6 mlp: VR index sums (a + e, b + e, b + (e >> GS), a + (e ^ 1), dst + e, dst + i);
//   L7 mem: VR (L8: MULS's port); L7..L15 mlp: VEW and VFN arithmetic (gated copies of x, y; product_digits: products, splits,
//   one-hots, lookahead), overflow, the value bytes
//   VRED SUM: L5..L6 mlp: group k's span [lo, hi) as a 1,024-word mask; L7 mem: its nibble counts
//   (two span heads on VR); L8 mem: the group slots; L8..L12 mlp: the sum's digits; L13..L15 mlp:
//   the shift by SH, sat32, the value bytes
//   VRED SUMSQ: L7 mem: 64 lane heads (the group's words); L7 mlp: weighted queries; L8 mem: their
//   reads (the group's sum of squares is linear in them); L8..L13 mlp: its digits; L14 mem: the
//   group slots; L14..L16 mlp: the total's digits; L17..L18 mlp: the shift, sat32, the value bytes
//   VRED MAX: L7 mlp: the lanes' (hi, lo); L8..L12 mlp: all-pairs comparison, the group's maximum;
//   L13 mem: the group slots (16 read heads); L13..L17 mlp: the groups compared; L18 mlp: the bytes
//   VQ: L0 mem: the VQE slot; L5..L6 mlp: group k's span; L7 mem: the lanes; L7..L9 mlp: per lane
//   and shift t, [E(|x|) >= t], their counts, e_k's thermometer; L11 mlp: VQE's payload; value
//   steps: L7 mem: port x; L7..L9 mlp: x + 2^(e-1) as digits; L10: bits e..e+7; L11: the byte
//   VEXP: L0 mem: the VXM bytes, the VWG high-nibble slot; L5..L6 mlp: group g's span; L7..L12:
//   VRED MAX's lane tournament (m_g); L13 mlp: VXM0; L13 mem: m_g's bytes 1..3; L14 mlp: VXM1..3;
//   value steps: L7..L9 mlp: m - s + 512 as digits; L10..L11: the index one-hot; L12: EXP's byte;
//   L13 mem: p's nibbles keyed by element, read as S_g's column sums; L13..L16: digits; L17: bytes
//   VMAT: chunk steps: L0 mem: the VMC, VMH slots (row r); L4 mlp: r K + j; L5..L6 mlp: the chunk
//   index's thermometers; L7 mem: WMEM + WSCALE, ACT (64 lane heads), ASH; L7 mlp: the weight-bit
//   products P_t; L8 mlp: the contribution's bit columns; L9 mem: the slot of j. VY steps: L9 mem:
//   the slots' sums; L9..L11 mlp: splits; L12..L15: digits; L16: overflow (argmax: nibble
//   compares with the maximum slot of L1); L17: the byte (argmax: the new-maximum decision); L18:
//   VYN3
//   VMATR K: L5..L6 mlp: the row r0 + t; L7 mem: KC, KSH, ACT, ASH; L7 mlp: the product's bit
//   columns (ANDs with the head's one-hot), the shift; L8: the shifted nibble columns; L9..L12:
//   digits; L13: overflow; L14: the byte. VMATR V: VMV steps: L7 mem: the 32 VR register heads,
//   VC, VSH; L7 mlp: p's bits; L8: p 2^VSH; L9: the 64 sums' columns; L10 mem: the slot of t.
//   Value steps: L10 mem: the slots' sums; L10 mlp: the element's columns; L11..L15: digits; L16:
//   overflow; L17: the byte
#include "lockstep/chip/rv32/rv32_chip.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "compiler_context.hpp"

namespace lockstep::chip::rv32 {

using namespace detail;

namespace detail {

Machine::Machine()
    : B("rv32: RV32IM + Zba + bignum scalar machine and the whole vector unit (VLD, VEW, VFN, VRED, VQ, VEXP, VMAT, VMATR), trace-v3 (docs/chip-design.md)", kVocab,
        "lockstep-chip-rv32 0.2") {}

}  // namespace detail

namespace {

// The driver: the stages in their one fixed order (the order fixes every field offset and
// unit index of the chip file; see the layer plan above).
struct Compiler : VectorUnit {
  Chip run() {
    for (std::uint32_t l = 0; l < kNumLayers; ++l) B.add_layer();
    // ---- the scalar machine, fetch to decode (fetch.cpp, decode.cpp)
    embedding();              // K, PN, PS and the payload placements of the slots
    slots_and_keys();         // L0: slots of consumed tokens, pc, RAM word keys, store lane, i + 1
    ram_and_latches();        // L1: RAM; L2: latched words; L2, L3: bytes -> nibble one-hots
    decode_fields();          // L4: rd, rs1, rs2, class candidates, f7, imm_s
    registers_and_class();    // L5: register ports and write-back, the class one-hot
    // ---- the scalar step cases, interleaved with the shifts (scalar/alu.cpp, scalar/shift.cpp)
    operand_checks();         // L6: jump alignment, ECALL checks, compare operand
    shift_amount();           // L6
    step_cases();             // L6, L7: next kind per class and step, nibble compares
    zba_shift();              // L6, L7
    shift_cases();            // L7
    operands_and_compares();  // L8
    shift_windows();          // L6, L8
    carries_and_payloads();   // L9
    shift_tables();           // L9, L10
    byte_adder_and_branch();  // L10..L12
    write_buffer_check();     // L6..L8 (scalar/ecall.cpp)
    // ---- the vector unit (vector/): floors and the eight ops
    compile_vld();            // vector/vld.cpp
    vector_traps();           // vector/traps.cpp: L4..L10, TRAP(code) or each op's first token
    vwg_slot();               // vector/vr_file.cpp: L0
    vred_span();              // vector/spans.cpp: L1, L5, L6
    vmatr_slots();            // vector/vmatr.cpp: L5, L6 (VMATR's mode flags, V mode's word keys)
    vmat_slots();             // vector/vmat.cpp: L0, L1 (VMAT's slots)
    vr_file();                // vector/vr_file.cpp: L0..L8, VR in L7
    compile_vew();            // vector/vew.cpp
    compile_vfn();            // vector/vfn.cpp
    compile_vred();           // vector/vred.cpp
    compile_vq();             // vector/vq.cpp
    compile_vexp();           // vector/vexp.cpp
    compile_vmat();           // vector/vmat.cpp
    compile_vmatr();          // vector/vmatr.cpp (K mode, the caches)
    compile_vmatr_v();        // vector/vmatr.cpp (V mode)
    // ---- ECALL write with a bad buffer: TRAP(5) (isa.md section 5)
    when(L(9), {cls(ECALL), k(kPcl), EQ64[0], FDOK[0], Lin::constant(1) - LEN0[0], Lin::constant(1) - LENBIG[0], WBAD[0]},
         token_out(kTrap, 5));
    // ---- the scalar machine, divider to output
    divide();                 // scalar/div.cpp: L6..L10
    multiply();               // scalar/mul.cpp: L8..L18
    commits();                // scalar/commit.cpp: L6, L7, L10 (c, acc, CF)
    next_pc();                // scalar/commit.cpp: L10..L14
    pc_tokens();              // scalar/commit.cpp: L14..L17
    write_bytes();            // scalar/ecall.cpp: L6..L9, L14..L17
    emission();               // output.cpp: L19 and the unembedding
    declare();                // output.cpp: probes and numerics bounds
    return B.build();
  }
};

}  // namespace

Chip compile_rv32_chip() { return Compiler().run(); }

VectorTables rv32_vector_tables() {
  VectorTables t;
  for (std::int64_t i = 64; i < 256; ++i) t.rsq.push_back(static_cast<std::int32_t>(rsq_entry(i)));
  for (std::int64_t i = 128; i < 256; ++i) t.rcp.push_back(static_cast<std::int32_t>(rcp_entry(i)));
  for (int i = 0; i < 1024; ++i) t.sig.push_back(static_cast<std::int32_t>(sig_entry(i)));
  for (int i = 0; i < 1024; ++i) t.exp.push_back(static_cast<std::int32_t>(exp_entry(i)));
  for (unsigned p = 0; p < 64; ++p)
    for (unsigned j = 0; j < 4; ++j) {
      t.cos.push_back(static_cast<std::int32_t>(cos_entry(p, j)));
      t.sin.push_back(static_cast<std::int32_t>(sin_entry(p, j)));
    }
  return t;
}

std::vector<std::string> rv32_coverage() {
  return {
      "trace-v2/v3: pc tokens (PCH/PCL) for every instruction, the next pc from a lookahead adder, TRAP(3) outside RAM",
      "write-back of rd on W3; store bytes per lane on S_i; c on CF; acc on AC11 and bn.accclr",
      "LUI AUIPC ADDI XORI ORI ANDI ADD SUB XOR OR AND: W0..W3 or NOP",
      "SLT SLTU SLTI SLTIU: W0..W3 or NOP",
      "SLLI SRLI SRAI SLL SRL SRA: W0..W3 or NOP",
      "SH1ADD SH2ADD SH3ADD (Zba): W0..W3 or NOP",
      "BEQ BNE BLT BGE BLTU BGEU: BR(taken) or TRAP(2)",
      "JAL JALR: W(pc+4) or NOP, TRAP(2)",
      "LB LH LW LBU LHU: A0..A3, TRAP(4)/TRAP(5), W0..W3 or NOP",
      "SB SH SW: A0..A3, TRAP(6)/TRAP(7), S0..S(n-1)",
      "FENCE: NOP; EBREAK: TRAP(9); illegal words: TRAP(1); fetch outside RAM: TRAP(3)",
      "ECALL: exit -> EXIT(a0 & 0xFF); write -> [OIH] OI OUT/ERR per byte, then W(len); bad fd, len > 65535, unknown number -> TRAP(8); bad buffer -> TRAP(5)",
      "MUL MULH MULHSU MULHU: W0..W3 or NOP",
      "DIV DIVU REM REMU: the 32 DQ tokens, then W (quotient / remainder with the spec's special cases)",
      "bignum: bn.addc, bn.subb (W, CF), bn.xchgc, bn.mac (AC0..AC11), bn.accrd, bn.accclr; illegal custom-0 words",
      "vector unit VR: 1,024 words in layer 7 (two read ports, two parity banks), from .lockstep.vreg, written by VLD and by word streams",
      "VLD: VLB0..VLB3 of M, VLG(g) and VLB_m per element, VR <- sat32(sext8(b) M), TRAP(4/5/16/17/18)",
      "VEW ADD, MUL, MULS (every GS), ROT (in place too): VWG(g) and VW_qm per element, sat32, rnd half up; TRAP(16/17/18/20/23)",
      "VFN RSQRT, RECIP, SILU: the word stream of z, from the spec's RSQ/RCP/SIG formulas; TRAP(16/17/18/20)",
      "VRED SUM: VRD(k) per group of 64 (a span read of nibble counts), then the word stream of sat32(rnd(sum, SH)); TRAP(16/17/18)",
      "VRED SUMSQ: VRD(k) per group of 64 (64 lane reads, weighted-query reads), then the word stream of sat32(rnd(sum of squares, 16 + SH))",
      "VRED MAX: VRD(k) per group of 64 (64 lane reads, all-pairs comparison), then the word stream of the maximum (the groups compared)",
      "VQ ACT, K and V rows: VQE(k, e_k) per group of 64 (64 lane reads, per-lane thresholds of |x|), then the int8 stream of rnd(x, e_k) (zeros past n), written to ACT/ASH or the K/V cache row and its shift; TRAP(16/17/18/19/22)",
      "VEXP: per group VXM0..VXM3 (the lanes' tournament), the word stream of EXP[min(1023, rnd(m - s, 10))], then of the sums S_g (a memory of p keyed by element); TRAP(16/17/18/20)",
      "VMAT write and argmax: VMH, VMC_j per chunk (WMEM/WSCALE, ACT and ASH read; the contribution into the slot of j), VY0..VY3 / VYN3 (sat32(rnd(sum, 16)); the running maximum), W(r*); TRAP(16/17/18/19/21)",
      "VMATR K: the word stream of sat32(rnd(s 2^(ASH + KSH), 16)) per (t, h) (KC and KSH rows, ACT block); V: VMV(t) per position (32 VR register heads, clamped p 2^VSH times the VC row into the slot of t), then the 64 sums' word stream; TRAP(16/17/18/19/20/22)",
  };
}

}  // namespace lockstep::chip::rv32

