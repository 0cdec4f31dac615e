#include "lockstep/campaign/campaign.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "lockstep/engine/check.h"
#include "lockstep/format/insn_class.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::campaign {

using ref::Encoding;
using ref::InsnClass;
using ref::Op;
using u32 = std::uint32_t;
using nlohmann::json;

// ------------------------------------------------------------------ ops

std::string_view class_name(InsnClass cls) { return format::insn_class_name(static_cast<unsigned>(cls)); }

namespace {

// The vector ops (docs/chip-design.md section 3.6): VLD, VEW (ADD, MUL, MULS, ROT), VFN (RSQRT,
// RECIP, SILU), VRED (SUMSQ, SUM, MAX), VQ (ACT, K and V rows), VEXP, VMAT (write and argmax
// mode) and VMATR (K and V mode). They are fuzzed only when asked for (--ops vld, vew, vfn, vred,
// vq, vexp, vmat, vmatr or the class "vector"), so the default mix stays the scalar machine.
bool fuzzable(const Encoding& e) { return e.cls != InsnClass::kSystem; }
constexpr const char* kVredModeNames[] = {"vred.sumsq", "vred.sum", "vred.max"};  // MODE 0, 1, 2

// VEW modes and VFN functions by --ops name (vector.md sections 4.5, 4.6; ref::vector_mnemonic's
// spelling).
constexpr const char* kVewModeNames[] = {"vew.add", "vew.mul", "vew.muls", "vew.rot"};
constexpr const char* kVfnFnNames[] = {"vfn.rsqrt", "vfn.recip", "vfn.silu"};

std::string refusal(const Encoding& e) {
  return "--ops: " + std::string(e.mnemonic) + " is not fuzzed (every program ends with the exit ecall)";
}

}  // namespace

std::vector<const Encoding*> select_ops(const std::string& list, unsigned* vew_modes, unsigned* vfn_fns,
                                       unsigned* vred_modes) {
  std::set<const Encoding*> chosen;
  unsigned modes = 0, fns = 0, red = 0;
  std::string lowered;
  for (char c : list) lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> names;
  std::stringstream ss(lowered);
  for (std::string tok; std::getline(ss, tok, ',');) {
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    if (!tok.empty()) names.push_back(tok);
  }
  if (names.empty() && !list.empty()) throw OpsError("--ops: empty list");
  if (names.empty()) names.push_back("all");
  const Encoding& vew_row = ref::encoding_of(Op::kVew);
  const Encoding& vfn_row = ref::encoding_of(Op::kVfn);
  // A whole row: its every mode or function.
  auto take = [&](const Encoding& e) {
    if (!fuzzable(e)) throw OpsError(refusal(e));
    chosen.insert(&e);
    if (e.op == Op::kVew) modes |= kVewFuzzedModes;
    if (e.op == Op::kVfn) fns |= kVfnFuzzedFns;
    if (e.op == Op::kVred) red |= kVredFuzzedModes;
  };
  for (const std::string& n : names) {
    bool found = false;
    if (n == "all" || n == "scalar") {
      for (const Encoding& e : ref::encoding_table())
        if (fuzzable(e) && e.cls != InsnClass::kVector) chosen.insert(&e);
      continue;
    }
    for (unsigned m = 0; m < 4; ++m) {
      if (n != kVewModeNames[m]) continue;
      chosen.insert(&vew_row);
      modes |= 1u << m;
      found = true;
    }
    for (unsigned f = 0; f < 3; ++f) {
      if (n != kVfnFnNames[f]) continue;
      chosen.insert(&vfn_row);
      fns |= 1u << f;
      found = true;
    }
    for (unsigned m = 0; m < 3; ++m) {  // VRED: SUMSQ, SUM, MAX
      if (n != kVredModeNames[m]) continue;
      chosen.insert(&ref::encoding_of(Op::kVred));
      red |= 1u << m;
      found = true;
    }
    if (found) continue;
    for (const Encoding& e : ref::encoding_table()) {
      if (class_name(e.cls) == n) {
        take(e);
        found = true;
      }
    }
    if (found) continue;
    for (const Encoding& e : ref::encoding_table()) {
      if (e.mnemonic == n) {
        take(e);
        found = true;
      }
    }
    if (!found) {
      throw OpsError("--ops: unknown op or class '" + n +
                     "' (classes: alu, alu-imm, upper, mul, div, zba, load, store, branch, jal, jalr, fence, "
                     "bignum; or a mnemonic such as add, sh2add, bn.addc, vld, vew, vew.muls, vfn, vfn.silu)");
    }
  }
  std::vector<const Encoding*> out;
  for (const Encoding& e : ref::encoding_table())
    if (chosen.count(&e)) out.push_back(&e);
  if (vew_modes) *vew_modes = modes;
  if (vfn_fns) *vfn_fns = fns;
  if (vred_modes) *vred_modes = red;
  return out;
}

std::string ops_list(std::span<const Encoding* const> ops, unsigned vew_modes, unsigned vfn_fns, unsigned vred_modes) {
  std::string s;
  // A row with only some of its modes (functions) selected: their names.
  auto names = [&](unsigned mask, unsigned all, const char* const* mode_names, unsigned count) {
    if ((mask & all) == all || !(mask & all)) return false;
    for (unsigned m = 0; m < count; ++m)
      if (mask >> m & 1) s += (s.empty() ? "" : ",") + std::string(mode_names[m]);
    return true;
  };
  for (const Encoding* e : ops) {
    if (e->op == Op::kVew && names(vew_modes, kVewFuzzedModes, kVewModeNames, 4)) continue;
    if (e->op == Op::kVfn && names(vfn_fns, kVfnFuzzedFns, kVfnFnNames, 3)) continue;
    if (e->op == Op::kVred && names(vred_modes, kVredFuzzedModes, kVredModeNames, 3)) continue;
    s += (s.empty() ? "" : ",") + std::string(e->mnemonic);
  }
  return s;
}

std::uint64_t program_seed(std::uint64_t run_seed, std::uint64_t index) {
  progen::Random r(run_seed ^ (index * 0xd1b54a32d192ed03ull));
  r.next();
  return r.next();
}

// ------------------------------------------------------------------ programs

std::size_t Program::words() const {
  std::size_t n = 0;
  for (const Item& it : items) n += it.words();
  return n;
}

std::vector<u32> Program::code() const {
  std::vector<u32> addr(items.size() + 1, kCodeBase);
  for (std::size_t i = 0; i < items.size(); ++i) addr[i + 1] = addr[i] + 4 * items[i].words();
  auto target_addr = [&](const Item& it) {
    const std::size_t t = static_cast<std::size_t>(std::clamp<std::int64_t>(it.target, 0, static_cast<std::int64_t>(items.size())));
    return addr[t];
  };
  std::vector<u32> code;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    switch (it.kind) {
      case Item::Kind::kWord: code.push_back(it.word); break;
      case Item::Kind::kLi: progen::emit_li(code, it.rd, it.value); break;
      case Item::Kind::kBranch: {
        const u32 off = target_addr(it) - addr[i];
        code.push_back(it.op == Op::kJal ? ref::encode::j(it.op, it.rd, off) : ref::encode::b(it.op, it.rs1, it.rs2, off));
        break;
      }
      case Item::Kind::kJalr: {
        const u32 off = target_addr(it) - addr[i];
        code.push_back(ref::encode::u(Op::kAuipc, it.rs1, 0));
        code.push_back(ref::encode::i(Op::kJalr, it.rd, it.rs1, off + (it.value & 1)));
        break;
      }
    }
  }
  return code;
}

std::vector<bool> Program::test_words() const {
  std::vector<bool> t;
  for (const Item& it : items) {
    if (it.kind == Item::Kind::kJalr) {
      t.push_back(false);  // the auipc is set-up
      t.push_back(it.test);
    } else {
      for (unsigned k = 0; k < it.words(); ++k) t.push_back(it.test && it.kind != Item::Kind::kLi);
    }
  }
  return t;
}

format::GuestImage Program::image() const {
  format::Segment data;
  data.vaddr = kScratchBase;
  data.bytes = scratch;
  data.memsz = kScratchBytes;
  data.flags = format::kPfR | format::kPfW;
  format::GuestImage img = progen::image_from_code(code(), kCodeBase, {data});
  if (!vreg.empty()) img.sections[".lockstep.vreg"] = vreg;
  for (const auto& [name, bytes] : sections) img.sections[name] = bytes;
  return img;
}

engine::Guest Program::guest() const {
  engine::Guest g;
  g.name = name;
  g.image = image();
  return g;
}

std::string Program::listing() const {
  const std::vector<u32> c = code();
  std::string out;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const u32 a = kCodeBase + 4 * static_cast<u32>(i);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%08x: %08x  %s\n", a, c[i], ref::disassemble(c[i], a).c_str());
    out += buf;
  }
  return out;
}

