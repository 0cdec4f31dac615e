#include "lockstep/ref/encoding.h"

#include <array>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "lockstep/format/insn_class.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ref {
namespace {

// Field positions: op [6:0], rd [11:7], f3 [14:12], rs1 [19:15], rs2 [24:20], f7 [31:25].
constexpr std::uint32_t kOpc = 0x7f, kF3 = 0x7000, kF7 = 0xfe000000u;
constexpr std::uint32_t kRdF = 0xf80, kRs1F = 0xf8000, kRs2F = 0x1f00000;
constexpr std::uint32_t op_f3(std::uint32_t op, std::uint32_t f3) { return op | f3 << 12; }
constexpr std::uint32_t op_f3_f7(std::uint32_t op, std::uint32_t f3, std::uint32_t f7) {
  return op | f3 << 12 | f7 << 25;
}

constexpr std::uint8_t RD = kOpdRd, RS1 = kOpdRs1, RS2 = kOpdRs2;
constexpr std::uint32_t kLoad = 0x03, kStore = 0x23, kOpImm = 0x13, kOpReg = 0x33, kBranch = 0x63,
                        kCustom0 = 0x0b, kCustom1 = 0x2b;

using F = Format;
using C = InsnClass;

// isa.md §4.1, bignum.md §1.  Order is irrelevant to decoding (rows never overlap); the program
// generator draws from the table in this order, so new rows go at the end.
constexpr Encoding kScalarTable[] = {
    {Op::kLui, "lui", kOpc, 0x37, F::kU, RD, C::kUpper},
    {Op::kAuipc, "auipc", kOpc, 0x17, F::kU, RD, C::kUpper},
    {Op::kJal, "jal", kOpc, 0x6f, F::kJ, RD, C::kJal},
    {Op::kJalr, "jalr", kOpc | kF3, op_f3(0x67, 0), F::kI, RD | RS1, C::kJalr},
    {Op::kBeq, "beq", kOpc | kF3, op_f3(kBranch, 0), F::kB, RS1 | RS2, C::kBranch},
    {Op::kBne, "bne", kOpc | kF3, op_f3(kBranch, 1), F::kB, RS1 | RS2, C::kBranch},
    {Op::kBlt, "blt", kOpc | kF3, op_f3(kBranch, 4), F::kB, RS1 | RS2, C::kBranch},
    {Op::kBge, "bge", kOpc | kF3, op_f3(kBranch, 5), F::kB, RS1 | RS2, C::kBranch},
    {Op::kBltu, "bltu", kOpc | kF3, op_f3(kBranch, 6), F::kB, RS1 | RS2, C::kBranch},
    {Op::kBgeu, "bgeu", kOpc | kF3, op_f3(kBranch, 7), F::kB, RS1 | RS2, C::kBranch},
    {Op::kLb, "lb", kOpc | kF3, op_f3(kLoad, 0), F::kI, RD | RS1, C::kLoad},
    {Op::kLh, "lh", kOpc | kF3, op_f3(kLoad, 1), F::kI, RD | RS1, C::kLoad},
    {Op::kLw, "lw", kOpc | kF3, op_f3(kLoad, 2), F::kI, RD | RS1, C::kLoad},
    {Op::kLbu, "lbu", kOpc | kF3, op_f3(kLoad, 4), F::kI, RD | RS1, C::kLoad},
    {Op::kLhu, "lhu", kOpc | kF3, op_f3(kLoad, 5), F::kI, RD | RS1, C::kLoad},
    {Op::kSb, "sb", kOpc | kF3, op_f3(kStore, 0), F::kS, RS1 | RS2, C::kStore},
    {Op::kSh, "sh", kOpc | kF3, op_f3(kStore, 1), F::kS, RS1 | RS2, C::kStore},
    {Op::kSw, "sw", kOpc | kF3, op_f3(kStore, 2), F::kS, RS1 | RS2, C::kStore},
    {Op::kAddi, "addi", kOpc | kF3, op_f3(kOpImm, 0), F::kI, RD | RS1, C::kAluImm},
    {Op::kSlti, "slti", kOpc | kF3, op_f3(kOpImm, 2), F::kI, RD | RS1, C::kAluImm},
    {Op::kSltiu, "sltiu", kOpc | kF3, op_f3(kOpImm, 3), F::kI, RD | RS1, C::kAluImm},
    {Op::kXori, "xori", kOpc | kF3, op_f3(kOpImm, 4), F::kI, RD | RS1, C::kAluImm},
    {Op::kOri, "ori", kOpc | kF3, op_f3(kOpImm, 6), F::kI, RD | RS1, C::kAluImm},
    {Op::kAndi, "andi", kOpc | kF3, op_f3(kOpImm, 7), F::kI, RD | RS1, C::kAluImm},
    {Op::kSlli, "slli", kOpc | kF3 | kF7, op_f3_f7(kOpImm, 1, 0x00), F::kIShift, RD | RS1, C::kAluImm},
    {Op::kSrli, "srli", kOpc | kF3 | kF7, op_f3_f7(kOpImm, 5, 0x00), F::kIShift, RD | RS1, C::kAluImm},
    {Op::kSrai, "srai", kOpc | kF3 | kF7, op_f3_f7(kOpImm, 5, 0x20), F::kIShift, RD | RS1, C::kAluImm},
    {Op::kAdd, "add", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 0, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kSub, "sub", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 0, 0x20), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kSll, "sll", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 1, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kSlt, "slt", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 2, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kSltu, "sltu", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 3, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kXor, "xor", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 4, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kSrl, "srl", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 5, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kSra, "sra", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 5, 0x20), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kOr, "or", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 6, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kAnd, "and", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 7, 0x00), F::kR, RD | RS1 | RS2, C::kAlu},
    {Op::kMul, "mul", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 0, 0x01), F::kR, RD | RS1 | RS2, C::kMul},
    {Op::kMulh, "mulh", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 1, 0x01), F::kR, RD | RS1 | RS2, C::kMul},
    {Op::kMulhsu, "mulhsu", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 2, 0x01), F::kR, RD | RS1 | RS2, C::kMul},
    {Op::kMulhu, "mulhu", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 3, 0x01), F::kR, RD | RS1 | RS2, C::kMul},
    {Op::kDiv, "div", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 4, 0x01), F::kR, RD | RS1 | RS2, C::kDiv},
    {Op::kDivu, "divu", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 5, 0x01), F::kR, RD | RS1 | RS2, C::kDiv},
    {Op::kRem, "rem", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 6, 0x01), F::kR, RD | RS1 | RS2, C::kDiv},
    {Op::kRemu, "remu", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 7, 0x01), F::kR, RD | RS1 | RS2, C::kDiv},
    {Op::kSh1add, "sh1add", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 2, 0x10), F::kR, RD | RS1 | RS2, C::kZba},
    {Op::kSh2add, "sh2add", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 4, 0x10), F::kR, RD | RS1 | RS2, C::kZba},
    {Op::kSh3add, "sh3add", kOpc | kF3 | kF7, op_f3_f7(kOpReg, 6, 0x10), F::kR, RD | RS1 | RS2, C::kZba},
    // FENCE: any fm/pred/succ/rs1/rd (isa.md §4.1).
    {Op::kFence, "fence", kOpc | kF3, op_f3(0x0f, 0), F::kNone, 0, C::kFence},
    {Op::kEcall, "ecall", 0xffffffffu, 0x00000073u, F::kNone, 0, C::kSystem},
    {Op::kEbreak, "ebreak", 0xffffffffu, 0x00100073u, F::kNone, 0, C::kSystem},
    // bignum.md §1: custom-0, f7 = 0, fields marked "0" must be zero.
    {Op::kBnAddc, "bn.addc", kOpc | kF3 | kF7, op_f3(kCustom0, 0), F::kR, RD | RS1 | RS2, C::kBignum},
    {Op::kBnSubb, "bn.subb", kOpc | kF3 | kF7, op_f3(kCustom0, 1), F::kR, RD | RS1 | RS2, C::kBignum},
    {Op::kBnXchgc, "bn.xchgc", kOpc | kF3 | kF7 | kRs2F, op_f3(kCustom0, 2), F::kR, RD | RS1, C::kBignum},
    {Op::kBnMac, "bn.mac", kOpc | kF3 | kF7 | kRdF, op_f3(kCustom0, 3), F::kR, RS1 | RS2, C::kBignum},
    {Op::kBnAccrd, "bn.accrd", kOpc | kF3 | kF7 | kRs1F | kRs2F, op_f3(kCustom0, 4), F::kR, RD, C::kBignum},
    {Op::kBnAccclr, "bn.accclr", 0xffffffffu, op_f3(kCustom0, 5), F::kR, 0, C::kBignum},
};

