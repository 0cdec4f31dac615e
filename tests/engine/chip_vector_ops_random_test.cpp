// Random programs of each vector op (vector.md section 4; one case per op in fuzz/ops, the
// registry) through the built RV32 chip and the reference in lock-step, teacher-forced and
// free-running, every step compared: 0 mismatches. One parameterised test over the registry
// (issue 29; it replaces the eight per-op tests chip_{vld,vew,vfn,vred,vq,vexp,vmat,vmatr}_random).
//
// The programs are the fuzz campaign's (campaign::generate, the op's case drawing its words) over
// an --ops list of the op and the ops that feed it (kRuns): random edge values in x1..x30, a
// 256-byte scratch area at x31, a `.lockstep.vreg` (and the memories VMAT and VMATR read) drawn
// for the value classes of the selected ops (OpCase::fill_vr, fill_memories: the profiles of the
// per-op tests this one replaced: thresholds and ties of VQ's E and rnd, VEXP's index clamps and
// ties, VMAT's and VMATR's saturating and tied sums, VRED's saturating, tied and MAX-tied
// reductions) or edge-biased, a short body (kMinBody..kMaxBody items) of loops, scalar
// instructions and the ops' words whose sources read earlier destinations, then the exit.
// Programs 4j + 3 (one in four) end their body with an instruction of the op under test drawn to
// trap: the one condition of code codes()[(j / 2) mod |codes|] alone for even j (so that each
// code is raised alone), any combination for odd j.
//
// Checks: 0 mismatches; each program ends in "exit", or in "trap" exactly when it was drawn to,
// with the code that the op's case and the reference both give (campaign::run_vector_ops: every
// vector word the reference ran is one its case calls valid); every code of the op was raised;
// every coverage bucket of the op (OpCase::buckets) was reached: its modes and operand layouts and
// the value classes of its arithmetic, which the case computes from vector.md over the vector
// state just before each instruction (ops::Executed): e.g. VQ groups with e_k = 0, 1, 2, 8, 16,
// 24, 25, VEXP indices i = 1023 unclamped and clamped, VMAT's argmax ties, VMATR V's clamped
// probabilities, VRED's MAX ties, VEW's saturation and ties per mode, VFN's powers of two (the
// per-op tests' coverage assertions, one bucket each). A failure line names the op, the run seed,
// the program, and the trapping instruction's parameters (OpCase::describe); a bucket not reached
// names the op, the bucket and the seed.
//
// The default suite runs each op's share (kRuns); the `long` label runs 10,000 programs per op
// (ctest -L long -R chip_vector_ops_random), printing its progress every 1,024 programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "chip_programs.h"
#include "lockstep/campaign/campaign.h"
#include "lockstep/ops/op_case.h"

