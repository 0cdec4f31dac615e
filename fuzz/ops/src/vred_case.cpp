// VRED (vector.md section 4.7) as a test case: SUMSQ, SUM, MAX of a span of VR into one word.
//   X(rs1) = src << 16 | dst, X(rs2) = n << 16 | C (C unused); f7 = MODE | SH << 2
//   SUMSQ, SUM: VR[dst] <- sat32(rnd(sum, SH)); MAX (SH = 0): VR[dst] <- max
#include <algorithm>
#include <cstdint>

#include "lockstep/ops/op_case.h"

namespace lockstep::ops {
namespace {

constexpr u32 kSumsq = 0, kSum = 1, kMax = 2;

std::int64_t rnd(std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; }

struct Vred {
  u32 mode = 0, sh = 0, n = 0, src = 0, dst = 0, c = 0, rd = 0;
  bool same = false;
  Fields fields() const {
    Fields f;
    f.a = dst, f.b = src, f.c = c, f.n = n, f.f7 = sh << 2 | mode, f.rd = rd, f.same = same;
    return f;
  }
};

class VredCase final : public OpCase {
 public:
  std::string_view name() const override { return "vred"; }
  ref::Op op() const override { return ref::Op::kVred; }
  std::vector<std::string_view> modes() const override { return {"vred.sumsq", "vred.sum", "vred.max"}; }
  bool selectable_modes() const override { return true; }
  u32 mode_of(const Fields& f) const override { return f.f7 & 3; }
  std::vector<unsigned> codes() const override { return {16, 17, 18}; }