// vector.md §4.0: custom-1, f3 selects the op; every f7 and rd is the op's (invalid ones are
// traps, vector.md §6), so the mask is opcode and f3 only.  One row per row of the vector-op
// registry (vector_ops(), ref/src/vector/<op>.cpp), which gives the mnemonic; Op::kVmat + f3 is
// the op.
Encoding vector_row(const VectorOpRow& v) {
  return {static_cast<Op>(static_cast<unsigned>(Op::kVmat) + v.f3), v.mnemonic, kOpc | kF3, op_f3(kCustom1, v.f3),
          F::kV, RD | RS1 | RS2, C::kVector};
}

// The whole table: the scalar rows, then the vector rows in f3 order.
const std::vector<Encoding>& table() {
  static const std::vector<Encoding> rows = [] {
    std::vector<Encoding> t(std::begin(kScalarTable), std::end(kScalarTable));
    for (const VectorOpRow& v : vector_ops()) t.push_back(vector_row(v));
    return t;
  }();
  return rows;
}

// Row indices by major opcode (bits [6:0]), built once from table().
struct OpcodeIndex {
  std::array<std::vector<const Encoding*>, 128> rows;
  std::array<const Encoding*, static_cast<std::size_t>(Op::kCount)> by_op{};
  OpcodeIndex() {
    for (const Encoding& e : table()) {
      by_op[static_cast<std::size_t>(e.op)] = &e;
      for (std::uint32_t opc = 0; opc < 128; ++opc) {
        if (((opc ^ e.match) & e.mask & kOpc) == 0) rows[opc].push_back(&e);
      }
    }
  }
};
const OpcodeIndex& index() {
  static const OpcodeIndex idx;
  return idx;
}

}  // namespace

