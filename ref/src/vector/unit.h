// The vector unit's shared floors (docs/spec/vector.md), which every op file under
// ref/src/vector/ takes explicitly: exact integer helpers (§1), spans of VR words and the trap
// accumulator (§6), and the token streams (§5).  Private to ref/ (not an installed header).
//
// Every formula is exact: 64-bit signed intermediates (128-bit for VRED SUMSQ) within the
// bounds each op's page states, so no value ever wraps; rnd() is round half up (§1.2), sat32
// clamps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lockstep/format/tokens.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ref::vec {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using i64 = std::int64_t;
__extension__ using i128 = __int128;
using format::Kind;

// ------------------------------------------------------------------ §1 integers
/// §1.2: rnd(x, s) = floor((x + 2^(s-1)) / 2^s) for s >= 1, x for s = 0 (the arithmetic shift
/// floors toward -inf).  Exact for |x| < 2^62, s in 0..62.
constexpr i64 rnd(i64 x, unsigned s) { return s == 0 ? x : (x + (i64{1} << (s - 1))) >> s; }
/// rnd() over 128-bit values (VRED SUMSQ's accumulator reaches 2^72).
constexpr i128 rnd128(i128 x, unsigned s) { return s == 0 ? x : (x + (i128{1} << (s - 1))) >> s; }
/// §1.2: sat32(x) = min(max(x, -2^31), 2^31 - 1).
constexpr std::int32_t sat32(i128 x) {
  return static_cast<std::int32_t>(std::clamp<i128>(x, -(i128{1} << 31), (i128{1} << 31) - 1));
}
/// §5: "byte m of a value z" = lo8(floor(z / 2^(8m))), the byte of z's 32-bit two's complement
/// (m in 0..3).
constexpr u32 byte_of(std::int32_t z, unsigned m) { return (static_cast<u32>(z) >> (8 * m)) & 0xff; }
/// 2^k for k in 0..62.
constexpr i64 pow2(unsigned k) { return i64{1} << k; }
/// ceil(n / 64): the number of 64-element groups of n elements (n >= 0).
constexpr i64 ceil64(i64 n) { return (n + 63) / 64; }

// ------------------------------------------------------------------ §6 spans and traps
/// A span [start, start + len) of VR words (§6); start and len are >= 0.
struct Span {
  i64 start, len;
  /// [start, start + len) lies inside VR (start + len <= 1024).
  bool inside() const { return start + len <= kVrWords; }
  /// The two spans share a word.
  bool shares(const Span& o) const {
    return len > 0 && o.len > 0 && start < o.start + o.len && o.start < start + len;
  }
  /// §6 "conflict": share a word and are not identical (same first word and count).
  bool conflicts(const Span& o) const { return shares(o) && !(start == o.start && len == o.len); }
};

/// The lowest applicable trap code (§6: "raises the lowest applicable code"); 0 while no
/// condition holds.
struct Traps {
  u32 code = 0;
  void check(bool condition, u32 c) {
    if (condition && (code == 0 || c < code)) code = c;
  }
  void check(bool condition, VecTrap t) { check(condition, static_cast<u32>(t)); }
  void check(bool condition, Trap t) { check(condition, static_cast<u32>(t)); }
};

// ------------------------------------------------------------------ §5 tokens
/// Appends token KIND(payload) (payload 0..255).
inline void put(std::vector<u32>& tokens, Kind k, u32 payload) { tokens.push_back(format::token_id(k, payload)); }
/// Kind `base + i` (VMC_j, VY_m, VLB_m, VW_qm, VXM_m are consecutive kind numbers).
inline Kind kind_plus(Kind base, i64 i) { return static_cast<Kind>(static_cast<u32>(base) + static_cast<u32>(i)); }

/// §5 word stream: element e (increasing along the stream, 0 <= e < 1024) with value z is
/// VWG(e >> 2) when e is the stream's first element or e & 3 = 0, then VW_{q0} .. VW_{q3}
/// (q = e & 3, kind 61 + 4q + m carrying byte m of z).
class WordStream {
 public:
  explicit WordStream(std::vector<u32>& tokens) : tokens_(tokens) {}
  void element(i64 e, std::int32_t z) {
    if (first_ || (e & 3) == 0) put(tokens_, Kind::VWG, static_cast<u32>(e >> 2));
    first_ = false;
    for (unsigned m = 0; m < 4; ++m) put(tokens_, kind_plus(Kind::VW00, 4 * (e & 3) + m), byte_of(z, m));
  }

 private:
  std::vector<u32>& tokens_;
  bool first_ = true;
};

/// §5: the word stream of the n elements e = i, value z_i (VEW, VFN).
inline void word_stream(const std::vector<std::int32_t>& z, std::vector<u32>& tokens) {
  WordStream ws(tokens);
  for (std::size_t i = 0; i < z.size(); ++i) ws.element(static_cast<i64>(i), z[i]);
}

/// §5 int8 stream: element j (consecutive from 0, j < 1024) with value v is VLG(j >> 2) when
/// j & 3 = 0, then VLB_{j & 3}(lo8(v)).
inline void int8_element(std::vector<u32>& tokens, i64 j, i64 v) {
  if ((j & 3) == 0) put(tokens, Kind::VLG, static_cast<u32>(j >> 2));
  put(tokens, kind_plus(Kind::VLB0, j & 3), static_cast<u32>(v) & 0xff);
}

// ------------------------------------------------------------------ disassembly
/// The mnemonic of an invalid f7 value, e.g. "vew.f7=0x7f" (base "vew", f7 0x7f).
inline std::string bad_f7(const char* base, u32 f7) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s.f7=0x%02x", base, f7);
  return buf;
}

// ------------------------------------------------------------------ the registry's rows
// One per op, each defined in ref/src/vector/<op>.cpp; vector.cpp lists them in f3 order.
extern const VectorOpRow kVmatRow, kVmatrRow, kVqRow, kVexpRow, kVewRow, kVfnRow, kVredRow, kVldRow;

}  // namespace lockstep::ref::vec