namespace lockstep::engine {
namespace {

#ifdef LOCKSTEP_CHIP_VECTOR_OPS_FULL
constexpr bool kFull = true;
#else
constexpr bool kFull = false;
#endif
constexpr unsigned kFullPrograms = 10000;
// Bodies of 4..20 items (the campaign's default is 16..63): about as many steps per program as the
// per-op tests this one replaced, so that the default suite's share costs about what it did.
constexpr unsigned kMinBody = 4, kMaxBody = 20;

// One op's run: the op (a registry name), the --ops list (the op and what feeds it), the programs
// in the default suite, the streams per engine run, the run seed.
struct OpRun {
  const char* op;
  const char* list;
  unsigned programs, batch;
  std::uint64_t seed;
};

void PrintTo(const OpRun& r, std::ostream* os) { *os << r.op << " (--ops " << r.list << ", seed " << r.seed << ")"; }

// In f3 order, as the registry.
const OpRun kRuns[] = {
    {"vmat", "vmat,vq,vew.add", 96, 32, 0x5eed'07ed'0015ull},   {"vmatr", "vmatr,vq,vew.add", 96, 32, 0x5eed'07ed'0016ull},
    {"vq", "vq,vew.add", 256, 64, 0x5eed'07ed'0014ull},         {"vexp", "vexp,vew.add", 192, 64, 0x5eed'07ed'0015ull},
    {"vew", "vew,vld", 36, 32, 0x5eed'0e3a'0010ull},            {"vfn", "vfn,vew.add,vew.mul", 48, 48, 0x5eed'0f70'0012ull},
    {"vred", "vred,vew.add", 256, 64, 0x5eed'07ed'0013ull},     {"vld", "vld,alu,load,store", 64, 32, 0x5eed'0f1d'0008ull},
};

class ChipVectorOpsRandom : public ::testing::TestWithParam<OpRun> {
 protected:
  void run_programs(Mode mode);
};

void ChipVectorOpsRandom::run_programs(Mode mode) {
  if (!have_built_chip()) GTEST_SKIP() << "no built chip in this build (chip/rv32)";
  const OpRun& run = GetParam();
  const ops::OpCase* c = ops::find(run.op);
  ASSERT_NE(c, nullptr) << run.op;
  campaign::DrawOptions draw;
  const auto selected = campaign::select_ops(run.list, &draw.vew_modes, &draw.vfn_fns, &draw.vred_modes);
  draw.trap_op = run.op;
  draw.min_body = kMinBody;
  draw.register_edges = !c->register_edge_buckets(c->all_modes()).empty();  // VEW, VFN: their layout buckets
  draw.max_body = kMaxBody;
  const std::vector<unsigned> codes = c->codes();
  const unsigned count = kFull ? kFullPrograms : run.programs;
  auto program = [&](unsigned i) {
    campaign::DrawOptions o = draw;
    o.trap = i % 4 == 3;
    const unsigned j = i / 4;
    o.trap_code = j % 2 == 0 ? codes[j / 2 % codes.size()] : 0;
    return campaign::generate(campaign::program_seed(run.seed, i), i, selected, o);
  };
  auto what = [&](unsigned i, const campaign::Program& p) {
    return std::string(run.op) + " run seed " + std::to_string(run.seed) + " program " + std::to_string(i) +
           (p.trap_code ? " (drawn to trap: " + p.trap_vars + ")" : "");
  };

  std::vector<campaign::Program> batch;  // the programs of the batch being run
  unsigned first_of_batch = 0;
  std::map<unsigned, unsigned> raised;   // code -> programs
  ops::Buckets buckets;
  std::uint64_t valid = 0;
  const std::uint64_t steps = test::run_chip_programs(
      count, run.batch, mode,
      [&](unsigned first, unsigned n) {
        batch.clear();
        first_of_batch = first;
        std::vector<Guest> guests;
        for (unsigned i = first; i < first + n; ++i) {
          batch.push_back(program(i));
          guests.push_back(batch.back().guest());
        }
        return guests;
      },
      [&](unsigned i) { return what(i, batch[i - first_of_batch]); }, 300,
      [&](unsigned i, const StreamResult& st) {
        const campaign::Program& p = batch[i - first_of_batch];
        const campaign::VectorRun ref_run = campaign::run_vector_ops(p);
        for (const std::string& d : ref_run.disagreements) ADD_FAILURE() << what(i, p) << ": " << d;
        for (const auto& [name, n] : ref_run.buckets.count(run.op) ? ref_run.buckets.at(run.op) : ops::Buckets{})
          buckets[name] += n;
        valid += ref_run.executed.count(run.op) ? ref_run.executed.at(run.op) : 0;
        EXPECT_TRUE(st.end == "exit" || st.end == "trap") << what(i, p) << ": ended " << st.end;
        EXPECT_EQ(st.end == "trap", p.trap_code != 0) << what(i, p) << ": ended " << st.end << " (code " << st.trap_code << ")";
        if (st.end == "trap") {
          ++raised[st.trap_code];
          EXPECT_EQ(st.trap_code, p.trap_code) << what(i, p);
          EXPECT_EQ(ref_run.trap_code, p.trap_code) << what(i, p);
        }
        if (kFull && ((i + 1) % 1024 == 0 || i + 1 == count))
          std::cout << "[ chip     ] " << run.op << " " << to_string(mode) << ": programs 0.." << i << " compared (seed "
                    << run.seed << ")" << std::endl;
      });
  if (::testing::Test::HasFailure()) return;
  std::string by_code;
  for (const auto& [code, n] : raised) by_code += " " + std::to_string(code) + ":" + std::to_string(n);
  for (const unsigned code : codes) EXPECT_GT(raised[code], 0u) << run.op << " never raised " << code << ", seed " << run.seed;
  for (const std::string& b : c->buckets(c->all_modes()))
    EXPECT_GT(buckets[b], 0u) << run.op << ": not generated: [" << b << "], seed " << run.seed;
  std::string reached;
  for (const auto& [name, n] : buckets) reached += " [" + name + "] " + std::to_string(n);
  std::cout << "[ chip     ] " << count << " random " << run.op << " programs (--ops " << run.list << "; traps" << by_code
            << "; " << valid << " valid " << run.op << " instructions:" << reached << "), " << to_string(mode) << ": "
            << steps << " steps compared, 0 mismatches (seed " << run.seed << ")\n";
}

TEST_P(ChipVectorOpsRandom, TeacherForced) { run_programs(Mode::kForced); }
TEST_P(ChipVectorOpsRandom, FreeRunning) { run_programs(Mode::kFree); }

INSTANTIATE_TEST_SUITE_P(Ops, ChipVectorOpsRandom, ::testing::ValuesIn(kRuns),
                         [](const ::testing::TestParamInfo<OpRun>& info) { return std::string(info.param.op); });

// The runs are the registry's ops, each once.
TEST(ChipVectorOpsRegistry, EveryOpHasARun) {
  ASSERT_EQ(std::size(kRuns), ops::registry().size());
  for (std::size_t i = 0; i < std::size(kRuns); ++i) EXPECT_EQ(ops::registry()[i]->name(), kRuns[i].op);
}

}  // namespace
}  // namespace lockstep::engine
