// VQ: quantise a register span (docs/spec/vector/vq.md; f3 = 2).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

enum Target : u32 { kAct = 0, kKRow = 1, kVRow = 2 };

// vq.md §1: E(a) = the smallest e >= 0 with rnd(a, e) <= 127 (0..25 for a <= 2^31).
unsigned exponent_for(i64 a) {
  unsigned e = 0;
  while (rnd(a, e) > 127) ++e;
  return e;
}

// vq.md §1.  f7: bits 1..0 TARGET (0 ACT, 1 K row, 2 V row; 3 invalid), bits 6..2 zero.
// Operands: A = destination (ACT block b0, or cache row), B = src, N = n.
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const u32 target = o.f7 & 3;
  const i64 dest = o.A(), src = o.B(), n = o.N();
  Traps t;  // vq.md §3
  t.check((o.f7 >> 2) != 0 || target == 3 || o.rd != 0, VecTrap::kField);
  t.check(!Span{src, n}.inside(), VecTrap::kVreg);
  if (target == kAct) {
    t.check(n < 1 || n > 384, VecTrap::kLen);
    t.check(dest + ceil64(n) > kActBlocks, VecTrap::kAct);
  } else {
    t.check(n != 32, VecTrap::kLen);
    t.check(dest >= kCacheRows, VecTrap::kKv);
  }
  if (t.code) return t.code;

  // Group k (sources 64k <= i < min(n, 64k + 64)) is quantised with its own shift:
  //   e_k = E(max_{i in k} |x_i|),  q_i = rnd(x_i, e_k)   (-127..127, no saturation needed).
  // Tokens (vq.md §2): per group VQE((k << 5) | e_k), then the values the group writes (ACT:
  // all 64 of block b0 + k, padding zeros included; K/V: the 32 of the row) as one int8
  // stream over the instruction, j = 64k + i.
  const std::int32_t* x = &s.vr[static_cast<std::size_t>(src)];
  const i64 width = target == kAct ? 64 : 32;  // ACT: whole blocks with zero padding; K/V: one row
  std::vector<std::int8_t> q(static_cast<std::size_t>(width * ceil64(n)), 0);
  std::vector<std::uint8_t> shifts(static_cast<std::size_t>(ceil64(n)));
  for (i64 k = 0; k < ceil64(n); ++k) {
    const i64 end = std::min(n, 64 * k + 64);
    i64 amax = 0;
    for (i64 i = 64 * k; i < end; ++i) amax = std::max<i64>(amax, x[i] < 0 ? -i64{x[i]} : x[i]);
    const unsigned e = exponent_for(amax);
    shifts[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(e);
    for (i64 i = 64 * k; i < end; ++i) q[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(rnd(x[i], e));
    put(out.tokens, Kind::VQE, static_cast<u32>(k << 5) | e);
    for (i64 i = 0; i < width; ++i) int8_element(out.tokens, 64 * k + i, q[static_cast<std::size_t>(64 * k + i)]);
  }
  if (target == kAct) {  // ACT[64(b0+k) + i'] <- q (0 padding), ASH[b0 + k] <- e_k
    std::copy(q.begin(), q.end(), s.act.begin() + 64 * dest);
    for (i64 k = 0; k < ceil64(n); ++k) s.ash[static_cast<std::size_t>(dest + k)] = shifts[static_cast<std::size_t>(k)];
  } else {  // KC[row] (VC[row]) <- q, KSH[row] (VSH[row]) <- e_0
    auto& cache = target == kKRow ? s.kc : s.vc;
    std::copy(q.begin(), q.end(), cache.begin() + kCacheRowLen * dest);
    (target == kKRow ? s.ksh : s.vsh)[static_cast<std::size_t>(dest)] = shifts[0];
  }
  return 0;
}

// "vq.act", "vq.k", "vq.v".
std::string disasm(u32 f7) {
  static const char* kTarget[] = {"vq.act", "vq.k", "vq.v"};
  if ((f7 >> 2) || (f7 & 3) == 3) return bad_f7("vq", f7);
  return kTarget[f7 & 3];
}

}  // namespace

const VectorOpRow kVqRow{2, "vq", execute, disasm};

}  // namespace lockstep::ref::vec
