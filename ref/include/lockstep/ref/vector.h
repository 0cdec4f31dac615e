// The vector unit (vector.md): memories (§2), fixed tables (§3), the eight
// instructions (§4), their tokens (§5) and traps (§6).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lockstep/format/elf.h"

namespace lockstep::ref {

/// Sizes of the vector memories (vector.md §2).
inline constexpr unsigned kVrWords = 1024, kActBytes = 384, kActBlocks = 6, kWChunks = 4152, kChunkLen = 64,
                          kCacheRows = 320, kCacheRowLen = 32;

/// Vector trap codes (vector.md §6).
enum class VecTrap : std::uint32_t {
  kField = 16, kVreg = 17, kLen = 18, kAct = 19, kOverlap = 20, kWmem = 21, kKv = 22, kPos = 23,
};

/// The vector unit's architectural state (vector.md §2).  Reset: all zero.
struct VectorState {
  std::array<std::int32_t, kVrWords> vr{};          ///< VR: v0..v15, word 64R + i
  std::array<std::int8_t, kActBytes> act{};         ///< ACT: 6 blocks of 64
  std::array<std::uint8_t, kActBlocks> ash{};       ///< ASH: 0..25 per block
  std::vector<std::int8_t> wmem = std::vector<std::int8_t>(kWChunks * kChunkLen, 0);  ///< W[c][i] at 64c + i, -8..7
  std::array<std::uint16_t, kWChunks> wscale{};     ///< WSCALE
  std::array<std::int8_t, kCacheRows * kCacheRowLen> kc{}, vc{};  ///< KC, VC: row r at 32r
  std::array<std::uint8_t, kCacheRows> ksh{}, vsh{};              ///< KSH, VSH: 0..25
  friend bool operator==(const VectorState&, const VectorState&) = default;
};

/// The fixed tables of vector.md §3 (computed once, exactly).
struct VectorTables {
  std::array<std::int32_t, 1024> exp{};  ///< EXP[i]
  std::array<std::int32_t, 256> rsq{};   ///< RSQ[i], 64 <= i < 256 (0 below)
  std::array<std::int32_t, 256> rcp{};   ///< RCP[i], 128 <= i < 256 (0 below)
  std::array<std::int32_t, 1024> sig{};  ///< SIG[i]
  std::array<std::array<std::int32_t, 4>, 64> cos{}, sin{};  ///< COS[p][j], SIN[p][j]
};
const VectorTables& vector_tables();

/// Initialises `state` (reset to zero first) from the `.lockstep.*`
/// sections of `image` (vector.md §2.6).  Throws LoadError (one line naming
/// the section) for an unknown `.lockstep.` name, a duplicate, SHF_ALLOC or
/// not SHT_PROGBITS, longer than its maximum, or a shift byte above 25.
void load_vector_sections(const format::GuestImage& image, VectorState& state);

/// Executes one vector instruction (vector.md §4-§6).  `f7`, `rd` are the
/// word's fields, `x1 = X(rs1)`, `x2 = X(rs2)`; `ram` is RAM (index 0 =
/// kRamBase) for VLD.  On success appends the instruction's vector tokens
/// (§5, without the final W of VMAT argmax) to `tokens`, sets `rd_value`
/// when the instruction writes rd (VMAT argmax) and returns 0.  On a trap
/// returns its code (4, 5, 16..23) and changes nothing.
/// `op_index` is the f3 field (0 VMAT .. 7 VLD).
std::uint32_t execute_vector(VectorState& state, unsigned op_index, std::uint32_t f7, unsigned rd, std::uint32_t x1,
                             std::uint32_t x2, std::span<const std::uint8_t> ram, std::vector<std::uint32_t>& tokens,
                             bool& writes_rd, std::uint32_t& rd_value);

/// Mnemonic with the f7 fields spelled out, e.g. "vmat.k3", "vmat.k1.argmax",
/// "vew.muls.gs6", "vred.sumsq.sh6"; invalid f7 values as "vew.f7=0x7f".
std::string vector_mnemonic(unsigned op_index, std::uint32_t f7);

}  // namespace lockstep::ref
