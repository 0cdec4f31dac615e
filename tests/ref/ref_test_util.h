// Helpers for ref/ tests: tiny guest programs from instruction words, and
// token sequences spelled like trace.md §3's notation.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "lockstep/format/tokens.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/machine.h"

namespace lockstep::ref::test {

using u32 = std::uint32_t;
using format::Kind;
using format::token_id;
using Tokens = std::vector<u32>;

inline constexpr u32 kCode = 0x10000;  // code base and entry
inline constexpr u32 kData = 0x20000;  // a 4 KiB RW data segment
inline constexpr u32 kEbreak = 0x00100073u, kEcall = 0x00000073u;

/// A machine loaded with `code` at kCode and a zeroed 4 KiB data segment at kData.
inline Machine machine_with(const std::vector<u32>& code, std::vector<std::uint8_t> data = {}) {
  format::Segment seg;
  seg.vaddr = kData;
  seg.memsz = 4096;
  seg.bytes = std::move(data);
  Machine m;
  m.load(progen::image_from_code(code, kCode, {seg}));
  return m;
}

/// Runs one instruction with the given registers set first; returns its tokens.
inline Tokens exec1(Machine& m, u32 word, std::initializer_list<std::pair<unsigned, u32>> regs = {}) {
  m = machine_with({word, kEbreak});
  for (auto [r, v] : regs) m.set_reg(r, v);
  auto s = m.step();
  return {s.begin(), s.end()};
}

// trace.md §3 notation.
inline Tokens cat(std::initializer_list<Tokens> parts) {
  Tokens t;
  for (const auto& p : parts) t.insert(t.end(), p.begin(), p.end());
  return t;
}
inline Tokens bytes4(Kind k0, u32 v) {
  const u32 k = static_cast<u32>(k0);
  return {token_id(k, v & 0xff), token_id(k + 1, (v >> 8) & 0xff), token_id(k + 2, (v >> 16) & 0xff),
          token_id(k + 3, v >> 24)};
}
inline Tokens W(u32 v) { return bytes4(Kind::W0, v); }
inline Tokens A(u32 v) { return bytes4(Kind::A0, v); }
inline Tokens tok(Kind k, u32 p) { return {token_id(k, p)}; }
inline Tokens NOP() { return tok(Kind::NOP, 0); }
inline Tokens TRAP(u32 code) { return tok(Kind::TRAP, code); }

}  // namespace lockstep::ref::test
