// Guest images for the chip: format::GuestImage (read from an ELF file) to
// chip::GuestImage (plain data, no executable format).  The engine is the only
// place where the reference's and the chip's views of a guest meet.
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/chip/guest_image.hpp"
#include "lockstep/format/elf.h"

namespace lockstep::engine {

/// Converts an ELF guest image into the chip's plain-data image: one chip
/// segment per PT_LOAD segment at its vaddr, holding the file bytes followed by
/// zeros up to p_memsz (so .bss is explicit), in program-header order; the
/// named non-alloc sections and the entry address copied as they are.
chip::GuestImage to_chip_image(const format::GuestImage& image);

/// XXH3-64 of an ELF guest image's loadable content (entry, every segment's
/// vaddr/memsz/flags/bytes, every named section), as 16 hex digits.  Used to
/// recognise the same guest in checkpoints and replay cases.
std::string image_digest(const format::GuestImage& image);

}  // namespace lockstep::engine
