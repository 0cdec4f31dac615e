// Steps per second of the accumulator machine (chip/machines/accumulator.hpp) on the CPU
// executor: one stream, and batches of independent streams (items = stream-steps).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/machines/accumulator.hpp"

namespace {

using namespace lockstep::chip;

GuestImage image_for(const machines::AccumulatorMachine& m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  GuestImage img;
  std::vector<std::uint8_t> a(m.digits), b(m.digits);
  for (auto& x : a) x = static_cast<std::uint8_t>(rng());
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  img.segments.push_back({m.a_address, a});
  img.sections[m.b_section] = b;
  img.entry = rng() & 0xFFFF;
  return img;
}

void BM_AccumulatorSingleStream(benchmark::State& state) {
  const auto m = machines::compile_accumulator(16);
  CpuExecutor ex(std::make_shared<const Chip>(m.chip), 1);
  ex.set_audit(state.range(0) != 0);
  ex.reset(0, image_for(m, 1));
  Token t = 0;
  for (auto _ : state) {
    t = ex.step(0, t);
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) ? "audit on" : "audit off");
}
BENCHMARK(BM_AccumulatorSingleStream)->Arg(0)->Arg(1);

void BM_AccumulatorBatch(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = machines::compile_accumulator(16);
  CpuExecutor ex(std::make_shared<const Chip>(m.chip), n);
  std::vector<StreamId> ids(n);
  for (std::size_t i = 0; i < n; ++i) {
    ids[i] = static_cast<StreamId>(i);
    ex.reset(ids[i], image_for(m, i + 1));
  }
  std::vector<Token> in(n, 0), out(n);
  for (auto _ : state) {
    ex.step_batch(ids, in, out);
    in.swap(out);
  }
  benchmark::DoNotOptimize(in.data());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_AccumulatorBatch)->Arg(1)->Arg(8)->Arg(64)->Arg(512);

void BM_CompileAccumulator(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(machines::compile_accumulator(16).chip.config.d_model);
}
BENCHMARK(BM_CompileAccumulator)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
