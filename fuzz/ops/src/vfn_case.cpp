// VFN (vector.md section 4.6) as a test case: RSQRT, RECIP, SILU over a span of VR.
//   X(rs1) = src << 16 | dst, X(rs2) = n << 16 | C (C unused); f7 = FN (3..127 invalid)
//   VR[dst + i] <- FN(VR[src + i]); dst identical to or disjoint from src
#include <algorithm>
#include <array>

#include "lockstep/ops/op_case.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ops {
namespace {

std::int64_t rnd(std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; }
bool tie(std::int64_t x, unsigned s) { return s >= 1 && (x & ((std::int64_t{1} << s) - 1)) == std::int64_t{1} << (s - 1); }
// SILU's words on either side of the points where ix = rnd(x, 10) + 512 reaches 1023 (x >= 522752)
// and 0 (x <= -523777).
constexpr std::int64_t kSiluEdges[] = {522751, 522752, -523776, -523777};
unsigned log2(std::int64_t u) { return 63u - static_cast<unsigned>(__builtin_clzll(static_cast<std::uint64_t>(u))); }

// Inputs x whose final rounding is a tie: RSQRT's rnd(RSQ[ix], k2/2) and RECIP's rnd(RCP[ix], k - 2)
// with the low half of the dropped bits exactly 100..0. Each entry: the smallest such x and the
// count of low bits free below ix (any value keeps ix and k).
struct Tie {
  u32 x, free_bits;
};
const std::vector<Tie>& ties(u32 fn) {
  static const std::array<std::vector<Tie>, 2> t = [] {
    const ref::VectorTables& tab = ref::vector_tables();
    std::array<std::vector<Tie>, 2> out;
    for (u32 k2 = 2; k2 <= 30; k2 += 2)  // RSQRT: u = ix << (k2 - 6), or ix >> (6 - k2) when exact
      for (u32 ix = 64; ix < 256; ++ix) {
        if (!tie(tab.rsq[ix], k2 / 2) || (k2 < 6 && ix % (1u << (6 - k2)))) continue;
        const std::uint64_t u = k2 >= 6 ? std::uint64_t{ix} << (k2 - 6) : ix >> (6 - k2), free = k2 >= 6 ? k2 - 6 : 0;
        if (u + (std::uint64_t{1} << free) - 1 <= 0x7fffffffu) out[0].push_back({static_cast<u32>(u), static_cast<u32>(free)});
      }
    for (u32 k = 3; k <= 30; ++k)  // RECIP: u = ix << (k - 7), or ix >> (7 - k) when exact
      for (u32 ix = 128; ix < 256; ++ix) {
        if (!tie(tab.rcp[ix], k - 2) || (k < 7 && ix % (1u << (7 - k)))) continue;
        const std::uint64_t u = k >= 7 ? std::uint64_t{ix} << (k - 7) : ix >> (7 - k), free = k >= 7 ? k - 7 : 0;
        if (u + (std::uint64_t{1} << free) - 1 <= 0x7fffffffu) out[1].push_back({static_cast<u32>(u), static_cast<u32>(free)});
      }
    return out;
  }();
  return t[fn];
}

struct Vfn {
  u32 fn = 0, n = 0, dst = 0, src = 0, c = 0, rd = 0;
  bool same = false, x0 = false;
  Fields fields() const {
    Fields f;
    f.a = dst, f.b = src, f.c = c, f.n = n, f.f7 = fn, f.rd = rd, f.same = same, f.x0 = x0;
    return f;
  }
};

class VfnCase final : public OpCase {
 public:
  std::string_view name() const override { return "vfn"; }
  ref::Op op() const override { return ref::Op::kVfn; }
  std::vector<std::string_view> modes() const override { return {"vfn.rsqrt", "vfn.recip", "vfn.silu"}; }
  bool selectable_modes() const override { return true; }
  u32 mode_of(const Fields& f) const override { return f.f7; }
  std::vector<unsigned> codes() const override { return {16, 17, 18, 20}; }

