// Shared by the random-program tests of the built RV32 chip (chip_random_test.cpp,
// chip_vld_random_test.cpp, chip_vector_traps_test.cpp, chip_vfn_random_test.cpp): runs generated
// guests on the chip and the reference in lock-step, a batch of streams per engine run, every step
// compared; helpers to generate them (prologue, bodies, data, VR spans) and check how they end.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/engine/check.h"
#include "lockstep/engine/engine.h"
#include "lockstep/format/elf.h"
#include "lockstep/progen/progen.h"

namespace lockstep::engine::test {

/// Runs `count` guests, `batch` at a time (make(first, n) builds guests first..first+n-1), on the
/// built chip's CPU executor and the reference in `mode`. Every stream must have 0 mismatches
/// (a failure prints `what(index)` (which names the seed), the stream's JSON and the listing of
/// `listing_words` words from 0x10000); `check(index, stream)` adds the caller's checks of each
/// stream. Stops after the first batch with a failure. Returns the steps compared.
/// Precondition: have_built_chip() (callers skip without it).
inline std::uint64_t run_chip_programs(unsigned count, unsigned batch, Mode mode,
                                       const std::function<std::vector<Guest>(unsigned, unsigned)>& make,
                                       const std::function<std::string(unsigned)>& what, unsigned listing_words,
                                       const std::function<void(unsigned, const StreamResult&)>& check) {
  const LoadedChip chip = load_chip_or_built("");
  std::uint64_t steps = 0;
  for (unsigned first = 0; first < count; first += batch) {
    const std::vector<Guest> guests = make(first, std::min(batch, count - first));
    auto backend = make_backend("cpu", chip.chip);
    Options opt;
    opt.mode = mode;
    opt.classify_window = 64;
    Engine engine(*backend, guests, opt);
    const RunResult r = engine.run();
    steps += r.steps;
    for (std::size_t s = 0; s < r.streams.size(); ++s) {
      const unsigned index = first + static_cast<unsigned>(s);
      const StreamResult& st = r.streams[s];
      EXPECT_EQ(st.mismatches, 0u) << what(index) << " (" << to_string(mode) << "): " << st.to_json().dump() << "\n"
                                   << progen::listing(guests[s].image, 0x10000, 0x10000 + 4 * listing_words);
      check(index, st);
    }
    if (::testing::Test::HasFailure()) break;
  }
  return steps;
}

/// The common start of a random program: x1..x30 <- random edge values (progen::Random::operand),
/// x31 <- the program's 256-byte scratch area, 0x40000 + 0x100 (index mod 64). Returns that address.
inline std::uint32_t emit_register_prologue(progen::Random& rng, unsigned index, std::vector<std::uint32_t>& code) {
  for (unsigned r = 1; r <= 30; ++r) progen::emit_li(code, r, rng.operand());
  const std::uint32_t scratch = 0x40000 + 0x100 * (index % 64);
  progen::emit_li(code, 31, scratch);
  return scratch;
}

/// A read-write data segment of `bytes` random bytes (rng.next() each) at `vaddr`.
inline format::Segment random_data_segment(progen::Random& rng, std::uint32_t vaddr, std::uint32_t bytes) {
  format::Segment data;
  data.vaddr = vaddr;
  data.memsz = bytes;
  data.flags = format::kPfR | format::kPfW;
  for (std::uint32_t i = 0; i < bytes; ++i) data.bytes.push_back(static_cast<std::uint8_t>(rng.next()));
  return data;
}

/// run_chip_programs over generated programs: batch k (programs 32 k ..) uses the seed
/// `seed + batch_size * k`, and program i is generate(that seed * 1000003 + i, i); failures name
/// the batch's seed and the program's index. Returns the steps compared.
inline std::uint64_t run_seeded_chip_programs(unsigned count, unsigned batch, std::uint64_t seed, Mode mode,
                                              const std::function<Guest(std::uint64_t, unsigned)>& generate,
                                              const std::function<void(unsigned, const StreamResult&)>& check) {
  auto seed_of = [&](unsigned index) { return seed + index / batch * batch; };
  return run_chip_programs(
      count, batch, mode,
      [&](unsigned first, unsigned n) {
        std::vector<Guest> guests;
        for (unsigned i = first; i < first + n; ++i) guests.push_back(generate(seed_of(i) * 1000003ull + i, i));
        return guests;
      },
      [&](unsigned i) { return "seed " + std::to_string(seed_of(i)) + " program " + std::to_string(i); }, 300, check);
}

/// Vector-register spans (vector.md sections 2 and 6; VR has 1,024 words): [x, x + n) and
/// [y, y + n) share a word and are not identical (a code-20 conflict).
inline bool spans_conflict(std::uint32_t x, std::uint32_t y, std::uint32_t n) {
  const std::uint32_t d = x > y ? x - y : y - x;
  return d >= 1 && d < n;
}

/// [x, x + nx) and [y, y + ny) share a word.
inline bool spans_share(std::uint32_t x, std::uint32_t nx, std::uint32_t y, std::uint32_t ny) {
  return x < y + ny && y < x + nx;
}

/// A start (0..1024 - n) for a span of n words (1..1024) of VR: 5 times in 8, where `written` (any
/// type with `start` and `n`, the destinations so far) is not empty, one that shares words with one
/// of them (its first word a third of those times), so that an op reads earlier results; otherwise
/// the end of VR (the span ends at word 1023) one time in 5, word 0 one in 8 of the rest, or any.
template <class Span>
std::uint32_t draw_vr_start(progen::Random& rng, std::uint32_t n, const std::vector<Span>& written) {
  const std::int64_t hi = 1024 - static_cast<std::int64_t>(n);
  if (!written.empty() && rng.below(8) < 5) {
    const Span& w = written[rng.below(static_cast<std::uint32_t>(written.size()))];
    const std::int64_t lo = static_cast<std::int64_t>(w.start) - n + 1, top = w.start + w.n - 1;
    const std::int64_t s = rng.chance(3) ? w.start : lo + rng.below(static_cast<std::uint32_t>(top - lo + 1));
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(s, 0, hi));
  }
  if (rng.chance(5)) return static_cast<std::uint32_t>(hi);
  if (rng.chance(8)) return 0;
  return rng.below(static_cast<std::uint32_t>(hi) + 1);
}

