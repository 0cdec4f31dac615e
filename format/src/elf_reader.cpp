// ELF32 reading through libelf with the file-level checks of isa.md §3.
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "lockstep/format/elf.h"

namespace lockstep::format {
namespace {

constexpr std::uint16_t kEmRiscv = 243;

[[noreturn]] void fail(const std::string& what) { throw FormatError("ELF: " + what); }

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

// A range [off, off + len) lies inside a file of `size` bytes (no wrap: 64-bit sums).
bool inside(std::uint64_t off, std::uint64_t len, std::uint64_t size) {
  return off <= size && len <= size - off;
}

}  // namespace

GuestImage parse_elf(std::span<const std::uint8_t> file) {
  const std::uint64_t size = file.size();
  if (size < EI_NIDENT || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) {
    fail(size < SELFMAG ? "truncated file (" + std::to_string(size) + " bytes, no ELF magic)"
                        : "not an ELF file (bad magic)");
  }
  if (file[EI_CLASS] != ELFCLASS32) {
    fail("wrong class " + std::to_string(file[EI_CLASS]) +
         (file[EI_CLASS] == ELFCLASS64 ? " (ELFCLASS64)" : "") + ", expected ELFCLASS32");
  }
  if (file[EI_DATA] != ELFDATA2LSB) {
    fail("wrong data encoding " + std::to_string(file[EI_DATA]) +
         (file[EI_DATA] == ELFDATA2MSB ? " (big-endian)" : "") +
         ", expected ELFDATA2LSB (little-endian)");
  }
  if (size < sizeof(Elf32_Ehdr)) {
    fail("truncated file (" + std::to_string(size) + " bytes, the ELF header needs " +
         std::to_string(sizeof(Elf32_Ehdr)) + ")");
  }
  Elf32_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);  // host is little-endian (checked in tokens.cpp)
  if (eh.e_type != ET_EXEC) fail("wrong type " + std::to_string(eh.e_type) + ", expected ET_EXEC (2)");
  if (eh.e_machine != kEmRiscv) {
    fail("wrong machine " + std::to_string(eh.e_machine) + ", expected EM_RISCV (243)");
  }
  if (eh.e_phnum > 0 && eh.e_phentsize != sizeof(Elf32_Phdr)) {
    fail("program header entry size " + std::to_string(eh.e_phentsize) + ", expected 32");
  }
  if (!inside(eh.e_phoff, std::uint64_t{eh.e_phnum} * sizeof(Elf32_Phdr), size)) {
    fail("program headers outside the file (offset " + hex(eh.e_phoff) + ", " +
         std::to_string(eh.e_phnum) + " entries, file size " + std::to_string(size) + ")");
  }
  if (eh.e_shnum > 0 && eh.e_shentsize != sizeof(Elf32_Shdr)) {
    fail("section header entry size " + std::to_string(eh.e_shentsize) + ", expected 40");
  }
  if (!inside(eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf32_Shdr), size)) {
    fail("section headers outside the file (offset " + hex(eh.e_shoff) + ", " +
         std::to_string(eh.e_shnum) + " entries, file size " + std::to_string(size) + ")");
  }
  if (eh.e_shnum > 0 && eh.e_shstrndx != SHN_UNDEF && eh.e_shstrndx >= eh.e_shnum) {
    fail("section name table index " + std::to_string(eh.e_shstrndx) + " out of range");
  }
  // Every section's data must be inside the file, too (checked before libelf sees it).
  const auto section_header = [&](unsigned i) {
    Elf32_Shdr sh;
    std::memcpy(&sh, file.data() + eh.e_shoff + std::uint64_t{i} * sizeof sh, sizeof sh);
    return sh;
  };
  // The section's name when the name table is readable (for messages only).
  const auto section_label = [&](unsigned i, const Elf32_Shdr& sh) {
    std::string label = "section " + std::to_string(i);
    if (eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= eh.e_shnum) return label;
    const Elf32_Shdr names = section_header(eh.e_shstrndx);
    if (!inside(names.sh_offset, names.sh_size, size) || sh.sh_name >= names.sh_size) return label;
    const char* p = reinterpret_cast<const char*>(file.data()) + names.sh_offset + sh.sh_name;
    const std::size_t n = strnlen(p, names.sh_size - sh.sh_name);
    return n > 0 && n < names.sh_size - sh.sh_name ? label + " (" + std::string(p, n) + ")" : label;
  };
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const Elf32_Shdr sh = section_header(i);
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && !inside(sh.sh_offset, sh.sh_size, size)) {
      fail(section_label(i, sh) + " data outside the file (offset " + hex(sh.sh_offset) + ", size " +
           hex(sh.sh_size) + ", file size " + std::to_string(size) + ")");
    }
  }

  if (elf_version(EV_CURRENT) == EV_NONE) fail("libelf initialisation failed");
  // libelf wants a mutable buffer; it only reads it with ELF_C_READ.
  std::vector<char> copy(file.begin(), file.end());
  std::unique_ptr<Elf, ElfCloser> elf(elf_memory(copy.data(), copy.size()));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) fail(std::string("libelf: ") + elf_errmsg(-1));

  GuestImage image;
  image.entry = eh.e_entry;
  Elf32_Phdr* ph = eh.e_phnum ? elf32_getphdr(elf.get()) : nullptr;
  if (eh.e_phnum && !ph) fail(std::string("libelf: program headers: ") + elf_errmsg(-1));
  struct Range {
    std::uint64_t lo, hi;
    unsigned index;
  };
  std::vector<Range> ranges;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    const Elf32_Phdr& p = ph[i];
    if (p.p_type != PT_LOAD) continue;
    if (p.p_filesz > p.p_memsz) {
      fail("segment " + std::to_string(i) + ": p_filesz " + hex(p.p_filesz) + " > p_memsz " +
           hex(p.p_memsz));
    }
    if (!inside(p.p_offset, p.p_filesz, size)) {
      fail("segment " + std::to_string(i) + " data outside the file (offset " + hex(p.p_offset) +
           ", size " + hex(p.p_filesz) + ", file size " + std::to_string(size) + ")");
    }
    const Range r{p.p_vaddr, std::uint64_t{p.p_vaddr} + p.p_memsz, i};
    for (const Range& o : ranges) {
      if (r.lo < o.hi && o.lo < r.hi && r.lo < r.hi && o.lo < o.hi) {
        fail("segment " + std::to_string(i) + " [" + hex(r.lo) + ", " + hex(r.hi) +
             ") overlaps segment " + std::to_string(o.index) + " [" + hex(o.lo) + ", " +
             hex(o.hi) + ")");
      }
    }
    ranges.push_back(r);
    Segment s;
    s.vaddr = p.p_vaddr;
    s.memsz = p.p_memsz;
    s.flags = p.p_flags;
    s.bytes.assign(file.begin() + p.p_offset, file.begin() + p.p_offset + p.p_filesz);
    image.segments.push_back(std::move(s));
  }
  if (image.segments.empty()) fail("no PT_LOAD segment");
  const bool entry_ok = std::any_of(image.segments.begin(), image.segments.end(), [&](const Segment& s) {
    return (s.flags & kPfX) && image.entry >= s.vaddr &&
           std::uint64_t{image.entry} < std::uint64_t{s.vaddr} + s.memsz;
  });
  if (!entry_ok) fail("entry point " + hex(image.entry) + " is not inside a PT_LOAD segment with PF_X");

  // Sections: non-alloc PROGBITS by name, and the symbol table.
  std::size_t shstrndx = 0;
  if (eh.e_shnum > 0 && elf_getshdrstrndx(elf.get(), &shstrndx) != 0) {
    fail(std::string("libelf: section name table: ") + elf_errmsg(-1));
  }
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    Elf32_Shdr* sh = elf32_getshdr(scn);
    if (!sh) fail(std::string("libelf: section header: ") + elf_errmsg(-1));
    const char* name = elf_strptr(elf.get(), shstrndx, sh->sh_name);
    if (!name) fail("section name at offset " + std::to_string(sh->sh_name) + " outside the name table");
    image.section_headers.push_back({name, sh->sh_type, sh->sh_flags, sh->sh_size});
    if (sh->sh_type == SHT_PROGBITS && !(sh->sh_flags & SHF_ALLOC) && name[0] != '\0') {
      const auto* begin = file.data() + sh->sh_offset;
      image.sections.emplace(name, std::vector<std::uint8_t>(begin, begin + sh->sh_size));
    } else if (sh->sh_type == SHT_SYMTAB) {
      if (sh->sh_entsize != sizeof(Elf32_Sym)) fail("symbol table entry size " + std::to_string(sh->sh_entsize));
      if (sh->sh_link >= eh.e_shnum) fail("symbol table string table index out of range");
      const std::size_t n = sh->sh_size / sizeof(Elf32_Sym);
      for (std::size_t k = 1; k < n; ++k) {
        Elf32_Sym sym;
        std::memcpy(&sym, file.data() + sh->sh_offset + k * sizeof sym, sizeof sym);
        if (sym.st_name == 0) continue;
        const char* sname = elf_strptr(elf.get(), sh->sh_link, sym.st_name);
        if (!sname) fail("symbol name at offset " + std::to_string(sym.st_name) + " outside the string table");
        const bool global = ELF32_ST_BIND(sym.st_info) != STB_LOCAL;
        auto [it, fresh] = image.symbols.emplace(sname, sym.st_value);
        if (!fresh && global) it->second = sym.st_value;
      }
    }
  }
  return image;
}

GuestImage read_elf_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError("ELF: cannot open " + path.string());
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw FormatError("ELF: cannot read " + path.string());
  try {
    return parse_elf(bytes);
  } catch (const FormatError& e) {
    throw FormatError(std::string(e.what()) + " (" + path.filename().string() + ")");
  }
}

}  // namespace lockstep::format
