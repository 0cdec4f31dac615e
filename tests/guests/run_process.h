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

/// Reads a whole file; throws when it cannot be opened.
std::string read_file(const std::string& path);

}  // namespace lockstep::guests_test
