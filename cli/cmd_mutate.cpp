// `lockstep mutate`: the mutation score of the default corpus against mutants of a compiled chip
// (docs/quality.md, "Mutation score"; the generator is mutate/mutants.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "lockstep/reports/files.h"
#include "lockstep/campaign/campaign.h"
#include "lockstep/mutate/mutants.h"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/engine/backend_factory.h"
#include "lockstep/engine/check.h"
#include "lockstep/format/json_text.h"
#include "lockstep/format/shell.h"

namespace lockstep::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct MutateArgs {
  std::string chip, kinds,
      guests =
          "hello,fd2,crc32,memops,muldiv,mulsweep,mulcarry,alusweep,shiftsweep,ldstsweep,zba,zbasweep,sort,selfcheck,bignum_fact,"
          "bignum_fib,bignum_pow,"
          "bignum_fact_soft,bignum_fib_soft,bignum_pow_soft",
      report, save_survivors, ops;
  std::uint64_t seed = 0, first = 0, mutants = 20, program_seed = 1, oracle_program_seed = 0;
  std::uint64_t corpus_programs = 96, corpus_steps = 20000, oracle_programs = 384, oracle_steps = 100000,
                corpus_pool = 1000;
  double target = 0.99, timeout_factor = 10, min_timeout = 30;
  bool coverage_gap = false;
  unsigned batch = 32;
};

/// The most fuzz programs a workload may hold (--corpus-programs, --corpus-pool,
/// --oracle-programs): 1,000,000, about 2,600 times the default oracle's.
constexpr std::uint64_t kMaxPrograms = 1'000'000;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}


}  // namespace

