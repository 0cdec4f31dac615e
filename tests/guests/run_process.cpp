// Implementation of run_process.h with posix_spawnp, two pipes and poll().
#include "run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>


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
  // Plain mode: the guest's console passes through byte for byte (--json would
  // carry it as UTF-8 text, replacing invalid bytes), and the last thing on
  // stderr is the report line
  //   "lockstep ref: NAME: exit S|trap C NAME at pc P|step limit reached,
  //    I instructions retired, N trace steps".
  RefRun run;
  std::vector<std::string> argv = {lockstep_ref_exe(), "ref", elf};
  argv.insert(argv.end(), extra.begin(), extra.end());
  run.process = run_process(argv);
  run.console = run.process.out;
  const std::string& err = run.process.err;
  const std::string tag = "lockstep ref: " + elf.substr(elf.find_last_of('/') + 1) + ": ";
  size_t at = err.rfind(tag);
  if (at == std::string::npos) {
    run.console_err = err;
    return run;
  }
  run.console_err = err.substr(0, at);
  std::string report = err.substr(at + tag.size());
  unsigned long long instructions = 0, steps = 0;
  int status = 0;
  if (std::sscanf(report.c_str(), "exit %d", &status) == 1) {
    run.end = "exit";
    run.exit_status = status;
  } else if (report.rfind("trap", 0) == 0) {
    run.end = "trap";
  } else if (report.rfind("step limit", 0) == 0) {
    run.end = "step_limit";
  }
  size_t comma = report.find(", ");
  if (comma != std::string::npos &&
      std::sscanf(report.c_str() + comma, ", %llu instructions retired, %llu trace steps", &instructions,
                  &steps) == 2) {
    run.instructions = static_cast<long long>(instructions);
    run.steps = static_cast<long long>(steps);
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
