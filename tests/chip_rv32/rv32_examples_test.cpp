// The RV32 chip against the worked examples of docs/spec/vectors/scalar_*.json (written from the
// spec, independently of ref/ and chip/): every produced token is compared, teacher-forced and
// free-running, with the numerics audit on. Every example is claimed in full: there is no skip list.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vector_examples.h"

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/rv32/rv32_chip.hpp"
#include "rv32_test_util.hpp"

namespace lockstep::chip::rv32 {
namespace {

using nlohmann::json;

struct Example {
  std::string file, name;
  json ex;
};

std::vector<Example> load_examples() {
  std::vector<Example> out;
  for (const char* cls : {"alu", "bignum", "branch", "div", "ecall", "fence", "jump", "load", "mul", "shift",
                          "store", "trap", "zba"}) {
    const std::string path = std::string(LOCKSTEP_SOURCE_DIR) + "/docs/spec/vectors/scalar_" + cls + ".json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    const json doc = json::parse(in);
    for (const json& e : doc.at("examples")) out.push_back({cls, e.at("name").get<std::string>(), e});
  }
  return out;
}

const std::vector<Example>& examples() {
  static const std::vector<Example> ex = load_examples();
  return ex;
}

std::uint32_t hex32(const json& v) { return static_cast<std::uint32_t>(std::stoul(v.get<std::string>(), nullptr, 16)); }

GuestImage image_of(const json& ex) {
  const json& in = ex.at("initial");
  std::map<int, std::uint32_t> regs;
  for (const auto& [r, v] : in.at("regs").items()) regs[std::stoi(r.substr(1))] = hex32(v);
  std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> mem;
  for (const json& s : in.at("mem")) {
    const std::string hex = s.at("hex").get<std::string>();
    std::vector<std::uint8_t> bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      bytes.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    mem.emplace_back(hex32(s.at("addr")), bytes);
  }
  std::vector<std::uint32_t> code;
  for (const json& w : ex.at("code")) code.push_back(hex32(w));
  // acc: "0x" + 24 hex digits, most significant first -> 12 bytes, least significant first
  const std::string acc_hex = in.at("acc").get<std::string>().substr(2);
  std::vector<std::uint8_t> acc(12);
  for (std::size_t i = 0; i < 12; ++i)
    acc[i] = static_cast<std::uint8_t>(std::stoul(acc_hex.substr(acc_hex.size() - 2 * (i + 1), 2), nullptr, 16));
  GuestImage img = test::make_image(hex32(in.at("pc")), code, regs, mem, static_cast<std::uint8_t>(in.at("c").get<int>()), acc);
  // the initial VR (vector.md section 2.1: section .lockstep.vreg, word w as int32 LE at byte 4 w)
  if (in.contains("vector") && in.at("vector").contains("vreg")) {
    std::vector<std::uint8_t>& vreg = img.sections[".lockstep.vreg"];
    vreg.assign(4096, 0);
    for (const json& run : in.at("vector").at("vreg")) {
      std::uint32_t w = run.at("first").get<std::uint32_t>();
      for (const json& v : run.at("values")) {
        const auto u = static_cast<std::uint32_t>(v.get<std::int64_t>());
        for (std::uint32_t b = 0; b < 4; ++b) vreg.at(4 * w + b) = static_cast<std::uint8_t>(u >> (8 * b));
        ++w;
      }
    }
  }
  // ACT, ASH, WMEM, WSCALE (vector.md section 2.1: .lockstep.act byte i = ACT[i]; .lockstep.ash
  // byte b; .lockstep.wmem chunk c at byte 32 c, W[c][2k] in bits 3..0 and W[c][2k+1] in bits
  // 7..4 of byte 32 c + k; .lockstep.wscale uint16 LE at byte 2 c)
  if (in.contains("vector")) {
    const json& v = in.at("vector");
    auto bytes_of = [&](const char* key, const char* section, std::size_t size) {
      if (!v.contains(key)) return;
      std::vector<std::uint8_t>& out = img.sections[section];
      out.assign(size, 0);
      for (const json& run : v.at(key)) {
        std::size_t i = run.at("first").get<std::size_t>();
        for (const json& x : run.at("values")) out.at(i++) = static_cast<std::uint8_t>(x.get<std::int64_t>());
      }
    };
    bytes_of("act", ".lockstep.act", 384);
    bytes_of("ash", ".lockstep.ash", 6);
    bytes_of("ksh", ".lockstep.ksh", 320);
    bytes_of("vsh", ".lockstep.vsh", 320);
    for (const auto& [key, section] : {std::pair{"kcache", ".lockstep.kcache"}, std::pair{"vcache", ".lockstep.vcache"}}) {
      if (!v.contains(key)) continue;
      std::vector<std::uint8_t>& out = img.sections[section];
      out.assign(32 * 320, 0);
      for (const json& run : v.at(key)) {
        std::size_t i = 32 * run.at("row").get<std::size_t>();
        for (const json& x : run.at("values")) out.at(i++) = static_cast<std::uint8_t>(x.get<std::int64_t>());
      }
    }
    if (v.contains("wmem")) {
      std::vector<std::uint8_t>& out = img.sections[".lockstep.wmem"];
      out.assign(32 * 4152, 0);
      for (const json& run : v.at("wmem")) {
        const std::size_t c = run.at("chunk").get<std::size_t>();
        const json& w = run.at("values");
        for (std::size_t i = 0; i < 64; ++i)
          out.at(32 * c + i / 2) |= static_cast<std::uint8_t>((w.at(i).get<int>() & 15) << (4 * (i & 1)));
      }
    }
    if (v.contains("wscale")) {
      std::vector<std::uint8_t>& out = img.sections[".lockstep.wscale"];
      out.assign(2 * 4152, 0);
      for (const json& run : v.at("wscale")) {
        std::size_t c = run.at("first").get<std::size_t>();
        for (const json& x : run.at("values")) {
          const auto u = x.get<std::uint32_t>();
          out.at(2 * c) = static_cast<std::uint8_t>(u);
          out.at(2 * c + 1) = static_cast<std::uint8_t>(u >> 8);
          ++c;
        }
      }
    }
  }
  return img;
}

// Every step's token of the example, teacher-forced and free-running (test::expect_trace).
void expect_example(const Example& E) {
  std::vector<Token> want;
  for (const json& step : E.ex.at("steps")) want.push_back(step.at("id").get<Token>());
  test::expect_trace(image_of(E.ex), want, E.file + ":" + E.name);
}

class ScalarExample : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ScalarExample, TokensMatch) { expect_example(examples()[GetParam()]); }

std::string test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  const Example& E = examples()[info.param];
  std::string s = E.file + "_" + E.name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Vectors, ScalarExample, ::testing::Range<std::size_t>(0, examples().size()), test_name);

