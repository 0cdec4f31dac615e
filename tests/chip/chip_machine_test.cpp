// The accumulator machine on the CPU executor against its plain C++ definition.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "accumulator_model.hpp"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/machines/accumulator.hpp"
#include "test_util.hpp"

#ifndef LOCKSTEP_MACHINE_STEPS
#define LOCKSTEP_MACHINE_STEPS 100000
#endif

namespace lockstep::chip {
namespace {

using machines::AccumulatorMachine;
using test::AccumulatorModel;

constexpr std::size_t kSteps = LOCKSTEP_MACHINE_STEPS;

struct MachineSetup {
  AccumulatorMachine m;
  std::shared_ptr<const Chip> chip;
  GuestImage image;
  std::vector<std::uint8_t> a, b;
  std::uint8_t r = 0;
  explicit MachineSetup(std::uint32_t digits, std::uint64_t seed) : m(machines::compile_accumulator(digits)) {
    chip = std::make_shared<const Chip>(m.chip);
    std::mt19937_64 rng(seed);
    image = test::accumulator_image(rng, digits, m.a_address, m.b_section, &a, &b, &r);
  }
  AccumulatorModel model() const { return AccumulatorModel(m.digits, a, b, r); }
};

std::string describe(const AccumulatorMachine& m, Token t) {
  return t < m.tokens.vocab_size() ? m.tokens.name(t) : "<" + std::to_string(t) + ">";
}

// Counts mismatches, printing the first few with their step and tokens.
std::size_t count_mismatches(const AccumulatorMachine& m, const std::vector<Token>& got,
                             const std::vector<std::uint32_t>& trace) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != trace[i + 1]) {
      if (++bad <= 5)
        ADD_FAILURE() << "step " << i << ": input " << describe(m, trace[i]) << ", expected "
                      << describe(m, trace[i + 1]) << ", chip predicted " << describe(m, got[i]);
    }
  return bad;
}

TEST(AccumulatorMachine, TokenSpaceMatchesModelNumbering) {
  const AccumulatorMachine m = machines::compile_accumulator(16);
  const AccumulatorModel model(16, std::vector<std::uint8_t>(16), std::vector<std::uint8_t>(16), 0);
  EXPECT_EQ(m.tokens.token(m.kind_bos, 0), model.bos());
  EXPECT_EQ(m.tokens.token(m.kind_pos, 5), model.pos(5));
  EXPECT_EQ(m.tokens.token(m.kind_sum0, 7), model.sum(0, 7));
  EXPECT_EQ(m.tokens.token(m.kind_sum1, 255), model.sum(1, 255));
  EXPECT_EQ(m.tokens.token(m.kind_end, 200), model.end(200));
  EXPECT_EQ(m.tokens.vocab_size(), 1u + 16u + 768u);
  EXPECT_EQ(m.chip.layers.size(), 3u);
}

TEST(AccumulatorMachine, TeacherForced) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.TeacherForced", 1);
  MachineSetup s(16, seed);
  const auto trace = s.model().trace(kSteps);
  CpuExecutor ex(s.chip, 1);
  ex.reset(0, s.image);
  const auto got = ex.teacher_forced(0, std::span<const Token>(trace.data(), kSteps));
  EXPECT_EQ(count_mismatches(s.m, got, trace), 0u) << "seed " << seed;
  EXPECT_EQ(ex.steps(0), kSteps);
}

TEST(AccumulatorMachine, FreeRunning) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.FreeRunning", 2);
  MachineSetup s(16, seed);
  const auto trace = s.model().trace(kSteps);
  CpuExecutor ex(s.chip, 1);
  ex.reset(0, s.image);
  const auto got = ex.free_running(0, trace[0], kSteps);
  EXPECT_EQ(count_mismatches(s.m, got, trace), 0u) << "seed " << seed;
}

TEST(AccumulatorMachine, OtherWidthsFreeRunning) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.OtherWidthsFreeRunning", 3);
  for (std::uint32_t digits : {1u, 2u, 3u, 7u, 64u}) {
    MachineSetup s(digits, seed + digits);
    const auto trace = s.model().trace(5000);
    CpuExecutor ex(s.chip, 1);
    ex.reset(0, s.image);
    const auto got = ex.free_running(0, trace[0], 5000);
    EXPECT_EQ(count_mismatches(s.m, got, trace), 0u) << "digits " << digits << " seed " << seed + digits;
  }
}

TEST(AccumulatorMachine, AuditFindsNoViolation) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.AuditFindsNoViolation", 4);
  MachineSetup s(16, seed);
  const auto trace = s.model().trace(20000);
  CpuExecutor ex(s.chip, 1);
  ex.set_audit(true);
  ex.reset(0, s.image);
  const auto got = ex.teacher_forced(0, std::span<const Token>(trace.data(), 20000));
  EXPECT_EQ(count_mismatches(s.m, got, trace), 0u);
  const auto v = ex.audit_violation(0);
  EXPECT_FALSE(v.has_value()) << v->to_string();
}

