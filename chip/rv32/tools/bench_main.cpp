// lockstep-rv32-bench: single-stream speed of the RV32 chip on the CPU executor
// (docs/chip-design.md section 3.5). Free-runs a guest ELF on the chip alone (no reference, no
// comparison) for --steps steps and prints tokens/s; the compile and the reset are timed apart.
// With --by-kind it steps one token at a time and prints, per kind of the *consumed* token
// (trace.md section 2), the steps, the seconds and the microseconds per step: where the chip's
// time goes on a guest (issue 30's profile of the story's vector steps).
//
//   lockstep-rv32-bench GUEST.elf [--steps N] [--chip FILE] [--by-kind]
//
// Exit status: 0 done, 2 bad input (a one-line error).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/rv32/rv32_chip.hpp"
#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"

using namespace lockstep;

int main(int argc, char** argv) {
  std::size_t steps = 100000;
  std::string elf, chip_file;
  bool by_kind = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = std::strtoull(argv[++i], nullptr, 0);
    else if (std::strcmp(argv[i], "--chip") == 0 && i + 1 < argc) chip_file = argv[++i];
    else if (std::strcmp(argv[i], "--by-kind") == 0) by_kind = true;
    else if (argv[i][0] != '-' && elf.empty()) elf = argv[i];
    else {
      std::fprintf(stderr, "lockstep-rv32-bench: error: usage: lockstep-rv32-bench GUEST.elf [--steps N] [--chip FILE] [--by-kind]\n");
      return 2;
    }
  }
  if (elf.empty() || steps == 0) {
    std::fprintf(stderr, "lockstep-rv32-bench: error: usage: lockstep-rv32-bench GUEST.elf [--steps N] [--chip FILE] [--by-kind]\n");
    return 2;
  }
  try {
    const format::GuestImage g = format::read_elf_file(elf);
    chip::GuestImage img;
    img.entry = g.entry;
    for (const format::Segment& s : g.segments) {
      std::vector<std::uint8_t> bytes = s.bytes;
      bytes.resize(s.memsz, 0);
      img.segments.push_back({s.vaddr, std::move(bytes)});
    }
    img.sections = g.sections;
    const auto t0 = std::chrono::steady_clock::now();
    auto chip = std::make_shared<const chip::Chip>(chip_file.empty() ? chip::rv32::compile_rv32_chip()
                                                                      : chip::load_chip(chip_file));
    const auto t1 = std::chrono::steady_clock::now();
    chip::CpuExecutor ex(chip, 1);
    ex.reset(0, img);
    const auto t2 = std::chrono::steady_clock::now();
    std::vector<chip::Token> out;
    std::map<std::uint32_t, std::pair<std::size_t, double>> per_kind;  // consumed kind: steps, seconds
    if (by_kind) {
      chip::Token t = format::kStartToken;
      out.reserve(steps);
      for (std::size_t i = 0; i < steps; ++i) {
        const auto a = std::chrono::steady_clock::now();
        const chip::Token next = ex.step(0, t);
        const auto b = std::chrono::steady_clock::now();
        const auto info = format::kind_of(t);  // a wide kind's ids span 256 kind numbers
        auto& [n, sec] = per_kind[info ? info->kind : t >> 8];
        ++n;
        sec += std::chrono::duration<double>(b - a).count();
        out.push_back(next);
        t = next;
      }
    } else {
      out = ex.free_running(0, 0, steps);
    }
    const auto t3 = std::chrono::steady_clock::now();
    const double run = std::chrono::duration<double>(t3 - t2).count();
    std::size_t n = out.size();
    std::printf("chip: %s (%u layers, d_model %u, %.1f MB state/stream), %s in %.2f s\n",
                chip_file.empty() ? "compiled" : chip_file.c_str(), static_cast<unsigned>(chip->layers.size()),
                chip->config.d_model, chip->state_size() * 4.0 / 1e6, chip_file.empty() ? "compile" : "load",
                std::chrono::duration<double>(t1 - t0).count());
    std::printf("reset: %.3f s\n", std::chrono::duration<double>(t2 - t1).count());
    std::printf("free-running %zu steps of %s: %.2f s, %.0f tokens/s (single stream, CPU executor)\n", n,
                elf.c_str(), run, n / run);
    if (by_kind) {
      std::printf("%-8s %10s %9s %8s %11s\n", "consumed", "steps", "seconds", "share", "us/step");
      for (const auto& [kind, v] : per_kind) {
        const auto info = format::kind_of(format::token_id(kind, 0));
        const std::string name = kind == 0 ? "START" : info ? std::string(info->name) : "?" + std::to_string(kind);
        std::printf("%-8s %10zu %9.2f %7.1f%% %11.1f\n", name.c_str(), v.first, v.second, 100.0 * v.second / run,
                    1e6 * v.second / static_cast<double>(v.first));
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep-rv32-bench: error: %s\n", e.what());
    return 2;
  }
}
