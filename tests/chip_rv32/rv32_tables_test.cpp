// The RV32 chip's fixed vector tables (rv32_vector_tables(): what compile_rv32_chip() writes into
// the weights) against docs/spec/vector.md section 3: each table's entry count and its SHA-256 over
// the entries as int32 little-endian, in index order. The counts and digests are read from the
// doc's table at test time (LOCKSTEP_SOURCE_DIR), so the doc stays their single source.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/chip/rv32/rv32_chip.hpp"
#include "sha256.h"

namespace lockstep::chip::rv32 {
namespace {

struct Published {
  std::size_t entries = 0;
  std::string sha256;
};

// The rows "| `NAME` | entries | `digest` |" of vector.md section 3 (between "## 3." and "## 4."),
// by table name. Throws std::runtime_error if the doc cannot be read.
std::map<std::string, Published> published_digests() {
  const std::string path = std::string(LOCKSTEP_SOURCE_DIR) + "/docs/spec/vector.md";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::regex row(R"(^\|\s*`([A-Z]+)`\s*\|\s*([0-9]+)\s*\|\s*`([0-9a-f]{64})`\s*\|\s*$)");
  std::map<std::string, Published> out;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line.rfind("## 3.", 0) == 0;
    std::smatch m;
    if (in_section && std::regex_match(line, m, row)) out[m[1]] = {std::stoul(m[2]), m[3]};
  }
  return out;
}

TEST(Rv32VectorTables, MatchVectorMdSection3) {
  const std::map<std::string, Published> doc = published_digests();
  // the doc's table lists EXP, RSQ, RCP, SIG, COS and SIN
  ASSERT_EQ(doc.size(), 6u) << "rows read from vector.md section 3";
  const VectorTables t = rv32_vector_tables();
  const std::pair<const char*, const std::vector<std::int32_t>*> tables[] = {
      {"EXP", &t.exp}, {"RSQ", &t.rsq}, {"RCP", &t.rcp}, {"SIG", &t.sig}, {"COS", &t.cos}, {"SIN", &t.sin}};
  for (const auto& [name, entries] : tables) {
    const auto it = doc.find(name);
    ASSERT_NE(it, doc.end()) << name << " is not in vector.md section 3's table";
    EXPECT_EQ(entries->size(), it->second.entries) << name;
    EXPECT_EQ(test_support::table_digest(entries->begin(), entries->end()), it->second.sha256) << name;
  }
  // the counts of section 3's index ranges: RSQ 64..255, RCP 128..255, SIG 0..1023, COS/SIN 64 x 4
  EXPECT_EQ(doc.at("RSQ").entries, 192u);
  EXPECT_EQ(doc.at("RCP").entries, 128u);
  EXPECT_EQ(doc.at("SIG").entries, 1024u);
  EXPECT_EQ(doc.at("EXP").entries, 1024u);
  EXPECT_EQ(doc.at("COS").entries, 256u);
  EXPECT_EQ(doc.at("SIN").entries, 256u);
}

TEST(Rv32VectorTables, Sha256KnownAnswers) {
  // FIPS 180-4 examples (so that a digest mismatch above is the table's, not the hash's)
  EXPECT_EQ(test_support::sha256({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(test_support::sha256({'a', 'b', 'c'}), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(test_support::sha256({two_blocks.begin(), two_blocks.end()}),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace lockstep::chip::rv32
