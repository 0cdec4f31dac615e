#include "lockstep/chip/guest_image.hpp"

#include <algorithm>

namespace lockstep::chip {

std::vector<std::uint8_t> GuestImage::read(std::uint64_t address, std::uint64_t length) const {
  std::vector<std::uint8_t> out(length, 0);
  const std::uint64_t end = address + length;  // callers keep ranges far below 2^64
  for (const Segment& seg : segments) {
    const std::uint64_t s0 = seg.address;
    const std::uint64_t s1 = seg.address + seg.bytes.size();
    const std::uint64_t lo = std::max(s0, address);
    const std::uint64_t hi = std::min(s1, end);
    if (lo >= hi) continue;
    std::copy(seg.bytes.begin() + static_cast<std::ptrdiff_t>(lo - s0),
              seg.bytes.begin() + static_cast<std::ptrdiff_t>(hi - s0),
              out.begin() + static_cast<std::ptrdiff_t>(lo - address));
  }
  return out;
}

}  // namespace lockstep::chip
