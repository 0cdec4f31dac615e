// stories_vx (stories260K on the vector unit, docs/spec/vector.md §7) on the reference model,
// run in-process (lockstep_ref), against the independent host golden model
// (golden/vx.cpp, lockstep_story):
//   - the golden model runs vector.md §7.3 over the image files the build linked into the
//     guest (wmem.bin, wscale.bin, emb.bin) and gives the token ids and, per story token, the
//     vector-unit trace tokens (vector.md §5, trace-v3: kinds 33..43 and 51..80) it emits; its ids
//     also equal manifest.json's golden_vx_tokens (written by `lockstep-model convert`);
//   - the guest's output equals the tokenizer's llama2.c decoding of those ids, then
//     "\ntokens:" and the ids;
//   - per story token, the guest's vector tokens equal the golden model's, token for token, and
//     number exactly 39,736 + 335T + 40·ceil(T/4) (vector.md §7.3: 39,740 + 335T + 40·ceil(T/4)
//     with the 4 W tokens of the argmax, which are scalar kinds); the whole trace per story token
//     (vector + scalar code) is within the documented bound (docs/stories-vx.md; the scalar code
//     is compiled C, not vector.md §7.4's hand count, so the bound is §7.4's count
//     40,375 + 335T + 40·ceil(T/4) + 2·bytes plus a measured margin);
//   - after the run the unit's state (VR, ACT, ASH, K/V caches and shifts) equals the golden
//     model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/format/elf.h"
#include "lockstep/ref/machine.h"
#include "quality.h"
#include "vx.h"