std::span<const Encoding> encoding_table() { return table(); }

std::string_view insn_class_name(InsnClass cls) {
  // The names are plain data shared with the engine and the fuzz campaign (format/insn_class.h);
  // the table lists the classes in InsnClass order, and a class added without a name is caught here.
  static_assert(format::kInsnClassNames.size() == static_cast<std::size_t>(InsnClass::kVector) + 1);
  return format::insn_class_name(static_cast<unsigned>(cls));
}

const Encoding& encoding_of(Op op) {
  const Encoding* e = index().by_op[static_cast<std::size_t>(op)];
  if (!e) throw std::invalid_argument("encoding_of: no row for this op");
  return *e;
}

Decoded decode(std::uint32_t w) {
  Decoded d;
  d.op = Op::kIllegal;
  for (const Encoding* e : index().rows[w & kOpc]) {
    if ((w & e->mask) != e->match) continue;
    d.op = e->op;
    d.rd = static_cast<std::uint8_t>(field::rd(w));
    d.rs1 = static_cast<std::uint8_t>(field::rs1(w));
    d.rs2 = static_cast<std::uint8_t>(field::rs2(w));
    switch (e->format) {
      case Format::kI: d.imm = field::imm_i(w); break;
      case Format::kIShift: d.imm = field::rs2(w); break;
      case Format::kS: d.imm = field::imm_s(w); break;
      case Format::kB: d.imm = field::imm_b(w); break;
      case Format::kU: d.imm = field::imm_u(w); break;
      case Format::kJ: d.imm = field::imm_j(w); break;
      case Format::kV: d.imm = w >> 25; break;
      case Format::kR:
      case Format::kNone: d.imm = 0; break;
    }
    return d;
  }
  return d;
}

namespace encode {
std::uint32_t r(Op op, unsigned rd, unsigned rs1, unsigned rs2) {
  return encoding_of(op).match | (rd & 31) << 7 | (rs1 & 31) << 15 | (rs2 & 31) << 20;
}
std::uint32_t i(Op op, unsigned rd, unsigned rs1, std::uint32_t imm) {
  return encoding_of(op).match | (rd & 31) << 7 | (rs1 & 31) << 15 | (imm & 0xfff) << 20;
}
std::uint32_t s(Op op, unsigned rs1, unsigned rs2, std::uint32_t imm) {
  return encoding_of(op).match | (imm & 31) << 7 | (rs1 & 31) << 15 | (rs2 & 31) << 20 |
         ((imm >> 5) & 127) << 25;
}
std::uint32_t b(Op op, unsigned rs1, unsigned rs2, std::uint32_t o) {
  return encoding_of(op).match | ((o >> 11) & 1) << 7 | ((o >> 1) & 15) << 8 | (rs1 & 31) << 15 |
         (rs2 & 31) << 20 | ((o >> 5) & 63) << 25 | ((o >> 12) & 1) << 31;
}
std::uint32_t u(Op op, unsigned rd, std::uint32_t imm_upper) {
  return encoding_of(op).match | (rd & 31) << 7 | (imm_upper & 0xfffff000u);
}
std::uint32_t j(Op op, unsigned rd, std::uint32_t o) {
  return encoding_of(op).match | (rd & 31) << 7 | ((o >> 12) & 255) << 12 | ((o >> 11) & 1) << 20 |
         ((o >> 1) & 1023) << 21 | ((o >> 20) & 1) << 31;
}
}  // namespace encode

}  // namespace lockstep::ref
