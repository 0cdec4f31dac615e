// The reference machine: execution and trace of every instruction.
// Each case of Machine::execute reads like its row of isa.md §4.1 and its
// token rule of trace.md §4.
#include "lockstep/ref/machine.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "lockstep/format/tokens.h"

namespace lockstep::ref {
namespace {

using format::Kind;
using format::token_id;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

constexpr u32 kind(Kind k) { return static_cast<u32>(k); }

// Most tokens any instruction other than ECALL write and the vector
// instructions produces (DIV: PCH, PCL, 32 DQ, 4 W).
constexpr std::size_t kMaxFixedTokens = 38;
// Largest ECALL write len (isa.md §5, trace.md §4.5).
constexpr u32 kMaxWriteLen = 65535;
// Tokens materialised per chunk handed to a TokenSink.
constexpr std::size_t kChunk = 1 << 16;

std::string hex(u64 v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// An access of n bytes at a lies in RAM (isa.md §2, 33-bit sum, no wrap).
inline bool in_ram(u32 a, u32 n) { return a >= kRamBase && u64{a} + n <= kRamEnd; }

}  // namespace

Machine::Machine() : ram_(kRamSize, 0), icache_(kRamSize / 4), buf_(kChunk + kMaxFixedTokens) { reset(); }

void Machine::reset() {
  x_.fill(0);
  pc_ = 0;
  std::fill(ram_.begin(), ram_.end(), 0);
  std::fill(icache_.begin(), icache_.end(), Decoded{});
  carry_ = 0;
  acc_ = {};
  status_ = Status::kRunning;
  exit_status_ = trap_code_ = 0;
  retired_ = produced_ = delivered_ = 0;
  pc_page_ = kNoPcPage;
  console_out_.clear();
  console_err_.clear();
  vec_ = VectorState{};
  head_ = tail_ = 0;
  tok_ = buf_.data();
}

void Machine::load(const format::GuestImage& image) {
  reset();
  for (std::size_t i = 0; i < image.segments.size(); ++i) {
    const format::Segment& s = image.segments[i];
    const u64 end = u64{s.vaddr} + s.memsz;
    if (s.vaddr < kRamBase || end > kRamEnd) {
      throw LoadError("ELF: " + format::segment_label(image, i) + " [" + hex(s.vaddr) + ", " + hex(end) +
                      ") is not inside RAM [" + hex(kRamBase) + ", " + hex(kRamEnd) + "); " + std::string(kLinkHint));
    }
    if (s.bytes.size() > s.memsz) {
      throw LoadError("ELF: " + format::segment_label(image, i) + " has more file bytes than p_memsz");
    }
    if (!s.bytes.empty()) std::memcpy(ram_.data() + (s.vaddr - kRamBase), s.bytes.data(), s.bytes.size());
  }
  if (image.entry % 4 != 0) throw LoadError("ELF: entry point " + hex(image.entry) + " is not a multiple of 4");
  bool entry_in_x = false;
  for (const auto& s : image.segments) {
    entry_in_x = entry_in_x || ((s.flags & format::kPfX) && image.entry >= s.vaddr &&
                                u64{image.entry} < u64{s.vaddr} + s.memsz);
  }
  if (!entry_in_x) {
    throw LoadError("ELF: entry point " + hex(image.entry) + " is not inside a PT_LOAD segment with PF_X");
  }
  load_vector_sections(image, vec_);
  pc_ = image.entry;
}

void Machine::load_elf_file(const std::filesystem::path& path) { load(format::read_elf_file(path)); }

void Machine::set_pc(u32 pc) {
  if (pc % 4 != 0) throw std::invalid_argument("set_pc: pc must be a multiple of 4");
  pc_ = pc;
}

std::vector<std::uint8_t> Machine::read_memory(u32 addr, u32 n) const {
  if (!in_ram(addr, n)) throw std::out_of_range("read_memory: range outside RAM");
  const auto* p = ram_.data() + (addr - kRamBase);
  return {p, p + n};
}

bool Machine::jumps_to_itself() const {
  if (status_ != Status::kRunning || pc_ % 4 != 0 || !in_ram(pc_, 4)) return false;
  u32 w = 0;
  std::memcpy(&w, ram_.data() + (pc_ - kRamBase), 4);
  const Decoded d = decode(w);
  const u32 a = x_[d.rs1], b = x_[d.rs2];
  switch (d.op) {
    case Op::kJal: return d.imm == 0;
    case Op::kJalr:
      // rd = pc + 4 is written after rs1 is read; with rd == rs1 the next execution reads it.
      return ((a + d.imm) & ~1u) == pc_ && (d.rd == 0 || d.rd != d.rs1 || ((pc_ + 4 + d.imm) & ~1u) == pc_);
    case Op::kBeq: return d.imm == 0 && a == b;
    case Op::kBne: return d.imm == 0 && a != b;
    case Op::kBlt: return d.imm == 0 && sem::less_signed(a, b);
    case Op::kBge: return d.imm == 0 && !sem::less_signed(a, b);
    case Op::kBltu: return d.imm == 0 && a < b;
    case Op::kBgeu: return d.imm == 0 && a >= b;
    default: return false;
  }
}

u32 Machine::read_word(u32 addr) const {
  if (!in_ram(addr, 4)) throw std::out_of_range("read_word: address outside RAM");
  u32 v;
  std::memcpy(&v, ram_.data() + (addr - kRamBase), 4);
  return v;
}

void Machine::write_memory(u32 addr, std::span<const std::uint8_t> bytes) {
  if (!in_ram(addr, static_cast<u32>(bytes.size())) || bytes.size() > kRamSize) {
    throw std::out_of_range("write_memory: range outside RAM");
  }
  if (bytes.empty()) return;
  const u32 off = addr - kRamBase;
  std::memcpy(ram_.data() + off, bytes.data(), bytes.size());
  for (u32 w = off / 4; w <= (off + static_cast<u32>(bytes.size()) - 1) / 4; ++w) icache_[w] = Decoded{};
}

MachineState Machine::save() const {
  MachineState s;
  s.x = x_;
  s.pc = pc_;
  s.ram = ram_;
  s.carry = carry_;
  s.acc = acc_;
  s.status = status_;
  s.exit_status = exit_status_;
  s.trap_code = trap_code_;
  s.retired = retired_;
  s.steps = delivered_;
  s.pc_page = pc_page_;
  s.pending.assign(buf_.begin() + static_cast<std::ptrdiff_t>(head_), buf_.begin() + static_cast<std::ptrdiff_t>(tail_));
  s.console_out = console_out_;
  s.console_err = console_err_;
  s.vector = vec_;
  return s;
}

void Machine::restore(const MachineState& s) {
  if (s.ram.size() != kRamSize) throw std::invalid_argument("restore: RAM image has the wrong size");
  reset();
  x_ = s.x;
  x_[0] = 0;
  pc_ = s.pc;
  ram_ = s.ram;
  carry_ = s.carry & 1;
  acc_ = s.acc;
  status_ = s.status;
  exit_status_ = s.exit_status;
  trap_code_ = s.trap_code;
  retired_ = s.retired;
  delivered_ = s.steps;
  pc_page_ = s.pc_page;
  produced_ = s.steps + s.pending.size();
  if (buf_.size() < s.pending.size()) buf_.resize(s.pending.size() + kMaxFixedTokens);
  std::copy(s.pending.begin(), s.pending.end(), buf_.begin());
  head_ = 0;
  tail_ = s.pending.size();
  console_out_ = s.console_out;
  console_err_ = s.console_err;
  vec_ = s.vector;
}

// ------------------------------------------------------------ tokens

void Machine::ensure_token_room(std::size_t n) {
  const std::size_t at = static_cast<std::size_t>(tok_ - buf_.data());
  if (buf_.size() - at < n) buf_.resize(at + n + kMaxFixedTokens);
  tok_ = buf_.data() + at;
}

// Four tokens kind0 .. kind0+3 with the bytes of v, least significant first.
template <bool kTrace>
inline void Machine::put_word(u32 kind0, u32 v) {
  if constexpr (kTrace) {
    tok_[0] = token_id(kind0, v & 0xff);
    tok_[1] = token_id(kind0 + 1, (v >> 8) & 0xff);
    tok_[2] = token_id(kind0 + 2, (v >> 16) & 0xff);
    tok_[3] = token_id(kind0 + 3, v >> 24);
    tok_ += 4;
  }
  produced_ += 4;
}

// trace.md §4.6: AC0..AC11, the bytes of the 96-bit acc, least significant first.
template <bool kTrace>
inline void Machine::put_acc() {
  put_word<kTrace>(kind(Kind::AC0), acc_.limb[0]);
  put_word<kTrace>(kind(Kind::AC0) + 4, acc_.limb[1]);
  put_word<kTrace>(kind(Kind::AC0) + 8, acc_.limb[2]);
}

// trace.md §3: W(v) is W0..W3 when rd != 0 and NOP(0) when rd = 0; the
// write to x0 is discarded (isa.md §1).
template <bool kTrace>
inline void Machine::write_rd(unsigned rd, u32 v) {
  if (rd != 0) {
    x_[rd] = v;
    put_word<kTrace>(kind(Kind::W0), v);
  } else {
    put<kTrace>(token_id(Kind::NOP, 0));
  }
}

// isa.md §6: traps are final and change no register or memory.
template <bool kTrace>
inline void Machine::trap(Trap t) {
  trap_code_ = static_cast<u32>(t);
  status_ = Status::kTrapped;
  put<kTrace>(token_id(Kind::TRAP, trap_code_));
}

// trace.md §4.0: PCH_k((w >> 8) & 0xFF), k = w >> 16, for the run's first
// instruction and whenever w >> 8 changes; then PCL(w & 0xFF).
template <bool kTrace>
inline void Machine::put_pc(u32 w) {
  const u32 page = w >> 8;
  if (page != pc_page_) {
    pc_page_ = page;
    put<kTrace>(token_id(kind(Kind::PCH0) + (page >> 8), page & 0xff));
  }
  put<kTrace>(token_id(Kind::PCL, w & 0xff));
}

// ------------------------------------------------------------ ECALL (isa.md §5)

template <bool kTrace>
void Machine::ecall() {
  const u32 number = x_[17], a0 = x_[10];
  if (number == 93) {  // exit(status = a0)
    exit_status_ = a0 & 0xff;
    status_ = Status::kExited;
    put<kTrace>(token_id(Kind::EXIT, exit_status_));
    ++retired_;
    return;
  }
  if (number != 64) return trap<kTrace>(Trap::kBadEcall);
  // write(fd = a0, buf = a1, len = a2)
  const u32 fd = a0, buf = x_[11], len = x_[12];
  if (fd != 1 && fd != 2) return trap<kTrace>(Trap::kBadEcall);
  if (len > kMaxWriteLen) return trap<kTrace>(Trap::kBadEcall);
  if (len > 0 && !in_ram(buf, len)) return trap<kTrace>(Trap::kLoadFault);
  const char* bytes = reinterpret_cast<const char*>(ram_.data()) + (buf - kRamBase);
  if (console_sink_) {
    console_sink_(static_cast<int>(fd), std::string_view(bytes, len));
  } else {
    (fd == 1 ? console_out_ : console_err_).append(bytes, len);
  }
  // Tokens (trace.md §4.5): per byte i, OIH(i >> 8) when i > 0 and
  // i & 0xFF = 0, OI(i & 0xFF), OUT/ERR(byte); then W(len) into a0.  An
  // untraced run materialises them when they cross its step limit (they may
  // stay pending).
  const u32 n_byte_tokens = 2 * len + (len > 0 ? (len - 1) / 256 : 0);
  const bool materialise = kTrace || produced_ + n_byte_tokens + 4 > limit_;
  if (materialise) {
    ensure_token_room(std::size_t{n_byte_tokens} + 4);
    const u32 base = 256 * kind(fd == 1 ? Kind::OUT : Kind::ERR);
    const u32 oi = 256 * kind(Kind::OI), oih = 256 * kind(Kind::OIH);
    u32* t = tok_;
    for (u32 i = 0; i < len; ++i) {
      if ((i & 0xff) == 0 && i > 0) *t++ = oih + (i >> 8);
      *t++ = oi + (i & 0xff);
      *t++ = base + static_cast<std::uint8_t>(bytes[i]);
    }
    tok_ = t;
    produced_ += n_byte_tokens;
    x_[10] = len;
    put_word<true>(kind(Kind::W0), len);
  } else {
    produced_ += n_byte_tokens;
    write_rd<false>(10, len);
  }
  ++retired_;
  pc_ += 4;
}

// ------------------------------------------------------------ vector unit

// vector.md §5/§6 (after the pc tokens execute() emitted): a trapping vector
// instruction emits only TRAP(code); else
// its vector tokens, then W(r*) for VMAT argmax.  Like ECALL write, an
// untraced run materialises the tokens when they cross its step limit.
template <bool kTrace>
bool Machine::vector_op(const Decoded& d, u32 a, u32 b) {
  vtok_.clear();
  bool writes_rd = false;
  u32 rd_value = 0;
  const unsigned op_index = static_cast<unsigned>(d.op) - static_cast<unsigned>(Op::kVmat);
  const u32 code = execute_vector(vec_, op_index, d.imm, d.rd, a, b, ram_, vtok_, writes_rd, rd_value);
  if (code != 0) return trap<kTrace>(static_cast<Trap>(code)), false;
  const std::size_t n = vtok_.size();
  if (kTrace || produced_ + n + 4 > limit_) {
    ensure_token_room(n + 4);
    std::copy(vtok_.begin(), vtok_.end(), tok_);
    tok_ += n;
    produced_ += n;
    if (writes_rd) write_rd<true>(d.rd, rd_value);
  } else {
    produced_ += n;
    if (writes_rd) write_rd<false>(d.rd, rd_value);
  }
  return true;
}

// ------------------------------------------------------------ one instruction

template <bool kTrace>
void Machine::execute() {
  // Fetch (isa.md §2, trace.md §4): pc is a multiple of 4, so the word is in
  // RAM iff its first byte is.
  const u32 off = pc_ - kRamBase;
  if (off >= kRamSize) return trap<kTrace>(Trap::kFetchFault);
  // trace.md §4.0: every fetched instruction (vector ones included, and
  // illegal or trapping ones) begins with its pc tokens.
  put_pc<kTrace>(off >> 2);
  Decoded& slot = icache_[off >> 2];
  if (slot.op == Op::kUndecoded) {
    u32 word;
    std::memcpy(&word, ram_.data() + off, 4);
    slot = decode(word);
  }
  const Decoded d = slot;
  const u32 a = x_[d.rs1], b = x_[d.rs2], imm = d.imm;
  u32 next = pc_ + 4;

  // Loads (isa.md §4.1, trace.md §4.3): A(addr); misaligned -> 4; out of range -> 5; W(value).
  auto load = [&](u32 n, bool sign) -> bool {
    const u32 addr = a + imm;
    put_word<kTrace>(kind(Kind::A0), addr);
    if (addr % n != 0) return trap<kTrace>(Trap::kLoadMisaligned), false;
    if (!in_ram(addr, n)) return trap<kTrace>(Trap::kLoadFault), false;
    u32 v = 0;
    std::memcpy(&v, ram_.data() + (addr - kRamBase), n);
    if (sign) v = field::sext(v, 8 * n);
    write_rd<kTrace>(d.rd, v);
    return true;
  };
  // Stores: A(addr); misaligned -> 6; out of range -> 7; S_n(X(rs2)).  A store
  // into code is seen by the next fetch (the cache slot is invalidated).
  auto store = [&](u32 n) -> bool {
    const u32 addr = a + imm;
    put_word<kTrace>(kind(Kind::A0), addr);
    if (addr % n != 0) return trap<kTrace>(Trap::kStoreMisaligned), false;
    if (!in_ram(addr, n)) return trap<kTrace>(Trap::kStoreFault), false;
    const u32 o = addr - kRamBase;
    std::memcpy(ram_.data() + o, &b, n);
    icache_[o >> 2].op = Op::kUndecoded;
    if constexpr (kTrace) {
      for (u32 i = 0; i < n; ++i) tok_[i] = token_id(kind(Kind::S0) + i, (b >> (8 * i)) & 0xff);
      tok_ += n;
    }
    produced_ += n;
    return true;
  };
  // Branches (isa.md §4.2): taken to a misaligned target -> FETCH_MISALIGNED; else BR(taken).
  auto branch = [&](bool taken) -> bool {
    if (taken) {
      const u32 target = pc_ + imm;
      if (target % 4 != 0) return trap<kTrace>(Trap::kFetchMisaligned), false;
      next = target;
    }
    put<kTrace>(token_id(Kind::BR, taken ? 1 : 0));
    return true;
  };
  // JAL/JALR: misaligned target -> FETCH_MISALIGNED (no register written); else W(pc + 4).
  auto jump = [&](u32 target) -> bool {
    if (target % 4 != 0) return trap<kTrace>(Trap::kFetchMisaligned), false;
    write_rd<kTrace>(d.rd, pc_ + 4);
    next = target;
    return true;
  };
  // DIV/DIVU/REM/REMU (isa.md §4.3, trace.md §4.4): 32 DQ then W(result).
  auto div = [&](sem::DivVariant v) {
    if constexpr (kTrace) {
      sem::restoring_division_digits(sem::magnitude(a, v.is_signed), sem::magnitude(b, v.is_signed),
                                     [&](u32 digit) { *tok_++ = token_id(Kind::DQ, digit); });
    }
    produced_ += 32;
    write_rd<kTrace>(d.rd, sem::divide(a, b, v));
  };
  // bn.addc / bn.subb (bignum.md §2, trace.md §4.6): W(result), CF(new c).
  auto carry_op = [&](sem::CarryResult r) {
    write_rd<kTrace>(d.rd, r.rd);
    carry_ = r.c;
    put<kTrace>(token_id(Kind::CF, carry_));
  };

  switch (d.op) {
    case Op::kUndecoded:
    case Op::kIllegal:
    case Op::kCount:
      return trap<kTrace>(Trap::kIllegalInstruction);
    case Op::kLui: write_rd<kTrace>(d.rd, imm); break;
    case Op::kAuipc: write_rd<kTrace>(d.rd, pc_ + imm); break;
    case Op::kJal: if (!jump(pc_ + imm)) return; break;
    case Op::kJalr: if (!jump((a + imm) & ~1u)) return; break;  // a read before rd is written
    case Op::kBeq: if (!branch(a == b)) return; break;
    case Op::kBne: if (!branch(a != b)) return; break;
    case Op::kBlt: if (!branch(sem::less_signed(a, b))) return; break;
    case Op::kBge: if (!branch(!sem::less_signed(a, b))) return; break;
    case Op::kBltu: if (!branch(a < b)) return; break;
    case Op::kBgeu: if (!branch(a >= b)) return; break;
    case Op::kLb: if (!load(1, true)) return; break;
    case Op::kLh: if (!load(2, true)) return; break;
    case Op::kLw: if (!load(4, false)) return; break;
    case Op::kLbu: if (!load(1, false)) return; break;
    case Op::kLhu: if (!load(2, false)) return; break;
    case Op::kSb: if (!store(1)) return; break;
    case Op::kSh: if (!store(2)) return; break;
    case Op::kSw: if (!store(4)) return; break;
    case Op::kAddi: write_rd<kTrace>(d.rd, a + imm); break;
    case Op::kSlti: write_rd<kTrace>(d.rd, sem::less_signed(a, imm) ? 1 : 0); break;
    case Op::kSltiu: write_rd<kTrace>(d.rd, a < imm ? 1 : 0); break;
    case Op::kXori: write_rd<kTrace>(d.rd, a ^ imm); break;
    case Op::kOri: write_rd<kTrace>(d.rd, a | imm); break;
    case Op::kAndi: write_rd<kTrace>(d.rd, a & imm); break;
    case Op::kSlli: write_rd<kTrace>(d.rd, sem::shift_left(a, imm)); break;
    case Op::kSrli: write_rd<kTrace>(d.rd, sem::shift_right_logical(a, imm)); break;
    case Op::kSrai: write_rd<kTrace>(d.rd, sem::shift_right_arith(a, imm)); break;
    case Op::kAdd: write_rd<kTrace>(d.rd, a + b); break;
    case Op::kSub: write_rd<kTrace>(d.rd, a - b); break;
    case Op::kSll: write_rd<kTrace>(d.rd, sem::shift_left(a, b)); break;
    case Op::kSlt: write_rd<kTrace>(d.rd, sem::less_signed(a, b) ? 1 : 0); break;
    case Op::kSltu: write_rd<kTrace>(d.rd, a < b ? 1 : 0); break;
    case Op::kXor: write_rd<kTrace>(d.rd, a ^ b); break;
    case Op::kSrl: write_rd<kTrace>(d.rd, sem::shift_right_logical(a, b)); break;
    case Op::kSra: write_rd<kTrace>(d.rd, sem::shift_right_arith(a, b)); break;
    case Op::kOr: write_rd<kTrace>(d.rd, a | b); break;
    case Op::kAnd: write_rd<kTrace>(d.rd, a & b); break;
    case Op::kMul: write_rd<kTrace>(d.rd, sem::multiply(a, b, {.high = false, .signed_rs1 = false, .signed_rs2 = false})); break;
    case Op::kMulh: write_rd<kTrace>(d.rd, sem::multiply(a, b, {.high = true, .signed_rs1 = true, .signed_rs2 = true})); break;
    case Op::kMulhsu: write_rd<kTrace>(d.rd, sem::multiply(a, b, {.high = true, .signed_rs1 = true, .signed_rs2 = false})); break;
    case Op::kMulhu: write_rd<kTrace>(d.rd, sem::multiply(a, b, {.high = true, .signed_rs1 = false, .signed_rs2 = false})); break;
    case Op::kDiv: div({.is_signed = true, .remainder = false}); break;
    case Op::kDivu: div({.is_signed = false, .remainder = false}); break;
    case Op::kRem: div({.is_signed = true, .remainder = true}); break;
    case Op::kRemu: div({.is_signed = false, .remainder = true}); break;
    case Op::kSh1add: write_rd<kTrace>(d.rd, sem::shift_add(a, b, 1)); break;
    case Op::kSh2add: write_rd<kTrace>(d.rd, sem::shift_add(a, b, 2)); break;
    case Op::kSh3add: write_rd<kTrace>(d.rd, sem::shift_add(a, b, 3)); break;
    case Op::kFence: put<kTrace>(token_id(Kind::NOP, 0)); break;
    case Op::kEcall: return ecall<kTrace>();  // retires and advances pc itself
    case Op::kEbreak: return trap<kTrace>(Trap::kEbreak);
    case Op::kBnAddc: carry_op(sem::add_with_carry(a, b, carry_)); break;
    case Op::kBnSubb: carry_op(sem::subtract_with_borrow(a, b, carry_)); break;
    case Op::kBnXchgc: {  // t = c; c <- a & 1; rd <- t
      const u32 t = carry_;
      carry_ = a & 1;
      write_rd<kTrace>(d.rd, t);
      put<kTrace>(token_id(Kind::CF, carry_));
      break;
    }
    case Op::kBnMac:  // acc <- (acc + a*b) mod 2^96; AC0..AC11 of the new acc
      acc_ = sem::multiply_accumulate(acc_, a, b);
      put_acc<kTrace>();
      break;
    case Op::kBnAccrd: {  // rd <- acc mod 2^32; acc <- acc >> 32; W, then AC0..AC11 of the new acc
      const u32 low = acc_.limb[0];
      acc_ = sem::accumulator_shift(acc_);
      write_rd<kTrace>(d.rd, low);
      put_acc<kTrace>();
      break;
    }
    case Op::kBnAccclr: acc_ = {}; put<kTrace>(token_id(Kind::NOP, 0)); break;
    case Op::kVmat:
    case Op::kVmatr:
    case Op::kVq:
    case Op::kVexp:
    case Op::kVew:
    case Op::kVfn:
    case Op::kVred:
    case Op::kVld:
      if (!vector_op<kTrace>(d, a, b)) return;
      break;
  }
  ++retired_;
  pc_ = next;
}

// ------------------------------------------------------------ run loops

RunResult Machine::run(u64 max_steps) {
  const u64 d0 = delivered_, r0 = retired_;
  const u64 target = d0 + std::min(max_steps, std::numeric_limits<u64>::max() - d0);
  deliver(std::min<u64>(tail_ - head_, max_steps));  // pending tokens first
  if (head_ == tail_ && status_ == Status::kRunning && delivered_ < target) {
    head_ = tail_ = 0;
    tok_ = buf_.data();
    limit_ = target;
    // Fast path: no instruction here can cross the limit (ECALL write checks limit_).
    while (status_ == Status::kRunning && produced_ + kMaxFixedTokens <= target) execute<false>();
    // Last few instructions: materialised, so a cut instruction's tokens stay pending.
    while (status_ == Status::kRunning && produced_ < target) {
      ensure_token_room(kMaxFixedTokens);
      execute<true>();
    }
    tail_ = static_cast<std::size_t>(tok_ - buf_.data());
    const u64 undelivered = produced_ > target ? produced_ - target : 0;
    head_ = tail_ - undelivered;
    delivered_ = produced_ - undelivered;
  }
  const Stop stop = head_ != tail_ || status_ == Status::kRunning
                        ? Stop::kStepLimit
                        : (status_ == Status::kExited ? Stop::kExit : Stop::kTrap);
  return {stop, delivered_ - d0, retired_ - r0};
}

RunResult Machine::run(u64 max_steps, const TokenSink& sink) {
  const u64 d0 = delivered_, r0 = retired_;
  u64 budget = max_steps;
  while (budget > 0) {
    if (head_ == tail_) {
      if (status_ != Status::kRunning) break;
      head_ = tail_ = 0;
      tok_ = buf_.data();
      const u64 want = std::min<u64>(budget, kChunk);
      while (status_ == Status::kRunning && static_cast<u64>(tok_ - buf_.data()) < want) {
        ensure_token_room(kMaxFixedTokens);
        execute<true>();
      }
      tail_ = static_cast<std::size_t>(tok_ - buf_.data());
    }
    const u64 n = std::min<u64>(budget, tail_ - head_);
    sink(std::span<const u32>(buf_.data() + head_, n));
    deliver(n);
    budget -= n;
  }
  const Stop stop = head_ != tail_ || status_ == Status::kRunning
                        ? Stop::kStepLimit
                        : (status_ == Status::kExited ? Stop::kExit : Stop::kTrap);
  return {stop, delivered_ - d0, retired_ - r0};
}

void Machine::deliver(u64 n) {
  head_ += n;
  delivered_ += n;
}

std::span<const u32> Machine::step() {
  if (head_ == tail_) {
    if (status_ != Status::kRunning) return {};
    head_ = tail_ = 0;
    tok_ = buf_.data();
    ensure_token_room(kMaxFixedTokens);
    execute<true>();
    tail_ = static_cast<std::size_t>(tok_ - buf_.data());
  }
  const std::span<const u32> out(buf_.data() + head_, tail_ - head_);
  deliver(tail_ - head_);
  return out;
}

std::optional<u32> Machine::next_token() {
  if (head_ == tail_) {
    if (status_ != Status::kRunning) return std::nullopt;
    head_ = tail_ = 0;
    tok_ = buf_.data();
    ensure_token_room(kMaxFixedTokens);
    execute<true>();
    tail_ = static_cast<std::size_t>(tok_ - buf_.data());
  }
  const u32 t = buf_[head_];
  deliver(1);
  return t;
}

}  // namespace lockstep::ref
