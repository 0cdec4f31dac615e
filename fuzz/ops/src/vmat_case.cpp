// VMAT (vector.md section 4.1) as a test case: R rows of K int4 chunks times ACT blocks b0..b0+K-1.
//   X(rs1) = b0 << 16 | dst, X(rs2) = R << 16 | c0; f7 = K (bits 2..0) | ARGMAX << 3, bits 6..4 reserved
//   write mode: VR[dst + r] <- y_r; argmax mode: X(rd) <- the first r of the largest y_r
#include <algorithm>
#include <cstdint>

#include "lockstep/ops/op_case.h"

namespace lockstep::ops {
namespace {

constexpr u32 kChunks = 4152;  // WMEM row-chunks

struct Vmat {
  u32 k = 1, argmax = 0, rows = 1, b0 = 0, c0 = 0, dst = 0, extra = 0, rd = 0;
  Fields fields() const {
    Fields f;
    f.a = dst, f.b = b0, f.c = c0, f.n = rows, f.f7 = extra | argmax << 3 | k, f.rd = rd;
    return f;
  }
};

class VmatCase final : public OpCase {
 public:
  std::string_view name() const override { return "vmat"; }
  ref::Op op() const override { return ref::Op::kVmat; }
  std::vector<std::string_view> modes() const override { return {"vmat.write", "vmat.argmax"}; }
  u32 mode_of(const Fields& f) const override { return f.f7 >> 3 & 1; }
  std::vector<unsigned> codes() const override { return {16, 17, 18, 19, 21}; }

