// ELF32 guest images (isa.md §3): reading through libelf, and a tiny writer
// for tests and program generators.
//
// Only the *file-level* checks of isa.md §3 are done here (class, data
// encoding, EI_VERSION, type, machine, header entry sizes, truncation,
// headers and any section or segment data outside the file, with the real
// counts of extended numbering, p_filesz > p_memsz, overlapping non-empty
// PT_LOAD segments, entry not inside the file-backed part of a PF_X segment,
// no non-empty PT_LOAD).  Checks against the machine's memory map (RAM
// bounds, entry alignment) are machine semantics and belong to the loaders
// of ref/ and chip/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/format/error.h"

namespace lockstep::format {

/// EF_RISCV_RVC in e_flags: the file may contain compressed (C extension) instructions.
inline constexpr std::uint32_t kEfRiscvRvc = 1;

/// EF_RISCV_FLOAT_ABI in e_flags: 0 soft float (ilp32), 2 single (ilp32f), 4 double (ilp32d), 6 quad.
inline constexpr std::uint32_t kEfRiscvFloatAbi = 6;

/// ELF program-header flag bits (p_flags).
inline constexpr std::uint32_t kPfX = 1, kPfW = 2, kPfR = 4;

struct GuestImage;

/// One PT_LOAD segment.
struct Segment {
  std::uint32_t vaddr = 0;          ///< p_vaddr: guest address of the first byte
  std::uint32_t memsz = 0;          ///< p_memsz: bytes occupied in memory (>= bytes.size())
  std::uint32_t flags = 0;          ///< p_flags: kPfR | kPfW | kPfX
  std::vector<std::uint8_t> bytes;  ///< the p_filesz bytes of file data; the rest is zero
  /// Index of its program header in the file (as `readelf -l` numbers them), set by parse_elf;
  /// empty for an image built in memory (write_elf would give it its index in `segments`).
  std::optional<std::uint32_t> phdr_index = std::nullopt;
};

/// "program header 2 (PT_LOAD)": how every message names a program header, by its index in the
/// file as `readelf -l` numbers them, and its p_type (PT_NOTE, PT_GNU_STACK, ..., or "type 0x...").
std::string program_header_label(std::uint64_t index, std::uint32_t p_type);

/// The label of `image.segments[k]` (program_header_label of its PT_LOAD header: phdr_index,
/// else k, the index write_elf gives it).
std::string segment_label(const GuestImage& image, std::size_t k);

/// One section header, as listed in the file (every section, for loaders
/// that validate section names, types and flags).
struct SectionHeader {
  std::string name;
  std::uint32_t type = 0;   ///< sh_type (SHT_PROGBITS = 1, SHT_NOBITS = 8, ...)
  std::uint32_t flags = 0;  ///< sh_flags (SHF_ALLOC = 2, ...)
  std::uint32_t size = 0;   ///< sh_size
};

/// A static ELF32 RISC-V executable as plain data.
struct GuestImage {
  std::uint32_t entry = 0;        ///< e_entry
  /// e_flags (RISC-V psABI: bit 0 EF_RISCV_RVC marks compressed instructions, which the machine
  /// does not have; bits 1-2 the float ABI). Informative: the machine ignores it.
  std::uint32_t e_flags = 0;
  std::vector<Segment> segments;  ///< PT_LOAD segments in program-header order
  /// Named sections without SHF_ALLOC and of type SHT_PROGBITS (e.g. the
  /// vector-unit memories of vector.md §2): name -> contents (the first one
  /// when two have the same name; section_headers shows duplicates).
  std::map<std::string, std::vector<std::uint8_t>> sections;
  /// .symtab: name -> st_value (global symbols win over local ones with the
  /// same name; unnamed symbols are skipped).
  std::map<std::string, std::uint32_t> symbols;
  /// Every section header except index 0, in file order (filled by
  /// parse_elf; ignored by write_elf).
  std::vector<SectionHeader> section_headers;
};

/// Parses and validates an ELF32 image held in memory (isa.md §3).  Empty
/// PT_LOADs (p_memsz 0) are dropped from `segments`.  Throws FormatError
/// with a one-line message starting "ELF: " naming the first problem found
/// (and the field).
GuestImage parse_elf(std::span<const std::uint8_t> file);

/// Reads `path` and parses it with parse_elf.  Throws FormatError when the
/// file cannot be read (message names the path) or is malformed.
GuestImage read_elf_file(const std::filesystem::path& path);

/// Layout choices of write_elf that do not change the image.
struct ElfWriteOptions {
  /// Use extended section numbering (ELF gABI, isa.md §3): e_shnum = 0 with the section count
  /// in section 0's sh_size, e_shstrndx = SHN_XINDEX with the name table index in section 0's
  /// sh_link, and e_phnum = PN_XNUM with the program header count in section 0's sh_info.
  /// Real files do this only past 0xff00 sections; tests and fuzz seeds use it on small images.
  bool extended_numbering = false;
};

/// Serialises `image` as a static little-endian ELF32 RISC-V executable
/// (ET_EXEC, EM_RISCV, e_flags 0): one PT_LOAD per segment (p_align 4096,
/// file offsets congruent to vaddr mod 4096 so qemu-riscv32 can map them),
/// one allocated section per segment (".text" for PF_X ones, ".data"
/// otherwise, so objdump can disassemble), the non-alloc sections, and a
/// .symtab of absolute global symbols.  Performs no validation beyond what
/// is needed to write the file (throws std::invalid_argument when a segment
/// has more bytes than memsz).  `options` picks the header layout.
std::vector<std::uint8_t> write_elf(const GuestImage& image, const ElfWriteOptions& options = {});

/// write_elf to a file, made executable (u+x, g+x, o+x).  Throws FormatError
/// when the file cannot be written.
void write_elf_file(const std::filesystem::path& path, const GuestImage& image);

}  // namespace lockstep::format
