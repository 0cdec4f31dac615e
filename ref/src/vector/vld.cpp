// VLD: load a scaled int8 vector from RAM (docs/spec/vector/vld.md; f3 = 7).
#include <cstring>

#include "unit.h"

namespace lockstep::ref::vec {
namespace {

// vld.md §1.  f7: all zero.  Operands: a = X(rs1) (a RAM address, the whole register),
// dst = X(rs2) & 0xFFFF (the C field), n = X(rs2) >> 16 (N, 1..1024).  The record at a: an
// int32 LE multiplier M, then n bytes b_i.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t> ram, VectorOutput& out) {
  const u32 a = o.x1;
  const i64 dst = o.C(), n = o.N();
  Traps t;  // vld.md §3
  t.check(a % 4 != 0, Trap::kLoadMisaligned);
  t.check(a < kRamBase || u64{a} + 4 + static_cast<u64>(n) > kRamEnd, Trap::kLoadFault);
  t.check(o.f7 != 0 || o.rd != 0, VecTrap::kField);
  t.check(!Span{dst, n}.inside(), VecTrap::kVreg);
  t.check(n < 1 || n > 1024, VecTrap::kLen);
  if (t.code) return t.code;
  const std::uint8_t* rec = ram.data() + (a - kRamBase);
  std::int32_t M;
  std::memcpy(&M, rec, 4);
  // Tokens (vld.md §2): the multiplier's bytes, then per element group g (elements 4g .. 4g+3)
  // VLG(g) and its bytes; VLB_m carries the byte at an address = m (mod 4) (a is a multiple of 4).
  for (i64 i = 0; i < 4; ++i) put(out.tokens, kind_plus(Kind::VLB0, i), rec[i]);
  for (i64 i = 0; i < n; ++i) int8_element(out.tokens, i, static_cast<std::int8_t>(rec[4 + i]));
  // VR[dst + i] <- sat32(sext8(b_i) * M)   (|.| <= 2^38 before sat32)
  for (i64 i = 0; i < n; ++i) {
    s.vr[static_cast<std::size_t>(dst + i)] = sat32(i64{static_cast<std::int8_t>(rec[4 + i])} * M);
  }
  return 0;
}

// "vld".
std::string disasm(u32 f7) { return f7 ? bad_f7("vld", f7) : "vld"; }

}  // namespace

const VectorOpRow kVldRow{7, "vld", execute, disasm};

}  // namespace lockstep::ref::vec