Program Program::without(std::size_t first, std::size_t last) const {
  Program p = *this;
  last = std::min(last, items.size());
  std::vector<std::int64_t> new_index(items.size() + 1);
  std::vector<Item> kept;
  for (std::size_t i = 0; i < items.size(); ++i) {
    new_index[i] = static_cast<std::int64_t>(kept.size());
    if (i >= first && i < last && !items[i].fixed) continue;
    kept.push_back(items[i]);
  }
  new_index[items.size()] = static_cast<std::int64_t>(kept.size());
  for (Item& it : kept) {
    if (it.kind == Item::Kind::kBranch || it.kind == Item::Kind::kJalr) {
      const std::size_t t = static_cast<std::size_t>(std::clamp<std::int64_t>(it.target, 0, static_cast<std::int64_t>(items.size())));
      it.target = new_index[t];  // the first kept item at or after the old target
    }
  }
  p.items = std::move(kept);
  return p;
}

namespace {

// Relative weight of a class in the mix (before the per-program focus).
unsigned class_weight(InsnClass c) {
  switch (c) {
    case InsnClass::kAlu: return 8;
    case InsnClass::kAluImm: return 6;
    case InsnClass::kUpper: return 2;
    case InsnClass::kMul: return 4;
    case InsnClass::kDiv: return 4;
    case InsnClass::kZba: return 2;
    case InsnClass::kLoad: return 4;
    case InsnClass::kStore: return 4;
    case InsnClass::kBranch: return 4;
    case InsnClass::kJal: return 2;
    case InsnClass::kJalr: return 2;
    case InsnClass::kFence: return 1;
    case InsnClass::kBignum: return 4;
    case InsnClass::kVector: return 4;  // VLD, VEW, VFN
    default: return 0;
  }
}

bool is_control(const Encoding& e) {
  return e.cls == InsnClass::kBranch || e.cls == InsnClass::kJal || e.cls == InsnClass::kJalr;
}

struct Generator {
  progen::Random& rng;
  std::span<const Encoding* const> ops;
  std::vector<double> weights;  // per op
  std::vector<Item> items;
  std::vector<bool> landing;    // per item: a forward branch may target it
  unsigned vew_modes = 0;       // VEW modes to draw (kVew* mask)
  unsigned vfn_fns = 0;         // VFN functions to draw (kVfn* mask)
  unsigned vred_modes = 0;      // VRED modes to draw (kVred* mask)
  struct VrSpan {
    u32 start, n;
  };
  std::vector<VrSpan> written;  // VR spans written by the VLDs, VEWs and VFNs so far, in program order
  u32 vew_elements = 0;         // VEW and VFN elements (n, times 6 in a loop) so far: the step budget
  bool in_loop = false;         // generating a loop body (runs up to 6 times)

