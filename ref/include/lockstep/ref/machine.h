// The reference machine (isa.md, bignum.md, trace.md): architectural state,
// ELF loading, execution and the trace.
//
// Steps and tokens: every instruction produces one or more trace tokens
// (trace.md §4); a "step" is one produced token.  A step limit may fall
// inside an instruction's tokens: that instruction is executed completely
// (architectural state, console output and instructions_retired include it),
// only the tokens up to the limit are delivered, and the rest stay pending:
// the next run()/step()/next_token() call delivers them first.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/format/elf.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/semantics.h"
#include "lockstep/ref/vector.h"

namespace lockstep::ref {

/// Memory map (isa.md §2).
inline constexpr std::uint32_t kRamBase = 0x00010000u;
inline constexpr std::uint32_t kRamEnd = 0x00110000u;
inline constexpr std::uint32_t kRamSize = kRamEnd - kRamBase;  // 1 MiB

/// MachineState::pc_page before the run's first instruction (no `w >> 8`
/// is this large: w < 2^18).
inline constexpr std::uint32_t kNoPcPage = 0xffffffffu;

/// Trap codes (isa.md §6).
enum class Trap : std::uint32_t {
  kIllegalInstruction = 1,
  kFetchMisaligned = 2,
  kFetchFault = 3,
  kLoadMisaligned = 4,
  kLoadFault = 5,
  kStoreMisaligned = 6,
  kStoreFault = 7,
  kBadEcall = 8,
  kEbreak = 9,
};

/// The hint a "not inside RAM" load error ends with: how to link a guest for this memory map.
inline constexpr std::string_view kLinkHint =
    "link for the machine's RAM: see guests/runtime/link.ld (docs/guests.md)";

/// A guest image the machine cannot load (segment outside RAM, misaligned
/// entry, ...).  what() is one line starting "ELF: ".
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Whether the machine can still execute.
enum class Status { kRunning, kExited, kTrapped };

/// Why a run() call returned.
enum class Stop { kExit, kTrap, kStepLimit };

/// Result of one run() call.
struct RunResult {
  Stop stop;
  std::uint64_t steps;         ///< tokens delivered by this call
  std::uint64_t instructions;  ///< instructions retired by this call
};

/// Receives delivered tokens in order, in chunks (of up to ~64 Ki tokens).
using TokenSink = std::function<void(std::span<const std::uint32_t>)>;

/// Receives the bytes of one guest write (isa.md §5: fd 1 or 2), in order,
/// as the instruction executes.
using ConsoleSink = std::function<void(int fd, std::string_view bytes)>;

/// Everything needed to resume a run exactly (checkpoints).
struct MachineState {
  std::array<std::uint32_t, 32> x{};
  std::uint32_t pc = 0;
  std::vector<std::uint8_t> ram;  ///< kRamSize bytes
  std::uint32_t carry = 0;
  sem::Acc96 acc;
  Status status = Status::kRunning;
  std::uint32_t exit_status = 0;
  std::uint32_t trap_code = 0;
  std::uint64_t retired = 0;
  std::uint64_t steps = 0;
  /// `w >> 8` of the last executed instruction (trace.md §4.0: decides
  /// whether the next one emits PCH); kNoPcPage before the first.
  std::uint32_t pc_page = kNoPcPage;
  std::vector<std::uint32_t> pending;  ///< produced, not yet delivered tokens
  std::string console_out, console_err;
  VectorState vector;
};

/// The golden model.  Not thread-safe; independent instances are.
class Machine {
 public:
  /// A machine in reset state (isa.md §1): registers, pc, RAM, c and acc zero.
  Machine();

  /// Resets and loads `image` (isa.md §3: segments copied, rest zero,
  /// pc = e_entry; vector.md §2.1: vector memories from `.lockstep.*`
  /// sections).  Throws LoadError when a segment is not inside RAM, the
  /// entry is not a multiple of 4 or not in a PF_X segment, or a vector
  /// section is invalid (file-level checks are format::parse_elf's).
  void load(const format::GuestImage& image);
  /// format::read_elf_file + load.  Throws format::FormatError or LoadError.
  void load_elf_file(const std::filesystem::path& path);