  std::string vars(const Fields& f) const override {
    return std::string(modes()[f.f7 >> 3 & 1]) + " " +
           format_vars({{"k", f.f7 & 7}, {"r", f.n}, {"b0", f.b}, {"c0", f.c}, {"dst", f.a}, {"f7", f.f7}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const u32 k = f.f7 & 7, argmax = f.f7 >> 3 & 1, dst = f.a, b0 = f.b, c0 = f.c, rows = f.n;
    if (k == 0 || k == 7 || (f.f7 >> 4) != 0 || (!argmax && f.rd != 0)) return 16;
    if (!argmax && dst + rows > kVrWords) return 17;
    if (rows == 0) return 18;
    if (b0 + k > 6) return 19;
    if (c0 + std::uint64_t{rows} * k > kChunks) return 21;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override {
    if (f.f7 >> 3 & 1) return {};  // argmax: rd
    return {{f.a, f.n}};
  }

  Fields draw_valid(DrawContext& ctx) const override { return base(ctx).fields(); }

  // One or more of the conditions of codes 16, 17 (write mode), 18, 19, 21: one alone half the
  // time, else any combination; `code`: that condition alone.
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    Vmat v = base(ctx);
    unsigned mask = code == 16 ? 1 : code == 17 ? 2 : code == 18 ? 4 : code == 19 ? 8 : code == 21 ? 16 : 0;
    if (mask == 0) mask = rng.chance(2) ? 1u << rng.below(5) : 1 + rng.below(31);
    if (mask & 2) {  // 17 (write mode)
      v.argmax = 0;
      v.rd = 0;
      v.dst = ctx.outside(v.rows);
    }
    if (mask & 4) v.rows = 0;                                                       // 18
    if (mask & 8) v.b0 = ctx.past_limit(6 - v.k, 60006 - v.k);                      // 19
    if (mask & 16) v.c0 = ctx.past_limit(kChunks - v.rows * v.k, kChunks - v.rows * v.k + 60000);  // 21
    if (mask & 1) {                                                                 // 16
      switch (rng.below(3)) {
        case 0: v.k = rng.chance(2) ? 0 : 7; break;
        case 1: v.extra = (1 + rng.below(7)) << 4; break;
        default:
          v.argmax = 0;
          v.rd = ctx.dest_reg();
          break;
      }
    }
    return v.fields();
  }

  // Besides the modes and layouts, the value classes of section 4.1 (the old chip_vmat_random
  // test's), computed from ACT, ASH, WMEM and WSCALE before the instruction: a row's y_r
  // saturating up or down, a tie of rnd(., 16), and in argmax mode a row equal to the running
  // maximum (the lower index wins) and a new maximum after such a tie.
  std::vector<std::string> buckets(u32) const override {
    std::vector<std::string> b = {"vmat.write", "vmat.argmax", "argmax with rd = x0", "rows past 256", "r=1",
                                  "c0 + r k = 4152", "b0 + k = 6", "dst + r = 1024", "y saturates up",
                                  "y saturates down", "a tie of rnd", "argmax: a row equal to the maximum",
                                  "argmax: a new maximum after a tie"};
    for (u32 k = 1; k <= 6; ++k) b.push_back("k=" + std::to_string(k));
    return b;
  }
  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 k = f.f7 & 7, argmax = f.f7 >> 3 & 1, b0 = f.b, c0 = f.c, rows = f.n;
    ++out[std::string(modes()[argmax])];
    ++out["k=" + std::to_string(k)];
    out["argmax with rd = x0"] += argmax && f.rd == 0;
    out["rows past 256"] += rows > 256;
    out["r=1"] += rows == 1;
    out["c0 + r k = 4152"] += c0 + rows * k == kChunks;
    out["b0 + k = 6"] += b0 + k == 6;
    out["dst + r = 1024"] += !argmax && f.a + rows == kVrWords;
    const ref::VectorState& st = e.state;
    std::int64_t best = 0;
    bool tie_seen = false, later_max = false;
    for (u32 r = 0; r < rows; ++r) {
      std::int64_t sum = 0;  // |sum| < 2^60 (section 4.1)
      for (u32 j = 0; j < k; ++j) {
        const u32 c = c0 + r * k + j, b = b0 + j;
        std::int64_t acc = 0;
        for (u32 i = 0; i < 64; ++i) acc += std::int64_t{st.act[64 * b + i]} * st.wmem[64 * c + i];
        sum += acc * st.wscale[c] * (std::int64_t{1} << st.ash[b]);
      }
      const std::int64_t y = rnd(sum, 16);
      out["y saturates up"] += y > 0x7FFFFFFF;
      out["y saturates down"] += y < -0x80000000LL;
      out["a tie of rnd"] += rnd_tie(sum, 16);
      if (!argmax) continue;
      const std::int64_t ys = std::clamp<std::int64_t>(y, -0x80000000LL, 0x7FFFFFFF);
      if (r > 0 && ys == best) tie_seen = true;
      if (r > 0 && ys > best && tie_seen) later_max = true;
      if (r == 0 || ys > best) best = ys;
    }
    out["argmax: a row equal to the maximum"] += tie_seen;
    out["argmax: a new maximum after a tie"] += later_max;
  }

  bool draws_memories() const override { return true; }

  // The old chip_vmat_random test's profiles, one per memory per program: activations anywhere,
  // at -128/127, small or zero; shifts 0..25 (25 and 0 weighted); weights anywhere, at -8/7, or
  // chunks copied from a pool of 4 (so that rows tie: by c mod 4 or at random); scales anywhere,
  // 65,535, powers of two (ties of rnd) or 0..3.
  void fill_memories(DrawContext& ctx, Sections& out) const override {
    progen::Random& rng = ctx.rng;
    const u32 pa = rng.below(4), pw = rng.below(4), ps = rng.below(4);
    std::vector<std::uint8_t>& act = out[".lockstep.act"];
    act.resize(384);
    for (std::uint8_t& a : act) {
      switch (pa) {
        case 0: a = static_cast<std::uint8_t>(rng.next()); break;
        case 1: a = rng.chance(2) ? 0x80 : 0x7F; break;
        case 2: a = static_cast<std::uint8_t>(static_cast<int>(rng.below(9)) - 4); break;
        default: a = rng.chance(4) ? static_cast<std::uint8_t>(rng.next()) : 0; break;
      }
    }
    std::vector<std::uint8_t>& ash = out[".lockstep.ash"];
    ash.resize(6);
    for (std::uint8_t& x : ash) x = static_cast<std::uint8_t>(rng.chance(4) ? 25 : rng.chance(4) ? 0 : rng.below(26));
    std::int8_t pool[4][64];
    for (auto& c : pool)
      for (std::int8_t& x : c) x = static_cast<std::int8_t>(static_cast<int>(rng.below(16)) - 8);
    std::vector<std::uint8_t>& w = out[".lockstep.wmem"];
    w.assign(32 * kChunks, 0);
    std::vector<std::uint8_t>& ws = out[".lockstep.wscale"];
    ws.clear();
    for (u32 c = 0; c < kChunks; ++c) {
      for (u32 i = 0; i < 64; ++i) {
        std::int8_t x = 0;
        switch (pw) {
          case 0: x = static_cast<std::int8_t>(static_cast<int>(rng.below(16)) - 8); break;
          case 1: x = rng.chance(2) ? -8 : 7; break;
          case 2: x = pool[c % 4][i]; break;
          default: x = pool[rng.below(4)][i]; break;
        }
        w[32 * c + i / 2] |= static_cast<std::uint8_t>((x & 15) << (4 * (i & 1)));
      }
      u32 scale = 0;
      switch (ps) {
        case 0: scale = rng.below(65536); break;
        case 1: scale = 65535; break;
        case 2: scale = 1u << rng.below(16); break;
        default: scale = rng.below(4); break;
      }
      ws.push_back(static_cast<std::uint8_t>(scale));
      ws.push_back(static_cast<std::uint8_t>(scale >> 8));
    }
  }

 private:
  // A valid VMAT: K 1..6, b0 up to 6 - K (the last block a third of the time), R 1..16 (257..556
  // one time in 16: rows past 256), c0 + R K <= 4152 (reaching it a quarter of the time); write
  // mode (dst + R <= 1024) or, two times in five, argmax mode (rd any of x1..x30 but the context's
  // `avoid`, x0 one time in four).
  Vmat base(DrawContext& ctx) const {
    progen::Random& rng = ctx.rng;
    Vmat v;
    v.k = 1 + rng.below(6);
    v.argmax = rng.below(5) < 2 ? 1 : 0;
    v.rows = std::min<u32>(rng.chance(16) ? 257 + rng.below(300) : 1 + rng.below(16),
                           v.argmax ? kChunks / v.k : std::min(kVrWords, kChunks / v.k));
    v.b0 = rng.chance(3) ? 6 - v.k : rng.below(7 - v.k);
    v.c0 = rng.chance(4) ? kChunks - v.rows * v.k : rng.below(kChunks - v.rows * v.k + 1);
    v.dst = v.argmax ? rng.below(65536) : rng.chance(4) ? kVrWords - v.rows : rng.below(kVrWords - v.rows + 1);
    v.rd = v.argmax && !rng.chance(4) ? ctx.dest_reg() : 0;
    return v;
  }
};

}  // namespace

const OpCase& vmat_case() {
  static const VmatCase c;
  return c;
}

}  // namespace lockstep::ops
