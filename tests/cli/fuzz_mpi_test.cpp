// `lockstep fuzz` under Open MPI (issue 11, fuzz/README.md "Shards"): fuzz/mpi/lockstep-fuzz-mpi
// with 2 local ranks (mpirun --oversubscribe -np 2) gives the same merged report as one process
// running the same campaign: the same programs (programs.tsv byte for byte), the same totals,
// opcode coverage and chip decision units. Skipped, with one line, when mpirun is not installed.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

TEST(LockstepFuzzMpi, TwoRanksMergeToTheSingleProcessCampaign) {
  if (!on_path("mpirun")) GTEST_SKIP() << "mpirun not found (Debian: openmpi-bin): MPI campaign test skipped";
  const fs::path root = fs::temp_directory_path() / ("lockstep-fuzz-mpi-test-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path single = root / "single", mpi = root / "mpi";
  const std::vector<std::string> campaign = {"--seed", "5", "--programs", "9", "--mode", "forced", "--ops", "alu,bignum"};
  std::vector<std::string> args = {"fuzz"};
  args.insert(args.end(), campaign.begin(), campaign.end());
  args.insert(args.end(), {"--report", single.string()});
  const auto one = lockstep::cli_test::run_lockstep(args, {{"LOCKSTEP_GNUPLOT", "none"}});
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;

  std::string cmd = "LOCKSTEP_GNUPLOT=none LOCKSTEP='" LOCKSTEP_EXE "' MPIRUN_ARGS=--oversubscribe '" LOCKSTEP_MPI_WRAPPER
                    "' 2 '" + mpi.string() + "'";
  for (const std::string& a : campaign) cmd += " '" + a + "'";
  cmd += " > '" + (root / "mpi.out").string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = lockstep::cli_test::slurp(root / "mpi.out");
  std::cout << out;
  ASSERT_TRUE(WIFEXITED(status)) << out;
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("merged 2 reports: programs 9,"), std::string::npos) << out;
  // Each rank wrote its shard (rank 0: programs 0, 2, ..., 8; rank 1: 1, 3, 5, 7).
  const json s0 = json::parse(lockstep::cli_test::slurp(mpi / "shard-0" / "fuzz.json"));
  const json s1 = json::parse(lockstep::cli_test::slurp(mpi / "shard-1" / "fuzz.json"));
  EXPECT_EQ(s0["shard"], json::array({0, 2}));
  EXPECT_EQ(s1["shard"], json::array({1, 2}));
  EXPECT_EQ(s0["programs"], 5);
  EXPECT_EQ(s1["programs"], 4);
  // The merged report is the single-process campaign.
  const json a = json::parse(lockstep::cli_test::slurp(single / "fuzz.json"));
  const json m = json::parse(lockstep::cli_test::slurp(mpi / "fuzz.json"));
  EXPECT_EQ(m["programs"], 9);
  EXPECT_EQ(m["programs"], a["programs"]);
  EXPECT_EQ(m["steps"], a["steps"]);
  EXPECT_EQ(m["mismatching_runs"], 0);
  EXPECT_EQ(m["seed"], a["seed"]);
  EXPECT_EQ(m["coverage"], a["coverage"]);
  EXPECT_EQ(m["decision_coverage"], a["decision_coverage"]);
  EXPECT_GT(m["decision_coverage"]["both_sides"].get<std::uint64_t>(), 0u);
  const std::string tsv = lockstep::cli_test::slurp(single / "programs.tsv");
  EXPECT_EQ(std::count(tsv.begin(), tsv.end(), '\n'), 10);
  EXPECT_EQ(lockstep::cli_test::slurp(mpi / "programs.tsv"), tsv);
  EXPECT_TRUE(fs::exists(mpi / "report.html"));
  std::error_code ec;
  fs::remove_all(root, ec);
}

// SIGTERM to the wrapper (a CI timeout) while the ranks run: the wrapper sends mpirun SIGUSR1,
// Open MPI forwards it, every rank stops as on SIGINT and writes its report, and the merge of the
// partial campaign exits 3 (found by an outside tester: the ranks were killed with nothing
// written, or ran on with no parent, and the wrapper said "rank 0 left no exit status").
TEST(LockstepFuzzMpi, AStoppedCampaignWritesAndMergesEveryShard) {
  if (!on_path("mpirun")) GTEST_SKIP() << "mpirun not found (Debian: openmpi-bin): MPI campaign test skipped";
  const fs::path root = fs::temp_directory_path() / ("lockstep-fuzz-mpi-stop-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path mpi = root / "mpi", log = root / "mpi.out";
  const std::string cmd = "exec env LOCKSTEP_GNUPLOT=none LOCKSTEP='" LOCKSTEP_EXE "' MPIRUN_ARGS=--oversubscribe '" LOCKSTEP_MPI_WRAPPER
                          "' 2 '" + mpi.string() + "' --seed 5 --programs 1000000 --mode forced --ops alu > '" +
                          log.string() + "' 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // both ranks at work, each past its first batch: its programs.tsv has a row (a fixed sleep
  // was too short on a loaded machine, and the merge then held 0 programs)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto started = [&] {
    for (const char* shard : {"shard-0", "shard-1"}) {
      const std::string t = lockstep::cli_test::slurp(mpi / shard / "programs.tsv");
      if (std::count(t.begin(), t.end(), '\n') < 2) return false;
    }
    return true;
  };
  while (!started() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(pid, SIGTERM);
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > t0 + std::chrono::seconds(60)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string out = lockstep::cli_test::slurp(log);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 3) << out;
  EXPECT_NE(out.find("lockstep-fuzz-mpi: stopping the ranks"), std::string::npos) << out;
  EXPECT_NE(out.find("lockstep: interrupted: 2 of the 2 shards ended before their last program"), std::string::npos) << out;
  for (const char* shard : {"shard-0", "shard-1"}) {
    const json s = json::parse(lockstep::cli_test::slurp(mpi / shard / "fuzz.json"));
    EXPECT_EQ(s["interrupted"], true) << shard;
    EXPECT_EQ(lockstep::cli_test::slurp(mpi / (std::string("rank-") + shard[6] + ".rc")), "3\n") << shard;
  }
  const json m = json::parse(lockstep::cli_test::slurp(mpi / "fuzz.json"));
  EXPECT_EQ(m["interrupted"], true);
  EXPECT_GT(m["programs"].get<std::uint64_t>(), 0u);
  std::error_code ec;
  fs::remove_all(root, ec);
}

// Outside mpirun (or without --report) `--shard mpi` is bad input: exit 2, one line.
TEST(LockstepFuzzMpi, ShardMpiOutsideMpirunIsBadInput) {
  auto r = lockstep::cli_test::run_lockstep({"fuzz", "--programs", "1", "--shard", "mpi", "--report", "/nonexistent-never-written"},
                                            {{"OMPI_COMM_WORLD_RANK", ""}, {"OMPI_COMM_WORLD_SIZE", ""}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lockstep: error: --shard mpi: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE are not set"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = lockstep::cli_test::run_lockstep({"fuzz", "--programs", "1", "--shard", "mpi"},
                                       {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shard mpi needs --report DIR"), std::string::npos) << r.err;
  r = lockstep::cli_test::run_lockstep({"fuzz", "--programs", "1", "--shard", "mpi", "--report", "/nonexistent-never-written"},
                                       {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a rank below a size"), std::string::npos) << r.err;
}

}  // namespace
