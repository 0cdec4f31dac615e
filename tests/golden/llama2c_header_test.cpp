// The llama2.c checkpoint header's derived sizes (issue 28, class 3): computed in 64 bits with
// overflow checks and bounded before anything is allocated.  The outside report's header
// (dim 65536, n_heads = n_kv_heads = 32768) overflowed kv_dim() in an int; the sizes wrapped
// and a 1.8 MB file passed the size check, then std::bad_alloc.  The files are made here.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "llama2c.h"

namespace lockstep::host {
namespace {

using Bytes = std::vector<std::uint8_t>;

// A 28-byte header of the seven int32 values.
Bytes header(std::array<std::int32_t, 7> v) {
  Bytes b(28);
  std::memcpy(b.data(), v.data(), 28);
  return b;
}

// The outside report's header: dim 65536, hidden 1, layers 1, heads = kv heads = 32768, vocab 1,
// seq_len 1.  The size the int-overflowing reader computed: wk and wv wrap to -2^32 floats each
// and cancel wq + wo, leaving 65536 + 2*65536 + 3*65536 + 65536 + 2 floats.
const std::array<std::int32_t, 7> kOverflowHeader = {65536, 1, 1, 32768, 32768, 1, 1};
constexpr std::uint64_t kWrappedFileBytes = 28 + 4 * std::uint64_t{458754};  // 1,835,044 bytes

// The header plus zero floats up to `size` bytes (a file the old reader accepted).
Bytes file_of(const std::array<std::int32_t, 7>& h, std::uint64_t size) {
  Bytes b = header(h);
  b.resize(size, 0);
  return b;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ModelError& e) {
    return e.what();
  }
  return "<accepted>";
}

TEST(Llama2cHeader, KvDimDoesNotOverflow) {
  Config c;
  c.dim = 65536, c.n_heads = 32768, c.n_kv_heads = 32768;
  EXPECT_EQ(c.kv_dim(), 65536);
  EXPECT_EQ(c.head_size(), 2);
  c.n_kv_heads = 1;
  EXPECT_EQ(c.kv_dim(), 2);
}

TEST(Llama2cHeader, OverflowHeaderImpliesItsTrueSize) {
  // True size: V*D + L*D + 4*L*D*D (wq, wk, wv, wo: kv_dim = dim) + L*D + 3*L*H*D + D + S*HS
  // = 4 * 2^32 + 7 * 65536 + 2 floats.
  const std::uint64_t truth = 28 + 4 * (17179869184ull + 458752 + 2);
  EXPECT_EQ(truth, 68721311780ull);
  // Its size is right; its vocabulary of one id (no BOS) is what refuses it.
  EXPECT_EQ(error_of([&] { checkpoint_layout(header(kOverflowHeader), truth, "x.bin"); }),
            "x.bin: bad header: vocab_size = 1 (at least 3: llama2.c's ids 0 <unk>, 1 BOS and 2 EOS)");
  // The same header with vocab 3: two more embedding rows of dim 65536.
  std::array<std::int32_t, 7> h3 = kOverflowHeader;
  h3[5] = 3;
  const CheckpointLayout l = checkpoint_layout(header(h3), truth + 4 * 2 * 65536, "x.bin");
  EXPECT_EQ(l.file_bytes, truth + 4 * 2 * 65536);
  EXPECT_EQ(l.config.kv_dim(), 65536);
  ASSERT_EQ(l.tensor_floats.size(), 12u);
  EXPECT_EQ(l.tensor_floats[3], 65536ull * 65536);  // wk
  EXPECT_EQ(l.run_state_floats, 2 * 65536 + 32768);
}

TEST(Llama2cHeader, WrappedSizeFileIsRejectedNotAllocated) {
  const Bytes f = file_of(kOverflowHeader, kWrappedFileBytes);
  const std::string msg = error_of([&] { parse_checkpoint(f, "overflow.bin"); });
  EXPECT_EQ(msg, "overflow.bin: wrong file size 1835044 bytes; the header (dim 65536, hidden 1, layers 1, heads 32768, "
                 "kv_heads 32768, vocab 1, seq_len 1) implies 68721311780");
}

TEST(Llama2cHeader, RunStateIsBoundedBeforeAllocation) {
  // 65536 layers and positions of a dim-2 model: a 7 MB file, 2 * 2^16 * 2^16 * 2 = 2^34 floats
  // of K/V cache plus 2^16 attention scores.
  const std::array<std::int32_t, 7> h = {2, 1, 65536, 1, 1, 1, 65536};
  const std::uint64_t floats = 2 + 65536ull * (2 + 4 + 4 + 4 + 4 + 2 + 3 * 2) + 2 + 65536ull * 2;
  const std::uint64_t size = 28 + 4 * floats;
  const std::string msg = error_of([&] { checkpoint_layout(header(h), size, "deep.bin"); });
  EXPECT_EQ(msg, "deep.bin: bad header: n_layers 65536, seq_len 65536, kv_dim 2 and n_heads 1 need a run state of "
                 "17179934720 floats, above the limit of 268435456");
  EXPECT_EQ(error_of([&] { parse_checkpoint(file_of(h, size), "deep.bin"); }), msg);
}

TEST(Llama2cHeader, LayoutChecksTheClaimedSizeOnly) {
  EXPECT_EQ(error_of([&] { checkpoint_layout(header(kOverflowHeader), 27, "t.bin"); }),
            "t.bin: checkpoint truncated: 27 bytes, shorter than the 28-byte header");
  // The largest header the value checks allow: every product stays far inside 64 bits
  // (5 * 2^48 + 8 * 2^32 + 3 * 2^16 floats, by hand).
  const std::array<std::int32_t, 7> big = {65536, 65536, 65536, 32768, 1, -65536, 65536};
  const std::string msg = error_of([&] { checkpoint_layout(header(big), 1u << 20, "big.bin"); });
  EXPECT_NE(msg.find("big.bin: wrong file size 1048576 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("implies 5629636973953052"), std::string::npos) << msg;
}

// A vocabulary without BOS (id 1) is refused once the size is right (found by an outside tester:
// vocab_size 1 was accepted, and the float model read the BOS row past the embedding table).
TEST(Llama2cHeader, AVocabularyWithoutBosIsRefused) {
  for (const std::int32_t v : {1, 2, -2}) {
    const std::array<std::int32_t, 7> h = {2, 1, 1, 1, 1, v, 1};
    // V*D + L*D + 4*L*D*D (kv_dim = dim) + L*D + 3*L*H*D + D + S*HS, and wcls when v < 0
    const std::uint64_t av = static_cast<std::uint64_t>(v < 0 ? -v : v);
    const std::uint64_t floats = av * 2 + 2 + 16 + 2 + 6 + 2 + 2 + (v < 0 ? av * 2 : 0);
    EXPECT_EQ(error_of([&] { checkpoint_layout(header(h), 28 + 4 * floats, "v.bin"); }),
              "v.bin: bad header: vocab_size = " + std::to_string(v) +
                  " (at least 3: llama2.c's ids 0 <unk>, 1 BOS and 2 EOS)");
  }
  const std::array<std::int32_t, 7> ok = {2, 1, 1, 1, 1, 3, 1};
  EXPECT_EQ(checkpoint_layout(header(ok), 28 + 4 * (6 + 2 + 16 + 2 + 6 + 2 + 2), "v.bin").config.vocab_size, 3);
}

// lockstep-model and lockstep-image-c on the outside report's file: one line, exit 2.
TEST(Llama2cHeader, ToolsGiveOneLineAndExit2) {
  const auto dir = std::filesystem::temp_directory_path() / ("lockstep_l2c_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    const Bytes f = file_of(kOverflowHeader, kWrappedFileBytes);
    std::ofstream(dir / "stories260K.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
    std::ofstream(dir / "tok512.bin", std::ios::binary) << "";
  }
  const std::vector<std::string> commands = {
      std::string(LOCKSTEP_MODEL_EXE) + " --models " + dir.string() + " golden --build float",
      std::string(LOCKSTEP_MODEL_EXE) + " --models " + dir.string() + " convert --out " + (dir / "out").string(),
#ifdef LOCKSTEP_IMAGE_C_EXE
      std::string(LOCKSTEP_IMAGE_C_EXE) + " --models " + dir.string() + " -o " + (dir / "img.bin").string(),
#endif
  };
  for (const std::string& cmd : commands) {
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    const int status = ::pclose(p);
    ASSERT_TRUE(WIFEXITED(status)) << cmd << "\n" << out;
    EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << "\n" << out;
    ASSERT_FALSE(out.empty()) << cmd;
    EXPECT_EQ(out.find('\n'), out.size() - 1) << "not one line: " << out;
    EXPECT_NE(out.find("stories260K.bin: wrong file size 1835044 bytes"), std::string::npos) << out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::host
