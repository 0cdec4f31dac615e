// `lockstep story`: the story guest (stories260K) on the reference and a chip:
// teacher-forced for the first steps, then free-running to the end of the
// story with every step compared (docs/engine.md, "The story check").
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/dut_options.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/elf.h"
#include "lockstep/format/shell.h"
#include "lockstep/reports/files.h"
#include "llama2c.h"

namespace lockstep::cli {

namespace {

// The whole story compared: its guest ran to its exit with every step equal, not interrupted
// (docs/ci.md: gate a release on it).
bool story_complete(const engine::Case& c, const engine::RunResult& r) {
  // The story check is teacher-forced for its first steps, then free-running to the end: a run
  // whose --teacher-forced-steps covered the whole story compared no free-running step and is not
  // it (found by an outside tester: it read story_complete true)
  return r.streams.size() == 1 && r.streams[0].end == "exit" && r.mismatches == 0 && !r.interrupted &&
         (c.mode != engine::Mode::kFree || free_running_steps(c, r) > 0);
}

namespace fs = std::filesystem;

struct StoryArgs {
  std::string chip, build = "vx", guest, backend = "cpu", report, resume;
  std::uint64_t tokens = 0, teacher_forced = 30000, steps = 0, checkpoint_every = 0;
  bool reference_only = false;
  dut::DutConfig dut;
};


// The story guest of `build`: `model` "real" (the guest built from a real checkpoint), "synthetic"
// (the one built from the synthetic model), or "" (the real one if it was built, else the
// synthetic one).
fs::path find_story_guest(const Context& ctx, const std::string& build, const std::string& model) {
  const std::string stem = build == "vx" ? "stories_vx" : "stories_c";
  std::vector<std::string> names;
  if (model != "synthetic") names.push_back(stem + ".elf");
  if (model != "real") names.push_back(stem + "_synthetic.elf");
  std::string searched;
  for (const std::string& n : names) {
    for (const fs::path& d : ctx.guest_dirs()) {
      std::error_code ec;
      if (fs::is_regular_file(d / n, ec)) return d / n;
      searched += (searched.empty() ? "" : ", ") + (d / n).string();
    }
  }
  throw InputError("story guest for --build " + build + (model.empty() ? "" : " and the " + model + " model") +
                   " not found (searched " + searched +
                   "; build the guests, set LOCKSTEP_GUEST_DIR, or pass --guest FILE)");
}

// Which checkpoint a story guest was built from: the "model" line of the manifest the image
// converter wrote beside it (guests/stories_vx/convert.cmake), or "" when there is none or it
// does not describe this guest. The manifest is a file beside the ELF, not part of it: it counts
// only when every ELF section it lists (".lockstep.wmem", ".lockstep.wscale") has the SHA-256 it
// records (found by an outside tester: a stale manifest named the synthetic model for the real
// guest, and then warned that the real checkpoint was not the one it was built from). `note`
// says why a manifest there was not taken.
std::string guest_model(const fs::path& guest, const format::GuestImage& image, std::string& note) {
  const fs::path manifest = guest.parent_path() / guest.stem() / "manifest.json";
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return "";
  nlohmann::json j;
  try {
    j = reports::parse_json_text(reports::read_file_text(manifest), manifest.string());
  } catch (const std::exception& e) {
    note = "its manifest " + manifest.string() + " cannot be read (" + e.what() + ")";
    return "";
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_string()) return "";
  std::size_t checked = 0;
  if (j.contains("files") && j["files"].is_object())
    for (const auto& [file, f] : j["files"].items()) {
      if (!f.is_object() || !f.contains("section") || !f["section"].is_string()) continue;
      const std::string section = f["section"].get<std::string>();
      if (section.empty() || section[0] != '.') continue;  // bytes inside .rodata: not a section of their own
      const auto it = image.sections.find(section);
      if (it == image.sections.end() || host::sha256_hex(it->second) != f.value("sha256", "")) {
        note = "the manifest beside it (" + manifest.string() + ") records another " + section + " than the guest's" +
               " (a stale manifest, or a guest copied beside another's): which checkpoint the guest was built from is"
               " not known";
        return "";
      }
      ++checked;
    }
  if (checked == 0) {
    note = "the manifest beside it (" + manifest.string() + ") records none of the guest's sections: which checkpoint"
           " the guest was built from is not known";
    return "";
  }
  return j["model"].get<std::string>();
}

// --tokens N: rewrites n_steps (offset 40) of the stories_c image header the
// guest links at symbol `stories_image` (guests/stories_c/image_c.h).
void set_story_tokens(format::GuestImage& image, std::uint64_t tokens) {
  const auto sym = image.symbols.find("stories_image");
  if (sym == image.symbols.end()) {
    throw InputError("--tokens: this guest has no stories_image symbol (only stories_c images can be resized)");
  }
  for (format::Segment& s : image.segments) {
    if (sym->second < s.vaddr || sym->second + 44 > s.vaddr + s.bytes.size()) continue;
    std::uint8_t* h = s.bytes.data() + (sym->second - s.vaddr);
    auto rd = [&](int off) {
      std::int32_t v;
      std::memcpy(&v, h + off, 4);
      return v;
    };
    const std::int32_t kv_len = rd(36);
    if (kv_len <= 1 || kv_len > 4096 || rd(40) < 0 || rd(40) >= kv_len) {
      throw InputError("--tokens: the stories_image header does not look like a stories_c image");
    }
    if (tokens < 1 || tokens >= static_cast<std::uint64_t>(kv_len)) {
      throw UsageError("--tokens must be 1.." + std::to_string(kv_len - 1) + " for this guest");
    }
    const std::int32_t n = static_cast<std::int32_t>(tokens);
    std::memcpy(h + 40, &n, 4);
    return;
  }
  throw InputError("--tokens: stories_image is not inside a loaded segment");
}

// --reference-only runs the golden model alone: an option that only matters for the chip's run
// (which chip, how it runs, where its report goes) would be ignored, so it is refused, naming it:
// "--report cannot be given with --reference-only: ...". Throws UsageError.
void reject_with_reference_only(const CLI::App* cmd) {
  static const char* const kChipOnly[] = {"--report",         "--checkpoint-every", "--chip",
                                          "--backend",        "--teacher-forced-steps", "--dut",
                                          "--dut-connect",    "--dut-vocab",        "--dut-timeout",
                                          "--dut-start-timeout", "--dut-token-file"};
  for (const char* name : kChipOnly) {
    const CLI::Option* o = cmd->get_option_no_throw(name);
    if (!o || o->count() == 0) continue;
    const std::string n = name;
    const std::string why =
        n == "--report" || n == "--checkpoint-every"
            ? "the reference alone writes no report folder (no summary, case or checkpoints)"
            : "it is for the chip's run, and with --reference-only no chip runs";
    throw UsageError(n + " cannot be given with --reference-only: " + why +
                     "; leave out --reference-only to check a chip");
  }
}

}  // namespace

void add_story_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<StoryArgs>();
  auto* cmd = app.add_subcommand(
      "story", "The story check: stories260K teacher-forced, then free-running to the end, every step compared");
  cmd->add_option("--chip", args->chip, "Compiled chip file (default: the built chip)");
  cmd->add_option("--build", args->build, "Story guest: vx (vector unit) | c (plain C int8)")
      ->capture_default_str();
  cmd->add_option("--guest", args->guest, "Story guest ELF (default: found by --build)");
  cmd->add_option("--backend", args->backend, "Executor: cpu | cuda")->capture_default_str();
  cmd->add_option("--tokens", args->tokens, "Story tokens to generate (stories_c images only)")->check(count_range(1, 4096));
  cmd->add_option("--teacher-forced-steps", args->teacher_forced, "Teacher-forced steps before free running")
      ->check(count_range(0, kMaxStepsOption))
      ->capture_default_str();
  cmd->add_option("--steps", args->steps, "Stop after N steps (default: the whole story)")->check(count_range(1, kMaxStepsOption));
  cmd->add_option("--report", args->report, "Write a report (and case.json) into DIR");
  cmd->add_option("--checkpoint-every", args->checkpoint_every,
                  "Checkpoint both sides every N steps into DIR/checkpoints (needs --report; 0, the default: none, and the run cannot be resumed)")->check(count_range(0, kMaxStepsOption));
  cmd->add_option("--resume", args->resume,
                  "Continue the interrupted story check in DIR (its case.json and checkpoints)");
  cmd->add_flag("--reference-only", args->reference_only,
                "Run the reference alone: print the story, its steps and digest");
  add_dut_options(cmd, args->dut);
  add_dut_chip_option(cmd, args->dut);
  cmd->callback([&ctx, args, cmd] {
    const std::atomic<bool>* stop = engine::install_stop_handlers();  // before any work
    ctx.stop = stop;
    // false until a whole story is compared, so that every summary has it, an error's too (found
    // by an outside tester: a failed story's --json had no story_complete to gate on)
    ctx.summary.set("story_complete", false);
    if (args->reference_only) reject_with_reference_only(cmd);
    if (!args->resume.empty() && !args->dut.chip_file.empty())
      throw UsageError("--dut-chip cannot be given with --resume: the check continues as its case.json says; start a new one to add it");
    const bool dut = check_dut_options(cmd, args->dut, args->chip, args->backend);
    if (dut && !args->resume.empty()) {
      throw UsageError("--resume DIR runs the chip the interrupted check ran (its case.json); leave out --dut");
    }
    if (args->build != "vx" && args->build != "c") {
      throw UsageError("--build must be vx or c (got '" + args->build + "')");
    }
    if (args->backend != "cpu" && args->backend != "cuda") {
      throw UsageError("--backend must be cpu or cuda (got '" + args->backend + "')");
    }
    // An executor this machine lacks fails before any work, as in run (found by an outside
    // tester: the whole reference story ran first).
    if (args->backend == "cuda" && !dut) {
      try {
        engine::make_backend("cuda", nullptr);
      } catch (const engine::CheckError& e) {
        throw InputError(e.what());
      }
    }
    if (args->checkpoint_every && args->report.empty() && args->resume.empty()) {
      throw UsageError("--checkpoint-every needs a run folder: --report DIR");
    }
    if (!args->resume.empty() && !args->report.empty() && args->report != args->resume) {
      throw UsageError("--resume DIR continues in DIR; --report must be absent or the same folder");
    }
    // --resume: the story, chip and options are the interrupted check's (its case.json).
    std::optional<engine::Case> resumed;
    fs::path path;
    engine::Guest guest;
    std::string guest_note;  // "story guest X: built from Y", logged with the result
    std::string guest_built_from;  // guest_model(path): the checkpoint the guest was built from
    try {
      if (!args->resume.empty()) {
        // The folder first: one a running run holds is "in use" (lock_run_folder), not a case read
        // while it is rewritten
        // (only a run folder: a failed --resume of any other folder leaves no lock file in it,
        // which would make it look like a run's; found by the re-test)
        if (fs::is_directory(args->resume) &&
            (fs::exists(fs::path(args->resume) / "case.json") || fs::exists(fs::path(args->resume) / "summary.json")))
          engine::lock_run_folder(args->resume);
        resumed = engine::Case::read(args->resume);
        // --models (a global option) picks the story guest; the resumed run's guest is in its case
        // (found by an outside tester: it was silently ignored)
        if (!ctx.options.models_dir.empty())
          throw UsageError("--models cannot be given with --resume: the run continues as " +
                           (fs::path(args->resume) / "case.json").string() + " (its guest, built from its own checkpoint)");
        reject_with_resume(cmd,
                           {"--steps", "--teacher-forced-steps", "--checkpoint-every", "--chip", "--backend", "--build",
                            "--guest", "--tokens", "--reference-only"},
                           args->resume, *resumed);
        guest = resumed->guest();
        path = resumed->guest_path;
      } else {
        // A new check owns its folder from here: a failure below never leaves an earlier pass.
        if (!args->report.empty() && !args->reference_only) claim_run_folder_noted(args->report, "story");
        // --models (or $LOCKSTEP_MODELS) picks the checkpoint: the guest built from it.
        std::string model;
        ModelDigests want;
        const char* env = std::getenv("LOCKSTEP_MODELS");
        if (args->guest.empty() && (!ctx.options.models_dir.empty() || (env && *env))) {
          const ModelChoice& choice = ctx.models();  // InputError for a folder that is not usable
          model = choice.synthetic() ? "synthetic" : "real";
          // The converter's own checks, as `lockstep models` makes them: a file it would refuse
          // is bad input here too.
          if (!choice.synthetic()) want = check_model_files(choice);
        }
        path = args->guest.empty() ? find_story_guest(ctx, args->build, model) : fs::path(args->guest);
        guest = engine::read_guest(path);
        // The story check is for a story guest: a guest ELF with symbols but neither story image
        // (stories_c's stories_image, stories_vx's stories_vx_tokens) is another program, which
        // `lockstep run` checks. (A stripped ELF cannot be told apart and is taken as given.)
        const auto& syms = guest.image.symbols;
        if (!args->guest.empty() && !syms.empty() && !syms.count("stories_image") && !syms.count("stories_vx_tokens")) {
          throw InputError("--guest " + args->guest +
                           " is not a story guest (it has neither a stories_image nor a stories_vx_tokens symbol); "
                           "check other guests with " + as_invoked("lockstep run " + format::shell_path(args->guest)));
        }
        std::string manifest_note;
        const std::string built_from = guest_model(path, guest.image, manifest_note);
        guest_built_from = built_from;
        ctx.summary.set("guest_model", built_from);
        if (!manifest_note.empty()) ctx.log().warn("story guest {}: {}", path.string(), manifest_note);
        // Said with the result, so that a run that fails first has its one error line only (found
        // by an outside tester: `story --chip /nonexistent` printed this line first).
        if (!built_from.empty()) guest_note = "story guest " + path.filename().string() + ": built from " + built_from;
        // Only a guest that records its checkpoint can be told to be another one's (stories_c has
        // no manifest: found by an outside tester, every --build c run was warned about)
        // A guest whose manifest records its tokenizer too is checked against the folder's (found
        // by an outside tester: a changed tok512.bin ran with no word).
        const bool other_checkpoint =
            !want.checkpoint_sha256.empty() && built_from.find(want.checkpoint_sha256) == std::string::npos;
        const bool other_tokenizer = !want.tokenizer_sha256.empty() &&
                                     built_from.find("tok512.bin (sha256 ") != std::string::npos &&
                                     built_from.find(want.tokenizer_sha256) == std::string::npos;
        if (!built_from.empty() && (other_checkpoint || other_tokenizer)) {
          // Reconfiguring helps only where the vector build takes the checkpoint.
          const std::string how = args->build == "vx" && !want.vector_build_refusal.empty()
                                      ? "the vector build cannot take that checkpoint (" + want.vector_build_refusal + ")"
                                      : "reconfigure the build with that folder as $LOCKSTEP_MODELS to check it";
          ctx.log().warn("{} {}: its {} not the {} {} was built from ({}); {}",
                         ctx.options.models_dir.empty() ? "$LOCKSTEP_MODELS" : "--models", ctx.models().dir.string(),
                         other_checkpoint && other_tokenizer
                             ? "stories260K.bin (sha256 " + want.checkpoint_sha256 + ") and tok512.bin (sha256 " +
                                   want.tokenizer_sha256 + ") are"
                         : other_checkpoint ? "stories260K.bin (sha256 " + want.checkpoint_sha256 + ") is"
                                            : "tok512.bin (sha256 " + want.tokenizer_sha256 + ") is",
                         other_checkpoint && other_tokenizer ? "checkpoint and tokenizer"
                         : other_checkpoint                  ? "checkpoint"
                                                             : "tokenizer",
                         path.filename().string(), built_from, how);
        }
      }
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    if (args->tokens && !resumed) set_story_tokens(guest.image, args->tokens);
    ctx.summary.set("guest", path.string());
    // named as its report will name it, should it fail or be killed before that
    if (!resumed && !args->report.empty() && !args->reference_only)
      engine::name_claimed_run(args->report, engine::run_identity(path.string(), path.stem().string(), "", args->steps));
    const bool live = !(isatty(1) && engine::stderr_is_terminal()) || args->reference_only;
    std::ostream& out = ctx.out();

    // The reference alone first: the story, its length (for the ETA) and digest.
    const auto t0 = std::chrono::steady_clock::now();
    const engine::StreamResult ref = engine::run_reference(
        guest, resumed ? resumed->steps : args->steps,
        args->reference_only ? std::function<void(char)>([&out](char c) { out << c << std::flush; })
                             : std::function<void(char)>(),
        stop);
    const double ref_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ctx.summary.set("reference_steps", ref.steps);
    ctx.summary.set("reference_digest", ref.digest);
    ctx.summary.set("reference_end", ref.end);
    if (ref.end == "interrupted") throw Interrupted("after " + std::to_string(ref.steps) + " reference steps");
    if (args->reference_only) {
      if (!guest_note.empty()) ctx.log().info("{}", guest_note);
      char line[200];
      std::snprintf(line, sizeof line, "\nreference: %llu steps, end %s, digest %s (%.2f s, %.0f steps/s)\n",
                    static_cast<unsigned long long>(ref.steps), ref.end.c_str(), ref.digest.c_str(), ref_seconds,
                    ref_seconds > 0 ? static_cast<double>(ref.steps) / ref_seconds : 0.0);
      out << line << std::flush;
      // "steps" are the reference's here: nothing was compared, but these steps ran (and
      // reference_only says that no chip did).
      ctx.summary.add_steps(ref.steps);
      ctx.summary.set("digest", ref.digest);
      ctx.summary.set("reference_only", true);
      return;
    }

    engine::CheckRequest req;
    req.command = "story";
    engine::Case& c = req.the_case;
    if (resumed) {
      c = *resumed;
      req.report_dir = args->resume;
      req.resume = true;
    } else {
      c.guest_name = guest.name;
      c.guest_path = path;
      c.chip_path = args->chip;
      c.backend = args->backend;
      if (dut) {
        c.backend = "dut";
        c.dut = args->dut;
      }
      c.mode = engine::Mode::kFree;
      c.teacher_forced_steps = args->teacher_forced;
      c.steps = args->steps;
      c.checkpoint_every = args->checkpoint_every;
      req.report_dir = args->report;
      req.folder_claimed = !args->report.empty() && !args->reference_only;  // claimed above
    }
    // The chip must exist and be able to express every token the story uses.
    // (A chip under test maps every token of trace-v3, checked at its handshake.)
    if (!c.dut) try {
      const engine::LoadedChip chip = engine::load_chip_or_built(c.chip_path);
      if (chip.chip->config.vocab_size <= ref.max_token) {
        throw InputError("the chip (" + chip.source + ") cannot run the story: its vocabulary has " +
                         std::to_string(chip.chip->config.vocab_size) + " token ids, the story uses id " +
                         std::to_string(ref.max_token));
      }
      engine::make_backend(c.backend, chip.chip);
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    if (args->tokens && !resumed) {
      // The case must carry the resized image: embed it.
      c.guest_elf = format::write_elf(guest.image);
    }
    engine::ProgressLine progress(std::cerr, engine::stderr_is_terminal());
    req.options.stop = stop;
    req.options.progress_interval = progress.interval();
    req.options.expected_rounds = ref.steps;
    req.options.on_progress = [&progress](const engine::Progress& p) { progress.update(p); };
    std::string story;
    // Without a terminal, progress comes as whole lines on stderr, which may be where the story
    // goes too (--json, or 2>&1): the story is then printed a whole line at a time, so that no
    // progress line lands inside one of its lines (found by an outside tester).
    const bool whole_lines = !progress.terminal();
    std::string pending;  // the story's line not printed yet (whole_lines)
    req.on_output = [&](std::size_t, char ch) {
      story += ch;
      progress.output(ch);
      if (!live) return;
      if (!whole_lines) {
        out << ch << std::flush;
        return;
      }
      pending += ch;
      if (ch == '\n') {
        out << pending << std::flush;
        pending.clear();
      }
    };
    req.trap_is_error = true;  // the story's guest ends with exit; a trap is never a pass
    // The story's own fields, in summary.json as on stdout (found by an outside tester: the saved
    // report lacked story_complete, so a CI reading it could not gate on the whole story).
    req.add_to_summary = [&ref, &c, &guest_built_from](nlohmann::json& s, const engine::RunResult& r) {
      // The checkpoint the guest was built from, in the saved report too (found by an outside
      // tester: only a stderr line named it).
      if (!guest_built_from.empty()) s["guest_model"] = guest_built_from;
      s["guest"] = c.guest_path.string();  // as --json says
      s["reference_steps"] = ref.steps;
      s["reference_digest"] = ref.digest;
      s["reference_end"] = ref.end;
      if (c.mode == engine::Mode::kFree)
        s["free_running_steps"] = free_running_steps(c, r);
      s["story_complete"] = story_complete(c, r);
    };
    engine::CheckOutcome res;
    try {
      res = engine::run_check(req, std::cerr);
    } catch (const engine::RunFailed& e) {
      progress.clear();
      out << (live ? pending : story);
      if (!story.empty() && story.back() != '\n') out << "\n";  // the guest's text ends mid-line
      report_partial(ctx, e);
      if (e.report_unwritten) throw ReportError(e.what());
      throw InputError(e.what());
    } catch (const engine::CheckError& e) {
      progress.clear();
      throw InputError(e.what());
    }
    progress.clear();
    if (!res.capability_notes.empty()) ctx.summary.set("capability_notes", res.capability_notes);
    out << (live ? pending : story);
    const engine::RunResult& r = res.result;
    ctx.summary.add_steps(r.steps);
    ctx.summary.add_mismatches(r.mismatches);
    summarise_run(ctx, res.summary);  // as run's --json and summary.json say
    if (r.resumed_from) ctx.summary.set("resumed_from", r.resumed_from);
    if (!r.skipped_checkpoints.empty()) ctx.summary.set("skipped_checkpoints", r.skipped_checkpoints);
    if (!req.report_dir.empty())
      ctx.summary.set("replay", "lockstep replay " + format::shell_path(req.report_dir.string()));
    for (const engine::StreamResult& s : r.streams) summarise_divergence(ctx, s);
    if (!story.empty()) out << "\n";  // after the story's text (none yet: no blank first line)
    if (!guest_note.empty()) ctx.log().info("{}", guest_note);
    print_capability_notes(ctx, res.capability_notes);
    note_chip_fault(ctx, res.chip_fault);
    note_free_running_steps(ctx, c, r);
    out << engine::result_text(r);
    // --steps N below the story's length compares a prefix: say so, so that it never reads as
    // the whole story's pass (the reference ran the same prefix: reference_end "step_limit")
    const bool partial = r.streams.size() == 1 && r.streams[0].end == "step_limit";
    // (a story that diverged in its teacher-forced prefix is a mismatch, not a teacher-forced-only
    // check: found by an outside tester, its last line said "not the story check")
    const bool forced_only = !partial && !r.interrupted && r.mismatches == 0 && c.mode == engine::Mode::kFree &&
                             free_running_steps(c, r) == 0;
    ctx.summary.set("story_complete", story_complete(c, r));
    char line[300];
    std::snprintf(line, sizeof line, "story: %llu steps compared, %llu mismatches, %.0f steps/s%s\n",
                  static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.mismatches),
                  r.steps_per_second,
                  partial         ? "; the story had not ended: stopped at the step limit (--steps), a partial check"
                  : r.interrupted ? "; interrupted before the story's end, a partial check"
                  : forced_only   ? "; every step teacher-forced (--teacher-forced-steps), none free-running: not the story check"
                                  : "");
    out << line << std::flush;
    print_replay_hint(r, req.report_dir);
    if (r.interrupted) {
      const bool resumable = c.checkpoint_every != 0 && !req.report_dir.empty();
      throw Interrupted("after " + std::to_string(r.steps) + " steps" +
                        (resumable ? resume_hint("story", req.report_dir, r.steps) : std::string()));
    }
  });
}

}  // namespace lockstep::cli
