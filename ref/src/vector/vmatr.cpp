// VMATR: attention over cache rows (docs/spec/vector/vmatr.md; f3 = 1).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

// vmatr.md §1.  f7: bit 0 VMODE (0: K scores, 1: V sums), bits 6..1 zero.
// Operands: A = dst, B = src, C = r0 (first cache row), N = T (positions, 1..64).  Query head h
// (0..7) reads KV head h/2, cache elements 8(h/2) .. 8(h/2) + 7.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const bool vmode = o.f7 & 1;
  const i64 dst = o.A(), src = o.B(), r0 = o.C(), T = o.N();
  Traps t;  // vmatr.md §3
  t.check((o.f7 >> 1) != 0 || o.rd != 0, VecTrap::kField);
  if (!vmode) {
    t.check(!Span{dst, 448 + T}.inside(), VecTrap::kVreg);
    t.check(src > 5, VecTrap::kAct);
  } else {
    t.check(!Span{src, 448 + T}.inside() || !Span{dst, 64}.inside(), VecTrap::kVreg);
    for (i64 h = 0; h < 8; ++h) t.check(Span{dst, 64}.shares(Span{src + 64 * h, T}), VecTrap::kOverlap);
  }
  t.check(T < 1 || T > 64, VecTrap::kLen);
  t.check(r0 + T > kCacheRows, VecTrap::kKv);
  if (t.code) return t.code;

  if (!vmode) {
    // K mode, scores, head-major:
    //   s_{h,t} = sum_d ACT[64 src + 8h + d] * KC[r0+t][8(h/2) + d]             |s| <= 2^17
    //   e = ASH[src] + KSH[r0+t];  VR[dst + 64h + t] <- sat32(s * 2^(e-16)) if e >= 16,
    //   else sat32(rnd(s, 16 - e)).
    // Tokens: the word stream of e = 8t + h, value VR[dst + 64h + t].
    WordStream ws(out.tokens);
    for (i64 tt = 0; tt < T; ++tt) {
      const std::int8_t* krow = &s.kc[static_cast<std::size_t>(kCacheRowLen * (r0 + tt))];
      const unsigned e = s.ash[static_cast<std::size_t>(src)] + s.ksh[static_cast<std::size_t>(r0 + tt)];
      for (i64 h = 0; h < 8; ++h) {
        i64 sc = 0;
        for (i64 d = 0; d < 8; ++d) {
          sc += i64{s.act[static_cast<std::size_t>(64 * src + 8 * h + d)]} * krow[8 * (h / 2) + d];
        }
        const std::int32_t v = sat32(e >= 16 ? sc * pow2(e - 16) : rnd(sc, 16 - e));
        s.vr[static_cast<std::size_t>(dst + 64 * h + tt)] = v;
        ws.element(8 * tt + h, v);
      }
    }
    return 0;
  }
  // V mode, weighted sums of V rows by clamped probabilities p_{h,t} = clamp(VR[src + 64h + t],
  // 0, 65536):
  //   o_{h,d} = sum_t p_{h,t} * VC[r0+t][8(h/2) + d] * 2^VSH[r0+t]     |term| <= 2^48
  //   VR[dst + 8h + d] <- sat32(rnd(o_{h,d}, 16)), after all positions are read.
  // Tokens: VMV(t) per position, then the word stream of the 64 elements e = 8h + d.
  i64 acc[8][8] = {};
  for (i64 tt = 0; tt < T; ++tt) {
    const std::int8_t* vrow = &s.vc[static_cast<std::size_t>(kCacheRowLen * (r0 + tt))];
    const i64 scale = pow2(s.vsh[static_cast<std::size_t>(r0 + tt)]);
    for (i64 h = 0; h < 8; ++h) {
      const i64 p = std::clamp<i64>(s.vr[static_cast<std::size_t>(src + 64 * h + tt)], 0, 65536);
      for (i64 d = 0; d < 8; ++d) acc[h][d] += p * vrow[8 * (h / 2) + d] * scale;
    }
    put(out.tokens, Kind::VMV, static_cast<u32>(tt));
  }
  WordStream ws(out.tokens);
  for (i64 h = 0; h < 8; ++h) {
    for (i64 d = 0; d < 8; ++d) {
      const std::int32_t z = sat32(rnd(acc[h][d], 16));
      s.vr[static_cast<std::size_t>(dst + 8 * h + d)] = z;
      ws.element(8 * h + d, z);
    }
  }
  return 0;
}

// "vmatr.k", "vmatr.v".
std::string disasm(u32 f7) {
  if (f7 >> 1) return bad_f7("vmatr", f7);
  return (f7 & 1) ? "vmatr.v" : "vmatr.k";
}

}  // namespace

const VectorOpRow kVmatrRow{1, "vmatr", execute, disasm};

}  // namespace lockstep::ref::vec
