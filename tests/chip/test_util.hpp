// Shared helpers for the chip tests: recorded seeds and random guest images.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "lockstep/chip/guest_image.hpp"

namespace lockstep::chip::test {

/// Seed for a test: $LOCKSTEP_SEED if set, else `fallback`. Always printed, so a failure replays.
inline std::uint64_t seed_for(const char* test, std::uint64_t fallback) {
  std::uint64_t s = fallback;
  if (const char* e = std::getenv("LOCKSTEP_SEED")) s = std::strtoull(e, nullptr, 0);
  std::printf("[seed] %s: LOCKSTEP_SEED=%llu\n", test, static_cast<unsigned long long>(s));
  return s;
}

/// Guest image for the accumulator: A bytes at a_address, B in section `sec`, entry's low byte = R.
inline GuestImage accumulator_image(std::mt19937_64& rng, std::uint32_t n, std::uint64_t a_address,
                                    const std::string& sec, std::vector<std::uint8_t>* a_out,
                                    std::vector<std::uint8_t>* b_out, std::uint8_t* r_out) {
  GuestImage img;
  std::vector<std::uint8_t> a(n), b(n);
  for (auto& x : a) x = static_cast<std::uint8_t>(rng());
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  // Some numbers with long carry chains.
  if (rng() % 2) for (auto& x : a) x = 0xFF;
  img.segments.push_back({a_address - 3, {9, 9, 9}});
  img.segments.push_back({a_address, a});
  img.sections[sec] = b;
  img.entry = 0x80000000ull | (rng() & 0xFFFF);
  *a_out = a;
  *b_out = b;
  *r_out = static_cast<std::uint8_t>(img.entry & 0xFF);
  return img;
}

}  // namespace lockstep::chip::test