/// A random program's initial VR words (sign-extended) and which of them no op has written yet, so
/// that a test can classify the source words an op reads while they are still the initial ones.
struct InitialVr {
  std::vector<std::int64_t> value = std::vector<std::int64_t>(1024, 0);
  std::vector<bool> initial = std::vector<bool>(1024, true);
  /// Marks words [start, start + n) (inside VR) as written.
  void written(std::uint32_t start, std::uint32_t n) {
    for (std::uint32_t i = start; i < start + n; ++i) initial[i] = false;
  }
};

/// Appends a random scalar body of 2..12 instructions (progen::random_body) whose loads and stores
/// use the 256-byte scratch area at x31 (emit_register_prologue).
inline void emit_scratch_body(progen::Random& rng, std::vector<std::uint32_t>& code) {
  progen::BodyOptions opt;
  opt.length = 2 + rng.below(11);
  opt.base_reg = 31;
  opt.scratch_bytes = 256;
  const std::vector<std::uint32_t> body = progen::random_body(rng, opt);
  code.insert(code.end(), body.begin(), body.end());
}

/// The outcome checks of a random program that ends with a vector instruction drawn to trap
/// (`drawn`) or exits: it ended with "exit" or "trap", it trapped exactly when drawn, a trap's code
/// is `expected` (0: not checked here); counts the trap in `traps` and its code in `codes`.
/// Failures name program `i` and `seed`.
inline void check_trap_outcome(unsigned i, const StreamResult& st, bool drawn, unsigned expected, std::uint64_t seed,
                               unsigned& traps, std::map<unsigned, unsigned>& codes) {
  EXPECT_TRUE(st.end == "exit" || st.end == "trap") << "program " << i << " (run seed " << seed << "): ended " << st.end;
  if (st.end != "exit" && st.end != "trap") return;
  EXPECT_EQ(st.end == "trap", drawn) << "program " << i << " (run seed " << seed << "): ended " << st.end << " (code "
                                     << st.trap_code << ")";
  if (st.end != "trap") return;
  ++traps;
  ++codes[st.trap_code];
  if (drawn && expected != 0) {
    EXPECT_EQ(st.trap_code, expected) << "program " << i << " (run seed " << seed << ")";
  }
}

/// The end of a random program: `li a7, 93; ecall` (exit(a0)) after `code`, a 256-byte scratch
/// segment of random bytes at `scratch` (random_data_segment), and VR's initial words `vreg`
/// (int32 little-endian) as its `.lockstep.vreg` section. Returns the guest named `name`.
inline Guest vector_guest(progen::Random& rng, std::vector<std::uint32_t> code, std::uint32_t scratch, std::string name,
                          std::vector<std::uint8_t> vreg) {
  progen::emit_li(code, 17, 93);
  code.push_back(0x00000073u);
  const format::Segment scr = random_data_segment(rng, scratch, 256);
  Guest g;
  g.name = std::move(name);
  g.image = progen::image_from_code(code, 0x10000, {scr});
  g.image.sections[".lockstep.vreg"] = std::move(vreg);
  return g;
}

