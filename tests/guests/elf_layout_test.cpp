// Layout of every built guest ELF against isa.md sections 2-3: ELF32 RISC-V
// executable, entry at RAM_BASE, every PT_LOAD inside RAM and disjoint, and
// the initial stack (just below RAM_END) inside a loaded segment so that
// qemu-riscv32 maps it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <string>
#include <vector>

#include "run_process.h"

namespace lockstep::guests_test {
namespace {

constexpr uint32_t kRamBase = 0x00010000u, kRamEnd = 0x00110000u;

uint32_t le32(const std::string& s, size_t off) {
  uint32_t v = 0;
  std::memcpy(&v, s.data() + off, 4);
  return v;
}
uint16_t le16(const std::string& s, size_t off) {
  uint16_t v = 0;
  std::memcpy(&v, s.data() + off, 2);
  return v;
}

std::vector<std::string> guest_names() {
  std::vector<std::string> names;
  if (DIR* d = opendir(LOCKSTEP_GUEST_DIR)) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.substr(n.size() - 4) == ".elf") names.push_back(n.substr(0, n.size() - 4));
    }
    closedir(d);
  }
  return names;
}

TEST(GuestElfLayout, EveryGuestFitsTheMemoryMap) {
  std::vector<std::string> names = guest_names();
  ASSERT_GE(names.size(), 8u) << "guests not built in " << LOCKSTEP_GUEST_DIR;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    std::string f = read_file(guest_elf(name));
    ASSERT_GE(f.size(), 52u);
    EXPECT_EQ(f.substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ(f[4], 1);                    // ELFCLASS32
    EXPECT_EQ(f[5], 1);                    // little-endian
    EXPECT_EQ(le16(f, 16), 2);             // ET_EXEC
    EXPECT_EQ(le16(f, 18), 243);           // EM_RISCV
    EXPECT_EQ(le32(f, 24), kRamBase);      // e_entry
    uint32_t phoff = le32(f, 28);
    uint16_t phentsize = le16(f, 42), phnum = le16(f, 44);
    std::vector<std::pair<uint32_t, uint32_t>> loads;
    std::vector<std::pair<uint32_t, uint32_t>> load_pages;  // [first, last] 4 KiB page
    std::vector<uint32_t> load_flags;
    for (uint16_t i = 0; i < phnum; i++) {
      size_t p = phoff + size_t{i} * phentsize;
      ASSERT_LE(p + 32, f.size());
      if (le32(f, p) != 1) continue;  // PT_LOAD
      uint32_t vaddr = le32(f, p + 8), filesz = le32(f, p + 16), memsz = le32(f, p + 20);
      EXPECT_LE(filesz, memsz);
      EXPECT_GE(vaddr, kRamBase);
      EXPECT_LE(uint64_t{vaddr} + memsz, kRamEnd);
      for (auto [b, e] : loads) EXPECT_TRUE(vaddr >= e || vaddr + memsz <= b) << "overlap";
      // qemu-riscv32 maps whole pages: segments of different permissions never share one.
      const uint32_t flags = le32(f, p + 24), first = vaddr >> 12, last = (vaddr + memsz - 1) >> 12;
      for (size_t k = 0; k < load_pages.size(); k++) {
        if (load_flags[k] == flags || memsz == 0) continue;
        EXPECT_TRUE(first > load_pages[k].second || last < load_pages[k].first)
            << "PT_LOAD at 0x" << std::hex << vaddr << " (flags " << flags << ") shares a page with one of flags "
            << load_flags[k];
      }
      loads.emplace_back(vaddr, vaddr + memsz);
      load_pages.emplace_back(first, last);
      load_flags.push_back(flags);
    }
    bool stack_mapped = false;
    for (auto [b, e] : loads) stack_mapped |= (b <= kRamEnd - 4 && kRamEnd <= e);
    EXPECT_TRUE(stack_mapped) << "top of RAM (initial sp) is not inside a PT_LOAD segment";
  }
}

}  // namespace
}  // namespace lockstep::guests_test
