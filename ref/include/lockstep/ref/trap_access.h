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
  /// A VLD's record (vector/vld.md §1) or a write's buffer (isa.md §5): the end of
  /// [address, end), exclusive; up to 2^32 + 1027.
  std::optional<std::uint64_t> end;
  /// What [address, end) is: "the VLD record" or "the write buffer" (with `end`).
  std::string region;
};

/// For a machine stopped by a misaligned or faulting load or store (isa.md §6, traps 4 to 7),
/// the access that trapped, from the state the trap left (a trap changes no register, so the
/// base register still holds its value): a scalar load or store's `x[rs1] + imm`; a faulting
/// write ecall's buffer `a1` (isa.md §5); a VLD's record `[X(rs1), X(rs1) + 4 + n)` with
/// `n = X(rs2) >> 16` (vector/vld.md §1). nullopt for any other trap, a machine that has not
/// trapped, or a pc outside RAM (the fetch's own fault).
std::optional<TrapAccess> trap_access(const Machine& m);

/// The access as trap lines print it: ", address 0x0011fff8", and for a VLD or a write
/// ", address 0x0011fff8 (the VLD record [0x0011fff8, 0x00110001))".
std::string describe(const TrapAccess& access);

/// Why the trap, where its code alone does not say, as trap lines print it after the address:
/// for FETCH_MISALIGNED the jump's target (", jump target 0x00010012": a JAL's or branch's pc +
/// imm, a JALR's (x[rs1] + imm) & ~1, isa.md §4.2); for BAD_ECALL the rule of isa.md §5 that
/// failed (", a7 = 1234 is no ECALL number (64 write, 93 exit)", ", write to fd 3 (1 or 2)",
/// ", write of 65536 bytes (at most 65,535)"). "" for other traps or a machine that has not
/// trapped.
std::string trap_reason(const Machine& m);

}  // namespace lockstep::ref
