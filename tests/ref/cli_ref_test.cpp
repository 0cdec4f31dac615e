// `lockstep ref` end to end (label: integration): console pass-through,
// --json summary, --trace file, --signature, --max-steps, bad input.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lockstep/format/trace_file.h"
#include "ref_test_util.h"

namespace lockstep::ref::test {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LockstepRef : public ::testing::Test {
 protected:
  // One folder per test process: ctest -j runs the tests of this fixture (and other build
  // folders' copies) at the same time, and they must not share the out/err files.
  fs::path dir = fs::path(::testing::TempDir()) / ("lockstep-cli-ref-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Result run(const std::string& args) {
    const std::string cmd = std::string(LOCKSTEP_EXE) + " " + args + " >" + (dir / "out").string() + " 2>" +
                            (dir / "err").string();
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  }
  std::string elf(const std::string& name, const format::GuestImage& img) {
    const auto p = dir / name;
    format::write_elf_file(p, img);
    return p.string();
  }
};

// trace.md §5 after setting sp and a7 (li sp, 0x0010fffc; li a7, 93).
format::GuestImage spec_example() {
  std::vector<u32> code;
  progen::emit_li(code, 2, 0x0010fffc);
  progen::emit_li(code, 17, 93);
  code.insert(code.end(), {0xfff00513u, 0x00a12023u, kEcall});
  return progen::image_from_code(code);
}

TEST_F(LockstepRef, JsonSummaryAndTraceFile) {
  const auto path = elf("spec.elf", spec_example());
  const auto r = run("ref " + path + " --json --trace " + (dir / "spec.trace").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // exactly one JSON object on stdout
  EXPECT_EQ(j["status"], "exact");
  EXPECT_EQ(j["end"], "exit");
  EXPECT_EQ(j["exit_status"], 255);
  EXPECT_EQ(j["instructions_retired"], 7);
  // Two li of two words each: word 0 PCH0, PCL, W; words 1..3 PCL, W (21
  // tokens); then trace.md §5's three instructions at words 4..6 (16 tokens).
  EXPECT_EQ(j["steps"], 21 + 16);
  const auto tf = format::read_trace_file(dir / "spec.trace");
  EXPECT_EQ(tf.header["trace_version"], "trace-v3");
  EXPECT_EQ(tf.header["vocab_size"], 20736) << "trace.md §2: V = 256 * 81";
  EXPECT_EQ(tf.header["end"], "exit");
  EXPECT_EQ(tf.header["exit_status"], 255);
  EXPECT_EQ(tf.header["program"], "spec.elf");
  ASSERT_EQ(tf.tokens.size(), 37u);
  EXPECT_EQ(Tokens(tf.tokens.begin(), tf.tokens.begin() + 2), (Tokens{11520, 11264}));
  const Tokens tail(tf.tokens.end() - 16, tf.tokens.end());
  EXPECT_EQ(tail, (Tokens{11268, 511, 767, 1023, 1279, 11269, 1532, 1791, 1808, 2048, 2559, 2815, 3071, 3327,
                          11270, 8191}));
}

TEST_F(LockstepRef, ConsolePassesThroughAndSignature) {
  std::vector<u32> code;
  progen::emit_li(code, 17, 64);
  progen::emit_li(code, 10, 1);
  progen::emit_li(code, 11, kData);
  progen::emit_li(code, 12, 3);
  code.push_back(kEcall);
  progen::emit_li(code, 17, 93);
  progen::emit_li(code, 10, 3);
  code.push_back(kEcall);
  auto img = progen::image_from_code(code, kCode, {format::Segment{kData, 16, 6, {'h', 'i', '\n', 0, 0xef, 0xbe, 0xad, 0xde}}});
  img.symbols["begin_signature"] = kData;
  img.symbols["end_signature"] = kData + 12;
  const auto path = elf("hello.elf", img);
  auto r = run("ref " + path + " --signature " + (dir / "sig").string());
  EXPECT_EQ(r.code, 0) << "the guest's own exit status is reported, not returned";
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_NE(r.err.find("exit 3"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir / "sig"), "000a6968\ndeadbeef\n00000000\n");
  // stderr that cannot be written is an incomplete output, as stdout's is (found by an outside
  // tester: exit 0 with the guest's fd-2 bytes lost)
  const int full = std::system((std::string(LOCKSTEP_EXE) + " ref " + path + " >/dev/null 2>/dev/full").c_str());
  EXPECT_TRUE(WIFEXITED(full) && WEXITSTATUS(full) == 2) << full;
  r = run("ref " + path + " --json");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stdout"], "hi\n");
  EXPECT_EQ(j["stdout_bytes"], 3);
  EXPECT_EQ(j["stdout_truncated"], false);
}

// A guest that writes `writes` times 65535 bytes of 'x' to fd 1, then exits 0.
format::GuestImage spew(u32 writes) {
  std::vector<u32> code;
  progen::emit_li(code, 17, 64);
  progen::emit_li(code, 11, kData);
  progen::emit_li(code, 12, 65535);
  progen::emit_li(code, 5, writes);
  // loop: li a0, 1; ecall; addi t0, t0, -1; bnez t0, loop
  code.insert(code.end(), {0x00100513u, kEcall, 0xfff28293u, 0xfe029ae3u});
  progen::emit_li(code, 17, 93);
  progen::emit_li(code, 10, 0);
  code.push_back(kEcall);
  return progen::image_from_code(code, kCode, {format::Segment{kData, 65536, 6, std::vector<std::uint8_t>(65535, 'x')}});
}

// The largest resident set of any child process waited for so far, in bytes.
std::uint64_t children_max_rss() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return std::uint64_t(u.ru_maxrss) * 1024;
}

TEST_F(LockstepRef, ConsoleIsStreamedAndJsonKeepsABoundedHead) {
  constexpr std::uint64_t kWrites = 800, kTotal = kWrites * 65535;  // 52.4 MB of output
  constexpr std::uint64_t kRssLimit = std::uint64_t{32} << 20;      // lockstep ref alone needs ~15 MB
  const auto path = elf("spew.elf", spew(kWrites));
  // Plain: to a file, which this process does not read whole (a forked child counts its
  // parent's resident set towards its own maximum).
  const std::string cmd = std::string(LOCKSTEP_EXE) + " ref " + path + " >" + (dir / "big").string() + " 2>" +
                          (dir / "err").string();
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "err");
  EXPECT_EQ(fs::file_size(dir / "big"), kTotal);
  std::string tail(4096, '\0');
  std::ifstream big(dir / "big", std::ios::binary);
  big.seekg(-4096, std::ios::end);
  big.read(tail.data(), 4096);
  EXPECT_EQ(tail, std::string(4096, 'x'));
  EXPECT_NE(slurp(dir / "err").find("exit 0"), std::string::npos);
  // Streamed, not kept: the process never held the 52 MB it wrote.
  EXPECT_LT(children_max_rss(), kRssLimit);

