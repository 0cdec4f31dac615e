#include "lockstep/ref/trap_access.h"

#include <cstdio>
#include <stdexcept>

#include "lockstep/ref/encoding.h"

namespace lockstep::ref {

std::optional<TrapAccess> trap_access(const Machine& m) {
  if (m.status() != Status::kTrapped) return std::nullopt;
  const std::uint32_t code = m.trap_code();
  if (code < static_cast<std::uint32_t>(Trap::kLoadMisaligned) || code > static_cast<std::uint32_t>(Trap::kStoreFault)) {
    return std::nullopt;
  }
  std::uint32_t word = 0;
  try {
    word = m.read_word(m.pc());
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
  const Decoded d = decode(word);
  switch (d.op) {
    case Op::kLb: case Op::kLh: case Op::kLw: case Op::kLbu: case Op::kLhu:
    case Op::kSb: case Op::kSh: case Op::kSw:
      return TrapAccess{m.reg(d.rs1) + d.imm, std::nullopt, ""};
    case Op::kEcall:  // write(fd, buf = a1, len = a2): the buffer is not all in RAM
      return TrapAccess{m.reg(11), std::uint64_t{m.reg(11)} + m.reg(12), "the write buffer"};
    case Op::kVld:
      return TrapAccess{m.reg(d.rs1), std::uint64_t{m.reg(d.rs1)} + 4 + (m.reg(d.rs2) >> 16), "the VLD record"};
    default:  // another vector op: its operands are vector memories (vector.md §2), not RAM
      return std::nullopt;
  }
}

std::string describe(const TrapAccess& access) {
  char buf[96];
  std::snprintf(buf, sizeof buf, ", address 0x%08x", access.address);
  std::string t = buf;
  if (access.end) {
    std::snprintf(buf, sizeof buf, " [0x%08x, 0x%08llx))", access.address, static_cast<unsigned long long>(*access.end));
    t += " (" + access.region + buf;
  }
  return t;
}

std::string trap_reason(const Machine& m) {
  if (m.status() != Status::kTrapped) return "";
  const std::uint32_t code = m.trap_code();
  std::uint32_t word = 0;
  try {
    word = m.read_word(m.pc());
  } catch (const std::out_of_range&) {
    return "";
  }
  char buf[96];
  if (code == static_cast<std::uint32_t>(Trap::kFetchMisaligned)) {
    const Decoded d = decode(word);
    std::uint32_t target = 0;
    switch (d.op) {
      case Op::kJal: case Op::kBeq: case Op::kBne: case Op::kBlt: case Op::kBge: case Op::kBltu: case Op::kBgeu:
        target = m.pc() + d.imm;
        break;
      case Op::kJalr:  // a trap writes no register: x[rs1] is still the base
        target = (m.reg(d.rs1) + d.imm) & ~1u;
        break;
      default:
        return "";
    }
    std::snprintf(buf, sizeof buf, ", jump target 0x%08x", target);
    return buf;
  }
  if (code == static_cast<std::uint32_t>(Trap::kBadEcall)) {
    const std::uint32_t a7 = m.reg(17), fd = m.reg(10), len = m.reg(12);
    if (a7 != 64 && a7 != 93) {
      std::snprintf(buf, sizeof buf, ", a7 = %u is no ECALL number (64 write, 93 exit)", a7);
    } else if (a7 == 64 && fd != 1 && fd != 2) {
      std::snprintf(buf, sizeof buf, ", write to fd %u (1 or 2)", fd);
    } else if (a7 == 64 && len > 65535) {
      std::snprintf(buf, sizeof buf, ", write of %u bytes (at most 65,535)", len);
    } else {
      return "";
    }
    return buf;
  }
  return "";
}

}  // namespace lockstep::ref
