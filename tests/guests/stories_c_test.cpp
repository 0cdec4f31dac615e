// stories_c: the RISC-V guest against its host golden model (the same model.c
// compiled for the host), for the real stories260K (when present) and the
// synthetic model.  Also checks the printed text against the tokenizer
// library's own decoding of the printed ids, and the real story against the
// float32 reference (lockstep_story).
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <ostream>
#include <string>
#include <vector>

#include "quality.h"
#include "run_process.h"
#include "story.h"

namespace lockstep::guests_test {
namespace {

struct StoryOutput {
  std::string text;         ///< first line(s): the story
  std::vector<int> tokens;  ///< ids from the "tokens:" line
};

StoryOutput parse_story(const std::string& out) {
  StoryOutput s;
  size_t at = out.rfind("\ntokens:");
  if (at == std::string::npos) return s;
  s.text = out.substr(0, at);
  std::istringstream ids(out.substr(at + 8));
  int id;
  while (ids >> id) s.tokens.push_back(id);
  return s;
}

struct StoriesCase {
  const char* name;  ///< guest / image name
  bool real;
};

/// Test names carry the guest name, not the struct's bytes (ctest names must be stable).
void PrintTo(const StoriesCase& c, std::ostream* os) { *os << c.name; }

class StoriesC : public ::testing::TestWithParam<StoriesCase> {
 protected:
  void SetUp() override {
    if (GetParam().real && !LOCKSTEP_STORIES_REAL)
      GTEST_SKIP() << "stories260K.bin was not found at configure time ("
                   << LOCKSTEP_STORIES_MODELS_DIR << "); only the synthetic model is built";
  }
  std::string image() const { return std::string(LOCKSTEP_GUEST_DIR) + "/" + GetParam().name + ".bin"; }
  ProcessResult host() const { return run_process({LOCKSTEP_STORIES_HOST, image()}); }
  host::Tokenizer tokenizer() const {
    if (GetParam().real)
      return host::read_tokenizer(std::string(LOCKSTEP_STORIES_MODELS_DIR) + "/tok512.bin", 512);
    return host::synthetic_tokenizer();
  }
};

TEST_P(StoriesC, HostGoldenTextMatchesTokenizerDecoding) {
  ProcessResult h = host();
  ASSERT_EQ(h.exit_code, 0) << h.out << h.err;
  StoryOutput s = parse_story(h.out);
  ASSERT_EQ(s.tokens.size(), 63u) << h.out;
  std::vector<int> seq = {1};
  seq.insert(seq.end(), s.tokens.begin(), s.tokens.end());
  EXPECT_EQ(s.text, tokenizer().decode_all(seq));
  if (GetParam().real) {
    EXPECT_EQ(s.text.substr(0, host::kExpectedStoryPrefix.size()), host::kExpectedStoryPrefix);
  }
}

TEST_P(StoriesC, GuestUnderQemuMatchesHostGolden) {
  if (qemu_path().empty()) GTEST_SKIP() << "qemu-riscv32 not found (apt-get install qemu-user)";
  ProcessResult h = host();
  ProcessResult g = run_process({qemu_path(), guest_elf(GetParam().name)});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.err, "");
  EXPECT_EQ(g.out, h.out);
  EXPECT_EQ(parse_story(g.out).tokens, parse_story(h.out).tokens);
}

TEST_P(StoriesC, GuestOnReferenceModelMatchesHostGolden) {
  if (lockstep_ref_exe().empty())
    GTEST_SKIP() << "`lockstep ref` is not available yet (" << LOCKSTEP_BINARY_DIR << "/bin/lockstep)";
  ProcessResult h = host();
  RefRun r = run_on_reference(guest_elf(GetParam().name));
  EXPECT_EQ(r.end, "exit") << r.process.err;
  EXPECT_EQ(r.exit_status, 0) << r.process.err;
  EXPECT_EQ(r.console, h.out);
  if (r.instructions > 0) {
    StoryOutput s = parse_story(h.out);
    double per_token = static_cast<double>(r.instructions) / static_cast<double>(s.tokens.size());
    std::cout << GetParam().name << ": " << r.instructions << " instructions, " << r.steps
              << " trace steps, " << per_token << " instructions per story token\n";
    RecordProperty("instructions", std::to_string(r.instructions));
    RecordProperty("instructions_per_token", std::to_string(per_token));
  }
}

TEST(StoriesCReal, AgreesWithFloat32GreedyDecoding) {
  if (!LOCKSTEP_STORIES_REAL) GTEST_SKIP() << "stories260K.bin not found at configure time";
  ProcessResult h = run_process({LOCKSTEP_STORIES_HOST, std::string(LOCKSTEP_GUEST_DIR) + "/stories_c.bin"});
  ASSERT_EQ(h.exit_code, 0);
  std::vector<int> ints = parse_story(h.out).tokens;
  host::Checkpoint ck = host::read_checkpoint(std::string(LOCKSTEP_STORIES_MODELS_DIR) + "/stories260K.bin");
  std::vector<int> floats = host::greedy_float(ck, static_cast<int>(ints.size()));
  size_t common = 0;
  while (common < ints.size() && common < floats.size() && ints[common] == floats[common]) common++;
  std::cout << "int8 stories_c agrees with float32 greedy decoding on the first " << common << " of "
            << ints.size() << " tokens\n";
  RecordProperty("common_prefix", std::to_string(common));
  // The sentence the models README quotes is 48 tokens long; it must survive quantization.
  EXPECT_GE(common, 48u);
}

TEST(StoriesCHost, RejectsCorruptAndTruncatedImages) {
  std::string image = read_file(std::string(LOCKSTEP_GUEST_DIR) + "/stories_c_synthetic.bin");
  auto write = [](const std::string& path, const std::string& bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  std::string bad_magic = image;
  bad_magic[0] ^= 0x01;
  std::string path = ::testing::TempDir() + "/stories_c_bad_magic.bin";
  write(path, bad_magic);
  ProcessResult r = run_process({LOCKSTEP_STORIES_HOST, path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: bad stories_c image (magic, version or shapes)\n");
  path = ::testing::TempDir() + "/stories_c_truncated.bin";
  write(path, image.substr(0, image.size() / 2));
  r = run_process({LOCKSTEP_STORIES_HOST, path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: bad stories_c image (truncated)\n");
}

INSTANTIATE_TEST_SUITE_P(Models, StoriesC,
                         ::testing::Values(StoriesCase{"stories_c", true},
                                           StoriesCase{"stories_c_synthetic", false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lockstep::guests_test
