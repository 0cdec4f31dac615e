// `--dut`, `--dut-connect`, `chip-server` and `dut-check` end to end through the lockstep
// executable (docs/spec/dut-protocol.md): the built chip served over the protocol gives the
// in-process run's results; every fault of §8, scripted by tests/dut/faulty_chip.cpp, ends the run
// with one line, exit 2 and the steps compared before it kept in the summary and the report.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "../cli/cli_run.h"
#include "lockstep/chip/chip.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lockstep::cli_test::Result;
using lockstep::cli_test::run_lockstep;
using lockstep::cli_test::slurp;

const std::string kExe = LOCKSTEP_EXE;
const std::string kChip = LOCKSTEP_BUILT_CHIP;
const std::string kFaulty = LOCKSTEP_FAULTY_CHIP;

fs::path guest(const std::string& name) {
  for (const fs::path& d : {fs::path(LOCKSTEP_BINARY_DIR) / "guests", fs::path(LOCKSTEP_SOURCE_DIR) / "build" / "guests"})
    if (fs::exists(d / (name + ".elf"))) return d / (name + ".elf");
  return {};
}

// This process's scratch folders, removed after the tests.
const lockstep::cli_test::ScratchRoot& kScratch = lockstep::cli_test::add_scratch_root("dut-cli");
fs::path fresh_dir(const std::string& name) { return kScratch.fresh(name); }

std::string server_cmd() { return kExe + " chip-server " + kChip + " --stdio --log-level warn"; }

json summary_of(const Result& r) {
  try {
    return json::parse(r.out);
  } catch (const std::exception&) {
    ADD_FAILURE() << "stdout is not one JSON object: " << r.out << "\nstderr: " << r.err;
    return json::object();
  }
}

// faulty_chip's own account of its fault: {steps answered before it, tokens of the faulty answer};
// the chunk sizes the engine chose (they grow with the chip's speed) do not matter to the tests.
std::pair<std::uint64_t, std::uint64_t> fault_point(const std::string& err) {
  const auto at = err.find("faulty_chip: ");
  if (at == std::string::npos) return {0, 0};
  unsigned long long before = 0, count = 0;
  const auto a = err.find("after ", at), b = err.find("answer of ", at);
  if (a != std::string::npos) before = std::stoull(err.substr(a + 6));
  if (b != std::string::npos) count = std::stoull(err.substr(b + 10));
  return {before, count};
}

// Lines of stderr that start "lockstep: error:".
std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("lockstep: error:", 0) == 0) out.push_back(l);
  return out;
}

class DutCli : public ::testing::Test {
 protected:
  void SetUp() override {
    crc32_ = guest("crc32");
    if (crc32_.empty()) GTEST_SKIP() << "directed guests not built (no crc32.elf)";
  }
  fs::path crc32_;
};

TEST_F(DutCli, ChipServerOverAPipeGivesTheInProcessResult) {
  for (const char* mode : {"forced", "free"}) {
    const Result a = run_lockstep({"run", crc32_.string(), "--mode", mode, "--steps", "20000", "--json"});
    const Result b =
        run_lockstep({"run", crc32_.string(), "--mode", mode, "--steps", "20000", "--json", "--dut", server_cmd()});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const json sa = summary_of(a), sb = summary_of(b);
    EXPECT_EQ(sb["status"], "exact");
    EXPECT_EQ(sa["steps"], sb["steps"]) << mode;
    EXPECT_EQ(sa["digest"], sb["digest"]) << mode;
    EXPECT_EQ(sb["steps"], 20000);
    EXPECT_EQ(sb["backend"], "dut");
  }
}

// A chip process that does not exit at the end of its session (BYE, then end of file on its
// stdin) is ended with SIGTERM after 5 s; the run keeps its verdict, and a warning says where
// those seconds went (before: 5 to 7 s silently at the end of every run).
TEST_F(DutCli, AChipThatOutlivesItsSessionIsNamed) {
  const std::string lingering = "sh -c '" + server_cmd() + "; sleep 60 </dev/null >/dev/null 2>&1'";
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--json", "--dut", lingering});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(summary_of(r)["status"], "exact");
  EXPECT_NE(r.err.find("lockstep: warn: chip process '" + lingering +
                       "' did not exit within 5 s of the end of its input (end of file on its stdin): "
                       "ended with SIGTERM"),
            std::string::npos)
      << r.err;
  // A chip that answers BYE with anything but OK is named too (found by an outside tester: only
  // the seconds an unanswered BYE cost were).
  const Result bye = run_lockstep({"run", crc32_.string(), "--steps", "200", "--dut", kFaulty + " byeerror 0 " + kChip});
  ASSERT_EQ(bye.exit_code, 0) << bye.err;
  EXPECT_NE(bye.err.find("' answered BYE with ERROR, not OK (dut-protocol.md §3.10)\n"), std::string::npos) << bye.err;
  // A chip that exits at the end of its input costs no warning.
  const Result ok = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--dut", server_cmd()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("lockstep: warn:"), std::string::npos) << ok.err;
}

TEST_F(DutCli, ChipServerOnAUnixSocketServesSeveralRuns) {
  const fs::path dir = fresh_dir("socket");
  const std::string sock = (dir / "chip.sock").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::freopen("/dev/null", "w", stdout);
    ::execl(kExe.c_str(), kExe.c_str(), "chip-server", kChip.c_str(), "--listen", ("unix:" + sock).c_str(),
            "--sessions", "2", "--log-level", "warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 600 && !fs::exists(sock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(sock)) << "chip-server did not listen";
  // A connection that closes without HELLO (a port probe, a health check) is not one of the
  // two sessions: both runs below are still served.
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock.c_str());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
    ::close(fd);
  }
  const Result ref = run_lockstep({"run", crc32_.string(), "--mode", "free", "--steps", "5000", "--json"});
  for (int i = 0; i < 2; ++i) {
    const Result r = run_lockstep(
        {"run", crc32_.string(), "--mode", "free", "--steps", "5000", "--json", "--dut-connect", "unix:" + sock});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(summary_of(r)["digest"], summary_of(ref)["digest"]);
    EXPECT_EQ(summary_of(r)["steps"], 5000);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "chip-server ended with " << status;
}

// A refused login (a wrong token) is not a session served: N of them never end a --sessions N
// server (before: two wrong tokens ended a --sessions 2 server with exit 0, and the harness with
// the right token found no socket).
TEST_F(DutCli, ChipServerDoesNotCountRefusedLogins) {
  const fs::path dir = fresh_dir("refused-logins");
  const std::string sock = (dir / "chip.sock").string();
  std::ofstream(dir / "token") << "s3cret-token-0123456789abcdef\n";
  std::ofstream(dir / "wrong") << "wrong-token-0123456789abcdefgh\n";
  fs::permissions(dir / "token", fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(dir / "wrong", fs::perms::owner_read | fs::perms::owner_write);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::freopen("/dev/null", "w", stdout);
    ::freopen((dir / "server.err").c_str(), "w", stderr);
    ::execl(kExe.c_str(), kExe.c_str(), "chip-server", kChip.c_str(), "--listen", ("unix:" + sock).c_str(),
            "--token-file", (dir / "token").c_str(), "--sessions", "1", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 600 && !fs::exists(sock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(sock)) << "chip-server did not listen";
  for (int i = 0; i < 2; ++i) {
    const Result bad = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut-connect", "unix:" + sock,
                                     "--dut-token-file", (dir / "wrong").string()});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("authentication failed"), std::string::npos) << bad.err;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the refused logins ended the server";
  const Result good = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut-connect", "unix:" + sock,
                                    "--dut-token-file", (dir / "token").string()});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "chip-server ended with " << status;
  const std::string log = slurp(dir / "server.err");
  EXPECT_NE(log.find("a session was refused at HELLO (authentication failed); not counted as a session"),
            std::string::npos) << log;
}

// `chip-server --stdio` serves one session: a harness that writes no frames broke it, which is
// bad input (one line, exit 2; before: an info line saying "0 errors" and exit 0).
TEST_F(DutCli, ChipServerOnStdioFailsOnInputThatIsNoFrame) {
  const fs::path dir = fresh_dir("stdio-garbage");
  const std::string cmd = "echo 'hello garbage' | '" + kExe + "' chip-server '" + kChip + "' --stdio >'" +
                          (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string err = slurp(dir / "err");
  EXPECT_NE(err.find("lockstep: error: chip-server: the session ended (malformed input: "), std::string::npos) << err;
  EXPECT_NE(err.find(") after 0 frames, 0 steps, 1 error\n"), std::string::npos) << err;  // the ERROR it sent
  // one line (found by an outside tester: a warn line and the error line)
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// A replay with --dut keeps the case's token map (--dut-vocab) unless given one (found by the
// re-test: it was dropped, and the chip's own ids were read as the spec's: "does NOT reproduce").
TEST_F(DutCli, AReplayOnAnotherDutKeepsTheCasesTokenMap) {
  const fs::path dir = fresh_dir("replay-vocab");
  // The spec's own ids (minimal_chip.vocab less its 50,000), with W2(0) and W2(1) swapped: the
  // built chip's W2(0) is read as W2(1), a divergence at its first W2(0) token.
  std::ifstream in(fs::path(LOCKSTEP_SOURCE_DIR) / "python" / "examples" / "minimal_chip.vocab");
  std::ofstream swap(dir / "swap.vocab");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string kind;
    long id = 0;
    words >> kind >> id;
    if (kind == "W2(*)") {
      swap << "W2(0) " << id - 50000 + 1 << "\nW2(1) " << id - 50000 << "\n";
      for (int p = 2; p < 256; ++p) swap << "W2(" << p << ") " << id - 50000 + p << "\n";
    } else {
      swap << kind << " " << id - 50000 << "\n";
    }
  }
  swap.close();
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "3000", "--dut", server_cmd(), "--dut-vocab",
                                 (dir / "swap.vocab").string(), "--report", (dir / "run").string()});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const Result same = run_lockstep({"replay", (dir / "run").string(), "--json", "--dut", server_cmd()});
  EXPECT_EQ(same.exit_code, 1) << same.err;
  EXPECT_EQ(summary_of(same)["reproduced"], true) << same.err;
  EXPECT_NE(same.err.find("the case's token map --dut-vocab " + (dir / "swap.vocab").string() + " is kept"),
            std::string::npos) << same.err;
}

// A replay whose chip fails before the case's recorded step tells nothing of the case: its
// report says "not conclusive", with no "reproduced" (found by an outside tester: a chip that
// died at step 50 of a case recorded at step 100 read "the case does NOT reproduce", reproduced
// false, in summary.json, the page and the JUnit file, while --json gave no verdict).
TEST_F(DutCli, AReplayWhoseChipFailsBeforeTheRecordedStepIsNotConclusive) {
  const fs::path dir = fresh_dir("replay-chip-fails");
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "3000", "--report",
                                 (dir / "run").string(), "--dut", kFaulty + " wrongtoken 3 " + kChip});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json recorded = json::parse(slurp(dir / "run" / "case.json"));
  ASSERT_GT(recorded["expect"].value("first_divergence", std::uint64_t{0}), 64u) << recorded.dump();
  // the replay's chip exits at its first answer, before the recorded step
  const Result p = run_lockstep({"replay", (dir / "run").string(), "--json", "--report", (dir / "replay").string(),
                                 "--dut", kFaulty + " exit 1 " + kChip});
  EXPECT_EQ(p.exit_code, 2) << p.err;
  // --json says it as summary.json does (found by the re-test: only the folder had the verdict)
  EXPECT_EQ(summary_of(p).value("replay_verdict", "").rfind("not conclusive: the chip failed (0 steps compared)", 0), 0u)
      << p.out;
  EXPECT_FALSE(summary_of(p).contains("reproduced")) << p.out;
  const json s = json::parse(slurp(dir / "replay" / "summary.json"));
  EXPECT_EQ(s["status"], "error") << s.dump();
  EXPECT_FALSE(s.contains("reproduced")) << s.dump();
  EXPECT_EQ(s.value("replay_verdict", "").rfind("not conclusive: the chip failed (0 steps compared) before it could tell; "
                                                "recorded first divergence at step ",
                                                0),
            0u)
      << s.dump();
  EXPECT_EQ(slurp(dir / "replay" / "junit.xml").find("NOT reproduce"), std::string::npos);
  // that failed replay's own case records no result: replayed, it says its run failed (found by
  // an outside tester: "did not finish: it was killed, or is still running")
  const Result again = run_lockstep({"replay", (dir / "replay").string(), "--dut", server_cmd()});
  EXPECT_NE(again.out.find("the case records no result (the run that wrote it failed: chip under test: "),
            std::string::npos)
      << again.out << again.err;
  // --dut-timeout alone applies to the case's own chip under test (found by an outside tester: it
  // was refused, "needs --dut or --dut-connect")
  const Result t = run_lockstep({"replay", (dir / "run").string(), "--dut-timeout", "31", "--json", "--report",
                                 (dir / "replay-timeout").string()});
  EXPECT_EQ(t.exit_code, 1) << t.err;
  EXPECT_EQ(summary_of(t)["reproduced"], true) << t.out;
  EXPECT_EQ(json::parse(slurp(dir / "replay-timeout" / "case.json"))["dut"]["timeout_s"], 31.0);
  // and is refused for a case of a built-in executor
  const Result b = run_lockstep({"run", crc32_.string(), "--steps", "100", "--report", (dir / "built").string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const Result bt = run_lockstep({"replay", (dir / "built").string(), "--dut-timeout", "31"});
  EXPECT_EQ(bt.exit_code, 2) << bt.err;
  EXPECT_NE(bt.err.find("lockstep: error: --dut-timeout needs --dut or --dut-connect (the case replays on the cpu "
                        "backend, not a chip under test)"),
            std::string::npos)
      << bt.err;
}

// chip-server's identity is its chip file's hash, weights and all, as `run --chip` reports the file
// (found by an outside tester: it hashed the configuration alone, the same for a chip with one
// weight changed, and `run --resume` went on with the other chip's weights).
TEST_F(DutCli, ChipServersIdentityIsItsChipFilesHash) {
  const Result built = run_lockstep({"run", crc32_.string(), "--steps", "10", "--chip", kChip, "--json"});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const Result served = run_lockstep({"run", crc32_.string(), "--steps", "10", "--dut", server_cmd(), "--json"});
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(summary_of(served)["chip_hash"], summary_of(built)["chip_hash"]) << served.out;
  EXPECT_EQ(summary_of(built)["chip_hash"].get<std::string>().size(), 16u);
}

// `chip-server --stdio` writes nothing but frames to stdout: refused (--json, a bad option), it says
// so on stderr only (found by an outside tester: --json put the refusal's summary on stdout, the
// protocol's channel).
TEST_F(DutCli, ChipServerOnStdioRefusesOnStderrOnly) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--json", "chip-server", kChip, "--stdio"},
                                                std::vector<std::string>{"--json", "chip-server", kChip, "--stdio", "--bogus"}}) {
    const Result r = run_lockstep(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(error_lines(r.err).size(), 1u) << r.err;
  }
}

