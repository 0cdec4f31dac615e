#include "cli/dut_options.h"

#include <iostream>
#include <ostream>

#include "lockstep/engine/engine.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/tokens.h"

#include "cli/app.h"
#include "cli/context.h"
#include "cli/errors.h"

namespace lockstep::cli {

void add_dut_options(CLI::App* cmd, dut::DutConfig& c) {
  cmd->add_option("--dut", c.command,
                  "Chip under test: start 'COMMAND ARGS' and speak lockstep-dut/1 over its stdin/stdout "
                  "(docs/spec/dut-protocol.md)");
  cmd->add_option("--dut-connect", c.connect,
                  "Chip under test already running: unix:PATH or tcp:HOST:PORT (e.g. lockstep chip-server)");
  cmd->add_option("--dut-vocab", c.vocab, "The chip's token ids: a vocabulary map file (dut-protocol.md §6)");
  // One message for every bad value: -1, 0, 1e6 and 'abc' all name the range (before the generic
  // numeric check, which would call 0 valid and -1 "not non-negative").
  const CLI::Validator seconds = seconds_range(86400);
  cmd->add_option("--dut-timeout", c.timeout_s, "Seconds the chip under test may take to answer one request")
      ->check(seconds)
      ->capture_default_str();
  cmd->add_option("--dut-start-timeout", c.start_timeout_s,
                  "Seconds the chip under test may take to start and answer the handshake (loading its weights)")
      ->check(seconds)
      ->capture_default_str();
  cmd->add_option("--dut-token-file", c.token_file, "Shared secret for a chip-server that asks for one (§9)");
}

void add_dut_chip_option(CLI::App* cmd, dut::DutConfig& c) {
  cmd->add_option("--dut-chip", c.chip_file,
                  "The chip file the chip under test executes: run it on Lockstep's CPU executor beside the chip "
                  "under test, and at a divergence compare their probes to name the first sublayer where they part "
                  "(docs/engine.md)");
}

bool check_dut_options(const CLI::App* cmd, const dut::DutConfig& c, const std::string& chip,
                       const std::string& backend, bool for_recorded_dut) {
  if (!c.command.empty() && !c.connect.empty()) throw UsageError("give --dut or --dut-connect, not both");
  const bool dut = !c.empty();
  if (!dut && for_recorded_dut) {
    if (!c.chip_file.empty()) throw UsageError("--dut-chip needs --dut or --dut-connect");
    return false;
  }
  if (!dut) {
    if (!c.vocab.empty()) throw UsageError("--dut-vocab needs --dut or --dut-connect");
    if (!c.token_file.empty()) throw UsageError("--dut-token-file needs --dut or --dut-connect");
    // (found by an outside tester: comparing a changed chip file with the original took finding
    // out that a chip server makes the first one a chip under test)
    if (!c.chip_file.empty())
      throw UsageError("--dut-chip needs --dut or --dut-connect (to compare chip file NEW with OLD sublayer by sublayer: "
                       "--dut '" + command_name() + " chip-server --stdio NEW' --dut-chip OLD)");
    // Given, even at their defaults, they say a chip under test was meant: refused, never ignored.
    for (const char* name : {"--dut-timeout", "--dut-start-timeout"}) {
      const CLI::Option* o = cmd->get_option_no_throw(name);
      if (o && o->count() > 0) throw UsageError(std::string(name) + " needs --dut or --dut-connect");
    }
    return false;
  }
  // The timeouts' range is checked as they are parsed (seconds_range in add_dut_options).
  if (!chip.empty()) throw UsageError("--chip names a chip file for the built-in executors; a chip under test (--dut) runs its own");
  if (!backend.empty() && backend != "cpu") {
    throw UsageError("--backend " + backend + " picks a built-in executor; a chip under test (--dut) runs in its own");
  }
  return true;
}

void reject_with_resume(const CLI::App* cmd, const std::vector<std::string>& names, const std::string& dir,
                        const engine::Case& c) {
  if (!c.command.empty() && c.command != cmd->get_name()) {
    const std::string d = format::shell_path(dir);
    throw UsageError("--resume " + dir + ": its case.json was written by `lockstep " + c.command +
                     "`; continue it with " + as_invoked("lockstep " + c.command + " --resume " + d) +
                     (c.command == "run" || c.command == "story" ? std::string()
                                                                 : " (or " + as_invoked("lockstep replay " + d) + ")"));
  }
  for (const std::string& n : names) {
    const CLI::Option* o = cmd->get_option_no_throw(n);
    if (!o || o->count() == 0) continue;
    std::string as;
    if (n == "--steps") as = " (steps " + (c.steps ? std::to_string(c.steps) : std::string("0: to the end")) + ")";
    else if (n == "--checkpoint-every") as = " (checkpoint every " + std::to_string(c.checkpoint_every) + ")";
    else if (n == "--mode") as = " (mode " + std::string(engine::to_string(c.mode)) + ")";
    else if (n == "--teacher-forced-steps") as = " (teacher-forced steps " + std::to_string(c.teacher_forced_steps) + ")";
    else if (n == "--allow-trap") as = c.allow_trap ? " (with --allow-trap)" : " (without --allow-trap)";
    throw UsageError(n + " cannot be given with --resume: the run continues as " +
                     (std::filesystem::path(dir) / "case.json").string() + " says" + as +
                     "; start a new run to change it");
  }
}

void print_replay_hint(const engine::RunResult& r, const std::filesystem::path& report_dir) {
  if (r.mismatches == 0) return;
  if (!report_dir.empty()) {
    std::cerr << "lockstep: replay it: " << as_invoked("lockstep replay " + format::shell_path(report_dir.string()))
              << "\n"
              << std::flush;
  } else {
    std::cerr << "lockstep: to save a replayable case, run it again with --report DIR (then: lockstep replay DIR)"
              << "\n"
              << std::flush;
  }
}

std::string ChipConsole::stopped_matching(const engine::RunResult& r) const {
  const engine::Divergence* d = nullptr;
  for (const engine::StreamResult& s : r.streams)
    if (s.divergence) d = &*s.divergence;
  if (!d) return {};
  auto fd_of = [](std::uint32_t t) {
    const auto k = format::kind_of(t);
    if (!k) return 0;
    if (k->kind == static_cast<std::uint32_t>(format::Kind::OUT)) return 1;
    if (k->kind == static_cast<std::uint32_t>(format::Kind::ERR)) return 2;
    return 0;
  };
  std::string line = "the chip's output matched the reference's for " + std::to_string(out.total) +
                     " bytes on fd 1 and " + std::to_string(err.total) + " on fd 2, up to step " +
                     std::to_string(d->step) + ", where ";
  const int fe = fd_of(d->expected), fa = fd_of(d->actual);
  if (fe) {
    const std::uint64_t at = (fe == 1 ? out.total : err.total) + 1;
    line += "the reference printed byte " + std::to_string(at) + " on fd " + std::to_string(fe) + " (" +
            d->expected_text + ") and the chip " + (fa ? "printed " : "emitted ") + d->actual_text;
  } else if (fa) {
    line += "the chip printed " + d->actual_text + " on fd " + std::to_string(fa) + " where the reference has " +
            d->expected_text;
  } else {
    line += "the run diverged (" + d->field + ": expected " + d->expected_text + ", got " + d->actual_text +
            "); nothing the chip printed after it is shown";
  }
  return line;
}

void ChipConsole::record(Summary& summary, const engine::RunResult& r) const {
  out.record(summary, "stdout");
  err.record(summary, "stderr");
  const std::string line = stopped_matching(r);
  if (!line.empty()) summary.set("output_stopped_matching", line);
}

std::string resume_hint(const std::string& command, const std::filesystem::path& dir, std::uint64_t steps) {
  if (dir.empty()) return "";
  std::vector<std::uint64_t> cps;
  try {
    cps = engine::list_checkpoints(dir / "checkpoints");
  } catch (const std::exception&) {
  }
  if (cps.empty()) return "";
  const std::uint64_t at = cps.back();
  return "; continue with: " + as_invoked("lockstep " + command + " --resume " + format::shell_path(dir.string())) +
         (at < steps ? " (from its checkpoint at step " + std::to_string(at) + ": no checkpoint was taken at the stop, so "
                       "the steps after it are compared again)"
                     : std::string());
}

void print_capability_notes(Context& ctx, const std::vector<std::string>& notes) {
  for (const std::string& n : notes) ctx.out() << "note: chip under test: " << n << "\n";
}

void note_chip_fault(Context& ctx, const std::string& fault) {
  if (fault.empty()) return;
  ctx.summary.set("chip_fault", fault);
  std::cerr << "lockstep: warn: " << fault << " (after the divergence, which stands: the run ends as a mismatch)\n";
}

std::uint64_t free_running_steps(const engine::Case& c, const engine::RunResult& r) {
  return r.steps > c.teacher_forced_steps ? r.steps - c.teacher_forced_steps : 0;
}

void note_free_running_steps(Context& ctx, const engine::Case& c, const engine::RunResult& r) {
  if (c.mode != engine::Mode::kFree) return;
  const std::uint64_t free = free_running_steps(c, r);
  ctx.summary.set("free_running_steps", free);
  if (free == 0 && r.steps > 0)
    ctx.out() << "note: no free-running step was compared: all " << r.steps
              << " steps compared were within the first " << c.teacher_forced_steps
              << " (--teacher-forced-steps), which are teacher-forced\n";
}

void summarise_divergence(Context& ctx, const engine::StreamResult& s) {
  if (s.divergence) ctx.summary.set("divergence", s.divergence->to_json());
  // (found by an outside tester: --json dropped it, and said mismatch with no reason)
  if (s.divergence_unlocated) ctx.summary.set("divergence_unlocated", s.unlocated_why);
}

void summarise_run(Context& ctx, const nlohmann::json& summary) {
  for (const char* k : {"digest", "chip", "chip_hash", "guest", "mode", "backend", "seconds", "steps_per_second",
                        "diagnosis_seconds", "end", "exit_status", "trap_code", "trap_name"})
    if (const auto it = summary.find(k); it != summary.end()) ctx.summary.set(k, *it);
}

void report_partial(Context& ctx, const engine::RunFailed& f) {
  const engine::RunResult& r = f.partial;
  ctx.summary.add_steps(r.steps);
  ctx.summary.add_mismatches(r.mismatches);
  ctx.summary.set("digest", r.digest);
  if (f.summary.contains("chip")) ctx.summary.set("chip", f.summary["chip"]);
  for (const engine::StreamResult& s : r.streams) {
    summarise_divergence(ctx, s);
    ctx.summary.set("end", s.end);
  }
  if (f.summary.contains("capability_notes")) {
    ctx.summary.set("capability_notes", f.summary["capability_notes"]);
    print_capability_notes(ctx, f.summary["capability_notes"].get<std::vector<std::string>>());
  }
  // Nothing ran (the chip failed at its start): no closing "steps compared 0" line.
  if (r.steps > 0) ctx.out() << engine::result_text(r) << std::flush;
  // A run whose report could not be written is an error (exit 2) whatever it compared: stdout
  // says so below its "mismatches 0" too (found by an outside tester: a full disk left stdout
  // reading as a pass, the error on stderr alone).
  if (r.steps > 0 && f.report_unwritten) say_not_recorded(ctx.out(), f.what());
}

void say_not_recorded(std::ostream& out, const std::string& why) {
  out << "not recorded: " << format::escape_controls(why) << "\n" << std::flush;
}

}  // namespace lockstep::cli
