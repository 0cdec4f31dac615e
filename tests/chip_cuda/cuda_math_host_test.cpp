// The CUDA executor's step math (chip/include/lockstep/chip/gpu/step_math.hpp), compiled by the
// host compiler and run with a one-thread group, against the CPU executor on the built RV32
// chip: every token, the state hash every 64 steps, and the probe fields (docs/cuda.md). Scalar
// guests (muldiv, memops, crc32) and the vector unit (the first steps of stories_vx, whose tokens
// are checked to include the vector instructions' kinds). Prints the step's work per step
// (accumulator touches, balanced_for items and pairs, counted by a one-thread group that counts).
// Runs on every machine (no GPU needed); the device itself is covered by cuda_equivalence_test.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/gpu/chip_image.hpp"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/tokens.h"
#include "../engine/test_guest.h"
#include "test_env.h"

namespace {

namespace fs = std::filesystem;
using namespace lockstep;
using chip::gpu::ChipImage;
using chip::gpu::ChipView;
using chip::gpu::Counters;
using chip::gpu::HostGroup;
using chip::gpu::HostStream;

struct Prepared {
  std::shared_ptr<const chip::Chip> chip;
  std::unique_ptr<ChipImage> image;
  std::vector<std::uint8_t> arena;
  ChipView view;
};

const Prepared& prepared() {
  static const Prepared p = [] {
    Prepared q;
    q.chip = cuda_test::load_test_chip().chip;
    q.image = std::make_unique<ChipImage>(*q.chip);
    q.arena.resize(q.image->bytes() + 16);
    const std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(q.arena.data()) + 15) / 16 * 16;
    std::vector<std::uint8_t> bytes = q.image->relocated(base, q.view);
    std::memcpy(reinterpret_cast<void*>(base), bytes.data(), bytes.size());
    return q;
  }();
  return p;
}

// HostGroup that counts the step's work: touch_add calls (every weight scattered into an
// accumulator or the residual, and every seed), the items balanced_for examines (one
// exclusive_scan each on a one-thread group) and the pairs it hands out.
struct CountingGroup : HostGroup {
  static inline std::uint64_t touches = 0, items = 0, pairs = 0;
  static std::uint32_t fetch_or(std::uint32_t* p, std::uint32_t v) {
    ++touches;
    return HostGroup::fetch_or(p, v);
  }
  std::uint32_t exclusive_scan(std::uint32_t v, std::uint32_t& total) {
    ++items;
    pairs += v;
    return HostGroup::exclusive_scan(v, total);
  }
};

engine::Guest guest(const std::string& name) {
  if (const auto elf = cuda_test::find_guest_elf(name)) return engine::read_guest(*elf);
  std::cout << "[ guest    ] " << name << ".elf not built: using the in-memory loop guest\n";
  return engine::testing::make_loop_guest(40, "loop40");
}

