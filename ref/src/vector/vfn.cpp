// VFN: table functions (docs/spec/vector/vfn.md; f3 = 5).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

enum Fn : u32 { kRsqrt = 0, kRecip = 1, kSilu = 2 };

// vfn.md §1: the index of the highest set bit of u >= 1.
unsigned floor_log2(i64 u) { return 63u - static_cast<unsigned>(__builtin_clzll(static_cast<u64>(u))); }

// RSQRT: 1/sqrt in Q16.16.  u = max(x, 1), k = floor_log2(u), k2 = k - (k mod 2),
// ix = u >> (k2 - 6) or u << (6 - k2) (64 <= ix < 256), z = rnd(RSQ[ix], k2/2).
std::int32_t rsqrt(std::int32_t x) {
  const i64 u = std::max<i64>(x, 1);
  const unsigned k = floor_log2(u), k2 = k - (k % 2);
  const i64 ix = k2 >= 6 ? u >> (k2 - 6) : u << (6 - k2);
  return static_cast<std::int32_t>(rnd(vector_tables().rsq[static_cast<std::size_t>(ix)], k2 / 2));
}
// RECIP: 1/x in Q16.16.  u = max(x, 1), k = floor_log2(u), ix = u >> (k - 7) or u << (7 - k)
// (128 <= ix < 256), z = sat32(RCP[ix] * 2^(2-k)) if k <= 2, else rnd(RCP[ix], k - 2).
std::int32_t recip(std::int32_t x) {
  const i64 u = std::max<i64>(x, 1);
  const unsigned k = floor_log2(u);
  const i64 ix = k >= 7 ? u >> (k - 7) : u << (7 - k);
  const i64 r = vector_tables().rcp[static_cast<std::size_t>(ix)];
  return k <= 2 ? sat32(r * pow2(2 - k)) : static_cast<std::int32_t>(rnd(r, k - 2));
}
// SILU: x * sigmoid(x) in Q16.16.  ix = min(1023, max(0, rnd(x, 10) + 512)),
// z = sat32(rnd(x * SIG[ix], 16)).
std::int32_t silu(std::int32_t x) {
  const i64 ix = std::min<i64>(1023, std::max<i64>(0, rnd(x, 10) + 512));
  return sat32(rnd(i64{x} * vector_tables().sig[static_cast<std::size_t>(ix)], 16));
}

// vfn.md §1.  f7: FN (0 RSQRT, 1 RECIP, 2 SILU; others invalid).
// Operands: A = dst, B = src, N = n (1..1024); z_i = f(VR[src + i]), VR[dst + i] <- z_i.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const u32 fn = o.f7;
  const i64 dst = o.A(), src = o.B(), n = o.N();
  Traps t;  // vfn.md §3
  t.check(fn > kSilu || o.rd != 0, VecTrap::kField);
  t.check(!Span{src, n}.inside() || !Span{dst, n}.inside(), VecTrap::kVreg);
  t.check(n < 1 || n > 1024, VecTrap::kLen);
  t.check(Span{dst, n}.conflicts(Span{src, n}), VecTrap::kOverlap);
  if (t.code) return t.code;
  std::vector<std::int32_t> z(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) {
    const std::int32_t x = s.vr[static_cast<std::size_t>(src + i)];
    z[static_cast<std::size_t>(i)] = fn == kRsqrt ? rsqrt(x) : fn == kRecip ? recip(x) : silu(x);
  }
  word_stream(z, out.tokens);  // vfn.md §2: the word stream of e = i, value z_i
  std::copy(z.begin(), z.end(), s.vr.begin() + dst);
  return 0;
}

// "vfn.rsqrt", "vfn.recip", "vfn.silu".
std::string disasm(u32 f7) {
  static const char* kFn[] = {"vfn.rsqrt", "vfn.recip", "vfn.silu"};
  return f7 > kSilu ? bad_f7("vfn", f7) : kFn[f7];
}

}  // namespace

const VectorOpRow kVfnRow{5, "vfn", execute, disasm};

}  // namespace lockstep::ref::vec