// The vector unit's examples (docs/spec/vectors/vector_<op>.json): every example of every op (the
// chip compiles all eight, docs/chip-design.md section 3.6), with VR, ACT, ASH, WMEM, WSCALE and
// the caches from the example's initial state (as the sections of vector.md section 2.1).
std::vector<Example> load_vector_examples() {
  std::vector<Example> out;
  for (const json& e : test_support::load_vector_examples(LOCKSTEP_SOURCE_DIR))
    out.push_back({"vector", e.at("name").get<std::string>(), e});
  return out;
}

const std::vector<Example>& vector_examples() {
  static const std::vector<Example> ex = load_vector_examples();
  return ex;
}

class VectorExample : public ::testing::TestWithParam<std::size_t> {};

TEST_P(VectorExample, TokensMatch) { expect_example(vector_examples()[GetParam()]); }

std::string vector_test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string s = vector_examples()[info.param].name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Vectors, VectorExample, ::testing::Range<std::size_t>(0, vector_examples().size()), vector_test_name);

TEST(VectorExamples, AllLoad) {
  // vector_<op>.json: 44 examples of the eight ops (VMAT 8, VEW 7, VRED 6, VQ 5, VLD 5, VMATR 5,
  // VEXP 4, VFN 4), every one loaded; never fewer
  EXPECT_GE(vector_examples().size(), 44u);
}

TEST(ScalarExamples, AllFilesLoad) {
  // 13 files, every instruction class; the count grows with the spec's examples, never shrinks to 0
  EXPECT_GE(examples().size(), 290u);
}

}  // namespace
}  // namespace lockstep::chip::rv32
