// The RV32 chip compiler's shared context (private to chip/rv32/src; docs/chip-design.md,
// "Where things are"). Written from docs/spec only; never includes ref/.
//
// Two context types hold what the compiler's files share:
// - Machine: the ChipBuilder, the scalar machine's residual fields (embedding, fetch, decode,
//   register file, the byte-serial ALU and its step cases, the next-kind / next-payload fields
//   NK, NPL, NPH every stage emits into) and the scalar families' compile functions
//   (chip/rv32/src/*.cpp, chip/rv32/src/scalar/*.cpp);
// - VectorUnit: the vector unit's shared floors on top of it (VR and the word streams, group
//   spans, traps, the digit arithmetic) and its eight ops (chip/rv32/src/vector/<op>.cpp).
// Each compile function adds its units, heads and fields to fixed layers; the driver
// (rv32_chip.cpp, Compiler::run()) calls them in one fixed order, and that order fixes the
// chip file byte for byte (field offsets, unit and head indices).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lockstep/chip/compiler/builder.hpp"
#include "lockstep/chip/compiler/primitives.hpp"
#include "lockstep/chip/rv32/rv32_chip.hpp"

namespace lockstep::chip::rv32::detail {

using namespace compiler;


// ---- one-hot predicates -------------------------------------------------------------------

using OH = OneHot;  // one-hot predicate vector (primitives.hpp): at most one entry is 1, others 0

inline OH field_oh(const FieldRef& f, std::uint32_t first, std::uint32_t n) {
  OH o;
  for (std::uint32_t i = 0; i < n; ++i) o.push_back(f[first + i]);
  return o;
}
// Nibble n (0..7) of a 32-bit value held as 8 nibble one-hots (16 rows each).
inline OH nib(const FieldRef& f, std::uint32_t n) { return field_oh(f, 16 * n, 16); }
inline OH const_oh(std::uint32_t size, std::uint32_t v) {
  OH o(size);
  o[v] = Lin::constant(1);
  return o;
}
// Entry u of the result = sum of entries j of `o` with (j & mask) == u (size 16; entries that
// are not of that form stay constant 0).
inline OH masked(const OH& o, unsigned mask) {
  OH r(o.size());
  for (unsigned j = 0; j < o.size(); ++j) r[j & mask] += o[j];
  return r;
}
inline Lin any_of(const OH& o, const std::function<bool(unsigned)>& pred) {
  Lin l;
  for (unsigned j = 0; j < o.size(); ++j)
    if (pred(j)) l += o[j];
  return l;
}
// Value of a byte given its two nibble one-hots, as a linear form.
inline Lin byte_value(const OH& lo, const OH& hi) {
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

inline const std::vector<ClsSpec>& cls_specs() {
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
inline const std::array<unsigned, 4> kF7Values = {0x00, 0x20, 0x01, 0x10};
inline int f7_index(int f7) {
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

inline const std::vector<AluUse>& alu_uses() {
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
inline std::int64_t rcp_entry(std::int64_t i) { return ((1LL << 39) + 2 * i + 1) / (4 * i + 2); }
inline std::int64_t rsq_entry(std::int64_t i) {  // the y with (2y-1)^2 (2i+1) < 2^57 < (2y+1)^2 (2i+1)
  const __int128 lim = static_cast<__int128>(1) << 57;
  std::int64_t y = std::llround(std::ldexp(1.0, 27) / std::sqrt(static_cast<double>(i) + 0.5));
  auto below = [&](std::int64_t t) { return static_cast<__int128>(2 * t - 1) * (2 * t - 1) * (2 * i + 1) < lim; };
  while (!below(y)) --y;
  while (below(y + 1)) ++y;
  return y;
}
inline std::int64_t exp_entry(int i) { return std::llround(65536.0 * std::exp(-i / 64.0)); }
inline std::int64_t sig_entry(int i) { return std::llround(65536.0 / (1.0 + std::exp(-(i - 512) / 64.0))); }
inline std::int64_t cos_entry(unsigned p, unsigned j) {
  return std::llround(65536.0 * std::cos(static_cast<double>(p) * std::pow(10.0, -static_cast<double>(j))));
}
inline std::int64_t sin_entry(unsigned p, unsigned j) {
  return std::llround(65536.0 * std::sin(static_cast<double>(p) * std::pow(10.0, -static_cast<double>(j))));
}

// The scalar machine (docs/chip-design.md section 3): the builder B with its 20 layers, the
// residual fields of the scalar stages and the functions that compile them. Field names follow
// the layer plan of rv32_chip.cpp; a one-hot field's rows are its values (nibble one-hots: 16
// rows per nibble, least significant nibble first). Every stage emits the next token through
// NK (kind one-hot, kNumKinds), NPL and NPH (payload low / high nibble one-hots, 16 each) and
// ends an instruction through ENDI.
struct Machine {
  Machine();

  // ---- fields (residual dimensions), by the stage that writes them
  ChipBuilder B;
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
  FieldRef RD, RS1, RS2, RSV1, RSV2, PRE, F7, WECALL, WEBREAK, IMS01;
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
  FieldRef VLGN;
  FieldRef VEG, VGE, RDM, RDE, ADNV;
  // VRED (compile_vred()): k of the consumed VRD(k) (embedding); the span of group k (layers 5, 6); (n - 1)
  // >> 6, the last group (layer 5); the value steps of the word stream, by byte m (layer 6)
  FieldRef VRDK_;
  static constexpr std::array<Cls, 3> cf_cls = {BN_ADDC, BN_SUBB, BN_XCHGC};
  FieldRef WK, WSH, WOK, WBAD;
  FieldRef NEGA, NEGB, NEGQ, BZ, RW, RG, RP, RBI, RWR, RZ, RSEL, RACT, MACG, MSUM, MPREV, MC, MLO, MACT2;
  static constexpr std::uint32_t M0 = 8;  // first layer of the multiplier

  // ---- small accessors
  LayerBuilder& L(std::uint32_t l) { return B.layer(l); }
  Lin k(std::uint32_t kind) const { return K[kind]; }
  Lin fetch() const { return K[kPcl]; }  // the step that consumes PCL: the instruction's first step
  Lin any_pch() const { return K[kPch0] + K[kPch0 + 1] + K[kPch0 + 2] + K[kPch0 + 3]; }
  Lin cls(Cls c) const { return CLS[c]; }
  Lin sum_cls(std::initializer_list<Cls> cs) const {
    Lin l;
    for (Cls c : cs) l += cls(c);
    return l;
  }
  Lin cmp_reg() const { return sum_cls({SLT, SLTU, BEQ, BNE, BLT, BGE, BLTU, BGEU, BN_SUBB}); }
  Lin cmp_imm() const { return sum_cls({SLTI, SLTIU}); }
  Lin cmp_signed() const { return sum_cls({SLT, SLTI, BLT, BGE}); }
  std::uint32_t ga(ASrc s, std::uint32_t i) const { return GA.dim(4 * s + i); }
  std::uint32_t gb(BSrc s, std::uint32_t i) const { return GB.dim(4 * s + i); }
  SparseVec token_out(std::uint32_t kind, std::uint32_t payload) const {
    return {{NK.dim(kind), 1.0}, {NPL.dim(payload & 15), 1.0}, {NPH.dim(payload >> 4), 1.0}};
  }
  std::uint32_t sg(std::uint32_t dir, std::uint32_t i, std::uint32_t q) const { return SHG.dim(32 * dir + 8 * i + q); }
  // MUL, MULH, MULHSU, MULHU: the 64-bit product as 16 nibble columns (nibble-product tables),
  // two carry-save splits, a carry-lookahead, then the nibbles of the byte W_i shows.
  Lin mul_cls() const { return sum_cls({MUL, MULH, MULHSU, MULHU, BN_MAC}); }
  // 16-bit half h (0: bits 15..0, 1: bits 31..16) of a value held as 8 nibble one-hots, as a
  // linear form (0 .. 65,535).
  static Lin half(const FieldRef& f, std::uint32_t h) {
    return byte_value(nib(f, 4 * h), nib(f, 4 * h + 1)) + byte_value(nib(f, 4 * h + 2), nib(f, 4 * h + 3)) * 256.0;
  }
  Lin div_cls() const { return sum_cls({DIV, DIVU, REM, REMU}); }

  // ---- chip/rv32/src/embedding.cpp
  void embedding();

  // ---- chip/rv32/src/fetch.cpp
  // Word-index key pieces of an address held as nibble one-hots (field f: 8 nibbles):
  // w = (a - RAM_BASE) >> 2; wl = w & 511 = a[10:2]; wh = w >> 9 = a[19:11] - 0x20.
  // Bits 16..19 of a - RAM_BASE are (a[19:16] - 1) & 15 whenever the address is in RAM.
  // Only when `gate` is 1 (the RAM ports read once per access; the latch keeps the word).
  void key_pieces(LayerBuilder& l, const FieldRef& f, const FieldRef& wl, const FieldRef& wh, const Lin& gate);
  // [a in RAM] for the word containing a (bytes 2, 3 of a): a[31:24] = 0 and a[23:16] in 1..16.
  void in_ram(LayerBuilder& l, const FieldRef& f, std::uint32_t out);
  // Slots: `rows` slots, each a head of its own (1 column x out.width / rows values, so a read
  // costs only its block), slot i written with v (block i of out) when krow(i) is 1, read each
  // step (q = `read`, default 1) into block i of `out`. Returns the first head's index.
  std::uint32_t slot_head(LayerBuilder& l, std::uint32_t rows, const std::function<Lin(std::uint32_t)>& krow,
                          const std::function<Lin(std::uint32_t)>& v, const FieldRef& out,
                          const Lin& read = Lin::constant(1));
  // Slots in one head (so that the executor handles one head, not `rows`): column i holds slot
  // i; a token of kind `kinds(i)[j]` writes its payload's nibble one-hots into rows 32 i.. of
  // column i (an embedding field that places the payload at its slot's block), so that reading
  // every column (q = `read` on each) returns the slots side by side in `out` (32 rows each).
  // `beta` gates the write (ReLU; the column is chosen by the kind).
  void block_slots(LayerBuilder& l, const std::string& name, std::uint32_t rows,
                   const std::function<std::vector<std::uint32_t>(std::uint32_t)>& kinds, const Lin& beta, const Lin& read,
                   const FieldRef& out);
  OH wnib(std::uint32_t n) const;
  void slots_and_keys();
  void ram(const FieldRef& out);
  void byte_decode(const FieldRef& bytes, std::uint32_t first, const FieldRef& hi, const FieldRef& los, const FieldRef& out);
  void ram_and_latches();

  // ---- chip/rv32/src/decode.cpp
  OH imm_i(std::uint32_t n) const;
  OH sign_oh() const;
  OH imm_s(std::uint32_t n) const;
  OH imm_u(std::uint32_t n) const;
  void decode_fields();
  void reg_port(const std::string& name, const std::function<Lin(std::uint32_t)>& q, const FieldRef& out,
                Activation act_q = Activation::Identity);
  void registers_and_class();
  // Per-op copies of the vector operands (docs/chip-design.md section 3.6, "Operand ports"). vec_port(which, c) is
  // X(rs1) (which = 1) or X(rs2) (which = 2) as 8 nibble one-hots (128 rows) on the steps of the
  // vector op c, and zero on every other step: a register-port head of layer 5 of its own, made on
  // first use. A unit that only one op's steps need reads that op's copy, so on the other ops'
  // steps it has no active input and the executor never touches it (one copy for all eight ops
  // made every op's units read every vector step's operands). Readable from layer 5's MLP on.
  // Throws std::invalid_argument for a class that is not a vector op or a `which` other than 1, 2.
  FieldRef vec_port(std::uint32_t which, Cls c);
  // The same port gated by `gate` instead, a linear form over layer 5's input that is 1 on the
  // steps that need the operand and <= 0 on every other step, and 1 only on a vector op's steps
  // (the query reads rs1 / rs2 as decoded on custom-1 words only): X(rs1) / X(rs2) where gate is 1,
  // zero elsewhere. `name` names the port (the same name returns the same port; the gate of its
  // first use counts). Throws std::invalid_argument for a `which` other than 1 or 2.
  FieldRef operand_port(std::uint32_t which, const std::string& name, const Lin& gate);
  // Nibble n (0..7) of X(rs1) / X(rs2) on the steps of the vector ops cs, zero on every other step
  // (the sum of their copies: at most one is non-zero on a step).
  OH vnib(std::uint32_t which, std::initializer_list<Cls> cs, std::uint32_t n);
  // 16-bit half h of X(rs1) / X(rs2) on the steps of the ops cs (0 .. 65,535), zero elsewhere.
  Lin vhalf(std::uint32_t which, std::initializer_list<Cls> cs, std::uint32_t h);
  // The VR index in the low 10 bits of half h, on the steps of the ops cs (zero elsewhere), as
  // index_sum() takes it: nibbles 4h and 4h + 1, and bits 8, 9 (nibble 4h + 2 masked to 3).
  std::array<OH, 3> vindex(std::uint32_t which, std::initializer_list<Cls> cs, std::uint32_t h) {
    return {vnib(which, cs, 4 * h), vnib(which, cs, 4 * h + 1), masked(vnib(which, cs, 4 * h + 2), 3)};
  }
  static std::array<OH, 3> vindex_of(const FieldRef& port, std::uint32_t h) {
    return {nib(port, 4 * h), nib(port, 4 * h + 1), masked(nib(port, 4 * h + 2), 3)};
  }
  std::vector<std::pair<std::string, FieldRef>> operand_ports_;  // by the port's field name

  // ---- chip/rv32/src/scalar/alu.cpp
  void operand_checks();
  void step_cases();
  OH a_src(ASrc s, std::uint32_t n) const;
  OH b_src(BSrc s, std::uint32_t n) const;
  void select_operand(LayerBuilder& l, const std::function<OH(std::uint32_t)>& src, std::uint32_t gate_dim,
                      std::uint32_t i, const FieldRef& cur, const FieldRef& prev);
  void operands_and_compares();
  void carries_and_payloads();
  void byte_adder_and_branch();

  // ---- chip/rv32/src/scalar/shift.cpp
  void shift_amount();
  Lin shift_dir(std::uint32_t dir) const;
  void shift_cases();
  void shift_windows();
  OH sign_of(const FieldRef& f) const;
  void shift_tables();
  void zba_shift();

  // ---- chip/rv32/src/scalar/mul.cpp
  void split16(LayerBuilder& l, const Lin& x, std::uint32_t max_carry, std::uint32_t carry, std::uint32_t digit);
  Lin nib_value(const OH& o, bool inverted) const;
  void multiply();

  // ---- chip/rv32/src/scalar/ecall.cpp
  void write_buffer_check();
  void write_bytes();

  // ---- chip/rv32/src/scalar/div.cpp
  void trial_quotient();
  void negate(const std::function<OH(std::uint32_t)>& src, const Lin& neg, const Lin& enable, const FieldRef& z,
              const FieldRef& out, std::uint32_t la, std::uint32_t lb);
  void divide();

  // ---- chip/rv32/src/scalar/commit.cpp
  void commits();
  void adder_operands();
  void next_pc();
  void pc_tokens();

  // ---- chip/rv32/src/output.cpp
  void emission();
  void declare();
};

// The vector unit (docs/chip-design.md section 3.6; docs/spec vector.md): its shared floors
// (VR in layer 7 with its read ports and banked write keys, the word and int8 streams and their
// slots, the group spans, the traps of section 6, the digit arithmetic) and its eight ops, one
// file each under chip/rv32/src/vector/ (compile_<op>()). Its fields are grouped below by the
// file that writes them, with the files that read them: everything an op file uses from
// another file goes through those declared fields (the scalar machine's, from Machine).
struct VectorUnit : Machine {
  // VR's key pieces for one index: N0 = the low nibble (16), N12 = (n1, n2) (64); word w's key is
  // ReLU(N0[w & 15] + N12[w >> 4] - 1). A write index is banked (docs/chip-design.md, VR): the
  // pieces go to the fields of the word's parity (lo[w & 1], hi[w & 1]), so that two writes of
  // different parity can share a step (VEW ROT's pair).
  struct KeyOut {
    std::vector<FieldRef> lo, hi;  // 1 field each, or 2 (by parity)
  };
  // One product term of product_digits(): (x's nibble one-hots, y's nibble one-hots), the last of each signed.
  using Term = std::pair<std::vector<OH>, std::vector<OH>>;
  // [the step consumes VMC_j, VY3, VYN3 or VMH]: the steps after VMAT's first that may emit a
  // chunk (compile_vmat(); with the fetch step, its e5).
  Lin vmat_chunk_kinds() const;
  // X(rs1) / X(rs2) on VMAT's chunk steps only (the fetch step and vmat_chunk_kinds()), zero on
  // its value steps and every other step.
  FieldRef vmat_chunk_port(std::uint32_t which);

  // ---- fields, grouped by the file that writes them; "->" names the other files that read
  // them (the floors' interface). A group without "->" is its op's own.
  // vector/vld.cpp (compile_vld()): the VLG slot (layer 0: g and [a VLG seen since PCL]), the
  // record checks (traps.cpp), the last element (n - 1)'s nibbles and group
  FieldRef VGS;             // -> spans, vq, vmat, vmatr, vr_file (the int8 stream's g)
  FieldRef VSH, VOK, VZ;    // -> traps (VLD's trap 5)
  FieldRef VC0, VGT;        // -> vew (the word stream's last element, same (g, q) form)
  FieldRef VK, VC1, VZ45, VC2, VEQ, VLAST;
  // vector/traps.cpp (vector_traps()): f7 on custom-1 words, operand-range enables, first tokens
  FieldRef VIN;             // f7's nibbles (inst nibbles 6, 7), layer 4 -> vew, vmat, vmatr, vr_file
  FieldRef F7X_;            // f7 as a one-hot (128), layer 5 -> vexp, vred, vr_file
  Lin EADD;                 // [VEW, MODE = ADD] (layer 6) -> vew
  std::array<Lin, 3> EFN;   // [VFN, FN = RSQRT / RECIP / SILU] (layer 6) -> vfn
  FieldRef VQF_;            // [the next token is VQE] (layers 9..10) -> vq
  FieldRef XFN_;            // [the next token is VXM0] (layers 9..10) -> vexp
  // vector/vr_file.cpp (vr_file(), vwg_slot()): the word streams' slots and VR's ports
  FieldRef VWGS;            // the VWG slot (layer 0) -> spans, vew, vexp, vmatr
  Lin SREAD_;               // the next token is a value byte of a word stream (layer 0) -> vew, vfn, vexp, vmat, vmatr
  Lin GROT_, GVFN_, GSILU_; // ... of VEW ROT, of VFN RSQRT/RECIP, of VFN SILU (layer 6) -> vew, vfn
  Lin GROT1_, GVFN1_, GSILU1_; // the same on a word's first value step only (byte 0 next; layer 6) -> vew, vfn
  Lin SFIRST_;              // TM_[0]: the next token is byte 0 of a word stream's word -> vew, vfn, vexp, vmat, vmatr
  FieldRef VRX, VRY, VRYS;  // VR's read ports x, y (layer 7) and MULS's s (layer 8) -> vew, vfn, vexp, vq
  FieldRef VQR_;            // [the next token is an int8 value byte] (layer 0) -> vq
  FieldRef VRCNT_;          // the span's nibble counts (layer 7) -> vred (SUM)
  FieldRef VLANE_;          // the 64 lanes' words (layer 7) -> vq, vred (SUMSQ, MAX)
  FieldRef VRSQ_;           // the square reads (layer 8) -> vred (SUMSQ)
  FieldRef VWBS;
  FieldRef last_parity_;    // the parity field of the last sum_pieces() (banked sums)
  // vector/spans.cpp (vred_span()): group spans and the steps that read them
  FieldRef VSPAN_;          // [lo <= w < hi] per word (layer 6) -> vr_file
  FieldRef VKL_;            // the last group (n - 1) >> 6 (layer 5) -> vq, vred
  FieldRef VRQ_;            // [SUMSQ's VRD step] (layer 6) -> vr_file, vred
  FieldRef KQ_, GQ_;        // the steps that emit VQE(k): k one-hot and their sum (layer 5) -> vq
  FieldRef LX_;             // [the consumed VW_q3 ends a VEXP group's last score] (layer 5) -> vexp
  FieldRef KG_, XG0_;
  // vector/vew.cpp (compile_vew()): the word stream's sequence (VEW, VFN, VMATR K)
  OH TM_;                   // the next token is value byte m (vr_file(), from the consumed kind) -> vew, digits, vfn, vexp
  FieldRef LASTW_;          // the consumed token ends the stream's last element -> digits, vfn, vmatr
  // vector/vred.cpp (compile_vred(), vred_max()): VRED's value steps; MAX's lane tournament,
  // which VEXP reuses for m_g
  FieldRef GMX_;            // the tournament's gate (layer 6; written by vexp too) -> vexp
  FieldRef GOH_;            // the maximum's nibble one-hots (layer 12) -> vexp
  FieldRef VRG_;
  // vector/vq.cpp, vector/vexp.cpp: their own
  FieldRef VQV_;
  FieldRef VXMS_;
  // vector/vmat.cpp (vmat_slots(), compile_vmat()): the last VMC_j payload (MCS_) and VMH
  // payload (HSN_, emptied by PCL: r >> 8 = 0), the bytes of VY0..VY2 (VYB_) and the VY3 / VYN3
  // payload (VY3N_) -> vr_file (y_r's write); ACT's bits, ASH (AB_, ASHO_) -> vmatr; VQE's
  // payload as one-hots (VQEK_) -> vmatr (the caches' writes); the running maximum of argmax
  // mode (MAXN_) and its row (RSN_)
  FieldRef MCS_, HSN_, VYB_, VY3N_, AB_, ASHO_, VQEK_;
  FieldRef MAXN_, RSN_, QBR_;
  // vector/vmatr.cpp (vmatr_slots()): [VMATR, VMODE = 0 / 1] (layer 6) -> vew (the stream's
  // sequence); V mode: VMV's payload one-hot, the 32 VR register heads' reads (VVP_, filled by
  // vr_file() with the query VVQ_) and the word keys
  FieldRef VKM_, VVM_;
  FieldRef VMVT_, VVP_, PW0_, PW12_;
  std::function<Lin(std::uint32_t)> VVQ_;

  // ---- small accessors
  // Value of a one-hot (entry v stands for v).
  static Lin oh_value(const OH& o) {
    Lin l;
    for (unsigned v = 0; v < o.size(); ++v) l += o[v] * static_cast<double>(v);
    return l;
  }
  static Lin byte_of(const FieldRef& f, std::uint32_t m) { return byte_value(nib(f, 2 * m), nib(f, 2 * m + 1)); }
  Lin vlb_any() const { return k(kVlb0) + k(kVlb0 + 1) + k(kVlb0 + 2) + k(kVlb0 + 3); }  // consuming VLB0..VLB3
  Lin int8_stream() const { return k(kVlg) + vlb_any(); }                                 // ... or VLG
  // Bit i of a value held as digit one-hots (16 rows per column, from row `base` of DG), a
  // linear form of them.
  static Lin digit_bit(const FieldRef& DG, std::uint32_t i, std::uint32_t base = 0) {
    Lin l;
    for (std::uint32_t v = 0; v < 16; ++v)
      if ((v >> (i & 3)) & 1) l += DG[base + 16 * (i >> 2) + v];
    return l;
  }

  // ---- chip/rv32/src/vector/vld.cpp
  void compile_vld();
  FieldRef vld_product();

  // ---- chip/rv32/src/vector/traps.cpp
  void vector_traps();

  // ---- chip/rv32/src/vector/vr_file.cpp
  // A word's nibble one-hots (the sum of `srcs`, at most one of them nonzero) copied into a new
  // field only where `gate` (one dimension, 0/1) is 1, in layer l: an op's tables read the copy,
  // so that they are not touched on the other ops' steps.
  FieldRef gated_copy(std::uint32_t l, const std::string& name, const std::vector<FieldRef>& srcs, const Lin& gate);
  // Word-stream positions, as linear forms of the consumed kind: the element of the next value
  // byte (qt: its q; consuming VWG(g) or VW_qm with m < 3, or VW_q3 with q < 3) and the element
  // whose last byte is consumed (qw: VW_q3). The element is e = 4 g + q, g from the VWG slot.
  OH stream_target_q() const;
  Lin stream_word_end() const;
  // X + e for a 10-bit operand X (nibble one-hots x0, x1 and x2's low two bits) and the element
  // e = 4 g + q (g from `gslot`), as VR's key pieces. Layer 5: N0, the carry c1 out of nibble 0 (a
  // threshold of a linear form), the nibble sums t1 = x1 + e1 and t2 = x2 + e2 (and the parity
  // when banked); layer 6: N12 from (t1, c1, t2). A sum past 1023 wraps (only on a step whose
  // value is not used: the element after a stream's last).
  void index_sum(const std::string& name, const FieldRef& gslot, const OH& x0, const OH& x1, const OH& x2, const OH& q,
                 const std::vector<Lin>& gates, const KeyOut& out);
  // X + e' as index_sum() does, for an element e' given as nibble one-hots E0, E1 and E2 (bits 8,
  // 9), in layers base and base + 1.
  void index_sum_nibbles(const std::string& name, const OH& x0, const OH& x1, const OH& x2, const OH& e0, const OH& e1,
                         const OH& e2, const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base = 5);
  // The same with X as vindex() gives it.
  void index_sum(const std::string& name, const FieldRef& gslot, const std::array<OH, 3>& x, const OH& q,
                 const std::vector<Lin>& gates, const KeyOut& out) {
    index_sum(name, gslot, x[0], x[1], x[2], q, gates, out);
  }
  void index_sum_nibbles(const std::string& name, const std::array<OH, 3>& x, const OH& e0, const OH& e1, const OH& e2,
                         const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base = 5) {
    index_sum_nibbles(name, x[0], x[1], x[2], e0, e1, e2, gates, out, base);
  }
  // The common part: s0 = f0(parts0) (0..30) gives N0 = s0 & 15 and (linear form lin0) c1 =
  // [s0 >= 16]; t1 = f1(parts1) (0..30), t2 = f2(parts2) (0..6); N12 = ((t1 + c1) & 15) +
  // 16 ((t2 + ((t1 + c1) >> 4)) & 3). Banked: N0 and the parity (s0 & 1) route to lo/hi[parity].
  void sum_pieces(const std::string& name, const std::vector<OH>& parts0, const std::function<unsigned(const std::vector<unsigned>&)>& f0,
                  const Lin& lin0, const std::vector<OH>& parts1, const std::function<unsigned(const std::vector<unsigned>&)>& f1,
                  const std::vector<OH>& parts2, const std::function<unsigned(const std::vector<unsigned>&)>& f2,
                  const std::vector<Lin>& gates, const KeyOut& out, std::uint32_t base = 5);
  // VEW MULS's scalar index b + (e >> GS) (vector.md section 4.5): e >> GS as nibble one-hots
  // (layer 5, from f7's nibbles on custom-1 words: one small table per GS value and output nibble
  // over the bits of q, g's low and g's high nibble that it needs), then index_sum_nibbles() in
  // layers 6, 7, for the port of layer 8. Every input of these units is 0 outside the word
  // streams of custom-1 words, so they are idle there.
  void muls_index(const OH& qt, const Lin& reads, const KeyOut& out);
  void vr_file();
  Lin f7_mode(unsigned mode) const;
  void vwg_slot();
  // [pred(f7)] on custom-1 words, linear in F7X_ (layer 6 on; vector_traps()).
  Lin f7_pred(const std::function<bool(unsigned)>& pred) const;
  // Bit b (0..7) of the consumed token's payload, linear in its nibble one-hots (PN).
  Lin payload_bit(std::uint32_t b) const;
  // A "bytes" initialiser from an optional section (vector.md section 2.1: a missing or short
  // section leaves the rest zero).
  void section_init(const std::string& name, std::uint32_t layer, std::uint32_t head, std::uint32_t row,
                    const std::string& section, std::uint64_t offset, std::uint32_t stride, std::uint64_t length,
                    ByteEncoding enc, std::uint32_t bytes_per_column);

  // ---- chip/rv32/src/vector/digits.cpp
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
  FieldRef product_digits(const std::string& name, std::uint32_t l, const std::vector<Term>& terms, std::uint32_t cols,
                          std::uint64_t add, const Lin& gate, std::uint32_t* done = nullptr);
  // The digits of sum_c 16^c X_c modulo 2^(4 cols) (cols = X.size()) for column sums X_c that are
  // integers in 0..max_cs[c], as digit one-hots (16 rows per column), from layer `l`: carry-save
  // splits (up to three layers), the one-hots of the settled sums, the lookahead digits
  // (product_digits()). `gate` is 1 where the digits are wanted and <= 0 elsewhere; every X_c is
  // 0 where `gate` is not 1. *done is the layer whose output holds the digits.
  FieldRef column_digits(const std::string& name, std::uint32_t l, const std::vector<Lin>& X, std::vector<unsigned> max_cs,
                         const Lin& gate, std::uint32_t* done = nullptr);
  // Overflow of a two's complement value held as digit one-hots (16 rows per column) when it is
  // cut to the bits below bit 4 lo + 3: OV[0] += [positive and bits 4 lo + 3 .. 4 cols - 1 not all
  // 0], OV[1] += [negative and those bits not all 1] (one layer).
  void overflow_flags(LayerBuilder& L_, const FieldRef& DG, std::uint32_t lo, std::uint32_t cols, const FieldRef& OV,
                      const Lin& gate);
  // Pre-split of column sums X_c (integers 0..max_cs[c]) before column_digits(), so that no
  // unit's partial sum of terms nears 2^24 (a threshold split of values up to ~2^14 in steps of
  // 16 would sum ~1,000 pairs of large terms into one dimension): the thermometer [X_c >= 256 t]
  // into one dimension per t (layer l); R_c = X_c - 256 H_c (0..255, H_c = floor(X_c / 256))
  // split into R_c mod 16 (column c) and floor(R_c / 16) (column c + 1), and H_c into column
  // c + 2 (layer l + 1). Returns the new column sums and their bounds (same number of columns:
  // carries out of the top column are dropped, as modulo 2^(4 cols)).
  std::pair<std::vector<Lin>, std::vector<unsigned>> presplit(const std::string& name, std::uint32_t l, const std::vector<Lin>& X,
                                                               const std::vector<unsigned>& max_cs);
  // Compute a word once (issue 30, lever 2): a slot of layer `l` keeps the digit one-hots of
  // columns lo..cols-1 of DG (16 rows each) that the pipeline formed on the step where `first`
  // is 1, and returns them into the same rows of DG on the steps where `later` is 1 (the
  // pipeline's gate being 0 there, DG is otherwise 0 on those steps), so that the layers which
  // read DG (overflow, the value byte, compares) see the same digits on every value step of the
  // word while the layers that form DG run once. `first` and `later` are 0/1 and never both 1.
  void hold_digits(LayerBuilder& l, const FieldRef& DG, std::uint32_t lo, std::uint32_t cols, const Lin& first,
                   const Lin& later);
  // The same for rows from .. from + rows - 1 of any field holding 0/1 values (a word's one-hots).
  void hold_rows(LayerBuilder& l, const FieldRef& f, std::uint32_t from, std::uint32_t rows, const Lin& first,
                 const Lin& later);
  // The next token's value byte m of rnd(v, 16) (the word stream's TM_; not after the stream's
  // last element) from the digits of v + 2^15: columns 4 + 2m, 5 + 2m, or a byte of 2^31 - 1 or
  // -2^31 where OVF says the result overflows (VEW MUL, MULS, ROT; VFN SILU).
  void emit_rounded(LayerBuilder& l, const FieldRef& DG, const FieldRef& OVF);
  // The same for the value byte m chosen by tm[m] (0/1 each), nothing where `stop` is 1.
  void emit_rounded(LayerBuilder& l, const FieldRef& DG, const FieldRef& OVF, const OH& tm, const Lin& stop);

  // ---- chip/rv32/src/vector/vew.cpp
  void compile_vew();

  // ---- chip/rv32/src/vector/vfn.cpp
  static std::int64_t rnd_shift(std::int64_t x, int s);
  void compile_vfn();
  void silu();

  // ---- chip/rv32/src/vector/spans.cpp
  void vred_span();

  // ---- chip/rv32/src/vector/vred.cpp
  void compile_vred();
  void vred_max(const FieldRef& VRGM);
  void vred_sumsq(const FieldRef& VRGQ);

  // ---- chip/rv32/src/vector/vq.cpp
  void compile_vq();

  // ---- chip/rv32/src/vector/vexp.cpp
  void compile_vexp();

  // ---- chip/rv32/src/vector/vmat.cpp
  void vmat_slots();
  void compile_vmat();

  // ---- chip/rv32/src/vector/vmatr.cpp
  void vmatr_slots();
  void cache_heads(const std::string& name, const std::string& cache_section, const std::string& sh_section, unsigned target,
                   const FieldRef& RQ0, const FieldRef& RQ12, const FieldRef& BITS, const FieldRef& SHO);
  void compile_vmatr();
  void compile_vmatr_v();
};

}  // namespace lockstep::chip::rv32::detail