  u32 reg_not(std::initializer_list<u32> avoid) {
    u32 r;
    do r = rng.below(32);
    while (std::find(avoid.begin(), avoid.end(), r) != avoid.end());
    return r;
  }
  const Encoding& pick(bool allow_control) {
    double total = 0;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (allow_control || !is_control(*ops[i])) total += weights[i];
    double x = static_cast<double>(rng.next() >> 11) / 9007199254740992.0 * total;
    const Encoding* last = nullptr;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!allow_control && is_control(*ops[i])) continue;
      last = ops[i];
      if (x < weights[i]) return *ops[i];
      x -= weights[i];
    }
    return *last;
  }
  bool has_non_control() const {
    return std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return !is_control(*e); });
  }
  void add(Item it, bool land = true) {
    items.push_back(it);
    landing.push_back(land);
  }
  u32 imm12() {
    static constexpr u32 kImm[] = {0, 1, 0xfff, 0x7ff, 0x800, 2, 0xffe, 31, 32};
    return rng.chance(2) ? kImm[rng.below(sizeof kImm / sizeof kImm[0])] : rng.below(4096);
  }
  static u32 access_size(const Encoding& e) { return 1u << ((e.match >> 12) & 3); }

  // One instruction of `row`; `avoid`: a register it must not write (besides x31).
  void instruction(const Encoding& row, u32 avoid, bool land = true) {
    Item it;
    it.op = row.op;
    auto dest = [&] { return reg_not({31, avoid}); };
    switch (row.cls) {
      case InsnClass::kAlu:
      case InsnClass::kMul:
      case InsnClass::kDiv:
      case InsnClass::kZba:
        it.word = ref::encode::r(row.op, dest(), rng.below(32), rng.below(32));
        break;
      case InsnClass::kBignum:
        it.word = ref::encode::r(row.op, (row.operands & ref::kOpdRd) ? dest() : 0,
                                 (row.operands & ref::kOpdRs1) ? rng.below(32) : 0,
                                 (row.operands & ref::kOpdRs2) ? rng.below(32) : 0);
        break;
      case InsnClass::kAluImm:
        it.word = ref::encode::i(row.op, dest(), rng.below(32), row.format == ref::Format::kIShift ? rng.below(32) : imm12());
        break;
      case InsnClass::kUpper:
        it.word = ref::encode::u(row.op, dest(), rng.operand());
        break;
      case InsnClass::kLoad:
      case InsnClass::kStore: {
        const u32 size = access_size(row);
        const u32 off = rng.below(kScratchBytes / size) * size;
        it.word = row.cls == InsnClass::kLoad ? ref::encode::i(row.op, dest(), 31, off)
                                              : ref::encode::s(row.op, 31, rng.below(32), off);
        break;
      }
      case InsnClass::kFence:
        it.word = row.match | rng.below(16) << 24 | rng.below(16) << 20;
        break;
      case InsnClass::kBranch:
        it.kind = Item::Kind::kBranch;
        it.rs1 = static_cast<std::uint8_t>(rng.below(32));
        it.rs2 = static_cast<std::uint8_t>(rng.below(32));
        break;
      case InsnClass::kJal:
        it.kind = Item::Kind::kBranch;
        it.rd = static_cast<std::uint8_t>(dest());
        break;
      case InsnClass::kJalr:
        it.kind = Item::Kind::kJalr;
        it.rd = static_cast<std::uint8_t>(dest());
        it.rs1 = static_cast<std::uint8_t>(reg_not({0, 31, avoid}));
        it.value = rng.chance(2) ? 1u : 0u;
        break;
      case InsnClass::kVector:
        if (row.op == Op::kVld) vld(row, avoid, land);
        if (row.op == Op::kVew) vew(avoid, land, false);
        if (row.op == Op::kVfn) vfn(avoid, land, false);
        if (row.op == Op::kVred) vred(avoid, land, false);
        if (row.op == Op::kVq) vq(avoid, land, false);
        if (row.op == Op::kVexp) vexp(avoid, land, false);
        if (row.op == Op::kVmat) vmat(avoid, land, false);
        if (row.op == Op::kVmatr) vmatr(avoid, land, false);
        return;
      default:
        return;
    }
    add(it, land);
  }

  // VLD (vector.md section 4.8) with its two operand registers set just before it: a record in
  // the scratch area (which the program's stores change) or anywhere else in RAM (code, data,
  // zeros; n up to 1024). Never a trapping one: every program runs to its exit (VLD's traps have
  // their own random test, tests/engine/chip_vld_random_test.cpp).
  void vld(const Encoding& row, u32 avoid, bool land) {
    const u32 ra = reg_not({0, 31, avoid}), rb = reg_not({0, 31, avoid, ra});
    u32 a, n;
    if (rng.chance(2)) {  // in the scratch area
      const u32 k = rng.below(kScratchBytes / 4 - 1);
      n = 1 + rng.below(kScratchBytes - 4 - 4 * k);
      a = kScratchBase + 4 * k;
    } else {
      n = rng.chance(4) ? 1021 + rng.below(4) : 1 + rng.below(rng.chance(2) ? 64 : 1024);
      a = 0x10000 + 4 * rng.below((0x100000 - 4 - n) / 4 + 1);
    }
    const u32 x = rng.below(1024 - n + 1) | n << 16;
    written.push_back({x & 0xffff, n});
    add(li(ra, a), land);
    add(li(rb, x), false);
    add(word(ref::encode::r(row.op, 0, ra, rb), true), false);
  }

  // ---------------------------------------------------------------- VEW, VFN (vector.md 4.5, 4.6, 6)
  static constexpr u32 kVr = 1024;              // VR words
  static constexpr u32 kVewBudget = 1024;       // VEW/VFN elements per program (about 4,400 steps)
  static bool shares(u32 s0, u32 n0, u32 s1, u32 n1) { return n0 && n1 && s0 < s1 + n1 && s1 < s0 + n0; }
  static bool conflicts(u32 s0, u32 n0, u32 s1, u32 n1) { return shares(s0, n0, s1, n1) && !(s0 == s1 && n0 == n1); }
  // The scalar span's length of MULS: ((n - 1) >> GS) + 1.
  static u32 muls_len(u32 n, u32 gs) { return ((n - 1) >> gs) + 1; }
  // Section 6's conditions for VEW ADD (0), MUL (1), MULS (2), ROT (3; b the position) with rd =
  // x0: no trap.
  static bool vew_valid(u32 mode, u32 gs, u32 dst, u32 a, u32 b, u32 n) {
    if (n < 1 || n > kVr || (mode != 2 && gs != 0) || gs > 6) return false;
    if (dst + n > kVr || a + n > kVr || conflicts(dst, n, a, n)) return false;
    if (mode == 3) return n % 2 == 0 && b < 64;
    const u32 m = mode == 2 ? muls_len(n, gs) : n;
    if (b + m > kVr) return false;
    return mode == 2 ? !shares(b, m, dst, n) : !conflicts(dst, n, b, n);
  }

  // n in 1..1024: short ones, the 4-element group and 64-word register boundaries, the whole of
  // VR; at most what is left of the program's budget (a loop body counts 6 times). `even`: ROT's.
  u32 vew_n(bool even = false) {
    static constexpr u32 kEdges[] = {1, 2, 3, 4, 5, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1021, 1022, 1023, 1024};
    u32 n;
    switch (rng.below(8)) {
      case 0: case 1: n = kEdges[rng.below(sizeof kEdges / sizeof kEdges[0])]; break;
      case 2: case 3: n = 1 + rng.below(16); break;
      case 4: case 5: n = 1 + rng.below(128); break;
      default: n = 1 + rng.below(kVr); break;
    }
    const u32 times = in_loop ? 6 : 1;
    const u32 left = vew_elements < kVewBudget ? (kVewBudget - vew_elements) / times : 0;
    if (n > left) n = 1 + rng.below(std::max<u32>(left, 8));
    if (even && n % 2) n = n == kVr - 1 || rng.chance(2) ? n + 1 : std::max<u32>(n - 1, 2);
    vew_elements += n * times;
    return n;
  }

  // The start of a span of n words inside VR: half the time at or inside an earlier VLD's,
  // VEW's or VFN's destination (the last one more often), else at the end of VR or anywhere.
  u32 vr_start(u32 n) {
    if (!written.empty() && rng.chance(2)) {
      const VrSpan& w = rng.chance(2) ? written.back() : written[rng.below(static_cast<u32>(written.size()))];
      const u32 s = rng.chance(2) ? w.start : w.start + rng.below(w.n);
      if (s + n <= kVr) return s;
    }
    if (rng.chance(8)) return kVr - n;
    return rng.below(kVr - n + 1);
  }

  // A word of .lockstep.vreg: with VFN selected, half the time (always but one in four without
  // VEW) a word for one of the selected functions' paths (vfn_word); else an edge of sat32 (sums
  // and products of two saturate, either way), near +-2^30, +-2^15 and +-2^16, small, or of a
  // random magnitude 2^0..2^31 (log-uniform, so that about half the products of two stay below
  // 2^47 and do not saturate after rnd(., 16)).
  u32 vr_word(bool has_vew) {
    if (vfn_fns && (has_vew ? rng.chance(2) : !rng.chance(4))) {
      std::vector<u32> fns;
      for (u32 f = 0; f < 3; ++f)
        if (vfn_fns >> f & 1) fns.push_back(f);
      return vfn_word(fns[rng.below(static_cast<u32>(fns.size()))]);
    }
    switch (rng.below(16)) {
      case 0: return 0x7fffffffu;
      case 1: return 0x80000000u;
      case 2: return rng.chance(2) ? 0x7fffffffu - rng.below(16) : 0x80000000u + rng.below(16);
      case 3: return (rng.chance(2) ? 0x40000000u : 0xc0000000u) + rng.below(64) - 32;  // near +-2^30
      case 4: return (rng.chance(2) ? 0x8000u : 0x10000u) + rng.below(64) - 32;         // near 2^15, 2^16
      case 5: return (rng.chance(2) ? 0xffff8000u : 0xffff0000u) + rng.below(64) - 32;  // near -2^15, -2^16
      case 6: return rng.below(33) - 16;                                                // small, 0 and -1
      case 7: return rng.operand();
      case 8: case 9: return static_cast<u32>(rng.next());
      default: return log_uniform();
    }
  }
  // A random magnitude 2^0..2^31 (log-uniform), either sign; 2^31 itself is INT32_MIN either way.
  u32 log_uniform() {
    const u32 k = rng.below(32), mag = k == 0 ? 1 : (1u << k) + (static_cast<u32>(rng.next()) & ((1u << k) - 1));
    return rng.chance(2) ? 0u - mag : mag;
  }

  // Inputs x whose final rounding is a tie (vector.md 4.6): RSQRT's rnd(RSQ[ix], k2/2) and
  // RECIP's rnd(RCP[ix], k - 2) with the low half of the dropped bits exactly 100..0. Each entry:
  // the smallest such x and the count of low bits free below ix (any value keeps ix and k).
  struct Tie {
    u32 x, free_bits;
  };
  static const std::vector<Tie>& ties(u32 fn) {
    static const std::array<std::vector<Tie>, 2> t = [] {
      const ref::VectorTables& tab = ref::vector_tables();
      std::array<std::vector<Tie>, 2> out;
      auto tie = [](std::int64_t v, u32 s) { return s >= 1 && (v & ((std::int64_t{1} << s) - 1)) == std::int64_t{1} << (s - 1); };
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

  // A word for VFN function fn's paths (vector.md 4.6). RSQRT, RECIP: x <= 0 (u = 1), powers of
  // two and their neighbours (k and ix edges; k <= 2 saturates RECIP), INT32_MAX, 1.0 = 65536,
  // final-rounding ties (ties()), log-uniform. SILU: the clamp edges of ix (x around -523,776,
  // -524,800, 522,752 and 523,776), the ties of rnd(x, 10) (x = 1024k + 512), the ties of
  // rnd(x * SIG[ix], 16) (2-adic valuation of x = 15 - that of SIG[ix]), INT32_MAX/MIN,
  // log-uniform.
  u32 vfn_word(u32 fn) {
    if (fn == 2) {
      switch (rng.below(10)) {
        case 0: case 1: {
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
        default: return log_uniform();
      }
    }
    switch (rng.below(10)) {
      case 0: {  // x <= 0
        static constexpr u32 kLe0[] = {0, 0xffffffffu, 0x80000000u, 0x80000001u};
        return rng.chance(2) ? kLe0[rng.below(4)] : 0u - (1 + (static_cast<u32>(rng.next()) >> (1 + rng.below(31))));
      }
      case 1: case 2: {  // 2^k, 2^k +- 1
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
      default: return log_uniform();
    }
  }

  // ROT's position p (0..63): the ends half the time.
  u32 rot_position() {
    switch (rng.below(4)) {
      case 0: return 0;
      case 1: return 63;
      default: return rng.below(64);
    }
  }

  // A 16-bit start whose span of len words ends past VR.
  u32 outside(u32 len) {
    const u32 lo = kVr + 1 - std::min(len, kVr);
    return lo + (rng.chance(2) ? rng.below(len + 64) : rng.below(65536 - lo));
  }

  // The li's of an op's operand registers (X(rs1) = x1, X(rs2) = x2; ra = 0: rs1 = x0; same:
  // rs1 = rs2) and the op's word.
  void vector_word(Op op, u32 rd, u32 f7, u32 x1, u32 x2, bool x0, bool same, u32 avoid, bool land) {
    const u32 ra = x0 ? 0 : reg_not({0, 31, avoid});
    const u32 rb = same ? ra : reg_not({0, 31, avoid, ra});
    bool first = true;
    if (ra != 0) {
      add(li(ra, x1), land);
      first = false;
    }
    if (!same) {
      add(li(rb, x2), first && land);
      first = false;
    }
    add(word(ref::encode::r(op, rd, ra, rb) | f7 << 25, true), false);
  }

  // One VEW of the selected modes with its operand registers set just before it (`li`s of X(rs1)
  // = B << 16 | A and X(rs2) = N << 16 | C, section 4.0). Valid: dst span identical to or
  // disjoint from the a span and (ADD, MUL) the b span, MULS's scalar span disjoint from it,
  // ROT's n even and position 0..63; sources at or inside earlier destinations half the time
  // (chains), in place, a = b, rs1 = rs2, rs1 = x0. `trap`: one or more of the conditions of codes
  // 16, 17, 18, 20 (and 23 for ROT) instead (which code is raised, the lowest, is the reference's
  // to say).
  void vew(u32 avoid, bool land, bool trap) {
    std::vector<u32> modes;
    for (u32 m = 0; m < 4; ++m)
      if (vew_modes >> m & 1) modes.push_back(m);
    u32 mode = modes[rng.below(static_cast<u32>(modes.size()))];
    const bool rot = mode == 3;
    u32 gs = mode == 2 ? rng.below(7) : 0;
    u32 n = vew_n(rot), dst = 0, a = 0, b = 0, f7 = 0, rd = 0;
    bool same = false, x0 = false;
    if (((mode < 2 && n <= 512) || (rot && n < 64)) && rng.chance(16)) {  // rs1 = rs2: dst = C = b and a = N = n
      dst = a = b = n;
      same = true;
    } else if (rng.chance(16)) {  // rs1 = x0: dst = a = 0
      x0 = true;
      const u32 m = mode == 2 ? muls_len(n, gs) : n;
      if (mode == 2 && n + m > kVr) n = kVr / 2;
      if (rot) {
        b = rot_position();
      } else {
        b = mode == 2 ? n + rng.below(kVr - n - muls_len(n, gs) + 1) : rng.chance(2) ? 0 : rng.below(kVr - n + 1);
        if (mode != 2 && conflicts(0, n, b, n)) b = 0;
      }
    } else {
      bool ok = false;
      for (int tries = 0; tries < 64 && !ok; ++tries) {
        const u32 m = mode == 2 ? muls_len(n, gs) : n;
        a = vr_start(n);
        b = rot ? rot_position() : rng.chance(4) ? (m <= n ? a : vr_start(m)) : vr_start(m);
        switch (rng.below(4)) {
          case 0: dst = a; break;
          case 1: dst = mode >= 2 ? vr_start(n) : b; break;
          default: dst = vr_start(n); break;
        }
        ok = vew_valid(mode, gs, dst, a, b, n);
      }
      if (!ok) {  // in place; MULS: the scalars after the destination (GS raised or n cut to fit)
        if (mode == 2) {
          while (gs < 6 && n + muls_len(n, gs) > kVr) ++gs;
          while (n + muls_len(n, gs) > kVr) --n;
          dst = a = rng.below(kVr - n - muls_len(n, gs) + 1);
          b = dst + n + rng.below(kVr - dst - n - muls_len(n, gs) + 1);
        } else {
          dst = a = vr_start(n);
          b = rot ? rot_position() : dst;
        }
      }
    }
    if (trap) {
      same = x0 = false;
      // one condition alone half the time (20, the overlaps, twice as often), else any combination;
      // bit 16 (code 23, a position >= 64) for ROT only
      static constexpr unsigned kAlone[] = {1, 2, 4, 8, 8, 16};
      const unsigned mask = rng.chance(2) ? kAlone[rng.below(rot ? 6 : 5)] : 1 + rng.below(rot ? 31 : 15);
      if (mask & 8) {  // 20: dst at distance 1..n-1 from a, or b (ADD, MUL); inside MULS's scalars
        n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
        if (rot) n += n % 2;
        const u32 hi = kVr - n;
        a = std::min(a, hi);
        if (!rot) b = std::min(b, hi);
        if (mode == 2 && rng.chance(2)) {
          const u32 m = muls_len(n, gs);
          dst = std::min(b + rng.below(m), hi);
          if (!shares(b, m, dst, n)) dst = b;
        } else {
          const u32 base = (mode >= 2 || rng.chance(2)) ? a : b, d = 1 + rng.below(n - 1);
          dst = base + d <= hi ? base + d : base - d;  // n <= 256 leaves >= 768 starts
        }
      }
      if (mask & 2) {  // 17
        switch (rng.below(rot ? 3 : 4)) {
          case 0: n = kVr + 1 + rng.below(65536 - kVr - 1); break;  // also 18
          case 1: dst = outside(n); break;
          case 2: a = outside(n); break;
          default: b = outside(mode == 2 ? muls_len(n, gs) : n); break;
        }
      }
      if (mask & 4) n = rot && n && rng.chance(2) ? n | 1 : 0;  // 18: n = 0; ROT: odd
      if (mask & 16) b = rng.chance(2) ? 64 + rng.below(8) : 64 + rng.below(65536 - 64);  // 23
      if (mask & 1) {  // 16: reserved f7 bits, GS outside MULS or GS = 7, rd != x0
        switch (rng.below(3)) {
          case 0: f7 = (1 + rng.below(3)) << 5; break;
          case 1: gs = mode == 2 ? 7 : 1 + rng.below(7); break;
          default: rd = 1 + rng.below(31); break;
        }
      }
    }
    f7 |= mode | gs << 2;
    if (!trap) written.push_back({dst, n});
    const u32 x1 = (a & 0xffff) << 16 | (dst & 0xffff), x2 = (n & 0xffff) << 16 | (b & 0xffff);
    vector_word(Op::kVew, rd, f7, x1, x2, x0, same, avoid, land);
  }

  // One VFN of the selected functions (section 4.6: A = dst, B = src, N = n; C is ignored and
  // random) with its operand registers set just before it. Valid: the destination span identical
  // to (in place) or disjoint from the source span; the source at or inside an earlier
  // destination half the time, rs1 = rs2 (src = n), rs1 = x0 (dst = src = 0). `trap`: one or
  // more of the conditions of codes 16 (FN >= 3, rd != x0), 17, 18, 20 instead.
  void vfn(u32 avoid, bool land, bool trap) {
    std::vector<u32> fns;
    for (u32 f = 0; f < 3; ++f)
      if (vfn_fns >> f & 1) fns.push_back(f);
    u32 fn = fns[rng.below(static_cast<u32>(fns.size()))];
    u32 n = vew_n(), dst = 0, src = 0, c = rng.chance(2) ? 0 : rng.below(65536), rd = 0;
    bool same = false, x0 = false;
    if (n <= 512 && rng.chance(16)) {  // rs1 = rs2: A = C = dst, B = N = n
      same = true;
      src = n;
      switch (rng.below(3)) {
        case 0: dst = n; break;
        case 1: dst = 0; break;
        default: dst = 3 * n <= kVr ? 2 * n + rng.below(kVr - 3 * n + 1) : n; break;
      }
      c = dst;
    } else if (rng.chance(16)) {  // rs1 = x0: dst = src = 0
      x0 = true;
    } else {
      src = vr_start(n);
      dst = src;
      if (!rng.chance(3)) {
        for (int tries = 0; tries < 16; ++tries) {
          const u32 d = vr_start(n);
          if (!conflicts(d, n, src, n)) {
            dst = d;
            break;
          }
        }
      }
    }
    if (trap) {
      same = x0 = false;
      static constexpr unsigned kAlone[] = {1, 2, 4, 8, 8};
      const unsigned mask = rng.chance(2) ? kAlone[rng.below(5)] : 1 + rng.below(15);
      if (mask & 8) {  // 20: dst at distance 1..n-1 from src
        n = rng.chance(3) ? 2 + rng.below(4) : 2 + rng.below(255);
        const u32 hi = kVr - n, d = 1 + rng.below(n - 1);
        src = std::min(src, hi);
        dst = src + d <= hi ? src + d : src - d;
      }
      if (mask & 2) {  // 17
        switch (rng.below(3)) {
          case 0: n = kVr + 1 + rng.below(65536 - kVr - 1); break;  // also 18
          case 1: dst = outside(n); break;
          default: src = outside(n); break;
        }
      }
      if (mask & 4) n = 0;  // 18
      if (mask & 1) {       // 16: FN 3..127, rd != x0
        if (rng.chance(2)) fn = 3 + (rng.chance(2) ? rng.below(4) : rng.below(125));
        else rd = 1 + rng.below(31);
      }
    }
    if (!trap) written.push_back({dst, n});
    const u32 x1 = (src & 0xffff) << 16 | (dst & 0xffff), x2 = (n & 0xffff) << 16 | (c & 0xffff);
    vector_word(Op::kVfn, rd, fn, x1, x2, x0, same, avoid, land);
  }

  // One VRED of the selected modes (SUMSQ, SUM, MAX; section 4.7: A = dst, B = src, N = n; C is
  // ignored and random) with its operand
  // registers set just before it: n at group edges (1, 63..65, 128, 129, 1023, 1024) or any, the
  // source at or inside an earlier destination half the time (a VRED's result is one word), dst
  // anywhere (inside the source span a third of the time: one word written after all reads), SH
  // 0..31 (0, 1, 16, 17 and 31 weighted: 16 is the last shift that can saturate), rs1 = rs2 (src =
  // n, dst = C). `trap`: one or more of the conditions of codes 16 (MODE = 3, MAX with SH != 0, rd
  // != x0), 17, 18 instead, in any MODE.
  void vred(u32 avoid, bool land, bool trap) {
    static constexpr u32 kEdges[] = {1, 63, 64, 65, 128, 129, 1023, 1024};
    u32 n = rng.chance(3) ? kEdges[rng.below(8)] : 1 + rng.below(rng.chance(2) ? 256 : kVr);
    u32 sh;
    switch (rng.below(6)) {
      case 0: sh = 0; break;
      case 1: sh = 1; break;
      case 2: sh = 16 + rng.below(2); break;
      case 3: sh = 31; break;
      default: sh = rng.below(32); break;
    }
    std::vector<u32> modes;
    for (u32 m = 0; m < 3; ++m)
      if (vred_modes >> m & 1) modes.push_back(m);
    u32 mode = modes[rng.below(static_cast<u32>(modes.size()))];
    if (mode == 2) sh = 0;  // MAX: SH must be 0
    u32 rd = 0, src = vr_start(n), dst = rng.chance(3) ? src + rng.below(n) : rng.below(kVr);
    u32 c = rng.chance(2) ? 0 : rng.below(65536);
    bool same = false;
    if (n <= 512 && rng.chance(16)) {  // rs1 = rs2: A = C = dst, B = N = n
      same = true;
      src = n;
      dst = c = rng.below(kVr);
    }
    if (trap) {
      same = false;
      mode = rng.below(3);
      if (mode == 2) sh = 0;
      static constexpr unsigned kAlone[] = {1, 2, 4};
      const unsigned mask = rng.chance(2) ? kAlone[rng.below(3)] : 1 + rng.below(7);
      if (mask & 2) {  // 17
        if (rng.chance(2)) src = outside(n);
        else dst = kVr + rng.below(65536 - kVr);
      }
      if (mask & 4) n = rng.chance(2) ? 0 : kVr + 1 + rng.below(65536 - kVr - 1);  // 18
      if (mask & 1) {  // 16
        switch (rng.below(3)) {
          case 0: mode = 3; break;
          case 1: mode = 2; sh = 1 + rng.below(31); break;
          default: rd = 1 + rng.below(31); break;
        }
      }
    }
    if (!trap) written.push_back({dst, 1});
    const u32 x1 = (src & 0xffff) << 16 | (dst & 0xffff), x2 = (n & 0xffff) << 16 | (c & 0xffff);
    vector_word(Op::kVred, rd, sh << 2 | mode, x1, x2, false, same, avoid, land);
  }

  // One VQ (section 4.3: A = b0 (ACT) or row (K/V), B = src, N = n; C is ignored and random) with
  // its operand registers set just before it: ACT three times in five (n at group edges 1, 63, 64,
  // 65, 128, 320, 321, 384 or any up to 384; b0 up to 6 - ceil(n/64), the last block weighted),
  // else a K or V row (n = 32; rows 0, 319 weighted); the source at or inside an earlier
  // destination half the time; rs1 = rs2 (src = n, C = A). `trap`: one or more of the conditions
  // of codes 16 (TARGET = 3, a reserved f7 bit, rd != x0), 17, 18, 19 (ACT) or 22 (K/V) instead.
  void vq(u32 avoid, bool land, bool trap) {
    static constexpr u32 kEdges[] = {1, 63, 64, 65, 128, 320, 321, 384};
    const u32 t = rng.below(5);
    u32 target = t < 3 ? 0 : t - 2;
    u32 n = target != 0 ? 32 : rng.chance(3) ? kEdges[rng.below(8)] : 1 + rng.below(rng.chance(2) ? 64 : 384);
    const u32 groups = (n + 63) / 64;
    u32 a = target != 0 ? (rng.chance(3) ? (rng.chance(2) ? 0 : 319) : rng.below(320))
                        : (rng.chance(3) ? 6 - groups : rng.below(7 - groups));
    u32 src = vr_start(n), c = rng.chance(2) ? 0 : rng.below(65536), f7 = 0, rd = 0;
    bool same = false;
    if (rng.chance(16)) {  // rs1 = rs2: A = C, B = N = n
      same = true;
      src = n;
      c = a;
    }
    if (trap) {
      same = false;
      static constexpr unsigned kAlone[] = {1, 2, 4, 8, 8};  // one alone half the time, 19 / 22 twice as often
      const unsigned mask = rng.chance(2) ? kAlone[rng.below(5)] : 1 + rng.below(15);
      if (mask & 2) src = outside(n);  // 17
      if (mask & 4) {                  // 18
        if (target == 0) n = rng.chance(2) ? 0 : 385 + rng.below(rng.chance(2) ? 64 : 65536 - 385);
        else n = rng.chance(2) ? rng.below(32) : 33 + rng.below(65536 - 33);
      }
      if (mask & 8) {  // 19: b0 + ceil(n/64) > 6; 22: row >= 320
        if (target == 0) a = 7 - std::min<u32>(6, (n + 63) / 64) + rng.below(rng.chance(2) ? 4 : 60000);
        else a = 320 + rng.below(rng.chance(2) ? 8 : 65536 - 320);
      }
      if (mask & 1) {  // 16
        switch (rng.below(3)) {
          case 0: target = 3; break;
          case 1: f7 = (1 + rng.below(31)) << 2; break;
          default: rd = 1 + rng.below(31); break;
        }
      }
    }
    const u32 x1 = (src & 0xffff) << 16 | (a & 0xffff), x2 = (n & 0xffff) << 16 | (c & 0xffff);
    vector_word(Op::kVq, rd, f7 | target, x1, x2, false, same, avoid, land);
  }

  // One VEXP (section 4.4: A = dst, B = src, C = sums, N = T; G = (f7 & 7) + 1) with its operand
  // registers set just before it: G 1..8 (8 weighted), T 1..64 (1, 4, 5, 63, 64 weighted), the
  // source at or inside an earlier destination half the time, dst = src (in place) a third of
  // the time, in the gaps between the source groups (T <= 32) or elsewhere, the sums after the
  // groups, in a gap or elsewhere; a layout that would trap (section 6: 17, 20) is replaced by
  // one that does not (in place, the sums after the groups). `trap`: one or more of the
  // conditions of codes 16 (f7 bits 6..3, rd != x0), 17, 18, 20 instead.
  void vexp(u32 avoid, bool land, bool trap) {
    static constexpr u32 kT[] = {1, 4, 5, 63, 64};
    u32 g = rng.chance(4) ? 8 : 1 + rng.below(8), t = rng.chance(3) ? kT[rng.below(5)] : 1 + rng.below(64);
    auto ext = [&] { return 64 * (g - 1) + t; };
    auto meet = [](u32 x, u32 n, u32 y, u32 m) { return x < y + m && y < x + n; };
    u32 src = 0, dst = 0, sums = 0, f7 = 0, rd = 0;
    auto ok = [&] {
      if (src + ext() > kVr || dst + ext() > kVr || sums + g > kVr) return false;
      for (u32 a = 0; a < g; ++a) {
        for (u32 b = 0; b < g && dst != src; ++b)
          if (meet(dst + 64 * a, t, src + 64 * b, t)) return false;
        if (meet(sums, g, src + 64 * a, t) || meet(sums, g, dst + 64 * a, t)) return false;
      }
      return true;
    };
    bool good = false;
    for (int tries = 0; tries < 16 && !good; ++tries) {
      src = std::min(vr_start(t), kVr - ext());
      const u32 d = rng.below(3);
      dst = d == 0 ? src : d == 1 && t <= 32 ? src + t + rng.below(64 - 2 * t + 1) : rng.below(kVr - ext() + 1);
      const u32 s = rng.below(3);
      sums = s == 0 ? src + ext() + rng.below(4)
             : s == 1 && 64 - t >= g ? src + 64 * rng.below(g) + t + rng.below(64 - t - g + 1)
                                     : rng.below(kVr - g + 1);
      good = ok();
    }
    if (!good) {
      src = dst = rng.below(kVr - ext() - g + 1);
      sums = src + ext();
    }
    if (trap) {
      static constexpr unsigned kAlone[] = {1, 2, 4, 8};
      const unsigned mask = rng.chance(2) ? kAlone[rng.below(4)] : 1 + rng.below(15);
      if (mask & 8) {  // 20: dst one word off src, or the sums on a group's last word
        t = std::max<u32>(t, 2);
        src = std::min(src, kVr - ext() - 1);
        if (rng.chance(2)) {
          dst = src + 1;
        } else {
          dst = src;
          sums = src + 64 * rng.below(g) + t - 1;
        }
      }
      if (mask & 2) {  // 17
        switch (rng.below(3)) {
          case 0: src = outside(ext()); break;
          case 1: dst = outside(ext()); break;
          default: sums = outside(g); break;
        }
      }
      if (mask & 4) t = rng.chance(2) ? 0 : 65 + rng.below(rng.chance(2) ? 64 : 65000);  // 18
      if (mask & 1) {  // 16
        if (rng.chance(2)) f7 = (1 + rng.below(15)) << 3;
        else rd = 1 + rng.below(31);
      }
    } else {
      for (u32 a = 0; a < g; ++a) written.push_back({dst + 64 * a, t});
      written.push_back({sums, g});
    }
    const u32 x1 = (src & 0xffff) << 16 | (dst & 0xffff), x2 = (t & 0xffff) << 16 | (sums & 0xffff);
    vector_word(Op::kVexp, rd, f7 | (g - 1), x1, x2, false, false, avoid, land);
  }

  // VMAT (vector.md section 4.1) with its operand registers set just before it: K 1..6, b0 up to
  // 6 - K (the last block a third of the time), R 1..16 (257..556 one time in 16: rows past 256),
  // c0 + R K <= 4152 (reaching it a quarter of the time); write mode (dst + R <= 1024) or, two
  // times in five, argmax mode (rd any of x1..x30 but `avoid`, x0 one time in four). `trap`: one
  // or more of the conditions of codes 16, 17, 18, 19, 21 instead.
  void vmat(u32 avoid, bool land, bool trap) {
    u32 k = 1 + rng.below(6), argmax = rng.below(5) < 2 ? 1 : 0;
    u32 r = std::min<u32>(rng.chance(16) ? 257 + rng.below(300) : 1 + rng.below(16), argmax ? 4152 / k : std::min(kVr, 4152 / k));
    u32 b0 = rng.chance(3) ? 6 - k : rng.below(7 - k);
    u32 c0 = rng.chance(4) ? 4152 - r * k : rng.below(4152 - r * k + 1);
    u32 dst = argmax ? rng.below(65536) : rng.chance(4) ? kVr - r : rng.below(kVr - r + 1);
    u32 rd = argmax && !rng.chance(4) ? reg_not({0, 31, avoid}) : 0, f7 = 0;
    if (trap) {
      const unsigned mask = rng.chance(2) ? 1u << rng.below(5) : 1 + rng.below(31);
      if (mask & 2) {  // 17 (write mode)
        argmax = 0;
        rd = 0;
        dst = outside(r);
      }
      if (mask & 4) r = 0;                                                       // 18
      if (mask & 8) b0 = 7 - k + rng.below(rng.chance(2) ? 4 : 60000);           // 19
      if (mask & 16) c0 = 4152 - r * k + 1 + rng.below(rng.chance(2) ? 8 : 60000);  // 21
      if (mask & 1) {                                                            // 16
        switch (rng.below(3)) {
          case 0: k = rng.chance(2) ? 0 : 7; break;
          case 1: f7 = (1 + rng.below(7)) << 4; break;
          default:
            argmax = 0;
            rd = reg_not({0, 31, avoid});
            break;
        }
      }
    } else if (!argmax) {
      written.push_back({dst, r});
    }
    const u32 x1 = (b0 & 0xffff) << 16 | (dst & 0xffff), x2 = (r & 0xffff) << 16 | (c0 & 0xffff);
    vector_word(Op::kVmat, rd, f7 | argmax << 3 | k, x1, x2, false, false, avoid, land);
  }

  // VMATR (vector.md section 4.2), K or V mode, with its operand registers set just before it: T
  // 1..64 (1 and 64 a quarter of the time), r0 + T <= 320 (reaching it a quarter of the time); K:
  // src 0..5, dst + 448 + T <= 1024; V: the eight probability spans [src + 64 h, + T) and dst's 64
  // words apart (dst before src or after the last span). `trap`: one or more of the conditions of
  // codes 16, 17, 18, 19 (K) or 20 (V), 22 instead.
  void vmatr(u32 avoid, bool land, bool trap) {
    u32 vmode = rng.chance(2) ? 1 : 0;
    u32 t = rng.chance(4) ? (rng.chance(2) ? 1 : 64) : 1 + rng.below(64);
    u32 r0 = rng.chance(4) ? 320 - t : rng.below(321 - t), src, dst, f7 = 0, rd = 0;
    if (vmode == 0) {
      src = rng.below(6);
      dst = rng.chance(4) ? kVr - 448 - t : rng.below(kVr - 448 - t + 1);
    } else if (rng.chance(2)) {  // dst before src
      src = 64 + rng.below(kVr - 448 - t - 64 + 1);
      dst = rng.chance(4) ? src - 64 : rng.below(src - 64 + 1);
    } else {  // dst after the last span
      src = rng.below(kVr - 448 - t - 64 + 1);
      const u32 lo = src + 448 + t;
      dst = rng.chance(4) ? lo : lo + rng.below(kVr - 64 - lo + 1);
    }
    if (trap) {
      const unsigned mask = rng.chance(2) ? 1u << rng.below(5) : 1 + rng.below(31);
      if (mask & 2) {  // 17
        if (vmode == 0) dst = outside(448 + t);
        else if (rng.chance(2)) src = outside(448 + t);
        else dst = outside(64);
      }
      if (mask & 4) t = rng.chance(2) ? 0 : 65 + rng.below(rng.chance(2) ? 8 : 60000);  // 18
      if (mask & 8) {  // 19 (K: src > 5) or 20 (V: dst meets a span)
        if (vmode == 0) src = 6 + rng.below(rng.chance(2) ? 4 : 60000);
        else dst = src + 64 * rng.below(8) + rng.below(std::max<u32>(t, 1));
      }
      if (mask & 16) r0 = 320 - std::min<u32>(t, 320) + 1 + rng.below(rng.chance(2) ? 8 : 60000);  // 22
      if (mask & 1) {                                                                            // 16
        if (rng.chance(2)) f7 = (1 + rng.below(63)) << 1;
        else rd = reg_not({0, 31, avoid});
      }
    } else if (vmode == 0) {
      for (u32 h = 0; h < 8; ++h) written.push_back({dst + 64 * h, t});
    } else {
      written.push_back({dst, 64});
    }
    const u32 x1 = (src & 0xffff) << 16 | (dst & 0xffff), x2 = (t & 0xffff) << 16 | (r0 & 0xffff);
    vector_word(Op::kVmatr, rd, f7 | vmode, x1, x2, false, false, avoid, land);
  }

  // The memories VMAT and VMATR read (vector.md section 2.1), as sections: ACT (edge-biased int8),
  // ASH, KSH, VSH (0..25, 25 and 0 weighted), WMEM and the caches (random bytes), WSCALE (random,
  // 65,535 or a power of two); one program in eight has none (all zero).
  void vector_memories(std::map<std::string, std::vector<std::uint8_t>>& out) {
    if (rng.chance(8)) return;
    auto fill = [&](const char* name, u32 n, const std::function<std::uint8_t()>& f) {
      std::vector<std::uint8_t>& b = out[name];
      b.resize(n);
      for (auto& x : b) x = f();
    };
    auto shift = [&] { return static_cast<std::uint8_t>(rng.chance(4) ? 25 : rng.chance(4) ? 0 : rng.below(26)); };
    auto any = [&] { return static_cast<std::uint8_t>(rng.next()); };
    fill(".lockstep.act", 384, [&] { return static_cast<std::uint8_t>(rng.chance(4) ? (rng.chance(2) ? 0x80 : 0x7F) : rng.next()); });
    fill(".lockstep.ash", 6, shift);
    fill(".lockstep.wmem", 32 * 4152, any);
    std::vector<std::uint8_t>& ws = out[".lockstep.wscale"];
    for (u32 c = 0; c < 4152; ++c) {
      const u32 w = rng.chance(4) ? 65535 : rng.chance(3) ? 1u << rng.below(16) : rng.below(65536);
      ws.push_back(static_cast<std::uint8_t>(w));
      ws.push_back(static_cast<std::uint8_t>(w >> 8));
    }
    fill(".lockstep.kcache", 32 * 320, any);
    fill(".lockstep.vcache", 32 * 320, any);
    fill(".lockstep.ksh", 320, shift);
    fill(".lockstep.vsh", 320, shift);
  }

  Item li(u32 rd, u32 value, bool test = false) {
    Item it;
    it.kind = Item::Kind::kLi;
    it.op = Op::kLui;
    it.rd = static_cast<std::uint8_t>(rd);
    it.value = value;
    it.test = test;
    return it;
  }
  Item word(u32 w, bool test) {
    Item it;
    it.word = w;
    it.op = ref::decode(w).op;
    it.test = test;
    return it;
  }

  // A counted loop: li c, N; L: up to 5 non-control instructions; addi c, c, -1; bne c, x0, L.
  void loop_stream() {
    const u32 c = 1 + rng.below(30);
    add(li(c, 1 + rng.below(6)));
    const std::size_t start = items.size();
    const unsigned body = has_non_control() ? 1 + rng.below(5) : 0;
    in_loop = true;
    for (unsigned k = 0; k < body; ++k) instruction(pick(false), c, false);
    in_loop = false;
    add(word(ref::encode::i(Op::kAddi, c, c, 0xfff), false), false);
    Item b;
    b.kind = Item::Kind::kBranch;
    b.op = Op::kBne;
    b.rs1 = static_cast<std::uint8_t>(c);
    b.rs2 = 0;
    b.target = static_cast<std::int64_t>(start);
    b.test = false;
    add(b, false);
    landing[start] = false;  // jumping past `li c` would count down from any value
  }

  // A carry chain: li a, edge; li b, edge; bn.addc/bn.subb rd, a, b; ... (carry propagates).
  void carry_stream(const std::vector<const Encoding*>& rows) {
    const unsigned n = 4 + rng.below(12);
    auto edge = [&]() -> u32 {
      switch (rng.below(6)) {
        case 0: case 1: case 2: return 0xffffffffu;
        case 3: return 0;
        case 4: return 1;
        default: return rng.operand();
      }
    };
    for (unsigned k = 0; k < n; ++k) {
      const u32 a = reg_not({0, 31}), b = reg_not({0, 31, a});
      add(li(a, edge()));
      add(li(b, edge()));
      const Encoding& row = *rows[rng.below(static_cast<u32>(rows.size()))];
      add(word(ref::encode::r(row.op, reg_not({31}), a, b), true));
    }
  }

  // Stores and loads at the same (or overlapping) offsets of the scratch area.
  void memory_stream(const std::vector<const Encoding*>& loads, const std::vector<const Encoding*>& stores) {
    const unsigned n = 2 + rng.below(7);
    for (unsigned k = 0; k < n; ++k) {
      const u32 base = rng.below(kScratchBytes / 4) * 4;
      if (!stores.empty()) {
        const Encoding& s = *stores[rng.below(static_cast<u32>(stores.size()))];
        const u32 size = access_size(s);
        add(word(ref::encode::s(s.op, 31, rng.below(32), base + rng.below(4 / size) * size), true));
      }
      if (!loads.empty()) {
        const Encoding& l = *loads[rng.below(static_cast<u32>(loads.size()))];
        const u32 size = access_size(l);
        add(word(ref::encode::i(l.op, reg_not({31}), 31, base + rng.below(4 / size) * size), true));
      }
    }
  }
};

}  // namespace

Program generate(std::uint64_t seed, std::uint64_t index, std::span<const Encoding* const> ops, unsigned vew_modes,
                 unsigned vfn_fns, unsigned vred_modes) {
  if (ops.empty()) throw OpsError("--ops: no op selected");
  progen::Random rng(seed);
  Generator g{rng, ops, {}, {}, {}, 0, 0, 0, {}, 0, false};
  const bool has_vew = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVew; });
  const bool has_vfn = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVfn; });
  const bool has_vred = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVred; });
  const bool has_vq = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVq; });
  const bool has_vexp = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVexp; });
  const bool has_vmat = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVmat; });
  const bool has_vmatr = std::any_of(ops.begin(), ops.end(), [](const Encoding* e) { return e->op == Op::kVmatr; });
  g.vred_modes = (vred_modes & kVredFuzzedModes) ? vred_modes & kVredFuzzedModes : kVredFuzzedModes;
  g.vew_modes = (vew_modes & kVewFuzzedModes) ? vew_modes & kVewFuzzedModes : kVewFuzzedModes;
  g.vfn_fns = !has_vfn ? 0 : (vfn_fns & kVfnFuzzedFns) ? vfn_fns & kVfnFuzzedFns : kVfnFuzzedFns;
  // Weighted mix: every class its weight (shared by its rows), one focus class x6.
  std::map<InsnClass, unsigned> per_class;
  for (const Encoding* e : ops) ++per_class[e->cls];
  std::vector<InsnClass> classes;
  for (const auto& [c, n] : per_class) classes.push_back(c);
  const InsnClass focus = classes[rng.below(static_cast<u32>(classes.size()))];
  for (const Encoding* e : ops) {
    double w = std::max(1u, class_weight(e->cls)) / static_cast<double>(per_class[e->cls]);
    if (e->cls == focus) w *= 6;
    g.weights.push_back(w);
  }
  std::vector<const Encoding*> carry, loads, stores;
  for (const Encoding* e : ops) {
    if (e->op == Op::kBnAddc || e->op == Op::kBnSubb) carry.push_back(e);
    if (e->cls == InsnClass::kLoad) loads.push_back(e);
    if (e->cls == InsnClass::kStore) stores.push_back(e);
  }

  Program p;
  p.index = index;
  p.seed = seed;
  p.name = "p" + std::to_string(index);
  for (u32 i = 0; i < kScratchBytes; i += 4) {
    const u32 v = rng.operand();
    for (int b = 0; b < 4; ++b) p.scratch.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
  }
  // VR's initial words (vector.md section 2.1) when VEW or VFN is selected: edge-biased random
  // words; one program in sixteen has none (VR zero), one in sixteen a shorter section.
  bool trap_last = false;
  if (has_vmat || has_vmatr) g.vector_memories(p.sections);
  if (has_vew || has_vfn || has_vred || has_vq || has_vexp || has_vmat || has_vmatr) {
    u32 bytes = 4 * Generator::kVr;
    if (rng.chance(8)) bytes = rng.chance(2) ? 0 : 1 + rng.below(bytes - 1);
    for (u32 w = 0; 4 * w < bytes; ++w) {
      const u32 x = g.vr_word(has_vew);
      for (int b = 0; b < 4; ++b) p.vreg.push_back(static_cast<std::uint8_t>(x >> (8 * b)));
    }
    p.vreg.resize(bytes);
    trap_last = rng.chance(4);
  }
  for (u32 r = 1; r <= 30; ++r) g.add(g.li(r, rng.operand()));
  Item base = g.li(31, kScratchBase);
  base.fixed = true;
  g.add(base);
  const std::size_t body_begin = g.items.size();
  const unsigned length = 16 + rng.below(48);
  while (g.items.size() - body_begin < length) {
    if (rng.chance(8)) {
      switch (rng.below(3)) {
        case 0: g.loop_stream(); break;
        case 1: if (!carry.empty()) g.carry_stream(carry); break;
        default: if (!loads.empty() || !stores.empty()) g.memory_stream(loads, stores); break;
      }
      continue;
    }
    g.instruction(g.pick(true), 31);
  }
  if (trap_last) {  // the body's last item: no branch or jump skips it
    if (has_vmat && (!(has_vew || has_vfn || has_vred || has_vq || has_vexp || has_vmatr) || rng.chance(2)))
      g.vmat(31, true, true);
    else if (has_vmatr && (!(has_vew || has_vfn || has_vred || has_vq || has_vexp) || rng.chance(2)))
      g.vmatr(31, true, true);
    else if (has_vexp && (!(has_vew || has_vfn || has_vred || has_vq) || rng.chance(2)))
      g.vexp(31, true, true);
    else if (has_vq && (!(has_vew || has_vfn || has_vred) || rng.chance(2)))
      g.vq(31, true, true);
    else if (has_vred && (!(has_vew || has_vfn) || rng.chance(3)))
      g.vred(31, true, true);
    else if (has_vew && (!has_vfn || rng.chance(2)))
      g.vew(31, true, true);
    else
      g.vfn(31, true, true);
  }
  const std::size_t end = g.items.size();
  Item a7 = g.li(17, 93);
  a7.fixed = true;
  g.add(a7, !trap_last);
  Item ecall = g.word(0x00000073u, false);
  ecall.fixed = true;
  g.add(ecall);
  // Forward targets of the body's branches and jumps: a landing item after it (or the exit).
  for (std::size_t i = body_begin; i < end; ++i) {
    Item& it = g.items[i];
    if ((it.kind != Item::Kind::kBranch && it.kind != Item::Kind::kJalr) || it.target >= 0) continue;
    std::vector<std::size_t> t;
    for (std::size_t k = i + 1; k <= end; ++k)
      if (g.landing[k]) t.push_back(k);
    it.target = static_cast<std::int64_t>(t[rng.below(static_cast<u32>(t.size()))]);
  }
  p.items = std::move(g.items);
  return p;
}

