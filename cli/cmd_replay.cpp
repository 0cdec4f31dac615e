// `lockstep replay CASE`: runs a saved case again (docs/engine.md, "Cases").
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/dut_options.h"
#include "lockstep/engine/check.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/tokens.h"
#include "lockstep/reports/files.h"
#include "lockstep/reports/report.h"

namespace lockstep::cli {

namespace fs = std::filesystem;

namespace {

// Whether the replay `r` reproduces the recorded result `expect` (case.json's "expect":
// first_divergence, digest, steps, and "interrupted" for a run stopped by SIGINT/SIGTERM). A
// recorded divergence must recur at the same step; a recorded pass must recur with the same step
// count and digest. A recorded run that was interrupted after N steps recorded only its first N
// steps, and the replay runs those alone (bounded in the callback below): it reproduces the run
// when it has no divergence within them and, when recorded, their digest. A replay stopped
// before it could tell has no verdict either way (conclusive false); so has one whose chip failed
// before it could tell (`failed`: the fault, one line).
struct Verdict {
  bool conclusive = false, same = false;
  std::string failed;  ///< the fault that ended the replay before it could tell ("" when none did)
  std::string recorded;  ///< what the case recorded, in words
  std::string differently;  ///< a divergence at the recorded step that is another one, in words
  std::uint64_t steps_run = 0;

