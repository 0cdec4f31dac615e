// Directed guests under qemu-riscv32: each guest's stdout, stderr and exit
// status must equal values computed here on the host, independently of the
// guest (from the ISA definitions, std::sort, a bitwise CRC, ...).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mulcarry_pairs.h"
#include "run_process.h"

namespace lockstep::guests_test {
namespace {

std::string hex8(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

class DirectedGuest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (qemu_path().empty()) GTEST_SKIP() << "qemu-riscv32 not found (apt-get install qemu-user)";
  }
  ProcessResult run(const std::string& name) {
    return run_process({qemu_path(), guest_elf(name)});
  }
};

// Code only (no data): qemu maps it (its writable segment starts on a page of its own) and it
// exits with its status.
TEST_F(DirectedGuest, NoData) {
  ProcessResult r = run("nodata");
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(DirectedGuest, Hello) {
  ProcessResult r = run("hello");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "Hello from a Lockstep guest!\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(DirectedGuest, Sort) {
  const int sizes[] = {0, 1, 2, 17, 100, 300};
  const char* names[] = {"insertion", "quick", "merge", "heap"};
  auto fill = [](int n, uint32_t seed) {
    std::vector<int32_t> v;
    uint32_t x = seed;
    for (int i = 0; i < n; i++) {
      x = x * 1664525u + 1013904223u;
      v.push_back(static_cast<int32_t>(x));
    }
    return v;
  };
  std::string want;
  for (int n : sizes) {
    std::vector<int32_t> v = fill(n, 12345u + static_cast<uint32_t>(n));
    std::sort(v.begin(), v.end());
    uint32_t h = 2166136261u;
    for (int32_t e : v)
      for (int b = 0; b < 4; b++) {
        h ^= (static_cast<uint32_t>(e) >> (8 * b)) & 0xFF;
        h *= 16777619u;
      }
    for (const char* name : names)
      want += std::string(name) + " n=" + std::to_string(n) + " sorted=1 hash=" + hex8(h) + "\n";
  }
  std::vector<int32_t> v17 = fill(17, 12345u + 17u);
  std::sort(v17.begin(), v17.end());
  want += "first8:";
  for (int i = 0; i < 8; i++) want += " " + std::to_string(v17[i]);
  want += "\nsort: ok\n";

  ProcessResult r = run("sort");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(r.err, "");
}

uint32_t crc32_ref(const uint8_t* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int b = 0; b < 8; b++) crc = (crc & 1) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return ~crc;
}

TEST_F(DirectedGuest, Crc32) {
  // Published check values of CRC-32/ISO-HDLC.
  const char* fox = "The quick brown fox jumps over the lazy dog";
  ASSERT_EQ(crc32_ref(reinterpret_cast<const uint8_t*>("123456789"), 9), 0xCBF43926u);
  ASSERT_EQ(crc32_ref(reinterpret_cast<const uint8_t*>(fox), std::strlen(fox)), 0x414FA339u);
  std::vector<uint8_t> buf(4096);
  uint32_t x = 1;
  for (auto& b : buf) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  std::string want = "crc32() = 00000000\ncrc32(123456789) = cbf43926\ncrc32(" + std::string(fox) +
                     ") = 414fa339\ncrc32(lcg4096) = " + hex8(crc32_ref(buf.data(), buf.size())) +
                     "\ncrc32: ok\n";
  ProcessResult r = run("crc32");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, want);
}

TEST_F(DirectedGuest, MemOps) {
  // Case counts: 4 x 4 offsets x 29 lengths; 8 x 8 offsets x 12 lengths;
  // 3 values x 4 offsets x 29 lengths; 7 spot checks.
  ProcessResult r = run("memops");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out,
            "memcpy: 464 cases, 0 failures\n"
            "memmove: 768 cases, 0 failures\n"
            "memset: 348 cases, 0 failures\n"
            "memcmp/strlen/strcmp: 7 cases, 0 failures\n"
            "memops: ok\n");
}

