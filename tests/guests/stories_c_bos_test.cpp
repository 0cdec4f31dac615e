// A generated BOS ends the stories_c story (issue 28, class 4; docs/guests.md), on the host
// golden model (stories_c_host: model.c for the host) and on the RISC-V guest run by the
// reference model.  The model is tests/golden/bos_model.h's (the synthetic checkpoint whose
// classifier prefers BOS after a few tokens), written as an int8 image by lockstep_image_c;
// the guest is stories_c_synthetic.elf with that image written over its own (same size).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bos_model.h"
#include "convert.h"
#include "lockstep/format/elf.h"
#include "lockstep/ref/machine.h"
#include "quality.h"

namespace lockstep::guests_test {
namespace {

struct Story {
  std::string text;
  std::vector<int> tokens;
};

Story parse(const std::string& out) {
  Story s;
  const std::size_t at = out.rfind("\ntokens:");
  if (at == std::string::npos) return s;
  s.text = out.substr(0, at);
  std::istringstream ids(out.substr(at + 8));
  for (int id; ids >> id;) s.tokens.push_back(id);
  return s;
}

std::vector<std::uint8_t> bos_image() {
  return image_c::build_image(host::bos_preferring_checkpoint(), host::synthetic_tokenizer(), image_c::ImageOptions{});
}

std::string run_host(const std::vector<std::uint8_t>& image, int* exit_code) {
  const auto path = std::filesystem::temp_directory_path() / ("lockstep_bos_" + std::to_string(::getpid()) + ".bin");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(image.data()), static_cast<long>(image.size()));
  FILE* p = ::popen((std::string(LOCKSTEP_STORIES_HOST) + " " + path.string()).c_str(), "r");
  std::string out;
  char buf[4096];
  for (std::size_t n; p && (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = p ? ::pclose(p) : -1;
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(path);
  return out;
}

TEST(StoriesCBos, HostGoldenModelStopsAtBos) {
  int code = -1;
  const std::string out = run_host(bos_image(), &code);
  ASSERT_EQ(code, 0) << out;
  const Story s = parse(out);
  // int8 agrees with float32 here: 246 246 6, then BOS (synthetic pieces: 246 = <0xF3>, 6 = <0x03>).
  EXPECT_EQ(s.tokens, (std::vector<int>{246, 246, 6}));  // 63 tokens, "\n<s>\n" among them, before the fix
  EXPECT_EQ(out.find("<s>"), std::string::npos) << out;
  EXPECT_EQ(s.text, host::synthetic_tokenizer().decode_all(std::vector<int>{1, 246, 246, 6}));
  EXPECT_EQ(out, "\xF3\xF3\x03\ntokens: 246 246 6\n");
}

TEST(StoriesCBos, GuestOnTheReferenceStopsAtBos) {
  const std::vector<std::uint8_t> image = bos_image();
  auto m = std::make_unique<ref::Machine>();
  const format::GuestImage elf = format::read_elf_file(LOCKSTEP_STORIES_C_ELF);
  m->load(elf);
  m->write_memory(elf.symbols.at("stories_image"), image);  // the synthetic image has the same size
  m->run(200'000'000ull);
  ASSERT_EQ(m->status(), ref::Status::kExited) << "trap " << m->trap_code();
  EXPECT_EQ(m->exit_status(), 0u);
  int code = -1;
  EXPECT_EQ(m->console_out(), run_host(image, &code));
  EXPECT_EQ(parse(m->console_out()).tokens, (std::vector<int>{246, 246, 6}));
  std::printf("stories_c guest with a BOS-preferring model: %llu instructions\n",
              static_cast<unsigned long long>(m->instructions_retired()));
}

}  // namespace
}  // namespace lockstep::guests_test
