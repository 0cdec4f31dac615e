// The names of the instruction classes (plain data): one table for every room that prints or
// parses a class (the engine's per-class step counts, `lockstep fuzz --ops`, coverage).
//
// Class i is the i-th class of the encoding table (docs/spec/isa.md; ref::InsnClass lists them in
// this order). The table is data, not semantics: which word belongs to which class is ref's to say.
#pragma once

#include <array>
#include <string_view>

namespace lockstep::format {

/// Class names by class number 0..14: ALU (OP), ALU with an immediate (OP-IMM), LUI/AUIPC,
/// MUL*, DIV/REM*, Zba, loads, stores, branches, JAL, JALR, FENCE, ECALL/EBREAK, the bignum unit,
/// the vector unit (custom-1).
inline constexpr std::array<std::string_view, 15> kInsnClassNames = {
    "alu", "alu-imm", "upper", "mul",  "div",    "zba",    "load",  "store",
    "branch", "jal", "jalr",  "fence", "system", "bignum", "vector"};

/// The name of class number `cls` (kInsnClassNames), "other" for a number past the table (a word
/// that decodes to no class).
constexpr std::string_view insn_class_name(unsigned cls) {
  return cls < kInsnClassNames.size() ? kInsnClassNames[cls] : std::string_view("other");
}

}  // namespace lockstep::format