// RV32M semantics written from isa.md 4.3 (independent of the guest).
struct MulDivRef {
  static uint32_t mul(uint32_t a, uint32_t b) { return a * b; }
  static uint32_t mulh(uint32_t a, uint32_t b) {
    int64_t p = static_cast<int64_t>(static_cast<int32_t>(a)) * static_cast<int32_t>(b);
    return static_cast<uint32_t>(static_cast<uint64_t>(p) >> 32);
  }
  static uint32_t mulhsu(uint32_t a, uint32_t b) {
    int64_t p = static_cast<int64_t>(static_cast<int32_t>(a)) * static_cast<int64_t>(b);
    return static_cast<uint32_t>(static_cast<uint64_t>(p) >> 32);
  }
  static uint32_t mulhu(uint32_t a, uint32_t b) {
    return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
  }
  static uint32_t div(uint32_t a, uint32_t b) {
    if (b == 0) return 0xFFFFFFFFu;
    if (a == 0x80000000u && b == 0xFFFFFFFFu) return 0x80000000u;
    return static_cast<uint32_t>(static_cast<int32_t>(a) / static_cast<int32_t>(b));
  }
  static uint32_t divu(uint32_t a, uint32_t b) { return b == 0 ? 0xFFFFFFFFu : a / b; }
  static uint32_t rem(uint32_t a, uint32_t b) {
    if (b == 0) return a;
    if (a == 0x80000000u && b == 0xFFFFFFFFu) return 0;
    return static_cast<uint32_t>(static_cast<int32_t>(a) % static_cast<int32_t>(b));
  }
  static uint32_t remu(uint32_t a, uint32_t b) { return b == 0 ? a : a % b; }
};

TEST_F(DirectedGuest, MulDiv) {
  const uint32_t ops[] = {0x00000000u, 0x00000001u, 0x00000002u, 0x00000007u,
                          0xFFFFFFFFu, 0xFFFFFFFEu, 0xFFFFFFF9u, 0x7FFFFFFFu,
                          0x80000000u, 0x80000001u, 0x0001F00Du, 0xDEADBEEFu};
  std::string want;
  for (uint32_t a : ops)
    for (uint32_t b : ops) {
      using R = MulDivRef;
      want += hex8(a) + " " + hex8(b) + " | " + hex8(R::mul(a, b)) + " " + hex8(R::mulh(a, b)) +
              " " + hex8(R::mulhsu(a, b)) + " " + hex8(R::mulhu(a, b)) + " | " +
              hex8(R::div(a, b)) + " " + hex8(R::divu(a, b)) + " " + hex8(R::rem(a, b)) + " " +
              hex8(R::remu(a, b)) + "\n";
    }
  want += "muldiv: 144 pairs\n";
  ProcessResult r = run("muldiv");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, want);
}

TEST_F(DirectedGuest, MulSweep) {
  uint32_t s[4] = {0, 0, 0, 0};
  for (uint32_t a = 0; a < 16; a++)
    for (uint32_t b = 0; b < 16; b++) {
      const uint32_t x = a * 0x11111111u, y = b * 0x11111111u;
      using R = MulDivRef;
      s[0] += R::mul(x, y);
      s[1] += R::mulh(x, y);
      s[2] += R::mulhsu(x, y);
      s[3] += R::mulhu(x, y);
    }
  const std::string want =
      "mul " + hex8(s[0]) + "\nmulh " + hex8(s[1]) + "\nmulhsu " + hex8(s[2]) + "\nmulhu " + hex8(s[3]) + "\n";
  ProcessResult r = run("mulsweep");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, want);
}

TEST_F(DirectedGuest, MulCarry) {
  static const uint32_t pairs[][2] = {MULCARRY_PAIRS};
  uint32_t s[4] = {0, 0, 0, 0};
  for (const auto& p : pairs) {
    using R = MulDivRef;
    s[0] += R::mul(p[0], p[1]);
    s[1] += R::mulh(p[0], p[1]);
    s[2] += R::mulhsu(p[0], p[1]);
    s[3] += R::mulhu(p[0], p[1]);
  }
  ASSERT_EQ(sizeof pairs / sizeof pairs[0], 49u);
  const std::string want =
      "mul " + hex8(s[0]) + "\nmulh " + hex8(s[1]) + "\nmulhsu " + hex8(s[2]) + "\nmulhu " + hex8(s[3]) + "\n";
  ProcessResult r = run("mulcarry");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, want);
}

