// fuzz_lockstep_chip: bytes -> (FuzzedDataProvider) initial registers and a list of 32-bit
// instruction words -> the reference and the compiled RV32 chip in lock-step (engine::Engine),
// teacher-forced and free-running, every token compared (fuzz/README.md).
//
// Decoding as fuzz_lockstep_insn (fuzz_program.h): up to 8 initial registers (x1..x31, edge
// values biased), then up to kMaxWords words, each raw or a row of ref's encoding table with
// random operand bits. The chip executes all eight vector ops, so every custom-1 word is kept. No
// `.lockstep.*` section: VR and the other vector memories start at zero. The program is followed
// by `li a7, 93; ecall` (exit) and zero
// words; a run ends at exit, trap or kMaxSteps steps.
//
// The chip is loaded once (LLVMFuzzerInitialize, or the first input under the standalone
// driver): the file named by $LOCKSTEP_CHIP, else the build's chip file (chips/rv32.chip, target
// rv32_chip_file); neither: one line on stderr and exit status 2. Any token difference prints
// the program and the divergence, then __builtin_trap().
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_program.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/engine.h"
#include "lockstep/progen/progen.h"

namespace {

using namespace lockstep;

constexpr std::uint64_t kMaxSteps = 600;  // the chip under ASan: about 1 ms per step
constexpr std::size_t kMaxWords = 48;
constexpr std::uint32_t kCodeBase = 0x10000;

struct Rig {
  engine::LoadedChip chip;
  std::unique_ptr<chip::ChipBackend> backend;  // reused: the engine resets every stream
};
Rig* g_rig = nullptr;

void init() {
  if (g_rig != nullptr) return;
  std::string path;
  if (const char* env = std::getenv("LOCKSTEP_CHIP"); env != nullptr && *env != '\0') {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(env, ec)) {
      std::fprintf(stderr, "fuzz_lockstep_chip: error: LOCKSTEP_CHIP=%s: no such file\n", env);
      std::exit(2);
    }
    path = env;
  } else {
#ifdef LOCKSTEP_BUILT_CHIP_FILE
    std::error_code ec;
    if (std::filesystem::exists(LOCKSTEP_BUILT_CHIP_FILE, ec)) path = LOCKSTEP_BUILT_CHIP_FILE;
#endif
  }
  if (path.empty()) {
    std::fprintf(stderr,
                 "fuzz_lockstep_chip: error: no chip file: set LOCKSTEP_CHIP=FILE or build the chip file "
                 "(ninja rv32_chip_file)\n");
    std::exit(2);
  }
  try {
    auto rig = std::make_unique<Rig>();
    rig->chip = engine::load_chip_or_built(path);
    rig->backend = engine::make_backend("cpu", rig->chip.chip);
    g_rig = rig.release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_lockstep_chip: error: %s\n", e.what());
    std::exit(2);
  }
}

using Program = fuzz::FuzzProgram;

Program split(FuzzedDataProvider& in) {
  fuzz::DecodeOptions opt;
  opt.max_words = kMaxWords;
  opt.edges = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, kCodeBase, 0x80000u, 0x110000u};
  return fuzz::decode_program(in, opt);
}

engine::Guest guest_of(const Program& p) {
  std::vector<std::uint32_t> code;
  for (const auto& [r, v] : p.regs) progen::emit_li(code, r, v);
  code.insert(code.end(), p.words.begin(), p.words.end());
  progen::emit_li(code, 17, 93);
  code.push_back(0x00000073u);  // ecall: exit(a0)
  engine::Guest g;
  g.name = "fuzz";
  g.image = progen::image_from_code(code, kCodeBase);
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  init();
  FuzzedDataProvider in(data, size);
  const Program p = split(in);
  if (p.words.empty()) return 0;
  const std::vector<engine::Guest> guests = {guest_of(p)};
  for (const engine::Mode mode : {engine::Mode::kForced, engine::Mode::kFree}) {
    engine::Options opt;
    opt.mode = mode;
    opt.max_steps = kMaxSteps;
    opt.classify_window = 16;
    engine::Engine eng(*g_rig->backend, guests, opt);
    const engine::RunResult r = eng.run();
    const engine::StreamResult& st = r.streams.at(0);
    if (st.mismatches != 0) {
      const std::uint32_t end = kCodeBase + 4 * static_cast<std::uint32_t>(2 * p.regs.size() + p.words.size() + 3);
      std::fprintf(stderr, "fuzz_lockstep_chip: MISMATCH (%s, chip %s)\n%s\n%s\n", std::string(to_string(mode)).c_str(),
                   g_rig->chip.source.c_str(), progen::listing(guests[0].image, kCodeBase, end).c_str(),
                   st.divergence ? st.divergence->to_text().c_str() : st.to_json().dump().c_str());
      __builtin_trap();
    }
  }
  return 0;
}
