// One test-case type per vector op (in the style of ggml's test-backend-ops: each op is a type whose
// vars() names its parameters), registered once (registry()) and used by everything that draws or
// checks vector instructions: the fuzz campaign's program generator (fuzz/campaign), the random
// chip test over the registry (tests/engine/chip_vector_ops_random_test.cpp), the campaign tests
// and the vector trap test.
//
// A case knows its op's operand fields (vector.md section 4.0), how to draw a valid instruction
// and one that traps with a given code (section 6), which code a set of fields raises, and which
// coverage buckets a run of its instructions must reach. The shared floor that draws read (the
// VR spans written so far, the element budget, the selected modes) is an explicit context,
// DrawContext, that every case takes as an argument.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/progen/progen.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ops {

using u32 = std::uint32_t;

inline constexpr u32 kVrWords = 1024;  ///< VR words (vector.md section 2)

/// The operand fields of one custom-1 word (vector.md section 4.0): X(rs1) = B << 16 | A,
/// X(rs2) = N << 16 | C, each field 0..65535; f7 (0..127), rd (0..31). VLD reads X(rs1) as one
/// 32-bit address (a | b << 16) and X(rs2) as dst | n << 16 (c = dst).
struct Fields {
  u32 a = 0, b = 0, c = 0, n = 0;
  u32 f7 = 0, rd = 0;
  bool same = false;  ///< rs1 = rs2: X(rs1) = X(rs2), so a = c and b = n
  bool x0 = false;    ///< rs1 = x0: a = b = 0
  u32 x1() const { return (b & 0xffff) << 16 | (a & 0xffff); }
  u32 x2() const { return (n & 0xffff) << 16 | (c & 0xffff); }
  /// The fields of a word with register values x1, x2 and its f7 and rd.
  static Fields of(u32 x1, u32 x2, u32 f7, u32 rd);
};

/// A span [start, start + n) of VR words.
struct Span {
  u32 start = 0, n = 0;
};

/// The shared floor of one program's draws, passed to every case: the random stream, the
/// selected modes of each op, the VR spans written so far and the element budget of VEW and VFN.
struct DrawContext {
  explicit DrawContext(progen::Random& r) : rng(r) {}
  progen::Random& rng;
  std::map<ref::Op, u32> modes;  ///< selected modes per op (bit m: mode m of OpCase::modes()); absent: all
  std::vector<Span> written;     ///< VR spans written by the valid vector ops so far, in program order
  u32 elements = 0;              ///< VEW and VFN elements drawn so far (times 6 in a loop body)
  bool in_loop = false;          ///< drawing a loop body (it runs up to 6 times)
  u32 avoid = 31;                ///< a register an instruction must not write (besides x31: the scratch base)
  u32 scratch_base = 0x80000;    ///< the program's scratch area (VLD reads records there half the time)
  u32 scratch_bytes = 256;       ///< its size, a multiple of 4, at least 8
  /// element_count() draws the program's first count outside a loop from the register edges (2, 63..65,
  /// 255..257, 1021..1024; campaign::DrawOptions::register_edges).
  bool register_edges = false;

  static constexpr u32 kElementBudget = 1024;  ///< VEW/VFN elements per program (about 4,400 steps)

  /// The selected modes of `op` as a mask (all of `all` when none were set).
  u32 modes_of(ref::Op op, u32 all) const;
  /// One of the set bits of `mask` (not 0), uniformly.
  u32 pick_bit(u32 mask);
  /// A start (0..1024 - n) for a span of n words (1..1024): half the time at or inside an
  /// earlier destination (the last one more often), else at the end of VR or anywhere.
  u32 vr_start(u32 n);
  /// A 16-bit start whose span of len words ends past VR (1025 - len .. 65535).
  u32 outside(u32 len);
  /// A length past `limit`, for a VEC_LEN trap (code 18): limit + 1 a third of the time (the
  /// boundary a check off by one misses: found by an outside tester, a VMATR chip that took T = 65
  /// passed 32 programs), else a little past it or anywhere up to `max`.
  u32 past_limit(u32 limit, u32 max);
  /// An element count 1..1024 (edges of groups and registers weighted) within what is left of
  /// the element budget; `even`: an even count (ROT). Adds it to `elements`.
  u32 element_count(bool even = false);
  /// A destination register for an op that writes one (VMAT argmax): x1..x30 but `avoid`.
  u32 dest_reg();
  /// A random magnitude 2^0..2^31 (log-uniform), either sign.
  u32 log_uniform();
};