// Options of a listening server are refused with --stdio, not ignored; --max-streams says its range
// (found by an outside tester: --allow-remote and --sessions were accepted and ignored, and
// --max-streams -1 said "0 to 18446744073709551615").
TEST_F(DutCli, ChipServerRefusesOptionsItWouldIgnore) {
  struct Case {
    std::vector<std::string> args;
    std::string line;
  };
  for (const Case& c :
       {Case{{"chip-server", kChip, "--stdio", "--allow-remote"},
             "lockstep: error: chip-server --stdio: --allow-remote is for --listen (a stdio session is its parent's alone)"},
        Case{{"chip-server", kChip, "--stdio", "--sessions", "5"},
             "lockstep: error: chip-server --stdio serves one session: --sessions is for --listen"},
        Case{{"chip-server", kChip, "--stdio", "--max-streams", "-1"},
             "lockstep: error: --max-streams: must be a whole number from 1 to 65536"}}) {
    const Result r = run_lockstep(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const auto lines = error_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind(c.line, 0), 0u) << lines[0];
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(DutCli, ReplayOfADutCaseStartsTheChipAgain) {
  const fs::path dir = fresh_dir("replay");
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "free", "--steps", "3000", "--report",
                                 dir.string(), "--dut", server_cmd(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(slurp(dir / "case.json"));
  EXPECT_EQ(c["backend"], "dut");
  EXPECT_EQ(c["dut"]["command"], server_cmd());
  const Result p = run_lockstep({"replay", dir.string(), "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(summary_of(p)["digest"], summary_of(r)["digest"]);
  EXPECT_TRUE(summary_of(p)["reproduced"].get<bool>());
  // A case from another machine, whose chip's working folder is not here: said as such before the
  // chip is started (found by an outside tester: the shell's 126 was blamed on the executable).
  json moved = c;
  moved["dut"]["workdir"] = (dir / "no-such-folder").string();
  const fs::path elsewhere = fresh_dir("replay-elsewhere");
  std::ofstream(elsewhere / "case.json") << moved.dump(2);
  const Result w = run_lockstep({"replay", elsewhere.string()});
  EXPECT_EQ(w.exit_code, 2) << w.err;
  const auto lines = error_lines(w.err);
  ASSERT_EQ(lines.size(), 1u) << w.err;
  EXPECT_NE(lines[0].find("its working folder " + (dir / "no-such-folder").string() + " does not exist"), std::string::npos)
      << lines[0];
  EXPECT_EQ(w.err.find("chmod"), std::string::npos) << w.err;
}

// A chip process that exits while a process it started still holds its stdout (no end of file
// comes): its exit status is reported at once, not a timeout after --dut-timeout (found by an
// outside tester: "sh -c 'sleep 100 & exec CHIP'" waited the whole timeout).
// Also: what the chip left running (here the `sleep`) ends with the session, not after it (found
// by an outside tester: a chip's `sleep 100 &` outlived the run).
TEST_F(DutCli, AChipThatExitsIsReportedAtOnceEvenWhenItsStdoutStaysOpen) {
  const fs::path pid_file = fresh_dir("background") / "pid";
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--dut-timeout", "60",
                                 "--dut", "sh -c 'sleep 20 2>/dev/null </dev/null & echo $! > " + pid_file.string() +
                                              "; exec " + kFaulty + " exit 3 " + kChip + "'"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_LT(seconds, 15) << "waited for the timeout: " << r.err;
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("exited with status 3"), std::string::npos) << lines[0];
  EXPECT_NE(r.err.find("lockstep: warn: chip process '"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("left processes running after it ended (its process group): ended with SIGTERM"),
            std::string::npos)
      << r.err;
  const pid_t sleeper = std::stoi(slurp(pid_file));
  ASSERT_GT(sleeper, 1);
  // Gone, or a zombie that no one has reaped yet (a container's init may not): not running.
  std::ifstream stat("/proc/" + std::to_string(sleeper) + "/stat");
  std::string stat_line;
  if (std::getline(stat, stat_line)) {
    const auto close = stat_line.rfind(')');
    ASSERT_NE(close, std::string::npos) << stat_line;
    EXPECT_EQ(stat_line.substr(close + 2, 1), "Z") << "the chip's background process still runs: " << stat_line;
  }
}

TEST_F(DutCli, EveryFaultIsOneLineExitTwoAndKeepsTheStepsCompared) {
  struct Fault {
    std::string mode;
    int n;
    std::string says;  // in the error line
  };
  const std::vector<Fault> faults = {
      {"exit", 3, "exited with status 3"},
      {"crash", 3, "(the chip process was killed by signal 11"},
      {"hang", 3, " steps (1 stream) within --dut-timeout 2"},  // the request: below
      // Text on the chip's stdout is named as text, quoted, with the fix (found by an outside
      // tester: it was "malformed frame ... type 0x75626564", the bytes "debu").
      {"garbage", 3,
       "wrote text where a frame belongs, in answer to FORCED: \"debug: logits computed\" (a chip must write only "
       "frames to its stdout; print debug output to stderr)"},
      // A line shorter than a frame header (found by an outside tester: "type 0x50a6b6f frame: length ...")
      {"shortgarbage", 3, "wrote text where a frame belongs, in answer to FORCED: \"ok\" (a chip must write only"},
      {"oversize", 3, "exceeds the limit 67108864"},
      {"short", 3, "the wrong batch size"},
      {"badid", 3, "predicted id 16777215 at stream 0 step "},
      {"error", 3, "ERROR 7 (internal error of the chip): simulated failure of the chip"},
      // the chip's text escaped (found by an outside tester: 0xff 0xfe went to the terminal raw)
      {"errorbytes", 3, "ERROR 7 (internal error of the chip): \\xff\\xfe\\x1b[31mred second line"},  // a newline: one line
      {"wrongtype", 3, "with OK (RESET) (expected TOKENS (FORCED))"},
      // A frame nobody asked for is a protocol fault, not a wrong token (found by an outside
      // tester: the duplicate was read as the next answer and reported as a mismatch, exit 1).
      {"twice", 3, "sent a TOKENS (FORCED) frame nobody asked for, after its answer to FORCED of "},
      // A header of a request's type is refused at once, not waited on for its length (found by
      // an outside tester: 10 minutes of --dut-start-timeout for 4 stray bytes).
      {"requesthead", 3, "malformed frame in answer to FORCED: a frame header of type 0x1, a request's (HELLO), and length 32773"},
      {"version", 0, "speaks protocol version 2"},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.mode);
    const fs::path dir = fresh_dir("fault-" + f.mode);
    const auto t0 = std::chrono::steady_clock::now();
    const Result r = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json", "--report", dir.string(),
                                   "--dut-timeout", "2", "--dut",
                                   kFaulty + " " + f.mode + " " + std::to_string(f.n) + " " + kChip});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_LT(seconds, 60) << "the harness must not hang";
    const auto lines = error_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind("lockstep: error: chip under test: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(f.says), std::string::npos) << lines[0];
    const json s = summary_of(r);
    EXPECT_EQ(s["status"], "error");
    // A chip that failed before any step: no closing "steps compared 0" line.
    if (f.n == 0) {
      EXPECT_EQ(r.err.find("steps compared"), std::string::npos) << r.err;
    }
    if (f.mode == "short" || f.mode == "badid") {
      // The same replay as for an ERROR: no wrong token preceded the bad answer.
      EXPECT_NE(lines[0].find(" agreed with the reference: no wrong token preceded that answer"), std::string::npos)
          << lines[0];
    }
    if (f.mode == "error") {
      // The teacher-forced replay of the failed request found no wrong token before the ERROR.
      EXPECT_NE(lines[0].find("; replayed teacher-forced from step 0, the request's steps "), std::string::npos)
          << lines[0];
      EXPECT_NE(lines[0].find(" agreed with the reference: no wrong token preceded the ERROR"), std::string::npos)
          << lines[0];
    }
    if (f.mode == "hang") {
      // The timeout names the frame left unanswered and the steps it asked for.
      const auto [before, count] = fault_point(r.err);
      EXPECT_NE(lines[0].find("no answer to FORCED of " + std::to_string(count) + " steps (1 stream) within --dut-timeout 2"),
                std::string::npos)
          << lines[0];
    }
    if (f.n > 0) {
      // The steps of the two answers before the fault were compared, and kept.
      const auto [before, count] = fault_point(r.err);
      ASSERT_GT(before, 0u) << r.err;
      // (a duplicated answer was right: its steps were compared before its copy came up)
      const std::uint64_t kept = f.mode == "twice" ? before + count : before;
      EXPECT_EQ(s["steps"], kept) << s.dump();
      EXPECT_EQ(s["mismatches"], 0);
      const json rep = json::parse(slurp(dir / "summary.json"));
      EXPECT_EQ(rep["status"], "error");
      EXPECT_EQ(rep["steps"], kept);
      EXPECT_EQ(rep["error"], lines[0].substr(std::string("lockstep: error: ").size()));
      // how far the run came, with no resume hint: it wrote no checkpoint
      EXPECT_NE(lines[0].find("(the run had compared " + std::to_string(kept) + " steps, no mismatch)"), std::string::npos)
          << lines[0];
    }
  }
  // A run that writes checkpoints says which one --resume continues from (found by an outside
  // tester: a chip server killed mid-story ended with no hint, though the resume worked).
  const fs::path dir = fresh_dir("fault-checkpointed");
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--report", dir.string(),
                                 "--checkpoint-every", "100", "--dut", kFaulty + " exit 6 " + kChip});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  const std::string hint = "`lockstep run --resume " + dir.string() + "` continues from the checkpoint of step ";
  const auto at = lines[0].find(hint);
  ASSERT_NE(at, std::string::npos) << lines[0];
  const std::string step = lines[0].substr(at + hint.size(), lines[0].find(')', at) - at - hint.size());
  char name[40];
  std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", std::stoull(step));
  EXPECT_TRUE(fs::exists(dir / "checkpoints" / name)) << lines[0];
  // A resume whose chip cannot start leaves the folder as it was (found by the re-test: the run's
  // record became "error, 0 steps", its JUnit case "run").
  json c = json::parse(slurp(dir / "case.json"));
  c["dut"]["command"] = "/nonexistent/chip";
  std::ofstream(dir / "case.json") << c.dump(2);
  const std::string summary = slurp(dir / "summary.json"), junit = slurp(dir / "junit.xml");
  const Result resumed = run_lockstep({"run", "--resume", dir.string()});
  EXPECT_EQ(resumed.exit_code, 2) << resumed.err;
  EXPECT_NE(resumed.err.find(dir.string() + " left as it was: `lockstep run --resume " + dir.string() +
                             "` goes on from its last checkpoint once the chip starts)"),
            std::string::npos)
      << resumed.err;
  EXPECT_EQ(slurp(dir / "summary.json"), summary);
  EXPECT_EQ(slurp(dir / "junit.xml"), junit);
}

// Whether `pid` has a handler installed for `sig` (/proc/PID/status, SigCgt).
bool catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1) & 1) != 0;
  return false;
}

// Starts `lockstep ARGS` with stdout and stderr in files under `dir`, waits until it catches
// `sig` and its stderr
// holds `when` (or 30 s), then 300 ms, sends `sig`, and waits at most 30 s more for it to end.
// Returns {exit code (128 + signal when killed), seconds from the signal to the end, stdout, stderr}.
struct Signalled {
  int rc = -1;
  double seconds = 0;
  std::string out, err;
};
Signalled run_and_signal(const std::vector<std::string>& args, const fs::path& dir, const std::string& when, int sig) {
  const fs::path o = dir / "stdout", e = dir / "stderr";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(o.c_str(), "w", stdout) || !std::freopen(e.c_str(), "w", stderr)) ::_exit(127);
    std::vector<char*> argv{const_cast<char*>(kExe.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(kExe.c_str(), argv.data());
    ::_exit(127);
  }
  const auto wait_for = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!catches(pid, sig) && std::chrono::steady_clock::now() < wait_for)  // its handlers are in
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  while (slurp(e).find(when) == std::string::npos && std::chrono::steady_clock::now() < wait_for)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(pid, sig);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > t0 + std::chrono::seconds(30)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Signalled r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

// SIGINT or SIGTERM while the harness waits on a chip that has stopped answering ends the run at
// once as interrupted (exit 3), with the steps compared before it in the summary and the report,
// not after --dut-timeout as an error (found by an outside tester: the wait ignored the signal).
TEST_F(DutCli, AStopWhileTheChipHangsIsAnInterruptionWithTheStepsKept) {
  for (const int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig == SIGINT ? "SIGINT" : "SIGTERM");
    const fs::path dir = fresh_dir(sig == SIGINT ? "stop-int" : "stop-term");
    const fs::path rep = dir / "run";
    const Signalled r = run_and_signal({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json",
                                        "--report", rep.string(), "--dut-timeout", "300", "--dut",
                                        kFaulty + " hang 3 " + kChip},
                                       dir, "faulty_chip: hang now", sig);
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_LT(r.seconds, 10) << "the wait must end with the signal, not at --dut-timeout";
    EXPECT_NE(r.err.find("lockstep: interrupted: "), std::string::npos) << r.err;
    EXPECT_TRUE(error_lines(r.err).empty()) << r.err;
    const auto [before, count] = fault_point(r.err);
    ASSERT_GT(before, 0u) << r.err;
    const json s = summary_of(Result{r.rc, r.out, r.err});
    EXPECT_EQ(s["status"], "interrupted") << s.dump();
    EXPECT_EQ(s["steps"], before) << s.dump();
    const json saved = json::parse(slurp(rep / "summary.json"));
    EXPECT_EQ(saved["status"], "interrupted") << saved.dump();
    EXPECT_EQ(saved["steps"], before);
  }
  // During the handshake: a command that never answers HELLO.
  const fs::path dir = fresh_dir("stop-hello");
  const Signalled h = run_and_signal({"run", crc32_.string(), "--steps", "100", "--json", "--report",
                                      (dir / "run").string(), "--dut-start-timeout", "300", "--dut", "sleep 300"},
                                     dir, "", SIGTERM);
  EXPECT_EQ(h.rc, 3) << h.err;
  EXPECT_LT(h.seconds, 10);
  EXPECT_NE(h.err.find("lockstep: interrupted: chip under test: stopped by SIGINT, SIGTERM or SIGHUP while waiting on HELLO"),
            std::string::npos)
      << h.err;
  EXPECT_EQ(json::parse(slurp(dir / "run" / "summary.json"))["status"], "interrupted");
}

