// `lockstep fuzz`: reproducible random programs for lock-step runs of the
// reference and a chip, coverage of what the reference executed, and
// shrinking of a mismatching program (fuzz/README.md, "lockstep fuzz").
//
// A program is a list of items (one instruction word, an `li` pair, a branch
// or jump whose target is another item, an auipc+jalr pair, a gap of nops
// that a far jump crosses and nothing runs): targets are item
// indices, so dropping items while shrinking keeps every offset consistent.
// Every program: x1..x30 loaded with random edge values, x31 pointing at a
// 256-byte scratch area of random bytes, a body of random instructions drawn
// from a weighted mix over ref's encoding table (filtered by --ops) with
// directed streams (a counted loop, bn.addc/bn.subb carry chains, store/load
// patterns), then `li a7, 93; ecall` (exit).  Branches and jumps of the body
// go forward, but for the one that closes a counted loop (a selected branch,
// jal or auipc+jalr, backwards), whose counter runs at most 6 times, so every
// program ends; and for a far jump's (1 KiB and more, either way, over a gap),
// which runs once.  An instruction that writes x31 is followed by `li x31` of
// the scratch base again.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/chip/chip.hpp"
#include "lockstep/engine/engine.h"
#include "lockstep/format/elf.h"
#include "lockstep/ops/op_case.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/encoding.h"