  /// Runs until exit, trap, or `max_steps` more tokens were delivered,
  /// without materialising tokens (fast path).
  RunResult run(std::uint64_t max_steps);
  /// Same, delivering every token to `sink`.
  RunResult run(std::uint64_t max_steps, const TokenSink& sink);

  /// Executes one instruction and returns its tokens (valid until the next
  /// call).  If tokens of a previous instruction are pending (a step limit
  /// cut it) returns those instead.  Empty once the run has ended.
  std::span<const std::uint32_t> step();
  /// Pulls the next token (executing an instruction when none is pending);
  /// nullopt once the run has ended.
  std::optional<std::uint32_t> next_token();

  // ------------------------------------------------------------ state
  Status status() const { return status_; }
  /// True while tokens remain to be delivered (running, or pending tokens).
  bool active() const { return status_ == Status::kRunning || head_ != tail_; }
  /// True when the machine is running and the instruction at pc() jumps to itself from the
  /// current state and will on every later execution, so the guest can never exit or trap:
  /// `jal rd, 0`; a branch with offset 0 whose condition holds (isa.md §4.2: it writes no
  /// register); `jalr rd, imm(rs1)` whose target is pc and stays pc once rd = pc + 4 is
  /// written.  After its first execution the state, and so each execution's tokens, is a fixed
  /// point of that instruction.  A longer loop is not detected.  Harnesses use this to stop a
  /// run that would never end.
  bool jumps_to_itself() const;
  /// Exit status (a0 & 0xFF) once status() == kExited.
  std::uint32_t exit_status() const { return exit_status_; }
  /// Trap code (isa.md §6) once status() == kTrapped.
  std::uint32_t trap_code() const { return trap_code_; }
  /// Instructions retired (isa.md §6: completed without a trap; exit counts).
  std::uint64_t instructions_retired() const { return retired_; }
  /// instructions_retired() less the instruction a step limit cut (tokens still pending),
  /// when it retires: the instructions completed as seen at the last delivered step.
  std::uint64_t instructions_completed() const {
    return retired_ - (head_ != tail_ && status_ != Status::kTrapped ? 1 : 0);
  }
  /// Tokens delivered so far (trace.md §1 "steps").
  std::uint64_t steps() const { return delivered_; }

  std::uint32_t reg(unsigned i) const { return x_[i & 31]; }
  /// Sets x[i] (writes to x0 are ignored).
  void set_reg(unsigned i, std::uint32_t v) {
    if ((i & 31) != 0) x_[i & 31] = v;
  }
  std::uint32_t pc() const { return pc_; }
  /// Sets pc.  Throws std::invalid_argument unless pc is a multiple of 4.
  void set_pc(std::uint32_t pc);
  std::uint32_t carry() const { return carry_; }
  void set_carry(std::uint32_t c) { carry_ = c & 1; }
  const sem::Acc96& acc() const { return acc_; }
  void set_acc(const sem::Acc96& a) { acc_ = a; }

  /// The RAM bytes, index 0 = address kRamBase.
  std::span<const std::uint8_t> ram() const { return ram_; }
  /// Reads `n` bytes at guest address `addr`; throws std::out_of_range
  /// unless [addr, addr+n) is inside RAM.
  std::vector<std::uint8_t> read_memory(std::uint32_t addr, std::uint32_t n) const;
  /// Little-endian 32-bit word at `addr` (same range rule).
  std::uint32_t read_word(std::uint32_t addr) const;
  /// Writes bytes at guest address `addr` (same range rule); keeps the
  /// predecoded instruction cache coherent.
  void write_memory(std::uint32_t addr, std::span<const std::uint8_t> bytes);

