// The CUDA executor against the CPU executor on the built RV32 chip (docs/cuda.md): tokens,
// state hashes, checkpoints and probes for several guests, batch sizes 1, 3 and 64, shuffled
// stream orders, and device-side free running / teacher forcing. Needs a CUDA device: without
// one every test is skipped with one line ("no CUDA device (...)").
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/cuda_executor.hpp"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/tokens.h"
#include "../engine/test_guest.h"
#include "test_env.h"

namespace {

namespace fs = std::filesystem;
using namespace lockstep;
using chip::StreamId;
using chip::Token;

std::shared_ptr<const chip::Chip> built_chip() {
  static const std::shared_ptr<const chip::Chip> c = cuda_test::load_test_chip().chip;
  return c;
}

chip::GuestImage image(const std::string& name) {
  if (const auto elf = cuda_test::find_guest_elf(name)) return engine::to_chip_image(engine::read_guest(*elf).image);
  std::cout << "[ guest    ] " << name << ".elf not built: using the in-memory loop guest\n";
  return engine::to_chip_image(engine::testing::make_loop_guest(40, "loop40").image);
}

const std::vector<std::string> kGuests = {"muldiv", "memops", "crc32", "sort", "zba", "bignum_fib"};

class CudaEquivalence : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!chip::cuda_available(&why)) GTEST_SKIP() << why;
  }
};

// B streams, guest i % |guests| each, stepped together for `steps` steps with the stream order
// shuffled every step (seed printed); tokens every step, hashes every 50 steps and at the end.
void batch(std::size_t B, std::size_t steps, std::uint64_t seed) {
  SCOPED_TRACE("batch " + std::to_string(B) + ", seed " + std::to_string(seed));
  std::cout << "[ batch    ] " << B << " streams, " << steps << " steps, shuffle seed " << seed << "\n";
  chip::CpuExecutor cpu(built_chip(), B);
  chip::CudaExecutor gpu(built_chip(), B);
  std::vector<Token> last(B, format::kStartToken);
  for (StreamId s = 0; s < B; ++s) {
    const chip::GuestImage img = image(kGuests[s % kGuests.size()]);
    cpu.reset(s, img);
    gpu.reset(s, img);
    ASSERT_EQ(cpu.hash(s), gpu.hash(s)) << "after reset, stream " << s;
  }
  std::mt19937_64 rng(seed);
  std::vector<StreamId> order(B);
  std::iota(order.begin(), order.end(), 0u);
  for (std::size_t t = 0; t < steps; ++t) {
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Token> in(B), a(B), b(B);
    for (std::size_t i = 0; i < B; ++i) in[i] = last[order[i]];
    cpu.step_batch(order, in, a);
    gpu.step_batch(order, in, b);
    for (std::size_t i = 0; i < B; ++i) {
      ASSERT_EQ(a[i], b[i]) << "stream " << order[i] << " step " << t;
      last[order[i]] = a[i];
    }
    if (t % 50 == 49 || t + 1 == steps) {
      for (StreamId s = 0; s < B; ++s) ASSERT_EQ(cpu.hash(s), gpu.hash(s)) << "state hash, stream " << s << " after step " << t;
    }
  }
  for (StreamId s = 0; s < B; ++s) ASSERT_EQ(cpu.steps(s), gpu.steps(s));
}

TEST_F(CudaEquivalence, OneStreamEveryGuest) {
  for (const std::string& g : kGuests) {
    SCOPED_TRACE(g);
    chip::CpuExecutor cpu(built_chip(), 1);
    chip::CudaExecutor gpu(built_chip(), 1);
    const chip::GuestImage img = image(g);
    cpu.reset(0, img);
    gpu.reset(0, img);
    Token a = format::kStartToken, b = a;
    for (std::size_t t = 0; t < 3000; ++t) {
      a = cpu.step(0, a);
      b = gpu.step(0, b);
      ASSERT_EQ(a, b) << g << " step " << t;
      if (t % 250 == 249) {
        ASSERT_EQ(cpu.hash(0), gpu.hash(0)) << g << " after step " << t;
      }
    }
    ASSERT_EQ(cpu.state(0).size(), gpu.state(0).size());
    ASSERT_TRUE(std::equal(cpu.state(0).begin(), cpu.state(0).end(), gpu.state(0).begin())) << g << ": final state";
  }
}

TEST_F(CudaEquivalence, Batch1Shuffled) { batch(1, 2000, 1); }
TEST_F(CudaEquivalence, Batch3Shuffled) { batch(3, 1500, 20261129); }
TEST_F(CudaEquivalence, Batch64Shuffled) { batch(64, 600, 64064); }