  const auto r = run("ref " + path + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["end"], "exit");
  EXPECT_EQ(j["stdout"].get<std::string>(), std::string(std::size_t{1} << 20, 'x')) << "the first 1 MiB";
  EXPECT_EQ(j["stdout_bytes"], kTotal);
  EXPECT_EQ(j["stdout_truncated"], true);
  EXPECT_EQ(j["stderr"], "");
  EXPECT_EQ(j["stderr_bytes"], 0);
  EXPECT_EQ(j["stderr_truncated"], false);
  EXPECT_LT(children_max_rss(), kRssLimit);
}

TEST_F(LockstepRef, TrapAndStepLimit) {
  const auto path = elf("trap.elf", progen::image_from_code({0x00000013u, kEbreak}));
  // A trap is an error (exit 2), as in `run`: `lockstep ref guest.elf && ...` never passes a
  // guest that crashed (an outside tester's finding); --allow-trap makes it the expected end.
  auto r = run("ref " + path + " --json");
  EXPECT_EQ(r.code, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["end"], "trap");
  EXPECT_NE(j["error"].get<std::string>().find("the guest ended in trap 9 EBREAK, not by the exit ecall; pass "
                                               "--allow-trap when the guest is meant to trap"),
            std::string::npos)
      << j.dump();
  r = run("ref " + path + " --json --allow-trap");
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "exact");
  EXPECT_EQ(j["end"], "trap");
  EXPECT_EQ(j["trap_code"], 9);
  EXPECT_EQ(j["trap_name"], "EBREAK");
  EXPECT_EQ(j["instructions_retired"], 1);
  EXPECT_EQ(j["steps"], 5) << "PCH0, PCL, NOP; PCL, TRAP(9)";
  EXPECT_EQ(j["pc"], 0x10004);
  EXPECT_EQ(j["word"], kEbreak);
  EXPECT_FALSE(j.contains("address"));
  r = run("ref " + path);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lockstep ref: trap.elf: trap 9 EBREAK at pc 0x00010004 (word 0x00100073), 1 instructions retired, "
                   "5 trace steps\nlockstep: error: the guest ended in trap 9 EBREAK, not by the exit ecall; pass "
                   "--allow-trap when the guest is meant to trap\n");
  r = run("ref " + path + " --allow-trap");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "lockstep ref: trap.elf: trap 9 EBREAK at pc 0x00010004 (word 0x00100073), 1 instructions retired, "
                   "5 trace steps\n");
  r = run("ref " + path + " --json --max-steps 1");
  EXPECT_EQ(r.code, 0) << "the step limit asked for is a result";
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "exact");
  EXPECT_EQ(j["end"], "step_limit");
  EXPECT_EQ(j["steps"], 1);
  // isa.md §6: retired means completed. The NOP's third token is its last: at 2 steps it is cut.
  r = run("ref " + path + " --json --max-steps 2");
  EXPECT_EQ(nlohmann::json::parse(r.out)["instructions_retired"], 0);
  r = run("ref " + path + " --max-steps 2");
  EXPECT_NE(r.err.find("step limit reached, 0 instructions retired, 2 trace steps"), std::string::npos) << r.err;
  r = run("ref " + path + " --json --max-steps 3");
  EXPECT_EQ(nlohmann::json::parse(r.out)["instructions_retired"], 1);
}

