// The worked examples of docs/spec/vectors/*.json (format: that folder's
// README.md), run through ref/.  Every file must parse and follow the
// layout; a malformed file fails.  With no files yet the suite passes only
// because the folder has none.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path vectors_dir() { return fs::path(LOCKSTEP_SOURCE_DIR) / "docs" / "spec" / "vectors"; }

std::vector<std::string> vector_files() {
  std::vector<std::string> out;
  if (fs::is_directory(vectors_dir())) {
    for (const auto& e : fs::directory_iterator(vectors_dir())) {
      if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "0x" + exactly `digits` lowercase hex digits (README: machine values are strings).
std::vector<std::uint8_t> hex_bytes(const std::string& s) {
  if (s.size() % 2) throw std::runtime_error("odd-length hex string '" + s + "'");
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < s.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return out;
}
u32 hex32(const json& v) {
  const auto s = v.get<std::string>();
  if (s.size() != 10 || s.rfind("0x", 0) != 0) throw std::runtime_error("not a 0x%08x value: '" + s + "'");
  return static_cast<u32>(std::stoul(s, nullptr, 16));
}
sem::Acc96 hex96(const json& v) {
  const auto s = v.get<std::string>();
  if (s.size() != 26 || s.rfind("0x", 0) != 0) throw std::runtime_error("not a 0x + 24 hex digit acc: '" + s + "'");
  sem::Acc96 a;
  for (int limb = 0; limb < 3; ++limb) a.limb[limb] = static_cast<u32>(std::stoul(s.substr(2 + 8 * (2 - limb), 8), nullptr, 16));
  return a;
}
unsigned reg_index(const std::string& name) {
  if (name.size() < 2 || name[0] != 'x') throw std::runtime_error("bad register name '" + name + "'");
  const unsigned r = static_cast<unsigned>(std::stoul(name.substr(1)));
  if (r < 1 || r > 31) throw std::runtime_error("bad register name '" + name + "'");
  return r;
}

class SpecVectors : public ::testing::TestWithParam<std::string> {};

// vector.md §8: "complete nonzero contents" of the vector memories as runs.
VectorState vector_state(const json& v) {
  VectorState s;
  auto runs = [&](const char* key, auto& arr, long lo, long hi) {
    if (!v.contains(key)) return;
    for (const auto& run : v.at(key)) {
      const long first = run.at("first").get<long>();
      const auto& values = run.at("values");
      for (std::size_t i = 0; i < values.size(); ++i) {
        const long x = values[i].get<long>();
        if (first + static_cast<long>(i) >= static_cast<long>(arr.size()) || x < lo || x > hi) {
          throw std::runtime_error(std::string("vector.") + key + ": value or index out of range");
        }
        arr[static_cast<std::size_t>(first) + i] = static_cast<std::remove_reference_t<decltype(arr[0])>>(x);
      }
    }
  };
  runs("vreg", s.vr, INT32_MIN, INT32_MAX);
  runs("act", s.act, -128, 127);
  runs("ash", s.ash, 0, 25);
  runs("wscale", s.wscale, 0, 65535);
  runs("ksh", s.ksh, 0, 25);
  runs("vsh", s.vsh, 0, 25);
  auto rows = [&](const char* key, const char* index, auto& arr, std::size_t width, long lo, long hi) {
    if (!v.contains(key)) return;
    for (const auto& row : v.at(key)) {
      const std::size_t r = row.at(index).get<std::size_t>();
      const auto& values = row.at("values");
      if (values.size() != width || (r + 1) * width > arr.size()) throw std::runtime_error(std::string("vector.") + key + ": bad row");
      for (std::size_t i = 0; i < width; ++i) {
        const long x = values[i].get<long>();
        if (x < lo || x > hi) throw std::runtime_error(std::string("vector.") + key + ": value out of range");
        arr[r * width + i] = static_cast<std::int8_t>(x);
      }
    }
  };
  rows("wmem", "chunk", s.wmem, kChunkLen, -8, 7);
  rows("kcache", "row", s.kc, kCacheRowLen, -128, 127);
  rows("vcache", "row", s.vc, kCacheRowLen, -128, 127);
  for (const auto& [key, value] : v.items()) {
    static const std::set<std::string> known = {"vreg", "act", "ash", "wscale", "ksh", "vsh", "wmem", "kcache", "vcache"};
    if (!known.count(key)) throw std::runtime_error("unknown vector memory '" + key + "'");
  }
  return s;
}

template <class A>
void expect_same(const A& got, const A& want, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << what << "[" << i << "]: expected " << static_cast<long>(want[i]) << ", got " << static_cast<long>(got[i]);
      return;
    }
  }
}

void run_example(const json& ex) {
  const std::string name = ex.at("name").get<std::string>();
  SCOPED_TRACE("example " + name);
  const json& in = ex.at("initial");
  Machine m;
  const u32 pc = hex32(in.at("pc"));
  m.set_pc(pc);
  std::array<u32, 32> regs{};
  for (const auto& [r, v] : in.at("regs").items()) {
    regs[reg_index(r)] = hex32(v);
    m.set_reg(reg_index(r), hex32(v));
  }
  for (const auto& span : in.at("mem")) m.write_memory(hex32(span.at("addr")), hex_bytes(span.at("hex").get<std::string>()));
  const auto& code = ex.at("code");
  for (std::size_t k = 0; k < code.size(); ++k) {
    const u32 w = hex32(code[k]);
    m.write_memory(pc + 4 * static_cast<u32>(k), std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&w), 4));
  }
  m.set_carry(in.at("c").get<u32>());
  m.set_acc(hex96(in.at("acc")));
  if (in.contains("vector")) m.vector() = vector_state(in.at("vector"));

  const auto& steps = ex.at("steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const u32 want = steps[i].at("id").get<u32>();
    const auto got = m.next_token();
    ASSERT_TRUE(got.has_value()) << "step " << i + 1 << ": run ended early, expected " << steps[i].at("tok");
    ASSERT_EQ(*got, want) << "step " << i + 1 << " (pc " << steps[i].at("pc").get<std::string>() << "): expected "
                          << steps[i].at("tok").get<std::string>() << ", got " << format::token_name(*got);
    EXPECT_EQ(format::token_name(want), steps[i].at("tok").get<std::string>()) << "format::token_name spelling";
  }
  const json& fin = ex.at("final");
  const std::string end = fin.at("end").get<std::string>();
  if (end == "running") {
    EXPECT_EQ(m.status(), Status::kRunning);
    EXPECT_FALSE(m.active() && m.status() != Status::kRunning);
  } else if (end == "exit") {
    EXPECT_EQ(m.status(), Status::kExited);
    EXPECT_EQ(m.exit_status(), fin.at("exit_status").get<u32>());
  } else if (end == "trap") {
    EXPECT_EQ(m.status(), Status::kTrapped);
    EXPECT_EQ(m.trap_code(), fin.at("trap_code").get<u32>());
  } else {
    FAIL() << "final.end must be running, exit or trap; got '" << end << "'";
  }
  if (fin.contains("pc")) {
    EXPECT_EQ(m.pc(), hex32(fin.at("pc")));
  }
  for (const auto& [r, v] : fin.at("regs").items()) regs[reg_index(r)] = hex32(v);
  for (unsigned r = 1; r < 32; ++r) EXPECT_EQ(m.reg(r), regs[r]) << "x" << r;
  for (const auto& span : fin.at("mem")) {
    const u32 addr = hex32(span.at("addr"));
    const auto want = hex_bytes(span.at("hex").get<std::string>());
    EXPECT_EQ(m.read_memory(addr, static_cast<u32>(want.size())), want) << "memory at " << span.at("addr");
  }
  EXPECT_EQ(m.carry(), fin.at("c").get<u32>());
  EXPECT_EQ(m.acc(), hex96(fin.at("acc")));
  EXPECT_EQ(m.instructions_retired(), fin.at("retired").get<std::uint64_t>());
  if (fin.contains("vector") || in.contains("vector")) {
    const VectorState want = vector_state(fin.contains("vector") ? fin.at("vector") : json::object());
    const VectorState& got = m.vector();
    expect_same(got.vr, want.vr, "VR");
    expect_same(got.act, want.act, "ACT");
    expect_same(got.ash, want.ash, "ASH");
    expect_same(got.wmem, want.wmem, "WMEM");
    expect_same(got.wscale, want.wscale, "WSCALE");
    expect_same(got.kc, want.kc, "KC");
    expect_same(got.vc, want.vc, "VC");
    expect_same(got.ksh, want.ksh, "KSH");
    expect_same(got.vsh, want.vsh, "VSH");
  }
  const auto console = [](const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
  EXPECT_EQ(console(m.console_out()), fin.contains("stdout") ? hex_bytes(fin.at("stdout").get<std::string>()) : std::vector<std::uint8_t>{});
  EXPECT_EQ(console(m.console_err()), fin.contains("stderr") ? hex_bytes(fin.at("stderr").get<std::string>()) : std::vector<std::uint8_t>{});
}

