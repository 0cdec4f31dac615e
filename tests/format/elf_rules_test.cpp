// format/: the loader rules of isa.md §3 that outside bug reports probed (issue 28): extended
// section numbering, every section and segment bounds-checked against the file whatever count
// it came from, EI_VERSION, e_phentsize, empty PT_LOADs and an entry in the zero-filled tail.
// The malformed files are made here from write_elf's output by the helpers below.
#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lockstep/format/elf.h"

namespace lf = lockstep::format;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Sections of sample(): 0 null, 1 .text, 2 .data, 3 .comment, 4 .symtab, 5 .strtab, 6 .shstrtab.
constexpr unsigned kComment = 3, kSymtab = 4, kShstrtab = 6, kSections = 7;

lf::GuestImage sample() {
  lf::GuestImage img;
  img.entry = 0x10000;
  lf::Segment text{0x10000, 8, lf::kPfR | lf::kPfX, {0x13, 0, 0, 0, 0x73, 0, 0, 0}};
  lf::Segment data{0x11000, 0x100, lf::kPfR | lf::kPfW, {1, 2, 3, 4}};
  img.segments = {text, data};
  img.sections[".comment"] = {'l', 's', 0};
  img.symbols["_start"] = 0x10000;
  return img;
}

Bytes extended(const lf::GuestImage& img = sample()) { return lf::write_elf(img, {.extended_numbering = true}); }

Elf32_Ehdr& ehdr(Bytes& b) { return *reinterpret_cast<Elf32_Ehdr*>(b.data()); }
Elf32_Shdr& shdr(Bytes& b, unsigned i) {
  return *reinterpret_cast<Elf32_Shdr*>(b.data() + ehdr(b).e_shoff + i * sizeof(Elf32_Shdr));
}
Elf32_Phdr& phdr(Bytes& b, unsigned i) {
  return *reinterpret_cast<Elf32_Phdr*>(b.data() + ehdr(b).e_phoff + i * sizeof(Elf32_Phdr));
}

// The layout of the outside report: extended section numbering only (e_shnum = 0, e_shstrndx =
// SHN_XINDEX), the program header count in e_phnum as usual.
Bytes extended_sections_only() {
  Bytes b = extended();
  ehdr(b).e_phnum = 2;
  shdr(b, 0).sh_info = 0;
  return b;
}

// parse_elf must throw one one-line FormatError starting "ELF: " and containing `needle`.
void expect_rejected(const Bytes& b, const std::string& needle) {
  try {
    lf::parse_elf(b);
    ADD_FAILURE() << "accepted; expected an error mentioning '" << needle << "'";
  } catch (const lf::FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_EQ(msg.rfind("ELF: ", 0), 0u) << msg;
  }
}

}  // namespace

TEST(ElfRules, ExtendedNumberingIsWrittenAsTheGabiSays) {
  Bytes b = extended();
  EXPECT_EQ(ehdr(b).e_shnum, 0);
  EXPECT_EQ(ehdr(b).e_shstrndx, SHN_XINDEX);
  EXPECT_EQ(ehdr(b).e_phnum, PN_XNUM);
  EXPECT_EQ(shdr(b, 0).sh_size, kSections);
  EXPECT_EQ(shdr(b, 0).sh_link, kShstrtab);
  EXPECT_EQ(shdr(b, 0).sh_info, 2u);
}

