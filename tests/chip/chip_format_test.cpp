// Chip file format: safetensors layer, chip validation (every malformed input is a one-line
// FormatError, never a crash), initialiser encodings.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "lockstep/chip/compiler/primitives.hpp"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/machines/accumulator.hpp"

namespace lockstep::chip {
namespace {

using namespace compiler;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "<no FormatError>";
}

void expect_format_error(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  const std::string msg = error_of([&] { parse_chip(bytes); });
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
}

TEST(SafeTensors, RoundTripAndLayout) {
  SafeTensors st;
  st.metadata["k"] = "v";
  st.tensors["b"] = Tensor::from_f32({1.5f, -2.0f}, {2});
  st.tensors["a"] = Tensor::from_u32({7, 8, 9, 10, 11, 12}, {2, 3});
  const auto bytes = serialize_safetensors(st);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 8 + 24);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  EXPECT_NE(header.find("\"__metadata__\":{\"k\":\"v\"}"), std::string::npos) << header;
  EXPECT_NE(header.find("\"a\":{\"dtype\":\"U32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"), std::string::npos) << header;
  const SafeTensors back = parse_safetensors(bytes);
  EXPECT_EQ(back.metadata.at("k"), "v");
  EXPECT_EQ(back.tensors.at("a").as_u32(), (std::vector<std::uint32_t>{7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(back.tensors.at("b").as_f32(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(back.tensors.at("a").shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_THROW(back.tensors.at("a").as_f32(), FormatError);
}

TEST(SafeTensors, RejectsMalformed) {
  SafeTensors st;
  st.tensors["a"] = Tensor::from_f32({1, 2, 3}, {3});
  const auto good = serialize_safetensors(st);
  auto set_header = [&](const std::string& h, std::size_t data) {
    const std::uint64_t n = h.size();
    std::vector<std::uint8_t> b(8 + n + data, 0);
    std::memcpy(b.data(), &n, 8);
    std::memcpy(b.data() + 8, h.data(), n);
    return b;
  };
  EXPECT_THROW(parse_safetensors({1, 2, 3}), FormatError);
  for (std::size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_THROW(parse_safetensors(std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<long>(cut))), FormatError)
        << "cut at " << cut;
  auto trailing = good;
  trailing.push_back(0);
  EXPECT_THROW(parse_safetensors(trailing), FormatError);
  EXPECT_THROW(parse_safetensors(set_header("{not json", 0)), FormatError);
  EXPECT_THROW(parse_safetensors(set_header(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)), FormatError);
  EXPECT_THROW(parse_safetensors(set_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)), FormatError);
  EXPECT_THROW(parse_safetensors(set_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)), FormatError);
  EXPECT_THROW(parse_safetensors(set_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)), FormatError);
  EXPECT_THROW(parse_safetensors(set_header(R"({"__metadata__":{"x":1}})", 0)), FormatError);
  EXPECT_NO_THROW(parse_safetensors(set_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)));
}

// A small real chip to corrupt.
Chip small_chip() { return machines::compile_accumulator(2).chip; }

std::vector<std::uint8_t> with_tensor(const Chip& c, const std::string& name, const Tensor& t) {
  SafeTensors st = parse_safetensors(serialize_chip(c));
  st.tensors[name] = t;
  return serialize_safetensors(st);
}

// The chip's file with map `m`'s columns given as the col_ptr tensor `t` (its col_idx removed).
std::vector<std::uint8_t> with_col_ptr(const Chip& c, const std::string& m, const Tensor& t) {
  SafeTensors st = parse_safetensors(serialize_chip(c));
  st.tensors.erase(m + ".col_idx");
  st.tensors[m + ".col_ptr"] = t;
  return serialize_safetensors(st);
}

std::vector<std::uint8_t> with_config(const Chip& c, const std::function<void(std::string&)>& edit) {
  SafeTensors st = parse_safetensors(serialize_chip(c));
  edit(st.metadata[kMetadataKey]);
  return serialize_safetensors(st);
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  ASSERT_NE(p, std::string::npos) << from;
  s.replace(p, from.size(), to);
}

TEST(ChipFormat, RoundTripIsExact) {
  const Chip c = small_chip();
  const auto bytes = serialize_chip(c);
  const Chip back = parse_chip(bytes);
  EXPECT_EQ(serialize_chip(back), bytes);
  EXPECT_EQ(back.config.d_model, c.config.d_model);
  EXPECT_EQ(back.layers.size(), 3u);
  EXPECT_EQ(back.config.probes.size(), c.config.probes.size());
  EXPECT_EQ(back.config.token_names.at(1), "POS 0");
  const auto path = std::filesystem::temp_directory_path() / "lockstep_chip_format_test.safetensors";
  save_chip(c, path.string());
  EXPECT_EQ(serialize_chip(load_chip(path.string())), bytes);
  std::filesystem::remove(path);
  EXPECT_THROW(load_chip("/nonexistent/dir/chip.safetensors"), FormatError);
}

TEST(ChipFormat, EveryTruncationIsAFormatError) {
  const auto bytes = serialize_chip(small_chip());
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + cut / 16)
    EXPECT_THROW(parse_chip(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(cut))), FormatError)
        << "cut at " << cut;
}

