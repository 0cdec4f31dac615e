// Speed of the reference model on a loop-heavy program built from
// instruction words (ALU, shifts, Zba, MUL, loads/stores, a branch; one DIV
// every iteration for the DQ micro-steps), and of qemu-riscv32 on the same
// ELF for comparison.
//
//   ref_bench --benchmark_filter=.   (counters: insns/s, tokens/s)
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "lockstep/progen/progen.h"
#include "lockstep/ref/machine.h"

namespace {

using namespace lockstep;
using ref::Op;
using u32 = std::uint32_t;

// The loop body: 12 instructions per iteration, `iterations` iterations.
format::GuestImage loop_program(u32 iterations) {
  namespace e = ref::encode;
  std::vector<u32> c;
  progen::emit_li(c, 5, iterations);  // t0: counter
  progen::emit_li(c, 8, 0x80000);     // s0: data pointer
  progen::emit_li(c, 11, 0x12345);    // a1
  progen::emit_li(c, 12, 7);          // a2
  const std::size_t loop = c.size();
  c.push_back(e::r(Op::kAdd, 10, 10, 11));        // add a0, a0, a1
  c.push_back(e::r(Op::kXor, 11, 11, 10));        // xor a1, a1, a0
  c.push_back(e::i(Op::kSlli, 13, 10, 3));        // slli a3, a0, 3
  c.push_back(e::r(Op::kSh1add, 14, 13, 11));     // sh1add a4, a3, a1
  c.push_back(e::i(Op::kLw, 15, 8, 0));           // lw a5, 0(s0)
  c.push_back(e::r(Op::kAdd, 15, 15, 14));        // add a5, a5, a4
  c.push_back(e::s(Op::kSw, 8, 15, 4));           // sw a5, 4(s0)
  c.push_back(e::r(Op::kMul, 16, 10, 11));        // mul a6, a0, a1
  c.push_back(e::r(Op::kDivu, 17, 16, 12));       // divu a7, a6, a2
  c.push_back(e::i(Op::kAndi, 18, 17, 0x7f));     // andi s2, a7, 127
  c.push_back(e::i(Op::kAddi, 5, 5, 0xfff));      // addi t0, t0, -1
  c.push_back(e::b(Op::kBne, 5, 0, static_cast<u32>(-4 * static_cast<int>(c.size() - loop))));
  progen::emit_li(c, 17, 93);
  progen::emit_li(c, 10, 0);
  c.push_back(0x00000073u);
  format::Segment data;
  data.vaddr = 0x80000;
  data.memsz = 4096;
  return progen::image_from_code(c, 0x10000, {data});
}

constexpr u32 kIterations = 1'000'000;

void BM_RefUntraced(benchmark::State& state) {
  const auto image = loop_program(kIterations);
  ref::Machine m;
  std::uint64_t insns = 0;
  for (auto _ : state) {
    m.load(image);
    m.run(~0ull);
    insns += m.instructions_retired();
    benchmark::DoNotOptimize(m.reg(10));
  }
  state.counters["insns/s"] = benchmark::Counter(static_cast<double>(insns), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RefUntraced)->Unit(benchmark::kMillisecond);

void BM_RefTraced(benchmark::State& state) {
  const auto image = loop_program(kIterations / 4);
  ref::Machine m;
  std::uint64_t tokens = 0, insns = 0;
  u32 digest = 0;
  for (auto _ : state) {
    m.load(image);
    m.run(~0ull, [&](std::span<const u32> t) {
      for (u32 x : t) digest = digest * 31 + x;  // consume every token
    });
    tokens += m.steps();
    insns += m.instructions_retired();
  }
  benchmark::DoNotOptimize(digest);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["insns/s"] = benchmark::Counter(static_cast<double>(insns), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RefTraced)->Unit(benchmark::kMillisecond);

// qemu-riscv32 user mode on the same program (process start included).
void BM_QemuRiscv32(benchmark::State& state) {
  const std::string qemu = LOCKSTEP_QEMU_RISCV32;
  if (qemu.empty() || qemu.find("NOTFOUND") != std::string::npos) {
    state.SkipWithError("qemu-riscv32 not installed");
    return;
  }
  const auto image = loop_program(kIterations);
  ref::Machine m;
  m.load(image);
  m.run(~0ull);
  const std::uint64_t per_run = m.instructions_retired();
  const auto path = std::filesystem::temp_directory_path() / "lockstep_ref_bench_loop.elf";
  format::write_elf_file(path, image);
  std::uint64_t insns = 0;
  for (auto _ : state) {
    const int rc = std::system(("'" + qemu + "' '" + path.string() + "'").c_str());
    if (rc != 0) {
      state.SkipWithError("qemu-riscv32 failed");
      break;
    }
    insns += per_run;
  }
  state.counters["insns/s"] = benchmark::Counter(static_cast<double>(insns), benchmark::Counter::kIsRate);
  std::filesystem::remove(path);
}
BENCHMARK(BM_QemuRiscv32)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
