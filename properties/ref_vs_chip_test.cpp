// Per-instruction RapidCheck properties: the reference model against the built RV32 chip
// (issue 11, properties/README.md).
//
// One property per row of ref's encoding table outside the vector unit (RV32IM, Zba, bignum):
// RapidCheck draws operand values (edge values 0, 1, -1, INT32_MIN, 0x7fffffff, powers of two
// and small numbers mixed with uniform ones), the register fields, immediates, the bignum
// unit's carry and accumulator, all over their whole range at every size (rc_full_range.h).
// A case is kProgramsPerCase programs, each its corner blocks, kBlocks random blocks and the
// exit:
//
//     [bignum rows: li t0, c; bn.xchgc x0, t0; (bn.accclr;) li t0, a; li t1, b; bn.mac t0, t1]
//     li <operand registers>      (each `li` is lui + addi; an operand may instead be an
//                                  earlier block's result, with no li)
//     <the instruction>
//     nop; nop; nop; nop          (branch and jump targets land here or in the next block)
//     ... more blocks ...
//     addi x1, x1, 0 .. addi x31, x31, 0   (every register on the bus)
//     <the last block>
//     addi rd, rd, 0              (the last block's result once more)
//     li a7, 93; ecall            (exit)
//
// The corner blocks (kCorners: INT_MIN and -1, x and 0, shifts by 31, rd = rs1 = rs2, rd = x0,
// INT_MAX and INT_MIN) are in every case, so a default run always reaches them. W tokens carry
// a result but not its register: a result written to the wrong register (or not at all) shows
// where a later block reads it or where the register dump puts it on the bus.
// A 1 KiB data area of random bytes at 0x80000 is what loads and stores address. Only the
// last block may trap on purpose (a misaligned or arbitrary load/store base, a misaligned or far
// jump, an ecall with any number or arguments, ebreak), so every block before it runs; its
// arbitrary jalr base never jumps back into the code or into the data bytes (the program would
// start over or run random words). The programs run on the reference and on the built chip in
// lock-step (engine::Engine, one stream each), teacher-forced and free-running; every token
// must be equal (0 mismatches) and each program must end (exit or trap) within kMaxSteps.
// Several blocks per program because the chip's per-stream reset (about 8.5 MB of state) costs
// far more than the steps.
//
// The chip is loaded once per test binary ($LOCKSTEP_CHIP, else the built chip). Seeds:
// RapidCheck prints "Using configuration: seed=..." first and a reproduce string on failure;
// replay with RC_PARAMS="reproduce=...". Cases per instruction: kDefaultCases unless RC_PARAMS
// sets max_success (properties/README.md).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/engine/check.h"
#include "lockstep/engine/engine.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/machine.h"
#include "rc_full_range.h"

