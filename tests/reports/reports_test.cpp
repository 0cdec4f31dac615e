#include <gtest/gtest.h>

#include <map>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "lockstep/engine/check.h"
#include "lockstep/format/elf.h"
#include "lockstep/reports/files.h"
#include "lockstep/reports/report.h"
#include "scripted_backend.h"
#include "test_files.h"
#include "test_guest.h"

namespace lockstep::reports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_dir(const std::string& name) { return engine::testing::fresh_temp_dir("reports", name); }

using engine::testing::slurp;

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// A summary with two streams, one of which diverged.
json sample_summary() {
  json div = {{"step", 1234},
              {"disassembly", "addi a0, a0, 1"},
              {"pc_hex", "0x10010"},
              {"word", "0x00150513"},
              {"field", "W1"},
              {"byte_index", 1},
              {"expected_text", "W1(0x12)"},
              {"actual_text", "W1(0x13)"},
              {"expected", 530},
              {"actual", 531},
              {"bits_text", "payload bits 0x1 (bit 0)"},
              {"note", "a note <with markup>"},
              {"mode", "free"},
              {"fault", "single-step"},
              {"fault_text", "replay <agrees>"},
              {"attribution", {{"text", "layer 3 (mlp): field next_payload_lo"}}},
              {"recent", json::array({{{"first_step", 1233}, {"pc_hex", "0x10010"}, {"disassembly", "addi a0, a0, 1"},
                                       {"token_text", {"W0(0x01)", "W1(0x12)"}}}})}};
  json run = {{"mode", "free"},
              {"backend", "cpu"},
              {"seconds", 2.5},
              {"steps_per_second", 1000.0},
              {"throughput", json::array({{0.5, 400}, {1.0, 900}, {2.5, 2500}})},
              {"streams", json::array({{{"guest", "ok&good"}, {"steps", 1266}, {"end", "exit"}, {"mismatches", 0},
                                        {"digest", "00000000000000aa"}, {"class_steps", {{"alu", 1000}, {"load", 266}}},
                                        {"console", "hello <world>\n"}},
                                       {{"guest", "bad"}, {"steps", 1234}, {"end", "diverged"}, {"mismatches", 1},
                                        {"digest", "00000000000000bb"}, {"class_steps", {{"alu", 1234}}},
                                        {"divergence", div}}})}};
  return {{"status", "mismatch"}, {"command", "run"}, {"steps", 2500}, {"mismatches", 1},
          {"digest", "0123456789abcdef"}, {"chip", "built"}, {"run", run}};
}

// sample_summary() as an exact run's: status "exact", 0 mismatches, the diverged stream left out.
void make_exact(json& s) {
  s["status"] = "exact";
  s["mismatches"] = 0;
  s["run"]["streams"].erase(1);
}

