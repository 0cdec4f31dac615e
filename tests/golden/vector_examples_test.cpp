// Cross-check: the host golden model (golden/vx.cpp) against the worked examples of
// docs/spec/vectors/vector_<op>.json (gen_vector.py, an independent calculation from the spec;
// one file per op). Trap examples are skipped here: the golden model runs only valid story
// programs.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "../support/vector_examples.h"
#include "vx.h"

namespace lockstep::host {
namespace {

using nlohmann::json;

std::uint32_t hex32(const json& v) { return static_cast<std::uint32_t>(std::stoul(v.get<std::string>(), nullptr, 16)); }

struct Loaded {
  VxImage img;
  std::map<std::string, std::map<long, long>> spans;  // memory -> index -> value
};

void load_vector(const json& vec, VxImage& img, VxUnit* u) {
  auto runs = [&](const char* key, auto&& put) {
    if (!vec.contains(key)) return;
    for (const auto& r : vec[key]) {
      const long first = r["first"].get<long>();
      long i = 0;
      for (const auto& v : r["values"]) put(first + i++, v.get<long>());
    }
  };
  if (vec.contains("wmem"))
    for (const auto& c : vec["wmem"]) {
      const long chunk = c["chunk"].get<long>();
      for (int i = 0; i < 64; ++i) img.wmem[static_cast<std::size_t>(chunk * 64 + i)] = static_cast<std::int8_t>(c["values"][static_cast<std::size_t>(i)].get<int>());
    }
  runs("wscale", [&](long i, long v) { img.wscale[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(v); });
  if (!u) return;
  runs("vreg", [&](long i, long v) { u->vreg[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v); });
  runs("act", [&](long i, long v) { u->act[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(v); });
  runs("ash", [&](long i, long v) { u->aexp[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v); });
  runs("ksh", [&](long i, long v) { u->ke[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v); });
  runs("vsh", [&](long i, long v) { u->ve[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v); });
  for (const char* key : {"kcache", "vcache"})
    if (vec.contains(key))
      for (const auto& r : vec[key]) {
        const long row = r["row"].get<long>();
        for (int j = 0; j < 32; ++j)
          (key[0] == 'k' ? u->kc : u->vc)[static_cast<std::size_t>(row * 32 + j)] = static_cast<std::int8_t>(r["values"][static_cast<std::size_t>(j)].get<int>());
      }
}

TEST(VectorExamples, GoldenModelAgrees) {
  const std::vector<json> examples = test_support::load_vector_examples(LOCKSTEP_SOURCE_DIR);
  // 44 examples of the eight ops (VMAT 8, VEW 7, VRED 6, VQ 5, VLD 5, VMATR 5, VEXP 4, VFN 4), 12
  // of them traps (43 when vector_ops.json was split into one file per op); never fewer.
  EXPECT_GE(examples.size(), 44u);
  int run = 0;
  for (const auto& ex : examples) {
    if (ex["final"]["end"] == "trap") continue;
    const std::string name = ex["name"];
    const std::uint32_t word = hex32(ex["code"][0]);
    const int rd = (word >> 7) & 31, f3 = (word >> 12) & 7, rs1 = (word >> 15) & 31,
              rs2 = (word >> 20) & 31, f7 = static_cast<int>(word >> 25);
    std::uint32_t x[32] = {};
    for (const auto& [r, v] : ex["initial"]["regs"].items()) x[std::stoi(r.substr(1))] = hex32(v);
    const int A = x[rs1] & 0xFFFF, B = x[rs1] >> 16, C = x[rs2] & 0xFFFF, N = x[rs2] >> 16;
    VxImage img;
    img.wmem.assign(static_cast<std::size_t>(kChunks) * 64, 0);
    img.wscale.assign(kChunks, 0);
    load_vector(ex["initial"]["vector"], img, nullptr);
    VxUnit u(img);
    load_vector(ex["initial"]["vector"], img, &u);
    u.record = true;
    std::vector<std::uint8_t> ram;
    switch (f3) {
      case 0: {
        const int best = u.vmat(A, B, C, N, f7 & 7, (f7 >> 3) & 1);
        if ((f7 >> 3) & 1) {
          if (rd == 0) u.trace.resize(u.trace.size() - 4), u.trace.push_back({30, 0});
          else EXPECT_EQ(hex32(ex["final"]["regs"]["x" + std::to_string(rd)]), static_cast<std::uint32_t>(best)) << name;
        }
        break;
      }
      case 1: u.vmatr(f7 & 1, A, B, C, N); break;
      case 2: u.vq(f7 & 3, A, B, N); break;
      case 3: u.vexp((f7 & 7) + 1, A, B, C, N); break;
      case 4: u.vew(f7 & 3, (f7 >> 2) & 7, A, B, C, N); break;
      case 5: u.vfn(f7, A, B, N); break;
      case 6: u.vred(f7 & 3, f7 >> 2, A, B, N); break;
      case 7: {
        const auto& m = ex["initial"]["mem"][0];
        const std::string hex = m["hex"];
        ASSERT_EQ(hex32(m["addr"]), x[rs1]) << name;
        for (std::size_t k = 0; k + 1 < hex.size(); k += 2) ram.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(k, 2), nullptr, 16)));
        ram.resize(4 + static_cast<std::size_t>(x[rs2] >> 16), 0);
        u.vld(ram.data(), static_cast<int>(x[rs2] & 0xFFFF), static_cast<int>(x[rs2] >> 16));
        break;
      }
    }
    // tokens: the example's steps begin with the pc tokens of trace.md §4.0 (PCH_k, PCL: kinds
    // 44..48), which are the scalar machine's; the unit's tokens follow them.
    const auto& steps = ex["steps"];
    ASSERT_GE(steps.size(), 2u) << name;
    EXPECT_GE(steps[0]["id"].get<int>() / 256, 45) << name << ": PCH_k first";
    EXPECT_LE(steps[0]["id"].get<int>() / 256, 48) << name << ": PCH_k first";
    EXPECT_EQ(steps[1]["id"].get<int>() / 256, 44) << name << ": then PCL";
    ASSERT_EQ(u.trace.size() + 2, steps.size()) << name;
    for (std::size_t i = 0; i < u.trace.size(); ++i)
      EXPECT_EQ(256 * u.trace[i].kind + u.trace[i].payload, steps[i + 2]["id"].get<int>()) << name << " step " << i + 2;
    // final state: compare against a unit loaded from final.vector
    VxImage img2 = img;
    VxUnit want(img2);
    load_vector(ex["final"]["vector"], img2, &want);
    EXPECT_EQ(u.vreg, want.vreg) << name;
    EXPECT_EQ(u.act, want.act) << name;
    EXPECT_EQ(u.aexp, want.aexp) << name;
    EXPECT_EQ(u.kc, want.kc) << name;
    EXPECT_EQ(u.ke, want.ke) << name;
    EXPECT_EQ(u.vc, want.vc) << name;
    EXPECT_EQ(u.ve, want.ve) << name;
    ++run;
  }
  EXPECT_GE(run, 31);
  std::printf("checked %d non-trap examples of %zu in vector_<op>.json\n", run, examples.size());
}

}  // namespace
}  // namespace lockstep::host
