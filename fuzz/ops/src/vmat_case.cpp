// VMAT (vector.md section 4.1) as a test case: R rows of K int4 chunks times ACT blocks b0..b0+K-1.
//   X(rs1) = b0 << 16 | dst, X(rs2) = R << 16 | c0; f7 = K (bits 2..0) | ARGMAX << 3, bits 6..4 reserved
//   write mode: VR[dst + r] <- y_r; argmax mode: X(rd) <- the first r of the largest y_r
#include <algorithm>

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
    if (mask & 8) v.b0 = 7 - v.k + rng.below(rng.chance(2) ? 4 : 60000);            // 19
    if (mask & 16) v.c0 = kChunks - v.rows * v.k + 1 + rng.below(rng.chance(2) ? 8 : 60000);  // 21
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

  std::vector<std::string> buckets(u32) const override {
    std::vector<std::string> b = {"vmat.write", "vmat.argmax", "argmax with rd = x0", "rows past 256", "r=1",
                                  "c0 + r k = 4152", "b0 + k = 6"};
    for (u32 k = 1; k <= 6; ++k) b.push_back("k=" + std::to_string(k));
    return b;
  }

  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 k = f.f7 & 7, argmax = f.f7 >> 3 & 1;
    ++out[std::string(modes()[argmax])];
    ++out["k=" + std::to_string(k)];
    out["argmax with rd = x0"] += argmax && f.rd == 0;
    out["rows past 256"] += f.n > 256;
    out["r=1"] += f.n == 1;
    out["c0 + r k = 4152"] += f.c + f.n * k == kChunks;
    out["b0 + k = 6"] += f.b + k == 6;
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