TEST(ElfRules, ExtendedNumberingLoadsLikeTheOrdinaryLayout) {
  const lf::GuestImage plain = lf::parse_elf(lf::write_elf(sample()));
  const lf::GuestImage ext = lf::parse_elf(extended());
  EXPECT_EQ(ext.entry, 0x10000u);
  ASSERT_EQ(ext.segments.size(), 2u);
  EXPECT_EQ(ext.segments[1].vaddr, 0x11000u);
  EXPECT_EQ(ext.segments[1].memsz, 0x100u);
  EXPECT_EQ(ext.segments[1].bytes, (Bytes{1, 2, 3, 4}));
  EXPECT_EQ(ext.sections, plain.sections);
  EXPECT_EQ(ext.sections.at(".comment"), (Bytes{'l', 's', 0}));
  EXPECT_EQ(ext.symbols, plain.symbols);
  EXPECT_EQ(ext.symbols.at("_start"), 0x10000u);
  ASSERT_EQ(ext.section_headers.size(), kSections - 1);
  EXPECT_EQ(ext.section_headers[kComment - 1].name, ".comment");
  const lf::GuestImage sec = lf::parse_elf(extended_sections_only());
  EXPECT_EQ(sec.segments.size(), 2u);
  EXPECT_EQ(sec.sections, plain.sections);
  EXPECT_EQ(sec.symbols, plain.symbols);
}

// The outside report: e_shnum = 0, the count in section 0, and a non-alloc PROGBITS section far
// outside the file (SIGSEGV before: only the header's e_shnum = 0 sections were checked).
TEST(ElfRules, ExtendedNumberingSectionFarOutsideTheFile) {
  for (Bytes b : {extended_sections_only(), extended()}) {
    shdr(b, kComment).sh_offset = 0x7ff00000;
    expect_rejected(b, "section 3 (.comment) data outside the file (sh_offset 0x7ff00000");
  }
}

// The same report's exact layout: e_shstrndx = 0 and section 0 made the name table (SHT_STRTAB
// over .shstrtab's bytes, sh_size = the count), so libelf resolves names through section 0 and
// the reader before this fix copied the far section (SIGSEGV).
TEST(ElfRules, OutsideReportSectionZeroAsNameTable) {
  Bytes b = extended_sections_only();
  ehdr(b).e_shstrndx = SHN_UNDEF;
  Elf32_Shdr& s0 = shdr(b, 0);
  s0.sh_type = SHT_STRTAB;
  s0.sh_offset = shdr(b, kShstrtab).sh_offset;  // "\0.text\0...": offset 1 is ".text"
  s0.sh_link = 0;
  for (unsigned i = 1; i < kSections; ++i) shdr(b, i).sh_name = i == kComment ? 1 : 0;
  shdr(b, kComment).sh_offset = 0x7ff00000;
  expect_rejected(b, "section 3 data outside the file (sh_offset 0x7ff00000");
  shdr(b, kComment).sh_offset = shdr(b, kShstrtab).sh_offset;  // in the file: no name table
  expect_rejected(b, "section 1 but no section name table (e_shstrndx 0)");
}

// In-file offset, size running past the end (read past the buffer and accepted before).
TEST(ElfRules, ExtendedNumberingSectionRunningPastTheEnd) {
  for (Bytes b : {extended_sections_only(), extended()}) {
    shdr(b, kComment).sh_offset = static_cast<Elf32_Off>(b.size() - 2);
    shdr(b, kComment).sh_size = 16;
    expect_rejected(b, "section 3 (.comment) data outside the file");
  }
  for (Bytes s : {extended_sections_only(), extended()}) {
    shdr(s, kSymtab).sh_size = 0x1000;  // symbols read from past the end
    expect_rejected(s, "section 4 (.symtab) data outside the file");
  }
}

TEST(ElfRules, ExtendedNumberingCountOutsideTheFile) {
  Bytes b = extended();
  shdr(b, 0).sh_size = 0xffffffffu;  // 2^32 - 1 headers of 40 bytes: 64-bit product
  expect_rejected(b, "section headers outside the file");
  Bytes p = extended();
  shdr(p, 0).sh_info = 0x08000000;  // 2^27 program headers of 32 bytes = 2^32 bytes
  expect_rejected(p, "program headers outside the file");
  Bytes n = extended();
  shdr(n, 0).sh_link = 99;  // name table index past the real count
  expect_rejected(n, "section name table index 99 out of range (7 sections)");
}