TEST_F(DirectedGuest, ZbaSweep) {
  uint32_t s1 = 0, s2 = 0, s3 = 0;
  for (uint32_t a = 0; a < 16; a++)
    for (uint32_t b = 0; b < 16; b++) {
      const uint32_t x = a * 0x10101010u + b * 0x01010101u, y = ((a << 4) | b) * 0x01000193u;
      s1 += y + (x << 1);
      s2 += y + (x << 2);
      s3 += y + (x << 3);
    }
  ProcessResult r = run("zbasweep");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "sh1add " + hex8(s1) + "\nsh2add " + hex8(s2) + "\nsh3add " + hex8(s3) + "\n");
}

TEST_F(DirectedGuest, AluSweep) {
  uint32_t s[5] = {0, 0, 0, 0, 0};
  for (uint32_t a = 0; a < 16; a++)
    for (uint32_t b = 0; b < 16; b++) {
      const uint32_t x = a * 0x11111111u, y = b * 0x11111111u;
      s[0] += x + y;
      s[1] += x - y;
      s[2] += x & y;
      s[3] += x | y;
      s[4] += x ^ y;
    }
  ProcessResult r = run("alusweep");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "add " + hex8(s[0]) + "\nsub " + hex8(s[1]) + "\nand " + hex8(s[2]) + "\nor " + hex8(s[3]) +
                       "\nxor " + hex8(s[4]) + "\n");
}

// Every load and store width at every aligned offset (guests/directed/ldstsweep.c), derived here
// from isa.md's rules: LB/LH sign-extend, LBU/LHU zero-extend, memory is little-endian, SB/SH
// write the low 8/16 bits of rs2.
TEST_F(DirectedGuest, LoadStoreSweep) {
  static const uint8_t bytes[8] = {0x00, 0x01, 0x7F, 0x80, 0xFF, 0x5A, 0xA5, 0xFE};
  static const uint32_t words[8] = {0x00000000u, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu,
                                    0x00008080u, 0xFFFF7F7Fu, 0x12345678u, 0xA5805AFFu};
  enum { LB, LBU, LH, LHU, LW, SB, SH, SW, N };
  uint32_t s[N] = {};
  auto fold = [](uint32_t& acc, uint32_t v) { acc = acc * 31u + v; };
  uint8_t buf[16];
  auto u16 = [&](uint32_t o) { return static_cast<uint32_t>(buf[o] | buf[o + 1] << 8); };
  auto u32 = [&](uint32_t o) { return u16(o) | u16(o + 2) << 16; };
  for (uint32_t r = 0; r < 8; r++) {
    for (uint32_t i = 0; i < 16; i++) buf[i] = bytes[(i + r) % 8];
    for (uint32_t o = 0; o < 16; o++)
      for (int twice = 0; twice < 2; twice++) {  // base + 0, and base + 4 with imm -4: the same address
        fold(s[LB], static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(buf[o]))));
        fold(s[LBU], buf[o]);
        if (o % 2 == 0) {
          fold(s[LH], static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(u16(o)))));
          fold(s[LHU], u16(o));
        }
        if (o % 4 == 0) fold(s[LW], u32(o));
      }
    for (const auto& [kind, width] : {std::pair{SB, 1u}, std::pair{SH, 2u}, std::pair{SW, 4u}}) {
      std::fill(std::begin(buf), std::end(buf), 0);
      for (uint32_t o = 0; o < 16; o += width) {
        const uint32_t v = words[(o + r) % 8];
        for (uint32_t b = 0; b < width; b++) buf[o + b] = static_cast<uint8_t>(v >> (8 * b));
        fold(s[kind], u32(o & ~3u));
      }
    }
  }
  ProcessResult r = run("ldstsweep");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "lb " + hex8(s[LB]) + "\nlbu " + hex8(s[LBU]) + "\nlh " + hex8(s[LH]) + "\nlhu " + hex8(s[LHU]) +
                       "\nlw " + hex8(s[LW]) + "\nsb " + hex8(s[SB]) + "\nsh " + hex8(s[SH]) + "\nsw " + hex8(s[SW]) + "\n");
}

