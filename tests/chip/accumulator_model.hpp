// Plain C++ definition of the accumulator machine (chip/include/lockstep/chip/machines/
// accumulator.hpp), written from its specification, independent of the compiled weights.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace lockstep::chip::test {

struct AccumulatorModel {
  // Token ids: BOS = 0, POS j = 1 + j, SUM0 s = 1 + N + s, SUM1 s = 1 + N + 256 + s,
  // END r = 1 + N + 512 + r.
  std::uint32_t n;
  std::vector<std::uint8_t> A, B;
  std::uint8_t R = 0;
  std::uint32_t P = 0;
  std::uint32_t C = 0;

  AccumulatorModel(std::uint32_t digits, std::vector<std::uint8_t> a, std::vector<std::uint8_t> b, std::uint8_t r)
      : n(digits), A(std::move(a)), B(std::move(b)), R(r) {}

  std::uint32_t bos() const { return 0; }
  std::uint32_t pos(std::uint32_t j) const { return 1 + j; }
  std::uint32_t sum(std::uint32_t c, std::uint32_t s) const { return 1 + n + 256 * c + s; }
  std::uint32_t end(std::uint32_t r) const { return 1 + n + 512 + r; }

  /// Consumes `t` and returns the next token.
  std::uint32_t step(std::uint32_t t) {
    if (t == bos()) {
      C = 0;
      return pos(0);
    }
    if (t < 1 + n) {  // POS j
      P = t - 1;
      const std::uint32_t total = A[P] + B[P] + C;
      return sum(total >= 256 ? 1 : 0, total % 256);
    }
    if (t < 1 + n + 512) {  // SUMc s
      const std::uint32_t v = t - (1 + n);
      A[P] = static_cast<std::uint8_t>(v % 256);
      C = v / 256;
      return P == n - 1 ? end((R + 1u) % 256u) : pos(P + 1);
    }
    R = static_cast<std::uint8_t>(t - (1 + n + 512));  // END r
    C = 0;
    return pos(0);
  }

  /// The trace: tokens[0] = BOS, tokens[i+1] = step(tokens[i]); length steps + 1.
  std::vector<std::uint32_t> trace(std::size_t steps) {
    std::vector<std::uint32_t> t{bos()};
    t.reserve(steps + 1);
    for (std::size_t i = 0; i < steps; ++i) t.push_back(step(t.back()));
    return t;
  }
};

}  // namespace lockstep::chip::test