/// Counts per coverage bucket (name -> instructions or elements that fell in it).
using Buckets = std::map<std::string, std::uint64_t>;

/// What one executed instruction read, for its coverage buckets: its fields, VR just before it
/// ran, the VR spans that earlier valid vector ops of the program wrote, and the whole vector
/// state just before it ran (ACT, ASH, WMEM, WSCALE, KC/VC, KSH/VSH as the reference holds them;
/// the value classes of VMAT, VMATR read them). A case only reads the state: its value classes
/// compute their own intermediate values from vector.md, not through ref's semantics.
struct Executed {
  const Fields& fields;
  std::span<const std::int32_t> vr;  ///< 1,024 words
  std::span<const Span> written;
  const ref::VectorState& state;     ///< the vector unit before the instruction (state.vr is `vr`)
};

/// The sections of a program's vector memories (".lockstep.act" -> bytes; vector.md section 2.1).
using Sections = std::map<std::string, std::vector<std::uint8_t>>;

/// One vector op as a test case.
class OpCase {
 public:
  virtual ~OpCase() = default;
  /// The op's --ops name and mnemonic ("vq").
  virtual std::string_view name() const = 0;
  /// The op's row in ref's encoding table.
  virtual ref::Op op() const = 0;
  /// The names of its modes (functions, targets) in f7 order as --ops spells them ("vew.add"),
  /// or as the coverage names them ("vq.act"); bit m of a modes mask is modes()[m].
  virtual std::vector<std::string_view> modes() const = 0;
  /// Whether --ops takes the mode names one by one (VEW, VFN, VRED) or only the whole op.
  virtual bool selectable_modes() const { return false; }
  /// The mode (0 .. modes().size() - 1) of a valid instruction with these fields.
  virtual u32 mode_of(const Fields& f) const = 0;
  /// The trap codes of section 6 that the op can raise, ascending.
  virtual std::vector<unsigned> codes() const = 0;
  /// The codes of codes() that instructions of the modes of `modes` can raise (VEW's 23, p >= 64,
  /// is ROT's alone): what a campaign over those modes can reach.
  virtual std::vector<unsigned> codes_of(u32 /*modes*/) const { return codes(); }
  /// The parameters of an instruction as "name=value" pairs, for failure lines ("b0=1,src=5,n=64").
  virtual std::string vars(const Fields& f) const = 0;
  /// A valid instruction (trap_code() = 0) of one of the selected modes; may read and move the
  /// context (spans, budget); does not record what it writes (writes() says).
  virtual Fields draw_valid(DrawContext& ctx) const = 0;
  /// An instruction that traps: `code` 0, one or more of the op's conditions (the lowest code
  /// wins; one alone about half the time); a code of codes(), that condition alone, so that
  /// trap_code() = code.
  virtual Fields draw_trapping(DrawContext& ctx, unsigned code) const = 0;
  /// The lowest trap code of section 6 that these fields raise (16..23), 0 if none.
  virtual unsigned trap_code(const Fields& f) const = 0;
  /// The VR spans a valid instruction with these fields writes (none: VLD's are its own; VMAT's
  /// argmax mode writes rd).
  virtual std::vector<Span> writes(const Fields& f) const = 0;
  /// The coverage buckets that a run of the op's valid instructions must each reach (count() adds
  /// to them), for the modes of `modes`.
  virtual std::vector<std::string> buckets(u32 modes) const = 0;
  /// The buckets of buckets(modes) that only programs drawn with the register edges reach
  /// (DrawContext::register_edges: counts of 1021..1024 words); a campaign drawn without them
  /// need not reach these.
  virtual std::vector<std::string> register_edge_buckets(u32 /*modes*/) const { return {}; }
  /// Adds one executed valid instruction to its buckets.
  virtual void count(const Executed& e, Buckets& b) const = 0;
  /// Whether the op draws a program's initial VR for its value classes (fill_vr).
  virtual bool draws_vr() const { return false; }
  /// Draws a program's initial VR (1,024 words) for the op's value classes (ties, thresholds,
  /// clamps of its arithmetic, as its buckets name them), when draws_vr(). The generator calls it
  /// for one of the selected ops that draw VR, in most programs.
  virtual void fill_vr(DrawContext& ctx, std::span<u32> vr) const { (void)ctx, (void)vr; }
  /// Whether the op draws the memories it reads besides VR (fill_memories).
  virtual bool draws_memories() const { return false; }
  /// Draws the memories the op reads besides VR (ACT, ASH, WMEM, WSCALE, the caches and their
  /// shifts) as sections for its value classes, when draws_memories(). The generator calls it for
  /// one of the selected ops that draw memories.
  virtual void fill_memories(DrawContext& ctx, Sections& out) const { (void)ctx, (void)out; }

