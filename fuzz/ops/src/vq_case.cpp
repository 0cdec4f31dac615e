// VQ (vector.md section 4.3) as a test case: quantise a span of VR into ACT blocks or a K/V row.
//   X(rs1) = src << 16 | A (A: b0 for ACT, the cache row for K/V), X(rs2) = n << 16 | C (C unused)
//   f7 = TARGET (0 ACT, 1 K, 2 V; 3 invalid), bits 6..2 reserved
//   ACT: groups k of 64 words of [src, src + n), n = 1..384, into block b0 + k; K/V: n = 32, row < 320
#include <algorithm>

#include "lockstep/ops/op_case.h"

namespace lockstep::ops {
namespace {

constexpr u32 kAct = 0;

u32 blocks(u32 n) { return (n + 63) / 64; }

struct Vq {
  u32 target = 0, n = 0, a = 0, src = 0, c = 0, extra = 0, rd = 0;
  bool same = false;
  Fields fields() const {
    Fields f;
    f.a = a, f.b = src, f.c = c, f.n = n, f.f7 = extra | target, f.rd = rd, f.same = same;
    return f;
  }
};

class VqCase final : public OpCase {
 public:
  std::string_view name() const override { return "vq"; }
  ref::Op op() const override { return ref::Op::kVq; }
  std::vector<std::string_view> modes() const override { return {"vq.act", "vq.k", "vq.v"}; }
  u32 mode_of(const Fields& f) const override { return f.f7 & 3; }
  std::vector<unsigned> codes() const override { return {16, 17, 18, 19, 22}; }

  std::string vars(const Fields& f) const override {
    const u32 t = f.f7 & 3;
    return (t < 3 ? std::string(modes()[t]) : "vq.target3") + " " +
           format_vars({{t == kAct ? "b0" : "row", f.a}, {"src", f.b}, {"n", f.n}, {"c", f.c}, {"f7", f.f7}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const u32 target = f.f7 & 3, a = f.a, src = f.b, n = f.n;
    if (target == 3 || (f.f7 >> 2) != 0 || f.rd != 0) return 16;
    if (src + n > kVrWords) return 17;
    if (target == kAct ? (n == 0 || n > 384) : n != 32) return 18;
    if (target == kAct && a + blocks(n) > 6) return 19;
    if (target != kAct && a >= 320) return 22;
    return 0;
  }

  std::vector<Span> writes(const Fields&) const override { return {}; }  // ACT or a cache row

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16 (TARGET = 3, a reserved f7 bit, rd != x0), 17, 18,
  // 19 (ACT) or 22 (K/V): one alone half the time (19 / 22 twice as often), else any combination;
  // `code`: that condition alone (19: an ACT, 22: a K or V row).
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vq v = base(ctx);
    v.same = false;
    if (code == 19 && v.target != kAct) v = act_of(v);
    if (code == 22 && v.target == kAct) {
      v.target = 1;
      v.n = 32;
      v.src = std::min(v.src, kVrWords - 32);
    }
    static constexpr unsigned kAlone[] = {1, 2, 4, 8, 8};
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : code == 19 || code == 22 ? 8 : 0;
    if (mask == 0) mask = rng.chance(2) ? kAlone[rng.below(5)] : 1 + rng.below(15);
    if (mask & 2) v.src = ctx.outside(v.n);  // 17
    if (mask & 4) {                          // 18
      if (v.target == kAct) v.n = rng.chance(2) ? 0 : 385 + rng.below(rng.chance(2) ? 64 : 65536 - 385);
      else v.n = rng.chance(2) ? rng.below(32) : 33 + rng.below(65536 - 33);
      if (code == 18 && trap_code(v.fields()) != 18) v.n = v.target == kAct ? 0 : 31;  // not past VR (17)
    }
    if (mask & 8) {  // 19: b0 + ceil(n/64) > 6; 22: row >= 320
      // the first past the limit a third of the time (found by an outside tester: row 320 was 1
      // draw in 16)
      const u32 last = 6 - std::min<u32>(6, blocks(v.n));  // the last valid b0
      if (v.target == kAct) v.a = ctx.past_limit(last, last + 60000);
      else v.a = ctx.past_limit(319, 65535);
    }
    if (mask & 1) {  // 16
      switch (rng.below(3)) {
        case 0: v.target = 3; break;
        case 1: v.extra = (1 + rng.below(31)) << 2; break;
        default: v.rd = 1 + rng.below(31); break;
      }
    }
    return v.fields();
  }

  // Besides the targets and layouts, the value classes of section 4.3 (the old chip_vq_random
  // test's): groups with e_k = 0, 1, 2, 8, 16, 24, 25; amax at a threshold of E (E(amax - 1) <
  // E(amax)); amax from a negative word only; a value that is a tie of rnd(x, e_k).
  std::vector<std::string> buckets(u32) const override {
    std::vector<std::string> b = {"vq.act", "vq.k", "vq.v", "reads an earlier destination", "row 0 or 319",
                                  "act padded", "act into block 5", "n=1", "n=384", "source ends at 1023",
                                  "amax at a threshold of E", "amax from a negative word", "a tie of rnd"};
    for (u32 g = 1; g <= 6; ++g) b.push_back("act groups=" + std::to_string(g));
    for (const u32 e : {0u, 1u, 2u, 8u, 16u, 24u, 25u}) b.push_back("e=" + std::to_string(e));
    return b;
  }

  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 target = f.f7 & 3, src = f.b, n = f.n;
    ++out[std::string(modes()[target])];
    if (target == kAct) {
      ++out["act groups=" + std::to_string(blocks(n))];
      out["act padded"] += n % 64 != 0;
      out["act into block 5"] += f.a + blocks(n) == 6;
    } else {
      out["row 0 or 319"] += f.a == 0 || f.a == 319;
    }
    out["n=1"] += n == 1;
    out["n=384"] += n == 384;
    out["source ends at 1023"] += src + n == kVrWords;
    out["reads an earlier destination"] += reads_written(src, n, e.written);
    for (u32 k = 0; k < blocks(n); ++k) {  // group k: e_k = E(amax_k)
      const u32 lo = src + 64 * k, hi = std::min(src + n, lo + 64);
      std::int64_t amax = 0;
      for (u32 w = lo; w < hi; ++w) amax = std::max(amax, magnitude(e.vr[w]));
      const unsigned ek = shift_of(amax);
      ++out["e=" + std::to_string(ek)];
      out["amax at a threshold of E"] += amax > 0 && shift_of(amax - 1) < ek;
      bool from_neg = amax > 0;  // no word is +amax
      bool tie = false;
      for (u32 w = lo; w < hi; ++w) {
        from_neg = from_neg && e.vr[w] != amax;
        tie = tie || rnd_tie(e.vr[w], ek);
      }
      out["amax from a negative word"] += from_neg;
      out["a tie of rnd"] += tie;
    }
  }

