// `lockstep run PROGRAM.elf`: the reference and a chip in lock-step over one
// guest (docs/engine.md).
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/dut_options.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/tokens.h"

namespace lockstep::cli {

namespace {

struct RunArgs {
  std::string program, chip, backend = "cpu", mode = "forced", compare = "step", report, resume;
  std::uint64_t steps = 0, checkpoint_every = 0, teacher_forced = 0, hash_every = 0, window = 4096;
  dut::DutConfig dut;
  bool allow_trap = false;  // --allow-trap
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
  cmd->add_option("--steps", args->steps, "Steps to compare (default: until exit or trap; a divergence is diagnosed with up to --classify-window steps past it)")->check(count_range(1, kMaxStepsOption));
  cmd->add_option("--teacher-forced-steps", args->teacher_forced,
                  "With --mode free: teacher-force the first N steps")->check(count_range(0, kMaxStepsOption));
  cmd->add_option("--compare", args->compare,
                  "step: compare every step | end: compare the whole streams' digests at the end "
                  "and bisect over the checkpoints on a difference")
      ->capture_default_str();
  cmd->add_option("--report", args->report,
                  "Run folder: summary.json, junit.xml, report.html, case.json, checkpoints/");
  cmd->add_option("--checkpoint-every", args->checkpoint_every,
                  "Checkpoint both sides every N steps into DIR/checkpoints (needs --report; 0, the default: none, and the run cannot be resumed)")->check(count_range(0, kMaxStepsOption));
  cmd->add_option("--hash-every", args->hash_every, "Record both sides' state hashes every N steps (0, the default: none)")->check(count_range(0, kMaxStepsOption));
  cmd->add_option("--classify-window", args->window,
                  "Steps replayed teacher-forced after a divergence to classify it")
      ->check(count_range(1, 100'000'000))  // 0 classified every divergence single-step unchecked
      ->capture_default_str();
  cmd->add_option("--resume", args->resume,
                  "Continue the interrupted run in DIR (its case.json and checkpoints)");
  cmd->add_flag("--allow-trap", args->allow_trap,
                "A guest that ends in a trap (with no mismatch) is exact; without it that is an error, exit 2");
  add_dut_options(cmd, args->dut);
  add_dut_chip_option(cmd, args->dut);
  cmd->callback([&ctx, args, cmd] {
    const std::atomic<bool>* stop = engine::install_stop_handlers();  // before any work (chip loading included)
    ctx.stop = stop;
    if (!args->resume.empty() && !args->dut.chip_file.empty())
      throw UsageError("--dut-chip cannot be given with --resume: the run continues as its case.json says; start a new run to add it");
    const bool dut = check_dut_options(cmd, args->dut, args->chip, args->backend);
    engine::CheckRequest req;
    req.command = "run";
    try {
      if (!args->resume.empty()) {
        if (!args->report.empty() && args->report != args->resume) {
          throw UsageError("--resume DIR continues in DIR; --report must be absent or the same folder");
        }
        if (dut) throw UsageError("--resume DIR runs the chip the interrupted run ran (its case.json); leave out --dut");
        // The folder first: one a running run holds is "in use", not a case being rewritten
        // (found by an outside tester: it said "cannot read case.json")
        // (only a run folder: a failed --resume of any other folder leaves no lock file in it,
        // which would make it look like a run's; found by the re-test)
        if (std::filesystem::is_directory(args->resume) &&
            (std::filesystem::exists(std::filesystem::path(args->resume) / "case.json") || std::filesystem::exists(std::filesystem::path(args->resume) / "summary.json")))
          engine::lock_run_folder(args->resume);
        req.the_case = engine::Case::read(args->resume);
        reject_with_resume(cmd,
                           {"--steps", "--mode", "--teacher-forced-steps", "--compare", "--checkpoint-every", "--chip",
                            "--backend", "--hash-every", "--classify-window", "--allow-trap"},
                           args->resume, req.the_case);
        if (!args->program.empty()) {
          const engine::Guest g = engine::read_guest(args->program);
          if (engine::image_digest(g.image) != req.the_case.guest_digest) {
            throw UsageError("--resume " + args->resume + " is a run of another guest than " + args->program);
          }
        }
        req.report_dir = args->resume;
        req.resume = true;
      } else {
        // A new run owns its folder from the start: an error below (a bad option or ELF) never
        // leaves an earlier run's pass there (engine::claim_run_folder).
        const auto mode = engine::parse_mode(args->mode);
        const std::string mode_name = mode ? std::string(engine::to_string(*mode)) : "";
        if (!args->report.empty()) {
          claim_run_folder_noted(args->report, "run");
          // named as its report will name it, should it fail before that (a bad option or ELF, a kill)
          if (!args->program.empty())
            engine::name_claimed_run(args->report,
                                     engine::run_identity(args->program, std::filesystem::path(args->program).stem().string(),
                                                          mode_name, args->steps));
        }
        if (args->program.empty()) throw UsageError("run: PROGRAM.elf is required (or --resume DIR)");
        if (!mode) throw UsageError("--mode must be forced or free (got '" + args->mode + "')");
        if (*mode == engine::Mode::kForced && cmd->count("--teacher-forced-steps")) {
          throw UsageError("--teacher-forced-steps N is for --mode free (its first N steps teacher-forced, then "
                           "free-running); in --mode forced, the default, every step is teacher-forced");
        }
        const auto compare = engine::parse_compare(args->compare);
        if (!compare) throw UsageError("--compare must be step or end (got '" + args->compare + "')");
        if (args->backend != "cpu" && args->backend != "cuda") {
          throw UsageError("--backend must be cpu or cuda (got '" + args->backend + "')");
        }
        if (args->checkpoint_every && args->report.empty()) {
          throw UsageError("--checkpoint-every needs a run folder: --report DIR");
        }
        engine::Case& c = req.the_case;
        // named before the guest is read, so that a guest that cannot be read is named in --json
        // as in the folder's summary (found by an outside tester)
        ctx.summary.set("guest", args->program);
        ctx.summary.set("mode", mode_name);
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
        c.hash_every = args->hash_every;
        c.classify_window = args->window;
        c.allow_trap = args->allow_trap;
        req.report_dir = args->report;
        req.folder_claimed = !args->report.empty();  // claimed above
      }
      req.trap_is_error = !req.the_case.allow_trap;  // a resumed run's as its case.json says
      // Unsupported backends fail before any work.
      if (req.the_case.backend == "cuda") engine::make_backend("cuda", nullptr);
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    req.options.stop = stop;
    // summary.json carries what --json does (engine.md §1; found by an outside tester: only --json had it)
    req.add_to_summary = [&req](nlohmann::json& s, const engine::RunResult& r) {
      if (req.the_case.mode == engine::Mode::kFree) s["free_running_steps"] = free_running_steps(req.the_case, r);
      s["guest"] = req.the_case.guest_path.string();
    };
    engine::ProgressLine progress(std::cerr, engine::stderr_is_terminal());
    req.options.progress_interval = progress.interval();
    req.options.expected_rounds = req.the_case.steps;
    req.options.on_progress = [&progress](const engine::Progress& p) { progress.update(p); };
    // What the guest prints on the chip: live, unless the progress line shares the terminal
    // (then at the end, so that the line never erases a half-printed one).
    ChipConsole console;
    const bool live = !ctx.options.json && !progress.terminal();
    req.on_console = [&](std::size_t, int fd, char c) {
      console.add(fd, c);
      if (fd == 1) progress.output(c);
      if (live) (fd == 1 ? std::cout : std::cerr) << c << std::flush;
    };
    // Shown before the closing text (a last line without '\n' is ended).
    auto show_console = [&] {
      if (!ctx.options.json && !live) {
        // Only the head was kept: say how much more there was.
        auto show = [](std::ostream& os, const ConsoleHead& h, int fd) {
          os << h.kept;
          if (h.truncated())
            os << "\n[lockstep: " << (h.total - h.kept.size()) << " more bytes on fd " << fd
               << " not shown: only the first " << h.kept.size() << " are kept]\n";
          os << std::flush;
        };
        show(std::cout, console.out, 1);
        show(std::cerr, console.err, 2);
      }
      if (!ctx.options.json && console.last_out != '\n') std::cout << '\n' << std::flush;
    };
    engine::CheckOutcome out;
    try {
      out = engine::run_check(req, std::cerr);
    } catch (const engine::RunFailed& e) {
      progress.clear();
      show_console();
      console.record(ctx.summary, e.partial);
      report_partial(ctx, e);
      if (e.report_unwritten) throw ReportError(e.what());
      throw InputError(e.what());
    } catch (const engine::CheckError& e) {
      progress.clear();
      throw InputError(e.what());
    }
    progress.clear();
    show_console();
    if (!out.capability_notes.empty()) ctx.summary.set("capability_notes", out.capability_notes);
    const engine::RunResult& r = out.result;
    console.record(ctx.summary, r);
    if (const std::string line = console.stopped_matching(r); !line.empty()) std::cerr << "lockstep: " << line << "\n";
    ctx.summary.add_steps(r.steps);
    ctx.summary.add_mismatches(r.mismatches);
    summarise_run(ctx, out.summary);  // steps_per_second: of the comparing alone
    if (!req.report_dir.empty()) ctx.summary.set("report", req.report_dir.string());
    if (r.resumed_from) ctx.summary.set("resumed_from", r.resumed_from);
    if (!r.skipped_checkpoints.empty()) ctx.summary.set("skipped_checkpoints", r.skipped_checkpoints);
    if (!req.report_dir.empty())
      ctx.summary.set("replay", "lockstep replay " + format::shell_path(req.report_dir.string()));
    for (const engine::StreamResult& s : r.streams) summarise_divergence(ctx, s);
    print_capability_notes(ctx, out.capability_notes);
    note_chip_fault(ctx, out.chip_fault);
    note_free_running_steps(ctx, req.the_case, r);
    // Which chip gave the verdict, as fuzz's first line says it (found by an outside tester: only
    // --json and the report named it).
    // (a chip under test names itself: its identity is shown with its control characters escaped,
    // as dut-check shows it; found by an outside tester)
    // (also when it gave an empty identity: found by an outside tester, the line was left out)
    if (!out.chip_source.empty())
      ctx.out() << "chip " << out.chip_source << " ("
                << (out.chip_hash.empty() ? std::string("no identity") : format::escape_controls(out.chip_hash)) << ")\n";
    if (!out.end_text.empty()) ctx.out() << out.end_text << "\n";
    ctx.out() << engine::result_text(r) << std::flush;
    print_replay_hint(r, req.report_dir);
    if (r.interrupted) {
      // Resumable only from a checkpoint (written every --checkpoint-every steps and on the stop).
      const bool resumable = req.the_case.checkpoint_every != 0 && !req.report_dir.empty();
      throw Interrupted("after " + std::to_string(r.steps) + " steps" +
                        (resumable ? resume_hint("run", req.report_dir, r.steps) : std::string()));
    }
  });
}

}  // namespace lockstep::cli
