// A tiny ELF32 writer: static RISC-V executables for tests and generators.
#include <elf.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "lockstep/format/elf.h"

namespace lockstep::format {
namespace {

template <class T>
void put(std::vector<std::uint8_t>& out, std::size_t at, const T& v) {
  if (out.size() < at + sizeof v) out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

void append(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

struct StrTab {
  std::vector<std::uint8_t> bytes{0};
  std::uint32_t add(const std::string& s) {
    const auto at = static_cast<std::uint32_t>(bytes.size());
    append(bytes, s.c_str(), s.size() + 1);
    return at;
  }
};

}  // namespace

std::vector<std::uint8_t> write_elf(const GuestImage& image, const ElfWriteOptions& options) {
  const std::size_t nseg = image.segments.size();
  std::vector<std::uint8_t> out(sizeof(Elf32_Ehdr) + nseg * sizeof(Elf32_Phdr), 0);

  // Segment data, each at an offset congruent to its vaddr modulo the page size.
  std::vector<Elf32_Phdr> ph(nseg);
  for (std::size_t i = 0; i < nseg; ++i) {
    const Segment& s = image.segments[i];
    if (s.bytes.size() > s.memsz) throw std::invalid_argument("write_elf: segment bytes exceed memsz");
    std::size_t off = out.size();
    const std::size_t want = s.vaddr % 4096;
    off += (want + 4096 - off % 4096) % 4096;
    out.resize(off, 0);
    append(out, s.bytes.data(), s.bytes.size());
    ph[i] = Elf32_Phdr{PT_LOAD, static_cast<Elf32_Off>(off), s.vaddr, s.vaddr,
                       static_cast<Elf32_Word>(s.bytes.size()), s.memsz, s.flags, 4096};
  }

  StrTab shstr, str;
  std::vector<Elf32_Shdr> sh(1, Elf32_Shdr{});
  for (std::size_t i = 0; i < nseg; ++i) {
    const Segment& s = image.segments[i];
    Elf32_Shdr h{};
    const bool x = s.flags & kPfX;
    h.sh_name = shstr.add(x ? ".text" : ".data");
    h.sh_type = SHT_PROGBITS;
    h.sh_flags = SHF_ALLOC | (x ? SHF_EXECINSTR : 0) | ((s.flags & kPfW) ? SHF_WRITE : 0);
    h.sh_addr = s.vaddr;
    h.sh_offset = ph[i].p_offset;
    h.sh_size = static_cast<Elf32_Word>(s.bytes.size());
    h.sh_addralign = 4;
    sh.push_back(h);
  }
  for (const auto& [name, bytes] : image.sections) {
    Elf32_Shdr h{};
    h.sh_name = shstr.add(name);
    h.sh_type = SHT_PROGBITS;
    h.sh_offset = static_cast<Elf32_Off>(out.size());
    h.sh_size = static_cast<Elf32_Word>(bytes.size());
    h.sh_addralign = 1;
    append(out, bytes.data(), bytes.size());
    sh.push_back(h);
  }
  // .symtab (absolute global symbols) and its .strtab.
  std::vector<Elf32_Sym> syms(1, Elf32_Sym{});
  for (const auto& [name, value] : image.symbols) {
    Elf32_Sym s{};
    s.st_name = str.add(name);
    s.st_value = value;
    s.st_info = ELF32_ST_INFO(STB_GLOBAL, STT_NOTYPE);
    s.st_shndx = SHN_ABS;
    syms.push_back(s);
  }
  while (out.size() % 4) out.push_back(0);
  const auto symtab_index = static_cast<Elf32_Word>(sh.size());
  Elf32_Shdr symh{};
  symh.sh_name = shstr.add(".symtab");
  symh.sh_type = SHT_SYMTAB;
  symh.sh_offset = static_cast<Elf32_Off>(out.size());
  symh.sh_size = static_cast<Elf32_Word>(syms.size() * sizeof(Elf32_Sym));
  symh.sh_link = symtab_index + 1;
  symh.sh_info = 1;  // index of the first non-local symbol
  symh.sh_addralign = 4;
  symh.sh_entsize = sizeof(Elf32_Sym);
  append(out, syms.data(), syms.size() * sizeof(Elf32_Sym));
  sh.push_back(symh);
  Elf32_Shdr strh{};
  strh.sh_name = shstr.add(".strtab");
  strh.sh_type = SHT_STRTAB;
  strh.sh_offset = static_cast<Elf32_Off>(out.size());
  strh.sh_size = static_cast<Elf32_Word>(str.bytes.size());
  strh.sh_addralign = 1;
  append(out, str.bytes.data(), str.bytes.size());
  sh.push_back(strh);
  Elf32_Shdr shstrh{};
  shstrh.sh_name = shstr.add(".shstrtab");
  shstrh.sh_type = SHT_STRTAB;
  shstrh.sh_offset = static_cast<Elf32_Off>(out.size());
  shstrh.sh_size = static_cast<Elf32_Word>(shstr.bytes.size());
  shstrh.sh_addralign = 1;
  append(out, shstr.bytes.data(), shstr.bytes.size());
  const auto shstrndx = static_cast<Elf32_Half>(sh.size());
  sh.push_back(shstrh);

  while (out.size() % 4) out.push_back(0);
  const auto shoff = static_cast<Elf32_Off>(out.size());
  append(out, sh.data(), sh.size() * sizeof(Elf32_Shdr));

  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_RISCV;
  eh.e_version = EV_CURRENT;
  eh.e_entry = image.entry;
  eh.e_phoff = nseg ? sizeof(Elf32_Ehdr) : 0;
  eh.e_shoff = shoff;
  eh.e_flags = image.e_flags;
  eh.e_ehsize = sizeof(Elf32_Ehdr);
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = static_cast<Elf32_Half>(nseg);
  eh.e_shentsize = sizeof(Elf32_Shdr);
  eh.e_shnum = static_cast<Elf32_Half>(sh.size());
  eh.e_shstrndx = shstrndx;
  if (options.extended_numbering) {
    // Section 0 carries the real counts (gABI "Extended Section Numbering").
    sh[0].sh_size = eh.e_shnum;
    sh[0].sh_link = eh.e_shstrndx;
    sh[0].sh_info = eh.e_phnum;
    put(out, shoff, sh[0]);
    eh.e_shnum = 0;
    eh.e_shstrndx = SHN_XINDEX;
    eh.e_phnum = PN_XNUM;
  }
  put(out, 0, eh);
  for (std::size_t i = 0; i < nseg; ++i) put(out, sizeof(Elf32_Ehdr) + i * sizeof(Elf32_Phdr), ph[i]);
  return out;
}

void write_elf_file(const std::filesystem::path& path, const GuestImage& image) {
  const auto bytes = write_elf(image);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw FormatError("ELF: cannot write " + path.string());
  // An executable: qemu-user refuses to load a file without execute permission.
  std::error_code ec;
  std::filesystem::permissions(path,
                               std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec |
                                   std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add, ec);
}

}  // namespace lockstep::format
