// Trace token ids (trace.md §2): kind numbers, names and the id layout.
//
// A token is (kind, payload).  An 8-bit kind k has ids 256*k + p, p < 256.
// A wide kind k (k = 128 + 256*j) has 16-bit payloads: ids 256*k + p,
// p < 65536, so it occupies kind numbers k .. k+255.
// This header is layout only: which tokens an instruction emits is machine
// semantics and lives in ref/ (and, independently, in chip/).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lockstep::format {

/// Kind numbers of trace.md §2 (scalar machine and bignum unit).
enum class Kind : std::uint32_t {
  CTRL = 0,  ///< payload 0: START (id 0)
  W0 = 1, W1 = 2, W2 = 3, W3 = 4,     ///< bytes of the value written to rd
  A0 = 5, A1 = 6, A2 = 7, A3 = 8,     ///< bytes of a load/store effective address
  S0 = 9, S1 = 10, S2 = 11, S3 = 12,  ///< bytes of the data a store writes
  BR = 13,                            ///< branch not taken (0) / taken (1)
  DQ = 14,                            ///< division micro-step: 2*i + q_i
  CF = 15,                            ///< new bignum carry flag
  AC0 = 16,                           ///< AC0..AC11 = 16..27: bytes of the new bignum acc
  AC11 = 27,
  OUT = 28,   ///< byte written to fd 1
  ERR = 29,   ///< byte written to fd 2
  NOP = 30,   ///< payload 0
  EXIT = 31,  ///< exit status
  TRAP = 32,  ///< trap code (isa.md §6)
  // vector.md §5 (trace-v3): every value a vector instruction writes is on the bus, and every
  // token carries its micro-step position
  VMC0 = 33, VMC1 = 34, VMC2 = 35, VMC3 = 36, VMC4 = 37, VMC5 = 38,  ///< VMAT chunk j of row r: r & 0xFF
  VMH = 39,  ///< VMAT: r >> 8, before row r when r > 0 and r & 0xFF = 0
  VMV = 40,  ///< VMATR V mode, one per position t: t
  VRD = 41,  ///< VRED, one per source group k: k
  VQE = 42,  ///< VQ, one per group k: (k << 5) | e_k
  VWG = 43,  ///< word stream: e >> 2, before element e when e & 3 = 0 or e is the first
  // trace.md §2, §4.0, §4.5
  PCL = 44,                                   ///< w & 0xFF of the instruction's word index
  PCH0 = 45, PCH1 = 46, PCH2 = 47, PCH3 = 48,  ///< PCH_k: (w >> 8) & 0xFF, k = w >> 16
  OI = 49,                                    ///< i & 0xFF of the ECALL write byte that follows
  OIH = 50,                                   ///< i >> 8 when i > 0 and i & 0xFF = 0
  // vector.md §5 (continued)
  VY0 = 51, VY1 = 52, VY2 = 53, VY3 = 54,  ///< VMAT: byte m of the row result y_r
  VYN3 = 55,  ///< VMAT argmax mode: byte 3 of a y_r that is a new maximum
  VLG = 56,   ///< int8 stream (VLD, VQ): j >> 2, before element j when j & 3 = 0
  VLB0 = 57, VLB1 = 58, VLB2 = 59, VLB3 = 60,  ///< int8 stream: element j = m (mod 4), the byte
  VW00 = 61,  ///< word stream: VW_qm = 61 + 4q + m is byte m of word q of a quad (VW00..VW33 = 61..76)
  VW33 = 76,
  VXM0 = 77, VXM1 = 78, VXM2 = 79, VXM3 = 80,  ///< VEXP: byte m of the group maximum m_g
};

/// The START token (id 0): input of step 1, never produced.
inline constexpr std::uint32_t kStartToken = 0;

/// Id of token (kind, payload).  No range check (use is_valid_token).
constexpr std::uint32_t token_id(std::uint32_t kind, std::uint32_t payload) {
  return 256u * kind + payload;
}
constexpr std::uint32_t token_id(Kind kind, std::uint32_t payload) {
  return token_id(static_cast<std::uint32_t>(kind), payload);
}

/// Description of one kind of the vocabulary.
struct KindInfo {
  std::uint32_t kind;     ///< kind number (first kind number for a wide kind)
  std::string_view name;  ///< e.g. "W0", "TRAP"
  bool wide;              ///< 16-bit payload, occupying kinds kind..kind+255
  std::uint32_t payload_limit;  ///< payloads are 0 .. payload_limit-1
};

/// Every kind that can be produced, in kind-number order.
std::span<const KindInfo> kinds();

/// The kind whose id range contains `id`, or nullopt for an id outside every
/// kind (kinds not in the table, or a payload beyond payload_limit).
std::optional<KindInfo> kind_of(std::uint32_t id);

/// The kind with this name ("W0", "DQ", ...), or nullopt.
std::optional<KindInfo> kind_named(std::string_view name);

/// Payload of `id` relative to its kind's first id (id - 256*kind).
/// Precondition: kind_of(id) has a value.
std::uint32_t payload_of(std::uint32_t id);

/// True when `id` is in the vocabulary of trace.md §2 (START included).
bool is_valid_token(std::uint32_t id);

/// Vocabulary size V = 256 * (highest kind number + 1) (trace.md §2).
std::uint32_t vocab_size();

/// Marks a chip's prediction that its vocabulary map (dut-protocol.md §6) does not name: the
/// chip's own id is in the low 31 bits. Such a value is no token of the spec's; it compares
/// unequal to every token (a wrong prediction) and prints as "unmapped chip id 50256".
inline constexpr std::uint32_t kUnmappedChipId = 0x80000000u;

/// Human-readable token, spelled as docs/spec/vectors/README.md and
/// vector.md §8 do: data-byte kinds in hex ("W0(0xff)", "OUT(0x41)",
/// "VLB0(0x7f)"), the others in decimal ("BR(1)", "DQ(63)", "NOP(0)",
/// "TRAP(3)", "VMC0(250)"); "START" for id 0; ids outside the vocabulary
/// print as "?(12345)", or, for a payload past its kind's limit, as "?(10521: VRD payload 25,
/// outside VRD's 0..15)"; kUnmappedChipId | n as "unmapped chip id n".
std::string token_name(std::uint32_t id);

/// Where token `i` of one instruction's tokens (`tokens`, the reference's, in order) falls in the
/// instruction's vector stream, read from the position tokens before it (vector.md section 5, the
/// position rule): "word element 214, byte 0" (VW_qm after VWG), "word quad 53" (VWG), "int8
/// element 37" (VLB_m after VLG), "int8 group 9" (VLG), "row 300, chunk 2" (VMC_j, its row's high
/// part from the last VMH), "rows from 256" (VMH), "row 300's result, byte 1" (VY_m, VYN3 after the
/// row's chunks), "position 12" (VMV), "source group 3" (VRD), "group 2" (VQE), "group 1's
/// maximum, byte 3" (VXM_m: the groups counted by VXM0). Empty for a token of no vector stream, or
/// when `i` is past `tokens` or the position token it needs is not before it. For failure lines
/// (found by an outside tester: "field VW20" left the element of a wrong word to be counted by hand).
std::string stream_position(std::span<const std::uint32_t> tokens, std::size_t i);

/// Name of a trap code (isa.md §6, vector.md §6), e.g. "FETCH_FAULT";
/// "UNKNOWN" for codes with no name.
std::string_view trap_name(std::uint32_t code);

}  // namespace lockstep::format