namespace lockstep::campaign {

/// Bad --ops list (unknown name, a vector or system op): what() is one line.
class OpsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The class's name (format::kInsnClassNames; the names --ops accepts).
std::string_view class_name(ref::InsnClass cls);

/// VEW modes (vector.md §4.5) as a bit mask, bit m for MODE m: ADD (0),
/// MUL (1), MULS (2), ROT (3); the chip executes all four.
inline constexpr unsigned kVewAdd = 1u << 0, kVewMul = 1u << 1, kVewMuls = 1u << 2, kVewRot = 1u << 3;
inline constexpr unsigned kVewFuzzedModes = kVewAdd | kVewMul | kVewMuls | kVewRot;

/// VFN functions (vector.md §4.6) as a bit mask, bit f for FN f: RSQRT (0),
/// RECIP (1), SILU (2).
inline constexpr unsigned kVfnRsqrt = 1u << 0, kVfnRecip = 1u << 1, kVfnSilu = 1u << 2;
inline constexpr unsigned kVfnFuzzedFns = kVfnRsqrt | kVfnRecip | kVfnSilu;

/// VRED modes (vector.md §4.7) as a bit mask, bit m for MODE m: SUMSQ (0),
/// SUM (1), MAX (2); the chip executes all three.
inline constexpr unsigned kVredSumsq = 1u << 0, kVredSum = 1u << 1, kVredMax = 1u << 2;
inline constexpr unsigned kVredFuzzedModes = kVredSumsq | kVredSum | kVredMax;

/// The rows selected by a comma-separated list of mnemonics ("add", "bn.addc")
/// and class names ("alu", "alu-imm", "upper", "mul", "div", "zba", "load",
/// "store", "branch", "jal", "jalr", "fence", "bignum"; a class name wins over
/// the mnemonic of the same spelling, so "mul" is mul/mulh/mulhsu/mulhu).
/// Vector ops: "vld"; "vew" (its four modes) or one of "vew.add", "vew.mul",
/// "vew.muls", "vew.rot" (the VEW row, that mode); "vfn" (its three
/// functions) or one of "vfn.rsqrt", "vfn.recip", "vfn.silu" (the VFN row,
/// that function; ref::vector_mnemonic's spellings); "vred" (its three modes)
/// or one of "vred.sumsq", "vred.sum", "vred.max" (the VRED row, that mode);
/// "vq" (ACT, K and V rows); "vexp"; "vmat" (write and argmax mode); "vmatr"
/// (K and V mode); the class "vector" (all eight). Groups: "rv32i" (the base
/// integer classes alu, alu-imm, upper, load, store, branch, jal, jalr,
/// fence), "rv32im" (and mul, div), for a chip that implements only those.
/// Empty, "all" or "scalar": every row but the vector unit and ecall/ebreak.  An empty name
/// in the list ("add,,sub", "add,") is an error, never skipped.  In table
/// order, no duplicates.  `vew_modes`, `vfn_fns` (optional): set to the
/// selected VEW modes (a kVew* mask) and VFN functions (a kVfn* mask), 0 when
/// the row is not selected; `vred_modes` likewise (a kVred* mask).  Throws
/// OpsError.
std::vector<const ref::Encoding*> select_ops(const std::string& list, unsigned* vew_modes = nullptr,
                                             unsigned* vfn_fns = nullptr, unsigned* vred_modes = nullptr);

/// The selection as an --ops list that select_ops gives back: the rows'
/// mnemonics in table order, VEW as "vew" (all of kVewFuzzedModes) or its
/// modes' names ("vew.add,vew.muls"), VFN as "vfn" (all of kVfnFuzzedFns) or
/// its functions' names ("vfn.silu"), VRED as "vred" or its modes' names
/// ("vred.sumsq,vred.max").
std::string ops_list(std::span<const ref::Encoding* const> ops, unsigned vew_modes = kVewFuzzedModes,
                     unsigned vfn_fns = kVfnFuzzedFns, unsigned vred_modes = kVredFuzzedModes);

/// The class of a failing run (fuzz.json's `signature`; fuzz/README.md): "`OP` at FIELD, MODE".
/// OP is the operation (the encoding table's mnemonic, without a vector op's fields) of the
/// instruction the divergence blames: the diverging instruction's, or, when the differing token
/// is one of its pc tokens (PCH0..PCH3, PCL), the instruction's before it (`d.recent`), whose
/// branch, jump or fall-through chose that pc: a jal that lands one word off is `jal` at PCL
/// however many instructions it lands on (each was a class of its own before). FIELD is
/// d.field, with an element's place in its quad left out: `VW*m` for VW0m..VW3m (byte m of a
/// word stream's word) and `VLB*` for VLB0..VLB3; MODE `mode` ("forced", "free").
std::string failure_signature(const engine::Divergence& d, std::string_view mode);
/// The instruction failure_signature blames, as (word, disassembly): the diverging one, or for a
/// pc token with an instruction before it in d.recent, that one.
std::pair<std::uint32_t, std::string> blamed_instruction(const engine::Divergence& d);

/// The seed of program `index` of a campaign with seed `run_seed`.
std::uint64_t program_seed(std::uint64_t run_seed, std::uint64_t index);

/// One item of a program.
struct Item {
  enum class Kind : std::uint8_t {
    kWord,    ///< `word`, one instruction
    kLi,      ///< li rd, value (lui + addi)
    kBranch,  ///< branch or JAL (op, rd/rs1/rs2) to item `target`
    kJalr,    ///< auipc rs1, 0; [addi rs1, rs1, base;] jalr rd, off(rs1) with
              ///< off = target - auipc - base (+ value: bit 0)
    kGap,     ///< `value` words of nop that no instruction runs: a far jump's distance
  };
  Kind kind = Kind::kWord;
  ref::Op op = ref::Op::kIllegal;
  std::uint8_t rd = 0, rs1 = 0, rs2 = 0;
  std::uint32_t word = 0;   ///< kWord
  std::uint32_t value = 0;  ///< kLi: the value; kJalr: the low bit added to the offset
  std::int64_t target = -1; ///< kBranch/kJalr: index of the target item
  /// kJalr: what an addi adds to the auipc's pc in rs1, -2047..2047, taken back off the offset
  /// (or, where off - base leaves the 12-bit immediate, -base added and taken off), so that
  /// X(rs1) has low bits set and the sum is still the target; 0: no addi (X(rs1) a multiple of 4)
  std::int32_t base = 0;
  bool fixed = false;       ///< never dropped or changed by shrinking (scratch base, exit)
  bool test = true;         ///< a generated test instruction (counted in coverage)
  unsigned words() const {
    return kind == Kind::kGap ? value : kind == Kind::kJalr ? (base != 0 ? 3u : 2u) : kind == Kind::kLi ? 2u : 1u;
  }
};

inline constexpr std::uint32_t kCodeBase = 0x10000;
inline constexpr std::uint32_t kScratchBase = 0x80000;
inline constexpr std::uint32_t kScratchBytes = 256;

/// A generated program.
struct Program {
  std::string name;          ///< "p<index>"
  std::uint64_t index = 0, seed = 0;
  std::vector<Item> items;
  std::vector<std::uint8_t> scratch;  ///< kScratchBytes at kScratchBase
  /// VR's initial bytes, the `.lockstep.vreg` section (vector.md §2.1: int32
  /// little-endian words, at most 4,096 bytes); empty: no section (VR zero).
  std::vector<std::uint8_t> vreg;
  /// The vector unit's other memories (vector.md §2.1) by section name
  /// (`.lockstep.act`, `.ash`, `.wmem`, `.wscale`, `.kcache`, `.ksh`,
  /// `.vcache`, `.vsh`), when VMAT or VMATR is selected; empty: none (zero).
  std::map<std::string, std::vector<std::uint8_t>> sections;
  /// When the body's last instruction was drawn to trap (one in four programs with a vector op):
  /// the code it raises (ops::OpCase::trap_code: the lowest of its conditions) and its parameters
  /// (ops::OpCase::describe); 0 and empty otherwise.
  unsigned trap_code = 0;
  std::string trap_vars;