// ------------------------------------------------------------------ coverage

int value_class(u32 v) {
  if (v == 0) return 0;
  if (v == 1) return 1;
  if (v == 0xffffffffu) return 2;
  if (v == 0x80000000u) return 3;
  if (v == 0x7fffffffu) return 4;
  if ((v & (v - 1)) == 0) return 5;
  return 6;
}

std::string_view value_class_name(int c) {
  static constexpr std::string_view kNames[] = {"zero", "one", "minus-one", "int-min", "int-max", "pow2", "other"};
  return c >= 0 && c < kValueClasses ? kNames[c] : "?";
}

void Coverage::add(const Program& p, std::uint64_t max_steps) {
  ref::Machine m;
  m.load(p.image());
  const std::vector<bool> test = p.test_words();
  ++programs;
  while (m.status() == ref::Status::kRunning && m.steps() < max_steps) {
    const u32 pc = m.pc();
    const std::size_t slot = (pc - kCodeBase) / 4;
    if (pc >= kCodeBase && pc % 4 == 0 && slot < test.size() && test[slot]) {
      const u32 w = m.read_word(pc);
      const ref::Decoded d = ref::decode(w);
      if (d.op != Op::kIllegal && d.op != Op::kUndecoded) {
        const Encoding& e = ref::encoding_of(d.op);
        Row& r = rows[std::string(e.mnemonic)];
        ++r.executed;
        ++instructions;
        if (e.operands & ref::kOpdRs1) {
          r.has_rs1 = true;
          ++r.rs1[value_class(m.reg(d.rs1))];
        }
        if (e.operands & ref::kOpdRs2) {
          r.has_rs2 = true;
          ++r.rs2[value_class(m.reg(d.rs2))];
        }
      }
    }
    if (m.step().empty()) break;
  }
}