// A stop while the harness waits on the end of the session (a chip that does not answer BYE, or
// that does not exit after it) kills the chip at once and says so; the run, whose every step was
// compared, keeps its verdict (found by an outside tester: the signal was not acted on for the
// 5 s wait, left no trace, and the warning read "BYE: chip process '...': given up while waiting").
TEST_F(DutCli, AStopAtTheEndOfTheSessionKillsTheChipAtOnce) {
  for (const std::string mode : {"byenoanswer", "ignoreeof"}) {
    SCOPED_TRACE(mode);
    const fs::path dir = fresh_dir("stop-at-bye-" + mode);
    const Signalled r = run_and_signal({"run", crc32_.string(), "--steps", "200", "--dut", kFaulty + " " + mode + " 0 " + kChip},
                                       dir, mode == "ignoreeof" ? "faulty_chip: lingering after BYE now" : "faulty_chip: BYE not answered now",
                                       SIGINT);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_LT(r.seconds, 2.5) << "the wait must end with the signal, not after 5 s: " << r.err;
    EXPECT_NE(r.out.find("steps compared 200, mismatches 0"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(mode == "ignoreeof"
                             ? "' was killed with SIGKILL: SIGINT, SIGTERM or SIGHUP came while it had not yet exited at the end of its session"
                             : "' was killed with SIGKILL: SIGINT, SIGTERM or SIGHUP came while Lockstep waited on its answer to BYE"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("given up while waiting"), std::string::npos) << r.err;
  }
}

TEST_F(DutCli, AnEmptyChipOptionIsRefusedNotReadAsTheBuiltChip) {
  // `--dut "$DUT"` with DUT unset must not test the built chip and pass.
  for (const char* opt : {"--dut", "--dut-connect", "--chip"}) {
    SCOPED_TRACE(opt);
    const Result r = run_lockstep({"run", crc32_.string(), "--steps", "100", "--json", opt, ""});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const auto lines = error_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0], std::string("lockstep: error: ") + opt +
                            ": is empty (give a value, or leave the option out for its default) (see lockstep --help)");
  }
}

TEST_F(DutCli, AChipWithoutProbesStillGetsADivergenceReport) {
  // MULTI_STEP only, and one wrong token in its third answer: a mismatch (exit 1) with the report,
  // no attribution ("no probes"), the replay from the reset, and one note per missing capability.
  const fs::path dir = fresh_dir("plain");
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "free", "--steps", "20000", "--json", "--report",
                                 dir.string(), "--dut", kFaulty + " wrongtoken 3 " + kChip + " plain"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["status"], "mismatch");
  ASSERT_TRUE(s.contains("divergence")) << s.dump();
  const auto [before, count] = fault_point(r.err);
  ASSERT_GT(count, 0u) << r.err;
  EXPECT_EQ(s["divergence"]["step"], before + count);  // the last token of the third answer
  EXPECT_EQ(s["divergence"]["attribution"]["status"], "unavailable");
  EXPECT_NE(s["divergence"]["attribution"]["text"].get<std::string>().find("no probes"), std::string::npos);
  EXPECT_EQ(s["capability_notes"].size(), 3u) << s.dump();
  const json rep = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(rep["status"], "mismatch");
  EXPECT_EQ(rep["steps"], before + count);
  // The rate is the comparing's: the divergence's replay (4,096 steps through the protocol here)
  // is timed apart and left out of it, and the closing line says so.
  const double seconds = s["seconds"], diagnosis = s["diagnosis_seconds"], rate = s["steps_per_second"];
  EXPECT_GT(diagnosis, 0.0);
  EXPECT_LT(diagnosis, seconds);
  EXPECT_NEAR(rate, static_cast<double>(before + count) / (seconds - diagnosis), 1e-6 * rate);
  EXPECT_NE(r.err.find(" diagnosing the divergence)"), std::string::npos) << r.err;
}

// A wrong byte of a vector word names the word's element in the stream, read from the VWG before
// it (found by an outside tester: "field VW20" left the element to be counted by hand): step 1403
// of vector_ops is byte 2 of element 8 of a VEW ADD's word stream.
TEST_F(DutCli, AWrongVectorWordNamesItsElement) {
  const fs::path dir = fresh_dir("element");
  const Result r = run_lockstep({"run", guest("vector_ops").string(), "--mode", "forced", "--report", dir.string(),
                                 "--dut", kFaulty + " tripped 1403 " + kChip + " plain"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("  field:       VW02 (word element 8, byte 2)\n"), std::string::npos) << r.out;
  const json s = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(s["run"]["streams"][0]["divergence"]["position"], "word element 8, byte 2") << s.dump(2).substr(0, 2000);
  EXPECT_NE(slurp(dir / "report.html").find("VW02 (word element 8, byte 2)"), std::string::npos);
}

// A chip that trips over its own wrong prediction: in free mode its wrong token at step 100 is fed
// back to it, and it answers that FREE request with ERROR, which brings no tokens. The run still
// reports the wrong token, found by replaying the request's steps teacher-forced, as the first
// divergence (exit 1, the ERROR in its note), not as a fault (found by an outside tester: it was
// exit 2 and the mismatch was lost). Teacher-forced, the same chip gives the same divergence.
TEST_F(DutCli, AWrongPredictionHiddenByAnErrorIsStillTheDivergence) {
  const fs::path dir = fresh_dir("tripped");
  const std::string chip = kFaulty + " tripped 100 " + kChip + " plain";
  const Result r = run_lockstep(
      {"run", crc32_.string(), "--mode", "free", "--steps", "20000", "--json", "--report", dir.string(), "--dut", chip});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  ASSERT_NE(r.err.find("faulty_chip: tripped now, after 64 steps"), std::string::npos) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["status"], "mismatch");
  EXPECT_EQ(s["steps"], 100);
  ASSERT_TRUE(s.contains("divergence")) << s.dump();
  const json& d = s["divergence"];
  EXPECT_EQ(d["step"], 100);
  EXPECT_EQ(d["mode"], "free");
  EXPECT_EQ(d["differing_bits"], 1);
  const std::string note = d["note"];
  EXPECT_NE(note.find("then the chip answered FREE with ERROR 7 (internal error of the chip): tripped over its own "
                      "prediction, an answer without tokens; this step was found by replaying the request's steps "
                      "teacher-forced from step 0"),
            std::string::npos)
      << note;
  const json rep = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(rep["status"], "mismatch");
  EXPECT_FALSE(rep.contains("error")) << rep.dump();

  const Result f = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json", "--dut", chip});
  ASSERT_EQ(f.exit_code, 1) << f.err;
  EXPECT_EQ(summary_of(f)["divergence"]["step"], 100);
  EXPECT_EQ(summary_of(f)["divergence"]["expected"], d["expected"]);
  EXPECT_EQ(summary_of(f)["divergence"]["actual"], d["actual"]);
}

// The same for an answer that holds the wrong token and then an id not below vocab_size, or one
// token too few: the answer is refused, and the replay of its request finds the wrong token
// (found by an outside tester: exit 2, "mismatches 0", the divergence at step 203 lost behind a
// bad id at step 448 of the same answer). In both modes.
TEST_F(DutCli, AWrongPredictionHiddenByABadAnswerIsStillTheDivergence) {
  for (const std::string mode : {"trippedbadid", "trippedshort"}) {
    for (const char* run_mode : {"forced", "free"}) {
      SCOPED_TRACE(mode + " " + run_mode);
      const Result r = run_lockstep({"run", crc32_.string(), "--mode", run_mode, "--steps", "20000", "--json", "--dut",
                                     kFaulty + " " + mode + " 100 " + kChip + " plain"});
      ASSERT_EQ(r.exit_code, 1) << r.err;
      const json s = summary_of(r);
      EXPECT_EQ(s["status"], "mismatch");
      EXPECT_EQ(s["divergence"]["step"], 100) << s.dump();
      EXPECT_EQ(s["divergence"]["differing_bits"], 1) << s.dump();
      const std::string note = s["divergence"]["note"];
      EXPECT_NE(note.find(mode == "trippedbadid" ? "then the chip predicted id 16777215 at stream 0 step "
                                                 : "tokens (the wrong batch size)"),
                std::string::npos)
          << note;
      EXPECT_NE(note.find("(none of that answer's tokens was used); this step was found by replaying the request's steps "
                          "teacher-forced from step 0"),
                std::string::npos)
          << note;
    }
  }
}

// A chip whose probes are all zeros: the run gives no layer (it blamed "embedding"), and says why.
TEST_F(DutCli, AllZeroProbesLocateNothing) {
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json", "--dut",
                                 kFaulty + " zeroprobes 3 " + kChip});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json a = summary_of(r)["divergence"]["attribution"];
  EXPECT_EQ(a["status"], "unavailable") << a.dump();
  EXPECT_EQ(a["text"].get<std::string>().rfind("no attribution: the chip's probes do not locate the divergence (every "
                                               "value of the ",
                                               0),
            0u)
      << a.dump();
  EXPECT_NE(a["text"].get<std::string>().find(" is 0 ("), std::string::npos) << a.dump();
  // all NaN is one number too (found by an outside tester: NaN != NaN, and "embedding" was blamed)
  const Result n = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json", "--dut",
                                 kFaulty + " nanprobes 3 " + kChip});
  ASSERT_EQ(n.exit_code, 1) << n.err;
  const json an = summary_of(n)["divergence"]["attribution"];
  EXPECT_EQ(an["status"], "unavailable") << an.dump();
  EXPECT_NE(an["text"].get<std::string>().find(" is nan ("), std::string::npos) << an.dump();
  // a VALUES answer that is not the field's width is a malformed answer (§3.7): the divergence
  // stands, the chip's fault beside it
  const Result w = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json", "--dut",
                                 kFaulty + " shortprobes 3 " + kChip});
  ASSERT_EQ(w.exit_code, 1) << w.err;
  EXPECT_NE(w.err.find("malformed answer to PROBE of field "), std::string::npos) << w.err;
  EXPECT_NE(w.err.find(" 1 values for a field of width "), std::string::npos) << w.err;
  // Beside the chip file, its zeros differ from the file's probes on every step, but locate
  // nothing: no earlier step is blamed, and the divergent step is attributed by the file's token.
  const Result z = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--json", "--dut",
                                 kFaulty + " zeroprobes 3 " + kChip, "--dut-chip", kChip});
  ASSERT_EQ(z.exit_code, 1) << z.err;
  const json b = summary_of(z)["divergence"]["attribution"];
  EXPECT_EQ(b["probe_step"], summary_of(z)["divergence"]["step"]) << b.dump();
  EXPECT_EQ(b["chip_file_verdict"], "executor") << b.dump();
  EXPECT_NE(b["text"].get<std::string>().find("no probe was compared with the chip file"), std::string::npos) << b.dump();
  EXPECT_EQ(b["text"].get<std::string>().find("steps before"), std::string::npos) << b.dump();
}

