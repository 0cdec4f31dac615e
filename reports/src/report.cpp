#include "lockstep/reports/report.h"
#include "lockstep/reports/files.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include "lockstep/format/json_text.h"
#include "lockstep/format/shell.h"

extern char** environ;

namespace lockstep::reports {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The plots share one page: each one's element ids (gnuplot writes gnuplot_canvas, gpPt0, ... in
// every SVG) and the references to them ('#id' in href, url(#id)) get the plot's name as a prefix,
// so that no id repeats in the document (found by an outside tester) and each plot's references
// stay its own.
std::string with_own_ids(const std::string& svg, const std::string& prefix) {
  std::set<std::string> ids;
  for (std::size_t at = svg.find("id="); at != std::string::npos; at = svg.find("id=", at + 3)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(svg[at - 1])) || svg[at - 1] == '-' || svg[at - 1] == '_'))
      continue;  // "gid=", "data-id=": not an id attribute
    if (at + 3 >= svg.size() || (svg[at + 3] != '\'' && svg[at + 3] != '"')) continue;
    const std::size_t end = svg.find(svg[at + 3], at + 4);
    if (end != std::string::npos) ids.insert(svg.substr(at + 4, end - at - 4));
  }
  if (ids.empty()) return svg;
  std::string out;
  out.reserve(svg.size() + 64);
  auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':'; };
  for (std::size_t i = 0; i < svg.size();) {
    // an id attribute's value, or a reference: '#' followed by an id and a quote or ')'
    std::size_t name_at = std::string::npos;
    if (svg.compare(i, 4, "id='") == 0 || svg.compare(i, 4, "id=\"") == 0) {
      if (i == 0 || !is_name(svg[i - 1])) name_at = i + 4;
    } else if (svg[i] == '#') {
      name_at = i + 1;
    }
    if (name_at != std::string::npos) {
      std::size_t e = name_at;
      while (e < svg.size() && is_name(svg[e])) ++e;
      const std::string name = svg.substr(name_at, e - name_at);
      const bool closed = e < svg.size() && (svg[e] == '\'' || svg[e] == '"' || svg[e] == ')');
      if (closed && ids.count(name)) {
        out.append(svg, i, name_at - i);
        out += prefix + "-" + name;
        i = e;
        continue;
      }
    }
    out += svg[i++];
  }
  return out;
}


// Text for XML and HTML: the five special characters as references, control characters XML 1.0
// forbids as '?', and bytes that are not UTF-8 as U+FFFD (found by an outside tester: a report
// folder named with such bytes gave a junit.xml no XML parser accepts).
std::string escape_xml(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = format::utf8_sequence(s, i);
      if (n == 0) {
        o += "\xEF\xBF\xBD";  // U+FFFD
      } else {
        o.append(s, i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        // XML 1.0 forbids most control characters: show them as '?'.
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') o += '?';
        else o += static_cast<char>(c);
    }
  }
  return o;
}

std::string str(const json& j, const char* key, const std::string& def = "") {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return def;
  return j[key].is_string() ? j[key].get<std::string>() : format::json_text(j[key]);
}

// A divergence's trace field with its place in a vector stream when it has one ("VW20 (word
// element 214, byte 0)"; Divergence::position).
std::string field_text(const json& j) {
  const std::string position = str(j, "position");
  return str(j, "field") + (position.empty() ? "" : " (" + position + ")");
}

// A number for people: `digits` decimals for values under 1000, thousands separated by commas
// above (1.61, 8,650); "" when the key is missing or not a number.
std::string num(const json& j, const char* key, int digits) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return str(j, key);
  const double v = j[key].get<double>();
  char buf[64];
  if (std::abs(v) < 1000) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.0f", v);
  std::string digitsonly = buf, out;
  const std::size_t lead = digitsonly[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digitsonly.size(); ++i) {
    if (i > lead && (digitsonly.size() - i) % 3 == 0) out += ',';
    out += digitsonly[i];
  }
  return out;
}

const json& run_of(const json& s) {
  static const json empty = json::object();
  return s.contains("run") && s["run"].is_object() ? s["run"] : empty;
}

json streams_of(const json& s) {
  const json& r = run_of(s);
  return r.contains("streams") && r["streams"].is_array() ? r["streams"] : json::array();
}