void Coverage::merge(const Coverage& o) {
  programs += o.programs;
  instructions += o.instructions;
  for (const auto& [name, r] : o.rows) {
    Row& mine = rows[name];
    mine.executed += r.executed;
    mine.has_rs1 = mine.has_rs1 || r.has_rs1;
    mine.has_rs2 = mine.has_rs2 || r.has_rs2;
    for (int c = 0; c < kValueClasses; ++c) {
      mine.rs1[c] += r.rs1[c];
      mine.rs2[c] += r.rs2[c];
    }
  }
}

json Coverage::to_json() const {
  json classes = json::array();
  for (int c = 0; c < kValueClasses; ++c) classes.push_back(std::string(value_class_name(c)));
  json ops = json::object();
  for (const auto& [name, r] : rows) {
    json o = {{"executed", r.executed}};
    if (r.has_rs1) o["rs1"] = r.rs1;
    if (r.has_rs2) o["rs2"] = r.rs2;
    ops[name] = o;
  }
  return {{"programs", programs}, {"instructions", instructions}, {"value_classes", classes}, {"ops", ops}};
}

Coverage Coverage::from_json(const json& j) {
  Coverage c;
  c.programs = j.value("programs", std::uint64_t{0});
  c.instructions = j.value("instructions", std::uint64_t{0});
  const json ops = j.value("ops", json::object());
  for (const auto& [name, o] : ops.items()) {
    Row r;
    r.executed = o.value("executed", std::uint64_t{0});
    if (o.contains("rs1")) {
      r.has_rs1 = true;
      r.rs1 = o["rs1"].get<std::array<std::uint64_t, kValueClasses>>();
    }
    if (o.contains("rs2")) {
      r.has_rs2 = true;
      r.rs2 = o["rs2"].get<std::array<std::uint64_t, kValueClasses>>();
    }
    c.rows[name] = r;
  }
  return c;
}