  /// The vector unit's memories (vector.md §2).
  const VectorState& vector() const { return vec_; }
  VectorState& vector() { return vec_; }

  /// Bytes the guest wrote to fd 1 / fd 2 (none while a console sink is set).
  const std::string& console_out() const { return console_out_; }
  const std::string& console_err() const { return console_err_; }
  /// Hands the guest's console bytes to `sink` as they are written instead of
  /// keeping them in console_out()/console_err(), so that a long run's output
  /// does not accumulate in memory; an empty sink keeps them again.  Kept
  /// across load(), restore() and reset; copies of the machine share it.
  void set_console_sink(ConsoleSink sink) { console_sink_ = std::move(sink); }

  /// Snapshot / restore of the whole state (registers, pc, RAM, bignum
  /// state, run status, counters, pending tokens, console).
  MachineState save() const;
  void restore(const MachineState& state);

 private:
  template <bool kTrace> void execute();
  template <bool kTrace> void run_until(std::uint64_t produced_limit);
  template <bool kTrace> void ecall();
  template <bool kTrace> bool vector_op(const Decoded& d, std::uint32_t a, std::uint32_t b);
  void reset();
  void deliver(std::uint64_t n);
  void ensure_token_room(std::size_t n);

  // Token emission: when kTrace the id is written at tok_; always counted.
  template <bool kTrace> void put(std::uint32_t id) {
    if constexpr (kTrace) *tok_++ = id;
    ++produced_;
  }
  template <bool kTrace> void put_word(std::uint32_t kind0, std::uint32_t v);
  template <bool kTrace> void put_acc();  ///< AC0..AC11 of acc (trace.md §4.6)
  template <bool kTrace> void write_rd(unsigned rd, std::uint32_t v);
  template <bool kTrace> void trap(Trap t);
  template <bool kTrace> void put_pc(std::uint32_t w);

  std::array<std::uint32_t, 32> x_{};
  std::uint32_t pc_ = 0;
  std::vector<std::uint8_t> ram_;
  std::vector<Decoded> icache_;  ///< one slot per RAM word; kUndecoded = not yet decoded
  std::uint32_t carry_ = 0;
  sem::Acc96 acc_;
  Status status_ = Status::kRunning;
  std::uint32_t exit_status_ = 0, trap_code_ = 0;
  std::uint64_t retired_ = 0;
  std::uint64_t produced_ = 0;   ///< tokens of executed instructions
  std::uint64_t delivered_ = 0;  ///< tokens handed out (steps)
  std::uint64_t limit_ = 0;      ///< produced_ limit of the current untraced run
  /// `w >> 8` of the last instruction whose fetch succeeded (trace.md §4.0);
  /// kNoPcPage until the run's first instruction.
  std::uint32_t pc_page_ = kNoPcPage;
  std::string console_out_, console_err_;
  ConsoleSink console_sink_;  ///< when set, receives console bytes instead of console_out_/console_err_
  VectorState vec_;
  std::vector<std::uint32_t> vtok_;  ///< scratch: tokens of one vector instruction
  // Token buffer: [head_, tail_) are produced but undelivered (pending).
  std::vector<std::uint32_t> buf_;
  std::size_t head_ = 0, tail_ = 0;
  /// Write position in buf_ while an instruction executes; re-derived from
  /// buf_ at every entry point (run, step, next_token), so copies of a
  /// Machine never use another machine's buffer.
  std::uint32_t* tok_ = nullptr;
};

/// Objdump-like disassembly of one word ("addi a0, zero, -1",
/// "bn.addc a0, a1, a2", "beq a0, a1, 0x10010"); branch and jump targets are
/// absolute, computed from `pc`.  Illegal words print as ".word 0x????????".
std::string disassemble(std::uint32_t word, std::uint32_t pc = 0);

/// ABI name of register i ("zero", "ra", "sp", ..., "t6").
std::string_view reg_name(unsigned i);

}  // namespace lockstep::ref