  std::string vars(const Fields& f) const override {
    return (f.f7 < 3 ? std::string(modes()[f.f7]) : "vfn.fn" + std::to_string(f.f7)) + " " +
           format_vars({{"dst", f.a}, {"src", f.b}, {"n", f.n}, {"c", f.c}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const u32 dst = f.a, src = f.b, n = f.n;
    if (f.f7 >= 3 || f.rd != 0) return 16;
    if (src + n > kVrWords || dst + n > kVrWords) return 17;
    if (n == 0 || n > kVrWords) return 18;
    if (conflicts(dst, n, src, n)) return 20;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override { return {{f.a, f.n}}; }

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16 (FN >= 3, rd != x0), 17, 18, 20: one alone half the
  // time (20 twice as often), else any combination; `code`: that condition alone.
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vfn v = base(ctx);
    v.same = v.x0 = false;
    static constexpr unsigned kAlone[] = {1, 2, 4, 8, 8};
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : code == 20 ? 8 : 0;
    if (mask == 0) mask = rng.chance(2) ? kAlone[rng.below(5)] : 1 + rng.below(15);
    if (mask & 8) {  // 20: dst at distance 1..n-1 from src
      v.n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
      const u32 hi = kVrWords - v.n, d = 1 + rng.below(v.n - 1);
      v.src = std::min(v.src, hi);
      v.dst = v.src + d <= hi ? v.src + d : v.src - d;
    }
    if (mask & 2) {  // 17
      switch (rng.below(3)) {
        case 0:
          if (code != 17) {
            v.n = kVrWords + 1 + rng.below(65536 - kVrWords - 1);  // also 18
            break;
          }
          [[fallthrough]];
        case 1: v.dst = ctx.outside(v.n); break;
        default: v.src = ctx.outside(v.n); break;
      }
    }
    if (mask & 4) v.n = 0;  // 18
    if (mask & 1) {         // 16: FN 3..127, rd != x0
      if (rng.chance(2)) v.fn = 3 + (rng.chance(2) ? rng.below(4) : rng.below(125));
      else v.rd = 1 + rng.below(31);
    }
    return v.fields();
  }

  std::vector<std::string> buckets(u32 modes) const override {
    std::vector<std::string> b = {"in place", "n > 512", "reads an earlier destination",
                                  // the layouts (the old chip_vfn_random test's classes the fields decide)
                                  "n 1..5", "n=1021", "n=1022", "n=1023", "n=1024", "dst next to src",
                                  "rs1 = rs2", "rs1 = x0", "span ends at 1023"};
    for (u32 fn = 0; fn < 3; ++fn) {
      if (!(modes >> fn & 1)) continue;
      const std::string m(this->modes()[fn]);
      b.push_back(m);
      for (const char* path : {"x<=0", "pow2", "int-max"}) b.push_back(m + " " + path);
      if (fn == 2) {
        for (const char* path : {"clamp-edge", "tie-ix", "tie-product"}) b.push_back(m + " " + path);
        for (const char* path : {"ix at 0", "ix at 1023", "a positive tie of rnd(x, 10)", "a negative tie of rnd(x, 10)"})
          b.push_back(m + " " + path);
        for (const std::int64_t x : kSiluEdges) b.push_back(m + " x=" + std::to_string(x));
      } else {
        b.push_back(m + " tie");
        for (u32 k = 0; k <= 30; ++k) {  // floor_log2 k, 2^k, 2^k + 1, 2^k - 1 (the old chip_vfn_random test's)
          const std::string ks = std::to_string(k);
          b.push_back(m + " log2=" + ks);
          b.push_back(m + " x=2^" + ks);
          b.push_back(m + " x=2^" + ks + "+1");
          if (k > 0) b.push_back(m + " x=2^" + ks + "-1");
        }
      }
    }
    b.insert(b.end(), {"x=INT32_MIN", "x=INT32_MAX"});
    for (u32 r = 0; r < 4; ++r) b.push_back("n mod 4=" + std::to_string(r));
    return b;
  }

  // The paths of section 4.6's formulas that each input element takes.
  std::vector<std::string> register_edge_buckets(u32) const override { return {"n=1021", "n=1022", "n=1023", "n=1024"}; }

  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 dst = f.a, src = f.b, n = f.n;
    const std::string m(modes()[f.f7]);
    ++out[m];
    out["in place"] += dst == src;
    out["n > 512"] += n > 512;
    out["reads an earlier destination"] += reads_written(src, n, e.written);
    out["n 1..5"] += n <= 5;
    if (n >= 1021) ++out["n=" + std::to_string(n)];
    out["dst next to src"] += dst + n == src || src + n == dst;
    out["rs1 = rs2"] += f.same;
    out["rs1 = x0"] += f.x0;
    out["span ends at 1023"] += src + n == kVrWords || dst + n == kVrWords;
    const ref::VectorTables& tab = ref::vector_tables();
    ++out["n mod 4=" + std::to_string(n % 4)];
    for (u32 i = 0; i < n; ++i) {
      const std::int64_t x = e.vr[src + i];
      out["x=INT32_MIN"] += x == INT32_MIN;
      out["x=INT32_MAX"] += x == INT32_MAX;
      out[m + " x<=0"] += x <= 0;
      out[m + " pow2"] += x > 0 && (x & (x - 1)) == 0;
      out[m + " int-max"] += x == INT32_MAX;
      if (f.f7 == 2) {
        const std::int64_t ix = rnd(x, 10) + 512;
        out[m + " clamp-edge"] += ix == -1 || ix == 0 || ix == 1023 || ix == 1024;
        out[m + " tie-ix"] += tie(x, 10);
        out[m + " tie-product"] += tie(x * tab.sig[static_cast<std::size_t>(std::clamp<std::int64_t>(ix, 0, 1023))], 16);
        out[m + " ix at 0"] += ix <= 0;
        out[m + " ix at 1023"] += ix >= 1023;
        if (tie(x, 10)) ++out[m + (x > 0 ? " a positive tie of rnd(x, 10)" : " a negative tie of rnd(x, 10)")];
        for (const std::int64_t edge : kSiluEdges)
          if (x == edge) ++out[m + " x=" + std::to_string(edge)];
        continue;
      }
      if (x > 0) {
        const std::string ks = std::to_string(log2(x));
        ++out[m + " log2=" + ks];
        if ((x & (x - 1)) == 0) ++out[m + " x=2^" + ks];
        if (x > 1 && ((x - 1) & (x - 2)) == 0) ++out[m + " x=2^" + std::to_string(log2(x - 1)) + "+1"];
        if (((x + 1) & x) == 0 && x + 1 <= (std::int64_t{1} << 30)) ++out[m + " x=2^" + std::to_string(log2(x + 1)) + "-1"];
      }
      const std::int64_t u = std::max<std::int64_t>(x, 1);
      const unsigned kk = log2(u), k2 = kk - kk % 2;
      if (f.f7 == 0) {
        const std::int64_t ix = k2 >= 6 ? u >> (k2 - 6) : u << (6 - k2);
        out[m + " tie"] += tie(tab.rsq[static_cast<std::size_t>(ix)], k2 / 2);
      } else {
        const std::int64_t ix = kk >= 7 ? u >> (kk - 7) : u << (7 - kk);
        out[m + " tie"] += kk >= 3 && tie(tab.rcp[static_cast<std::size_t>(ix)], kk - 2);
      }
    }
  }

  // A word of VR for function fn's paths. RSQRT, RECIP: x <= 0 (u = 1), powers of two and their
  // neighbours (k and ix edges; k <= 2 saturates RECIP), INT32_MAX, 1.0 = 65536, final-rounding
  // ties (ties()), log-uniform. SILU: the clamp edges of ix (x around -523,776, -524,800, 522,752
  // and 523,776), the ties of rnd(x, 10) (x = 1024k + 512), the ties of rnd(x * SIG[ix], 16)
  // (2-adic valuation of x = 15 - that of SIG[ix]), INT32_MAX/MIN, log-uniform.
  bool draws_vr() const override { return true; }

  // Every word from input_word() (the old chip_vfn_random test's VR was all input classes).
  void fill_vr(DrawContext& ctx, std::span<u32> vr) const override {
    for (u32& w : vr) w = input_word(ctx);
  }

  u32 input_word(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    const u32 fn = ctx.pick_bit(ctx.modes_of(op(), all_modes()));
    if (fn == 2) {
      switch (rng.below(10)) {
        case 0: case 1: {
          if (rng.chance(3)) return static_cast<u32>(static_cast<std::int32_t>(kSiluEdges[rng.below(4)]));  // ix reaches 0, 1023
          static constexpr std::int32_t kEdges[] = {-524800, -523776, 522752, 523776};
          return static_cast<u32>(kEdges[rng.below(4)] + (rng.chance(2) ? static_cast<std::int32_t>(rng.below(9)) - 4
                                                                         : static_cast<std::int32_t>(rng.below(2049)) - 1024));
        }
        case 2: return static_cast<u32>(1024 * (static_cast<std::int32_t>(rng.below(1026)) - 513) + 512 + static_cast<std::int32_t>(rng.below(3)) - 1);
        case 3: case 4: {  // a product tie: x = 2^(15 - t) * odd, t = ctz(SIG[ix(x)])
          const ref::VectorTables& tab = ref::vector_tables();
          for (int tries = 0; tries < 8; ++tries) {
            const std::int64_t x0 = static_cast<std::int64_t>(rng.below(1100000)) - 550000;
            auto ix = [](std::int64_t x) { return std::clamp<std::int64_t>(((x + 512) >> 10) + 512, 0, 1023); };
            const u32 t = static_cast<u32>(__builtin_ctz(static_cast<u32>(tab.sig[static_cast<std::size_t>(ix(x0))])));
            if (t > 15) continue;
            const std::int64_t x = (x0 >> (16 - t) << (16 - t)) | (std::int64_t{1} << (15 - t));
            if (ix(x) == ix(x0)) return static_cast<u32>(static_cast<std::int32_t>(x));
          }
          return 2 * rng.below(512) + 1 - 512;  // SIG[512] = 2^15: odd x near 0
        }
        case 5: return rng.chance(2) ? 0x7fffffffu - rng.below(4) : 0x80000000u + rng.below(4);
        case 6: return rng.below(65) - 32;
        default: return ctx.log_uniform();
      }
    }
    switch (rng.below(13)) {
      case 0: {  // x <= 0
        static constexpr u32 kLe0[] = {0, 0xffffffffu, 0x80000000u, 0x80000001u};
        return rng.chance(2) ? kLe0[rng.below(4)] : 0u - (1 + (static_cast<u32>(rng.next()) >> (1 + rng.below(31))));
      }
      case 1: case 2: case 10: case 11: case 12: {  // 2^k, 2^k +- 1 (each of the 93 a bucket)
        const u32 p = 1u << rng.below(31);
        return p + rng.below(3) - 1;
      }
      case 3: return 0x7fffffffu - rng.below(2);
      case 4: return 1 + rng.below(8);
      case 5: return 0x10000u + rng.below(65) - 32;  // near 1.0
      case 6: case 7: {
        const std::vector<Tie>& t = ties(fn);
        const Tie& e = t[rng.below(static_cast<u32>(t.size()))];
        return e.x | (static_cast<u32>(rng.next()) & ((1u << e.free_bits) - 1));
      }
      default: return ctx.log_uniform();
    }
  }

 private:
  // A valid VFN of the selected functions: the destination span identical to (in place) or
  // disjoint from the source span; the source at or inside an earlier destination half the time,
  // rs1 = rs2 (src = n), rs1 = x0 (dst = src = 0).
  Vfn base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    Vfn v;
    v.fn = ctx.pick_bit(ctx.modes_of(op(), all_modes()));
    v.n = ctx.element_count();
    v.c = rng.chance(2) ? 0 : rng.below(65536);
    if (v.n <= 512 && rng.chance(16)) {  // rs1 = rs2: A = C = dst, B = N = n
      v.same = true;
      v.src = v.n;
      switch (rng.below(3)) {
        case 0: v.dst = v.n; break;
        case 1: v.dst = 0; break;
        default: v.dst = 3 * v.n <= kVrWords ? 2 * v.n + rng.below(kVrWords - 3 * v.n + 1) : v.n; break;
      }
      v.c = v.dst;
    } else if (rng.chance(16)) {  // rs1 = x0: dst = src = 0
      v.x0 = true;
    } else {
      v.src = ctx.vr_start(v.n);
      v.dst = v.src;
      if (!rng.chance(3)) {
        for (int tries = 0; tries < 16; ++tries) {
          const u32 d = ctx.vr_start(v.n);
          if (!conflicts(d, v.n, v.src, v.n)) {
            v.dst = d;
            break;
          }
        }
      }
    }
    return v;
  }
};

}  // namespace

const OpCase& vfn_case() {
  static const VfnCase c;
  return c;
}

u32 vfn_input_word(DrawContext& ctx) { return static_cast<const VfnCase&>(vfn_case()).input_word(ctx); }

}  // namespace lockstep::ops
