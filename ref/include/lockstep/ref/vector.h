// The vector unit (vector.md): memories (§2), fixed tables (§3), the eight
// instructions (§4: one page each under docs/spec/vector/, one file each under
// ref/src/vector/), their tokens (§5) and traps (§6), and the registry of the ops.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
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
/// sections of `image` (vector.md §2.1).  Throws LoadError (one line naming
/// the section) for an unknown `.lockstep.` name, a duplicate, SHF_ALLOC or
/// not SHT_PROGBITS, longer than its maximum, or a shift byte above 25.
void load_vector_sections(const format::GuestImage& image, VectorState& state);

/// One vector instruction's operands (vector.md §4.0): the word's `f7` and `rd` fields and
/// `X(rs1)`, `X(rs2)`, read before the instruction changes anything.
struct VectorOperands {
  std::uint32_t f7 = 0;          ///< bits 31..25 of the word (0..127): the op's mode fields
  unsigned rd = 0;               ///< the rd field (0..31)
  std::uint32_t x1 = 0, x2 = 0;  ///< X(rs1), X(rs2)
  std::int64_t A() const { return x1 & 0xffff; }  ///< X(rs1) & 0xFFFF (0..65535)
  std::int64_t B() const { return x1 >> 16; }     ///< X(rs1) >> 16 (0..65535)
  std::int64_t C() const { return x2 & 0xffff; }  ///< X(rs2) & 0xFFFF (0..65535)
  std::int64_t N() const { return x2 >> 16; }     ///< X(rs2) >> 16 (0..65535)
};

/// What a vector instruction hands back besides its changes to the VectorState (vector.md §5):
/// its vector tokens, appended to `tokens` (without the final W of VMAT argmax, which is the
/// machine's), and the value for rd when it writes rd (VMAT argmax only).
struct VectorOutput {
  std::vector<std::uint32_t>& tokens;  ///< token ids (trace.md §2), appended to
  bool writes_rd = false;
  std::uint32_t rd_value = 0;  ///< X(rd)'s new value when writes_rd
};

/// An op's execute function: checks the traps of its page (docs/spec/vector/<op>.md), then
/// reads all its inputs, then writes its results.  Returns 0 on success; on a trap returns the
/// lowest applicable code (4, 5, 16..23) and changes neither `state` nor `out`.  `ram` is RAM,
/// index 0 = kRamBase (only VLD reads it).
using VectorExecute = std::uint32_t (*)(VectorState& state, const VectorOperands& ops,
                                        std::span<const std::uint8_t> ram, VectorOutput& out);
/// An op's disassembly: the mnemonic with the f7 fields spelled out (f7 in 0..127), e.g.
/// "vmat.k3", "vmat.k1.argmax", "vew.muls.gs6", "vred.sumsq.sh6"; an invalid f7 value as
/// "vew.f7=0x7f".
using VectorDisasm = std::string (*)(std::uint32_t f7);

/// One row of the vector-op registry: everything the rest of ref/ knows about an op.  Each
/// row lives in its op's file, ref/src/vector/<op>.cpp; the encoding table's custom-1 rows
/// (encoding.cpp) and the disassembler (disasm.cpp) are built from these rows.
struct VectorOpRow {
  unsigned f3;                ///< the word's f3 field (vector.md §4.0): 0 VMAT .. 7 VLD
  std::string_view mnemonic;  ///< lower case, as the encoding table's row ("vq")
  VectorExecute execute;
  VectorDisasm disasm;
};

/// The registry: the eight ops, row i having f3 = i (vector.md §4.0's table order).
std::span<const VectorOpRow> vector_ops();

/// The row of f3 (0..7; f3 is taken mod 8).
const VectorOpRow& vector_op(unsigned f3);

/// Executes one vector instruction (vector.md §4-§6) through the registry: `op_index` is the
/// f3 field (0 VMAT .. 7 VLD), `f7`, `rd` are the word's fields, `x1 = X(rs1)`, `x2 = X(rs2)`;
/// `ram` is RAM (index 0 = kRamBase) for VLD.  On success appends the instruction's vector
/// tokens (§5, without the final W of VMAT argmax) to `tokens`, sets `rd_value` when the
/// instruction writes rd (VMAT argmax) and returns 0.  On a trap returns its code (4, 5,
/// 16..23) and changes nothing.
std::uint32_t execute_vector(VectorState& state, unsigned op_index, std::uint32_t f7, unsigned rd, std::uint32_t x1,
                             std::uint32_t x2, std::span<const std::uint8_t> ram, std::vector<std::uint32_t>& tokens,
                             bool& writes_rd, std::uint32_t& rd_value);

/// vector_op(op_index).disasm(f7): the mnemonic with the f7 fields spelled out, e.g.
/// "vmat.k3", "vmat.k1.argmax", "vew.muls.gs6", "vred.sumsq.sh6"; invalid f7 values as
/// "vew.f7=0x7f".
std::string vector_mnemonic(unsigned op_index, std::uint32_t f7);

}  // namespace lockstep::ref
