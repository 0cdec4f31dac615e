// The byte decoding shared by fuzz_lockstep_insn and fuzz_lockstep_chip (fuzz/README.md): a
// fuzzer input -> a few initial registers and a list of 32-bit instruction words.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "lockstep/ref/encoding.h"

namespace lockstep::fuzz {

/// Initial register values and instruction words decoded from a fuzzer input.
struct FuzzProgram {
  std::vector<std::pair<unsigned, std::uint32_t>> regs;  ///< (x1..x31, value), at most 8
  std::vector<std::uint32_t> words;                      ///< at most DecodeOptions::max_words
};

/// How decode_program reads its input.
struct DecodeOptions {
  std::size_t max_words = 256;
  std::array<std::uint32_t, 8> edges{};  ///< register values chosen with probability 1/2
};

/// Decodes `in`: up to 8 registers (count, then for each the register 1..31 and either an edge
/// value or any 32-bit value), then words while 4 bytes remain, each either raw or a row of
/// ref's encoding table (isa.md) with random operand bits, so that most words are legal.
inline FuzzProgram decode_program(FuzzedDataProvider& in, const DecodeOptions& opt) {
  FuzzProgram p;
  const unsigned nregs = in.ConsumeIntegralInRange<unsigned>(0, 8);
  for (unsigned i = 0; i < nregs; ++i) {
    const unsigned r = in.ConsumeIntegralInRange<unsigned>(1, 31);
    const std::uint32_t v = in.ConsumeBool() ? opt.edges[in.ConsumeIntegralInRange<std::size_t>(0, opt.edges.size() - 1)]
                                             : in.ConsumeIntegral<std::uint32_t>();
    p.regs.emplace_back(r, v);
  }
  const auto table = ref::encoding_table();
  while (in.remaining_bytes() >= 4 && p.words.size() < opt.max_words) {
    const bool from_table = in.ConsumeBool();
    std::uint32_t w = in.ConsumeIntegral<std::uint32_t>();
    if (from_table) {
      const ref::Encoding& row = table[in.ConsumeIntegralInRange<std::size_t>(0, table.size() - 1)];
      w = (w & ~row.mask) | row.match;
    }
    p.words.push_back(w);
  }
  return p;
}

}  // namespace lockstep::fuzz