  bool draws_vr() const override { return true; }

  // One of ten profiles per program, with a magnitude `scale` (0..31) (the old chip_vq_random
  // test's): any words; small words (-300..300: e_k 0..2); the edges of E (+-(255 2^s + d), s =
  // scale mod 24 or one less, d = -1 or 0 (also 1 for an odd scale), and +-127, +-128, so that
  // amax sits on either side of a threshold); ties of rnd for e = 1 + scale mod 24 (j 2^e +
  // 2^(e-1)); powers of two and their negatives; INT32_MIN (e_k = 25) and INT32_MAX; a mix of
  // those; zeros and a few words; words below 2^scale in magnitude.
  void fill_vr(DrawContext& ctx, std::span<u32> vr) const override {
    const u32 profile = ctx.rng.below(10), scale = ctx.rng.below(32);
    for (u32& w : vr) w = vr_word(ctx.rng, profile, scale);
  }

 private:
  static std::int64_t magnitude(std::int32_t x) { return x < 0 ? -std::int64_t{x} : x; }

  // E(a): the smallest e >= 0 with rnd(a, e) <= 127 (section 4.3), for 0 <= a <= 2^31.
  static unsigned shift_of(std::int64_t a) {
    unsigned e = 0;
    while (rnd(a, e) > 127) ++e;
    return e;
  }

  static u32 vr_word(progen::Random& rng, u32 profile, u32 scale) {
    auto sign = [&](std::int64_t x) { return static_cast<u32>(rng.chance(2) ? x : -x); };
    switch (profile) {
      case 1: return static_cast<u32>(static_cast<std::int32_t>(rng.below(601)) - 300);
      case 2: {  // the edges of E
        if (rng.chance(8)) return sign(127 + rng.below(2));
        const u32 sc = scale % 24;
        const std::int64_t t = std::int64_t{255} << (sc - (sc > 0 && rng.chance(2) ? 1 : 0));
        const std::int64_t d = static_cast<std::int64_t>(rng.below(scale % 2 == 0 ? 2 : 3)) - 1;
        return sign(std::min<std::int64_t>(t + d, 0x7FFFFFFF));
      }
      case 3: {  // ties of rnd: j 2^e + 2^(e-1)
        const u32 e = 1 + scale % 24;
        return sign((static_cast<std::int64_t>(rng.below(256)) << e) + (std::int64_t{1} << (e - 1)));
      }
      case 4: return sign(std::int64_t{1} << rng.below(31));
      case 5: return rng.chance(2) ? 0x80000000u : rng.chance(2) ? 0x7FFFFFFFu : static_cast<u32>(rng.next());
      case 6: return vr_word(rng, rng.below(9), scale);
      case 7: return rng.chance(16) ? static_cast<u32>(rng.next()) : 0u;
      case 8: return sign(static_cast<std::int64_t>(rng.next() & ((std::uint64_t{1} << scale) - 1)));
      default: return static_cast<u32>(rng.next());
    }
  }

  // `v` as an ACT of the same source span (n cut to 384).
  static Vq act_of(Vq v) {
    v.target = kAct;
    v.a = 0;
    return v;
  }

  // A valid VQ: ACT three times in five (n at group edges 1, 63, 64, 65, 128, 320, 321, 384 or any
  // up to 384; b0 up to 6 - ceil(n/64), the last block weighted), else a K or V row (n = 32; rows
  // 0, 319 weighted); the source at or inside an earlier destination half the time; rs1 = rs2 (src
  // = n, C = A).
  Vq base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    static constexpr u32 kEdges[] = {1, 63, 64, 65, 128, 320, 321, 384};
    Vq v;
    const u32 t = rng.below(5);
    v.target = t < 3 ? 0 : t - 2;
    v.n = v.target != 0 ? 32 : rng.chance(3) ? kEdges[rng.below(8)] : 1 + rng.below(rng.chance(2) ? 64 : 384);
    const u32 groups = blocks(v.n);
    v.a = v.target != 0 ? (rng.chance(3) ? (rng.chance(2) ? 0 : 319) : rng.below(320))
                        : (rng.chance(3) ? 6 - groups : rng.below(7 - groups));
    v.src = ctx.vr_start(v.n);
    v.c = rng.chance(2) ? 0 : rng.below(65536);
    if (rng.chance(16)) {  // rs1 = rs2: A = C, B = N = n
      v.same = true;
      v.src = v.n;
      v.c = v.a;
    }
    return v;
  }
};

}  // namespace

const OpCase& vq_case() {
  static const VqCase c;
  return c;
}

}  // namespace lockstep::ops
