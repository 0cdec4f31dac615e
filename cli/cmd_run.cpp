// `lockstep run PROGRAM.elf`: the reference and a chip in lock-step over one
// guest (docs/engine.md).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/dut_options.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"

namespace lockstep::cli {

namespace {

struct RunArgs {
  std::string program, chip, backend = "cpu", mode = "forced", compare = "step", report, resume;
  std::uint64_t steps = 0, checkpoint_every = 0, teacher_forced = 0, hash_every = 0, window = 4096;
  dut::DutConfig dut;
};

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run", "Run a guest on the reference and a chip in lock-step, comparing every step");
  cmd->add_option("program", args->program, "Guest ELF file (optional with --resume)");
  cmd->add_option("--chip", args->chip, "Compiled chip file (default: the built chip)");
  cmd->add_option("--backend", args->backend, "Executor: cpu | cuda")->capture_default_str();
  cmd->add_option("--mode", args->mode, "forced (teacher-forced) | free (free-running)")
      ->capture_default_str();
  cmd->add_option("--steps", args->steps, "Steps to compare (default: until exit or trap)");
  cmd->add_option("--teacher-forced-steps", args->teacher_forced,
                  "With --mode free: teacher-force the first N steps");
  cmd->add_option("--compare", args->compare,
                  "step: compare every step | end: compare the whole streams' digests at the end "
                  "and bisect over the checkpoints on a difference")
      ->capture_default_str();
  cmd->add_option("--report", args->report,
                  "Run folder: summary.json, junit.xml, report.html, case.json, checkpoints/");
  cmd->add_option("--checkpoint-every", args->checkpoint_every,
                  "Checkpoint both sides every N steps into DIR/checkpoints (needs --report)");
  cmd->add_option("--hash-every", args->hash_every, "Record both sides' state hashes every N steps");
  cmd->add_option("--classify-window", args->window,
                  "Steps replayed teacher-forced after a divergence to classify it")
      ->capture_default_str();
  cmd->add_option("--resume", args->resume,
                  "Continue the interrupted run in DIR (its case.json and checkpoints)");
  add_dut_options(cmd, args->dut);
  cmd->callback([&ctx, args] {
    const bool dut = check_dut_options(args->dut, args->chip, args->backend);
    engine::CheckRequest req;
    req.command = "run";
    try {
      if (!args->resume.empty()) {
        if (!args->report.empty() && args->report != args->resume) {
          throw UsageError("--resume DIR continues in DIR; --report must be absent or the same folder");
        }
        if (dut) throw UsageError("--resume DIR runs the chip the interrupted run ran (its case.json); leave out --dut");
        req.the_case = engine::Case::read(args->resume);
        if (!args->program.empty()) {
          const engine::Guest g = engine::read_guest(args->program);
          if (engine::image_digest(g.image) != req.the_case.guest_digest) {
            throw UsageError("--resume " + args->resume + " is a run of another guest than " + args->program);
          }
        }
        req.report_dir = args->resume;
        req.resume = true;
      } else {
        if (args->program.empty()) throw UsageError("run: PROGRAM.elf is required (or --resume DIR)");
        const auto mode = engine::parse_mode(args->mode);
        if (!mode) throw UsageError("--mode must be forced or free (got '" + args->mode + "')");
        const auto compare = engine::parse_compare(args->compare);
        if (!compare) throw UsageError("--compare must be step or end (got '" + args->compare + "')");
        if (args->backend != "cpu" && args->backend != "cuda") {
          throw UsageError("--backend must be cpu or cuda (got '" + args->backend + "')");
        }
        if (args->checkpoint_every && args->report.empty()) {
          throw UsageError("--checkpoint-every needs a run folder: --report DIR");
        }
        engine::Case& c = req.the_case;
        const engine::Guest g = engine::read_guest(args->program);
        c.guest_name = g.name;
        c.guest_path = args->program;
        c.chip_path = args->chip;
        c.backend = args->backend;
        if (dut) {
          c.backend = "dut";
          c.dut = args->dut;
        }
        c.mode = *mode;
        c.teacher_forced_steps = args->teacher_forced;
        c.compare = *compare;
        c.steps = args->steps;
        c.checkpoint_every = args->checkpoint_every;
        req.report_dir = args->report;
      }
      // Unsupported backends fail before any work.
      if (req.the_case.backend == "cuda") engine::make_backend("cuda", nullptr);
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    req.options.hash_every = args->hash_every;
    req.options.classify_window = args->window;
    req.options.stop = engine::install_stop_handlers();
    engine::ProgressLine progress(std::cerr, engine::stderr_is_terminal());
    req.options.progress_interval = progress.interval();
    req.options.expected_rounds = req.the_case.steps;
    req.options.on_progress = [&progress](const engine::Progress& p) { progress.update(p); };
    req.on_output = [&progress](std::size_t, char c) { progress.output(c); };
    engine::CheckOutcome out;
    try {
      out = engine::run_check(req, std::cerr);
    } catch (const engine::RunFailed& e) {
      progress.clear();
      report_partial(ctx, e);
      throw InputError(e.what());
    } catch (const engine::CheckError& e) {
      progress.clear();
      throw InputError(e.what());
    }
    progress.clear();
    if (!out.capability_notes.empty()) ctx.summary.set("capability_notes", out.capability_notes);
    const engine::RunResult& r = out.result;
    ctx.summary.add_steps(r.steps);
    ctx.summary.add_mismatches(r.mismatches);
    ctx.summary.set("digest", r.digest);
    ctx.summary.set("chip", out.chip_source);
    ctx.summary.set("chip_hash", out.chip_hash);
    ctx.summary.set("mode", r.mode);
    ctx.summary.set("backend", r.backend);
    ctx.summary.set("seconds", r.seconds);
    ctx.summary.set("steps_per_second", r.steps_per_second);
    if (!req.report_dir.empty()) ctx.summary.set("report", req.report_dir.string());
    if (r.resumed_from) ctx.summary.set("resumed_from", r.resumed_from);
    for (const engine::StreamResult& s : r.streams) {
      if (s.divergence) ctx.summary.set("divergence", s.divergence->to_json());
      ctx.summary.set("end", s.end);
    }
    print_capability_notes(ctx, out.capability_notes);
    ctx.out() << engine::result_text(r) << std::flush;
    if (r.interrupted) {
      throw InputError("interrupted after " + std::to_string(r.steps) + " steps" +
                       (req.report_dir.empty() ? std::string()
                                               : "; continue with: lockstep run --resume " + req.report_dir.string()));
    }
  });
}

}  // namespace lockstep::cli
