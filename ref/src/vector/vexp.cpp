// VEXP: softmax numerators (docs/spec/vector/vexp.md; f3 = 3).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

// vexp.md §1.  f7: bits 2..0 G - 1 (1..8 groups), bits 6..3 zero.
// Operands: A = dst, B = src, C = sums, N = T (1..64).  Group g < G is the span
// src + 64g .. src + 64g + T - 1.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const i64 G = (o.f7 & 7) + 1;
  const i64 dst = o.A(), src = o.B(), sums = o.C(), T = o.N();
  const i64 span = 64 * (G - 1) + T;
  Traps t;  // vexp.md §3
  t.check((o.f7 >> 3) != 0 || o.rd != 0, VecTrap::kField);
  t.check(!Span{src, span}.inside() || !Span{dst, span}.inside() || !Span{sums, G}.inside(), VecTrap::kVreg);
  t.check(T < 1 || T > 64, VecTrap::kLen);
  bool overlap = false;
  for (i64 g1 = 0; g1 < G; ++g1) {
    const Span d{dst + 64 * g1, T}, sr{src + 64 * g1, T};
    overlap = overlap || Span{sums, G}.shares(d) || Span{sums, G}.shares(sr);
    for (i64 g2 = 0; g2 < G && dst != src; ++g2) overlap = overlap || d.shares(Span{src + 64 * g2, T});
  }
  t.check(overlap, VecTrap::kOverlap);
  if (t.code) return t.code;

  //   m_g = max_t s_{g,t};  i_{g,t} = min(1023, rnd(m_g - s_{g,t}, 10));  p_{g,t} = EXP[i_{g,t}]
  //   S_g = sum_t p_{g,t};  VR[dst + 64g + t] <- p_{g,t};  VR[sums + g] <- S_g
  // Tokens (vexp.md §2): one word stream.  Per group g: VXM0..VXM3 (bytes of m_g), then
  // elements e = 64g + t (p_{g,t}); then elements e = 512 + g (S_g).
  const auto& EXP = vector_tables().exp;
  std::vector<std::int32_t> p(static_cast<std::size_t>(64 * G), 0);
  std::vector<i64> S(static_cast<std::size_t>(G), 0);
  WordStream ws(out.tokens);
  for (i64 g = 0; g < G; ++g) {
    const std::int32_t* sc = &s.vr[static_cast<std::size_t>(src + 64 * g)];
    const std::int32_t m = *std::max_element(sc, sc + T);
    for (unsigned b = 0; b < 4; ++b) put(out.tokens, kind_plus(Kind::VXM0, b), byte_of(m, b));
    for (i64 tt = 0; tt < T; ++tt) {
      const i64 i = std::min<i64>(1023, rnd(i64{m} - sc[tt], 10));  // m - s is 0 .. 2^32-1
      p[static_cast<std::size_t>(64 * g + tt)] = EXP[static_cast<std::size_t>(i)];
      S[static_cast<std::size_t>(g)] += EXP[static_cast<std::size_t>(i)];
      ws.element(64 * g + tt, EXP[static_cast<std::size_t>(i)]);
    }
  }
  for (i64 g = 0; g < G; ++g) ws.element(512 + g, static_cast<std::int32_t>(S[static_cast<std::size_t>(g)]));
  for (i64 g = 0; g < G; ++g) {
    for (i64 tt = 0; tt < T; ++tt) s.vr[static_cast<std::size_t>(dst + 64 * g + tt)] = p[static_cast<std::size_t>(64 * g + tt)];
    s.vr[static_cast<std::size_t>(sums + g)] = static_cast<std::int32_t>(S[static_cast<std::size_t>(g)]);
  }
  return 0;
}

// "vexp.g1" .. "vexp.g8".
std::string disasm(u32 f7) {
  if (f7 >> 3) return bad_f7("vexp", f7);
  return "vexp.g" + std::to_string((f7 & 7) + 1);
}

}  // namespace

const VectorOpRow kVexpRow{3, "vexp", execute, disasm};

}  // namespace lockstep::ref::vec
