// VMATR (vector.md section 4.2) as a test case: attention reads over T cache rows from r0.
//   X(rs1) = src << 16 | dst, X(rs2) = T << 16 | r0; f7 = VMODE (0 K, 1 V), bits 6..1 reserved
//   K: scores of ACT block src against K rows -> 8 heads [dst + 64 h, + T)
//   V: the 8 probability spans [src + 64 h, + T) against V rows -> [dst, dst + 64)
#include <algorithm>
#include <cstdint>

#include "lockstep/ops/op_case.h"

namespace lockstep::ops {
namespace {

constexpr u32 kRows = 320;  // K/V cache rows

struct Vmatr {
  u32 vmode = 0, t = 1, r0 = 0, src = 0, dst = 0, extra = 0, rd = 0;
  Fields fields() const {
    Fields f;
    f.a = dst, f.b = src, f.c = r0, f.n = t, f.f7 = extra | vmode, f.rd = rd;
    return f;
  }
};

class VmatrCase final : public OpCase {
 public:
  std::string_view name() const override { return "vmatr"; }
  ref::Op op() const override { return ref::Op::kVmatr; }
  std::vector<std::string_view> modes() const override { return {"vmatr.k", "vmatr.v"}; }
  u32 mode_of(const Fields& f) const override { return f.f7 & 1; }
  std::vector<unsigned> codes() const override { return {16, 17, 18, 19, 20, 22}; }

