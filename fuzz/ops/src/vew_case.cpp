// VEW (vector.md section 4.5) as a test case: ADD, MUL, MULS (GS 0..6), ROT (position 0..63).
//   X(rs1) = a << 16 | dst, X(rs2) = n << 16 | b; f7 = MODE | GS << 2 (bits 6..5 reserved)
//   ADD  VR[dst + i] <- sat32(VR[a + i] + VR[b + i])
//   MUL  VR[dst + i] <- sat32(rnd(VR[a + i] * VR[b + i], 16))
//   MULS VR[dst + i] <- sat32(rnd(VR[a + i] * VR[b + (i >> GS)], 16))
//   ROT  pairs (u, v) of the a span rotated by COS/SIN[b][k mod 4]
#include <algorithm>

#include "lockstep/ops/op_case.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ops {
namespace {

constexpr u32 kAdd = 0, kMul = 1, kMuls = 2, kRot = 3;

struct Vew {
  u32 mode = 0, gs = 0, n = 0, dst = 0, a = 0, b = 0, extra = 0, rd = 0;
  bool same = false, x0 = false;
  Fields fields() const {
    Fields f;
    f.a = dst, f.b = a, f.c = b, f.n = n, f.f7 = extra | mode | gs << 2, f.rd = rd, f.same = same, f.x0 = x0;
    return f;
  }
};

// The scalar span's length of MULS: ((n - 1) >> GS) + 1.
u32 muls_len(u32 n, u32 gs) { return ((n - 1) >> gs) + 1; }

std::int64_t rnd16(std::int64_t x) { return (x + (std::int64_t{1} << 15)) >> 16; }

class VewCase final : public OpCase {
 public:
  std::string_view name() const override { return "vew"; }
  ref::Op op() const override { return ref::Op::kVew; }
  std::vector<std::string_view> modes() const override { return {"vew.add", "vew.mul", "vew.muls", "vew.rot"}; }
  bool selectable_modes() const override { return true; }
  u32 mode_of(const Fields& f) const override { return f.f7 & 3; }
  std::vector<unsigned> codes() const override { return {16, 17, 18, 20, 23}; }
  std::vector<unsigned> codes_of(u32 modes) const override {
    if (modes >> kRot & 1) return codes();
    return {16, 17, 18, 20};
  }