  /// vars() with the op's name in front: "vq act b0=1,src=5,n=64" (for failure lines).
  std::string describe(const Fields& f) const;
  /// Every mode: the mask of modes().
  u32 all_modes() const { return (1u << modes().size()) - 1; }
};

/// Whether fields that trap (trap_code(f) != 0) are one step from an instruction that does not:
/// moving one of a, b, c, n (0..65535) or rd (0..31) by one makes trap_code() 0 (not f7, whose
/// neighbours are other modes; for VLD, whose a and b are one 32-bit address, the address a byte
/// or a word away instead of a and b).
/// Such a trap is at the edge of its condition (a span that ends one word past VR, ROT's p = 64,
/// a length one past its limit, a destination one word into a source): the boundary a chip's
/// check off by one gets wrong (found by an outside tester: a ROT that did not trap at p = 64
/// passed 64 programs). The coverage counts these per code (campaign::Coverage::traps).
bool at_trap_edge(const OpCase& c, const Fields& f);

/// The eight cases in f3 order (VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED, VLD).
std::span<const OpCase* const> registry();
/// The case of `op`, null when op is not a vector op.
const OpCase* case_of(ref::Op op);
/// The case named `name` ("vq"), null when none is.
const OpCase* find(std::string_view name);

/// A VR word for the paths of one of the selected VFN functions (vector.md section 4.6: x <= 0,
/// powers of two, INT32_MAX, final-rounding ties; SILU: the clamp of ix, ties of rnd(x, 10) and of
/// the product), for a program's initial VR when VFN is fuzzed.
u32 vfn_input_word(DrawContext& ctx);

/// rnd(x, s) of vector.md section 1 (round half up: floor((x + 2^(s-1)) / 2^s); x for s = 0), for
/// the cases' value classes; |x| < 2^62, s <= 62.
inline std::int64_t rnd(std::int64_t x, unsigned s) { return s == 0 ? x : (x + (std::int64_t{1} << (s - 1))) >> s; }
/// Whether rnd(x, s) meets a tie (s >= 1: x mod 2^s = 2^(s-1)).
inline bool rnd_tie(std::int64_t x, unsigned s) { return s >= 1 && (x & ((std::int64_t{1} << s) - 1)) == std::int64_t{1} << (s - 1); }

/// "k=v,k=v" of the pairs (helper for vars()).
std::string format_vars(std::initializer_list<std::pair<std::string_view, std::int64_t>> vars);
/// Whether [s0, s0 + n0) and [s1, s1 + n1) share a word.
bool shares(u32 s0, u32 n0, u32 s1, u32 n1);
/// Whether they share a word and are not identical (a code-20 conflict of section 6).
bool conflicts(u32 s0, u32 n0, u32 s1, u32 n1);
/// Whether the span [start, start + n) reads a word of an earlier destination.
bool reads_written(u32 start, u32 n, std::span<const Span> written);

}  // namespace lockstep::ops