TEST_F(DutCli, AChipThatCannotStartIsOneLine) {
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "100", "--json", "--dut", "/nonexistent/chip --flag"});
  EXPECT_EQ(r.exit_code, 2);
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("chip under test:"), std::string::npos);
  EXPECT_NE(lines[0].find("exited with status 127: no such file: /nonexistent/chip)"), std::string::npos) << lines[0];
  // A file that is not executable: 126, and how to run it
  const fs::path script = fresh_dir("not-executable") / "chip.py";
  std::ofstream(script) << "print('never run')\n";
  const Result x = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut", script.string() + " a.chip"});
  EXPECT_EQ(x.exit_code, 2);
  EXPECT_NE(x.err.find("exited with status 126: " + script.string() + " cannot be run (not executable, or a folder): "
                       "chmod +x it, or give its interpreter first"),
            std::string::npos)
      << x.err;
  // A shell line given as the command: `exec cd` is no command; the error says how to wrap it.
  const Result sh = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut", "cd /tmp && /nonexistent/chip"});
  EXPECT_EQ(sh.exit_code, 2);
  EXPECT_NE(sh.err.find("exited with status 127: no such command; --dut runs /bin/sh -c 'exec COMMAND ARGS', so a "
                        "shell line such as 'cd DIR && ...' goes inside sh -c: --dut 'sh -c \"cd DIR && ...\"')"),
            std::string::npos)
      << sh.err;
  const Result c = run_lockstep({"run", crc32_.string(), "--dut-connect", "tcp:127.0.0.1:1"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("lockstep: error: chip under test: cannot connect to the chip at tcp:127.0.0.1:1"),
            std::string::npos)
      << c.err;
  const Result both = run_lockstep({"run", crc32_.string(), "--dut", "x", "--dut-connect", "unix:/x"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("give --dut or --dut-connect, not both"), std::string::npos);
  const Result chip = run_lockstep({"run", crc32_.string(), "--dut", "x", "--chip", kChip});
  EXPECT_EQ(chip.exit_code, 2);
  // Found before the chip starts (a chip may take minutes to load): a blank command, and a
  // vocabulary map that cannot be read. The chip here would never answer at all.
  const Result blank = run_lockstep({"run", crc32_.string(), "--dut", "   "});
  EXPECT_EQ(blank.exit_code, 2);
  EXPECT_NE(blank.err.find("lockstep: error: chip under test: --dut: the command is blank"), std::string::npos) << blank.err;
  const auto t0 = std::chrono::steady_clock::now();
  const Result vocab =
      run_lockstep({"run", crc32_.string(), "--dut", "sleep 600", "--dut-vocab", "/nonexistent/my.vocab"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(vocab.exit_code, 2);
  EXPECT_NE(vocab.err.find("chip under test: --dut-vocab /nonexistent/my.vocab: cannot read the vocabulary map"),
            std::string::npos)
      << vocab.err;
  // A map that breaks a rule that needs no vocab_size (here a token trace-v3 cannot produce) is
  // found before the chip starts too (found by an outside tester: it waited for the chip).
  const fs::path bad_map = fresh_dir("bad-map") / "br2.vocab";
  std::ofstream(bad_map) << "BR(2) 5\n";
  const auto t1 = std::chrono::steady_clock::now();
  const Result rule = run_lockstep({"run", crc32_.string(), "--dut", "sleep 600", "--dut-vocab", bad_map.string()});
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::seconds(30));
  EXPECT_EQ(rule.exit_code, 2);
  EXPECT_NE(rule.err.find(bad_map.string() + ":1: BR(2) is not a token trace-v3 can produce"), std::string::npos)
      << rule.err;
}

// The verdict of dut-check's check `name` in its --json summary, and its detail.
std::pair<std::string, std::string> check_of(const json& summary, const std::string& name) {
  for (const json& c : summary["checks"])
    if (c["check"] == name) return {c["verdict"], c["detail"]};
  return {"absent", ""};
}

// Every check named `name` in dut-check's --json summary, (verdict, detail) in order.
std::vector<std::pair<std::string, std::string>> checks_of(const json& summary, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  const json& checks = summary["checks"];
  for (const json& c : checks)
    if (c["check"] == name) out.emplace_back(c["verdict"], c["detail"]);
  return out;
}

TEST_F(DutCli, DutCheckPassesOnChipServerAndFailsOnAFaultyChip) {
  const Result ok = run_lockstep({"dut-check", "--steps", "300", "--json", "--dut", server_cmd()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const json s = summary_of(ok);
  EXPECT_EQ(s["failed"], 0);
  EXPECT_EQ(s["passed"], 24);
  EXPECT_EQ(checks_of(s, "reset clears the state"),
            (std::vector<std::pair<std::string, std::string>>{
                {"pass", "reset-probe (registers, RAM) on the stream scalar-p0 left reads the reset state: every register "
                         "0, RAM outside its image 0"},
                {"pass", "vector-p3 without its sections on the stream reset-probe (registers, RAM) left reads the reset "
                         "state: the vector unit's memories 0 where vector-p3 left values"}}));
  EXPECT_EQ(check_of(s, "session end (BYE, end of input)").second,
            "BYE answered with OK, the chip process exited at the end of its input");
  EXPECT_EQ(ok.err.find("lockstep: warn:"), std::string::npos) << ok.err;
  EXPECT_NE(check_of(s, "probes").second.find("the convention fields agree with the first step's tokens"),
            std::string::npos)
      << s["checks"].dump(1);
  // 300 steps of the generated programs compare few kinds of token, and the output says which
  // were never compared (found by an outside tester: a swapped BR map passed unseen)
  EXPECT_EQ(s["token_kinds_compared"].get<std::size_t>() + s["token_kinds_not_compared"].size(), 81u) << s.dump();
  EXPECT_NE(std::find(s["token_kinds_not_compared"].begin(), s["token_kinds_not_compared"].end(), "BR"),
            s["token_kinds_not_compared"].end())
      << s.dump();
  // The chip's own error lines about the deliberate bad frames are explained (found by an outside
  // tester: three unexplained "error:" lines beside a pass).
  EXPECT_NE((ok.out + ok.err).find("note: the 'bad frame' checks send malformed frames"), std::string::npos) << ok.err;
  // A failed check is a finding about the chip: exit 1 and status "mismatch", as a divergence
  // (it was 2, the code of a broken job).
  const Result bad = run_lockstep({"dut-check", "--steps", "300", "--json", "--dut-timeout", "5", "--dut",
                                   kFaulty + " short 2 " + kChip});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  const json sb = summary_of(bad);
  EXPECT_EQ(sb["status"], "mismatch");
  EXPECT_GT(sb["failed"].get<int>(), 0) << bad.err;
  EXPECT_EQ(sb["mismatches"], sb["failed"]);
  EXPECT_TRUE(error_lines(bad.err).empty()) << bad.err;
  bool named = false;
  for (const json& c : sb["checks"])
    if (c["verdict"] == "fail" && c["detail"].get<std::string>().find("wrong batch size") != std::string::npos) named = true;
  EXPECT_TRUE(named) << sb["checks"].dump(1);
  // A wrong token: the golden-model check names the instruction (found by an outside tester: only
  // the program and the step); a chip that dies at its first step says the other checks did not run.
  const Result wrong = run_lockstep({"dut-check", "--steps", "120", "--json", "--dut", kFaulty + " tripped 100 " + kChip});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.err;
  EXPECT_NE(check_of(summary_of(wrong), "golden model (teacher-forced)").second.find("first difference scalar-p0 step 100 (pc 0x"),
            std::string::npos)
      << summary_of(wrong)["checks"].dump(1);
  const Result dies = run_lockstep({"dut-check", "--steps", "300", "--json", "--dut", kFaulty + " crash 1 " + kChip});
  EXPECT_EQ(check_of(summary_of(dies), "the other checks").first, "skip") << summary_of(dies)["checks"].dump(1);
}

// dut-check of a chip-server that asks for a secret: every session it opens, the raw ones of the
// bad-frame checks too, sends --dut-token-file (found by an outside tester: 8 checks failed with
// "HELLO was answered with ERROR 5"); without the option the refusal names it.
TEST_F(DutCli, DutCheckSendsTheTokenInEverySession) {
  const fs::path dir = fresh_dir("dut-check-token");
  const std::string sock = (dir / "chip.sock").string();
  std::ofstream(dir / "token") << "s3cret-token-0123456789abcdef\n";
  fs::permissions(dir / "token", fs::perms::owner_read | fs::perms::owner_write);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::freopen("/dev/null", "w", stdout);
    ::freopen((dir / "server.err").c_str(), "w", stderr);
    ::execl(kExe.c_str(), kExe.c_str(), "chip-server", kChip.c_str(), "--listen", ("unix:" + sock).c_str(),
            "--token-file", (dir / "token").c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 600 && !fs::exists(sock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(sock)) << "chip-server did not listen";
  const Result ok = run_lockstep({"dut-check", "--steps", "120", "--json", "--dut-connect", "unix:" + sock,
                                  "--dut-token-file", (dir / "token").string()});
  const Result none = run_lockstep({"dut-check", "--steps", "120", "--json", "--dut-connect", "unix:" + sock});
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ(summary_of(ok)["failed"], 0) << summary_of(ok)["checks"].dump(1);
  EXPECT_EQ(summary_of(ok)["passed"], 24) << summary_of(ok)["checks"].dump(1);
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("ERROR 5 (authentication failed): authentication failed (the chip asks for a secret: give its "
                          "token file with --dut-token-file FILE)"),
            std::string::npos)
      << none.err;
  // The server logs why it refused dut-check's HELLO of another protocol version (it said "end of
  // stream", how the session ended after the refusal).
  const std::string log = slurp(dir / "server.err");
  EXPECT_NE(log.find("a session was refused at HELLO (this chip speaks protocol version 1, not 99); not counted"),
            std::string::npos)
      << log;
}

// A stop (SIGTERM) while dut-check waits on a hanging chip keeps the checks done: after a FAIL the
// result is a mismatch (exit 1) with the checks in the --json summary and "interrupted" beside
// them; with nothing failed, exit 3 and the checks done listed (found by an outside tester: both
// were "interrupted", exit 3, and the summary had no checks).
TEST_F(DutCli, AStoppedDutCheckKeepsTheChecksDone) {
  const fs::path dir = fresh_dir("dut-check-stop");
  struct Case {
    std::string mode, wait_for;
    int exit_code;
    std::size_t checks;
  };
  // wrongthenhang 80: the last of the 4 x 20 single steps is wrong (the golden-model check fails),
  // then the chip hangs at its next request (in the determinism check). hang 1: the first step hangs.
  // ignoreeof 0: a stop while the session-end check waits the chip's 5 s to exit cuts that check
  // short, no FAIL (found by the re-test: it was counted a FAIL, exit 1).
  for (const Case& c : {Case{"wrongthenhang 80", "FAIL  golden model", 1, 3}, Case{"hang 1", "pass  handshake", 3, 1},
                        Case{"ignoreeof 0", "pass  probes", 3, 13}}) {
    SCOPED_TRACE(c.mode);
    const fs::path out = dir / "out", err = dir / "err";
    const pid_t pid = lockstep::cli_test::spawn_lockstep(
        {"dut-check", "--steps", "20", "--json", "--dut-timeout", "60", "--dut", kFaulty + " " + c.mode + " " + kChip},
        out, err);
    bool seen = false;
    for (int i = 0; i < 1200 && !seen; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen = slurp(err).find(c.wait_for) != std::string::npos;
    }
    EXPECT_TRUE(seen) << slurp(err);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the hang
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), c.exit_code) << slurp(err);
    Result r;
    r.out = slurp(out);
    r.err = slurp(err);
    const json s = summary_of(r);
    EXPECT_EQ(s["status"], c.exit_code == 1 ? "mismatch" : "interrupted") << s.dump();
    EXPECT_TRUE(s.contains("interrupted")) << s.dump();
    ASSERT_EQ(s["checks"].size(), c.checks) << s.dump();
    // which kinds the checks done compared is not known: null, never the guests' whole count
    // (found by an outside tester: a stop before any check said 63 kinds were compared)
    EXPECT_TRUE(s["token_kinds_compared"].is_null()) << s.dump();
    for (const json& k : s["checks"])  // the check the stop cut short is not blamed on the chip
      EXPECT_EQ(k["detail"].get<std::string>().find("stopped"), std::string::npos) << k.dump();
    EXPECT_NE(r.err.find("lockstep: interrupted: dut-check was stopped by SIGINT, SIGTERM or SIGHUP after " +
                         std::to_string(c.checks)),
              std::string::npos)
        << r.err;
  }
}

// A chip whose RESET keeps the stream's registers (the reference model as the chip, refdirty) is
// failed by the reset check alone, at the probe's first read of a register the last guest left
// non-zero; the same chip with a clean RESET passes it (found by an outside tester: such a chip
// passed every check, whose guests write each register before they read it).
TEST_F(DutCli, DutCheckFailsAChipWhoseResetKeepsTheRegisters) {
  const Result clean = run_lockstep({"dut-check", "--steps", "200", "--ops", "rv32im", "--json", "--dut",
                                     kFaulty + " refchip -1 " + kChip});
  EXPECT_EQ(check_of(summary_of(clean), "reset clears the state").first, "pass") << clean.out << clean.err;
  EXPECT_EQ(check_of(summary_of(clean), "determinism").first, "pass") << clean.out;
  const Result dirty = run_lockstep({"dut-check", "--steps", "200", "--ops", "rv32im", "--json", "--dut",
                                     kFaulty + " refdirty -1 " + kChip});
  EXPECT_EQ(dirty.exit_code, 1) << dirty.out << dirty.err;
  const json s = summary_of(dirty);
  EXPECT_EQ(check_of(s, "determinism").first, "pass") << s["checks"].dump(1);
  EXPECT_EQ(check_of(s, "golden model (teacher-forced)").first, "pass") << s["checks"].dump(1);
  const auto [verdict, detail] = check_of(s, "reset clears the state");
  EXPECT_EQ(verdict, "fail") << s["checks"].dump(1);
  EXPECT_NE(detail.find(" (pc 0x10"), std::string::npos) << detail;
  EXPECT_NE(detail.find("addi "), std::string::npos) << detail;
  EXPECT_NE(detail.find("a chip that keeps a register or memory of a stream's last guest across "
                                           "RESET fails here"),
            std::string::npos)
      << detail;
  // the reset check alone tells the two apart (the reference as a chip has no SAVE and no probes)
  std::set<std::string> failing_clean, failing_dirty;
  const json sc = summary_of(clean);
  for (const json& c : sc["checks"])
    if (c["verdict"] == "fail") failing_clean.insert(c["check"].get<std::string>());
  for (const json& c : s["checks"])
    if (c["verdict"] == "fail") failing_dirty.insert(c["check"].get<std::string>());
  EXPECT_EQ(failing_clean, (std::set<std::string>{"save and restore", "probes"}));
  failing_clean.insert("reset clears the state");
  EXPECT_EQ(failing_dirty, failing_clean);
}

// A chip whose RESET keeps VR's words (the reference as a chip, refdirtyvr) passes the register
// probe and fails the second reset check, the last vector guest run again without its sections
// on the stream it left (found by an outside tester: a PyTorch chip that cleared one state layer
// of seven passed every check and 6 vector fuzz programs).
TEST_F(DutCli, DutCheckFailsAChipWhoseResetKeepsTheVectorRegisters) {
  const Result dirty = run_lockstep({"dut-check", "--steps", "200", "--json", "--dut", kFaulty + " refdirtyvr -1 " + kChip});
  EXPECT_EQ(dirty.exit_code, 1) << dirty.out << dirty.err;
  const json s = summary_of(dirty);
  const auto resets = checks_of(s, "reset clears the state");
  ASSERT_EQ(resets.size(), 2u) << s["checks"].dump(1);
  EXPECT_EQ(resets[0].first, "pass") << resets[0].second;
  EXPECT_EQ(resets[1].first, "fail") << resets[1].second;
  EXPECT_NE(resets[1].second.find("(vector-p3 without its sections, run on the stream reset-probe (registers, RAM) left"),
            std::string::npos)
      << resets[1].second;
  EXPECT_EQ(check_of(s, "golden model (teacher-forced)").first, "pass") << s["checks"].dump(1);
}

// A chip that cannot be started fails the handshake, and nothing is checked: a broken job, exit 2
// with one line.
TEST_F(DutCli, DutCheckOfAChipThatCannotStartIsAnError) {
  const Result r = run_lockstep({"dut-check", "--steps", "300", "--json", "--dut", "/nonexistent/chip --flag"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(summary_of(r)["status"], "error");
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("lockstep: error: dut-check: the handshake failed, nothing was checked: chip under test: ", 0),
            0u)
      << lines[0];
  EXPECT_EQ(summary_of(r)["token_kinds_compared"], 0) << r.out;  // no token was compared
  EXPECT_EQ(summary_of(r)["token_kinds_not_compared"].size(), 81u) << r.out;
}

// A chip whose FREE is wrong and whose STEP and FORCED are right: dut-check sends FREE frames, so
// its FREE check fails, and only it (it sent STEP frames and passed such a chip).
TEST_F(DutCli, DutCheckFailsAChipWhoseFreeIsWrong) {
  const Result r = run_lockstep({"dut-check", "--steps", "300", "--json", "--dut", kFaulty + " freebug 0 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["failed"], 1) << s["checks"].dump(1);
  const auto [verdict, detail] = check_of(s, "FREE (free-running steps)");
  EXPECT_EQ(verdict, "fail");
  EXPECT_NE(detail.find(" in one FREE frame: step 299: EXIT("), std::string::npos) << detail;
  EXPECT_EQ(check_of(s, "FORCED (teacher-forced steps)").first, "pass");
}

// A chip wrong only in STEP frames of several entries fails the batch checks, and only them: the
// STEP after the FORCED and FREE frames is one entry per frame (found by an outside tester: a batch
// bug was also blamed on FORCED and FREE, "FORCED left another state than single steps").
TEST_F(DutCli, DutCheckDoesNotBlameABatchBugOnForcedAndFree) {
  const Result r = run_lockstep({"dut-check", "--steps", "120", "--json", "--dut", kFaulty + " batchbug 0 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(check_of(s, "batch of streams").first, "fail") << s["checks"].dump(1);
  EXPECT_EQ(check_of(s, "FORCED (teacher-forced steps)").first, "pass") << s["checks"].dump(1);
  EXPECT_EQ(check_of(s, "FREE (free-running steps)").first, "pass") << s["checks"].dump(1);
}

// A chip that keeps a stream's state by its place in the STEP frame (faulty_chip byplace) fails
// the stream-order check: no entry's stream is its place there (found by an outside tester: the
// check put stream p at place p, and such a chip passed it and the batch check).
TEST_F(DutCli, DutCheckFailsAChipThatKeepsStateByPlaceInTheBatch) {
  const Result r = run_lockstep({"dut-check", "--steps", "120", "--json", "--dut", kFaulty + " byplace 0 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(check_of(s, "batch of streams").first, "pass") << s["checks"].dump(1);  // stream p at place p
  const auto [verdict, detail] = check_of(s, "stream order");
  EXPECT_EQ(verdict, "fail") << s["checks"].dump(1);
  // guest 0 moved one place along the frame (to place 3), in stream 1
  EXPECT_NE(detail.find("scalar-p0 in stream 1 at place 3 of the frame"), std::string::npos) << detail;
  EXPECT_EQ(check_of(s, "determinism").first, "pass") << s["checks"].dump(1);
}

// A chip wrong at one place of a STEP frame, for one kind of token only (faulty_chip placebranch
// N: a taken branch read as not taken at place N of a frame of more than N entries): place 2 held
// a vector guest, without taken branches, in both batch checks, and such a chip passed dut-check
// (found by an outside tester); with one shift of the guests along the frame, the same chip wrong
// at another place passed (found by the re-test). The stream-order check now puts every guest at
// every place: 1, 2 and 3 of the default four guests (scalar-p0 takes a branch at step 361).
TEST_F(DutCli, DutCheckFailsAChipWrongAtOnePlaceOfTheBatch) {
  unsigned batch_passed = 0;
  for (const char* place : {"1", "2", "3"}) {
    const Result r =
        run_lockstep({"dut-check", "--steps", "600", "--json", "--dut", kFaulty + " placebranch " + place + " " + kChip});
    EXPECT_EQ(r.exit_code, 1) << place << ": " << r.err;
    const json s = summary_of(r);
    const auto [verdict, detail] = check_of(s, "stream order");
    EXPECT_EQ(verdict, "fail") << s["checks"].dump(1);
    EXPECT_NE(detail.find(std::string(" at place ") + place + " of the frame: step "), std::string::npos) << detail;
    EXPECT_NE(detail.find(": BR(0) instead of BR(1)"), std::string::npos) << detail;
    // The batch check puts each guest at its own place: whether it catches the chip depends on
    // whether that guest takes a branch; the stream-order check catches it at every place.
    batch_passed += check_of(s, "batch of streams").first == "pass";
  }
  EXPECT_GE(batch_passed, 1u) << "the batch check caught every place: the test no longer shows what the stream order adds";
}

// The "length over the limit" check: a chip that answers ERROR 1 and keeps the session open is told
// so (before: "did not answer within the timeout"); one that answers ERROR 1 and exits while a
// process it started holds its stdout ended its session (§1) and passes (before: "ended without
// answering").
TEST_F(DutCli, DutCheckJudgesTheEndOfTheSessionAfterAnOverLongLength) {
  const std::string name = "bad frame: length over the limit";
  const Result keep = run_lockstep(
      {"dut-check", "--steps", "20", "--json", "--dut-timeout", "2", "--dut", kFaulty + " oversizekeep 0 " + kChip});
  EXPECT_EQ(keep.exit_code, 1) << keep.err;
  const auto [kv, kd] = check_of(summary_of(keep), name);
  EXPECT_EQ(kv, "fail");
  EXPECT_EQ(kd.rfind("answered ERROR 1 but did not end the session (still open after --dut-timeout 2 s;", 0), 0u) << kd;
  const Result bg = run_lockstep({"dut-check", "--steps", "20", "--json", "--dut", kFaulty + " oversizebg 0 " + kChip});
  EXPECT_EQ(bg.exit_code, 0) << bg.err;
  EXPECT_EQ(check_of(summary_of(bg), name).first, "pass") << summary_of(bg)["checks"].dump(1);
}

// The end of a session (§1, §3.10) is a check: BYE answered with ERROR, BYE never answered, and a
// chip process that does not exit at the end of its input each fail it, once (found by an outside
// tester: the first two passed silently, the third was a warning printed twice).
TEST_F(DutCli, DutCheckChecksTheEndOfTheSession) {
  const std::string name = "session end (BYE, end of input)";
  struct Case {
    std::string mode, detail;
  };
  for (const Case& c :
       {Case{"byeerror", "BYE was answered with ERROR 7 (internal error of the chip): BYE is not for me, expected OK (§3.10)"},
        Case{"byenoanswer", "BYE was not answered within --dut-timeout 2.0 s, expected OK (§3.10); the chip process did not "
                            "exit within 5 s of the end of its input"},
        Case{"ignoreeof", "the chip process did not exit within 5 s of the end of its input"}}) {
    SCOPED_TRACE(c.mode);
    const Result r = run_lockstep(
        {"dut-check", "--steps", "20", "--json", "--dut-timeout", "2", "--dut", kFaulty + " " + c.mode + " 0 " + kChip});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const json s = summary_of(r);
    EXPECT_EQ(s["failed"], 1) << s["checks"].dump(1);
    const auto [verdict, detail] = check_of(s, name);
    EXPECT_EQ(verdict, "fail");
    EXPECT_EQ(detail.rfind(c.detail, 0), 0u) << detail;
    // the FAIL line (on stderr under --json) says it, once, and no warn: line repeats it
    std::size_t said = 0;
    for (auto at = r.err.find("did not exit within 5 s"); at != std::string::npos;
         at = r.err.find("did not exit within 5 s", at + 1))
      ++said;
    EXPECT_EQ(said, c.mode == "byeerror" ? 0u : 1u) << r.err;
    EXPECT_EQ(r.err.find("lockstep: warn:"), std::string::npos) << r.err;
  }
}

// A chip's name and identity are printed with their control characters escaped: one line each, no
// terminal escape (found by an outside tester: a name with a newline and ESC[31m broke the line).
TEST_F(DutCli, DutCheckEscapesTheChipsText) {
  const Result r = run_lockstep({"dut-check", "--steps", "20", "--dut", kFaulty + " evilname 0 " + kChip});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pass  handshake: 'evil\\nname\\x1b[31mred', vocab_size "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("identity 'id\\x07\\r'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  for (const char* line_start : {"evil", "name", "red"})
    EXPECT_EQ(r.out.find(std::string("\n") + line_start), std::string::npos) << r.out;
}

// A chip that sends an answer twice, the copy after the harness's next request went out: the copy
// is read as that request's answer and may diverge, but the next answer of another type shows the
// answers out of step, and the divergence is set aside: a broken adapter (exit 2), never a finding
// about the chip (found by an outside tester: exit 1 and a failing fuzz case for a chip whose every
// token was right).
TEST_F(DutCli, AnAnswerSentTwiceIsAProtocolErrorNotADivergence) {
  const std::string twice = kFaulty + " twicelate 2 " + kChip;
  const fs::path dir = fresh_dir("twice-late");
  // (the 8th answer's copy is as long as the 9th request asks for: it diverges, and the replay's
  // RESET then gets the 9th answer)
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "40000", "--json", "--report", (dir / "run").string(),
                                 "--dut", kFaulty + " twicelate 8 " + kChip});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("answered RESET with TOKENS (FORCED) (expected OK (RESET)): another request's answer (the "
                          "chip's answers may be out of step with the requests"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find(") is not reported: it may be an earlier request's answer read as that step's"), std::string::npos)
      << lines[0];
  const json s = summary_of(r);
  EXPECT_EQ(s["status"], "error");
  EXPECT_EQ(s["mismatches"], 0);
  const json saved = json::parse(slurp(dir / "run" / "summary.json"));
  EXPECT_EQ(saved["status"], "error");
  EXPECT_TRUE(saved["run"]["streams"][0]["divergence"].is_null()) << saved.dump();
  const Result f = run_lockstep({"fuzz", "--programs", "4", "--seed", "5", "--ops", "add", "--mode", "forced", "--report",
                                 (dir / "fuzz").string(), "--dut", twice});
  EXPECT_EQ(f.exit_code, 2) << f.out << f.err;
  // (here the copy is as long as the answer before it, not the request: the batch size shows it)
  EXPECT_NE(f.err.find("as many tokens as the answer before it: an answer sent twice? the chip's answers may be out of "
                       "step with the requests"),
            std::string::npos)
      << f.err;
  for (const auto& e : fs::directory_iterator(dir / "fuzz"))
    EXPECT_NE(e.path().filename().string().rfind("fail-", 0), 0u) << "a case saved: " << e.path();
}

// A story whose chip diverges inside the teacher-forced prefix is a mismatch; its last line does
// not call it a teacher-forced-only check (found by an outside tester: it ended "every step
// teacher-forced ..., none free-running: not the story check").
TEST_F(DutCli, AStoryThatDivergesWhileTeacherForcedIsAMismatchOnly) {
  const Result r = run_lockstep({"--models", "synthetic", "story", "--dut", kFaulty + " wrongtoken 3 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find(", 1 mismatches, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not the story check"), std::string::npos) << r.out;
}

// A chip with an empty identity is still named in run's output (found by an outside tester: the
// "chip ..." line was left out, so nothing said which chip gave the verdict).
TEST_F(DutCli, AChipWithNoIdentityIsStillNamed) {
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "50", "--dut", kFaulty + " noidentity 0 " + kChip});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chip dut --dut '" + kFaulty + " noidentity 0 " + kChip + "' (no identity)\n"), std::string::npos)
      << r.out;
}

// A reserved capability bit is named by itself (found by an outside tester: "(143)", the whole mask).
TEST_F(DutCli, AReservedCapabilityBitIsNamed) {
  const Result r = run_lockstep({"dut-check", "--steps", "20", "--dut", kFaulty + " reservedcap 0 " + kChip});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("FAIL  handshake: chip under test: HELLO_OK sets reserved capability bit (0x80: bit 7; only bits "
                       "0 to 3 are defined, the others must be 0, §3.1)\n"),
            std::string::npos)
      << r.out;
}

// One stream and one token are said in the singular (found by an outside tester: "STEP of 1 streams").
TEST_F(DutCli, DutCheckSaysOneStreamInTheSingular) {
  const Result r = run_lockstep({"dut-check", "--steps", "20", "--json", "--dut", kFaulty + " short 1 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto [verdict, detail] = check_of(summary_of(r), "reset and single steps");
  EXPECT_EQ(verdict, "fail");
  EXPECT_NE(detail.find("answered STEP of 1 stream with 0 tokens (the wrong batch size)"), std::string::npos) << detail;
}

// A chip whose probes are all zeros fails dut-check's probes check.
// A chip under test that dies while fuzz shrinks a failure it found (faulty_chip wrongthenexit:
// one wrong token, then an exit at the next STREAMS request, the shrinker's first): the failure is kept,
// saved unshrunk with its divergence, and the report is written (before, the command ended
// with an error and no fuzz.json, summary.json or case folder).
TEST_F(DutCli, FuzzKeepsAFailureWhoseShrinkingTheChipDidNotSurvive) {
  const fs::path dir = fresh_dir("fuzz-shrink-exit");
  const Result r = run_lockstep({"fuzz", "--programs", "1", "--seed", "5", "--ops", "add", "--mode", "forced",
                                 "--report", dir.string(), "--dut", kFaulty + " wrongthenexit 1 " + kChip});
  // the mismatch found before the chip failed stands (found by an outside tester: a wrong chip
  // that died later was a broken job, exit 2)
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("lockstep: warn: "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("FAIL program 0 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  not shrunk (the chip under test failed: "), std::string::npos) << r.out;
  const fs::path fail = dir / "fail-0-forced";
  EXPECT_TRUE(fs::exists(fail / "program.elf"));
  const json info = json::parse(slurp(fail / "fuzz.json"));
  EXPECT_EQ(info["not_shrunk"].get<std::string>().rfind("the chip under test failed: ", 0), 0u) << info.dump(1);
  EXPECT_EQ(info["original_divergence"]["actual_text"], "EXIT(0x00)") << info.dump(1);
  const json rep = json::parse(slurp(dir / "fuzz.json"));
  ASSERT_EQ(rep["failures"].size(), 1u) << rep.dump(1);
  EXPECT_TRUE(rep["error"].is_string()) << rep.dump(1);
  const json summary = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(summary["status"], "mismatch");
  EXPECT_EQ(summary["mismatches"], 1);
  EXPECT_TRUE(summary["chip_fault"].is_string()) << summary.dump(1);
  EXPECT_EQ(run_lockstep({"report", dir.string()}).exit_code, 1);
}

// A chip under test that predicts a wrong token and dies at the next request, the replay that
// classifies the divergence: the divergence stands (exit 1, status mismatch, classified
// "unclassified" with the fault as the reason), the fault is one warn line and summary.json's
// chip_fault (found by an outside tester: it was exit 2, status error, and JUnit held both a
// failure and an error).
TEST_F(DutCli, AChipThatDiesAfterItsWrongTokenIsStillAMismatch) {
  const fs::path dir = fresh_dir("wrong-then-die");
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "free", "--steps", "20000", "--json", "--report",
                                 dir.string(), "--dut", kFaulty + " wrongthendie 3 " + kChip});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto [before, count] = fault_point(r.err);
  ASSERT_GT(count, 0u) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["status"], "mismatch");
  EXPECT_EQ(s["divergence"]["step"], before + count);
  EXPECT_EQ(s["divergence"]["fault"], "unclassified") << s.dump();
  ASSERT_TRUE(s["chip_fault"].is_string()) << s.dump();
  EXPECT_EQ(error_lines(r.err).size(), 0u) << r.err;
  EXPECT_NE(r.err.find("lockstep: warn: " + s["chip_fault"].get<std::string>()), std::string::npos) << r.err;
  const json rep = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(rep["status"], "mismatch");
  EXPECT_EQ(rep["chip_fault"], s["chip_fault"]);
  EXPECT_FALSE(rep.contains("error")) << rep.dump();
  const std::string junit = slurp(dir / "junit.xml");
  EXPECT_NE(junit.find("<failure"), std::string::npos) << junit;
  EXPECT_EQ(junit.find("<error"), std::string::npos) << junit;
  EXPECT_EQ(run_lockstep({"report", dir.string()}).exit_code, 1);

  // The same chip in a campaign: the divergence is kept and saved, and the fault ends the campaign
  // as a mismatch (found by an outside tester: fuzz lost it, "mismatching runs 0", exit 2).
  const Result f = run_lockstep({"fuzz", "--programs", "2", "--batch", "1", "--seed", "5", "--ops", "alu", "--mode",
                                 "forced", "--report", (dir / "fuzz").string(), "--dut",
                                 kFaulty + " wrongthendie 2 " + kChip});
  EXPECT_EQ(f.exit_code, 1) << f.out << f.err;
  EXPECT_NE(f.out.find("mismatching runs 1"), std::string::npos) << f.out;
  // The unfinished batch is named: "programs 0 ... mismatching runs 1" alone read as a contradiction.
  EXPECT_NE(f.out.find(" did not finish (the chip under test failed): its mismatching runs are counted above, its "
                       "programs are not"),
            std::string::npos)
      << f.out;
  EXPECT_NE(f.err.find("lockstep: warn: chip under test: "), std::string::npos) << f.err;
  const json fz = json::parse(slurp(dir / "fuzz" / "fuzz.json"));
  ASSERT_EQ(fz["failures"].size(), 1u) << fz.dump(1);
  EXPECT_TRUE(fz["failures"][0].contains("not_shrunk")) << fz.dump(1);
}

// A chip whose FREE answers alone are wrong (faulty_chip freebug, no SAVE_RESTORE): the teacher-
// forced replay cannot give the wrong token, and the reason names the FREE path and dut-check, not a
// checkpoint restore the chip does not have (found by an outside tester).
TEST_F(DutCli, AChipWhoseFreeAloneIsWrongIsToldSo) {
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "free", "--steps", "20000", "--json", "--dut",
                                 kFaulty + " freebug 0 " + kChip + " plain"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json d = summary_of(r)["divergence"];
  EXPECT_EQ(d["fault"], "not-reproduced") << d.dump();
  const std::string text = d["fault_text"];
  EXPECT_NE(text.find("the chip is not deterministic (the replay started from the reset), or its FREE answers differ "
                      "from its FORCED and STEP answers to the same tokens"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("checkpoint restore"), std::string::npos) << text;
}

// bench checks every token it times against the reference's: a chip under test with a wrong token
// makes the bench a mismatch (exit 1) that names the measurement, while the built chip's rows
// agree (found by outside testers: the bench of a wrong chip said exact, exit 0). faulty_chip
// freebug: the last token of every FREE answer is wrong.
TEST_F(DutCli, BenchOfAWrongChipIsAMismatch) {
  const Result r = run_lockstep({"--json", "bench", "--quick", "--steps", "1000", "--lockstep-steps", "1000", "--streams",
                                 "2", "--dut", kFaulty + " freebug 0 " + kChip});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["status"], "mismatch");
  ASSERT_TRUE(s["disagreed"].is_array()) << s.dump();
  EXPECT_EQ(s["mismatches"], s["disagreed"].size());
  // the chip under test's rows (its last FREE token is wrong) and none of the built chip's
  EXPECT_EQ(s["disagreed"], json({"dut.dut.single", "dut.dut.batched"})) << s.dump();
  EXPECT_NE(r.err.find("lockstep: the chip's tokens differ from the reference's in "), std::string::npos) << r.err;
}

// A prediction below vocab_size that is no token (BR(2), as an argmax can pick) is a wrong
// prediction: a mismatch at its step with a note, exit 1 (it was a protocol error, exit 2, that
// dropped the steps of its frame; dut-protocol.md section 6).
TEST_F(DutCli, APredictionThatIsNoTokenIsAMismatch) {
  const Result r = run_lockstep({"run", crc32_.string(), "--mode", "forced", "--steps", "2000", "--json", "--dut",
                                 kFaulty + " notoken 1 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["status"], "mismatch");
  const json& d = s["divergence"];
  EXPECT_EQ(d["step"], 64) << d.dump(1);  // the last token of the first FORCED answer (64 steps)
  EXPECT_EQ(d["actual"], 3330);
  EXPECT_EQ(d["note"], "the chip predicted id 3330, which is no token trace-v3 can produce") << d.dump(1);
}

TEST_F(DutCli, DutCheckFailsAllZeroProbes) {
  const Result r = run_lockstep({"dut-check", "--steps", "300", "--json", "--dut", kFaulty + " zeroprobes 0 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json s = summary_of(r);
  EXPECT_EQ(s["failed"], 1) << s["checks"].dump(1);
  const auto [verdict, detail] = check_of(s, "probes");
  EXPECT_EQ(verdict, "fail");
  EXPECT_EQ(detail.rfind("every one of the ", 0), 0u) << detail;
  EXPECT_NE(detail.find(" read is 0: the probes show no values the chip computed"), std::string::npos) << detail;
}

TEST_F(DutCli, FuzzThroughTheProtocolIsExact) {
  const Result a = run_lockstep({"fuzz", "--programs", "8", "--seed", "3", "--ops", "vector,add,mul,lw,sw,beq", "--json"});
  const fs::path report = fs::temp_directory_path() / ("lockstep-dut-fuzz-" + std::to_string(::getpid()));
  const Result b = run_lockstep({"fuzz", "--programs", "8", "--seed", "3", "--ops", "vector,add,mul,lw,sw,beq", "--json",
                                 "--dut", server_cmd(), "--report", report.string()});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(summary_of(a)["steps"], summary_of(b)["steps"]);
  EXPECT_EQ(summary_of(b)["status"], "exact");
  // fuzz.json names the chip fuzzed: the one under test (before: "cpu", the unused default).
  EXPECT_EQ(json::parse(slurp(report / "fuzz.json"))["backend"], "dut");
  fs::remove_all(report);
}

// One wrong token (VRD(3), id 10499, never predicted) is one failure class per mode, whatever the
// fields the failing VRED instructions spell out (found by an outside tester: 64 failing runs in
// 30 classes, `vred.sumsq.sh0`, `vred.sum.sh24`, ...).
TEST_F(DutCli, OneWrongVectorTokenIsOneFailureClassPerMode) {
  const fs::path report = fresh_dir("dut-fuzz-classes");
  const Result r = run_lockstep({"fuzz", "--ops", "vred", "--seed", "11", "--programs", "4", "--no-shrink", "--dut",
                                 kFaulty + " lowtoken 10499 " + kChip, "--report", report.string()});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json f = json::parse(slurp(report / "fuzz.json"));
  std::set<std::string> signatures, mnemonics;
  for (const json& x : f["failures"]) {
    signatures.insert(x["signature"].get<std::string>());
    const std::string d = x["disassembly"];
    mnemonics.insert(d.substr(0, d.find(' ')));
  }
  EXPECT_GT(mnemonics.size(), 1u) << "the failing instructions should spell out different fields";
  EXPECT_EQ(signatures, (std::set<std::string>{"`vred` at VRD, forced", "`vred` at VRD, free"}));
  EXPECT_NE(r.out.find("failures by class (the blamed instruction's operation, token kind, mode): 2 classes in " +
                       std::to_string(f["failures"].size()) + " failing runs"),
            std::string::npos)
      << r.out;
}

// fuzz's default folder (no --report), lockstep-fuzz-<seed>, is owned as --report's is once the
// first failure is saved: a later campaign of the same seed replaces the earlier one's cases
// instead of leaving them beside its own, listed nowhere, and a folder that another lockstep
// command holds is refused instead of written over (found by an outside tester: two shards of
// one seed wrote over each other's fuzz.json).
TEST_F(DutCli, TheDefaultFuzzFolderIsOwnedAsAReportFolderIs) {
  const fs::path dir = fresh_dir("fuzz-default-folder");
  const fs::path folder = dir / "lockstep-fuzz-9";
  const std::vector<std::string> common = {"fuzz", "--seed", "9", "--no-shrink", "--mode", "forced",
                                           "--dut", kFaulty + " lowtoken 1152 " + kChip};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = common;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  // the fail-* folders in the default folder, and those its fuzz.json lists
  auto cases = [&] {
    std::set<std::string> on_disk, listed;
    for (const auto& e : fs::directory_iterator(folder))
      if (e.path().filename().string().rfind("fail-", 0) == 0) on_disk.insert(e.path().filename().string());
    const json fuzz = json::parse(slurp(folder / "fuzz.json"));
    for (const json& f : fuzz["failures"])
      listed.insert(fs::path(f["case"].get<std::string>()).filename().string());
    return std::make_pair(on_disk, listed);
  };
  const Result first = run_lockstep(with({"--programs", "4"}), {}, dir);
  ASSERT_EQ(first.exit_code, 1) << first.out << first.err;
  const auto [disk1, listed1] = cases();
  EXPECT_FALSE(disk1.empty());
  EXPECT_EQ(disk1, listed1);
  EXPECT_EQ(json::parse(slurp(folder / "summary.json"))["status"], "mismatch");

  const Result second = run_lockstep(with({"--first", "4", "--programs", "4"}), {}, dir);
  ASSERT_EQ(second.exit_code, 1) << second.out << second.err;
  const auto [disk2, listed2] = cases();
  EXPECT_FALSE(disk2.empty());
  EXPECT_EQ(disk2, listed2) << "the first campaign's cases must not stay beside the second's";
  for (const std::string& c : disk2) EXPECT_EQ(disk1.count(c), 0u) << c;
  EXPECT_FALSE(fs::exists(folder / "earlier-run"));

  // held by another process (a lock on its lock file, as a running lockstep holds it)
  const int fd = ::open((folder / ".lockstep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string before = slurp(folder / "fuzz.json");
  const Result third = run_lockstep(with({"--programs", "4"}), {}, dir);
  ::close(fd);
  EXPECT_EQ(third.exit_code, 2) << third.out << third.err;
  EXPECT_NE(third.err.find("is in use by another lockstep run"), std::string::npos) << third.err;
  EXPECT_NE(third.err.find("not saved: give --report DIR"), std::string::npos) << third.err;
  EXPECT_EQ(slurp(folder / "fuzz.json"), before);
}

// A stop while fuzz waits on a chip under test inside a batch (here: the chip hangs while the
// divergence it caused is classified): the mismatch found before the stop is kept, saved as a
// case and counted, and outranks the interruption (exit 1); the batch itself is not counted
// (found by an outside tester: a stop in a slow batch of 32 dropped the 64 mismatches it had
// found, and the campaign read "mismatching runs 0").
TEST_F(DutCli, AStopInsideAFuzzBatchKeepsTheMismatchesFound) {
  const fs::path dir = fresh_dir("fuzz-stop-batch");
  const Signalled r = run_and_signal({"fuzz", "--programs", "4", "--seed", "5", "--ops", "add", "--mode", "forced",
                                      "--report", (dir / "rep").string(), "--dut-timeout", "300", "--dut",
                                      kFaulty + " wrongthenhang 1 " + kChip},
                                     dir, "faulty_chip: wrongthenhang hangs now", SIGINT);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_LT(r.seconds, 10) << "the wait must end with the signal, not at --dut-timeout";
  EXPECT_NE(r.out.find("FAIL program "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("lockstep: interrupted: after 0 programs"), std::string::npos) << r.err;
  const json f = json::parse(slurp(dir / "rep" / "fuzz.json"));
  EXPECT_EQ(f["interrupted"], true) << f.dump(1);
  EXPECT_EQ(f["programs"], 0) << f.dump(1);
  EXPECT_EQ(f["next"], 0) << f.dump(1);
  EXPECT_GE(f["mismatching_runs"].get<std::uint64_t>(), 1u) << f.dump(1);
  ASSERT_FALSE(f["failures"].empty()) << f.dump(1);
  const fs::path c = f["failures"][0]["case"].get<std::string>();
  EXPECT_TRUE(fs::exists(c / "case.json")) << c;
  EXPECT_EQ(json::parse(slurp(c / "fuzz.json"))["not_shrunk"], "interrupted");
  EXPECT_EQ(json::parse(slurp(dir / "rep" / "summary.json"))["status"], "mismatch");
}

// A stop while the chip under test starts (it never answers HELLO) is the stop's in every place
// summary.json has it: status "interrupted", "interrupted": true, the line as the reason, no
// "error" (found by an outside tester: status "interrupted" beside run.interrupted false).
TEST_F(DutCli, AStopWhileTheChipStartsIsAnInterruptionInTheSummary) {
  const fs::path dir = fresh_dir("stop-at-start");
  const Signalled r = run_and_signal({"run", crc32_.string(), "--steps", "2000", "--report", (dir / "rep").string(),
                                      "--dut", "sleep 30"},
                                     dir, "", SIGTERM);
  EXPECT_EQ(r.rc, 3) << r.err;
  const json s = json::parse(slurp(dir / "rep" / "summary.json"));
  EXPECT_EQ(s["status"], "interrupted") << s.dump(1);
  EXPECT_EQ(s["interrupted"], true) << s.dump(1);
  EXPECT_EQ(s["run"]["interrupted"], true) << s.dump(1);
  EXPECT_FALSE(s.contains("error")) << s.dump(1);
  EXPECT_NE(s.value("interrupted_reason", "").find("HELLO"), std::string::npos) << s.dump(1);
}

// A stop while a slow chip's divergence is diagnosed ends the replay's window where it is: the run
// ends at once as the mismatch it is (exit 1), and the diagnosis says it did not finish (an outside
// tester's chip at 1 step/s spent the whole timeout in a 4,096-step window; the stop is the way
// out, and a note every 30 s says how far the window is).
TEST_F(DutCli, AStopCutsTheDiagnosisWindowOfASlowChip) {
  const fs::path dir = fresh_dir("diagnosis-stop");
  const Signalled r = run_and_signal({"run", crc32_.string(), "--mode", "forced", "--steps", "20000", "--dut",
                                      kFaulty + " trippedslow 3000 " + kChip + " plain"},
                                     dir, "diagnosing the divergence at step 3000", SIGINT);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_LT(r.seconds, 5) << "the window of 4,096 slow steps (about 13 s) must end with the signal";
  EXPECT_NE(r.out.find("did not finish (the run was interrupted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mismatches 1"), std::string::npos) << r.out;
}

// --compare end, stopped before its end on a chip already wrong: the digests of the steps compared
// differ, so the run is a mismatch with the divergence unlocated, never "mismatches 0", and its
// case records a divergence within those steps (found by an outside tester: the case recorded a
// clean prefix and replay said it did not reproduce). Resumed past a damaged checkpoint, the
// bisection skips that file as resume does and locates the divergence (it ended as an error).
TEST_F(DutCli, AStoppedCompareEndRunWithDifferingDigestsIsAMismatch) {
  const fs::path dir = fresh_dir("compare-end-stop");
  const fs::path rep = dir / "run";
  const fs::path o = dir / "stdout", e = dir / "stderr";
  const pid_t pid = lockstep::cli_test::spawn_lockstep(
      {"run", crc32_.string(), "--steps", "100000", "--compare", "end", "--checkpoint-every", "10000", "--report",
       rep.string(), "--dut", kFaulty + " tripped 100 " + kChip},
      o, e);
  // stop it once two checkpoints are written (steps 10000 and 20000: past the wrong step 100)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto checkpoints = [&] {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(rep / "checkpoints", ec))
      if (f.path().extension() == ".lsck") ++n;
    return n;
  };
  while (checkpoints() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string out = slurp(o), err = slurp(e);
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 1) << out << err;
  EXPECT_NE(out.find("a divergence lies among them, not located: the run was stopped before its bisection"),
            std::string::npos)
      << out;
  const json c = json::parse(slurp(rep / "case.json"));
  ASSERT_TRUE(c["expect"].contains("divergence_within")) << c.dump(1);
  EXPECT_GE(c["expect"]["divergence_within"].get<std::uint64_t>(), 20000u) << c.dump(1);
  EXPECT_EQ(json::parse(slurp(rep / "summary.json"))["status"], "mismatch");
  const Result replay = run_lockstep({"replay", rep.string()});
  EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("the case reproduces: recorded a divergence within the first"), std::string::npos)
      << replay.out;
  // Damage the newest checkpoint, then resume: skipped, and the divergence is located at step 100.
  std::vector<fs::path> cps;
  for (const auto& f : fs::directory_iterator(rep / "checkpoints"))
    if (f.path().extension() == ".lsck") cps.push_back(f.path());
  std::sort(cps.begin(), cps.end());
  ASSERT_GE(cps.size(), 2u);
  {
    std::fstream f(cps.back(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(cps.back()) / 2));
    f.put('\x5a').put('\xa5').put('\x5a').put('\xa5');
  }
  const Result resumed = run_lockstep({"run", "--resume", rep.string(), "--json"});
  EXPECT_EQ(resumed.exit_code, 1) << resumed.err;
  EXPECT_NE(resumed.err.find("skipped checkpoint " + cps.back().filename().string()), std::string::npos) << resumed.err;
  const json s = summary_of(resumed);
  EXPECT_EQ(s["status"], "mismatch") << s.dump();
  ASSERT_TRUE(s.contains("divergence")) << s.dump();
  EXPECT_EQ(s["divergence"]["step"], 100) << s.dump();
}

// --compare end on a chip whose restore is not exact (faulty_chip tripped counts steps from its
// RESET, so a stream restored from a checkpoint trips elsewhere): the digests differ, the
// bisection's replay meets no wrong token, and the run says why the divergence is unlocated
// (found by an outside tester: "mismatches 1" and nothing else).
TEST_F(DutCli, ABisectionThatFindsNoWrongTokenSaysWhy) {
  const fs::path dir = fresh_dir("bisect-unlocated");
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "20000", "--compare", "end", "--checkpoint-every",
                                 "2000", "--report", (dir / "run").string(), "--dut", kFaulty + " tripped 5000 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("a divergence lies among them, not located: digests agree at step "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the step-by-step replay found no differing token: the chip's state after a restore is not "
                       "the state it saved"),
            std::string::npos)
      << r.out;
}

// --compare end with no checkpoints: the bisection replays from the reset, and must find the
// divergence --compare step finds (found by an outside tester: the replay kept the reference's
// look-ahead of the run's end and named "step 1" at pc 0x1032c, and replay confirmed it). The
// chip trips at its 290th step since its reset (faulty_chip tripped), muldiv's `sw a5, 16(sp)`.
// A chip that is wrong only the first time (wrongtoken) is left unlocated, and the line says that
// from the reset only its determinism is in question.
TEST_F(DutCli, ABisectionFromTheResetFindsTheFirstDivergence) {
  const fs::path muldiv = guest("muldiv");
  const Result r = run_lockstep({"run", muldiv.string(), "--steps", "3000", "--compare", "end", "--json", "--dut",
                                 kFaulty + " tripped 290 " + kChip});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json s = json::parse(r.out);
  const json& d = s["divergence"];
  EXPECT_EQ(d["step"], 290) << s.dump();
  EXPECT_EQ(d["pc"], 0x1009c) << s.dump();
  EXPECT_EQ(d["bisection"]["good_step"], 0) << s.dump();
  // Classified as --compare step classifies it: its replay starts from a RESET, not a RESTORE of a
  // snapshot of step 0, which this chip does not count as a reset (outside tester).
  EXPECT_EQ(d["fault"], "single-step") << s.dump();

  const Result once = run_lockstep({"run", muldiv.string(), "--steps", "3000", "--compare", "end", "--dut",
                                    kFaulty + " wrongtoken 3 " + kChip});
  EXPECT_EQ(once.exit_code, 1) << once.out << once.err;
  // --json says why too (outside tester: it said mismatch with no reason)
  const Result once_json = run_lockstep({"run", muldiv.string(), "--steps", "3000", "--compare", "end", "--json", "--dut",
                                         kFaulty + " wrongtoken 3 " + kChip});
  EXPECT_NE(json::parse(once_json.out).value("divergence_unlocated", "").find("the chip is not deterministic"),
            std::string::npos)
      << once_json.out;
  EXPECT_NE(once.out.find("the step-by-step replay found no differing token: the chip is not deterministic (the replay "
                          "started from its reset); --compare step locates the divergence"),
            std::string::npos)
      << once.out;
}

// Shards of a campaign on a chip under test, merged: a shard whose chip failed before any
// mismatch makes the merge an error (exit 2, its error text kept), never a mere interruption
// (found by an outside tester: the merge exited 3 and dropped the error). Shards moved to
// other folders before the merge (CI artifacts): the merge's replay lines name the case folders
// where they are now, and a case saved unshrunk replays from there (its ELF is in case.json).
TEST_F(DutCli, AMergeOfShardsKeepsAShardsErrorAndFindsMovedCases) {
  const fs::path dir = fresh_dir("fuzz-merge");
  auto shard = [&](int i, const std::string& mode, const fs::path& report) {
    return run_lockstep({"fuzz", "--programs", "4", "--seed", "5", "--ops", "alu", "--mode", "forced", "--no-shrink",
                         "--shard", std::to_string(i) + "/2", "--report", report.string(), "--dut",
                         kFaulty + " " + mode + " " + kChip + " plain"});
  };
  ASSERT_EQ(shard(0, "none 0", dir / "ok0").exit_code, 0);
  const Result broken = shard(1, "exit 1", dir / "broken1");
  ASSERT_EQ(broken.exit_code, 2) << broken.err;
  const Result m = run_lockstep({"fuzz", "--merge", (dir / "ok0").string(), (dir / "broken1").string(), "--json",
                                 "--report", (dir / "merged").string()});
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_NE(m.err.find("lockstep: error: 1 of the 2 shards ended in an error (" + (dir / "broken1" / "fuzz.json").string() +
                       ": chip under test: "),
            std::string::npos)
      << m.err;
  EXPECT_EQ(summary_of(m)["status"], "error");
  const json ms = json::parse(slurp(dir / "merged" / "summary.json"));
  EXPECT_EQ(ms["status"], "error");
  EXPECT_NE(ms["error"].get<std::string>().find("the chip process exited with status 3"), std::string::npos) << ms.dump(1);
  // Both shards find mismatches; moved, merged, and replayed from where they are now.
  for (int i : {0, 1}) ASSERT_EQ(shard(i, "tripped 30", dir / ("t" + std::to_string(i))).exit_code, 1);
  fs::create_directories(dir / "artifacts");
  fs::rename(dir / "t0", dir / "artifacts" / "shard-a");
  fs::rename(dir / "t1", dir / "artifacts" / "shard-b");
  const Result tm = run_lockstep({"fuzz", "--merge", (dir / "artifacts" / "shard-a").string(),
                                  (dir / "artifacts" / "shard-b").string(), "--report", (dir / "tm").string()});
  EXPECT_EQ(tm.exit_code, 1) << tm.err;
  const json tf = json::parse(slurp(dir / "tm" / "fuzz.json"));
  ASSERT_FALSE(tf["failures"].empty()) << tf.dump(1);
  for (const json& f : tf["failures"]) {
    const fs::path c = f["case"].get<std::string>();
    EXPECT_EQ(c.parent_path().parent_path(), dir / "artifacts") << c;
    EXPECT_NE(tm.out.find("replay " + c.string()), std::string::npos) << tm.out;
    const Result rep = run_lockstep({"replay", c.string()});
    EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
    EXPECT_NE(rep.out.find("the case reproduces"), std::string::npos) << rep.out;
  }
  // One of the two shards, with mismatches: exit 1, and a warn line (not "interrupted") says the
  // campaign is partial (found by an outside tester: "lockstep: interrupted:" beside exit 1).
  const Result half = run_lockstep({"fuzz", "--merge", (dir / "artifacts" / "shard-a").string(), "--json"});
  EXPECT_EQ(half.exit_code, 1) << half.err;
  EXPECT_EQ(half.err.find("lockstep: interrupted:"), std::string::npos) << half.err;
  EXPECT_NE(half.err.find("lockstep: warn: merged 1 of the campaign's 2 shards (missing: 1): a partial campaign (its "
                          "mismatches stand)"),
            std::string::npos)
      << half.err;
  EXPECT_EQ(summary_of(half)["status"], "mismatch");
  EXPECT_NE(summary_of(half)["interrupted_reason"].dump().find("a partial campaign"), std::string::npos) << summary_of(half).dump();
}

}  // namespace

// A chip whose bug shows only beside another stream (faulty_chip stream1: stream 1's EXIT(0) is
// answered as EXIT(1)). Program 1 fails as stream 1 of its batch; run alone (stream 0) it passes,
// so its saved case cannot show the bug: fuzz must say so, and give the command that reruns the
// batch, rather than leave a "fail" folder whose replay passes with nothing said.
TEST_F(DutCli, FuzzFailureThatNeedsItsBatchIsNamedWithTheBatchRepeat) {
  const fs::path dir = fresh_dir("fuzz-batch");
  const std::string chip = kFaulty + " stream1 0 " + kChip;
  const Result r = run_lockstep({"fuzz", "--programs", "2", "--batch", "2", "--seed", "5", "--ops", "add", "--mode",
                                 "forced", "--report", (dir / "r").string(), "--dut", chip});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL program 1 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL program 0 "), std::string::npos) << r.out;
  // Shrinking tried the original alone once and stopped (its candidates run alone too), and says why
  EXPECT_NE(r.out.find("  not shrunk (run alone, the original did not diverge at `ecall`, EXIT, as it did in its batch): "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the saved case does NOT diverge"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("program 1 fails only in its batch: run alone it passes, but as stream 1 of the 2 programs 0..1"),
            std::string::npos)
      << r.out;
  const std::string batch_args =
      " fuzz --seed 5 --first 0 --programs 2 --batch 2 --mode forced --ops add --dut '" + chip + "'";
  const std::string batch_cmd = "lockstep" + batch_args;  // as fuzz.json keeps it
  // Printed, the command names the executable as it was invoked (here by its path).
  EXPECT_NE(r.out.find("repeat the batch: " + kExe + batch_args), std::string::npos) << r.out;
  const fs::path fail = dir / "r" / "fail-1-forced";
  EXPECT_TRUE(fs::exists(fail / "NOT-REPRODUCED-ALONE.txt"));
  // The case's page says so, and so does its replay (found by an outside tester: "exact", and
  // "the case reproduces: recorded no divergence", with nothing else).
  EXPECT_NE(slurp(fail / "report.html").find("<p class=\"note\">program 1 fails only in its batch"), std::string::npos);
  const Result alone = run_lockstep({"replay", fail.string()});
  EXPECT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.err.find("program 1 fails only in its batch: run alone it passes"), std::string::npos) << alone.err;
  EXPECT_NE(alone.err.find("NOT-REPRODUCED-ALONE.txt says how to repeat the batch"), std::string::npos) << alone.err;
  const json info = json::parse(slurp(fail / "fuzz.json"));
  EXPECT_EQ(info["batch"]["stream"], 1);
  EXPECT_EQ(info["batch"]["programs"], 2);
  EXPECT_EQ(info["repeat_batch"], batch_cmd);
  EXPECT_EQ(info["repeat"], "lockstep fuzz --seed 5 --first 1 --programs 1 --mode forced --ops add --dut '" + chip + "'");
  const json rep = json::parse(slurp(dir / "r" / "fuzz.json"));
  ASSERT_EQ(rep["failures"].size(), 1u) << rep.dump(1);
  EXPECT_EQ(rep["failures"][0]["reproduces_alone"], false);
  // The batch repeat reproduces it: the same programs as the same streams fail again.
  const Result again = run_lockstep({"fuzz", "--seed", "5", "--first", "0", "--programs", "2", "--batch", "2", "--mode",
                                     "forced", "--ops", "add", "--no-shrink", "--report", (dir / "again").string(),
                                     "--dut", chip});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.out.find("FAIL program 1 "), std::string::npos) << again.out;
}

// A chip that keeps state across RESET (faulty_chip leaky 4: after the session's fourth RESET,
// the first token of each stream is wrong) fails the second batch of a campaign, and its saved
// case diverges in the campaign's session; `lockstep replay` starts a new session, where it passes.
// fuzz runs the first case of each class again in a new session and says so (found by an outside
// tester: the case read "does NOT reproduce", exit 0, and the campaign blamed free-running mode).
TEST_F(DutCli, FuzzSaysWhenASavedCaseFailsOnlyInTheCampaignsSession) {
  const fs::path dir = fresh_dir("fuzz-session");
  const std::string chip = kFaulty + " leaky 4 " + kChip;
  const Result r = run_lockstep({"fuzz", "--programs", "8", "--batch", "4", "--seed", "5", "--ops", "add", "--mode",
                                 "forced", "--report", (dir / "r").string(), "--dut", chip});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAIL program 3 "), std::string::npos) << r.out;  // the first batch, after 4 resets: right
  EXPECT_NE(r.out.find("FAIL program 4 "), std::string::npos) << r.out;
  const fs::path fail = dir / "r" / "fail-4-forced";
  EXPECT_NE(r.out.find("the saved case " + fail.string() +
                       " diverges at step 1 in the campaign's chip session, but not at all in a new one"),
            std::string::npos)
      << r.out;
  const std::string repeat = "fuzz --seed 5 --first 0 --programs 8 --batch 4 --mode forced --ops add --dut '" + chip + "'";
  EXPECT_NE(r.out.find("repeat the campaign up to it: " + kExe + " " + repeat), std::string::npos) << r.out;
  const json rep = json::parse(slurp(dir / "r" / "fuzz.json"));
  ASSERT_EQ(rep["failures"].size(), 4u) << rep.dump(1);
  EXPECT_EQ(rep["failures"][0]["reproduces_in_a_new_session"], false) << rep.dump(1);
  EXPECT_FALSE(rep["failures"][1].contains("reproduces_in_a_new_session")) << rep.dump(1);  // one a class
  for (const json& f : rep["failures"]) {
    EXPECT_NE(f.value("note", "").find("passes in a new chip session"), std::string::npos) << f.dump(1);
    EXPECT_TRUE(fs::exists(fs::path(f.value("case", "")) / "NOT-REPRODUCED-IN-A-NEW-SESSION.txt")) << f.dump(1);
  }
  EXPECT_NE(slurp(dir / "r" / "junit.xml").find("note: the first saved case of its class"), std::string::npos);
  // replay starts a new session: it passes, and says why
  const Result again = run_lockstep({"replay", fail.string(), "--json"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(summary_of(again)["reproduced"], false);
  EXPECT_EQ(summary_of(again)["failed_only_in_its_session"], true);
  EXPECT_NE(again.err.find("NOT-REPRODUCED-IN-A-NEW-SESSION.txt says how to repeat the campaign up to it"),
            std::string::npos)
      << again.err;

  // A chip wrong in every session: its case reproduces there, and nothing more is said
  const Result real = run_lockstep({"fuzz", "--programs", "4", "--batch", "4", "--seed", "5", "--ops", "add", "--mode",
                                    "forced", "--report", (dir / "real").string(), "--dut", kFaulty + " leaky 0 " + kChip});
  EXPECT_EQ(real.exit_code, 1) << real.out << real.err;
  EXPECT_EQ(real.out.find("in a new one"), std::string::npos) << real.out;
  const json rr = json::parse(slurp(dir / "real" / "fuzz.json"));
  ASSERT_FALSE(rr["failures"].empty()) << rr.dump(1);
  EXPECT_EQ(rr["failures"][0]["reproduces_in_a_new_session"], true) << rr.dump(1);
  EXPECT_FALSE(rr["failures"][0].contains("note")) << rr.dump(1);
  EXPECT_EQ(run_lockstep({"replay", (dir / "real" / "fail-0-forced").string()}).exit_code, 1);
}

// ------------------------------------------------------------------ --dut-chip (docs/engine.md)

namespace {

// The built chip with layer `layer`'s MLP output doubled (its W2 and b2), saved in `dir`: the
// chip file that faulty_chip's mlptwice mode runs.
fs::path doubled_chip(const fs::path& dir, int layer) {
  lockstep::chip::Chip c = lockstep::chip::load_chip(kChip);
  lockstep::chip::LinearMap& w2 = c.layers.at(static_cast<std::size_t>(layer)).mlp.w2;
  for (float& v : w2.w.values) v *= 2;
  for (float& v : w2.bias) v *= 2;
  const fs::path path = dir / ("mlp" + std::to_string(layer) + "-twice.chip");
  lockstep::chip::save_chip(c, path.string());
  return path;
}

json attribution_of(const Result& r) { return summary_of(r)["divergence"]["attribution"]; }

// An executor that gets one sublayer of a chip file wrong (layer 7's MLP output added twice, every
// answer well formed): with the chip file beside it, the first probe where the chip under test
// parts from the file on the CPU executor is the point right after that sublayer, which is among
// the candidates the file's dataflow gives (the fields layer 7's MLP reads that no probe shows
// bring in their writers: 14 in all). Without the file the tokens' probe fields place the bug
// anywhere from the embedding to layer 18 (an outside tester's finding: their own executor of our
// chip file served every probe, and 39 sublayers were candidates).
TEST_F(DutCli, TheChipFileBesideTheChipUnderTestNamesTheSublayerItsExecutorGetsWrong) {
  const fs::path dir = fresh_dir("dut-chip-layer");
  const std::string faulty = kFaulty + " mlptwice 7 " + kChip;
  const Result with = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "256", "--json", "--report", dir.string(),
                                    "--dut", faulty, "--dut-chip", kChip});
  ASSERT_EQ(with.exit_code, 1) << with.err;
  const json a = attribution_of(with);
  EXPECT_EQ(a["status"], "layer") << a.dump();
  EXPECT_EQ(a["layer"], 7);
  EXPECT_EQ(a["sublayer"], "mlp");
  EXPECT_EQ(a["chip_file_verdict"], "executor");
  const std::vector<std::string> cand = a["candidates"];
  EXPECT_NE(std::find(cand.begin(), cand.end(), "layer 7 (mlp)"), cand.end()) << a.dump();
  EXPECT_EQ(cand.back(), "layer 7 (mlp)") << a.dump();  // nothing after the point where it shows
  const std::string text = a["text"];
  EXPECT_NE(text.find(" of the chip under test first differs from the chip file "), std::string::npos) << text;
  EXPECT_NE(text.find("on Lockstep's CPU executor (the same inputs) after layer 7 (mlp), at index"), std::string::npos) << text;
  EXPECT_NE(text.find("last probe point where all agreed: after layer 7 (memory)"), std::string::npos) << text;
  // The tokens part at step 4; the probes already differ at step 3, whose token agreed: the
  // attribution is that step's, the first where the executor parts from the file.
  const json run_json = json::parse(with.out);
  EXPECT_EQ(run_json["divergence"]["step"], 4) << with.out;
  EXPECT_EQ(a["probe_step"], 3) << a.dump();
  EXPECT_EQ(text.rfind("at step 3, 1 step before the divergent step (its token still agreed, and the probes of the 2 "
                       "steps before it, from step 1, agreed), field ",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("; at the divergent step itself the first difference is after layer 7 (mlp)"), std::string::npos)
      << text;
  // The same in the JSON, for a tool: the divergent step's own point and candidates, and those
  // of step 3 that are candidates at both steps (the planted sublayer among them).
  EXPECT_EQ(a["divergent_step_first_disagreeing"], "layer 7 (mlp)") << a.dump();
  const std::vector<std::string> own = a["divergent_step_candidates"], shared = a["shared_candidates"];
  EXPECT_NE(std::find(own.begin(), own.end(), "layer 7 (mlp)"), own.end()) << a.dump();
  EXPECT_NE(std::find(shared.begin(), shared.end(), "layer 7 (mlp)"), shared.end()) << a.dump();
  for (const std::string& c : shared) {
    EXPECT_NE(std::find(cand.begin(), cand.end(), c), cand.end()) << c;
    EXPECT_NE(std::find(own.begin(), own.end(), c), own.end()) << c;
  }
  // The case keeps the chip file, so that its replay attributes the same way.
  EXPECT_EQ(json::parse(slurp(dir / "case.json"))["dut"]["chip_file"], fs::absolute(kChip).string());
  const Result replay = run_lockstep({"replay", dir.string(), "--json"});
  EXPECT_EQ(replay.exit_code, 1) << replay.err;
  EXPECT_EQ(attribution_of(replay)["candidates"], a["candidates"]);
  EXPECT_EQ(attribution_of(replay)["shared_candidates"], a["shared_candidates"]);

  const Result without = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "256", "--json", "--dut", faulty});
  ASSERT_EQ(without.exit_code, 1) << without.err;
  EXPECT_GT(attribution_of(without)["candidates"].size(), cand.size()) << attribution_of(without).dump();
  EXPECT_EQ(attribution_of(without)["chip_file_verdict"], "");

  // Layer 2's MLP added twice shows first after layer 3's MLP, which reads a field layer 2's MLP
  // writes and no probe shows: the walk over the file's dataflow keeps layer 2's MLP among the
  // candidates (found by an outside tester: only layer 3's MLP was named, "1 candidate").
  const Result two = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "256", "--json",
                                   "--dut", kFaulty + " mlptwice 2 " + kChip, "--dut-chip", kChip});
  ASSERT_EQ(two.exit_code, 1) << two.err;
  const json b = attribution_of(two);
  EXPECT_EQ(b["layer"], 3) << b.dump();
  EXPECT_EQ(b["sublayer"], "mlp");
  EXPECT_EQ(b["probe_step"], json::parse(two.out)["divergence"]["step"]);  // its first step: none before
  EXPECT_EQ(b["divergent_step_first_disagreeing"], "") << b.dump();  // the same step: nothing to add
  EXPECT_TRUE(b["shared_candidates"].empty()) << b.dump();
  const std::vector<std::string> cand2 = b["candidates"];
  EXPECT_NE(std::find(cand2.begin(), cand2.end(), "layer 2 (mlp)"), cand2.end()) << b.dump();
}

// An executor that computes layer 5 right but misreports its memory point's probe (every value
// plus 1), and adds layer 7's MLP output twice: the first difference, at step 1, is the misreported
// probe, and nothing after it differs at that step, which the attribution says (found by an
// outside tester: it was blamed on layer 5 with nothing to say the probe may be the fault).
TEST_F(DutCli, ADifferenceNothingAfterItShowsIsSaidToBeOne) {
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "64", "--json", "--dut",
                                 kFaulty + " mlptwice-badprobe 7 " + kChip, "--dut-chip", kChip});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json a = attribution_of(r);
  EXPECT_EQ(a["probe_step"], 1) << a.dump();
  EXPECT_EQ(a["first_disagreeing"], "layer 5 (memory)") << a.dump();
  ASSERT_EQ(a["probe_notes"].size(), 1u) << a.dump();
  EXPECT_EQ(a["probe_notes"][0].get<std::string>().rfind("nothing after it differs at this step (every later probe of "
                                                         "the chip under test agrees with the file's): either its probe of ",
                                                         0),
            0u)
      << a.dump();
  EXPECT_NE(a["text"].get<std::string>().find("; nothing after it differs at this step"), std::string::npos) << a.dump();
}

// Every probe agrees: the chip file's own token decides. A chip under test that never predicts one
// token (its unembedding alone wrong) is placed after its last probe point; one without probes is
// told apart from a wrong chip file by the file's right token; and a chip file that computes the
// same wrong token is itself to blame, attributed by its own probes.
TEST_F(DutCli, TheChipFileBesideTheChipUnderTestTellsItsExecutorFromTheFile) {
  // 11520 is PCH0(0x00), crc32's first predicted token (trace.md §2: kind 45, payload 0).
  const Result low = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "256", "--json", "--dut",
                                   kFaulty + " lowtoken 11520 " + kChip, "--dut-chip", kChip});
  ASSERT_EQ(low.exit_code, 1) << low.err;
  EXPECT_EQ(attribution_of(low)["status"], "unembedding") << attribution_of(low).dump();
  EXPECT_EQ(attribution_of(low)["chip_file_verdict"], "executor");
  EXPECT_EQ(attribution_of(low)["candidates"].back(), "unembedding");
  EXPECT_NE(attribution_of(low)["text"].get<std::string>().find(
                "and the chip file computes the right token (PCH0(0x00)) on Lockstep's CPU executor: the chip under "
                "test's executor computes this chip file differently, after its last probe point"),
            std::string::npos)
      << attribution_of(low).dump();

  const Result plain = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "256", "--json", "--dut",
                                     kFaulty + " mlptwice 7 " + kChip + " plain", "--dut-chip", kChip});
  ASSERT_EQ(plain.exit_code, 1) << plain.err;
  const std::string plain_text = attribution_of(plain)["text"];
  EXPECT_EQ(plain_text.rfind("the chip under test has no probes: no probe was compared with the chip file ", 0), 0u)
      << plain_text;
  EXPECT_NE(plain_text.find("computes the right token (W1(0x20))"), std::string::npos) << plain_text;
  EXPECT_EQ(attribution_of(plain)["chip_file_verdict"], "executor");

  const fs::path file = doubled_chip(fresh_dir("dut-chip-file"), 7);
  const Result same = run_lockstep({"run", crc32_.string(), "--steps", "2000", "--classify-window", "256", "--json", "--dut",
                                    kExe + " chip-server " + file.string() + " --stdio --log-level warn", "--dut-chip",
                                    file.string()});
  ASSERT_EQ(same.exit_code, 1) << same.err;
  const json a = attribution_of(same);
  const std::string text = a["text"];
  EXPECT_EQ(text.rfind("every probe of the chip under test agrees with the chip file ", 0), 0u) << text;
  EXPECT_NE(text.find("and the chip file computes the same wrong token (W1(0x00)) on Lockstep's CPU executor: the chip "
                      "file, not the executor, is wrong here; by the chip file's own probes: "),
            std::string::npos)
      << text;
  const std::vector<std::string> cand = a["candidates"];
  EXPECT_NE(std::find(cand.begin(), cand.end(), "layer 7 (mlp)"), cand.end()) << a.dump();
  EXPECT_TRUE(a["dataflow_known"].get<bool>()) << a.dump();  // the chip file's own dataflow
  EXPECT_EQ(a["chip_file_verdict"], "file");
}

