#include "cli/dut_options.h"

#include <ostream>

#include "cli/errors.h"

namespace lockstep::cli {

void add_dut_options(CLI::App* cmd, dut::DutConfig& c) {
  cmd->add_option("--dut", c.command,
                  "Chip under test: start 'COMMAND ARGS' and speak lockstep-dut/1 over its stdin/stdout "
                  "(docs/spec/dut-protocol.md)");
  cmd->add_option("--dut-connect", c.connect,
                  "Chip under test already running: unix:PATH or tcp:HOST:PORT (e.g. lockstep chip-server)");
  cmd->add_option("--dut-vocab", c.vocab, "The chip's token ids: a vocabulary map file (dut-protocol.md §6)");
  cmd->add_option("--dut-timeout", c.timeout_s, "Seconds the chip under test may take to answer one request")
      ->capture_default_str();
  cmd->add_option("--dut-token-file", c.token_file, "Shared secret for a chip-server that asks for one (§9)");
}

bool check_dut_options(const dut::DutConfig& c, const std::string& chip, const std::string& backend) {
  if (!c.command.empty() && !c.connect.empty()) throw UsageError("give --dut or --dut-connect, not both");
  const bool dut = !c.empty();
  if (!dut) {
    if (!c.vocab.empty()) throw UsageError("--dut-vocab needs --dut or --dut-connect");
    if (!c.token_file.empty()) throw UsageError("--dut-token-file needs --dut or --dut-connect");
    return false;
  }
  if (!(c.timeout_s > 0 && c.timeout_s <= 86400)) {
    throw UsageError("--dut-timeout must be more than 0 and at most 86400 seconds");
  }
  if (!chip.empty()) throw UsageError("--chip names a chip file for the built-in executors; a chip under test (--dut) runs its own");
  if (!backend.empty() && backend != "cpu") {
    throw UsageError("--backend " + backend + " picks a built-in executor; a chip under test (--dut) runs in its own");
  }
  return true;
}

void print_capability_notes(Context& ctx, const std::vector<std::string>& notes) {
  for (const std::string& n : notes) ctx.out() << "note: chip under test: " << n << "\n";
}

void report_partial(Context& ctx, const engine::RunFailed& f) {
  const engine::RunResult& r = f.partial;
  ctx.summary.add_steps(r.steps);
  ctx.summary.add_mismatches(r.mismatches);
  ctx.summary.set("digest", r.digest);
  if (f.summary.contains("chip")) ctx.summary.set("chip", f.summary["chip"]);
  for (const engine::StreamResult& s : r.streams) {
    if (s.divergence) ctx.summary.set("divergence", s.divergence->to_json());
    ctx.summary.set("end", s.end);
  }
  if (f.summary.contains("capability_notes")) {
    ctx.summary.set("capability_notes", f.summary["capability_notes"]);
    print_capability_notes(ctx, f.summary["capability_notes"].get<std::vector<std::string>>());
  }
  ctx.out() << engine::result_text(r) << std::flush;
}

}  // namespace lockstep::cli