// A format-1 file (every map's columns as col_ptr) still reads, to the same chip.
TEST(ChipFormat, ReadsFormatVersion1) {
  const Chip c = small_chip();
  SafeTensors st = parse_safetensors(serialize_chip(c));
  std::vector<std::string> sparse;
  for (const auto& [name, t] : st.tensors)
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".col_idx") == 0) sparse.push_back(name.substr(0, name.size() - 8));
  ASSERT_FALSE(sparse.empty());
  const Chip back2 = parse_chip(serialize_safetensors(st));
  // the in-memory map of a tensor name prefix ("embed", "layers.L.heads.H.k", "layers.L.mlp.w2")
  auto map_of = [&](const std::string& m) -> const LinearMap& {
    if (m == "embed") return c.embed;
    if (m == "unembed") return c.unembed;
    const std::size_t l = std::stoul(m.substr(7));
    const Layer& L = c.layers[l];
    const std::string rest = m.substr(m.find('.', 7) + 1);
    if (rest.rfind("mlp.", 0) == 0) {
      const std::string w = rest.substr(4);
      return w == "w1" ? L.mlp.w1 : w == "wu" ? L.mlp.wu : w == "wg" ? L.mlp.wg : L.mlp.w2;
    }
    const std::size_t h = std::stoul(rest.substr(6));
    const std::string f = rest.substr(rest.rfind('.') + 1);
    const Head& H = L.heads[h];
    return f == "k" ? H.k : f == "q" ? H.q : f == "v" ? H.v : f == "beta" ? H.beta : H.o;
  };
  for (const std::string& m : sparse) {
    const auto& cp = map_of(m).w.col_ptr;
    st.tensors.erase(m + ".col_idx");
    st.tensors[m + ".col_ptr"] = Tensor::from_u32(cp, {cp.size()});
  }
  replace_once(st.metadata[kMetadataKey], "\"format_version\":2", "\"format_version\":1");
  const Chip back1 = parse_chip(serialize_safetensors(st));
  EXPECT_EQ(back1.config.format_version, 1);
  EXPECT_EQ(back2.config.format_version, 2);
  EXPECT_EQ(serialize_chip(back1), serialize_chip(back2));  // the same maps (written again as version 2)
  EXPECT_EQ(serialize_chip(back2), serialize_chip(c));
  // a file that says format_version 1 but stores a map by col_idx (format 2's form) is refused
  SafeTensors mixed = parse_safetensors(serialize_chip(c));
  replace_once(mixed.metadata[kMetadataKey], "\"format_version\":2", "\"format_version\":1");
  expect_format_error(serialize_safetensors(mixed), "has a col_idx tensor, which format_version 1 does not have");
}