// Free-runs `steps` steps of `g` on the CPU executor and on the step math; compares every
// token, the state hash every 64 steps and at the end, and the probes every 97 steps. Returns
// the number of output tokens of each kind (format::kind_of's name).
std::map<std::string, std::size_t> compare(const std::string& name, std::size_t steps) {
  std::map<std::string, std::size_t> kinds;
  const Prepared& P = prepared();
  const engine::Guest g = guest(name);
  const chip::GuestImage img = engine::to_chip_image(g.image);
  chip::CpuExecutor cpu(P.chip, 1);
  cpu.reset(0, img);
  HostStream hs(P.view);
  chip::apply_initialisers(*P.chip, img, std::span<float>(hs.state(), P.chip->state_size()));
  CountingGroup grp;
  CountingGroup::touches = CountingGroup::items = CountingGroup::pairs = 0;
  Counters c;
  std::uint32_t in_cpu = format::kStartToken, in_gpu = format::kStartToken;
  const auto& probes = P.chip->config.probes;
  for (std::size_t t = 0; t < steps; ++t) {
    const bool rec = t % 97 == 5;
    cpu.set_probe_recording(rec);
    const std::uint32_t a = cpu.step(0, in_cpu);
    c = Counters{};
    const std::uint32_t b = chip::gpu::step_stream(grp, P.view, hs.view, c, in_gpu, rec);
    EXPECT_EQ(a, b) << g.name << ": token differs at step " << t;
    if (a != b) return kinds;
    if (const auto k = format::kind_of(a)) ++kinds[std::string(k->name)];
    if (t % 64 == 63 || t + 1 == steps) {
      const std::uint64_t hg = XXH3_64bits(hs.state(), P.chip->state_size() * sizeof(float));
      EXPECT_EQ(cpu.hash(0), hg) << g.name << ": state hash differs after step " << t;
      if (cpu.hash(0) != hg) return kinds;
    }
    if (rec)
      for (std::size_t i = 0; i < probes.size(); ++i)
        for (std::size_t f = 0; f < probes[i].fields.size(); ++f) {
          const std::vector<float> want = cpu.probe(0, probes[i].layer, probes[i].after, probes[i].fields[f]);
          const float* got = hs.view.probes + P.image->probe_offset(i, f);
          for (std::size_t k = 0; k < want.size(); ++k)
            if (want[k] != got[k]) {
              ADD_FAILURE() << g.name << ": probe " << i << " field " << probes[i].fields[f] << "[" << k
                            << "] at step " << t << ": " << want[k] << " vs " << got[k];
              return kinds;
            }
        }
    in_cpu = a;
    in_gpu = b;
  }
  const auto st = cpu.state(0);
  EXPECT_EQ(0, std::memcmp(st.data(), hs.state(), st.size() * sizeof(float))) << g.name << ": final state differs";
  if (::testing::Test::HasFailure()) return kinds;
  std::cout << "[ compared ] " << g.name << ": " << steps << " steps free-running, tokens, hashes and probes equal\n";
  std::cout << "[ work     ] " << g.name << ": " << CountingGroup::touches / steps << " accumulator touches, "
            << CountingGroup::items / steps << " balanced items, " << CountingGroup::pairs / steps
            << " balanced pairs per step (means over " << steps << " steps)\n";
  return kinds;
}

TEST(CudaStepMathOnHost, ImageShape) {
  const Prepared& P = prepared();
  EXPECT_EQ(P.view.d_model, P.chip->config.d_model);
  EXPECT_EQ(P.view.vocab, P.chip->config.vocab_size);
  EXPECT_EQ(P.view.n_layers, P.chip->layers.size());
  EXPECT_EQ(P.view.state_size, P.chip->state_size());
  std::cout << "[ image    ] " << P.image->bytes() << " bytes, accumulator rows " << P.view.acc_rows
            << ", selection rows " << P.view.sel_rows << ", " << chip::gpu::StreamLayout(P.view).bytes
            << " bytes a stream\n";
}

TEST(CudaStepMathOnHost, MuldivMatchesCpuExecutor) { compare("muldiv", 3000); }
TEST(CudaStepMathOnHost, MemopsMatchesCpuExecutor) { compare("memops", 3000); }
TEST(CudaStepMathOnHost, Crc32MatchesCpuExecutor) { compare("crc32", 2000); }

// The vector unit: the first 20,000 steps of stories_vx (stories260K on the vector unit, about
// 15 s here; 19,184 of them are vector micro-steps) run VLD, VQ, VMAT, VMATR, VRED, VEXP and ops
// with word results. The test checks that each of their token kinds appears, so a change of the
// guest cannot silently leave the vector ops out of the slice.
TEST(CudaStepMathOnHost, StoriesVxVectorStepsMatchCpuExecutor) {
  constexpr std::size_t kVxSteps = 20000;
  const std::map<std::string, std::size_t> kinds = compare("stories_vx", kVxSteps);
  if (HasFailure()) return;
  std::cout << "[ kinds    ]";
  for (const auto& [k, n] : kinds) std::cout << " " << k << " " << n;
  std::cout << "\n";
  // VLG, VLB*: int8 streams (VLD, VQ); VQE: VQ; VMC*, VY*: VMAT; VMV: VMATR V mode; VRD: VRED;
  // VXM*: VEXP; VWG, VW**: word streams (results of VEW, VFN, VEXP, VMATR, VRED)
  for (const char* k : {"VLG", "VLB0", "VQE", "VMC0", "VY0", "VMV", "VRD", "VXM0", "VWG", "VW00"})
    EXPECT_TRUE(kinds.count(k)) << "stories_vx: no " << k << " token in the first " << kVxSteps << " steps";
}

}  // namespace