namespace lockstep::guests_vx_test {
namespace {

using host::VxImage;
using host::VxModel;

constexpr int kStoryTokens = LOCKSTEP_STORIES_VX_TOKENS;  // the image's count (CMake cache)
constexpr int kBos = 1;
// vector.md §5 (trace-v3): a VLD emits VLB0..VLB3 (kinds 57..60) for its multiplier, then VLG (56)
// and the element bytes; VQ's int8 stream also puts a VLG before every VLB0.  So the VLB0 that
// does not follow a VLG is a VLD's, and the story's only VLD starts each story token.
constexpr std::uint32_t kVlg = 56, kVlb0 = 57;
bool vector_kind(std::uint32_t kind) { return (kind >= 33 && kind <= 43) || (kind >= 51 && kind <= 80); }
// vector.md §7.3: vector-kind tokens per forward pass (39,740 + 335T + 40·ceil(T/4) less the
// argmax's 4 W) and §7.4: the whole trace per story token, less 2 per output byte.
std::uint64_t vector_tokens(std::uint64_t T) { return 39'736 + 335 * T + 40 * ((T + 3) / 4); }
std::uint64_t spec_count(std::uint64_t T) { return 40'375 + 335 * T + 40 * ((T + 3) / 4); }
// Scalar trace tokens per story token allowed on top of vector.md §7.4's count
// 40,375 + 335T + 40·ceil(T/4) + 2·bytes (docs/stories-vx.md: the compiled C loop measures
// 345..389 over it; trace-v3 left the scalar tokens as they were in trace-v2).
constexpr int kScalarMargin = 400;

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string image_dir(const std::string& name) { return std::string(LOCKSTEP_GUEST_DIR) + "/" + name; }

// The image as the build wrote it (the bytes linked into the guest), unpacked for VxModel.
VxImage read_image(const std::string& name) {
  const std::string dir = image_dir(name);
  const auto wm = read_bytes(dir + "/wmem.bin"), ws = read_bytes(dir + "/wscale.bin");
  VxImage img;
  img.emb = read_bytes(dir + "/emb.bin");
  EXPECT_EQ(wm.size(), static_cast<std::size_t>(host::kChunks) * 32);
  EXPECT_EQ(ws.size(), static_cast<std::size_t>(host::kChunks) * 2);
  EXPECT_EQ(img.emb.size(), static_cast<std::size_t>(512) * host::kEmbRecord);
  img.wmem.resize(wm.size() * 2);
  for (std::size_t k = 0; k < wm.size(); ++k) {
    // vector.md §2.1: W[c][2k] in bits 3..0, W[c][2k+1] in bits 7..4 (4-bit two's complement)
    const int lo = wm[k] & 15, hi = wm[k] >> 4;
    img.wmem[2 * k] = static_cast<std::int8_t>(lo >= 8 ? lo - 16 : lo);
    img.wmem[2 * k + 1] = static_cast<std::int8_t>(hi >= 8 ? hi - 16 : hi);
  }
  for (std::size_t c = 0; c + 1 < ws.size(); c += 2)
    img.wscale.push_back(static_cast<std::uint16_t>(ws[c] | ws[c + 1] << 8));
  return img;
}

struct Golden {
  std::vector<int> tokens;                       // story tokens (a generated BOS ends the story)
  std::vector<std::vector<std::uint32_t>> vtok;  // per forward pass: vector tokens as trace ids
  std::unique_ptr<VxModel> model;                // its final state
};

Golden run_golden(const VxImage& img, int n) {
  Golden g;
  g.model = std::make_unique<VxModel>(img);
  g.model->unit.record = true;
  int token = kBos;
  for (int pos = 0; pos < n; ++pos) {
    g.model->unit.trace.clear();
    const int next = g.model->forward(token, pos);
    std::vector<std::uint32_t> ids;
    for (const auto& t : g.model->unit.trace)
      if (vector_kind(static_cast<std::uint32_t>(t.kind))) ids.push_back(static_cast<std::uint32_t>(256 * t.kind + t.payload));
    g.vtok.push_back(std::move(ids));
    if (next == kBos) break;
    g.tokens.push_back(next);
    token = next;
  }
  return g;
}

struct RefRun {
  ref::Status status;
  std::uint32_t exit_status, trap_code;
  std::uint64_t instructions, steps;
  std::string out, err;
  std::vector<std::uint64_t> starts;               // step index of each story token's VLD (its first VLB0)
  std::vector<std::vector<std::uint32_t>> vtok;    // per story token: its vector tokens (vector.md §5)
  std::vector<std::uint64_t> out_bytes;            // per story token: OUT tokens in its interval
  std::unique_ptr<ref::Machine> machine;
  double seconds;
};

// Runs the guest; `tokens`, when given, replaces the image's story token count
// (`stories_vx_tokens`, a word in read-only RAM data) after loading.
RefRun run_ref(const std::string& name, std::optional<std::uint32_t> tokens = std::nullopt) {
  RefRun r;
  r.machine = std::make_unique<ref::Machine>();  // large (RAM, vector unit): not on the stack
  ref::Machine& m = *r.machine;
  const format::GuestImage image = format::read_elf_file(image_dir(name) + ".elf");
  m.load(image);
  if (tokens) {
    const std::uint32_t addr = image.symbols.at("stories_vx_tokens");
    const std::uint8_t le[4] = {static_cast<std::uint8_t>(*tokens), static_cast<std::uint8_t>(*tokens >> 8),
                                static_cast<std::uint8_t>(*tokens >> 16), static_cast<std::uint8_t>(*tokens >> 24)};
    m.write_memory(addr, le);
  }
  std::uint64_t index = 0;
  std::uint32_t prev_kind = 0;
  const auto t0 = std::chrono::steady_clock::now();
  m.run(100'000'000ull, [&](std::span<const std::uint32_t> chunk) {
    for (std::uint32_t id : chunk) {
      const std::uint32_t kind = id >> 8;
      if (kind == kVlb0 && prev_kind != kVlg) {
        r.starts.push_back(index);
        r.vtok.emplace_back();
        r.out_bytes.push_back(0);
      }
      if (!r.vtok.empty()) {
        if (vector_kind(kind)) r.vtok.back().push_back(id);
        if (kind == 28) ++r.out_bytes.back();  // trace.md: OUT
      }
      prev_kind = kind;
      ++index;
    }
  });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = m.status();
  r.exit_status = m.exit_status();
  r.trap_code = m.trap_code();
  r.instructions = m.instructions_retired();
  r.steps = m.steps();
  r.out = m.console_out();
  r.err = m.console_err();
  return r;
}

// The guest's whole expected output for story tokens `tokens` (llama2.c decoding).
std::string expected_output(const host::Tokenizer& tok, const std::vector<int>& tokens) {
  std::vector<int> with_bos{kBos};
  with_bos.insert(with_bos.end(), tokens.begin(), tokens.end());
  std::string out = tok.decode_all(with_bos) + "\ntokens:";
  for (int t : tokens) out += " " + std::to_string(t);
  return out + "\n";
}

void check_story(const std::string& name, bool real) {
  const VxImage img = read_image(name);
  const Golden g = run_golden(img, kStoryTokens);

  // The in-test golden ids equal `lockstep-model golden --build vx` (golden.txt, written at build
  // time) and, when `convert` could write it, manifest.json's golden_vx_tokens (63 from BOS).
  {
    std::ifstream in(image_dir(name) + "/golden.txt");
    std::string line;
    ASSERT_TRUE(std::getline(in, line)) << image_dir(name) << "/golden.txt";
    std::istringstream ids(line);
    const std::vector<int> cli{std::istream_iterator<int>(ids), std::istream_iterator<int>()};
    // `golden` stops at a generated BOS as the guest does (docs/guests.md): the same ids.
    EXPECT_EQ(cli, g.tokens);
    EXPECT_LE(cli.size(), static_cast<std::size_t>(kStoryTokens));
  }
  {
    std::ifstream in(image_dir(name) + "/manifest.json");
    const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_object() && manifest.contains("golden_vx_tokens")) {
      const auto tokens = manifest.at("golden_vx_tokens").get<std::vector<int>>();
      EXPECT_EQ(tokens, g.tokens);
    } else {
      // lockstep-model convert aborts writing the manifest when the golden text is not UTF-8
      // (the synthetic model's byte tokens); convert.cmake accepts that, golden.txt covers it.
      std::printf("%s: manifest.json without golden tokens (not UTF-8 text); checked golden.txt\n", name.c_str());
    }
  }

  // Expected text: llama2.c's decoding (leading space dropped after BOS, <0xHH> bytes).
  std::ostringstream log;
  const host::LoadedModel lm = host::load_model(LOCKSTEP_STORIES_MODELS_DIR, !real, log);
  ASSERT_EQ(lm.real, real) << log.str();
  std::vector<int> with_bos{kBos};
  with_bos.insert(with_bos.end(), g.tokens.begin(), g.tokens.end());
  const std::string text = lm.tok.decode_all(with_bos);
  const std::string expected = expected_output(lm.tok, g.tokens);
  if (real) {
    EXPECT_EQ(text.rfind("Once upon a time, there was a little girl named Lily", 0), 0u) << text;
  }

  RefRun r = run_ref(name);
  ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
  EXPECT_EQ(r.exit_status, 0u);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, expected);

  // Vector tokens per story token: exactly the golden model's and vector.md §7.3's count.
  ASSERT_EQ(r.vtok.size(), g.vtok.size());
  std::uint64_t max_len = 0, sum_len = 0;
  std::int64_t min_excess = INT64_MAX, max_excess = INT64_MIN;  // over vector.md §7.4's count
  for (std::size_t i = 0; i < r.vtok.size(); ++i) {
    const std::uint64_t T = i + 1;
    EXPECT_EQ(r.vtok[i].size(), vector_tokens(T)) << "story token " << i;
    EXPECT_EQ(g.vtok[i].size(), vector_tokens(T)) << "story token " << i << " (golden model)";
    EXPECT_TRUE(r.vtok[i] == g.vtok[i]) << "vector tokens of story token " << i << " differ from the golden model's";
    if (i + 1 < r.starts.size()) {  // whole trace of story token i: from its VLD to the next one
      const std::uint64_t len = r.starts[i + 1] - r.starts[i];
      const std::uint64_t bytes = r.out_bytes[i];
      EXPECT_LE(len, spec_count(T) + 2 * bytes + kScalarMargin) << "story token " << i;
      max_len = std::max(max_len, len);
      const std::int64_t excess = static_cast<std::int64_t>(len) - static_cast<std::int64_t>(spec_count(T) + 2 * bytes);
      min_excess = std::min(min_excess, excess);
      max_excess = std::max(max_excess, excess);
      sum_len += len;
    }
  }

  // Final vector-unit state equals the golden model's (caches hold every position used).
  const auto& v = r.machine->vector();
  const auto& u = g.model->unit;
  EXPECT_TRUE(std::equal(v.vr.begin(), v.vr.end(), u.vreg.begin()));
  EXPECT_TRUE(std::equal(v.act.begin(), v.act.end(), u.act.begin()));
  EXPECT_TRUE(std::equal(v.ash.begin(), v.ash.end(), u.aexp.begin()));
  EXPECT_TRUE(std::equal(v.kc.begin(), v.kc.end(), u.kc.begin()));
  EXPECT_TRUE(std::equal(v.vc.begin(), v.vc.end(), u.vc.begin()));
  EXPECT_TRUE(std::equal(v.ksh.begin(), v.ksh.end(), u.ke.begin()));
  EXPECT_TRUE(std::equal(v.vsh.begin(), v.vsh.end(), u.ve.begin()));

  const std::size_t measured = r.starts.size() > 1 ? r.starts.size() - 1 : 0;
  std::printf("%s: %zu story tokens, %llu instructions, %llu trace steps, %.3f s on the reference; "
              "per story token (first %zu): mean %.1f, max %llu trace tokens, "
              "%lld..%lld over vector.md 7.4's 40,375 + 335T + 40ceil(T/4) + 2 bytes\n",
              name.c_str(), g.tokens.size(), static_cast<unsigned long long>(r.instructions),
              static_cast<unsigned long long>(r.steps), r.seconds, measured,
              measured ? static_cast<double>(sum_len) / static_cast<double>(measured) : 0.0,
              static_cast<unsigned long long>(max_len), static_cast<long long>(min_excess),
              static_cast<long long>(max_excess));
  std::printf("%s: %s\n", name.c_str(), text.c_str());
  ::testing::Test::RecordProperty("steps", std::to_string(r.steps));
  ::testing::Test::RecordProperty("instructions", std::to_string(r.instructions));
}

TEST(StoriesVxOnRef, SyntheticModelMatchesHostGolden) { check_story("stories_vx_synthetic", false); }

TEST(StoriesVxOnRef, RealModelMatchesHostGolden) {
  if (!LOCKSTEP_STORIES_VX_REAL)
    GTEST_SKIP() << "stories260K.bin/tok512.bin not found in " << LOCKSTEP_STORIES_MODELS_DIR
                 << " at configure time: stories_vx.elf was built over the synthetic model";
  check_story("stories_vx", true);
}

TEST(StoriesVxImage, SectionsAndDataAreTheConvertersFiles) {
  for (const std::string name : {"stories_vx_synthetic", "stories_vx"}) {
    const format::GuestImage image = format::read_elf_file(image_dir(name) + ".elf");
    EXPECT_EQ(image.sections.at(".lockstep.wmem"), read_bytes(image_dir(name) + "/wmem.bin")) << name;
    EXPECT_EQ(image.sections.at(".lockstep.wscale"), read_bytes(image_dir(name) + "/wscale.bin")) << name;
    int vector_sections = 0;  // only WMEM and WSCALE are initialised (vector.md §2.1)
    for (const auto& [section, bytes] : image.sections) vector_sections += section.rfind(".lockstep.", 0) == 0;
    EXPECT_EQ(vector_sections, 2) << name;
    auto ram = std::make_unique<ref::Machine>();
    ram->load(image);
    const std::uint32_t emb = image.symbols.at("stories_vx_emb"), pieces = image.symbols.at("stories_vx_pieces");
    EXPECT_EQ(emb % 4, 0u) << name << ": VLD records must be 4-byte aligned";
    EXPECT_EQ(pieces % 4, 0u) << name;
    EXPECT_EQ(ram->read_memory(emb, 512 * host::kEmbRecord), read_bytes(image_dir(name) + "/emb.bin")) << name;
    const auto pb = read_bytes(image_dir(name) + "/pieces.bin");
    EXPECT_EQ(ram->read_memory(pieces, static_cast<std::uint32_t>(pb.size())), pb) << name;
    EXPECT_EQ(ram->read_word(image.symbols.at("stories_vx_tokens")), static_cast<std::uint32_t>(kStoryTokens)) << name;
  }
}

TEST(StoriesVxOnRef, TokenCountFromTheImage) {
  // The same ELF with its count word set to 5: the first 5 golden tokens, then exit 0.
  const VxImage img = read_image("stories_vx_synthetic");
  const Golden g = run_golden(img, 5);
  std::ostringstream log;
  const host::LoadedModel lm = host::load_model(LOCKSTEP_STORIES_MODELS_DIR, true, log);
  RefRun r = run_ref("stories_vx_synthetic", 5);
  ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
  EXPECT_EQ(r.exit_status, 0u);
  EXPECT_EQ(r.out, expected_output(lm.tok, g.tokens));
  EXPECT_EQ(r.vtok.size(), 5u);
}

TEST(StoriesVxOnRef, TokenCountOutOfRangeExits2) {
  for (std::uint32_t n : {0u, 65u}) {
    RefRun r = run_ref("stories_vx_synthetic", n);
    ASSERT_EQ(r.status, ref::Status::kExited) << "trap " << r.trap_code;
    EXPECT_EQ(r.exit_status, 2u);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "stories_vx: story token count out of range (1..64): " + std::to_string(n) + "\n");
    EXPECT_TRUE(r.vtok.empty());
  }
}

}  // namespace
}  // namespace lockstep::guests_vx_test