  /// Code words, gaps' included (the image's size).
  std::size_t words() const;
  /// Code words but those of gaps (Item::Kind::kGap): what a shrink's sizes and programs.tsv's `words` count.
  std::size_t instruction_words() const;
  /// Words of its gaps.
  std::size_t gap_words() const;
  std::vector<std::uint32_t> code() const;
  /// Per code word: whether it is a test instruction (coverage).
  std::vector<bool> test_words() const;
  format::GuestImage image() const;
  engine::Guest guest() const;
  /// "addr: word  disassembly" lines of the code.
  std::string listing() const;
  /// Removes items [first, last) that are not fixed; branch targets inside
  /// the range move to the first item after it.
  Program without(std::size_t first, std::size_t last) const;
};

/// The generator's version: under one version a seed, an index and a selection draw one program;
/// another version may draw another (a stream added, a corner's draw changed). fuzz.json records
/// it as "generator", and `lockstep fuzz --merge` refuses shards of two versions (fuzz/README.md,
/// "Shards"). 3: session 45's corners (shift-0, same-register, equal for every register-register
/// op but the shifts, -1*int-min), its (op, corner) pairs and streams of 2..6; reports without
/// the field come from versions before it (session 44 added the corner stream). 4: writes to
/// x31, negative offsets (loads, stores, jalr) and loops closed by any selected branch, jal or
/// jalr (the negative-offset and backward corners). 5: far jumps over a gap of nops, 64 bytes to
/// 4 KiB and a jal's to 64 KiB, either way (the far-forward and far-backward corners), results
/// of 0 and -1 (the result-0 and result-minus-1 corners), corner streams of 3..8. 6: a jalr's
/// X(rs1) with low bits set (an addi after its auipc; the rs1-low-bits corner), the multiplies'
/// int-min*int-max, int-max*int-min and int-max*int-max corners.
inline constexpr unsigned kGeneratorVersion = 6;

/// Generates program `index` from `seed` over `ops` (select_ops; not empty).
/// When `ops` has the VEW row, its words use the modes of `vew_modes` (a
/// non-empty subset of kVewFuzzedModes; 0: all); when it has the VFN row, the
/// functions of `vfn_fns` (a non-empty subset of kVfnFuzzedFns; 0: all); the
/// VRED row, the modes of `vred_modes` (a non-empty subset of kVredFuzzedModes;
/// 0: all).  Vector instructions are drawn by their op's case (fuzz/ops:
/// ops::OpCase::draw_valid).  With any vector op, the program gets a
/// `.lockstep.vreg` (Program::vreg) and one in four programs ends its body with
/// an instruction of one of the selected vector ops (uniformly) drawn to trap
/// (ops::OpCase::draw_trapping; Program::trap_code; fuzz/README.md).
Program generate(std::uint64_t seed, std::uint64_t index, std::span<const ref::Encoding* const> ops,
                 unsigned vew_modes = kVewFuzzedModes, unsigned vfn_fns = kVfnFuzzedFns,
                 unsigned vred_modes = kVredFuzzedModes);

/// What generate() draws beyond the ops: the modes of VEW, VFN and VRED, and (for tests that must
/// reach every trap code of one op) the plan of the trapping instruction.
struct DrawOptions {
  unsigned vew_modes = kVewFuzzedModes, vfn_fns = kVfnFuzzedFns, vred_modes = kVredFuzzedModes;
  /// Whether the body ends with a vector instruction drawn to trap (default: one program in
  /// `trap_every`, when a vector op is selected; true needs one).
  std::optional<bool> trap;
  /// When `trap` is not set: one program in this many ends with a trapping vector instruction
  /// (1: every program; 0: none; fuzz --trap-every). The choice is one draw whatever the value:
  /// program k keeps its body under another value, and gains or loses the trapping instruction at
  /// its end.
  unsigned trap_every = 4;
  /// Its op ("vq", a selected vector op; empty: one of the selected ones, uniformly).
  std::string trap_op;
  /// The one condition it breaks (a code of that op's case, so that it raises exactly that code;
  /// 0: one or more, drawn by the case).
  unsigned trap_code = 0;
  /// The body's length in items (instructions, `li` pairs, streams), drawn uniformly from
  /// [min_body, max_body] (min_body <= max_body); a stream may end it a few items later.
  unsigned min_body = 16, max_body = 63;
  /// The program's first VEW/VFN element count (outside a loop) is one of the register edges
  /// (2, 63..65, 255..257, 1021..1024; ops::DrawContext::register_edges): for short runs
  /// that must reach those layouts (the random chip test's VEW and VFN runs).
  bool register_edges = false;
};
/// generate() with every option; throws OpsError when trap_op is not a selected vector op.
Program generate(std::uint64_t seed, std::uint64_t index, std::span<const ref::Encoding* const> ops,
                 const DrawOptions& options);

/// Operand value classes, in the order they are tested (the first that
/// matches): 0, 1, -1, INT_MIN, INT_MAX, another power of two, other.
inline constexpr int kValueClasses = 7;
int value_class(std::uint32_t v);
std::string_view value_class_name(int c);  ///< "zero", "one", "minus-one", "int-min", "int-max", "pow2", "other"

/// Operand corners (fuzz/README.md, "Corners"): per scalar op, the combinations of its two
/// operands at which compiled arithmetic is most often wrong and which operands drawn one at a
/// time seldom reach (DIV of INT_MIN by -1, SB of a byte with bit 7 set, an ADD that overflows).
/// The generator's corner stream aims at them and the coverage table counts them per op.
enum class Corner : std::uint8_t {
  kIntMinByMinusOne,   ///< "int-min/-1": X(rs1) = INT_MIN, X(rs2) = -1 (div, rem)
  kByZero,             ///< "by-zero": X(rs2) = 0 (div, divu, rem, remu)
  kDivisorTopBit,      ///< "divisor-top-bit": X(rs2) >= 2^31 (divu, remu)
  kIntMinTimesIntMin,  ///< "int-min*int-min" (mul, mulh, mulhsu, mulhu)
  kIntMinTimesMinusOne,///< "int-min*-1": X(rs1) = INT_MIN, X(rs2) = -1 (mul, mulh, mulhsu, mulhu)
  kMinusOneTimesIntMin,///< "-1*int-min": X(rs1) = -1, X(rs2) = INT_MIN (mulhsu reads them otherwise)
  kMinusOneTimesMinusOne, ///< "-1*-1" (mul, mulh, mulhsu, mulhu)
  kIntMinTimesIntMax,  ///< "int-min*int-max": X(rs1) = INT_MIN, X(rs2) = INT_MAX (mul, mulh, mulhsu, mulhu)
  kIntMaxTimesIntMin,  ///< "int-max*int-min": X(rs1) = INT_MAX, X(rs2) = INT_MIN (mulhsu reads them otherwise)
  kIntMaxTimesIntMax,  ///< "int-max*int-max" (mul, mulh, mulhsu, mulhu): the largest positive product
  kOverflow,           ///< "overflow": the signed result does not fit 32 bits (add, sub, addi)
  kCarry,              ///< "carry": add's unsigned sum >= 2^32, sub's X(rs1) < X(rs2) unsigned
  kEqual,              ///< "equal": the two operands equal, in two registers (slt*, branches, and
                       ///< the other register-register ops of RV32IM and Zba but the shifts)
  kSameRegister,       ///< "same-register": one register, not x0, for both operands (rs1 = rs2:
                       ///< xor a0, a0, a0; sra a0, a0, a0; every register-register op and branch)
  kSignsDiffer,        ///< "signs-differ": bit 31 differs, signed and unsigned order disagree
  kShift31,            ///< "shift-31": a shift by 31
  kShiftOver31,        ///< "shift-amount-over-31": X(rs2) >= 32, whose bits 5..31 a shift drops
  kShiftZero,          ///< "shift-0": a shift by 0 (the amount's low five bits 0), the word unchanged
  kShiftTopBit,        ///< "rs1-top-bit": a right shift (> 0) of a word with bit 31 set
  kShiftedOut,         ///< "shifted-out": a left shift (sll, slli, sh1add..sh3add) drops a 1
  kStoreTopBit,        ///< "value-top-bit": the stored byte/halfword/word has its top bit set
  kStoreHighBits,      ///< "value-high-bits": sb/sh of a value with bits above the stored ones
  kLoadTopBit,         ///< "loaded-top-bit": lb, lbu, lh, lhu read a byte/halfword with its top bit set
  kNegativeOffset,     ///< "negative-offset": a load's, store's or jalr's immediate below 0
  kBaseLowBits,        ///< "rs1-low-bits": a jalr whose X(rs1) is not a multiple of 4 (its
                       ///< immediate's low bits make the target whole: the adder's carry out of bit 1)
  kBackward,           ///< "backward": a branch or jal to an earlier instruction (its offset below 0)
  kFarForward,         ///< "far-forward": a branch's, jal's or jalr's offset at least 1,024 bytes
                       ///< (kFarOffset; of a reach of 4 KiB, 1 MiB and 2 KiB): its high bits
  kFarBackward,        ///< "far-backward": the offset -1,024 bytes or below
  kResultZero,         ///< "result-0": add, addi, and, andi give 0 from operands neither 0 nor -1
                       ///< (add's carry runs through all 32 bits)
  kResultMinusOne,     ///< "result-minus-1": add, sub, addi, or, ori, xor, xori give -1 from
                       ///< operands neither 0 nor -1
  kCount
};
inline constexpr int kCorners = static_cast<int>(Corner::kCount);
/// The far-forward and far-backward corners' distance: |offset| >= 1,024 bytes, where an offset's
/// bits 10 and up are no longer all 0 (forward) or all 1 (backward), as near jumps' are.
inline constexpr std::int32_t kFarOffset = 1024;
/// The corner's name ("int-min/-1"; "?" out of range).
std::string_view corner_name(Corner c);
/// The corners of `op`, in Corner order; empty for ops without any (lui, auipc, andi, bignum,
/// vector ops).
std::span<const Corner> corners_of(ref::Op op);
/// Whether an instruction of `op` with operands `a` and `b` is at corner `c` (one of
/// corners_of(op); false for any other). a = X(rs1); b = X(rs2) for register-register ops and
/// branches, the value register of a store (X(rs2)), the sign-extended immediate for OP-IMM
/// (the shift amount for slli/srli/srai), and for a load the byte or halfword it reads,
/// zero-extended. `same_register`: the instruction reads one register other than x0 as both
/// rs1 and rs2 (the same-register corner's only condition). `offset`: the sign-extended
/// immediate of a load, store, jalr, branch or jal (bytes; the negative-offset and backward
/// corners' only condition, offset < 0; far-forward's offset >= kFarOffset, far-backward's
/// offset <= -kFarOffset).
bool at_corner(ref::Op op, Corner c, std::uint32_t a, std::uint32_t b, bool same_register = false,
               std::int32_t offset = 0);
/// Operands (a, b as at_corner reads them) at corner `c` of `row`'s op, drawn with `rng`: edges
/// and random values that reach it (the generator's corner stream, which puts the operands of
/// the same-register corner, equal, in one register and those of every other corner in two). For a load, b is the word a
/// store writes before it, with bit 7 of every byte set. The negative-offset and backward corners
/// are the instruction's form, not its operands: (0, any word); so are the far ones, whose
/// (a, b) are a branch's operands, any word and, half the time, the same word (taken about half
/// the time). At rs1-low-bits, a is a jalr's Item::base, -2047..2047 as a word, with bit 0 or 1
/// set (X(rs1) mod 4 = a mod 4), and b is 0. Requires c in corners_of(row.op).
std::pair<std::uint32_t, std::uint32_t> corner_operands(progen::Random& rng, const ref::Encoding& row, Corner c);

/// Opcode x operand class counts of the test instructions the reference
/// executed (rs1 and rs2 values read just before each instruction ran), and their corners.
struct Coverage {
  struct Row {
    std::uint64_t executed = 0;
    std::array<std::uint64_t, kValueClasses> rs1{}, rs2{};
    bool has_rs1 = false, has_rs2 = false;
    /// Executions at each corner (Corner order; only corners_of(op) can be non-zero).
    std::array<std::uint64_t, kCorners> corners{};
  };
  std::map<std::string, Row> rows;  ///< by mnemonic
  std::uint64_t programs = 0, instructions = 0;
  /// By vector op name ("vq"): its coverage buckets (ops::OpCase::buckets), counted over the
  /// valid test instructions of the op that the reference executed (ops::OpCase::count).
  std::map<std::string, ops::Buckets> buckets;
  /// By vector op name: the programs that ended in a trap of its instruction, as "code N" (the
  /// reference's code) and "code N at the edge" (ops::at_trap_edge: one field one step from an
  /// instruction that does not trap). Not buckets every campaign must reach: one program in four
  /// (fuzz --trap-every) ends in a trap, of one of the selected ops.
  std::map<std::string, ops::Buckets> traps;