TEST_F(DirectedGuest, ShiftSweep) {
  uint32_t sll = 0, srl = 0, sra = 0;
  for (uint32_t v = 1; v < 16; v++)
    for (uint32_t s = 0; s < 32; s++) {
      const uint32_t x = v * 0x11111111u;
      sll += x << s;
      srl += x >> s;
      sra += static_cast<uint32_t>(static_cast<int32_t>(x) >> s);  // arithmetic (C++20)
    }
  ProcessResult r = run("shiftsweep");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "sll " + hex8(sll) + "\nsrl " + hex8(srl) + "\nsra " + hex8(sra) + "\n");
}

TEST_F(DirectedGuest, Zba) {
  const uint32_t ops[] = {0x00000000u, 0x00000001u, 0x7FFFFFFFu, 0x80000000u,
                          0xFFFFFFFFu, 0x40000000u, 0x20000001u, 0x12345678u};
  std::string want;
  for (uint32_t a : ops)
    for (uint32_t b : ops)
      want += hex8(a) + " " + hex8(b) + " | " + hex8(b + (a << 1)) + " " + hex8(b + (a << 2)) +
              " " + hex8(b + (a << 3)) + "\n";
  // gather() visits every index once: sum of 3i + 5i + 7i + i for i < 100.
  uint32_t sum = 0;
  for (uint32_t i = 0; i < 100; i++) sum += 16 * i;
  want += "gather sum = " + std::to_string(sum) + "\n";
  ProcessResult r = run("zba");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, want);
}

TEST(DirectedGuestBuild, ZbaCompiledCodeUsesShNadd) {
  // The compiler (not only inline asm) must emit Zba for array indexing.
  std::string dis = read_file(std::string(LOCKSTEP_GUEST_DIR) + "/zba.dis");
  size_t start = dis.find("<gather");  // may be gather.constprop.N
  ASSERT_NE(start, std::string::npos);
  size_t end = dis.find("\n\n", start);
  std::string body = dis.substr(start, end - start);
  EXPECT_NE(body.find("sh1add"), std::string::npos) << body;
  EXPECT_NE(body.find("sh2add"), std::string::npos) << body;
  EXPECT_NE(body.find("sh3add"), std::string::npos) << body;
}

TEST_F(DirectedGuest, SelfCheckPassesEveryCheck) {
  ProcessResult r = run("selfcheck");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");  // failures are reported on fd 2
  unsigned passed = 0, total = 0;
  size_t at = r.out.rfind("selfcheck: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "selfcheck: %u/%u passed", &passed, &total), 2);
  EXPECT_EQ(passed, total);
  EXPECT_GE(total, 80u);
  EXPECT_EQ(r.out.substr(0, 25), "write returns its length\n");
}

TEST_F(DirectedGuest, Fd2AndMaskedExitStatus) {
  ProcessResult r = run("fd2");
  EXPECT_EQ(r.exit_code, 0x1203 & 0xFF);
  EXPECT_EQ(r.out, "stdout line 1\nstdout line 2\n");
  EXPECT_EQ(r.err, "stderr line 1\nstderr value -12345\nraw write\nwrite returned 10\n");
}

TEST(DirectedGuestOnLockstepRef, Fd2ConsolesAndExitStatus) {
  if (lockstep_ref_exe().empty()) GTEST_SKIP() << "`lockstep ref` is not available yet";
  RefRun r = run_on_reference(guest_elf("fd2"));
  EXPECT_EQ(r.end, "exit");
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.console, "stdout line 1\nstdout line 2\n");
  EXPECT_EQ(r.console_err, "stderr line 1\nstderr value -12345\nraw write\nwrite returned 10\n");
  EXPECT_GT(r.instructions, 0);
  EXPECT_GT(r.steps, r.instructions);
}

}  // namespace
}  // namespace lockstep::guests_test
