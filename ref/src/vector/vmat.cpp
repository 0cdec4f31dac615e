// VMAT: int8 activations x int4 row-chunks (docs/spec/vector/vmat.md; f3 = 0).
#include "unit.h"

namespace lockstep::ref::vec {
namespace {

// vmat.md §1.  f7: bits 2..0 K (1..6 chunks per row), bit 3 ARGMAX, bits 6..4 zero.
// Operands: A = dst, B = b0 (first ACT block), C = c0 (first chunk), N = R (rows).
u32 execute(VectorState& s, const VectorOperands& o, std::span<const std::uint8_t>, VectorOutput& out) {
  const i64 K = o.f7 & 7, argmax = (o.f7 >> 3) & 1;
  const i64 dst = o.A(), b0 = o.B(), c0 = o.C(), R = o.N();
  Traps t;  // vmat.md §3
  t.check(K == 0 || K == 7 || (o.f7 >> 4) != 0, VecTrap::kField);
  t.check(!argmax && o.rd != 0, VecTrap::kField);
  t.check(!argmax && !Span{dst, R}.inside(), VecTrap::kVreg);
  t.check(R == 0, VecTrap::kLen);
  t.check(b0 + K > kActBlocks, VecTrap::kAct);
  t.check(c0 + R * K > kWChunks, VecTrap::kWmem);
  if (t.code) return t.code;

  // Row r is the K chunks c = c0 + r*K + j; chunk j multiplies ACT block b0 + j:
  //   acc_{r,j} = sum_i ACT[64(b0+j) + i] * W[c][i]                          |acc| <= 2^16
  //   y_r = sat32(rnd(sum_j acc_{r,j} * WSCALE[c] * 2^ASH[b0+j], 16))      |sum| < 2^60
  // Tokens (vmat.md §2): per row VMH(r >> 8) at r = 256, 512, ...; VMC_j(r & 0xFF) per chunk;
  // then the bytes of y_r (VY0..VY3).  Argmax mode: byte 3 is VYN3 when y_r is a new maximum
  // (greater than every earlier row's; always row 0); the final W(r*) is the machine's.
  std::vector<std::int32_t> y(static_cast<std::size_t>(R));
  std::int32_t running_max = 0;
  i64 best = 0;  // the first row reaching the running maximum: the smallest r with y_r = max
  for (i64 r = 0; r < R; ++r) {
    if (r > 0 && (r & 0xff) == 0) put(out.tokens, Kind::VMH, static_cast<u32>(r >> 8));
    i64 sum = 0;
    for (i64 j = 0; j < K; ++j) {
      const i64 c = c0 + r * K + j;
      const std::int8_t* act = &s.act[static_cast<std::size_t>(64 * (b0 + j))];
      const std::int8_t* w = &s.wmem[static_cast<std::size_t>(64 * c)];
      i64 acc = 0;
      for (int i = 0; i < 64; ++i) acc += i64{act[i]} * w[i];
      put(out.tokens, kind_plus(Kind::VMC0, j), static_cast<u32>(r & 0xff));
      sum += acc * s.wscale[static_cast<std::size_t>(c)] * pow2(s.ash[static_cast<std::size_t>(b0 + j)]);
    }
    const std::int32_t yr = sat32(rnd(sum, 16));
    y[static_cast<std::size_t>(r)] = yr;
    const bool new_max = r == 0 || yr > running_max;
    if (new_max) {
      running_max = yr;
      best = r;
    }
    for (unsigned m = 0; m < 3; ++m) put(out.tokens, kind_plus(Kind::VY0, m), byte_of(yr, m));
    put(out.tokens, argmax && new_max ? Kind::VYN3 : Kind::VY3, byte_of(yr, 3));
  }
  if (argmax) {  // X(rd) <- r*, the smallest r with y_r = max y (ties: the lowest index)
    out.writes_rd = true;
    out.rd_value = static_cast<u32>(best);
  } else {  // VR[dst + r] <- y_r
    std::copy(y.begin(), y.end(), s.vr.begin() + dst);
  }
  return 0;
}

// "vmat.k3", "vmat.k1.argmax".
std::string disasm(u32 f7) {
  const u32 K = f7 & 7;
  if (K == 0 || K == 7 || (f7 >> 4)) return bad_f7("vmat", f7);
  return "vmat.k" + std::to_string(K) + ((f7 & 8) ? ".argmax" : "");
}

}  // namespace

const VectorOpRow kVmatRow{0, "vmat", execute, disasm};

}  // namespace lockstep::ref::vec
