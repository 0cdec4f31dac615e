// Guest image: the plain data a stream is reset from (docs/spec/chip-format.md, "Guest image").
// Deliberately independent of any executable format: format/ converts ELF files into this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lockstep::chip {

/// One loaded range of guest memory: `bytes` live at addresses [address, address + bytes.size()).
struct Segment {
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;
};

/// A guest program as data: memory segments, named sections and an entry address.
/// Addresses not covered by any segment read as 0. Where segments overlap, the later one in
/// `segments` wins.
struct GuestImage {
  std::vector<Segment> segments;
  std::map<std::string, std::vector<std::uint8_t>> sections;  ///< name -> bytes
  std::uint64_t entry = 0;

  /// Bytes of guest memory [address, address + length) (0 where no segment covers them).
  /// Cost: O(length + number of segments).
  std::vector<std::uint8_t> read(std::uint64_t address, std::uint64_t length) const;
};

}  // namespace lockstep::chip
