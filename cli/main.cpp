// The `lockstep` executable: the built chip's registration and the list of subcommands, nothing
// else.
#include "cli/app.h"
#include "cli/builtin_chip.h"
#include "cli/commands.h"
#include "lockstep/dut/transport.h"

int main(int argc, char** argv) {
  using namespace lockstep::cli;
  register_rv32_backend();  // the built chip, for `run`, `compile`, `bench`... (builtin_chip.h)
  set_interrupt_hook(&lockstep::dut::kill_chip_processes_now);  // no chip under test outlives a stop
  return run_main(argc, argv, {
                                  add_models_command,
                                  add_run_command,
                                  add_story_command,
                                  add_replay_command,
                                  add_fuzz_command,
                                  add_report_command,
                                  add_ref_command,
                                  add_compile_command,
                                  add_bench_command,
                                  add_mutate_command,
                                  add_chip_server_command,
                                  add_dut_check_command,
                                  // one line per subcommand; see commands.h
                              },
                  settle_run_folders);
}