TEST_F(CudaEquivalence, DeviceFreeRunAndForcedBatch) {
  const std::size_t B = 5, n = 4000;
  chip::CpuExecutor cpu(built_chip(), B);
  chip::CudaExecutor gpu(built_chip(), B);
  std::vector<StreamId> ids = {4, 2, 0, 1, 3};
  for (StreamId s = 0; s < B; ++s) {
    cpu.reset(s, image(kGuests[s]));
    gpu.reset(s, image(kGuests[s]));
  }
  const std::vector<Token> firsts(B, format::kStartToken);
  const std::vector<Token> got = gpu.free_run_batch(ids, firsts, n);
  std::vector<Token> inputs(B * n);
  for (std::size_t i = 0; i < B; ++i) {
    const std::vector<Token> want = cpu.free_running(ids[i], format::kStartToken, n);
    for (std::size_t t = 0; t < n; ++t) ASSERT_EQ(want[t], got[i * n + t]) << "stream " << ids[i] << " step " << t;
    ASSERT_EQ(cpu.hash(ids[i]), gpu.hash(ids[i])) << "stream " << ids[i];
    inputs[i * n] = format::kStartToken;
    for (std::size_t t = 1; t < n; ++t) inputs[i * n + t] = want[t - 1];
  }
  // teacher forcing the same tokens from a reset gives the same predictions
  for (StreamId s = 0; s < B; ++s) gpu.reset(s, image(kGuests[s]));
  ASSERT_EQ(gpu.forced_batch(ids, inputs, n), got);
}

TEST_F(CudaEquivalence, CheckpointsAreTheCpuExecutorsBytes) {
  chip::CpuExecutor cpu(built_chip(), 2);
  chip::CudaExecutor gpu(built_chip(), 2);
  const chip::GuestImage img = image("memops");
  cpu.reset(0, img);
  gpu.reset(0, img);
  Token a = format::kStartToken, b = a;
  for (int t = 0; t < 700; ++t) {
    a = cpu.step(0, a);
    b = gpu.step(0, b);
  }
  ASSERT_EQ(a, b);
  const auto ca = cpu.save(0), cb = gpu.save(0);
  ASSERT_EQ(ca, cb) << "checkpoint bytes differ";
  cpu.restore(1, cb);  // each restores the other's checkpoint into stream 1
  gpu.restore(1, ca);
  ASSERT_EQ(gpu.steps(1), 700u);
  Token x = a, y = a;
  for (int t = 0; t < 500; ++t) {
    x = cpu.step(1, x);
    y = gpu.step(1, y);
    ASSERT_EQ(x, y) << "after restore, step " << t;
  }
  ASSERT_EQ(cpu.hash(1), gpu.hash(1));
  auto bad = cb;
  bad[0] = 'X';
  EXPECT_THROW(gpu.restore(1, bad), chip::FormatError);
}

TEST_F(CudaEquivalence, ProbesEqualTheCpuExecutors) {
  chip::CpuExecutor cpu(built_chip(), 1);
  chip::CudaExecutor gpu(built_chip(), 1);
  const chip::GuestImage img = image("crc32");
  cpu.reset(0, img);
  gpu.reset(0, img);
  EXPECT_THROW(gpu.probe(0, -1, chip::Sublayer::Embed, "x"), chip::UsageError);
  Token a = format::kStartToken, b = a;
  std::size_t compared = 0;
  for (int t = 0; t < 400; ++t) {
    const bool rec = t % 37 == 3;
    cpu.set_probe_recording(rec);
    gpu.set_probe_recording(rec);
    a = cpu.step(0, a);
    b = gpu.step(0, b);
    ASSERT_EQ(a, b);
    if (!rec) continue;
    for (const chip::ProbePoint& p : built_chip()->config.probes)
      for (const std::string& f : p.fields) {
        ASSERT_EQ(cpu.probe(0, p.layer, p.after, f), gpu.probe(0, p.layer, p.after, f)) << f << " at step " << t;
        ++compared;
      }
  }
  EXPECT_GT(compared, 0u);
}

// The vector unit on the device: the first 30,000 steps of stories_vx (stories260K on the vector
// unit), free-running on the device in pieces of 5,000 steps (one launch each); every token and the
// state hash after each piece equal to the CPU executor's.
TEST_F(CudaEquivalence, StoriesVxFirst30000Steps) {
  const auto elf = cuda_test::find_guest_elf("stories_vx");
  if (!elf) GTEST_SKIP() << "stories_vx.elf not built";
  const chip::GuestImage img = engine::to_chip_image(engine::read_guest(*elf).image);
  constexpr std::size_t kSteps = 30000, kPiece = 5000;
  chip::CpuExecutor cpu(built_chip(), 1);
  chip::CudaExecutor gpu(built_chip(), 1);
  cpu.reset(0, img);
  gpu.reset(0, img);
  ASSERT_EQ(cpu.hash(0), gpu.hash(0)) << "after reset";
  const std::vector<StreamId> one = {0};
  Token next = format::kStartToken;
  for (std::size_t done = 0; done < kSteps; done += kPiece) {
    const std::vector<Token> want = cpu.free_running(0, next, kPiece);
    const std::vector<Token> first = {next};
    const std::vector<Token> got = gpu.free_run_batch(one, first, kPiece);
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t t = 0; t < kPiece; ++t) ASSERT_EQ(want[t], got[t]) << "stories_vx step " << done + t;
    ASSERT_EQ(cpu.hash(0), gpu.hash(0)) << "stories_vx state hash after step " << done + kPiece;
    next = want.back();
  }
  ASSERT_EQ(gpu.steps(0), kSteps);
}

