// The safetensors header rules of chip-format.md §3 that an outside report probed (issue 28):
// the N header bytes are '{', one JSON object with no NUL byte and no key twice, then only
// spaces; N is capped (kMaxHeaderBytes) before anything is read or allocated.  The same
// strictness holds for the JSON texts inside the metadata (configuration, map aliases).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/error.hpp"
#include "lockstep/chip/machines/accumulator.hpp"
#include "lockstep/chip/safetensors.hpp"

namespace lockstep::chip {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes accumulator_file() { return serialize_chip(machines::compile_accumulator(1).chip); }

// The header text (N bytes after the length) and the data buffer of a safetensors file.
std::string header_of(const Bytes& f) {
  std::uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);
  return std::string(reinterpret_cast<const char*>(f.data()) + 8, n);
}
Bytes data_of(const Bytes& f) { return Bytes(f.begin() + 8 + static_cast<long>(header_of(f).size()), f.end()); }

// A file with header text `h` (taken as is: no padding added) and data buffer `data`.
Bytes file_with(const std::string& h, const Bytes& data) {
  const std::uint64_t n = h.size();
  Bytes b(8 + h.size() + data.size());
  std::memcpy(b.data(), &n, 8);
  std::copy(h.begin(), h.end(), b.begin() + 8);
  std::copy(data.begin(), data.end(), b.begin() + 8 + static_cast<long>(h.size()));
  return b;
}

// The header's JSON object without its space padding.
std::string json_of(const Bytes& f) {
  std::string h = header_of(f);
  while (!h.empty() && h.back() == ' ') h.pop_back();
  return h;
}