std::string Coverage::text(std::span<const Encoding* const> ops) const {
  std::ostringstream os;
  os << "coverage: " << instructions << " test instructions executed by the reference in " << programs
     << " programs; rs1/rs2 values as zero/one/minus-one/int-min/int-max/pow2/other\n";
  auto counts = [](const std::array<std::uint64_t, kValueClasses>& a) {
    std::string s;
    for (int c = 0; c < kValueClasses; ++c) s += (c ? "/" : "") + std::to_string(a[c]);
    return s;
  };
  std::vector<std::string> missing;
  for (const Encoding* e : ops) {
    const auto it = rows.find(std::string(e->mnemonic));
    if (it == rows.end() || it->second.executed == 0) {
      missing.emplace_back(e->mnemonic);
      continue;
    }
    const Row& r = it->second;
    char head[64];
    std::snprintf(head, sizeof head, "  %-9s %8llu", std::string(e->mnemonic).c_str(),
                  static_cast<unsigned long long>(r.executed));
    os << head;
    if (r.has_rs1) os << "  rs1 " << counts(r.rs1);
    if (r.has_rs2) os << "  rs2 " << counts(r.rs2);
    os << "\n";
  }
  if (!missing.empty()) {
    os << "  never executed:";
    for (const std::string& m : missing) os << " " << m;
    os << "\n";
  }
  return os.str();
}