TEST(ElfRules, ExtendedFieldsWithoutSectionTable) {
  Bytes b = lf::write_elf(sample());
  ehdr(b).e_shoff = 0;
  ehdr(b).e_shnum = 0;
  ehdr(b).e_shstrndx = 0;
  ehdr(b).e_phnum = PN_XNUM;
  expect_rejected(b, "e_phnum PN_XNUM (0xffff) but no section header table");
  Bytes c = lf::write_elf(sample());
  ehdr(c).e_shoff = 0;
  expect_rejected(c, "e_shnum 7 but no section header table");
}

TEST(ElfRules, SectionNameTableMustBeAStringTable) {
  Bytes b = lf::write_elf(sample());
  shdr(b, kShstrtab).sh_type = SHT_PROGBITS;
  expect_rejected(b, "the section name table (e_shstrndx), is not SHT_STRTAB");
}

TEST(ElfRules, EiVersionMustBeOne) {
  for (std::uint8_t v : {0, 2, 255}) {
    Bytes b = lf::write_elf(sample());
    b[EI_VERSION] = v;
    expect_rejected(b, "wrong EI_VERSION (e_ident[6]) " + std::to_string(v) + ", expected 1");
  }
}

TEST(ElfRules, PhentsizeMustBe32) {
  for (std::uint16_t v : {0, 31, 56}) {
    Bytes b = lf::write_elf(sample());
    ehdr(b).e_phentsize = v;
    expect_rejected(b, "e_phentsize " + std::to_string(v) + ", expected 32");
  }
  Bytes s = lf::write_elf(sample());
  ehdr(s).e_shentsize = 64;
  expect_rejected(s, "e_shentsize 64, expected 40");
}

TEST(ElfRules, EverySegmentIsInsideTheFileWhateverItsType) {
  Bytes b = lf::write_elf(sample());
  phdr(b, 1).p_type = PT_NOTE;
  phdr(b, 1).p_offset = 0xfffffff0u;  // offset + size wraps in 32 bits
  phdr(b, 1).p_filesz = 0x20;
  expect_rejected(b, "program header 1 (PT_NOTE) data outside the file (p_offset 0xfffffff0, p_filesz 0x20");
}

TEST(ElfRules, EmptyLoadSegmentsAreIgnored) {
  lf::GuestImage img = sample();
  // Empty PT_LOADs anywhere (address 0 and the end of the address space are outside RAM and
  // would overlap each other's start if they counted).
  img.segments.insert(img.segments.begin(), lf::Segment{0, 0, lf::kPfR, {}});
  img.segments.push_back(lf::Segment{0xfffff000u, 0, lf::kPfR | lf::kPfX, {}});
  img.segments.push_back(lf::Segment{0x10000, 0, lf::kPfR, {}});  // at text's start
  const lf::GuestImage back = lf::parse_elf(lf::write_elf(img));
  ASSERT_EQ(back.segments.size(), 2u);
  EXPECT_EQ(back.segments[0].vaddr, 0x10000u);
  EXPECT_EQ(back.segments[0].memsz, 8u);
  EXPECT_EQ(back.segments[1].vaddr, 0x11000u);
}

TEST(ElfRules, OnlyEmptyLoadSegmentsIsNoLoadSegment) {
  Bytes b = lf::write_elf(sample());
  for (unsigned i = 0; i < 2; ++i) phdr(b, i).p_filesz = phdr(b, i).p_memsz = 0;
  expect_rejected(b, "no PT_LOAD segment (none with p_memsz > 0)");
}

TEST(ElfRules, EntryInTheZeroFilledTailIsRejected) {
  lf::GuestImage img = sample();
  img.segments[0].memsz = 0x100;  // text: 8 file bytes, then zeros up to 0x10100
  img.entry = 0x10008;
  expect_rejected(lf::write_elf(img), "entry point 0x10008 lies in the zero-filled tail of program header 0 (PT_LOAD) (past p_filesz 0x8)");
  img.entry = 0x10004;  // the last file-backed word: accepted
  EXPECT_EQ(lf::parse_elf(lf::write_elf(img)).entry, 0x10004u);
}