TEST(JUnit, OneCasePerStreamAndAFailureForTheDivergence) {
  const std::string x = junit_xml(sample_summary());
  EXPECT_NE(x.find("<testsuite name=\"lockstep run free\" tests=\"2\" failures=\"1\" errors=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testcase classname=\"lockstep.run.free\" name=\"ok&amp;good\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"first divergence at step 1234 (pc 0x10010): addi a0, a0, 1, W1 expected W1(0x12), got W1(0x13)\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("replay &lt;agrees&gt;"), std::string::npos);
  EXPECT_NE(x.find("<property name=\"digest\" value=\"0123456789abcdef\"/>"), std::string::npos);
  EXPECT_EQ(count(x, "<testcase "), 2u);
}

// Bytes that are not UTF-8 (a guest or folder named with them) are written as U+FFFD in JUnit
// and HTML, valid UTF-8 is kept: the files stay well-formed (found by an outside tester: no XML
// parser accepted such a junit.xml).
// A run under a step limit has the same case names whether it passes or fails, so that a CI's test
// history follows one test (found by an outside tester: the passing run's names had a suffix that
// the failing run's lacked).
TEST(JUnit, AStepLimitIsInTheNameWhateverTheOutcome) {
  json failing = sample_summary();
  failing["run"]["max_steps"] = 1500;
  json passing = failing;
  make_exact(passing);
  passing["run"]["streams"][0]["end"] = "step_limit";
  for (const json& s : {failing, passing}) {
    const std::string x = junit_xml(s);
    EXPECT_NE(x.find("name=\"ok&amp;good (first 1500 steps)\""), std::string::npos) << x;
  }
  EXPECT_NE(junit_xml(failing).find("name=\"bad (first 1500 steps)\""), std::string::npos);
  // The passing prefix says in its text that it is no more than a prefix.
  EXPECT_NE(junit_xml(passing).find("partial check: the first 1266 steps, the guest had not ended"), std::string::npos)
      << junit_xml(passing);
  // Without a step limit, no suffix.
  EXPECT_EQ(junit_xml(sample_summary()).find("(first "), std::string::npos);
}

TEST(JUnit, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  json s = sample_summary();
  s["run"]["streams"][0]["guest"] = "g\xff\xfe-\xc3\xa9-\xed\xa0\x80-\xe2\x82";  // bad, é, a surrogate, cut
  const std::string fffd = "\xef\xbf\xbd";
  const std::string want = "g" + fffd + fffd + "-\xc3\xa9-" + fffd + fffd + fffd + "-" + fffd + fffd;
  const std::string x = junit_xml(s);
  EXPECT_NE(x.find("name=\"" + want + "\""), std::string::npos) << x;
  EXPECT_EQ(x.find("\xff"), std::string::npos);
  const std::string html = html_report(s, {}, "");
  EXPECT_NE(html.find(want), std::string::npos);
  EXPECT_EQ(html.find("\xff"), std::string::npos);
}

// The same guest forced and free in one CI job: two suites and two classnames, never two identical
// test cases ("lockstep.run" / "hello" for both before).
TEST(JUnit, TheModeIsInTheSuiteAndClassname) {
  json forced = sample_summary();
  forced["run"]["mode"] = "forced";
  const std::string f = junit_xml(forced), x = junit_xml(sample_summary());
  EXPECT_NE(f.find("<testsuite name=\"lockstep run forced\""), std::string::npos) << f;
  EXPECT_NE(f.find("<testcase classname=\"lockstep.run.forced\" name=\"bad\""), std::string::npos) << f;
  EXPECT_NE(x.find("<testcase classname=\"lockstep.run.free\" name=\"bad\""), std::string::npos) << x;
  json story = sample_summary();
  story["command"] = "story";
  // The story check has no mode of its own (teacher-forced, then free): no mode in its names, which
  // read "story free" when every compared step was teacher-forced.
  const std::string st = junit_xml(story);
  EXPECT_NE(st.find("<testsuite name=\"lockstep story\""), std::string::npos) << st;
  EXPECT_NE(st.find("<testcase classname=\"lockstep.story\" name=\"bad\""), std::string::npos) << st;
  json replay = forced;
  replay["command"] = "replay";
  EXPECT_NE(junit_xml(replay).find("<testcase classname=\"lockstep.replay.forced\" name=\"ok&amp;good\""),
            std::string::npos);
}

// The file agrees with the status: "mismatch" has a <failure> even when no stream's case is red
// (before: failures="0" errors="0" beside exit 1), "interrupted" an <error> even when a stream's
// case is only a failure.
TEST(JUnit, AMismatchStatusAlwaysHasAFailure) {
  json s = sample_summary();
  s["run"]["streams"].erase(1);  // the stream that diverged
  std::string x = junit_xml(s);
  EXPECT_NE(x.find("tests=\"2\" failures=\"1\" errors=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testcase classname=\"lockstep.run.free\" name=\"run\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"1 mismatches (the run&#39;s status is mismatch; no guest&#39;s case names it)\""),
            std::string::npos)
      << x;
  s = sample_summary();
  s["status"] = "interrupted";
  x = junit_xml(s);
  EXPECT_NE(x.find("failures=\"1\" errors=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<error message=\"interrupted after 2500 steps\""), std::string::npos) << x;
  // An exact run is all green.
  s = sample_summary();
  s["status"] = "exact";
  s["mismatches"] = 0;
  s["run"]["streams"].erase(1);
  x = junit_xml(s);
  EXPECT_NE(x.find("tests=\"1\" failures=\"0\" errors=\"0\""), std::string::npos) << x;
}

TEST(JUnit, ErrorAndInterruptedRuns) {
  json s = {{"status", "error"}, {"command", "story"}, {"steps", 7}, {"mismatches", 0}, {"error", "boom <1>"}};
  std::string x = junit_xml(s);
  EXPECT_NE(x.find("errors=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<error message=\"boom &lt;1&gt;\""), std::string::npos) << x;
  s = {{"status", "interrupted"}, {"command", "run"}, {"steps", 70}, {"mismatches", 0},
       {"run", {{"interrupted", true}, {"streams", json::array({{{"guest", "g"}, {"steps", 70}, {"end", "interrupted"}}})}}}};
  x = junit_xml(s);
  EXPECT_NE(x.find("<error message=\"interrupted after 70 steps\""), std::string::npos) << x;
}

// A run that failed mid-way (a chip under test that died at step 98,240 of a longer guest): the
// guest's own testcase is an error too, never a pass beside a separate error case, and the error
// is counted once (found by an outside tester: one failed run of one guest read errors="2").
TEST(JUnit, GuestCutShortByAFailedRunIsAnError) {
  const json s = {{"status", "error"}, {"command", "run"}, {"steps", 98240}, {"mismatches", 0},
                  {"error", "chip under test: chip process exited"},
                  {"run", {{"streams", json::array({{{"guest", "crc32"}, {"steps", 98240}, {"end", "running"}}})}}}};
  const std::string x = junit_xml(s);
  EXPECT_NE(x.find("tests=\"1\" failures=\"0\" errors=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testcase classname=\"lockstep.run\" name=\"crc32\""), std::string::npos) << x;
  EXPECT_NE(x.find("<error message=\"the run failed after 98240 steps, before this guest&#39;s end: chip under test: "
                   "chip process exited\""),
            std::string::npos)
      << x;
  // A guest that did reach its end in the same failed run stays green.
  json two = s;
  two["run"]["streams"].push_back({{"guest", "hello"}, {"steps", 500}, {"end", "exit"}});
  EXPECT_NE(junit_xml(two).find("tests=\"2\" failures=\"0\" errors=\"1\""), std::string::npos) << junit_xml(two);
  // A trap where the run asked for the guest's exit: the error is the guest's own case, never a
  // green case beside a second one for the run (found by an outside tester).
  const json trap = {{"status", "error"}, {"command", "run"}, {"steps", 8}, {"mismatches", 0},
                     {"error", "the guest ended in trap 9 EBREAK"},
                     {"run", {{"streams", json::array({{{"guest", "t"}, {"steps", 8}, {"end", "trap"}}})}}}};
  const std::string y = junit_xml(trap);
  EXPECT_NE(y.find("tests=\"1\" failures=\"0\" errors=\"1\""), std::string::npos) << y;
  EXPECT_NE(y.find("<testcase classname=\"lockstep.run\" name=\"t\""), std::string::npos) << y;
  EXPECT_NE(y.find("<error message=\"the guest ended in trap 9 EBREAK\""), std::string::npos) << y;
  // With --allow-trap the trap is the guest's result: green.
  json allowed = trap;
  allowed["status"] = "exact";
  allowed.erase("error");
  EXPECT_NE(junit_xml(allowed).find("tests=\"1\" failures=\"0\" errors=\"0\""), std::string::npos) << junit_xml(allowed);
}

// A campaign's summary has no streams: interrupted is still an error, never a pass (issue 27).
TEST(JUnit, InterruptedRunWithoutStreamsIsAnError) {
  const json s = {{"status", "interrupted"}, {"command", "fuzz"}, {"steps", 900}, {"mismatches", 0}};
  const std::string x = junit_xml(s);
  EXPECT_NE(x.find("errors=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<error message=\"interrupted after 900 steps\""), std::string::npos) << x;
}

// A campaign with failures: one <failure> per failing program, named by index and mode, with its
// case folder and replay command (before: one "fuzz" case that named none of them).
TEST(JUnit, ACampaignListsEachFailingProgram) {
  const json failures = json::array(
      {{{"index", 17}, {"mode", "free"}, {"step", 34}, {"case", "/r/fail-17-free"}, {"program_seed", 99},
        {"repeat_batch", "lockstep fuzz --seed 5 --first 16 --programs 16"},
        {"repeat", "lockstep fuzz --seed 5 --first 17 --programs 1 --mode free"}, {"pc", 0x10098}, {"pc_hex", "0x10098"},
        {"disassembly", "lui s4, 0xdd362"}, {"field", "PCL"}, {"expected_text", "PCL(0x26)"},
        {"actual_text", "EXIT(0x00)"}},
       {{"index", 40}, {"mode", "forced"}, {"step", 7}, {"case", "/r/fail-40-forced"}, {"program_seed", 12},
        {"not_shrunk", "the chip under test failed: exited"}}});
  const json s = {{"status", "mismatch"}, {"command", "fuzz"}, {"steps", 5000}, {"mismatches", 2},
                  {"fuzz", {{"seed", 5}, {"programs", 64}, {"failures", failures}}}};
  const std::string x = junit_xml(s);
  // The campaign's own case, two failing programs, and one passing case for the other 62 (found by
  // an outside tester: the file read as a 100% failure rate). The campaign's case and the passing
  // one keep their names whatever the counts, for a CI's test history (found by an outside tester:
  // "fuzz" vanished when the campaign failed).
  EXPECT_NE(x.find("tests=\"4\" failures=\"3\" errors=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testcase classname=\"lockstep.fuzz\" name=\"fuzz\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"2 failing runs (the cases named by program list them)\""), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"programs without a divergence\""), std::string::npos) << x;
  EXPECT_NE(x.find("62 of the 64 programs: no divergence"), std::string::npos) << x;
  EXPECT_NE(x.find("<testcase classname=\"lockstep.fuzz\" name=\"program 17 (free)\""), std::string::npos) << x;
  // Where it diverged, as the text says it (found by an outside tester: no instruction, field or
  // tokens), and the campaign's seed.
  EXPECT_NE(x.find("<failure message=\"first divergence at step 34 (pc 0x10098 lui s4, 0xdd362): PCL expected "
                   "PCL(0x26), got EXIT(0x00); case in /r/fail-17-free\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<failure message=\"first divergence at step 7; case in /r/fail-40-forced\""), std::string::npos) << x;
  EXPECT_NE(x.find("<property name=\"seed\" value=\"5\"/>"), std::string::npos) << x;
  // The page has a row per failing program.
  const std::string h = html_report(s, {}, "");
  EXPECT_NE(h.find("<h2>Failing programs</h2>"), std::string::npos) << h;
  EXPECT_NE(h.find("<td>17</td><td>free</td><td>99</td><td>34</td><td><code>0x10098  lui s4, 0xdd362</code></td><td>PCL</td>"
                   "<td>PCL(0x26)</td><td>EXIT(0x00)</td><td><code>/r/fail-17-free</code><br>replay: <code>lockstep replay "
                   "/r/fail-17-free</code></td>"),
            std::string::npos)
      << h;
  EXPECT_EQ(h.find("<h2>Streams</h2>"), std::string::npos) << h;  // a campaign has no streams table
  EXPECT_NE(x.find("replay: lockstep replay /r/fail-17-free"), std::string::npos) << x;
  // The program alone first, then its batch (found by an outside tester: only the batch's command).
  EXPECT_NE(x.find("repeat: lockstep fuzz --seed 5 --first 17 --programs 1 --mode free\nrepeat its batch: lockstep fuzz "
                   "--seed 5 --first 16 --programs 16"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("name=\"program 40 (forced)\""), std::string::npos) << x;
  EXPECT_NE(x.find("not shrunk: the chip under test failed: exited"), std::string::npos) << x;
  // A campaign without failures: one passing case for the whole run.
  const json clean = {{"status", "exact"}, {"command", "fuzz"}, {"steps", 5000}, {"mismatches", 0},
                      {"fuzz", {{"seed", 5}, {"programs", 64}, {"failures", json::array()}}}};
  const std::string y = junit_xml(clean);
  // (the same two stable names as a failing campaign's: found by an outside tester, the passing
  // programs' case was missing from a clean campaign's file)
  EXPECT_NE(y.find("tests=\"2\" failures=\"0\" errors=\"0\""), std::string::npos) << y;
  EXPECT_NE(y.find("<testcase classname=\"lockstep.fuzz\" name=\"fuzz\""), std::string::npos) << y;
  EXPECT_NE(y.find("name=\"programs without a divergence\""), std::string::npos) << y;
  EXPECT_NE(y.find("64 of the 64 programs: no divergence"), std::string::npos) << y;
  EXPECT_NE(y.find("<property name=\"seed\" value=\"5\"/>"), std::string::npos) << y;
  EXPECT_EQ(y.find("digest"), std::string::npos) << y;  // a campaign has none: no empty "digest "
  // A campaign stopped before its first batch ended keeps both names too (found by an outside
  // tester: only "fuzz" was there), its own case an <error>.
  const json stopped = {{"status", "interrupted"}, {"command", "fuzz"}, {"steps", 0}, {"mismatches", 0},
                        {"interrupted", true}, {"fuzz", {{"seed", 7}, {"programs", 0}, {"failures", json::array()}}}};
  const std::string z = junit_xml(stopped);
  EXPECT_NE(z.find("tests=\"2\" failures=\"0\" errors=\"1\""), std::string::npos) << z;
  EXPECT_NE(z.find("name=\"programs without a divergence\""), std::string::npos) << z;
  EXPECT_NE(z.find("0 of the 0 programs: no divergence"), std::string::npos) << z;
}

// How an interrupted run goes on: a run resumes; a campaign names the programs it left; a run that
// diverged before the stop is not told to resume. A note (a fuzz case that passes alone) is shown
// (found by an outside tester: "--resume" on a campaign's page, which fuzz refuses).
TEST(Html, AnInterruptedRunSaysHowToGoOn) {
  json s = {{"status", "interrupted"}, {"command", "run"}, {"steps", 70}, {"mismatches", 0}, {"run", {{"interrupted", true}}}};
  // without checkpoints it cannot be resumed (found by an outside tester: the page said to resume)
  const std::string none = html_report(s, {}, "");
  EXPECT_NE(none.find("stopped after 70 steps; it wrote no checkpoints, so it cannot be resumed: run it again"),
            std::string::npos) << none;
  EXPECT_EQ(none.find("--resume"), std::string::npos) << none;
  s["run"]["checkpoints_written"] = 2;
  EXPECT_NE(html_report(s, {}, "").find("stopped after 70 steps; resume with --resume"), std::string::npos);
  // the whole command when the summary has it (found by an outside tester: only "--resume")
  s["resume"] = "lockstep run --resume 'my runs/r1'";
  EXPECT_NE(html_report(s, {}, "").find("stopped after 70 steps; continue with: lockstep run --resume &#39;my runs/r1&#39;"),
            std::string::npos)
      << html_report(s, {}, "");
  s.erase("resume");
  // a replay has no --resume: it is run again (found by an outside tester: the page suggested
  // --checkpoint-every, which replay refuses)
  s["command"] = "replay";
  s["run"].erase("checkpoints_written");
  const std::string r = html_report(s, {}, "");
  EXPECT_NE(r.find("stopped after 70 steps; replay the case again"), std::string::npos) << r;
  EXPECT_EQ(r.find("--checkpoint-every"), std::string::npos) << r;
  s["command"] = "fuzz";
  s["resume_with"] = "run the programs left: lockstep fuzz with --seed 3 --first 32 --programs 1968";
  const std::string f = html_report(s, {}, "");
  EXPECT_NE(f.find("stopped after 70 steps; run the programs left: lockstep fuzz with --seed 3 --first 32"), std::string::npos)
      << f;
  EXPECT_EQ(f.find("--resume"), std::string::npos) << f;
  s = {{"status", "mismatch"}, {"command", "run"}, {"steps", 448}, {"mismatches", 1},
       {"run", {{"interrupted", true},
                {"streams", json::array({{{"guest", "g"}, {"steps", 448}, {"mismatches", 1},
                                          {"divergence", {{"step", 448}, {"field", "PCL"}}}}})}}},
       {"note", "passes alone <here>"}};
  const std::string m = html_report(s, {}, "");
  EXPECT_NE(m.find("stopped after 448 steps, after the divergence below"), std::string::npos) << m;
  EXPECT_EQ(m.find("--resume"), std::string::npos) << m;
  EXPECT_NE(m.find("<p class=\"note\">passes alone &lt;here&gt;</p>"), std::string::npos) << m;
}

// --compare end whose divergence was not located: the JUnit failure and the page say why, and a
// stopped campaign with failures still names the programs it left (outside tester).
TEST(Html, AnUnlocatedDivergenceAndAStoppedCampaignWithFailures) {
  const json s = {{"status", "mismatch"}, {"command", "run"}, {"steps", 5000}, {"mismatches", 1},
                  {"run", {{"interrupted", true},
                           {"streams", json::array({{{"guest", "crc32"}, {"steps", 5000}, {"mismatches", 1},
                                                     {"end", "interrupted"},
                                                     {"divergence_unlocated", "stopped before its bisection"}}})}}}};
  const std::string x = junit_xml(s);
  EXPECT_NE(x.find("<failure message=\"the digests of the 5000 steps compared differ: a divergence lies among them, not "
                   "located: stopped before its bisection\""),
            std::string::npos)
      << x;
  const std::string h = html_report(s, {}, "");
  EXPECT_NE(h.find("<h2>Divergence not located: crc32</h2>"), std::string::npos) << h;
  EXPECT_NE(h.find("stopped after 5000 steps, with a divergence not located (below)"), std::string::npos) << h;
  EXPECT_EQ(h.find("after the divergence below"), std::string::npos) << h;

  const json f = {{"status", "mismatch"}, {"command", "fuzz"}, {"steps", 900}, {"mismatches", 1},
                  {"interrupted", true}, {"run", {{"interrupted", true}, {"seconds", 1.5}}},
                  {"resume_with", "run the programs left: lockstep fuzz with --seed 9 --first 16 --programs 184"},
                  {"fuzz", {{"seed", 9}, {"programs", 16}, {"failures", json::array({{{"index", 3}, {"step", 7}}})}}}};
  const std::string fh = html_report(f, {}, "");
  EXPECT_NE(fh.find("stopped after 900 steps; run the programs left: lockstep fuzz with --seed 9 --first 16 --programs 184"),
            std::string::npos)
      << fh;
  const std::string fx = junit_xml(f);
  EXPECT_NE(fx.find("<property name=\"interrupted\" value=\"run the programs left: lockstep fuzz with --seed 9 --first 16"),
            std::string::npos)
      << fx;
  EXPECT_NE(fx.find("time=\"1.500\""), std::string::npos) << fx;
}

// A campaign's page says, per failing program, whether its case was shrunk and how to replay it,
// and the page shows the chip's hash and the chip under test's identity (found by an outside
// tester: "its saved case is the program shrunk" stood above cases that were not, and neither
// the replay commands nor the chip's identity were on the page).
TEST(Html, ACampaignsCasesSayHowToReplayThem) {
  const json f = {
      {"status", "mismatch"}, {"command", "fuzz"}, {"steps", 900}, {"mismatches", 2},
      {"chip", "dut ./my chip"}, {"chip_hash", "000f3217465495f8"},
      {"dut", {{"identity", "000f3217465495f8"}}},
      {"fuzz", {{"seed", 9}, {"programs", 16},
                {"failures", json::array({{{"index", 3}, {"step", 7}, {"case", "/r/fail 3"}, {"original_words", 40},
                                           {"shrunk_words", 6}, {"case_divergence", {{"step", 4}, {"pc_hex", "0x10008"}}}},
                                          {{"index", 5}, {"step", 9}, {"case", "/r/fail-5"}, {"original_words", 40},
                                           {"shrunk_words", 40}, {"not_shrunk", "run alone, it did not diverge"},
                                           {"reproduces_alone", false}, {"repeat_batch", "lockstep fuzz --seed 9 --first 0 --programs 8"}}})}}}};
  const std::string h = html_report(f, {}, "");
  EXPECT_NE(h.find("replay: <code>lockstep replay &#39;/r/fail 3&#39;</code>"), std::string::npos) << h;
  EXPECT_NE(h.find("replay: <code>lockstep replay /r/fail-5</code>"), std::string::npos) << h;
  EXPECT_EQ(count(h, "not shrunk"), 1u) << h;
  EXPECT_NE(h.find("<br>shrunk from 40 to 6 words; run alone it diverges at step 4, <code>0x10008"), std::string::npos) << h;
  EXPECT_NE(h.find("<br>not shrunk: run alone, it did not diverge"), std::string::npos) << h;
  EXPECT_NE(h.find("repeat its batch: <code>lockstep fuzz --seed 9 --first 0 --programs 8</code>"), std::string::npos) << h;
  EXPECT_NE(h.find("<tr><th>chip hash</th><td>000f3217465495f8</td></tr>"), std::string::npos) << h;
  EXPECT_NE(h.find("<tr><th>chip under test&#39;s identity</th><td>000f3217465495f8</td></tr>"), std::string::npos) << h;
  const std::string x = junit_xml(f);
  EXPECT_NE(x.find("<property name=\"chip_hash\" value=\"000f3217465495f8\"/>"), std::string::npos) << x;
  EXPECT_NE(x.find("<property name=\"dut_identity\" value=\"000f3217465495f8\"/>"), std::string::npos) << x;
}

// A short run (one throughput sample, one instruction class, one stream): no plot is drawn and
// gnuplot is not run; the raw JSON is folded behind <details> (issue 27).
TEST(Html, ShortRunHasNoPlotsAndFoldsTheJson) {
  const fs::path dir = temp_dir("short-run");
  const json s = {{"status", "exact"}, {"command", "run"}, {"steps", 12}, {"mismatches", 0},
                  {"run", {{"throughput", json::array({{0.01, 12}})},
                           {"streams", json::array({{{"guest", "g"}, {"steps", 12}, {"end", "exit"},
                                                     {"class_steps", {{"alu", 12}}}}})}}}};
  std::string note;
  const auto plots = render_plots(s, dir / "plots", note);
  EXPECT_TRUE(plots.empty());
  if (note.find("not found") == std::string::npos) {
    EXPECT_EQ(note, "");
  }
  EXPECT_FALSE(fs::exists(dir / "plots" / "gnuplot.log"));
  const std::string html = html_report(s, plots, "");
  EXPECT_EQ(html.find("<h2>Plots</h2>"), std::string::npos);
  EXPECT_NE(html.find("<details><summary>Summary JSON"), std::string::npos);
}

// A VMAT's thousands of tokens in "Last instructions": the first 8, the last 4 and those around
// the divergent step, the gaps counted (found by an outside tester: a line of about 25,000
// characters).
TEST(Html, ALongInstructionShowsItsTokensAroundTheDivergence) {
  json s = sample_summary();
  json tokens = json::array();
  for (int i = 0; i < 3000; ++i) tokens.push_back("VY(" + std::to_string(i) + ")");
  json& d = s["run"]["streams"][1]["divergence"];
  ASSERT_TRUE(d.is_object()) << s.dump();
  d["step"] = 1000 + 1500;
  d["recent"] = json::array({{{"first_step", 1000}, {"pc_hex", "0x10010"}, {"disassembly", "vmat"}, {"token_text", tokens}}});
  const fs::path dir = temp_dir("long-insn");
  setenv("LOCKSTEP_GNUPLOT", "/nonexistent/gnuplot", 1);
  write_report(dir, s);
  unsetenv("LOCKSTEP_GNUPLOT");
  const std::string html = slurp(dir / kHtmlFile);
  const std::string line = "step 1000  0x10010  vmat  -> VY(0) VY(1) VY(2) VY(3) VY(4) VY(5) VY(6) VY(7) ... (1484 tokens) ... "
                           "VY(1492) VY(1493) VY(1494) VY(1495) VY(1496) VY(1497) VY(1498) VY(1499) VY(1500) VY(1501) VY(1502) "
                           "VY(1503) VY(1504) VY(1505) VY(1506) VY(1507) VY(1508) ... (1487 tokens) ... VY(2996) VY(2997) "
                           "VY(2998) VY(2999)\n";
  EXPECT_NE(html.find(line), std::string::npos) << html.substr(html.find("Last instructions"), 2000);
}

TEST(Html, RendersWithPlotsFromGnuplot) {
  const fs::path dir = temp_dir("with-gnuplot");
  unsetenv("LOCKSTEP_GNUPLOT");
  const ReportFiles f = write_report(dir, sample_summary());
  if (!f.plot_note.empty() && f.plot_note.find("not found") != std::string::npos) {
    GTEST_SKIP() << "gnuplot is not installed here: " << f.plot_note;
  }
  EXPECT_EQ(f.plot_note, "");
  ASSERT_EQ(f.plots.size(), 3u);
  for (const Plot& p : f.plots) EXPECT_NE(p.svg.find("<svg"), std::string::npos) << p.name;
  const std::string html = slurp(dir / kHtmlFile);
  EXPECT_EQ(count(html, "<svg"), 3u);
  // No element id repeats in the page: gnuplot names the same ids in every SVG (found by an outside
  // tester); each plot's ids and references carry its name.
  std::map<std::string, int> ids;
  for (std::size_t at = html.find(" id="); at != std::string::npos; at = html.find(" id=", at + 4)) {
    const std::size_t end = html.find(html[at + 4], at + 5);
    ++ids[html.substr(at + 5, end - at - 5)];
  }
  EXPECT_GT(ids.size(), 3u);
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << "id " << id << " appears " << n << " times";
  EXPECT_NE(html.find("id=\"classes-gnuplot_canvas\""), std::string::npos);
  EXPECT_EQ(html.find("'#gpPt"), std::string::npos);  // every reference follows its plot's ids
  EXPECT_NE(html.find("Divergence: bad, step 1234"), std::string::npos);
  EXPECT_NE(html.find("payload bits 0x1 (bit 0)"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>note</th><td>a note &lt;with markup&gt;</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("layer 3 (mlp): field next_payload_lo"), std::string::npos);
  EXPECT_NE(html.find("hello &lt;world&gt;"), std::string::npos);
  EXPECT_EQ(json::parse(slurp(dir / kSummaryFile)), sample_summary());
  // Throughput data: steps/s between samples.
  EXPECT_EQ(slurp(dir / "plots" / "throughput.dat"), "0.5 800 400\n1 1000 900\n2.5 1066.67 2500\n");
  EXPECT_EQ(slurp(dir / "plots" / "classes.dat"), "\"alu\" 2234\n\"load\" 266\n");
}

// A report folder's name is never gnuplot code (found by an outside tester: a name with a newline
// ran "system(...)" from the rest of it), and a guest's name with '"' is a whole label.
TEST(Html, AFolderNameIsNeverGnuplotCode) {
  unsetenv("LOCKSTEP_GNUPLOT");
  const fs::path root = temp_dir("gnuplot-names");
  const fs::path marker = root / "ran";
  const fs::path dir = root / ("r'\nsystem(\"touch " + marker.string() + "\")\n#");
  json s = sample_summary();
  s["run"]["streams"][0]["guest"] = "say \"hi\"\nthere";
  const ReportFiles f = write_report(dir, s);
  if (f.plot_note.find("not found") != std::string::npos) GTEST_SKIP() << "gnuplot is not installed here";
  EXPECT_FALSE(fs::exists(marker)) << "the folder's name ran as a command";
  EXPECT_EQ(f.plot_note, "");
  ASSERT_EQ(f.plots.size(), 3u);
  for (const Plot& p : f.plots) EXPECT_NE(p.svg.find("<svg"), std::string::npos) << p.name;
  EXPECT_EQ(slurp(dir / "plots" / "streams.dat"), "0 1266 \"say ?hi??there\"\n1 1234 \"bad\"\n");
}

// A render that fails shows no plots of an earlier render (found by an outside tester: the page
// said "not rendered" above the old pictures).
TEST(Html, AFailedRenderShowsNoEarlierPlots) {
  unsetenv("LOCKSTEP_GNUPLOT");
  const fs::path dir = temp_dir("stale-plots");
  const ReportFiles first = write_report(dir, sample_summary());
  if (first.plot_note.find("not found") != std::string::npos) GTEST_SKIP() << "gnuplot is not installed here";
  ASSERT_EQ(count(slurp(dir / kHtmlFile), "<svg"), 3u);
  const fs::path bad = dir.parent_path() / "failing-gnuplot";
  std::ofstream(bad) << "#!/bin/sh\necho 'no terminal' >&2\nexit 1\n";
  fs::permissions(bad, fs::perms::owner_all);
  setenv("LOCKSTEP_GNUPLOT", bad.c_str(), 1);
  const ReportFiles f = write_report(dir, sample_summary());
  unsetenv("LOCKSTEP_GNUPLOT");
  EXPECT_EQ(f.plot_note, "plots not rendered: gnuplot failed (exit 1): no terminal");
  EXPECT_EQ(count(slurp(dir / kHtmlFile), "<svg"), 0u);
}

TEST(Html, RendersWithoutGnuplotAndSaysSo) {
  const fs::path dir = temp_dir("without-gnuplot");
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  const ReportFiles f = write_report(dir, sample_summary());
  unsetenv("LOCKSTEP_GNUPLOT");
  EXPECT_NE(f.plot_note.find("plots not rendered: gnuplot was not found"), std::string::npos);
  const std::string html = slurp(dir / kHtmlFile);
  EXPECT_NE(html.find("plots not rendered"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 0u);
  EXPECT_NE(html.find("Divergence: bad, step 1234"), std::string::npos);
}

// A report that cannot be written whole changes none of its files (found by an outside tester:
// on a full disk report.html failed after summary.json and junit.xml said "exact", and the run,
// an error, read as a pass). Here the page cannot be written (a folder holds its name).
TEST(Render, AReportNotWrittenWholeLeavesEveryFileAsItWas) {
  const fs::path dir = temp_dir("not-whole");
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  const std::string placeholder = R"({"status": "error", "error": "did not finish"})";
  std::ofstream(dir / kSummaryFile) << placeholder;
  std::ofstream(dir / "fuzz.json") << "{}";
  fs::create_directories(dir / kHtmlFile);
  try {
    write_report(dir, sample_summary(), {{"fuzz.json", "{\"clean\": true}"}});
    ADD_FAILURE() << "a page that cannot be written was not an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "report: cannot write " + (dir / kHtmlFile).string() +
                                         ": it is a directory, not a file");
  }
  EXPECT_EQ(slurp(dir / kSummaryFile), placeholder);
  EXPECT_EQ(slurp(dir / "fuzz.json"), "{}");
  EXPECT_FALSE(fs::exists(dir / kJUnitFile));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  // once it can be written, all of them are
  fs::remove(dir / kHtmlFile);
  write_report(dir, sample_summary(), {{"fuzz.json", "{\"clean\": true}"}});
  unsetenv("LOCKSTEP_GNUPLOT");
  EXPECT_EQ(slurp(dir / "fuzz.json"), "{\"clean\": true}");
  EXPECT_EQ(slurp(dir / kJUnitFile), junit_xml(sample_summary()));
  EXPECT_NE(slurp(dir / kSummaryFile), placeholder);
}

// A JSON error quotes at most the last 40 characters it read (a truncated case.json quoted its
// whole base64 guest on one line of over 1 KB).
TEST(Render, AJsonErrorQuotesLittleOfItsInput) {
  const std::string text = "{\"elf_base64\": \"" + std::string(1000, 'A');
  try {
    (void)parse_json_text(text, "case.json");
    ADD_FAILURE() << "a truncated text parsed";
  } catch (const nlohmann::json::exception& e) {
    const std::string t = json_error_text(e);
    EXPECT_LT(t.size(), 200u) << t;
    EXPECT_NE(t.find("last read: '..." + std::string(39, 'A')), std::string::npos) << t;
    EXPECT_EQ(json_error_text(std::runtime_error("short: last read: 'ab'")), "short: last read: 'ab'");
  }
}

TEST(Render, AgainFromTheSavedSummary) {
  const fs::path dir = temp_dir("render");
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  write_report(dir, sample_summary());
  fs::remove(dir / kHtmlFile);
  fs::remove(dir / kJUnitFile);
  const ReportFiles f = render_report(dir);
  unsetenv("LOCKSTEP_GNUPLOT");
  EXPECT_TRUE(fs::exists(f.html));
  EXPECT_EQ(slurp(f.junit), junit_xml(sample_summary()));
  EXPECT_THROW(render_report(temp_dir("render-empty")), std::runtime_error);
  std::ofstream(temp_dir("render-bad") / kSummaryFile) << "{not json";
  EXPECT_THROW(render_report(fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "reports" / "render-bad"),
               std::runtime_error);
}

// A check that is interrupted (SIGINT/SIGTERM set the stop flag) or throws
// still leaves a report saying how far it got.
class Throwing final : public chip::ChipBackend {
 public:
  explicit Throwing(engine::testing::ScriptedBackend& inner, std::uint64_t at) : inner_(inner), at_(at) {}
  std::string name() const override { return "throwing"; }
  void load(std::shared_ptr<const chip::Chip> c) override { inner_.load(c); }
  const chip::Chip& chip() const override { return inner_.chip(); }
  void set_num_streams(std::size_t n) override { inner_.set_num_streams(n); }
  std::size_t num_streams() const override { return inner_.num_streams(); }
  void reset(chip::StreamId s, const chip::GuestImage& g) override {
    if (at_ == 0) throw std::runtime_error("executor failed at reset");
    inner_.reset(s, g);
  }
  void step_batch(std::span<const chip::StreamId> s, std::span<const chip::Token> in, std::span<chip::Token> out) override {
    if (inner_.steps(s[0]) + 1 == at_) {
      if (stop_first) stop_first->store(true);  // as SIGINT reaching a chip process and the harness
      throw std::runtime_error("executor failed at step " + std::to_string(at_));
    }
    inner_.step_batch(s, in, out);
  }
  std::uint64_t hash(chip::StreamId s) const override { return inner_.hash(s); }
  std::vector<std::uint8_t> save(chip::StreamId s) const override { return inner_.save(s); }
  void restore(chip::StreamId s, const std::vector<std::uint8_t>& b) override { inner_.restore(s, b); }
  std::uint64_t steps(chip::StreamId s) const override { return inner_.steps(s); }
  void set_probe_recording(bool on) override { inner_.set_probe_recording(on); }
  std::vector<float> probe(chip::StreamId s, int l, chip::Sublayer a, const std::string& f) const override {
    return inner_.probe(s, l, a, f);
  }
  void set_audit(bool on) override { inner_.set_audit(on); }
  std::optional<chip::AuditViolation> audit_violation(chip::StreamId s) const override { return inner_.audit_violation(s); }

  std::atomic<bool>* stop_first = nullptr;  ///< set before the failure when not null

 private:
  engine::testing::ScriptedBackend& inner_;
  std::uint64_t at_;
};

engine::CheckRequest request_for(const fs::path& elf, const fs::path& dir) {
  engine::CheckRequest req;
  req.the_case.guest_path = elf;
  req.the_case.guest_name = "loop";
  req.the_case.mode = engine::Mode::kFree;
  req.the_case.checkpoint_every = 100;
  req.report_dir = dir;
  return req;
}

// A check of the 50-iteration loop guest, reported into temp_dir(name), on a backend that throws
// at step `at` (0: at its reset).
struct ThrowingCheck {
  ThrowingCheck(const std::string& name, std::uint64_t at)
      : dir(temp_dir(name)), guest(engine::testing::make_loop_guest(50)),
        inner({engine::testing::reference_trace(guest)}), be(inner, at) {
    format::write_elf_file(dir.parent_path() / (name + ".elf"), guest.image);
    req = request_for(dir.parent_path() / (name + ".elf"), dir);
    req.backend = &be;
  }
  json summary() const { return json::parse(slurp(dir / kSummaryFile)); }
  fs::path dir;
  engine::Guest guest;
  engine::testing::ScriptedBackend inner;
  Throwing be;
  engine::CheckRequest req;
};

TEST(CheckReports, InterruptedRunLeavesAReportOfHowFarItGot) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  const fs::path dir = temp_dir("interrupted");
  const auto guest = engine::testing::make_loop_guest(50);
  format::write_elf_file(dir.parent_path() / "loop50.elf", guest.image);
  engine::testing::ScriptedBackend be({engine::testing::reference_trace(guest)});
  std::atomic<bool> stop{false};
  be.stop_flag = &stop;
  be.stop_at = 321;
  engine::CheckRequest req = request_for(dir.parent_path() / "loop50.elf", dir);
  req.backend = &be;
  req.options.stop = &stop;
  std::ostringstream err;
  const engine::CheckOutcome out = engine::run_check(req, err);
  unsetenv("LOCKSTEP_GNUPLOT");
  EXPECT_TRUE(out.result.interrupted);
  const json s = json::parse(slurp(dir / kSummaryFile));
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["steps"], 321);
  EXPECT_EQ(s["run"]["streams"][0]["end"], "interrupted");
  EXPECT_NE(slurp(dir / kJUnitFile).find("interrupted after 321 steps"), std::string::npos);
  EXPECT_NE(slurp(dir / kHtmlFile).find("stopped after 321 steps"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "case.json"));
  EXPECT_EQ(engine::list_checkpoints(dir / "checkpoints").back(), 321u);
}

TEST(CheckReports, FailingRunLeavesAnErrorReportAndRethrows) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  ThrowingCheck c("error", 200);
  std::ostringstream err;
  EXPECT_THROW(engine::run_check(c.req, err), std::runtime_error);
  unsetenv("LOCKSTEP_GNUPLOT");
  const json s = c.summary();
  EXPECT_EQ(s["status"], "error");
  // how far the run came, and the checkpoint --resume goes on from
  const std::string line = "executor failed at step 200 (the run had compared 199 steps, no mismatch; `lockstep run "
                           "--resume " + c.dir.string() + "` continues from the checkpoint of step 100)";
  EXPECT_EQ(s["error"], line);
  EXPECT_EQ(s["steps"], 199);
  EXPECT_TRUE(fs::exists(c.dir / "checkpoints" / "ckpt-000000000100.lsck"));
  // The guest's case is the one error, and names the run's error.
  const std::string x = slurp(c.dir / kJUnitFile);
  EXPECT_NE(x.find("tests=\"1\" failures=\"0\" errors=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<error message=\"the run failed after 199 steps, before this guest&#39;s end: executor failed at step "
                   "200 (the run had compared 199 steps"),
            std::string::npos)
      << x;
}

// A chip call that fails after SIGINT/SIGTERM set the stop flag (a chip under test killed by the
// same signal, a wait given up) ends the run as interrupted with the steps compared so far: no
// error, no exception.
TEST(CheckReports, AChipFailureAfterTheStopIsAnInterruption) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  ThrowingCheck c("stopped-failure", 200);
  std::atomic<bool> stop{false};
  c.be.stop_first = &stop;
  c.req.options.stop = &stop;
  std::ostringstream err;
  const engine::CheckOutcome out = engine::run_check(c.req, err);
  unsetenv("LOCKSTEP_GNUPLOT");
  EXPECT_TRUE(out.result.interrupted);
  EXPECT_EQ(out.result.steps, 199u);
  const json s = c.summary();
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["steps"], 199);
  EXPECT_FALSE(s.contains("error")) << s.dump();
  EXPECT_EQ(s["run"]["streams"][0]["end"], "interrupted");
}

