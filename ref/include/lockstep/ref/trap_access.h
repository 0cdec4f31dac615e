// Where the instruction of a trap accessed memory, for the one-line reports of a trap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lockstep/ref/machine.h"

namespace lockstep::ref {

/// The memory access of the instruction that trapped.
struct TrapAccess {
  std::uint32_t address = 0;  ///< its effective address (a VLD's record start, a write's buffer)
  /// A VLD's record (vector/vld.md §1): the end of [address, end), exclusive; up to 2^32 + 1027.
  std::optional<std::uint64_t> end;
};

/// For a machine stopped by a misaligned or faulting load or store (isa.md §6, traps 4 to 7),
/// the access that trapped, from the state the trap left (a trap changes no register, so the
/// base register still holds its value): a scalar load or store's `x[rs1] + imm`; a faulting
/// write ecall's buffer `a1` (isa.md §5); a VLD's record `[X(rs1), X(rs1) + 4 + n)` with
/// `n = X(rs2) >> 16` (vector/vld.md §1). nullopt for any other trap, a machine that has not
/// trapped, or a pc outside RAM (the fetch's own fault).
std::optional<TrapAccess> trap_access(const Machine& m);

/// The access as trap lines print it: ", address 0x0011fff8", and for a VLD
/// ", address 0x0011fff8 (the VLD record [0x0011fff8, 0x00110001))".
std::string describe(const TrapAccess& access);

}  // namespace lockstep::ref
