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
#include "lockstep/format/file.h"

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

std::string program_header_label(std::uint64_t index, std::uint32_t p_type) {
  const char* name = nullptr;
  switch (p_type) {
    case PT_NULL: name = "PT_NULL"; break;
    case PT_LOAD: name = "PT_LOAD"; break;
    case PT_DYNAMIC: name = "PT_DYNAMIC"; break;
    case PT_INTERP: name = "PT_INTERP"; break;
    case PT_NOTE: name = "PT_NOTE"; break;
    case PT_SHLIB: name = "PT_SHLIB"; break;
    case PT_PHDR: name = "PT_PHDR"; break;
    case PT_TLS: name = "PT_TLS"; break;
    case 0x6474e550: name = "PT_GNU_EH_FRAME"; break;
    case 0x6474e551: name = "PT_GNU_STACK"; break;
    case 0x6474e552: name = "PT_GNU_RELRO"; break;
    case 0x70000003: name = "PT_RISCV_ATTRIBUTES"; break;
    default: break;
  }
  return "program header " + std::to_string(index) + " (" + (name ? std::string(name) : "type " + hex(p_type)) + ")";
}

std::string segment_label(const GuestImage& image, std::size_t k) {
  return program_header_label(image.segments.at(k).phdr_index.value_or(static_cast<std::uint32_t>(k)), PT_LOAD);
}

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
  if (file[EI_VERSION] != EV_CURRENT) {
    fail("wrong EI_VERSION (e_ident[6]) " + std::to_string(file[EI_VERSION]) + ", expected 1 (EV_CURRENT)");
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

  // The real counts (isa.md §3, extended numbering): with a section header table, e_shnum = 0
  // means the count is section 0's sh_size, e_shstrndx = SHN_XINDEX means the name table index
  // is section 0's sh_link, and e_phnum = PN_XNUM means the program header count is section 0's
  // sh_info.  All sizes below are 64-bit sums and products of 32-bit fields: nothing wraps.
  std::uint64_t shnum = eh.e_shnum, shstrndx = eh.e_shstrndx, phnum = eh.e_phnum;
  if (eh.e_shoff != 0) {
    if (eh.e_shentsize != sizeof(Elf32_Shdr)) {
      fail("section header entry size e_shentsize " + std::to_string(eh.e_shentsize) + ", expected 40");
    }
    if (!inside(eh.e_shoff, sizeof(Elf32_Shdr), size)) {
      fail("section headers outside the file (e_shoff " + hex(eh.e_shoff) + ", file size " +
           std::to_string(size) + ")");
    }
    Elf32_Shdr sh0;
    std::memcpy(&sh0, file.data() + eh.e_shoff, sizeof sh0);
    if (eh.e_shnum == 0) shnum = sh0.sh_size;
    if (eh.e_shstrndx == SHN_XINDEX) shstrndx = sh0.sh_link;
    if (eh.e_phnum == PN_XNUM) phnum = sh0.sh_info;
  } else {
    if (eh.e_shnum != 0) fail("e_shnum " + std::to_string(eh.e_shnum) + " but no section header table (e_shoff 0)");
    if (eh.e_shstrndx != SHN_UNDEF) {
      fail("e_shstrndx " + std::to_string(eh.e_shstrndx) + " but no section header table (e_shoff 0)");
    }
    if (eh.e_phnum == PN_XNUM) fail("e_phnum PN_XNUM (0xffff) but no section header table (e_shoff 0)");
  }
  if (phnum == 0) fail("no PT_LOAD segment (no program headers)");
  if (eh.e_phentsize != sizeof(Elf32_Phdr)) {
    fail("program header entry size e_phentsize " + std::to_string(eh.e_phentsize) + ", expected 32");
  }
  if (eh.e_phoff < sizeof(Elf32_Ehdr) || !inside(eh.e_phoff, phnum * sizeof(Elf32_Phdr), size)) {
    fail("program headers outside the file (e_phoff " + hex(eh.e_phoff) + ", " + std::to_string(phnum) +
         " entries, file size " + std::to_string(size) + ")");
  }
  if (shnum > 0 && (eh.e_shoff < sizeof(Elf32_Ehdr) || !inside(eh.e_shoff, shnum * sizeof(Elf32_Shdr), size))) {
    fail("section headers outside the file (e_shoff " + hex(eh.e_shoff) + ", " + std::to_string(shnum) +
         " entries" + (eh.e_shnum == 0 ? " from section 0's sh_size" : "") + ", file size " +
         std::to_string(size) + ")");
  }
  if (shstrndx != SHN_UNDEF && shstrndx >= shnum) {
    fail("section name table index " + std::to_string(shstrndx) + " out of range (" + std::to_string(shnum) +
         " sections)");
  }
  const auto section_header = [&](std::uint64_t i) {
    Elf32_Shdr sh;
    std::memcpy(&sh, file.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  // The section's name when the name table is readable (for messages only).
  const auto section_label = [&](std::uint64_t i, const Elf32_Shdr& sh) {
    std::string label = "section " + std::to_string(i);
    if (shstrndx == SHN_UNDEF || shstrndx >= shnum) return label;
    const Elf32_Shdr names = section_header(shstrndx);
    if (!inside(names.sh_offset, names.sh_size, size) || sh.sh_name >= names.sh_size) return label;
    const char* p = reinterpret_cast<const char*>(file.data()) + names.sh_offset + sh.sh_name;
    const std::size_t n = strnlen(p, names.sh_size - sh.sh_name);
    return n > 0 && n < names.sh_size - sh.sh_name ? label + " (" + std::string(p, n) + ")" : label;
  };
  // Every section's data must be inside the file (checked on the raw headers before libelf
  // sees the file, and again on what libelf hands back).
  const auto check_section = [&](std::uint64_t i, const Elf32_Shdr& sh) {
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && !inside(sh.sh_offset, sh.sh_size, size)) {
      fail(section_label(i, sh) + " data outside the file (sh_offset " + hex(sh.sh_offset) + ", sh_size " +
           hex(sh.sh_size) + ", file size " + std::to_string(size) + ")");
    }
  };
  for (std::uint64_t i = 1; i < shnum; ++i) check_section(i, section_header(i));
  if (shstrndx != SHN_UNDEF && section_header(shstrndx).sh_type != SHT_STRTAB) {
    fail(section_label(shstrndx, section_header(shstrndx)) + ", the section name table (e_shstrndx), is not SHT_STRTAB");
  }
  // Every program header's file range must be inside the file, whatever its type.
  const auto check_segment = [&](std::uint64_t i, const Elf32_Phdr& p) {
    if (!inside(p.p_offset, p.p_filesz, size)) {
      fail(program_header_label(i, p.p_type) + " data outside the file (p_offset " + hex(p.p_offset) +
           ", p_filesz " + hex(p.p_filesz) + ", file size " + std::to_string(size) + ")");
    }
  };
  for (std::uint64_t i = 0; i < phnum; ++i) {
    Elf32_Phdr p;
    std::memcpy(&p, file.data() + eh.e_phoff + i * sizeof p, sizeof p);
    check_segment(i, p);
  }

  if (elf_version(EV_CURRENT) == EV_NONE) fail("libelf initialisation failed");
  // libelf wants a mutable buffer; it only reads it with ELF_C_READ.
  std::vector<char> copy(file.begin(), file.end());
  std::unique_ptr<Elf, ElfCloser> elf(elf_memory(copy.data(), copy.size()));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) fail(std::string("libelf: ") + elf_errmsg(-1));
  // libelf must see the counts checked above (it reads the same extended-numbering fields).
  std::size_t lib_shnum = 0, lib_phnum = 0, lib_shstrndx = 0;
  if (elf_getshdrnum(elf.get(), &lib_shnum) != 0) fail(std::string("libelf: section count: ") + elf_errmsg(-1));
  if (elf_getphdrnum(elf.get(), &lib_phnum) != 0) fail(std::string("libelf: program header count: ") + elf_errmsg(-1));
  if (lib_shnum != shnum || lib_phnum != phnum) {
    fail("libelf counts " + std::to_string(lib_shnum) + " sections and " + std::to_string(lib_phnum) +
         " program headers, the header " + std::to_string(shnum) + " and " + std::to_string(phnum));
  }
  if (shnum > 0) {
    if (elf_getshdrstrndx(elf.get(), &lib_shstrndx) != 0) {
      fail(std::string("libelf: section name table: ") + elf_errmsg(-1));
    }
    if (lib_shstrndx != shstrndx) {
      fail("libelf reads section name table index " + std::to_string(lib_shstrndx) + ", the header " +
           std::to_string(shstrndx));
    }
  }

  GuestImage image;
  image.entry = eh.e_entry;
  image.e_flags = eh.e_flags;
  Elf32_Phdr* ph = elf32_getphdr(elf.get());
  if (!ph) fail(std::string("libelf: program headers: ") + elf_errmsg(-1));
  struct Range {
    std::uint64_t lo, hi;
    std::uint64_t index;
  };
  std::vector<Range> ranges;
  std::vector<std::uint64_t> filesz;  // per image segment: its file-backed bytes
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const Elf32_Phdr& p = ph[i];
    check_segment(i, p);
    if (p.p_type != PT_LOAD) continue;
    if (p.p_filesz > p.p_memsz) {
      fail(program_header_label(i, p.p_type) + ": p_filesz " + hex(p.p_filesz) + " > p_memsz " +
           hex(p.p_memsz));
    }
    if (p.p_memsz == 0) continue;  // an empty PT_LOAD loads nothing (isa.md §3)
    const Range r{p.p_vaddr, std::uint64_t{p.p_vaddr} + p.p_memsz, i};
    for (const Range& o : ranges) {
      if (r.lo < o.hi && o.lo < r.hi) {
        fail(program_header_label(i, PT_LOAD) + " [" + hex(r.lo) + ", " + hex(r.hi) + ") overlaps " +
             program_header_label(o.index, PT_LOAD) + " [" + hex(o.lo) + ", " +
             hex(o.hi) + ")");
      }
    }
    ranges.push_back(r);
    Segment s;
    s.vaddr = p.p_vaddr;
    s.memsz = p.p_memsz;
    s.flags = p.p_flags;
    s.phdr_index = static_cast<std::uint32_t>(i);
    s.bytes.assign(file.begin() + p.p_offset, file.begin() + p.p_offset + p.p_filesz);
    image.segments.push_back(std::move(s));
  }
  if (image.segments.empty()) fail("no PT_LOAD segment (none with p_memsz > 0)");
  const auto holds_entry = [&](const Segment& s, std::uint64_t len) {
    return (s.flags & kPfX) && image.entry >= s.vaddr && std::uint64_t{image.entry} < std::uint64_t{s.vaddr} + len;
  };
  const bool entry_ok = std::any_of(image.segments.begin(), image.segments.end(),
                                    [&](const Segment& s) { return holds_entry(s, s.memsz); });
  if (!entry_ok) fail("entry point " + hex(image.entry) + " is not inside a PT_LOAD segment with PF_X");
  for (std::size_t k = 0; k < image.segments.size(); ++k) {
    const Segment& s = image.segments[k];
    if (holds_entry(s, s.memsz) && !holds_entry(s, s.bytes.size())) {
      fail("entry point " + hex(image.entry) + " lies in the zero-filled tail of " +
           program_header_label(ranges[k].index, PT_LOAD) + " (past p_filesz " + hex(s.bytes.size()) + ")");
    }
  }

  // Sections: non-alloc PROGBITS by name, and the symbol table.  Each header libelf hands back
  // is checked against the file again before its data is read.
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    const std::size_t index = elf_ndxscn(scn);
    if (index == SHN_UNDEF || index >= shnum) fail("libelf: section index " + std::to_string(index) + " out of range");
    Elf32_Shdr* sh = elf32_getshdr(scn);
    if (!sh) fail(std::string("libelf: section header: ") + elf_errmsg(-1));
    check_section(index, *sh);
    if (shstrndx == SHN_UNDEF) fail("section " + std::to_string(index) + " but no section name table (e_shstrndx 0)");
    const char* name = elf_strptr(elf.get(), shstrndx, sh->sh_name);
    if (!name) {
      fail("section " + std::to_string(index) + ": sh_name " + std::to_string(sh->sh_name) +
           " outside the name table");
    }
    image.section_headers.push_back({name, sh->sh_type, sh->sh_flags, sh->sh_size});
    if (sh->sh_type == SHT_PROGBITS && !(sh->sh_flags & SHF_ALLOC) && name[0] != '\0') {
      const auto* begin = file.data() + sh->sh_offset;
      image.sections.emplace(name, std::vector<std::uint8_t>(begin, begin + sh->sh_size));
    } else if (sh->sh_type == SHT_SYMTAB) {
      if (sh->sh_entsize != sizeof(Elf32_Sym)) {
        fail(section_label(index, *sh) + ": symbol table sh_entsize " + std::to_string(sh->sh_entsize) +
             ", expected 16");
      }
      if (sh->sh_link == SHN_UNDEF || sh->sh_link >= shnum) {
        fail(section_label(index, *sh) + ": symbol table sh_link " + std::to_string(sh->sh_link) +
             " out of range (" + std::to_string(shnum) + " sections)");
      }
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
  const std::vector<std::uint8_t> bytes = read_input_file(path, "ELF", std::uint64_t{256} << 20);
  try {
    return parse_elf(bytes);
  } catch (const FormatError& e) {
    // the path as given: a bare file name reads like a C "(null)" for /dev/null
    throw FormatError(std::string(e.what()) + " (in " + path.string() + ")");
  }
}

}  // namespace lockstep::format
