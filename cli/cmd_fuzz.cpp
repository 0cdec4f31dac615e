// `lockstep fuzz`: reproducible random programs through the reference and a
// chip in lock-step, coverage of what the reference executed, and every
// mismatch shrunk and saved as a replayable case (fuzz/README.md).
#include <algorithm>
#include <csignal>
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <atomic>
#include <functional>
#include <optional>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/dut_options.h"
#include "lockstep/campaign/campaign.h"
#include "lockstep/format/shell.h"
#include "lockstep/mutate/decisions.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/elf.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/reports/files.h"
#include "lockstep/reports/report.h"
#include "lockstep/format/json_text.h"

namespace lockstep::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct FuzzArgs {
  std::string ops, chip, backend = "cpu", mode = "both", report, shard = "0/1", time, length;
  std::uint64_t seed = 0, programs = 0, first = 0, max_failures = 0;
  unsigned batch = 32, shrink_runs = 4000, shrink_per_class = 3, trap_every = 4;
  double shrink_seconds = 120;
  bool no_shrink = false;
  std::vector<std::string> merge;
  dut::DutConfig dut;
};

// Whether all of `t` is a whole number that fits v (std::from_chars: digits only, no sign, space
// or other text); v holds it then.
template <class T>
bool whole_number(std::string_view t, T& v) {
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && ec == std::errc() && p == t.data() + t.size();
}

// --length: "N" or "MIN-MAX", a program body's length in items (campaign::DrawOptions::min_body,
// max_body), from 1 to kMaxLength; empty: the generator's default. Throws UsageError otherwise.
constexpr unsigned kMaxLength = 4096;
std::pair<unsigned, unsigned> parse_length(const std::string& text) {
  const campaign::DrawOptions defaults;
  if (text.empty()) return {defaults.min_body, defaults.max_body};
  auto number = [&](std::string_view t, unsigned& v) { return whole_number(t, v) && v >= 1 && v <= kMaxLength; };
  const std::size_t dash = text.find('-');
  unsigned lo = 0, hi = 0;
  const bool ok = dash == std::string::npos
                      ? number(text, lo) && (hi = lo, true)
                      : number(std::string_view(text).substr(0, dash), lo) && number(std::string_view(text).substr(dash + 1), hi);
  if (!ok || lo > hi)
    throw UsageError("--length: must be N or MIN-MAX, whole numbers from 1 to " + std::to_string(kMaxLength) +
                     " with MIN <= MAX (got '" + text + "')");
  return {lo, hi};
}

// `--time`: seconds, minutes or hours, more than 0 and at most a year (std::from_chars: no sign,
// no space, and "nan" / "inf" refused by the range check).
double parse_duration(const std::string& text) {
  if (text.empty()) return 0;
  const std::string line = "--time must be a duration more than 0 and at most 8760h, such as 90, 90s, 5m or 2h (got '" +
                           text + "')";
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc()) throw UsageError(line);
  const std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  double scale = 1;
  if (unit == "" || unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else throw UsageError(line);
  if (!std::isfinite(v) || !(v > 0) || v * scale > 8760.0 * 3600) throw UsageError(line);
  return v * scale;
}

// `--shard mpi`: this process's rank and the number of ranks from Open MPI's environment
// (mpirun sets OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE in every process it starts).
std::pair<std::uint64_t, std::uint64_t> mpi_shard() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!r || !n)
    throw UsageError("--shard mpi: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE are not set (run it under Open MPI's mpirun)");
  auto number = [](const char* name, const char* text) {
    std::uint64_t v = 0;
    if (!whole_number(text, v))
      throw UsageError(std::string("--shard mpi: ") + name + " is '" + text + "', not a whole number");
    return v;
  };
  return {number("OMPI_COMM_WORLD_RANK", r), number("OMPI_COMM_WORLD_SIZE", n)};
}

std::pair<std::uint64_t, std::uint64_t> parse_shard(const std::string& text) {
  if (text == "mpi") {
    const auto [i, n] = mpi_shard();
    if (n > 0 && i < n) return {i, n};
    throw UsageError("--shard mpi: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE are not a rank below a size");
  }
  if (const auto slash = text.find('/'); slash != std::string::npos) {
    std::uint64_t i = 0, n = 0;
    if (whole_number(std::string_view(text).substr(0, slash), i) &&
        whole_number(std::string_view(text).substr(slash + 1), n) && n > 0 && i < n)
      return {i, n};
  }
  throw UsageError("--shard must be I/N with 0 <= I < N (got '" + text + "')");
}

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

