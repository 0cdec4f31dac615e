// vector_oracle_trace: the reference's half of the vector-spec oracle (docs/quality.md, "Outside
// oracles of the reference"). Generates random programs with the fuzz campaign's generator
// (campaign::generate over an --ops list, with their `.lockstep.*` sections), runs each on a
// fresh ref::Machine and writes, as JSON lines on stdout, what docs/spec/vectors/check_ref.py
// needs to run the same vector instructions on vector_model.py (an executable reading of
// vector.md) and compare every value they write:
//
//   {"program": I, "seed": S, "sections": {".lockstep.vreg": "<hex>", ...}}       per program
//   {"pc": P, "word": W, "x1": X1, "x2": X2, "rd_before": R, "rd_after": R',      per vector
//    "ram": "<hex>", "trap": CODE, "writes": {"vr": [[i, v], ...], "act": ...}}   instruction
//   {"end": I, "status": "exit"|"trap"|"limit", "trap_code": C, "retired": N,     per program
//    "steps": T, "sha256": "<hex>"}
//
// x1 = X(rs1), x2 = X(rs2) just before the instruction (unsigned); rd_before/rd_after = X(rd)
// around it; "ram" (VLD only, when [X(rs1), X(rs1) + 4 + n) is inside RAM): the record's bytes as
// RAM held them; "trap": the code when the instruction trapped, else null; "writes": per vector
// memory (vr, act, ash, wmem, wscale, kc, ksh, vc, vsh: vector.md section 2, flat indices as
// ref::VectorState lays them out), the elements whose value the instruction changed, with their
// new value (signed). "sha256": the final vector state, every memory in that order, each element
// as int32 little-endian. Scalar values are the reference's; the scalar machine has its own
// oracle (qemu-riscv32).
//
//   vector_oracle_trace --ops vq --seed 0x5eed --programs 200 [--first 0] [--max-steps N]
//
// Program k's seed is campaign::program_seed(seed, k), the one `lockstep fuzz --seed` gives it.
// Bad arguments: one line `lockstep: error: ...` on stderr, exit 2.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "lockstep/campaign/campaign.h"
#include "lockstep/ref/machine.h"
#include "sha256.h"

namespace {

using lockstep::ref::VectorState;
using nlohmann::json;

std::string hex(const std::vector<std::uint8_t>& bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(2 * bytes.size());
  for (std::uint8_t b : bytes) {
    s.push_back(d[b >> 4]);
    s.push_back(d[b & 15]);
  }
  return s;
}

// Calls f(name, before array, after array) for each memory, in the order of vector_model.MEMORIES.
template <class F>
void each_memory(const VectorState& a, const VectorState& b, F&& f) {
  f("vr", a.vr, b.vr);
  f("act", a.act, b.act);
  f("ash", a.ash, b.ash);
  f("wmem", a.wmem, b.wmem);
  f("wscale", a.wscale, b.wscale);
  f("kc", a.kc, b.kc);
  f("ksh", a.ksh, b.ksh);
  f("vc", a.vc, b.vc);
  f("vsh", a.vsh, b.vsh);
}

// The elements that differ between `before` and `after`, per memory: {"vr": [[i, v], ...]}.
json changed(const VectorState& before, const VectorState& after) {
  json out = json::object();
  each_memory(before, after, [&](const char* name, const auto& x, const auto& y) {
    if (std::equal(x.begin(), x.end(), y.begin())) return;
    json list = json::array();
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i] != y[i]) list.push_back({i, static_cast<std::int64_t>(y[i])});
    out[name] = std::move(list);
  });
  return out;
}

std::string state_sha256(const VectorState& s) {
  std::vector<std::uint8_t> bytes;
  each_memory(s, s, [&](const char*, const auto& x, const auto&) {
    for (auto v : x) {
      const auto w = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
      for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<std::uint8_t>(w >> (8 * k)));
    }
  });
  return lockstep::test_support::sha256(bytes);
}

// Runs program `p` on a fresh reference machine, writing its lines.
void trace_program(const lockstep::campaign::Program& p, std::uint64_t max_steps, std::ostream& out) {
  namespace ref = lockstep::ref;
  json head = {{"program", p.index}, {"seed", p.seed}, {"sections", json::object()}};
  if (!p.vreg.empty()) head["sections"][".lockstep.vreg"] = hex(p.vreg);
  for (const auto& [name, bytes] : p.sections) head["sections"][name] = hex(bytes);
  out << head.dump() << '\n';

  ref::Machine m;
  m.load(p.image());
  VectorState before;
  while (m.status() == ref::Status::kRunning && m.steps() < max_steps) {
    const std::uint32_t pc = m.pc();
    const bool fetchable = pc % 4 == 0 && pc >= ref::kRamBase && pc <= ref::kRamEnd - 4;
    const std::uint32_t word = fetchable ? m.read_word(pc) : 0;
    if (!fetchable || (word & 0x7f) != 0x2b) {
      m.step();
      continue;
    }
    const unsigned rd = (word >> 7) & 31, rs1 = (word >> 15) & 31, rs2 = (word >> 20) & 31, f3 = (word >> 12) & 7;
    const std::uint32_t x1 = m.reg(rs1), x2 = m.reg(rs2), rd_before = m.reg(rd);
    json line = {{"pc", pc}, {"word", word}, {"x1", x1}, {"x2", x2}, {"rd_before", rd_before}};
    if (f3 == 7) {  // VLD (vector/vld.md §1): the record, when it lies inside RAM
      const std::uint64_t n = x2 >> 16, end = std::uint64_t{x1} + 4 + n;
      if (n >= 1 && x1 >= ref::kRamBase && end <= ref::kRamEnd)
        line["ram"] = hex(m.read_memory(x1, static_cast<std::uint32_t>(4 + n)));
    }
    before = m.vector();
    m.step();
    const bool trapped = m.status() == ref::Status::kTrapped;
    line["trap"] = trapped ? json(m.trap_code()) : json(nullptr);
    line["rd_after"] = m.reg(rd);
    line["writes"] = changed(before, m.vector());
    out << line.dump() << '\n';
  }
  const char* status = m.status() == ref::Status::kExited    ? "exit"
                       : m.status() == ref::Status::kTrapped ? "trap"
                                                             : "limit";
  out << json{{"end", p.index},       {"status", status},     {"trap_code", m.trap_code()},
              {"retired", m.instructions_retired()}, {"steps", m.steps()}, {"sha256", state_sha256(m.vector())}}
             .dump()
      << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Random vector-op programs of the fuzz generator on the reference, as JSON lines "
               "(docs/spec/vectors/check_ref.py reads them)"};
  std::string ops = "vector";
  std::uint64_t seed = 0, programs = 1, first = 0, max_steps = 2'000'000;
  app.add_option("--ops", ops, "an `lockstep fuzz --ops` list (e.g. vq)");
  app.add_option("--seed", seed, "the campaign seed (program k: campaign::program_seed(seed, k))")->required();
  app.add_option("--programs", programs, "how many programs");
  app.add_option("--first", first, "the first program's index");
  app.add_option("--max-steps", max_steps, "trace steps per program at most");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 2;
  }
  try {
    const auto rows = lockstep::campaign::select_ops(ops);
    std::ios::sync_with_stdio(false);
    for (std::uint64_t k = first; k < first + programs; ++k)
      trace_program(lockstep::campaign::generate(lockstep::campaign::program_seed(seed, k), k, rows), max_steps,
                    std::cout);
    std::cout.flush();
    return std::cout ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 2;
  }
}
