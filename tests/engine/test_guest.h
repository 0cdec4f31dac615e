// A small guest built in memory for the engine tests: a loop that adds,
// stores and loads (W, A, S and BR tokens), a division (DQ tokens), a write
// of "hi\n" (OUT tokens) and an exit.  `iterations` sets its length
// (about 30 steps per iteration).
#pragma once

#include <cstdint>
#include <vector>

#include "lockstep/engine/engine.h"
#include "lockstep/format/elf.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/machine.h"

namespace lockstep::engine::testing {

inline Guest make_loop_guest(std::uint32_t iterations, const char* name = "loop") {
  using ref::Op;
  namespace enc = ref::encode;
  enum : unsigned { zero = 0, sp = 2, t0 = 5, t1 = 6, a0 = 10, a1 = 11, a2 = 12, a7 = 17 };
  std::vector<std::uint32_t> w;
  w.push_back(enc::u(Op::kLui, sp, 0x00110000u));           // sp = 0x110000
  w.push_back(enc::i(Op::kAddi, sp, sp, static_cast<std::uint32_t>(-16)));
  w.push_back(enc::i(Op::kAddi, a0, zero, 0));               // a0 = 0
  w.push_back(enc::u(Op::kLui, t0, (iterations >> 12) << 12));
  w.push_back(enc::i(Op::kAddi, t0, t0, iterations & 0xfff));
  w.push_back(enc::i(Op::kAddi, t1, zero, 7));               // t1 = 7
  const std::size_t loop = w.size();
  w.push_back(enc::r(Op::kAdd, a0, a0, t0));                 // loop: a0 += t0
  w.push_back(enc::s(Op::kSw, sp, a0, 0));                   //   sw a0, 0(sp)
  w.push_back(enc::i(Op::kLw, a1, sp, 0));                   //   lw a1, 0(sp)
  w.push_back(enc::i(Op::kAddi, t0, t0, static_cast<std::uint32_t>(-1)));
  const std::size_t br = w.size();
  w.push_back(enc::b(Op::kBne, t0, zero, static_cast<std::uint32_t>(4 * (static_cast<int>(loop) - static_cast<int>(br)))));
  w.push_back(enc::r(Op::kDivu, a2, a1, t1));                // a2 = a1 / 7 (DQ tokens)
  w.push_back(enc::u(Op::kLui, a1, 0x00020000u));            // a1 = 0x20000 ("hi\n")
  w.push_back(enc::i(Op::kAddi, a2, zero, 3));
  w.push_back(enc::i(Op::kAddi, a0, zero, 1));
  w.push_back(enc::i(Op::kAddi, a7, zero, 64));
  w.push_back(0x00000073u);                                  // ecall write(1, "hi\n", 3)
  w.push_back(enc::i(Op::kAddi, a0, zero, 0));
  w.push_back(enc::i(Op::kAddi, a7, zero, 93));
  w.push_back(0x00000073u);                                  // ecall exit(0)
  Guest g;
  g.name = name;
  // "hi\n" and 61 bytes of .bss at 0x20000
  g.image = progen::image_from_code(w, 0x10000, {format::Segment{0x20000, 64, format::kPfR | format::kPfW, {'h', 'i', '\n'}}});
  g.image.sections[".extra"] = {1, 2, 3};
  return g;
}

/// `make_loop_guest`'s loop between two writes of "hi\n" (fd 1): the output grows on both sides
/// of a checkpoint taken in the loop (about 30 steps per iteration).
inline Guest make_chatty_loop_guest(std::uint32_t iterations) {
  using ref::Op;
  namespace enc = ref::encode;
  enum : unsigned { zero = 0, t0 = 5, a0 = 10, a1 = 11, a2 = 12, a7 = 17 };
  std::vector<std::uint32_t> w;
  auto write_hi = [&] {
    w.push_back(enc::u(Op::kLui, a1, 0x00020000u));  // a1 = 0x20000 ("hi\n")
    w.push_back(enc::i(Op::kAddi, a2, zero, 3));
    w.push_back(enc::i(Op::kAddi, a0, zero, 1));
    w.push_back(enc::i(Op::kAddi, a7, zero, 64));
    w.push_back(0x00000073u);  // ecall write(1, "hi\n", 3)
  };
  write_hi();
  w.push_back(enc::u(Op::kLui, t0, (iterations >> 12) << 12));
  w.push_back(enc::i(Op::kAddi, t0, t0, iterations & 0xfff));
  const std::size_t loop = w.size();
  w.push_back(enc::i(Op::kAddi, t0, t0, static_cast<std::uint32_t>(-1)));  // loop: t0 -= 1
  const std::size_t br = w.size();
  w.push_back(enc::b(Op::kBne, t0, zero, static_cast<std::uint32_t>(4 * (static_cast<int>(loop) - static_cast<int>(br)))));
  write_hi();
  w.push_back(enc::i(Op::kAddi, a0, zero, 0));
  w.push_back(enc::i(Op::kAddi, a7, zero, 93));
  w.push_back(0x00000073u);  // ecall exit(0)
  Guest g;
  g.name = "chatty";
  g.image = progen::image_from_code(w, 0x10000, {format::Segment{0x20000, 64, format::kPfR | format::kPfW, {'h', 'i', '\n'}}});
  return g;
}

/// A guest that never ends: `addi a0, zero, 5; addi t0, zero, 1; jal zero, 0` at 0x10000 (the
/// jump, at 0x10008, jumps to itself).
inline Guest make_spin_guest() {
  using ref::Op;
  namespace enc = ref::encode;
  Guest g;
  g.name = "spin";
  g.image = progen::image_from_code({enc::i(Op::kAddi, 10, 0, 5), enc::i(Op::kAddi, 5, 0, 1), enc::j(Op::kJal, 0, 0)});
  return g;
}

/// A guest that never ends and whose loop is longer than one instruction: a spin-wait on a word
/// nothing writes, `lui a0, 0x20000; addi t1, zero, 3; 1: lw t0, 0(a0); beq t0, zero, 1b` (the
/// loop at 0x10008 and 0x1000c; the word at 0x20000 is 0).
inline Guest make_spin_wait_guest() {
  using ref::Op;
  namespace enc = ref::encode;
  enum : unsigned { zero = 0, t0 = 5, t1 = 6, a0 = 10 };
  Guest g;
  g.name = "spinwait";
  g.image = progen::image_from_code({enc::u(Op::kLui, a0, 0x00020000u), enc::i(Op::kAddi, t1, zero, 3),
                                     enc::i(Op::kLw, t0, a0, 0), enc::b(Op::kBeq, t0, zero, static_cast<std::uint32_t>(-4))},
                                    0x10000, {format::Segment{0x20000, 64, format::kPfR | format::kPfW, {}}});
  return g;
}

/// The reference trace t_1..t_N of a guest.
inline std::vector<std::uint32_t> reference_trace(const Guest& g) {
  ref::Machine m;
  m.load(g.image);
  std::vector<std::uint32_t> out;
  m.run(~0ull, [&](std::span<const std::uint32_t> t) { out.insert(out.end(), t.begin(), t.end()); });
  return out;
}

/// The tokens of a guest's first `instructions` instructions on the reference, run on even past
/// the point where a run would stop (a guest that loops forever yields them all): a chip's script.
/// `ends`, when given, receives the token count after each instruction (size `instructions`).
inline std::vector<std::uint32_t> reference_script(const Guest& g, std::size_t instructions,
                                                   std::vector<std::size_t>* ends = nullptr) {
  ref::Machine m;
  m.load(g.image);
  std::vector<std::uint32_t> script;
  for (std::size_t k = 0; k < instructions; ++k) {
    const auto t = m.step();
    script.insert(script.end(), t.begin(), t.end());
    if (ends) ends->push_back(script.size());
  }
  return script;
}

/// pc of the instruction that emits each token (index = step - 1).
inline std::vector<std::uint32_t> reference_pcs(const Guest& g) {
  ref::Machine m;
  m.load(g.image);
  std::vector<std::uint32_t> pcs;
  while (m.active()) {
    const std::uint32_t pc = m.pc();
    const auto t = m.step();
    pcs.insert(pcs.end(), t.size(), pc);
  }
  return pcs;
}

}  // namespace lockstep::engine::testing