TEST(ChipFormat, NamesEachProblem) {
  const Chip c = small_chip();
  const std::string m = "layers.1.heads.0.k";
  const std::uint32_t D = c.config.d_model;
  // out-of-range row index
  {
    auto ri = c.layers[1].heads[0].k.w.row_idx;
    ri[0] = 1000;
    expect_format_error(with_tensor(c, m + ".row_idx", Tensor::from_u32(ri, {ri.size()})), "row index 1000 out of range");
  }
  // non-finite weight
  {
    auto v = c.layers[1].heads[0].k.w.values;
    v[0] = std::numeric_limits<float>::quiet_NaN();
    expect_format_error(with_tensor(c, m + ".values", Tensor::from_f32(v, {v.size()})), "non-finite weight");
    v[0] = std::numeric_limits<float>::infinity();
    expect_format_error(with_tensor(c, m + ".values", Tensor::from_f32(v, {v.size()})), "non-finite weight");
  }
  // non-finite bias
  {
    expect_format_error(with_tensor(c, "layers.0.mlp.w1.bias_values",
                                    Tensor::from_f32(std::vector<float>(parse_safetensors(serialize_chip(c)).tensors.at("layers.0.mlp.w1.bias_values").numel(), NAN),
                                                     {parse_safetensors(serialize_chip(c)).tensors.at("layers.0.mlp.w1.bias_values").numel()})),
                        "non-finite bias");
  }
  // shape inconsistent with the configuration
  expect_format_error(with_col_ptr(c, m, Tensor::from_u32(std::vector<std::uint32_t>(D, 0), {D})), "configuration needs");
  expect_format_error(with_config(c, [&](std::string& j) { replace_once(j, "\"d_model\":" + std::to_string(D), "\"d_model\":" + std::to_string(D + 1)); }),
                      "configuration needs");
  // wrong dtype
  expect_format_error(with_tensor(c, m + ".values", Tensor::from_u32({1}, {1})), "expected F32");
  // unknown / missing tensors
  expect_format_error(with_tensor(c, "extra", Tensor::from_f32({1}, {1})), "unknown tensor 'extra'");
  {
    SafeTensors st = parse_safetensors(serialize_chip(c));
    st.tensors.erase("unembed.values");
    expect_format_error(serialize_safetensors(st), "missing tensor 'unembed.values'");
  }
  // col_ptr inconsistent with nnz
  {
    auto cp = c.layers[1].heads[0].k.w.col_ptr;
    cp.back() += 1;
    expect_format_error(with_col_ptr(c, m, Tensor::from_u32(cp, {cp.size()})), "col_ptr[cols]");
  }
  // format 2's col_idx (a head's k map has fewer entries than d_model + 1 columns: stored so)
  {
    const SafeTensors st = parse_safetensors(serialize_chip(c));
    ASSERT_TRUE(st.tensors.count(m + ".col_idx")) << "the writer stores a sparse map's columns per entry";
    EXPECT_FALSE(st.tensors.count(m + ".col_ptr"));
    auto ci = st.tensors.at(m + ".col_idx").as_u32();
    ASSERT_GE(ci.size(), 2u);
    expect_format_error(with_tensor(c, m + ".col_ptr", Tensor::from_u32(c.layers[1].heads[0].k.w.col_ptr, {D + 1ull})),
                        "has both a col_ptr and a col_idx");
    auto bad = ci;
    bad.pop_back();
    expect_format_error(with_tensor(c, m + ".col_idx", Tensor::from_u32(bad, {bad.size()})), "entries but the map has");
    bad = ci;
    bad.back() = D;
    expect_format_error(with_tensor(c, m + ".col_idx", Tensor::from_u32(bad, {bad.size()})), "out of range");
    bad = ci;
    bad.back() = 0;
    bad.front() = D - 1;
    expect_format_error(with_tensor(c, m + ".col_idx", Tensor::from_u32(bad, {bad.size()})), "decreases");
  }
  // configuration problems
  expect_format_error(with_config(c, [](std::string& j) { j = "{"; }), "configuration JSON");
  expect_format_error(with_config(c, [&](std::string& j) { nlohmann::json o = nlohmann::json::parse(j); o["vocab_size"] = 4000000000u; j = o.dump(); }),
                      "exceeds the limit 2^24");
  expect_format_error(with_config(c, [](std::string& j) { replace_once(j, "\"format_version\":2", "\"format_version\":99"); }),
                      "unsupported format_version 99");
  expect_format_error(with_config(c, [](std::string& j) { replace_once(j, "\"act_k\":\"identity\"", "\"act_k\":\"tanh\""); }),
                      "\"act_k\" must be");
  expect_format_error(with_config(c, [](std::string& j) { replace_once(j, "\"length\":2", "\"length\":3"); }), "exceed key_dim");
  expect_format_error(with_config(c, [](std::string& j) { replace_once(j, "\"name\":\"p_oh\"", "\"name\":\"p\""); }), "declared twice");
  {
    SafeTensors st = parse_safetensors(serialize_chip(c));
    st.metadata.clear();
    expect_format_error(serialize_safetensors(st), "not a chip file");
  }
}

