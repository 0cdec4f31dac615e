// The scalar RV32 machine compiled into chip layers (docs/chip-design.md).
// compile_rv32_chip() computes every weight; the executor stays ISA-agnostic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/chip/chip.hpp"

namespace lockstep::chip::rv32 {

/// Guest-image address of the initial register file: x_r's 4 little-endian bytes live at
/// kRegImageAddress + 4 r (r = 1..31). The address is above the 32-bit guest address space,
/// so no ELF segment can land there; an image without bytes there starts with x1..x31 = 0
/// (isa.md section 1 reset values).
inline constexpr std::uint64_t kRegImageAddress = 0x1'0000'0000ull;

inline constexpr std::uint32_t kRamBase = 0x0001'0000u;
inline constexpr std::uint32_t kRamSize = 0x0010'0000u;
inline constexpr std::uint32_t kNumKinds = 81;  ///< trace kinds 0..80 (trace.md section 2, trace-v3; 33..43, 51..80: vector unit)
inline constexpr std::uint32_t kVocab = 256 * kNumKinds;  ///< 20,736 (trace.md section 2)

/// Compiles the chip. Deterministic. Throws std::logic_error on an internal compiler bug.
Chip compile_rv32_chip();

/// What the chip executes (docs/chip-design.md "Coverage"): one line per item.
std::vector<std::string> rv32_coverage();

/// The fixed tables of vector.md section 3 exactly as compile_rv32_chip() writes them into the
/// weights (computed in the compiler from section 3's formulas): RSQ[64..255] (192 entries),
/// RCP[128..255] (128), SIG[0..1023] (1024), COS[p][j] and SIN[p][j] in the order p, then j
/// (256 each), EXP[0..1023] (1024). Tests compare their SHA-256 (int32 little-endian) with section 3's.
struct VectorTables {
  std::vector<std::int32_t> rsq, rcp, sig, cos, sin, exp;
};
VectorTables rv32_vector_tables();

}  // namespace lockstep::chip::rv32
