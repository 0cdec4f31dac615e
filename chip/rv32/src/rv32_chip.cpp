// The RV32 chip compiler (docs/chip-design.md). Every weight is computed here from
// docs/spec/isa.md, bignum.md, vector.md and trace.md (trace-v3); the executor only runs generic
// layer math.
//
// Vocabulary: kinds 0..80, id = 256 kind + payload (trace.md section 2; every vector kind is
// produced: vld(), vew(), vfn(), vred(), vq(), vexp(), vmat(), vmatr(), vmatr_v(),
// vector_traps()). Output:
// logit(k, p) = 2 NKH[k, p >> 4] + 2 NP[p]: the intended token scores 4, every other token at most 2.
//
// Vector unit (docs/chip-design.md section 3.6): all eight ops execute: VLD, VEW (all modes), VFN
// (all functions), VRED (all modes), VQ (ACT, K and V rows, with their writes), VEXP, VMAT (write
// and argmax mode) and VMATR (K and V mode). VR lives in layer 7 (vr_file()), and so do ACT, ASH,
// WMEM, WSCALE (vmat()), KC, KSH, VC and VSH (cache_heads()).
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

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "lockstep/chip/compiler/builder.hpp"
#include "lockstep/chip/compiler/primitives.hpp"

namespace lockstep::chip::rv32 {

using namespace compiler;

namespace {

// ---- one-hot predicates -------------------------------------------------------------------

using OH = OneHot;  // one-hot predicate vector (primitives.hpp): at most one entry is 1, others 0

OH field_oh(const FieldRef& f, std::uint32_t first, std::uint32_t n) {
  OH o;
  for (std::uint32_t i = 0; i < n; ++i) o.push_back(f[first + i]);
  return o;
}
// Nibble n (0..7) of a 32-bit value held as 8 nibble one-hots (16 rows each).
OH nib(const FieldRef& f, std::uint32_t n) { return field_oh(f, 16 * n, 16); }
OH const_oh(std::uint32_t size, std::uint32_t v) {
  OH o(size);
  o[v] = Lin::constant(1);
  return o;
}
// Entry u of the result = sum of entries j of `o` with (j & mask) == u (size 16; entries that
// are not of that form stay constant 0).
OH masked(const OH& o, unsigned mask) {
  OH r(o.size());
  for (unsigned j = 0; j < o.size(); ++j) r[j & mask] += o[j];
  return r;
}
Lin any_of(const OH& o, const std::function<bool(unsigned)>& pred) {
  Lin l;
  for (unsigned j = 0; j < o.size(); ++j)
    if (pred(j)) l += o[j];
  return l;
}
// Value of a byte given its two nibble one-hots, as a linear form.
Lin byte_value(const OH& lo, const OH& hi) {
  Lin l;
  for (unsigned v = 0; v < 16; ++v) {
    l += lo[v] * static_cast<double>(v);
    l += hi[v] * static_cast<double>(16 * v);
  }
  return l;
}

// ---- the machine -------------------------------------------------------------------------

// Token kinds (trace.md section 2).
enum Kind : std::uint32_t {
  kCtrl = 0, kW0 = 1, kA0 = 5, kS0 = 9, kBr = 13, kDq = 14, kCf = 15, kAc0 = 16, kOut = 28, kErr = 29,
  kNop = 30, kExit = 31, kTrap = 32, kVmc0 = 33, kVmh = 39, kVmv = 40, kVrd = 41, kVqe = 42, kVwg = 43, kPcl = 44, kPch0 = 45, kOi = 49, kOih = 50, kVlg = 56, kVlb0 = 57,
  kVy0 = 51, kVyn3 = 55, kVw00 = 61, kVxm0 = 77  // VMC_j = 33 + j, VY_m = 51 + m, VW_qm = 61 + 4 q + m (vector.md section 5)
};
constexpr std::uint32_t vw(std::uint32_t q, std::uint32_t m) { return kVw00 + 4 * q + m; }

enum Cls : std::uint32_t {
  LUI, AUIPC, JAL, JALR, BEQ, BNE, BLT, BGE, BLTU, BGEU, LB, LH, LW, LBU, LHU, SB, SH, SW,
  ADDI, SLTI, SLTIU, XORI, ORI, ANDI, SLLI, SRLI, SRAI,
  ADD, SUB, SLL, SLT, SLTU, XOR, SRL, SRA, OR, AND,
  MUL, MULH, MULHSU, MULHU, DIV, DIVU, REM, REMU, SH1ADD, SH2ADD, SH3ADD,
  FENCE, ECALL, EBREAK, BN_ADDC, BN_SUBB, BN_XCHGC, BN_MAC, BN_ACCRD, BN_ACCCLR, VLD,
  VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED, kNumCls
};

struct ClsSpec {
  Cls cls;
  unsigned opcode;
  int f3;  // -1: any
  int f7;  // -1: any
};

const std::vector<ClsSpec>& cls_specs() {
  static const std::vector<ClsSpec> s = {
      {LUI, 0x37, -1, -1},   {AUIPC, 0x17, -1, -1}, {JAL, 0x6F, -1, -1},   {JALR, 0x67, 0, -1},
      {BEQ, 0x63, 0, -1},    {BNE, 0x63, 1, -1},    {BLT, 0x63, 4, -1},    {BGE, 0x63, 5, -1},
      {BLTU, 0x63, 6, -1},   {BGEU, 0x63, 7, -1},   {LB, 0x03, 0, -1},     {LH, 0x03, 1, -1},
      {LW, 0x03, 2, -1},     {LBU, 0x03, 4, -1},    {LHU, 0x03, 5, -1},    {SB, 0x23, 0, -1},
      {SH, 0x23, 1, -1},     {SW, 0x23, 2, -1},     {ADDI, 0x13, 0, -1},   {SLTI, 0x13, 2, -1},
      {SLTIU, 0x13, 3, -1},  {XORI, 0x13, 4, -1},   {ORI, 0x13, 6, -1},    {ANDI, 0x13, 7, -1},
      {SLLI, 0x13, 1, 0x00}, {SRLI, 0x13, 5, 0x00}, {SRAI, 0x13, 5, 0x20}, {ADD, 0x33, 0, 0x00},
      {SUB, 0x33, 0, 0x20},  {SLL, 0x33, 1, 0x00},  {SLT, 0x33, 2, 0x00},  {SLTU, 0x33, 3, 0x00},
      {XOR, 0x33, 4, 0x00},  {SRL, 0x33, 5, 0x00},  {SRA, 0x33, 5, 0x20},  {OR, 0x33, 6, 0x00},
      {AND, 0x33, 7, 0x00},  {MUL, 0x33, 0, 0x01},  {MULH, 0x33, 1, 0x01}, {MULHSU, 0x33, 2, 0x01},
      {MULHU, 0x33, 3, 0x01}, {DIV, 0x33, 4, 0x01}, {DIVU, 0x33, 5, 0x01}, {REM, 0x33, 6, 0x01},
      {REMU, 0x33, 7, 0x01}, {SH1ADD, 0x33, 2, 0x10}, {SH2ADD, 0x33, 4, 0x10}, {SH3ADD, 0x33, 6, 0x10},
      {FENCE, 0x0F, 0, -1},  {BN_ADDC, 0x0B, 0, 0x00}, {BN_SUBB, 0x0B, 1, 0x00}, {BN_XCHGC, 0x0B, 2, 0x00},
      {BN_MAC, 0x0B, 3, 0x00}, {BN_ACCRD, 0x0B, 4, 0x00}, {BN_ACCCLR, 0x0B, 5, 0x00},
      // the vector unit (custom-1, vector.md section 4.0; any f7: invalid f7 values are VEC_FIELD,
      // section 6). VLD runs; the other seven check their traps only (docs/chip-design.md).
      {VLD, 0x2B, 7, -1},   {VMAT, 0x2B, 0, -1},  {VMATR, 0x2B, 1, -1}, {VQ, 0x2B, 2, -1},
      {VEXP, 0x2B, 3, -1},  {VEW, 0x2B, 4, -1},   {VFN, 0x2B, 5, -1},   {VRED, 0x2B, 6, -1},
  };
  return s;
}
const std::array<unsigned, 4> kF7Values = {0x00, 0x20, 0x01, 0x10};
int f7_index(int f7) {
  for (unsigned i = 0; i < kF7Values.size(); ++i)
    if (static_cast<int>(kF7Values[i]) == f7) return static_cast<int>(i);
  return -1;
}

// Operand sources of the byte-serial adder / logic unit.
enum ASrc : std::uint32_t { A_RS1, A_PC, A_ZERO, A_SHL, kNumASrc };
enum BSrc : std::uint32_t { B_RS2, B_RS2INV, B_IMMI, B_IMMS, B_IMMU, B_FOUR, kNumBSrc };
enum Op : std::uint32_t { OP_ADD, OP_XOR, OP_OR, OP_AND, kNumOp };

struct AluUse {
  Cls cls;
  ASrc a;
  BSrc b;
  Op op;
  bool addr;  // emits A0..A3 (loads/stores) instead of W0..W3
};

const std::vector<AluUse>& alu_uses() {
  static const std::vector<AluUse> u = {
      {ADDI, A_RS1, B_IMMI, OP_ADD, false}, {ADD, A_RS1, B_RS2, OP_ADD, false},
      {SUB, A_RS1, B_RS2INV, OP_ADD, false}, {LUI, A_ZERO, B_IMMU, OP_ADD, false},
      {AUIPC, A_PC, B_IMMU, OP_ADD, false}, {JAL, A_PC, B_FOUR, OP_ADD, false},
      {JALR, A_PC, B_FOUR, OP_ADD, false},  {XORI, A_RS1, B_IMMI, OP_XOR, false},
      {ORI, A_RS1, B_IMMI, OP_OR, false},   {ANDI, A_RS1, B_IMMI, OP_AND, false},
      {XOR, A_RS1, B_RS2, OP_XOR, false},   {OR, A_RS1, B_RS2, OP_OR, false},
      {AND, A_RS1, B_RS2, OP_AND, false},   {LB, A_RS1, B_IMMI, OP_ADD, true},
      {LH, A_RS1, B_IMMI, OP_ADD, true},    {LW, A_RS1, B_IMMI, OP_ADD, true},
      {LBU, A_RS1, B_IMMI, OP_ADD, true},   {LHU, A_RS1, B_IMMI, OP_ADD, true},
      {SB, A_RS1, B_IMMS, OP_ADD, true},    {SH, A_RS1, B_IMMS, OP_ADD, true},
      {SW, A_RS1, B_IMMS, OP_ADD, true},    {SH1ADD, A_SHL, B_RS2, OP_ADD, false},
      {SH2ADD, A_SHL, B_RS2, OP_ADD, false}, {SH3ADD, A_SHL, B_RS2, OP_ADD, false},
      {BN_ADDC, A_RS1, B_RS2, OP_ADD, false}, {BN_SUBB, A_RS1, B_RS2INV, OP_ADD, false},
  };
  return u;
}

constexpr std::uint32_t kWords = kRamSize / 4;  // 2^18 RAM words
constexpr std::uint32_t kNumLayers = 20;
constexpr std::uint32_t kChunks = 4152;  // WMEM's row-chunks (vector.md section 2)

// The fixed tables of vector.md section 3, from its formulas (IEEE double with the C library's
// exp/cos/sin and llround, as the section says; RSQ and RCP in exact integers).
std::int64_t rcp_entry(std::int64_t i) { return ((1LL << 39) + 2 * i + 1) / (4 * i + 2); }
std::int64_t rsq_entry(std::int64_t i) {  // the y with (2y-1)^2 (2i+1) < 2^57 < (2y+1)^2 (2i+1)
  const __int128 lim = static_cast<__int128>(1) << 57;
  std::int64_t y = std::llround(std::ldexp(1.0, 27) / std::sqrt(static_cast<double>(i) + 0.5));
  auto below = [&](std::int64_t t) { return static_cast<__int128>(2 * t - 1) * (2 * t - 1) * (2 * i + 1) < lim; };
  while (!below(y)) --y;
  while (below(y + 1)) ++y;
  return y;
}
std::int64_t exp_entry(int i) { return std::llround(65536.0 * std::exp(-i / 64.0)); }
std::int64_t sig_entry(int i) { return std::llround(65536.0 / (1.0 + std::exp(-(i - 512) / 64.0))); }
std::int64_t cos_entry(unsigned p, unsigned j) {
  return std::llround(65536.0 * std::cos(static_cast<double>(p) * std::pow(10.0, -static_cast<double>(j))));
}
std::int64_t sin_entry(unsigned p, unsigned j) {
  return std::llround(65536.0 * std::sin(static_cast<double>(p) * std::pow(10.0, -static_cast<double>(j))));
}

class Compiler {
 public:
  Compiler() : B("rv32: RV32IM + Zba + bignum scalar machine and the whole vector unit (VLD, VEW, VFN, VRED, VQ, VEXP, VMAT, VMATR), trace-v3 (docs/chip-design.md)", kVocab,
                 "lockstep-chip-rv32 0.2") {}

  Chip run() {
    for (std::uint32_t l = 0; l < kNumLayers; ++l) B.add_layer();
    embedding();
    layer0();
    layer1_2();
    layer3();
    layer4();
    layer5();
    shift_amount();
    layer6();
    zba_shift();
    shift_cases();
    layer7();
    shift_windows();
    layer8();
    shift_tables();
    layer9_10();
    write_buffer_check();
    vld();
    vector_traps();
    vwg_slot();
    vred_span();
    vmat_slots();
    vr_file();
    vew();
    vfn();
    vred();
    vq();
    vexp();
    vmat();
    vmatr();
    vmatr_v();
    when(L(9), {cls(ECALL), k(kPcl), EQ64[0], FDOK[0], Lin::constant(1) - LEN0[0], Lin::constant(1) - LENBIG[0], WBAD[0]},
         token_out(kTrap, 5));
    divide();
    multiply();
    commits();
    next_pc();
    pc_tokens();
    write_bytes();
    emission();
    declare();
    return B.build();
  }

 private:
  ChipBuilder B;
  LayerBuilder& L(std::uint32_t l) { return B.layer(l); }

  // embedding fields
  FieldRef K, PN, PS, APN;
  // L0
  FieldRef PCN, ADDR, INR, WL, WH;
  // trace-v2: slots of consumed tokens (layer 0), commits, next pc, pc tokens, write bytes
  FieldRef PCLN, PCHF, ADDRK, R1S;
  FieldRef WPN, ACPN, OIHN, PCHS, PCLS, WSR, ACR, OIS, OIHS, LANE, IZ, INC;
  FieldRef LENBIG, FD2, BNV, ACCLR, EQL, LAST, ENDI, CFF, CFV, CFR;
  FieldRef ADA, ADB, ADS, ADG, ADP, ADC, ADN, ADNO, NPCR, WNX, NV, EQH, GPCH, GPCL, XWL, XWH, LANEX, OB, OBLO;
  FieldRef OUTG, WEG;
  // L1/L2
  FieldRef IWB, LW_, IHI, ILOS, DHI, DLOS, IN, DN;
  // L3
  FieldRef RD, RS1, RS2, PRE, F7, WECALL, WEBREAK, IMS01;
  // L4
  FieldRef R1, R2, RA1, RA2, CLS, ILL;
  // L5
  FieldRef MISJ, EQ93, EQ64, FDOK, LEN0, BF, SQ, SR;
  // shifts
  FieldRef SHG, SHW, R1Z, SHL;
  // bignum
  FieldRef CN, ACN, BNC0, BNS0, CFG, XW0, AR, ARS;
  // multiply
  FieldRef R1M, R2M, MULW, NC, C1N, DN1, C2N, EN, GN, PPN, CIN_, WRN, SELN, MACT;
  // divide
  FieldRef DQI, DQBP, NEXTI, ALLQ, QB, TB, TN, UA, UB, ZA, ZB, QZ, QN, DQG, DQACT, DQW, DGT, DEQ, DHZ, QBIT;
  // L6
  FieldRef NK, NPL, NPH, GA, GB, OPF, CIN, CSLT, CB, LG, SG, GEXIT, LTN, EQN;
  // L7
  FieldRef ACUR, BCUR, APREV, BPREV, LT, EQ, SELB, SEXT, ZEXT;
  // L8
  FieldRef C1, TK;
  // L9
  FieldRef CM;
  // VLD (vector.md section 4.8): slot, gated register ports, traps, last element, byte reads
  FieldRef VLGN, VGS, RV1, RV2, VK, VZ, VSH, VOK, VC0, VC1, VZ45, VC2, VGT, VEQ, VLAST;
  FieldRef VEG, VGE, RDM, RDE, ADNV;
  // VR and the word streams (vector.md sections 2, 5): slots, the register file's two read ports
  Lin EADD;                      // [VEW, MODE = ADD] (an operand-range enable of vector_traps(), layer 6)
  std::array<Lin, 3> EFN;        // [VFN, FN = RSQRT / RECIP / SILU]
  OH TM_;                        // the word stream's next token is value byte m (vew())
  Lin SREAD_;                    // the next token is a value byte of a word stream (1 dim; vr_file())
  Lin GROT_, GVFN_, GSILU_;      // ... of VEW ROT, of VFN RSQRT/RECIP, of VFN SILU (1 dim each, layer 6)
  FieldRef LASTW_;               // the consumed token ends the stream's last element (vew())
  FieldRef VWGS, VWBS, VRX, VRY, VRYS;
  FieldRef VIN;  // f7's nibbles (inst nibbles 6, 7) on custom-1 words only (layer 4; vector_traps())
  FieldRef F7X_;  // f7 as a one-hot (128), on custom-1 words only (layer 5; vector_traps())
  // VRED (vred()): k of the consumed VRD(k) (embedding); the span of group k (layers 5, 6); (n - 1)
  // >> 6, the last group (layer 5); the value steps of the word stream, by byte m (layer 6)
  FieldRef VRDK_, VSPAN_, VKL_, VRG_, VRCNT_;
  // VRED SUMSQ: [SUMSQ's VRD step] (layer 6; vred_span()), the lanes (layer 7), the square reads
  // (layer 8; vr_file())
  FieldRef VRQ_, VLANE_, VRSQ_;
  // VQ (vq()): the steps that emit VQE(k) (k one-hot KQ_ and their sum GQ_, layer 5; KG_: the
  // same without the class, layer 1), [the next token is VQE] (VQF_, layers 9..10), [the next
  // token is a value byte] (VQR_, layer 0 without the class; VQV_, layer 5)
  FieldRef KG_, KQ_, GQ_, VQF_, VQR_, VQV_;
  // VEXP (vexp()): [the consumed VW_q3 ends a group's last score] (LX_, layer 5), [the next token
  // is VXM0] (XFN_, layers 9..10), the MAX tournament's gate (GMX_, layer 6; vred_max()), the
  // VXM bytes (VXMS_, layer 0)
  FieldRef LX_, XG0_, XFN_, GMX_, VXMS_, GOH_;

  Lin k(std::uint32_t kind) const { return K[kind]; }
  Lin fetch() const { return K[kPcl]; }  // the step that consumes PCL: the instruction's first step
  Lin any_pch() const { return K[kPch0] + K[kPch0 + 1] + K[kPch0 + 2] + K[kPch0 + 3]; }
  Lin cls(Cls c) const { return CLS[c]; }

