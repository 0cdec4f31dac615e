// VEXP (vector.md section 4.4) as a test case: softmax numerators of G groups of T scores.
//   X(rs1) = src << 16 | dst, X(rs2) = T << 16 | sums; f7 = G - 1 (bits 2..0), bits 6..3 reserved
//   groups g < G of [src + 64 g, + T) -> [dst + 64 g, + T), their sums -> VR[sums + g]
#include <algorithm>
#include <cstdint>

#include "lockstep/ops/op_case.h"

namespace lockstep::ops {
namespace {

bool meet(u32 x, u32 n, u32 y, u32 m) { return x < y + m && y < x + n; }

struct Vexp {
  u32 g = 1, t = 1, src = 0, dst = 0, sums = 0, extra = 0, rd = 0;
  u32 ext() const { return 64 * (g - 1) + t; }
  Fields fields() const {
    Fields f;
    f.a = dst, f.b = src, f.c = sums, f.n = t, f.f7 = extra | (g - 1), f.rd = rd;
    return f;
  }
  // Section 6's code 20 (G, T valid): dst != src and a destination group meets a source group, or
  // the sums meet a group of either.
  bool overlaps() const {
    for (u32 a = 0; a < g; ++a) {
      for (u32 b = 0; b < g && dst != src; ++b)
        if (meet(dst + 64 * a, t, src + 64 * b, t)) return true;
      if (meet(sums, g, src + 64 * a, t) || meet(sums, g, dst + 64 * a, t)) return true;
    }
    return false;
  }
};

Vexp of(const Fields& f) {
  Vexp v;
  v.g = (f.f7 & 7) + 1, v.t = f.n, v.src = f.b, v.dst = f.a, v.sums = f.c, v.extra = f.f7 & ~7u, v.rd = f.rd;
  return v;
}

class VexpCase final : public OpCase {
 public:
  std::string_view name() const override { return "vexp"; }
  ref::Op op() const override { return ref::Op::kVexp; }
  std::vector<std::string_view> modes() const override { return {"vexp"}; }
  u32 mode_of(const Fields&) const override { return 0; }
  std::vector<unsigned> codes() const override { return {16, 17, 18, 20}; }