/// Two different registers of x1..x30 for a vector op's operands (x31 holds the scratch area),
/// drawn in this order: rs1, then rs2 until it differs.
inline std::pair<unsigned, unsigned> operand_regs(progen::Random& rng) {
  const unsigned rs1 = 1 + rng.below(30);
  unsigned rs2 = 1 + rng.below(30);
  while (rs2 == rs1) rs2 = 1 + rng.below(30);
  return {rs1, rs2};
}

/// `li rs1, a | a << 16; li rs2, a | n << 16` and a VEW ADD (vector.md section 4.5) of words [a, a
/// + n) with themselves, in place: a round that changes VR between the ops a test is about.
inline void emit_vew_add_in_place(std::vector<std::uint32_t>& code, unsigned rs1, unsigned rs2, std::uint32_t a,
                                  std::uint32_t n) {
  progen::emit_li(code, rs1, a | (a << 16));
  progen::emit_li(code, rs2, a | (n << 16));
  code.push_back((rs2 << 20) | (rs1 << 15) | (4u << 12) | 0x2Bu);
}

/// A custom-1 word (vector.md section 4.0): f7 (bits 31..25), rs2, rs1, f3, rd, opcode 0x2B.
inline std::uint32_t vector_word(unsigned f7, unsigned rs2, unsigned rs1, unsigned f3, unsigned rd) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x2Bu;
}

/// `li rs1, a | src << 16; li rs2, n << 16` and a VQ (vector.md section 4.3) with TARGET `target`
/// (0 ACT: a = b0; 1 K, 2 V: a = the cache row, n = 32): a round that writes the memories VMAT and
/// VMATR read.
inline void emit_vq(std::vector<std::uint32_t>& code, unsigned rs1, unsigned rs2, unsigned target, std::uint32_t a,
                    std::uint32_t src, std::uint32_t n) {
  progen::emit_li(code, rs1, a | (src << 16));
  progen::emit_li(code, rs2, n << 16);
  code.push_back(vector_word(target, rs2, rs1, 2, 0));
}

/// What each generated program drew, by index (filled by the generator before its batch runs):
/// whether its last vector op was built to trap, and the code it must raise (the lowest of the
/// conditions that hold).
struct DrawnTraps {
  std::vector<bool> traps;
  std::vector<unsigned> expected_code;
  /// Records program `index`: `trap` and its code (0 when it does not trap).
  void set(unsigned index, bool trap, unsigned code) {
    if (traps.size() <= index) {
      traps.resize(index + 1);
      expected_code.resize(index + 1);
    }
    traps[index] = trap;
    expected_code[index] = code;
  }
};

/// The outcome of run_trap_programs(): steps compared, programs that trapped, and the codes
/// raised as "code:programs ..." (e.g. "16:20 17:21").
struct TrapRun {
  std::uint64_t steps = 0;
  unsigned traps = 0;
  std::string codes;
};

/// run_seeded_chip_programs over the programs of a random vector-op test: each must end with
/// "exit", or with "trap" exactly when `drawn` says so and with its code (check_trap_outcome);
/// with `progress`, a line every two batches. Unless a test has already failed, expects that
/// some programs trap and some do not, and that every code of `codes` was raised. Failures name
/// `seed`.
inline TrapRun run_trap_programs(unsigned count, unsigned batch, std::uint64_t seed, Mode mode, bool progress,
                                 const std::function<Guest(std::uint64_t, unsigned)>& generate, const DrawnTraps& drawn,
                                 std::initializer_list<unsigned> codes) {
  TrapRun run;
  std::map<unsigned, unsigned> raised;
  run.steps = run_seeded_chip_programs(count, batch, seed, mode, generate, [&](unsigned i, const StreamResult& st) {
    const bool trap = i < drawn.traps.size() && drawn.traps[i];
    check_trap_outcome(i, st, trap, trap ? drawn.expected_code[i] : 0, seed, run.traps, raised);
    if (progress && ((i + 1) % (2 * batch) == 0 || i + 1 == count))
      std::cout << "[ chip     ] " << to_string(mode) << ": programs 0.." << i << " compared (seed " << seed << ")" << std::endl;
  });
  for (const auto& [c, k] : raised) run.codes += (run.codes.empty() ? "" : " ") + std::to_string(c) + ":" + std::to_string(k);
  if (::testing::Test::HasFailure()) return run;
  EXPECT_GT(run.traps, 0u) << "seed " << seed;
  EXPECT_LT(run.traps, count) << "seed " << seed;
  for (const unsigned c : codes) EXPECT_GT(raised[c], 0u) << "no program raised " << c << ", seed " << seed;
  return run;
}

/// Expects every coverage class (name, count) of a random test to have been generated.
inline void expect_generated(std::initializer_list<std::pair<const char*, unsigned>> classes, std::uint64_t seed) {
  for (const auto& [name, c] : classes) EXPECT_GT(c, 0u) << "not generated: " << name << ", seed " << seed;
}

}  // namespace lockstep::engine::test
