// The vector unit (vector.md).  Every formula is exact: 64-bit signed
// intermediates (128-bit for VRED SUMSQ) within the bounds §4 states, so
// no value ever wraps; rnd() is round half up (§1.2), sat32 clamps.
// Tokens are trace-v3 (§5): every value an instruction writes goes on the bus
// (word streams, int8 streams, VMAT's row bytes, VEXP's group maxima), each
// token carrying its micro-step position.
#include "lockstep/ref/vector.h"

#include <elf.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "lockstep/format/tokens.h"
#include "lockstep/ref/machine.h"

namespace lockstep::ref {
namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using i64 = std::int64_t;
__extension__ using i128 = __int128;
using format::Kind;
using format::token_id;

// §1.2: rnd(x, s) = floor((x + 2^(s-1)) / 2^s) (arithmetic shift floors toward -inf).
constexpr i64 rnd(i64 x, unsigned s) { return s == 0 ? x : (x + (i64{1} << (s - 1))) >> s; }
constexpr i128 rnd128(i128 x, unsigned s) { return s == 0 ? x : (x + (i128{1} << (s - 1))) >> s; }
constexpr std::int32_t sat32(i128 x) {
  return static_cast<std::int32_t>(std::clamp<i128>(x, -(i128{1} << 31), (i128{1} << 31) - 1));
}
// §5: "byte m of a value z" = lo8(floor(z / 2^(8m))), the byte of z's 32-bit two's complement.
constexpr u32 byte_of(std::int32_t z, unsigned m) { return (static_cast<u32>(z) >> (8 * m)) & 0xff; }
constexpr i64 pow2(unsigned k) { return i64{1} << k; }
constexpr i64 ceil64(i64 n) { return (n + 63) / 64; }

// A span [start, start + len) of VR words (§6).
struct Span {
  i64 start, len;
  bool inside() const { return start + len <= kVrWords; }
  bool shares(const Span& o) const {
    return len > 0 && o.len > 0 && start < o.start + o.len && o.start < start + len;
  }
  // "conflict": share a word and are not identical (same first word and count).
  bool conflicts(const Span& o) const { return shares(o) && !(start == o.start && len == o.len); }
};

// The lowest applicable trap code (§6: "raises the lowest applicable code").
struct Traps {
  u32 code = 0;
  void check(bool condition, u32 c) {
    if (condition && (code == 0 || c < code)) code = c;
  }
  void check(bool condition, VecTrap t) { check(condition, static_cast<u32>(t)); }
};

// §4.0 operand fields.
struct Fields {
  i64 A, B, C, N;
  Fields(u32 x1, u32 x2) : A(x1 & 0xffff), B(x1 >> 16), C(x2 & 0xffff), N(x2 >> 16) {}
};

void put(std::vector<u32>& tokens, Kind k, u32 payload) { tokens.push_back(token_id(k, payload)); }
// Kind `base + i` (VMC_j, VY_m, VLB_m, VW_qm, VXM_m are consecutive kind numbers).
Kind kind_plus(Kind base, i64 i) { return static_cast<Kind>(static_cast<u32>(base) + static_cast<u32>(i)); }

// §5 word stream: element e (increasing along the stream, 0 <= e < 1024) with value z is
// VWG(e >> 2) when e is the stream's first element or e & 3 = 0, then VW_{q0} .. VW_{q3}
// (q = e & 3, kind 61 + 4q + m carrying byte m of z).
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

// §5 int8 stream: element j (consecutive from 0) with value v is VLG(j >> 2) when j & 3 = 0,
// then VLB_{j & 3}(lo8(v)).
void int8_element(std::vector<u32>& tokens, i64 j, i64 v) {
  if ((j & 3) == 0) put(tokens, Kind::VLG, static_cast<u32>(j >> 2));
  put(tokens, kind_plus(Kind::VLB0, j & 3), static_cast<u32>(v) & 0xff);
}

// §4.3: E(a) = the smallest e >= 0 with rnd(a, e) <= 127.
unsigned exponent_for(i64 a) {
  unsigned e = 0;
  while (rnd(a, e) > 127) ++e;
  return e;
}

unsigned floor_log2(i64 u) { return 63u - static_cast<unsigned>(__builtin_clzll(static_cast<u64>(u))); }

// ------------------------------------------------------------------ §4.1 VMAT
u32 vmat(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens, bool& writes_rd,
         u32& rd_value) {
  const i64 K = f7 & 7, argmax = (f7 >> 3) & 1;
  const i64 dst = f.A, b0 = f.B, c0 = f.C, R = f.N;
  Traps t;
  t.check(K == 0 || K == 7 || (f7 >> 4) != 0, VecTrap::kField);
  t.check(!argmax && rd != 0, VecTrap::kField);
  t.check(!argmax && !Span{dst, R}.inside(), VecTrap::kVreg);
  t.check(R == 0, VecTrap::kLen);
  t.check(b0 + K > kActBlocks, VecTrap::kAct);
  t.check(c0 + R * K > kWChunks, VecTrap::kWmem);
  if (t.code) return t.code;

  // §5: per row r: VMH(r >> 8) at r = 256, 512, ...; VMC_j(r & 0xFF) per chunk; then the bytes
  // of y_r (VY0..VY3).  Argmax mode: byte 3 is VYN3 when y_r is a new maximum (greater than
  // every earlier row's; always row 0); the final W(r*) is the caller's (machine.cpp).
  const auto& tab = s;
  std::vector<std::int32_t> y(static_cast<std::size_t>(R));
  std::int32_t running_max = 0;
  i64 best = 0;  // the first row reaching the running maximum: the smallest r with y_r = max (§4.1)
  for (i64 r = 0; r < R; ++r) {
    if (r > 0 && (r & 0xff) == 0) put(tokens, Kind::VMH, static_cast<u32>(r >> 8));  // §5: high part of r
    i64 sum = 0;
    for (i64 j = 0; j < K; ++j) {
      const i64 c = c0 + r * K + j;  // rowc(r, j)
      const std::int8_t* act = &tab.act[static_cast<std::size_t>(64 * (b0 + j))];
      const std::int8_t* w = &tab.wmem[static_cast<std::size_t>(64 * c)];
      i64 acc = 0;  // |acc| <= 2^16
      for (int i = 0; i < 64; ++i) acc += i64{act[i]} * w[i];
      put(tokens, kind_plus(Kind::VMC0, j), static_cast<u32>(r & 0xff));
      sum += acc * tab.wscale[static_cast<std::size_t>(c)] * pow2(tab.ash[static_cast<std::size_t>(b0 + j)]);
    }
    const std::int32_t yr = sat32(rnd(sum, 16));
    y[static_cast<std::size_t>(r)] = yr;
    const bool new_max = r == 0 || yr > running_max;
    if (new_max) {
      running_max = yr;
      best = r;
    }
    for (unsigned m = 0; m < 3; ++m) put(tokens, kind_plus(Kind::VY0, m), byte_of(yr, m));
    put(tokens, argmax && new_max ? Kind::VYN3 : Kind::VY3, byte_of(yr, 3));
  }
  if (argmax) {
    writes_rd = true;
    rd_value = static_cast<u32>(best);
  } else {
    std::copy(y.begin(), y.end(), s.vr.begin() + dst);
  }
  return 0;
}

// ------------------------------------------------------------------ §4.2 VMATR
u32 vmatr(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens) {
  const bool vmode = f7 & 1;
  const i64 dst = f.A, src = f.B, r0 = f.C, T = f.N;
  Traps t;
  t.check((f7 >> 1) != 0 || rd != 0, VecTrap::kField);
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

  if (!vmode) {  // K mode: scores, head-major; §5: word stream of e = 8t + h, VR[dst + 64h + t]
    WordStream ws(tokens);
    for (i64 tt = 0; tt < T; ++tt) {
      const std::int8_t* krow = &s.kc[static_cast<std::size_t>(kCacheRowLen * (r0 + tt))];
      const unsigned e = s.ash[static_cast<std::size_t>(src)] + s.ksh[static_cast<std::size_t>(r0 + tt)];
      for (i64 h = 0; h < 8; ++h) {
        i64 sc = 0;  // |s| <= 2^17
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
  // V mode: weighted sums of V rows by clamped probabilities.  §5: VMV(t) per position, then
  // the word stream of the 64 elements e = 8h + d, value VR[dst + e].
  i64 o[8][8] = {};
  for (i64 tt = 0; tt < T; ++tt) {
    const std::int8_t* vrow = &s.vc[static_cast<std::size_t>(kCacheRowLen * (r0 + tt))];
    const i64 scale = pow2(s.vsh[static_cast<std::size_t>(r0 + tt)]);
    for (i64 h = 0; h < 8; ++h) {
      const i64 p = std::clamp<i64>(s.vr[static_cast<std::size_t>(src + 64 * h + tt)], 0, 65536);
      for (i64 d = 0; d < 8; ++d) o[h][d] += p * vrow[8 * (h / 2) + d] * scale;  // |term| <= 2^48
    }
    put(tokens, Kind::VMV, static_cast<u32>(tt));
  }
  WordStream ws(tokens);
  for (i64 h = 0; h < 8; ++h) {
    for (i64 d = 0; d < 8; ++d) {
      const std::int32_t z = sat32(rnd(o[h][d], 16));
      s.vr[static_cast<std::size_t>(dst + 8 * h + d)] = z;
      ws.element(8 * h + d, z);
    }
  }
  return 0;
}

// ------------------------------------------------------------------ §4.3 VQ
u32 vq(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens) {
  const u32 target = f7 & 3;
  const i64 dest = f.A, src = f.B, n = f.N;
  Traps t;
  t.check((f7 >> 2) != 0 || target == 3 || rd != 0, VecTrap::kField);
  t.check(!Span{src, n}.inside(), VecTrap::kVreg);
  if (target == 0) {
    t.check(n < 1 || n > 384, VecTrap::kLen);
    t.check(dest + ceil64(n) > kActBlocks, VecTrap::kAct);
  } else {
    t.check(n != 32, VecTrap::kLen);
    t.check(dest >= kCacheRows, VecTrap::kKv);
  }
  if (t.code) return t.code;

  // Each group k of up to 64 sources is quantised with its own shift e_k.  §5: per group
  // VQE((k << 5) | e_k), then the values the group writes (ACT: all 64 of block b0 + k, padding
  // zeros included; K/V: the 32 of the row) as one int8 stream over the instruction, j = 64k + i.
  const std::int32_t* x = &s.vr[static_cast<std::size_t>(src)];
  const i64 width = target == 0 ? 64 : 32;  // ACT: whole blocks with zero padding; K/V: one row
  std::vector<std::int8_t> q(static_cast<std::size_t>(width * ceil64(n)), 0);
  std::vector<std::uint8_t> shifts(static_cast<std::size_t>(ceil64(n)));
  for (i64 k = 0; k < ceil64(n); ++k) {
    const i64 end = std::min(n, 64 * k + 64);
    i64 amax = 0;
    for (i64 i = 64 * k; i < end; ++i) amax = std::max<i64>(amax, x[i] < 0 ? -i64{x[i]} : x[i]);
    const unsigned e = exponent_for(amax);
    shifts[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(e);
    for (i64 i = 64 * k; i < end; ++i) q[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(rnd(x[i], e));
    put(tokens, Kind::VQE, static_cast<u32>(k << 5) | e);
    for (i64 i = 0; i < width; ++i) int8_element(tokens, 64 * k + i, q[static_cast<std::size_t>(64 * k + i)]);
  }
  if (target == 0) {
    std::copy(q.begin(), q.end(), s.act.begin() + 64 * dest);
    for (i64 k = 0; k < ceil64(n); ++k) s.ash[static_cast<std::size_t>(dest + k)] = shifts[static_cast<std::size_t>(k)];
  } else {
    auto& cache = target == 1 ? s.kc : s.vc;
    std::copy(q.begin(), q.end(), cache.begin() + kCacheRowLen * dest);
    (target == 1 ? s.ksh : s.vsh)[static_cast<std::size_t>(dest)] = shifts[0];
  }
  return 0;
}

// ------------------------------------------------------------------ §4.4 VEXP
u32 vexp(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens) {
  const i64 G = (f7 & 7) + 1;
  const i64 dst = f.A, src = f.B, sums = f.C, T = f.N;
  const i64 span = 64 * (G - 1) + T;
  Traps t;
  t.check((f7 >> 3) != 0 || rd != 0, VecTrap::kField);
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

  // §5: one word stream.  Per group g: VXM0..VXM3 (bytes of m_g), then elements e = 64g + t
  // (p_{g,t}); then elements e = 512 + g (S_g).
  const auto& EXP = vector_tables().exp;
  std::vector<std::int32_t> p(static_cast<std::size_t>(64 * G), 0);
  std::vector<i64> S(static_cast<std::size_t>(G), 0);
  WordStream ws(tokens);
  for (i64 g = 0; g < G; ++g) {
    const std::int32_t* sc = &s.vr[static_cast<std::size_t>(src + 64 * g)];
    const std::int32_t m = *std::max_element(sc, sc + T);
    for (unsigned b = 0; b < 4; ++b) put(tokens, kind_plus(Kind::VXM0, b), byte_of(m, b));
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

// §5 (VEW, VFN): the word stream of the n elements e = i, value z_i.
void word_stream(const std::vector<std::int32_t>& z, std::vector<u32>& tokens) {
  WordStream ws(tokens);
  for (std::size_t i = 0; i < z.size(); ++i) ws.element(static_cast<i64>(i), z[i]);
}

// ------------------------------------------------------------------ §4.5 VEW
u32 vew(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens) {
  enum { kAdd = 0, kMul = 1, kMuls = 2, kRot = 3 };
  const u32 mode = f7 & 3, GS = (f7 >> 2) & 7;
  const i64 dst = f.A, a = f.B, b = f.C, n = f.N;
  const Span dsp{dst, n}, asp{a, n};
  const Span bsp = mode == kMuls ? Span{b, ((n - 1) >> GS) + 1} : Span{b, n};
  Traps t;
  t.check((f7 >> 5) != 0 || rd != 0 || (mode == kMuls ? GS == 7 : GS != 0), VecTrap::kField);
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
  if (mode == kRot) {  // RoPE pairs: j = k mod 4, position p = b
    for (i64 k = 0; k < n / 2; ++k) {
      const i64 c = tab.cos[static_cast<std::size_t>(b)][static_cast<std::size_t>(k % 4)];
      const i64 sn = tab.sin[static_cast<std::size_t>(b)][static_cast<std::size_t>(k % 4)];
      const i64 u = x[2 * k], v = x[2 * k + 1];
      z[static_cast<std::size_t>(2 * k)] = sat32(rnd(u * c - v * sn, 16));
      z[static_cast<std::size_t>(2 * k + 1)] = sat32(rnd(u * sn + v * c, 16));
    }
  }
  word_stream(z, tokens);
  std::copy(z.begin(), z.end(), s.vr.begin() + dst);
  return 0;
}

// ------------------------------------------------------------------ §4.6 VFN
std::int32_t rsqrt(std::int32_t x) {
  const i64 u = std::max<i64>(x, 1);
  const unsigned k = floor_log2(u), k2 = k - (k % 2);
  const i64 ix = k2 >= 6 ? u >> (k2 - 6) : u << (6 - k2);  // 64 <= ix < 256
  return static_cast<std::int32_t>(rnd(vector_tables().rsq[static_cast<std::size_t>(ix)], k2 / 2));
}
std::int32_t recip(std::int32_t x) {
  const i64 u = std::max<i64>(x, 1);
  const unsigned k = floor_log2(u);
  const i64 ix = k >= 7 ? u >> (k - 7) : u << (7 - k);  // 128 <= ix < 256
  const i64 r = vector_tables().rcp[static_cast<std::size_t>(ix)];
  return k <= 2 ? sat32(r * pow2(2 - k)) : static_cast<std::int32_t>(rnd(r, k - 2));
}
std::int32_t silu(std::int32_t x) {
  const i64 ix = std::min<i64>(1023, std::max<i64>(0, rnd(x, 10) + 512));
  return sat32(rnd(i64{x} * vector_tables().sig[static_cast<std::size_t>(ix)], 16));
}

u32 vfn(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens) {
  const u32 fn = f7;
  const i64 dst = f.A, src = f.B, n = f.N;
  Traps t;
  t.check(fn >= 3 || rd != 0, VecTrap::kField);
  t.check(!Span{src, n}.inside() || !Span{dst, n}.inside(), VecTrap::kVreg);
  t.check(n < 1 || n > 1024, VecTrap::kLen);
  t.check(Span{dst, n}.conflicts(Span{src, n}), VecTrap::kOverlap);
  if (t.code) return t.code;
  std::vector<std::int32_t> z(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) {
    const std::int32_t x = s.vr[static_cast<std::size_t>(src + i)];
    z[static_cast<std::size_t>(i)] = fn == 0 ? rsqrt(x) : fn == 1 ? recip(x) : silu(x);
  }
  word_stream(z, tokens);
  std::copy(z.begin(), z.end(), s.vr.begin() + dst);
  return 0;
}

// ------------------------------------------------------------------ §4.7 VRED
u32 vred(VectorState& s, u32 f7, unsigned rd, const Fields& f, std::vector<u32>& tokens) {
  enum { kSumsq = 0, kSum = 1, kMax = 2 };
  const u32 mode = f7 & 3, SH = f7 >> 2;
  const i64 dst = f.A, src = f.B, n = f.N;
  Traps t;
  t.check(mode == 3 || (mode == kMax && SH != 0) || rd != 0, VecTrap::kField);
  t.check(!Span{src, n}.inside() || !Span{dst, 1}.inside(), VecTrap::kVreg);
  t.check(n < 1 || n > 1024, VecTrap::kLen);
  if (t.code) return t.code;
  const std::int32_t* x = &s.vr[static_cast<std::size_t>(src)];
  // One slot per source group k (its contribution: the group's sum of squares, sum or maximum),
  // token VRD(k); the result combines the slots.  §5: then the word stream of one element
  // e = 0, value z.
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
    put(tokens, Kind::VRD, static_cast<u32>(k));
  }
  const std::int32_t z = mode == kSumsq ? sat32(rnd128(acc, 16 + SH))
                         : mode == kSum ? sat32(rnd128(acc, SH))
                                        : static_cast<std::int32_t>(acc);
  s.vr[static_cast<std::size_t>(dst)] = z;
  WordStream(tokens).element(0, z);
  return 0;
}

// ------------------------------------------------------------------ §4.8 VLD
u32 vld(VectorState& s, u32 f7, unsigned rd, u32 x1, u32 x2, std::span<const std::uint8_t> ram,
        std::vector<u32>& tokens) {
  const u32 a = x1;
  const i64 dst = x2 & 0xffff, n = x2 >> 16;
  Traps t;
  t.check(a % 4 != 0, static_cast<u32>(Trap::kLoadMisaligned));
  t.check(a < kRamBase || u64{a} + 4 + static_cast<u64>(n) > kRamEnd, static_cast<u32>(Trap::kLoadFault));
  t.check(f7 != 0 || rd != 0, VecTrap::kField);
  t.check(!Span{dst, n}.inside(), VecTrap::kVreg);
  t.check(n < 1 || n > 1024, VecTrap::kLen);
  if (t.code) return t.code;
  const std::uint8_t* rec = ram.data() + (a - kRamBase);
  std::int32_t M;
  std::memcpy(&M, rec, 4);
  // §5: the multiplier's bytes, then per element group g (elements 4g .. 4g+3) VLG(g) and its
  // bytes; VLB_m carries the byte at an address = m (mod 4) (a is a multiple of 4).
  for (i64 i = 0; i < 4; ++i) put(tokens, kind_plus(Kind::VLB0, i), rec[i]);
  for (i64 i = 0; i < n; ++i) int8_element(tokens, i, static_cast<std::int8_t>(rec[4 + i]));
  for (i64 i = 0; i < n; ++i) {
    s.vr[static_cast<std::size_t>(dst + i)] = sat32(i64{static_cast<std::int8_t>(rec[4 + i])} * M);
  }
  return 0;
}

}  // namespace

// ------------------------------------------------------------------ §3 tables
const VectorTables& vector_tables() {
  static const VectorTables tables = [] {
    VectorTables t;
    for (int i = 0; i < 1024; ++i) {
      t.exp[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(std::llround(65536.0 * std::exp(-i / 64.0)));
      t.sig[static_cast<std::size_t>(i)] =
          static_cast<std::int32_t>(std::llround(65536.0 / (1.0 + std::exp(-(i - 512) / 64.0))));
    }
    // RSQ: the unique y with (2y-1)^2 (2i+1) < 2^57 < (2y+1)^2 (2i+1).
    for (int i = 64; i < 256; ++i) {
      i64 y = std::llround(134217728.0 / std::sqrt(i + 0.5));
      const i128 lim = i128{1} << 57;
      while ((i128{2 * y + 1} * (2 * y + 1)) * (2 * i + 1) <= lim) ++y;
      while ((i128{2 * y - 1} * (2 * y - 1)) * (2 * i + 1) >= lim) --y;
      t.rsq[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(y);
    }
    // RCP: floor((2^39 + 2i + 1) / (4i + 2)).
    for (int i = 128; i < 256; ++i) {
      t.rcp[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(((i64{1} << 39) + 2 * i + 1) / (4 * i + 2));
    }
    const double freq[4] = {1.0, 0.1, 0.01, 0.001};  // 10^-j
    for (int p = 0; p < 64; ++p) {
      for (int j = 0; j < 4; ++j) {
        const double angle = p * freq[j];
        t.cos[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::llround(65536.0 * std::cos(angle)));
        t.sin[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::llround(65536.0 * std::sin(angle)));
      }
    }
    return t;
  }();
  return tables;
}

// ------------------------------------------------------------------ §2.6 sections
void load_vector_sections(const format::GuestImage& image, VectorState& s) {
  s = VectorState{};
  struct Info {
    std::size_t max;
  };
  static const std::map<std::string, std::size_t> kMax = {
      {".lockstep.wmem", 132864}, {".lockstep.wscale", 8304}, {".lockstep.vreg", 4096},
      {".lockstep.act", 384},     {".lockstep.ash", 6},       {".lockstep.kcache", 10240},
      {".lockstep.vcache", 10240}, {".lockstep.ksh", 320},    {".lockstep.vsh", 320}};
  const auto fail = [](const std::string& name, const std::string& what) {
    throw LoadError("ELF: section " + name + ": " + what);
  };
  const auto ours = [](const std::string& name) { return name.rfind(".lockstep.", 0) == 0; };
  std::map<std::string, int> seen;
  for (const auto& h : image.section_headers) {
    if (!ours(h.name)) continue;
    if (!kMax.count(h.name)) fail(h.name, "unknown vector-unit section (vector.md §2.6)");
    if (++seen[h.name] > 1) fail(h.name, "appears twice");
    if (h.flags & SHF_ALLOC) fail(h.name, "has SHF_ALLOC (vector memories must not be allocated)");
    if (h.type != SHT_PROGBITS) fail(h.name, "is not SHT_PROGBITS");
    if (h.size > kMax.at(h.name)) fail(h.name, std::to_string(h.size) + " bytes, more than its maximum " + std::to_string(kMax.at(h.name)));
  }
  for (const auto& section : image.sections) {
    // Plain references, not structured bindings: the lambda below captures them (clang < 16
    // cannot capture a structured binding).
    const std::string& name = section.first;
    const auto& bytes = section.second;
    if (!ours(name)) continue;
    if (!kMax.count(name)) fail(name, "unknown vector-unit section (vector.md §2.6)");
    if (bytes.size() > kMax.at(name)) fail(name, std::to_string(bytes.size()) + " bytes, more than its maximum " + std::to_string(kMax.at(name)));
    const auto shifts = [&](std::uint8_t* out) {
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] > 25) fail(name, "byte " + std::to_string(i) + " is " + std::to_string(bytes[i]) + ", above 25");
        out[i] = bytes[i];
      }
    };
    if (name == ".lockstep.wmem") {
      for (std::size_t k = 0; k < bytes.size(); ++k) {  // low nibble W[c][2k'], high nibble W[c][2k'+1]
        s.wmem[2 * k] = static_cast<std::int8_t>(static_cast<std::int8_t>(bytes[k] << 4) >> 4);
        s.wmem[2 * k + 1] = static_cast<std::int8_t>(static_cast<std::int8_t>(bytes[k] & 0xf0) >> 4);
      }
    } else if (name == ".lockstep.wscale") {
      for (std::size_t c = 0; 2 * c + 1 < bytes.size(); ++c) s.wscale[c] = static_cast<std::uint16_t>(bytes[2 * c] | bytes[2 * c + 1] << 8);
      if (bytes.size() % 2) s.wscale[bytes.size() / 2] = bytes.back();
    } else if (name == ".lockstep.vreg") {
      if (!bytes.empty()) std::memcpy(s.vr.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.act") {
      if (!bytes.empty()) std::memcpy(s.act.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.ash") {
      shifts(s.ash.data());
    } else if (name == ".lockstep.kcache") {
      if (!bytes.empty()) std::memcpy(s.kc.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.vcache") {
      if (!bytes.empty()) std::memcpy(s.vc.data(), bytes.data(), bytes.size());
    } else if (name == ".lockstep.ksh") {
      shifts(s.ksh.data());
    } else if (name == ".lockstep.vsh") {
      shifts(s.vsh.data());
    }
  }
}

// ------------------------------------------------------------------ dispatch
u32 execute_vector(VectorState& s, unsigned op_index, u32 f7, unsigned rd, u32 x1, u32 x2,
                   std::span<const std::uint8_t> ram, std::vector<u32>& tokens, bool& writes_rd, u32& rd_value) {
  writes_rd = false;
  const Fields f(x1, x2);
  switch (op_index) {
    case 0: return vmat(s, f7, rd, f, tokens, writes_rd, rd_value);
    case 1: return vmatr(s, f7, rd, f, tokens);
    case 2: return vq(s, f7, rd, f, tokens);
    case 3: return vexp(s, f7, rd, f, tokens);
    case 4: return vew(s, f7, rd, f, tokens);
    case 5: return vfn(s, f7, rd, f, tokens);
    case 6: return vred(s, f7, rd, f, tokens);
    default: return vld(s, f7, rd, x1, x2, ram, tokens);
  }
}

std::string vector_mnemonic(unsigned op_index, u32 f7) {
  char bad[32];
  std::snprintf(bad, sizeof bad, ".f7=0x%02x", f7);
  switch (op_index) {
    case 0: {
      const u32 K = f7 & 7;
      if (K == 0 || K == 7 || (f7 >> 4)) return std::string("vmat") + bad;
      return "vmat.k" + std::to_string(K) + ((f7 & 8) ? ".argmax" : "");
    }
    case 1: return (f7 >> 1) ? std::string("vmatr") + bad : (f7 & 1) ? "vmatr.v" : "vmatr.k";
    case 2: {
      static const char* kT[] = {"vq.act", "vq.k", "vq.v"};
      return ((f7 >> 2) || (f7 & 3) == 3) ? std::string("vq") + bad : kT[f7 & 3];
    }
    case 3: return (f7 >> 3) ? std::string("vexp") + bad : "vexp.g" + std::to_string((f7 & 7) + 1);
    case 4: {
      static const char* kM[] = {"vew.add", "vew.mul", "vew.muls", "vew.rot"};
      const u32 mode = f7 & 3, gs = (f7 >> 2) & 7;
      if ((f7 >> 5) || (mode == 2 ? gs == 7 : gs != 0)) return std::string("vew") + bad;
      return mode == 2 ? "vew.muls.gs" + std::to_string(gs) : kM[mode];
    }
    case 5: {
      static const char* kF[] = {"vfn.rsqrt", "vfn.recip", "vfn.silu"};
      return f7 >= 3 ? std::string("vfn") + bad : kF[f7];
    }
    case 6: {
      static const char* kR[] = {"vred.sumsq", "vred.sum", "vred.max"};
      const u32 mode = f7 & 3, sh = f7 >> 2;
      if (mode == 3 || (mode == 2 && sh)) return std::string("vred") + bad;
      return mode == 2 ? kR[2] : std::string(kR[mode]) + ".sh" + std::to_string(sh);
    }
    default: return f7 ? std::string("vld") + bad : "vld";
  }
}

}  // namespace lockstep::ref