namespace lockstep::properties {
namespace {

using ref::Op;
using u32 = std::uint32_t;

constexpr u32 kCodeBase = 0x10000;
constexpr u32 kData = 0x80000;       // random data for loads and stores
constexpr u32 kDataBytes = 1024;
// Each program must end within kMaxSteps: its blocks take well under 4,000 steps, and the last
// block's ECALL write may have any length up to 65,535 bytes from a buffer inside RAM
// (trace.md section 4.5: OI and OUT per byte, OIH every 256, then W(len): about 131,600 steps).
constexpr std::uint64_t kMaxSteps = 4000 + 2 * 65535 + 65536 / 256 + 8;
constexpr unsigned kBlocks = 7;           // random instances of the instruction per program (+ corners)
constexpr unsigned kProgramsPerCase = 2;  // streams of one engine run
constexpr int kDefaultCases = 6;          // per instruction: 6 x (2 x 7 random + 5 corner) = 114 instances per mode

// ------------------------------------------------------------------ generators

/// A 32-bit operand: edge values (0, 1, -1, INT32_MIN, INT32_MAX), powers of two (and one
/// less), small signed numbers, or uniform.
rc::Gen<u32> operand() {
  return rc::gen::weightedOneOf<u32>({
      {3, rc::gen::element<u32>(0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu)},
      {2, rc::gen::map(rcfull::in_range(0, 32), [](int k) { return u32{1} << k; })},
      {1, rc::gen::map(rcfull::in_range(0, 32), [](int k) { return (u32{1} << k) - 1; })},
      {1, rc::gen::map(rcfull::in_range(-16, 17), [](int v) { return static_cast<u32>(v); })},
      {3, rcfull::any<u32>()},
  });
}

/// A register number: mostly x1..x31, sometimes x0.
rc::Gen<unsigned> reg() {
  return rc::gen::weightedOneOf<unsigned>({{1, rc::gen::just(0u)}, {9, rcfull::in_range(1u, 32u)}});
}

/// A 12-bit signed immediate (as the sign-extended 32-bit value).
rc::Gen<u32> imm12() {
  return rc::gen::weightedOneOf<u32>({
      {2, rc::gen::element<u32>(0u, 1u, 0xffffffffu, 2047u, 0xfffff800u)},
      {3, rc::gen::map(rcfull::in_range(-2048, 2048), [](int v) { return static_cast<u32>(v); })},
  });
}

/// A block every case contains (kCorners), so that a default run of kDefaultCases cases always
/// reaches the operands and register patterns that break arithmetic most often.
struct Corner {
  const char* name;
  enum class Regs { kDistinct, kSame, kRdX0 } regs;  ///< rd, rs1, rs2 distinct; rd = rs1 = rs2; rd = x0
  bool draw_v1;  ///< X(rs1) drawn by operand() (else v1)
  u32 v1, v2;    ///< X(rs1), X(rs2) for the classes that take free operands
  u32 imm;       ///< OP-IMM immediate (sign-extended 12 bits); LUI/AUIPC take v1's upper 20 bits
  u32 shamt;     ///< OP-IMM shift amount
  u32 carry;     ///< bignum: c before the instruction; 2: drawn
};
constexpr Corner kCorners[] = {
    {"INT_MIN, -1", Corner::Regs::kDistinct, false, 0x80000000u, 0xffffffffu, 0xffffffffu, 31, 1},
    {"x, 0", Corner::Regs::kDistinct, true, 0, 0, 0, 0, 2},
    {"rd = rs1 = rs2", Corner::Regs::kSame, false, 0x80000000u, 0x80000000u, 0xfffff800u, 31, 2},
    {"rd = x0", Corner::Regs::kRdX0, true, 0, 0xffffffffu, 0x7ffu, 31, 2},
    {"INT_MAX, INT_MIN", Corner::Regs::kDistinct, false, 0x7fffffffu, 0x80000000u, 0x7ffu, 1, 1},
};
constexpr unsigned kCornerCount = sizeof kCorners / sizeof kCorners[0];
/// Program p of a case starts with corners [kCornerFirst[p], kCornerFirst[p + 1]).
constexpr unsigned kCornerFirst[kProgramsPerCase + 1] = {0, 3, kCornerCount};

/// Registers that hold an earlier block's result (its rd, not overwritten since): later blocks
/// use them as operands without a fresh `li`, so a result written to the wrong register (or
/// not at all) changes a later value on the bus.
struct Live {
  std::array<int, 32> writer{};  ///< block that wrote x_r last, or -1
  Live() { writer.fill(-1); }
  void kill(unsigned r) { writer[r] = -1; }
  void add(unsigned r, int block) {
    if (r != 0) writer[r] = block;
  }
  /// The live registers, minus `except`.
  std::vector<unsigned> regs(std::initializer_list<unsigned> except = {}) const {
    std::vector<unsigned> out;
    for (unsigned r = 1; r < 32; ++r)
      if (writer[r] >= 0 && std::find(except.begin(), except.end(), r) == except.end()) out.push_back(r);
    return out;
  }
};

/// One generated program: the words and what they mean (for the failure message).
struct Program {
  std::vector<u32> code;
  std::vector<std::uint8_t> data;
  std::string what;  ///< per block: the operand values and the instruction
  /// RapidCheck's counterexample line: the blocks (not every drawn number).
  friend void showValue(const Program& p, std::ostream& os) { os << "\n" << p.what; }
};

std::string hex(u32 v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

/// Bytes a load or store accesses.
u32 access_width(Op op) {
  switch (op) {
    case Op::kLb: case Op::kLbu: case Op::kSb: return 1;
    case Op::kLh: case Op::kLhu: case Op::kSh: return 2;
    default: return 4;
  }
}

/// Appends `addi x_r, x_r, 0` for r = 1..31: each register's value goes on the bus (W tokens,
/// trace.md §4.1) without changing it.
void emit_register_dump(std::vector<u32>& code) {
  for (unsigned r = 1; r < 32; ++r) code.push_back(ref::encode::i(Op::kAddi, r, r, 0));
}

/// Appends block number `index` testing `row` to `code`: the bignum state setup (bignum rows),
/// the operand `li`s, the instruction, four nops. Must be called while RapidCheck generates.
/// `last`: the program's last block, the only one that may trap on purpose (a load/store base
/// that is any value or misaligned, a misaligned or far jump, an ecall with any number or
/// arguments); the blocks before it only ever fall through to the next block, so every block
/// runs. `corner`: the fixed operands of a corner block (never the last block), else null.
/// Operands of arithmetic, branches, bignum and store data sometimes come from `live` (an
/// earlier block's result, no `li`); `live` is updated with this block's writes.
void draw_block(const ref::Encoding& row, unsigned index, bool last, const Corner* corner, Live& live,
                std::vector<u32>& code, std::ostringstream& what) {
  std::vector<std::pair<unsigned, u32>> regs;  // li'd in this order (a later one wins)
  std::vector<u32> pre;                        // bignum state setup
  const bool bignum = row.cls == ref::InsnClass::kBignum;
  what << "#" << index << " ";
  if (corner != nullptr) what << "[corner " << corner->name << "] ";

  if (bignum) {
    // c and acc before the instruction (bignum.md §2): c <- t0 & 1; acc <- acc + a * b (+ a2 * b2):
    // the accumulator is not cleared between blocks, so it grows over the program.
    const u32 c = corner != nullptr && corner->carry < 2 ? corner->carry : *rcfull::in_range(0u, 2u);
    const u32 a = *operand(), b = *operand();
    progen::emit_li(pre, 5, c);
    pre.push_back(ref::encode::r(Op::kBnXchgc, 0, 5, 0));
    if (*rcfull::in_range(0, 4) == 0) pre.push_back(ref::encode::r(Op::kBnAccclr, 0, 0, 0));
    progen::emit_li(pre, 5, a);
    progen::emit_li(pre, 6, b);
    pre.push_back(ref::encode::r(Op::kBnMac, 0, 5, 6));
    what << "[c=" << c << " acc+=" << hex(a) << "*" << hex(b) << "] ";
  }

  const bool has_rd = row.operands & ref::kOpdRd, has_rs1 = row.operands & ref::kOpdRs1,
             has_rs2 = row.operands & ref::kOpdRs2;
  unsigned rd = has_rd ? *reg() : 0, rs1 = has_rs1 ? *reg() : 0, rs2 = has_rs2 ? *reg() : 0;
  u32 v1 = *operand(), v2 = *operand();
  u32 imm = 0;
  if (corner != nullptr) {
    switch (corner->regs) {
      case Corner::Regs::kDistinct:
        rd = *rcfull::in_range(1u, 32u);
        rs1 = *rc::gen::suchThat(rcfull::in_range(1u, 32u), [rd](unsigned r) { return r != rd; });
        rs2 = *rc::gen::suchThat(rcfull::in_range(1u, 32u), [rd, rs1](unsigned r) { return r != rd && r != rs1; });
        break;
      case Corner::Regs::kSame: rd = rs1 = rs2 = *rcfull::in_range(1u, 32u); break;
      case Corner::Regs::kRdX0:
        rd = 0;
        rs1 = *rcfull::in_range(1u, 32u);
        rs2 = *rc::gen::suchThat(rcfull::in_range(1u, 32u), [rs1](unsigned r) { return r != rs1; });
        break;
    }
    if (!has_rd) rd = 0;
    if (!has_rs1) rs1 = 0;
    if (!has_rs2) rs2 = 0;
    v1 = corner->draw_v1 ? v1 : corner->v1;
    v2 = corner->v2;
  }

  // The instruction's pc is known before the word: code + pre + 2 words per li.
  auto insn_pc = [&](std::size_t n_li) {
    return kCodeBase + 4 * static_cast<u32>(code.size() + pre.size() + 2 * n_li);
  };
  // Targets of branches and jumps: offsets from the instruction into the nops (4..16) or the
  // next block (20); in the last block also misaligned (2, 6: FETCH_MISALIGNED when taken) or
  // far beyond the code (zero words: illegal instruction).
  auto jump_offset = [last] {
    if (!last) return *rc::gen::element<u32>(4u, 8u, 12u, 16u, 20u);
    return *rc::gen::weightedOneOf<u32>(
        {{4, rc::gen::element<u32>(4u, 8u, 12u, 16u, 20u)}, {1, rc::gen::element<u32>(2u, 6u, 0x800u)}});
  };

  switch (row.cls) {
    case ref::InsnClass::kLoad:
    case ref::InsnClass::kStore: {
      // Base + imm inside the data area and aligned; in the last block sometimes misaligned or
      // any base value (traps 4..7).
      const u32 width = access_width(row.op);
      if (rs1 == 0) rs1 = *rcfull::in_range(1u, 32u);
      if (has_rs2 && rs2 == rs1) rs2 = 0;  // the stored value is then x0
      imm = static_cast<u32>(*rcfull::in_range(-16, 17)) * width;
      const u32 at = kData + 64 + *rcfull::in_range(0u, (kDataBytes - 128) / width) * width;
      const int kind = last ? *rcfull::in_range(0, 6) : 0;
      if (kind == 0 || kind >= 3) v1 = at - imm;
      else if (kind == 1) v1 = at - imm + (width > 1 ? *rcfull::in_range(1u, width) : 0u);
      // kind 2: v1 stays any operand
      break;
    }
    case ref::InsnClass::kJalr: {
      // rs1 + imm = a nop after the instruction (bit 0 sometimes set: jalr clears it); in the
      // last block sometimes any value, but never one that jumps back into the code up to the
      // jalr or into the data bytes (the program would start over, or run random words, and
      // might never end): it lands after the jalr, below or above RAM, misaligned (trap 2) or
      // on zero words (illegal instruction).
      if (rs1 == 0) rs1 = *rcfull::in_range(1u, 32u);
      imm = static_cast<u32>(*rcfull::in_range(-64, 65));
      const u32 pc = insn_pc(1);
      if (!last || *rcfull::in_range(0, 6) != 0) {
        v1 = pc + jump_offset() + *rcfull::in_range(0u, 2u) - imm;
      } else {
        const auto runs_old_words = [pc, imm](u32 base) {
          const u32 t = (base + imm) & ~1u;
          return t % 4 == 0 && ((t >= kCodeBase && t <= pc) || (t >= kData && t < kData + kDataBytes));
        };
        // (by value: RapidCheck applies the predicate again while shrinking, after this returns)
        v1 = *rc::gen::suchThat(operand(), [runs_old_words](u32 v) { return !runs_old_words(v); });
      }
      break;
    }
    case ref::InsnClass::kSystem:
      if (row.op == Op::kEcall) {
        // write(a0 = fd, a1 = buf, a2 = len) to the consoles from the data area; in the last
        // block also exit, an unknown number, a bad fd, any buffer, any length.
        u32 a7 = 64, a0 = *rc::gen::element<u32>(1u, 2u), a1 = kData + *rcfull::in_range(0u, kDataBytes - 16),
            a2 = *rcfull::in_range(0u, 17u);
        if (last) {
          a7 = *rc::gen::weightedOneOf<u32>({{2, rc::gen::just(93u)}, {4, rc::gen::just(64u)}, {1, operand()}});
          if (*rcfull::in_range(0, 4) == 0) a0 = *operand();
          if (*rcfull::in_range(0, 4) == 0) a1 = *operand();
          if (*rcfull::in_range(0, 4) == 0) a2 = *operand();
        }
        regs = {{17, a7}, {10, a0}, {11, a1}, {12, a2}};
      } else if (!last) {
        what << "(ebreak only in the last block)\n";
        return;  // EBREAK ends the program: only in the last block
      }
      break;
    case ref::InsnClass::kAluImm:
      if (row.format == ref::Format::kIShift) imm = corner != nullptr ? corner->shamt : *rcfull::in_range(0u, 32u);
      else imm = corner != nullptr ? corner->imm : *imm12();
      break;
    case ref::InsnClass::kUpper:
      imm = v1 & 0xfffff000u;
      if (corner == nullptr) imm = *operand() & 0xfffff000u;
      break;
    default:
      break;
  }

  // Operands from earlier results (no li): arithmetic and branch operands, bignum operands
  // (not t0/t1, which the setup above overwrites), store data.
  std::vector<unsigned> reused;
  const bool free_operands = row.cls == ref::InsnClass::kAlu || row.cls == ref::InsnClass::kAluImm ||
                             row.cls == ref::InsnClass::kMul || row.cls == ref::InsnClass::kDiv ||
                             row.cls == ref::InsnClass::kZba || row.cls == ref::InsnClass::kBranch || bignum;
  if (corner == nullptr) {
    const auto candidates = bignum ? live.regs({5, 6}) : row.cls == ref::InsnClass::kStore ? live.regs({rs1}) : live.regs();
    const auto maybe_reuse = [&](unsigned& r) {
      if (candidates.empty() || *rcfull::in_range(0, 3) != 0) return;
      r = *rc::gen::elementOf(candidates);
      reused.push_back(r);
    };
    if (free_operands && has_rs1) maybe_reuse(rs1);
    if ((free_operands || row.cls == ref::InsnClass::kStore) && has_rs2) maybe_reuse(rs2);
  }
  const auto is_reused = [&](unsigned r) { return std::find(reused.begin(), reused.end(), r) != reused.end(); };
  if (has_rs2 && rs2 != 0 && !is_reused(rs2)) regs.emplace_back(rs2, v2);
  if (has_rs1 && rs1 != 0 && !is_reused(rs1) &&
      !(rs1 == rs2 && row.cls != ref::InsnClass::kLoad && row.cls != ref::InsnClass::kStore && row.cls != ref::InsnClass::kJalr))
    regs.emplace_back(rs1, v1);  // rs1 last: a load's or jalr's base wins
  for (const auto& [r, v] : regs) what << ref::reg_name(r) << "=" << hex(v) << " ";
  for (unsigned r : reused) what << ref::reg_name(r) << "=result of #" << live.writer[r] << " ";

  code.insert(code.end(), pre.begin(), pre.end());
  for (const auto& [r, v] : regs) progen::emit_li(code, r, v);
  const u32 pc = kCodeBase + 4 * static_cast<u32>(code.size());

  u32 word = 0;
  switch (row.format) {
    case ref::Format::kR: word = ref::encode::r(row.op, rd, rs1, rs2); break;
    case ref::Format::kI:
    case ref::Format::kIShift: word = ref::encode::i(row.op, rd, rs1, imm); break;
    case ref::Format::kS: word = ref::encode::s(row.op, rs1, rs2, imm); break;
    case ref::Format::kB: word = ref::encode::b(row.op, rs1, rs2, jump_offset()); break;
    case ref::Format::kU: word = ref::encode::u(row.op, rd, imm); break;
    case ref::Format::kJ: word = ref::encode::j(row.op, rd, jump_offset()); break;
    case ref::Format::kNone:
      // FENCE ignores its fields (isa.md §4.1): random bits outside the mask; ECALL/EBREAK exact.
      word = (*rcfull::any<u32>() & ~row.mask) | row.match;
      break;
    case ref::Format::kV: throw std::logic_error("vector rows are not tested on the chip");
  }
  if (ref::decode(word).op != row.op) throw std::logic_error("generated word " + hex(word) + " is not " + std::string(row.mnemonic));
  code.push_back(word);
  for (int i = 0; i < 4; ++i) code.push_back(ref::encode::i(Op::kAddi, 0, 0, 0));
  what << "| " << ref::disassemble(word, pc) << "\n";

  // What the block leaves: the li'd registers hold constants, rd the instruction's result.
  if (bignum) {
    live.kill(5);
    live.kill(6);
  }
  for (const auto& [r, v] : regs) live.kill(r);
  const bool writes_rd = has_rd && row.cls != ref::InsnClass::kStore && row.cls != ref::InsnClass::kBranch;
  if (writes_rd) live.add(rd, static_cast<int>(index));
  if (row.op == Op::kEcall) live.add(10, static_cast<int>(index));  // write returns its length in a0
}

/// Draws program `p` of a case testing `row` (inside rc::gen::exec): the corner blocks
/// kCorners[kCornerFirst[p] ..], then kBlocks random blocks, with every register put on the
/// bus before the last block (which may trap) and the last block's rd after it, then the exit.
Program draw_program(const ref::Encoding& row, unsigned p) {
  Program out;
  std::ostringstream what;
  Live live;
  unsigned index = 0;
  for (unsigned c = kCornerFirst[p]; c < kCornerFirst[p + 1]; ++c) draw_block(row, index++, false, &kCorners[c], live, out.code, what);
  for (unsigned b = 0; b < kBlocks; ++b) {
    const bool last = b + 1 == kBlocks;
    if (last) {
      emit_register_dump(out.code);
      what << "(x1..x31 on the bus)\n";
    }
    draw_block(row, index++, last, nullptr, live, out.code, what);
  }
  // The last block's result (when it did not trap): its rd on the bus once more.
  for (unsigned r = 1; r < 32; ++r)
    if (live.writer[r] == static_cast<int>(index) - 1) {
      out.code.push_back(ref::encode::i(Op::kAddi, r, r, 0));
      what << "(" << ref::reg_name(r) << " on the bus)\n";
    }
  progen::emit_li(out.code, 17, 93);
  out.code.push_back(0x00000073u);
  // The data area from one drawn seed.
  progen::Random bytes(*rcfull::any<std::uint64_t>());
  out.data.resize(kDataBytes);
  for (auto& b : out.data) b = static_cast<std::uint8_t>(bytes.next());
  out.what = what.str();
  return out;
}

engine::Guest guest_of(const Program& p, unsigned index) {
  format::Segment data;
  data.vaddr = kData;
  data.memsz = kDataBytes;
  data.flags = format::kPfR | format::kPfW;
  data.bytes = p.data;
  engine::Guest g;
  g.name = "prop" + std::to_string(index);
  g.image = progen::image_from_code(p.code, kCodeBase, {data});
  return g;
}

// ------------------------------------------------------------------ the chip, once per binary

struct ChipRig {
  engine::LoadedChip chip;
  std::unique_ptr<chip::ChipBackend> backend;  // reused by every run (the engine resets streams)
};

ChipRig* rig() {
  static std::unique_ptr<ChipRig> r = [] {
    if (!engine::have_built_chip()) return std::unique_ptr<ChipRig>();
    auto out = std::make_unique<ChipRig>();
    // $LOCKSTEP_CHIP: another chip file (e.g. one corrupted on purpose); else the built chip.
    const char* file = std::getenv("LOCKSTEP_CHIP");
    out->chip = engine::load_chip_or_built(file != nullptr ? file : "");
    std::cout << "[ chip     ] " << out->chip.source << " (xxh3 " << out->chip.hash << ")\n";
    out->backend = engine::make_backend("cpu", out->chip.chip);
    return out;
  }();
  return r.get();
}

/// Runs the programs in lock-step in `mode`; RC_ASSERTs 0 mismatches and an end.
void check_lockstep(const std::vector<Program>& programs, engine::Mode mode) {
  std::vector<engine::Guest> guests;
  for (unsigned i = 0; i < programs.size(); ++i) guests.push_back(guest_of(programs[i], i));
  engine::Options opt;
  opt.mode = mode;
  opt.max_steps = kMaxSteps;
  opt.classify_window = 16;
  engine::Engine eng(*rig()->backend, guests, opt);
  const engine::RunResult r = eng.run();
  for (std::size_t s = 0; s < r.streams.size(); ++s) {
    const engine::StreamResult& st = r.streams[s];
    if (st.mismatches != 0 || (st.end != "exit" && st.end != "trap")) {
      // The engine's layer line names the chip part where the chip's state first leaves the
      // reference's; here the reference is under test too, so a wrong reference shows up the same.
      const bool blames_chip = st.divergence && st.divergence->attribution.status != "unavailable";
      RC_LOG() << to_string(mode) << ": program " << s << ":\n" << programs[s].what << "\n"
               << (st.divergence ? st.divergence->to_text() : st.to_json().dump()) << "\n"
               << (blames_chip ? "  (the layer line assumes the reference is right: in this property either side, the "
                                 "reference model or the chip, may be wrong)\n"
                               : "")
               << progen::listing(guests[s].image, kCodeBase, kCodeBase + 4 * static_cast<u32>(programs[s].code.size()))
               << "\n";
    }
    RC_ASSERT(st.mismatches == 0u);
    RC_ASSERT(st.end == "exit" || st.end == "trap");
  }
}

/// RapidCheck parameters: the global configuration (RC_PARAMS), with kDefaultCases cases
/// unless RC_PARAMS names max_success.
rc::detail::TestParams params() {
  rc::detail::TestParams p = rc::detail::configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (env == nullptr || std::string(env).find("max_success") == std::string::npos) p.maxSuccess = kDefaultCases;
  return p;
}

class RefVsChip : public ::testing::TestWithParam<const ref::Encoding*> {};

TEST_P(RefVsChip, EveryTokenEqualForcedAndFree) {
  if (rig() == nullptr) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const ref::Encoding& row = *GetParam();
  const auto info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata meta;
  meta.id = std::string(info->test_suite_name()) + "/" + info->name();
  meta.description = std::string(row.mnemonic);
  const auto result = rc::detail::checkProperty(
      rc::detail::toProperty([&row] {
        // One draw for the whole case: the counterexample shows the programs' blocks.
        const auto programs = *rc::gen::exec([&row] {
          std::vector<Program> ps;
          for (unsigned i = 0; i < kProgramsPerCase; ++i) ps.push_back(draw_program(row, i));
          return ps;
        });
        check_lockstep(programs, engine::Mode::kForced);
        check_lockstep(programs, engine::Mode::kFree);
      }),
      meta, params());
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  if (!result.template is<rc::detail::SuccessResult>()) FAIL() << row.mnemonic << ": " << msg.str();
  std::cout << "[ property ] " << row.mnemonic << ": " << msg.str() << " (" << kProgramsPerCase
            << " programs per case, teacher-forced and free-running)\n";
}

std::vector<const ref::Encoding*> scalar_rows() {
  std::vector<const ref::Encoding*> rows;
  for (const ref::Encoding& e : ref::encoding_table())
    if (e.cls != ref::InsnClass::kVector) rows.push_back(&e);
  return rows;
}

INSTANTIATE_TEST_SUITE_P(Insn, RefVsChip, ::testing::ValuesIn(scalar_rows()),
                         [](const ::testing::TestParamInfo<const ref::Encoding*>& info) {
                           std::string n(info.param->mnemonic);
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

TEST(RefVsChipRows, EveryScalarRowHasAProperty) {
  // RV32I 40 + M 8 + Zba 3 + bignum 6 (isa.md §4.1, bignum.md §1).
  EXPECT_EQ(scalar_rows().size(), 57u);
}

}  // namespace
}  // namespace lockstep::properties
