// Objdump-like disassembly driven by the encoding table.
#include <array>
#include <cstdio>
#include <string>

#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ref {

std::string_view reg_name(unsigned i) {
  static constexpr std::array<std::string_view, 32> kNames = {
      "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
      "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
  return kNames[i & 31];
}

std::string disassemble(std::uint32_t word, std::uint32_t pc) {
  const Decoded d = decode(word);
  char buf[96];
  if (d.op == Op::kIllegal) {
    std::snprintf(buf, sizeof buf, ".word 0x%08x", word);
    return buf;
  }
  const Encoding& e = encoding_of(d.op);
  std::string out(e.mnemonic);
  const auto r = [](unsigned i) { return std::string(reg_name(i)); };
  const auto simm = [](std::uint32_t v) { return std::to_string(static_cast<std::int32_t>(v)); };
  auto target = [&](std::uint32_t off) {
    std::snprintf(buf, sizeof buf, "0x%x", pc + off);
    return std::string(buf);
  };
  std::string ops;
  switch (e.cls) {
    case InsnClass::kLoad:
      ops = r(d.rd) + ", " + simm(d.imm) + "(" + r(d.rs1) + ")";
      break;
    case InsnClass::kStore:
      ops = r(d.rs2) + ", " + simm(d.imm) + "(" + r(d.rs1) + ")";
      break;
    case InsnClass::kJalr:
      ops = r(d.rd) + ", " + simm(d.imm) + "(" + r(d.rs1) + ")";
      break;
    case InsnClass::kBranch:
      ops = r(d.rs1) + ", " + r(d.rs2) + ", " + target(d.imm);
      break;
    case InsnClass::kJal:
      ops = r(d.rd) + ", " + target(d.imm);
      break;
    case InsnClass::kVector:
      out = vector_op((word >> 12) & 7).disasm(d.imm);  // the registry row's disassembly
      ops = r(d.rd) + ", " + r(d.rs1) + ", " + r(d.rs2);
      break;
    case InsnClass::kUpper:
      std::snprintf(buf, sizeof buf, "0x%x", d.imm >> 12);
      ops = r(d.rd) + ", " + buf;
      break;
    default: {
      // Register operands in rd, rs1, rs2 order, then the immediate.
      auto add = [&](const std::string& s) { ops += (ops.empty() ? "" : ", ") + s; };
      if (e.operands & kOpdRd) add(r(d.rd));
      if (e.operands & kOpdRs1) add(r(d.rs1));
      if (e.operands & kOpdRs2) add(r(d.rs2));
      if (e.format == Format::kI) add(simm(d.imm));
      if (e.format == Format::kIShift) add(std::to_string(d.imm));
    }
  }
  if (!ops.empty()) out += " " + ops;
  return out;
}

}  // namespace lockstep::ref