  /// The verdict's line, as the terminal, summary.json, the page and the JUnit file give it.
  std::string line() const {
    if (!conclusive)
      return std::string("not conclusive: ") +
             (failed.empty() ? "interrupted" : "the chip failed (" + std::to_string(steps_run) + " steps compared)") +
             " before it could tell; recorded " + recorded;
    return std::string(same ? "the case reproduces" : "the case does NOT reproduce") + ": recorded " + recorded +
           (differently.empty() ? "" : "; " + differently);
  }
};

std::string hex_pc(std::uint32_t pc) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", pc);
  return b;
}

Verdict judge(const nlohmann::json& expect, const engine::RunResult& r, const std::string& failed = "") {
  Verdict v;
  v.steps_run = r.steps;
  v.failed = failed;
  // a replay that failed (its chip died, timed out, answered ERROR) and found nothing tells
  // nothing of the case (found by an outside tester: a chip that died at step 50 of a case
  // recorded at step 100 read "the case does NOT reproduce", reproduced false)
  const bool stopped = r.interrupted || !failed.empty();
  std::uint64_t first = 0;
  const engine::Divergence* div = nullptr;
  for (const engine::StreamResult& s : r.streams)
    if (s.divergence) {
      first = s.divergence->step;
      div = &*s.divergence;
    }
  const std::uint64_t want = expect.value("first_divergence", std::uint64_t{0});
  const bool was_interrupted = expect.value("interrupted", false);
  const bool has_steps = expect.contains("steps") && expect["steps"].is_number_unsigned();
  const std::uint64_t want_steps = has_steps ? expect["steps"].get<std::uint64_t>() : 0;
  const std::string want_digest = expect.value("digest", std::string());
  // a --compare end run whose digests differed and whose divergence was not located (stopped
  // before its bisection, or a bisection whose replay met no wrong token): a divergence somewhere
  // in its first `within` steps. The replay reproduces it by locating one there, or by the same
  // unlocated divergence over the same steps (found by an outside tester: a run that bisected was
  // said to have been stopped, and its replay, unlocated as it was, "does NOT reproduce").
  const std::uint64_t within = expect.value("divergence_within", std::uint64_t{0});
  if (within && !want) {
    v.recorded = "a divergence within the first " + std::to_string(within) + " steps (the digests differed; it was not located)";
    bool unlocated = false;
    for (const engine::StreamResult& s : r.streams) unlocated = unlocated || s.divergence_unlocated;
    if (stopped && first == 0 && !unlocated && r.steps < within) return v;
    v.conclusive = true;
    v.same = (first != 0 && first <= within) || (unlocated && r.steps == within);
    return v;
  }
  // What diverged at that step, where the case records it (cases written before it was recorded
  // have the step alone).
  const bool has_tokens = expect.contains("expected_token") && expect.contains("actual_token");
  const std::uint32_t want_pc = expect.value("pc", std::uint32_t{0});
  const std::uint32_t want_expected = expect.value("expected_token", std::uint32_t{0});
  // null: an id the chip's vocabulary does not map, whose number is actual_chip_id (Case::expect_of)
  const std::uint32_t want_actual =
      has_tokens && expect["actual_token"].is_null()
          ? format::kUnmappedChipId | expect.value("actual_chip_id", std::uint32_t{0})
          : expect.value("actual_token", std::uint32_t{0});
  if (want) {
    v.recorded = "first divergence at step " + std::to_string(want);
    if (has_tokens) {
      const auto named = [&expect](const char* text_key, std::uint32_t id) {
        const std::string text = expect.value(text_key, std::string());
        if (id & format::kUnmappedChipId) return text;  // "unmapped chip id N": no token id
        return (text.empty() ? std::string("token") : text) + " (token " + std::to_string(id) + ")";
      };
      v.recorded += " (pc " + hex_pc(want_pc) + ", " + expect.value("field", std::string("?")) + " expected " +
                    named("expected_text", want_expected) + ", got " + named("actual_text", want_actual) + ")";
    }
  } else if (was_interrupted) {
    v.recorded = "no divergence in the first " + std::to_string(want_steps) + " steps, digest " +
                 (want_digest.empty() ? std::string("?") : want_digest) + " (that run was interrupted there)";
  } else {
    v.recorded = "no divergence" + (has_steps ? ", " + std::to_string(want_steps) + " steps" : std::string()) +
                 ", digest " + (want_digest.empty() ? std::string("?") : want_digest);
  }
  // How far the replay must get to tell: the recorded divergence's step, or the recorded steps.
  const std::uint64_t needed = want ? want : was_interrupted ? want_steps : ~std::uint64_t{0};
  if (stopped && (first == 0 || first > needed) && r.steps < needed) return v;
  v.conclusive = true;
  if (want) {
    v.same = first == want;
    if (v.same && has_tokens && div &&
        (div->pc != want_pc || div->expected != want_expected || div->actual != want_actual ||
         div->field != expect.value("field", std::string()))) {
      v.same = false;
      v.differently = "it diverges at the same step, but differently: pc " + hex_pc(div->pc) + ", " +
                      div->field + " expected " + div->expected_text + " (token " + std::to_string(div->expected) +
                      "), got " + div->actual_text +
                      (div->actual & format::kUnmappedChipId ? std::string() : " (token " + std::to_string(div->actual) + ")");
    }
  } else if (was_interrupted) {
    v.same = (first == 0 || first > want_steps) &&
             (want_digest.empty() || r.steps != want_steps || r.digest == want_digest);
  } else {
    v.same = first == 0 && (!has_steps || r.steps == want_steps) && (want_digest.empty() || r.digest == want_digest);
  }
  return v;
}

// The verdict line of a case without a recorded result (case.json's "expect" is null): the run
// that wrote it failed (its folder's summary.json says "error": found by an outside tester, such a
// run was said to be killed or still running), or did not finish.
std::string no_recorded_result(const fs::path& case_path) {
  std::error_code ec;
  const fs::path folder = fs::is_directory(case_path, ec) ? case_path : case_path.parent_path();
  std::string why = "did not finish: it was killed, or is still running";
  try {
    const nlohmann::json s = reports::parse_json_text(reports::read_file_text(folder / reports::kSummaryFile), "");
    if (s.is_object() && s.value("status", "") == "error" && !engine::is_unfinished_placeholder(s))
      why = "failed: " + (s.contains("error") && s["error"].is_string() ? s["error"].get<std::string>() : "error");
  } catch (const std::exception&) {
    // no readable summary beside it
  }
  return "the case records no result (the run that wrote it " + why +
         "): nothing to compare this replay with; its own result is above";
}

// Prints judge()'s verdict and sets the summary's "reproduced" (absent when not conclusive).
void print_replay_verdict(Context& ctx, const Verdict& v) {
  if (!v.conclusive) {
    ctx.out() << "the replay is not conclusive: interrupted after " << v.steps_run
              << " steps, before it could tell; recorded " << v.recorded << "\n";
    return;
  }
  ctx.summary.set("reproduced", v.same);
  ctx.out() << v.line() << "\n";
  if (!v.differently.empty()) ctx.summary.set("reproduced_note", v.differently);
}

// A replay's --report folder must not be another command's run folder: claiming it would replace
// that run's summary, case and checkpoints (its result, and the resume it allows). A folder whose
// summary.json names another command (run, story, fuzz...) is refused with one line; a new folder,
// or an earlier replay's, is used. Throws InputError.
void refuse_a_run_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::string command;
  try {
    command = reports::parse_json_text(reports::read_file_text(dir / reports::kSummaryFile), (dir / reports::kSummaryFile).string())
                  .value("command", "");
  } catch (const std::exception&) {
    // no summary, or one that is not JSON: nothing there is a run's result
  }
  if (command.empty() || command == "replay") return;
  throw InputError("--report " + dir.string() + ": that is the run folder of a lockstep " + command + " (its report" +
                   (fs::exists(dir / "checkpoints", ec) ? " and checkpoints" : "") +
                   "), which the replay would replace: give the replay a folder of its own");
}

}  // namespace