// A run that fails before its first step (here: the chip's reset) reports the seconds it ran,
// not the time since boot (the engine's clock was unset until the first round).
TEST(CheckReports, AFailureAtTheFirstStepReportsItsOwnSeconds) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  ThrowingCheck c("error-first", 0);
  std::ostringstream err;
  EXPECT_THROW(engine::run_check(c.req, err), std::runtime_error);
  unsetenv("LOCKSTEP_GNUPLOT");
  const json s = c.summary();
  EXPECT_EQ(s["status"], "error");
  EXPECT_EQ(s["error"], "executor failed at reset");
  EXPECT_EQ(s["steps"], 0);
  ASSERT_TRUE(s["run"].contains("seconds")) << s.dump();
  EXPECT_GE(s["run"]["seconds"].get<double>(), 0.0);
  EXPECT_LT(s["run"]["seconds"].get<double>(), 60.0) << s.dump();
}

// `lockstep report DIR` renders only a summary it can read as one: a wrong status, a count that
// is not a whole number, a status that contradicts the counts, or a field of the wrong type is
// one line naming the file and the field (before, "weird" was reported as a mismatch and a
// string count as a library message).
TEST(Render, RefusesASummaryWithAWrongField) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  struct Row {
    std::string name;
    std::function<void(json&)> edit;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"weird-status", [](json& s) { s["status"] = "weird"; }, "\"status\" is \"weird\", not one of"},
      {"no-status", [](json& s) { s.erase("status"); }, "no \"status\""},
      {"string-steps", [](json& s) { s["steps"] = "3"; }, "\"steps\" is \"3\", not a whole number >= 0"},
      {"negative-mismatches", [](json& s) { s["mismatches"] = -1; }, "\"mismatches\" is -1, not a whole number"},
      {"huge-steps", [](json& s) { s["steps"] = 1e300; }, "\"steps\" is 1e+300, not a whole number"},
      {"chip-number", [](json& s) { s["chip"] = 5; }, "\"chip\" is 5, not text"},
      {"exact-with-mismatches", [](json& s) { s["status"] = "exact"; s["mismatches"] = 3; },
       "\"status\" \"exact\" with 3 mismatches"},
      {"seconds-text", [](json& s) { s["run"]["seconds"] = "slow"; }, "\"run.seconds\" is \"slow\", not a number of seconds >= 0"},
      {"throughput-text", [](json& s) { s["run"]["throughput"] = "fast"; }, "\"run.throughput\" is \"fast\", not a list"},
      // Below the top level (an outside tester's edits of an exact summary.json, each rendered
      // with exit 0 before, one with a JUnit failure beside it).
      {"exact-run-mismatches", [](json& s) { make_exact(s); s["run"]["mismatches"] = 5; },
       "\"run.mismatches\" is 5 but \"mismatches\" is 0 (status \"exact\")"},
      {"exact-stream-mismatches", [](json& s) { make_exact(s); s["run"]["streams"][0]["mismatches"] = 2; },
       "\"status\" \"exact\" with \"run.streams[0].mismatches\" 2"},
      {"exact-divergence", [](json& s) { make_exact(s); s["run"]["streams"][0]["divergence"] = {{"step", 5}}; },
       "\"status\" \"exact\" with a divergence in \"run.streams[0].divergence\""},
      {"exact-run-interrupted", [](json& s) { make_exact(s); s["run"]["interrupted"] = true; },
       "\"status\" \"exact\" with \"run.interrupted\" true"},
      {"exact-interrupted", [](json& s) { make_exact(s); s["interrupted"] = true; },
       "\"status\" \"exact\" with \"interrupted\" true"},
      {"exact-stream-interrupted", [](json& s) { make_exact(s); s["run"]["streams"][0]["end"] = "interrupted"; },
       "\"status\" \"exact\" with \"run.streams[0].end\" \"interrupted\""},
      {"exact-self-loop", [](json& s) { make_exact(s); s["run"]["streams"][0]["end"] = "self_loop"; },
       "\"status\" \"exact\" with \"run.streams[0].end\" \"self_loop\""},
      // (an outside tester's edit: the divergence deleted, "end" left as it was, rendered green)
      {"exact-stream-diverged", [](json& s) { make_exact(s); s["run"]["streams"][0]["end"] = "diverged"; },
       "\"status\" \"exact\" with \"run.streams[0].end\" \"diverged\""},
      {"exact-end-diverged", [](json& s) { make_exact(s); s["end"] = "diverged"; },
       "\"status\" \"exact\" with \"end\" \"diverged\""},
      {"interrupted-divergence", [](json& s) { s["status"] = "interrupted"; s["mismatches"] = 0; },
       "\"status\" \"interrupted\" with a divergence in \"run.streams[1].divergence\""},
      {"mismatch-streams-exact", [](json& s) { s["run"]["streams"].erase(1); },
       "the streams' \"mismatches\" add up to 0 but \"mismatches\" is 1"},
      {"divergence-without-mismatch", [](json& s) { s["run"]["streams"][1]["mismatches"] = 0; },
       "\"run.streams[1].divergence\" is given but \"run.streams[1].mismatches\" is 0"},
      {"run-interrupted-text", [](json& s) { s["run"]["interrupted"] = "yes"; },
       "\"run.interrupted\" is \"yes\", not true or false"},
      {"streams-object", [](json& s) { s["run"]["streams"] = json::object(); }, "\"run.streams\" is {}, not a list"},
      {"stream-mismatches-text", [](json& s) { s["run"]["streams"][1]["mismatches"] = "1"; },
       "\"run.streams[1].mismatches\" is \"1\", not a whole number"},
      // Fields the page and plots read (an outside tester's edits, each rendered as exact before)
      {"guest-number", [](json& s) { s["run"]["streams"][0]["guest"] = 5; }, "\"run.streams[0].guest\" is 5, not text"},
      {"class-steps-negative", [](json& s) { s["run"]["streams"][0]["class_steps"] = {{"upper", -5}}; },
       "\"run.streams[0].class_steps.upper\" is -5, not a whole number >= 0"},
      {"class-steps-text", [](json& s) { s["run"]["streams"][0]["class_steps"] = {{"x", "y"}}; },
       "\"run.streams[0].class_steps.x\" is \"y\", not a whole number >= 0"},
      {"throughput-bad", [](json& s) { s["run"]["throughput"] = json::array({json::array({1, "a"}), nullptr}); },
       "\"run.throughput[0]\" is [1,\"a\"], not [seconds, steps]"},
      {"seconds-negative", [](json& s) { s["run"]["seconds"] = -1e308; }, "\"run.seconds\" is -1e+308, not a number of seconds >= 0"},
      // Counts that contradict each other (an outside tester's edits, rendered with exit 0 before:
      // the first with a JUnit <failure> beside "exact")
      {"exact-fuzz-failures",
       [](json& s) {
         make_exact(s);
         s["fuzz"] = {{"programs", 3}, {"failures", json::array({{{"index", 1}, {"mode", "forced"}}})}};
       },
       "\"status\" \"exact\" with 1 failing run in \"fuzz.failures\""},
      {"run-steps-contradict", [](json& s) { s["run"]["steps"] = 2499; }, "\"run.steps\" is 2499 but \"steps\" is 2500"},
      {"stream-past-limit", [](json& s) { s["run"]["max_steps"] = 1250; },
       "\"run.streams[0].steps\" is 1266, past \"run.max_steps\" 1250"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const fs::path dir = temp_dir("render-" + r.name);
    json s = sample_summary();
    r.edit(s);
    std::ofstream(dir / kSummaryFile) << s.dump();
    try {
      render_report(dir);
      ADD_FAILURE() << "rendered " << s.dump();
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("report: " + (dir / kSummaryFile).string() + ": ", 0), 0u) << what;
      EXPECT_NE(what.find(r.says), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  // An exact summary beside a case.json that expects a divergence is not that run's (an outside
  // tester's edit rendered green; replay of the folder exits 1).
  {
    const fs::path dir = temp_dir("render-exact-beside-a-divergent-case");
    json s = sample_summary();
    make_exact(s);
    std::ofstream(dir / kSummaryFile) << s.dump();
    std::ofstream(dir / "case.json") << R"({"expect": {"first_divergence": 422, "field": "W0"}})";
    try {
      render_report(dir);
      ADD_FAILURE() << "rendered an exact summary beside a case expecting a divergence";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("\"status\" \"exact\", but the case.json beside it expects a divergence at "
                                           "step 422: not that run's summary"),
                std::string::npos)
          << e.what();
    }
    std::ofstream(dir / "case.json", std::ios::trunc) << R"({"expect": {"first_divergence": null}})";
    EXPECT_NO_THROW(render_report(dir));
  }
  unsetenv("LOCKSTEP_GNUPLOT");
  // The unedited summary still renders, and so does its exact form, all green.
  const fs::path ok = temp_dir("render-ok");
  std::ofstream(ok / kSummaryFile) << sample_summary().dump();
  EXPECT_NO_THROW(render_report(ok));
  json exact = sample_summary();
  make_exact(exact);
  exact["run"]["mismatches"] = 0;
  exact["run"]["interrupted"] = false;
  std::ofstream(ok / kSummaryFile, std::ios::trunc) << exact.dump();
  EXPECT_NE(slurp(render_report(ok).junit).find("failures=\"0\" errors=\"0\""), std::string::npos);
}