  std::string vars(const Fields& f) const override {
    return format_vars({{"g", (f.f7 & 7) + 1}, {"t", f.n}, {"src", f.b}, {"dst", f.a}, {"sums", f.c}, {"f7", f.f7}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const Vexp v = of(f);
    if (v.extra != 0 || v.rd != 0) return 16;
    if (v.src + v.ext() > kVrWords || v.dst + v.ext() > kVrWords || v.sums + v.g > kVrWords) return 17;
    if (v.t == 0 || v.t > 64) return 18;
    if (v.overlaps()) return 20;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override {
    const Vexp v = of(f);
    std::vector<Span> w;
    for (u32 a = 0; a < v.g; ++a) w.push_back({v.dst + 64 * a, v.t});
    w.push_back({v.sums, v.g});
    return w;
  }

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16 (f7 bits 6..3, rd != x0), 17, 18, 20: one alone half
  // the time, else any combination; `code`: that condition alone.
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vexp v = base(ctx);
    static constexpr unsigned kAlone[] = {1, 2, 4, 8};
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : code == 20 ? 8 : 0;
    if (mask == 0) mask = rng.chance(2) ? kAlone[rng.below(4)] : 1 + rng.below(15);
    if (mask & 8) {  // 20: dst one word off src, or the sums on a group's last word
      v.t = std::max<u32>(v.t, 2);
      v.src = std::min(v.src, kVrWords - v.ext() - 1);
      if (rng.chance(2)) {
        v.dst = v.src + 1;
      } else {
        v.dst = v.src;
        v.sums = v.src + 64 * rng.below(v.g) + v.t - 1;
      }
      if (code == 20 && trap_code(v.fields()) != 20) v.dst = v.src + 1, v.sums = 0;  // dst one word off src (the sums back inside VR)
    }
    if (mask & 2) {  // 17
      switch (rng.below(3)) {
        case 0: v.src = ctx.outside(v.ext()); break;
        case 1: v.dst = ctx.outside(v.ext()); break;
        default: v.sums = ctx.outside(v.g); break;
      }
    }
    if (mask & 4) {  // 18: T = 0 or past 64 (alone too, where no lower code comes with it)
      v.t = rng.chance(2) ? 0 : ctx.past_limit(64, 65064);
      if (code == 18 && trap_code(v.fields()) != 18) v.t = 0;
    }
    if (mask & 1) {  // 16
      if (rng.chance(2)) v.extra = (1 + rng.below(15)) << 3;
      else v.rd = 1 + rng.below(31);
    }
    return v.fields();
  }

  // Besides the layouts, the value classes of section 4.4 (the old chip_vexp_random test's), over
  // each group's scores: i = 0, i in 1..1022, i = 1023 unclamped (rnd(d, 10) = 1023), i clamped
  // (rnd(d, 10) > 1023), a tie of rnd(d, 10), p = 0 below the clamp (EXP[i] = 0 for i >= 755,
  // rnd(d, 10) < 1023), d = 2^32 - 1, S = 2^22 (T = 64 scores all at i = 0, EXP[0] = 65536).
  std::vector<std::string> buckets(u32) const override {
    std::vector<std::string> b = {"in place", "dst in the source's gaps", "sums in a gap", "reads an earlier destination",
                                  "t=1", "t=64", "i=0", "i in 1..1022", "i=1023 unclamped", "i clamped",
                                  "a tie of rnd(d, 10)", "p=0 below the clamp", "d=2^32-1", "s=2^22"};
    for (u32 g = 1; g <= 8; ++g) b.push_back("g=" + std::to_string(g));
    return b;
  }
  void count(const Executed& e, Buckets& out) const override {
    const Vexp v = of(e.fields);
    ++out["g=" + std::to_string(v.g)];
    out["in place"] += v.dst == v.src;
    out["dst in the source's gaps"] += v.dst > v.src && v.dst < v.src + 64 - v.t;
    bool sums_in_gap = false;
    for (u32 a = 0; a < v.g; ++a) sums_in_gap = sums_in_gap || (v.sums >= v.src + 64 * a + v.t && v.sums + v.g <= v.src + 64 * a + 64);
    out["sums in a gap"] += sums_in_gap;
    out["reads an earlier destination"] += reads_written(v.src, v.t, e.written);
    out["t=1"] += v.t == 1;
    out["t=64"] += v.t == 64;
    for (u32 g = 0; g < v.g; ++g) {
      const u32 lo = v.src + 64 * g;
      std::int64_t m = INT64_MIN;
      for (u32 t = 0; t < v.t; ++t) m = std::max<std::int64_t>(m, e.vr[lo + t]);
      bool all_zero = true;
      for (u32 t = 0; t < v.t; ++t) {
        const std::int64_t d = m - e.vr[lo + t], r = rnd(d, 10), i = std::min<std::int64_t>(1023, r);
        out["i=0"] += i == 0;
        out["i in 1..1022"] += i > 0 && i < 1023;
        out["i=1023 unclamped"] += r == 1023;
        out["i clamped"] += r > 1023;
        out["a tie of rnd(d, 10)"] += rnd_tie(d, 10);
        out["p=0 below the clamp"] += i >= 755 && r < 1023;
        out["d=2^32-1"] += d == 0xFFFFFFFFll;
        all_zero = all_zero && i == 0;
      }
      out["s=2^22"] += v.t == 64 && all_zero;
    }
  }

  bool draws_vr() const override { return true; }

  // The old chip_vexp_random test's blocks: each 64-word block of VR from one of eight profiles
  // around a random base word: any words; scores within 2^16 (i in 0..64); differences that are
  // ties of rnd(., 10) (1024 j + 512); differences around 2^20 (i = 1023 exactly, or clamped) and
  // around 755 * 1024 (EXP turns 0); INT32_MAX with INT32_MIN (d = 2^32 - 1); all equal (S =
  // 65536 T); a few distinct values (ties of the maximum). One program in eight: VR all one word
  // (every group at i = 0, S = 2^22 for T = 64).
  void fill_vr(DrawContext& ctx, std::span<u32> vr) const override {
    progen::Random& rng = ctx.rng;
    if (rng.chance(8)) {
      const u32 x = static_cast<u32>(rng.next());
      for (u32& w : vr) w = x;
      return;
    }
    for (std::size_t b = 0; b + 64 <= vr.size(); b += 64) fill_block(rng, vr.subspan(b, 64));
  }

 private:
  static void fill_block(progen::Random& rng, std::span<u32> w) {
    const std::int32_t base = static_cast<std::int32_t>(rng.next());
    const u32 profile = rng.below(8);
    for (u32& word : w) {
      std::int64_t x = base;
      switch (profile) {
        case 1: x = static_cast<std::int64_t>(base >> 2) + rng.below(1u << 16); break;  // within 2^16
        case 2: x = static_cast<std::int64_t>(base >> 2) + 1024 * rng.below(64) + (rng.chance(2) ? 512 : 0); break;
        case 3: {  // around 2^20 and 755 * 1024 below the block's base (the base is often the maximum)
          const std::int64_t at = rng.chance(2) ? (1 << 20) - 512 : 755 * 1024 - 512;
          x = static_cast<std::int64_t>(base >> 2) - (rng.chance(4) ? 0 : at + static_cast<std::int64_t>(rng.below(5)) - 2);
          break;
        }
        case 4: x = rng.chance(2) ? INT32_MAX : INT32_MIN; break;
        case 5: x = base; break;  // all equal
        case 6: x = static_cast<std::int64_t>(base >> 4) * static_cast<std::int64_t>(rng.below(3)); break;  // few values
        default: x = static_cast<std::int32_t>(rng.next()); break;
      }
      word = static_cast<u32>(std::clamp<std::int64_t>(x, INT32_MIN, INT32_MAX));
    }
  }

  // A valid VEXP: G 1..8 (8 weighted), T 1..64 (1, 4, 5, 63, 64 weighted), the source a multiple
  // of 64 one time in four (each group one block of fill_vr), else at or inside an earlier
  // destination half the time, dst = src (in place) a third of the time, in the gaps
  // between the source groups (T <= 32) or elsewhere, the sums after the groups, in a gap or
  // elsewhere; a layout that would trap (17, 20) is replaced by one that does not (in place, the
  // sums after the groups).
  Vexp base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    static constexpr u32 kT[] = {1, 4, 5, 63, 64};
    Vexp v;
    v.g = rng.chance(4) ? 8 : 1 + rng.below(8);
    v.t = rng.chance(3) ? kT[rng.below(5)] : 1 + rng.below(64);
    auto ok = [&] {
      return v.src + v.ext() <= kVrWords && v.dst + v.ext() <= kVrWords && v.sums + v.g <= kVrWords && !v.overlaps();
    };
    bool good = false;
    for (int tries = 0; tries < 16 && !good; ++tries) {
      v.src = rng.chance(4) ? 64 * rng.below((kVrWords - v.ext()) / 64 + 1)  // groups on whole blocks (fill_vr)
                            : std::min(ctx.vr_start(v.t), kVrWords - v.ext());
      const u32 d = rng.below(3);
      v.dst = d == 0 ? v.src : d == 1 && v.t <= 32 ? v.src + v.t + rng.below(64 - 2 * v.t + 1) : rng.below(kVrWords - v.ext() + 1);
      const u32 s = rng.below(3);
      v.sums = s == 0 ? v.src + v.ext() + rng.below(4)
               : s == 1 && 64 - v.t >= v.g ? v.src + 64 * rng.below(v.g) + v.t + rng.below(64 - v.t - v.g + 1)
                                           : rng.below(kVrWords - v.g + 1);
      good = ok();
    }
    if (!good) {
      v.src = v.dst = rng.below(kVrWords - v.ext() - v.g + 1);
      v.sums = v.src + v.ext();
    }
    return v;
  }
};

}  // namespace

const OpCase& vexp_case() {
  static const VexpCase c;
  return c;
}

}  // namespace lockstep::ops