// ------------------------------------------------------------------ running

bool reference_exits(const Program& p, std::uint64_t max_steps) {
  ref::Machine m;
  try {
    m.load(p.image());
  } catch (const std::exception&) {
    return false;
  }
  const ref::RunResult r = m.run(max_steps);
  return r.stop == ref::Stop::kExit;
}

std::vector<engine::StreamResult> run_lockstep(const std::shared_ptr<const chip::Chip>& chip, const std::string& backend,
                                               const std::vector<Program>& programs, engine::Mode mode,
                                               std::uint64_t max_steps, unsigned batch, std::uint64_t classify_window,
                                               chip::ChipBackend* reuse) {
  std::vector<engine::StreamResult> out;
  if (reuse) batch = static_cast<unsigned>(std::min<std::size_t>(batch, reuse->max_streams()));
  batch = std::max(batch, 1u);
  for (std::size_t first = 0; first < programs.size(); first += batch) {
    std::vector<engine::Guest> guests;
    for (std::size_t i = first; i < programs.size() && i < first + batch; ++i) guests.push_back(programs[i].guest());
    std::unique_ptr<chip::ChipBackend> owned;
    if (!reuse) owned = engine::make_backend(backend, chip);
    chip::ChipBackend* be = reuse ? reuse : owned.get();
    engine::Options opt;
    opt.mode = mode;
    opt.max_steps = max_steps;
    opt.classify_window = classify_window;
    engine::Engine e(*be, std::move(guests), opt);
    engine::RunResult r = e.run();
    for (engine::StreamResult& s : r.streams) out.push_back(std::move(s));
  }
  return out;
}