// A load or store that faults or is misaligned: the trap line gives its effective address.
TEST_F(LockstepRef, TrapLineGivesTheWordAndTheAddress) {
  std::vector<u32> code;
  progen::emit_li(code, 11, 0x200000);
  code.push_back(0x0045a503u);  // lw a0, 4(a1): outside RAM
  auto r = run("ref " + elf("lw.elf", progen::image_from_code(code)) + " --json");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["trap_name"], "LOAD_FAULT");
  EXPECT_EQ(j["word"], 0x0045a503u);
  EXPECT_EQ(j["address"], 0x200004);
  code.clear();
  progen::emit_li(code, 11, kData);
  code.push_back(0x00a5a123u);  // sw a0, 2(a1): misaligned
  r = run("ref " + elf("sw.elf", progen::image_from_code(code, kCode, {format::Segment{kData, 16, 6, {}}})));
  EXPECT_NE(r.err.find("trap 6 STORE_MISALIGNED at pc 0x00010008 (word 0x00a5a123), address 0x00020002,"),
            std::string::npos)
      << r.err;
}

std::string hex8(u32 v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

// The traps whose code alone does not say why name it (found by an outside tester): a misaligned
// fetch its jump's target, BAD_ECALL the rule of isa.md §5 that failed.
TEST_F(LockstepRef, TrapLineSaysWhyForAJumpAndAnEcall) {
  std::vector<u32> code;
  progen::emit_li(code, 5, kCode + 0x12);
  code.push_back(0x000280e7u);  // jalr ra, 0(t0): a target that is not a multiple of 4
  auto r = run("ref " + elf("jalr.elf", progen::image_from_code(code)));
  EXPECT_NE(r.err.find("trap 2 FETCH_MISALIGNED at pc 0x" + hex8(kCode + 4 * (code.size() - 1)) +
                       " (word 0x000280e7), jump target 0x" + hex8(kCode + 0x12) + ","),
            std::string::npos)
      << r.err;
  // --json says it too (found by an outside tester: the target was only in the text)
  const auto jr = nlohmann::json::parse(run("ref " + (dir / "jalr.elf").string() + " --json").out);
  EXPECT_EQ(jr["trap_text"], "(word 0x000280e7), jump target 0x" + hex8(kCode + 0x12)) << jr.dump();
  // and where a guest that can never exit loops
  const auto jl = nlohmann::json::parse(run("ref " + elf("self.elf", progen::image_from_code({0x0000006fu})) + " --json").out);
  EXPECT_EQ(jl["end"], "self_loop") << jl.dump();
  EXPECT_EQ(jl["pc"], kCode) << jl.dump();
  EXPECT_EQ(jl["word"], 0x0000006fu) << jl.dump();
  auto ecall = [&](u32 a7, u32 fd, u32 len) {
    std::vector<u32> c;
    progen::emit_li(c, 17, a7);
    progen::emit_li(c, 10, fd);
    progen::emit_li(c, 11, kData);
    progen::emit_li(c, 12, len);
    c.push_back(kEcall);
    return run("ref " + elf("ecall.elf", progen::image_from_code(c, kCode, {format::Segment{kData, 16, 6, {}}}))).err;
  };
  EXPECT_NE(ecall(1234, 1, 1).find("trap 8 BAD_ECALL at pc 0x"), std::string::npos);
  EXPECT_NE(ecall(1234, 1, 1).find("(word 0x00000073), a7 = 1234 is no ECALL number (64 write, 93 exit),"), std::string::npos)
      << ecall(1234, 1, 1);
  EXPECT_NE(ecall(64, 3, 1).find("(word 0x00000073), write to fd 3 (1 or 2),"), std::string::npos) << ecall(64, 3, 1);
  EXPECT_NE(ecall(64, 1, 65536).find("(word 0x00000073), write of 65536 bytes (at most 65,535),"), std::string::npos)
      << ecall(64, 1, 65536);
}

// A signature region that does not start on a word is refused before the run (isa.md §3; found
// by an outside tester: words were read at 0x11001).
TEST_F(LockstepRef, AMisalignedSignatureIsRefused) {
  std::vector<u32> code;
  progen::emit_li(code, 17, 93);
  code.push_back(kEcall);
  auto img = progen::image_from_code(code, kCode, {format::Segment{kData, 16, 6, {}}});
  img.symbols["begin_signature"] = kData + 1;
  img.symbols["end_signature"] = kData + 9;
  const auto r = run("ref " + elf("sig1.elf", img) + " --signature " + (dir / "sig1").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lockstep: error: --signature: begin_signature (0x" + hex8(kData + 1) +
                       ") is not a multiple of 4 (isa.md §3)\n");
}

// An ELF built for hard float (float ABI in e_flags) that meets an illegal instruction says so.
TEST_F(LockstepRef, HardFloatElfGetsAHintAtAnIllegalInstruction) {
  const auto path = elf("f.elf", progen::image_from_code({0x00000000u}));
  auto r = run("ref " + path);
  EXPECT_NE(r.err.find("trap 1 ILLEGAL_INSTRUCTION at pc 0x00010000 (word 0x00000000), 0"), std::string::npos)
      << r.err << "no hint for a soft-float ELF";
  for (const auto& [flags, abi] : std::vector<std::pair<char, std::string>>{{4, "ilp32d"}, {2, "ilp32f"}}) {
    std::string bytes = slurp(path);
    bytes[36] = flags;  // e_flags (ELF32 header offset 36): EF_RISCV_FLOAT_ABI
    std::ofstream(dir / "hf.elf", std::ios::binary) << bytes;
    r = run("ref " + (dir / "hf.elf").string());
    EXPECT_NE(r.err.find("(word 0x00000000); the ELF is built for hard float (" + abi +
                         ": F/D instructions, not part of this machine: build with -march=rv32im -mabi=ilp32), 0"),
              std::string::npos)
        << r.err;
  }
}

TEST_F(LockstepRef, BadInputIsOneLineAndExitCode2) {
  std::ofstream(dir / "junk.elf") << "not an elf";
  auto r = run("ref " + (dir / "junk.elf").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("lockstep: error: ELF: not an ELF file (bad magic)", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run("ref " + (dir / "junk.elf").string() + " --json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(nlohmann::json::parse(r.out)["status"], "error");
  // Outside RAM: ref's loader.
  const auto low = elf("low.elf", progen::image_from_code({kEbreak}, 0x8000));
  r = run("ref " + low);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "lockstep: error: ELF: program header 0 (PT_LOAD) [0x8000, 0x8004) is not inside RAM [0x10000, 0x110000); "
            "link for the machine's RAM: see guests/runtime/link.ld (docs/guests.md) (in " + low + ")\n");
  for (const char* p : {"guests/runtime/link.ld", "docs/guests.md"})
    EXPECT_TRUE(fs::exists(fs::path(LOCKSTEP_SOURCE_DIR) / p)) << p << ": the hint names it";
  // `run` reads the guest the same way and names the file once.
  r = run("run " + (dir / "junk.elf").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lockstep: error: ELF: not an ELF file (bad magic) (in " + (dir / "junk.elf").string() + ")\n");
  // An empty file names its whole path (a bare name "null" would read "(null)").
  const fs::path empty = dir / "null";
  { std::ofstream touch(empty); }
  r = run("ref " + empty.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lockstep: error: ELF: truncated file (0 bytes, no ELF magic) (in " + empty.string() + ")\n");
  // A device is never read (/dev/zero was read up to the ELF limit, 256 MiB).
  r = run("ref /dev/null");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lockstep: error: ELF: cannot read /dev/null: it is a device, not a regular file\n");
  r = run("run " + low);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is not inside RAM"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("low.elf"), r.err.rfind("low.elf")) << r.err;
  // No signature symbols: refused before the run (no step run, nothing printed by the guest).
  const auto plain = elf("plain.elf", progen::image_from_code({kEbreak}));
  r = run("ref " + plain + " --signature " + (dir / "sig2").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lockstep: error: --signature: the ELF has no begin_signature/end_signature symbols\n");
}

}  // namespace
}  // namespace lockstep::ref::test
