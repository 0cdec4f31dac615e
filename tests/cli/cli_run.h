// Runs the built `lockstep` executable (LOCKSTEP_EXE) as a child process for the CLI tests:
// its exit code, stdout and stderr.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace lockstep::cli_test {

/// This test process's scratch folder, TMP/lockstep-NAME-PID (ctest runs each test in a process of
/// its own), removed with everything in it when the process's tests end: a GoogleTest environment
/// (add_scratch_root). Without it every run left one folder per test in the temporary directory.
struct ScratchRoot : ::testing::Environment {
  explicit ScratchRoot(const std::string& name)
      : root(std::filesystem::temp_directory_path() / ("lockstep-" + name + "-" + std::to_string(::getpid()))) {}
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  /// ROOT/name, new and empty.
  std::filesystem::path fresh(const std::string& name) const {
    const std::filesystem::path d = root / name;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
  }
  const std::filesystem::path root;
};

/// Registers (once per call: call it once, at namespace scope) and returns the scratch folder
/// TMP/lockstep-NAME-PID of this test process.
inline const ScratchRoot& add_scratch_root(const std::string& name) {
  auto* env = new ScratchRoot(name);  // owned by GoogleTest
  ::testing::AddGlobalTestEnvironment(env);
  return *env;
}

/// What one `lockstep` run left behind.
struct Result {
  int exit_code = -1;  ///< exit status, or 128 + signal
  std::string out;     ///< stdout
  std::string err;     ///< stderr
};

/// The whole file (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Starts LOCKSTEP_EXE with `args` in `cwd` (empty: the current folder), its stdout to file `out`
/// and its stderr to file `err` (either may be /dev/null); `env` entries are set in the child (an
/// empty value unsets the variable). Returns the child's pid without waiting (for the tests that
/// signal a run).
inline pid_t spawn_lockstep(const std::vector<std::string>& args, const std::filesystem::path& out,
                            const std::filesystem::path& err, const std::map<std::string, std::string>& env = {},
                            const std::filesystem::path& cwd = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0) ::_exit(127);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
    for (const auto& [k, v] : env) {
      if (v.empty()) ::unsetenv(k.c_str());
      else ::setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char*> argv{const_cast<char*>(LOCKSTEP_EXE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(LOCKSTEP_EXE, argv.data());
    ::_exit(127);
  }
  return pid;
}

/// Runs LOCKSTEP_EXE with `args` in `cwd` (empty: the current folder); `env` entries are set
/// in the child (an empty value unsets the variable). Waits for it to end.
inline Result run_lockstep(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                           const std::filesystem::path& cwd = {}) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lockstep-cli-run-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "out", err = dir / "err";
  const pid_t pid = spawn_lockstep(args, out, err, env, cwd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

}  // namespace lockstep::cli_test