// Through reports::write_file_text (replaced whole, through PATH.tmp.PID and a rename), with the
// "report: " every error of this library starts with.
void write_text(const fs::path& path, const std::string& text) {
  try {
    write_file_text(path, text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("report: ") + e.what());
  }
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// gnuplot on PATH (or $LOCKSTEP_GNUPLOT); empty when absent or disabled.
std::string find_gnuplot() {
  std::string prog = "gnuplot";
  if (const char* e = std::getenv("LOCKSTEP_GNUPLOT")) prog = e;
  if (prog.empty() || prog == "none") return {};
  if (prog.find('/') != std::string::npos) return access(prog.c_str(), X_OK) == 0 ? prog : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + prog;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// Runs `gnuplot plots.gp` in `work_dir`, stderr to work_dir/gnuplot.log. Returns the exit status
// (-1: spawn failed). The script names its files relative to work_dir: no path of the user's (a
// report folder's name) is ever gnuplot code (found by an outside tester: a folder named with a
// newline ran the rest of its name as gnuplot's system() command).
int run_gnuplot(const std::string& gnuplot, const fs::path& work_dir) {
  std::error_code ec;
  const std::string program = fs::absolute(gnuplot, ec).string();  // found from the old folder
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, work_dir.c_str());
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string a0 = program.empty() ? gnuplot : program, a1 = "plots.gp";
  char* argv[] = {a0.data(), a1.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, a0.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A file of work_dir as a gnuplot string: the names below are fixed ASCII (run_gnuplot).
std::string gp_quote(const std::string& name) { return "'" + name + "'"; }

// A label inside a gnuplot data file's double quotes: no quote, backslash or control character
// (a guest named with a '"' was cut short; a newline would end the row).
std::string gp_label(const std::string& text) {
  std::string o;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    o += (c == '"' || c == '\\' || u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return o;
}

}  // namespace

// A story check that stopped before the story's end (summary "story_complete" false).
bool partial_story(const json& summary) {
  const auto it = summary.find("story_complete");
  return it != summary.end() && it->is_boolean() && !it->get<bool>();
}
// A run (not a story: partial_story) whose guest had not ended when the run stopped at its step
// limit (--steps): exact as far as it went, and no more (found by an outside tester: `run --steps
// 500` of a longer guest had a page headed "exact" and a green JUnit case, nothing else).
bool partial_run(const json& summary) {
  if (summary.contains("story_complete")) return false;
  for (const json& s : streams_of(summary))
    if (str(s, "end") == "step_limit") return true;
  return false;
}
constexpr const char* kPartialRun =
    "a partial check: the guest had not ended when the run stopped at its step limit (--steps; a replay's, the steps "
    "its case recorded, which an interrupted run cut short); the steps after it were not compared";
bool partial_check(const json& summary) { return partial_story(summary) || partial_run(summary); }

constexpr const char* kPartialStory =
    "a partial check: not the whole story compared teacher-forced for its first steps and free-running to its end "
    "(it stopped early: a step limit, an interruption, or every step teacher-forced); gate a release on the whole "
    "story (lockstep story without --steps, run to its end)";

std::string instruction_tokens(std::size_t n, std::size_t at, const std::function<std::string(std::size_t)>& token) {
  auto shown = [&](std::size_t i) { return n <= 48 || i < 8 || i + 4 >= n || (at < n && i + 8 >= at && i <= at + 8); };
  std::string out;
  for (std::size_t i = 0; i < n;) {
    if (shown(i)) {
      out += " " + token(i);
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && !shown(j)) ++j;
    out += " ... (" + std::to_string(j - i) + " tokens) ...";
    i = j;
  }
  return out;
}

std::string junit_xml(const json& summary) {
  const std::string command = str(summary, "command", "run");
  const json streams = streams_of(summary);
  const json& run = run_of(summary);
  const std::string status = str(summary, "status", "error");
  const double seconds = run.value("seconds", 0.0);
  struct Case {
    std::string name, kind, message, text;
    double time = 0;
  };
  std::vector<Case> cases;
  const bool interrupted = status == "interrupted" || run.value("interrupted", false);
  for (const json& s : streams) {
    Case c;
    c.name = str(s, "guest", "guest");
    c.time = streams.size() ? seconds / static_cast<double>(streams.size()) : seconds;
    const std::string end = str(s, "end");
    std::ostringstream text;
    text << "steps " << s.value("steps", 0ull) << ", end " << end << ", digest " << str(s, "digest");
    if (s.contains("divergence") && s["divergence"].is_object()) {
      const json& d = s["divergence"];
      c.kind = "failure";
      c.message = "first divergence at step " + str(d, "step") + " (pc " + str(d, "pc_hex") + "): " +
                  str(d, "disassembly") + ", " + field_text(d) + " expected " + str(d, "expected_text") +
                  ", got " + str(d, "actual_text");
      text << "\n" << c.message << "\nlayer: " << str(d.value("attribution", json::object()), "text")
           << "\nfault: " << str(d, "fault") << ": " << str(d, "fault_text");
    } else if (s.contains("divergence_unlocated") && s["divergence_unlocated"].is_string()) {
      // --compare end: the digests differ and the divergence was not located (found by an outside
      // tester: "1 mismatching steps" and no reason)
      c.kind = "failure";
      c.message = "the digests of the " + std::to_string(s.value("steps", 0ull)) +
                  " steps compared differ: a divergence lies among them, not located: " +
                  s["divergence_unlocated"].get<std::string>();
    } else if (s.value("mismatches", 0ull) > 0) {
      c.kind = "failure";
      c.message = std::to_string(s.value("mismatches", 0ull)) + " mismatching steps";
    } else if (end == "interrupted" || (interrupted && end == "running")) {
      c.kind = "error";
      c.message = "interrupted after " + std::to_string(s.value("steps", 0ull)) + " steps";
    } else if (end == "self_loop") {
      // Never green: the guest reached a jump to itself and could never have ended.
      c.kind = "error";
      c.message = "the guest jumps to itself and can never exit (stopped after " +
                  std::to_string(s.value("steps", 0ull)) + " steps)";
    } else if (end == "trap" && status == "error") {
      // Never green: a guest that ended in a trap where the run asked for its exit (found by an
      // outside tester: the guest's case passed and a second case, "run", held the error).
      c.kind = "error";
      c.message = str(summary, "error", "the guest ended in a trap");
    } else if (end == "running" && status == "error") {
      // Never green: the run failed (a chip under test that died or hung) before this guest's
      // end, so the steps after it were never compared.
      c.kind = "error";
      c.message = "the run failed after " + std::to_string(s.value("steps", 0ull)) +
                  " steps, before this guest's end: " + str(summary, "error", "error");
    }
    // A run under a step limit (--steps) says so in its case's name, whatever its outcome: the
    // name is the command's, so a CI's test history follows one test from pass to fail (found by
    // an outside tester: the passing run's name had a suffix, the failing one's had none; and by
    // an earlier one: the JUnit file of a 2,000-step story was all green with nothing to tell it
    // apart from the whole story).
    const std::uint64_t limit = run.value("max_steps", 0ull);
    if (limit > 0) c.name += " (first " + std::to_string(limit) + " steps)";
    // A check of a prefix passes as far as it went: its text says that it is no more.
    if (c.kind.empty() && partial_story(summary)) {
      const bool forced_only = summary.value("reference_end", "") == "exit" && summary.contains("free_running_steps") &&
                               summary["free_running_steps"] == 0;
      text << "\n"
           << (forced_only ? "teacher-forced only: no free-running step, not the story check"
                           : "partial check: " + std::to_string(s.value("steps", 0ull)) + " steps, not the whole story")
           << "\n"
           << kPartialStory;
    } else if (c.kind.empty() && end == "step_limit" && !summary.contains("story_complete")) {
      text << "\npartial check: the first " << s.value("steps", 0ull) << " steps, the guest had not ended\n" << kPartialRun;
    }
    if (summary.contains("chip_fault") && summary["chip_fault"].is_string())
      text << "\nthen the chip under test failed: " << summary["chip_fault"].get<std::string>();
    c.text = text.str();
    cases.push_back(c);
  }
  // A campaign (lockstep fuzz): one <failure> per failing program, named by its index and mode,
  // with its case folder and the command that replays it, so a CI page lists what failed.
  const json& fuzz = summary.contains("fuzz") && summary["fuzz"].is_object() ? summary["fuzz"] : json::object();
  const json no_failures = json::array();
  const json& fuzz_failures = fuzz.contains("failures") && fuzz["failures"].is_array() ? fuzz["failures"] : no_failures;
  for (const json& f : fuzz_failures) {
    if (!f.is_object()) continue;
    Case c;
    const std::string mode_name = str(f, "mode");
    c.name = "program " + str(f, "index", "?") + (mode_name.empty() ? "" : " (" + mode_name + ")");
    c.kind = "failure";
    const std::string dir = str(f, "case");
    c.message = "first divergence at step " + str(f, "step", "?");
    if (f.contains("disassembly"))
      c.message += " (pc " + str(f, "pc_hex") + " " + str(f, "disassembly") + "): " + field_text(f) + " expected " +
                   str(f, "expected_text") + ", got " + str(f, "actual_text");
    // The step and tokens above are the original program's; the saved case is the program shrunk,
    // which diverges at its own step (found by an outside tester: the two were read as one).
    // A case not shrunk is the original program run alone, which may diverge elsewhere than in its
    // batch (found by the re-test).
    const bool shrunk = f.contains("shrunk_words") && f.value("shrunk_words", 0ull) != f.value("original_words", 0ull);
    const bool elsewhere = f.contains("case_divergence") && f["case_divergence"].is_object() &&
                           (str(f["case_divergence"], "step") != str(f, "step") ||
                            str(f["case_divergence"], "pc_hex") != str(f, "pc_hex"));
    if (shrunk) c.message = "original program: " + c.message;
    else if (elsewhere) c.message = "in its batch: " + c.message;
    if (!dir.empty()) c.message += (shrunk ? "; shrunk case in " : "; case in ") + dir;
    if ((shrunk || elsewhere) && f.contains("case_divergence") && f["case_divergence"].is_object()) {
      const json& cd = f["case_divergence"];
      c.message += std::string(shrunk ? ", which diverges" : ", which run alone diverges") + " at step " + str(cd, "step", "?") + " (pc " + str(cd, "pc_hex") + " " +
                   str(cd, "disassembly") + "): " + field_text(cd) + " expected " + str(cd, "expected_text") +
                   ", got " + str(cd, "actual_text");
    }
    std::ostringstream text;
    text << c.message << "\nprogram seed " << str(f, "program_seed", "?") << "\ncampaign seed "
         << str(fuzz, "seed", "?");
    if (f.contains("not_shrunk")) text << "\nnot shrunk: " << str(f, "not_shrunk");
    if (f.contains("note")) text << "\nnote: " << str(f, "note");
    if (!dir.empty()) text << "\nreplay: lockstep replay " << dir;
    // The program alone, when it diverges alone (found by an outside tester: only the batch's
    // command was given, which reruns every program of the batch); its batch too.
    if (f.contains("repeat") && f.value("reproduces_alone", true)) text << "\nrepeat: " << str(f, "repeat");
    if (f.contains("repeat_batch"))
      text << (f.contains("repeat") && f.value("reproduces_alone", true) ? "\nrepeat its batch: " : "\nrepeat: ")
           << str(f, "repeat_batch");
    c.text = text.str();
    cases.push_back(c);
  }
  // The campaign's other programs, which passed: the file reads as the campaign's result, not as
  // a 100% failure rate (found by an outside tester: tests=22 failures=22 for 40 programs).
  if (fuzz.contains("programs") && fuzz["programs"].is_number_integer() && fuzz["programs"] >= 0) {
    std::set<std::string> failing;
    for (const json& f : fuzz_failures)
      if (f.is_object()) failing.insert(str(f, "index"));
    const std::uint64_t programs = fuzz["programs"].get<std::uint64_t>();
    // Always there, also when every program failed or none ran (a campaign stopped before its
    // first batch: found by an outside tester, the case was missing), so that a CI's history
    // follows it; the "fuzz" case carries the campaign's verdict.
    Case c;
    // A name that does not change with the counts, for a CI's test history.
    c.name = "programs without a divergence";
    c.text = std::to_string(programs > failing.size() ? programs - failing.size() : 0) + " of the " +
             std::to_string(programs) + " programs: no divergence";
    cases.push_back(c);
  }
  // The campaign's own case, always there under the command's name (found by an outside tester:
  // a CI's test history saw "fuzz" pass, then vanish when the campaign failed). Its verdict is the
  // campaign's; the cases above name each failing program.
  if (summary.contains("fuzz") && summary["fuzz"].is_object()) {
    Case c;
    c.name = command;
    c.time = seconds;
    const std::string programs = str(fuzz, "programs", "?");
    c.text = programs + " programs, " + std::to_string(summary.value("steps", 0ull)) + " steps compared";
    // a campaign --time ended early passes as far as it went, and says so (found by an outside
    // tester: the JUnit read as a whole campaign)
    if (summary.value("time_ended", false)) c.text += "; " + str(summary, "time_ended_note", "--time ended the campaign early");
    if (summary.value("max_failures_ended", false))
      c.text += "; " + str(summary, "max_failures_note", "--max-failures ended the campaign early");
    if (status == "mismatch") {
      c.kind = "failure";
      c.message = std::to_string(fuzz_failures.size()) + " failing runs (the cases named by program list them)";
      if (summary.value("interrupted", false)) c.message += "; interrupted: the campaign did not run all its programs";
    } else if (status == "error") {
      c.kind = "error";
      c.message = str(summary, "error", "error");
    } else if (status == "interrupted") {
      c.kind = "error";
      c.message = summary.contains("partial_reason") && summary["partial_reason"].is_string()
                      ? summary["partial_reason"].get<std::string>()
                      : "interrupted after " + std::to_string(summary.value("steps", 0ull)) + " steps";
    }
    cases.insert(cases.begin(), c);
  }
  // The file agrees with the status: "mismatch" has a <failure>, "error" and "interrupted" an
  // <error>; when no stream's case says so (a summary without streams, or whose streams do not
  // name the mismatch), one case for the whole run does.
  bool has_failure = false, has_error = false;
  for (const Case& c : cases) {
    has_failure = has_failure || c.kind == "failure";
    has_error = has_error || c.kind == "error";
  }
  // (An error that a stream's case already names is not counted twice; found by an outside tester:
  // one failed run of one guest read tests="2" errors="2".)
  if (cases.empty() || (status == "error" && !has_error) || (status == "interrupted" && !has_error) ||
      (status == "mismatch" && !has_failure)) {
    Case c;
    c.name = command;
    c.time = seconds;
    if (status == "error") {
      c.kind = "error";
      c.message = str(summary, "error", "error");
    } else if (status == "interrupted") {
      // Never green: a run stopped before its end has not shown the rest exact.
      c.kind = "error";
      c.message = "interrupted after " + std::to_string(summary.value("steps", 0ull)) + " steps";
    } else if (status == "mismatch") {
      c.kind = "failure";
      c.message = std::to_string(summary.value("mismatches", 0ull)) + " mismatches" +
                  (cases.empty() ? "" : " (the run's status is mismatch; no guest's case names it)");
    }
    c.text = "steps " + std::to_string(summary.value("steps", 0ull));
    if (!str(summary, "digest").empty()) c.text += ", digest " + str(summary, "digest");
    cases.push_back(c);
  }
  std::size_t failures = 0, errors = 0;
  for (const Case& c : cases) {
    failures += c.kind == "failure";
    errors += c.kind == "error";
  }
  // The mode is part of the names: a guest run forced and free in one CI job gives two suites and
  // two classnames ("lockstep run free", "lockstep.run.free"), never two identical test cases.
  // The story check has no mode of its own (teacher-forced, then free-running; its case's name
  // says when no step ran free), so its suite is "lockstep story" (it read "story free" when
  // every compared step was teacher-forced).
  const std::string mode = command == "story" ? std::string() : str(run, "mode");
  const std::string suite = command + (mode.empty() ? "" : " " + mode);
  const std::string classname = "lockstep." + command + (mode.empty() ? "" : "." + mode);
  std::ostringstream os;
  char t[32];
  std::snprintf(t, sizeof t, "%.3f", seconds);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"lockstep\" tests=\"" << cases.size() << "\" failures=\"" << failures
     << "\" errors=\"" << errors << "\" time=\"" << t << "\">\n";
  os << "  <testsuite name=\"lockstep " << escape_xml(suite) << "\" tests=\"" << cases.size()
     << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"0\" time=\"" << t
     << "\">\n";
  os << "    <properties>\n";
  for (const char* k : {"digest", "status", "chip", "chip_hash", "backend", "replayed_case", "replay_verdict"}) {
    const std::string v = k == std::string("backend") ? str(run, "backend") : str(summary, k);
    if (!v.empty()) os << "      <property name=\"" << k << "\" value=\"" << escape_xml(v) << "\"/>\n";
  }
  // The chip under test's identity (dut-protocol.md §3: "reports show it").
  if (summary.contains("dut") && summary["dut"].is_object() && !str(summary["dut"], "identity").empty())
    os << "      <property name=\"dut_identity\" value=\"" << escape_xml(str(summary["dut"], "identity")) << "\"/>\n";
  os << "      <property name=\"steps\" value=\"" << summary.value("steps", 0ull) << "\"/>\n";
  // A campaign's seed, which with its program count reproduces it (found by an outside tester:
  // a passing campaign's JUnit had no seed at all).
  if (const json& fz = summary.contains("fuzz") && summary["fuzz"].is_object() ? summary["fuzz"] : json::object();
      fz.contains("seed"))
    os << "      <property name=\"seed\" value=\"" << escape_xml(str(fz, "seed")) << "\"/>\n";
  if (!str(summary, "note").empty())
    os << "      <property name=\"note\" value=\"" << escape_xml(str(summary, "note")) << "\"/>\n";
  // A campaign stopped before its last program, with failures or not: which programs are left.
  if (!str(summary, "resume_with").empty())
    os << "      <property name=\"interrupted\" value=\"" << escape_xml(str(summary, "resume_with")) << "\"/>\n";
  os << "    </properties>\n";
  for (const Case& c : cases) {
    std::snprintf(t, sizeof t, "%.3f", c.time);
    os << "    <testcase classname=\"" << escape_xml(classname) << "\" name=\""
       << escape_xml(c.name) << "\" time=\"" << t << "\">\n";
    if (!c.kind.empty()) {
      os << "      <" << c.kind << " message=\"" << escape_xml(c.message) << "\" type=\""
         << (c.kind == "failure" ? "mismatch" : "error") << "\">" << escape_xml(c.text) << "</"
         << c.kind << ">\n";
    }
    os << "      <system-out>" << escape_xml(c.text) << "</system-out>\n";
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
  return os.str();
}

std::vector<Plot> render_plots(const json& summary, const fs::path& work_dir, std::string& note) {
  std::vector<Plot> plots;
  note.clear();
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty()) {
    note = "plots not rendered: gnuplot was not found (install gnuplot-nox, or set LOCKSTEP_GNUPLOT)";
    return plots;
  }
  fs::create_directories(work_dir);
  const json& run = run_of(summary);
  const json streams = streams_of(summary);
  std::ostringstream script;
  script << "set terminal svg size 720,360 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
         << "set grid\nset key top left\n";
  // 1. throughput: steps/s between samples.
  {
    std::ostringstream data;
    double ps = 0;
    std::uint64_t pn = 0;
    std::size_t rows = 0;
    const json samples = run.value("throughput", json::array());
    for (const json& p : samples) {
      if (!p.is_array() || p.size() != 2) continue;
      const double s = p[0].get<double>();
      const std::uint64_t n = p[1].get<std::uint64_t>();
      if (s > ps) {
        data << s << " " << static_cast<double>(n - pn) / (s - ps) << " " << n << "\n";
        ++rows;
      }
      ps = s;
      pn = n;
    }
    // One point (a short run) is a plot of nothing: the table has steps/s.
    if (rows >= 2) {
      write_text(work_dir / "throughput.dat", data.str());
      script << "set output " << gp_quote("throughput.svg") << "\n"
             << "set title 'Throughput over the run'\nset xlabel 'seconds'\nset ylabel 'steps/s'\n"
             << "set y2label 'steps compared'\nset y2tics\nset ytics nomirror\n"
             << "plot " << gp_quote("throughput.dat")
             << " using 1:2 with linespoints title 'steps/s', '' using 1:3 axes x1y2 with lines title 'steps'\n"
             << "unset y2tics\nunset y2label\nset ytics mirror\n";
      plots.push_back({"throughput", "Throughput over the run", ""});
    }
  }
  // 2. steps per instruction class (all streams).
  {
    std::map<std::string, std::uint64_t> cls;
    for (const json& s : streams) {
      const json per_class = s.value("class_steps", json::object());
      for (const auto& [k, v] : per_class.items()) cls[k] += v.get<std::uint64_t>();
    }
    std::ostringstream data;
    for (const auto& [k, v] : cls) data << "\"" << gp_label(k) << "\" " << v << "\n";
    if (cls.size() >= 2) {  // one bar says no more than the steps in the table
      write_text(work_dir / "classes.dat", data.str());
      script << "set output " << gp_quote("classes.svg") << "\n"
             << "set title 'Steps per instruction class'\nset xlabel ''\nset ylabel 'steps'\n"
             << "set style fill solid 0.6\nset boxwidth 0.7\nset xtics rotate by -30\nset yrange [0:*]\n"
             << "plot " << gp_quote("classes.dat") << " using 0:2:xtic(1) with boxes notitle\n"
             << "set xtics norotate\nset autoscale y\n";
      plots.push_back({"classes", "Steps per instruction class", ""});
    }
  }
  // 3. where divergences happened: one bar per stream, a cross at the divergence.
  {
    std::ostringstream bars, marks;
    std::size_t i = 0, n_div = 0;
    for (const json& s : streams) {
      bars << i << " " << s.value("steps", 0ull) << " \"" << gp_label(str(s, "guest")) << "\"\n";
      if (s.contains("divergence") && s["divergence"].is_object()) {
        marks << s["divergence"].value("step", 0ull) << " " << i << "\n";
        ++n_div;
      }
      ++i;
    }
    // One stream ends at its divergence: its bar and cross say what the table says.
    if (i >= 2) {
      if (n_div == 0) marks << "NaN NaN\n";
      write_text(work_dir / "streams.dat", bars.str());
      write_text(work_dir / "divergences.dat", marks.str());
      script << "set output " << gp_quote("divergence.svg") << "\n"
             << "set title 'Where divergences happened (" << n_div << ")'\nset xlabel 'step'\nset ylabel ''\n"
             << "set yrange [-1:" << std::max<std::size_t>(i, 1) << "]\nset xrange [0:*]\n"
             << "plot " << gp_quote("streams.dat")
             << " using 2:1:(0):2:ytic(3) with xerrorbars title 'steps compared', "
             << gp_quote("divergences.dat")
             << " using 1:2 with points pt 2 ps 2 lc rgb 'red' title 'first divergence'\n";
      plots.push_back({"divergence", "Where divergences happened", ""});
    }
  }
  if (plots.empty()) return plots;  // nothing worth a plot: gnuplot is not run
  const fs::path script_path = work_dir / "plots.gp";
  write_text(script_path, script.str());
  // An earlier render's pictures are never shown as this one's (found by an outside tester: a
  // failed render's page said so and showed the old plots).
  for (const Plot& p : plots) fs::remove(work_dir / (p.name + ".svg"));
  const int rc = run_gnuplot(gnuplot, work_dir);
  if (rc != 0) {
    std::string log = read_text(work_dir / "gnuplot.log");
    if (const auto nl = log.find('\n'); nl != std::string::npos) log.resize(nl);
    note = "plots not rendered: gnuplot failed (exit " + std::to_string(rc) + ")" +
           (log.empty() ? "" : ": " + log);
  }
  for (Plot& p : plots) p.svg = read_text(work_dir / (p.name + ".svg"));
  if (note.empty()) {
    for (const Plot& p : plots)
      if (p.svg.empty()) note = "plot " + p.name + " was not rendered (see plots/gnuplot.log)";
  }
  return plots;
}

// Fuzz campaigns (`lockstep fuzz --report`): the opcode x operand-class table ("coverage") and
// the chip's decision units per layer ("decision_coverage"), when the summary has them.
static void coverage_sections(std::ostringstream& os, const json& summary) {
  const json cov = summary.value("coverage", json::object());
  if (cov.is_object() && cov.contains("ops") && cov["ops"].is_object()) {
    os << "<h2>Coverage: test instructions executed by the reference</h2>\n<p>"
       << cov.value("instructions", 0ull) << " test instructions in " << cov.value("programs", 0ull)
       << " programs; rs1/rs2 value classes";
    const json classes = cov.value("value_classes", json::array());
    for (const json& c : classes) os << " " << escape_xml(c.is_string() ? c.get<std::string>() : format::json_text(c));
    os << "</p>\n<table><tr><th>op</th><th>executed</th><th>rs1</th><th>rs2</th><th>operand corners</th></tr>\n";
    auto counts = [](const json& o, const char* k) {
      std::string t;
      if (o.contains(k) && o[k].is_array())
        for (const json& v : o[k]) t += (t.empty() ? "" : "/") + format::json_text(v);
      return t;
    };
    // The op's corners (fuzz/README.md, "Coverage"), and those of executed ops never reached.
    std::string unreached;
    auto corners = [&](const std::string& name, const json& o) {
      std::string t;
      if (!o.contains("corners") || !o["corners"].is_object()) return t;
      for (const auto& [corner, n] : o["corners"].items()) {
        t += (t.empty() ? "" : ", ") + escape_xml(corner) + " " + format::json_text(n);
        if (n == 0 && o.value("executed", 0ull) > 0)
          unreached += (unreached.empty() ? "" : ", ") + escape_xml(name) + " " + escape_xml(corner);
      }
      return t;
    };
    for (const auto& [name, o] : cov["ops"].items())
      os << "<tr><td>" << escape_xml(name) << "</td><td>" << o.value("executed", 0ull) << "</td><td>"
         << counts(o, "rs1") << "</td><td>" << counts(o, "rs2") << "</td><td>" << corners(name, o) << "</td></tr>\n";
    os << "</table>\n";
    if (!unreached.empty()) os << "<p class=\"note\">operand corners never reached: " << unreached << "</p>\n";
  }
  const json dc = summary.value("decision_coverage", json::object());
  if (dc.is_object() && dc.contains("recorded")) {
    os << "<h2>Coverage: chip decision units</h2>\n";
    if (!dc.value("recorded", false)) {
      os << "<p class=\"note\">not recorded: " << escape_xml(str(dc, "note")) << "</p>\n";
      return;
    }
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f", dc.value("percent", 0.0));
    os << "<p>" << dc.value("both_sides", 0ull) << " of " << dc.value("units", 0ull)
       << " MLP hidden units seen on both sides of their threshold (" << pct << "%); "
       << dc.value("only_active", 0ull) << " only active, " << dc.value("only_inactive", 0ull)
       << " only inactive.</p>\n<table><tr><th>layer</th><th>units</th><th>both sides</th><th>only active</th>"
          "<th>only inactive</th><th>steps</th><th>heads writing</th></tr>\n";
    for (const json& l : dc.value("layers", json::array()))
      os << "<tr><td>" << l.value("layer", 0) << "</td><td>" << l.value("units", 0ull) << "</td><td>"
         << l.value("both_sides", 0ull) << "</td><td>" << l.value("only_active", 0ull) << "</td><td>"
         << l.value("only_inactive", 0ull) << "</td><td>" << l.value("evaluations", 0ull) << "</td><td>"
         << l.value("heads_writing", 0ull) << " of " << l.value("heads", 0ull) << "</td></tr>\n";
    os << "</table>\n";
  }
}

std::string html_report(const json& summary, const std::vector<Plot>& plots, const std::string& plot_note) {
  const json& run = run_of(summary);
  const json streams = streams_of(summary);
  const std::string status = str(summary, "status", "error");
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Lockstep "
     << escape_xml(str(summary, "command", "run")) << ": " << escape_xml(status)
     << (partial_check(summary) ? " (partial check)" : "") << "</title>\n"
     << "<style>body{font-family:sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
        "pre{background:#f4f4f4;padding:8px;overflow-x:auto}.exact{color:#070}.mismatch,.error,.interrupted{color:#b00}"
        ".note{background:#fff3c0;padding:6px}</style></head><body>\n";
  os << "<h1>Lockstep " << escape_xml(str(summary, "command", "run")) << ": <span class=\""
     << escape_xml(status) << "\">" << escape_xml(status) << "</span>" << (partial_check(summary) ? " (partial check)" : "")
     << "</h1>\n";
  if (partial_story(summary) && status != "mismatch") os << "<p class=\"note\">" << escape_xml(kPartialStory) << "</p>\n";
  else if (partial_run(summary) && status == "exact") os << "<p class=\"note\">" << escape_xml(kPartialRun) << "</p>\n";
  if (summary.contains("chip_fault") && summary["chip_fault"].is_string())
    os << "<p class=\"note\">After the divergence the chip under test failed: "
       << escape_xml(summary["chip_fault"].get<std::string>()) << "</p>\n";
  // What the verdict alone does not say (a fuzz case that passes alone but failed in its batch).
  if (!str(summary, "note").empty()) os << "<p class=\"note\">" << escape_xml(str(summary, "note")) << "</p>\n";
  os << "<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) os << "<tr><th>" << escape_xml(k) << "</th><td>" << escape_xml(v) << "</td></tr>\n";
  };
  row("steps compared", num(summary, "steps", 0));
  row("mismatches", std::to_string(summary.value("mismatches", 0ull)));
  row("digest (XXH3-64 of the trace)", str(summary, "digest"));
  row("mode", str(run, "mode"));
  row("compare", str(run, "compare"));
  row("backend", str(run, "backend"));
  row("chip", str(summary, "chip"));
  row("chip hash", str(summary, "chip_hash"));
  if (summary.contains("dut") && summary["dut"].is_object())
    row("chip under test's identity", str(summary["dut"], "identity"));
  if (summary.contains("capability_notes") && summary["capability_notes"].is_array()) {
    std::string notes;
    for (const json& n : summary["capability_notes"]) notes += (notes.empty() ? "" : "; ") + (n.is_string() ? n.get<std::string>() : n.dump());
    row("capability notes", notes);
  }
  row("story guest built from", str(summary, "guest_model"));
  row("seconds", num(run, "seconds", 2));
  row("steps/s", num(run, "steps_per_second", 1));
  if (run.value("resumed_from", 0ull) > 0) row("resumed from step", str(run, "resumed_from"));
  row("checkpoints written", str(run, "checkpoints_written"));
  // How to go on: a run or story resumes (--resume); a campaign runs the programs it left
  // ("resume_with"). A run that diverged before the stop is not to be resumed: its verdict stands
  // (found by an outside tester: a campaign's page said --resume, which fuzz refuses, and a
  // diverged run's page said to resume it).
  if (status == "interrupted" || run.value("interrupted", false)) {
    std::string text = "yes: the run was stopped after " + std::to_string(summary.value("steps", 0ull)) + " steps";
    bool located = false;
    for (const json& st : streams) located = located || (st.contains("divergence") && st["divergence"].is_object());
    const std::string command = str(summary, "command", "run");
    if (!str(summary, "resume_with").empty()) text += "; " + str(summary, "resume_with");  // a campaign
    else if (status == "interrupted" && !str(summary, "resume").empty())
      text += "; continue with: " + str(summary, "resume");
    else if (status == "interrupted" && (run.value("checkpoints_written", 0ull) > 0 || run.value("resumed_from", 0ull) > 0))
      text += "; resume with --resume";
    else if (status == "interrupted" && command == "replay")  // replay has no --resume (found by an outside tester)
      text += "; replay the case again";
    else if (status == "interrupted")  // found by an outside tester: the page said to resume, which --resume refused
      text += "; it wrote no checkpoints, so it cannot be resumed: run it again (--checkpoint-every N makes a run resumable)";
    else if (status == "mismatch" && located) text += ", after the divergence below";
    else if (status == "mismatch") text += ", with a divergence not located (below)";
    row("interrupted", text);
  }
  row("error", str(summary, "error"));
  row("earlier run kept in", str(summary, "earlier_run"));
  row("replayed case", str(summary, "replayed_case"));
  row("replay verdict", str(summary, "replay_verdict"));
  row("replay", str(summary, "replay"));
  const json& fz = summary.contains("fuzz") && summary["fuzz"].is_object() ? summary["fuzz"] : json::object();
  row("campaign seed", str(fz, "seed"));
  os << "</table>\n";
  // A campaign's failing programs: where each diverged and its case (the streams table of a run
  // has no rows for a campaign; found by an outside tester: the page named no failing program).
  if (fz.contains("failures") && fz["failures"].is_array() && !fz["failures"].empty()) {
    os << "<h2>Failing programs</h2>\n<p>Step, instruction and tokens are the original program's, in its batch. "
          "The last column has its saved case (the program shrunk where shrinking kept the divergence, else the "
          "program as it was), the case's own divergence when run alone, and the command that replays it.</p>\n"
          "<table><tr><th>program</th><th>mode</th><th>program seed</th><th>step</th>"
          "<th>instruction</th><th>field</th><th>expected</th><th>actual</th><th>case</th></tr>\n";
    for (const json& f : fz["failures"]) {
      if (!f.is_object()) continue;
      os << "<tr><td>" << escape_xml(str(f, "index")) << "</td><td>" << escape_xml(str(f, "mode")) << "</td><td>"
         << escape_xml(str(f, "program_seed")) << "</td><td>" << escape_xml(str(f, "step")) << "</td><td><code>"
         << escape_xml(str(f, "pc_hex") + "  " + str(f, "disassembly")) << "</code></td><td>" << escape_xml(field_text(f))
         << "</td><td>" << escape_xml(str(f, "expected_text")) << "</td><td>" << escape_xml(str(f, "actual_text"))
         << "</td><td><code>" << escape_xml(str(f, "case")) << "</code>"
         << (f.value("reproduces_alone", true) ? "" : " (passes alone: repeat the batch)");
      const bool not_shrunk = f.contains("not_shrunk") || (f.contains("shrunk_words") && f.contains("original_words") &&
                                                           f["shrunk_words"] == f["original_words"]);
      if (not_shrunk) os << "<br>" << escape_xml("not shrunk" + (str(f, "not_shrunk").empty() ? std::string() : ": " + str(f, "not_shrunk")));
      if (f.contains("case_divergence") && f["case_divergence"].is_object()) {
        const json& cd = f["case_divergence"];
        const std::string size = !not_shrunk && f.contains("original_words") && f.contains("shrunk_words")
                                     ? "shrunk from " + str(f, "original_words") + " to " + str(f, "shrunk_words") + " words"
                                     : str(f, "shrunk_words") + " words";
        os << "<br>" << escape_xml(size + "; run alone it diverges at step " + str(cd, "step") + ", ")
           << "<code>" << escape_xml(str(cd, "pc_hex") + "  " + str(cd, "disassembly")) << "</code>"
           << escape_xml(": " + field_text(cd) + " expected " + str(cd, "expected_text") + ", got " +
                         str(cd, "actual_text"));
      }
      if (!str(f, "note").empty()) os << "<br>" << escape_xml("note: " + str(f, "note"));
      if (!str(f, "case").empty())
        os << "<br>replay: <code>" << escape_xml("lockstep replay " + format::shell_path(str(f, "case"))) << "</code>";
      if (!f.value("reproduces_alone", true) && !str(f, "repeat_batch").empty())
        os << "<br>repeat its batch: <code>" << escape_xml(str(f, "repeat_batch")) << "</code>";
      os << "</td></tr>\n";
    }
    os << "</table>\n";
  }
  if (!streams.empty()) {
  os << "<h2>Streams</h2>\n<table><tr><th>guest</th><th>steps</th><th>end</th><th>mismatches</th>"
        "<th>digest</th><th>chip digest</th></tr>\n";
  for (const json& s : streams) {
    os << "<tr><td>" << escape_xml(str(s, "guest")) << "</td><td>" << s.value("steps", 0ull) << "</td><td>"
       << escape_xml(str(s, "end")) << "</td><td>" << s.value("mismatches", 0ull) << "</td><td><code>"
       << escape_xml(str(s, "digest")) << "</code></td><td><code>" << escape_xml(str(s, "chip_digest"))
       << "</code></td></tr>\n";
  }
  os << "</table>\n";
  }
  for (const json& s : streams) {
    if (s.contains("divergence_unlocated") && s["divergence_unlocated"].is_string())
      os << "<h2>Divergence not located: " << escape_xml(str(s, "guest")) << "</h2>\n<p>The digests of the "
         << s.value("steps", 0ull) << " steps compared differ: a divergence lies among them, not located: "
         << escape_xml(s["divergence_unlocated"].get<std::string>()) << "</p>\n";
    if (!s.contains("divergence") || !s["divergence"].is_object()) continue;
    const json& d = s["divergence"];
    os << "<h2>Divergence: " << escape_xml(str(s, "guest")) << ", step " << escape_xml(str(d, "step"))
       << "</h2>\n<table>\n";
    row("mode at the step", str(d, "mode"));
    row("instruction", str(d, "pc_hex") + "  " + str(d, "word") + "  " + str(d, "disassembly"));
    // (a value byte and a stream position never come together: W/A/S/AC kinds have no position)
    row("trace field", field_text(d) + (d.value("byte_index", -1) >= 0 ? " byte " + str(d, "byte_index") : "") +
                           (d.contains("token_in_instruction") ? " (token " + str(d, "token_in_instruction") + " of the instruction)" : ""));
    row("expected", str(d, "expected_text") + " (id " + str(d, "expected") + ")");
    row("actual", str(d, "actual_text") + (d.contains("actual") && d["actual"].is_null()
                                              ? " (the chip's id " + str(d, "actual_chip_id") + ", which names no token)"
                                              : " (id " + str(d, "actual") + ")"));
    row("differing bits", str(d, "bits_text"));
    row("note", str(d, "note"));
    row("layer", str(d.value("attribution", json::object()), "text"));
    row("fault class (the step re-executed from a snapshot)", str(d, "fault") + ": " + str(d, "fault_text"));
    if (d.contains("bisection") && d["bisection"].is_object()) row("bisection", str(d["bisection"], "text"));
    os << "</table>\n<h3>Last instructions</h3>\n<pre>";
    const json recent = d.value("recent", json::array());
    for (const json& r : recent) {
      os << "step " << r.value("first_step", 0ull) << "  " << escape_xml(str(r, "pc_hex")) << "  "
         << escape_xml(str(r, "disassembly")) << "  ->";
      // A long instruction (a VMAT's thousands of tokens) shows its first and last tokens and those
      // around the divergent step, with the gaps counted, as the text report does (found by an
      // outside tester: a line of about 25,000 characters).
      const json texts = r.value("token_text", json::array());
      const std::size_t n = texts.size();
      const std::uint64_t first = r.value("first_step", 0ull), step = d.value("step", 0ull);
      const std::size_t at = step >= first && step - first < n ? static_cast<std::size_t>(step - first) : n;
      os << instruction_tokens(n, at, [&](std::size_t i) {
        return escape_xml(texts[i].is_string() ? texts[i].get<std::string>() : texts[i].dump());
      }) << "\n";
    }
    os << "</pre>\n";
  }
  coverage_sections(os, summary);
  bool any_plot = false;
  for (const Plot& p : plots) any_plot = any_plot || !p.svg.empty();
  if (any_plot || !plot_note.empty()) os << "<h2>Plots</h2>\n";
  if (!plot_note.empty()) os << "<p class=\"note\">" << escape_xml(plot_note) << "</p>\n";
  for (const Plot& p : plots) {
    if (p.svg.empty()) continue;
    const auto at = p.svg.find("<svg");
    os << "<figure><figcaption>" << escape_xml(p.title) << "</figcaption>\n"
       << with_own_ids(at == std::string::npos ? p.svg : p.svg.substr(at), p.name) << "\n</figure>\n";
  }
  for (const json& s : streams) {
    const std::string console = str(s, "console");
    if (console.empty()) continue;
    os << "<h2>Console output: " << escape_xml(str(s, "guest")) << "</h2>\n<pre>" << escape_xml(console)
       << "</pre>\n";
  }
  // Folded: the raw summary is for machines (and summary.json beside this page has it too).
  os << "<details><summary>Summary JSON (as in summary.json)</summary>\n<pre>" << escape_xml(format::json_text(summary, 2))
     << "</pre>\n</details>\n</body></html>\n";
  return os.str();
}

ReportFiles write_report(const fs::path& dir, const json& summary, const std::vector<std::pair<std::string, std::string>>& also) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("report: cannot create " + dir.string() + ": " + ec.message());
  ReportFiles f;
  f.summary = dir / kSummaryFile;
  f.junit = dir / kJUnitFile;
  f.html = dir / kHtmlFile;
  f.summary_json = summary;
  try {
    f.plots = render_plots(summary, dir / "plots", f.plot_note);
  } catch (const std::exception& e) {
    f.plots.clear();
    f.plot_note = std::string("plots not rendered: ") + e.what();
  }
  std::vector<std::pair<fs::path, std::string>> files;
  for (const auto& [name, text] : also) files.emplace_back(dir / name, text);
  files.emplace_back(f.html, html_report(summary, f.plots, f.plot_note));
  files.emplace_back(f.junit, junit_xml(summary));
  files.emplace_back(f.summary, format::json_text(summary, 2) + "\n");  // the verdict, replaced last
  try {
    write_files_text(files);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("report: ") + e.what());
  }
  return f;
}

