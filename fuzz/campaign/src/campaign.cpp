#include "lockstep/campaign/campaign.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <array>
#include <set>
#include <sstream>

#include "lockstep/engine/check.h"
#include "lockstep/format/insn_class.h"
#include "lockstep/ops/op_case.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/vector.h"

namespace lockstep::campaign {

using ref::Encoding;
using ref::InsnClass;
using ref::Op;
using u32 = std::uint32_t;
using nlohmann::json;

constexpr u32 kNop = 0x00000013u;  // addi x0, x0, 0: a gap's words (Item::Kind::kGap)

// ------------------------------------------------------------------ ops

std::string_view class_name(InsnClass cls) { return format::insn_class_name(static_cast<unsigned>(cls)); }

std::pair<u32, std::string> blamed_instruction(const engine::Divergence& d) {
  const bool pc_token = d.field == "PCL" || d.field.rfind("PCH", 0) == 0;
  if (pc_token && d.recent.size() >= 2) {  // the pc came from the instruction before
    const engine::InstructionRecord& before = d.recent[d.recent.size() - 2];
    return {before.word, before.disassembly()};
  }
  return {d.word, d.disassembly};
}

std::string failure_signature(const engine::Divergence& d, std::string_view mode) {
  const auto [word, disassembly] = blamed_instruction(d);
  // The encoding table's mnemonic: "vred", not the disassembly's "vred.sumsq.sh6" (an outside
  // tester: one wrong token made 30 classes of 64 failing runs).
  const Op op = ref::decode(word).op;
  const std::string operation = op == Op::kIllegal || op == Op::kUndecoded ? disassembly.substr(0, disassembly.find(' '))
                                                                          : std::string(ref::encoding_of(op).mnemonic);
  // A word stream's VW<q><m> and an int8 stream's VLB<k> name an element's place in its quad,
  // which a bug in one op's arithmetic seldom depends on: VW*<m> (byte m of any word) and VLB*
  // (found by an outside tester: one wrong saturation of VEW ADD made 8 classes, VW03..VW33 in
  // each mode, and each was shrunk on its own)
  std::string field = d.field;
  if (field.size() == 4 && field.rfind("VW", 0) == 0 && field[2] >= '0' && field[2] <= '3') field[2] = '*';
  else if (field.size() == 4 && field.rfind("VLB", 0) == 0 && field[3] >= '0' && field[3] <= '3') field[3] = '*';
  return "`" + operation + "` at " + field + ", " + std::string(mode);
}

// format's table is in the order of ref's classes (the two ends and the drifted one checked here).
static_assert(format::insn_class_name(static_cast<unsigned>(InsnClass::kAlu)) == "alu");
static_assert(format::insn_class_name(static_cast<unsigned>(InsnClass::kSystem)) == "system");
static_assert(format::insn_class_name(static_cast<unsigned>(InsnClass::kVector)) == "vector");

namespace {

// The vector ops (docs/chip-design.md section 3.6): VLD, VEW (ADD, MUL, MULS, ROT), VFN (RSQRT,
// RECIP, SILU), VRED (SUMSQ, SUM, MAX), VQ (ACT, K and V rows), VEXP, VMAT (write and argmax
// mode) and VMATR (K and V mode). They are fuzzed only when asked for (--ops vld, vew, vfn, vred,
// vq, vexp, vmat, vmatr or the class "vector"), so the default mix stays the scalar machine.
bool fuzzable(const Encoding& e) { return e.cls != InsnClass::kSystem; }

// The ops whose modes --ops names one by one (their cases' mode names: "vew.muls", "vfn.silu",
// "vred.max"), and the mask each selection goes to.
struct ModeMasks {
  unsigned vew = 0, vfn = 0, red = 0;
  unsigned* of(Op op) { return op == Op::kVew ? &vew : op == Op::kVfn ? &vfn : op == Op::kVred ? &red : nullptr; }
};

std::string refusal(const Encoding& e) {
  return "--ops: " + std::string(e.mnemonic) + " is not fuzzed (every program ends with the exit ecall)";
}

}  // namespace

std::vector<const Encoding*> select_ops(const std::string& list, unsigned* vew_modes, unsigned* vfn_fns,
                                       unsigned* vred_modes) {
  std::set<const Encoding*> chosen;
  ModeMasks masks;
  std::string lowered;
  for (char c : list) lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> names;
  std::stringstream ss(lowered);
  for (std::string tok; std::getline(ss, tok, ',');) {
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    // An empty name is refused, never skipped: `--ops add,$NEWOP` with NEWOP unset would
    // otherwise fuzz without the op it was meant for (an outside tester's `add,,sub`).
    if (tok.empty())
      throw OpsError("--ops '" + list + "': an empty name (two commas in a row, or one at either end)");
    names.push_back(tok);
  }
  if (!list.empty() && list.back() == ',')  // getline drops a last empty field
    throw OpsError("--ops '" + list + "': an empty name (two commas in a row, or one at either end)");
  if (names.empty() && !list.empty()) throw OpsError("--ops: empty list");
  if (names.empty()) names.push_back("all");
  // A whole row: its every mode or function.
  auto take = [&](const Encoding& e) {
    if (!fuzzable(e)) throw OpsError(refusal(e));
    chosen.insert(&e);
    if (const ops::OpCase* c = ops::case_of(e.op); c && masks.of(e.op)) *masks.of(e.op) |= c->all_modes();
  };
  for (const std::string& n : names) {
    bool found = false;
    if (n == "all" || n == "scalar") {
      for (const Encoding& e : ref::encoding_table())
        if (fuzzable(e) && e.cls != InsnClass::kVector) chosen.insert(&e);
      continue;
    }
    if (n == "rv32i" || n == "rv32im") {  // the base integer ISA (isa.md), and with M: for partial chips
      for (const Encoding& e : ref::encoding_table()) {
        const bool base = e.cls == InsnClass::kAlu || e.cls == InsnClass::kAluImm || e.cls == InsnClass::kUpper ||
                          e.cls == InsnClass::kLoad || e.cls == InsnClass::kStore || e.cls == InsnClass::kBranch ||
                          e.cls == InsnClass::kJal || e.cls == InsnClass::kJalr || e.cls == InsnClass::kFence;
        const bool m = e.cls == InsnClass::kMul || e.cls == InsnClass::kDiv;
        if (fuzzable(e) && (base || (n == "rv32im" && m))) chosen.insert(&e);
      }
      continue;
    }
    for (const ops::OpCase* c : ops::registry()) {  // one mode of VEW, VFN or VRED
      if (!c->selectable_modes()) continue;
      const auto modes = c->modes();
      for (unsigned m = 0; m < modes.size(); ++m) {
        if (n != modes[m]) continue;
        chosen.insert(&ref::encoding_of(c->op()));
        *masks.of(c->op()) |= 1u << m;
        found = true;
      }
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
                     "bignum, vector; groups: rv32i, rv32im, scalar, all; or a mnemonic such as add, sh2add, "
                     "bn.addc, vld, vew, vew.muls, vfn, vfn.silu)");
    }
  }
  std::vector<const Encoding*> out;
  for (const Encoding& e : ref::encoding_table())
    if (chosen.count(&e)) out.push_back(&e);
  if (vew_modes) *vew_modes = masks.vew;
  if (vfn_fns) *vfn_fns = masks.vfn;
  if (vred_modes) *vred_modes = masks.red;
  return out;
}

std::string ops_list(std::span<const Encoding* const> ops, unsigned vew_modes, unsigned vfn_fns, unsigned vred_modes) {
  std::string s;
  ModeMasks masks{vew_modes, vfn_fns, vred_modes};
  for (const Encoding* e : ops) {
    const ops::OpCase* c = ops::case_of(e->op);
    const unsigned* mask = masks.of(e->op);
    // A row with only some of its modes (functions) selected: their names.
    if (c && mask && (*mask & c->all_modes()) != c->all_modes() && (*mask & c->all_modes())) {
      const auto modes = c->modes();
      for (unsigned m = 0; m < modes.size(); ++m)
        if (*mask >> m & 1) s += (s.empty() ? "" : ",") + std::string(modes[m]);
      continue;
    }
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

std::size_t Program::gap_words() const {
  std::size_t n = 0;
  for (const Item& it : items) n += it.kind == Item::Kind::kGap ? it.value : 0;
  return n;
}

std::size_t Program::instruction_words() const { return words() - gap_words(); }

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
        const std::int32_t off = static_cast<std::int32_t>(target_addr(it) - addr[i] + (it.value & 1));
        code.push_back(ref::encode::u(Op::kAuipc, it.rs1, 0));
        if (it.base != 0) {  // off - base, or off + base where that leaves the 12-bit immediate
          const std::int32_t base = off - it.base >= -2048 && off - it.base <= 2047 ? it.base : -it.base;
          code.push_back(ref::encode::i(Op::kAddi, it.rs1, it.rs1, static_cast<u32>(base)));
          code.push_back(ref::encode::i(Op::kJalr, it.rd, it.rs1, static_cast<u32>(off - base)));
        } else {
          code.push_back(ref::encode::i(Op::kJalr, it.rd, it.rs1, static_cast<u32>(off)));
        }
        break;
      }
      case Item::Kind::kGap: code.insert(code.end(), it.value, kNop); break;
    }
  }
  return code;
}