// A summary.json nested deeper than any lockstep writes (100,000 levels) is refused in one line,
// not walked: it crashed `lockstep report` (stack), and 20,000 levels wrote an 800 MB page
// (found by an outside tester).
TEST(Render, RefusesASummaryNestedTooDeep) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  const fs::path dir = temp_dir("render-deep");
  std::ofstream(dir / kSummaryFile) << "{\"status\":\"exact\",\"steps\":0,\"mismatches\":0,\"x\":"
                                    << std::string(100000, '[') << std::string(100000, ']') << "}";
  try {
    render_report(dir);
    ADD_FAILURE() << "rendered";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "report: " + (dir / kSummaryFile).string() +
                                         " nests arrays and objects deeper than 64 levels: not a file lockstep wrote");
  }
  EXPECT_FALSE(fs::exists(dir / kHtmlFile));
}

// A key given twice in one object is refused, not read with its last value (found by an outside
// tester: a case.json and a summary.json with two "steps"); the same key in two objects is fine.
TEST(Render, RefusesAKeyGivenTwiceInOneObject) {
  setenv("LOCKSTEP_GNUPLOT", "none", 1);
  const fs::path dir = temp_dir("render-twice");
  std::ofstream(dir / kSummaryFile) << R"({"status":"exact","steps":0,"mismatches":0,"run":{"steps":0},"steps":5})";
  try {
    render_report(dir);
    ADD_FAILURE() << "rendered";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "report: " + (dir / kSummaryFile).string() +
                                         ": the key \"steps\" appears twice in one object (which of its values counts "
                                         "is not known): not a file lockstep wrote");
  }
  EXPECT_FALSE(fs::exists(dir / kHtmlFile));
  std::ofstream(dir / kSummaryFile, std::ios::trunc)
      << R"({"status":"exact","steps":0,"mismatches":0,"run":{"steps":0,"streams":[{"steps":0},{"steps":0}]}})";
  EXPECT_NO_THROW(render_report(dir));
  unsetenv("LOCKSTEP_GNUPLOT");
}

}  // namespace
}  // namespace lockstep::reports