namespace {

// The fields below the top level that decide the JUnit file and the page's verdict: "interrupted",
// "run.mismatches", "run.interrupted", and each of "run.streams[i]"'s "mismatches", "divergence"
// and "end". Throws (through `bad`) when one is of the wrong type or contradicts the status or the
// counts: an engine summary (engine::summary_json) has run.mismatches == mismatches == the sum of
// its streams', a divergence only in a stream with a mismatch, and, when "exact", no divergence, no
// interruption and no stream ended "interrupted" or "self_loop"; when "interrupted", no divergence.
template <typename Bad>
void check_nested(const json& s, const std::string& status, std::uint64_t mismatches, const Bad& bad) {
  const bool exact = status == "exact";
  auto flag = [&](const json& o, const char* key, const std::string& name) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return false;
    if (!it->is_boolean()) bad("\"" + name + "\" is " + it->dump() + ", not true or false");
    return it->get<bool>();
  };
  auto count = [&](const json& o, const char* key, const std::string& name) -> std::optional<std::uint64_t> {
    const auto it = o.find(key);
    if (it == o.end()) return std::nullopt;
    if (!it->is_number_unsigned()) bad("\"" + name + "\" is " + it->dump() + ", not a whole number >= 0");
    return it->get<std::uint64_t>();
  };
  const bool interrupted = flag(s, "interrupted", "interrupted");
  if (exact && interrupted) bad("\"status\" \"exact\" with \"interrupted\" true");
  const auto rit = s.find("run");
  if (rit == s.end() || rit->is_null()) return;
  if (!rit->is_object()) bad("\"run\" is " + rit->dump() + ", not an object");
  const json& run = *rit;
  const bool run_interrupted = flag(run, "interrupted", "run.interrupted");
  if (exact && run_interrupted) bad("\"status\" \"exact\" with \"run.interrupted\" true");
  const std::optional<std::uint64_t> run_mismatches = count(run, "mismatches", "run.mismatches");
  // The steps too (found by an outside tester: a top-level count that the run's contradicted, and
  // streams past the step limit, were rendered).
  const std::optional<std::uint64_t> run_steps = count(run, "steps", "run.steps");
  if (run_steps && s.contains("steps") && s["steps"].is_number_unsigned() && *run_steps != s["steps"].get<std::uint64_t>())
    bad("\"run.steps\" is " + std::to_string(*run_steps) + " but \"steps\" is " + s["steps"].dump());
  const std::uint64_t max_steps = count(run, "max_steps", "run.max_steps").value_or(0);
  if (run_mismatches && *run_mismatches != mismatches) {
    bad("\"run.mismatches\" is " + std::to_string(*run_mismatches) + " but \"mismatches\" is " +
        std::to_string(mismatches) + " (status \"" + status + "\")");
  }
  // The fields the page and the plots read: of the right type, or named here (found by an outside
  // tester: each of these rendered as exact).
  if (const auto it = run.find("seconds"); it != run.end() && !it->is_null() &&
                                           !(it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= 0)) {
    bad("\"run.seconds\" is " + it->dump() + ", not a number of seconds >= 0");
  }
  if (const auto it = run.find("throughput"); it != run.end() && !it->is_null()) {
    if (!it->is_array()) bad("\"run.throughput\" is " + it->dump() + ", not a list");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& p = (*it)[i];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !(p[0].get<double>() >= 0) || !p[1].is_number_unsigned())
        bad("\"run.throughput[" + std::to_string(i) + "]\" is " + format::json_text(p) + ", not [seconds, steps]");
    }
  }
  const auto sit = run.find("streams");
  if (sit == run.end() || sit->is_null()) return;
  if (!sit->is_array()) bad("\"run.streams\" is " + sit->dump() + ", not a list");
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < sit->size(); ++i) {
    const json& st = (*sit)[i];
    const std::string at = "run.streams[" + std::to_string(i) + "]";
    if (!st.is_object()) bad("\"" + at + "\" is " + format::json_text(st) + ", not an object");
    const std::uint64_t m = count(st, "mismatches", at + ".mismatches").value_or(0);
    const std::uint64_t steps = count(st, "steps", at + ".steps").value_or(0);
    if (max_steps > 0 && steps > max_steps)
      bad("\"" + at + ".steps\" is " + std::to_string(steps) + ", past \"run.max_steps\" " + std::to_string(max_steps));
    if (const auto g = st.find("guest"); g != st.end() && !g->is_null() && !g->is_string())
      bad("\"" + at + ".guest\" is " + g->dump() + ", not text");
    if (const auto c = st.find("class_steps"); c != st.end() && !c->is_null()) {
      if (!c->is_object()) bad("\"" + at + ".class_steps\" is " + c->dump() + ", not an object");
      for (const auto& [k, v] : c->items())
        if (!v.is_number_unsigned()) bad("\"" + at + ".class_steps." + k + "\" is " + format::json_text(v) + ", not a whole number >= 0");
    }
    sum += m;
    const auto dit = st.find("divergence");
    const bool diverged = dit != st.end() && !dit->is_null();
    if (diverged && !dit->is_object()) bad("\"" + at + ".divergence\" is " + dit->dump() + ", not an object or null");
    if (diverged && (exact || status == "interrupted")) {
      bad("\"status\" \"" + status + "\" with a divergence in \"" + at + ".divergence\"");
    }
    if (diverged && m == 0) bad("\"" + at + ".divergence\" is given but \"" + at + ".mismatches\" is 0");
    if (m > 0 && exact) bad("\"status\" \"exact\" with \"" + at + ".mismatches\" " + std::to_string(m));
    const auto eit = st.find("end");
    if (eit != st.end() && !eit->is_null() && !eit->is_string()) {
      bad("\"" + at + ".end\" is " + eit->dump() + ", not text");
    }
    const std::string end = eit != st.end() && eit->is_string() ? eit->get<std::string>() : "";
    if (exact && (end == "interrupted" || end == "self_loop" || end == "diverged")) {
      bad("\"status\" \"exact\" with \"" + at + ".end\" \"" + end + "\"");
    }
  }
  const std::uint64_t want = run_mismatches.value_or(mismatches);
  if (sum != want) {
    bad("the streams' \"mismatches\" add up to " + std::to_string(sum) + " but \"" +
        (run_mismatches ? "run.mismatches" : "mismatches") + "\" is " + std::to_string(want));
  }
}