void write_text(const fs::path& p, const std::string& s) {
  try {
    reports::write_file_text(p, s);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
}

// A merged report's list of shards a bound ended: "FIRST" or "FIRST and K more".
std::string shard_list(const json& shards) {
  return (shards.empty() || !shards[0].is_string() ? std::string("?") : shards[0].get<std::string>()) +
         (shards.size() > 1 ? " and " + std::to_string(shards.size() - 1) + " more" : "");
}

// The options that run a campaign's programs NEXT..END-1: "--first NEXT --programs M", or
// "--first NEXT" alone for a campaign without a last program (--time alone: END is none).
std::string programs_left(std::uint64_t next, std::optional<std::uint64_t> end) {
  return "--first " + std::to_string(next) +
         (end && *end > next ? " --programs " + std::to_string(*end - next) : std::string());
}

// programs_left of fuzz.json's "next" and "end" ("" when it has no "next").
std::string programs_left(const json& fuzz) {
  if (!fuzz.contains("next") || !fuzz["next"].is_number_unsigned()) return "";
  std::optional<std::uint64_t> end;
  if (fuzz.contains("end") && fuzz["end"].is_number_unsigned()) end = fuzz["end"].get<std::uint64_t>();
  return programs_left(fuzz["next"].get<std::uint64_t>(), end);
}

// "; the rest: --first NEXT --programs M" of a campaign a bound ended early (fuzz.json's "next"
// and "end"; "--programs M" left out for a campaign of --time alone, which has no last program).
std::string rest_of_campaign(const json& fuzz) {
  const std::string left = programs_left(fuzz);
  return left.empty() ? "" : "; the rest: " + left;
}

// The line that says --time ended a campaign (fuzz.json with "time_ended": true; a merged one
// names its shards in "time_ended_shards").
std::string time_ended_note(const json& fuzz) {
  const bool bounded = fuzz.contains("end") && fuzz["end"].is_number_unsigned();
  if (fuzz.contains("time_ended_shards") && fuzz["time_ended_shards"].is_array()) {
    const json& shards = fuzz["time_ended_shards"];
    return "--time ended " + std::to_string(shards.size()) + " of the shards" +
           (bounded ? " before their last program: " : " (a campaign of --time alone: they ran until it was up): ") +
           shard_list(shards);
  }
  const std::string programs = fuzz.contains("programs") ? format::json_text(fuzz["programs"]) : "?";
  if (!bounded) return "--time ended the campaign (a campaign of --time alone): " + programs + " programs checked";
  return "--time ended the campaign before its last program: " + programs + " programs checked" +
         rest_of_campaign(fuzz);
}

// The line that says --max-failures ended a campaign (fuzz.json with "max_failures_ended": true; a
// merged one names its shards in "max_failures_shards").
std::string max_failures_note(const json& fuzz) {
  if (fuzz.contains("max_failures_shards") && fuzz["max_failures_shards"].is_array()) {
    const json& shards = fuzz["max_failures_shards"];
    return "--max-failures ended " + std::to_string(shards.size()) + " of the shards before their last program: " +
           shard_list(shards);
  }
  const std::string programs = fuzz.contains("programs") ? format::json_text(fuzz["programs"]) : "?";
  const std::string failing = fuzz.contains("mismatching_runs") ? format::json_text(fuzz["mismatching_runs"]) : "?";
  return "--max-failures ended the campaign after " + failing + " failing runs: " + programs + " programs checked" +
         rest_of_campaign(fuzz);
}

// DIR/summary.json, junit.xml and report.html of a campaign (reports::write_report): the HTML
// shows the opcode x operand-class table and the decision units per layer.
// fuzz.json is written with them, as one (reports::write_report): a report that cannot be written
// whole leaves the folder's placeholders, which say the campaign did not finish.
void write_html(const fs::path& dir, const json& fuzz, std::uint64_t mismatching) {
  // One status everywhere (docs/ci.md): a mismatch outranks an interruption and a chip under
  // test that failed after it (its programs' wrong tokens stand; the fault is kept beside them as
  // "chip_fault"); a failed chip outranks an interruption.
  const bool interrupted = fuzz.value("interrupted", false);
  const bool failed = fuzz.contains("error") && fuzz["error"].is_string();
  json summary = {{"status", mismatching ? "mismatch" : failed ? "error" : interrupted ? "interrupted" : "exact"},
                  {"command", "fuzz"},
                  {"steps", fuzz.value("steps", std::uint64_t{0})},
                  {"mismatches", mismatching},
                  {"chip", fuzz.value("chip", fuzz.value("chip_hash", ""))},
                  {"chip_hash", fuzz.value("chip_hash", "")},
                  // the facts --json gives at its top level, under its names (found by an outside
                  // tester: a dashboard reading summary.json found no backend or seed)
                  {"backend", fuzz.value("backend", json())},
                  {"seed", fuzz.value("seed", json())},
                  {"programs", fuzz.value("programs", json())},
                  {"steps_per_second", fuzz.value("steps_per_second", json())},
                  {"coverage", fuzz.value("coverage", json::object())},
                  {"decision_coverage", fuzz.value("decision_coverage", json::object())},
                  {"fuzz", {{"seed", fuzz.value("seed", json())}, {"programs", fuzz.value("programs", json())},
                            {"shard", fuzz.value("shard", json())}, {"mode", fuzz.value("mode", json())},
                            {"failures", fuzz.value("failures", json::array())}}}};
  if (failed) summary[mismatching ? "chip_fault" : "error"] = fuzz["error"];
  for (const char* k : {"missing_shards", "partial_shards", "partial_reason", "time_ended_shards", "max_failures_shards"})
    if (fuzz.contains(k)) summary[k] = fuzz[k];
  // --time ended the campaign (or some shards) before the last program: exit 0, but summary.json
  // and the JUnit case say so as fuzz.json does (found by an outside tester: a CI gate reading
  // summary.json saw a whole campaign in one that left 136 of its 400 programs unrun)
  summary["time_ended"] = fuzz.value("time_ended", false);
  if (summary["time_ended"]) {
    if (fuzz.contains("next") && !fuzz.contains("time_ended_shards")) summary["next"] = fuzz["next"];
    summary["time_ended_note"] = time_ended_note(fuzz);
  }
  if (fuzz.value("max_failures_ended", false)) {
    summary["max_failures_ended"] = true;
    if (fuzz.contains("next") && !fuzz.contains("max_failures_shards")) summary["next"] = fuzz["next"];
    summary["max_failures_note"] = max_failures_note(fuzz);
  }
  summary["run"] = {{"seconds", fuzz.value("seconds", 0.0)}};
  if (interrupted) {
    summary["interrupted"] = true;
    summary["run"]["interrupted"] = true;
    // A campaign is not resumed: the programs it left are run (found by an outside tester: the
    // page said "--resume", which fuzz refuses).
    if (const std::string left = programs_left(fuzz); !left.empty())
      summary["resume_with"] = "run the programs left: lockstep fuzz with --seed " + format::json_text(fuzz["seed"]) +
                               " " + left + " and the campaign's other options";
  }
  // A verdict of the campaign's own: the earlier campaign it replaces goes (engine::claim_run_folder
  // kept it in DIR/earlier-run until now); after an interruption or an error it stays.
  if (!interrupted && !failed)
    if (const std::string note = engine::retire_earlier_run(dir); !note.empty())
      std::cerr << "lockstep: note: " << note << "\n" << std::flush;
  if (const std::string kept = engine::earlier_run_of(dir); !kept.empty()) summary["earlier_run"] = kept;
  try {
    reports::write_report(dir, summary, {{"fuzz.json", format::json_text(fuzz, 2) + "\n"}});
  } catch (const std::exception& e) {
    throw InputError(e.what());
  }
}

// `lockstep fuzz --merge DIR...`: the shards' fuzz.json added up.
void merge_reports(Context& ctx, const std::vector<std::string>& dirs, const std::string& report) {
  json merged;
  campaign::Coverage coverage;
  mutate::DecisionSummary decisions;
  json failures = json::array(), shards = json::array();
  std::uint64_t programs = 0, steps = 0, mismatching = 0;
  double lockstep_seconds = 0;
  std::vector<std::pair<std::uint64_t, std::string>> tsv_rows;  // programs.tsv rows of every shard
  std::string tsv_header;
  bool all_tsv = true;
  std::map<std::string, std::string> seen_files;           // canonical path -> as given
  // A shard may come in pieces: an interrupted shard and its continuation (`--first NEXT`, the
  // hint of its closing line), each piece one report, chained by first = the previous one's next.
  struct Piece {
    std::uint64_t first = 0, next = 0;
    bool interrupted = false, time_ended = false, max_failures_ended = false;
    std::string file;
  };
  std::map<std::uint64_t, std::vector<Piece>> seen_shards;  // shard index -> its pieces
  std::uint64_t campaign_first = UINT64_MAX;                // the lowest first of the pieces
  std::uint64_t shard_count = 0;                           // N of the shards' I/N (0: not yet known)
  std::vector<std::string> partial;                        // shards that ended early (interrupted, a chip fault)
  std::vector<std::string> stopped;                        // of those, the pieces stopped early or programs left out
  std::vector<std::string> time_ended;                     // shards --time ended before their last program
  std::vector<std::string> max_failures_ended;             // shards --max-failures ended before their last program
  std::vector<std::string> errors;                         // "REPORT: ERROR" of shards that ended in an error
  std::error_code rec;
  const fs::path report_canon = report.empty() ? fs::path() : fs::weakly_canonical(report, rec);
  for (const std::string& d : dirs) {
    const fs::path file = fs::is_directory(d) ? fs::path(d) / "fuzz.json" : fs::path(d);
    {
      std::error_code ec;
      const fs::path canon = fs::weakly_canonical(file, ec);
      // the merged report would replace a shard's own results
      if (!report.empty() && !ec && !rec && canon.parent_path() == report_canon)
        throw InputError("--merge: --report " + report + " is the folder of the shard " + d +
                         ": the merged report would replace its results; write it to a folder of its own");
      // a report given twice would be counted twice
      const auto [it, fresh] = seen_files.emplace(ec ? file.string() : canon.string(), d);
      if (!fresh) throw InputError("--merge: " + d + " and " + it->second + " are the same report (" + file.string() + ")");
    }
    std::error_code tec;
    if (const fs::path tsv = file.parent_path() / "programs.tsv"; fs::exists(tsv, tec)) {
      std::string body;
      try {  // bounded and regular only, as every file read back (a device was read forever)
        body = reports::read_file_text(tsv);
      } catch (const std::exception& e) {
        throw InputError(std::string("--merge: ") + e.what());
      }
      std::istringstream tin(body);
      std::string line;
      std::getline(tin, tsv_header);
      while (std::getline(tin, line))
        if (!line.empty()) tsv_rows.emplace_back(std::strtoull(line.c_str(), nullptr, 10), line);
    } else {
      all_tsv = false;
    }
    std::string text;
    try {
      text = reports::read_file_text(file);
    } catch (const std::runtime_error& e) {
      throw InputError(std::string("--merge: ") + e.what());
    }
    json j;
    try {
      j = reports::parse_json_text(text, "--merge: " + file.string());
    } catch (const json::exception& e) {
      throw InputError("--merge: " + file.string() + " is not JSON: " + reports::json_error_text(e));
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    if (!j.is_object() || !j.contains("seed") || !j.contains("coverage"))
      throw InputError("--merge: " + file.string() + " is not a lockstep fuzz report");
    // A merged report has "shards" and no "shard": merging it again would count its programs twice.
    if (!j.contains("shard") || j.contains("shards"))
      throw InputError("--merge: " + file.string() + " is a merged report, not a shard: merge the shards' own reports");
    // A report from before the generator's version was recorded holds other programs under its
    // seed, and coverage of other corners (fewer, one of them counting both orders of INT_MIN and
    // -1): merged, its corners would read as never reached (found by an outside tester).
    if (!j.contains("generator") || j["generator"].is_null())
      throw InputError("--merge: " + file.string() +
                       " records no generator version (written before session 45, by another build of Lockstep): "
                       "merge it with the build that wrote it");
    // The counts the merge adds up and the indices it chains pieces by: whole numbers >= 0, and
    // no more programs than the piece's indices hold (found by an outside tester: a shard without
    // "programs", or with -3, 2.5 or "next" 0, merged as a pass of fewer programs, and a string
    // gave a JSON library's message); the flags are true or false.
    auto whole = [&](const char* key) -> std::uint64_t {
      const auto it = j.find(key);
      if (it == j.end()) throw InputError("--merge: " + file.string() + " has no \"" + key + "\": not a whole lockstep fuzz report");
      if (!it->is_number_unsigned())
        throw InputError("--merge: " + file.string() + ": \"" + key + "\" is " + format::json_text(*it) + ", not a whole number >= 0");
      return it->get<std::uint64_t>();
    };
    auto flag = [&](const char* key) -> bool {
      const auto it = j.find(key);
      if (it == j.end()) return false;
      if (!it->is_boolean()) throw InputError("--merge: " + file.string() + ": \"" + key + "\" is " + format::json_text(*it) + ", not true or false");
      return it->get<bool>();
    };
    const std::uint64_t j_first = whole("first"), j_next = whole("next"), j_programs = whole("programs");
    const std::uint64_t j_steps = whole("steps"), j_mismatching = whole("mismatching_runs");
    if (j_next < j_first || j_programs > j_next - j_first)
      throw InputError("--merge: " + file.string() + " says " + std::to_string(j_programs) + " programs from index " +
                       std::to_string(j_first) + " up to " + std::to_string(j_next) + ": not a whole lockstep fuzz report");
    if (const auto ls = j.find("lockstep_seconds"); ls != j.end() && !(ls->is_number() && ls->get<double>() >= 0))
      throw InputError("--merge: " + file.string() + ": \"lockstep_seconds\" is " + format::json_text(*ls) + ", not a number >= 0");
    const bool j_interrupted = flag("interrupted"), j_time_ended = flag("time_ended"), j_max_failures_ended = flag("max_failures_ended");
    // (a report from before --trap-every drew one program in four to trap)
    const json trap_every = j.value("trap_every", json(4));
    if (merged.is_null()) {
      merged = {{"seed", j["seed"]}, {"generator", j.value("generator", json())}, {"ops", j.value("ops", "")}, {"mode", j.value("mode", "")},
                {"chip", j.value("chip", json())}, {"chip_hash", j.value("chip_hash", "")},
                {"backend", j.value("backend", json())}, {"length", j.value("length", json())},
                {"trap_every", trap_every}, {"first", j.value("first", json())}, {"end", j.value("end", json())}};
    } else {
      // end: the campaign's range of program indices ends there (its --first + --programs); first
      // may differ between the pieces of a shard (checked below)
      // generator: a seed draws other programs under another version of the generator
      for (const char* k : {"seed", "generator", "ops", "mode", "chip_hash", "length", "trap_every", "end"}) {
        const json mine = std::string_view(k) == "trap_every" ? trap_every : j.value(k, json());
        if (merged[k] != mine) {
          throw InputError(std::string("--merge: ") + file.string() + " has another " + k + " (" + format::json_text(mine) +
                           ") than the first report (" + format::json_text(merged[k]) + "): not shards of one campaign");
        }
      }
    }
    // Shards of one campaign: one N, each I once (two copies of one shard would be counted twice).
    if (const auto sh = j.find("shard"); sh != j.end() && sh->is_array() && sh->size() == 2 &&
                                          (*sh)[0].is_number_unsigned() && (*sh)[1].is_number_unsigned()) {
      const std::uint64_t i = (*sh)[0].get<std::uint64_t>(), n = (*sh)[1].get<std::uint64_t>();
      if (n == 0 || i >= n) throw InputError("--merge: " + file.string() + " has shard " + sh->dump() + ", not I/N with I < N");
      if (shard_count && n != shard_count) {
        throw InputError("--merge: " + file.string() + " is shard " + std::to_string(i) + "/" + std::to_string(n) +
                         ", the others are shards of " + std::to_string(shard_count) + ": not shards of one campaign");
      }
      shard_count = n;
      Piece piece;
      piece.first = j_first;
      piece.next = j_next;
      piece.interrupted = j_interrupted;
      piece.time_ended = j_time_ended;
      piece.max_failures_ended = j_max_failures_ended;
      piece.file = file.string();
      for (const Piece& other : seen_shards[i])
        if (other.first == piece.first) {
          throw InputError("--merge: " + file.string() + " and " + other.file + " are both shard " + std::to_string(i) +
                           "/" + std::to_string(n) + " from program " + std::to_string(piece.first) +
                           ": its programs would be counted twice");
        }
      campaign_first = std::min(campaign_first, piece.first);
      seen_shards[i].push_back(piece);
    }
    const bool errored = j.contains("error") && !j["error"].is_null();
    if (errored) partial.push_back(file.string() + " (an error)");
    // A shard that ended in an error (a chip under test that failed) makes the campaign broken,
    // exit 2 as the shard itself did, never merely interrupted (found by an outside tester: the
    // merge exited 3 and dropped the shard's error text).
    if (errored) errors.push_back(file.string() + ": " + (j["error"].is_string() ? j["error"].get<std::string>()
                                                                                 : format::json_text(j["error"])));
    programs += j_programs;
    steps += j_steps;
    mismatching += j_mismatching;
    lockstep_seconds += j.value("lockstep_seconds", 0.0);
    // A failure's case folder is a child of its shard's report folder: named from where the
    // shard is now (the folder given to --merge), not from where the shard ran (found by an
    // outside tester: shards arrive as CI artifacts under other names, and every replay line of
    // the merge named a folder that did not exist).
    for (json f : j.value("failures", json::array())) {
      if (f.contains("case") && f["case"].is_string() && !f["case"].get<std::string>().empty())
        f["case"] = (file.parent_path() / fs::path(f["case"].get<std::string>()).filename()).string();
      failures.push_back(std::move(f));
    }
    shards.push_back({{"report", file.string()}, {"shard", j.value("shard", json())}, {"programs", j_programs},
                      {"time_ended", j_time_ended}});
    try {
      coverage.merge(campaign::Coverage::from_json(j["coverage"]));
    } catch (const json::exception& e) {
      throw InputError("--merge: " + file.string() + ": its \"coverage\" is not a fuzz report's (" + e.what() + ")");
    }
    try {
      decisions.merge(j.contains("decision_coverage")
                          ? mutate::DecisionSummary::from_json(j["decision_coverage"])
                          : mutate::DecisionSummary::unavailable("a report without decision coverage"));
    } catch (const std::invalid_argument& e) {
      throw InputError("--merge: " + file.string() + ": " + e.what());
    }
  }
  std::vector<const ref::Encoding*> ops;
  unsigned vew_modes = 0, vfn_fns = 0, vred_modes = 0;  // the modes the coverage lists (vew.add: ADD's)
  try {
    ops = campaign::select_ops(merged.value("ops", ""), &vew_modes, &vfn_fns, &vred_modes);
  } catch (const campaign::OpsError& e) {
    throw InputError(e.what());
  }
  // Each shard's pieces, by first: chained (a piece starts at the program its predecessor stopped
  // at), never overlapping (counted twice: refused); a gap, or a last piece that stopped early, is
  // a partial campaign. An interrupted piece that a later one continues is not partial.
  if (campaign_first != UINT64_MAX) merged["first"] = campaign_first;
  for (auto& [i, pieces] : seen_shards) {
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.first < b.first; });
    const std::string name = "shard " + std::to_string(i) + "/" + std::to_string(shard_count);
    if (pieces.front().first > campaign_first)
      stopped.push_back(name + " (programs " + std::to_string(campaign_first) + ".." +
                        std::to_string(pieces.front().first - 1) + " not run)");
    for (std::size_t k = 0; k + 1 < pieces.size(); ++k) {
      const Piece &a = pieces[k], &b = pieces[k + 1];
      if (b.first < a.next) {
        throw InputError("--merge: " + b.file + " (" + name + " from program " + std::to_string(b.first) +
                         ") overlaps " + a.file + " (which ran up to program " + std::to_string(a.next) +
                         "): its programs would be counted twice");
      }
      if (b.first > a.next)
        stopped.push_back(name + " (programs " + std::to_string(a.next) + ".." + std::to_string(b.first - 1) +
                          " not run, between " + a.file + " and " + b.file + ")");
    }
    const Piece& last = pieces.back();
    if (last.interrupted) stopped.push_back(last.file + " (interrupted)");
    if (last.time_ended) time_ended.push_back(last.file);
    if (last.max_failures_ended) max_failures_ended.push_back(last.file);
  }
  // Printed once the pieces are known to chain: an overlap is refused before any total is shown
  // (a refused merge printed its totals and then the error).
  std::ostream& out = ctx.out();
  out << coverage.text(ops, vew_modes, vfn_fns, vred_modes) << decisions.text();
  for (const json& f : failures)
    out << "FAIL program " << f.value("index", 0) << " (" << f.value("mode", "") << "): "
        << as_invoked("lockstep replay " + format::shell_path(f.value("case", ""))) << "\n";
  out << "merged " << dirs.size() << " reports: programs " << programs << ", steps compared " << steps
      << ", mismatching runs " << mismatching << "; seed " << format::json_text(merged["seed"]) << "\n"
      << std::flush;
  partial.insert(partial.end(), stopped.begin(), stopped.end());
  // Shards missing from the merge: the campaign is partial, never read as a pass.
  std::string missing;
  json missing_json = json::array();
  for (std::uint64_t i = 0; i < shard_count; ++i)
    if (!seen_shards.count(i)) {
      missing += (missing.empty() ? "" : ",") + std::to_string(i);
      missing_json.push_back(i);
      if (missing_json.size() == 64 && shard_count > 64) {
        missing += ",...";
        break;
      }
    }
  if (!missing.empty()) merged["missing_shards"] = missing_json;
  if (!partial.empty()) merged["partial_shards"] = partial;
  // --time ended some shards before their last program: exact as far as they went (exit 0, as
  // for one campaign), but the merged report says which, as each shard's own does
  merged["time_ended"] = !time_ended.empty();
  if (!time_ended.empty()) {
    merged["time_ended_shards"] = time_ended;
    // a campaign of --time alone (no --programs, "end" null) has no last program: its shards ran
    // until the time was up (found by an outside tester: "before their last program" read wrong)
    out << time_ended_note(merged) << "\n" << std::flush;
  }
  // --max-failures ended some shards (found by the re-test: the merge said nothing of the
  // programs they left; it is a mismatch, exit 1, either way)
  merged["max_failures_ended"] = !max_failures_ended.empty();
  if (!max_failures_ended.empty()) {
    merged["max_failures_shards"] = max_failures_ended;
    out << max_failures_note(merged) << "\n" << std::flush;
  }
  // A partial campaign says so in every place (fuzz.json, summary.json, JUnit, the page), as
  // its exit status does (found by an outside tester: the merged report read "exact").
  merged["interrupted"] = !missing.empty() || !partial.empty();
  // Why it is partial, in the report too (found by an outside tester: summary.json had no
  // missing_shards, and the JUnit case said "interrupted after N steps" of a merge nothing stopped).
  std::string partial_reason;
  if (!missing.empty()) {
    partial_reason = "merged " + std::to_string(seen_shards.size()) + " of the campaign's " + std::to_string(shard_count) +
                     " shards (missing: " + missing + "): a partial campaign";
  } else if (!stopped.empty()) {
    partial_reason = std::to_string(stopped.size()) + " of the " + std::to_string(dirs.size()) +
                     " shards ended before their last program or left programs out (" + stopped.front() +
                     (stopped.size() > 1 ? ", ..." : "") + "): a partial campaign";
  }
  if (!partial.empty()) merged["partial_shards"] = partial;
  if (!partial_reason.empty()) merged["partial_reason"] = partial_reason;
  if (!errors.empty()) {
    std::string text;
    for (const std::string& e : errors) text += (text.empty() ? "" : "; ") + e;
    merged["error"] = text;
    merged["error_shards"] = errors;
  }
  merged["programs"] = programs;
  merged["steps"] = steps;
  merged["mismatching_runs"] = mismatching;
  merged["lockstep_seconds"] = lockstep_seconds;
  merged["failures"] = failures;
  merged["shards"] = shards;
  merged["coverage"] = coverage.to_json();
  merged["decision_coverage"] = decisions.to_json();
  if (!report.empty()) {
    // The merged report's folder is taken as every run folder is: locked, and refused when it
    // holds someone else's files (found by the re-test: a merge wrote over a user's files, and
    // into a folder a running run held).
    try {
      claim_run_folder_noted(report, "fuzz");
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    if (all_tsv && !tsv_rows.empty()) {  // every shard's programs, by index
      std::stable_sort(tsv_rows.begin(), tsv_rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string t = tsv_header + "\n";
      for (const auto& r : tsv_rows) t += r.second + "\n";
      write_text(fs::path(report) / "programs.tsv", t);
    }
    write_html(report, merged, mismatching);
  }
  ctx.summary.add_steps(steps);
  ctx.summary.add_mismatches(mismatching);
  ctx.summary.set("seed", merged["seed"]);
  ctx.summary.set("programs", programs);
  ctx.summary.set("failures", failures);
  ctx.summary.set("coverage", coverage.to_json());
  ctx.summary.set("decision_coverage", decisions.to_json());
  ctx.summary.set("time_ended", merged["time_ended"]);
  if (!time_ended.empty()) ctx.summary.set("time_ended_shards", merged["time_ended_shards"]);
  ctx.summary.set("max_failures_ended", merged["max_failures_ended"]);
  if (!max_failures_ended.empty()) ctx.summary.set("max_failures_shards", merged["max_failures_shards"]);
  if (!errors.empty()) {
    ctx.summary.set("error_shards", errors);
    const std::string what = std::to_string(errors.size()) + " of the " + std::to_string(dirs.size()) +
                             " shards ended in an error (" + errors.front() + (errors.size() > 1 ? "; ..." : "") +
                             "): a broken campaign";
    if (mismatching == 0) throw std::runtime_error(what);
    // its mismatches stand (exit 1), as for one campaign whose chip failed after them
    ctx.summary.set("chip_fault", merged["error"]);
    std::cerr << "lockstep: warn: " << what << "\n" << std::flush;
  }
  if (!missing.empty()) ctx.summary.set("missing_shards", missing_json);
  if (!partial.empty()) ctx.summary.set("partial_shards", partial);
  // Shards that ended in an error were said above (an error, or a warn line beside the
  // mismatches): "interrupted" only for pieces stopped early or programs left out (found by an
  // outside tester: two error shards with mismatches read "lockstep: interrupted:"). Mismatches
  // outrank it (exit 1): then one warn line says the campaign is partial.
  if (!partial_reason.empty()) {
    if (mismatching == 0) throw Interrupted(partial_reason);
    ctx.summary.interrupt(partial_reason);
    std::cerr << "lockstep: warn: " << partial_reason << " (its mismatches stand)\n" << std::flush;
  }
}

struct Failure {
  campaign::Program original;
  engine::Mode mode;
  engine::StreamResult result;
  /// The engine run it failed in: programs first_index..last_index of the shard, `batch_size`
  /// of them, this one as stream `stream` (a chip whose bug depends on the other streams or on
  /// the stream index fails only there).
  std::uint64_t first_index = 0, last_index = 0;
  std::size_t stream = 0, batch_size = 1;
};

// A chip under test that keeps state across RESET (a cache, a slot, a register not cleared)
// fails a program only after others ran in its session. Its case, saved and run in the
// campaign's session, diverges there; `lockstep replay` starts a new session, where it passes
// (found by an outside tester: such a case read "does NOT reproduce", exit 0, and the campaign
// had blamed free-running mode, which ran second). So the first saved case of each class of
// `failures` (fuzz.json's array; those with a case_diverges_at) runs again in a new chip session,
// as replay runs it, once the campaign's session has ended (end_session: a chip may serve one
// session at a time). Each checked failure gets reproduces_in_a_new_session (true, false, or
// null where its case could not run or the check was stopped); the failures of a class whose
// case diverges elsewhere or not at all get a `note`, the campaign-prefix command of
// repeat_session (case folder -> command) as `repeat`, and NOT-REPRODUCED-IN-A-NEW-SESSION.txt
// in their case folders. time_left: the seconds --time (time_arg) leaves, nullopt without it;
// it bounds each case's chip start and answers. fuzz/README.md, "A failure that needs its
// session".
void check_in_a_new_session(json& failures, const std::atomic<bool>* stop,
                            const std::function<std::optional<double>()>& time_left, const std::string& time_arg,
                            const std::function<void()>& end_session,
                            const std::map<std::string, std::string>& repeat_session, std::ostream& out) {
  // signature -> the note its failures get; nullopt: checked, nothing to note
  std::map<std::string, std::optional<std::string>> checked;
  bool stopped = false;
  for (json& failure : failures) {
    const std::string sig = failure.value("signature", "");
    if (checked.count(sig) || !failure.contains("case_diverges_at") ||
        !failure["case_diverges_at"].is_number_unsigned() || failure["case_diverges_at"].get<std::uint64_t>() == 0)
      continue;
    const std::string dir = failure.value("case", "");
    const std::optional<double> left = time_left();
    if (left && *left <= 0) {
      out << "--time " << time_arg << " spent: the saved cases were not run again in a new chip session\n" << std::flush;
      break;
    }
    end_session();
    const std::uint64_t at = failure["case_diverges_at"].get<std::uint64_t>();
    std::uint64_t fresh_at = 0;  // 0: no divergence
    try {
      engine::CheckRequest req;
      req.command = "replay";
      req.the_case = engine::Case::read(dir);
      if (req.the_case.dut) {
        req.the_case.dut->stop = stop;
        if (left) {  // the chip's start and each answer get the time left
          req.the_case.dut->start_timeout_s = std::min(req.the_case.dut->start_timeout_s, std::max(1.0, *left));
          req.the_case.dut->timeout_s = std::min(req.the_case.dut->timeout_s, std::max(1.0, *left));
        }
      }
      req.options.stop = stop;
      const engine::CheckOutcome co = engine::run_check(req, std::cerr);
      if (co.result.interrupted) {
        stopped = true;
        break;
      }
      for (const engine::StreamResult& r : co.result.streams)
        if (r.divergence) fresh_at = r.divergence->step;
    } catch (const std::exception& e) {
      if (stop->load()) {
        stopped = true;
        break;
      }
      out << "  the saved case " << dir << " could not be run in a new chip session: " << format::escape_controls(e.what())
          << "\n" << std::flush;
      failure["reproduces_in_a_new_session"] = nullptr;
      checked[sig] = std::nullopt;
      continue;
    }
    failure["reproduces_in_a_new_session"] = fresh_at == at;
    if (fresh_at == at) {
      checked[sig] = std::nullopt;
      continue;
    }
    const auto r = repeat_session.find(dir);
    const std::string repeat = r == repeat_session.end() ? std::string() : r->second;
    const std::string why =
        "the saved case " + dir + " diverges at step " + std::to_string(at) + " in the campaign's chip session, but " +
        (fresh_at ? "at step " + std::to_string(fresh_at) : std::string("not at all")) +
        " in a new one, as `lockstep replay` runs it: the chip's answers depend on what ran before in its session "
        "(state kept across RESET, or a chip that is not deterministic: `lockstep dut-check` checks both), and the "
        "failure's mode and class may be the order the campaign ran things in (forced before free-running)";
    out << "  " << why << "; repeat the campaign up to it: " << as_invoked(repeat) << "\n" << std::flush;
    write_text(fs::path(dir) / "NOT-REPRODUCED-IN-A-NEW-SESSION.txt", why + ".\nRepeat the campaign up to it: " + repeat + "\n");
    checked[sig] = "the first saved case of its class (" + dir + ") " +
                   (fresh_at ? "diverges at step " + std::to_string(fresh_at) + ", not " + std::to_string(at) + ","
                             : std::string("passes")) +
                   " in a new chip session: the chip's answers depend on what ran before in its session (state kept "
                   "across RESET, or a chip that is not deterministic: lockstep dut-check checks both); repeat the "
                   "campaign up to it: " + repeat;
  }
  if (stopped) {
    // (found by the re-test: a stop here left no word of the check, and no key)
    for (json& failure : failures)
      if (!checked.count(failure.value("signature", ""))) failure["reproduces_in_a_new_session"] = nullptr;
    out << "  the new-session check of the saved cases was stopped before it ended: the failures without "
           "reproduces_in_a_new_session in fuzz.json were not checked\n"
        << std::flush;
  }
  for (json& failure : failures) {
    const auto n = checked.find(failure.value("signature", ""));
    if (n == checked.end() || !n->second) continue;
    failure["note"] = *n->second;
    // the program alone in a new campaign passes as the case does: the campaign up to its batch
    // repeats it (found by the re-test: "repeat" named the program alone)
    if (const auto r = repeat_session.find(failure.value("case", "")); r != repeat_session.end())
      failure["repeat"] = r->second;
    // the class's other cases: their replays will not reproduce them either (the first case's
    // folder has its own file, above)
    const fs::path dir = failure.value("case", "");
    std::error_code ec;
    if (!dir.empty() && fs::is_directory(dir, ec) && !fs::exists(dir / "NOT-REPRODUCED-IN-A-NEW-SESSION.txt", ec))
      write_text(dir / "NOT-REPRODUCED-IN-A-NEW-SESSION.txt", *n->second + ".\n");
  }
}

}  // namespace

void add_fuzz_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<FuzzArgs>();
  auto* cmd = app.add_subcommand(
      "fuzz", "Random programs on the reference and a chip in lock-step; mismatches are shrunk and saved as cases");
  cmd->add_option("--ops", args->ops,
                  "Comma-separated mnemonics or classes to generate (e.g. add,sub,bn.addc or mul; default: every "
                  "scalar op). Vector ops, only when named: vld, vew (= vew.add, vew.mul, vew.muls, vew.rot), vfn "
                  "(= vfn.rsqrt, vfn.recip, vfn.silu), vred (= vred.sumsq, vred.sum, vred.max), vq, vexp, vmat, vmatr, "
                  "or the class vector (all eight)");
  auto* seed_opt = cmd->add_option("--seed", args->seed, "Campaign seed (default: a random one, printed)");
  cmd->add_option("--programs", args->programs, "Programs of the whole campaign (indices FIRST..FIRST+N-1; default 100)")
      ->check(count_range(1, 1'000'000'000'000));
  cmd->add_option("--time", args->time, "Run for this long instead (90, 90s, 5m, 2h); with --programs, whichever ends first");
  cmd->add_option("--length", args->length,
                  "Items in each program's body (instructions, li pairs, vector streams), N or MIN-MAX drawn uniformly "
                  "(default 16-63; at most 4096)");
  cmd->add_option("--trap-every", args->trap_every,
                  "With a vector op: one program in N ends with a vector instruction drawn to trap (default 4; 1: "
                  "every program, for a campaign over an op's trap codes and their edges; 0: none). Another N than "
                  "4 adds or drops the trapping instruction at the end of a program of the seed")
      ->check(count_range(0, 1'000'000));
  cmd->add_option("--first", args->first, "Index of the first program (repeat program K: --first K --programs 1)")
      ->check(count_range(0, 1'000'000'000'000));
  cmd->add_option("--chip", args->chip, "Compiled chip file (default: the built chip)");
  cmd->add_option("--backend", args->backend, "Executor: cpu | cuda")->capture_default_str();
  add_dut_options(cmd, args->dut);
  add_dut_chip_option(cmd, args->dut);
  cmd->add_option("--shard", args->shard,
                  "Run only programs k with k mod N == I; 'mpi': I and N from Open MPI's rank and size, the report "
                  "in REPORT/shard-I")
      ->capture_default_str();
  cmd->add_option("--mode", args->mode, "forced | free | both")->capture_default_str();
  cmd->add_option("--report", args->report,
                  "Folder for fuzz.json, programs.tsv and one case folder per failure (default for failures: "
                  "lockstep-fuzz-<seed>)");
  cmd->add_option("--batch", args->batch, "Programs run together as streams of one engine run")
      ->check(count_range(1, 65536))
      ->capture_default_str();
  CLI::Option* shrink_runs = cmd->add_option("--shrink-runs", args->shrink_runs, "Most candidate runs while shrinking one failure")
      ->check(count_range(0, 100'000'000))
      ->capture_default_str();
  CLI::Option* shrink_time = cmd->add_option("--shrink-time", args->shrink_seconds, "Most seconds spent shrinking one failure")
      ->check(seconds_range(86400))
      ->capture_default_str();
  // A chip wrong in every program need not be shown so a hundred times (found by an outside tester:
  // a campaign of 100 programs spent minutes shrinking the same failure in every one).
  cmd->add_option("--max-failures", args->max_failures,
                  "End the campaign after the batch in which this many runs failed (0: never); the failures past it "
                  "in that batch are saved unshrunk")
      ->check(count_range(0, 1'000'000'000'000))
      ->capture_default_str();
  // The same bug in many programs need not be shrunk in every one (found by an outside tester: a
  // campaign with 78 failing runs spent 84.5 of its 105.7 s shrinking them, on a CPU chip).
  CLI::Option* per_class =
      cmd->add_option("--shrink-per-class", args->shrink_per_class,
                      "Shrink at most this many failing runs of each class (0: every one); the class's others are "
                      "saved as generated")
          ->check(count_range(0, 1'000'000'000))
          ->capture_default_str();
  // A shrinking budget beside --no-shrink is a contradiction, refused (found by an outside tester).
  cmd->add_flag("--no-shrink", args->no_shrink, "Save failing programs as generated")
      ->excludes(shrink_runs)
      ->excludes(shrink_time)
      ->excludes(per_class);
  cmd->add_option("--merge", args->merge,
                  "Add up the fuzz.json of shard folders (counts, failures, coverage) instead of running");
  cmd->callback([&ctx, args, cmd, seed_opt] {
    const std::atomic<bool>* stop = engine::install_stop_handlers();  // before any work (chip loading included)
    if (args->shard == "mpi") {  // the signals mpirun forwards to the ranks (fuzz/README.md, "Under MPI")
      engine::add_stop_signal(SIGUSR1);
      engine::add_stop_signal(SIGUSR2);
    }
    ctx.stop = stop;
    if (!args->merge.empty()) {
      // --merge adds up reports that exist: an option of a campaign to run would be ignored
      for (const CLI::Option* o : cmd->get_options())
        if (o->count() > 0 && o->get_name() != "--merge" && o->get_name() != "--report")
          throw UsageError("--merge adds up existing reports; " + o->get_name() + " does not apply to it");
      merge_reports(ctx, args->merge, args->report);
      return;
    }
    // ---------------------------------------------------------------- input
    std::vector<engine::Mode> modes;
    if (args->mode == "forced") modes = {engine::Mode::kForced};
    else if (args->mode == "free") modes = {engine::Mode::kFree};
    else if (args->mode == "both") modes = {engine::Mode::kForced, engine::Mode::kFree};
    else throw UsageError("--mode must be forced, free or both (got '" + args->mode + "')");
    if (args->backend != "cpu" && args->backend != "cuda")
      throw UsageError("--backend must be cpu or cuda (got '" + args->backend + "')");
    const bool dut = check_dut_options(cmd, args->dut, args->chip, args->backend);
    if (args->batch == 0) throw UsageError("--batch must be at least 1");
    const auto [shard_i, shard_n] = parse_shard(args->shard);
    const double time_limit = parse_duration(args->time);
    std::uint64_t programs = args->programs;
    if (programs == 0 && time_limit == 0) programs = 100;
    // A shard that holds none of the campaign's programs would compare nothing and pass.
    if (programs && args->first + (shard_i + shard_n - args->first % shard_n) % shard_n >= args->first + programs) {
      throw UsageError("--shard " + std::to_string(shard_i) + "/" + std::to_string(shard_n) +
                       " holds none of the campaign's " + std::to_string(programs) + " programs (indices " +
                       std::to_string(args->first) + ".." + std::to_string(args->first + programs - 1) +
                       "): use at most as many shards as programs");
    }
    std::vector<const ref::Encoding*> ops;
    unsigned vew_modes = 0, vfn_fns = 0, vred_modes = 0;
    try {
      ops = campaign::select_ops(args->ops, &vew_modes, &vfn_fns, &vred_modes);
    } catch (const campaign::OpsError& e) {
      throw UsageError(e.what());
    }
    const auto [min_body, max_body] = parse_length(args->length);
    campaign::DrawOptions draw;
    draw.vew_modes = vew_modes;
    draw.vfn_fns = vfn_fns;
    draw.vred_modes = vred_modes;
    draw.min_body = min_body;
    draw.max_body = max_body;
    draw.trap_every = args->trap_every;
    std::uint64_t seed = args->seed;
    if (seed_opt->count() == 0) {
      std::random_device rd;
      seed = (static_cast<std::uint64_t>(rd()) << 32 | rd()) & 0xffffffffffffull;
    }
    if (args->shard == "mpi" && args->report.empty())
      throw UsageError("--shard mpi needs --report DIR (each rank writes DIR/shard-<rank>)");
    const fs::path report = args->report.empty()        ? fs::path("lockstep-fuzz-" + std::to_string(seed))
                            : args->shard == "mpi" ? fs::path(args->report) / ("shard-" + std::to_string(shard_i))
                                                   : fs::path(args->report);
    const bool always_report = !args->report.empty();
    std::ofstream tsv;
    if (always_report) {
      std::error_code ec;
      fs::create_directories(report, ec);
      if (ec) throw InputError("--report: cannot create " + report.string() + ": " + ec.message());
      // A new campaign owns its folder from the start, before the chip is loaded (as run's and
      // story's do): a second command given the folder is refused at once, and an error loading
      // the chip is written there. An earlier campaign's report and case folders move into
      // REPORT/earlier-run, so that none of them is ever read as this campaign's (until it writes
      // its own, the folder says it did not finish); they stay there until this campaign's
      // verdict: one that cannot start, or is stopped, loses nothing (engine::claim_run_folder).
      try {
        claim_run_folder_noted(report, "fuzz");
      } catch (const engine::CheckError& e) {
        throw InputError(e.what());
      }
      // named as its report will name it (its two JUnit cases), should it fail or be killed first
      engine::name_claimed_run(report, {{"fuzz", {{"seed", seed}, {"programs", 0}, {"failures", json::array()}}}});
    }

    engine::LoadedChip chip;
    std::unique_ptr<chip::ChipBackend> backend;  // every batch runs on it (the engine resets each stream)
    try {
      if (dut) {
        args->dut.stop = stop;  // SIGINT/SIGTERM ends a wait for the chip under test's answer
        backend = engine::make_dut_backend(args->dut);
        chip.source = "dut " + args->dut.describe();
        chip.hash = backend->identity();
      } else {
        if (args->backend == "cuda") engine::make_backend("cuda", nullptr);
        chip = engine::load_chip_or_built(args->chip);
        backend = engine::make_backend(args->backend, chip.chip);
      }
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    if (always_report) {  // the campaign begins (its earlier one waits in REPORT/earlier-run until its verdict)
      tsv.open(report / "programs.tsv");
      if (!tsv) throw InputError("--report: cannot write " + (report / "programs.tsv").string() + ": " + std::strerror(errno));
      tsv << "index\tseed\twords\tsteps\tforced\tfree\n";
    }
    // Decision coverage: counted by the backend over every lock-step run of the campaign (not
    // the shrinking runs, which have backends of their own).
    std::string no_decisions;
    // The counts as of the last batch counted: a batch cut short is left out of them as it is of
    // the programs and steps (found by an outside tester: an interrupted campaign had 403,421
    // layer evaluations for 377,584 steps, and its merge more than the campaign run whole).
    chip::DecisionCoverage counted_decisions;
    try {
      backend->set_decision_coverage(true);
      counted_decisions = backend->decision_coverage();
    } catch (const chip::UsageError& e) {
      no_decisions = e.what();
    }
    std::ostream& out = ctx.out();
    const std::string op_names = campaign::ops_list(ops, vew_modes, vfn_fns, vred_modes);
    out << "lockstep fuzz: seed " << seed << " (repeat with --seed " << seed << "), shard " << shard_i << "/"
        << shard_n << ", mode " << args->mode << ", chip " << chip.source << " (" << format::escape_controls(chip.hash) << "), "
        << ops.size() << " ops: " << op_names << "\n"
        << std::flush;

    // ---------------------------------------------------------------- run
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
    campaign::Coverage coverage;
    std::uint64_t steps = 0, done = 0, next = args->first, failing_streams = 0;
    // A batch cut short after it found mismatches: its programs (first, last) are not counted in
    // `done`, its mismatching runs are (the summary line says so: it read "programs 0 ...
    // mismatching runs 1").
    std::optional<std::pair<std::uint64_t, std::uint64_t>> unfinished_with_failures;
    double lockstep_seconds = 0, shrink_seconds = 0;
    // The first index >= k in this shard.
    auto in_shard = [&](std::uint64_t k) { return k + (shard_i + shard_n - k % shard_n) % shard_n; };
    const std::uint64_t end = programs ? args->first + programs : UINT64_MAX;
    json failures = json::array();
    double last_progress = 0;
    bool interrupted = false;
    std::optional<std::uint64_t> resume_at;  // the first program of a batch cut short: fuzz.json's `next`
    bool time_ended = false;  // --time ended the campaign before its last program
    bool failures_ended = false;  // --max-failures ended it before its last program
    std::string fault;  // a chip under test that failed: the campaign ends, its results so far kept
    // A program's step budget: 200,000 for a body of the default length at most, more in
    // proportion for longer ones (--length); a program past it is a generator bug.
    const unsigned default_max_body = campaign::DrawOptions{}.max_body;
    const std::uint64_t max_steps = 200000 * ((max_body + default_max_body - 1) / default_max_body);

    // The options that choose the chip, for repeat commands (the built chip: none).
    std::string chip_options;
    if (dut) {
      chip_options = " " + args->dut.describe();
      if (!args->dut.token_file.empty()) chip_options += " --dut-token-file " + format::shell_path(args->dut.token_file.string());
    } else {
      if (!args->chip.empty()) chip_options += " --chip " + format::shell_path(args->chip);
      if (args->backend != "cpu") chip_options += " --backend " + args->backend;
    }
    const std::string program_options = (args->ops.empty() ? std::string() : " --ops " + format::shell_word(args->ops)) +
                                   (args->length.empty() ? std::string() : " --length " + format::shell_word(args->length)) +
                                   (args->trap_every == 4 ? std::string() : " --trap-every " + std::to_string(args->trap_every));
    // One program alone, as stream 0 of a one-program run.
    auto repeat_alone = [&](std::uint64_t index, const std::string& mode_name) {
      return "lockstep fuzz --seed " + std::to_string(seed) + " --first " + std::to_string(index) +
             " --programs 1 --mode " + mode_name + program_options + chip_options;
    };
    // The engine run a failure happened in: the same programs as the same streams.
    // Programs first..last in the campaign's batches and streams.
    auto repeat_programs = [&](std::uint64_t first, std::uint64_t last, const std::string& mode_name) {
      return "lockstep fuzz --seed " + std::to_string(seed) + " --first " + std::to_string(first) + " --programs " +
             std::to_string(last - first + 1) + " --batch " + std::to_string(args->batch) +
             (shard_n > 1 ? " --shard " + std::to_string(shard_i) + "/" + std::to_string(shard_n) : std::string()) +
             " --mode " + mode_name + program_options + chip_options;
    };
    auto repeat_batch = [&](const Failure& f, const std::string& mode_name) {
      return repeat_programs(f.first_index, f.last_index, mode_name);
    };
    // A saved case's folder -> the campaign's programs up to its batch, in its chip session as it ran
    // them (the chip's history when the failure happened).
    std::map<std::string, std::string> repeat_session;
    std::map<std::string, unsigned> shrunk_in_class;  // signature -> failing runs of it shrunk (or tried)
    auto print_failure = [&](const Failure& f) {
      const engine::Divergence& d = *f.result.divergence;
      out << "FAIL program " << f.original.index << " (program seed " << f.original.seed << ", "
          << engine::to_string(f.mode) << "): step " << d.step << ", pc " << hex(d.pc).substr(10) << " `"
          << d.disassembly << "`, field " << d.field << (d.position.empty() ? "" : " (" + d.position + ")") << ": expected " << d.expected_text << ", got " << d.actual_text
          << "\n"
          << std::flush;
    };
    // Saves a failure's case folder. `without_chip` non-empty (why the chip cannot be used: it
    // failed, or the campaign was interrupted): the original program is saved unshrunk, with its
    // divergence from the campaign, and no chip run (no case.json: it needs the chip's run).
    // The default folder (no --report) is made for the first failure, and owned from then on as
    // --report's is from the start: an earlier campaign's files in it move to earlier-run, and a
    // folder that another lockstep command holds is refused (found by an outside tester: two
    // shards of one seed without --report wrote over each other's fuzz.json, and an earlier
    // campaign's fail-* folders stayed beside the new ones, listed nowhere).
    bool default_claimed = false;
    auto claim_default_folder = [&] {
      if (always_report || default_claimed) return;
      default_claimed = true;
      try {
        claim_run_folder_noted(report, "fuzz");
      } catch (const engine::CheckError& e) {
        throw InputError(std::string(e.what()) + " (the campaign's failures, printed above, are not saved: give --report DIR)");
      }
      engine::name_claimed_run(report, {{"fuzz", {{"seed", seed}, {"programs", 0}, {"failures", json::array()}}}});
    };
    auto save_failure = [&](const Failure& f, const std::string& without_chip) {
      claim_default_folder();
      const std::string mode_name(engine::to_string(f.mode));
      const engine::Divergence& d = *f.result.divergence;
      const std::string batch_repeat = repeat_batch(f, mode_name);
      // The failure's class: the blamed instruction's operation, the token kind and the mode.
      const std::string signature = campaign::failure_signature(d, mode_name);
      const auto mnemonic_of = [](const engine::Divergence& c) {
        const std::string text = campaign::blamed_instruction(c).second;
        return text.substr(0, text.find(' '));
      };
      const std::string mnemonic = mnemonic_of(d);
      campaign::ShrinkResult sr;
      sr.program = f.original;
      sr.original_words = sr.shrunk_words = f.original.instruction_words();
      const fs::path dir = report / ("fail-" + std::to_string(f.original.index) + "-" + mode_name);
      const bool use_chip = without_chip.empty();
      // Why a program that was run by the chip was not shrunk (empty: it was, or was tried)
      std::string kept_whole = use_chip && args->no_shrink ? "--no-shrink" : "";
      if (use_chip && !args->no_shrink && args->shrink_per_class != 0 &&
          shrunk_in_class[signature] >= args->shrink_per_class)
        kept_whole = "--shrink-per-class " + std::to_string(args->shrink_per_class) + ": as many of its class were shrunk";
      if (use_chip && kept_whole.empty()) {
        ++shrunk_in_class[signature];
        campaign::ShrinkOptions so;
        so.max_runs = args->shrink_runs;
        so.max_seconds = args->shrink_seconds;
        if (time_limit > 0) so.max_seconds = std::max(0.0, std::min(so.max_seconds, time_limit - elapsed()));
        so.stop = stop;
        // A candidate counts only when it diverges at the same operation and token kind, the
        // failure's class: a shrink that kept any mismatch drifted to another bug of the chip and
        // was filed under the first one's class (found by an outside tester: a `vq.k` failure
        // shrank to a `vred.max` program, and a re-test: a VY1 bug of vmat to a VY0 one). The step
        // cap leaves room for an original longer than 20,000 steps (the whole program's, not its
        // steps to the divergence: such originals were never shrunk).
        const std::string field = d.field;
        const campaign::SameFailure same = [mnemonic, field, mnemonic_of](const engine::Divergence& c) {
          return mnemonic_of(c) == mnemonic && c.field == field;
        };
        const std::uint64_t cap =
            std::max<std::uint64_t>(20000, 2 * campaign::reference_steps(f.original, max_steps));
        const campaign::FirstFailing oracle = dut ? campaign::chip_oracle(*backend, f.mode, cap, same)
                                                  : campaign::chip_oracle(chip.chip, args->backend, f.mode, cap, same);
        // Every candidate runs alone: a failure that needs its batch would spend the whole
        // budget on candidates that cannot fail, so the original is tried alone first.
        const auto t_alone = clock::now();
        if (oracle({f.original})) {
          sr = campaign::shrink(f.original, oracle, so);
        } else {
          sr.runs = 1;
          sr.seconds = std::chrono::duration<double>(clock::now() - t_alone).count();
          kept_whole = "run alone, the original did not diverge at `" + mnemonic + "`, " + field +
                       ", as it did in its batch";
        }
        shrink_seconds += sr.seconds;
      }
      // The case folder is a run folder of this process from the start (its case run claims it
      // after the files below are in it).
      try {
        engine::lock_run_folder(dir);
      } catch (const engine::CheckError& e) {
        throw InputError(e.what());
      }
      const std::size_t gap_words = sr.program.gap_words();  // a far jump's nops, not in the words
      format::write_elf_file(dir / "program.elf", sr.program.image());
      format::write_elf_file(dir / "original.elf", f.original.image());
      write_text(dir / "program.S", sr.program.listing());
      write_text(dir / "original.S", f.original.listing());
      json info = {{"seed", seed},
                   {"program_index", f.original.index},
                   {"program_seed", f.original.seed},
                   {"ops", op_names},
                   {"mode", mode_name},
                   {"original_words", sr.original_words},
                   {"original_divergence", d.to_json()},
                   {"batch", {{"first_index", f.first_index},
                              {"last_index", f.last_index},
                              {"programs", f.batch_size},
                              {"stream", f.stream}}},
                   {"repeat", repeat_alone(f.original.index, mode_name)},
                   {"repeat_batch", batch_repeat}};
      json failure = {{"index", f.original.index},
                      {"signature", signature},
                      {"program_seed", f.original.seed},
                      {"mode", mode_name},
                      {"case", dir.string()},
                      {"step", d.step},
                      // where, as the text names it (found by an outside tester: the HTML and JUnit
                      // of a campaign named no instruction, field or tokens)
                      {"pc", d.pc},
                      {"pc_hex", d.to_json()["pc_hex"]},
                      {"disassembly", d.disassembly},
                      {"field", d.field},
                      {"position", d.position},
                      {"expected_text", d.expected_text},
                      {"actual_text", d.actual_text},
                      {"original_words", sr.original_words},
                      {"shrunk_words", sr.shrunk_words},
                      {"gap_words", gap_words},
                      {"repeat", repeat_alone(f.original.index, mode_name)},
                      {"repeat_batch", batch_repeat}};
      if (!use_chip) {
        info["not_shrunk"] = failure["not_shrunk"] = without_chip;
        failure["case_diverges_at"] = nullptr;
        write_text(dir / "fuzz.json", format::json_text(info, 2) + "\n");
        // The original program as a case, without running the chip again (it was stopped, or it
        // failed): `lockstep replay DIR` runs it alone and expects the divergence its batch showed
        // (found by an outside tester: these folders had no case.json, and replay refused them).
        engine::Case c;
        c.command = "fuzz";
        c.guest_name = f.original.name;
        c.guest_path = fs::absolute(dir / "original.elf");
        {  // the ELF inside the case, as run_check saves it: the folder replays after it is moved
          const std::vector<std::uint8_t> elf = format::write_elf(f.original.image());
          c.guest_elf.assign(elf.begin(), elf.end());
        }
        c.guest_digest = engine::image_digest(f.original.image());
        c.chip_path = args->chip.empty() ? std::string() : fs::absolute(args->chip).string();
        c.chip_hash = chip.hash;
        c.backend = dut ? std::string("dut") : args->backend;
        if (dut) c.dut = args->dut;
        c.mode = f.mode;
        c.expect = engine::Case::expect_of(d);
        write_text(dir / "case.json", format::json_text(c.to_json(), 2) + "\n");
        out << "  not shrunk (" << without_chip << "): the original program is saved in " << dir.string()
            << " (replay it: " << as_invoked("lockstep replay " + format::shell_path(dir.string()))
            << "); repeat it: " << as_invoked(repeat_alone(f.original.index, mode_name)) << "\n"
            << std::flush;
        failures.push_back(std::move(failure));
        return;
      }
      if (!kept_whole.empty()) info["not_shrunk"] = failure["not_shrunk"] = kept_whole;
      info["shrunk_words"] = sr.shrunk_words;
      info["gap_words"] = gap_words;
      info["shrink_runs"] = sr.runs;
      info["shrink_seconds"] = sr.seconds;
      info["shrink_budget_exhausted"] = sr.budget_exhausted;
      info["shrink_not_alone"] = sr.not_alone;
      write_text(dir / "fuzz.json", format::json_text(info, 2) + "\n");
      // The case (case.json, summary.json, junit.xml, report.html) as `lockstep run --report` writes it.
      engine::CheckRequest req;
      req.command = "fuzz";
      req.the_case.guest_name = sr.program.name;
      req.the_case.guest_path = dir / "program.elf";
      req.the_case.chip_path = args->chip;
      req.the_case.backend = args->backend;
      if (dut) {
        req.the_case.backend = "dut";
        req.the_case.dut = args->dut;
        req.backend = backend.get();  // the campaign's session (the case records how to start it)
      }
      req.the_case.mode = f.mode;
      req.report_dir = dir;
      req.options.classify_window = 64;
      engine::CheckOutcome co;
      try {
        co = engine::run_check(req, std::cerr);
      } catch (const engine::CheckError& e) {
        throw InputError(e.what());
      }
      std::uint64_t at = 0;
      for (const auto& s : co.result.streams)
        if (s.divergence) {
          at = s.divergence->step;
          // The saved case's own divergence (the program shrunk): where the failure record's step,
          // instruction and tokens are the original program's (found by an outside tester: the
          // pages named the original's divergence beside the case's folder, which diverges
          // elsewhere).
          const json cd = s.divergence->to_json();
          failure["case_divergence"] = {{"step", cd.value("step", json())},
                                        {"pc_hex", cd.value("pc_hex", json())},
                                        {"disassembly", cd.value("disassembly", json())},
                                        {"field", cd.value("field", json())},
                                        {"expected_text", cd.value("expected_text", json())},
                                        {"actual_text", cd.value("actual_text", json())}};
        }
      const std::string gap_text =
          gap_words ? " and a gap of " + std::to_string(gap_words) + " nops that a far jump crosses" : std::string();
      if (!kept_whole.empty())
        out << "  not shrunk (" << kept_whole << "): " << sr.original_words << " instruction words" << gap_text;
      else
        out << "  shrunk " << sr.original_words << " -> " << sr.shrunk_words << " instruction words" << gap_text
            << " (" << sr.runs << " candidate runs, " << static_cast<int>(sr.seconds * 10) / 10.0 << " s"
            << (sr.budget_exhausted ? ", budget spent" : "") << ")";
      out << (sr.not_alone ? " (" + std::to_string(sr.not_alone) +
                                 " failed only beside other candidates and were not kept: the chip's bug depends on "
                                 "the streams)"
                           : std::string())
          << "; the saved case "
          << (at ? "diverges at step " + std::to_string(at) : std::string("does NOT diverge")) << "; "
          << as_invoked("lockstep replay " + format::shell_path(dir.string())) << "\n"
          << std::flush;
      if (!at) {
        // Run alone (one stream, stream 0) the program passes: the chip's bug depends on the
        // programs run beside it or on the stream index. The case folder cannot hold a batch, so
        // say so where the user looks (here, fuzz.json, and a note in the folder) and give the
        // command that reruns the very engine run that failed.
        const std::string why =
            "program " + std::to_string(f.original.index) + " fails only in its batch: run alone it passes, but as stream " +
            std::to_string(f.stream) + " of the " + std::to_string(f.batch_size) + " programs " +
            std::to_string(f.first_index) + ".." + std::to_string(f.last_index) +
            " run together it diverged (the chip's bug depends on the other streams or on the stream index; or the "
            "chip is not deterministic)";
        out << "  " << why << "; repeat the batch: " << as_invoked(batch_repeat) << "\n" << std::flush;
        write_text(dir / "NOT-REPRODUCED-ALONE.txt",
                   why + ".\n`lockstep replay` of this folder runs the program alone and passes.\nRepeat the batch: " +
                       batch_repeat + "\n");
        // The case's own pages say it too (found by an outside tester: its report.html read
        // "exact" and nothing else).
        json noted = co.summary;
        noted["note"] = why + "; `lockstep replay` of this folder runs it alone and passes; repeat the batch: " +
                        batch_repeat;
        try {
          reports::write_report(dir, noted);
        } catch (const std::exception& e) {
          throw InputError(e.what());
        }
      }
      failure["case_diverges_at"] = at;
      failure["reproduces_alone"] = at != 0;
      repeat_session[dir.string()] = repeat_programs(args->first, f.last_index, args->mode);
      failures.push_back(std::move(failure));
    };

    // The campaign's fuzz.json: its programs, steps, failures and coverage so far.
    auto campaign_json = [&](double seconds, const mutate::DecisionSummary& decisions) {
      const double pps = lockstep_seconds > 0 ? static_cast<double>(done) / lockstep_seconds : 0;
      const double sps = lockstep_seconds > 0 ? static_cast<double>(steps) / lockstep_seconds : 0;
      return json{{"seed", seed},
                  {"generator", campaign::kGeneratorVersion},
                  {"first", args->first},
                  {"end", programs ? json(args->first + programs) : json()},  // the campaign's indices: [first, end)
                  {"programs", done},
                  {"next", resume_at ? *resume_at : next},
                  {"shard", {shard_i, shard_n}},
                  {"mode", args->mode},
                  {"ops", op_names},
                  {"length", {min_body, max_body}},
                  {"trap_every", args->trap_every},
                  {"chip", chip.source},
                  {"chip_hash", chip.hash},
                  {"backend", dut ? std::string("dut") : args->backend},
                  {"steps", steps},
                  {"mismatching_runs", failing_streams},
                  {"failures", failures},
                  {"seconds", seconds},
                  {"lockstep_seconds", lockstep_seconds},
                  {"programs_per_second", pps},
                  {"steps_per_second", sps},
                  {"program_seed", "campaign::program_seed(seed, index)"},
                  {"interrupted", interrupted},
                  {"time_ended", time_ended},
                  {"max_failures_ended", failures_ended},
                  {"error", fault.empty() ? json() : json(fault)},
                  {"coverage", coverage.to_json()},
                  {"decision_coverage", decisions.to_json()}};
    };
    // A campaign killed (SIGKILL, the out-of-memory killer, a lost node) writes no report; after
    // each whole batch its fuzz.json says how far it came, as an interrupted one's does, so that
    // its programs and failures are kept, `fuzz --merge` takes it and `next` says where the rest
    // begins (found by an outside tester: a campaign killed after 160 of 300 programs left
    // "programs 0" and no fuzz.json). Its own report replaces it at the end.
    double progress_written = -1;  // when write_progress last wrote (elapsed(); -1: never)
    // `all_run`: every program was run and its failures saved (the new-session check of the
    // saved cases, below, is still to come): written whatever the time, not "interrupted".
    auto write_progress = [&](bool all_run) {
      // after the first batch, then at most every 2 s (a campaign of --batch 1 has a batch a
      // millisecond)
      if (!always_report || (!all_run && progress_written >= 0 && elapsed() - progress_written < 2)) return;
      progress_written = elapsed();
      json j = campaign_json(elapsed(), no_decisions.empty() ? mutate::DecisionSummary::from(counted_decisions)
                                                            : mutate::DecisionSummary::unavailable(no_decisions));
      if (all_run) {
        j["unfinished"] = "the campaign's result before the new-session check of its saved cases: a campaign that "
                          "ends writes its own; one that was killed during the check leaves this";
      } else {
        j["interrupted"] = true;
        j["unfinished"] = "the campaign's state after its last whole batch, written while it runs: a campaign that "
                          "ends writes its own; one that was killed leaves this (the rest: " + programs_left(j) + ")";
      }
      write_text(report / "fuzz.json", format::json_text(j, 2) + "\n");
    };
    while (next < end) {
      if (stop->load()) {
        interrupted = true;
        break;
      }
      if (time_limit > 0 && elapsed() >= time_limit) {
        time_ended = next < end;  // programs were left
        break;
      }
      if (args->max_failures > 0 && failures.size() >= args->max_failures) {
        failures_ended = next < end;
        break;
      }
      std::vector<campaign::Program> batch;
      while (batch.size() < args->batch) {
        const std::uint64_t k = in_shard(next);
        if (k >= end || k < next) {  // k < next: wrapped around
          next = end;
          break;
        }
        batch.push_back(campaign::generate(campaign::program_seed(seed, k), k, ops, draw));
        next = k + 1;
      }
      if (batch.empty()) break;
      std::vector<std::string> status(batch.size() * 2, "-");
      std::vector<Failure> fails;
      std::vector<std::uint64_t> prog_steps(batch.size(), 0);
      std::uint64_t batch_steps = 0;
      for (const engine::Mode m : modes) {
        const auto t1 = clock::now();
        std::vector<engine::StreamResult> res;
        try {
          res = campaign::run_lockstep(chip.chip, args->backend, batch, m, max_steps, args->batch, 64, backend.get(),
                                       stop);
        } catch (const engine::CheckError& e) {
          throw InputError(e.what());
        } catch (const std::exception& e) {
          if (stop->load()) {  // stopped mid-batch (a chip under test's wait given up): as between batches
            interrupted = true;
            break;
          }
          if (backend->fault().empty()) throw;
          fault = backend->fault();  // the batch's steps are lost with it; every earlier one is kept
          break;
        }
        lockstep_seconds += std::chrono::duration<double>(clock::now() - t1).count();
        // The chip failed after a divergence of this batch (campaign::run_lockstep): the
        // divergences below stand, and the fault ends the campaign after they are saved.
        // (A wait given up because of a stop is the interruption's, not a fault: below.)
        if (fault.empty() && !stop->load() && !backend->fault().empty()) fault = backend->fault();
        for (std::size_t i = 0; i < res.size(); ++i) {
          batch_steps += res[i].steps;
          prog_steps[i] = std::max(prog_steps[i], res[i].ref_steps);
          // not compared to its end (below), but a divergence it met before the stop stands and is
          // saved (found by an outside tester: a stop in a batch of 32 on a slow chip under test
          // dropped the 64 mismatches it had found)
          if (res[i].end == "interrupted" && res[i].mismatches == 0) continue;
          if (res[i].end == "step_limit")
            throw InputError("program " + std::to_string(batch[i].index) + " (seed " + std::to_string(seed) +
                             ") did not end within " + std::to_string(max_steps) + " steps: a generator bug");
          const bool bad = res[i].mismatches > 0;
          status[2 * i + (m == engine::Mode::kFree)] = bad ? "mismatch" : res[i].end;
          if (bad) {
            ++failing_streams;
            fails.push_back({batch[i], m, res[i], batch.front().index, batch.back().index, i, batch.size()});
          }
        }
        // SIGINT/SIGTERM stops the engine at its next round (found by an outside tester: a batch
        // of long programs ran on for minutes, and a second signal lost every result).
        if (!fault.empty()) break;
        if (res.size() < batch.size() ||
            std::any_of(res.begin(), res.end(), [](const engine::StreamResult& r) { return r.end == "interrupted"; })) {
          interrupted = true;
          break;
        }
      }
      // A chip under test whose answers fell out of step with the requests (a frame sent twice,
      // or unasked): this batch's divergences may be earlier requests' answers read as their own,
      // so they are no finding about the chip and are set aside; the fault ends the campaign as an
      // error (found by an outside tester: a chip that sent one answer twice got a failing case).
      if (!fault.empty() && backend->fault_is_out_of_step() && !fails.empty()) {
        failing_streams -= fails.size();
        fault += "; the " + std::to_string(fails.size()) + (fails.size() == 1 ? " divergence" : " divergences") +
                 " of programs " + std::to_string(batch.front().index) + ".." + std::to_string(batch.back().index) +
                 " found before it " + (fails.size() == 1 ? "is" : "are") +
                 " not reported: an earlier request's answer may have been read as a step's";
        fails.clear();
      }
      // A batch cut short (interrupted, or its chip failed) is not counted: its programs were not
      // all checked in every mode, so `next` (fuzz.json) is its first program, where a campaign
      // continued with --first runs it again; a mismatch it found is still saved below.
      const bool batch_done = fault.empty() && !interrupted;
      if (!batch_done) {
        resume_at = batch.front().index;
        if (!fails.empty()) unfinished_with_failures = {batch.front().index, batch.back().index};
      } else {
        steps += batch_steps;
        for (const campaign::Program& p : batch) coverage.add(p, max_steps);
        done += batch.size();
        if (no_decisions.empty()) counted_decisions = backend->decision_coverage();
        if (tsv.is_open()) {
          for (std::size_t i = 0; i < batch.size(); ++i)
            tsv << batch[i].index << "\t" << batch[i].seed << "\t" << batch[i].instruction_words() << "\t" << prog_steps[i]
                << "\t" << status[2 * i] << "\t" << status[2 * i + 1] << "\n";
          tsv.flush();
        }
      }
      // A chip under test that fails while a failure is shrunk or saved (or an interruption)
      // ends the campaign as it would between batches: this failure and every later one are
      // saved unshrunk, and the report is written.
      for (const Failure& f : fails) {
        print_failure(f);
        // A stop signal during an earlier failure's shrinking ends the shrinking of every later
        // one too: they are saved unshrunk at once (before: each was shrunk and run again, and a
        // campaign with 64 failures went on for minutes after SIGINT or a CI timeout's SIGTERM).
        if (stop->load()) interrupted = true;
        const std::string without_chip = !fault.empty() ? "the chip under test failed: " + fault
                                         : interrupted  ? std::string("interrupted")
                                         // --time bounds the whole campaign, shrinking included (found by an
                                         // outside tester: one batch's shrinking ran 150 s past --time 5)
                                         : time_limit > 0 && elapsed() >= time_limit ? "--time " + args->time + " spent"
                                         : args->max_failures > 0 && failures.size() >= args->max_failures
                                             ? "--max-failures " + std::to_string(args->max_failures) + " reached"
                                             : std::string();
        try {
          save_failure(f, without_chip);
        } catch (const std::exception& e) {
          if (!without_chip.empty()) throw;
          if (stop->load()) {
            interrupted = true;
          } else if (!backend->fault().empty()) {
            fault = backend->fault();
          } else {
            throw;
          }
          save_failure(f, interrupted ? std::string("interrupted") : "the chip under test failed: " + fault);
        }
      }
      if (!fault.empty() || interrupted) break;
      if (next < end) write_progress(false);
      if (elapsed() - last_progress >= 10) {
        last_progress = elapsed();
        std::cerr << "lockstep: progress: " << done << " programs, " << steps << " steps, " << failing_streams
                  << " mismatching, " << static_cast<int>(elapsed()) << " s\n"
                  << std::flush;
      }
    }

    // A chip under test that keeps state across RESET (a cache, a slot, a register not cleared)
    // fails a program only after others ran in its session (check_in_a_new_session).
    if (dut && fault.empty() && !interrupted && !stop->load() && !failures.empty()) {
      write_progress(true);  // the whole campaign's result, should it be killed during the check
      auto time_left = [&]() -> std::optional<double> {
        if (time_limit <= 0) return std::nullopt;
        return time_limit - elapsed();
      };
      // BYE: the campaign's session ends (its decision coverage was read per batch)
      check_in_a_new_session(failures, stop, time_left, args->time, [&] { backend.reset(); }, repeat_session, out);
    }

    // ---------------------------------------------------------------- report
    const double seconds = elapsed();
    const double pps = lockstep_seconds > 0 ? static_cast<double>(done) / lockstep_seconds : 0;
    const double sps = lockstep_seconds > 0 ? static_cast<double>(steps) / lockstep_seconds : 0;
    const mutate::DecisionSummary decisions = no_decisions.empty()
                                                    ? mutate::DecisionSummary::from(counted_decisions)
                                                    : mutate::DecisionSummary::unavailable(no_decisions);
    out << coverage.text(ops, vew_modes, vfn_fns, vred_modes) << decisions.text();
    char line[320];
    std::snprintf(line, sizeof line,
                  "programs %llu (indices %llu.. in shard %llu/%llu, mode %s), steps compared %llu, mismatching "
                  "runs %llu; %.3g programs/s, %.0f steps/s in lock-step (%.1f s; %.1f s shrinking; %.1f s in all); "
                  "seed %llu\n",
                  static_cast<unsigned long long>(done), static_cast<unsigned long long>(args->first),
                  static_cast<unsigned long long>(shard_i), static_cast<unsigned long long>(shard_n),
                  args->mode.c_str(), static_cast<unsigned long long>(steps),
                  static_cast<unsigned long long>(failing_streams), pps, sps, lockstep_seconds, shrink_seconds, seconds,
                  static_cast<unsigned long long>(seed));
    out << line << std::flush;
    if (unfinished_with_failures) {
      out << "the batch of programs " << unfinished_with_failures->first << ".." << unfinished_with_failures->second
          << " did not finish (" << (fault.empty() ? "interrupted" : "the chip under test failed")
          << "): its mismatching runs are counted above, its programs are not\n"
          << std::flush;
    }
    // --time is a budget, not a failure, but the campaign is smaller than --programs asked: say so
    // (found by an outside tester: nothing told it from a whole campaign).
    if (failures_ended) {
      out << "--max-failures " << args->max_failures << " ended the campaign after " << failures.size()
          << " failing runs: " << done << " programs checked; the rest: "
          << programs_left(next, programs ? std::optional<std::uint64_t>(end) : std::nullopt) << "\n"
          << std::flush;
    }
    if (time_ended && programs) {
      out << "--time " << args->time << " ended the campaign before its last program: " << done
          << " programs checked; the rest: " << programs_left(next, end) << "\n"
          << std::flush;
    }
    {
      // failures by class (signature): one line a class when a class holds more than one
      std::map<std::string, std::vector<std::uint64_t>> classes;
      for (const json& f : failures) classes[f.value("signature", "")].push_back(f.value("index", std::uint64_t{0}));
      if (classes.size() < failures.size()) {
        out << "failures by class (the blamed instruction's operation, token kind, mode): " << classes.size()
            << (classes.size() == 1 ? " class in " : " classes in ") << failures.size() << " failing runs\n";
        for (const auto& [sig, idx] : classes) {
          out << "  " << sig << ": " << idx.size() << " (program" << (idx.size() > 1 ? "s " : " ");
          for (std::size_t i = 0; i < idx.size() && i < 8; ++i) out << (i ? ", " : "") << idx[i];
          out << (idx.size() > 8 ? ", ..." : "") << ")\n";
        }
        out << std::flush;
      }
    }
    const json fuzz = campaign_json(seconds, decisions);
    if (always_report || !failures.empty()) {
      try {
        fs::create_directories(report);
        write_html(report, fuzz, failing_streams);  // fuzz.json with it
      } catch (const std::exception& e) {
        // An error (exit 2) whatever the campaign found: stdout says so below its closing line, as
        // run's does (found by an outside tester: stdout ended "mismatching runs 0", the error on
        // stderr alone).
        say_not_recorded(out, e.what());
        throw;
      }
      out << "report: " << (report / "fuzz.json").string() << "\n" << std::flush;
    }
    ctx.summary.add_steps(steps);
    ctx.summary.add_mismatches(failing_streams);
    ctx.summary.set("seed", seed);
    ctx.summary.set("programs", done);
    ctx.summary.set("shard", json::array({shard_i, shard_n}));
    ctx.summary.set("backend", dut ? std::string("dut") : args->backend);  // as run's --json says
    ctx.summary.set("chip", chip.source);  // as run's --json and summary.json say
    ctx.summary.set("chip_hash", chip.hash);
    ctx.summary.set("failures", failures);
    ctx.summary.set("programs_per_second", pps);
    ctx.summary.set("steps_per_second", sps);
    ctx.summary.set("coverage", coverage.to_json());
    ctx.summary.set("decision_coverage", decisions.to_json());
    ctx.summary.set("time_ended", time_ended);
    ctx.summary.set("max_failures_ended", failures_ended);
    if (time_ended || failures_ended) ctx.summary.set("next", next);
    if (always_report || !failures.empty()) ctx.summary.set("report", report.string());
    if (!fault.empty()) {
      const std::string line = fault + " (after " + std::to_string(done) + " programs, seed " + std::to_string(seed) + ")";
      if (failing_streams == 0) throw InputError(line);
      // The mismatches found before the chip failed stand: the campaign is a mismatch (exit 1)
      ctx.summary.set("chip_fault", fault);
      std::cerr << "lockstep: warn: " << line << "; the mismatches found before it stand: the campaign ends as a mismatch\n";
    }
    if (interrupted) {
      const std::uint64_t at = resume_at ? *resume_at : next;
      throw Interrupted("after " + std::to_string(done) + " programs (seed " + std::to_string(seed) + ")" +
                        (programs && at < end ? "; the rest: " + programs_left(at, end)
                         : !programs          ? "; continue with " + programs_left(at, std::nullopt)
                                              : std::string()));
    }
  });
}

}  // namespace lockstep::cli