std::string error_of(const Bytes& b) {
  try {
    parse_chip(b);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "<accepted>";
}

void expect_rejected(const Bytes& b, const std::string& needle) {
  const std::string msg = error_of(b);
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected: " << needle;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(SafeTensorsHeader, TheWrittenFileIsAccepted) {
  const Bytes f = accumulator_file();
  EXPECT_EQ(error_of(f), "<accepted>");
  EXPECT_EQ(header_of(f).front(), '{');
  EXPECT_EQ((8 + header_of(f).size()) % 8, 0u);
  // Padding may be any number of spaces, none included.
  EXPECT_EQ(error_of(file_with(json_of(f), data_of(f))), "<accepted>");
  EXPECT_EQ(error_of(file_with(json_of(f) + std::string(13, ' '), data_of(f))), "<accepted>");
}

// The outside report: a NUL and garbage inside the declared header; nlohmann-json stops at the
// NUL, so the chip loaded and ran before this fix.
TEST(SafeTensorsHeader, NulAndGarbageInsideTheHeader) {
  const Bytes f = accumulator_file();
  const std::string j = json_of(f);
  expect_rejected(file_with(j + std::string("\0garbage{{", 10) + "   ", data_of(f)),
                  "safetensors: header: NUL byte at offset " + std::to_string(j.size()));
  expect_rejected(file_with(j + std::string("\0", 1) + "       ", data_of(f)), "NUL byte at offset");
  std::string inside = j;  // a NUL inside the object (between two members)
  inside.insert(inside.find(",\""), std::string("\0", 1));
  expect_rejected(file_with(inside, data_of(f)), "NUL byte at offset");
}

TEST(SafeTensorsHeader, OnlySpacesMayFollowTheObject) {
  const Bytes f = accumulator_file();
  const std::string j = json_of(f);
  expect_rejected(file_with(j + "garbage ", data_of(f)), "only space (32) padding may follow it");
  expect_rejected(file_with(j + "\n   ", data_of(f)), "is 10, only space (32) padding");
  expect_rejected(file_with(j + "\t", data_of(f)), "is 9, only space (32) padding");
  expect_rejected(file_with(j + "{}", data_of(f)), "safetensors: header is not valid JSON");
}

TEST(SafeTensorsHeader, TheHeaderStartsWithABrace) {
  const Bytes f = accumulator_file();
  expect_rejected(file_with(" " + json_of(f), data_of(f)), "header does not start with '{' (first byte 32)");
  expect_rejected(file_with("\n" + json_of(f), data_of(f)), "header does not start with '{' (first byte 10)");
  expect_rejected(file_with("", data_of(f)), "header does not start with '{' (first byte absent: N is 0)");
}

TEST(SafeTensorsHeader, DuplicateKeysAreRejected) {
  const Bytes f = accumulator_file();
  const std::string j = json_of(f);
  // A tensor entry named twice (identical entries: the last-one-wins reader loaded the file).
  const std::size_t at = j.find("\"embed.bias_idx\":");
  ASSERT_NE(at, std::string::npos);
  const std::size_t end = j.find('}', at) + 1;
  const std::string member = j.substr(at, end - at);
  std::string twice = j;
  twice.insert(end, "," + member);
  expect_rejected(file_with(twice, data_of(f)), "safetensors: header: duplicate key 'embed.bias_idx' (depth 1)");
  // A key twice inside a tensor entry.
  std::string inner = j;
  inner.insert(inner.find("\"dtype\":", at), "\"dtype\":\"U32\",");
  expect_rejected(file_with(inner, data_of(f)), "duplicate key 'dtype' (depth 2)");
  // __metadata__ twice.
  std::string meta = j;
  meta.insert(1, "\"__metadata__\":{},");
  expect_rejected(file_with(meta, data_of(f)), "duplicate key '__metadata__'");
}

// A header nested 100,000 levels deep is refused by its depth, in one line, before anything walks
// it recursively (a summary.json nested so deep crashed `lockstep report`; the chip file is the
// same kind of input).
TEST(SafeTensorsHeader, DeepNestingIsRejected) {
  const Bytes f = accumulator_file();
  std::string j = json_of(f);
  j.insert(1, "\"x\":" + std::string(100000, '[') + std::string(100000, ']') + ",");
  expect_rejected(file_with(j, data_of(f)), "safetensors: header: arrays and objects nest deeper than 64 levels");
}

TEST(SafeTensorsHeader, MetadataJsonIsStrictToo) {
  SafeTensors st = parse_safetensors(accumulator_file());
  std::string& config = st.metadata.at("lockstep.chip");
  SafeTensors nul = st;  // "\u0000garbage" after the configuration object
  nul.metadata.at("lockstep.chip") = config + std::string("\0garbage", 8);
  // the header's own parse meets it first, as the value of the metadata key
  expect_rejected(serialize_safetensors(nul),
                  "safetensors: header: the value of 'lockstep.chip' holds a NUL byte (a \\u0000 escape)");
  SafeTensors dup = st;  // a configuration key twice
  dup.metadata.at("lockstep.chip") = "{\"d_model\":1," + config.substr(1);
  expect_rejected(serialize_safetensors(dup), "chip: configuration JSON: duplicate key 'd_model' (depth 1)");
}

// The rules of the configuration and alias texts that an outside tester found unenforced (each
// such chip loaded and ran): a \u0000 escape decodes to a NUL byte, which §3 forbids; a
// spec_version other than this build's; a key the configuration does not define (a misspelt
// optional key would be ignored); an alias that names no map of the configuration.
TEST(SafeTensorsHeader, ConfigurationAndAliasesAreCheckedWhole) {
  const SafeTensors st = parse_safetensors(accumulator_file());
  const nlohmann::json config = nlohmann::json::parse(st.metadata.at("lockstep.chip"));
  auto with_config = [&](const nlohmann::json& c) {
    SafeTensors t = st;
    t.metadata.at("lockstep.chip") = c.dump();
    return serialize_safetensors(t);
  };
  EXPECT_EQ(error_of(with_config(config)), "<accepted>");
  nlohmann::json c = config;
  c["machine"] = std::string("abc\0def", 7);
  expect_rejected(with_config(c), "chip: configuration JSON: the value of 'machine' holds a NUL byte (a \\u0000 escape)");
  c = config;
  c["spec_version"] = "chip-format/2";
  expect_rejected(with_config(c), "unsupported spec_version \"chip-format/2\" (this build reads \"chip-format/1\")");
  c = config;
  c["number_fromat"] = "bf16";
  expect_rejected(with_config(c), "configuration: unknown key \"number_fromat\"");
  c = config;
  c["layers"][0]["mlp"]["hiden"] = 3;
  expect_rejected(with_config(c), "layer 0 mlp: unknown key \"hiden\"");
  SafeTensors a = st;
  const std::string aliases = st.metadata.count("lockstep.map_aliases") ? st.metadata.at("lockstep.map_aliases") : "{}";
  nlohmann::json more = nlohmann::json::parse(aliases);
  more["layers.9.heads.0.k"] = "embed";
  a.metadata["lockstep.map_aliases"] = more.dump();
  expect_rejected(serialize_safetensors(a), "map alias 'layers.9.heads.0.k' names no map of the configuration");
  a.metadata["lockstep.map_aliases"] = "{\"embed\\u0000x\": \"unembed\"," + aliases.substr(1);
  expect_rejected(serialize_safetensors(a), "chip: map aliases JSON: key 'embed\\x00x' holds a NUL byte");
}

TEST(SafeTensorsHeader, HeaderLengthIsCapped) {
  const Bytes f = accumulator_file();
  for (std::uint64_t n : {kMaxHeaderBytes + 1, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    Bytes b = f;
    std::memcpy(b.data(), &n, 8);
    expect_rejected(b, "safetensors: header length N " + std::to_string(n) + " exceeds the cap of 100000000 bytes");
  }
  Bytes b = f;  // under the cap, past the end of the file
  const std::uint64_t n = f.size();
  std::memcpy(b.data(), &n, 8);
  expect_rejected(b, "file truncated: 8 + the header length N " + std::to_string(n) + " = " + std::to_string(n + 8) +
                         " bytes exceeds the file size " + std::to_string(f.size()));
  // N itself below the file size, 8 + N past it (found by an outside tester: "N exceeds" read wrong)
  const std::uint64_t n2 = f.size() - 7;
  std::memcpy(b.data(), &n2, 8);
  expect_rejected(b, "8 + the header length N " + std::to_string(n2) + " = " + std::to_string(n2 + 8) +
                         " bytes exceeds the file size " + std::to_string(f.size()));
  // a header that is a lone '{': not closed, said so
  expect_rejected(file_with("{       ", {}), "safetensors: header: the JSON object is not closed");
}

TEST(SafeTensorsHeader, FileReaderChecksTheLengthBeforeReading) {
  const auto dir = std::filesystem::temp_directory_path() / ("lockstep_st_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "capped.chip").string();
  Bytes b = accumulator_file();
  const std::uint64_t n = kMaxHeaderBytes + 8;
  std::memcpy(b.data(), &n, 8);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<long>(b.size()));
  try {
    read_safetensors_file(path);
    ADD_FAILURE() << "read_safetensors_file accepted N = " << n;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the cap"), std::string::npos) << e.what();
  }
  try {
    load_chip(path);
    ADD_FAILURE() << "load_chip accepted N = " << n;
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": safetensors: header length N", 0), 0u) << msg;  // names the file
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::chip
