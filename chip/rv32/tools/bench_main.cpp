// lockstep-rv32-bench [--steps N] : single-stream tokens/s of the RV32 chip on the CPU executor.
// Teacher-forces a fixed mix of instruction token sequences (ALU, load, store, branch) over and
// over (the chip executes its entry instruction; see docs/chip-design.md), audit off.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/rv32/rv32_chip.hpp"

using namespace lockstep::chip;

namespace {
void put32(std::vector<std::uint8_t>& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
GuestImage image(std::uint32_t word, std::uint32_t a1, std::uint32_t a2) {
  GuestImage img;
  img.entry = 0x10000;
  std::vector<std::uint8_t> c;
  put32(c, word);
  img.segments.push_back({0x10000, c});
  std::vector<std::uint8_t> r;
  for (std::uint32_t i = 0; i < 32; ++i) put32(r, i == 11 ? a1 : i == 12 ? a2 : 0);
  img.segments.push_back({rv32::kRegImageAddress, r});
  return img;
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t steps = 200000;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = std::strtoull(argv[++i], nullptr, 0);
  auto t0 = std::chrono::steady_clock::now();
  auto chip = std::make_shared<const Chip>(rv32::compile_rv32_chip());
  auto t1 = std::chrono::steady_clock::now();
  CpuExecutor ex(chip, 1);
  struct Case {
    GuestImage img;
    std::vector<Token> in;  // teacher-forced inputs (START then the instruction's tokens but the last)
  };
  auto T = [](std::uint32_t k, std::uint32_t p) { return 256 * k + p; };
  std::vector<Case> cases = {
      // add a0, a1, a2 : W(0x01000000)
      {image(0x00c58533u, 0x00ffffff, 1), {0, T(1, 0), T(2, 0), T(3, 0)}},
      // lw a0, 0(a1) at 0x20000 : A(0x20000) W(0)
      {image(0x0005a503u, 0x20000, 0), {0, T(5, 0), T(6, 0), T(7, 2), T(8, 0), T(1, 0), T(2, 0), T(3, 0)}},
      // sw a2, 0(a1) : A(0x20000) S(0x00000005)
      {image(0x00c5a023u, 0x20000, 5), {0, T(5, 0), T(6, 0), T(7, 2), T(8, 0), T(9, 5), T(10, 0), T(11, 0)}},
      // bltu a1, a2, .+8 : BR
      {image(0x00c5e463u, 1, 2), {0}},
  };
  std::size_t done = 0;
  double secs = 0;
  std::vector<Token> out;
  std::vector<double> case_secs(cases.size(), 0);
  std::vector<std::size_t> case_steps(cases.size(), 0);
  while (done < steps) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      Case& c = cases[ci];
      ex.reset(0, c.img);
      auto a = std::chrono::steady_clock::now();
      for (int rep = 0; rep < 50; ++rep) out = ex.teacher_forced(0, c.in);
      auto b = std::chrono::steady_clock::now();
      const double dt = std::chrono::duration<double>(b - a).count();
      secs += dt;
      case_secs[ci] += dt;
      case_steps[ci] += 50 * c.in.size();
      done += 50 * c.in.size();
    }
  }
  const char* names[] = {"add (START, W0, W1, W2)", "lw (START, A0..A3, W0..W2)", "sw (START, A0..A3, S0..S2)",
                         "bltu (START)"};
  for (std::size_t ci = 0; ci < cases.size(); ++ci)
    std::printf("  %-28s %8.0f tokens/s\n", names[ci], case_steps[ci] / case_secs[ci]);
  std::printf("compile %.2f s; %zu steps in %.3f s: %.0f tokens/s single stream (CPU executor, audit off)\n",
              std::chrono::duration<double>(t1 - t0).count(), done, secs, done / secs);
  return 0;
}