// The top-level fields every run's summary has (summary_json(), cli::Summary): a status of the
// four, whole step and mismatch counts that agree with it, and text where text is written.
void check_summary(const json& s, const fs::path& file) {
  auto bad = [&](const std::string& what) { throw std::runtime_error("report: " + file.string() + ": " + what); };
  const auto st = s.find("status");
  if (st == s.end()) bad("no \"status\" (not a run's summary)");
  static const std::set<std::string> kStatuses = {"exact", "mismatch", "error", "interrupted"};
  if (!st->is_string() || !kStatuses.count(st->get<std::string>())) {
    bad("\"status\" is " + st->dump() + ", not one of \"exact\", \"mismatch\", \"error\", \"interrupted\"");
  }
  for (const char* k : {"steps", "mismatches"}) {
    const auto it = s.find(k);
    if (it == s.end()) bad(std::string("no \"") + k + "\"");
    if (!it->is_number_unsigned()) bad(std::string("\"") + k + "\" is " + it->dump() + ", not a whole number >= 0");
  }
  const std::string status = st->get<std::string>();
  const std::uint64_t mismatches = s["mismatches"].get<std::uint64_t>();
  if ((status == "exact" || status == "interrupted") && mismatches > 0) {
    bad("\"status\" \"" + status + "\" with " + std::to_string(mismatches) + " mismatches");
  }
  if (status == "mismatch" && mismatches == 0) bad("\"status\" \"mismatch\" with 0 mismatches");
  // A campaign's failing programs become <failure>s: never beside a status that is not a mismatch
  // (found by an outside tester: "exact" with one failure rendered a JUnit file with a failure).
  if (const auto fz = s.find("fuzz"); fz != s.end() && fz->is_object()) {
    const auto f = fz->find("failures");
    if (f != fz->end() && !f->is_null() && !f->is_array()) bad("\"fuzz.failures\" is " + f->dump() + ", not a list");
    if (f != fz->end() && f->is_array() && !f->empty() && status != "mismatch" && status != "error")
      bad("\"status\" \"" + status + "\" with " + std::to_string(f->size()) +
          (f->size() == 1 ? " failing run" : " failing runs") + " in \"fuzz.failures\"");
  }
  for (const char* k : {"command", "chip", "chip_hash", "digest", "error", "replay"}) {
    const auto it = s.find(k);
    if (it != s.end() && !it->is_string()) bad(std::string("\"") + k + "\" is " + it->dump() + ", not text");
  }
  // A run that diverged ended so (found by an outside tester: "exact" beside "end": "diverged",
  // the divergence deleted, rendered a passing JUnit case).
  if (const auto e = s.find("end"); status == "exact" && e != s.end() && e->is_string() && *e == "diverged")
    bad("\"status\" \"exact\" with \"end\" \"diverged\"");
  // The case beside it records the run's divergence, if it had one: an "exact" summary beside a
  // case that expects a divergence is not the run's (found by an outside tester).
  if (status == "exact") {
    const fs::path case_file = file.parent_path() / "case.json";
    std::error_code ec;
    json divergence;  // the case's expected first divergence, null when none or unreadable
    if (fs::is_regular_file(case_file, ec)) {
      try {
        const json c = parse_json_text(read_file_text(case_file), case_file.string());
        const json expect = c.is_object() ? c.value("expect", json()) : json();
        if (expect.is_object()) divergence = expect.value("first_divergence", json());
      } catch (const std::exception&) {
        // a case.json that cannot be read is replay's to refuse; the summary is judged alone
      }
    }
    if (!divergence.is_null())
      bad("\"status\" \"exact\", but the case.json beside it expects a divergence at step " +
          format::json_text(divergence) + ": not that run's summary");
  }
  check_nested(s, status, mismatches, bad);
}

}  // namespace