  std::string vars(const Fields& f) const override {
    return std::string(modes()[f.f7 & 1]) + " " +
           format_vars({{"t", f.n}, {"r0", f.c}, {"src", f.b}, {"dst", f.a}, {"f7", f.f7}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const u32 vmode = f.f7 & 1, dst = f.a, src = f.b, r0 = f.c, t = f.n;
    if ((f.f7 >> 1) != 0 || f.rd != 0) return 16;
    if (vmode == 0 ? dst + 448 + t > kVrWords : src + 448 + t > kVrWords || dst + 64 > kVrWords) return 17;
    if (t == 0 || t > 64) return 18;
    if (vmode == 0 && src > 5) return 19;
    if (vmode == 1)
      for (u32 h = 0; h < 8; ++h)
        if (dst < src + 64 * h + t && src + 64 * h < dst + 64) return 20;
    if (r0 + t > kRows) return 22;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override {
    if (f.f7 & 1) return {{f.a, 64}};
    std::vector<Span> w;
    for (u32 h = 0; h < 8; ++h) w.push_back({f.a + 64 * h, f.n});
    return w;
  }

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16, 17, 18, 19 (K) or 20 (V), 22: one alone half the
  // time, else any combination; `code`: that condition alone (19: K mode, 20: V mode).
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vmatr v = base(ctx);
    if ((code == 19 && v.vmode == 1) || (code == 20 && v.vmode == 0)) v = other_mode(v);
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : code == 19 || code == 20 ? 8 : code == 22 ? 16 : 0;
    if (mask == 0) mask = rng.chance(2) ? 1u << rng.below(5) : 1 + rng.below(31);
    if (mask & 2) {  // 17
      if (v.vmode == 0) v.dst = ctx.outside(448 + v.t);
      else if (rng.chance(2)) v.src = ctx.outside(448 + v.t);
      else v.dst = ctx.outside(64);
    }
    if (mask & 4) {  // 18: T = 0 or past 64 (alone too, where no lower code comes with it)
      v.t = rng.chance(2) ? 0 : ctx.past_limit(64, 60064);
      if (code == 18 && trap_code(v.fields()) != 18) v.t = 0;
    }
    if (mask & 8) {  // 19 (K: src > 5) or 20 (V: dst meets a span)
      if (v.vmode == 0) v.src = 6 + rng.below(rng.chance(2) ? 4 : 60000);
      else v.dst = v.src + 64 * rng.below(8) + rng.below(std::max<u32>(v.t, 1));
      if (code == 20 && trap_code(v.fields()) != 20) v.dst = v.src;  // dst + 64 past VR: 17
    }
    if (mask & 16) {  // 22: r0 + T = 321 a third of the time (found by an outside tester: 1 draw in 16)
      const u32 last = kRows - std::min<u32>(v.t, kRows);  // the last valid r0
      v.r0 = ctx.past_limit(last, last + 60000);
    }
    if (mask & 1) {                                                                                     // 16
      if (rng.chance(2)) v.extra = (1 + rng.below(63)) << 1;
      else v.rd = ctx.dest_reg();
    }
    return v.fields();
  }

  // Besides the modes and layouts, the value classes of section 4.2 (the old chip_vmatr_random
  // test's), computed from ACT, ASH, KC, KSH, VC, VSH and VR before the instruction. K: scores
  // with e < 16 and e >= 16, a score saturating up or down, a tie of rnd(s, 16 - e); V: a
  // probability P < 0 (clamped to 0), P > 65536 (clamped), P = 65536, a sum that saturates, a tie
  // of rnd(o, 16); and K mode's largest score, s = 2^17 at e = 50 (2^51 before sat32).
  std::vector<std::string> buckets(u32) const override {
    return {"vmatr.k", "vmatr.v", "t=1", "t=64", "r0 + t = 320", "r0=0", "k: src=5", "k: dst + 448 + t = 1024",
            "v: dst before src", "v: dst after the spans", "k: e < 16", "k: e >= 16", "k: a score saturates up",
            "k: a score saturates down", "k: the top, s 2^(e-16) = 2^51", "k: a tie of rnd", "v: p < 0 clamped", "v: p > 65536 clamped",
            "v: p = 65536", "v: a sum saturates", "v: a tie of rnd"};
  }
  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 vmode = f.f7 & 1, dst = f.a, src = f.b, r0 = f.c, t = f.n;
    ++out[std::string(modes()[vmode])];
    out["t=1"] += t == 1;
    out["t=64"] += t == 64;
    out["r0 + t = 320"] += r0 + t == kRows;
    out["r0=0"] += r0 == 0;
    const ref::VectorState& st = e.state;
    if (vmode == 1) {
      (dst < src ? out["v: dst before src"] : out["v: dst after the spans"])++;
      for (u32 h = 0; h < 8; ++h) {
        for (u32 i = 0; i < t; ++i) {
          const std::int64_t x = e.vr[src + 64 * h + i];
          out["v: p < 0 clamped"] += x < 0;
          out["v: p > 65536 clamped"] += x > 65536;
          out["v: p = 65536"] += x == 65536;
        }
        for (u32 d = 0; d < 8; ++d) {
          std::int64_t o = 0;  // |o| <= 2^54
          for (u32 i = 0; i < t; ++i) {
            const std::int64_t p = std::clamp<std::int64_t>(e.vr[src + 64 * h + i], 0, 65536);
            o += p * st.vc[32 * (r0 + i) + 8 * (h >> 1) + d] * (std::int64_t{1} << st.vsh[r0 + i]);
          }
          const std::int64_t y = rnd(o, 16);
          out["v: a sum saturates"] += y > 0x7FFFFFFF || y < -0x80000000LL;
          out["v: a tie of rnd"] += rnd_tie(o, 16);
        }
      }
      return;
    }
    out["k: src=5"] += src == 5;
    out["k: dst + 448 + t = 1024"] += dst + 448 + t == kVrWords;
    for (u32 i = 0; i < t; ++i)
      for (u32 h = 0; h < 8; ++h) {
        std::int64_t sc = 0;  // |s| <= 2^17
        for (u32 d = 0; d < 8; ++d) sc += std::int64_t{st.act[64 * src + 8 * h + d]} * st.kc[32 * (r0 + i) + 8 * (h >> 1) + d];
        const unsigned ex = st.ash[src] + st.ksh[r0 + i];
        ++out[ex < 16 ? "k: e < 16" : "k: e >= 16"];
        const std::int64_t y = ex >= 16 ? sc * (std::int64_t{1} << (ex - 16)) : rnd(sc, 16 - ex);  // |.| <= 2^51
        out["k: a score saturates up"] += y > 0x7FFFFFFF;
        out["k: a score saturates down"] += y < -0x80000000LL;
        out["k: the top, s 2^(e-16) = 2^51"] += y == std::int64_t{1} << 51;
        out["k: a tie of rnd"] += ex < 16 && rnd_tie(sc, 16 - ex);
      }
  }

  bool draws_vr() const override { return true; }

  // The old chip_vmatr_random test's VR: probabilities 0..65,536, any words, or a mix of their
  // edges (65,536, 65,537, -1, 0) with those two; or powers of two 2^0..2^16, whose products with
  // the caches' small values and shifts land on V mode's ties of rnd(o, 16) (o mod 2^16 = 2^15,
  // which the other profiles reach by chance: a change of draws elsewhere left 96 programs
  // without one).
  void fill_vr(DrawContext& ctx, std::span<u32> vr) const override {
    progen::Random& rng = ctx.rng;
    const u32 pp = rng.below(4);
    for (u32& w : vr) {
      if (pp == 3) {
        w = 1u << rng.below(17);
        continue;
      }
      switch (pp == 2 ? rng.below(6) : pp) {
        case 0: w = rng.below(65537); break;
        case 1: w = static_cast<u32>(rng.next()); break;
        case 2: w = 65536; break;
        case 3: w = 65537; break;
        case 4: w = 0xFFFFFFFFu; break;
        default: w = 0; break;
      }
    }
  }

  bool draws_memories() const override { return true; }

  // The old chip_vmatr_random test's profiles: ACT and the caches' values anywhere, at -128/127,
  // small or zero, or -128 in every byte (one profile for ACT, one for both caches); the shifts
  // 0..25 (25, 0 and 16 weighted). -128 everywhere with both shifts 25 is K mode's top,
  // s 2^(e-16) = 2^17 2^34 = 2^51 (vmatr.md section 1's bound, reached only from ELF sections:
  // VQ never writes -128), and V mode's sums of -128 at the largest shifts.
  void fill_memories(DrawContext& ctx, Sections& out) const override {
    progen::Random& rng = ctx.rng;
    const u32 pa = rng.below(5), pk = rng.below(5);
    auto value = [&](u32 p) -> std::uint8_t {
      switch (p) {
        case 0: return static_cast<std::uint8_t>(rng.next());
        case 1: return rng.chance(2) ? 0x80 : 0x7F;
        case 2: return static_cast<std::uint8_t>(static_cast<int>(rng.below(9)) - 4);
        case 3: return rng.chance(4) ? static_cast<std::uint8_t>(rng.next()) : 0;
        default: return 0x80;
      }
    };
    auto shift = [&] {
      return static_cast<std::uint8_t>(rng.chance(6) ? 25 : rng.chance(6) ? 0 : rng.chance(6) ? 16 : rng.below(26));
    };
    auto fill = [&](const char* name, u32 n, const auto& draw) {
      std::vector<std::uint8_t>& b = out[name];
      b.resize(n);
      for (std::uint8_t& x : b) x = draw();
    };
    fill(".lockstep.act", 384, [&] { return value(pa); });
    fill(".lockstep.ash", 6, shift);
    fill(".lockstep.kcache", 32 * kRows, [&] { return value(pk); });
    fill(".lockstep.ksh", kRows, shift);
    fill(".lockstep.vcache", 32 * kRows, [&] { return value(pk); });
    fill(".lockstep.vsh", kRows, shift);
  }

  // `v` in the other mode, its operands valid again (src 0..5 in K mode; in V mode, dst after the
  // spans).
  static Vmatr other_mode(Vmatr v) {
    if (v.vmode == 1) {
      v.vmode = 0;
      v.src %= 6;
      v.dst = std::min(v.dst, kVrWords - 448 - v.t);
    } else {
      v.vmode = 1;
      v.src = 0;
      v.dst = 448 + v.t + std::min(v.dst, kVrWords - 64 - 448 - v.t);
      v.dst = std::min(v.dst, kVrWords - 64);
    }
    return v;
  }

  // A valid VMATR, K or V mode: T 1..64 (1 and 64 a quarter of the time), r0 + T <= 320 (reaching
  // it a quarter of the time, r0 = 0 one time in eight of the rest); K: src 0..5, dst + 448 + T <= 1024; V: the eight probability spans
  // [src + 64 h, + T) and dst's 64 words apart (dst before src or after the last span).
  Vmatr base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    Vmatr v;
    v.vmode = rng.chance(2) ? 1 : 0;
    v.t = rng.chance(4) ? (rng.chance(2) ? 1 : 64) : 1 + rng.below(64);
    v.r0 = rng.chance(4) ? kRows - v.t : rng.chance(8) ? 0 : rng.below(kRows + 1 - v.t);
    if (v.vmode == 0) {
      v.src = rng.below(6);
      v.dst = rng.chance(4) ? kVrWords - 448 - v.t : rng.below(kVrWords - 448 - v.t + 1);
    } else if (rng.chance(2)) {  // dst before src
      v.src = 64 + rng.below(kVrWords - 448 - v.t - 64 + 1);
      v.dst = rng.chance(4) ? v.src - 64 : rng.below(v.src - 64 + 1);
    } else {  // dst after the last span
      v.src = rng.below(kVrWords - 448 - v.t - 64 + 1);
      const u32 lo = v.src + 448 + v.t;
      v.dst = rng.chance(4) ? lo : lo + rng.below(kVrWords - 64 - lo + 1);
    }
    return v;
  }
};

}  // namespace

const OpCase& vmatr_case() {
  static const VmatrCase c;
  return c;
}

}  // namespace lockstep::ops
