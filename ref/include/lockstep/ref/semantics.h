// Pure semantics of the scalar and bignum instructions, one small function
// per paragraph of the spec.  Unsigned arithmetic with explicit sign
// extension only (no signed overflow, no out-of-range shifts: UBSan-clean).
#pragma once

#include <cstdint>

namespace lockstep::ref::sem {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

/// 32-bit value read as a signed integer, sign-extended to 64 bits (as u64).
constexpr u64 sext64(u32 v) { return static_cast<u64>(v) | ((v & 0x80000000u) ? 0xffffffff00000000ull : 0); }

/// isa.md §4.1 SLL/SLLI: `a << (s & 31)`.
constexpr u32 shift_left(u32 a, u32 s) { return a << (s & 31); }
/// isa.md §4.1 SRL/SRLI: `a >>u (s & 31)`.
constexpr u32 shift_right_logical(u32 a, u32 s) { return a >> (s & 31); }
/// isa.md §4.1 SRA/SRAI: `a >>s (s & 31)` (sign bit copied in).
constexpr u32 shift_right_arith(u32 a, u32 s) {
  s &= 31;
  const u32 fill = (a & 0x80000000u) ? ~(0xffffffffu >> s) : 0u;
  return (a >> s) | fill;
}
/// Signed less-than of two 32-bit values (SLT, SLTI, BLT, BGE).
constexpr bool less_signed(u32 a, u32 b) { return (a ^ 0x80000000u) < (b ^ 0x80000000u); }

/// isa.md §4.3: MUL/MULH/MULHSU/MULHU are one operation on the exact 64-bit
/// product, each operand read as signed or unsigned, returning its low or
/// high 32 bits.  (The product of the 64-bit extensions modulo 2^64 is the
/// exact product, which always fits in 64 bits.)
struct MulVariant {
  bool high;        ///< return bits [63:32] (else [31:0])
  bool signed_rs1;  ///< rs1 is signed
  bool signed_rs2;  ///< rs2 is signed
};
constexpr u32 multiply(u32 a, u32 b, MulVariant v) {
  const u64 x = v.signed_rs1 ? sext64(a) : u64{a};
  const u64 y = v.signed_rs2 ? sext64(b) : u64{b};
  const u64 p = x * y;
  return static_cast<u32>(v.high ? p >> 32 : p);
}

/// isa.md §4.3: DIV/DIVU/REM/REMU with the table of special cases
/// (b = 0; a = -2^31, b = -1), quotient rounded toward zero, remainder with
/// the sign of the dividend.
struct DivVariant {
  bool is_signed;  ///< DIV/REM (else DIVU/REMU)
  bool remainder;  ///< REM/REMU (else DIV/DIVU)
};
constexpr u32 divide(u32 a, u32 b, DivVariant v) {
  if (b == 0) return v.remainder ? a : 0xffffffffu;
  if (!v.is_signed) return v.remainder ? a % b : a / b;
  if (a == 0x80000000u && b == 0xffffffffu) return v.remainder ? 0u : 0x80000000u;
  const bool neg_a = a & 0x80000000u, neg_b = b & 0x80000000u;
  const u32 ua = neg_a ? 0u - a : a, ub = neg_b ? 0u - b : b;
  if (v.remainder) {
    const u32 r = ua % ub;
    return neg_a ? 0u - r : r;
  }
  const u32 q = ua / ub;
  return (neg_a != neg_b) ? 0u - q : q;
}

/// trace.md §4.4: the unsigned magnitudes fed to the restoring division
/// whose quotient bits the DQ tokens show (|-2^31| = 2^31).
constexpr u32 magnitude(u32 v, bool is_signed) { return (is_signed && (v & 0x80000000u)) ? 0u - v : v; }

/// trace.md §4.4: restoring division of ua by ub; calls emit(2*i + q_i) for
/// i = 31 down to 0.  With ub = 0 every q_i is 1.
template <class Emit>
constexpr void restoring_division_digits(u32 ua, u32 ub, Emit&& emit) {
  u64 r = 0;  // 33-bit
  for (int i = 31; i >= 0; --i) {
    r = 2 * r + ((ua >> i) & 1u);
    u32 q = 0;
    if (r >= ub) {
      r -= ub;
      q = 1;
    }
    emit(static_cast<u32>(2 * i) + q);
  }
}

/// Zba (Bitmanip §2.1): sh1add/sh2add/sh3add: `rd <- X(rs2) + (X(rs1) << shamt)`.
constexpr u32 shift_add(u32 rs1, u32 rs2, unsigned shamt) { return rs2 + (rs1 << shamt); }

/// bignum.md §2 results: the value for rd and the new carry.
struct CarryResult {
  u32 rd;
  u32 c;  ///< 0 or 1
};
/// bn.addc: s = a + b + c; rd <- s mod 2^32; c <- s >> 32.
constexpr CarryResult add_with_carry(u32 a, u32 b, u32 c) {
  const u64 s = u64{a} + b + c;
  return {static_cast<u32>(s), static_cast<u32>(s >> 32)};
}
/// bn.subb: d = a - b - c; rd <- d mod 2^32; c <- 1 if d < 0.
constexpr CarryResult subtract_with_borrow(u32 a, u32 b, u32 c) {
  const u64 d = u64{a} - b - c;  // modulo 2^64: negative iff bit 63 set
  return {static_cast<u32>(d), static_cast<u32>(d >> 63)};
}

/// The 96-bit bignum accumulator as three little-endian 32-bit limbs.
struct Acc96 {
  u32 limb[3] = {0, 0, 0};
  friend constexpr bool operator==(const Acc96&, const Acc96&) = default;
};
/// bn.mac: acc <- (acc + a*b) mod 2^96.
constexpr Acc96 multiply_accumulate(Acc96 acc, u32 a, u32 b) {
  const u64 p = u64{a} * b;
  const u64 s0 = u64{acc.limb[0]} + static_cast<u32>(p);
  const u64 s1 = u64{acc.limb[1]} + (p >> 32) + (s0 >> 32);
  const u32 s2 = acc.limb[2] + static_cast<u32>(s1 >> 32);
  return Acc96{{static_cast<u32>(s0), static_cast<u32>(s1), s2}};
}
/// bn.accrd: acc >> 32 (logical); the rd value is acc.limb[0].
constexpr Acc96 accumulator_shift(Acc96 acc) { return Acc96{{acc.limb[1], acc.limb[2], 0}}; }

}  // namespace lockstep::ref::sem