TEST(AccumulatorMachine, ProbesNameTheFields) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.ProbesNameTheFields", 5);
  MachineSetup s(16, seed);
  AccumulatorModel model = s.model();
  const auto trace = s.model().trace(200);
  CpuExecutor ex(s.chip, 1);
  ex.set_probe_recording(true);
  ex.reset(0, s.image);
  for (std::size_t i = 0; i < 200; ++i) {
    const Token in = trace[i];
    // the model state before consuming `in` tells what the chip must read
    const AccumulatorModel before = model;
    model.step(in);
    ASSERT_EQ(ex.step(0, in), trace[i + 1]);
    EXPECT_EQ(ex.probe(0, -1, Sublayer::Embed, "kind").size(), 5u);
    if (in >= 1 && in < 17) {  // POS j: P <- j; a, b read at j
      const std::uint32_t j = in - 1;
      EXPECT_EQ(ex.probe(0, 0, Sublayer::Memory, "p"), std::vector<float>{static_cast<float>(j)});
      EXPECT_EQ(ex.probe(0, 0, Sublayer::Memory, "c"), std::vector<float>{static_cast<float>(before.C)});
      EXPECT_EQ(ex.probe(0, 1, Sublayer::Memory, "a"), std::vector<float>{static_cast<float>(before.A[j])});
      EXPECT_EQ(ex.probe(0, 1, Sublayer::Memory, "b"), std::vector<float>{static_cast<float>(before.B[j])});
      std::vector<float> oh(16, 0.0f);
      oh[j] = 1.0f;
      EXPECT_EQ(ex.probe(0, 0, Sublayer::Mlp, "p_oh"), oh);
      const std::uint32_t t = before.A[j] + before.B[j] + before.C;
      EXPECT_EQ(ex.probe(0, 1, Sublayer::Mlp, "next_payload"), std::vector<float>{static_cast<float>(t % 256)});
    }
  }
  EXPECT_THROW(ex.probe(0, 1, Sublayer::Mlp, "p_oh"), UsageError);
}

TEST(AccumulatorMachine, CheckpointRestoreContinuesIdentically) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.CheckpointRestoreContinuesIdentically", 6);
  MachineSetup s(16, seed);
  const auto trace = s.model().trace(10000);
  CpuExecutor ex(s.chip, 2);
  ex.reset(0, s.image);
  auto first = ex.teacher_forced(0, std::span<const Token>(trace.data(), 5000));
  const auto ckpt = ex.save(0);
  const std::uint64_t h_mid = ex.hash(0);
  auto rest_a = ex.teacher_forced(0, std::span<const Token>(trace.data() + 5000, 5000));
  ex.restore(1, ckpt);
  EXPECT_EQ(ex.hash(1), h_mid);
  EXPECT_EQ(ex.steps(1), 5000u);
  auto rest_b = ex.teacher_forced(1, std::span<const Token>(trace.data() + 5000, 5000));
  EXPECT_EQ(rest_a, rest_b);
  EXPECT_EQ(ex.hash(0), ex.hash(1));
  EXPECT_NE(ex.hash(0), h_mid);
  for (std::size_t i = 0; i < 5000; ++i) ASSERT_EQ(rest_a[i], trace[5001 + i]) << "step " << 5000 + i;
  // corrupt checkpoints are refused with FormatError
  auto bad = ckpt;
  bad.pop_back();
  EXPECT_THROW(ex.restore(1, bad), FormatError);
  bad = ckpt;
  bad[0] = 'X';
  EXPECT_THROW(ex.restore(1, bad), FormatError);
  bad = ckpt;
  bad[9] ^= 1;  // fingerprint
  EXPECT_THROW(ex.restore(1, bad), FormatError);
}

TEST(AccumulatorMachine, HashDependsOnStateOnly) {
  MachineSetup s(16, 7);
  CpuExecutor ex(s.chip, 2);
  ex.reset(0, s.image);
  ex.reset(1, s.image);
  EXPECT_EQ(ex.hash(0), ex.hash(1));
  GuestImage other = s.image;
  other.sections[s.m.b_section][3] ^= 1;
  ex.reset(1, other);
  EXPECT_NE(ex.hash(0), ex.hash(1));
}

TEST(AccumulatorMachine, BatchEqualsSingleStreams) {
  const std::uint64_t seed = test::seed_for("AccumulatorMachine.BatchEqualsSingleStreams", 8);
  constexpr std::size_t kStreams = 8, kN = 20000;
  const auto m = machines::compile_accumulator(16);
  auto chip = std::make_shared<const Chip>(m.chip);
  CpuExecutor ex(chip, kStreams);
  std::vector<std::vector<std::uint32_t>> traces;
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < kStreams; ++i) {
    std::vector<std::uint8_t> a, b;
    std::uint8_t r;
    const GuestImage img = test::accumulator_image(rng, 16, m.a_address, m.b_section, &a, &b, &r);
    ex.reset(static_cast<StreamId>(i), img);
    traces.push_back(AccumulatorModel(16, a, b, r).trace(kN));
  }
  std::vector<StreamId> ids(kStreams);
  for (std::size_t i = 0; i < kStreams; ++i) ids[i] = static_cast<StreamId>(i);
  std::vector<Token> in(kStreams, 0), out(kStreams);
  std::size_t bad = 0;
  for (std::size_t t = 0; t < kN; ++t) {
    ex.step_batch(ids, in, out);  // free running: feed own predictions
    for (std::size_t i = 0; i < kStreams; ++i)
      if (out[i] != traces[i][t + 1] && ++bad <= 5)
        ADD_FAILURE() << "stream " << i << " step " << t << ": expected " << traces[i][t + 1] << " got " << out[i];
    in = out;
  }
  EXPECT_EQ(bad, 0u);
}

TEST(AccumulatorMachine, SurvivesFileRoundTrip) {
  const auto m = machines::compile_accumulator(16);
  const auto bytes = serialize_chip(m.chip);
  const Chip back = parse_chip(bytes);
  EXPECT_EQ(serialize_chip(back), bytes);
  EXPECT_EQ(back.config.initialisers.size(), m.chip.config.initialisers.size());
}

TEST(AccumulatorMachine, MissingSectionIsAnImageError) {
  MachineSetup s(16, 9);
  CpuExecutor ex(s.chip, 1);
  GuestImage img = s.image;
  img.sections.clear();
  EXPECT_THROW(ex.reset(0, img), ImageError);
}

}  // namespace
}  // namespace lockstep::chip
