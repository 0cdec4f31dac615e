// Shared by the random-program tests of the built RV32 chip (chip_random_test.cpp,
// chip_vector_ops_random_test.cpp, chip_vector_traps_test.cpp): runs generated guests on the chip
// and the reference in lock-step, a batch of streams per engine run, every step compared; helpers
// for the scalar programs (prologue, data). The vector ops' programs come from the fuzz campaign's
// generator and their cases (fuzz/ops).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
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

}  // namespace lockstep::engine::test
