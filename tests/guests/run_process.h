// Running an executable and capturing its stdout, stderr and exit status
// (for the guest tests: qemu-riscv32, `lockstep ref`, host golden models).
#pragma once

#include <string>
#include <vector>

namespace lockstep::guests_test {

/// What a finished child process produced.
struct ProcessResult {
  int exit_code = -1;   ///< exit status (0..255), or -1 if it did not exit normally
  int signal = 0;       ///< terminating signal, 0 if it exited
  std::string out;      ///< everything written to stdout
  std::string err;      ///< everything written to stderr
};

/// Runs argv[0] (searched in PATH if it has no '/') with the given arguments,
/// waits for it and returns its output.  Throws std::runtime_error when the
/// process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv);

/// Path of a built guest ELF: LOCKSTEP_GUEST_DIR/<name>.elf.
std::string guest_elf(const std::string& name);

/// Path of qemu-riscv32 found at configure time, or "" when none was found.
std::string qemu_path();

/// Path of the `lockstep` executable (LOCKSTEP_BINARY_DIR/bin/lockstep) if it
/// exists and its `ref` subcommand is available, else "".
std::string lockstep_ref_exe();

/// A guest run on the reference model (`lockstep ref`).
struct RefRun {
  ProcessResult process;     ///< the lockstep process itself
  std::string console;       ///< bytes the guest wrote to fd 1
  std::string console_err;   ///< bytes the guest wrote to fd 2
  std::string end;           ///< "exit", "trap" or "step_limit" ("" if unknown)
  int exit_status = -1;      ///< guest exit status when end == "exit"
  long long instructions = -1;  ///< instructions retired, -1 if not reported
  long long steps = -1;         ///< trace steps (tokens), -1 if not reported
};

/// Runs `lockstep ref <elf> [extra...]`: the guest's console is its stdout
/// (byte for byte), its error console is stderr up to the report line, and
/// end / exit status / instructions / steps come from that report line.
/// Keep this in step with cli/cmd_ref.cpp.
RefRun run_on_reference(const std::string& elf, const std::vector<std::string>& extra = {});

/// Reads a whole file; throws when it cannot be opened.
std::string read_file(const std::string& path);

}  // namespace lockstep::guests_test