  /// Runs `p` on a fresh reference machine (at most max_steps tokens) and
  /// counts its test instructions.
  void add(const Program& p, std::uint64_t max_steps = 1'000'000);
  void merge(const Coverage& other);
  nlohmann::json to_json() const;
  static Coverage from_json(const nlohmann::json& j);
  /// The table; mnemonics of `ops` never executed are listed at the end. A vector op's buckets
  /// are those of its selected modes (`vew_modes`, `vfn_fns`, `vred_modes` as select_ops sets
  /// them; 0: all): `--ops vew.add` lists no MUL, MULS or ROT bucket as never reached.
  std::string text(std::span<const ref::Encoding* const> ops, unsigned vew_modes = 0, unsigned vfn_fns = 0,
                   unsigned vred_modes = 0) const;
};

/// What the reference did with a program's vector instructions, each read through its op's case
/// (fuzz/ops), and where the case and the reference disagree.
struct VectorRun {
  std::string end;                          ///< "exit", "trap", or "steps" (max_steps ran out)
  unsigned trap_code = 0;                   ///< the reference's code when end is "trap"
  std::size_t trap_word = 0;                ///< the code word (index from kCodeBase) that trapped
  const ops::OpCase* trap_op = nullptr;     ///< its op's case when it was a vector op
  ops::Fields trap_fields;                  ///< its fields then
  std::map<std::string, std::uint64_t> executed;  ///< valid test instructions by op name
  std::map<std::string, ops::Buckets> buckets;    ///< their buckets by op name (ops::OpCase::count)
  /// One line per disagreement: a vector instruction that ran without a trap where its case's
  /// trap_code() is not 0, or that trapped with another code than trap_code() says.
  std::vector<std::string> disagreements;
};
/// Runs `p` on a fresh reference machine (at most max_steps tokens) and reads every vector
/// instruction it reaches through its op's case.
VectorRun run_vector_ops(const Program& p, std::uint64_t max_steps = 1'000'000);

/// Whether the reference runs the program to its exit within max_steps.
bool reference_exits(const Program& p, std::uint64_t max_steps);
/// Whether the reference's run of the program ends within max_steps, by its exit or a trap
/// (a program that traps is a whole case: the trap is compared like any token).
bool reference_ends(const Program& p, std::uint64_t max_steps);
/// The trace steps of the reference's run of the program, at most max_steps (0 when its image
/// does not load).
std::uint64_t reference_steps(const Program& p, std::uint64_t max_steps);

/// Runs programs through `chip` in lock-step, batches of at most `batch`
/// streams, one result per program.  `reuse`: a backend over `chip` to run
/// every batch on (the engine resets each stream from its guest), saving the
/// allocation of the streams' state per batch; null: a fresh one per batch.
/// `stop` (SIGINT/SIGTERM, engine::install_stop_handlers()): the engine stops
/// at its next round (or its chip call is given up), its unfinished streams end
/// "interrupted" with what they compared so far (a divergence met before the
/// stop included), and no later batch runs, so that fewer results than
/// programs may come back. A chip that fails (throws) after a divergence of its
/// batch likewise returns that batch's results so far, and no later batch runs;
/// the caller finds the failure in `reuse->fault()`. A failure with no
/// divergence before it is thrown.
std::vector<engine::StreamResult> run_lockstep(const std::shared_ptr<const chip::Chip>& chip,
                                               const std::string& backend, const std::vector<Program>& programs,
                                               engine::Mode mode, std::uint64_t max_steps, unsigned batch = 32,
                                               std::uint64_t classify_window = 64, chip::ChipBackend* reuse = nullptr,
                                               const std::atomic<bool>* stop = nullptr);

/// Shrinking (fuzz/README.md): drop chunks of items (halves, quarters, ...,
/// single items) while the program still mismatches, then set li values to
/// 0 or 1, zero the scratch area, drop the `.lockstep.vreg`, and drop again,
/// until nothing changes or
/// the budget is spent.  A candidate counts as still mismatching only when
/// the reference's run of it still ends (exit or trap) and the chip still diverges in
/// `mode` when the candidate runs alone, as stream 0: candidates run
/// `batch` at a time, and one that fails only as a later stream of its batch
/// is run again alone before it is kept (ShrinkResult::not_alone counts
/// those that then passed).
struct ShrinkOptions {
  unsigned max_runs = 4000;           ///< candidate lock-step runs
  double max_seconds = 120;
  unsigned batch = 16;                ///< candidates run together (speculatively)
  std::uint64_t max_steps = 20000;    ///< reference step cap for a candidate
  /// Raised (SIGINT/SIGTERM): shrinking stops as when its budget is spent.
  const std::atomic<bool>* stop = nullptr;
};
struct ShrinkResult {
  Program program;
  /// Instruction words, a gap's not counted (Program::instruction_words).
  std::size_t original_words = 0, shrunk_words = 0;
  unsigned runs = 0;
  double seconds = 0;
  bool budget_exhausted = false;
  /// Candidates that mismatched beside other candidates (stream i > 0 of a batch) but not
  /// alone, and were counted as passing: nonzero means the chip's bug depends on the streams.
  unsigned not_alone = 0;
};
/// `first_failing(cands)`: the index of the first candidate that still
/// mismatches, or nullopt.
using FirstFailing = std::function<std::optional<std::size_t>(const std::vector<Program>&)>;
ShrinkResult shrink(const Program& failing, const FirstFailing& first_failing, const ShrinkOptions& options = {});

/// Whether a candidate's divergence is the failure being shrunk (e.g. the same instruction):
/// a shrink that kept any mismatch could drift to another bug of the same chip.
using SameFailure = std::function<bool(const engine::Divergence&)>;

/// The FirstFailing of a chip and mode: a candidate fails when the reference's run of it ends
/// (reference_ends) within max_steps and the chip diverges from it (run_lockstep), with a
/// divergence `same` accepts when `same` is set.
FirstFailing chip_oracle(const std::shared_ptr<const chip::Chip>& chip, const std::string& backend, engine::Mode mode,
                         std::uint64_t max_steps, SameFailure same = {});
/// The same over a backend the caller keeps alive (a chip under test: one session for the
/// campaign and its shrinking).
FirstFailing chip_oracle(chip::ChipBackend& backend, engine::Mode mode, std::uint64_t max_steps,
                         SameFailure same = {});

}  // namespace lockstep::campaign
