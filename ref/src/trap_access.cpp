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
      return TrapAccess{m.reg(d.rs1) + d.imm, std::nullopt};
    case Op::kEcall:  // write(fd, buf = a1, len): the buffer is outside RAM
      return TrapAccess{m.reg(11), std::nullopt};
    case Op::kVld:
      return TrapAccess{m.reg(d.rs1), std::uint64_t{m.reg(d.rs1)} + 4 + (m.reg(d.rs2) >> 16)};
    default:  // another vector op: its operands are vector memories (vector.md §2), not RAM
      return std::nullopt;
  }
}

std::string describe(const TrapAccess& access) {
  char buf[96];
  std::snprintf(buf, sizeof buf, ", address 0x%08x", access.address);
  std::string t = buf;
  if (access.end) {
    std::snprintf(buf, sizeof buf, " (the VLD record [0x%08x, 0x%08llx))", access.address,
                  static_cast<unsigned long long>(*access.end));
    t += buf;
  }
  return t;
}

}  // namespace lockstep::ref