TEST(ChipFormat, LayerFormatsRequireRepresentableWeights) {
  EXPECT_TRUE(representable(255.0f, NumberFormat::Bf16));
  EXPECT_FALSE(representable(257.0f, NumberFormat::Bf16));
  EXPECT_TRUE(representable(256.0f * 3, NumberFormat::Bf16));
  EXPECT_TRUE(representable(2047.0f, NumberFormat::Fp16));
  EXPECT_FALSE(representable(2049.0f, NumberFormat::Fp16));
  EXPECT_TRUE(representable(0.5f, NumberFormat::Fp16));
  EXPECT_FALSE(representable(70000.0f, NumberFormat::Fp16));
  ChipBuilder B("fmt", 2);
  const FieldRef f = B.field("f", 1);
  B.add_layer(NumberFormat::Bf16);
  pass(B.layer(0), f[0], f.dim(), 257);
  EXPECT_THROW(B.build(), std::logic_error);
}

// An initialiser whose encoding does not fit the head is refused.
TEST(ChipFormat, InitialiserOutsideHeadIsAFormatError) {
  ChipBuilder B("init", 1);
  B.field("x", 1);
  B.add_layer();
  const std::uint32_t h = B.layer(0).add_head(8, 80);
  Initialiser in;
  in.name = "onehot";
  in.layer = 0;
  in.head = h;
  in.source = ByteSourceKind::Entry;
  in.length = 1;
  in.encoding = ByteEncoding::OneHot;  // needs 256 rows, the head has 80
  B.initialiser(in);
  const std::string msg = error_of([&] { B.build(); });
  EXPECT_NE(msg.find("initialiser 'onehot': rows [0, 256) exceed value_dim 80"), std::string::npos) << msg;
}

// Initialisers: every encoding lands in the documented rows/columns.
TEST(ChipFormat, InitialiserValues) {
  ChipBuilder B("init", 1);
  B.field("x", 1);
  B.add_layer();
  const std::uint32_t h = B.layer(0).add_head(8, 300);
  auto init = [&](const std::string& name, std::uint32_t col, std::uint32_t row, ByteEncoding enc, std::uint32_t bpc,
                  ByteSourceKind src, std::uint64_t len) {
    Initialiser in;
    in.name = name;
    in.layer = 0;
    in.head = h;
    in.column = col;
    in.row = row;
    in.source = src;
    in.address = 0x100;
    in.section = "data";
    in.offset = 1;
    in.length = len;
    in.encoding = enc;
    in.bytes_per_column = bpc;
    B.initialiser(in);
  };
  init("scalar", 0, 0, ByteEncoding::Scalar, 2, ByteSourceKind::Image, 4);
  init("bits", 2, 0, ByteEncoding::Bits, 1, ByteSourceKind::Section, 2);
  init("onehot", 4, 2, ByteEncoding::OneHot, 1, ByteSourceKind::Entry, 2);
  init("nibbles", 6, 0, ByteEncoding::Nibbles, 1, ByteSourceKind::Image, 1);
  Initialiser c;
  c.name = "const";
  c.layer = 0;
  c.head = h;
  c.column = 7;
  c.row = 100;
  c.is_const = true;
  c.values = {-3.0f, 0.5f};
  c.columns = 1;
  B.initialiser(c);
  const auto chip = std::make_shared<const Chip>(parse_chip(serialize_chip(B.build())));
  CpuExecutor ex(chip, 1);
  GuestImage img;
  img.segments.push_back({0xFE, {1, 2, 0xAB, 0xCD}});  // 0x100 = 0xAB, 0x101 = 0xCD, 0x102.. = 0
  img.sections["data"] = {0xFF, 0x05};                  // offset 1: 0x05, then past the end: 0
  img.entry = 0x1234;
  ex.reset(0, img);
  const auto S = ex.state(0);
  auto at = [&](std::uint32_t row, std::uint32_t col) { return S[col * 300 + row]; };
  EXPECT_EQ(at(0, 0), 0xAB);
  EXPECT_EQ(at(1, 0), 0xCD);
  EXPECT_EQ(at(0, 1), 0);
  EXPECT_EQ(at(1, 1), 0);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(at(j, 2), (0x05 >> j) & 1) << j;
  for (int j = 0; j < 8; ++j) EXPECT_EQ(at(j, 3), 0) << j;
  for (int j = 0; j < 256; ++j) {
    EXPECT_EQ(at(2 + j, 4), j == 0x34 ? 1 : 0) << j;
    EXPECT_EQ(at(2 + j, 5), j == 0x12 ? 1 : 0) << j;
  }
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(at(j, 6), j == 0xB ? 1 : 0) << j;
    EXPECT_EQ(at(16 + j, 6), j == 0xA ? 1 : 0) << j;
  }
  EXPECT_EQ(at(100, 7), -3.0f);
  EXPECT_EQ(at(101, 7), 0.5f);
  EXPECT_EQ(at(102, 7), 0.0f);
  img.sections.clear();
  EXPECT_THROW(ex.reset(0, img), ImageError);
}