ReportFiles render_report(const fs::path& dir) {
  const fs::path file = dir / kSummaryFile;
  std::error_code ec;
  // a path that cannot be looked at (a symlink loop, a folder without x permission) says why, not
  // "does not exist" (found by an outside tester)
  if (!fs::exists(dir, ec))
    throw std::runtime_error("report: " + dir.string() + (ec ? ": " + ec.message() : std::string(" does not exist")));
  if (!fs::is_directory(dir, ec)) throw std::runtime_error("report: " + dir.string() + " is not a folder (give a run's report folder)");
  if (!fs::exists(file, ec)) {
    if (ec) throw std::runtime_error("report: " + file.string() + ": " + ec.message());
    throw std::runtime_error("report: no " + file.string() + " (not a report folder, or its run never finished writing one)");
  }
  std::string text;
  try {
    text = read_file_text(file);  // a directory, FIFO, device or oversize file is named, never read
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("report: ") + e.what());
  }
  if (text.empty()) {
    throw std::runtime_error("report: " + file.string() +
                             " is empty (0 bytes): corrupt, e.g. its disk filled up or its run was killed while writing it");
  }
  json summary;
  try {
    summary = parse_json_text(text, "report: " + file.string());
  } catch (const json::exception& e) {
    throw std::runtime_error("report: " + (dir / kSummaryFile).string() + " is not JSON: " + json_error_text(e));
  }
  if (!summary.is_object()) throw std::runtime_error("report: " + (dir / kSummaryFile).string() + " is not a JSON object");
  check_summary(summary, file);
  ReportFiles f;
  f.summary = dir / kSummaryFile;
  f.junit = dir / kJUnitFile;
  f.html = dir / kHtmlFile;
  f.summary_json = summary;
  // Fields below the top level (the run's details, coverage) are read as written; one of the
  // wrong type is named here rather than reported as a library error.
  std::string junit, html;
  try {
    junit = junit_xml(summary);
    try {
      f.plots = render_plots(summary, dir / "plots", f.plot_note);
    } catch (const std::exception& e) {
      f.plot_note = std::string("plots not rendered: ") + e.what();
    }
    html = html_report(summary, f.plots, f.plot_note);
  } catch (const json::exception& e) {
    throw std::runtime_error("report: " + file.string() + ": a field of the wrong type or shape (" + e.what() +
                             "): not a summary this version wrote, or edited");
  }
  write_text(f.junit, junit);
  write_text(f.html, html);
  return f;
}

}  // namespace lockstep::reports