  // ---- embedding: kind one-hot, payload nibble one-hots, payload scalar, A-byte slots ----
  void embedding() {
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
    // VRED: VRD(k)'s group k as a one-hot (k = 0..15; vred())
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

  // Word-index key pieces of an address held as nibble one-hots (field f: 8 nibbles):
  // w = (a - RAM_BASE) >> 2; wl = w & 511 = a[10:2]; wh = w >> 9 = a[19:11] - 0x20.
  // Bits 16..19 of a - RAM_BASE are (a[19:16] - 1) & 15 whenever the address is in RAM.
  // Only when `gate` is 1 (the RAM ports read once per access; the latch keeps the word).
  void key_pieces(LayerBuilder& l, const FieldRef& f, const FieldRef& wl, const FieldRef& wh, const Lin& gate) {
    table(l, {masked(nib(f, 0), 0xC), nib(f, 1), masked(nib(f, 2), 0x7)}, [&](const std::vector<unsigned>& v) {
      const unsigned w = (v[0] >> 2) | (v[1] << 2) | (v[2] << 6);
      return SparseVec{{wl.dim(w), 1.0}};
    }, {gate});
    table(l, {masked(nib(f, 2), 0x8), nib(f, 3), nib(f, 4)}, [&](const std::vector<unsigned>& v) {
      const unsigned w = (v[0] >> 3) | (v[1] << 1) | (((v[2] + 15) & 15) << 5);
      return SparseVec{{wh.dim(w), 1.0}};
    }, {gate});
  }
  // [a in RAM] for the word containing a (bytes 2, 3 of a): a[31:24] = 0 and a[23:16] in 1..16.
  void in_ram(LayerBuilder& l, const FieldRef& f, std::uint32_t out) {
    const Lin b3zero = nib(f, 6)[0] + nib(f, 7)[0];
    const OH b2lo = nib(f, 4), b2hi = nib(f, 5);
    when(l, {b3zero - 1.0, b2hi[0], any_of(b2lo, [](unsigned j) { return j >= 1; })}, {{out, 1.0}});
    when(l, {b3zero - 1.0, b2hi[1], b2lo[0]}, {{out, 1.0}});
  }

  // Slots: `rows` slots, each a head of its own (1 column x out.width / rows values, so a read
  // costs only its block), slot i written with v (block i of out) when krow(i) is 1, read each
  // step (q = `read`, default 1) into block i of `out`. Returns the first head's index.
  std::uint32_t slot_head(LayerBuilder& l, std::uint32_t rows, const std::function<Lin(std::uint32_t)>& krow,
                          const std::function<Lin(std::uint32_t)>& v, const FieldRef& out,
                          const Lin& read = Lin::constant(1)) {
    const std::uint32_t bw = out.width / rows;
    if (bw * rows != out.width) throw std::logic_error("slot_head: width not a multiple of rows");
    std::uint32_t first = 0;
    for (std::uint32_t i = 0; i < rows; ++i) {
      const std::uint32_t h = l.add_head(1, bw);
      if (i == 0) first = h;
      HeadBuilder& H = l.head(h);
      H.k[0] = Lin::constant(1);
      H.beta = krow(i);
      H.q[0] = read;
      for (std::uint32_t r = 0; r < bw; ++r) {
        H.v[r] = v(bw * i + r);
        H.out.emplace_back(r, out.dim(bw * i + r), 1.0);
      }
    }
    return first;
  }

  // Slots in one head (so that the executor handles one head, not `rows`): column i holds slot
  // i; a token of kind `kinds(i)[j]` writes its payload's nibble one-hots into rows 32 i.. of
  // column i (an embedding field that places the payload at its slot's block), so that reading
  // every column (q = `read` on each) returns the slots side by side in `out` (32 rows each).
  // `beta` gates the write (ReLU; the column is chosen by the kind).
  void block_slots(LayerBuilder& l, const std::string& name, std::uint32_t rows,
                   const std::function<std::vector<std::uint32_t>(std::uint32_t)>& kinds, const Lin& beta, const Lin& read,
                   const FieldRef& out) {
    const FieldRef EB = B.field(name + "_payload_blocks", 32 * rows);
    const std::uint32_t h = l.add_head(rows, 32 * rows);
    HeadBuilder& H = l.head(h);
    for (std::uint32_t i = 0; i < rows; ++i) {
      Lin kr;
      for (std::uint32_t kd : kinds(i)) {
        kr += k(kd);
        for (std::uint32_t p = 0; p < 256; ++p) {
          B.embed(256 * kd + p, EB.dim(32 * i + (p & 15)), 1);
          B.embed(256 * kd + p, EB.dim(32 * i + 16 + (p >> 4)), 1);
        }
      }
      H.k[i] = kr;
      H.q[i] = read;
    }
    for (std::uint32_t r = 0; r < 32 * rows; ++r) {
      H.v[r] = EB[r];
      H.out.emplace_back(r, out.dim(r), 1.0);
    }
    H.beta = beta;
  }

  // Nibble one-hots of the current instruction's word index w (trace.md section 4.0), from the slots.
  OH wnib(std::uint32_t n) const {
    switch (n) {
      case 0: return field_oh(PCLS, 0, 16);
      case 1: return field_oh(PCLS, 16, 16);
      case 2: return field_oh(PCHS, 4, 16);
      case 3: return field_oh(PCHS, 20, 16);
      default: return field_oh(PCHS, 0, 4);
    }
  }

  void layer0() {
    LayerBuilder& l0 = L(0);
    PCN = B.field("pc_nibbles", 128);
    ADDR = B.field("addr_nibbles", 128);
    // Slots of consumed tokens (trace-v2: every position is on the bus).
    PCHS = B.field("pch_slot", 36);  // k one-hot (4), payload nibbles (32) of the last PCH_k
    PCLS = B.field("pcl_slot", 32);
    WSR = B.field("w_slot", 128);
    ACR = B.field("ac_slot", 384);
    OIS = B.field("oi_slot", 32);
    OIHS = B.field("oih_slot", 32);
    slot_head(l0, 1, [&](std::uint32_t) { return any_pch(); },
              [&](std::uint32_t r) { return r < 4 ? k(kPch0 + r) : PN[r - 4]; }, PCHS);
    slot_head(l0, 1, [&](std::uint32_t) { return k(kPcl); }, [&](std::uint32_t r) { return PN[r]; }, PCLS);
    // the same PCH slot, read only on the fetch step (so that the fetch key tables below are idle,
    // untouched, on every other step)
    PCHF = B.field("pch_slot_fetch", 36);
    slot_head(l0, 1, [&](std::uint32_t) { return any_pch(); },
              [&](std::uint32_t r) { return r < 4 ? k(kPch0 + r) : PN[r - 4]; }, PCHF, fetch());
    slot_head(l0, 4, [&](std::uint32_t i) { return k(kW0 + i); }, [&](std::uint32_t r) { return WPN[r]; }, WSR);
    slot_head(l0, 12, [&](std::uint32_t i) { return k(kAc0 + i); }, [&](std::uint32_t r) { return ACPN[r]; }, ACR);
    slot_head(l0, 1, [&](std::uint32_t) { return k(kOi); }, [&](std::uint32_t r) { return PN[r]; }, OIS);
    slot_head(l0, 1, [&](std::uint32_t) { return k(kOih) + k(kPcl); }, [&](std::uint32_t r) { return OIHN[r]; }, OIHS);
    // pc = RAM_BASE + 4 w as nibble one-hots: nibble n (n < 4) = w[4n+1 : 4n-2]; with
    // x = w[17:14]: nibble 4 = (x + 1) & 15, nibble 5 = [x = 15], nibbles 6, 7 = 0.
    table(l0, {masked(wnib(0), 3)}, [&](const std::vector<unsigned>& v) { return SparseVec{{PCN.dim((v[0] & 3) << 2), 1.0}}; });
    for (std::uint32_t n = 1; n < 4; ++n)
      table(l0, {masked(wnib(n - 1), 0xC), masked(wnib(n), 3)}, [&, n](const std::vector<unsigned>& v) {
        return SparseVec{{PCN.dim(16 * n + ((v[0] >> 2) | ((v[1] & 3) << 2))), 1.0}};
      });
    table(l0, {masked(wnib(3), 0xC), wnib(4)}, [&](const std::vector<unsigned>& v) {
      const unsigned x = (v[0] >> 2) | (v[1] << 2);
      return SparseVec{{PCN.dim(64 + ((x + 1) & 15)), 1.0}, {PCN.dim(80 + (x == 15 ? 1 : 0)), 1.0},
                       {PCN.dim(96), 1.0}, {PCN.dim(112), 1.0}};
    });
    // ASLOT: A0..A3 bytes as consumed; slot i holds byte i at rows 32 i. Two copies: ADDR read
    // every step, ADDRK read only where the data word is keyed (A3 and S steps), so that the key
    // tables are idle on every other step.
    ADDRK = B.field("addr_nibbles_keyed", 128);
    Lin stores;
    for (std::uint32_t i = 0; i < 4; ++i) stores += k(kS0 + i);
    for (const FieldRef* out : {&ADDR, &ADDRK})
      slot_head(l0, 4, [&](std::uint32_t i) { return k(kA0 + i); }, [&](std::uint32_t r) { return APN[r]; }, *out,
                out == &ADDR ? Lin::constant(1) : k(kA0 + 3) + stores);
    // QSLOT: quotient bits as consumed (DQ(2 i + q) tokens): bit i in slot i.
    QB = B.field("div_bits", 32);
    slot_head(l0, 32, [&](std::uint32_t i) { return DQI[i]; }, [&](std::uint32_t i) { return DQBP[i]; }, QB);
    TB = B.field("div_trial_bits", 32);
    TN = B.field("div_trial_nibbles", 128);
    INR = B.field("addr_in_ram", 1);
    // One word key for the RAM, from the fetch (PCL step) or the data address (A3, S steps): the
    // pieces wl = w & 511, wh = w >> 9 of the word index; the key of word w is wl + wh - 1 > 0.
    WL = B.field("ram_wl", 512);
    WH = B.field("ram_wh", 512);
    in_ram(l0, ADDR, INR.dim());
    // fetch (the step that consumes PCL): wl = w & 511, wh = w >> 9, straight from the w nibbles
    const OH f0 = field_oh(PCLN, 0, 16), f1 = field_oh(PCLN, 16, 16), f2 = field_oh(PCHF, 4, 16),
             f3 = field_oh(PCHF, 20, 16), f4 = field_oh(PCHF, 0, 4);
    table(l0, {f0, f1, masked(f2, 1)}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{WL.dim(v[0] | (v[1] << 4) | (v[2] << 8)), 1.0}};
    });
    table(l0, {masked(f2, 0xE), f3, f4}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{WH.dim((v[0] >> 1) | (v[1] << 3) | (v[2] << 7)), 1.0}};
    });
    // data word: the load (A3 consumed) and every store byte (S_i consumed) address it
    key_pieces(l0, ADDRK, WL, WH, Lin::constant(1));
    // byte lane of the store byte S_i: (addr + i) & 3
    LANE = B.field("store_lane", 4);
    for (unsigned m = 0; m < 4; ++m)
      for (std::uint32_t i = 0; i < 4; ++i)
        when(l0, {any_of(nib(ADDRK, 0), [m](unsigned j) { return (j & 3) == m; }), k(kS0 + i)}, {{LANE.dim((m + i) & 3), 1.0}});
    // ECALL write: i + 1 for the byte index i of the slots (OI: nibbles 0, 1; OIH: nibbles 2, 3).
    IZ = B.field("oi_low_all_ones", 4);  // IZ_n = [nibbles 0 .. n-1 of i are all 15]
    INC = B.field("oi_next_index", 64);  // nibble one-hots of i + 1 (on OUT / ERR steps)
    auto inib = [&](std::uint32_t n) { return n < 2 ? field_oh(OIS, 16 * n, 16) : field_oh(OIHS, 16 * (n - 2), 16); };
    const Lin outc = k(kOut) + k(kErr);
    for (std::uint32_t n = 1; n < 4; ++n) {
      std::vector<Lin> conds = {outc};
      for (std::uint32_t j = 0; j < n; ++j) conds.push_back(inib(j)[15]);
      when(l0, conds, {{IZ.dim(n), 1.0}});
    }
    for (std::uint32_t n = 0; n < 4; ++n) {
      const OH carry = n == 0 ? OH{Lin(), Lin::constant(1)} : OH{Lin::constant(1) - IZ[n], IZ[n]};
      table(L(1), {inib(n), carry}, [&, n](const std::vector<unsigned>& v) {
        return SparseVec{{INC.dim(16 * n + ((v[0] + v[1]) & 15)), 1.0}};
      }, {outc});
    }
  }

  // The RAM: four heads, one per byte lane, each 2^18 word columns x 1 byte scalar, initialised
  // from the image's RAM range (lane b: bytes RAM_BASE + 4 w + b). Read with the word key (fetch,
  // load, store); every store byte (S_i consumed) is committed to lane (addr + i) & 3 of the data
  // word (beta = the lane one-hot), so a store is visible to every later read.
  void ram(const FieldRef& out) {
    LayerBuilder& l = L(1);
    for (std::uint32_t b = 0; b < 4; ++b) {
      const std::uint32_t h = l.add_head(kWords, 1, Activation::Relu, Activation::Relu);
      HeadBuilder& H = l.head(h);
      for (std::uint32_t w = 0; w < kWords; ++w) {
        H.q[w] = WL[w & 511] + WH[w >> 9] - 1.0;
        H.k[w] = H.q[w];
      }
      H.v[0] = PS[0];
      H.beta = LANE[b];
      H.out.emplace_back(0, out.dim(b), 1.0);
      Initialiser in;
      in.name = "ram_lane" + std::to_string(b);
      in.layer = 1;
      in.head = h;
      in.source = ByteSourceKind::Image;
      in.address = kRamBase + b;
      in.length = kWords;
      in.stride = 4;
      in.encoding = ByteEncoding::Scalar;
      in.bytes_per_column = 1;
      B.initialiser(in);
    }
  }

  // Byte scalars -> nibble one-hots in two stages (thresholds for the high nibble, then a
  // one-hot decode of the low nibble).
  void byte_decode(const FieldRef& bytes, std::uint32_t first, const FieldRef& hi, const FieldRef& los, const FieldRef& out) {
    LayerBuilder& s1 = L(2);
    LayerBuilder& s2 = L(3);
    for (std::uint32_t b = 0; b < 4; ++b) {
      const Lin x = bytes[first + b];
      // T_j = [x >= 16 j] = ReLU(x - 16 j + 1) - ReLU(x - 16 j), j = 1..15; hi one-hot: T_j - T_{j+1}.
      s1.unit_out(s1.relu_unit(x), los.dim(b), 1);
      s1.mlp_bias(hi.dim(16 * b + 0), 1);
      for (std::uint32_t j = 1; j < 16; ++j) {
        const std::uint32_t u1 = s1.relu_unit(x - (16.0 * j - 1));
        const std::uint32_t u2 = s1.relu_unit(x - 16.0 * j);
        for (auto [u, sgn] : {std::pair{u1, 1.0}, std::pair{u2, -1.0}}) {
          s1.unit_out(u, hi.dim(16 * b + j), sgn);
          s1.unit_out(u, hi.dim(16 * b + j - 1), -sgn);
          s1.unit_out(u, los.dim(b), -16 * sgn);
        }
      }
      FieldRef lo_out{out.name, out.offset + 32 * b, 16};
      onehot_decode(s2, los[b], lo_out);
      for (std::uint32_t v = 0; v < 16; ++v) pass(s2, hi[16 * b + v], out.dim(32 * b + 16 + v));
    }
  }

  void layer1_2() {
    IWB = B.field("ram_bytes", 4);  // the word read this step: the instruction (fetch) or the load data (A3)
    ram(IWB);
    // LATCH (layer 2): the instruction word (written at the fetch) and the data word (written when
    // A3 is consumed), read every step.
    LW_ = B.field("latched_words", 8);
    for (std::uint32_t s = 0; s < 2; ++s) {
      const Lin when_ = s == 0 ? fetch() : k(kA0 + 3);
      const std::uint32_t h = L(2).add_head(1, 4);
      HeadBuilder& H = L(2).head(h);
      H.k[0] = Lin::constant(1);
      H.beta = when_;
      // the data word is only needed on the steps that show a loaded value (A3, W0..W2 consumed)
      H.q[0] = s == 0 ? Lin::constant(1) : k(kA0 + 3) + k(kW0) + k(kW0 + 1) + k(kW0 + 2);
      for (std::uint32_t b = 0; b < 4; ++b) {
        H.v[b] = IWB[b];
        H.out.emplace_back(b, LW_.dim(4 * s + b), 1.0);
      }
    }
    IHI = B.field("inst_hi", 64);
    ILOS = B.field("inst_lo_scalar", 4);
    DHI = B.field("data_hi", 64);
    DLOS = B.field("data_lo_scalar", 4);
    IN = B.field("inst_nibbles", 128);
    DN = B.field("data_nibbles", 128);
    byte_decode(LW_, 0, IHI, ILOS, IN);
    byte_decode(LW_, 4, DHI, DLOS, DN);
  }

  // ---- decode ----
  OH imm_i(std::uint32_t n) const {  // imm_i nibble n
    if (n < 3) return nib(IN, 5 + n);
    return sign_oh();
  }
  OH sign_oh() const {
    OH s(16);
    s[15] = any_of(nib(IN, 7), [](unsigned j) { return j >= 8; });
    s[0] = any_of(nib(IN, 7), [](unsigned j) { return j < 8; });
    return s;
  }
  OH imm_s(std::uint32_t n) const {
    if (n < 2) return field_oh(IMS01, 16 * n, 16);
    if (n == 2) return nib(IN, 7);
    return sign_oh();
  }
  OH imm_u(std::uint32_t n) const { return n < 3 ? const_oh(16, 0) : nib(IN, n); }

  void layer3() {
    LayerBuilder& l3 = L(4);
    RD = B.field("rd", 32);
    RS1 = B.field("rs1", 32);
    RS2 = B.field("rs2", 32);
    table(l3, {masked(nib(IN, 1), 8), nib(IN, 2)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{RD.dim((v[0] >> 3) | (v[1] << 1)), 1.0}}; });
    table(l3, {masked(nib(IN, 3), 8), nib(IN, 4)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{RS1.dim((v[0] >> 3) | (v[1] << 1)), 1.0}}; });
    table(l3, {nib(IN, 5), masked(nib(IN, 6), 1)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{RS2.dim(v[0] | (v[1] << 4)), 1.0}}; });
    // (opcode, f3) candidates per class
    PRE = B.field("class_candidate", kNumCls);
    table(l3, {nib(IN, 0), masked(nib(IN, 1), 7), masked(nib(IN, 3), 7)}, [&](const std::vector<unsigned>& v) {
      const unsigned opcode = v[0] | (v[1] << 4), f3 = v[2];
      SparseVec out;
      for (const ClsSpec& s : cls_specs())
        if (s.opcode == opcode && (s.f3 < 0 || static_cast<unsigned>(s.f3) == f3)) out.push_back({PRE.dim(s.cls), 1.0});
      return out;
    });
    F7 = B.field("f7_class", kF7Values.size());
    table(l3, {masked(nib(IN, 6), 0xE), nib(IN, 7)}, [&](const std::vector<unsigned>& v) {
      const int f7 = static_cast<int>((v[0] >> 1) | (v[1] << 3));
      const int i = f7_index(f7);
      return i < 0 ? SparseVec{} : SparseVec{{F7.dim(static_cast<std::uint32_t>(i)), 1.0}};
    });
    WECALL = B.field("word_ecall", 1);
    WEBREAK = B.field("word_ebreak", 1);
    for (auto [word, out] : {std::pair{0x00000073u, WECALL.dim()}, std::pair{0x00100073u, WEBREAK.dim()}}) {
      std::vector<Lin> conds;
      for (std::uint32_t n = 0; n < 8; ++n) conds.push_back(nib(IN, n)[(word >> (4 * n)) & 15]);
      when(l3, conds, {{out, 1.0}});
    }
    IMS01 = B.field("imm_s_nibbles01", 32);
    // imm_s[3:0] = inst[10:7]; imm_s[7:4] = inst[27:25] : inst[11]
    table(l3, {masked(nib(IN, 1), 8), masked(nib(IN, 2), 7)}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{IMS01.dim((v[0] >> 3) | (v[1] << 1)), 1.0}};
    });
    table(l3, {masked(nib(IN, 2), 8), masked(nib(IN, 6), 0xE)}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{IMS01.dim(16 + ((v[0] >> 3) | v[1])), 1.0}};
    });
  }

  // act_q = ReLU lets a query row be gated: ReLU(RS1[r] + gate - 1).
  void reg_port(const std::string& name, const std::function<Lin(std::uint32_t)>& q, const FieldRef& out,
                Activation act_q = Activation::Identity) {
    LayerBuilder& l4 = L(5);
    const std::uint32_t h = l4.add_head(32, 128, Activation::Identity, act_q);
    HeadBuilder& H = l4.head(h);
    for (std::uint32_t r = 0; r < 32; ++r) H.q[r] = q(r);
    for (std::uint32_t i = 0; i < 128; ++i) H.out.emplace_back(i, out.dim(i), 1.0);
    // Write-back: when W3 is consumed, rd (a0 for ECALL) <- W0..W3 as consumed (W slot), before
    // this step's reads; W1..W3 were computed from the old sources. x0 is never written (no W
    // token has rd = x0).
    const Lin ec = WECALL[0];
    for (std::uint32_t r = 0; r < 32; ++r) H.k[r] = RD[r] + ec * ((r == 10 ? 1.0 : 0.0) - (r == 0 ? 1.0 : 0.0));
    for (std::uint32_t i = 0; i < 128; ++i) H.v[i] = WSR[i];
    H.beta = k(kW0 + 3);
    Initialiser in;
    in.name = name;
    in.layer = 5;
    in.head = h;
    in.column = 1;
    in.source = ByteSourceKind::Image;
    in.address = kRegImageAddress + 4;
    in.length = 31 * 4;
    in.encoding = ByteEncoding::Nibbles;
    in.bytes_per_column = 4;
    B.initialiser(in);
    Initialiser z;  // x0 = 0 as nibble one-hots
    z.name = name + "_x0";
    z.layer = 5;
    z.head = h;
    z.column = 0;
    z.is_const = true;
    z.values.assign(128, 0.0f);
    for (std::uint32_t b = 0; b < 4; ++b) {
      z.values[32 * b] = 1.0f;
      z.values[32 * b + 16] = 1.0f;
    }
    B.initialiser(z);
  }

  void layer4() {
    R1 = B.field("rs1_value", 128);
    R2 = B.field("rs2_value", 128);
    RA1 = B.field("a1_value", 128);
    RA2 = B.field("a2_value", 128);
    const Lin ec = WECALL[0];
    reg_port("reg_port1", [&](std::uint32_t r) { return RS1[r] + ec * ((r == 17 ? 1.0 : 0.0) - (r == 0 ? 1.0 : 0.0)); }, R1);
    reg_port("reg_port2", [&](std::uint32_t r) { return RS2[r] + ec * ((r == 10 ? 1.0 : 0.0) - (r == 0 ? 1.0 : 0.0)); }, R2);
    reg_port("reg_port3", [&](std::uint32_t r) { return r == 11 ? ec : Lin(); }, RA1);
    reg_port("reg_port4", [&](std::uint32_t r) { return r == 12 ? ec : Lin(); }, RA2);
    // The vector ops' operands X(rs1), X(rs2) (vector.md section 4.0), zero on every other class,
    // so the vector units below are idle elsewhere. PRE (layer 4) is the (opcode, f3) candidate.
    RV1 = B.field("vec_rs1_value", 128);
    RV2 = B.field("vec_rs2_value", 128);
    Lin vpre;
    for (Cls c : {VLD, VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED}) vpre += PRE[c];
    reg_port("reg_port5", [&](std::uint32_t r) { return RS1[r] + vpre - 1.0; }, RV1, Activation::Relu);
    reg_port("reg_port6", [&](std::uint32_t r) { return RS2[r] + vpre - 1.0; }, RV2, Activation::Relu);
    CN = B.field("bn_c", 32);      // bignum c and acc: read from the BNSTATE head of layer 7 (commits())
    ACN = B.field("bn_acc", 384);
    LayerBuilder& l4 = L(5);
    CLS = B.field("class", kNumCls);
    ILL = B.field("illegal", 1);
    l4.mlp_bias(ILL.dim(), 1);
    for (const ClsSpec& s : cls_specs()) {
      std::vector<Lin> conds = {PRE[s.cls]};
      if (s.f7 >= 0) conds.push_back(F7[static_cast<std::uint32_t>(f7_index(s.f7))]);
      switch (s.cls) {  // bignum.md section 1: fields that must be zero
        case BN_XCHGC: conds.push_back(RS2[0]); break;
        case BN_MAC: conds.push_back(RD[0]); break;
        case BN_ACCRD: conds.push_back(RS1[0]); conds.push_back(RS2[0]); break;
        case BN_ACCCLR: conds.push_back(RD[0]); conds.push_back(RS1[0]); conds.push_back(RS2[0]); break;
        default: break;
      }
      when(l4, conds, {{CLS.dim(s.cls), 1.0}, {ILL.dim(), -1.0}});
    }
    when(l4, {WECALL[0]}, {{CLS.dim(ECALL), 1.0}, {ILL.dim(), -1.0}});
    when(l4, {WEBREAK[0]}, {{CLS.dim(EBREAK), 1.0}, {ILL.dim(), -1.0}});
  }

  Lin sum_cls(std::initializer_list<Cls> cs) const {
    Lin l;
    for (Cls c : cs) l += cls(c);
    return l;
  }
  static constexpr std::array<Cls, 3> cf_cls = {BN_ADDC, BN_SUBB, BN_XCHGC};
  Lin cmp_reg() const { return sum_cls({SLT, SLTU, BEQ, BNE, BLT, BGE, BLTU, BGEU, BN_SUBB}); }
  Lin cmp_imm() const { return sum_cls({SLTI, SLTIU}); }
  Lin cmp_signed() const { return sum_cls({SLT, SLTI, BLT, BGE}); }

  void layer5() {
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

  std::uint32_t ga(ASrc s, std::uint32_t i) const { return GA.dim(4 * s + i); }
  std::uint32_t gb(BSrc s, std::uint32_t i) const { return GB.dim(4 * s + i); }
  SparseVec token_out(std::uint32_t kind, std::uint32_t payload) const {
    return {{NK.dim(kind), 1.0}, {NPL.dim(payload & 15), 1.0}, {NPH.dim(payload >> 4), 1.0}};
  }

  // Shifts: amount one-hots SQ (shamt >> 2) and SR (shamt & 3), gated by the shift classes.
  void shift_amount() {
    LayerBuilder& l5 = L(6);
    SQ = B.field("shift_q", 8);
    SR = B.field("shift_r", 4);
    const Lin imm = sum_cls({SLLI, SRLI, SRAI}), reg = sum_cls({SLL, SRL, SRA});
    for (std::uint32_t q = 0; q < 8; ++q) {
      Lin p;
      for (std::uint32_t x = 0; x < 32; ++x)
        if ((x >> 2) == q) p += RS2[x];
      when(l5, {p, imm}, {{SQ.dim(q), 1.0}});
    }
    for (std::uint32_t r = 0; r < 4; ++r) {
      Lin p;
      for (std::uint32_t x = 0; x < 32; ++x)
        if ((x & 3) == r) p += RS2[x];
      when(l5, {p, imm}, {{SR.dim(r), 1.0}});
      when(l5, {any_of(nib(R2, 0), [r](unsigned j) { return (j & 3) == r; }), reg}, {{SR.dim(r), 1.0}});
    }
    table(l5, {masked(nib(R2, 0), 0xC), masked(nib(R2, 1), 1)}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{SQ.dim((v[0] >> 2) | (v[1] << 2)), 1.0}};
    }, {reg});
  }
  // Shift step gates G[dir][i][q] (dir 0: left, 1: right logical, 2: right arithmetic).
  Lin shift_dir(std::uint32_t dir) const {
    return dir == 0 ? sum_cls({SLLI, SLL}) : dir == 1 ? sum_cls({SRLI, SRL}) : sum_cls({SRAI, SRA});
  }
  std::uint32_t sg(std::uint32_t dir, std::uint32_t i, std::uint32_t q) const { return SHG.dim(32 * dir + 8 * i + q); }
  void shift_cases() {
    LayerBuilder& l6 = L(7);
    SHG = B.field("shift_gate", 96);
    for (std::uint32_t dir = 0; dir < 3; ++dir) {
      when(l6, {shift_dir(dir), fetch(), RD[0]}, token_out(kNop, 0));
      for (std::uint32_t i = 0; i < 4; ++i)
        for (std::uint32_t q = 0; q < 8; ++q) {
          std::vector<Lin> conds = {shift_dir(dir), SQ[q]};
          if (i == 0) {
            conds.push_back(fetch());
            conds.push_back(Lin::constant(1) - RD[0]);
          } else {
            conds.push_back(k(kW0 + i - 1));
          }
          when(l6, conds, {{sg(dir, i, q), 1.0}, {NK.dim(kW0 + i), 1.0}});
        }
    }
  }
  // Windows of three consecutive rs1 nibbles around result byte i (fill outside the word).
  void shift_windows() {
    LayerBuilder& l7 = L(8);
    // rs1 copied for the shift classes only (layer 6), so the windows are idle on other steps
    R1S = B.field("rs1_for_shift", 128);
    const Lin shifts = shift_dir(0) + shift_dir(1) + shift_dir(2);
    for (std::uint32_t j = 0; j < 128; ++j) when(L(6), {R1[j], shifts}, {{R1S.dim(j), 1.0}});
    SHW = B.field("shift_window", 2 * 3 * 16);  // [left/right][d][v]
    for (std::uint32_t dir = 0; dir < 3; ++dir)
      for (std::uint32_t i = 0; i < 4; ++i)
        for (std::uint32_t q = 0; q < 8; ++q)
          for (std::uint32_t d = 0; d < 3; ++d) {
            const int j = dir == 0 ? static_cast<int>(2 * i) - static_cast<int>(q) - 1 + static_cast<int>(d)
                                   : static_cast<int>(2 * i + q + d);
            OH src;
            if (j >= 0 && j <= 7) src = nib(R1S, static_cast<std::uint32_t>(j));
            else if (dir == 2) src = sign_of(R1S);
            else src = const_oh(16, 0);
            const std::uint32_t side = dir == 0 ? 0 : 1;
            for (std::uint32_t v = 0; v < 16; ++v)
              if (!is_zero(src[v])) when(l7, {src[v], Lin::dim(sg(dir, i, q))}, {{SHW.dim(48 * side + 16 * d + v), 1.0}});
          }
  }
  OH sign_of(const FieldRef& f) const {
    OH s(16);
    s[15] = any_of(nib(f, 7), [](unsigned j) { return j >= 8; });
    s[0] = any_of(nib(f, 7), [](unsigned j) { return j < 8; });
    return s;
  }
  // A result nibble is two disjoint bit fields: left: ((hi << r) & 15) | (lo >> (4 - r)); right:
  // (lo >> r) | ((hi << (4 - r)) & 15). Layer 9 makes each field a one-hot from (window nibble,
  // r) (a nibble touches 4 units, r 16); layer 10 joins the two fields (16 + 16 touches). One
  // table over (two nibbles, r) touched 256 units per r value.
  void shift_tables() {
    LayerBuilder& l8 = L(9);
    LayerBuilder& l9 = L(10);
    const FieldRef SHP = B.field("shift_parts", 4 * 2 * 16);  // [result nibble][part][value]
    auto win = [&](std::uint32_t side, std::uint32_t d) { return field_oh(SHW, 48 * side + 16 * d, 16); };
    auto part = [&](std::uint32_t t, std::uint32_t which) { return field_oh(SHP, 32 * t + 16 * which, 16); };
    const OH r = field_oh(SR, 0, 4);
    struct Nib {
      std::uint32_t side, d_hi, d_lo;
      bool left, high;
    };
    // left NPL: hi win(0,1), lo win(0,0); left NPH: hi win(0,2), lo win(0,1);
    // right NPL: lo win(1,0), hi win(1,1); right NPH: lo win(1,1), hi win(1,2)
    const std::array<Nib, 4> nibs = {Nib{0, 1, 0, true, false}, Nib{0, 2, 1, true, true},
                                     Nib{1, 1, 0, false, false}, Nib{1, 2, 1, false, true}};
    for (std::uint32_t t = 0; t < 4; ++t) {
      const Nib& n = nibs[t];
      const FieldRef& out = n.high ? NPH : NPL;
      table(l8, {win(n.side, n.d_hi), r}, [&](const std::vector<unsigned>& v) {
        const unsigned f = n.left ? (v[0] << v[1]) & 15 : (v[0] << (4 - v[1])) & 15;
        return SparseVec{{SHP.dim(32 * t + f), 1.0}};
      });
      table(l8, {win(n.side, n.d_lo), r}, [&](const std::vector<unsigned>& v) {
        const unsigned f = n.left ? v[0] >> (4 - v[1]) : v[0] >> v[1];
        return SparseVec{{SHP.dim(32 * t + 16 + f), 1.0}};
      });
      table(l9, {part(t, 0), part(t, 1)}, [&](const std::vector<unsigned>& v) {
        return SparseVec{{out.dim(v[0] | v[1]), 1.0}};
      });
    }
  }

  // Zba: rs1 << k (k = 1, 2, 3) as 8 nibble one-hots, from a copy of rs1 gated by the Zba classes
  // (so the tables cost nothing on other steps).
  void zba_shift() {
    R1Z = B.field("rs1_for_zba", 128);
    SHL = B.field("rs1_shifted", 128);
    const Lin zba = sum_cls({SH1ADD, SH2ADD, SH3ADD});
    for (std::uint32_t j = 0; j < 128; ++j) when(L(6), {R1[j], zba}, {{R1Z.dim(j), 1.0}});
    const std::array<Cls, 3> cs = {SH1ADD, SH2ADD, SH3ADD};
    for (unsigned kk = 1; kk <= 3; ++kk)
      for (std::uint32_t n = 0; n < 8; ++n) {
        const OH cur = field_oh(R1Z, 16 * n, 16);
        const OH prev = n == 0 ? const_oh(16, 0) : field_oh(R1Z, 16 * (n - 1), 16);
        table(L(7), {cur, prev}, [&, kk, n](const std::vector<unsigned>& v) {
          return SparseVec{{SHL.dim(16 * n + (((v[0] << kk) | (v[1] >> (4 - kk))) & 15)), 1.0}};
        }, {cls(cs[kk - 1])});
      }
  }

  // MUL, MULH, MULHSU, MULHU: the 64-bit product as 16 nibble columns (nibble-product tables),
  // two carry-save splits, a carry-lookahead, then the nibbles of the byte W_i shows.
  Lin mul_cls() const { return sum_cls({MUL, MULH, MULHSU, MULHU, BN_MAC}); }
  void split16(LayerBuilder& l, const Lin& x, std::uint32_t max_carry, std::uint32_t carry, std::uint32_t digit) {
    pass(l, x, digit);
    for (std::uint32_t j = 1; j <= max_carry; ++j) {
      const std::uint32_t u1 = l.relu_unit(x - (16.0 * j - 1));
      const std::uint32_t u2 = l.relu_unit(x - 16.0 * j);
      l.unit_out(u1, carry, 1);
      l.unit_out(u2, carry, -1);
      l.unit_out(u1, digit, -16);
      l.unit_out(u2, digit, 16);
    }
  }
  Lin nib_value(const OH& o, bool inverted) const {
    Lin l;
    for (unsigned v = 0; v < 16; ++v) l += o[v] * static_cast<double>(inverted ? 15 - v : v);
    return l;
  }
  // 16-bit half h (0: bits 15..0, 1: bits 31..16) of a value held as 8 nibble one-hots, as a
  // linear form (0 .. 65,535).
  static Lin half(const FieldRef& f, std::uint32_t h) {
    return byte_value(nib(f, 4 * h), nib(f, 4 * h + 1)) + byte_value(nib(f, 4 * h + 2), nib(f, 4 * h + 3)) * 256.0;
  }
  // ECALL write buffer check (isa.md section 5): [a1, a1 + len) inside RAM, as a 33-bit sum of
  // 16-bit halves (every value < 2^18).
  void write_buffer_check() {
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

  // ---- the vector unit: VLD (vector.md sections 4.8, 5, 6) -----------------------------------
  // VLD's trace (its words sat32(sext8(b) M) go to VR through vld_product() and vr_file()).
  // After the pc tokens: VLB0..VLB3, the bytes of M
  // at a .. a + 3 ("M phase": no VLG consumed since PCL), then per element group g: VLG(g) and
  // VLB_m(b_{4g+m}) at a + 4 + 4g + m. Every byte is read from the RAM copy (layer 15): in the M
  // phase at a itself (RV1), in the element phase at a + 4 + 4g from the lookahead adder (steps
  // that consume VLG or VLB0..VLB2). The lane is the byte's m (a is 4-aligned once the traps pass).
  // The last element i = n - 1 is found by comparing (g, m) with ((n - 1) >> 2, (n - 1) & 3).
  void vld() {
    const Lin v = cls(VLD), f = fetch(), one = Lin::constant(1);
    // the element group g of the last VLG and whether one was consumed since PCL: a slot written
    // on VLG and PCL, read (layer 6) only on VLD's steps
    VGS = B.field("vlg_slot", 33);  // layer 0: VR's write index (vr_file()) needs g by layer 5
    slot_head(L(0), 1, [&](std::uint32_t) { return k(kVlg) + k(kPcl); }, [&](std::uint32_t r) { return VLGN[r]; }, VGS,
              int8_stream());
    const Lin seen = VGS[32];
    const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
    // Trap 5 (a < RAM_BASE or a + 4 + n > RAM_END; the other codes: vector_traps()), with
    // a + 4 + n as a 33-bit sum of 16-bit halves: lo = a_lo + 4 + n < 2^17 for an aligned a
    // (a misaligned a is trap 4, which wins).
    const Lin alo = half(RV1, 0), ahi = half(RV1, 1), n = half(RV2, 1);
    const Lin lo = alo + n + 4.0;
    VK = B.field("vld_lo_carry", 1);
    VZ = B.field("vld_lo_is_2p16", 1);
    threshold(L(6), lo, 65536, VK.dim());
    threshold(L(6), lo, 65536, VZ.dim());
    threshold(L(6), lo, 65537, VZ.dim(), -1);
    VSH = B.field("vld_hi_checks", 3);  // [s_hi <= 16], [s_hi >= 17], [s_hi >= 18]
    VOK = B.field("vld_a_ge_ram_base", 1);
    const Lin shi = ahi + VK[0];
    pass(L(7), v, VSH.dim(0));
    threshold(L(7), shi, 17, VSH.dim(0), -1);
    threshold(L(7), shi, 17, VSH.dim(1));
    threshold(L(7), shi, 18, VSH.dim(2));
    threshold(L(7), ahi, 1, VOK.dim());
    LANEX = B.field("out_lane", 4);
    RDM = B.field("vld_read_m", 1);
    RDE = B.field("vld_read_element", 1);
    LayerBuilder& l9 = L(9);
    // the fetch step without a trap (VLB0 of M, read at a): vector_traps()
    // M phase: VLB_{m+1} after VLB_m, VLG(0) after VLB3
    for (std::uint32_t m = 0; m < 3; ++m)
      when(l9, {v, k(kVlb0 + m), one - seen}, {{NK.dim(kVlb0 + m + 1), 1.0}, {LANEX.dim(m + 1), 1.0}, {RDM.dim(), 1.0}});
    when(l9, {v, k(kVlb0 + 3), one - seen}, token_out(kVlg, 0));
    // element phase: VLB0 after VLG(g); the adder computes a + 4 + 4g on VLG and VLB0..VLB2 steps
    // (the word of the next byte); VGE is g gated to those steps.
    VEG = B.field("vld_adder_gate", 1);
    VGE = B.field("vld_group_gated", 32);
    when(l9, {v, k(kVlg)}, {{NK.dim(kVlb0), 1.0}, {LANEX.dim(0), 1.0}, {RDE.dim(), 1.0}});
    const Lin kv = k(kVlg) + k(kVlb0) + k(kVlb0 + 1) + k(kVlb0 + 2);
    when(l9, {v, seen, kv}, {{VEG.dim(), 1.0}});
    for (unsigned j = 0; j < 16; ++j) {
      when(l9, {v, seen, kv, glo[j]}, {{VGE.dim(j), 1.0}});
      when(l9, {v, seen, kv, ghi[j]}, {{VGE.dim(16 + j), 1.0}});
    }
    // last element: c = n - 1 (n <= 1024: nibbles 4..6 of rs2), target (c >> 2, c & 3)
    VC0 = B.field("vld_c_nib0", 16);
    VC1 = B.field("vld_c_nib1", 16);
    VC2 = B.field("vld_c_nib2", 16);
    VZ45 = B.field("vld_n_low_byte_zero", 1);
    const OH n4 = nib(RV2, 4), n5 = nib(RV2, 5), n6 = nib(RV2, 6);
    table(L(6), {n4}, [&](const std::vector<unsigned>& x) { return SparseVec{{VC0.dim((x[0] + 15) & 15), 1.0}}; });
    table(L(6), {n5, OH{one - n4[0], n4[0]}},
          [&](const std::vector<unsigned>& x) { return SparseVec{{VC1.dim((x[0] + 16 - x[1]) & 15), 1.0}}; });
    when(L(6), {n4[0], n5[0]}, {{VZ45.dim(), 1.0}});
    table(L(7), {n6, OH{one - VZ45[0], VZ45[0]}},
          [&](const std::vector<unsigned>& x) { return SparseVec{{VC2.dim((x[0] + 16 - x[1]) & 15), 1.0}}; });
    VGT = B.field("vld_last_group", 32);
    const OH c0 = field_oh(VC0, 0, 16), c1 = field_oh(VC1, 0, 16), c2 = field_oh(VC2, 0, 16);
    table(L(8), {masked(c0, 0xC), masked(c1, 3)},
          [&](const std::vector<unsigned>& x) { return SparseVec{{VGT.dim((x[0] >> 2) | ((x[1] & 3) << 2)), 1.0}}; });
    table(L(8), {masked(c1, 0xC), masked(c2, 3)},
          [&](const std::vector<unsigned>& x) { return SparseVec{{VGT.dim(16 + ((x[0] >> 2) | ((x[1] & 3) << 2))), 1.0}}; });
    VEQ = B.field("vld_last_eq", 3);  // g lo, g hi, m equal to the last element's
    const OH cm = masked(c0, 3);
    for (unsigned j = 0; j < 16; ++j) {
      when(l9, {glo[j], VGT[j]}, {{VEQ.dim(0), 1.0}});
      when(l9, {ghi[j], VGT[16 + j]}, {{VEQ.dim(1), 1.0}});
    }
    for (std::uint32_t m = 0; m < 4; ++m) when(l9, {k(kVlb0 + m), cm[m]}, {{VEQ.dim(2), 1.0}});
    VLAST = B.field("vld_last", 1);
    when(L(10), {v, seen, VEQ[0], VEQ[1], VEQ[2]}, {{VLAST.dim(), 1.0}});
    // element phase, after VLB_m: VLB_{m+1} (m < 3) or VLG(g + 1) (m = 3); after the last: the end
    LayerBuilder& l11 = L(11);
    const Lin nl = one - VLAST[0];
    for (std::uint32_t m = 0; m < 3; ++m)
      when(l11, {v, seen, k(kVlb0 + m), nl}, {{NK.dim(kVlb0 + m + 1), 1.0}, {LANEX.dim(m + 1), 1.0}, {RDE.dim(), 1.0}});
    const std::vector<Lin> next_group = {v, seen, k(kVlb0 + 3), nl};
    when(l11, next_group, {{NK.dim(kVlg), 1.0}});
    table(l11, {glo}, [&](const std::vector<unsigned>& x) { return SparseVec{{NPL.dim((x[0] + 1) & 15), 1.0}}; }, next_group);
    table(l11, {ghi, OH{one - glo[15], glo[15]}},
          [&](const std::vector<unsigned>& x) { return SparseVec{{NPH.dim((x[0] + x[1]) & 15), 1.0}}; }, next_group);
    const Lin vlb = vlb_any();
    when(l11, {v, seen, vlb, VLAST[0]}, {{ENDI.dim(), 1.0}});
  }

  // ---- the vector unit's traps (vector.md sections 4.0, 6) --------------------------------
  // Every vector op checks every trap condition of section 6 on its first step and emits
  // TRAP(code) with the lowest applicable code. Without a trap, each op starts its tokens (vld(),
  // vew(), vfn(), vred(), vq(), vexp(), vmat(), vmatr(), vmatr_v()).
  // Operands: A = X(rs1) & 0xFFFF, B = X(rs1) >> 16, C = X(rs2) & 0xFFFF, N = X(rs2) >> 16.
  // Layers: 4 gated f7 nibbles; 5 the f7 one-hot; 6 the f7 field checks and operand-range
  // enables; 7 the operand checks (thresholds of linear forms, |x| < 2^23); 8 the ANDs of
  // interval tests (and VLD's RAM check, vld()); 9 one flag per code; 10 the decision.
  void vector_traps() {
    const std::array<Cls, 8> ops = {VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED, VLD};
    const Lin one = Lin::constant(1), f = fetch();
    Lin anyv;  // any vector op
    for (Cls c : ops) anyv += cls(c);
    // f7 = inst[31:25] as a one-hot, only on custom-1 words (gated nibble copies, layer 4)
    VIN = B.field("vec_f7_nibbles", 32);
    const Lin custom1 = nib(IN, 0)[0xB] + masked(nib(IN, 1), 7)[2] - 2.0;  // with a nibble: ReLU(a + b + c - 2)
    for (unsigned j = 0; j < 16; ++j) {
      pass(L(4), nib(IN, 6)[j] + custom1, VIN.dim(j));
      pass(L(4), nib(IN, 7)[j] + custom1, VIN.dim(16 + j));
    }
    F7X_ = B.field("vec_f7", 128);
    const FieldRef& F7X = F7X_;
    table(L(5), {masked(field_oh(VIN, 0, 16), 0xE), field_oh(VIN, 16, 16)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{F7X.dim((v[0] >> 1) | (v[1] << 3)), 1.0}}; });
    auto f7is = [&](const std::function<bool(unsigned)>& pred) {  // [pred(f7)], linear in the one-hot
      Lin l;
      for (unsigned x = 0; x < 128; ++x)
        if (pred(x)) l += F7X[x];
      return l;
    };
    // raw(c): sum of this step's reasons for code c (4, 5, 16..23; normalised to 0/1 in layer 9)
    const std::array<unsigned, 10> codes = {4, 5, 16, 17, 18, 19, 20, 21, 22, 23};
    const FieldRef RAW = B.field("vec_trap_reasons", static_cast<std::uint32_t>(codes.size()));
    auto slot = [&](unsigned code) {
      return static_cast<std::uint32_t>(std::find(codes.begin(), codes.end(), code) - codes.begin());
    };
    auto raw = [&](unsigned code) { return RAW.dim(slot(code)); };
    // 16 VEC_FIELD: invalid or nonzero f7 fields; rd != x0 except VMAT argmax mode
    const std::array<std::function<bool(unsigned)>, 8> bad = {
        [](unsigned x) { return (x & 7) == 0 || (x & 7) == 7 || (x >> 4) != 0; },                    // VMAT
        [](unsigned x) { return (x >> 1) != 0; },                                                    // VMATR
        [](unsigned x) { return (x & 3) == 3 || (x >> 2) != 0; },                                    // VQ
        [](unsigned x) { return (x >> 3) != 0; },                                                    // VEXP
        [](unsigned x) {                                                                             // VEW
          const unsigned mode = x & 3, gs = (x >> 2) & 7;
          return (x >> 5) != 0 || gs == 7 || (mode != 2 && gs != 0);
        },
        [](unsigned x) { return x >= 3; },                                                           // VFN
        [](unsigned x) { return (x & 3) == 3 || ((x & 3) == 2 && (x >> 2) != 0); },                // VRED
        [](unsigned x) { return x != 0; },                                                           // VLD
    };
    const Lin argmax = f7is([](unsigned x) { return (x & 8) != 0; });
    for (std::size_t i = 0; i < ops.size(); ++i) {
      when(L(6), {cls(ops[i]), f7is(bad[i])}, {{raw(16), 1.0}});
      if (ops[i] == VMAT) when(L(6), {cls(VMAT), one - RD[0], one - argmax}, {{raw(16), 1.0}});
      else when(L(6), {cls(ops[i]), one - RD[0]}, {{raw(16), 1.0}});
    }
    // VLD (section 4.8): 4 a mod 4 != 0; 5 the record outside RAM (sums: vld()); 17 [dst, dst + n) outside
    // VR (layer 7 below)
    when(L(6), {cls(VLD), any_of(nib(RV1, 0), [](unsigned j) { return (j & 3) != 0; })}, {{raw(4), 1.0}});
    // the record is in RAM iff a >= RAM_BASE and (s_hi <= 16 or s = 17 * 2^16): raw(5) = VLD - that
    pass(L(8), cls(VLD), raw(5));
    when(L(8), {VOK[0], VSH[0]}, {{raw(5), -1.0}});  // VSH[0] is 0 on other classes
    when(L(8), {cls(VLD), VOK[0], VSH[1] - VSH[2], VZ[0]}, {{raw(5), -1.0}});
    // 18 VEC_LEN for every op: the count (R, T, n) is 0
    const OH n4 = nib(RV2, 4);
    when(L(6), {anyv, n4[0], nib(RV2, 5)[0], nib(RV2, 6)[0], nib(RV2, 7)[0]}, {{raw(18), 1.0}});
    // VEW ROT: n odd
    when(L(6), {cls(VEW), f7is([](unsigned x) { return (x & 3) == 3; }), any_of(n4, [](unsigned j) { return (j & 1) != 0; })},
         {{raw(18), 1.0}});
    // Operand-range enables (layer 6): class and f7 sub-field, each 0/1.
    struct En {
      Cls c;
      std::function<bool(unsigned)> pred;
    };
    std::vector<En> ens;
    auto en = [&](Cls c, std::function<bool(unsigned)> pred) {
      ens.push_back({c, std::move(pred)});
      return static_cast<std::uint32_t>(ens.size() - 1);
    };
    const std::uint32_t mat_w = en(VMAT, [](unsigned x) { return (x & 8) == 0; });
    std::array<std::uint32_t, 7> mat_k{};
    for (unsigned kk = 1; kk <= 6; ++kk) mat_k[kk] = en(VMAT, [kk](unsigned x) { return (x & 7) == kk; });
    const std::uint32_t r_k = en(VMATR, [](unsigned x) { return (x & 1) == 0; });
    const std::uint32_t r_v = en(VMATR, [](unsigned x) { return (x & 1) == 1; });
    std::array<std::uint32_t, 3> fn_e{};
    for (unsigned fn = 0; fn < 3; ++fn) fn_e[fn] = en(VFN, [fn](unsigned x) { return x == fn; });
    const std::uint32_t q_act = en(VQ, [](unsigned x) { return (x & 3) == 0; });
    const std::uint32_t q_kv = en(VQ, [](unsigned x) { return (x & 3) == 1 || (x & 3) == 2; });
    std::array<std::uint32_t, 9> x_g{};
    for (unsigned g = 1; g <= 8; ++g) x_g[g] = en(VEXP, [g](unsigned x) { return (x & 7) + 1 == g; });
    std::array<std::uint32_t, 4> w_m{};
    for (unsigned m = 0; m < 4; ++m) w_m[m] = en(VEW, [m](unsigned x) { return (x & 3) == m; });
    std::array<std::uint32_t, 7> w_gs{};
    for (unsigned gs = 0; gs <= 6; ++gs) w_gs[gs] = en(VEW, [gs](unsigned x) { return (x & 3) == 2 && ((x >> 2) & 7) == gs; });
    const std::uint32_t red_sum = en(VRED, [](unsigned x) { return (x & 3) == 1; });
    const std::uint32_t red_sq = en(VRED, [](unsigned x) { return (x & 3) == 0; });
    const std::uint32_t red_max = en(VRED, [](unsigned x) { return (x & 3) == 2; });
    const FieldRef EN = B.field("vec_enables", static_cast<std::uint32_t>(ens.size()));
    for (std::uint32_t i = 0; i < ens.size(); ++i) when(L(6), {cls(ens[i].c), f7is(ens[i].pred)}, {{EN.dim(i), 1.0}});
    auto E = [&](std::uint32_t i) { return EN[i]; };
    // Operand checks (layer 7): [x >= t] when the enable is 1, into raw[code] or an AND input.
    const Lin A = half(RV1, 0), Bv = half(RV1, 1), C = half(RV2, 0), N = half(RV2, 1);
    constexpr double kHi = 4194304.0 + 131072.0;  // 2^22 + 2^17 > every x below (64 * 65,535 + 65,535)
    LayerBuilder& l7 = L(7);
    auto ge = [&](const Lin& x, double t, const Lin& e, std::uint32_t out) { threshold_if(l7, x, t, kHi, e, out); };
    struct AndG {
      unsigned code;
      std::vector<std::pair<Lin, double>> parts;  // [x >= t] each
      Lin e;                                       // enable (0/1)
      Lin extra;                                   // one more 0/1 condition (or zero: none)
    };
    std::vector<AndG> ands;
    // VMAT
    ge(A + N, 1025, E(mat_w), raw(17));                                 // [dst, dst + R) in VR
    for (unsigned kk = 1; kk <= 6; ++kk) {
      ge(Bv, 7.0 - kk, E(mat_k[kk]), raw(19));                          // b0 + K > 6
      ge(C + N * static_cast<double>(kk), 4153, E(mat_k[kk]), raw(21));  // c0 + R K > 4152
    }
    // VMATR
    ge(A + N, 577, E(r_k), raw(17));  // dst + 448 + T > 1024
    ge(Bv + N, 577, E(r_v), raw(17));
    ge(A, 961, E(r_v), raw(17));      // dst + 64 > 1024
    ge(N, 65, cls(VMATR), raw(18));
    ge(Bv, 6, E(r_k), raw(19));       // src > 5
    // V mode: [dst, dst + 64) meets some [src + 64h, src + 64h + T), h < 8 (T <= 64: the union
    // over h is contiguous): -63 <= dst - src <= 447 + T
    ands.push_back({20, {{A - Bv, -63}, {Bv + N - A, -447}}, E(r_v), Lin()});
    ge(C + N, 321, cls(VMATR), raw(22));  // r0 + T > 320
    // VQ
    ge(Bv + N, 1025, cls(VQ), raw(17));
    ge(N, 385, E(q_act), raw(18));
    ge(N, 33, E(q_kv), raw(18));
    ge(Lin::constant(31) - N, 0, E(q_kv), raw(18));  // n != 32
    ge(N + A * 64.0, 385, E(q_act), raw(19));          // b0 + ceil(n / 64) > 6
    ge(A, 320, E(q_kv), raw(22));                      // row >= 320
    // VEXP (G from f7): spans, T, overlaps
    Lin Gv, egd[8];  // G as a linear form; egd[j] = [G > j] (VEXP)
    for (unsigned g = 1; g <= 8; ++g) {
      Gv += E(x_g[g]) * static_cast<double>(g);
      const double span = 64.0 * (g - 1);
      ge(Bv + N + span, 1025, E(x_g[g]), raw(17));
      ge(A + N + span, 1025, E(x_g[g]), raw(17));
      ge(C + static_cast<double>(g), 1025, E(x_g[g]), raw(17));
      for (unsigned j = 0; j < g; ++j) egd[j] += E(x_g[g]);
    }
    ge(N, 65, cls(VEXP), raw(18));
    const FieldRef EQAB = B.field("vec_dst_is_src", 1);  // [A = B] on VEXP
    threshold_if(l7, A - Bv, 0, kHi, cls(VEXP), EQAB.dim());
    threshold_if(l7, A - Bv, 1, kHi, cls(VEXP), EQAB.dim(), -1);
    for (int d = -7; d <= 7; ++d) {  // group g of dst meets group g - d of src: |A - B + 64 d| < T
      const double sh = 64.0 * d;
      ands.push_back({20, {{A - Bv + N + sh, 1}, {N - A + Bv - sh, 1}}, egd[static_cast<unsigned>(std::abs(d))],
                      one - EQAB[0]});
    }
    for (const Lin* X : {&A, &Bv})  // the sums [C, C + G) meet group g of src or dst
      for (unsigned g = 0; g < 8; ++g) {
        const double sh = 64.0 * g;
        ands.push_back({20, {{C - *X - sh + Gv, 1}, {*X + N + sh - C, 1}}, egd[g], Lin()});
      }
    // VEW
    ge(Bv + N, 1025, cls(VEW), raw(17));
    ge(A + N, 1025, cls(VEW), raw(17));
    ge(C + N, 1025, E(w_m[0]) + E(w_m[1]), raw(17));
    for (unsigned gs = 0; gs <= 6; ++gs) {  // MULS: b + ((n - 1) >> GS) + 1 > 1024
      const double p = std::ldexp(1.0, static_cast<int>(gs));
      ge(N + C * p, 1 + 1024 * p, E(w_gs[gs]), raw(17));
    }
    ge(N, 1025, cls(VEW), raw(18));
    // conflicts: spans [x, x + n) and [y, y + n) share a word and differ: 1 <= |x - y| <= n - 1
    auto conflict = [&](const Lin& x, const Lin& y, const Lin& e) {
      ands.push_back({20, {{x - y, 1}, {y - x + N, 1}}, e, Lin()});
      ands.push_back({20, {{y - x, 1}, {x - y + N, 1}}, e, Lin()});
    };
    conflict(A, Bv, cls(VEW));
    conflict(A, C, E(w_m[0]) + E(w_m[1]));
    for (unsigned gs = 0; gs <= 6; ++gs) {  // MULS: [b, b + s) meets [dst, dst + n): b - dst <= n - 1, 2^GS (dst - b) <= n - 1
      const double p = std::ldexp(1.0, static_cast<int>(gs));
      ands.push_back({20, {{A - C + N, 1}, {N - (A - C) * p, 1}}, E(w_gs[gs]), Lin()});
    }
    ge(C, 64, E(w_m[3]), raw(23));  // ROT position >= 64
    // VFN
    ge(Bv + N, 1025, cls(VFN), raw(17));
    ge(A + N, 1025, cls(VFN), raw(17));
    ge(N, 1025, cls(VFN), raw(18));
    conflict(A, Bv, cls(VFN));
    // VLD: dst = C, n = N
    ge(C + N, 1025, cls(VLD), raw(17));
    // VRED
    ge(Bv + N, 1025, cls(VRED), raw(17));
    ge(A, 1024, cls(VRED), raw(17));
    ge(N, 1025, cls(VRED), raw(18));
    // the ANDs (layer 8)
    std::uint32_t nparts = 0;
    for (const AndG& g : ands) nparts += static_cast<std::uint32_t>(g.parts.size());
    const FieldRef AP = B.field("vec_and_parts", nparts);
    std::uint32_t at = 0;
    for (const AndG& g : ands) {
      std::vector<Lin> conds;
      for (const auto& [x, t] : g.parts) {
        ge(x, t, g.e, AP.dim(at));
        conds.push_back(AP[at++]);
      }
      if (!is_zero(g.extra)) conds.push_back(g.extra);
      when(L(8), conds, {{raw(g.code), 1.0}});
    }
    // one flag per code (layer 9), then the lowest code wins (layer 10). No trap: VLD's first
    // byte (VLB0 of M, read at a); VEW, VFN: VWG(0); VRED: VRD(0); VQ: VQE; VEXP: VXM0; VMAT:
    // VMC0(0); VMATR K: VWG(0); VMATR V: VMV(0).
    const FieldRef VT = B.field("vec_trap", static_cast<std::uint32_t>(codes.size()));
    for (std::uint32_t i = 0; i < codes.size(); ++i) threshold(L(9), RAW[i], 1, VT.dim(i));
    std::vector<Lin> none = {f};
    for (std::uint32_t i = 0; i < codes.size(); ++i) {
      std::vector<Lin> conds = none;
      conds.push_back(anyv);
      conds.push_back(VT[i]);
      when(L(10), conds, token_out(kTrap, codes[i]));
      none.push_back(one - VT[i]);
    }
    std::vector<Lin> run = none;
    run.push_back(cls(VLD));
    when(L(10), run, {{NK.dim(kVlb0), 1.0}, {LANEX.dim(0), 1.0}, {RDM.dim(), 1.0}});
    EADD = E(w_m[0]);
    for (unsigned fn = 0; fn < 3; ++fn) EFN[fn] = E(fn_e[fn]);
    run.back() = cls(VEW) + cls(VFN);  // VEW, VFN: the word stream starts with VWG(0) (vew(), vfn())
    when(L(10), run, token_out(kVwg, 0));
    run.back() = E(red_sum) + E(red_sq) + E(red_max);  // VRED: VRD(0) (vred())
    when(L(10), run, token_out(kVrd, 0));
    VQF_ = B.field("vq_next_is_vqe", 1);
    run.back() = E(q_act) + E(q_kv);  // VQ: VQE(0 | e_0), its payload from vq() (layer 11)
    when(L(10), run, {{NK.dim(kVqe), 1.0}, {VQF_.dim(), 1.0}});
    XFN_ = B.field("vexp_next_is_vxm0", 1);
    run.back() = cls(VEXP);  // VEXP: VXM0 (byte 0 of m_0), its payload from vexp() (layer 13)
    when(L(10), run, {{NK.dim(kVxm0), 1.0}, {XFN_.dim(), 1.0}});
    run.back() = cls(VMAT);  // VMAT: VMC0(0), the first chunk of row 0 (vmat())
    when(L(10), run, token_out(kVmc0, 0));
    run.back() = E(r_k);  // VMATR K mode: VWG(0) (vmatr())
    when(L(10), run, token_out(kVwg, 0));
    run.back() = E(r_v);  // VMATR V mode: VMV(0) (vmatr_v())
    when(L(10), run, token_out(kVmv, 0));
  }
  // ---- VR and the word streams (vector.md sections 2, 5) -------------------------------------
  // Value of a one-hot (entry v stands for v).
  static Lin oh_value(const OH& o) {
    Lin l;
    for (unsigned v = 0; v < o.size(); ++v) l += o[v] * static_cast<double>(v);
    return l;
  }
  static Lin byte_of(const FieldRef& f, std::uint32_t m) { return byte_value(nib(f, 2 * m), nib(f, 2 * m + 1)); }
  // A word's nibble one-hots (the sum of `srcs`, at most one of them nonzero) copied into a new
  // field only where `gate` (one dimension, 0/1) is 1, in layer l: an op's tables read the copy,
  // so that they are not touched on the other ops' steps.
  FieldRef gated_copy(std::uint32_t l, const std::string& name, const std::vector<FieldRef>& srcs, const Lin& gate) {
    const FieldRef out = B.field(name, 128);
    for (std::uint32_t i = 0; i < 128; ++i) {
      Lin x;
      for (const FieldRef& f : srcs) x += f[i];
      L(l).unit_out(L(l).relu_unit(x + gate - 1.0), out.dim(i), 1.0);
    }
    return out;
  }
  // Word-stream positions, as linear forms of the consumed kind: the element of the next value
  // byte (qt: its q; consuming VWG(g) or VW_qm with m < 3, or VW_q3 with q < 3) and the element
  // whose last byte is consumed (qw: VW_q3). The element is e = 4 g + q, g from the VWG slot.
  OH stream_target_q() const {
    OH q(4);
    q[0] += k(kVwg);
    for (std::uint32_t j = 0; j < 4; ++j) {
      for (std::uint32_t m = 0; m < 3; ++m) q[j] += k(vw(j, m));
      if (j < 3) q[j + 1] += k(vw(j, 3));
    }
    return q;
  }
  Lin vlb_any() const { return k(kVlb0) + k(kVlb0 + 1) + k(kVlb0 + 2) + k(kVlb0 + 3); }  // consuming VLB0..VLB3
  Lin int8_stream() const { return k(kVlg) + vlb_any(); }                                 // ... or VLG
  Lin stream_word_end() const {
    Lin l;
    for (std::uint32_t q = 0; q < 4; ++q) l += k(vw(q, 3));
    return l;
  }

  // VR's key pieces for one index: N0 = the low nibble (16), N12 = (n1, n2) (64); word w's key is
  // ReLU(N0[w & 15] + N12[w >> 4] - 1). A write index is banked (docs/chip-design.md, VR): the
  // pieces go to the fields of the word's parity (lo[w & 1], hi[w & 1]), so that two writes of
  // different parity can share a step (VEW ROT's pair).
  struct KeyOut {
    std::vector<FieldRef> lo, hi;  // 1 field each, or 2 (by parity)
  };

  // X + e for a 10-bit operand X (nibble one-hots x0, x1 and x2's low two bits) and the element
  // e = 4 g + q (g from `gslot`), as VR's key pieces. Layer 5: N0, the carry c1 out of nibble 0 (a
  // threshold of a linear form), the nibble sums t1 = x1 + e1 and t2 = x2 + e2 (and the parity
  // when banked); layer 6: N12 from (t1, c1, t2). A sum past 1023 wraps (only on a step whose
  // value is not used: the element after a stream's last).
  void index_sum(const std::string& name, const FieldRef& gslot, const OH& x0, const OH& x1, const OH& x2, const OH& q,
                 const std::vector<Lin>& gates, const KeyOut& out) {
    const OH glo = field_oh(gslot, 0, 16), ghi = field_oh(gslot, 16, 16);
    sum_pieces(name, {x0, masked(glo, 3), q}, [](const std::vector<unsigned>& v) { return v[0] + 4 * v[1] + v[2]; },
               oh_value(x0) + oh_value(masked(glo, 3)) * 4.0 + oh_value(q),
               {x1, masked(glo, 0xC), masked(ghi, 3)}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 2) + ((v[2] & 3) << 2); },
               {x2, masked(ghi, 0xC)}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 2); }, gates, out);
  }

  // X + e' as index_sum() does, for an element e' given as nibble one-hots E0, E1 and E2 (bits 8,
  // 9), in layers base and base + 1.
  void index_sum_nibbles(const std::string& name, const OH& x0, const OH& x1, const OH& x2, const OH& e0, const OH& e1,
                         const OH& e2, const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base = 5) {
    auto add2 = [](const std::vector<unsigned>& v) { return v[0] + v[1]; };
    sum_pieces(name, {x0, e0}, add2, oh_value(x0) + oh_value(e0), {x1, e1}, add2, {x2, e2}, add2, gates, out, base);
  }

  // The common part: s0 = f0(parts0) (0..30) gives N0 = s0 & 15 and (linear form lin0) c1 =
  // [s0 >= 16]; t1 = f1(parts1) (0..30), t2 = f2(parts2) (0..6); N12 = ((t1 + c1) & 15) +
  // 16 ((t2 + ((t1 + c1) >> 4)) & 3). Banked: N0 and the parity (s0 & 1) route to lo/hi[parity].
  void sum_pieces(const std::string& name, const std::vector<OH>& parts0, const std::function<unsigned(const std::vector<unsigned>&)>& f0,
                  const Lin& lin0, const std::vector<OH>& parts1, const std::function<unsigned(const std::vector<unsigned>&)>& f1,
                  const std::vector<OH>& parts2, const std::function<unsigned(const std::vector<unsigned>&)>& f2,
                  const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base = 5) {
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
  FieldRef last_parity_;  // the parity field of the last sum_pieces() (banked sums)

  // VEW MULS's scalar index b + (e >> GS) (vector.md section 4.5): e >> GS as nibble one-hots
  // (layer 5, from f7's nibbles on custom-1 words: one small table per GS value and output nibble
  // over the bits of q, g's low and g's high nibble that it needs), then index_sum_nibbles() in
  // layers 6, 7, for the port of layer 8. Every input of these units is 0 outside the word
  // streams of custom-1 words, so they are idle there.
  void muls_index(const OH& qt, const Lin& reads, const KeyOut& out) {
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
    index_sum_nibbles("vr_muls_index", nib(RV2, 0), nib(RV2, 1), masked(nib(RV2, 2), 3), field_oh(ES, 0, 16),
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
  void vr_file() {
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
    index_sum("vr_x_index", VWGS, nib(RV1, 4), nib(RV1, 5), masked(nib(RV1, 6), 3), qt, {reads, vew_vfn}, kx);  // a + e
    index_sum("vr_y_index", VWGS, nib(RV2, 0), nib(RV2, 1), masked(nib(RV2, 2), 3), qt, {reads, vew, one - muls - rot},
              ky);  // b + e
    const FieldRef NS0 = B.field("vr_s_key_lo", 16), NS12 = B.field("vr_s_key_hi", 64);
    muls_index(qt, reads, KeyOut{{NS0}, {NS12}});  // MULS: b + (e >> GS), for the port of layer 8
    index_sum("vr_rot_index", VWGS, nib(RV1, 4), nib(RV1, 5), masked(nib(RV1, 6), 3), qx, {reads, vew, rot}, ky);  // a + (e ^ 1)
    index_sum("vr_w_index", VWGS, nib(RV1, 0), nib(RV1, 1), masked(nib(RV1, 2), 3), qw, {ends, vew_vfn + PRE[VRED]},
              kw);  // dst + e (VRED: dst, e = 0)
    const FieldRef PARW = last_parity_;
    index_sum("vr_pending_index", VWGS, nib(RV1, 0), nib(RV1, 1), masked(nib(RV1, 2), 3), qp, {ends_odd, vew, rot},
              kw);  // ROT: dst + e - 1
    const FieldRef PARP = last_parity_;
    // VEXP (vexp()): the scores s = VR[src + e] on port x (e < 512); the writes p -> dst + e (e <
    // 512) and S_g -> sums + g (e = 512 + g: the VWG slot with g' - 128, i.e. ghi 8 -> 0)
    const Lin ghi8 = VWGS[16 + 8];
    index_sum("vexp_x_index", VWGS, nib(RV1, 4), nib(RV1, 5), masked(nib(RV1, 6), 3), qt, {reads, PRE[VEXP]}, kx);  // src + e
    index_sum("vexp_w_index", VWGS, nib(RV1, 0), nib(RV1, 1), masked(nib(RV1, 2), 3), qw, {ends, PRE[VEXP], one - ghi8},
              kw);  // dst + e
    const FieldRef PARX = last_parity_;
    const FieldRef XWG = B.field("vexp_sum_slot", 32);  // the VWG slot in the sums' phase, g' - 128
    for (std::uint32_t v = 0; v < 16; ++v) when(L(1), {VWGS[v], ghi8}, {{XWG.dim(v), 1.0}});
    pass(L(1), ghi8, XWG.dim(16));
    index_sum("vexp_sum_index", XWG, nib(RV2, 0), nib(RV2, 1), masked(nib(RV2, 2), 3), qw, {ends, PRE[VEXP], ghi8},
              kw);  // sums + (e - 512)
    const FieldRef PARS = last_parity_;
    // VLD: dst = X(rs2) & 0xFFFF, element i = 4 g + m (g: vld()'s VLG slot)
    OH qv(4);
    for (std::uint32_t m = 0; m < 4; ++m) qv[m] = k(kVlb0 + m);
    const Lin vlb = vlb_any(), seen = VGS[32];
    index_sum("vr_vld_index", VGS, nib(RV2, 0), nib(RV2, 1), masked(nib(RV2, 2), 3), qv, {vlb, seen, PRE[VLD]}, kw);
    // VQ (vq()): x_j = VR[src + j] on port x, j = 4 g + m the element of the next value byte
    // (consuming VLG(g): m = 0; VLB_{m-1}: m)
    OH qr(4);
    qr[0] = k(kVlg);
    for (std::uint32_t m = 1; m < 4; ++m) qr[m] = k(kVlb0 + m - 1);
    VQR_ = B.field("vq_value_read", 1);
    pass(L(0), qr[0] + qr[1] + qr[2] + qr[3], VQR_.dim());
    index_sum("vr_vq_index", VGS, nib(RV1, 4), nib(RV1, 5), masked(nib(RV1, 6), 3), qr, {VQR_[0], PRE[VQ]}, kx);  // src + j
    // VMAT write mode (vmat()): y_r -> dst + r when VY3 is consumed, r = 256 h + p (the VMC and
    // VMH slots; r < 1,024 where the write is valid, so h <= 3)
    OH h2(4);
    h2[0] = one;  // h = 0: the slot is empty (reset by PCL; VMH's payload is >= 1)
    for (std::uint32_t v = 1; v < 16; ++v) h2[0] -= HSN_[v];
    h2[0] -= HSN_[16 + 1];
    for (std::uint32_t v = 1; v < 4; ++v) h2[v] = HSN_[v];
    index_sum_nibbles("vmat_w_index", nib(RV1, 0), nib(RV1, 1), masked(nib(RV1, 2), 3), field_oh(MCS_, 0, 16),
                      field_oh(MCS_, 16, 16), h2, {k(kVy0 + 3), PRE[VMAT]}, kw);  // dst + r
    const FieldRef PARM = last_parity_;
    // VMATR K mode (vmatr()): the element e = 4 g + q that ends -> dst + 64 h + t (t = g >> 1, h =
    // 4 (g & 1) + q)
    {
      const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
      sum_pieces("vmatr_w_index", {nib(RV1, 0), masked(glo, 0xE), masked(ghi, 1)},
                 [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1) + ((v[2] & 1) << 3); },
                 oh_value(nib(RV1, 0)) + oh_value(masked(glo, 0xE)) * 0.5 + oh_value(masked(ghi, 1)) * 8.0,
                 {nib(RV1, 1), masked(ghi, 6), qw}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1) + (v[2] << 2); },
                 {masked(nib(RV1, 2), 3), masked(glo, 1)}, [](const std::vector<unsigned>& v) { return v[0] + v[1]; },
                 {ends, PRE[VMATR], masked(field_oh(VIN, 0, 16), 2)[0]}, kw);
    }
    const FieldRef PARK = last_parity_;
    index_sum("vmatr_v_w_index", VWGS, nib(RV1, 0), nib(RV1, 1), masked(nib(RV1, 2), 3), qw,
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
    const FieldRef GV = B.field("vector_value_steps", 3);
    const OH f7m = masked(f7lo, 0xE), f7h = masked(field_oh(VIN, 16, 16), 1);
    when(L(6), {reads, PRE[VEW], rot}, {{GV.dim(0), 1.0}});
    when(L(6), {reads, PRE[VFN], f7m[0] + f7m[2], f7h[0]}, {{GV.dim(1), 1.0}});
    when(L(6), {reads, PRE[VFN], f7m[4], f7h[0]}, {{GV.dim(2), 1.0}});
    GROT_ = GV[0];
    GVFN_ = GV[1];
    GSILU_ = GV[2];
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
    // VMATR V's reads (vmatr_v()): one head per register c and parity b, into VVP_'s block c & 7
    for (std::uint32_t c = 0; c < 16; ++c)
      for (std::uint32_t b = 0; b < 2; ++b)
        vr_head(7, "vr_register" + std::to_string(c) + "_bank" + std::to_string(b), 64 * c + b, 2, 32, VVQ_, Activation::Relu,
                VVP_, 128 * (c & 7));
    // VRED's span read (vred()): the words of group k's span, [lo, hi) (VSPAN_, layer 6), both
    // banks into one field: per nibble i and value v, the number of words of the span whose
    // nibble i is v (<= 64)
    VRCNT_ = B.field("vred_nibble_counts", 128);
    for (std::uint32_t b = 0; b < 2; ++b) bank(7, "vr_span", b, [&](std::uint32_t w) { return VSPAN_[w]; }, VRCNT_);
    // VRED SUMSQ (vred()): 64 lane heads (lane l holds the words 64 c + l), read with the span
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

  // An exact sum of signed products sum_t x_t·y_t plus a constant, modulo 2^(4 cols), as digit
  // one-hots (16 rows per column, least significant first), from layer `l`:
  // - l: the nibble products x_i y_j from tables (the last nibble of each x and y is signed), each
  //   signed one biased by +128 to 0..255, its two nibbles added into columns i + j and
  //   i + j + 1; the biases' total (-128 sum 16^(i+j) over the signed products) plus `add`,
  //   modulo 2^(4 cols), goes in as constant nibbles, so every column sum is >= 0;
  // - l + 1 (and l + 2 if a column could still carry twice): carry-save splits,
  //   S_c = (CS_c mod 16) + (CS_{c-1} div 16), until S_c <= 30;
  // - next: the one-hots of S_c, so that generate (S >= 16) and propagate (S = 15) are linear;
  // - next: digit c = (S_c + carry_c) mod 16, carry_c = sum_k<c [G_k, P_k+1 .. P_c-1].
  // `gate` is 1 where the product is wanted and <= 0 elsewhere (the units are idle there).
  // Returns the digits; *done is the layer whose output holds them.
  using Term = std::pair<std::vector<OH>, std::vector<OH>>;
  FieldRef product_digits(const std::string& name, std::uint32_t l, const std::vector<Term>& terms, std::uint32_t cols,
                          std::uint64_t add, const Lin& gate, std::uint32_t* done = nullptr) {
    const std::uint64_t mask = cols >= 16 ? ~0ULL : (1ULL << (4 * cols)) - 1;
    const FieldRef CS = B.field(name + "_col_sums", cols);
    std::vector<unsigned> max_cs(cols, 0);
    std::uint64_t konst = add;
    for (const auto& [xs, ys] : terms)
      for (std::uint32_t i = 0; i < xs.size(); ++i)
        for (std::uint32_t j = 0; j < ys.size(); ++j) {
          const bool sx = i + 1 == xs.size(), sy = j + 1 == ys.size(), sgn = sx || sy;
          if (i + j >= cols) continue;
          if (sgn) konst -= 128ULL << (4 * (i + j));
          max_cs[i + j] += 15;
          if (i + j + 1 < cols) max_cs[i + j + 1] += 15;
          table(L(l), {xs[i], ys[j]}, [&, i, j, sx, sy, sgn](const std::vector<unsigned>& v) {
            const int xi = (sx && v[0] >= 8) ? static_cast<int>(v[0]) - 16 : static_cast<int>(v[0]);
            const int yj = (sy && v[1] >= 8) ? static_cast<int>(v[1]) - 16 : static_cast<int>(v[1]);
            const int p = xi * yj + (sgn ? 128 : 0);
            SparseVec out;
            if ((p & 15) != 0) out.push_back({CS.dim(i + j), static_cast<double>(p & 15)});
            if ((p >> 4) != 0 && i + j + 1 < cols) out.push_back({CS.dim(i + j + 1), static_cast<double>(p >> 4)});
            return out;
          }, {gate});
        }
    konst &= mask;
    for (std::uint32_t c = 0; c < cols; ++c) {
      const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
      max_cs[c] += kc;
      if (kc != 0) pass(L(l), gate, CS.dim(c), kc);
    }
    std::vector<Lin> sums;
    for (std::uint32_t c = 0; c < cols; ++c) sums.push_back(CS[c]);
    return column_digits(name, l + 1, sums, max_cs, gate, done);
  }

  // The digits of sum_c 16^c X_c modulo 2^(4 cols) (cols = X.size()) for column sums X_c that are
  // integers in 0..max_cs[c], as digit one-hots (16 rows per column), from layer `l`: carry-save
  // splits (up to three layers), the one-hots of the settled sums, the lookahead digits
  // (product_digits()). `gate` is 1 where the digits are wanted and <= 0 elsewhere; every X_c is
  // 0 where `gate` is not 1. *done is the layer whose output holds the digits.
  FieldRef column_digits(const std::string& name, std::uint32_t l, const std::vector<Lin>& X, std::vector<unsigned> max_cs,
                         const Lin& gate, std::uint32_t* done = nullptr) {
    const std::uint32_t cols = static_cast<std::uint32_t>(X.size());
    std::vector<Lin> cur = X;
    std::uint32_t layer = l;
    for (unsigned round = 0;; ++round) {
      const FieldRef S2 = B.field(name + "_cols_split" + std::to_string(round), cols);
      LayerBuilder& ls = L(layer++);
      std::vector<unsigned> next(cols, 0);
      for (std::uint32_t c = 0; c < cols; ++c) {
        pass(ls, cur[c], S2.dim(c));
        for (unsigned t = 1; 16 * t <= max_cs[c]; ++t) {
          threshold(ls, cur[c], 16.0 * t, S2.dim(c), -16);
          if (c + 1 < cols) threshold(ls, cur[c], 16.0 * t, S2.dim(c + 1), 1);
        }
        next[c] = std::min(max_cs[c], 15u) + (c > 0 ? max_cs[c - 1] / 16 : 0);
      }
      for (std::uint32_t c = 0; c < cols; ++c) cur[c] = S2[c];
      max_cs = next;
      if (*std::max_element(max_cs.begin(), max_cs.end()) <= 30) break;
      if (round == 2) throw std::logic_error("product_digits: column sums do not settle");
    }
    const std::uint32_t width = *std::max_element(max_cs.begin(), max_cs.end()) + 1;
    const FieldRef S2H = B.field(name + "_cols_onehot", width * cols);
    const FieldRef GEN = B.field(name + "_cols_generate", cols);  // [S_c >= 16] = u(15) - u(16)
    LayerBuilder& l3 = L(layer++);
    for (std::uint32_t c = 0; c < cols; ++c)
      for (int t = -1; t <= static_cast<int>(width); ++t) {
        const std::uint32_t u = l3.relu_unit(cur[c] - static_cast<double>(t) + gate * 64.0 - 64.0);
        for (int s2 = t - 1; s2 <= t + 1; ++s2)
          if (s2 >= 0 && s2 < static_cast<int>(width))
            l3.unit_out(u, S2H.dim(width * c + static_cast<std::uint32_t>(s2)), s2 == t ? -2.0 : 1.0);
        if (width > 16 && (t == 15 || t == 16)) l3.unit_out(u, GEN.dim(c), t == 15 ? 1.0 : -1.0);
      }
    auto s2h = [&](std::uint32_t c) { return field_oh(S2H, width * c, width); };
    auto gen = [&](std::uint32_t c) { return width > 16 ? GEN[c] : Lin(); };
    const FieldRef DG = B.field(name + "_digits", 16 * cols);
    LayerBuilder& l4 = L(layer);
    for (std::uint32_t c = 0; c < cols; ++c) {
      const OH h = s2h(c);
      for (std::uint32_t v = 0; v < width; ++v) {
        pass(l4, h[v], DG.dim(16 * c + (v & 15)));
        for (std::uint32_t kk = 0; kk < c && width > 16; ++kk) {
          std::vector<Lin> conds = {h[v], gen(kk)};
          for (std::uint32_t j = kk + 1; j < c; ++j) conds.push_back(s2h(j)[15]);
          when(l4, conds, {{DG.dim(16 * c + (v & 15)), -1.0}, {DG.dim(16 * c + ((v + 1) & 15)), 1.0}});
        }
      }
    }
    if (done) *done = layer;
    return DG;
  }

  // Overflow of a two's complement value held as digit one-hots (16 rows per column) when it is
  // cut to the bits below bit 4 lo + 3: OV[0] += [positive and bits 4 lo + 3 .. 4 cols - 1 not all
  // 0], OV[1] += [negative and those bits not all 1] (one layer).
  void overflow_flags(LayerBuilder& L_, const FieldRef& DG, std::uint32_t lo, std::uint32_t cols, const FieldRef& OV,
                      const Lin& gate) {
    auto dg = [&](std::uint32_t c) { return field_oh(DG, 16 * c, 16); };
    const Lin top_lo = any_of(dg(cols - 1), [](unsigned v) { return v < 8; }), top_hi = any_of(dg(cols - 1), [](unsigned v) { return v >= 8; });
    std::vector<Lin> zero = {any_of(dg(lo), [](unsigned v) { return v < 8; }), gate};
    std::vector<Lin> ones = {any_of(dg(lo), [](unsigned v) { return v >= 8; }), gate};
    for (std::uint32_t c = lo + 1; c < cols; ++c) {
      zero.push_back(dg(c)[0]);
      ones.push_back(dg(c)[15]);
    }
    when(L_, {top_lo, gate}, {{OV.dim(0), 1.0}});
    when(L_, zero, {{OV.dim(0), -1.0}});
    when(L_, {top_hi, gate}, {{OV.dim(1), 1.0}});
    when(L_, ones, {{OV.dim(1), -1.0}});
  }

  // VLD's word sat32(sext8(b) M) (vector.md section 4.8) on its element steps, as nibble one-hots
  // (128) in layer 6's output, for VR's write. M: a slot per byte (layer 1), written by VLB_m in
  // the M phase (no VLG since PCL: vld()'s slot, layer 0), read on VLB steps; b: the consumed
  // payload. The product (|b M| <= 2^38) modulo 2^40 by product_digits() (layers 1..4), overflow
  // from bits 31..39 (layer 5), then the digits of nibbles 0..7 or the bytes of 2^31 - 1 or
  // -2^31 (layer 6).
  FieldRef vld_product() {
    const Lin vlb = vlb_any(), seen = VGS[32];
    const FieldRef ELF = B.field("vld_element_step", 1);  // 1 on VLD's element steps (layer 0: one term for the gates)
    when(L(0), {vlb, seen}, {{ELF.dim(), 1.0}});
    const Lin el = ELF[0];
    const FieldRef MS = B.field("vld_m_slots", 128);
    block_slots(L(1), "vld_m", 4, [](std::uint32_t m) { return std::vector<std::uint32_t>{kVlb0 + m}; }, vlb - seen, vlb, MS);
    // b's nibbles, embedded for the VLB kinds only (so that the product tables are idle elsewhere)
    const FieldRef BN = B.field("vlb_payload_nibbles", 32);
    for (std::uint32_t m = 0; m < 4; ++m)
      for (std::uint32_t p = 0; p < 256; ++p) {
        B.embed(256 * (kVlb0 + m) + p, BN.dim(p & 15), 1);
        B.embed(256 * (kVlb0 + m) + p, BN.dim(16 + (p >> 4)), 1);
      }
    std::vector<OH> ms, bs;
    for (std::uint32_t i = 0; i < 8; ++i) ms.push_back(nib(MS, i));
    for (std::uint32_t j = 0; j < 2; ++j) bs.push_back(field_oh(BN, 16 * j, 16));
    std::uint32_t done = 0;
    const FieldRef DG = product_digits("vld", 1, {{ms, bs}}, 10, 0, el, &done);
    if (done != 4) throw std::logic_error("vld_product: the digits are not ready at layer 4");
    const FieldRef OV = B.field("vld_overflow", 2);
    overflow_flags(L(5), DG, 7, 10, OV, Lin::constant(1));
    const FieldRef VAL = B.field("vld_word", 128);
    LayerBuilder& l6 = L(6);
    for (std::uint32_t c = 0; c < 8; ++c)
      for (unsigned v = 0; v < 16; ++v)
        l6.unit_out(l6.relu_unit(DG[16 * c + v] - OV[0] - OV[1]), VAL.dim(16 * c + v), 1.0);
    for (std::uint32_t c = 0; c < 8; ++c) {
      const std::uint32_t hi = (0x7FFFFFFFu >> (4 * c)) & 15, lo = (0x80000000u >> (4 * c)) & 15;
      pass(l6, OV[0], VAL.dim(16 * c + hi));
      pass(l6, OV[1], VAL.dim(16 * c + lo));
    }
    return VAL;
  }

  // VEW ADD and MUL (vector.md section 4.5), one word stream (section 5). ADD, z = sat32(x + y):
  // the value byte m of the next token, from the two words the ports read:
  // - no overflow: (x_m + y_m + c_m) mod 256, the carry c_m into byte m (m >= 1) from the
  //   consumed byte r = byte m - 1 of z: [x_{m-1} + y_{m-1} - r >= 1] (as the scalar adder);
  //   nibble sums (layer 7), the low nibble with c_m and its carry (8), the high nibble (11);
  // - overflow (layer 8, from nibble generate/propagate bits, layer 7): z > 2^31 - 1 iff both
  //   signs are 0 and the carry into bit 31 is 1; z < -2^31 iff both are 1 and it is 0; then the
  //   bytes of 2^31 - 1 or -2^31.
  // Sequence: VWG(0) on the fetch step (vector_traps()), VW_{q,m+1} after VW_qm, VW_{q+1,0} after
  // VW_q3 (q < 3), VWG(g + 1) after VW_33, the instruction's end after element n - 1 (the
  // (g, q) of n - 1 from vld()'s VGT and VC0).
  void vew() {
    const Lin one = Lin::constant(1), ea = EADD, ev = cls(VEW) + cls(VFN);
    OH tm(4);  // the next token is value byte m
    for (std::uint32_t q = 0; q < 4; ++q) {
      if (q < 3) tm[0] += k(vw(q, 3));
      for (std::uint32_t m = 1; m < 4; ++m) tm[m] += k(vw(q, m - 1));
    }
    tm[0] += k(kVwg);
    LayerBuilder& l7 = L(7);
    const FieldRef GP = B.field("vew_add_gp", 16);  // G_i (i < 8), P_i (8 + i) of nibble sums
    for (std::uint32_t i = 0; i < 8; ++i) {
      const Lin s = i < 7 ? oh_value(nib(VRX, i)) + oh_value(nib(VRY, i))
                          : oh_value(masked(nib(VRX, 7), 7)) + oh_value(masked(nib(VRY, 7), 7));  // bits 28..30
      const double base = i < 7 ? 16 : 8;
      threshold(l7, s, base, GP.dim(i));
      threshold(l7, s, base - 1, GP.dim(8 + i));
      threshold(l7, s, base, GP.dim(8 + i), -1);
    }
    const FieldRef CIN = B.field("vew_add_carry_in", 1);
    const FieldRef VWP = B.field("vw_payload", 1);  // the consumed byte, embedded for the VW kinds only
    for (std::uint32_t j = 0; j < 16; ++j)
      for (std::uint32_t p = 0; p < 256; ++p) B.embed(256 * (kVw00 + j) + p, VWP.dim(), static_cast<double>(p));
    for (std::uint32_t m = 1; m < 4; ++m)
      threshold_if(l7, byte_of(VRX, m - 1) + byte_of(VRY, m - 1) - VWP[0], 1, 512, tm[m], CIN.dim());
    const FieldRef LS = B.field("vew_add_lo_sum", 31), HS = B.field("vew_add_hi_sum", 31);
    for (std::uint32_t m = 0; m < 4; ++m) {
      table(l7, {nib(VRX, 2 * m), nib(VRY, 2 * m)},
            [&](const std::vector<unsigned>& v) { return SparseVec{{LS.dim(v[0] + v[1]), 1.0}}; }, {tm[m], ea});
      table(l7, {nib(VRX, 2 * m + 1), nib(VRY, 2 * m + 1)},
            [&](const std::vector<unsigned>& v) { return SparseVec{{HS.dim(v[0] + v[1]), 1.0}}; }, {tm[m], ea});
    }
    LayerBuilder& l8 = L(8);
    const FieldRef OV = B.field("vew_add_overflow", 2);  // [x + y > 2^31 - 1], [x + y < -2^31]
    Lin xs, ys;                                           // the sign bits
    for (unsigned j = 8; j < 16; ++j) {
      xs += nib(VRX, 7)[j];
      ys += nib(VRY, 7)[j];
    }
    for (std::uint32_t i = 0; i < 8; ++i) {  // carry into bit 31 generated at nibble i, propagated above
      std::vector<Lin> t = {GP[i], ea};
      for (std::uint32_t j = i + 1; j < 8; ++j) t.push_back(GP[8 + j]);
      std::vector<Lin> tp = t, tn = t;
      tp.push_back(one - xs);
      tp.push_back(one - ys);
      when(l8, tp, {{OV.dim(0), 1.0}});
      tn.push_back(xs);
      tn.push_back(ys);
      when(l8, tn, {{OV.dim(1), -1.0}});
    }
    when(l8, {xs, ys, ea}, {{OV.dim(1), 1.0}});
    const FieldRef LO = B.field("vew_add_lo", 16), CL = B.field("vew_add_lo_carry", 1);
    table(l8, {field_oh(LS, 0, 31), OH{one - CIN[0], CIN[0]}}, [&](const std::vector<unsigned>& v) {
      const unsigned s = v[0] + v[1];
      SparseVec out{{LO.dim(s & 15), 1.0}};
      if (s >= 16) out.push_back({CL.dim(), 1.0});
      return out;
    });
    // the last element: (g, q) = ((n - 1) >> 2, (n - 1) & 3) on a VW_q3 step
    const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
    const FieldRef EQW = B.field("vew_last_eq", 3), LASTW = B.field("vew_last", 1);
    TM_ = tm;
    LASTW_ = LASTW;
    LayerBuilder& l9 = L(9);
    for (unsigned j = 0; j < 16; ++j) {
      when(l9, {glo[j], VGT[j]}, {{EQW.dim(0), 1.0}});
      when(l9, {ghi[j], VGT[16 + j]}, {{EQW.dim(1), 1.0}});
    }
    const OH cm = masked(field_oh(VC0, 0, 16), 3);
    for (std::uint32_t q = 0; q < 4; ++q) when(l9, {k(vw(q, 3)), cm[q]}, {{EQW.dim(2), 1.0}});
    when(L(10), {ev, EQW[0], EQW[1], EQW[2]}, {{LASTW.dim(), 1.0}});
    // the next kind (VEW, VFN and VMATR K mode, whose stream is the 8 T elements 0 .. 8 T - 1:
    // vmatr() adds its last element to LASTW)
    const Lin seq = ev + VKM_[0] + VVM_[0];
    when(l9, {seq, k(kVwg)}, {{NK.dim(vw(0, 0)), 1.0}});
    for (std::uint32_t q = 0; q < 4; ++q)
      for (std::uint32_t m = 0; m < 3; ++m) when(l9, {seq, k(vw(q, m))}, {{NK.dim(vw(q, m + 1)), 1.0}});
    LayerBuilder& l11 = L(11);
    const Lin more = one - LASTW[0];
    for (std::uint32_t q = 0; q < 3; ++q) when(l11, {seq, k(vw(q, 3)), more}, {{NK.dim(vw(q + 1, 0)), 1.0}});
    const std::vector<Lin> next_group = {seq, k(vw(3, 3)), more};
    when(l11, next_group, {{NK.dim(kVwg), 1.0}});
    table(l11, {glo}, [&](const std::vector<unsigned>& x) { return SparseVec{{NPL.dim((x[0] + 1) & 15), 1.0}}; }, next_group);
    table(l11, {ghi, OH{one - glo[15], glo[15]}},
          [&](const std::vector<unsigned>& x) { return SparseVec{{NPH.dim((x[0] + x[1]) & 15), 1.0}}; }, next_group);
    when(l11, {seq, stream_word_end(), LASTW[0]}, {{ENDI.dim(), 1.0}});
    // the value byte (not after the last element, whose "next" element is outside the span)
    for (unsigned v = 0; v < 16; ++v) l11.unit_out(l11.relu_unit(LO[v] - OV[0] - OV[1] - LASTW[0]), NPL.dim(v), 1.0);
    table(l11, {field_oh(HS, 0, 31), OH{one - CL[0], CL[0]}},
          [&](const std::vector<unsigned>& v) { return SparseVec{{NPH.dim((v[0] + v[1]) & 15), 1.0}}; },
          {one - OV[0] - OV[1] - LASTW[0]});
    for (std::uint32_t m = 0; m < 4; ++m) {
      const unsigned hi = m < 3 ? 0xFF : 0x7F, lo = m < 3 ? 0x00 : 0x80;
      when(l11, {OV[0], tm[m], more}, {{NPL.dim(hi & 15), 1.0}, {NPH.dim(hi >> 4), 1.0}});
      when(l11, {OV[1], tm[m], more}, {{NPL.dim(lo & 15), 1.0}, {NPH.dim(lo >> 4), 1.0}});
    }
    // MUL: rnd(x y, 16) = floor((x y + 2^15) / 2^16): the digits of x y + 2^15 modulo 2^64
    // (product_digits(), layers 7..10), overflow from bits 47..63 (11), then byte m of the result
    // is columns 4 + 2m and 5 + 2m, or a byte of 2^31 - 1 or -2^31 (12).
    // (x and y gated to MUL/MULS steps first: layers 7, 8; MULS's y from port s, layer 8)
    const FieldRef GMF = B.field("vew_mul_steps", 1);  // MUL or MULS value step (layer 6)
    const OH f7m = masked(field_oh(VIN, 0, 16), 6);
    when(L(6), {SREAD_, PRE[VEW], f7m[2] + f7m[4]}, {{GMF.dim(), 1.0}});
    const Lin gm = GMF[0];
    const FieldRef XM = gated_copy(7, "vew_mul_x", {VRX}, gm), YM = gated_copy(8, "vew_mul_y", {VRY, VRYS}, gm);
    std::vector<OH> xn, ymn;
    for (std::uint32_t i = 0; i < 8; ++i) {
      xn.push_back(nib(XM, i));
      ymn.push_back(nib(YM, i));
    }
    std::uint32_t done = 0;
    const FieldRef MD = product_digits("vew_mul", 9, {{xn, ymn}}, 16, 1ULL << 15, gm, &done);
    if (done != 12) throw std::logic_error("vew: MUL's digits are not ready at layer 12");
    const FieldRef MOV = B.field("vew_mul_overflow", 2);
    overflow_flags(L(13), MD, 11, 16, MOV, one);
    emit_rounded(L(14), MD, MOV);
    // ROT: z_e = rnd(x c + y s', 16) with x = VR[a + e], y = VR[a + (e ^ 1)] (the pair's other
    // word), c = COS[p][j], s' = -SIN[p][j] for an even e and +SIN[p][j] for an odd e, j = (e >> 1)
    // & 3, p = b (vector.md section 4.5). c and s' as 5 signed nibbles each (|.| <= 2^16), from
    // one table over (p, q, g & 1) (layer 6); the sum of the two products plus 2^15 modulo 2^52
    // (layers 7..11), overflow from bits 47..51 (12), the byte (13).
    const FieldRef CSN = B.field("vew_rot_cos_sin", 160);
    const Lin rotw = masked(field_oh(VIN, 0, 16), 6)[6];  // MODE = 3 (VIN: custom-1 words only)
    table(L(6), {nib(RV2, 0), masked(nib(RV2, 1), 3), stream_target_q(), masked(glo, 1)}, [&](const std::vector<unsigned>& v) {
      const unsigned p = v[0] | ((v[1] & 3) << 4), q = v[2], e = 4 * (v[3] & 1) + q, j = (e >> 1) & 3;
      const long long c = cos_entry(p, j), sn = sin_entry(p, j);
      const long long sp = (e & 1) ? sn : -sn;
      SparseVec out;
      for (unsigned n = 0; n < 5; ++n) {
        out.push_back({CSN.dim(16 * n + static_cast<unsigned>((static_cast<unsigned long long>(c) >> (4 * n)) & 15)), 1.0});
        out.push_back({CSN.dim(80 + 16 * n + static_cast<unsigned>((static_cast<unsigned long long>(sp) >> (4 * n)) & 15)), 1.0});
      }
      return out;
    }, {SREAD_, PRE[VEW], rotw});
    std::vector<OH> cn, sn, xr, yr;
    for (std::uint32_t n = 0; n < 5; ++n) {
      cn.push_back(field_oh(CSN, 16 * n, 16));
      sn.push_back(field_oh(CSN, 80 + 16 * n, 16));
    }
    const FieldRef XR = gated_copy(7, "vew_rot_x", {VRX}, GROT_), YR = gated_copy(7, "vew_rot_y", {VRY}, GROT_);
    for (std::uint32_t i = 0; i < 8; ++i) {
      xr.push_back(nib(XR, i));
      yr.push_back(nib(YR, i));
    }
    const FieldRef RD_ = product_digits("vew_rot", 8, {{xr, cn}, {yr, sn}}, 13, 1ULL << 15, GROT_, &done);
    if (done != 12) throw std::logic_error("vew: ROT's digits are not ready at layer 12");
    const FieldRef ROV = B.field("vew_rot_overflow", 2);
    overflow_flags(L(13), RD_, 11, 13, ROV, one);
    emit_rounded(L(14), RD_, ROV);
  }

  // VFN RSQRT and RECIP (vector.md section 4.6), on the word stream vew() sequences: from x =
  // VR[src + e] (port x),
  // - layer 7: x gated to these steps; layer 8: the leading nonzero nibble of a positive x
  //   (one-hot; none for x <= 0);
  // - layer 9: k = floor_log2(max(x, 1)) (one-hot 0..30);
  // - layer 10: the bits of ix, selected by k (RECIP: bits k - 7 .. k - 1 under the leading 1;
  //   RSQRT: bits k2 - 6 .. k2 + 1, k2 = k - k mod 2; bits below 0 are 0: the left shifts);
  // - layer 11: z as nibble one-hots from one table over (ix's bits, k) per function, every entry
  //   computed here from section 3's formulas (RCP, RSQ) and section 4.6's;
  // - layer 12: byte m of z for the next token.
  static std::int64_t rnd_shift(std::int64_t x, int s) { return s == 0 ? x : (x + (1LL << (s - 1))) >> s; }
  void vfn() {
    const Lin one = Lin::constant(1);
    const OH& tm = TM_;
    const Lin more = one - LASTW_[0];
    const FieldRef XV = gated_copy(7, "vfn_x", {VRX}, GVFN_);  // x on RSQRT/RECIP steps only
    auto bit = [&](int b) {  // bit b of x, linear in its nibble one-hots (0 outside 0..31)
      return b < 0 || b > 31 ? Lin() : digit_bit(XV, static_cast<std::uint32_t>(b));
    };
    const Lin g = GVFN_;  // an RSQRT or RECIP value step
    const FieldRef LN = B.field("vfn_lead_nibble", 8);
    for (std::uint32_t i = 0; i < 8; ++i) {
      std::vector<Lin> conds = {any_of(nib(XV, i), [i](unsigned v) { return v != 0 && (i < 7 || v < 8); }), g};
      for (std::uint32_t j = i + 1; j < 8; ++j) conds.push_back(nib(XV, j)[0]);
      when(L(8), conds, {{LN.dim(i), 1.0}});
    }
    const FieldRef KF = B.field("vfn_log2", 31);
    Lin lead;
    for (std::uint32_t i = 0; i < 8; ++i) {
      lead += LN[i];
      for (unsigned v = 1; v < (i == 7 ? 8u : 16u); ++v) {
        const unsigned fl = v >= 8 ? 3 : v >= 4 ? 2 : v >= 2 ? 1 : 0;
        when(L(9), {LN[i], nib(XV, i)[v]}, {{KF.dim(4 * i + fl), 1.0}});
      }
    }
    L(9).unit_out(L(9).relu_unit(g - lead), KF.dim(0), 1.0);  // x <= 0: u = 1, k = 0
    const FieldRef IXR = B.field("vfn_recip_ix_bits", 7), IXS = B.field("vfn_rsqrt_ix_bits", 8);
    for (int kk = 0; kk <= 30; ++kk) {
      for (int t = 0; t < 7; ++t) {
        const Lin b = bit(kk - 7 + t);
        if (!b.terms.empty())
          when(L(10), {KF[static_cast<std::uint32_t>(kk)], b, EFN[1], lead}, {{IXR.dim(static_cast<std::uint32_t>(t)), 1.0}});
      }
      for (int t = 0; t < 8; ++t) {
        const Lin b = bit(kk - kk % 2 - 6 + t);
        if (!b.terms.empty())
          when(L(10), {KF[static_cast<std::uint32_t>(kk)], b, EFN[0], lead}, {{IXS.dim(static_cast<std::uint32_t>(t)), 1.0}});
      }
    }
    // x <= 0 (no leading nibble): u = 1, so RSQRT's ix = 1 << 6 (RECIP's: the implicit leading 1, 128)
    L(10).unit_out(L(10).relu_unit(SREAD_ + EFN[0] - 1.0 - lead), IXS.dim(6), 1.0);
    const FieldRef Z = B.field("vfn_z", 128);
    auto word_out = [&](std::uint32_t z) {
      SparseVec o;
      for (std::uint32_t n = 0; n < 8; ++n) o.push_back({Z.dim(16 * n + ((z >> (4 * n)) & 15)), 1.0});
      return o;
    };
    std::vector<OH> parts;
    for (std::uint32_t t = 0; t < 7; ++t) parts.push_back(OH{one - IXR[t], IXR[t]});
    parts.push_back(field_oh(KF, 0, 31));
    table(L(11), parts, [&](const std::vector<unsigned>& v) {
      unsigned low = 0;
      for (unsigned t = 0; t < 7; ++t) low |= v[t] << t;
      const int kk = static_cast<int>(v[7]);
      if (kk < 7 && (low & ((1u << (7 - kk)) - 1)) != 0) return SparseVec{};  // u << (7 - k): those bits are 0
      const std::int64_t r = rcp_entry(128 + low);
      const std::int64_t z = kk <= 2 ? std::min<std::int64_t>(r << (2 - kk), 0x7FFFFFFF) : rnd_shift(r, kk - 2);
      return word_out(static_cast<std::uint32_t>(z));
    }, {EFN[1]});
    parts.clear();
    for (std::uint32_t t = 0; t < 8; ++t) parts.push_back(OH{one - IXS[t], IXS[t]});
    OH k2(16);
    for (std::uint32_t h = 0; h < 16; ++h) k2[h] = KF[2 * h] + (2 * h + 1 < 31 ? KF[2 * h + 1] : Lin());
    parts.push_back(k2);
    table(L(11), parts, [&](const std::vector<unsigned>& v) {
      unsigned ix = 0;
      for (unsigned t = 0; t < 8; ++t) ix |= v[t] << t;
      const int kk2 = 2 * static_cast<int>(v[8]);
      if (ix < 64 || (kk2 < 6 && (ix & ((1u << (6 - kk2)) - 1)) != 0)) return SparseVec{};
      return word_out(static_cast<std::uint32_t>(rnd_shift(rsq_entry(ix), kk2 / 2)));
    }, {EFN[0]});
    LayerBuilder& l12 = L(12);
    for (std::uint32_t m = 0; m < 4; ++m)
      for (unsigned v = 0; v < 16; ++v) {
        l12.unit_out(l12.relu_unit(Z[16 * (2 * m) + v] + tm[m] + more - 2.0), NPL.dim(v), 1.0);
        l12.unit_out(l12.relu_unit(Z[16 * (2 * m + 1) + v] + tm[m] + more - 2.0), NPH.dim(v), 1.0);
      }
    silu();
  }

  // VFN SILU (vector.md section 4.6): z = sat32(rnd(x SIG[ix], 16)), ix = min(1023, max(0,
  // rnd(x, 10) + 512)). rnd(x, 10) + 512 = floor((x + 2^19 + 2^9) / 2^10): for -523,776 <= x <=
  // 522,751 it is bits 10..19 of w = x + 0x80200 (20 bits, no wrap); above, ix = 1023, below, 0.
  // - layer 7: x gated to SILU's steps; layer 8: the two clamps (nibble compares against
  //   0x0007FA00 and 0xFFF801FF) and ix's pieces: bits 0..5 from (x2, x3), bits 6..9 from (x4 and
  //   the carry into it: x3 = 15 and x2 >= 14);
  // - layer 9: SIG[ix] as 5 signed nibbles (one table over ix's two pieces; the clamps' entries);
  // - layers 10..13: x SIG[ix] + 2^15 modulo 2^52 (product_digits); 14: overflow from bits 47..51;
  //   15: byte m of the result.
  void silu() {
    const Lin one = Lin::constant(1);
    const Lin gs = GSILU_;  // a SILU value step
    const FieldRef XS = gated_copy(7, "vfn_silu_x", {VRX}, gs);  // x on SILU steps only
    auto x = [&](std::uint32_t n) { return nib(XS, n); };
    auto isv = [&](std::uint32_t n, const std::function<bool(unsigned)>& p) { return any_of(x(n), p); };
    LayerBuilder& l7 = L(8);
    const FieldRef CL = B.field("vfn_silu_clamp", 2);  // [ix = 1023], [ix = 0]
    // x >= 0x7FA00 (and x >= 0)
    when(l7, {isv(7, [](unsigned v) { return v >= 1 && v < 8; }), gs}, {{CL.dim(0), 1.0}});
    when(l7, {x(7)[0], isv(6, [](unsigned v) { return v != 0; }), gs}, {{CL.dim(0), 1.0}});
    when(l7, {x(7)[0], x(6)[0], isv(5, [](unsigned v) { return v != 0; }), gs}, {{CL.dim(0), 1.0}});
    when(l7, {x(7)[0], x(6)[0], x(5)[0], isv(4, [](unsigned v) { return v >= 8; }), gs}, {{CL.dim(0), 1.0}});
    when(l7, {x(7)[0], x(6)[0], x(5)[0], x(4)[7], x(3)[15], isv(2, [](unsigned v) { return v >= 10; }), gs},
         {{CL.dim(0), 1.0}});
    // x <= -523,777 = 0xFFF801FF
    when(l7, {isv(7, [](unsigned v) { return v >= 8 && v < 15; }), gs}, {{CL.dim(1), 1.0}});
    when(l7, {x(7)[15], isv(6, [](unsigned v) { return v != 15; }), gs}, {{CL.dim(1), 1.0}});
    when(l7, {x(7)[15], x(6)[15], isv(5, [](unsigned v) { return v != 15; }), gs}, {{CL.dim(1), 1.0}});
    when(l7, {x(7)[15], x(6)[15], x(5)[15], isv(4, [](unsigned v) { return v < 8; }), gs}, {{CL.dim(1), 1.0}});
    when(l7, {x(7)[15], x(6)[15], x(5)[15], x(4)[8], x(3)[0], isv(2, [](unsigned v) { return v <= 1; }), gs},
         {{CL.dim(1), 1.0}});
    const FieldRef IXL = B.field("vfn_silu_ix_lo", 64), IXH = B.field("vfn_silu_ix_hi", 16);
    table(l7, {x(2), x(3)}, [&](const std::vector<unsigned>& v) {
      const unsigned n2 = (v[0] + 2) & 15, c3 = v[0] >= 14 ? 1 : 0, n3 = (v[1] + c3) & 15;
      return SparseVec{{IXL.dim((n2 >> 2) | (n3 << 2)), 1.0}};
    }, {gs});
    const Lin x2hi = isv(2, [](unsigned v) { return v >= 14; });
    table(l7, {x(4), OH{one - x(3)[15], x(3)[15]}, OH{one - x2hi, x2hi}}, [&](const std::vector<unsigned>& v) {
      return SparseVec{{IXH.dim((v[0] + 8 + (v[1] & v[2])) & 15), 1.0}};
    }, {gs});
    // layer 8: SIG[ix]
    const FieldRef SN = B.field("vfn_silu_sig", 80);
    auto sig_out = [&](std::int64_t sv) {
      SparseVec o;
      for (std::uint32_t n = 0; n < 5; ++n) o.push_back({SN.dim(16 * n + static_cast<std::uint32_t>((sv >> (4 * n)) & 15)), 1.0});
      return o;
    };
    table(L(9), {field_oh(IXL, 0, 64), field_oh(IXH, 0, 16)},
          [&](const std::vector<unsigned>& v) { return sig_out(sig_entry(static_cast<int>(v[0] | (v[1] << 6)))); },
          {one - CL[0] - CL[1]});
    when(L(9), {CL[0], gs}, sig_out(sig_entry(1023)));
    when(L(9), {CL[1], gs}, sig_out(sig_entry(0)));
    std::vector<OH> xn, sn;
    for (std::uint32_t n = 0; n < 8; ++n) xn.push_back(x(n));
    for (std::uint32_t n = 0; n < 5; ++n) sn.push_back(field_oh(SN, 16 * n, 16));
    std::uint32_t done = 0;
    const FieldRef DG = product_digits("vfn_silu", 10, {{xn, sn}}, 13, 1ULL << 15, gs, &done);
    if (done != 13) throw std::logic_error("silu: the digits are not ready at layer 13");
    const FieldRef OV = B.field("vfn_silu_overflow", 2);
    overflow_flags(L(14), DG, 11, 13, OV, one);
    emit_rounded(L(15), DG, OV);
  }

  // VRED (vector.md section 4.7) on the step that consumes VRD(k): group k's span [lo, hi) of the
  // source, lo = src + 64 k and hi = min(lo + 64, src + n) (layer 5, one dimension each, 0 on
  // every other step), then VSPAN_[w] = [lo <= w < hi] for every word w (layer 6, four units per
  // word); VR's span heads (vr_file(), layer 7) read the span's nibble counts with it. Also the
  // last group's k, (n - 1) >> 6, as a one-hot on VRED words (VKL_, layer 5).
  Lin f7_mode(unsigned mode) const {  // [f7 & 3 = mode] on custom-1 words (F7X_, layer 5)
    Lin l;
    for (unsigned x = 0; x < 128; ++x)
      if ((x & 3) == mode) l += F7X_[x];
    return l;
  }
  // The word streams' VWG slot (layer 0): g of the last VWG(g), read on word-stream steps.
  void vwg_slot() {
    VWGS = B.field("vwg_slot", 32);
    Lin stream = k(kVwg);  // any word-stream token
    for (std::uint32_t j = 0; j < 16; ++j) stream += k(kVw00 + j);
    slot_head(L(0), 1, [&](std::uint32_t) { return k(kVwg); }, [&](std::uint32_t r) { return PN[r]; }, VWGS, stream);
  }

  void vred_span() {
    const Lin g = k(kVrd), Bv = half(RV1, 1), N = half(RV2, 1), one = Lin::constant(1);
    const Lin kv = oh_value(field_oh(VRDK_, 0, 16));
    constexpr double M = 131072;  // > src + 64 k + 64 for every src < 2^16: the units are 0 off VRD steps
    const FieldRef LH = B.field("vred_span_bounds", 2);  // lo, hi
    LayerBuilder& l5 = L(5);
    pass(l5, Bv + kv * 64.0 + g * M - M, LH.dim(0));
    pass(l5, Bv + kv * 64.0 + 64.0 + g * M - M, LH.dim(1));
    pass(l5, kv * 64.0 + 64.0 - N + g * M - M, LH.dim(1), -1);  // min(lo + 64, src + n) = lo + 64 - ReLU(64 k + 64 - n)
    // VQ (vq()): the step that emits VQE(k) reads group k: the fetch step (k = 0) and the step
    // that consumes VLB3 of element 64 k - 1 (g = 16 k - 1: g & 15 = 15, k = (g >> 4) + 1 <= 5);
    // KG_[k] (layer 1) without the class, then KQ_[k] = [VQ] KG_[k] and GQ_ = sum_k KQ_[k]
    // (layer 5). After the last group the span is empty: hi = lo when 64 k >= n.
    {
      const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
      KG_ = B.field("vq_group_start", 6);
      for (std::uint32_t j = 1; j < 6; ++j) when(L(1), {k(kVlb0 + 3), glo[15], ghi[j - 1]}, {{KG_.dim(j), 1.0}});
      KQ_ = B.field("vq_group_step", 6);
      GQ_ = B.field("vq_group_step_any", 1);
      constexpr double MQ = 70000;  // > src + 64 k + 64 (k <= 5): the units are 0 off the step
      for (std::uint32_t j = 0; j < 6; ++j) {
        const Lin kg = j == 0 ? fetch() : KG_[j];
        when(l5, {PRE[VQ], kg}, {{KQ_.dim(j), 1.0}, {GQ_.dim(), 1.0}});
        const Lin off = (PRE[VQ] + kg) * MQ - 2 * MQ;
        const double base = 64.0 * j;
        pass(l5, Bv + base + off, LH.dim(0));
        pass(l5, Bv + base + 64.0 + off, LH.dim(1));
        pass(l5, Lin::constant(base + 64.0) - N + off, LH.dim(1), -1);
        pass(l5, Lin::constant(base) - N + off, LH.dim(1));
      }
    }
    // VEXP (vexp()): the step that emits VXM0 of group g reads the group's scores [src + 64 g,
    // src + 64 g + min(T, 64)): the fetch step (g = 0) and the step that consumes the VW_q3 of a
    // group's last score (g = (e >> 6) + 1 = ghi + 1 of the VWG slot). Which VW_q3 ends a group
    // is known only at layer 5 (LX_: (e & 63) + 1 = T, e = 4 g' + q), so the bounds are formed on
    // every VW_q3 step of group ghi < 8 (KXG, layer 1) and the mask (layer 6) is gated by LX_.
    {
      const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
      const FieldRef KXG = B.field("vexp_group_end", 9);  // [VW_q3 consumed, ghi = j - 1], j = 1..8
      const Lin ends = stream_word_end();
      for (std::uint32_t j = 1; j <= 8; ++j) when(L(1), {ends, ghi[j - 1]}, {{KXG.dim(j), 1.0}});
      constexpr double MX = 70000;
      for (std::uint32_t j = 0; j < 8; ++j) {
        const Lin kg = j == 0 ? fetch() : KXG[j];
        const Lin off = (PRE[VEXP] + kg) * MX - 2 * MX;
        const double base = 64.0 * j;
        pass(l5, Bv + base + off, LH.dim(0));
        pass(l5, Bv + base + 64.0 + off, LH.dim(1));  // hi = lo + min(T, 64) = lo + 64 - ReLU(64 - T)
        pass(l5, Lin::constant(64.0) - N + off, LH.dim(1), -1);
      }
      Lin e1, q;
      for (std::uint32_t j = 1; j <= 8; ++j) e1 += KXG[j];
      for (std::uint32_t qq = 1; qq < 4; ++qq) q += k(vw(qq, 3)) * static_cast<double>(qq);
      LX_ = B.field("vexp_group_last", 1);
      const Lin x = oh_value(glo) * 4.0 + q + 1.0 - N;  // (e & 63) + 1 - T
      threshold_if(l5, x, 0, 64, PRE[VEXP] + e1 - 1.0, LX_.dim());
      threshold_if(l5, x, 1, 64, PRE[VEXP] + e1 - 1.0, LX_.dim(), -1);
      XG0_ = B.field("vexp_fetch", 1);  // the fetch step of a VEXP word (group 0's span)
      when(l5, {PRE[VEXP], fetch()}, {{XG0_.dim(), 1.0}});
    }
    VKL_ = B.field("vred_last_group", 16);
    table(l5, {OH{one - nib(RV2, 4)[0], nib(RV2, 4)[0]}, nib(RV2, 5), masked(nib(RV2, 6), 7)},
          [&](const std::vector<unsigned>& v) {
            // n - 1 = (n & 15) - 1 + 16 (n >> 4): (n - 1) >> 6 = (16 (n >> 4) - [n & 15 = 0]) >> 6
            const int x = 16 * static_cast<int>(v[1] + 16 * v[2]) - static_cast<int>(v[0]);
            return x < 0 ? SparseVec{} : SparseVec{{VKL_.dim(static_cast<std::uint32_t>(x >> 6) & 15), 1.0}};
          },
          {PRE[VRED] + PRE[VQ]});
    VRQ_ = B.field("vred_sumsq_group_step", 1);  // the step consumes VRD(k) of a VRED SUMSQ (layer 6)
    when(L(6), {g, cls(VRED), f7_mode(0)}, {{VRQ_.dim(), 1.0}});
    VSPAN_ = B.field("vred_span", 1024);
    LayerBuilder& l6 = L(6);
    const Lin off = (g + GQ_[0] + LX_[0] + XG0_[0]) * 2048.0 - 2048.0;  // [lo <= w] - [hi <= w], each ReLU(w + 1 - x) - ReLU(w - x)
    for (std::uint32_t w = 0; w < 1024; ++w) {
      const double wd = w;
      l6.unit_out(l6.relu_unit(off + (wd + 1.0) - LH[0]), VSPAN_.dim(w), 1.0);
      l6.unit_out(l6.relu_unit(off + wd - LH[0]), VSPAN_.dim(w), -1.0);
      l6.unit_out(l6.relu_unit(off + (wd + 1.0) - LH[1]), VSPAN_.dim(w), -1.0);
      l6.unit_out(l6.relu_unit(off + wd - LH[1]), VSPAN_.dim(w), 1.0);
    }
  }

  // Bit i of a value held as digit one-hots (16 rows per column, from row `base` of DG), a
  // linear form of them.
  static Lin digit_bit(const FieldRef& DG, std::uint32_t i, std::uint32_t base = 0) {
    Lin l;
    for (std::uint32_t v = 0; v < 16; ++v)
      if ((v >> (i & 3)) & 1) l += DG[base + 16 * (i >> 2) + v];
    return l;
  }

  // Pre-split of column sums X_c (integers 0..max_cs[c]) before column_digits(), so that no
  // unit's partial sum of terms nears 2^24 (a threshold split of values up to ~2^14 in steps of
  // 16 would sum ~1,000 pairs of large terms into one dimension): the thermometer [X_c >= 256 t]
  // into one dimension per t (layer l); R_c = X_c - 256 H_c (0..255, H_c = floor(X_c / 256))
  // split into R_c mod 16 (column c) and floor(R_c / 16) (column c + 1), and H_c into column
  // c + 2 (layer l + 1). Returns the new column sums and their bounds (same number of columns:
  // carries out of the top column are dropped, as modulo 2^(4 cols)).
  std::pair<std::vector<Lin>, std::vector<unsigned>> presplit(const std::string& name, std::uint32_t l, const std::vector<Lin>& X,
                                                               const std::vector<unsigned>& max_cs) {
    const std::uint32_t cols = static_cast<std::uint32_t>(X.size());
    std::vector<unsigned> next(cols, 0);
    const FieldRef S1 = B.field(name + "_cols_presplit", cols);
    LayerBuilder& la = L(l);
    LayerBuilder& lb = L(l + 1);
    for (std::uint32_t c = 0; c < cols; ++c) {
      const unsigned nh = max_cs[c] / 256;
      Lin R = X[c];
      if (nh > 0) {
        const FieldRef TH = B.field(name + "_col" + std::to_string(c) + "_thermometer", nh);
        Lin H;
        for (unsigned t = 1; t <= nh; ++t) {
          threshold(la, X[c], 256.0 * t, TH.dim(t - 1));
          H += TH[t - 1];
        }
        R -= H * 256.0;
        if (c + 2 < cols) {
          pass(lb, H, S1.dim(c + 2));
          next[c + 2] += nh;
        }
      }
      const unsigned rmax = std::min(max_cs[c], 255u);
      pass(lb, R, S1.dim(c));
      for (unsigned t = 1; 16 * t <= rmax; ++t) {
        threshold(lb, R, 16.0 * t, S1.dim(c), -16);
        if (c + 1 < cols) threshold(lb, R, 16.0 * t, S1.dim(c + 1), 1);
      }
      next[c] += std::min(rmax, 15u);
      if (c + 1 < cols) next[c + 1] += rmax / 16;
    }
    std::vector<Lin> out;
    for (std::uint32_t c = 0; c < cols; ++c) out.push_back(S1[c]);
    return {out, next};
  }

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
  void vred() {
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

  // VQ (vector.md sections 4.3, 5): for each group k of 64 source words, VQE((k << 5) | e_k), then
  // the group's q_i = rnd(x_i, e_k) as part of one int8 stream (ACT: 64 values per group, zeros
  // past n; K/V: the 32 values of the one group).
  // - e_k on the step that emits VQE(k) (the fetch step, or the one consuming the previous group's
  //   last VLB3): E is monotone, so e_k = max_i E(|x_i|), and E(|x|) >= t iff |x| >= c 2^s with
  //   (c, s) = (1, 7) for t = 1, (255, t - 2) for t = 2..25 (rnd(a, e) <= 127 iff a < 255 2^(e-1)).
  //   With the group's words on the lanes (VLANE_, layer 7; the span from vred_span()): for x >= 0,
  //   floor(x / 2^s) >= c; for x < 0, |x| = ~x + 1, floor(|x| / 2^s) = floor(~x / 2^s) + [the low
  //   s bits of x are 0] (Z_s, layer 7); each floor is linear in the bits, with every bit from
  //   s + 8 up weighted 256 instead (the sum stays exact and >= c iff the floor is). One threshold
  //   per lane, t and sign (layer 8) into counts C_t; [C_t >= 1] (layer 9) is e_k's thermometer,
  //   and its differences the payload's nibbles (layer 11, gated by VQF_).
  // - Value steps (consuming VLG(g) or VLB_{m-1}; element j = 4 g + m): x_j from port x
  //   (vr_file(), layer 7), e_k from the VQE slot (layer 0), x_j + 2^(e_k - 1) modulo 2^36 as
  //   digits (column_digits(), layers 7..9), bits e_k .. e_k + 7 (layer 10), their nibbles (11).
  //   ACT elements j >= n are padding: the byte is 0.
  // - The sequence (layer 9): VLG(16 k) after VQE; VLB0 after VLG(g); VLB_{m+1} after VLB_m;
  //   after VLB3, the end at the stream's last element (ACT: g = 16 ceil(n/64) - 1, K/V: g = 7),
  //   else VQE(k + 1) at a group's end (g & 15 = 15), else VLG(g + 1).
  // The writes of ACT and ASH (vmat()) and of KC, KSH, VC and VSH (cache_heads()) are made there.
  void vq() {
    const Lin one = Lin::constant(1), vq = cls(VQ), gq = GQ_[0];
    const OH glo = field_oh(VGS, 0, 16), ghi = field_oh(VGS, 16, 16);
    // ---- e_k (the VQE steps)
    auto lane = [&](std::uint32_t l, std::uint32_t i, std::uint32_t v) { return VLANE_[128 * l + 16 * i + v]; };
    auto bit = [&](std::uint32_t l, std::uint32_t b) { return digit_bit(VLANE_, b, 128 * l); };  // bit b of lane l's word
    const FieldRef Z = B.field("vq_low_bits_zero", 64 * 24);  // Z_s for s = 1..23 (index 24 l + s)
    LayerBuilder& l7 = L(7);
    for (std::uint32_t l = 0; l < 64; ++l) {
      Lin ones;
      for (std::uint32_t s = 1; s <= 23; ++s) {
        ones += bit(l, s - 1);
        pass(l7, gq - ones, Z.dim(24 * l + s));
      }
    }
    const FieldRef C = B.field("vq_amax_counts", 25);  // C_t, t = 1..25
    LayerBuilder& l8 = L(8);
    constexpr double BIG = 8192;  // > every floor sum below (<= 255 + 256 * 23 + 1)
    for (std::uint32_t l = 0; l < 64; ++l) {
      Lin sign;
      for (std::uint32_t v = 8; v < 16; ++v) sign += lane(l, 7, v);
      for (std::uint32_t t = 1; t <= 25; ++t) {
        const std::uint32_t s = t == 1 ? 7 : t - 2;
        const double c = t == 1 ? 1 : 255;
        Lin pos, neg = s == 0 ? gq : Z[24 * l + s];
        for (std::uint32_t i = s; i <= 30; ++i) {
          const double w = i - s >= 8 ? 256.0 : static_cast<double>(1u << (i - s));
          const Lin b = bit(l, i);
          pos += b * w;
          neg += (one - b) * w;
        }
        threshold(l8, pos - sign * BIG + gq * BIG - BIG, c, C.dim(t - 1));
        threshold(l8, neg + sign * BIG + gq * BIG - 2 * BIG, c, C.dim(t - 1));
      }
    }
    const FieldRef QT = B.field("vq_shift_thermometer", 25);  // [e_k >= t], t = 1..25
    for (std::uint32_t t = 1; t <= 25; ++t) threshold(L(9), C[t - 1], 1, QT.dim(t - 1));
    // the payload (k << 5) | e_k: low nibble e_k & 15, high nibble 2 k + (e_k >> 4) (layer 11)
    LayerBuilder& l11 = L(11);
    const Lin f = VQF_[0];
    pass(l11, f, NPL.dim(0));
    for (std::uint32_t t = 1; t <= 25; ++t) {
      const std::uint32_t u = l11.relu_unit(QT[t - 1] + f - 1.0);
      l11.unit_out(u, NPL.dim(t & 15), 1.0);
      l11.unit_out(u, NPL.dim((t - 1) & 15), -1.0);
    }
    for (std::uint32_t j = 0; j < 6; ++j) {
      when(l11, {f, KQ_[j]}, {{NPH.dim(2 * j), 1.0}});
      when(l11, {f, KQ_[j], QT[15]}, {{NPH.dim(2 * j), -1.0}, {NPH.dim(2 * j + 1), 1.0}});
    }
    // ---- the sequence (layer 9; the last element from layer 7)
    const FieldRef EQG = B.field("vq_at_last_group", 1), QL = B.field("vq_last", 1);
    for (std::uint32_t j = 0; j < 16; ++j) when(L(6), {ghi[j], VKL_[j]}, {{EQG.dim(), 1.0}});
    const Lin vlb3 = k(kVlb0 + 3);
    when(L(7), {vq, f7_mode(0), vlb3, glo[15], EQG[0]}, {{QL.dim(), 1.0}});
    when(L(7), {vq, f7_mode(1) + f7_mode(2), vlb3, glo[7], ghi[0]}, {{QL.dim(), 1.0}});
    LayerBuilder& l9 = L(9);
    when(l9, {vq, k(kVqe)}, {{NK.dim(kVlg), 1.0}, {NPL.dim(0), 1.0}});
    table(l9, {field_oh(PN, 16, 16)}, [&](const std::vector<unsigned>& v) { return SparseVec{{NPH.dim(v[0] >> 1), 1.0}}; },
          {vq, k(kVqe)});
    when(l9, {vq, k(kVlg)}, {{NK.dim(kVlb0), 1.0}});
    for (std::uint32_t m = 0; m < 3; ++m) when(l9, {vq, k(kVlb0 + m)}, {{NK.dim(kVlb0 + m + 1), 1.0}});
    when(l9, {QL[0]}, {{ENDI.dim(), 1.0}});
    when(l9, {vq, vlb3, glo[15], one - QL[0]}, {{NK.dim(kVqe), 1.0}, {VQF_.dim(), 1.0}});
    const std::vector<Lin> next_group = {vq, vlb3, one - glo[15], one - QL[0]};
    when(l9, next_group, {{NK.dim(kVlg), 1.0}});
    table(l9, {glo}, [&](const std::vector<unsigned>& v) { return SparseVec{{NPL.dim((v[0] + 1) & 15), 1.0}}; }, next_group);
    table(l9, {ghi}, [&](const std::vector<unsigned>& v) { return SparseVec{{NPH.dim(v[0]), 1.0}}; }, next_group);
    // ---- the value steps
    VQV_ = B.field("vq_value_step", 1);
    when(L(5), {PRE[VQ], VQR_[0]}, {{VQV_.dim(), 1.0}});
    const Lin gv = VQV_[0];
    const FieldRef QS = B.field("vqe_slot", 32);  // the last VQE's payload nibbles
    slot_head(L(0), 1, [&](std::uint32_t) { return k(kVqe); }, [&](std::uint32_t r) { return PN[r]; }, QS, int8_stream());
    const FieldRef QE = B.field("vq_shift", 26);  // e_k one-hot on the value steps (layer 6)
    const OH qlo = field_oh(QS, 0, 16);
    const Lin qhi_odd = any_of(field_oh(QS, 16, 16), [](unsigned v) { return (v & 1) != 0; });
    for (std::uint32_t e = 0; e < 26; ++e)
      when(L(6), {gv, qlo[e & 15], e >= 16 ? qhi_odd : one - qhi_odd}, {{QE.dim(e), 1.0}});
    // padding: j = 64 (g >> 4) + 4 (g & 15) + m >= n (ACT only: K/V elements are < 32 = n)
    const FieldRef PAD = B.field("vq_padding", 1);
    const Lin jv = oh_value(ghi) * 64.0 + oh_value(glo) * 4.0 + k(kVlb0) + k(kVlb0 + 1) * 2.0 + k(kVlb0 + 2) * 3.0;
    threshold_if(L(6), jv - half(RV2, 1), 0, 1100, gv, PAD.dim());
    // x + 2^(e - 1) modulo 2^36 (column 8: x's sign extension)
    std::vector<Lin> X(9);
    std::vector<unsigned> max_cs(9, 15);
    for (std::uint32_t c = 0; c < 8; ++c) X[c] = oh_value(nib(VRX, c));
    for (std::uint32_t e = 1; e < 26; ++e) {
      X[(e - 1) >> 2] += QE[e] * static_cast<double>(1u << ((e - 1) & 3));
      max_cs[(e - 1) >> 2] = 15 + 8;
    }
    X[8] = any_of(nib(VRX, 7), [](unsigned v) { return v >= 8; }) * 15.0;
    std::uint32_t done = 0;
    const FieldRef DG = column_digits("vq_round", 7, X, max_cs, gv, &done);
    if (done != 9) throw std::logic_error("vq: the digits are not ready at layer 9");
    const FieldRef RB = B.field("vq_byte_bits", 8);  // bits e .. e + 7 (layer 10)
    for (std::uint32_t j = 0; j < 8; ++j)
      for (std::uint32_t e = 0; e < 26; ++e) when(L(10), {QE[e], digit_bit(DG, j + e)}, {{RB.dim(j), 1.0}});
    for (std::uint32_t h = 0; h < 2; ++h)
      for (std::uint32_t v = 0; v < 16; ++v) {
        Lin pre = gv - PAD[0] - 4.0;
        for (std::uint32_t b = 0; b < 4; ++b) pre += ((v >> b) & 1) ? RB[4 * h + b] : one - RB[4 * h + b];
        l11.unit_out(l11.relu_unit(pre), h == 0 ? NPL.dim(v) : NPH.dim(v), 1.0);
      }
    pass(l11, PAD[0], NPL.dim(0));
    pass(l11, PAD[0], NPH.dim(0));
  }

  // VEXP (vector.md sections 4.4, 5): for each group g < G, VXM0..VXM3 (the bytes of m_g = the
  // group's maximum score), then the word stream of p_{g,t} = EXP[min(1023, rnd(m_g - s_{g,t},
  // 10))], t < T (elements e = 64 g + t); then the elements e = 512 + g, S_g = sum_t p_{g,t}.
  // - m_g on the step that emits VXM0 of g (the fetch step, or the one consuming the VW_q3 of
  //   group g - 1's last score, LX_): the group's scores on the lanes (the span from
  //   vred_span()) and vred_max()'s lane tournament (gate GMX_), the maximum's nibble one-hots
  //   at layer 12 (GOH_); VXM0's byte (layer 13), bytes 1..3 into a slot (layer 13) read on the
  //   VXM0..VXM2 steps (layer 14).
  // - Element steps (group phase, ghi < 8): m from the consumed VXM bytes (a slot, layer 0), s on
  //   port x (layer 7); d + 512 + 2^32 with d = m - s = (m ^ 2^31) + ~(s ^ 2^31) + 1 as digits
  //   modulo 2^36 (layers 7..9); i = bits 10..19, or 1023 when d + 512 >= 2^20 (bits 20..31 or
  //   33; layers 10, 11: the 1,024-way one-hot of i); byte m of EXP[i] (layer 12). p's nibbles,
  //   as 5 scalars, go to a memory keyed by e (layer 13, 512 columns).
  // - Sum steps (ghi = 8, element 512 + g): the memory read with the query [e in group g, t < T]
  //   gives the column sums of S_g (<= 64 * 15; layer 13); column_digits() (13..16); the byte
  //   (17).
  // - The sequence (layer 9): VXM_{m+1} after VXM_m; VWG(16 g) after VXM3 (g from a slot of the
  //   last VWG's high nibble, reset by PCL); the word-stream steps as usual, except after a
  //   group's last score: VXM0 of the next group, or VWG(128) after the last group; the end
  //   after S_{G-1}.
  void vexp() {
    const Lin one = Lin::constant(1), ex = cls(VEXP);
    const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
    const Lin ghi8 = ghi[8], reads = SREAD_;
    const OH& tm = TM_;
    OH qt = stream_target_q();
    auto f7g = [&](std::function<bool(unsigned)> pred) {  // [pred(G)] on a VEXP word, G = (f7 & 7) + 1
      Lin l;
      for (unsigned x = 0; x < 8; ++x)
        if (pred(x + 1)) l += F7X_[x];
      return l;
    };
    // ---- flags (layer 6): VXM0 of a later group (XF), the value steps of p (GXP; S: GXS, layer
    // 7), the end of the sums (SL)
    const FieldRef XF = B.field("vexp_next_group", 1), GV = B.field("vexp_value_steps", 2), SL = B.field("vexp_sums_last", 1);
    LayerBuilder& l6 = L(6);
    for (std::uint32_t j = 0; j < 7; ++j)
      when(l6, {LX_[0], ghi[j], f7g([j](unsigned G) { return G >= j + 2; })}, {{XF.dim(), 1.0}, {GMX_.dim(), 1.0}});
    when(l6, {fetch(), ex}, {{GMX_.dim(), 1.0}});
    when(l6, {reads, ex, one - ghi8, one - LX_[0]}, {{GV.dim(0), 1.0}});
    for (std::uint32_t g = 0; g < 8; ++g)
      when(l6, {ex, ghi8, glo[g >> 2], k(vw(g & 3, 3)), f7g([g](unsigned G) { return G == g + 1; })}, {{SL.dim(), 1.0}});
    when(L(7), {reads, ex, ghi8, one - SL[0]}, {{GV.dim(1), 1.0}});  // layer 7: not after S_{G-1}
    const Lin gxp = GV[0], gxs = GV[1];
    // ---- the sequence (layer 9)
    const FieldRef XGS = B.field("vexp_vwg_high_slot", 17);  // the last VWG's high nibble; [seen since PCL]
    const FieldRef XGN = B.field("vwg_high_nibble", 17);
    for (std::uint32_t p = 0; p < 256; ++p) {
      B.embed(256 * kVwg + p, XGN.dim(p >> 4), 1);
      B.embed(256 * kVwg + p, XGN.dim(16), 1);
    }
    slot_head(L(0), 1, [&](std::uint32_t) { return k(kVwg) + k(kPcl); }, [&](std::uint32_t r) { return XGN[r]; }, XGS,
              k(kVxm0 + 3));
    LayerBuilder& l9 = L(9);
    for (std::uint32_t m = 0; m < 3; ++m) when(l9, {ex, k(kVxm0 + m)}, {{NK.dim(kVxm0 + m + 1), 1.0}});
    when(l9, {ex, k(kVxm0 + 3)}, {{NK.dim(kVwg), 1.0}, {NPL.dim(0), 1.0}});
    for (std::uint32_t v = 0; v < 15; ++v) when(l9, {ex, k(kVxm0 + 3), XGS[v], XGS[16]}, {{NPH.dim(v + 1), 1.0}});
    when(l9, {ex, k(kVxm0 + 3), one - XGS[16]}, {{NPH.dim(0), 1.0}});
    when(l9, {ex, k(kVwg)}, {{NK.dim(vw(0, 0)), 1.0}});
    for (std::uint32_t q = 0; q < 4; ++q)
      for (std::uint32_t m = 0; m < 3; ++m) when(l9, {ex, k(vw(q, m))}, {{NK.dim(vw(q, m + 1)), 1.0}});
    when(l9, {XF[0]}, {{NK.dim(kVxm0), 1.0}, {XFN_.dim(), 1.0}});
    when(l9, {ex, LX_[0], one - XF[0]}, token_out(kVwg, 128));
    const Lin more = one - LX_[0] - SL[0];
    for (std::uint32_t q = 0; q < 3; ++q) when(l9, {ex, k(vw(q, 3)), more}, {{NK.dim(vw(q + 1, 0)), 1.0}});
    const std::vector<Lin> next_quad = {ex, k(vw(3, 3)), more};
    when(l9, next_quad, {{NK.dim(kVwg), 1.0}});
    table(l9, {glo}, [&](const std::vector<unsigned>& x) { return SparseVec{{NPL.dim((x[0] + 1) & 15), 1.0}}; }, next_quad);
    table(l9, {ghi, OH{one - glo[15], glo[15]}},
          [&](const std::vector<unsigned>& x) { return SparseVec{{NPH.dim((x[0] + x[1]) & 15), 1.0}}; }, next_quad);
    when(l9, {SL[0]}, {{ENDI.dim(), 1.0}});
    // ---- VXM0..VXM3: byte 0 of GOH_ (layer 13), bytes 1..3 from a slot (layer 13, read 14)
    LayerBuilder& l13 = L(13);
    for (std::uint32_t r = 0; r < 32; ++r)
      l13.unit_out(l13.relu_unit(GOH_[r] + XFN_[0] - 1.0), r < 16 ? NPL.dim(r) : NPH.dim(r - 16), 1.0);
    const FieldRef MXS = B.field("vexp_max_slot", 96);
    slot_head(l13, 1, [&](std::uint32_t) { return XFN_[0]; }, [&](std::uint32_t r) { return GOH_[32 + r]; }, MXS,
              k(kVxm0) + k(kVxm0 + 1) + k(kVxm0 + 2));
    LayerBuilder& l14 = L(14);
    for (std::uint32_t m = 0; m < 3; ++m)
      for (std::uint32_t r = 0; r < 32; ++r)
        when(l14, {k(kVxm0 + m), MXS[32 * m + r]}, {{r < 16 ? NPL.dim(r) : NPH.dim(r - 16), 1.0}});
    // ---- p on the element steps
    VXMS_ = B.field("vxm_bytes", 128);  // m's nibbles from the consumed VXM0..VXM3 (layer 0)
    Lin vxm;
    for (std::uint32_t m = 0; m < 4; ++m) vxm += k(kVxm0 + m);
    Lin reads_k;
    for (const Lin& l : qt) reads_k += l;
    block_slots(L(0), "vxm", 4, [](std::uint32_t m) { return std::vector<std::uint32_t>{kVxm0 + m}; }, vxm, reads_k, VXMS_);
    std::vector<Lin> X(9);
    std::vector<unsigned> max_cs(9, 30);
    for (std::uint32_t c = 0; c < 8; ++c) {
      const unsigned flip = c == 7 ? 8 : 0;  // x ^ 2^31: unsigned order
      Lin mb, sb;
      for (unsigned v = 0; v < 16; ++v) {
        mb += VXMS_[16 * c + v] * static_cast<double>(v ^ flip);
        sb += VRX[16 * c + v] * static_cast<double>(v ^ flip);
      }
      const double kc = c == 0 ? 1 : c == 2 ? 2 : 0;  // + 1 (of ~s + 1) + 512
      X[c] = mb - sb + gxp * (15.0 + kc);
      max_cs[c] = 30 + static_cast<unsigned>(kc);
    }
    X[8] = Lin();
    max_cs[8] = 0;
    std::uint32_t done = 0;
    const FieldRef DG = column_digits("vexp_diff", 7, X, max_cs, gxp, &done);
    if (done != 9) throw std::logic_error("vexp: the digits are not ready at layer 9");
    auto bit = [&](std::uint32_t i) { return digit_bit(DG, i); };
    const FieldRef OVX = B.field("vexp_index_clamped", 1);  // d + 512 >= 2^20 (layer 10)
    Lin high = bit(33);
    for (std::uint32_t b = 20; b < 32; ++b) high += bit(b);
    threshold(L(10), high, 1, OVX.dim());
    const FieldRef I = B.field("vexp_index", 1024);  // i one-hot (layer 11)
    LayerBuilder& l11 = L(11);
    for (std::uint32_t i = 0; i < 1024; ++i) {
      Lin pre = gxp - OVX[0] - 10.0;
      for (std::uint32_t b = 0; b < 10; ++b) pre += ((i >> b) & 1) ? bit(10 + b) : one - bit(10 + b);
      l11.unit_out(l11.relu_unit(pre), I.dim(i), 1.0);
    }
    pass(l11, OVX[0], I.dim(1023));
    // layer 12: byte m of EXP[i]; p's nibbles as scalars (for S)
    LayerBuilder& l12 = L(12);
    const FieldRef PV = B.field("vexp_p_nibbles", 5);
    std::array<Lin, 5> pv;
    for (std::uint32_t i = 0; i < 1024; ++i) {
      const std::uint32_t e = static_cast<std::uint32_t>(exp_entry(static_cast<int>(i)));
      for (std::uint32_t m = 0; m < 4; ++m) {
        const std::uint32_t b = (e >> (8 * m)) & 0xFF;
        when(l12, {I[i], tm[m]}, {{NPL.dim(b & 15), 1.0}, {NPH.dim(b >> 4), 1.0}});
      }
      for (std::uint32_t c = 0; c < 5; ++c)
        if ((e >> (4 * c)) & 15) pv[c] += I[i] * static_cast<double>((e >> (4 * c)) & 15);
    }
    for (std::uint32_t c = 0; c < 5; ++c) pass(l12, pv[c], PV.dim(c));
    // ---- S_g: the memory of p's nibbles keyed by e (layer 13); keys (layer 6): e & 15 = 4 (g' &
    // 3) + q, e >> 4 = (g' >> 2) = (glo >> 2) + 4 ghi; the query on the sums' steps (layer 6):
    // [e >> 6 = g] [e & 63 < T], g = 4 (g' & 1) + q
    const FieldRef KEL = B.field("vexp_key_lo", 16), KEH = B.field("vexp_key_hi", 32), GG = B.field("vexp_sum_group", 8),
                   TT = B.field("vexp_t_below_T", 64);
    table(l6, {masked(glo, 3), qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{KEL.dim(4 * v[0] + v[1]), 1.0}}; },
          {reads, ex, one - ghi8});
    table(l6, {masked(glo, 0xC), masked(ghi, 7)},
          [&](const std::vector<unsigned>& v) { return SparseVec{{KEH.dim((v[0] >> 2) + 4 * v[1]), 1.0}}; },
          {reads, ex, one - ghi8});
    table(l6, {masked(glo, 1), qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{GG.dim(4 * v[0] + v[1]), 1.0}}; },
          {reads, ex, ghi8});
    const Lin T = half(RV2, 1);
    for (std::uint32_t t = 0; t < 64; ++t) threshold_if(l6, T, t + 1, 65535, ex, TT.dim(t));
    const FieldRef XS = B.field("vexp_sum_columns", 5);
    const std::uint32_t h = l13.add_head(512, 5, Activation::Relu, Activation::Relu);
    HeadBuilder& H = l13.head(h);
    for (std::uint32_t c = 0; c < 512; ++c) {
      H.k[c] = KEL[c & 15] + KEH[c >> 4] - 1.0;
      H.q[c] = GG[c >> 6] + TT[c & 63] - 1.0;
    }
    for (std::uint32_t r = 0; r < 5; ++r) {
      H.v[r] = PV[r];
      H.out.emplace_back(r, XS.dim(r), 1.0);
    }
    H.beta = gxp;
    std::vector<Lin> SX(8);
    std::vector<unsigned> smax(8, 0);
    for (std::uint32_t c = 0; c < 5; ++c) {
      SX[c] = XS[c];
      smax[c] = c < 4 ? 64 * 15 : 64;
    }
    const FieldRef SD = column_digits("vexp_sum", 13, SX, smax, gxs, &done);
    if (done != 16) throw std::logic_error("vexp: the sum's digits are not ready at layer 16");
    LayerBuilder& l17 = L(17);
    for (std::uint32_t m = 0; m < 4; ++m)
      for (std::uint32_t v = 0; v < 16; ++v) {
        when(l17, {SD[16 * (2 * m) + v], tm[m]}, {{NPL.dim(v), 1.0}});
        when(l17, {SD[16 * (2 * m + 1) + v], tm[m]}, {{NPH.dim(v), 1.0}});
      }
  }

  // [pred(f7)] on custom-1 words, linear in F7X_ (layer 6 on; vector_traps()).
  Lin f7_pred(const std::function<bool(unsigned)>& pred) const {
    Lin l;
    for (unsigned x = 0; x < 128; ++x)
      if (pred(x)) l += F7X_[x];
    return l;
  }

  // Bit b (0..7) of the consumed token's payload, linear in its nibble one-hots (PN).
  Lin payload_bit(std::uint32_t b) const {
    Lin bit;
    for (std::uint32_t v = 0; v < 16; ++v)
      if ((v >> (b & 3)) & 1) bit += PN[(b < 4 ? 0 : 16) + v];
    return bit;
  }

  // VMAT's slots (layers 0, 1; vmat()): the payload of the last VMC_j (MCS_) and of the last VMH
  // (HSN_, emptied by PCL: r >> 8 = 0), read on VMAT's steps; the bytes of VY0..VY2 (VYB_) and
  // the VY3 / VYN3 payload (VY3N_), read where VY3 or VYN3 is consumed; the running maximum of
  // argmax mode (MAXN_: y_r's bytes, written when VYN3 is consumed, read where VY2 is) and its
  // row (RSN_: the VMC and VMH slots, written with it).
  FieldRef MCS_, HSN_, VYB_, VY3N_, MAXN_, RSN_, VQEK_, VKM_, AB_, ASHO_, QBR_;
  // VMATR V mode (vmatr_v()): [VMATR, VMODE = 1] (layer 6), VMV's payload t as a one-hot
  // (embedding), the 32 VR heads' reads by c & 7 (layer 7) and their query (set by vmatr_v(),
  // used by vr_file())
  FieldRef VVM_, VMVT_, VVP_, PW0_, PW12_;
  std::function<Lin(std::uint32_t)> VVQ_;
  void vmat_slots() {
    VVM_ = B.field("vmatr_v_mode", 1);
    when(L(6), {cls(VMATR), f7_pred([](unsigned x) { return (x & 1) == 1; })}, {{VVM_.dim(), 1.0}});
    VMVT_ = B.field("vmv_position", 64);
    for (std::uint32_t t = 0; t < 64; ++t) B.embed(256 * kVmv + t, VMVT_.dim(t), 1);
    VVP_ = B.field("vmatr_v_words", 8 * 128);
    // VMATR V (vmatr_v()): w = src + t (t: VMV's payload) as key pieces (layers 5, 6); the 32 VR
    // heads of vr_file() (register c, parity b) read word 64 c + l where l = w & 63 and c0 <= c <
    // c0 + 8 (c0 = w >> 6; N12's index n is w >> 4)
    PW0_ = B.field("vmatr_v_p_key_lo", 16);
    PW12_ = B.field("vmatr_v_p_key_hi", 64);
    index_sum_nibbles("vmatr_v_p_index", nib(RV1, 4), nib(RV1, 5), masked(nib(RV1, 6), 3), field_oh(PN, 0, 16),
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
  // - Argmax (on the step consuming VY2): y_r > M (the running maximum, slot MAXN_) by nibble
  //   compares of the 48-bit y with M sign-extended (16, 17), and M != 2^31 - 1 (sat32 is
  //   monotone); row 0 is always a new maximum (18).
  // - The sequence (layer 9): VMC_{j+1}(p) or VY0 after VMC_j(p); VY_{m+1} after VY_m; after VY3 /
  //   VYN3: VMC0(p + 1), VMH(h + 1) (p = 255), or at the last row (r + 1 = R) the end (write
  //   mode) or W(r*) (argmax: W0 = r* & 0xFF, W1 = r* >> 8, W2 = W3 = 0; NOP(0) for rd = x0).
  void vmat() {
    const Lin one = Lin::constant(1), mat = cls(VMAT);
    Lin vmc;
    for (std::uint32_t j = 0; j < 6; ++j) vmc += k(kVmc0 + j);
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
    const Lin cek = vmc + vy3 + k(kVmh);  // the steps after the first that may emit VMC_j
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
    // layer 5: c = c0 + r K + j and the thermometer T_m = [c >= 64 m] (m = 1..65, c < 2^17), one
    // dimension each (c >> 6 = m iff T_m - T_{m+1} = 1, with T_0 the chunk step; none for c >=
    // 4,160); the ACT block b0 + j as a one-hot. Layer 6: c & 63 = c - 64 sum_m T_m the same way
    // (U_l = [c & 63 >= l], l = 1..64).
    constexpr double kHiS = 131072;  // > c0 + r K + j
    const Lin S = SP[0] + half(RV2, 0);
    const FieldRef TH = B.field("vmat_chunk_hi_thermometer", 65), TL = B.field("vmat_chunk_lo_thermometer", 64);
    LayerBuilder& l5 = L(5);
    Lin lo = S;
    for (std::uint32_t m = 1; m <= 65; ++m) {
      thr(l5, S, 64.0 * m, kHiS, e5, {{TH.dim(m - 1), 1.0}});
      lo -= TH[m - 1] * 64.0;
    }
    auto hi_oh = [&](std::uint32_t m) { return (m == 0 ? CE[0] : TH[m - 1]) - TH[m]; };  // [c >> 6 = m], m < 65
    const FieldRef QB = B.field("vmat_act_block", 6);
    table(l5, {nib(RV1, 4), jn}, [&](const std::vector<unsigned>& v) {
      return v[0] + v[1] < 6 ? SparseVec{{QB.dim(v[0] + v[1]), 1.0}} : SparseVec{};
    }, {e5, nib(RV1, 5)[0], nib(RV1, 6)[0], nib(RV1, 7)[0]});
    LayerBuilder& l6 = L(6);
    for (std::uint32_t m = 1; m <= 64; ++m) thr(l6, lo, m, kHiS, CE[0], {{TL.dim(m - 1), 1.0}});
    auto lo_oh = [&](std::uint32_t m) { return (m == 0 ? CE[0] : TL[m - 1]) - TL[m]; };  // [c & 63 = m], m < 64
    // layer 7: WMEM and WSCALE (one head: 4,152 columns, key ReLU(HI[c >> 6] + LOH[c & 63] - 1)),
    // ACT (64 lane heads: lane i holds ACT[64 b + i]'s bits in column b), ASH (a one-hot)
    LayerBuilder& l7 = L(7);
    const FieldRef WB = B.field("vmat_weight_bits", 256), WSB = B.field("vmat_scale_bits", 16);
    {
      const std::uint32_t h = l7.add_head(kChunks, 272, Activation::Relu, Activation::Relu);
      HeadBuilder& H = l7.head(h);
      for (std::uint32_t c = 0; c < kChunks; ++c) {
        H.q[c] = hi_oh(c >> 6) + lo_oh(c & 63) - 1.0;
        H.k[c] = H.q[c];
      }
      for (std::uint32_t r = 0; r < 272; ++r) H.out.emplace_back(r, r < 256 ? WB.dim(r) : WSB.dim(r - 256), 1.0);
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
      table(l5, {nib(RV1, 0), ghi}, [&](const std::vector<unsigned>& v) {
        return v[0] + v[1] < 6 ? SparseVec{{WBLK.dim(v[0] + v[1]), 1.0}} : SparseVec{};
      }, {act, vlb_any()});
      table(l5, {glo, mq}, [&](const std::vector<unsigned>& v) { return SparseVec{{WLANE.dim(4 * v[0] + v[1]), 1.0}}; },
            {act, vlb_any()});
      table(l5, {nib(RV1, 0), field_oh(VQEK_, 0, 6)}, [&](const std::vector<unsigned>& v) {
        return v[0] + v[1] < 6 ? SparseVec{{ABLK.dim(v[0] + v[1]), 1.0}} : SparseVec{};
      }, {act, k(kVqe)});
    }
    // VMATR K mode reads block src on its value steps (QBR_, layer 5)
    QBR_ = B.field("vmatr_act_block", 6);
    for (std::uint32_t b = 0; b < 6; ++b)
      when(l5, {nib(RV1, 4)[b], SREAD_, PRE[VMATR], masked(field_oh(VIN, 0, 16), 2)[0], nib(RV1, 5)[0], nib(RV1, 6)[0],
                nib(RV1, 7)[0]},
           {{QBR_.dim(b), 1.0}});
    const FieldRef AB = B.field("vmat_act_bits", 512), ASHO = B.field("vmat_ash", 26);
    AB_ = AB;
    ASHO_ = ASHO;
    for (std::uint32_t i = 0; i < 64; ++i) {
      const std::uint32_t h = l7.add_head(6, 8);
      HeadBuilder& H = l7.head(h);
      for (std::uint32_t b = 0; b < 6; ++b) {
        H.q[b] = QB[b] + QBR_[b];
        H.k[b] = WBLK[b];
      }
      for (std::uint32_t r = 0; r < 8; ++r) {
        H.v[r] = payload_bit(r);
        H.out.emplace_back(r, AB.dim(8 * i + r), 1.0);
      }
      H.beta = WLANE[i];
      section_init("act_lane" + std::to_string(i), 7, h, 0, ".lockstep.act", i, 64, 6, ByteEncoding::Bits, 1);
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
    // its signed high nibble (PH_t, -512..448), so that P_t = PL_t + 16 PH_t
    const FieldRef PL = B.field("vmat_bit_products_lo", 4), PH = B.field("vmat_bit_products_hi", 4);
    for (std::uint32_t i = 0; i < 64; ++i)
      for (std::uint32_t t = 0; t < 4; ++t)
        for (std::uint32_t kb = 0; kb < 8; ++kb)
          when(l7, {WB[4 * i + t], AB[8 * i + kb]},
               {{kb < 4 ? PL.dim(t) : PH.dim(t), kb < 7 ? static_cast<double>(1u << (kb & 3)) : -8.0}});
    // Q_e (layer 8): sign_t [bit b of WSCALE] [ASH = s] (PL_t into e = t + b + s, PH_t into e + 4);
    // |Q_e| <= 4 * 960 + 4 * 512
    constexpr std::uint32_t kCols = 48;
    const FieldRef Q = B.field("vmat_contribution_columns", kCols);
    LayerBuilder& l8 = L(8);
    for (std::uint32_t t = 0; t < 4; ++t) {
      const double sg = t < 3 ? 1.0 : -1.0;
      for (std::uint32_t b = 0; b < 16; ++b)
        for (std::uint32_t s = 0; s < 26; ++s) {
          const std::uint32_t e = t + b + s;
          const Lin off = (one * 2.0 - WSB[b] - ASHO[s]) * 1024.0;
          l8.unit_out(l8.relu_unit(PL[t] - off), Q.dim(e), sg);
          l8.unit_out(l8.relu_unit(PH[t] + 512.0 - off), Q.dim(e + 4), sg);
          when(l8, {WSB[b], ASHO[s]}, {{Q.dim(e + 4), -512.0 * sg}});
        }
    }
    // layer 9: the contribution slots (column j), read over j < K on the value steps
    const FieldRef D = B.field("vmat_column_sums", kCols);
    {
      LayerBuilder& l9 = L(9);
      const std::uint32_t h = l9.add_head(6, kCols, Activation::Relu, Activation::Relu);
      HeadBuilder& H = l9.head(h);
      for (std::uint32_t j = 0; j < 6; ++j) {
        H.k[j] = jn[j] + CE[0] - 1.0;
        H.q[j] = f7_pred([j](unsigned x) { return (x & 7) > j && (x & 7) <= 6; }) + gya - 1.0;
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
      Lin x = gya * 1048576.0;
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
      if (kc != 0) pass(l9, gya * static_cast<double>(kc), CS.dim(c));
      max_cs[c] += kc;
    }
    std::vector<Lin> cols;
    for (std::uint32_t c = 0; c < kDg; ++c) cols.push_back(CS[c]);
    std::uint32_t done = 0;
    const FieldRef DG = column_digits("vmat_y", 12, cols, max_cs, gya, &done);
    if (done != 15) throw std::logic_error("vmat: the digits are not ready at layer 15");
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
    thr(L(6), rrow - half(RV2, 1), 0, 8192, vy3, {{LR.dim(), 1.0}});
    thr(L(6), rrow - half(RV2, 1), 1, 8192, vy3, {{LR.dim(), -1.0}});
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

  // KC or VC (32 element heads keyed by row, 8 bits each) and KSH or VSH (a one-hot of 0..25) in
  // layer 7 (vector.md section 2), initialised from their sections, read into BITS (element j's
  // bits at 8 j) and SHO with the row key pieces RQ0, RQ12 (row r: ReLU(RQ0[r & 15] + RQ12[r >> 4]
  // - 1)), and written by VQ with TARGET `target` (section 4.3): row A, element j = 4 g + m (g: the
  // VLG slot) when VLB_m is consumed, e_0 when VQE is.
  void cache_heads(const std::string& name, const std::string& cache_section, const std::string& sh_section, unsigned target,
                   const FieldRef& RQ0, const FieldRef& RQ12, const FieldRef& BITS, const FieldRef& SHO) {
    LayerBuilder& l5 = L(5);
    const FieldRef WQ0 = B.field(name + "_write_row_lo", 16), WQ12 = B.field(name + "_write_row_hi", 64);
    const Lin qk = PRE[VQ] + masked(field_oh(VIN, 0, 16), 6)[2 * target] - 1.0;  // VQ, TARGET (1 or <= 0)
    const OH zero16 = const_oh(16, 0);
    index_sum_nibbles(name + "_write_row", nib(RV1, 0), nib(RV1, 1), masked(nib(RV1, 2), 3), zero16, zero16, const_oh(4, 0),
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
  //   (vmat(), 7). The product's bit columns C_p = sum over i + j = p of +-[bit i of a][bit j of
  //   kc] (p < 15, |C_p| <= 64; 4,096 three-input ANDs with the one-hot of h) and e' as a one-hot
  //   (a table of ASH and KSH) (7); the columns moved to bits p + e' as nibble columns X_c (c <
  //   17, |X_c| <= 960) (8); X_c + 2^10 with the offsets and the rounding bit as constant nibbles,
  //   modulo 2^68, by column_digits() (9..12); overflow iff bits 47..67 are not all equal (13);
  //   the byte (14, emit_rounded()).
  // - The sequence is the word stream's (vew(), with VKM_); the last element (g = 2 T - 1, VW33)
  //   is added to LASTW (layer 10).
  // - VQ K (TARGET = 1) writes KC[row] (element j = 4 g + m when VLB_m is consumed) and KSH[row]
  //   (e_0, when VQE is consumed).
  void vmatr() {
    const Lin one = Lin::constant(1);
    const OH glo = field_oh(VWGS, 0, 16), ghi = field_oh(VWGS, 16, 16);
    const OH qt = stream_target_q();
    const Lin kbit = masked(field_oh(VIN, 0, 16), 2)[0];  // f7 bit 0 = 0 (inst bit 25; custom-1 words)
    const FieldRef GK = B.field("vmatr_k_value_steps", 1), HH = B.field("vmatr_k_head", 8);
    LayerBuilder& l5 = L(5);
    when(l5, {SREAD_, PRE[VMATR], kbit}, {{GK.dim(), 1.0}});
    table(l5, {masked(glo, 1), qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{HH.dim(4 * v[0] + v[1]), 1.0}}; },
          {SREAD_, PRE[VMATR], kbit});
    // the row r0 + t (t = g >> 1 < 64): key pieces (layers 5, 6)
    const FieldRef RQ0 = B.field("vmatr_row_key_lo", 16), RQ12 = B.field("vmatr_row_key_hi", 64);
    sum_pieces("vmatr_row", {nib(RV2, 0), masked(glo, 0xE), masked(ghi, 1)},
               [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1) + ((v[2] & 1) << 3); },
               oh_value(nib(RV2, 0)) + oh_value(masked(glo, 0xE)) * 0.5 + oh_value(masked(ghi, 1)) * 8.0,
               {nib(RV2, 1), masked(ghi, 6)}, [](const std::vector<unsigned>& v) { return v[0] + (v[1] >> 1); },
               {masked(nib(RV2, 2), 3)}, [](const std::vector<unsigned>& v) { return v[0]; }, {SREAD_, PRE[VMATR], kbit},
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
          [&](const std::vector<unsigned>& v) { return SparseVec{{EO.dim(v[0] + v[1]), 1.0}}; }, {GK[0]});
    // layer 8: the nibble columns of s 2^e' (+ 2^10 each)
    constexpr std::uint32_t kXc = 17;
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
    unsigned __int128 ones = 0;  // sum_{c<17} 16^c
    for (std::uint32_t c = 0; c < kXc; ++c) ones = (ones << 4) | 1;
    const unsigned __int128 konst = (static_cast<unsigned __int128>(1) << 15) - (static_cast<unsigned __int128>(1) << 10) * ones;
    for (std::uint32_t c = 0; c < kXc; ++c) {
      const unsigned kc = static_cast<unsigned>((konst >> (4 * c)) & 15);
      cols.push_back(X[c] + GK[0] * (1024.0 + kc));
      max_cs.push_back(1024 + 960 + kc);
    }
    std::uint32_t done = 0;
    const FieldRef DG = column_digits("vmatr_k", 9, cols, max_cs, GK[0], &done);
    if (done != 12) throw std::logic_error("vmatr: the digits are not ready at layer 12");
    const FieldRef OV = B.field("vmatr_k_overflow", 2);
    overflow_flags(L(13), DG, 11, kXc, OV, GK[0]);
    emit_rounded(L(14), DG, OV);
    // the last element: VW33 with g = 2 T - 1 (layer 6), into LASTW (layer 10)
    const FieldRef EQT = B.field("vmatr_k_last", 1);
    const Lin gx = oh_value(glo) + oh_value(ghi) * 16.0 + 1.0 - half(RV2, 1) * 2.0;
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
  //   stream's (vew(), with VVM_); its last element (g = 15, VW33) into LASTW (layer 10).
  void vmatr_v() {
    const Lin one = Lin::constant(1);
    const Lin vbit = masked(field_oh(VIN, 0, 16), 2)[2];  // f7 bit 0 = 1 (custom-1 words)
    const OH plo = field_oh(PN, 0, 16), phi = field_oh(PN, 16, 16);
    const std::vector<Lin> gmv = {k(kVmv), PRE[VMATR]};
    LayerBuilder& l5 = L(5);
    // r0 + t as key pieces (t: VMV's payload, < 64; w = src + t: vmat_slots())
    const FieldRef PW12 = PW12_;
    const FieldRef RQ0 = B.field("vmatr_v_row_key_lo", 16), RQ12 = B.field("vmatr_v_row_key_hi", 64);
    index_sum_nibbles("vmatr_v_row", nib(RV2, 0), nib(RV2, 1), masked(nib(RV2, 2), 3), plo, masked(phi, 3), const_oh(4, 0), gmv,
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
    const FieldRef GV = B.field("vmatr_v_value_steps", 1), EL = B.field("vmatr_v_element", 64), TT = B.field("vmatr_v_positions", 64);
    when(l5, {SREAD_, PRE[VMATR], vbit}, {{GV.dim(), 1.0}});
    {
      const OH glo = field_oh(VWGS, 0, 16), qt = stream_target_q();
      table(l5, {glo, qt}, [&](const std::vector<unsigned>& v) { return SparseVec{{EL.dim(4 * v[0] + v[1]), 1.0}}; },
            {SREAD_, PRE[VMATR], vbit});
    }
    const Lin T = half(RV2, 1);
    for (std::uint32_t t = 0; t < 64; ++t) threshold_if(L(6), T, t + 1, 65536, GV[0], TT.dim(t));  // [T > t]
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
      cols.push_back(SC[c] + GV[0] * static_cast<double>(kc));
      max_cs.push_back((c < kC ? 16384 : 0) + kc);
    }
    const auto [X2, next] = presplit("vmatr_v", 11, cols, max_cs);
    std::uint32_t done = 0;
    const FieldRef DG = column_digits("vmatr_v", 13, X2, next, GV[0], &done);
    if (done != 15) throw std::logic_error("vmatr_v: the digits are not ready at layer 15");
    const FieldRef OV = B.field("vmatr_v_overflow", 2);
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

  // A "bytes" initialiser from an optional section (vector.md section 2.1: a missing or short
  // section leaves the rest zero).
  void section_init(const std::string& name, std::uint32_t layer, std::uint32_t head, std::uint32_t row,
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

  // VRED MAX (vector.md section 4.7): z = max_i x_i, on vred()'s sequence, by all-pairs
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
  void vred_max(const FieldRef& VRGM) {
    const Lin red = cls(VRED);
    // [MAX's VRD step] (layer 6); also VEXP's VXM0 steps (vexp(): the same lane tournament)
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

  // VRED SUMSQ (vector.md section 4.7): z = sat32(rnd(sum_i x_i^2, 16 + SH)), on vred()'s sequence.
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
  void vred_sumsq(const FieldRef& VRGQ) {
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

  // The next token's value byte m of rnd(v, 16) (the word stream's TM_; not after the stream's
  // last element) from the digits of v + 2^15: columns 4 + 2m, 5 + 2m, or a byte of 2^31 - 1 or
  // -2^31 where OVF says the result overflows (VEW MUL, MULS, ROT; VFN SILU).
  void emit_rounded(LayerBuilder& l, const FieldRef& DG, const FieldRef& OVF) { emit_rounded(l, DG, OVF, TM_, LASTW_[0]); }
  // The same for the value byte m chosen by tm[m] (0/1 each), nothing where `stop` is 1.
  void emit_rounded(LayerBuilder& l, const FieldRef& DG, const FieldRef& OVF, const OH& tm, const Lin& stop) {
    const Lin more = Lin::constant(1) - stop;
    for (std::uint32_t m = 0; m < 4; ++m) {
      for (unsigned v = 0; v < 16; ++v) {
        const Lin off = tm[m] - OVF[0] - OVF[1] - stop - 1.0;
        l.unit_out(l.relu_unit(DG[16 * (4 + 2 * m) + v] + off), NPL.dim(v), 1.0);
        l.unit_out(l.relu_unit(DG[16 * (5 + 2 * m) + v] + off), NPH.dim(v), 1.0);
      }
      const unsigned hi = m < 3 ? 0xFF : 0x7F, lo = m < 3 ? 0x00 : 0x80;
      when(l, {OVF[0], tm[m], more}, {{NPL.dim(hi & 15), 1.0}, {NPH.dim(hi >> 4), 1.0}});
      when(l, {OVF[1], tm[m], more}, {{NPL.dim(lo & 15), 1.0}, {NPH.dim(lo >> 4), 1.0}});
    }
  }

  Lin div_cls() const { return sum_cls({DIV, DIVU, REM, REMU}); }
  // Trial quotient T (layers 6, 7, only for the division classes): the bits already consumed
  // above the next index, 1 at the next index (or all bits on the W steps).
  void trial_quotient() {
    for (std::uint32_t j = 0; j < 32; ++j) {
      Lin above;
      for (std::uint32_t n = 0; n < j; ++n) above += NEXTI[n];
      when(L(6), {QB[j], above + ALLQ[0], div_cls()}, {{TB.dim(j), 1.0}});
    }
    for (std::uint32_t nb = 0; nb < 8; ++nb)
      for (unsigned v = 0; v < 16; ++v) {
        std::vector<Lin> conds = {div_cls()};
        for (unsigned b = 0; b < 4; ++b) {
          const Lin t = TB[4 * nb + b] + NEXTI[4 * nb + b];
          conds.push_back((v >> b) & 1 ? t : Lin::constant(1) - t);
        }
        when(L(7), conds, {{TN.dim(16 * nb + v), 1.0}});
      }
  }
  // out = enable ? (neg ? -x : x) : 0 as nibble one-hots; x given by 8 nibble one-hots.
  // -x = ~x + 1: nibble k is (15 - x_k + z_k) mod 16 with z_k = [x_0..x_{k-1} all 0].
  void negate(const std::function<OH(std::uint32_t)>& src, const Lin& neg, const Lin& enable, const FieldRef& z,
              const FieldRef& out, std::uint32_t la, std::uint32_t lb) {
    for (std::uint32_t kk = 1; kk < 8; ++kk) {
      std::vector<Lin> conds = {enable};  // idle (untouched) unless enabled
      for (std::uint32_t j = 0; j < kk; ++j) conds.push_back(src(j)[0]);
      when(L(la), conds, {{z.dim(kk), 1.0}});
    }
    for (std::uint32_t kk = 0; kk < 8; ++kk) {
      const OH x = src(kk);
      for (unsigned v = 0; v < 16; ++v)
        if (!is_zero(x[v])) when(L(lb), {x[v], enable, Lin::constant(1) - neg}, {{out.dim(16 * kk + v), 1.0}});
      const OH zz = kk == 0 ? OH{Lin(), Lin::constant(1)} : OH{Lin::constant(1) - z[kk], z[kk]};
      table(L(lb), {x, zz}, [&, kk](const std::vector<unsigned>& v) {
        return SparseVec{{out.dim(16 * kk + ((15 - v[0] + v[1]) & 15)), 1.0}};
      }, {enable, neg});
    }
  }
  FieldRef WK, WSH, WOK, WBAD;
  FieldRef NEGA, NEGB, NEGQ, BZ, RW, RG, RP, RBI, RWR, RZ, RSEL, RACT, MACG, MSUM, MPREV, MC, MLO, MACT2;
  void divide() {
    LayerBuilder& l6 = L(6);
    NEGA = B.field("div_neg_a", 1);
    NEGB = B.field("div_neg_b", 1);
    NEGQ = B.field("div_neg_q", 1);
    BZ = B.field("div_b_zero", 1);
    const Lin a31 = any_of(nib(R1, 7), [](unsigned j) { return j >= 8; });
    const Lin b31 = any_of(nib(R2, 7), [](unsigned j) { return j >= 8; });
    const Lin sdiv = sum_cls({DIV, REM});
    when(l6, {a31, sdiv}, {{NEGA.dim(), 1.0}});
    when(l6, {b31, sdiv}, {{NEGB.dim(), 1.0}});
    {
      std::vector<Lin> conds;
      for (std::uint32_t n = 0; n < 8; ++n) conds.push_back(nib(R2, n)[0]);
      when(l6, conds, {{BZ.dim(), 1.0}});
    }
    ZA = B.field("div_zero_prefix_a", 8);
    ZB = B.field("div_zero_prefix_b", 8);
    UA = B.field("div_ua", 128);
    UB = B.field("div_ub", 128);
    negate([&](std::uint32_t n) { return nib(R1, n); }, NEGA[0], div_cls(), ZA, UA, 6, 7);
    negate([&](std::uint32_t n) { return nib(R2, n); }, NEGB[0], div_cls(), ZB, UB, 6, 7);
    // DIV quotient sign: negative when the signs differ and b != 0 (b = 0 gives -1 = all ones).
    when(L(7), {a31, Lin::constant(1) - b31, Lin::constant(1) - BZ[0], cls(DIV)}, {{NEGQ.dim(), 1.0}});
    when(L(7), {Lin::constant(1) - a31, b31, Lin::constant(1) - BZ[0], cls(DIV)}, {{NEGQ.dim(), 1.0}});
    QZ = B.field("div_zero_prefix_q", 8);
    QN = B.field("div_quotient", 128);
    trial_quotient();
    negate([&](std::uint32_t n) { return field_oh(TN, 16 * n, 16); }, NEGQ[0], sum_cls({DIV, DIVU}), QZ, QN, 8, 9);
    // W bytes of DIV / DIVU: the (signed) quotient.
    for (std::uint32_t i = 0; i < 4; ++i)
      for (std::uint32_t h = 0; h < 2; ++h) {
        const OH o = field_oh(QN, 32 * i + 16 * h, 16);
        for (std::uint32_t v = 0; v < 16; ++v) when(L(10), {o[v], DQW[i]}, {{(h ? NPH : NPL).dim(v), 1.0}});
      }
  }

  static constexpr std::uint32_t M0 = 8;  // first layer of the multiplier
  void multiply() {
    R1M = B.field("rs1_for_mul", 128);
    R2M = B.field("rs2_for_mul", 128);
    for (std::uint32_t j = 0; j < 128; ++j) {
      when(L(M0 + 0), {R1[j], mul_cls()}, {{R1M.dim(j), 1.0}});
      when(L(M0 + 0), {R2[j], mul_cls()}, {{R2M.dim(j), 1.0}});
      // division: ub x T (trial quotient), or ub x Q on the W steps
      pass(L(M0 + 0), UB[j], R1M.dim(j));
      when(L(M0 + 0), {TN[j], div_cls()}, {{R2M.dim(j), 1.0}});
    }
    // L7: nibble columns NC_p (p = 0..15) of the unsigned product, plus the signed corrections
    // -2^32 (a31 b) and -2^32 (b31 a) as + 2^32 (~x + 1) (mod 2^64) for MULH / MULHSU.
    NC = B.field("mul_col", 16);
    for (std::uint32_t n = 0; n < 8; ++n)
      for (std::uint32_t m = 0; m < 8; ++m)
        table(L(M0 + 1), {field_oh(R1M, 16 * n, 16), field_oh(R2M, 16 * m, 16)}, [&, n, m](const std::vector<unsigned>& v) {
          const unsigned prod = v[0] * v[1];
          SparseVec out;
          if (prod & 15) out.push_back({NC.dim(n + m), static_cast<double>(prod & 15)});
          if ((prod >> 4) && n + m + 1 < 16) out.push_back({NC.dim(n + m + 1), static_cast<double>(prod >> 4)});
          return out;
        });
    const Lin a31 = any_of(field_oh(R1M, 112, 16), [](unsigned j) { return j >= 8; });
    const Lin b31 = any_of(field_oh(R2M, 112, 16), [](unsigned j) { return j >= 8; });
    const Lin a_signed = sum_cls({MULH, MULHSU}), b_signed = cls(MULH);
    for (std::uint32_t m = 0; m < 8; ++m) {
      pass(L(M0 + 1), nib_value(field_oh(R2M, 16 * m, 16), true) + (a31 + a_signed - 1.0) * 15.0 - 15.0, NC.dim(8 + m));
      pass(L(M0 + 1), nib_value(field_oh(R1M, 16 * m, 16), true) + (b31 + b_signed - 1.0) * 15.0 - 15.0, NC.dim(8 + m));
    }
    when(L(M0 + 1), {a31, a_signed}, {{NC.dim(8), 1.0}});
    when(L(M0 + 1), {b31, b_signed}, {{NC.dim(8), 1.0}});
    // L8, L9: NC_p = D_p + 16 C1_p; NT_p = D_p + C1_{p-1} = E_p + 16 C2_p; NU_p = E_p + C2_{p-1} <= 17.
    C1N = B.field("mul_carry1", 16);
    DN1 = B.field("mul_digit1", 16);
    C2N = B.field("mul_carry2", 16);
    EN = B.field("mul_digit2", 16);
    for (std::uint32_t p = 0; p < 16; ++p) split16(L(M0 + 2), NC[p], 17, C1N.dim(p), DN1.dim(p));
    for (std::uint32_t p = 0; p < 16; ++p) split16(L(M0 + 3), DN1[p] + (p ? C1N[p - 1] : Lin()), 2, C2N.dim(p), EN.dim(p));
    auto nu = [&](std::uint32_t p) { return EN[p] + (p ? C2N[p - 1] : Lin()); };
    // L10: generate / propagate; L11: carries in and wraps (lookahead).
    GN = B.field("mul_generate", 16);
    PPN = B.field("mul_propagate", 16);
    for (std::uint32_t p = 0; p < 16; ++p) {
      threshold(L(M0 + 4), nu(p), 16, GN.dim(p));
      threshold(L(M0 + 4), nu(p), 15, PPN.dim(p));
      threshold(L(M0 + 4), nu(p), 16, PPN.dim(p), -1);
    }
    CIN_ = B.field("mul_carry_in", 16);
    WRN = B.field("mul_wrap", 16);
    for (std::uint32_t p = 0; p < 16; ++p)
      for (std::uint32_t q = 0; q < p; ++q) {
        std::vector<Lin> conds = {GN[q]};
        for (std::uint32_t r = q + 1; r < p; ++r) conds.push_back(PPN[r]);
        when(L(M0 + 5), conds, {{CIN_.dim(p), 1.0}});
        conds.push_back(PPN[p]);
        when(L(M0 + 5), conds, {{WRN.dim(p), 1.0}});
      }
    // Division: q = [ua >= ub x T]: the product's high word is 0 and its low word <= ua.
    {
      LayerBuilder& c1 = L(M0 + 6);
      LayerBuilder& c2 = L(M0 + 7);
      LayerBuilder& c3 = L(M0 + 8);
      DGT = B.field("div_gt", 8);
      DEQ = B.field("div_eq", 8);
      DHZ = B.field("div_high_zero", 1);
      QBIT = B.field("div_qbit", 1);
      auto f = [&](std::uint32_t p) { return nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0; };
      const Lin act = Lin::dim(DQACT.dim());
      for (std::uint32_t p = 0; p < 8; ++p) {
        const Lin d = nib_value(field_oh(UA, 16 * p, 16), false) - f(p);
        threshold_if(c1, d, 1, 15, act, DGT.dim(p));        // ua_p - f_p >= 1
        threshold_if(c1, d, 0, 15, act, DEQ.dim(p));        // ua_p - f_p >= 0 ...
        threshold_if(c1, d, 1, 15, act, DEQ.dim(p), -1);    // ... and not >= 1
      }
      Lin high;
      for (std::uint32_t p = 8; p < 16; ++p) high += f(p);
      pass(c1, act, DHZ.dim());
      threshold(c1, high, 1, DHZ.dim(), -1);
      {
        std::vector<Lin> conds = {DHZ[0]};
        for (std::uint32_t p = 0; p < 8; ++p) conds.push_back(DEQ[p]);
        when(c2, conds, {{QBIT.dim(), 1.0}});
      }
      for (std::uint32_t p = 0; p < 8; ++p) {
        std::vector<Lin> conds = {DHZ[0], DGT[p]};
        for (std::uint32_t m = p + 1; m < 8; ++m) conds.push_back(DEQ[m]);
        when(c2, conds, {{QBIT.dim(), 1.0}});
      }
      // DQ(2 n + q) for the next bit index n
      for (std::uint32_t n = 0; n < 32; ++n) {
        when(c3, {DQG[n], QBIT[0]}, {{NPL.dim((2 * n + 1) & 15), 1.0}, {NPH.dim((2 * n + 1) >> 4), 1.0}});
        when(c3, {DQG[n], Lin::constant(1) - QBIT[0]}, {{NPL.dim((2 * n) & 15), 1.0}, {NPH.dim((2 * n) >> 4), 1.0}});
      }
    }
    // REM/REMU: r = ua - ub x Q (the multiplier's low word on the W steps), borrow lookahead,
    // negated for REM with a negative dividend; then the two nibbles of byte i.
    {
      LayerBuilder& r1 = L(M0 + 6);
      LayerBuilder& r2 = L(M0 + 7);
      LayerBuilder& r3 = L(M0 + 8);
      LayerBuilder& r4 = L(M0 + 9);
      LayerBuilder& r5 = L(M0 + 10);
      auto f = [&](std::uint32_t p) { return nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0; };
      Lin ract;
      for (std::uint32_t i = 0; i < 4; ++i) ract += RW[i];
      RG = B.field("rem_borrow_gen", 8);
      RP = B.field("rem_borrow_prop", 8);
      auto d = [&](std::uint32_t p) { return nib_value(field_oh(UA, 16 * p, 16), false) - f(p); };
      for (std::uint32_t p = 0; p < 8; ++p) {
        threshold_if(r1, Lin() - d(p), 1, 15, ract, RG.dim(p));      // d <= -1
        threshold_if(r1, d(p), 0, 15, ract, RP.dim(p));               // d == 0
        threshold_if(r1, d(p), 1, 15, ract, RP.dim(p), -1);
      }
      RBI = B.field("rem_borrow_in", 8);
      RWR = B.field("rem_wrap", 8);
      for (std::uint32_t p = 0; p < 8; ++p)
        for (std::uint32_t q = 0; q < p; ++q) {
          std::vector<Lin> conds = {RG[q]};
          for (std::uint32_t m = q + 1; m < p; ++m) conds.push_back(RP[m]);
          when(r2, conds, {{RBI.dim(p), 1.0}});
          conds.push_back(RP[p]);
          when(r2, conds, {{RWR.dim(p), 1.0}});
        }
      // r_p = d_p - b_p + 16 (g_p + wrap_p), in [0, 15]
      auto rn = [&](std::uint32_t p) { return d(p) - RBI[p] + (RG[p] + RWR[p]) * 16.0; };
      // z_k = [r_0 .. r_{k-1} all 0] (k = 0..8), active only with ract
      RZ = B.field("rem_zero_prefix", 9);
      for (std::uint32_t kk = 0; kk <= 8; ++kk) {
        Lin sum;
        for (std::uint32_t j = 0; j < kk; ++j) sum += rn(j);
        pass(r3, ract, RZ.dim(kk));
        if (kk > 0) threshold_if(r3, sum, 1, 120, ract, RZ.dim(kk), -1);  // |r_j| <= 15 even when idle
      }
      RSEL = B.field("rem_nibbles", 2);
      RACT = B.field("rem_active", 1);
      const Lin nega = NEGA[0];
      for (std::uint32_t i = 0; i < 4; ++i) {
        pass(r4, RW[i], RACT.dim());
        for (std::uint32_t h = 0; h < 2; ++h) {
          const std::uint32_t p = 2 * i + h;
          const Lin neg = Lin::constant(15) - rn(p) + RZ[p] - RZ[p + 1] * 16.0;  // nibble p of -r
          pass(r4, neg + (RW[i] + nega - 2.0) * 32.0, RSEL.dim(h));   // idle: neg <= 30 < 32
          pass(r4, rn(p) + (RW[i] - nega - 1.0) * 32.0, RSEL.dim(h));
        }
      }
      for (std::uint32_t h = 0; h < 2; ++h) {
        std::vector<SparseVec> tab(17);
        for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{(h ? NPH : NPL).dim(v - 1), 1.0}};
        decode_lookup(r5, RSEL[h] + RACT[0], tab);
      }
    }
    // bn.mac: AC_i = byte i of acc + a x b (mod 2^96); carry into byte i from the consumed AC_{i-1}.
    {
      LayerBuilder& m1 = L(M0 + 6);
      LayerBuilder& m2 = L(M0 + 7);
      LayerBuilder& m3 = L(M0 + 8);
      LayerBuilder& m4 = L(M0 + 9);
      auto f = [&](std::uint32_t p) { return nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0; };
      auto byte_sum = [&](std::uint32_t i) {  // acc_i + P_i (P_i = 0 for i >= 8)
        Lin v = byte_value(field_oh(ACN, 32 * i, 16), field_oh(ACN, 32 * i + 16, 16));
        if (i < 8) v += f(2 * i) + f(2 * i + 1) * 16.0;
        return v;
      };
      MSUM = B.field("mac_sum", 1);
      MPREV = B.field("mac_prev", 1);
      MACT2 = B.field("mac_active", 1);
      for (std::uint32_t i = 0; i < 12; ++i) {
        pass(m1, byte_sum(i) + MACG[i] * 510.0 - 510.0, MSUM.dim());
        if (i > 0) pass(m1, byte_sum(i - 1) + MACG[i] * 510.0 - 510.0, MPREV.dim());
        pass(m1, MACG[i], MACT2.dim());
      }
      MC = B.field("mac_carry", 1);
      threshold(m2, MPREV[0] - PS[0], 1, MC.dim());
      // y = sum + carry in [0, 511]: high nibble one-hot of y mod 256, low nibble (+1) scalar
      MLO = B.field("mac_lo", 1);
      const Lin y = MSUM[0] + MC[0];
      pass(m3, MACT2[0], NPH.dim(0));
      pass(m3, y, MLO.dim());
      pass(m3, MACT2[0], MLO.dim());
      for (std::uint32_t j = 1; j < 32; ++j) {
        const std::uint32_t u1 = m3.relu_unit(y - (16.0 * j - 1));
        const std::uint32_t u2 = m3.relu_unit(y - 16.0 * j);
        for (auto [u, sgn] : {std::pair{u1, 1.0}, std::pair{u2, -1.0}}) {
          m3.unit_out(u, NPH.dim(j % 16), sgn);
          m3.unit_out(u, NPH.dim((j - 1) % 16), -sgn);
          m3.unit_out(u, MLO.dim(), -16 * sgn);
        }
      }
      std::vector<SparseVec> tab(17);
      for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{NPL.dim(v - 1), 1.0}};
      decode_lookup(m4, MLO[0], tab);
    }
    // L12: the two nibbles W_i shows (+1 offset so that "no multiply" decodes to nothing); L13: one-hots.
    SELN = B.field("mul_nibbles", 2);
    MACT = B.field("mul_active", 1);
    for (std::uint32_t mode = 0; mode < 2; ++mode)
      for (std::uint32_t i = 0; i < 4; ++i) {
        const Lin g = MULW[4 * mode + i];
        pass(L(M0 + 6), g, MACT.dim());
        for (std::uint32_t h = 0; h < 2; ++h) {
          const std::uint32_t p = 8 * mode + 2 * i + h;
          const Lin f = nu(p) + CIN_[p] - GN[p] * 16.0 - WRN[p] * 16.0;
          pass(L(M0 + 6), f + g * 15.0 - 15.0, SELN.dim(h));
        }
      }
    for (std::uint32_t h = 0; h < 2; ++h) {
      std::vector<SparseVec> tab(17);
      for (std::uint32_t v = 1; v <= 16; ++v) tab[v] = {{(h ? NPH : NPL).dim(v - 1), 1.0}};
      decode_lookup(L(M0 + 7), SELN[h] + MACT[0], tab);
    }
  }

  void layer6() {
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
    // overwritten by the write-back on W3) and kept in a slot; see layer8() and commits().
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

  OH a_src(ASrc s, std::uint32_t n) const {
    switch (s) {
      case A_RS1: return nib(R1, n);
      case A_PC: return nib(PCN, n);
      case A_SHL: return nib(SHL, n);
      default: return const_oh(16, 0);
    }
  }
  OH b_src(BSrc s, std::uint32_t n) const {
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

  void select_operand(LayerBuilder& l, const std::function<OH(std::uint32_t)>& src, std::uint32_t gate_dim,
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

  void layer7() {
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

  void layer8() {
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

  void layer9_10() {
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

  // ---- trace-v2: commits, next pc, pc tokens, ECALL write bytes --------------------------------

  // State commits from consumed tokens (docs/chip-design.md section 3.2): the bignum c (on CF),
  // acc (on AC11; zero on bn.accclr's NOP), and the CF bit computed on the fetch step.
  void commits() {
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
  void adder_operands() {
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
      put(ADA, n, nib(RV1, n), {VEG[0]});  // VLD element phase: a + 4 + 4g
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
  void next_pc() {
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
  void pc_tokens() {
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

  // ECALL write (trace.md section 4.5): per byte i, [OIH(i >> 8)] OI(i & 0xFF) OUT/ERR(byte);
  // then W(len). i is on the bus (OI/OIH slots); the byte is read from a second RAM port
  // (layer 15) at a1 + i, computed by the next-pc adder on the OI step.
  void write_bytes() {
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
    key_pieces(L(14), RV1, XWL, XWH, RDM[0]);   // VLD: the bytes of M at a
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

  // Output (layer 19): the payload's nibble one-hots become a payload one-hot NP (256) and a
  // (kind, high nibble) one-hot NKH (61 x 16), then logit(k, p) = 2 NKH[k, p >> 4] + 2 NP[p]:
  // the intended token scores 4, every other token at most 2 (a token sharing the kind and high
  // nibble, or the payload, scores 2). An NKH dimension touches 16 logits and an NP dimension
  // 61, so the output costs 77 logit rows a step (2 NK[k] + 2 NP[p] touched 256 + 61).
  void emission() {
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

  void declare() {
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
    B.probe(6, Sublayer::Mlp, {"vmat_chunk_hi_thermometer", "vmat_chunk_lo_thermometer", "vmat_act_block"});
    B.probe(7, Sublayer::Memory, {"vmat_weight_bits", "vmat_scale_bits", "vmat_act_bits", "vmat_ash"});
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
      // layer 8 holds VRED's group sums (|S| <= 960) and their total (<= 15,360; vred())
      // layer 13 VEXP's sums of p's nibbles (<= 64 * 15)
      // layer 9 VMAT's contribution slots (|Q| <= 2^15) and their sums (<= 6 * 2^15; vmat())
      // layer 10 VMATR V's position slots (|.| <= 120) and their sums (<= 64 * 120; vmatr_v())
      for (const char* a : {"mem.v", "mem.state", "mem.o"})
        B.bound(a, l, l == 8 ? 16384 : l == 9 ? 262144 : l == 10 ? 8192 : l == 13 ? 1024 : 255);
      // deeper residuals hold byte sums (<= 511); from layer 5 VRED's span bounds (<= 1,088),
      // from layer 7 VRED MAX's (hi, lo) (<= 65,536) and SUM's column sums (<= 15,368; vred())
      // (from layer 5 VMAT's r K + j and c - 64 (c >> 6), < 2^17 even where the VMAT traps)
      const double resid = l == 0 ? 255 : l < 4 ? 1024 : l < 5 ? 32768 : 262144;
      B.bound("mem.resid", l, resid);
      // layers 6-7 hold the ECALL buffer check's 16-bit half sums (< 2^18); layer 5 VRED's span
      // bounds (|pre| < 2^18); layer 7 the vector ops' operand checks (|pre| < 2^24,
      // vector_traps()); layers 8..10 VRED's column splits (<= 15,368), layers 8, 13, 14 VRED
      // MAX's (hi, lo) differences (|.| <= 131,072)
      // layer 4 VMAT's r K (|pre| < 2^15); layers 9..11 VMAT's column splits (< 2^23; vmat())
      // layer 5 VMAT's chunk thresholds (|pre| < 2^19)
      // (layer 12 VMATR V's presplit, < 2^15)
      const double pre = l == 7 || (l >= 9 && l <= 11) ? 16777216 : l == 5 ? 1048576 : l == 4 ? 32768
                         : (l >= 6 && l <= 8) || (l >= 12 && l <= 14) ? 262144 : 1024;
      for (const char* a : {"mlp.pre", "mlp.u", "mlp.hidden"}) B.bound(a, l, pre);
      B.bound("mlp.resid", l, resid);
    }
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