  std::string vars(const Fields& f) const override {
    return std::string(modes()[f.f7 & 3]) +
           " " + format_vars({{"dst", f.a}, {"a", f.b}, {f.f7 % 4 == kRot ? "p" : "b", f.c}, {"n", f.n}, {"gs", f.f7 >> 2 & 7},
                              {"f7", f.f7}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const u32 mode = f.f7 & 3, gs = f.f7 >> 2 & 7, dst = f.a, a = f.b, b = f.c, n = f.n;
    if ((f.f7 >> 5) != 0 || gs == 7 || (mode != kMuls && gs != 0) || f.rd != 0) return 16;
    const std::uint64_t scalars = mode == kMuls ? (n == 0 ? 0 : muls_len(n, gs)) : n;
    if (std::uint64_t{a} + n > kVrWords || std::uint64_t{dst} + n > kVrWords ||
        (mode != kRot && b + scalars > kVrWords))
      return 17;
    if (n == 0 || n > kVrWords || (mode == kRot && n % 2)) return 18;
    if (conflicts(dst, n, a, n)) return 20;
    if ((mode == kAdd || mode == kMul) && conflicts(dst, n, b, n)) return 20;
    if (mode == kMuls && shares(b, static_cast<u32>(scalars), dst, n)) return 20;
    if (mode == kRot && b >= 64) return 23;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override { return {{f.a, f.n}}; }

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16, 17, 18, 20 (and 23 for ROT): one alone half the time
  // (20, the overlaps, twice as often), else any combination; `code`: that condition alone.
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vew v = base(ctx);
    if (code == 23 && v.mode != kRot) v = rot_of(v);
    const bool rot = v.mode == kRot;
    v.same = v.x0 = false;
    static constexpr unsigned kAlone[] = {1, 2, 4, 8, 8, 16};
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : code == 20 ? 8 : code == 23 ? 16 : 0;
    if (mask == 0) mask = rng.chance(2) ? kAlone[rng.below(rot ? 6 : 5)] : 1 + rng.below(rot ? 31 : 15);
    if (mask & 8) {  // 20: dst at distance 1..n-1 from a, or b (ADD, MUL); inside MULS's scalars
      v.n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
      if (rot) v.n += v.n % 2;
      const u32 hi = kVrWords - v.n;
      v.a = std::min(v.a, hi);
      if (!rot) v.b = std::min(v.b, hi);
      if (v.mode == kMuls && rng.chance(2)) {
        const u32 m = muls_len(v.n, v.gs);
        v.dst = std::min(v.b + rng.below(m), hi);
        if (!shares(v.b, m, v.dst, v.n)) v.dst = v.b;
      } else {
        const u32 base_span = (v.mode >= kMuls || rng.chance(2)) ? v.a : v.b, d = 1 + rng.below(v.n - 1);
        v.dst = base_span + d <= hi ? base_span + d : base_span - d;  // n <= 256 leaves >= 768 starts
      }
    }
    if (mask & 2) {  // 17
      switch (rng.below(rot ? 3 : 4)) {
        case 0:
          if (code != 17) v.n = kVrWords + 1 + rng.below(65536 - kVrWords - 1);  // also 18
          break;
        case 1: v.dst = ctx.outside(v.n); break;
        case 2: v.a = ctx.outside(v.n); break;
        default: v.b = ctx.outside(v.mode == kMuls ? muls_len(v.n, v.gs) : v.n); break;
      }
      if (code == 17 && v.dst + v.n <= kVrWords && v.a + v.n <= kVrWords) v.dst = ctx.outside(v.n);
    }
    if (mask & 4) {  // 18: n = 0; ROT: odd
      v.n = rot && v.n && rng.chance(2) ? v.n | 1 : 0;
      if (code == 18 && trap_code(v.fields()) != 18) v.n = 0;  // an odd n past VR: 17
    }
    if (mask & 16) v.b = ctx.past_limit(63, 65535);  // 23: p = 64 a third of the time
    if (mask & 1) {  // 16: reserved f7 bits, GS outside MULS or GS = 7, rd != x0
      switch (rng.below(3)) {
        case 0: v.extra = (1 + rng.below(3)) << 5; break;
        case 1: v.gs = v.mode == kMuls ? 7 : 1 + rng.below(7); break;
        default: v.rd = 1 + rng.below(31); break;
      }
    }
    return v.fields();
  }

  std::vector<std::string> buckets(u32 modes) const override {
    std::vector<std::string> b;
    for (u32 m = 0; m < 4; ++m)
      if (modes >> m & 1) b.emplace_back(modes_names(m));
    b.insert(b.end(), {"in place", "n > 512", "reads an earlier destination", "saturates", "does not saturate"});
    for (u32 r = 0; r < 4; ++r)  // ROT's n is even
      if (r % 2 == 0 || (modes & ~(1u << kRot)) != 0) b.push_back("n mod 4=" + std::to_string(r));
    if (modes >> kMuls & 1)
      for (u32 gs = 0; gs <= 6; ++gs) b.push_back("muls gs=" + std::to_string(gs));
    if (modes >> kMuls & 1)
      for (u32 gs = 1; gs <= 6; ++gs) b.push_back("muls gs=" + std::to_string(gs) + ", n mod 2^gs != 0");
    if (modes >> kRot & 1) b.insert(b.end(), {"rot p=0", "rot p=63", "rot p in 1..31", "rot p in 32..62"});
    // The layouts (the old chip_vew_random test's classes that the fields alone decide).
    b.insert(b.end(), {"n 1..5", "n 63..65", "n 255..257", "n 1021..1024", "n = 1024", "rs1 = rs2", "rs1 = x0",
                       "a span ends at 1023"});
    if (modes & (1u << kAdd | 1u << kMul)) b.insert(b.end(), {"dst = b", "a = b", "dst = a = b"});
    if (modes >> kMuls & 1) b.push_back("muls dst = a");
    if (modes >> kRot & 1)
      b.insert(b.end(), {"rot in place", "rot disjoint", "rot a odd", "rot n = 2", "rot n >= 1022", "rot span ends at 1023"});
    for (u32 m = 0; m < 4; ++m) {  // the value classes (the old chip_vew_random test's)
      if (!(modes >> m & 1)) continue;
      b.push_back(modes_names(m) + " saturates up");
      b.push_back(modes_names(m) + " saturates down");
      if (m == kAdd) continue;  // MUL, MULS, ROT round
      b.push_back(modes_names(m) + " a positive tie of rnd");
      b.push_back(modes_names(m) + " a negative tie of rnd");
    }
    return b;
  }

  std::vector<std::string> register_edge_buckets(u32 modes) const override {
    std::vector<std::string> b = {"n 1021..1024", "n = 1024"};
    if (modes >> kRot & 1) b.push_back("rot n >= 1022");
    return b;
  }

  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 mode = f.f7 & 3, gs = f.f7 >> 2 & 7, dst = f.a, a = f.b, b = f.c, n = f.n;
    ++out[modes_names(mode)];
    out["in place"] += dst == a;
    out["n > 512"] += n > 512;
    out["reads an earlier destination"] +=
        reads_written(a, n, e.written) || (mode != kRot && reads_written(b, mode == kMuls ? muls_len(n, gs) : n, e.written));
    ++out["n mod 4=" + std::to_string(n % 4)];
    out["n 1..5"] += n <= 5;
    out["n 63..65"] += n >= 63 && n <= 65;
    out["n 255..257"] += n >= 255 && n <= 257;
    out["n 1021..1024"] += n >= 1021;
    out["n = 1024"] += n == kVrWords;  // the whole register file (the range above hid whether it ran)
    out["rs1 = rs2"] += f.same;
    out["rs1 = x0"] += f.x0;
    out["a span ends at 1023"] += a + n == kVrWords;
    if (mode == kAdd || mode == kMul) {
      out["dst = b"] += dst == b;
      out["a = b"] += a == b;
      out["dst = a = b"] += dst == a && a == b;
    }
    if (mode == kMuls) out["muls dst = a"] += dst == a;
    if (mode == kRot) {
      out["rot in place"] += dst == a;
      out["rot disjoint"] += !shares(dst, n, a, n);
      out["rot a odd"] += a % 2 == 1;
      out["rot n = 2"] += n == 2;
      out["rot n >= 1022"] += n >= 1022;
      out["rot span ends at 1023"] += a + n == kVrWords || dst + n == kVrWords;
    }
    if (mode == kMuls) ++out["muls gs=" + std::to_string(gs)];
    if (mode == kMuls && gs > 0) out["muls gs=" + std::to_string(gs) + ", n mod 2^gs != 0"] += n % (1u << gs) != 0;
    if (mode == kRot) {  // every position, and the two halves of the interior
      ++out["rot p=" + std::to_string(b)];
      if (b != 0 && b != 63) ++out[b < 32 ? "rot p in 1..31" : "rot p in 32..62"];
    }
    const ref::VectorTables& tab = ref::vector_tables();
    // Per element: its exact value before rnd (MUL, MULS: x y; ROT: u c - v s, u s + v c; ADD: x +
    // y, not rounded), whether sat32 cuts it up or down, and (but ADD) a tie of rnd(., 16).
    std::uint64_t up = 0, down = 0, tie_pos = 0, tie_neg = 0, elements = 0;
    auto element = [&](std::int64_t exact) {
      const std::int64_t z = mode == kAdd ? exact : rnd16(exact);
      up += z > INT32_MAX;
      down += z < INT32_MIN;
      if (mode != kAdd && (exact & 0xFFFF) == 0x8000) ++(exact > 0 ? tie_pos : tie_neg);
      ++elements;
    };
    for (u32 i = 0; i < n; ++i) {
      const std::int64_t x = e.vr[a + i];
      if (mode == kRot) {
        if (i % 2) continue;
        const std::int64_t v = e.vr[a + i + 1], cs = tab.cos[b][(i / 2) % 4], sn = tab.sin[b][(i / 2) % 4];
        element(x * cs - v * sn);
        element(x * sn + v * cs);
        continue;
      }
      const std::int64_t y = e.vr[mode == kMuls ? b + (i >> gs) : b + i];
      element(mode == kAdd ? x + y : x * y);
    }
    out["saturates"] += up + down;
    out["does not saturate"] += elements - up - down;
    out[modes_names(mode) + " saturates up"] += up;
    out[modes_names(mode) + " saturates down"] += down;
    if (mode != kAdd) {
      out[modes_names(mode) + " a positive tie of rnd"] += tie_pos;
      out[modes_names(mode) + " a negative tie of rnd"] += tie_neg;
    }
  }

 private:
  static std::string modes_names(u32 m) {
    static constexpr const char* kNames[] = {"vew.add", "vew.mul", "vew.muls", "vew.rot"};
    return kNames[m];
  }

  // Section 6's conditions for VEW with rd = x0: no trap.
  static bool valid(u32 mode, u32 gs, u32 dst, u32 a, u32 b, u32 n) {
    if (n < 1 || n > kVrWords || (mode != kMuls && gs != 0) || gs > 6) return false;
    if (dst + n > kVrWords || a + n > kVrWords || conflicts(dst, n, a, n)) return false;
    if (mode == kRot) return n % 2 == 0 && b < 64;
    const u32 m = mode == kMuls ? muls_len(n, gs) : n;
    if (b + m > kVrWords) return false;
    return mode == kMuls ? !shares(b, m, dst, n) : !conflicts(dst, n, b, n);
  }

  // ROT's position p (0..63): the ends half the time.
  static u32 rot_position(progen::Random& rng) {
    switch (rng.below(4)) {
      case 0: return 0;
      case 1: return 63;
      default: return rng.below(64);
    }
  }

  // `v` as a ROT (for a trap of code 23 drawn from a VEW of another mode): n even, in place.
  static Vew rot_of(Vew v) {
    v.mode = kRot;
    v.gs = 0;
    v.n = std::max<u32>(2, v.n - v.n % 2);
    v.dst = v.a = std::min(v.a, kVrWords - v.n);
    return v;
  }

  // A valid VEW of the selected modes (MULS, with its seven GS, a quarter of the time more than
  // the others): dst span identical to or disjoint from the a span and (ADD,
  // MUL) the b span, MULS's scalar span disjoint from it (its last group ragged, n not a multiple
  // of 2^GS, at least half the time), ROT's n even and position 0..63; sources
  // at or inside earlier destinations half the time (chains), in place, a = b, rs1 = rs2, rs1 = x0.
  Vew base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    Vew v;
    const u32 selected = ctx.modes_of(op(), all_modes());
    v.mode = ctx.pick_bit(selected);
    if (v.mode != kMuls && (selected >> kMuls & 1) && rng.chance(4)) v.mode = kMuls;  // MULS's seven GS more often
    const bool rot = v.mode == kRot;
    v.gs = v.mode == kMuls ? rng.below(7) : 0;
    v.n = ctx.element_count(rot);
    if (v.gs > 0 && v.n % (1u << v.gs) == 0 && rng.chance(2)) v.n -= 1;  // MULS: a ragged last group
    if (((v.mode < kMuls && v.n <= 512) || (rot && v.n < 64)) && rng.chance(16)) {  // rs1 = rs2: dst = C = b, a = N = n
      v.dst = v.a = v.b = v.n;
      v.same = true;
    } else if (rng.chance(16)) {  // rs1 = x0: dst = a = 0
      v.x0 = true;
      const u32 m = v.mode == kMuls ? muls_len(v.n, v.gs) : v.n;
      if (v.mode == kMuls && v.n + m > kVrWords) v.n = kVrWords / 2;
      if (rot) {
        v.b = rot_position(rng);
      } else {
        v.b = v.mode == kMuls ? v.n + rng.below(kVrWords - v.n - muls_len(v.n, v.gs) + 1)
              : rng.chance(2) ? 0
                              : rng.below(kVrWords - v.n + 1);
        if (v.mode != kMuls && conflicts(0, v.n, v.b, v.n)) v.b = 0;
      }
    } else {
      bool ok = false;
      for (int tries = 0; tries < 64 && !ok; ++tries) {
        const u32 m = v.mode == kMuls ? muls_len(v.n, v.gs) : v.n;
        v.a = ctx.vr_start(v.n);
        v.b = rot ? rot_position(rng) : rng.chance(4) ? (m <= v.n ? v.a : ctx.vr_start(m)) : ctx.vr_start(m);
        switch (rng.below(4)) {
          case 0: v.dst = v.a; break;
          case 1: v.dst = v.mode >= kMuls ? ctx.vr_start(v.n) : v.b; break;
          default: v.dst = ctx.vr_start(v.n); break;
        }
        ok = valid(v.mode, v.gs, v.dst, v.a, v.b, v.n);
      }
      if (!ok) {  // in place; MULS: the scalars after the destination (GS raised or n cut to fit)
        if (v.mode == kMuls) {
          while (v.gs < 6 && v.n + muls_len(v.n, v.gs) > kVrWords) ++v.gs;
          while (v.n + muls_len(v.n, v.gs) > kVrWords) --v.n;
          v.dst = v.a = rng.below(kVrWords - v.n - muls_len(v.n, v.gs) + 1);
          v.b = v.dst + v.n + rng.below(kVrWords - v.dst - v.n - muls_len(v.n, v.gs) + 1);
        } else {
          v.dst = v.a = ctx.vr_start(v.n);
          v.b = rot ? rot_position(rng) : v.dst;
        }
      }
    }
    return v;
  }
};

}  // namespace

const OpCase& vew_case() {
  static const VewCase c;
  return c;
}

}  // namespace lockstep::ops