  std::string vars(const Fields& f) const override {
    return (f.f7 % 4 < 3 ? std::string(modes()[f.f7 & 3]) : "vred.mode3") + " " +
           format_vars({{"dst", f.a}, {"src", f.b}, {"n", f.n}, {"sh", f.f7 >> 2}, {"c", f.c}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const u32 mode = f.f7 & 3, sh = f.f7 >> 2, dst = f.a, src = f.b, n = f.n;
    if (mode == 3 || (mode == kMax && sh != 0) || f.rd != 0) return 16;
    if (src + n > kVrWords || dst >= kVrWords) return 17;
    if (n == 0 || n > kVrWords) return 18;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override { return {{f.a, 1}}; }

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16 (MODE = 3, MAX with SH != 0, rd != x0), 17, 18 in
  // any MODE: one alone half the time, else any combination; `code`: that condition alone.
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vred v = base(ctx);
    v.same = false;
    v.mode = rng.below(3);
    if (v.mode == kMax) v.sh = 0;
    static constexpr unsigned kAlone[] = {1, 2, 4};
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : 0;
    if (mask == 0) mask = rng.chance(2) ? kAlone[rng.below(3)] : 1 + rng.below(7);
    if (mask & 2) {  // 17
      if (rng.chance(2)) v.src = ctx.outside(v.n);
      else v.dst = kVrWords + rng.below(65536 - kVrWords);
    }
    if (mask & 4) {  // 18: n = 0 or past VR (alone too, where no lower code comes with it)
      v.n = rng.chance(2) ? 0 : ctx.past_limit(kVrWords, 65535);
      if (code == 18 && trap_code(v.fields()) != 18) v.n = 0;
    }
    if (mask & 1) {  // 16
      switch (rng.below(3)) {
        case 0: v.mode = 3; break;
        case 1: v.mode = kMax; v.sh = 1 + rng.below(31); break;
        default: v.rd = 1 + rng.below(31); break;
      }
    }
    return v.fields();
  }

  std::vector<std::string> buckets(u32 modes) const override {
    std::vector<std::string> b;
    for (u32 m = 0; m < 3; ++m)
      if (modes >> m & 1) b.emplace_back(this->modes()[m]);
    b.insert(b.end(), {"n > 64", "dst inside the source", "reads an earlier destination", "n a multiple of 64",
                       "n = 64 k + 1", "n=1", "n=1024", "source ends at 1023"});
    if (modes >> kSumsq & 1 || modes >> kSum & 1)
      for (const char* sh : {"sh=0", "sh=1", "sh=16", "sh=17", "sh=31"}) b.emplace_back(sh);
    if (modes >> kSum & 1)
      b.insert(b.end(), {"sum saturates up", "sum saturates down", "sum a tie of rnd", "sum negative", "sum positive"});
    if (modes >> kSumsq & 1)
      b.insert(b.end(), {"sumsq saturates", "sumsq a tie of rnd", "sumsq result 0", "sumsq sum of squares >= 2^62"});
    if (modes >> kMax & 1)
      b.insert(b.end(), {"max held by two or more words", "max negative", "max of INT32_MIN words", "max decided by the low half"});
    return b;
  }

  // Besides the modes and layouts, the value classes of section 4.7 (the old chip_vred_random
  // test's), from the source words before the instruction: SUM saturating up and down, a tie of
  // rnd(acc, SH), a negative and a positive result; SUMSQ saturating, a tie of rnd(acc, 16 + SH), a
  // result 0, a sum of squares >= 2^62; MAX held by two or more words, negative, of INT32_MIN
  // words only, decided by the low half (the largest two words share their high half).
  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 mode = f.f7 & 3, sh = f.f7 >> 2, dst = f.a, src = f.b, n = f.n;
    ++out[std::string(modes()[mode])];
    ++out["sh=" + std::to_string(sh)];
    out["n > 64"] += n > 64;
    out["n a multiple of 64"] += n % 64 == 0;
    out["n = 64 k + 1"] += n > 64 && n % 64 == 1;
    out["n=1"] += n == 1;
    out["n=1024"] += n == kVrWords;
    out["source ends at 1023"] += src + n == kVrWords;
    out["dst inside the source"] += dst >= src && dst < src + n;
    out["reads an earlier destination"] += reads_written(src, n, e.written);
    if (mode == kMax) {
      std::int64_t mx = INT64_MIN, second = INT64_MIN;
      u32 at_max = 0;
      for (u32 i = 0; i < n; ++i) {
        const std::int64_t x = e.vr[src + i];
        if (x > mx) {
          second = mx;
          mx = x;
          at_max = 1;
        } else if (x == mx) {
          ++at_max;
        } else if (x > second) {
          second = x;
        }
      }
      out["max held by two or more words"] += at_max >= 2;
      out["max negative"] += mx < 0;
      out["max of INT32_MIN words"] += mx == INT32_MIN;
      out["max decided by the low half"] += second != INT64_MIN && (mx >> 16) == (second >> 16);
      return;
    }
    if (mode == kSumsq) {  // acc <= 2^72: 128 bits
      using u128 = unsigned __int128;
      u128 sq = 0;
      for (u32 i = 0; i < n; ++i) {
        const std::int64_t x = e.vr[src + i];
        sq += static_cast<u128>(x * x);
      }
      const u32 s = 16 + sh;
      const u128 r = (sq + (u128{1} << (s - 1))) >> s;
      out["sumsq saturates"] += r > 0x7FFFFFFFu;
      out["sumsq result 0"] += r == 0;
      out["sumsq sum of squares >= 2^62"] += sq >= u128{1} << 62;
      out["sumsq a tie of rnd"] += (sq & ((u128{1} << s) - 1)) == u128{1} << (s - 1);
      return;
    }
    std::int64_t acc = 0;
    for (u32 i = 0; i < n; ++i) acc += e.vr[src + i];
    const std::int64_t z = rnd(acc, sh);
    out["sum saturates up"] += z > INT32_MAX;
    out["sum saturates down"] += z < INT32_MIN;
    out["sum a tie of rnd"] += rnd_tie(acc, sh);
    out["sum negative"] += z < 0;
    out["sum positive"] += z > 0;
  }

  bool draws_vr() const override { return true; }

  // The old chip_vred_random test's eight profiles, one per program: any words; near INT32_MAX;
  // near INT32_MIN; small words (-64..64: with SH = 1..7 the low bits of a sum are often a tie);
  // a mix of the classes (0, -1, +-2^k, INT32_MIN, INT32_MAX, small, any); 0 and +-2^8..2^15 with
  // adjacent pairs of +-128 (one pair slot in 16: a span holding an odd number of pairs is a tie
  // of SUMSQ's rnd(., 16)); high halves -1, 0 or 1 (MAX decided by the low half,
  // ties of the maximum); INT32_MIN (one word in 64 a 0). SUMSQ's ties three times and MAX of
  // INT32_MIN words twice as often as the others.
  void fill_vr(DrawContext& ctx, std::span<u32> vr) const override {
    static constexpr u32 kProfiles[] = {0, 1, 2, 3, 4, 5, 6, 7, 5, 7, 5};
    const u32 profile = kProfiles[ctx.rng.below(11)];
    for (std::size_t i = 0; i < vr.size(); ++i) {
      if (profile == 5 && i + 1 < vr.size() && ctx.rng.chance(16)) {  // a pair of +-128: their squares add to 2^15
        vr[i] = ctx.rng.chance(2) ? 128u : 0u - 128u;
        vr[++i] = ctx.rng.chance(2) ? 128u : 0u - 128u;
        continue;
      }
      vr[i] = vr_word(ctx.rng, profile);
    }
  }

 private:
  static u32 vr_word(progen::Random& rng, u32 profile) {
    switch (profile) {
      case 1: return 0x7FFFFFFFu - rng.below(1u << 24);
      case 2: return 0x80000000u + rng.below(1u << 24);
      case 3: return static_cast<u32>(static_cast<std::int32_t>(rng.below(129)) - 64);
      case 4:
        switch (rng.below(8)) {
          case 0: return 0;
          case 1: return 0xFFFFFFFFu;
          case 2: return 0x80000000u;
          case 3: return 0x7FFFFFFFu;
          case 4: return rng.chance(2) ? 1u << rng.below(31) : 0u - (1u << rng.below(31));
          case 5: return static_cast<u32>(static_cast<std::int32_t>(rng.below(129)) - 64);
          default: return static_cast<u32>(rng.next());
        }
      case 5:  // 0 and +-2^8..2^15 (squares multiples of 2^16; fill_vr adds pairs of +-128)
        if (rng.chance(2)) return 0;
        return (rng.chance(2) ? 1u : 0xFFFFFFFFu) * (1u << (8 + rng.below(8)));
      case 6: return ((rng.below(3) - 1) << 16) | (rng.chance(2) ? rng.below(4) * 0x5555u : rng.below(65536));
      case 7: return rng.chance(64) ? 0u : 0x80000000u;
      default: return static_cast<u32>(rng.next());
    }
  }

  // A valid VRED of the selected modes: n at group edges (1, 63..65, 128, 129, 1023, 1024) or any,
  // the source at or inside an earlier destination half the time, dst anywhere (inside the source
  // span a third of the time: one word written after all reads), SH 0..31 (0, 1, 16, 17 and 31
  // weighted: 16 is the last shift that can saturate; SUMSQ: 0 one more time in five), rs1 = rs2 (src = n, dst = C).
  Vred base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    static constexpr u32 kEdges[] = {1, 63, 64, 65, 128, 129, 1023, 1024};
    Vred v;
    v.n = rng.chance(3) ? kEdges[rng.below(8)] : 1 + rng.below(rng.chance(2) ? 256 : kVrWords);
    switch (rng.below(6)) {
      case 0: v.sh = 0; break;
      case 1: v.sh = 1; break;
      case 2: v.sh = 16 + rng.below(2); break;
      case 3: v.sh = 31; break;
      default: v.sh = rng.below(32); break;
    }
    v.mode = ctx.pick_bit(ctx.modes_of(op(), all_modes()));
    if (v.mode == kMax) v.sh = 0;                        // MAX: SH must be 0
    if (v.mode == kSumsq && rng.chance(5)) v.sh = 0;     // SUMSQ: the ties of fill_vr's +-128 words
    v.src = ctx.vr_start(v.n);
    v.dst = rng.chance(3) ? v.src + rng.below(v.n) : rng.below(kVrWords);
    v.c = rng.chance(2) ? 0 : rng.below(65536);
    if (v.n <= 512 && rng.chance(16)) {  // rs1 = rs2: A = C = dst, B = N = n
      v.same = true;
      v.src = v.n;
      v.dst = v.c = rng.below(kVrWords);
    }
    return v;
  }
};

}  // namespace

const OpCase& vred_case() {
  static const VredCase c;
  return c;
}

}  // namespace lockstep::ops
