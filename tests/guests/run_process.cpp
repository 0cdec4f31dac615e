// Implementation of run_process.h with posix_spawnp, two pipes and poll().
#include "run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

extern char** environ;

namespace lockstep::guests_test {

ProcessResult run_process(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::runtime_error("run_process: empty argv");
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  }

  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_count--;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string guest_elf(const std::string& name) {
  return std::string(LOCKSTEP_GUEST_DIR) + "/" + name + ".elf";
}

std::string qemu_path() { return LOCKSTEP_QEMU_RISCV32; }

std::string lockstep_ref_exe() {
  std::string exe = std::string(LOCKSTEP_BINARY_DIR) + "/bin/lockstep";
  struct stat st{};
  if (stat(exe.c_str(), &st) != 0) return "";
  ProcessResult help = run_process({exe, "ref", "--help"});
  if (help.exit_code != 0) return "";
  return exe;
}

RefRun run_on_reference(const std::string& elf, const std::vector<std::string>& extra) {
  RefRun run;
  std::vector<std::string> argv = {lockstep_ref_exe(), "ref", "--json", elf};
  argv.insert(argv.end(), extra.begin(), extra.end());
  run.process = run_process(argv);
  const std::string& out = run.process.out;
  // The summary is the last line that parses as a JSON object.
  size_t json_at = std::string::npos;
  nlohmann::json summary;
  for (size_t end = out.size(); end > 0;) {
    size_t start = out.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') {
      summary = nlohmann::json::parse(line, nullptr, false);
      if (!summary.is_discarded() && summary.is_object()) {
        json_at = start;
        break;
      }
    }
    if (start == 0) break;
    end = start - 1;
  }
  if (json_at == std::string::npos) {
    // Maybe the whole stdout is one (pretty-printed) JSON document.
    size_t brace = out.find('{');
    if (brace != std::string::npos) {
      summary = nlohmann::json::parse(out.substr(brace), nullptr, false);
      if (!summary.is_discarded() && summary.is_object()) json_at = brace;
    }
  }
  run.console = json_at == std::string::npos ? out : out.substr(0, json_at);
  run.console_err = run.process.err;
  if (json_at != std::string::npos) {
    auto get_int = [&](std::initializer_list<const char*> keys) -> long long {
      for (const char* k : keys)
        if (summary.contains(k) && summary[k].is_number_integer()) return summary[k].get<long long>();
      return -1;
    };
    if (summary.contains("end") && summary["end"].is_string()) run.end = summary["end"];
    run.exit_status = static_cast<int>(get_int({"exit_status", "exit_code"}));
    run.instructions = get_int({"instructions", "instructions_retired", "retired"});
    run.steps = get_int({"steps", "tokens"});
    if (summary.contains("stdout") && summary["stdout"].is_string()) run.console = summary["stdout"];
    if (summary.contains("stderr") && summary["stderr"].is_string()) run.console_err = summary["stderr"];
  }
  return run;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace lockstep::guests_test