std::vector<bool> Program::test_words() const {
  std::vector<bool> t;
  for (const Item& it : items) {
    if (it.kind == Item::Kind::kJalr) {
      t.push_back(false);                  // the auipc is set-up
      if (it.base != 0) t.push_back(false);  // so is the addi
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
  std::size_t w = 0;
  for (const Item& it : items) {
    char buf[160];
    if (it.kind == Item::Kind::kGap) {  // one line, not hundreds of nops
      const u32 a = kCodeBase + 4 * static_cast<u32>(w);
      std::snprintf(buf, sizeof buf, "%08x: %08x  nop  (x %u, through %08x: a gap a far jump crosses)\n", a, kNop,
                    it.value, a + 4 * (it.value - 1));
      out += buf;
      w += it.value;
      continue;
    }
    for (unsigned k = 0; k < it.words(); ++k, ++w) {
      const u32 a = kCodeBase + 4 * static_cast<u32>(w);
      std::snprintf(buf, sizeof buf, "%08x: %08x  %s\n", a, c[w], ref::disassemble(c[w], a).c_str());
      out += buf;
    }
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
    case InsnClass::kVector: return 4;  // the eight vector ops (fuzz/ops)
    default: return 0;
  }
}

// instruction()'s `avoid` when it may write any register (x0 and x31 included).
constexpr u32 kNoRegister = 32;

// A forward branch or jump lands on one of the next this many landing items.
constexpr std::size_t kForwardLandings = 16;

// The farthest forward offsets, in bytes: a B-type branch's 12-bit immediate, a jalr's from its
// auipc (auipc rs1, 0; its I-type immediate), a jal's 20-bit one.
constexpr u32 kBranchReach = 4092, kJalrReach = 2044, kJalReach = 0xffffc;

// A 12-bit immediate field: an edge (0, 1, -1, 2047, -2048, ...) half the time, else any.
u32 edge_imm12(progen::Random& rng) {
  static constexpr u32 kImm[] = {0, 1, 0xfff, 0x7ff, 0x800, 2, 0xffe, 31, 32};
  return rng.chance(2) ? kImm[rng.below(sizeof kImm / sizeof kImm[0])] : rng.below(4096);
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
  ops::DrawContext ctx{rng};    // what the vector ops' draws share: selected modes, VR spans written, budget
  unsigned trap_code = 0;       // the trap code of the instruction drawn to trap (0: none)
  std::string trap_vars;        // its parameters (ops::OpCase::describe)

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
  u32 imm12() { return edge_imm12(rng); }
  // A jalr's Item::base: half the time 0 (X(rs1) the auipc's pc), else X(rs1)'s low bits only
  // (+-1..3) or, unless `low_only`, any -2047..2047. A far jump and a loop's closing jalr keep to
  // the low bits, which leave their immediate far or negative (their corners).
  std::int32_t jalr_base(bool low_only) {
    if (rng.chance(2)) return 0;
    if (low_only || rng.chance(2)) return (rng.chance(2) ? 1 : -1) * static_cast<std::int32_t>(1 + rng.below(3));
    return static_cast<std::int32_t>(rng.below(4095)) - 2047;
  }
  static u32 access_size(const Encoding& e) { return 1u << ((e.match >> 12) & 3); }

  // One instruction of `row`; `avoid`: a register it must not write (kNoRegister: none). It may
  // write x31, the scratch base, but for a jump's link and a vector op: `li x31` of the base
  // follows it then.
  void instruction(const Encoding& row, u32 avoid, bool land = true) {
    Item it;
    it.op = row.op;
    u32 rd = 0;
    auto dest = [&] { return rd = reg_not({avoid}); };
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
        it.rd = static_cast<std::uint8_t>(reg_not({31, avoid}));
        break;
      case InsnClass::kJalr:
        it.kind = Item::Kind::kJalr;
        it.rd = static_cast<std::uint8_t>(reg_not({31, avoid}));
        it.rs1 = static_cast<std::uint8_t>(reg_not({0, 31, avoid}));
        it.value = rng.chance(2) ? 1u : 0u;
        it.base = jalr_base(false);
        break;
      case InsnClass::kVector:
        vector_op(*ops::case_of(row.op), avoid, land, false);
        return;
      default:
        return;
    }
    add(it, land);
    if (rd == 31) add(li(31, kScratchBase), false);  // the base again (its write was the test)
  }

  // A word of .lockstep.vreg: with VFN selected, half the time (always but one in four without
  // VEW) a word for one of the selected functions' paths (ops::vfn_input_word); else an edge of
  // sat32 (sums and products of two saturate, either way), near +-2^30, +-2^15 and +-2^16, small,
  // or of a random magnitude 2^0..2^31 (log-uniform, so that about half the products of two stay
  // below 2^47 and do not saturate after rnd(., 16)).
  u32 vr_word(bool has_vew, bool has_vfn) {
    if (has_vfn && (has_vew ? rng.chance(2) : !rng.chance(4))) return ops::vfn_input_word(ctx);
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
      default: return ctx.log_uniform();
    }
  }

  // +-k 2^15, k = 0..15: two adjacent ones make VEW ROT's exact results u c - v s and u s + v c
  // end in 0x8000 (a tie of rnd(., 16)) where COS or SIN is odd (and MUL's products of such a
  // word and an odd one).
  u32 multiple_of_2_15() {
    const u32 sign = rng.chance(2) ? 0 : 0xFFFFFFFFu;
    return ((rng.below(16) * 0x8000u) ^ sign) - sign;
  }

  // One instruction of a vector op (its case in fuzz/ops draws the fields) with its operand
  // registers set just before it; `trap`: one drawn to trap (recorded in `trap_code`, `trap_vars`),
  // with the one condition of `code` (0: drawn).
  void vector_op(const ops::OpCase& c, u32 avoid, bool land, bool trap, unsigned code = 0) {
    ctx.avoid = avoid;
    const ops::Fields f = trap ? c.draw_trapping(ctx, code) : c.draw_valid(ctx);
    if (trap) {
      trap_code = c.trap_code(f);
      trap_vars = c.describe(f);
    } else {
      for (const ops::Span& w : c.writes(f)) ctx.written.push_back(w);
    }
    vector_word(c.op(), f.rd, f.f7, f.x1(), f.x2(), f.x0, f.same, avoid, land);
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

  // A counted loop: li c, START; L: up to 5 non-control instructions (1..5 without `closing`, 0..5
  // with it: `addi c; bne c, x0, L` branches back by 4 bytes); addi c, c, STEP; and the
  // backward jump that closes it, `closing` (a selected branch, jal or jalr: a test instruction)
  // or, without one, bne c, x0, L (set-up). The body runs n = 1..6 times (twice when beq or bgeu
  // closes it: taken only at c = z). A branch compares c with z, which is x0 (0) or, half the
  // time, x31 (the scratch base, 0x80000: two registers, neither x0), taken while the body runs
  // again: bne c, z and bltu z, c (c != z), blt z, c (c > z) or blt c, z (c < z), bge c, z
  // (c >= z) or bge z, c (c <= z), beq c, z and bgeu z, c (c = z). A jal (its link x0 one time
  // in four) or auipc+jalr back to L follows `beq c, x0` out of the loop (set-up).
  void loop_stream(const Encoding* closing) {
    const u32 c = 1 + rng.below(30);
    const u32 n = 1 + rng.below(6);
    const Op op = closing ? closing->op : Op::kBne;
    u32 start = n, step = 0xfff;  // counts down to 0
    u32 rs1 = c, rs2 = 0;
    const bool x31 = closing && closing->cls == InsnClass::kBranch && rng.chance(2);
    switch (op) {
      case Op::kBeq: start = 0xffffffffu, step = 1; break;
      case Op::kBgeu: start = 0xffffffffu, step = 1, rs1 = 0, rs2 = c; break;
      case Op::kBltu: rs1 = 0, rs2 = c; break;
      case Op::kBlt:
        if (rng.chance(2)) rs1 = 0, rs2 = c;  // 0 < c, down from n
        else start = 0u - n, step = 1;        // c < 0, up from -n
        break;
      case Op::kBge:
        if (rng.chance(2)) start = n - 1;                   // c >= 0, down from n - 1
        else start = 1u - n, step = 1, rs1 = 0, rs2 = c;    // c <= 0, up from 1 - n
        break;
      default: break;  // bne c, x0; jal, jalr: beq c, x0 leaves, down from n
    }
    if (x31) {  // the same around the scratch base, against x31
      start += kScratchBase;
      if (rs1 == 0) rs1 = 31;
      if (rs2 == 0) rs2 = 31;
    }
    add(li(c, start));
    const std::size_t first = items.size();
    const unsigned body = !has_non_control() ? 0 : closing ? rng.below(6) : 1 + rng.below(5);
    ctx.in_loop = true;
    for (unsigned k = 0; k < body; ++k) instruction(pick(false), c, false);
    ctx.in_loop = false;
    add(word(ref::encode::i(Op::kAddi, c, c, step), false), false);
    Item b;
    b.kind = Item::Kind::kBranch;
    b.test = closing != nullptr;
    if (closing && closing->cls != InsnClass::kBranch) {  // beq c, x0 past the jump; the jump back
      Item out = b;
      out.op = Op::kBeq;
      out.rs1 = static_cast<std::uint8_t>(c);
      out.test = false;
      out.target = static_cast<std::int64_t>(items.size() + 2);
      add(out, false);
      b.op = op;
      b.rd = static_cast<std::uint8_t>(rng.chance(4) ? 0 : reg_not({31, c}));
      if (closing->cls == InsnClass::kJalr) {
        b.kind = Item::Kind::kJalr;
        b.rs1 = static_cast<std::uint8_t>(reg_not({0, 31, c}));
        b.value = rng.chance(2) ? 1u : 0u;
        b.base = std::abs(jalr_base(true));  // its immediate only more negative
      }
    } else {
      b.op = op;
      b.rs1 = static_cast<std::uint8_t>(rs1);
      b.rs2 = static_cast<std::uint8_t>(rs2);
    }
    b.target = static_cast<std::int64_t>(first);
    add(b, false);
    landing[first] = false;  // jumping past `li c` would count from any value
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

  // Three to eight test instructions of the selected ops with corners (corners_of), each at one of
  // its op's corners, the (op, corner) pair drawn uniformly from `at` (an op of five corners meets
  // each as often as an op of one meets its one), with `li`s of its operands just before it. A store is
  // followed by a selected load of the bytes it wrote; a load reads a word that a selected store
  // of a value with bit 7 of every byte set wrote just before it (without one: the scratch's).
  // At the negative-offset corner both address the scratch from a register past it, li'd just
  // before (offsets -1..-2048); a jalr there, and a branch or jal at the backward corner, close
  // a loop (loop_stream).
  void corner_stream(const std::vector<std::pair<const Encoding*, Corner>>& at,
                     const std::vector<const Encoding*>& loads, const std::vector<const Encoding*>& stores) {
    const unsigned n = 3 + rng.below(6);
    for (unsigned k = 0; k < n; ++k) {
      const auto [pick, c] = at[rng.below(static_cast<u32>(at.size()))];
      const Encoding& row = *pick;
      if (c == Corner::kBackward || (c == Corner::kNegativeOffset && row.cls == InsnClass::kJalr)) {
        loop_stream(&row);
        continue;
      }
      const auto [a, b] = corner_operands(rng, row, c);
      if (c == Corner::kFarForward || c == Corner::kFarBackward) {
        far_jump(row, c == Corner::kFarBackward, a, b);
        continue;
      }
      if (c == Corner::kBaseLowBits) {  // a jalr forward (its target drawn with the others')
        Item j;
        j.kind = Item::Kind::kJalr;
        j.op = row.op;
        j.rd = static_cast<std::uint8_t>(reg_not({31}));
        j.rs1 = static_cast<std::uint8_t>(reg_not({0, 31}));
        j.value = rng.chance(2) ? 1u : 0u;
        j.base = static_cast<std::int32_t>(a);
        add(j);
        continue;
      }
      switch (row.cls) {
        case InsnClass::kStore:
        case InsnClass::kLoad: {
          const Encoding* store = row.cls == InsnClass::kStore ? &row
                                  : stores.empty()             ? nullptr
                                                               : stores[rng.below(static_cast<u32>(stores.size()))];
          const Encoding* load = row.cls == InsnClass::kLoad ? &row
                                 : loads.empty()             ? nullptr
                                                             : loads[rng.below(static_cast<u32>(loads.size()))];
          const u32 base = rng.below(kScratchBytes / 4) * 4;
          const u32 ssize = store ? access_size(*store) : 4;
          const u32 at = base + rng.below(4 / ssize) * ssize;
          u32 rb = 31, past = 0;  // the address register, and how far past the scratch's base + base it points
          bool land = true;       // past its li, no jump may land: the access would miss the scratch
          if (c == Corner::kNegativeOffset) {
            rb = reg_not({0, 31});
            past = rng.chance(2) ? 4 + rng.below(16) : rng.chance(2) ? 2048 : 4 + rng.below(2045);
            add(li(rb, kScratchBase + base + past));
            land = false;
          }
          const u32 off = 0u - past - base;  // + an offset in the scratch: base + at least 0, less than 4
          if (store) {
            const u32 v = reg_not({0, 31, rb});
            add(li(v, b), land);
            add(word(ref::encode::s(store->op, rb, v, off + at), true), land);
          }
          if (load) {
            const u32 lsize = access_size(*load);
            const u32 from = lsize <= ssize ? at + rng.below(ssize / lsize) * lsize : at & ~(lsize - 1);
            add(word(ref::encode::i(load->op, reg_not({31}), rb, off + from), true), land);
          }
          break;
        }
        case InsnClass::kAluImm: {
          const u32 ra = reg_not({0, 31});
          add(li(ra, a));
          add(word(ref::encode::i(row.op, reg_not({31}), ra, row.format == ref::Format::kIShift ? b : b & 0xfff), true));
          break;
        }
        default: {  // register-register ops and branches: the same-register corner in one register
          const u32 ra = reg_not({0, 31});
          const u32 rb = c == Corner::kSameRegister ? ra : reg_not({0, 31, ra});
          add(li(ra, a));
          if (rb != ra) add(li(rb, b));
          if (row.cls == InsnClass::kBranch) {
            Item br;
            br.kind = Item::Kind::kBranch;
            br.op = row.op;
            br.rs1 = static_cast<std::uint8_t>(ra);
            br.rs2 = static_cast<std::uint8_t>(rb);
            add(br);
          } else {
            add(word(ref::encode::r(row.op, reg_not({31}), ra, rb), true));
          }
          break;
        }
      }
    }
  }

  // A branch (comparing registers li'd with a and b), jal or auipc+jalr of `row` whose offset is
  // 1,024 bytes up to its reach (jalr's 2 KiB, a branch's 4 KiB; a jal's 4 KiB, and one time in
  // four 4 to 64 KiB: bits 12..15), uniform in words, or one time in four 64 bytes up to the
  // reach (the medium distances between loops' and far ones), over a gap of nops that nothing
  // runs.
  // Forward: `test -> T; [jal x0 -> T;] gap; T:` (a branch not taken takes the jal after it).
  // Backward: `jal x0 -> B; A: jal x0 -> C; gap; B: test -> A; C:` (taken or not, on to C). The
  // two set-up jals are far forward jumps too. Each runs once: no loop.
  void far_jump(const Encoding& row, bool backward, u32 a, u32 b) {
    const u32 reach = row.cls == InsnClass::kJalr ? kJalrReach : kBranchReach;  // a jal's too, but one time in four
    const u32 least = rng.chance(4) ? 16 : kFarOffset / 4;
    u32 words = least + rng.below(reach / 4 - least + 1);  // |offset| / 4
    if (row.cls == InsnClass::kJal && rng.chance(4)) words = 1024 + rng.below(16384 - 1024);
    Item t;
    t.op = row.op;
    t.kind = row.cls == InsnClass::kJalr ? Item::Kind::kJalr : Item::Kind::kBranch;
    if (row.cls == InsnClass::kBranch) {
      const u32 ra = reg_not({0, 31});
      const u32 rb = reg_not({0, 31, ra});
      add(li(ra, a));
      add(li(rb, b));
      t.rs1 = static_cast<std::uint8_t>(ra);
      t.rs2 = static_cast<std::uint8_t>(rb);
    } else {
      t.rd = static_cast<std::uint8_t>(reg_not({31}));
      if (row.cls == InsnClass::kJalr) {
        t.rs1 = static_cast<std::uint8_t>(reg_not({0, 31}));
        t.value = rng.chance(2) ? 1u : 0u;
        t.base = (backward ? 1 : -1) * std::abs(jalr_base(true));  // its immediate only farther
      }
    }
    Item jump;  // set-up: jal x0
    jump.kind = Item::Kind::kBranch;
    jump.op = Op::kJal;
    jump.test = false;
    Item gap;
    gap.kind = Item::Kind::kGap;
    gap.test = false;
    if (!backward) {  // the offset counts from the test's first word (a jalr's auipc) to T
      const std::size_t at = items.size();
      add(t);
      const u32 before = items[at].words() + (row.cls == InsnClass::kBranch ? 1 : 0);  // the test's words and the set-up jal
      if (row.cls == InsnClass::kBranch) add(jump, false);
      gap.value = words - before;
      add(gap, false);
      items[at].target = static_cast<std::int64_t>(items.size());
      if (row.cls == InsnClass::kBranch) items[at + 1].target = static_cast<std::int64_t>(items.size());
      return;
    }
    const std::size_t first = items.size();
    add(jump);              // -> B
    add(jump, false);       // A: -> C
    gap.value = words - 1;  // from B back to A: A's word and the gap
    add(gap, false);
    const std::size_t at = items.size();
    t.target = static_cast<std::int64_t>(first + 1);
    add(t, false);
    items[first].target = static_cast<std::int64_t>(at);
    items[first + 1].target = static_cast<std::int64_t>(items.size());
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
  DrawOptions o;
  o.vew_modes = vew_modes;
  o.vfn_fns = vfn_fns;
  o.vred_modes = vred_modes;
  return generate(seed, index, ops, o);
}

Program generate(std::uint64_t seed, std::uint64_t index, std::span<const Encoding* const> ops, const DrawOptions& o) {
  if (ops.empty()) throw OpsError("--ops: no op selected");
  const unsigned vew_modes = o.vew_modes, vfn_fns = o.vfn_fns, vred_modes = o.vred_modes;
  progen::Random rng(seed);
  Generator g{rng, ops, {}, {}, {}, ops::DrawContext{rng}, 0, {}};
  // The vector ops selected (fuzz/ops cases), their modes.
  std::vector<const ops::OpCase*> vector_cases;
  for (const Encoding* e : ops)
    if (const ops::OpCase* c = ops::case_of(e->op)) vector_cases.push_back(c);
  auto has = [&](Op op) { return std::any_of(ops.begin(), ops.end(), [&](const Encoding* e) { return e->op == op; }); };
  g.ctx.modes[Op::kVew] = vew_modes & kVewFuzzedModes;
  g.ctx.modes[Op::kVfn] = vfn_fns & kVfnFuzzedFns;
  g.ctx.modes[Op::kVred] = vred_modes & kVredFuzzedModes;
  g.ctx.register_edges = o.register_edges;
  g.ctx.scratch_base = kScratchBase;
  g.ctx.scratch_bytes = kScratchBytes;
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
  std::vector<const Encoding*> carry, loads, stores, backs;  // backs: the branches and jumps that may close a loop
  std::vector<std::pair<const Encoding*, Corner>> cornered;
  for (const Encoding* e : ops) {
    for (const Corner c : corners_of(e->op)) cornered.emplace_back(e, c);
    if (e->op == Op::kBnAddc || e->op == Op::kBnSubb) carry.push_back(e);
    if (e->cls == InsnClass::kLoad) loads.push_back(e);
    if (e->cls == InsnClass::kStore) stores.push_back(e);
    if (is_control(*e)) backs.push_back(e);
  }

  Program p;
  p.index = index;
  p.seed = seed;
  p.name = "p" + std::to_string(index);
  for (u32 i = 0; i < kScratchBytes; i += 4) {
    const u32 v = rng.operand();
    for (int b = 0; b < 4; ++b) p.scratch.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
  }
  // VR's initial words (vector.md section 2.1) when a vector op is selected: edge-biased random
  // words; one program in sixteen has none (VR zero), one in sixteen a shorter section. One
  // program in four (DrawOptions::trap_every) ends its body with an instruction of one of the
  // selected vector ops drawn to trap.
  // With a selected op that has profiles of its own (OpCase::fill_memories, fill_vr: the value
  // classes of its arithmetic), one of those ops redraws the memories it reads (when the program
  // has memories) and, three programs in four, VR.
  bool trap_last = false;
  std::vector<const ops::OpCase*> vr_cases, memory_cases;
  for (const ops::OpCase* c : vector_cases) {
    if (c->draws_vr()) vr_cases.push_back(c);
    if (c->draws_memories()) memory_cases.push_back(c);
  }
  if (has(Op::kVmat) || has(Op::kVmatr)) {
    g.vector_memories(p.sections);
    if (!p.sections.empty() && !memory_cases.empty())  // the sections that op reads, redrawn
      memory_cases[rng.below(static_cast<u32>(memory_cases.size()))]->fill_memories(g.ctx, p.sections);
  }
  if (!vector_cases.empty()) {
    u32 bytes = 4 * ops::kVrWords;
    if (rng.chance(8)) bytes = rng.chance(2) ? 0 : 1 + rng.below(bytes - 1);
    std::array<u32, ops::kVrWords> words{};
    if (!vr_cases.empty() && !rng.chance(4)) {
      vr_cases[rng.below(static_cast<u32>(vr_cases.size()))]->fill_vr(g.ctx, words);
    } else {
      for (u32 w = 0; 4 * w < bytes; ++w) {
        if (has(Op::kVew) && w + 1 < ops::kVrWords && rng.chance(16)) {  // a pair of words for ROT's ties
          words[w] = g.multiple_of_2_15();
          words[++w] = g.multiple_of_2_15();
          continue;
        }
        words[w] = g.vr_word(has(Op::kVew), has(Op::kVfn));
      }
    }
    for (u32 w = 0; 4 * w < bytes; ++w)
      for (int b = 0; b < 4; ++b) p.vreg.push_back(static_cast<std::uint8_t>(words[w] >> (8 * b)));
    p.vreg.resize(bytes);
    trap_last = rng.chance(std::max(o.trap_every, 1u)) && o.trap_every != 0;
  }
  if (o.trap) trap_last = *o.trap && !vector_cases.empty();
  const ops::OpCase* trap_op = nullptr;
  if (!o.trap_op.empty()) {
    trap_op = ops::find(o.trap_op);
    if (!trap_op || std::find(vector_cases.begin(), vector_cases.end(), trap_op) == vector_cases.end())
      throw OpsError("--ops: the trapping op " + o.trap_op + " is not a selected vector op");
  }
  for (u32 r = 1; r <= 30; ++r) g.add(g.li(r, rng.operand()));
  Item base = g.li(31, kScratchBase);
  base.fixed = true;
  g.add(base);
  const std::size_t body_begin = g.items.size();
  const unsigned length = o.min_body + rng.below(std::max(o.min_body, o.max_body) - o.min_body + 1);
  while (g.items.size() - body_begin < length) {
    // (A selection without corners, the vector ops alone, draws as before the corner stream came:
    // its seeds keep their programs, and the per-op long runs theirs.)
    if (cornered.empty() ? rng.chance(8) : rng.chance(6)) {
      switch (rng.below(cornered.empty() ? 3 : 5)) {
        case 0: g.loop_stream(backs.empty() ? nullptr : backs[rng.below(static_cast<u32>(backs.size()))]); break;
        case 1: if (!carry.empty()) g.carry_stream(carry); break;
        case 2: if (!loads.empty() || !stores.empty()) g.memory_stream(loads, stores); break;
        default: if (!cornered.empty()) g.corner_stream(cornered, loads, stores); break;
      }
      continue;
    }
    g.instruction(g.pick(true), kNoRegister);
  }
  if (trap_last) {  // the body's last item: no branch or jump skips it
    if (!trap_op) trap_op = vector_cases[rng.below(static_cast<u32>(vector_cases.size()))];
    g.vector_op(*trap_op, 31, true, true, o.trap_code);
    p.trap_code = g.trap_code;
    p.trap_vars = g.trap_vars;
  }
  const std::size_t end = g.items.size();
  Item a7 = g.li(17, 93);
  a7.fixed = true;
  g.add(a7, !trap_last);
  Item ecall = g.word(0x00000073u, false);
  ecall.fixed = true;
  g.add(ecall);
  // Forward targets of the body's branches and jumps: one of the next kForwardLandings landing
  // items after it (or the exit), within the offset's reach (a branch's 4 KiB, a jalr's 2 KiB
  // from its auipc; a body of --length 4,096 items is longer), else the nearest (a few words
  // away: only a loop's body and a negative-offset access are not landings). A jump anywhere
  // into the rest of the body skipped half of it on average: a program of 4,096 items ran a
  // median of 3,056 steps.
  std::vector<u32> offset(g.items.size() + 1, 0);  // bytes from the first item
  for (std::size_t i = 0; i < g.items.size(); ++i) offset[i + 1] = offset[i] + 4 * g.items[i].words();
  for (std::size_t i = body_begin; i < end; ++i) {
    Item& it = g.items[i];
    if ((it.kind != Item::Kind::kBranch && it.kind != Item::Kind::kJalr) || it.target >= 0) continue;
    const u32 reach = it.kind == Item::Kind::kJalr ? kJalrReach : it.op == Op::kJal ? kJalReach : kBranchReach;
    std::vector<std::size_t> t;
    std::size_t nearest = end;
    for (std::size_t k = i + 1; k <= end && t.size() < kForwardLandings; ++k) {
      if (!g.landing[k]) continue;
      if (nearest == end) nearest = k;
      if (offset[k] - offset[i] <= reach) t.push_back(k);
    }
    it.target = static_cast<std::int64_t>(t.empty() ? nearest : t[rng.below(static_cast<u32>(t.size()))]);
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

std::string_view corner_name(Corner c) {
  static constexpr std::string_view kNames[] = {
      "int-min/-1", "by-zero", "divisor-top-bit", "int-min*int-min", "int-min*-1", "-1*int-min", "-1*-1",
      "int-min*int-max", "int-max*int-min", "int-max*int-max", "overflow", "carry", "equal", "same-register", "signs-differ", "shift-31", "shift-amount-over-31", "shift-0",
      "rs1-top-bit", "shifted-out", "value-top-bit", "value-high-bits", "loaded-top-bit", "negative-offset",
      "rs1-low-bits", "backward", "far-forward", "far-backward", "result-0", "result-minus-1"};
  static_assert(sizeof kNames / sizeof kNames[0] == kCorners);
  const int i = static_cast<int>(c);
  return i >= 0 && i < kCorners ? kNames[i] : "?";
}

std::span<const Corner> corners_of(Op op) {
  using C = Corner;
  static constexpr C kDiv[] = {C::kIntMinByMinusOne, C::kByZero, C::kEqual, C::kSameRegister};
  static constexpr C kDivu[] = {C::kByZero, C::kDivisorTopBit, C::kEqual, C::kSameRegister};
  static constexpr C kMul[] = {C::kIntMinTimesIntMin, C::kIntMinTimesMinusOne, C::kMinusOneTimesIntMin,
                               C::kMinusOneTimesMinusOne, C::kIntMinTimesIntMax, C::kIntMaxTimesIntMin,
                               C::kIntMaxTimesIntMax, C::kEqual, C::kSameRegister};
  static constexpr C kAdd[] = {C::kOverflow, C::kCarry, C::kEqual, C::kSameRegister, C::kResultZero, C::kResultMinusOne};
  static constexpr C kSub[] = {C::kOverflow, C::kCarry, C::kEqual, C::kSameRegister, C::kResultMinusOne};
  static constexpr C kAddi[] = {C::kOverflow, C::kResultZero, C::kResultMinusOne};
  static constexpr C kAnd[] = {C::kEqual, C::kSameRegister, C::kResultZero};
  static constexpr C kOrXor[] = {C::kEqual, C::kSameRegister, C::kResultMinusOne};
  static constexpr C kAndi[] = {C::kResultZero};
  static constexpr C kOriXori[] = {C::kResultMinusOne};
  static constexpr C kCompare[] = {C::kEqual, C::kSameRegister, C::kSignsDiffer};
  static constexpr C kBranch[] = {C::kEqual, C::kSameRegister, C::kSignsDiffer, C::kBackward, C::kFarForward, C::kFarBackward};
  static constexpr C kCompareImm[] = {C::kEqual, C::kSignsDiffer};
  static constexpr C kShiftLeft[] = {C::kSameRegister, C::kShift31, C::kShiftOver31, C::kShiftZero, C::kShiftedOut};
  static constexpr C kShiftRight[] = {C::kSameRegister, C::kShift31, C::kShiftOver31, C::kShiftZero, C::kShiftTopBit};
  static constexpr C kShiftLeftImm[] = {C::kShift31, C::kShiftZero, C::kShiftedOut};
  static constexpr C kShiftRightImm[] = {C::kShift31, C::kShiftZero, C::kShiftTopBit};
  static constexpr C kShAdd[] = {C::kEqual, C::kSameRegister, C::kShiftedOut};
  static constexpr C kStoreNarrow[] = {C::kStoreTopBit, C::kStoreHighBits, C::kNegativeOffset};
  static constexpr C kStoreWord[] = {C::kStoreTopBit, C::kNegativeOffset};
  static constexpr C kLoadNarrow[] = {C::kLoadTopBit, C::kNegativeOffset};
  static constexpr C kNegative[] = {C::kNegativeOffset};
  static constexpr C kJal[] = {C::kBackward, C::kFarForward, C::kFarBackward};
  static constexpr C kJalr[] = {C::kNegativeOffset, C::kBaseLowBits, C::kFarForward, C::kFarBackward};
  switch (op) {
    case Op::kDiv: case Op::kRem: return kDiv;
    case Op::kDivu: case Op::kRemu: return kDivu;
    case Op::kMul: case Op::kMulh: case Op::kMulhsu: case Op::kMulhu: return kMul;
    case Op::kAdd: return kAdd;
    case Op::kSub: return kSub;
    case Op::kAddi: return kAddi;
    case Op::kAnd: return kAnd;
    case Op::kOr: case Op::kXor: return kOrXor;
    case Op::kAndi: return kAndi;
    case Op::kOri: case Op::kXori: return kOriXori;
    case Op::kSlti: case Op::kSltiu: return kCompareImm;
    case Op::kSlt: case Op::kSltu: return kCompare;
    case Op::kBeq: case Op::kBne: case Op::kBlt: case Op::kBge: case Op::kBltu: case Op::kBgeu: return kBranch;
    case Op::kJal: return kJal;
    case Op::kJalr: return kJalr;
    case Op::kLw: return kNegative;
    case Op::kSll: return kShiftLeft;
    case Op::kSrl: case Op::kSra: return kShiftRight;
    case Op::kSlli: return kShiftLeftImm;
    case Op::kSrli: case Op::kSrai: return kShiftRightImm;
    case Op::kSh1add: case Op::kSh2add: case Op::kSh3add: return kShAdd;
    case Op::kSb: case Op::kSh: return kStoreNarrow;
    case Op::kSw: return kStoreWord;
    case Op::kLb: case Op::kLbu: case Op::kLh: case Op::kLhu: return kLoadNarrow;
    default: return {};
  }
}

std::pair<u32, u32> corner_operands(progen::Random& rng, const Encoding& row, Corner c) {
  constexpr u32 kMin = 0x80000000u, kMax = 0x7fffffffu, kMinus1 = 0xffffffffu;
  const Op op = row.op;
  const bool imm = row.cls == InsnClass::kAluImm;
  const bool shamt = row.format == ref::Format::kIShift;
  auto imm12 = [&] { return edge_imm12(rng); };
  auto some = [&] { return rng.chance(2) ? rng.operand() : static_cast<u32>(rng.next()); };
  auto high_bits = [&](u32 low) { return rng.chance(2) ? 0u : static_cast<u32>(rng.next()) & ~low; };
  auto negative_half_the_time = [&] { return rng.chance(2) ? kMin | some() : some(); };
  switch (c) {
    case Corner::kIntMinByMinusOne: return {kMin, kMinus1};
    case Corner::kByZero: return {some(), 0};
    case Corner::kDivisorTopBit: return {some(), kMin | static_cast<u32>(rng.next())};
    case Corner::kIntMinTimesIntMin: return {kMin, kMin};
    case Corner::kIntMinTimesMinusOne: return {kMin, kMinus1};
    case Corner::kMinusOneTimesIntMin: return {kMinus1, kMin};
    case Corner::kMinusOneTimesMinusOne: return {kMinus1, kMinus1};
    case Corner::kIntMinTimesIntMax: return {kMin, kMax};
    case Corner::kIntMaxTimesIntMin: return {kMax, kMin};
    case Corner::kIntMaxTimesIntMax: return {kMax, kMax};
    case Corner::kOverflow: {
      const bool up = rng.chance(2);  // past INT_MAX, or below INT_MIN
      if (op == Op::kAddi) {  // imm in [-2048, 2047]
        if (up) {
          const u32 x = rng.below(2047);
          return {kMax - x, x + 1 + rng.below(2047 - x)};
        }
        const u32 x = rng.below(2048);
        return {kMin + x, 0u - (x + 1 + rng.below(2048 - x))};
      }
      const u32 x = rng.chance(2) ? rng.below(16) : static_cast<u32>(rng.next()) & 0x3fffffffu;
      const u32 y = x + 1 + rng.below(kMax - x);  // 1..INT_MAX
      const bool sub = op == Op::kSub;
      std::pair<u32, u32> ab = up ? std::pair{kMax - x, sub ? 0u - y : y} : std::pair{kMin + x, sub ? y : 0u - y};
      if (!sub && rng.chance(2)) std::swap(ab.first, ab.second);
      return ab;
    }
    case Corner::kCarry:
      if (op == Op::kSub) {  // X(rs1) < X(rs2), unsigned
        const u32 a = rng.chance(4) ? 0 : rng.below(kMinus1);
        return {a, a + 1 + rng.below(kMinus1 - a)};
      } else {  // a + b >= 2^32
        const u32 a = rng.chance(4) ? kMinus1 : 1 + rng.below(kMinus1);
        return {a, (0u - a) + rng.below(a)};
      }
    case Corner::kEqual: {
      if (imm) {
        const u32 v = ref::field::sext(imm12(), 12);
        return {v, v};
      }
      const u32 v = some();
      return {v, v};
    }
    case Corner::kSameRegister: {
      const u32 v = negative_half_the_time();  // sra a0, a0, a0 of a negative word
      return {v, v};
    }
    case Corner::kSignsDiffer: {
      if (imm) {
        const u32 v = ref::field::sext(imm12(), 12);
        return {(some() & kMax) | (~v & kMin), v};
      }
      switch (rng.below(4)) {
        case 0: return rng.chance(2) ? std::pair{kMin, kMax} : std::pair{kMax, kMin};
        case 1: return rng.chance(2) ? std::pair{kMinus1, 0u} : std::pair{0u, kMinus1};
        default: {
          const u32 a = some();
          return {a, (some() & kMax) | (~a & kMin)};
        }
      }
    }
    case Corner::kShift31: return {some(), shamt ? 31u : 31u | high_bits(31)};
    case Corner::kShiftOver31: {
      static constexpr u32 kEdges[] = {32, 33, 63, 64, 0x80000000u, 0xffffffffu, 0x8000001fu};
      return {some(), rng.chance(2) ? kEdges[rng.below(sizeof kEdges / sizeof kEdges[0])] : 32 + rng.below(kMinus1 - 31)};
    }
    case Corner::kShiftZero: return {negative_half_the_time(), shamt ? 0u : high_bits(31)};
    case Corner::kShiftTopBit: {
      const u32 s = 1 + rng.below(31);
      return {kMin | some(), shamt ? s : s | high_bits(31)};
    }
    case Corner::kShiftedOut: {
      const u32 s = op == Op::kSh1add ? 1 : op == Op::kSh2add ? 2 : op == Op::kSh3add ? 3 : 1 + rng.below(31);
      const u32 a = some() | 1u << (31 - rng.below(s));
      if (op == Op::kSh1add || op == Op::kSh2add || op == Op::kSh3add) return {a, some()};
      return {a, shamt ? s : s | high_bits(31)};
    }
    case Corner::kStoreTopBit: {
      const u32 bits = op == Op::kSb ? 8 : op == Op::kSh ? 16 : 32;
      const u32 top = 1u << (bits - 1);
      const u32 low = bits == 32 ? static_cast<u32>(rng.next()) : rng.chance(2) ? 0u : rng.below(top);
      return {0, top | low | (bits == 32 ? 0u : high_bits(top | (top - 1)))};
    }
    case Corner::kStoreHighBits: {
      const u32 bits = op == Op::kSb ? 8 : 16;
      const u32 low = rng.chance(2) ? rng.below(1u << bits) : (1u << (bits - 1)) + rng.below(2) * ((1u << (bits - 1)) - 1);
      return {0, low | (1 + rng.below((1u << (32 - bits)) - 1)) << bits};
    }
    case Corner::kLoadTopBit: return {0, static_cast<u32>(rng.next()) | 0x80808080u};
    case Corner::kNegativeOffset:
    case Corner::kBackward: return {0, some()};  // the instruction's form (the corner stream's), any value
    case Corner::kBaseLowBits: {  // a jalr's base: its low bits only, or any with bit 0 or 1 set
      const u32 m = rng.chance(2) ? 1 + rng.below(3) : (rng.below(512) << 2 | (1 + rng.below(3)));
      return {rng.chance(2) ? m : 0u - m, 0};
    }
    case Corner::kFarForward:
    case Corner::kFarBackward: {  // the form; a branch's operands, equal half the time
      const u32 a = some();
      return {a, rng.chance(2) ? a : some()};
    }
    case Corner::kResultZero:
    case Corner::kResultMinusOne: {
      // b (an OP-IMM's sign-extended immediate) first, neither 0 nor -1, then a for the result;
      // redrawn while either operand is 0 or -1 (and, or: a part of a's bits left to b)
      const bool zero = c == Corner::kResultZero;
      auto usable = [&](u32 v) { return v != 0 && v != kMinus1; };
      for (;;) {
        u32 b = imm ? ref::field::sext(imm12(), 12) : some();
        if (imm && zero && op == Op::kAndi && rng.chance(2)) b = ref::field::sext(rng.below(4096), 12);
        if (imm && !zero && op == Op::kOri) b |= 0xfffff800u;  // a negative immediate: its high bits reach -1
        if (!usable(b)) continue;
        const u32 bits = static_cast<u32>(rng.next());
        u32 a = 0;
        switch (op) {
          case Op::kAdd: case Op::kAddi: a = zero ? 0u - b : kMinus1 - b; break;  // add's 0: -b
          case Op::kSub: a = b - 1; break;                                          // a - (a + 1)
          case Op::kAnd: case Op::kAndi: a = bits & ~b; break;                      // disjoint bits
          case Op::kOr: case Op::kOri: a = ~b | (bits & b); break;                  // covers b's zeros
          default: a = ~b; break;                                                   // xor, xori
        }
        if (usable(a)) return {a, b};
      }
    }
    case Corner::kCount: break;
  }
  return {0, 0};
}

bool at_corner(Op op, Corner c, u32 a, u32 b, bool same_register, std::int32_t offset) {
  const auto mine = corners_of(op);
  if (std::find(mine.begin(), mine.end(), c) == mine.end()) return false;
  constexpr u32 kMin = 0x80000000u, kMax = 0x7fffffffu, kMinus1 = 0xffffffffu;
  auto shift_amount = [&] { return b & 31; };  // OP-IMM's shamt is b itself (0..31)
  auto left_shift = [&]() -> unsigned {
    switch (op) {
      case Op::kSh1add: return 1;
      case Op::kSh2add: return 2;
      case Op::kSh3add: return 3;
      default: return shift_amount();
    }
  };
  auto store_bits = [&] { return op == Op::kSb ? 8u : op == Op::kSh ? 16u : 32u; };
  switch (c) {
    case Corner::kIntMinByMinusOne: return a == kMin && b == kMinus1;
    case Corner::kByZero: return b == 0;
    case Corner::kDivisorTopBit: return (b >> 31) != 0;
    case Corner::kIntMinTimesIntMin: return a == kMin && b == kMin;
    case Corner::kIntMinTimesMinusOne: return a == kMin && b == kMinus1;
    case Corner::kMinusOneTimesIntMin: return a == kMinus1 && b == kMin;
    case Corner::kMinusOneTimesMinusOne: return a == kMinus1 && b == kMinus1;
    case Corner::kIntMinTimesIntMax: return a == kMin && b == kMax;
    case Corner::kIntMaxTimesIntMin: return a == kMax && b == kMin;
    case Corner::kIntMaxTimesIntMax: return a == kMax && b == kMax;
    case Corner::kOverflow: {
      const u32 r = op == Op::kSub ? a - b : a + b;
      const u32 bb = op == Op::kSub ? ~b : b;  // a - b overflows as a + ~b + 1 does: operands of one sign, result of the other
      return ((a ^ r) & (bb ^ r)) >> 31;
    }
    case Corner::kCarry: return op == Op::kSub ? a < b : a + b < a;
    case Corner::kEqual: return a == b;
    case Corner::kSameRegister: return same_register;
    case Corner::kSignsDiffer: return ((a ^ b) >> 31) != 0;
    case Corner::kShift31: return shift_amount() == 31;
    case Corner::kShiftOver31: return b >= 32;
    case Corner::kShiftZero: return shift_amount() == 0;
    case Corner::kShiftTopBit: return shift_amount() != 0 && (a >> 31) != 0;
    case Corner::kShiftedOut: {
      const unsigned s = left_shift();
      return s != 0 && (a >> (32 - s)) != 0;
    }
    case Corner::kStoreTopBit: return ((b >> (store_bits() - 1)) & 1) != 0;
    case Corner::kStoreHighBits: return store_bits() < 32 && (b >> store_bits()) != 0;
    case Corner::kLoadTopBit: return ((b >> ((op == Op::kLb || op == Op::kLbu) ? 7 : 15)) & 1) != 0;
    case Corner::kNegativeOffset:
    case Corner::kBackward: return offset < 0;
    case Corner::kBaseLowBits: return (a & 3) != 0;
    case Corner::kFarForward: return offset >= kFarOffset;
    case Corner::kFarBackward: return offset <= -kFarOffset;
    case Corner::kResultZero:
    case Corner::kResultMinusOne: {
      if (a == 0 || a == kMinus1 || b == 0 || b == kMinus1) return false;
      u32 r = 0;
      switch (op) {
        case Op::kAdd: case Op::kAddi: r = a + b; break;
        case Op::kSub: r = a - b; break;
        case Op::kAnd: case Op::kAndi: r = a & b; break;
        case Op::kOr: case Op::kOri: r = a | b; break;
        default: r = a ^ b; break;  // xor, xori
      }
      return r == (c == Corner::kResultZero ? 0u : kMinus1);
    }
    case Corner::kCount: break;
  }
  return false;
}

namespace {

// The op of a mnemonic of the encoding table (Op::kIllegal for none).
Op op_named(std::string_view mnemonic) {
  for (const Encoding& e : ref::encoding_table())
    if (e.mnemonic == mnemonic) return e.op;
  return Op::kIllegal;
}

// Runs `p` on fresh reference machine `m` (at most max_steps tokens), calling visit(slot, word)
// before each step whose pc is one of p's code words.
void walk(ref::Machine& m, const Program& p, std::uint64_t max_steps, const std::function<void(std::size_t, u32)>& visit) {
  m.load(p.image());
  const std::size_t words = p.words();
  while (m.status() == ref::Status::kRunning && m.steps() < max_steps) {
    const u32 pc = m.pc();
    const std::size_t slot = (pc - kCodeBase) / 4;
    if (pc >= kCodeBase && pc % 4 == 0 && slot < words) visit(slot, m.read_word(pc));
    if (m.step().empty()) break;
  }
}

}  // namespace

void Coverage::add(const Program& p, std::uint64_t max_steps) {
  ref::Machine m;
  const std::vector<bool> test = p.test_words();
  ++programs;
  walk(m, p, max_steps, [&](std::size_t slot, u32 w) {
    const ref::Decoded d = ref::decode(w);
    if (!test[slot] || d.op == Op::kIllegal || d.op == Op::kUndecoded) return;
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
    const auto corners = corners_of(d.op);
    if (corners.empty()) return;
    const u32 a = m.reg(d.rs1);
    u32 b = 0;
    if (e.cls == InsnClass::kAluImm) {
      b = d.imm;
    } else if (e.cls == InsnClass::kLoad) {
      const u32 size = d.op == Op::kLb || d.op == Op::kLbu ? 1 : 2;
      try {
        const std::vector<std::uint8_t> bytes = m.read_memory(a + d.imm, size);
        b = size == 1 ? bytes[0] : bytes[0] | u32{bytes[1]} << 8;
      } catch (const std::out_of_range&) {
        return;  // it traps: no value read
      }
    } else {
      b = m.reg(d.rs2);
    }
    const bool same_register = (e.operands & ref::kOpdRs1) && (e.operands & ref::kOpdRs2) && d.rs1 == d.rs2 && d.rs1 != 0;
    // d.imm is the offset of a load, store, branch or jump, the only ops whose corners read it
    const std::int32_t offset = static_cast<std::int32_t>(d.imm);
    for (const Corner c : corners)
      if (at_corner(d.op, c, a, b, same_register, offset)) ++r.corners[static_cast<int>(c)];
  });
  const VectorRun v = run_vector_ops(p, max_steps);
  for (const auto& [op, b] : v.buckets)
    for (const auto& [name, n] : b) buckets[op][name] += n;
  if (v.end == "trap" && v.trap_op) {
    ops::Buckets& t = traps[std::string(v.trap_op->name())];
    const std::string code = "code " + std::to_string(v.trap_code);
    ++t[code];
    if (ops::at_trap_edge(*v.trap_op, v.trap_fields)) ++t[code + " at the edge"];
  }
}

VectorRun run_vector_ops(const Program& p, std::uint64_t max_steps) {
  VectorRun run;
  ref::Machine m;
  const std::vector<bool> test = p.test_words();
  // The last vector instruction visited: it ran without a trap once another one is visited. Its
  // buckets are counted when it is visited (the vector state before it) and kept once it ran.
  struct Pending {
    const ops::OpCase* op = nullptr;
    ops::Fields fields;
    ops::Buckets buckets;
    std::size_t slot = 0;
    bool test = false;
  } pending;
  std::vector<ops::Span> written;
  auto commit = [&] {
    if (!pending.op) return;
    const ops::OpCase& c = *pending.op;
    if (const unsigned code = c.trap_code(pending.fields))
      run.disagreements.push_back("word " + std::to_string(pending.slot) + ": " + c.describe(pending.fields) +
                                  " ran without a trap; its case says " + std::to_string(code));
    if (pending.test) {
      ++run.executed[std::string(c.name())];
      ops::Buckets& b = run.buckets[std::string(c.name())];
      for (const auto& [name, n] : pending.buckets) b[name] += n;
    }
    for (const ops::Span& w : c.writes(pending.fields)) written.push_back(w);
    pending.op = nullptr;
  };
  walk(m, p, max_steps, [&](std::size_t slot, u32 w) {
    commit();
    const ref::Decoded d = ref::decode(w);
    if (d.op == Op::kIllegal || d.op == Op::kUndecoded) return;
    const ops::OpCase* c = ops::case_of(d.op);
    if (!c) return;
    pending.op = c;
    pending.fields = ops::Fields::of(m.reg(d.rs1), m.reg(d.rs2), w >> 25, d.rd);
    pending.fields.same = d.rs1 == d.rs2;  // the register numbers, for the layout buckets
    pending.fields.x0 = d.rs1 == 0;
    pending.buckets.clear();
    pending.slot = slot;
    pending.test = test[slot];
    if (pending.test && c->trap_code(pending.fields) == 0) {  // one that traps reads nothing
      const ref::VectorState& st = m.vector();
      c->count({pending.fields, st.vr, written, st}, pending.buckets);
    }
  });
  if (m.status() == ref::Status::kExited) {
    commit();
    run.end = "exit";
  } else if (m.status() == ref::Status::kTrapped) {
    run.end = "trap";
    run.trap_code = m.trap_code();
    run.trap_word = (m.pc() - kCodeBase) / 4;
    if (pending.op && pending.slot == run.trap_word) {
      run.trap_op = pending.op;
      run.trap_fields = pending.fields;
      if (const unsigned code = pending.op->trap_code(pending.fields); code != run.trap_code)
        run.disagreements.push_back("word " + std::to_string(pending.slot) + ": " + pending.op->describe(pending.fields) +
                                    " raised " + std::to_string(run.trap_code) + "; its case says " + std::to_string(code));
    }
  } else {
    run.end = "steps";
  }
  return run;
}

void Coverage::merge(const Coverage& o) {
  programs += o.programs;
  instructions += o.instructions;
  for (const auto& [op, b] : o.buckets)
    for (const auto& [name, n] : b) buckets[op][name] += n;
  for (const auto& [op, b] : o.traps)
    for (const auto& [name, n] : b) traps[op][name] += n;
  for (const auto& [name, r] : o.rows) {
    Row& mine = rows[name];
    mine.executed += r.executed;
    mine.has_rs1 = mine.has_rs1 || r.has_rs1;
    mine.has_rs2 = mine.has_rs2 || r.has_rs2;
    for (int c = 0; c < kValueClasses; ++c) {
      mine.rs1[c] += r.rs1[c];
      mine.rs2[c] += r.rs2[c];
    }
    for (int c = 0; c < kCorners; ++c) mine.corners[c] += r.corners[c];
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
    if (const auto corners = corners_of(op_named(name)); !corners.empty()) {
      json cj = json::object();
      for (const Corner c : corners) cj[std::string(corner_name(c))] = r.corners[static_cast<int>(c)];
      o["corners"] = cj;
    }
    ops[name] = o;
  }
  json j = {{"programs", programs}, {"instructions", instructions}, {"value_classes", classes}, {"ops", ops}};
  if (!buckets.empty()) j["vector_buckets"] = buckets;
  if (!traps.empty()) j["vector_traps"] = traps;
  return j;
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
    if (o.contains("corners")) {  // a fuzz.json before corners were counted has none
      for (int k = 0; k < kCorners; ++k) {
        const std::string n(corner_name(static_cast<Corner>(k)));
        if (o["corners"].contains(n)) r.corners[k] = o["corners"][n].get<std::uint64_t>();
      }
    }
    c.rows[name] = r;
  }
  if (j.contains("vector_buckets")) c.buckets = j["vector_buckets"].get<std::map<std::string, ops::Buckets>>();
  // (a fuzz.json before trap codes were counted has none)
  if (j.contains("vector_traps")) c.traps = j["vector_traps"].get<std::map<std::string, ops::Buckets>>();
  return c;
}

std::string Coverage::text(std::span<const Encoding* const> ops, unsigned vew_modes, unsigned vfn_fns,
                           unsigned vred_modes) const {
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
    const auto corners = corners_of(e->op);
    for (std::size_t k = 0; k < corners.size(); ++k)
      os << (k ? ", " : "  corners ") << corner_name(corners[k]) << " " << r.corners[static_cast<int>(corners[k])];
    os << "\n";
  }
  if (!missing.empty()) {
    os << "  never executed:";
    for (const std::string& m : missing) os << " " << m;
    os << "\n";
  }
  // The corners of the executed ops that no test instruction reached: an opcode table full of
  // counts can still leave a divider's INT_MIN / -1 untested.
  std::vector<std::string> unreached;
  for (const Encoding* e : ops) {
    const auto it = rows.find(std::string(e->mnemonic));
    if (it == rows.end() || it->second.executed == 0) continue;
    for (const Corner c : corners_of(e->op))
      if (it->second.corners[static_cast<int>(c)] == 0)
        unreached.push_back(std::string(e->mnemonic) + " " + std::string(corner_name(c)));
  }
  if (!unreached.empty()) {
    os << "  corners never reached:";
    for (std::size_t k = 0; k < unreached.size(); ++k) os << (k ? ", " : " ") << unreached[k];
    os << "\n";
  }
  // The vector ops' buckets (fuzz/ops), those never reached last.
  for (const Encoding* e : ops) {
    const ops::OpCase* c = ops::case_of(e->op);
    if (!c) continue;
    const auto it = buckets.find(std::string(c->name()));
    os << "  " << c->name() << " buckets:";
    std::vector<std::string> unreached;
    const unsigned selected = e->op == Op::kVew ? vew_modes : e->op == Op::kVfn ? vfn_fns : e->op == Op::kVred ? vred_modes : 0;
    const unsigned modes = (selected & c->all_modes()) != 0 ? selected & c->all_modes() : c->all_modes();
    for (const std::string& name : c->buckets(modes)) {
      const std::uint64_t n = it == buckets.end() || !it->second.count(name) ? 0 : it->second.at(name);
      if (n == 0) unreached.push_back(name);
      else os << " [" << name << "] " << n;
    }
    if (!unreached.empty()) {
      os << "; never reached:";
      for (const std::string& name : unreached) os << " [" << name << "]";
    }
    os << "\n";
    // Its traps: the programs that ended in each code, how many of them at the edge of its
    // condition, and the codes the selected modes can raise that none raised.
    const auto t = traps.find(std::string(c->name()));
    auto count = [&](const std::string& name) -> std::uint64_t {
      return t == traps.end() || !t->second.count(name) ? 0 : t->second.at(name);
    };
    os << "  " << c->name() << " traps:";
    const std::vector<unsigned> codes = c->codes_of(modes);
    std::vector<unsigned> never;
    for (const unsigned code : codes) {
      const std::string name = "code " + std::to_string(code);
      if (count(name) == 0) never.push_back(code);
      else os << " [" << name << "] " << count(name) << " (" << count(name + " at the edge") << " at the edge)";
    }
    if (!never.empty()) {
      os << (never.size() == codes.size() ? " never raised:" : "; never raised:");
      for (const unsigned code : never) os << " [code " << code << "]";
    }
    os << "\n";
  }
  return os.str();
}

// ------------------------------------------------------------------ running

namespace {

// How the reference's run of `p` stops within max_steps, and after how many steps; nullopt when
// its image does not load.
std::optional<ref::RunResult> reference_run(const Program& p, std::uint64_t max_steps) {
  ref::Machine m;
  try {
    m.load(p.image());
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return m.run(max_steps);
}

std::optional<ref::Stop> reference_stop(const Program& p, std::uint64_t max_steps) {
  const auto r = reference_run(p, max_steps);
  return r ? std::optional<ref::Stop>(r->stop) : std::nullopt;
}

}  // namespace

std::uint64_t reference_steps(const Program& p, std::uint64_t max_steps) {
  const auto r = reference_run(p, max_steps);
  return r ? r->steps : 0;
}

bool reference_exits(const Program& p, std::uint64_t max_steps) {
  return reference_stop(p, max_steps) == ref::Stop::kExit;
}

bool reference_ends(const Program& p, std::uint64_t max_steps) {
  const auto stop = reference_stop(p, max_steps);
  return stop && *stop != ref::Stop::kStepLimit;
}

std::vector<engine::StreamResult> run_lockstep(const std::shared_ptr<const chip::Chip>& chip, const std::string& backend,
                                               const std::vector<Program>& programs, engine::Mode mode,
                                               std::uint64_t max_steps, unsigned batch, std::uint64_t classify_window,
                                               chip::ChipBackend* reuse, const std::atomic<bool>* stop) {
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
    opt.stop = stop;
    engine::Engine e(*be, std::move(guests), opt);
    engine::RunResult r;
    try {
      r = e.run();
    } catch (...) {
      // A chip call given up because of the stop (a chip under test's wait): the results so far,
      // divergences already met included, as when the stop comes between rounds (found by an
      // outside tester: a stop inside a slow batch dropped every mismatch it had found).
      if (stop && stop->load()) {
        r = e.interrupted_result();
      } else {
        // A chip that failed after a divergence (while it was replayed and classified, say) does
        // not take the divergence with it: the batch's results so far are returned, and the
        // caller finds the fault on the backend (ChipBackend::fault) (found by an outside tester:
        // `lockstep run` reported such a divergence, exit 1, and fuzz lost it, exit 2).
        r = e.partial_result();
        if (std::none_of(r.streams.begin(), r.streams.end(), [](const engine::StreamResult& s) { return s.mismatches > 0; }))
          throw;
        for (engine::StreamResult& s : r.streams) out.push_back(std::move(s));
        return out;
      }
    }
    for (engine::StreamResult& s : r.streams) out.push_back(std::move(s));
    if (r.interrupted) break;
  }
  return out;
}

FirstFailing chip_oracle(const std::shared_ptr<const chip::Chip>& chip, const std::string& backend, engine::Mode mode,
                         std::uint64_t max_steps, SameFailure same) {
  // A backend of its own, kept alive by the oracle, behind the backend overload.
  std::shared_ptr<chip::ChipBackend> be(engine::make_backend(backend, chip));
  FirstFailing over_be = chip_oracle(*be, mode, max_steps, std::move(same));
  return [be, over_be](const std::vector<Program>& cands) { return over_be(cands); };
}

FirstFailing chip_oracle(chip::ChipBackend& backend, engine::Mode mode, std::uint64_t max_steps, SameFailure same) {
  return [&backend, mode, max_steps, same](const std::vector<Program>& cands) -> std::optional<std::size_t> {
    std::vector<Program> runnable;
    std::vector<std::size_t> where;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      // A program that traps ends as surely as one that exits (found by an outside tester: half
      // the failures of a vector campaign, programs ending in a planted trap, were never shrunk).
      if (!reference_ends(cands[i], max_steps)) continue;
      runnable.push_back(cands[i]);
      where.push_back(i);
    }
    if (runnable.empty()) return std::nullopt;
    const auto res = run_lockstep(nullptr, backend.name(), runnable, mode, max_steps, 32, 0, &backend);
    for (std::size_t k = 0; k < res.size(); ++k)
      if (res[k].mismatches > 0 && (!same || (res[k].divergence && same(*res[k].divergence)))) return where[k];
    return std::nullopt;
  };
}

// ------------------------------------------------------------------ shrinking

ShrinkResult shrink(const Program& failing, const FirstFailing& first_failing, const ShrinkOptions& o) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  ShrinkResult res;
  res.original_words = failing.instruction_words();
  Program cur = failing;
  auto spent = [&] {
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (res.runs >= o.max_runs || s >= o.max_seconds || (o.stop && o.stop->load())) {
      res.budget_exhausted = true;
      return true;
    }
    return false;
  };
  // Tries candidates made by `make(k)` for k = from, from+1, ... < n (nullopt: skip),
  // in speculative batches; returns the first k whose candidate still mismatches alone.
  // A candidate that failed as stream i > 0 of a batch is run again alone before it is kept:
  // a chip whose bug depends on the stream index or on the streams beside it would otherwise
  // shrink the case into one that passes alone, the way it is saved and replayed. One that
  // passes alone counts as passing, and the search goes on after it.
  auto first_of = [&](std::size_t from, std::size_t n,
                      const std::function<std::optional<Program>(std::size_t)>& make) -> std::optional<std::pair<std::size_t, Program>> {
    std::size_t k = from;
    while (k < n && !spent()) {
      std::vector<Program> cands;
      std::vector<std::size_t> ks;
      // Never past the budget (found by an outside tester: 214 runs for --shrink-runs 200).
      const std::size_t most = std::min<std::size_t>(o.batch, o.max_runs - res.runs);
      while (k < n && cands.size() < most) {
        if (auto c = make(k)) {
          cands.push_back(std::move(*c));
          ks.push_back(k);
        }
        ++k;
      }
      if (cands.empty()) break;
      res.runs += static_cast<unsigned>(cands.size());
      if (auto f = first_failing(cands)) {
        if (*f == 0) return std::make_pair(ks[0], std::move(cands[0]));
        if (spent()) break;  // no run left to check it alone
        ++res.runs;
        if (first_failing({cands[*f]})) return std::make_pair(ks[*f], std::move(cands[*f]));
        ++res.not_alone;
        k = ks[*f] + 1;
      }
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
  res.shrunk_words = res.program.instruction_words();
  res.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return res;
}

}  // namespace lockstep::campaign