// stride: byte i comes from address + i * stride (image) or offset + i * stride (section),
// and survives a save/parse round trip; stride 0 and a strided entry source are refused.
TEST(ChipFormat, InitialiserStride) {
  ChipBuilder B("stride", 1);
  B.field("x", 1);
  B.add_layer();
  const std::uint32_t h = B.layer(0).add_head(4, 1);
  Initialiser lane;
  lane.name = "lane1";
  lane.layer = 0;
  lane.head = h;
  lane.source = ByteSourceKind::Image;
  lane.address = 0x101;  // byte lane 1 of the words at 0x100, 0x104, 0x108
  lane.length = 3;
  lane.stride = 4;
  B.initialiser(lane);
  Initialiser sec = lane;
  sec.name = "sec";
  sec.column = 3;
  sec.source = ByteSourceKind::Section;
  sec.section = "data";
  sec.offset = 0;
  sec.length = 1;
  sec.stride = 3;
  B.initialiser(sec);
  const Chip built = B.build();
  const auto chip = std::make_shared<const Chip>(parse_chip(serialize_chip(built)));
  EXPECT_EQ(chip->config.initialisers.at(0).stride, 4u);
  CpuExecutor ex(chip, 1);
  GuestImage img;
  img.segments.push_back({0x100, {0, 11, 0, 0, 0, 22, 0, 0, 0, 33, 0, 0}});
  img.sections["data"] = {0x44};
  ex.reset(0, img);
  const auto S = ex.state(0);
  EXPECT_EQ(S[0], 11);
  EXPECT_EQ(S[1], 22);
  EXPECT_EQ(S[2], 33);
  EXPECT_EQ(S[3], 0x44);

  Chip bad = built;
  bad.config.initialisers.at(0).stride = 0;
  EXPECT_NE(error_of([&] { parse_chip(serialize_chip(bad)); }).find("stride is 0"), std::string::npos);
}

