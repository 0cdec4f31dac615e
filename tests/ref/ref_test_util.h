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
// trace.md §4.0: the pc tokens of the instruction at word index w =
// (pc - 0x10000) / 4: PCH_k((w >> 8) & 0xFF), k = w >> 16, when `with_pch`
// (the run's first instruction, or w >> 8 changed), then PCL(w & 0xFF).
inline Tokens PC(u32 w, bool with_pch) {
  Tokens t;
  if (with_pch) t.push_back(token_id(static_cast<u32>(Kind::PCH0) + (w >> 16), (w >> 8) & 0xff));
  t.push_back(token_id(Kind::PCL, w & 0xff));
  return t;
}
/// The pc tokens of a run's first instruction at kCode (w = 0): PCH0(0x00), PCL(0x00).
inline Tokens PC0() { return PC(0, true); }
// trace.md §4.5: the tokens of `bytes` written to fd 1 (OUT) or fd 2 (ERR):
// per byte i, OIH(i >> 8) when i > 0 and i & 0xFF = 0, OI(i & 0xFF), the byte.
inline Tokens WRITE(Kind out, const std::vector<std::uint8_t>& bytes) {
  Tokens t;
  for (u32 i = 0; i < bytes.size(); ++i) {
    if (i > 0 && (i & 0xff) == 0) t.push_back(token_id(Kind::OIH, i >> 8));
    t.push_back(token_id(Kind::OI, i & 0xff));
    t.push_back(token_id(out, bytes[i]));
  }
  return t;
}

}  // namespace lockstep::ref::test