void add_mutate_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<MutateArgs>();
  auto* cmd = app.add_subcommand(
      "mutate", "Mutation score: plant faults in copies of a chip and count those the default corpus catches");
  cmd->add_option("--mutants", a->mutants, "Mutants to plant and run")
      ->check(count_range(1, 1'000'000'000))
      ->capture_default_str();
  auto* seed_opt = cmd->add_option("--seed", a->seed, "Seed of the mutants' sites (default: a random one, printed)");
  cmd->add_option("--first", a->first, "Index of the first mutant (repeat mutant K: --first K --mutants 1)");
  auto* kinds_opt = cmd->add_option("--kinds", a->kinds, "Comma-separated fault kinds (default: all 26, in turn)");
  cmd->add_option("--chip", a->chip, "Compiled chip file (default: the built chip)");
  auto* guests_opt =
      cmd->add_option("--guests", a->guests,
                      "Directed guests of the corpus and oracle (given: each must be found; default: those found)")
          ->capture_default_str();
  auto* oracle_seed_opt =
      cmd->add_option("--oracle-program-seed", a->oracle_program_seed,
                      "Campaign seed of the oracle's fuzz programs (default: --program-seed + 1, programs the corpus "
                      "has not seen; equal to --program-seed: the oracle's programs include the corpus's)");
  cmd->add_option("--program-seed", a->program_seed, "Campaign seed of the corpus's (and by default the oracle's) fuzz programs")
      ->capture_default_str();
  cmd->add_option("--ops", a->ops,
                  "Ops of the corpus's and the oracle's fuzz programs, as lockstep fuzz --ops (default: every scalar "
                  "op; all,OP adds a vector op: vmat, vmatr, vq, vexp, vew, vfn, vred, vld; the default corpus "
                  "has no vector instruction, so add them, or --guests vector_ops, to measure the vector unit)");
  // The program counts are bounded: each program is generated and held before anything runs
  // (found by an outside tester: --oracle-programs 1000000000 allocated until memory ran out).
  cmd->add_option("--corpus-programs", a->corpus_programs, "Fuzz programs in the corpus")
      ->check(count_range(0, kMaxPrograms))
      ->capture_default_str();
  cmd->add_option("--corpus-steps", a->corpus_steps, "Steps of each directed guest in the corpus")->capture_default_str();
  cmd->add_option("--corpus-pool", a->corpus_pool,
                  "Also put in the corpus those of programs --corpus-programs..N-1 that fire a decision unit the "
                  "corpus does not (coverage-guided distillation; 0: none)")
      ->check(count_range(0, kMaxPrograms))
      ->capture_default_str();
  cmd->add_option("--oracle-programs", a->oracle_programs, "Fuzz programs in the oracle workload")
      ->check(count_range(0, kMaxPrograms))
      ->capture_default_str();
  cmd->add_option("--oracle-steps", a->oracle_steps, "Steps of each directed guest in the oracle workload")
      ->capture_default_str();
  cmd->add_option("--target", a->target, "Exit 1 when the score is below this fraction")
      ->capture_default_str()
      ->check(fraction_range());
  cmd->add_option("--batch", a->batch, "Guests run together as streams")->capture_default_str();
  cmd->add_option("--timeout-factor", a->timeout_factor,
                  "Budget of a mutant's corpus (oracle) run, as a multiple of the unmodified chip's corpus (oracle) run: "
                  "past it in the corpus the mutant counts as caught (timeout), in the oracle as a survivor (0: no budget)")
      ->capture_default_str();
  cmd->add_option("--min-timeout", a->min_timeout, "Least budget of a run, in seconds (with --timeout-factor)")
      ->capture_default_str();
  cmd->add_option("--report", a->report, "Folder for mutate.json");
  cmd->add_flag("--coverage-gap", a->coverage_gap,
                "Also profile the oracle on the unmodified chip and list the MLP units it fires that the corpus does not "
                "(where survivors can hide)");
  cmd->add_option("--save-survivors", a->save_survivors,
                  "Write each survivor's chip to DIR/mutant-<index>.chip (inspect it with lockstep run GUEST --chip FILE)");
  cmd->callback([&ctx, a, seed_opt, oracle_seed_opt, kinds_opt, guests_opt] {
    // SIGINT/SIGTERM: the mutant being scored is dropped and those scored are written (mutate.json
    // "interrupted"), exit 3; before the first mutant (the corpus's profile), at the next phase.
    const std::atomic<bool>* stop = engine::install_stop_handlers();
    ctx.stop = stop;
    // $LOCKSTEP_CPU_THREADS, checked and obeyed as by run and story: this command makes its CPU
    // executors itself (found by an outside tester: 7 was taken, and 1 still started pipelines).
    try {
      chip::CpuExecutor::set_default_pipelining(engine::cpu_pipelining_from_env());
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    if (oracle_seed_opt->count() == 0) a->oracle_program_seed = a->program_seed + 1;
    const bool same_programs = a->oracle_program_seed == a->program_seed;
    if ((same_programs && a->corpus_programs > a->oracle_programs) || a->corpus_steps > a->oracle_steps)
      throw UsageError("the oracle workload must contain the corpus (--oracle-programs >= --corpus-programs, "
                       "--oracle-steps >= --corpus-steps)");
    if (same_programs && a->corpus_pool > a->oracle_programs)
      throw UsageError("the oracle workload must contain the corpus (--oracle-programs >= --corpus-pool)");
    if (a->batch == 0) throw UsageError("--batch must be at least 1");
    // (found by an outside tester: --first 2^64-1 --mutants 2 wrapped to "mutants ..0" and ran none)
    if (a->first > std::numeric_limits<std::uint64_t>::max() - a->mutants)
      throw UsageError("--first " + std::to_string(a->first) + " + --mutants " + std::to_string(a->mutants) +
                       " is past the mutant indices, 0 .. 2^64 - 2");
    if (!(a->timeout_factor >= 0) || !(a->min_timeout >= 0))
      throw UsageError("--timeout-factor and --min-timeout must be 0 or more");
    std::uint64_t seed = a->seed;
    if (seed_opt->count() == 0) {
      std::random_device rd;
      seed = (static_cast<std::uint64_t>(rd()) << 32 | rd()) & 0xffffffffffffull;
    }
    // mutate.json is replaced when the run starts, by a file that says it has not finished: a run
    // stopped or failed before its result never leaves an earlier run's pass in DIR (found by an
    // outside tester). An earlier run's file is kept beside it as earlier-mutate.json.
    auto write_mutate_json = [&](const json& j) {
      try {
        reports::write_file_text(fs::path(a->report) / "mutate.json", format::json_text(j, 2) + "\n");
      } catch (const std::runtime_error& e) {
        throw InputError(e.what());
      }
    };
    auto not_finished = [&](const std::string& status, const std::string& why) {
      return json{{"status", status},
                  {"interrupted", status == "interrupted"},
                  {"seed", seed},
                  {"mutants", 0},
                  {"score", nullptr},
                  {"resume_with", "--first " + std::to_string(a->first) + " --mutants " + std::to_string(a->mutants)},
                  {"note", why}};
    };
    // A stop before the first mutant: nothing scored, exit 3 (checked between the phases).
    auto stop_before_scoring = [&] {
      if (!stop->load()) return;
      if (!a->report.empty())
        write_mutate_json(not_finished("interrupted", "stopped by a signal before the first mutant was scored"));
      throw Interrupted("before the first mutant was scored (seed " + std::to_string(seed) + ")");
    };
    std::vector<std::string> kinds = split(a->kinds);
    if (kinds_opt->count() && kinds.empty()) throw UsageError("--kinds '" + a->kinds + "' names no fault kind");
    // An empty item is a typing slip, not a kind (found by an outside tester: "a,,b" was taken).
    if (kinds_opt->count() && (a->kinds.front() == ',' || a->kinds.back() == ',' || a->kinds.find(",,") != std::string::npos))
      throw UsageError("--kinds '" + a->kinds + "' has an empty item");
    if (guests_opt->count() && split(a->guests).empty() && a->guests != "none")
      throw UsageError("--guests '" + a->guests + "' names no guest (--guests none: fuzz programs only)");
    // mutate.json's folder, and the survivors', are made and checked before the run, not at the
    // first survivor (found by an outside tester: an unwritable --save-survivors ended a run at
    // its first survivor and lost every result).
    for (const auto& [flag, dir] : {std::pair<const char*, const std::string*>{"--report", &a->report},
                                    {"--save-survivors", &a->save_survivors}}) {
      if (dir->empty()) continue;
      std::error_code ec;
      fs::create_directories(*dir, ec);
      if (ec || ::access(dir->c_str(), W_OK) != 0)
        throw InputError(std::string(flag) + ": cannot write into " + *dir + ": " +
                         (ec ? ec.message() : std::string(std::strerror(errno))));
    }
    for (const std::string& k : kinds) {
      bool known = false;
      for (const auto& mk : mutate::mutant_kinds()) known = known || mk.name == k;
      if (!known) throw UsageError("--kinds: unknown fault kind '" + k + "'");
    }
    if (!a->report.empty()) {
      // The folder is this run's until it ends, as a run folder is a run's: a second command given
      // it is refused (found by an outside tester: two mutate runs on one folder both exited 0, the
      // first's result overwritten).
      try {
        engine::lock_run_folder(a->report);
      } catch (const engine::CheckError& e) {
        throw InputError(std::string("--report: ") + e.what());
      }
      const fs::path mj = fs::path(a->report) / "mutate.json";
      std::error_code ec;
      // An earlier file that scored nothing (a run stopped or failed before its first mutant) is
      // replaced, not kept: earlier-mutate.json keeps the last run with a result (found by an
      // outside tester: two stops in a row left two empty files and lost the finished score).
      bool scored = true;
      try {
        const json earlier = reports::parse_json_text(reports::read_file_text(mj), mj.string());
        scored = !(earlier.is_object() && earlier.value("mutants", json()) == json(0) && earlier.value("score", json(1)).is_null());
      } catch (const std::exception&) {
      }
      if (fs::exists(mj, ec) && !scored) {
        std::cerr << "lockstep: note: the earlier run's " << mj.string() << " scored no mutant: replaced\n";
      } else if (fs::exists(mj, ec)) {
        fs::rename(mj, fs::path(a->report) / "earlier-mutate.json", ec);
        if (ec) throw InputError("--report: cannot move the earlier " + mj.string() + " aside: " + ec.message());
        std::cerr << "lockstep: note: the earlier run's " << mj.string() << " is kept as "
                  << (fs::path(a->report) / "earlier-mutate.json").string() << "\n";
      }
      write_mutate_json(not_finished("unfinished", "lockstep mutate started and did not finish (an error, or killed): "
                                                   "no mutant was scored; a finished run replaces this file"));
    }
    engine::LoadedChip chip;
    try {
      chip = engine::load_chip_or_built(a->chip);
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    // The corpus and the oracle workload (docs/quality.md): directed guests (first K steps) and
    // the fuzz programs 0..P-1 of campaign seed --program-seed over --ops (default: every scalar op).
    std::vector<engine::Guest> directed;
    std::string found, missing;
    for (const std::string& g : a->guests == "none" ? std::vector<std::string>{} : split(a->guests)) {
      bool here = false;
      for (const fs::path& d : ctx.guest_dirs()) {
        std::error_code ec;
        if (!fs::is_regular_file(d / (g + ".elf"), ec)) continue;
        try {
          directed.push_back(engine::read_guest(d / (g + ".elf")));
        } catch (const std::exception& e) {
          throw InputError(e.what());
        }
        found += (found.empty() ? "" : ",") + g;
        here = true;
        break;
      }
      if (!here) missing += (missing.empty() ? "" : ", ") + g;
    }
    // Guests the user named must all be there: a corpus silently smaller than asked for would
    // give a score of another workload.
    if (guests_opt->count() && !missing.empty()) {
      std::string searched;
      for (const fs::path& d : ctx.guest_dirs()) searched += (searched.empty() ? "" : ", ") + d.string();
      throw InputError("--guests: " + missing + " not found (searched " + searched + " for NAME.elf)");
    }
    std::vector<const ref::Encoding*> ops;
    unsigned vew_modes = 0, vfn_fns = 0, vred_modes = 0;  // single modes (vfn.silu) as fuzz takes them
    try {
      ops = campaign::select_ops(a->ops, &vew_modes, &vfn_fns, &vred_modes);
    } catch (const campaign::OpsError& e) {
      throw InputError(e.what());
    }
    // Each program is named with its campaign seed: the corpus's p1 and the oracle's p1 are two
    // programs (found by an outside tester: a survivor "changes a token in p1" named the wrong one).
    auto make_programs = [&](std::uint64_t campaign_seed, std::uint64_t n) {
      std::vector<engine::Guest> v;
      for (std::uint64_t k = 0; k < n; ++k) {
        stop_before_scoring();
        v.push_back(campaign::generate(campaign::program_seed(campaign_seed, k), k, ops, vew_modes, vfn_fns, vred_modes).guest());
        v.back().name = "program " + std::to_string(k) + " of program seed " + std::to_string(campaign_seed);
      }
      return v;
    };
    const std::vector<engine::Guest> programs =
        make_programs(a->program_seed, std::max({a->corpus_programs, a->corpus_pool,
                                                 same_programs ? a->oracle_programs : std::uint64_t{0}}));
    // programs[from, to)
    auto slice = [&programs](std::uint64_t from, std::uint64_t to) {
      return std::vector<engine::Guest>(programs.begin() + static_cast<std::ptrdiff_t>(from),
                                        programs.begin() + static_cast<std::ptrdiff_t>(to));
    };
    mutate::Workload corpus, oracle;
    corpus.parts.push_back({directed, a->corpus_steps});
    corpus.parts.push_back({slice(0, a->corpus_programs), 200000});
    std::size_t distilled = 0;
    if (a->corpus_pool > a->corpus_programs) {
      const std::vector<engine::Guest> pool = slice(a->corpus_programs, a->corpus_pool);
      std::vector<std::size_t> kept;
      try {
        kept = mutate::distill_corpus(chip.chip, corpus, pool, 200000, a->batch, stop);
      } catch (const std::runtime_error& e) {
        throw InputError(e.what());
      }
      stop_before_scoring();
      for (std::size_t i : kept) corpus.parts[1].guests.push_back(pool[i]);
      distilled = kept.size();
    }
    oracle.parts.push_back({directed, a->oracle_steps});
    if (same_programs)
      oracle.parts.push_back({slice(0, a->oracle_programs), 200000});
    else
      oracle.parts.push_back({make_programs(a->oracle_program_seed, a->oracle_programs), 200000});
    // "0..N-1", or "none" for an empty range
    auto indices = [](std::uint64_t from, std::uint64_t to) {
      return to > from ? std::to_string(from) + ".." + std::to_string(to - 1) : std::string("none");
    };
    std::ostream& out = ctx.out();
    out << "lockstep mutate: seed " << seed << " (repeat with --seed " << seed << "), mutants " << a->first << ".."
        << a->first + a->mutants - 1 << " of chip " << chip.source << " (" << chip.hash << ")\n"
        << "  corpus: directed guests "
        << (!found.empty() ? found : a->guests == "none" ? std::string("none (--guests none)") : std::string("(none found)"))
        << " (first " << a->corpus_steps
        << " steps) + fuzz programs " << indices(0, a->corpus_programs) << " of program seed " << a->program_seed
        << (a->corpus_pool > a->corpus_programs
                ? " + " + std::to_string(distilled) + " of programs " + indices(a->corpus_programs, a->corpus_pool) +
                      " that fire new decision units"
                : std::string())
        << "; oracle: the same guests' first " << a->oracle_steps << " steps + programs " << indices(0, a->oracle_programs)
        << " of program seed " << a->oracle_program_seed << "; teacher-forced\n"
        << std::flush;
    mutate::ActivityProfile profile;
    try {
      profile = mutate::profile_workload(chip.chip, corpus);
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    stop_before_scoring();
    std::size_t live = 0;
    for (const auto& [l, s] : profile.live_units) live += s.size();
    out << "  profile of the corpus: " << live << " live MLP units, heads writing in " << profile.live_heads.size()
        << " layers, " << profile.consumed.size() << " tokens fed, " << profile.produced.size() << " predicted\n"
        << std::flush;
    json gap_json;
    if (a->coverage_gap) {
      mutate::ActivityProfile op;
      try {
        op = mutate::profile_workload(chip.chip, oracle);
      } catch (const std::runtime_error& e) {
        throw InputError(e.what());
      }
      std::size_t total = 0, oracle_live = 0;
      std::string by_layer;
      gap_json = json::object();
      for (const auto& [l, units] : op.live_units) {
        oracle_live += units.size();
        const auto it = profile.live_units.find(l);
        json list = json::array();
        for (std::uint32_t u : units)
          if (it == profile.live_units.end() || !it->second.count(u)) list.push_back(u);
        if (list.empty()) continue;
        total += list.size();
        by_layer += (by_layer.empty() ? "" : ", ") + std::string("layer ") + std::to_string(l) + ": " +
                    std::to_string(list.size());
        gap_json[std::to_string(l)] = list;
      }
      out << "  coverage gap: the oracle fires " << oracle_live << " MLP units, " << total
          << " of them never fire in the corpus" << (by_layer.empty() ? "" : " (" + by_layer + ")") << "\n"
          << std::flush;
    }
    mutate::MutationOptions mo;
    mo.seed = seed;
    mo.first = a->first;
    mo.count = a->mutants;
    mo.kinds = kinds;
    mo.batch = a->batch;
    mo.save_survivors = a->save_survivors;
    mo.timeout_factor = a->timeout_factor;
    mo.min_timeout_seconds = a->min_timeout;
    mo.stop = stop;
    stop_before_scoring();
    const mutate::MutationReport rep = mutate::run_mutants(
        chip.chip, profile, corpus, oracle, mo, [&](const mutate::MutantResult& m) {
          out << "mutant " << m.index << " " << m.kind << ": ";
          if (!m.planted) out << "not planted (" << m.error << ")\n";
          else
            out << m.target << " -> "
                << (m.timed_out == "corpus" ? "caught (timeout: the corpus ran past its budget, in " + m.caught_by + ")"
                    : m.caught              ? "caught (" + m.caught_by + ")"
                    : m.timed_out == "oracle"
                        ? "SURVIVED (timeout: the oracle ran past its budget, in " + m.changed_in + "; counted as a survivor)"
                    : m.non_equivalent ? "SURVIVED (changes a token in " + m.changed_in + " at step " +
                                             std::to_string(m.changed_at) + ")"
                                       : std::string("no token changed on the oracle workload"))
                << "\n";
          out << std::flush;
        });
    char score[64] = "undefined";
    if (rep.non_equivalent) std::snprintf(score, sizeof score, "%.1f%%", 100 * rep.score());
    char line[480];
    // A mutant that ran past a budget is counted as changing a token, not seen to: said so (found
    // by an outside tester: 9 timeouts read as 9 changed tokens).
    const std::string by_timeout =
        rep.timed_out ? " (" + std::to_string(rep.timed_out) + " of them by running past a budget)" : std::string();
    std::snprintf(line, sizeof line,
                  "mutants %zu (%llu planted): %llu %s a token on the oracle workload%s, %llu of them caught by the "
                  "corpus; %llu %s none; %s %llu/%llu = %s (target %.1f%%); %.1f s; seed %llu\n",
                  rep.mutants.size(), static_cast<unsigned long long>(rep.planted),
                  static_cast<unsigned long long>(rep.non_equivalent), rep.non_equivalent == 1 ? "changes" : "change",
                  by_timeout.c_str(),
                  static_cast<unsigned long long>(rep.caught),
                  static_cast<unsigned long long>(rep.planted - rep.non_equivalent),
                  rep.planted - rep.non_equivalent == 1 ? "changes" : "change",
                  // a stopped run has no score, only one so far (as mutate.json's score_so_far)
                  rep.interrupted ? "mutation score so far" : "mutation score",
                  static_cast<unsigned long long>(rep.caught), static_cast<unsigned long long>(rep.non_equivalent),
                  score, 100 * a->target, rep.seconds, static_cast<unsigned long long>(seed));
    if (rep.interrupted)
      out << "interrupted after " << rep.mutants.size() << " of " << a->mutants << " mutants (those left: --first "
          << a->first + rep.mutants.size() << " --mutants " << a->mutants - rep.mutants.size()
          << "): the score below is of the mutants scored\n";
    out << line;
    if (a->timeout_factor > 0) {
      std::snprintf(line, sizeof line,
                    "  budgets: %gx the unmodified chip's corpus run (%.1f s) and oracle run (%.1f s), at least %g s; "
                    "mutants that ran past one: %llu\n",
                    a->timeout_factor, rep.corpus_seconds, rep.oracle_seconds, a->min_timeout,
                    static_cast<unsigned long long>(rep.timed_out));
      out << line;
    }
    // The options that make the workload differ from the default (a survivor's repeat command).
    std::string workload_options;
    {
      const MutateArgs d;
      auto opt = [&](const char* name, const std::string& v, const std::string& dv) {
        if (v != dv) workload_options += std::string(" ") + name + " " + v;
      };
      opt("--guests", a->guests, d.guests);
      opt("--ops", a->ops, d.ops);
      opt("--program-seed", std::to_string(a->program_seed), std::to_string(d.program_seed));
      opt("--corpus-programs", std::to_string(a->corpus_programs), std::to_string(d.corpus_programs));
      opt("--corpus-pool", std::to_string(a->corpus_pool), std::to_string(d.corpus_pool));
      opt("--corpus-steps", std::to_string(a->corpus_steps), std::to_string(d.corpus_steps));
      if (a->oracle_program_seed != a->program_seed + 1)
        opt("--oracle-program-seed", std::to_string(a->oracle_program_seed), "");
      opt("--oracle-programs", std::to_string(a->oracle_programs), std::to_string(d.oracle_programs));
      opt("--oracle-steps", std::to_string(a->oracle_steps), std::to_string(d.oracle_steps));
      auto num = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%g", v);
        return std::string(b);
      };
      opt("--timeout-factor", num(a->timeout_factor), num(d.timeout_factor));
      opt("--min-timeout", num(a->min_timeout), num(d.min_timeout));
    }
    json survivors = json::array();
    for (const mutate::MutantResult& m : rep.mutants)
      if (m.non_equivalent && !m.caught) {
        const std::string repeat = "lockstep mutate --seed " + std::to_string(seed) + " --first " + std::to_string(m.index) +
                                   " --mutants 1" + (a->kinds.empty() ? "" : " --kinds " + a->kinds) + workload_options +
                                   (a->chip.empty() ? "" : " --chip " + format::shell_path(a->chip));
        out << "  survivor: mutant " << m.index << " " << m.kind << " (site seed " << m.seed << "): " << m.target
            << (m.timed_out.empty() ? "; changes a token in " + m.changed_in + " at step " + std::to_string(m.changed_at)
                                    : "; the oracle ran past its budget in " + m.changed_in)
            << "; repeat: " << repeat
            << (m.saved.empty() ? "" : "; chip: " + m.saved)
            << (m.save_error.empty() ? "" : "; its chip was not saved: " + m.save_error) << "\n";
        json s = m.to_json();
        s["repeat"] = repeat;
        survivors.push_back(s);
      }
    out << std::flush;
    json j = rep.to_json();
    if (rep.non_equivalent == 0) j["score"] = nullptr;  // 0/0: undefined, not 100%
    // A run stopped before its last mutant has no score: what it scored is "score_so_far" (found
    // by an outside tester: "score": 1.0 beside "interrupted": true passed a gate on the score).
    if (rep.interrupted) {
      j["score_so_far"] = j["score"];
      j["score"] = nullptr;
    }
    j["seed"] = seed;
    j["chip"] = chip.source;
    j["chip_hash"] = chip.hash;
    j["target"] = a->target;
    j["survivors"] = survivors;
    if (rep.interrupted)  // the mutants left, as the text says them
      j["resume_with"] = "--first " + std::to_string(a->first + rep.mutants.size()) + " --mutants " +
                         std::to_string(a->mutants - rep.mutants.size());
    if (a->coverage_gap) j["coverage_gap"] = gap_json;
    j["corpus"] = {{"guests", found}, {"guest_steps", a->corpus_steps}, {"programs", a->corpus_programs},
                   {"pool", a->corpus_pool}, {"distilled", distilled},
                   {"program_seed", a->program_seed}, {"ops", a->ops.empty() ? "all" : a->ops}, {"mode", "forced"}};
    j["oracle"] = {{"guests", found}, {"guest_steps", a->oracle_steps}, {"programs", a->oracle_programs},
                   {"program_seed", a->oracle_program_seed}, {"ops", a->ops.empty() ? "all" : a->ops}, {"mode", "forced"}};
    // A run stopped when the target is out of reach, whatever the mutants left would do, has
    // failed: a mismatch, which outranks the interruption (docs/ci.md; found by an outside tester:
    // exit 3 "interrupted" at 4/6 survivors with 4 mutants left of a 99% target).
    const std::uint64_t left = a->mutants - rep.mutants.size();
    const bool unreachable =
        rep.interrupted && rep.non_equivalent > rep.caught &&
        static_cast<double>(rep.caught + left) / static_cast<double>(rep.non_equivalent + left) < a->target;
    // The run's status, as its exit says it (docs/ci.md).
    j["status"] = unreachable                 ? "mismatch"
                  : rep.interrupted           ? "interrupted"
                  : rep.non_equivalent == 0   ? "error"
                  : rep.score() < a->target   ? "mismatch"
                                              : "exact";
    if (!a->report.empty()) {
      std::error_code ec;
      fs::create_directories(a->report, ec);
      write_mutate_json(j);
    }
    for (const char* k : {"seed", "planted", "non_equivalent", "caught", "score", "survivors"}) ctx.summary.set(k, j[k]);
    if (rep.interrupted) {
      if (unreachable) {
        out << "the target can no longer be reached: with every mutant left caught the score would be "
            << rep.caught + left << "/" << rep.non_equivalent + left << "\n"
            << std::flush;
        ctx.summary.add_mismatches(rep.non_equivalent - rep.caught);
      }
      throw Interrupted("after " + std::to_string(rep.mutants.size()) + " of " + std::to_string(a->mutants) +
                        " mutants (seed " + std::to_string(seed) + ")" +
                        (a->report.empty() ? std::string() : "; those scored are in " + (fs::path(a->report) / "mutate.json").string()));
    }
    // No mutant that changes a token: the score is 0/0, nothing was measured, and that is no pass.
    if (rep.non_equivalent == 0) {
      throw InputError("no mutant measured: none of the " + std::to_string(rep.planted) +
                       " planted mutants changes a token on the oracle workload, so the score is undefined (plant more "
                       "--mutants, or widen the oracle)");
    }
    // Exit 1 (status "mismatch", mismatches = survivors) only when the score is below the target.
    if (rep.score() < a->target) ctx.summary.add_mismatches(rep.non_equivalent - rep.caught);
  });
}

}  // namespace lockstep::cli
