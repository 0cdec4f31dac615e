// ref::trap_access: the address a trapping load, store, write ecall or VLD accessed, for the trap
// lines of `lockstep ref` and `run` (docs/guests.md).
#include "lockstep/ref/trap_access.h"

#include <gtest/gtest.h>

#include "lockstep/ref/encoding.h"
#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

enum : unsigned { zero = 0, t0 = 5, t1 = 6, a0 = 10, a1 = 11, a2 = 12, a7 = 17 };

Machine trapped(const std::vector<u32>& code, std::initializer_list<std::pair<unsigned, u32>> regs) {
  Machine m = machine_with(code);
  for (auto [r, v] : regs) m.set_reg(r, v);
  m.run(1000);
  return m;
}

TEST(TrapAccess, NamesTheAddressOfTheAccessThatTrapped) {
  // lw a0, 8(t0) past RAM's end: LOAD_FAULT at t0 + 8
  Machine lw = trapped({encode::i(Op::kLw, a0, t0, 8)}, {{t0, kRamEnd - 4}});
  ASSERT_EQ(lw.status(), Status::kTrapped);
  EXPECT_EQ(lw.trap_code(), static_cast<u32>(Trap::kLoadFault));
  ASSERT_TRUE(trap_access(lw));
  EXPECT_EQ(trap_access(lw)->address, kRamEnd + 4);
  EXPECT_FALSE(trap_access(lw)->end);
  // sw misaligned: STORE_MISALIGNED at t0 - 1
  Machine sw = trapped({encode::s(Op::kSw, t0, a0, static_cast<u32>(-1))}, {{t0, kData}});
  EXPECT_EQ(sw.trap_code(), static_cast<u32>(Trap::kStoreMisaligned));
  ASSERT_TRUE(trap_access(sw));
  EXPECT_EQ(trap_access(sw)->address, kData - 1);
  // write(1, buf outside RAM, 4): LOAD_FAULT, the buffer
  Machine ecall = trapped({kEcall}, {{a0, 1}, {a1, 0x300000}, {a2, 4}, {a7, 64}});
  EXPECT_EQ(ecall.trap_code(), static_cast<u32>(Trap::kLoadFault));
  ASSERT_TRUE(trap_access(ecall));
  EXPECT_EQ(trap_access(ecall)->address, 0x300000u);
  // VLD whose record [a, a + 4 + n) runs past RAM's end: the record (vector/vld.md §1)
  const u32 vld = encode::r(Op::kVld, zero, t0, t1);
  Machine over = trapped({vld}, {{t0, kRamEnd - 8}, {t1, 5u << 16}});
  EXPECT_EQ(over.trap_code(), static_cast<u32>(Trap::kLoadFault));
  ASSERT_TRUE(trap_access(over));
  EXPECT_EQ(trap_access(over)->address, kRamEnd - 8);
  ASSERT_TRUE(trap_access(over)->end);
  EXPECT_EQ(*trap_access(over)->end, std::uint64_t{kRamEnd} + 1);
  Machine misaligned = trapped({vld}, {{t0, kData + 2}, {t1, 1u << 16}});
  EXPECT_EQ(misaligned.trap_code(), static_cast<u32>(Trap::kLoadMisaligned));
  ASSERT_TRUE(trap_access(misaligned));
  EXPECT_EQ(trap_access(misaligned)->address, kData + 2);
  // Not an access: an illegal instruction, a machine still running.
  EXPECT_FALSE(trap_access(trapped({0xffffffffu}, {})));
  EXPECT_FALSE(trap_access(machine_with({kEbreak})));
}

}  // namespace
}  // namespace lockstep::ref::test
