// VEXP (vector.md section 4.4) as a test case: softmax numerators of G groups of T scores.
//   X(rs1) = src << 16 | dst, X(rs2) = T << 16 | sums; f7 = G - 1 (bits 2..0), bits 6..3 reserved
//   groups g < G of [src + 64 g, + T) -> [dst + 64 g, + T), their sums -> VR[sums + g]
#include <algorithm>

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
    if (mask & 4) v.t = rng.chance(2) || code == 18 ? 0 : 65 + rng.below(rng.chance(2) ? 64 : 65000);  // 18
    if (mask & 1) {  // 16
      if (rng.chance(2)) v.extra = (1 + rng.below(15)) << 3;
      else v.rd = 1 + rng.below(31);
    }
    return v.fields();
  }

  std::vector<std::string> buckets(u32) const override {
    std::vector<std::string> b = {"in place", "dst in the source's gaps", "reads an earlier destination", "t=1", "t=64"};
    for (u32 g = 1; g <= 8; ++g) b.push_back("g=" + std::to_string(g));
    return b;
  }

  void count(const Executed& e, Buckets& out) const override {
    const Vexp v = of(e.fields);
    ++out["g=" + std::to_string(v.g)];
    out["in place"] += v.dst == v.src;
    out["dst in the source's gaps"] += v.dst > v.src && v.dst < v.src + 64 - v.t;
    out["reads an earlier destination"] += reads_written(v.src, v.t, e.written);
    out["t=1"] += v.t == 1;
    out["t=64"] += v.t == 64;
  }

 private:
  // A valid VEXP: G 1..8 (8 weighted), T 1..64 (1, 4, 5, 63, 64 weighted), the source at or inside
  // an earlier destination half the time, dst = src (in place) a third of the time, in the gaps
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
      v.src = std::min(ctx.vr_start(v.t), kVrWords - v.ext());
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
