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
      if (v.target == kAct) v.a = 7 - std::min<u32>(6, blocks(v.n)) + rng.below(rng.chance(2) ? 4 : 60000);
      else v.a = 320 + rng.below(rng.chance(2) ? 8 : 65536 - 320);
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

  std::vector<std::string> buckets(u32) const override {
    std::vector<std::string> b = {"vq.act", "vq.k", "vq.v", "reads an earlier destination", "row 0 or 319"};
    for (u32 g = 1; g <= 6; ++g) b.push_back("act groups=" + std::to_string(g));
    return b;
  }

  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 target = f.f7 & 3;
    ++out[std::string(modes()[target])];
    if (target == kAct) ++out["act groups=" + std::to_string(blocks(f.n))];
    else out["row 0 or 319"] += f.a == 0 || f.a == 319;
    out["reads an earlier destination"] += reads_written(f.b, f.n, e.written);
  }

 private:
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