// An optional section source (chip-format.md section 2; vector.md section 2.1): a missing section
// reads as zero bytes, still encoded (Nibbles: the one-hots of 0); a present one is read as
// usual; "optional" survives a save/parse round trip and is refused on an image source; a
// required section that is missing is still an ImageError.
TEST(ChipFormat, OptionalSectionReadsAsZero) {
  ChipBuilder B("optional", 1);
  B.field("x", 1);
  B.add_layer();
  const std::uint32_t h = B.layer(0).add_head(2, 32);
  Initialiser opt;
  opt.name = "opt";
  opt.layer = 0;
  opt.head = h;
  opt.source = ByteSourceKind::Section;
  opt.section = ".lockstep.vreg";
  opt.length = 2;
  opt.encoding = ByteEncoding::Nibbles;
  opt.optional = true;
  B.initialiser(opt);
  const Chip built = B.build();
  const auto chip = std::make_shared<const Chip>(parse_chip(serialize_chip(built)));
  ASSERT_TRUE(chip->config.initialisers.at(0).optional);
  CpuExecutor ex(chip, 1);
  GuestImage img;
  ex.reset(0, img);  // no sections at all
  auto S = ex.state(0);
  for (std::uint32_t col = 0; col < 2; ++col)
    for (std::uint32_t r = 0; r < 32; ++r)
      EXPECT_EQ(S[col * 32 + r], (r == 0 || r == 16) ? 1.0f : 0.0f) << "column " << col << " row " << r;
  img.sections[".lockstep.vreg"] = {0x5A};  // byte 0 = 0x5A, byte 1 past the end = 0
  ex.reset(0, img);
  S = ex.state(0);
  for (std::uint32_t r = 0; r < 32; ++r) {
    EXPECT_EQ(S[r], (r == 0xA || r == 16 + 5) ? 1.0f : 0.0f) << "row " << r;
    EXPECT_EQ(S[32 + r], (r == 0 || r == 16) ? 1.0f : 0.0f) << "row " << r;
  }

  Chip required = built;
  required.config.initialisers.at(0).optional = false;
  CpuExecutor rex(std::make_shared<const Chip>(parse_chip(serialize_chip(required))), 1);
  EXPECT_THROW(rex.reset(0, GuestImage{}), ImageError);

  Chip bad = built;
  bad.config.initialisers.at(0).source = ByteSourceKind::Image;
  EXPECT_NE(error_of([&] { parse_chip(serialize_chip(bad)); }).find("only a section source can be optional"),
            std::string::npos);
}

// Map aliases (chip-format.md section 3.2): equal large maps are stored once and named again;
// the parsed chip has the same weights; an alias naming another alias is refused.
TEST(ChipFormat, EqualMapsAreStoredOnce) {
  ChipBuilder B("alias", 1);
  const FieldRef f = B.field("f", 2);
  B.add_layer();
  for (int copy = 0; copy < 2; ++copy) {
    const std::uint32_t h = B.layer(0).add_head(5000, 1, Activation::Relu, Activation::Relu);
    HeadBuilder& H = B.layer(0).head(h);
    for (std::uint32_t r = 0; r < 5000; ++r) {
      H.k[r] = f[0] + f[1] * static_cast<double>(r % 7) - 1.0;
      H.q[r] = H.k[r];
    }
  }
  const Chip built = B.build();
  const std::vector<std::uint8_t> bytes = serialize_chip(built);
  const std::string text(bytes.begin(), bytes.end());
  EXPECT_NE(text.find("lockstep.map_aliases"), std::string::npos);
  // (the aliases JSON is a string inside the safetensors header: its quotes are escaped)
  EXPECT_NE(text.find(R"(\"layers.0.heads.0.q\":\"layers.0.heads.0.k\")"), std::string::npos)
      << "q equals k: stored once";
  const Chip back = parse_chip(bytes);
  for (int h = 0; h < 2; ++h) {
    EXPECT_EQ(back.layers[0].heads[h].q.w.values, built.layers[0].heads[h].q.w.values);
    EXPECT_EQ(back.layers[0].heads[h].q.w.row_idx, built.layers[0].heads[h].q.w.row_idx);
    EXPECT_EQ(back.layers[0].heads[h].q.bias, built.layers[0].heads[h].q.bias);
  }
  // an alias of an alias: rewrite the metadata by hand
  std::string bad = text;
  const std::string from = R"(\"layers.0.heads.1.q\":\"layers.0.heads.0.k\")";
  const std::size_t at = bad.find(from);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, from.size(), R"(\"layers.0.heads.1.q\":\"layers.0.heads.0.q\")");
  const std::string msg = error_of([&] { parse_chip(std::vector<std::uint8_t>(bad.begin(), bad.end())); });
  EXPECT_NE(msg.find("names another alias"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lockstep::chip
