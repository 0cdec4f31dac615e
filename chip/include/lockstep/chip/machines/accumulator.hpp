// The first compiled machine: a multi-byte accumulator with a memory, built only from the
// compiler primitives. It repeatedly adds a little-endian number B into a number A, one byte
// per token pair, with the carry travelling across tokens, and emits every sum byte.
//
// Vocabulary (kind payload): BOS | POS j (j < N) | SUM0 s | SUM1 s | END r  (s, r bytes).
// SUMc s: sum byte s with carry-out c. State: A[N], B[N] (bytes), R (byte), P (position),
// C (carry). Reset from a guest image: A = image bytes [a_address, +N), B = section b_section
// bytes [0, N), R = low byte of the entry address, P = C = 0.
// Consuming a token (writes happen as tokens are consumed), then emitting the next:
//   BOS      : C <- 0                    ; emit POS 0
//   END r    : R <- r ; C <- 0           ; emit POS 0
//   POS j    : P <- j                    ; t = A[j] + B[j] + C ; emit SUM[t >= 256] (t mod 256)
//   SUMc s   : A[P] <- s ; C <- c        ; emit P = N-1 ? END (R + 1) mod 256 : POS P+1
// So a free-running trace from BOS is: POS 0, SUM, POS 1, SUM, ..., POS N-1, SUM, END, POS 0...
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/compiler/primitives.hpp"

namespace lockstep::chip::machines {

struct AccumulatorMachine {
  std::uint32_t digits = 16;  ///< N: bytes per number
  compiler::TokenSpace tokens;
  std::uint32_t kind_bos = 0, kind_pos = 0, kind_sum0 = 0, kind_sum1 = 0, kind_end = 0;
  std::uint64_t a_address = 0x1000;
  std::string b_section = ".inc";
  Chip chip;
};

/// Compiles the accumulator for numbers of `digits` bytes (1..64). Three layers:
///  0: registers P, C, R (memory, written from the token) ; MLP: one-hot of P, [P = N-1], R+1
///  1: memories A and B (write A[P] from a SUM token, read A[P], B[P]) ; MLP: add with carry,
///     next kind one-hot, next payload scalar (selects)
///  2: MLP: one-hot of the next payload ; unembed: next kind x payload with margin 2.
AccumulatorMachine compile_accumulator(std::uint32_t digits = 16);

}  // namespace lockstep::chip::machines
