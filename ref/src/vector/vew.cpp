// VEW: element-wise (docs/spec/vector/vew.md; f3 = 4).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

enum Mode : u32 { kAdd = 0, kMul = 1, kMuls = 2, kRot = 3 };

// vew.md §1.  f7: bits 1..0 MODE, bits 4..2 GS (MULS only: 0..6; 0 otherwise), bits 6..5 zero.
// Operands: A = dst, B = a (first source), C = b (second source, scalar base or position),
// N = n (1..1024); x_i = VR[a + i], VR[dst + i] <- z_i.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const u32 mode = o.f7 & 3, GS = (o.f7 >> 2) & 7;
  const i64 dst = o.A(), a = o.B(), b = o.C(), n = o.N();
  const Span dsp{dst, n}, asp{a, n};
  const Span bsp = mode == kMuls ? Span{b, ((n - 1) >> GS) + 1} : Span{b, n};
  Traps t;  // vew.md §3
  t.check((o.f7 >> 5) != 0 || o.rd != 0 || (mode == kMuls ? GS == 7 : GS != 0), VecTrap::kField);
  t.check(!asp.inside() || !dsp.inside() || (mode != kRot && !bsp.inside()), VecTrap::kVreg);
  t.check(n < 1 || n > 1024 || (mode == kRot && n % 2 != 0), VecTrap::kLen);
  t.check(dsp.conflicts(asp) || ((mode == kAdd || mode == kMul) && dsp.conflicts(bsp)) ||
              (mode == kMuls && bsp.shares(dsp)),
          VecTrap::kOverlap);
  t.check(mode == kRot && b >= 64, VecTrap::kPos);
  if (t.code) return t.code;

  const auto& tab = vector_tables();
  std::vector<std::int32_t> z(static_cast<std::size_t>(n));
  const std::int32_t* x = &s.vr[static_cast<std::size_t>(a)];
  for (i64 i = 0; i < n; ++i) {
    switch (mode) {
      case kAdd: z[static_cast<std::size_t>(i)] = sat32(i64{x[i]} + s.vr[static_cast<std::size_t>(b + i)]); break;
      case kMul: z[static_cast<std::size_t>(i)] = sat32(rnd(i64{x[i]} * s.vr[static_cast<std::size_t>(b + i)], 16)); break;
      case kMuls: z[static_cast<std::size_t>(i)] = sat32(rnd(i64{x[i]} * s.vr[static_cast<std::size_t>(b + (i >> GS))], 16)); break;
      default: break;
    }
  }
  if (mode == kRot) {  // RoPE pairs k < n/2: j = k mod 4, position p = b, (u, v) = (x_2k, x_2k+1)
    for (i64 k = 0; k < n / 2; ++k) {
      const i64 c = tab.cos[static_cast<std::size_t>(b)][static_cast<std::size_t>(k % 4)];
      const i64 sn = tab.sin[static_cast<std::size_t>(b)][static_cast<std::size_t>(k % 4)];
      const i64 u = x[2 * k], v = x[2 * k + 1];
      z[static_cast<std::size_t>(2 * k)] = sat32(rnd(u * c - v * sn, 16));
      z[static_cast<std::size_t>(2 * k + 1)] = sat32(rnd(u * sn + v * c, 16));
    }
  }
  word_stream(z, out.tokens);  // vew.md §2: the word stream of e = i, value z_i
  std::copy(z.begin(), z.end(), s.vr.begin() + dst);
  return 0;
}

// "vew.add", "vew.mul", "vew.muls.gs6", "vew.rot".
std::string disasm(u32 f7) {
  static const char* kMode[] = {"vew.add", "vew.mul", "vew.muls", "vew.rot"};
  const u32 mode = f7 & 3, gs = (f7 >> 2) & 7;
  if ((f7 >> 5) || (mode == kMuls ? gs == 7 : gs != 0)) return bad_f7("vew", f7);
  return mode == kMuls ? "vew.muls.gs" + std::to_string(gs) : kMode[mode];
}

}  // namespace

const VectorOpRow kVewRow{4, "vew", execute, disasm};

}  // namespace lockstep::ref::vec