// Batches wide enough for the narrower launch configurations (chip/src/gpu/cuda_kernels.cu: 1,024
// threads a block while every stream has an SM of its own, 256 up to four streams an SM, 128
// beyond): 200 streams are two an SM on a GPU of 100 to 199 SMs (132 on an H200: 256 threads),
// 600 are five or more an SM on up to 149 SMs (128 threads). Stream s runs guest s % |guests|
// (stories_vx among them when built): host-stepped batches with the order shuffled every step,
// then free running on the device in one launch; every token and every stream's final state hash
// are compared with one CPU stream per guest.
void wide_batch(std::size_t B, std::size_t host_steps, std::size_t device_steps, std::uint64_t seed) {
  SCOPED_TRACE("wide batch " + std::to_string(B) + ", seed " + std::to_string(seed));
  std::vector<std::string> guests = kGuests;
  if (cuda_test::find_guest_elf("stories_vx")) guests.push_back("stories_vx");
  const std::size_t G = guests.size(), n = host_steps + device_steps;
  std::cout << "[ batch    ] " << B << " streams of " << G << " guests, " << host_steps << " host-stepped + "
            << device_steps << " device steps, shuffle seed " << seed << "\n";
  std::vector<chip::GuestImage> images;
  for (const std::string& g : guests) images.push_back(image(g));
  // The CPU executor's tokens and final hash, once per guest.
  chip::CpuExecutor cpu(built_chip(), G);
  std::vector<std::vector<Token>> want(G);
  std::vector<std::uint64_t> want_hash(G);
  for (StreamId g = 0; g < G; ++g) {
    cpu.reset(g, images[g]);
    want[g] = cpu.free_running(g, format::kStartToken, n);
    want_hash[g] = cpu.hash(g);
  }
  chip::CudaExecutor gpu(built_chip(), B);
  for (StreamId s = 0; s < B; ++s) gpu.reset(s, images[s % G]);
  std::mt19937_64 rng(seed);
  std::vector<StreamId> order(B);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<Token> last(B, format::kStartToken);
  for (std::size_t t = 0; t < host_steps; ++t) {
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Token> in(B), out(B);
    for (std::size_t i = 0; i < B; ++i) in[i] = last[order[i]];
    gpu.step_batch(order, in, out);
    for (std::size_t i = 0; i < B; ++i) {
      ASSERT_EQ(want[order[i] % G][t], out[i]) << "stream " << order[i] << " (" << guests[order[i] % G] << ") step " << t;
      last[order[i]] = out[i];
    }
  }
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Token> firsts(B);
  for (std::size_t i = 0; i < B; ++i) firsts[i] = last[order[i]];
  const std::vector<Token> got = gpu.free_run_batch(order, firsts, device_steps);
  for (std::size_t i = 0; i < B; ++i) {
    const std::size_t g = order[i] % G;
    for (std::size_t t = 0; t < device_steps; ++t)
      ASSERT_EQ(want[g][host_steps + t], got[i * device_steps + t])
          << "stream " << order[i] << " (" << guests[g] << ") device step " << host_steps + t;
  }
  for (StreamId s = 0; s < B; ++s) {
    ASSERT_EQ(gpu.steps(s), n);
    ASSERT_EQ(want_hash[s % G], gpu.hash(s)) << "final state hash, stream " << s << " (" << guests[s % G] << ")";
  }
}

TEST_F(CudaEquivalence, Batch200Wide256Threads) { wide_batch(200, 60, 500, 200200); }
TEST_F(CudaEquivalence, Batch600Wide128Threads) { wide_batch(600, 40, 400, 600600); }

TEST_F(CudaEquivalence, BadUseIsAUsageError) {
  chip::CudaExecutor gpu(built_chip(), 2);
  const std::vector<StreamId> twice = {1, 1};
  std::vector<Token> in = {0, 0}, out(2);
  EXPECT_THROW(gpu.step_batch(twice, in, out), chip::UsageError);
  EXPECT_THROW(gpu.step(2, 0), chip::UsageError);
  EXPECT_THROW(gpu.step(0, built_chip()->config.vocab_size), chip::UsageError);
  EXPECT_THROW(gpu.set_audit(true), chip::UsageError);
  EXPECT_NO_THROW(gpu.set_audit(false));
}

}  // namespace
