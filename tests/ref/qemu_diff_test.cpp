// Differential test against qemu-riscv32 (label: integration): random
// RV32IM+Zba bodies (fuzz/progen), batched 200 to an ELF, 50 ELFs per run;
// exit code, console output and the per-body register+memory signature must
// be identical.  Seed: $LOCKSTEP_SEED, else from the clock; always printed.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "lockstep/progen/progen.h"
#include "lockstep/ref/machine.h"

namespace lockstep::ref {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kElfs = 50, kBodies = 200, kBodyLength = 40;

std::uint64_t run_seed() {
  if (const char* s = std::getenv("LOCKSTEP_SEED")) return std::strtoull(s, nullptr, 0);
  return static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
}

struct QemuResult {
  std::string out;
  int exit_code = -1;
};

QemuResult run_qemu(const std::string& qemu, const fs::path& elf) {
  QemuResult r;
  const std::string cmd = "'" + qemu + "' '" + elf.string() + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string hex_word(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[at + i]);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

TEST(QemuDifferential, RandomRv32imZbaPrograms) {
  const std::string qemu = LOCKSTEP_QEMU_RISCV32;
  if (qemu.empty() || qemu.find("NOTFOUND") != std::string::npos) {
    GTEST_SKIP() << "qemu-riscv32 not found (Debian package qemu-user); differential test skipped";
  }
  const std::uint64_t seed = run_seed();
  std::printf("[ qemu-diff ] seed %llu (rerun with LOCKSTEP_SEED=%llu): %u ELFs x %u bodies x %u instructions\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), kElfs, kBodies, kBodyLength);
  const fs::path dir = fs::path(::testing::TempDir()) / ("lockstep-qemu-diff-" + std::to_string(seed));
  fs::create_directories(dir);
  std::uint64_t programs = 0, instructions = 0;
  for (unsigned e = 0; e < kElfs; ++e) {
    const std::uint64_t batch_seed = seed + e;
    const progen::Batch batch = progen::make_batch(batch_seed, kBodies, kBodyLength);
    const fs::path elf = dir / ("batch" + std::to_string(e) + ".elf");
    format::write_elf_file(elf, batch.image);

    Machine m;
    m.load(batch.image);
    m.run(1ull << 32);
    const QemuResult q = run_qemu(qemu, elf);
    instructions += m.instructions_retired();

    const auto where = [&](unsigned body) {
      const auto& b = batch.bodies[body];
      return "seed " + std::to_string(seed) + ", ELF " + std::to_string(e) + " (batch seed " +
             std::to_string(batch_seed) + ", " + elf.string() + "), program " + std::to_string(body) +
             " (base register x" + std::to_string(b.base_reg) + "):\n" +
             progen::listing(batch.image, b.code_begin, b.code_end);
    };
    if (m.status() != Status::kExited) {
      // Replay step by step to find the instruction that led there.
      Machine again;
      again.load(batch.image);
      std::uint32_t last_pc = again.pc();
      while (again.status() == Status::kRunning) {
        const std::uint32_t before = again.pc();
        again.step();
        if (again.status() == Status::kRunning) last_pc = before;
      }
      const std::uint32_t last_word = last_pc >= kRamBase && last_pc < kRamEnd ? again.read_word(last_pc) : 0;
      FAIL() << "ref ended with trap " << m.trap_code() << " at pc 0x" << std::hex << m.pc() << " after 0x" << last_pc
             << ": " << disassemble(last_word, last_pc) << std::dec << "; seed " << seed << ", ELF " << e;
    }
    // Compare record by record: scratch (256 bytes) then x0..x31 dump.
    const std::string& r = m.console_out();
    const std::size_t rec = batch.record_bytes;
    ASSERT_EQ(r.size(), rec * kBodies) << "ref output size; seed " << seed << ", ELF " << e;
    for (unsigned b = 0; b < kBodies; ++b) {
      if (q.out.size() < (b + 1) * rec) {
        FAIL() << "qemu output ended before program " << b << " (" << q.out.size() << " bytes, exit " << q.exit_code
               << "); " << where(b);
      }
      if (r.compare(b * rec, rec, q.out, b * rec, rec) == 0) continue;
      std::string diff;
      for (std::size_t off = 0; off < rec; off += 4) {
        if (r.compare(b * rec + off, 4, q.out, b * rec + off, 4) == 0) continue;
        const std::string what = off < 256 ? "scratch+" + std::to_string(off) : "x" + std::to_string((off - 256) / 4);
        diff += "  " + what + ": ref " + hex_word(r, b * rec + off) + ", qemu " + hex_word(q.out, b * rec + off) + "\n";
      }
      FAIL() << "difference in " << where(b) << diff;
    }
    ASSERT_EQ(q.out.size(), r.size()) << "qemu wrote extra output; seed " << seed << ", ELF " << e;
    ASSERT_EQ(q.exit_code, static_cast<int>(m.exit_status())) << "exit code; seed " << seed << ", ELF " << e;
    programs += kBodies;
  }
  std::printf("[ qemu-diff ] %llu programs, %llu instructions: 0 differences\n",
              static_cast<unsigned long long>(programs), static_cast<unsigned long long>(instructions));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::ref
