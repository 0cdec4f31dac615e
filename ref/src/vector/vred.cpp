// VRED: reductions (docs/spec/vector/vred.md; f3 = 6).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

enum Mode : u32 { kSumsq = 0, kSum = 1, kMax = 2 };

// vred.md §1.  f7: bits 1..0 MODE (0 SUMSQ, 1 SUM, 2 MAX; 3 invalid), bits 6..2 SH (0..31;
// 0 for MAX).  Operands: A = dst, B = src, N = n (1..1024); x_i = VR[src + i], VR[dst] <- z.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const u32 mode = o.f7 & 3, SH = o.f7 >> 2;
  const i64 dst = o.A(), src = o.B(), n = o.N();
  Traps t;  // vred.md §3
  t.check(mode == 3 || (mode == kMax && SH != 0) || o.rd != 0, VecTrap::kField);
  t.check(!Span{src, n}.inside() || !Span{dst, 1}.inside(), VecTrap::kVreg);
  t.check(n < 1 || n > 1024, VecTrap::kLen);
  if (t.code) return t.code;
  const std::int32_t* x = &s.vr[static_cast<std::size_t>(src)];
  // SUMSQ: acc = sum x_i^2 (<= 2^72), z = sat32(rnd(acc, 16 + SH)); SUM: acc = sum x_i
  // (|acc| <= 2^41), z = sat32(rnd(acc, SH)); MAX: z = max x_i.
  // Tokens (vred.md §2): one slot per source group k (its contribution: the group's sum of
  // squares, sum or maximum), token VRD(k); the result combines the slots.  Then the word
  // stream of one element e = 0, value z.
  i128 acc = mode == kMax ? i128{x[0]} : 0;
  for (i64 k = 0; k < ceil64(n); ++k) {
    i128 part = mode == kMax ? i128{x[64 * k]} : 0;
    for (i64 i = 64 * k; i < std::min(n, 64 * k + 64); ++i) {
      switch (mode) {
        case kSumsq: part += i128{i64{x[i]} * x[i]}; break;
        case kSum: part += x[i]; break;
        default: part = std::max<i128>(part, x[i]); break;
      }
    }
    acc = mode == kMax ? std::max(acc, part) : acc + part;
    put(out.tokens, Kind::VRD, static_cast<u32>(k));
  }
  const std::int32_t z = mode == kSumsq ? sat32(rnd128(acc, 16 + SH))
                         : mode == kSum ? sat32(rnd128(acc, SH))
                                        : static_cast<std::int32_t>(acc);
  s.vr[static_cast<std::size_t>(dst)] = z;
  WordStream(out.tokens).element(0, z);
  return 0;
}

// "vred.sumsq.sh6", "vred.sum.sh0", "vred.max".
std::string disasm(u32 f7) {
  static const char* kMode[] = {"vred.sumsq", "vred.sum", "vred.max"};
  const u32 mode = f7 & 3, sh = f7 >> 2;
  if (mode == 3 || (mode == kMax && sh)) return bad_f7("vred", f7);
  return mode == kMax ? kMode[kMax] : std::string(kMode[mode]) + ".sh" + std::to_string(sh);
}

}  // namespace

const VectorOpRow kVredRow{6, "vred", execute, disasm};

}  // namespace lockstep::ref::vec
