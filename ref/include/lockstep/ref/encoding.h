// The single encoding table (isa.md §4.1, bignum.md §1, vector.md): one row
// per instruction with its mask/match, mnemonic, format, register operands
// and class.  The decoder, the disassembler and the random program generator
// (fuzz/progen) all read this table; tests/ref proves no two rows overlap.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace lockstep::ref {

/// Every instruction of the machine.  kUndecoded marks an empty slot of the
/// predecoded instruction cache; kIllegal a word no row matches.
enum class Op : std::uint8_t {
  kUndecoded = 0,
  kIllegal,
  // RV32I (Unpriv ch. 2)
  kLui, kAuipc, kJal, kJalr,
  kBeq, kBne, kBlt, kBge, kBltu, kBgeu,
  kLb, kLh, kLw, kLbu, kLhu,
  kSb, kSh, kSw,
  kAddi, kSlti, kSltiu, kXori, kOri, kAndi, kSlli, kSrli, kSrai,
  kAdd, kSub, kSll, kSlt, kSltu, kXor, kSrl, kSra, kOr, kAnd,
  kFence, kEcall, kEbreak,
  // M (Unpriv ch. 7)
  kMul, kMulh, kMulhsu, kMulhu, kDiv, kDivu, kRem, kRemu,
  // Zba (Bitmanip §2.1)
  kSh1add, kSh2add, kSh3add,
  // bignum unit (bignum.md §1)
  kBnAddc, kBnSubb, kBnXchgc, kBnMac, kBnAccrd, kBnAccclr,
  // vector unit (vector.md §4), custom-1, in f3 order
  kVmat, kVmatr, kVq, kVexp, kVew, kVfn, kVred, kVld,
  kCount
};

/// Instruction formats: which immediate the word carries (Unpriv §2.3).
enum class Format : std::uint8_t {
  kR,       ///< no immediate
  kI,       ///< imm_i (12-bit, sign-extended)
  kIShift,  ///< shamt = bits [24:20]
  kS,       ///< imm_s
  kB,       ///< imm_b (branch offset, multiple of 2)
  kU,       ///< imm_u (upper 20 bits)
  kJ,       ///< imm_j (jump offset, multiple of 2)
  kNone,    ///< whole-word encodings (ecall, ebreak) and FENCE (fields ignored)
  kV,       ///< vector ops: imm = f7 (bits [31:25]); rd/rs1/rs2 as R-type
};

/// What kind of instruction a row is (used by the disassembler's operand
/// layout and by the program generator).
enum class InsnClass : std::uint8_t {
  kAlu,     ///< OP: rd <- f(rs1, rs2)
  kAluImm,  ///< OP-IMM: rd <- f(rs1, imm)
  kUpper,   ///< LUI, AUIPC
  kMul,     ///< MUL, MULH, MULHSU, MULHU
  kDiv,     ///< DIV, DIVU, REM, REMU
  kZba,     ///< SH1ADD, SH2ADD, SH3ADD
  kLoad,
  kStore,
  kBranch,
  kJal,
  kJalr,
  kFence,
  kSystem,  ///< ECALL, EBREAK
  kBignum,
  kVector,  ///< vector unit: every custom-1 word (invalid f7/rd are traps, not illegal)
};

/// The one table of class names (lower case), for reports, coverage and `--ops` lists: "alu",
/// "alu-imm", "upper", "mul", "div", "zba", "load", "store", "branch", "jal", "jalr", "fence",
/// "system", "bignum", "vector" (InsnClass order).  Every class has a name; names are unique.
std::string_view insn_class_name(InsnClass cls);

/// Register operand bits of Encoding::operands.
inline constexpr std::uint8_t kOpdRd = 1, kOpdRs1 = 2, kOpdRs2 = 4;

/// One row of the encoding table.  A word w is this instruction iff
/// (w & mask) == match.  Fields that MUST be zero are part of mask.
struct Encoding {
  Op op;
  std::string_view mnemonic;  ///< objdump-style, lower case ("addi", "bn.addc")
  std::uint32_t mask;
  std::uint32_t match;
  Format format;
  std::uint8_t operands;  ///< kOpdRd | kOpdRs1 | kOpdRs2: register fields that are operands
  InsnClass cls;
};

/// The whole table, one row per Op except kUndecoded and kIllegal.
std::span<const Encoding> encoding_table();

/// The row of `op`.  Precondition: op is neither kUndecoded nor kIllegal.
const Encoding& encoding_of(Op op);

/// A decoded instruction: the form kept in the predecoded instruction cache.
struct Decoded {
  Op op = Op::kUndecoded;
  std::uint8_t rd = 0, rs1 = 0, rs2 = 0;  ///< register fields (0..31) as in the word
  std::uint32_t imm = 0;  ///< the format's immediate, sign-extended; shamt for kIShift; f7 for kV
};

/// Decodes one 32-bit word.  Words matched by no row decode to Op::kIllegal
/// (isa.md §4.1: including low bits != 11, FENCE.I, bad shift f7).
Decoded decode(std::uint32_t word);

/// Field extraction helpers (Unpriv §2.2-2.3), exposed for tests and generators.
namespace field {
constexpr std::uint32_t rd(std::uint32_t w) { return (w >> 7) & 31; }
constexpr std::uint32_t rs1(std::uint32_t w) { return (w >> 15) & 31; }
constexpr std::uint32_t rs2(std::uint32_t w) { return (w >> 20) & 31; }
/// Sign-extends the low `bits` bits of v to 32 bits (unsigned arithmetic only).
constexpr std::uint32_t sext(std::uint32_t v, unsigned bits) {
  const std::uint32_t m = 1u << (bits - 1);
  v &= (bits == 32) ? 0xffffffffu : ((1u << bits) - 1);
  return (v ^ m) - m;
}
constexpr std::uint32_t imm_i(std::uint32_t w) { return sext(w >> 20, 12); }
constexpr std::uint32_t imm_s(std::uint32_t w) { return sext(((w >> 25) << 5) | ((w >> 7) & 31), 12); }
constexpr std::uint32_t imm_b(std::uint32_t w) {
  return sext(((w >> 31) & 1) << 12 | ((w >> 7) & 1) << 11 | ((w >> 25) & 63) << 5 | ((w >> 8) & 15) << 1, 13);
}
constexpr std::uint32_t imm_u(std::uint32_t w) { return w & 0xfffff000u; }
constexpr std::uint32_t imm_j(std::uint32_t w) {
  return sext(((w >> 31) & 1) << 20 | ((w >> 12) & 255) << 12 | ((w >> 20) & 1) << 11 | ((w >> 21) & 1023) << 1, 21);
}
}  // namespace field

/// Encoders (the inverse of the field helpers), for tests and generators.
/// Each takes the row's match and ORs in the operand fields; immediates are
/// truncated to their field width.
namespace encode {
std::uint32_t r(Op op, unsigned rd, unsigned rs1, unsigned rs2);
std::uint32_t i(Op op, unsigned rd, unsigned rs1, std::uint32_t imm);  ///< also kIShift (imm = shamt)
std::uint32_t s(Op op, unsigned rs1, unsigned rs2, std::uint32_t imm);
std::uint32_t b(Op op, unsigned rs1, unsigned rs2, std::uint32_t offset);
std::uint32_t u(Op op, unsigned rd, std::uint32_t imm_upper);  ///< imm_upper: the value (low 12 bits dropped)
std::uint32_t j(Op op, unsigned rd, std::uint32_t offset);
}  // namespace encode

}  // namespace lockstep::ref
