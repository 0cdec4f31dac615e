// VLD (vector.md section 4.8) as a test case: a record (M, then n int8 bytes) from RAM into VR.
//   X(rs1) = the record's address, X(rs2) = n << 16 | dst; f7 = 0, rd = x0
//   VR[dst + i] <- sat32(sext8(b_i) * M)
#include <algorithm>

#include "lockstep/ops/op_case.h"

namespace lockstep::ops {
namespace {

constexpr u32 kRamBase = 0x10000, kRamEnd = 0x110000;        // isa.md section 2

struct Vld {
  u32 addr = 0, dst = 0, n = 0, f7 = 0, rd = 0;
  bool x0 = false;
  Fields fields() const {
    Fields f;
    f.a = addr & 0xffff, f.b = addr >> 16, f.c = dst, f.n = n, f.f7 = f7, f.rd = rd, f.x0 = x0;
    return f;
  }
};

class VldCase final : public OpCase {
 public:
  std::string_view name() const override { return "vld"; }
  ref::Op op() const override { return ref::Op::kVld; }
  std::vector<std::string_view> modes() const override { return {"vld"}; }
  u32 mode_of(const Fields&) const override { return 0; }
  std::vector<unsigned> codes() const override { return {4, 5, 16, 17, 18}; }

  std::string vars(const Fields& f) const override {
    return format_vars({{"addr", f.b << 16 | f.a}, {"dst", f.c}, {"n", f.n}, {"f7", f.f7}, {"rd", f.rd}});
  }

  unsigned trap_code(const Fields& f) const override {
    const std::uint64_t addr = f.b << 16 | f.a;
    if (addr % 4 != 0) return 4;
    if (addr < kRamBase || addr + 4 + f.n > kRamEnd) return 5;
    if (f.f7 != 0 || f.rd != 0) return 16;
    if (f.c + f.n > kVrWords) return 17;
    if (f.n == 0 || f.n > kVrWords) return 18;
    return 0;
  }

  std::vector<Span> writes(const Fields& f) const override { return {{f.c, f.n}}; }

  // A record in the scratch area (which the program's stores change) half the time, else anywhere
  // in RAM (code, data, zeros; n up to 1024; ending at RAM_END one time in eight); dst + n <= 1024.
  Fields draw_valid(DrawContext& ctx) const override {
    progen::Random& rng = ctx.rng;
    Vld v;
    if (rng.chance(2)) {  // in the scratch area
      const u32 k = rng.below(ctx.scratch_bytes / 4 - 1);
      v.n = 1 + rng.below(ctx.scratch_bytes - 4 - 4 * k);
      v.addr = ctx.scratch_base + 4 * k;
    } else {
      v.n = rng.chance(4) ? 1021 + rng.below(4) : 1 + rng.below(rng.chance(2) ? 64 : 1024);
      v.addr = rng.chance(8) ? (kRamEnd - 4 - v.n) & ~3u : 0x10000 + 4 * rng.below((0x100000 - 4 - v.n) / 4 + 1);
    }
    v.dst = rng.below(kVrWords - v.n + 1);
    return v.fields();
  }

  // One or more of the conditions of codes 4 (misaligned), 5 (outside RAM: below RAM_BASE, past
  // RAM_END, at 0xFFFFFFFC, rs1 = x0), 16 (f7 or rd nonzero), 17 (dst + n > 1024, n up to 65,535),
  // 18 (n = 0): one alone half the time, else any combination; `code`: that condition alone.
  Fields draw_trapping(DrawContext& ctx, unsigned code) const override {
    progen::Random& rng = ctx.rng;
    const Fields valid = draw_valid(ctx);
    Vld v;
    v.addr = valid.b << 16 | valid.a, v.dst = valid.c, v.n = valid.n;
    unsigned mask = code == 4 ? 1 : code == 5 ? 2 : code == 16 ? 4 : code == 17 ? 8 : code == 18 ? 16 : 0;
    if (mask == 0) mask = rng.chance(2) ? 1u << rng.below(5) : 1 + rng.below(31);
    if (mask & 1) v.addr += 1 + rng.below(3);  // 4
    if (mask & 2) {                            // 5
      switch (rng.below(4)) {
        case 0: v.addr = rng.below(kRamBase) & ~3u; break;
        case 1:  // runs past RAM_END
          if (rng.chance(3)) {  // a + 4 + n = RAM_END + 1, one byte past (found by an outside tester: 1 draw in 64)
            v.n -= (v.n - 1) & 3;  // n = 1 (mod 4), so that the address is aligned
            v.addr = kRamEnd - 3 - v.n;
          } else {
            v.addr = kRamEnd - 4 - v.n + 4 * (1 + rng.below(4));
          }
          break;
        case 2: v.addr = 0xFFFFFFFCu; break;
        default: v.x0 = true; v.addr = 0; break;  // rs1 = x0
      }
      v.addr &= ~3u;
      if ((mask & 1) && !v.x0) v.addr |= 1 + rng.below(3);
    }
    if (mask & 4) {  // 16
      if (rng.chance(2)) v.f7 = 1 + rng.below(127);
      else v.rd = 1 + rng.below(31);
    }
    if (mask & 8) {  // 17: dst + n > 1024
      const u32 dst = rng.chance(2) ? 1025 - v.n + rng.below(v.n + 64) : rng.below(65536);
      const u32 nn = rng.chance(4) && code != 17 ? 1025 + rng.below(65536 - 1025) : v.n;
      v.dst = dst & 0xffff;
      v.n = nn;
      if (v.dst + v.n <= kVrWords) v.dst = kVrWords - v.n + 1 + rng.below(v.n);
      if (code == 17 && trap_code(v.fields()) != 17) v.addr = kRamBase;  // the record back inside RAM
    }
    if (mask & 16) v.n = 0;  // 18
    return v.fields();
  }

  std::vector<std::string> buckets(u32) const override {
    return {"vld", "reads the scratch area", "reads elsewhere in RAM", "n > 1020", "record ends at RAM_END"};
  }

  // The scratch area is the campaign's (fuzz/campaign: 256 bytes at 0x80000).
  void count(const Executed& e, Buckets& out) const override {
    const Fields& f = e.fields;
    const u32 addr = f.b << 16 | f.a;
    ++out["vld"];
    (addr >= 0x80000 && addr < 0x80100 ? out["reads the scratch area"] : out["reads elsewhere in RAM"])++;
    out["n > 1020"] += f.n > 1020;
    out["record ends at RAM_END"] += addr + 4 + f.n > kRamEnd - 4;
  }
};

}  // namespace

const OpCase& vld_case() {
  static const VldCase c;
  return c;
}

}  // namespace lockstep::ops