FirstFailing chip_oracle(const std::shared_ptr<const chip::Chip>& chip, const std::string& backend, engine::Mode mode,
                         std::uint64_t max_steps) {
  // A backend of its own, kept alive by the oracle, behind the backend overload.
  std::shared_ptr<chip::ChipBackend> be(engine::make_backend(backend, chip));
  FirstFailing over_be = chip_oracle(*be, mode, max_steps);
  return [be, over_be](const std::vector<Program>& cands) { return over_be(cands); };
}

FirstFailing chip_oracle(chip::ChipBackend& backend, engine::Mode mode, std::uint64_t max_steps) {
  return [&backend, mode, max_steps](const std::vector<Program>& cands) -> std::optional<std::size_t> {
    std::vector<Program> runnable;
    std::vector<std::size_t> where;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (!reference_exits(cands[i], max_steps)) continue;
      runnable.push_back(cands[i]);
      where.push_back(i);
    }
    if (runnable.empty()) return std::nullopt;
    const auto res = run_lockstep(nullptr, backend.name(), runnable, mode, max_steps, 32, 0, &backend);
    for (std::size_t k = 0; k < res.size(); ++k)
      if (res[k].mismatches > 0) return where[k];
    return std::nullopt;
  };
}

// ------------------------------------------------------------------ shrinking

ShrinkResult shrink(const Program& failing, const FirstFailing& first_failing, const ShrinkOptions& o) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  ShrinkResult res;
  res.original_words = failing.words();
  Program cur = failing;
  auto spent = [&] {
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (res.runs >= o.max_runs || s >= o.max_seconds) {
      res.budget_exhausted = true;
      return true;
    }
    return false;
  };
  // Tries candidates made by `make(k)` for k = from, from+1, ... < n (nullopt: skip),
  // in speculative batches; returns the first k whose candidate still mismatches.
  auto first_of = [&](std::size_t from, std::size_t n,
                      const std::function<std::optional<Program>(std::size_t)>& make) -> std::optional<std::pair<std::size_t, Program>> {
    std::size_t k = from;
    while (k < n && !spent()) {
      std::vector<Program> cands;
      std::vector<std::size_t> ks;
      while (k < n && cands.size() < o.batch) {
        if (auto c = make(k)) {
          cands.push_back(std::move(*c));
          ks.push_back(k);
        }
        ++k;
      }
      if (cands.empty()) break;
      res.runs += static_cast<unsigned>(cands.size());
      if (auto f = first_failing(cands)) return std::make_pair(ks[*f], std::move(cands[*f]));
    }
    return std::nullopt;
  };
  auto removable = [&](const Program& p) {
    std::size_t n = 0;
    for (const Item& it : p.items) n += !it.fixed;
    return n;
  };
  auto drop_pass = [&]() {
    bool changed = false;
    for (std::size_t chunk = std::max<std::size_t>(1, removable(cur) / 2);; chunk = std::max<std::size_t>(1, chunk / 2)) {
      std::size_t from = 0;
      while (!spent()) {
        const std::size_t n = (cur.items.size() + chunk - 1) / chunk;
        const Program base = cur;
        auto hit = first_of(from, n, [&](std::size_t k) -> std::optional<Program> {
          const std::size_t a = k * chunk, b = std::min(base.items.size(), a + chunk);
          bool any = false;
          for (std::size_t i = a; i < b; ++i) any = any || !base.items[i].fixed;
          if (!any) return std::nullopt;
          return base.without(a, b);
        });
        if (!hit) break;
        cur = std::move(hit->second);
        from = hit->first;  // the chunk that now sits there
        changed = true;
      }
      if (chunk == 1 || spent()) break;
    }
    return changed;
  };
  auto simplify_pass = [&]() {
    bool changed = false;
    for (const u32 v : {0u, 1u}) {
      std::size_t from = 0;
      while (!spent()) {
        const Program base = cur;
        auto hit = first_of(from, base.items.size(), [&](std::size_t k) -> std::optional<Program> {
          const Item& it = base.items[k];
          if (it.fixed || it.kind != Item::Kind::kLi || it.value == 0 || it.value == 1) return std::nullopt;
          Program c = base;
          c.items[k].value = v;
          return c;
        });
        if (!hit) break;
        cur = std::move(hit->second);
        from = hit->first + 1;
        changed = true;
      }
    }
    if (!spent() && std::any_of(cur.scratch.begin(), cur.scratch.end(), [](std::uint8_t b) { return b != 0; })) {
      Program c = cur;
      std::fill(c.scratch.begin(), c.scratch.end(), 0);
      ++res.runs;
      if (first_failing({c})) {
        cur = std::move(c);
        changed = true;
      }
    }
    if (!spent() && !cur.vreg.empty()) {  // no .lockstep.vreg: VR all zero
      Program c = cur;
      c.vreg.clear();
      ++res.runs;
      if (first_failing({c})) {
        cur = std::move(c);
        changed = true;
      }
    }
    if (!spent() && !cur.sections.empty()) {  // no other vector memories: all zero
      Program c = cur;
      c.sections.clear();
      ++res.runs;
      if (first_failing({c})) {
        cur = std::move(c);
        changed = true;
      }
    }
    return changed;
  };
  for (int round = 0; round < 4 && !spent(); ++round) {
    const bool dropped = drop_pass();
    const bool simplified = simplify_pass();
    if (!dropped && !simplified) break;
  }
  res.program = std::move(cur);
  res.shrunk_words = res.program.words();
  res.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return res;
}

}  // namespace lockstep::campaign