TEST_P(SpecVectors, EveryExampleMatches) {
  const fs::path path = vectors_dir() / GetParam();
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    FAIL() << path << " is not valid JSON: " << e.what();
  }
  ASSERT_TRUE(doc.is_object()) << path;
  ASSERT_EQ(doc.value("trace_version", ""), "trace-v3") << path;
  ASSERT_TRUE(doc.contains("examples") && doc["examples"].is_array() && !doc["examples"].empty())
      << path << ": no \"examples\" array";
  for (const auto& ex : doc["examples"]) {
    try {
      run_example(ex);
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ": malformed example " << ex.value("name", "?") << ": " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, SpecVectors, ::testing::ValuesIn(vector_files()),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.size() - 5);
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SpecVectors);

TEST(SpecVectorsFolder, EmptyOnlyWhenThereAreNoFiles) {
  // Passes with zero files only when the folder really has no .json file.
  if (vector_files().empty()) {
    EXPECT_TRUE(!fs::exists(vectors_dir()) || std::none_of(fs::directory_iterator(vectors_dir()), fs::directory_iterator(),
                                                           [](const auto& e) { return e.path().extension() == ".json"; }));
  } else {
    SUCCEED() << vector_files().size() << " files";
  }
}

// vector.md §8: each op of the registry (ref/src/vector/<op>.cpp) has its worked examples in
// vector_<op>.json, at least three, one of them an edge case, every one running that op; 43 in
// all when vector_ops.json was split into one file per op (never fewer).
TEST(SpecVectorsFolder, EachVectorOpHasItsOwnFile) {
  std::size_t total = 0;
  for (const VectorOpRow& op : vector_ops()) {
    const fs::path path = vectors_dir() / ("vector_" + std::string(op.mnemonic) + ".json");
    std::ifstream in(path);
    ASSERT_TRUE(in) << "no worked examples for " << op.mnemonic << ": " << path;
    const json doc = json::parse(in);
    EXPECT_EQ(doc.value("class", ""), op.mnemonic) << path;
    std::size_t n = 0, edge = 0;
    for (const json& ex : doc.at("examples")) {
      const u32 word = hex32(ex.at("code").at(0));
      EXPECT_EQ(word & 0x7f, 0x2bu) << path << ": " << ex.value("name", "?");
      EXPECT_EQ((word >> 12) & 7, op.f3) << path << ": " << ex.value("name", "?") << " runs another op";
      ++n;
      edge += ex.value("edge", false);
    }
    EXPECT_GE(n, 3u) << op.mnemonic;
    EXPECT_GE(edge, 1u) << op.mnemonic;
    total += n;
  }
  EXPECT_GE(total, 44u);
  std::printf("%zu vector examples in %zu vector_<op>.json files\n", total, vector_ops().size());
}

}  // namespace
}  // namespace lockstep::ref::test