void add_replay_command(CLI::App& app, Context& ctx) {
  struct Args {
    std::string path, report, backend, chip;
    dut::DutConfig dut;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("replay", "Run a saved case (case.json, or a run folder holding one) again");
  cmd->add_option("case", args->path, "Case file or folder")->required();
  cmd->add_option("--report", args->report, "Write a report of the replay into DIR");
  cmd->add_option("--backend", args->backend, "Override the case's backend: cpu | cuda");
  cmd->add_option("--chip", args->chip,
                  "Run the case on this chip file instead of the one it records (its hash is not checked: a saved "
                  "failure against a fixed chip)");
  add_dut_options(cmd, args->dut);
  add_dut_chip_option(cmd, args->dut);
  cmd->callback([&ctx, args, cmd] {
    const std::atomic<bool>* stop = engine::install_stop_handlers();  // before any work
    ctx.stop = stop;
    // --dut-chip alone replays the case's own chip under test beside the chip file.
    const std::filesystem::path dut_chip = args->dut.chip_file;
    args->dut.chip_file.clear();
    // --dut-timeout, --dut-start-timeout, --dut-vocab and --dut-token-file alone apply to the
    // case's own chip under test (found by an outside tester: --dut-timeout alone was refused,
    // though engine.md says a replay keeps the case's timeouts "unless given again")
    const bool dut = check_dut_options(cmd, args->dut, args->chip, args->backend, true);
    std::vector<std::string> for_recorded;
    if (!dut)
      for (const char* name : {"--dut-timeout", "--dut-start-timeout", "--dut-vocab", "--dut-token-file"})
        if (cmd->count(name) > 0) for_recorded.push_back(name);
    args->dut.chip_file = dut_chip;
    if (!dut_chip.empty() && (!args->chip.empty() || !args->backend.empty()))
      throw UsageError(std::string("--dut-chip goes with a chip under test, not with ") + (args->chip.empty() ? "--backend" : "--chip"));
    if (!args->report.empty()) refuse_a_run_folder(args->report);
    engine::CheckRequest req;
    req.command = "replay";
    engine::CheckOutcome out;
    std::uint64_t interrupted_prefix = 0;  // the recorded steps of an interrupted run's case
    try {
      req.the_case = engine::Case::read(args->path);
      if ((args->backend.empty() ? req.the_case.backend : args->backend) == "cuda" && !dut)
        engine::make_backend("cuda", nullptr);  // an executor this machine lacks fails before any work
      req.chip_named_by = "the case's chip.path (replay --chip FILE runs the case on another)";
      if (!args->backend.empty()) {
        req.the_case.backend = args->backend;
        if (req.the_case.dut) req.the_case.chip_hash.clear();  // the identity of a chip under test
        req.the_case.dut.reset();
      }
      if (!args->chip.empty()) {  // the case on another chip file (found by an outside tester: no way to
                                  // check a saved failure against the fixed chip)
        req.the_case.chip_path = args->chip;
        req.chip_named_by = "--chip";
        req.the_case.chip_hash.clear();
        if (req.the_case.dut) req.the_case.backend = args->backend.empty() ? "cpu" : args->backend;
        req.the_case.dut.reset();
      }
      if (dut) {  // the case on another chip under test (or the same one, reached another way)
        // The case's token map and timeouts stay unless given again (found by the re-test: a
        // replay with --dut dropped the recorded --dut-vocab, and the chip's own ids were read as
        // the spec's: a false "does NOT reproduce").
        dut::DutConfig given = args->dut;
        if (req.the_case.dut) {
          const dut::DutConfig& was = *req.the_case.dut;
          if (cmd->count("--dut-vocab") == 0 && !was.vocab.empty()) {
            given.vocab = was.vocab;
            ctx.log().info("replay: the case's token map --dut-vocab {} is kept (give --dut-vocab to change it)",
                           was.vocab.string());
          }
          if (cmd->count("--dut-timeout") == 0) given.timeout_s = was.timeout_s;
          if (cmd->count("--dut-chip") == 0) {
            given.chip_file = was.chip_file;
            given.chip_file_hash = was.chip_file_hash;
          }
          if (cmd->count("--dut-start-timeout") == 0) given.start_timeout_s = was.start_timeout_s;
        }
        req.the_case.backend = "dut";
        req.the_case.dut = given;
        req.the_case.chip_hash.clear();
      }
      if (!for_recorded.empty()) {
        if (!req.the_case.dut)
          throw UsageError(for_recorded.front() + " needs --dut or --dut-connect (the case replays on the " +
                           req.the_case.backend + " backend, not a chip under test)");
        dut::DutConfig& was = *req.the_case.dut;
        if (cmd->count("--dut-timeout")) was.timeout_s = args->dut.timeout_s;
        if (cmd->count("--dut-start-timeout")) was.start_timeout_s = args->dut.start_timeout_s;
        if (cmd->count("--dut-vocab")) was.vocab = args->dut.vocab;
        if (cmd->count("--dut-token-file")) was.token_file = args->dut.token_file;
      }
      if (!dut && !dut_chip.empty()) {
        if (!req.the_case.dut) {
          throw UsageError("--dut-chip: the case ran on the " + req.the_case.backend +
                           " backend, not a chip under test (give --dut or --dut-connect)");
        }
        req.the_case.dut->chip_file = dut_chip;
        req.the_case.dut->chip_file_hash.clear();  // a file given now is taken as it is
      }
      if (req.the_case.dut && !req.the_case.dut->chip_file.empty() && cmd->count("--dut-chip") == 0)
        req.chip_file_named_by = "the case's dut.chip_file (replay --dut-chip FILE names another)";
      req.the_case.checkpoint_every = 0;
      // A run interrupted after N steps recorded N steps: the replay compares those, not the rest
      // of the guest (found by an outside tester: it ran on past them, a whole story for a story
      // stopped early). `lockstep run --resume DIR` continues the run itself.
      const nlohmann::json& ex = req.the_case.expect;
      if (ex.is_object() && ex.value("interrupted", false) && !ex.contains("first_divergence") &&
          ex.contains("steps") && ex["steps"].is_number_unsigned() && ex["steps"].get<std::uint64_t>() > 0) {
        const std::uint64_t n = ex["steps"].get<std::uint64_t>();
        if (req.the_case.steps == 0 || req.the_case.steps > n) req.the_case.steps = n;
        interrupted_prefix = n;
      }
      // The folder's summary.json carries the verdict as --json does
      // (and the replay's report says which case it replayed and its verdict; found by an outside
      // tester: neither was on its page or in its JUnit file)
      req.add_to_summary = [&req, args](nlohmann::json& s, const engine::RunResult& r) {
        std::error_code ec;
        s["replayed_case"] = fs::absolute(args->path, ec).string();
        if (!req.the_case.expect.is_object()) {
          s["replay_verdict"] = no_recorded_result(args->path);
          return;
        }
        const Verdict v =
            judge(req.the_case.expect, r, s.value("status", std::string()) == "error" ? s.value("error", std::string("failed")) : "");
        s["replay_verdict"] = v.line();
        if (v.conclusive) s["reproduced"] = v.same;
      };
      req.report_dir = args->report;
      req.options.stop = stop;
      out = engine::run_check(req, std::cerr);
    } catch (const engine::RunFailed& e) {
      report_partial(ctx, e);
      // the verdict summary.json has ("not conclusive: the chip failed ..."), on stdout and in
      // --json too (found by the re-test: only the report folder had it)
      for (const char* k : {"replayed_case", "replay_verdict"})
        if (e.summary.contains(k)) ctx.summary.set(k, e.summary[k]);
      if (e.summary.contains("replay_verdict") && e.summary["replay_verdict"].is_string())
        ctx.out() << e.summary["replay_verdict"].get<std::string>() << "\n" << std::flush;
      if (e.report_unwritten) throw ReportError(e.what());
      throw InputError(e.what());
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    print_capability_notes(ctx, out.capability_notes);
    note_chip_fault(ctx, out.chip_fault);
    const engine::RunResult& r = out.result;
    ctx.summary.add_steps(r.steps);
    ctx.summary.add_mismatches(r.mismatches);
    summarise_run(ctx, out.summary);  // as run's --json and summary.json say (found by an outside tester)
    for (const engine::StreamResult& s : r.streams) summarise_divergence(ctx, s);
    ctx.out() << engine::result_text(r);
    const nlohmann::json& expect = req.the_case.expect;
    if (interrupted_prefix) {
      // the recorded run's folder: the case's own, or the folder given
      const fs::path folder = fs::is_directory(args->path) ? fs::path(args->path) : fs::path(args->path).parent_path();
      ctx.out() << "the recorded run was interrupted after " << interrupted_prefix << " steps: the replay compared those"
                << resume_hint(req.the_case.command.empty() ? "run" : req.the_case.command,
                               folder.empty() ? fs::path(".") : folder, interrupted_prefix)
                << "\n";
    }
    if (expect.is_object()) {
      print_replay_verdict(ctx, judge(expect, r));
    } else {
      // A case whose run never recorded its result (killed, or still running; found by an outside
      // tester: exit 0 and no verdict line, as if it had reproduced).
      const std::string line = no_recorded_result(args->path);
      ctx.summary.set("replay_verdict", line);
      ctx.out() << line << "\n";
    }
    // A fuzz case that failed only in its batch (cmd_fuzz.cpp): alone, as here, it passes; the
    // folder's note says how to repeat the batch (found by an outside tester: replay said "the
    // case reproduces: recorded no divergence" and nothing else).
    {
      const fs::path folder = fs::is_directory(args->path) ? fs::path(args->path) : fs::path(args->path).parent_path();
      std::error_code ec;
      // fuzz's notes in a case folder (cmd_fuzz.cpp): the case failed only in its batch, or only
      // in the campaign's chip session (the chip keeps state across RESET); their first line is
      // the warning
      const auto warn_of_note = [&](const char* file, const char* repeats, const char* flag) {
        if (!fs::is_regular_file(folder / file, ec)) return;
        std::string first;
        std::ifstream note(folder / file);
        std::getline(note, first);
        ctx.log().warn("{} ({} says how to repeat {})", first, (folder / file).string(), repeats);
        ctx.summary.set(flag, true);
      };
      warn_of_note("NOT-REPRODUCED-ALONE.txt", "the batch", "failed_only_in_its_batch");
      warn_of_note("NOT-REPRODUCED-IN-A-NEW-SESSION.txt", "the campaign up to it", "failed_only_in_its_session");
    }
    ctx.out() << std::flush;
    if (!req.report_dir.empty()) {
      ctx.summary.set("replay", "lockstep replay " + format::shell_path(req.report_dir.string()));
      print_replay_hint(r, req.report_dir);
    }
    if (r.interrupted) throw Interrupted("after " + std::to_string(r.steps) + " steps");
  });
}

}  // namespace lockstep::cli
