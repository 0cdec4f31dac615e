// Run reports (docs/engine.md, "Reports"): a run's JSON summary rendered as a
// JUnit XML file for CI systems and a self-contained HTML page with plots
// drawn by gnuplot (throughput over the run, steps per instruction class,
// where divergences happened).  Without gnuplot the HTML still renders, and
// says that the plots are missing.
//
// The summary is the JSON object `lockstep run --report DIR` writes as
// DIR/summary.json: status ("exact" | "mismatch" | "error" | "interrupted"),
// steps, mismatches, digest, command, optional error, and "run" (an
// engine::RunResult::to_json(): streams with guest/steps/end/mismatches/
// divergence/class_steps, throughput [[seconds, steps], ...], seconds,
// steps_per_second, interrupted).  Missing fields render as absent.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::reports {

/// File names inside a report folder.
inline constexpr const char* kSummaryFile = "summary.json";
inline constexpr const char* kJUnitFile = "junit.xml";
inline constexpr const char* kHtmlFile = "report.html";

/// One rendered plot.
struct Plot {
  std::string name;   ///< "throughput", "classes", "divergence"
  std::string title;
  std::string svg;    ///< the SVG document (empty when not rendered)
};

/// What write_report produced.
struct ReportFiles {
  std::filesystem::path summary, junit, html;
  std::vector<Plot> plots;
  /// Empty when every plot rendered; else one line saying why not.
  std::string plot_note;
  /// The summary the files were rendered from.
  nlohmann::json summary_json;
};

/// JUnit XML of a summary: one <testsuite> ("lockstep <command> <mode>", e.g.
/// "lockstep run free"; "lockstep <command>" when the summary has no run.mode),
/// one <testcase> per stream, classname "lockstep.<command>.<mode>" (or one for
/// the whole run when there is no stream); a divergence is a <failure>, an error
/// or an interruption an <error>. The file agrees with the status: "mismatch"
/// has at least one <failure>, "error" and "interrupted" at least one <error>
/// (a testcase for the whole run when no stream's says so). An "exact" summary
/// is all green when its fields agree with it, as render_report checks.
std::string junit_xml(const nlohmann::json& summary);

/// The `n` tokens of one instruction as the tail of a "last instructions" line: " T0 T1 ...", each
/// from `token(i)`. Up to 48 tokens all of them; a longer instruction (a VMAT's thousands) shows
/// its first 8, its last 4 and those within 8 of index `at` (the divergent step's; `at >= n`:
/// none), each run left out written " ... (K tokens) ...". The text report and the page share it.
std::string instruction_tokens(std::size_t n, std::size_t at, const std::function<std::string(std::size_t)>& token);

/// Renders the plots of a summary with gnuplot into `work_dir` (data and
/// script files stay there).  Only plots that carry information are drawn:
/// throughput with at least two samples, steps per class with at least two
/// classes, divergences with at least two streams (none: gnuplot is not run,
/// and `note` stays empty when gnuplot is present).  Returns the plots; `note` says why plots are
/// missing (gnuplot not found, or it failed).  $LOCKSTEP_GNUPLOT names the
/// program ("none" disables plotting).
std::vector<Plot> render_plots(const nlohmann::json& summary, const std::filesystem::path& work_dir,
                               std::string& note);

/// The self-contained HTML page (plots inlined as SVG).
std::string html_report(const nlohmann::json& summary, const std::vector<Plot>& plots,
                        const std::string& plot_note);

/// Writes DIR/summary.json, DIR/junit.xml, DIR/report.html (and DIR/plots/), and `also`
/// (file name in DIR → text: fuzz's fuzz.json), as one: all are written to temporary files, then
/// renamed, summary.json last (write_files_text), so a failure (a full disk) leaves every one of
/// them as it was: the run folder's placeholder, status "error", stays its verdict.  Throws
/// std::runtime_error "report: cannot write PATH: REASON" when DIR cannot be written.
ReportFiles write_report(const std::filesystem::path& dir, const nlohmann::json& summary,
                         const std::vector<std::pair<std::string, std::string>>& also = {});

/// Reads DIR/summary.json and writes junit.xml and report.html again.
/// Throws std::runtime_error (one line, naming the file) when DIR is not a
/// folder, or the summary is missing, a directory, unreadable, empty (0
/// bytes: corrupt) or not a JSON object; and (naming the field too) when its
/// status is not one of the four, a count is not a whole number, or a field
/// contradicts the status or the counts: "exact" with a mismatch, a divergence
/// or an interruption anywhere (run.mismatches, run.interrupted,
/// run.streams[i].mismatches / divergence / end), "interrupted" with a
/// mismatch or a divergence, "mismatch" with 0 mismatches, or run.mismatches
/// and the streams' mismatches that do not add up to "mismatches".
ReportFiles render_report(const std::filesystem::path& dir);

}  // namespace lockstep::reports
