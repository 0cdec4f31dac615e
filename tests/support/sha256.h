// A compact SHA-256 (FIPS 180-4) for tests that check the fixed tables of docs/spec/vector.md
// section 3 against their published digests (tests/ref/vector_test.cpp for ref's tables,
// tests/chip_rv32/rv32_tables_test.cpp for the chip's). Header-only, test code only: neither
// ref/ nor chip/ includes it. Add `${PROJECT_SOURCE_DIR}/tests/support` to a test's include
// directories and `#include "sha256.h"`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lockstep::test_support {

/// SHA-256 of `msg` (any length) as 64 lowercase hex digits. Never throws except std::bad_alloc.
/// sha256({'a', 'b', 'c'}) = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
inline std::string sha256(const std::vector<std::uint8_t>& msg) {
  using u32 = std::uint32_t;
  static const u32 k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
      0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
      0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
      0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
      0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
      0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
      0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  u32 h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::vector<std::uint8_t> m = msg;
  const std::uint64_t bits = 8ull * msg.size();
  m.push_back(0x80);
  while (m.size() % 64 != 56) m.push_back(0);
  for (int i = 7; i >= 0; --i) m.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
  auto rotr = [](u32 x, int n) { return (x >> n) | (x << (32 - n)); };
  for (std::size_t off = 0; off < m.size(); off += 64) {
    u32 w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = u32{m[off + 4 * i]} << 24 | u32{m[off + 4 * i + 1]} << 16 | u32{m[off + 4 * i + 2]} << 8 | m[off + 4 * i + 3];
    }
    for (int i = 16; i < 64; ++i) {
      const u32 s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const u32 s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    u32 a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const u32 t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const u32 t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  char out[65];
  for (int i = 0; i < 8; ++i) std::snprintf(out + 8 * i, 9, "%08x", h[i]);
  return out;
}

/// vector.md section 3's table digest: SHA-256 (hex, as sha256) of the entries in [begin, end)
/// (any integers of at most 32 bits), each as int32 little-endian, in order.
template <class It>
std::string table_digest(It begin, It end) {
  std::vector<std::uint8_t> bytes;
  for (It it = begin; it != end; ++it) {
    const auto v = static_cast<std::uint32_t>(*it);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  return sha256(bytes);
}

}  // namespace lockstep::test_support