// A chip file that is not the one the chip under test runs (a probe field it does not have) is
// refused before any step, as is --dut-chip without a chip under test, in run and in replay.
TEST_F(DutCli, ADutChipThatDoesNotFitIsOneLine) {
  const fs::path dir = fresh_dir("dut-chip-misfit");
  lockstep::chip::Chip c = lockstep::chip::load_chip(kChip);
  std::uint32_t width = 0;
  for (auto& f : c.config.fields)
    if (f.name == "gate_a") {
      f.name = "gate_x";
      width = f.width;
    }
  ASSERT_GT(width, 0u) << "the built chip has no field gate_a";
  for (auto& p : c.config.probes)
    for (std::string& f : p.fields)
      if (f == "gate_a") f = "gate_x";
  const fs::path other = dir / "renamed.chip";
  lockstep::chip::save_chip(c, other.string());
  const Result r = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut", server_cmd(), "--dut-chip", other.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), std::vector<std::string>{"lockstep: error: --dut-chip " + other.string() +
                                                         ": the chip under test's probe field 'gate_a' (" +
                                                         std::to_string(width) +
                                                         " values) is not a field in the chip file: it does not run "
                                                         "that chip file"})
      << r.err;

  const Result resume = run_lockstep({"run", "--resume", (dir / "cpu").string(), "--dut-chip", kChip});
  EXPECT_EQ(resume.exit_code, 2);
  EXPECT_EQ(error_lines(resume.err),
            std::vector<std::string>{"lockstep: error: --dut-chip cannot be given with --resume: the run continues as "
                                     "its case.json says; start a new run to add it"});

  // A case records the file's hash: replaying it beside a file changed since is refused, unless
  // the file is given again (found by an outside tester: a resume read whatever was there by then).
  const fs::path copy = dir / "copy.chip";
  fs::copy_file(kChip, copy);
  const Result first = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut", server_cmd(), "--dut-chip",
                                     copy.string(), "--report", (dir / "beside").string()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_FALSE(json::parse(slurp(dir / "beside" / "case.json"))["dut"]["chip_file_hash"].get<std::string>().empty());
  fs::rename(doubled_chip(dir, 7), copy);
  const Result changed = run_lockstep({"replay", (dir / "beside").string()});
  EXPECT_EQ(changed.exit_code, 2) << changed.err;
  ASSERT_EQ(error_lines(changed.err).size(), 1u) << changed.err;
  EXPECT_NE(error_lines(changed.err)[0].find(": the file changed since (lockstep replay CASE --dut-chip FILE runs the "
                                             "case beside it as it is)"),
            std::string::npos)
      << changed.err;
  EXPECT_EQ(run_lockstep({"replay", (dir / "beside").string(), "--dut-chip", copy.string()}).exit_code, 0);

  const Result alone = run_lockstep({"run", crc32_.string(), "--steps", "100", "--dut-chip", kChip});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_EQ(error_lines(alone.err),
            std::vector<std::string>{"lockstep: error: --dut-chip needs --dut or --dut-connect (to compare chip file NEW "
                                     "with OLD sublayer by sublayer: --dut '" + kExe +
                                     " chip-server --stdio NEW' --dut-chip OLD)"});

  const Result cpu = run_lockstep({"run", crc32_.string(), "--steps", "100", "--report", (dir / "cpu").string()});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const Result replay = run_lockstep({"replay", (dir / "cpu").string(), "--dut-chip", kChip});
  EXPECT_EQ(replay.exit_code, 2);
  EXPECT_EQ(error_lines(replay.err),
            std::vector<std::string>{"lockstep: error: --dut-chip: the case ran on the cpu backend, not a chip under "
                                     "test (give --dut or --dut-connect)"})
      << replay.err;
}

}  // namespace
