#include "lockstep/engine/guest.h"

#include "lockstep/engine/digest.h"

namespace lockstep::engine {

chip::GuestImage to_chip_image(const format::GuestImage& image) {
  chip::GuestImage out;
  out.entry = image.entry;
  for (const format::Segment& s : image.segments) {
    chip::Segment seg;
    seg.address = s.vaddr;
    seg.bytes = s.bytes;
    if (seg.bytes.size() < s.memsz) seg.bytes.resize(s.memsz, 0);  // .bss explicit
    out.segments.push_back(std::move(seg));
  }
  out.sections = image.sections;
  return out;
}

std::string image_digest(const format::GuestImage& image) {
  std::vector<std::uint8_t> bytes;
  auto put32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  put32(image.entry);
  for (const format::Segment& s : image.segments) {
    put32(s.vaddr);
    put32(s.memsz);
    put32(s.flags);
    put32(static_cast<std::uint32_t>(s.bytes.size()));
    bytes.insert(bytes.end(), s.bytes.begin(), s.bytes.end());
  }
  for (const auto& [name, data] : image.sections) {
    put32(static_cast<std::uint32_t>(name.size()));
    bytes.insert(bytes.end(), name.begin(), name.end());
    put32(static_cast<std::uint32_t>(data.size()));
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
  return hex64(xxh3(bytes));
}

}  // namespace lockstep::engine
