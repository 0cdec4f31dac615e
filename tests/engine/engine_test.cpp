// Engine mechanics with the TEST-ONLY ScriptedBackend (not a chip): the
// reference trace with planted faults.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include <xxhash.h>

#include "lockstep/engine/check.h"
#include "lockstep/engine/digest.h"
#include "lockstep/engine/engine.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/tokens.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/machine.h"
#include "scripted_backend.h"
#include "test_files.h"
#include "test_guest.h"

namespace lockstep::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Fault;
using testing::ScriptedBackend;

fs::path temp_dir(const std::string& name) { return testing::fresh_temp_dir("engine", name); }

std::string xxh3_of(const std::vector<std::uint32_t>& t) {
  return hex64(XXH3_64bits(t.data(), t.size() * 4));
}

// The first step >= from whose reference token has kind W0.
std::uint64_t first_w0_at_or_after(const std::vector<std::uint32_t>& trace, std::uint64_t from) {
  for (std::uint64_t n = from; n <= trace.size(); ++n)
    if (trace[n - 1] >> 8 == 1) return n;
  return 0;
}

TEST(GuestImage, ConvertsSegmentsBssSectionsAndEntry) {
  const Guest g = testing::make_loop_guest(3);
  const chip::GuestImage c = to_chip_image(g.image);
  EXPECT_EQ(c.entry, 0x10000u);
  ASSERT_EQ(c.segments.size(), 2u);
  EXPECT_EQ(c.segments[0].address, 0x10000u);
  EXPECT_EQ(c.segments[0].bytes, g.image.segments[0].bytes);
  EXPECT_EQ(c.segments[1].address, 0x20000u);
  ASSERT_EQ(c.segments[1].bytes.size(), 64u);  // memsz: .bss is explicit
  EXPECT_EQ(c.segments[1].bytes[0], 'h');
  EXPECT_EQ(c.segments[1].bytes[63], 0);
  EXPECT_EQ(c.sections.at(".extra"), (std::vector<std::uint8_t>{1, 2, 3}));
  EXPECT_EQ(c.read(0x20001, 2), (std::vector<std::uint8_t>{'i', '\n'}));
}

TEST(Digest, MatchesOneShotXxh3AndSurvivesSaveRestore) {
  const std::vector<std::uint32_t> t = {0, 511, 767, 8191, 12345};
  TraceDigest d;
  d.update(std::span<const std::uint32_t>(t.data(), 2));
  TraceDigest e;
  e.restore(d.save());
  e.update(std::span<const std::uint32_t>(t.data() + 2, 3));
  EXPECT_EQ(e.hex(), xxh3_of(t));
  EXPECT_EQ(hex64(0x1234), "0000000000001234");
}

class EngineTest : public ::testing::TestWithParam<Mode> {};

TEST_P(EngineTest, ExactRunComparesEveryStepAndDigestsTheTrace) {
  const Guest g = testing::make_loop_guest(40);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace});
  Options o;
  o.mode = GetParam();
  Engine e(be, {g}, o);
  const RunResult r = e.run();
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.steps, trace.size());
  EXPECT_EQ(r.streams[0].end, "exit");
  EXPECT_EQ(r.streams[0].exit_status, 0u);
  EXPECT_EQ(r.digest, xxh3_of(trace));
  EXPECT_EQ(r.streams[0].chip_digest, xxh3_of(trace));
  EXPECT_EQ(r.streams[0].console, "hi\n");
  EXPECT_FALSE(r.streams[0].divergence.has_value());
  // Steps per class: 40 loop iterations of add/sw/lw/addi/bne; every
  // instruction starts with PCL (the guest's words are all below 256, so PCH
  // only before the first one, an lui: trace.md §4.0).
  EXPECT_EQ(r.streams[0].class_steps.at("store"), 40u * 9);  // PCL A0..A3 S0..S3
  EXPECT_EQ(r.streams[0].class_steps.at("branch"), 40u * 2);  // PCL BR
  EXPECT_EQ(r.streams[0].class_steps.at("div"), 37u);       // PCL, 32 DQ, W
  // The reference alone gives the same digest.
  const StreamResult ref = run_reference(g, 0);
  EXPECT_EQ(ref.digest, r.digest);
  EXPECT_EQ(ref.steps, trace.size());
  EXPECT_EQ(ref.class_steps, r.streams[0].class_steps);
}

// divergence_note: a trap on one side only is named, with what it most likely means.
TEST(DivergenceNote, TrapOnOneSideOnly) {
  const std::uint32_t vrd0 = format::token_id(format::Kind::VRD, 0), trap1 = format::token_id(format::Kind::TRAP, 1);
  EXPECT_EQ(divergence_note(vrd0, trap1),
            "the chip raises TRAP(1) ILLEGAL_INSTRUCTION where the reference does not trap (it emits VRD(0)): either "
            "the chip does not implement this instruction (a chip that compiles part of the machine raises TRAP(1) "
            "on the rest) or decodes it wrongly, or a fault upstream sends it to the trap (the layer line lists the "
            "candidates)");
  EXPECT_EQ(divergence_note(format::token_id(format::Kind::TRAP, 20), format::token_id(format::Kind::VWG, 0)),
            "the reference raises TRAP(20) VEC_OVERLAP and the chip does not (VWG(0)): either the chip misses this "
            "trap check, or a fault upstream hides the trap (the layer line lists the candidates)");
  EXPECT_EQ(divergence_note(trap1, format::token_id(format::Kind::TRAP, 17)), "") << "both trap: the codes differ";
  EXPECT_EQ(divergence_note(format::token_id(format::Kind::W1, 5), format::token_id(format::Kind::W1, 7)), "");
}

// START is a token of the vocabulary but never a step's output: a chip that predicts it gets a note,
// as one that predicts an id of no token does (found by an outside tester: none was given).
TEST(DivergenceNote, StartAndIdsOfNoToken) {
  const std::uint32_t w1 = format::token_id(format::Kind::W1, 5);
  EXPECT_NE(divergence_note(w1, format::kStartToken).find("the chip predicted START (id 0), which is only the input of step 1"),
            std::string::npos);
  EXPECT_EQ(divergence_note(w1, 256 * 13 + 2), "the chip predicted id 3330, which is no token trace-v3 can produce");
}

// A chip that traps where the reference does not: the report carries the note (text and JSON).
TEST_P(EngineTest, ChipTrapWhereReferenceDoesNotIsNoted) {
  const Guest g = testing::make_loop_guest(40);
  const auto trace = testing::reference_trace(g);
  std::uint64_t n = 0;  // a W1 token; XOR with (2 ^ 32) << 8 makes it TRAP(payload)
  for (std::uint64_t s = 300; s <= trace.size(); ++s)
    if (trace[s - 1] >> 8 == 2) {
      n = s;
      break;
    }
  ASSERT_GT(n, 0u);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, n, (2u ^ 32u) << 8, 1}});
  Options o;
  o.mode = GetParam();
  o.classify_window = 64;
  Engine e(be, {g}, o);
  const RunResult r = e.run();
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(d.actual >> 8, 32u);
  EXPECT_EQ(d.note, divergence_note(d.expected, d.actual));
  EXPECT_EQ(d.note.rfind("the chip raises TRAP(", 0), 0u) << d.note;
  EXPECT_NE(d.to_text().find("  note:        the chip raises TRAP("), std::string::npos) << d.to_text();
  EXPECT_EQ(d.to_json().at("note"), d.note);
}

TEST_P(EngineTest, SingleStepFaultIsReportedWithItsFieldsAndClassified) {
  const Guest g = testing::make_loop_guest(40);
  const auto trace = testing::reference_trace(g);
  const auto pcs = testing::reference_pcs(g);
  // A W1 token (byte 1 of a written value) inside the loop.
  std::uint64_t n = 0;
  for (std::uint64_t s = 300; s <= trace.size(); ++s)
    if (trace[s - 1] >> 8 == 2) {
      n = s;
      break;
    }
  ASSERT_GT(n, 0u);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, n, 0x10, 1}});
  Options o;
  o.mode = GetParam();
  o.snapshot_every = 128;
  o.classify_window = 200;
  Engine e(be, {g}, o);
  const RunResult r = e.run();
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.steps, n);
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(r.streams[0].end, "diverged");
  EXPECT_EQ(d.step, n);
  EXPECT_EQ(d.mode, GetParam());
  EXPECT_EQ(d.pc, pcs[n - 1]);
  ref::Machine m;
  m.load(g.image);
  EXPECT_EQ(d.word, m.read_word(d.pc));
  EXPECT_EQ(d.disassembly, ref::disassemble(d.word, d.pc));
  EXPECT_EQ(d.field, "W1");
  EXPECT_EQ(d.byte_index, 1);
  EXPECT_EQ(d.token_in_instruction, 2u) << "PCL, W0, W1 of an add or addi";
  EXPECT_EQ(d.expected, trace[n - 1]);
  EXPECT_EQ(d.actual, trace[n - 1] ^ 0x10);
  EXPECT_EQ(d.differing_bits, 0x10u);
  EXPECT_EQ(d.bits_text, "payload bits 0x10 (bit 4)");
  EXPECT_EQ(d.expected_text, format::token_name(trace[n - 1]));
  EXPECT_EQ(d.actual_text, format::token_name(trace[n - 1] ^ 0x10));
  // The last instructions end with the divergent one.
  ASSERT_GE(d.recent.size(), 2u);
  ASSERT_LE(d.recent.size(), 8u);
  EXPECT_EQ(d.recent.back().pc, d.pc);
  EXPECT_EQ(d.recent.back().tokens.at(2), trace[n - 1]);
  EXPECT_EQ(d.recent.back().first_step, n - 2);
  // Replay from the last snapshot (every 128 steps) classifies it.
  EXPECT_EQ(d.replay_from, (n - 1) / 128 * 128);
  EXPECT_EQ(d.fault, FaultClass::kSingleStep) << d.fault_text;
  EXPECT_EQ(d.replay_window, 200u);
  EXPECT_EQ(d.replay_mismatches, 0u);
  // Payload bit 4 is in the high nibble: layer 1's next_payload_hi disagrees,
  // after next_kind (layer 0) and the embedding agreed.
  EXPECT_EQ(d.attribution.status, "layer") << d.attribution.text;
  EXPECT_EQ(d.attribution.layer, 1);
  EXPECT_EQ(d.attribution.sublayer, "mlp");
  EXPECT_EQ(d.attribution.field, "next_payload_hi");
  ASSERT_EQ(d.attribution.checks.size(), 5u);
  EXPECT_EQ(d.attribution.checks[0].field, "kind");
  EXPECT_EQ(d.attribution.checks[2].field, "next_kind");
  EXPECT_TRUE(d.attribution.checks[3].agrees);  // next_payload_lo: 0x10 leaves the low nibble
  EXPECT_FALSE(d.attribution.checks[4].agrees);
  const std::string text = d.to_text();
  EXPECT_NE(text.find("step " + std::to_string(n)), std::string::npos);
  EXPECT_NE(text.find(d.disassembly), std::string::npos);
  // JSON round trip of the report fields.
  const auto j = d.to_json();
  EXPECT_EQ(j["step"], n);
  EXPECT_EQ(j["field"], "W1");
  EXPECT_EQ(j["fault"], "single-step");
  EXPECT_EQ(j["attribution"]["field"], "next_payload_hi");
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineTest, ::testing::Values(Mode::kForced, Mode::kFree),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(Engine, CorruptedStateIsToldFromASingleStepFault) {
  const Guest g = testing::make_loop_guest(40);
  const auto trace = testing::reference_trace(g);
  const std::uint64_t m = 500;
  ScriptedBackend be({trace}, {{Fault::Kind::kCorruptFrom, m, 0, 1}});
  Options o;
  o.mode = Mode::kFree;
  o.snapshot_every = 64;
  Engine e(be, {g}, o);
  const RunResult r = e.run();
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(d.step, first_w0_at_or_after(trace, m));
  EXPECT_EQ(d.mode, Mode::kFree);
  EXPECT_EQ(d.field, "W0");
  EXPECT_EQ(d.byte_index, 0);
  EXPECT_EQ(d.fault, FaultClass::kCorruptedState) << d.fault_text;
  EXPECT_GT(d.replay_mismatches, 0u);
  ASSERT_FALSE(d.replay_mismatch_steps.empty());
  // Every other W0 from step m is wrong: the next W0 is right, the one after it wrong again.
  EXPECT_EQ(d.replay_mismatch_steps[0], first_w0_at_or_after(trace, first_w0_at_or_after(trace, d.step + 1) + 1));
  EXPECT_EQ(d.attribution.field, "next_payload_lo");
}

// A divergence at the first token of its kind in the run says so (a chip that names a whole
// kind wrongly, as a wrong --dut-vocab line does, fails there first); a later one does not.
TEST(Engine, FirstTokenOfItsKindIsNoted) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  const std::uint64_t first = first_w0_at_or_after(trace, 1);
  const std::uint64_t later = first_w0_at_or_after(trace, first + 1);
  ASSERT_GT(later, first);
  for (const std::uint64_t step : {first, later}) {
    ScriptedBackend be({trace}, {{Fault::Kind::kFlip, step, 1, 1}});
    const RunResult r = Engine(be, {g}, Options{}).run();
    ASSERT_TRUE(r.streams[0].divergence);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.step, step);
    if (step == first) {
      EXPECT_NE(d.note.find("this is the first W0 token of the run"), std::string::npos) << d.note;
      EXPECT_NE(d.note.find("check the embedding and unembedding of W0"), std::string::npos) << d.note;
    } else {
      EXPECT_EQ(d.note, "");
    }
  }
}

// A wrong pc at an instruction's first token names the instruction before it: the branch that
// chose it (taken), or the instruction it falls through from (found by an outside tester: the
// report named only the target instruction).
TEST(Engine, AWrongPcNamesTheInstructionBeforeIt) {
  const Guest g = testing::make_loop_guest(5);
  const auto trace = testing::reference_trace(g);
  const std::uint32_t loop_pcl = 256u * static_cast<std::uint32_t>(format::Kind::PCL) + 6;  // pc 0x10018: word 0x4006
  std::vector<std::uint64_t> at;
  for (std::uint64_t n = 1; n <= trace.size(); ++n)
    if (trace[n - 1] == loop_pcl) at.push_back(n);
  ASSERT_GE(at.size(), 2u);
  struct Want {
    std::uint64_t step;
    std::string says;
  };
  for (const Want& w : {Want{at[0], "which follows `addi t1, zero, 7` at pc 0x10014 (pc + 4)"},
                        Want{at[1], "where the branch before it, `bne t0, zero, 0x10018` at pc 0x10028, went on "
                                    "the reference (taken)"}}) {
    ScriptedBackend be({trace}, {{Fault::Kind::kFlip, w.step, 1, 1}});
    const RunResult r = Engine(be, {g}, Options{}).run();
    ASSERT_TRUE(r.streams[0].divergence);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.step, w.step);
    EXPECT_EQ(d.field, "PCL");
    EXPECT_NE(d.note.find(w.says), std::string::npos) << d.note;
  }
}

// Two wrong tokens of one instruction (its W0 and W1), every later step right: the replay's
// later mismatch is the same instruction's, so the fault is one instruction's (it was called
// corrupted state). A wrong token in a later instruction still is corrupted state.
TEST(Engine, WrongTokensWithinOneInstructionAreASingleInstructionFault) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  const std::uint64_t w0 = first_w0_at_or_after(trace, 200);
  ASSERT_EQ(trace[w0] >> 8, static_cast<std::uint32_t>(format::Kind::W1));  // W1 follows in the same instruction
  {
    ScriptedBackend be({trace}, {{Fault::Kind::kFlip, w0, 1, 1}, {Fault::Kind::kFlip, w0 + 1, 1, 1}});
    const RunResult r = Engine(be, {g}, Options{}).run();
    ASSERT_TRUE(r.streams[0].divergence);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.step, w0);
    EXPECT_EQ(d.fault, FaultClass::kSingleInstruction) << d.fault_text;
    EXPECT_EQ(d.to_json()["fault"], "single-instruction");
    EXPECT_NE(d.fault_text.find("1 more of the same instruction's tokens (steps " + std::to_string(w0 + 1) + ".."),
              std::string::npos)
        << d.fault_text;
  }
  const std::uint64_t later = first_w0_at_or_after(trace, w0 + 8);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, w0, 1, 1}, {Fault::Kind::kFlip, later, 1, 1}});
  const RunResult r = Engine(be, {g}, Options{}).run();
  ASSERT_TRUE(r.streams[0].divergence);
  EXPECT_EQ(r.streams[0].divergence->fault, FaultClass::kCorruptedState) << r.streams[0].divergence->fault_text;
}

// The same instruction wrong each time it runs (its W0 in every execution), every other step
// right: a recurring-instruction fault, not corrupted state (found by an outside tester: a chip
// whose MULHSU was wrong every time was sent to look for state corruption). Wrong in only some of
// its executions, it is not called that (a re-test: a state only that instruction reads, or an
// operation wrong for some operands), and the text says which share of them.
TEST(Engine, AnInstructionWrongEachTimeItRunsIsARecurringInstructionFault) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  const auto pcs = testing::reference_pcs(g);
  const std::uint64_t w0 = first_w0_at_or_after(trace, 200);
  std::vector<std::uint64_t> later;
  for (std::uint64_t s = w0 + 1; s <= trace.size(); ++s)
    if (pcs[s - 1] == pcs[w0 - 1] && (trace[s - 1] >> 8) == static_cast<std::uint32_t>(format::Kind::W0)) later.push_back(s);
  ASSERT_GE(later.size(), 4u);
  std::vector<Fault> every = {{Fault::Kind::kFlip, w0, 1, 1}};
  for (std::uint64_t s : later) every.push_back({Fault::Kind::kFlip, s, 1, 1});
  {
    ScriptedBackend be({trace}, every);
    const RunResult r = Engine(be, {g}, Options{}).run();
    ASSERT_TRUE(r.streams[0].divergence);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.step, w0);
    EXPECT_EQ(d.fault, FaultClass::kRecurringInstruction) << d.fault_text;
    EXPECT_EQ(d.to_json()["fault"], "recurring-instruction");
    EXPECT_NE(d.fault_text.find("in each of its " + std::to_string(later.size()) + " later executions (at 1 pc)"),
              std::string::npos)
        << d.fault_text;
  }
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, w0, 1, 1}, {Fault::Kind::kFlip, later[0], 1, 1},
                               {Fault::Kind::kFlip, later[1], 1, 1}});
  const RunResult r = Engine(be, {g}, Options{}).run();
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(d.fault, FaultClass::kCorruptedState) << d.fault_text;
  EXPECT_NE(d.fault_text.find("wrong in 2 of its " + std::to_string(later.size()) + " later executions"), std::string::npos)
      << d.fault_text;
}

// The progress line's tail of what the guest printed reaches the terminal as printable ASCII
// only: a guest's escape sequences and binary bytes (an outside tester's guest wrote 1 MiB of
// them) are replaced.
TEST(ProgressLineTail, OnlyPrintableAsciiReachesTheTerminal) {
  std::ostringstream err;
  ProgressLine line(err, /*terminal=*/false);
  for (const char c : std::string("\x1b[2Jok\x9b\xff\x07!")) line.output(c);
  Progress p;
  p.round = 10;
  line.update(p);
  EXPECT_NE(err.str().find("|  [2Jok?? !\n"), std::string::npos) << err.str();
}

// A chip that names W0 tokens with the wrong ids (a wrong vocabulary map: W0(x) answered as
// W0(x ^ 1) every time), its state intact: the same later steps disagree as with corrupted
// state, but always as the same substitution, and that is what the replay says.
TEST(Engine, FixedSubstitutionOfTokenIdsIsATokenMapping) {
  const Guest g = testing::make_loop_guest(40);
  const auto trace = testing::reference_trace(g);
  const std::uint64_t m = 500;
  for (const Mode mode : {Mode::kForced, Mode::kFree}) {
    ScriptedBackend be({trace}, {{Fault::Kind::kMapFrom, m, 1, 1}});
    Options o;
    o.mode = mode;
    o.snapshot_every = 64;
    Engine e(be, {g}, o);
    const RunResult r = e.run();
    ASSERT_TRUE(r.streams[0].divergence) << to_string(mode);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.step, first_w0_at_or_after(trace, m));
    EXPECT_EQ(d.actual, trace[d.step - 1] ^ 1);
    EXPECT_EQ(d.fault, FaultClass::kTokenMapping) << d.fault_text;
    EXPECT_EQ(d.to_json()["fault"], "token-mapping");
    EXPECT_EQ(d.replay_mismatch_steps.at(0), first_w0_at_or_after(trace, d.step + 1));
    EXPECT_NE(d.fault_text.find("each as a fixed substitution"), std::string::npos) << d.fault_text;
    EXPECT_NE(d.fault_text.find(format::token_name(trace[d.step - 1] ^ 1) + " for " + format::token_name(trace[d.step - 1])),
              std::string::npos)
        << d.fault_text;
    EXPECT_NE(d.fault_text.find("unembedding"), std::string::npos) << d.fault_text;
  }
}

TEST(Engine, NondeterministicFaultIsNotReproduced) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlaky, 100, 1, 1}});
  Engine e(be, {g}, Options{});
  const RunResult r = e.run();
  ASSERT_TRUE(r.streams[0].divergence);
  EXPECT_EQ(r.streams[0].divergence->step, 100u);
  EXPECT_EQ(r.streams[0].divergence->fault, FaultClass::kNotReproduced);
}

// A chip whose FORCED/FREE path is wrong at one step and whose STEP path is right: the replay's
// one STEP request does not reproduce it, the same steps as FORCED requests do. That is a third
// cause beside nondeterminism and an inexact restore, and it is named.
TEST(Engine, ForcedOnlyFaultIsRequestDependent) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  for (const Mode m : {Mode::kForced, Mode::kFree}) {
    ScriptedBackend be({trace}, {{Fault::Kind::kForcedOnly, 100, 1, 1}});
    Options o;
    o.mode = m;
    Engine e(be, {g}, o);
    const RunResult r = e.run();
    ASSERT_TRUE(r.streams[0].divergence) << to_string(m);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.step, 100u);
    EXPECT_EQ(d.actual, trace[99] ^ 1);
    EXPECT_EQ(d.fault, FaultClass::kRequestDependent) << d.fault_text;
    EXPECT_NE(d.fault_text.find("one STEP request at step 100 gives " + format::token_name(trace[99]) +
                                ", but the same steps sent as FORCED requests give " + d.actual_text + " again"),
              std::string::npos)
        << d.fault_text;
    EXPECT_EQ(d.to_json()["fault"], "request-dependent");
  }
}

// An inexact RESTORE (the stream restored from the snapshot is not the saved one) shows in the
// chip's HASH; the replay that then diverges earlier says so instead of guessing.
TEST(Engine, InexactRestoreIsNamedByTheHash) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, 300, 1, 1}, {Fault::Kind::kBadRestore, 0, 0, 1}});
  Options o;
  o.snapshot_every = 128;
  Engine e(be, {g}, o);
  const RunResult r = e.run();
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(d.step, 300u);
  EXPECT_EQ(d.replay_from, 256u);
  EXPECT_EQ(d.fault, FaultClass::kNotReproduced) << d.fault_text;
  EXPECT_NE(d.fault_text.find("diverges earlier, at step 257"), std::string::npos) << d.fault_text;
  EXPECT_NE(d.fault_text.find("the chip's RESTORE is not exact: its HASH after restoring the snapshot of step 256 is "),
            std::string::npos)
      << d.fault_text;
  // The same chip with an exact restore: a single-step fault, and no word of RESTORE.
  ScriptedBackend good({trace}, {{Fault::Kind::kFlip, 300, 1, 1}});
  Engine e2(good, {g}, o);
  const RunResult r2 = e2.run();
  ASSERT_TRUE(r2.streams[0].divergence);
  EXPECT_EQ(r2.streams[0].divergence->fault, FaultClass::kSingleStep);
  EXPECT_EQ(r2.streams[0].divergence->fault_text.find("RESTORE"), std::string::npos);
}

TEST(Engine, AttributionBlamesTheKindLayerOrTheUnembedding) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  {
    // 0x300 changes the kind: next_kind (layer 0) is the first to disagree.
    ScriptedBackend be({trace}, {{Fault::Kind::kFlip, 77, 0x300, 0}});
    const RunResult r = Engine(be, {g}, Options{}).run();
    ASSERT_TRUE(r.streams[0].divergence);
    const Divergence& d = *r.streams[0].divergence;
    EXPECT_EQ(d.attribution.status, "layer");
    EXPECT_EQ(d.attribution.layer, 0);
    EXPECT_EQ(d.attribution.field, "next_kind");
    EXPECT_NE(d.bits_text.find("kind differs"), std::string::npos);
  }
  {
    // Every probe sees the right token: the unembedding is blamed.
    ScriptedBackend be({trace}, {{Fault::Kind::kFlip, 77, 1, 2}});
    const RunResult r = Engine(be, {g}, Options{}).run();
    ASSERT_TRUE(r.streams[0].divergence);
    EXPECT_EQ(r.streams[0].divergence->attribution.status, "unembedding");
    EXPECT_EQ(r.streams[0].divergence->attribution.layer, 1);
  }
}

// dut-check's judge of a chip's probes (engine::probe_inconsistency): the probes of a step agree
// with its own tokens, and a token they do not show is named with both values.
TEST(Engine, ProbeInconsistencyNamesTheFieldThatDisagreesWithTheTokens) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace});
  be.set_num_streams(1);
  be.reset(0, {});
  be.set_probe_recording(true);
  ASSERT_EQ(be.step(0, format::kStartToken), trace[0]);
  EXPECT_EQ(probe_inconsistency(be, 0, format::kStartToken, trace[0]), "");
  // The probes show the step's own tokens, so against another next token (kind + 3) they disagree.
  const std::uint32_t other = trace[0] + 0x300;
  const std::string why = probe_inconsistency(be, 0, format::kStartToken, other);
  EXPECT_EQ(why.rfind("field next_kind (onehot of the next token's kind) after layer 0 (mlp) is [", 0), 0u) << why;
  EXPECT_NE(why.find("the step's tokens (START in, " + format::token_name(other) + " out) give ["), std::string::npos)
      << why;
}

// Probes that are all zeros locate nothing: no layer is blamed on them.
TEST(Engine, AllZeroProbesBlameNoLayer) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace});
  be.set_num_streams(1);
  be.reset(0, {});
  be.set_probe_recording(true);
  be.step(0, format::kStartToken);
  be.zero_probes = true;
  const std::string why = probe_inconsistency(be, 0, format::kStartToken, trace[0]);
  EXPECT_EQ(why, "the chip's probes do not locate the divergence (every value of the 5 compared probe fields is 0 "
                 "(195 values), which the step's tokens do not give: the probes show no values the chip computed)");
}

// A guest that reaches `jal zero, 0` can never end: without a step limit the run compares that
// instruction once and ends "self_loop" (never a pass); with one it runs to the limit as asked.
TEST(Engine, AGuestThatJumpsToItselfEndsAsASelfLoop) {
  const Guest g = testing::make_spin_guest();
  const std::uint32_t jal_zero_0 = ref::encode::j(ref::Op::kJal, 0, 0);
  // The chip's script: the two addi, then the jump 3,000 times (the reference's own tokens; more
  // than a divergence's replay window).
  std::vector<std::size_t> ends;
  const std::vector<std::uint32_t> script = testing::reference_script(g, 3002, &ends);
  const std::size_t to_loop = ends[2];  // steps up to and including the jump's first execution
  for (Mode mode : {Mode::kForced, Mode::kFree}) {
    SCOPED_TRACE(to_string(mode));
    ScriptedBackend be({script});
    Options o;
    o.mode = mode;
    const RunResult r = Engine(be, {g}, o).run();
    ASSERT_EQ(r.streams.size(), 1u);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.streams[0].end, "self_loop");
    EXPECT_EQ(r.steps, to_loop);
    EXPECT_EQ(r.streams[0].loop_pc, 0x10008u);
    EXPECT_EQ(r.streams[0].loop_word, jal_zero_0);
    EXPECT_EQ(r.streams[0].to_json()["loop_pc"], 0x10008u);
    const std::string line = self_loop_line(r.streams[0]);
    EXPECT_NE(line.find("the guest jumps to itself at pc 0x00010008 (jal"), std::string::npos) << line;
    EXPECT_NE(line.find("stopped after " + std::to_string(to_loop) + " steps"), std::string::npos) << line;
    // The reference alone stops at the same step with the same digest.
    const StreamResult alone = run_reference(g, 0);
    EXPECT_EQ(alone.end, "self_loop");
    EXPECT_EQ(alone.steps, to_loop);
    EXPECT_EQ(alone.digest, r.digest);
    // With a step limit the run goes on to it.
    ScriptedBackend limited({script});
    o.max_steps = script.size() - 1;
    const RunResult l = Engine(limited, {g}, o).run();
    EXPECT_EQ(l.streams[0].end, "step_limit");
    EXPECT_EQ(l.steps, script.size() - 1);
    EXPECT_EQ(l.mismatches, 0u);
  }
  // A chip that gets the jump wrong is a mismatch at it, not a self-loop.
  ScriptedBackend wrong({script}, {{Fault::Kind::kFlip, to_loop, 1, 1}});
  const RunResult w = Engine(wrong, {g}, Options{}).run();
  EXPECT_EQ(w.mismatches, 1u);
  ASSERT_TRUE(w.streams[0].divergence);
  EXPECT_EQ(w.streams[0].divergence->step, to_loop);
}

// A loop of more than one instruction whose state repeats (a spin-wait on memory nothing writes,
// ref::LoopWatch) ends the same way, without a step limit: "self_loop", with its period and the
// pc where the state repeated, at the same step as the reference alone (before: a hang).
TEST(Engine, AGuestWhoseStateRepeatsEndsAsASelfLoop) {
  const Guest g = testing::make_spin_wait_guest();
  const std::vector<std::uint32_t> script = testing::reference_script(g, 3000);
  for (Mode mode : {Mode::kForced, Mode::kFree}) {
    SCOPED_TRACE(to_string(mode));
    ScriptedBackend be({script});
    Options o;
    o.mode = mode;
    const RunResult r = Engine(be, {g}, o).run();
    ASSERT_EQ(r.streams.size(), 1u);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.streams[0].end, "self_loop");
    EXPECT_EQ(r.streams[0].loop_period, 2u);
    EXPECT_TRUE(r.streams[0].loop_pc == 0x10008u || r.streams[0].loop_pc == 0x1000cu) << r.streams[0].loop_pc;
    EXPECT_LT(r.steps, 40u);  // found within a few passes of the loop
    EXPECT_GT(r.steps, 12u);  // after the loop ran
    EXPECT_EQ(r.streams[0].to_json()["loop_period"], 2u);
    const std::string line = self_loop_line(r.streams[0]);
    EXPECT_NE(line.find("the guest loops forever: from pc 0x0001000"), std::string::npos) << line;
    EXPECT_NE(line.find("the same 2 instructions repeat from the same registers"), std::string::npos) << line;
    EXPECT_NE(line.find("stopped after " + std::to_string(r.steps) + " steps"), std::string::npos) << line;
    const StreamResult alone = run_reference(g, 0);
    EXPECT_EQ(alone.end, "self_loop");
    EXPECT_EQ(alone.loop_period, 2u);
    EXPECT_EQ(alone.loop_pc, r.streams[0].loop_pc);
    EXPECT_EQ(alone.steps, r.steps);
    EXPECT_EQ(alone.digest, r.digest);
    // With a step limit the run goes on to it.
    ScriptedBackend limited({script});
    o.max_steps = 2000;
    const RunResult l = Engine(limited, {g}, o).run();
    EXPECT_EQ(l.streams[0].end, "step_limit");
    EXPECT_EQ(l.steps, 2000u);
    EXPECT_EQ(l.mismatches, 0u);
  }
}

// The trap line of run/story names the address of a faulting access, as `lockstep ref` does
// (docs/guests.md; before: only pc and word).
TEST(Engine, TheTrapLineNamesTheFaultingAddress) {
  using ref::Op;
  namespace enc = ref::encode;
  Guest g;
  g.name = "fault";
  g.image = progen::image_from_code({enc::u(Op::kLui, 5, 0x00110000u), enc::i(Op::kLw, 10, 5, 8)});
  const StreamResult s = run_reference(g, 0);
  ASSERT_EQ(s.end, "trap");
  const std::string line = trap_end_line(g, s);
  EXPECT_NE(line.find("the guest ended in trap 5 LOAD_FAULT at pc 0x00010004 (word 0x"), std::string::npos) << line;
  EXPECT_NE(line.find("), address 0x00110008 after "), std::string::npos) << line;
}

// A guest that prints more than 1 MiB: the run's result keeps the first 1 MiB of the reference's
// console (a long run never has all of it in memory), and the run is otherwise unchanged.
TEST(Engine, TheReferenceConsoleKeptIsItsFirstMebibyte) {
  using ref::Op;
  namespace enc = ref::encode;
  enum : unsigned { zero = 0, a0 = 10, a1 = 11, a2 = 12, a7 = 17, s0 = 8 };
  std::vector<std::uint32_t> w = {enc::i(Op::kAddi, s0, zero, 33)};
  const std::size_t loop = w.size();
  w.push_back(enc::i(Op::kAddi, a0, zero, 1));
  w.push_back(enc::u(Op::kLui, a1, 0x00020000u));
  w.push_back(enc::u(Op::kLui, a2, 0x00008000u));  // 32 KiB (isa.md §5: at most 65,535)
  w.push_back(enc::i(Op::kAddi, a7, zero, 64));
  w.push_back(0x00000073u);  // write(1, 0x20000, 32768)
  w.push_back(enc::i(Op::kAddi, s0, s0, static_cast<std::uint32_t>(-1)));
  w.push_back(enc::b(Op::kBne, s0, zero, static_cast<std::uint32_t>(-4 * static_cast<int>(w.size() - loop))));
  w.push_back(enc::i(Op::kAddi, a0, zero, 0));
  w.push_back(enc::i(Op::kAddi, a7, zero, 93));
  w.push_back(0x00000073u);
  Guest g;
  g.name = "spew";
  g.image = progen::image_from_code(w, 0x10000, {format::Segment{0x20000, 0x8000, format::kPfR | format::kPfW, {'s', 'p', 'e', 'w'}}});
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace});
  const RunResult r = Engine(be, {g}, Options{}).run();
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.streams[0].end, "exit");
  EXPECT_EQ(r.steps, trace.size());
  ASSERT_EQ(r.streams[0].console.size(), std::size_t{1} << 20);  // of 33 * 32,768 bytes written
  EXPECT_EQ(r.streams[0].console.substr(0, 4), "spew");
  EXPECT_EQ(r.streams[0].console.substr(0x8000, 4), "spew");  // the second write's start
  const StreamResult alone = run_reference(g, 0);
  EXPECT_EQ(alone.console, r.streams[0].console);
  EXPECT_EQ(alone.digest, r.digest);
}

// Under a vocabulary map the report also gives the chip's own ids (the logits to look at).
TEST(Divergence, NamesTheChipsOwnIdsWhenItHasThem) {
  Divergence d;
  d.expected = format::token_id(format::Kind::W0, 0x12);
  d.actual = format::token_id(format::Kind::W0, 0x13);
  d.expected_text = format::token_name(d.expected);
  d.actual_text = format::token_name(d.actual);
  EXPECT_EQ(d.to_text().find("chip's id"), std::string::npos);
  EXPECT_FALSE(d.to_json().contains("expected_chip_id"));
  d.expected_chip_id = d.expected + 1000;
  d.actual_chip_id = d.actual + 1000;
  const std::string t = d.to_text();
  EXPECT_NE(t.find("expected:    W0(0x12)  id " + std::to_string(d.expected) + "  (the chip's id " +
                   std::to_string(d.expected + 1000) + ")"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("(the chip's id " + std::to_string(d.actual + 1000) + ")"), std::string::npos) << t;
  EXPECT_EQ(d.to_json()["actual_chip_id"], d.actual + 1000);
}

// A chip id that names no token (format::kUnmappedChipId | id, from a chip under test's map) is
// reported as the chip's id, never as a token id with the flag bit or'ed in (found by an outside
// tester: "actual": 2147545168 and "id bits 0x8000dd50" in summary.json and the text).
TEST(Divergence, AnUnmappedChipIdHasNoTokenIdAndNoBits) {
  const Guest g = testing::make_loop_guest(10);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, 5, format::kUnmappedChipId, 1}});
  const RunResult r = Engine(be, {g}, Options{}).run();
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(d.step, 5u);
  EXPECT_EQ(d.actual_text, "unmapped chip id " + std::to_string(trace[4]));
  ASSERT_TRUE(d.actual_chip_id);
  EXPECT_EQ(*d.actual_chip_id, trace[4]);
  EXPECT_EQ(d.bits_text, "none to compare: the chip's id " + std::to_string(trace[4]) + " names no token");
  const nlohmann::json j = d.to_json();
  EXPECT_TRUE(j["actual"].is_null()) << j.dump();
  EXPECT_TRUE(j["differing_bits"].is_null()) << j.dump();
  EXPECT_EQ(j["actual_chip_id"], trace[4]);
  const std::string t = d.to_text();
  EXPECT_NE(t.find("actual:      unmapped chip id " + std::to_string(trace[4]) + "\n"), std::string::npos) << t;
  EXPECT_EQ(t.find(std::to_string(format::kUnmappedChipId | trace[4])), std::string::npos) << t;
  // case.json's expect: no token id either, the chip's id beside it, and read back as written
  const nlohmann::json e = Case::expect_of(d);
  EXPECT_TRUE(e["actual_token"].is_null()) << e.dump();
  EXPECT_EQ(e["actual_chip_id"], trace[4]) << e.dump();
  Case c;
  c.guest_name = "loop10";
  c.guest_path = "loop10.elf";
  nlohmann::json cj = c.to_json();
  cj["expect"] = e;
  EXPECT_EQ(Case::from_json(cj).expect, e);
  cj["expect"].erase("actual_chip_id");
  EXPECT_THROW((void)Case::from_json(cj), CheckError);
}

TEST(Engine, TeacherForcedPrefixOfAFreeRun) {
  const Guest g = testing::make_loop_guest(20);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace}, {{Fault::Kind::kFlip, 90, 1, 1}});
  Options o;
  o.mode = Mode::kFree;
  o.teacher_forced_steps = 100;
  const RunResult r = Engine(be, {g}, o).run();
  ASSERT_TRUE(r.streams[0].divergence);
  EXPECT_EQ(r.streams[0].divergence->mode, Mode::kForced);  // step 90 <= 100
}

TEST(Engine, BatchOfStreamsIsSteppedTogetherAndJudgedSeparately) {
  std::vector<Guest> gs = {testing::make_loop_guest(10, "a"), testing::make_loop_guest(30, "b"),
                           testing::make_loop_guest(20, "c")};
  std::vector<std::vector<std::uint32_t>> traces;
  for (const Guest& g : gs) traces.push_back(testing::reference_trace(g));
  // Only stream 1 (b) has a fault.  Faults apply to every stream, so plant it
  // beyond the other streams' ends.
  const std::uint64_t n = traces[1].size() - 20;
  ASSERT_GT(n, traces[0].size());
  ASSERT_GT(n, traces[2].size());
  ScriptedBackend be(traces, {{Fault::Kind::kFlip, n, 1, 1}});
  Options o;
  o.mode = Mode::kFree;
  const RunResult r = Engine(be, gs, o).run();
  ASSERT_EQ(r.streams.size(), 3u);
  EXPECT_EQ(r.streams[0].mismatches, 0u);
  EXPECT_EQ(r.streams[0].steps, traces[0].size());
  EXPECT_EQ(r.streams[0].digest, xxh3_of(traces[0]));
  EXPECT_EQ(r.streams[2].mismatches, 0u);
  EXPECT_EQ(r.streams[2].digest, xxh3_of(traces[2]));
  EXPECT_EQ(r.streams[1].mismatches, 1u);
  ASSERT_TRUE(r.streams[1].divergence);
  EXPECT_EQ(r.streams[1].divergence->step, n);
  EXPECT_EQ(r.streams[1].divergence->guest, "b");
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.steps, traces[0].size() + n + traces[2].size());
  EXPECT_GT(be.multi_stream_batches, traces[0].size() - 1);  // a, b and c shared step_batch calls
}

TEST(Engine, HashRecordsEveryNSteps) {
  const Guest g = testing::make_loop_guest(10);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace});
  Options o;
  o.hash_every = 50;
  const RunResult r = Engine(be, {g}, o).run();
  ASSERT_EQ(r.streams[0].hashes.size(), trace.size() / 50);
  EXPECT_EQ(r.streams[0].hashes[0].step, 50u);
  EXPECT_EQ(r.streams[0].hashes[1].chip, 100u * 0x9E3779B97F4A7C15ull);
  EXPECT_NE(r.streams[0].hashes[0].ref, r.streams[0].hashes[1].ref);
}

// A run's result without its timings (seconds, rates, throughput samples), for comparing runs.
json without_timings(const RunResult& r) {
  json j = r.to_json();
  for (const char* k : {"seconds", "diagnosis_seconds", "steps_per_second", "throughput"}) j.erase(k);
  return j;
}

// The engine asks the chip for several steps per call (Options::chunk); what it finds must not
// depend on how many: every scenario gives the same result, divergences and classifications
// included, with one step per call and with chunks of 3, 64 and 4096 steps.
TEST(Engine, ChunkedRunsGiveTheSameResultAsSingleSteps) {
  std::vector<Guest> gs = {testing::make_loop_guest(10, "a"), testing::make_loop_guest(30, "b"),
                           testing::make_loop_guest(20, "c")};
  std::vector<std::vector<std::uint32_t>> traces;
  for (const Guest& g : gs) traces.push_back(testing::reference_trace(g));
  struct Scenario {
    std::string name;
    std::vector<Fault> faults;
    Mode mode;
    std::uint64_t teacher_forced = 0, max_steps = 0, hash_every = 0, snapshot_every = 65536;
  };
  const std::uint64_t late = traces[1].size() - 20;
  const std::vector<Scenario> scenarios = {
      {"exact forced", {}, Mode::kForced},
      {"exact free, step limit", {}, Mode::kFree, 0, 301},
      {"flip forced", {{Fault::Kind::kFlip, 77, 1, 1}}, Mode::kForced},
      {"flip free, snapshots", {{Fault::Kind::kFlip, 150, 0x300, 0}}, Mode::kFree, 0, 0, 0, 64},
      {"late flip, one stream", {{Fault::Kind::kFlip, late, 1, 1}}, Mode::kFree},
      {"corrupt from, prefix", {{Fault::Kind::kCorruptFrom, 120, 0, 1}}, Mode::kFree, 100, 0, 0, 50},
      {"flaky", {{Fault::Kind::kFlaky, 100, 1, 1}}, Mode::kForced},
      {"hashes", {}, Mode::kFree, 33, 0, 25},
  };
  for (const Scenario& sc : scenarios) {
    json first;
    for (const std::uint32_t chunk : {1u, 3u, 64u, 4096u}) {
      ScriptedBackend be(traces, sc.faults);
      Options o;
      o.mode = sc.mode;
      o.teacher_forced_steps = sc.teacher_forced;
      o.max_steps = sc.max_steps;
      o.hash_every = sc.hash_every;
      o.snapshot_every = sc.snapshot_every;
      o.chunk = chunk;
      const json r = without_timings(Engine(be, gs, o).run());
      if (chunk == 1) {
        first = r;
        EXPECT_EQ(be.most_steps_per_call, 1u) << sc.name;
      } else {
        EXPECT_EQ(r, first) << sc.name << ", chunk " << chunk;
        EXPECT_GT(be.most_steps_per_call, 1u) << sc.name << ", chunk " << chunk;
      }
    }
  }
}

// A stream that diverges inside a chunk reports what the reference wrote up to the divergent
// step, not what its look-ahead executed past it.
TEST(Engine, ChunkedDivergenceKeepsTheReferenceConsoleAtTheDivergentStep) {
  const Guest g = testing::make_loop_guest(40);
  const auto trace = testing::reference_trace(g);
  // A few steps before the write of "hi\n" (its first OUT token), inside the last chunk.
  std::uint64_t out_step = 0;
  for (std::uint64_t n = 1; n <= trace.size() && !out_step; ++n)
    if (trace[n - 1] >> 8 == static_cast<std::uint32_t>(format::Kind::OUT)) out_step = n;
  ASSERT_GT(out_step, 10u);
  const std::uint64_t at = out_step - 8;
  json first;
  for (const std::uint32_t chunk : {1u, 4096u}) {
    ScriptedBackend be({trace}, {{Fault::Kind::kFlip, at, 1, 1}});
    Options o;
    o.chunk = chunk;
    const RunResult r = Engine(be, {g}, o).run();
    ASSERT_TRUE(r.streams[0].divergence);
    EXPECT_EQ(r.streams[0].divergence->step, at);
    EXPECT_EQ(r.streams[0].end, "diverged");
    EXPECT_EQ(r.streams[0].exit_status, 0u);
    EXPECT_EQ(r.streams[0].console, "");  // "hi\n" is written at the end
    if (chunk == 1) first = without_timings(r);
    else EXPECT_EQ(without_timings(r), first);
  }
}

RunResult uninterrupted(const Guest& g, const std::vector<std::uint32_t>& trace, Mode mode,
                        std::vector<Fault> faults = {}) {
  ScriptedBackend be({trace}, std::move(faults));
  Options o;
  o.mode = mode;
  return Engine(be, {g}, o).run();
}

TEST(Checkpoints, InterruptedRunResumesToTheSameResult) {
  const Guest g = testing::make_loop_guest(200);
  const auto trace = testing::reference_trace(g);
  const RunResult full = uninterrupted(g, trace, Mode::kFree);
  const fs::path dir = temp_dir("resume");
  std::atomic<bool> stop{false};
  {
    ScriptedBackend be({trace});
    be.stop_flag = &stop;
    be.stop_at = 2345;
    Options o;
    o.mode = Mode::kFree;
    o.checkpoint_every = 1000;
    o.checkpoint_dir = dir;
    o.stop = &stop;
    const RunResult part = Engine(be, {g}, o).run();
    EXPECT_TRUE(part.interrupted);
    EXPECT_EQ(part.steps, 2345u);
    EXPECT_EQ(part.streams[0].end, "interrupted");
    EXPECT_EQ(list_checkpoints(dir), (std::vector<std::uint64_t>{1000, 2000, 2345}));
  }
  ScriptedBackend be({trace});
  Options o;
  o.mode = Mode::kFree;
  o.checkpoint_every = 1000;
  o.checkpoint_dir = dir;
  const RunResult rest = Engine(be, {g}, o).resume();
  EXPECT_EQ(rest.resumed_from, 2345u);
  EXPECT_FALSE(rest.interrupted);
  EXPECT_EQ(rest.steps, full.steps);
  EXPECT_EQ(rest.digest, full.digest);
  EXPECT_EQ(rest.streams[0].chip_digest, full.streams[0].chip_digest);
  EXPECT_EQ(rest.streams[0].class_steps, full.streams[0].class_steps);
  EXPECT_EQ(rest.streams[0].console, "hi\n");
  EXPECT_EQ(rest.streams[0].end, "exit");
}

TEST(Checkpoints, DamagedNewestCheckpointFallsBackToAnOlderOne) {
  const Guest g = testing::make_loop_guest(100);
  const auto trace = testing::reference_trace(g);
  const RunResult full = uninterrupted(g, trace, Mode::kForced);
  const fs::path dir = temp_dir("damaged");
  std::atomic<bool> stop{false};
  {
    ScriptedBackend be({trace});
    be.stop_flag = &stop;
    be.stop_at = 1500;
    Options o;
    o.checkpoint_every = 500;
    o.checkpoint_dir = dir;
    o.stop = &stop;
    Engine(be, {g}, o).run();
  }
  // Truncate the newest file (as a crash in the middle of a copy would) and
  // leave a stray temporary file.
  const auto cps = list_checkpoints(dir);
  ASSERT_EQ(cps.back(), 1500u);
  char name[40];
  std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", 1500ull);
  fs::resize_file(dir / name, fs::file_size(dir / name) / 2);
  std::ofstream(dir / "ckpt-000000002000.lsck.tmp") << "partial";
  ScriptedBackend be({trace});
  Options o;
  o.checkpoint_every = 500;
  o.checkpoint_dir = dir;
  const RunResult rest = Engine(be, {g}, o).resume();
  EXPECT_EQ(rest.resumed_from, 1000u);
  EXPECT_EQ(rest.digest, full.digest);
  EXPECT_EQ(rest.steps, full.steps);
  // A whole file under another step's name (its header's round 1000, named 1800) is skipped too:
  // its counts do not agree (found by an outside tester: a re-packed checkpoint whose stream said
  // step 2^60 resumed and counted 2^60 steps compared)
  const std::uint64_t newest = list_checkpoints(dir).back(), fake = newest + 300;
  char newest_name[40];
  std::snprintf(newest_name, sizeof newest_name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(newest));
  std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(fake));
  fs::copy_file(dir / newest_name, dir / name, fs::copy_options::overwrite_existing);
  ScriptedBackend be2({trace});
  const RunResult again = Engine(be2, {g}, o).resume();
  EXPECT_EQ(again.resumed_from, newest);
  EXPECT_EQ(again.steps, full.steps);
  ASSERT_FALSE(again.skipped_checkpoints.empty());
  EXPECT_NE(again.skipped_checkpoints.front().find("its round (" + std::to_string(newest) + ") is not the step its name gives (" +
                                                   std::to_string(fake) + ")"),
            std::string::npos)
      << again.skipped_checkpoints.front();
}

TEST(Checkpoints, ResumeRefusesOtherOptions) {
  const Guest g = testing::make_loop_guest(50);
  const auto trace = testing::reference_trace(g);
  const fs::path dir = temp_dir("refuse");
  {
    ScriptedBackend be({trace});
    Options o;
    o.checkpoint_every = 300;
    o.checkpoint_dir = dir;
    Engine(be, {g}, o).run();
  }
  ScriptedBackend be({trace});
  Options o;
  o.mode = Mode::kFree;  // the checkpoints are of a forced run
  o.checkpoint_dir = dir;
  EXPECT_THROW(Engine(be, {g}, o).resume(), std::runtime_error);
  Options empty;
  empty.checkpoint_dir = temp_dir("refuse-empty");
  EXPECT_THROW(Engine(be, {g}, empty).resume(), std::runtime_error);
  // Another chip file with the same configuration (ChipBackend::identity hashes only that): the
  // checkpoints are not its run's.
  {
    const fs::path chip_dir = temp_dir("refuse-chip");
    ScriptedBackend a({trace});
    Options o1;
    o1.checkpoint_every = 300;
    o1.checkpoint_dir = chip_dir;
    o1.chip_identity = "aaaaaaaaaaaaaaaa";
    Engine(a, {g}, o1).run();
    ScriptedBackend b({trace});
    Options o2 = o1;
    o2.chip_identity = "bbbbbbbbbbbbbbbb";
    try {
      Engine(b, {g}, o2).resume();
      ADD_FAILURE() << "resumed from another chip's checkpoint";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("another chip"), std::string::npos) << e.what();
    }
    ScriptedBackend same({trace});
    EXPECT_NO_THROW(Engine(same, {g}, o1).resume());
  }
}

// kill -9 at the engine API level: a child process runs with checkpoints and
// is killed with SIGKILL; the parent resumes to the uninterrupted result.
TEST(Checkpoints, SurvivesSigkill) {
  const Guest g = testing::make_loop_guest(600);
  const auto trace = testing::reference_trace(g);
  const RunResult full = uninterrupted(g, trace, Mode::kFree);
  const fs::path dir = temp_dir("sigkill");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ScriptedBackend be({trace});
    be.delay = std::chrono::microseconds(100);
    Options o;
    o.mode = Mode::kFree;
    o.checkpoint_every = 400;
    o.checkpoint_dir = dir;
    Engine(be, {g}, o).run();
    _exit(0);
  }
  // Wait for a few checkpoints, then kill.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (list_checkpoints(dir).size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";
  const auto cps = list_checkpoints(dir);
  ASSERT_GE(cps.size(), 3u);
  ASSERT_LT(cps.back(), trace.size());
  ScriptedBackend be({trace});
  Options o;
  o.mode = Mode::kFree;
  o.checkpoint_every = 400;
  o.checkpoint_dir = dir;
  const RunResult rest = Engine(be, {g}, o).resume();
  EXPECT_GE(rest.resumed_from, cps.back());
  EXPECT_EQ(rest.steps, full.steps);
  EXPECT_EQ(rest.digest, full.digest);
  EXPECT_EQ(rest.streams[0].chip_digest, full.streams[0].chip_digest);
}

TEST(Bisection, FindsTheFirstDivergentStepOfARunComparedAtTheEnd) {
  const Guest g = testing::make_loop_guest(200);
  const auto trace = testing::reference_trace(g);
  const std::uint64_t m = 3777;
  const fs::path dir = temp_dir("bisect");
  ScriptedBackend be({trace}, {{Fault::Kind::kCorruptFrom, m, 0, 1}});
  Options o;
  o.mode = Mode::kFree;
  o.compare = Compare::kEnd;
  o.checkpoint_every = 100;
  o.checkpoint_dir = dir;
  const RunResult r = Engine(be, {g}, o).run();
  const std::uint64_t expected = first_w0_at_or_after(trace, m);
  EXPECT_EQ(r.mismatches, 1u);
  ASSERT_TRUE(r.streams[0].divergence);
  const Divergence& d = *r.streams[0].divergence;
  EXPECT_EQ(d.step, expected);
  EXPECT_EQ(d.expected, trace[expected - 1]);
  EXPECT_EQ(d.actual, trace[expected - 1] ^ 1);
  ASSERT_TRUE(d.bisection.is_object());
  const std::uint64_t cps = d.bisection["checkpoints"];
  EXPECT_EQ(cps, trace.size() / 100);
  EXPECT_LE(d.bisection["examined"].get<std::uint64_t>(), 14u);  // ~log2(checkpoints) + 1
  EXPECT_EQ(d.bisection["good_step"].get<std::uint64_t>(), (expected - 1) / 100 * 100);
  EXPECT_EQ(d.bisection["bad_step"].get<std::uint64_t>(), (expected - 1) / 100 * 100 + 100);
  // The whole run's digests stay those of the full streams.
  EXPECT_EQ(r.streams[0].digest, xxh3_of(trace));
  EXPECT_NE(r.streams[0].chip_digest, r.streams[0].digest);
}

TEST(Bisection, ExactRunComparedAtTheEndHasNoDivergence) {
  const Guest g = testing::make_loop_guest(50);
  const auto trace = testing::reference_trace(g);
  ScriptedBackend be({trace});
  Options o;
  o.mode = Mode::kFree;
  o.compare = Compare::kEnd;
  const RunResult r = Engine(be, {g}, o).run();
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.digest, xxh3_of(trace));
}

TEST(InstructionClass, NamesClassesFromTheEncodingTable) {
  EXPECT_EQ(instruction_class(0x00000013u), "alu-imm");  // addi x0, x0, 0
  EXPECT_EQ(instruction_class(0x00000073u), "system");   // ecall
  EXPECT_EQ(instruction_class(0xffffffffu), "other");
}

}  // namespace
}  // namespace lockstep::engine

namespace lockstep::engine {
namespace {

// A command that fails after it compared steps (its report could not be written: a full disk)
// leaves a summary of status error that keeps the steps it compared (found by an outside tester:
// the fallback summary and JUnit said 0 steps, --json 500).
TEST(RunFolders, AFailedCommandsSummaryKeepsTheStepsItCompared) {
  const fs::path dir = temp_dir("failed-folder");
  EXPECT_EQ(claim_run_folder(dir, "run"), "");
  fail_claimed_run_folders("error", "cannot write the report", 500);
  const nlohmann::json s = nlohmann::json::parse(std::ifstream(dir / "summary.json"));
  EXPECT_EQ(s["status"], "error");
  EXPECT_EQ(s["steps"], 500);
  EXPECT_EQ(s["error"], "cannot write the report");
  std::stringstream junit;
  junit << std::ifstream(dir / "junit.xml").rdbuf();
  EXPECT_NE(junit.str().find("<property name=\"steps\" value=\"500\"/>"), std::string::npos) << junit.str();
}

TEST(Cases, RoundTripWithTheEmbeddedGuest) {
  const Guest g = testing::make_loop_guest(7);
  Case c;
  c.guest_name = "loop7";
  c.guest_path = "loop7.elf";
  c.guest_elf = format::write_elf(g.image);
  c.guest_digest = image_digest(g.image);
  c.chip_hash = "0123456789abcdef";
  c.mode = Mode::kFree;
  c.teacher_forced_steps = 30;
  c.compare = Compare::kEnd;
  c.steps = 1000;
  c.expect = {{"first_divergence", 17}};
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j["lockstep_case"], 1);
  EXPECT_TRUE(j["chip"]["path"].is_null());
  const fs::path dir = temp_dir("case");
  std::ofstream(dir / "case.json") << j.dump(2);
  const Case d = Case::read(dir);
  EXPECT_EQ(d.guest_elf, c.guest_elf);
  EXPECT_EQ(d.mode, Mode::kFree);
  EXPECT_EQ(d.teacher_forced_steps, 30u);
  EXPECT_EQ(d.compare, Compare::kEnd);
  EXPECT_EQ(d.steps, 1000u);
  EXPECT_EQ(d.chip_path, "");
  EXPECT_EQ(d.expect["first_divergence"], 17);
  const Guest back = d.guest();
  EXPECT_EQ(image_digest(back.image), image_digest(g.image));
  EXPECT_EQ(back.name, "loop7");
  // A wrong digest, a bad mode and a missing guest are refused with one line.
  nlohmann::json bad = j;
  bad["guest"]["digest"] = "ffffffffffffffff";
  EXPECT_THROW(Case::from_json(bad).guest(), CheckError);
  bad = j;
  bad["mode"] = "sideways";
  EXPECT_THROW(Case::from_json(bad), CheckError);
  bad = j;
  bad["guest"] = nlohmann::json::object();
  EXPECT_THROW(Case::from_json(bad), CheckError);
  EXPECT_THROW(Case::from_json(nlohmann::json::array()), CheckError);
}

// Every field of case.json is checked for its type: a wrong one is one line naming it (before,
// library messages such as "cannot use value() with null", and "steps": -1 ran).
TEST(Cases, AFieldOfTheWrongTypeIsNamed) {
  Case c;
  c.guest_name = "loop7";
  c.guest_path = "loop7.elf";
  const nlohmann::json j = c.to_json();
  struct Row {
    const char* name;
    std::function<void(nlohmann::json&)> edit;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"chip null", [](auto& x) { x["chip"] = nullptr; }, "case: \"chip\" is null, not an object"},
      {"no guest", [](auto& x) { x.erase("guest"); }, "case: no \"guest\""},
      {"guest list", [](auto& x) { x["guest"] = nlohmann::json::array(); }, "case: \"guest\" is [], not an object"},
      {"guest path number", [](auto& x) { x["guest"]["path"] = 3; }, "case: \"guest.path\" is 3, not text"},
      {"steps text", [](auto& x) { x["steps"] = "many"; }, "case: \"steps\" is \"many\", not a whole number >= 0"},
      {"steps negative", [](auto& x) { x["steps"] = -1; }, "case: \"steps\" is -1, not a whole number >= 0"},
      {"checkpoint huge", [](auto& x) { x["checkpoint_every"] = 1e300; },
       "case: \"checkpoint_every\" is 1e+300, not a whole number >= 0"},
      {"mode number", [](auto& x) { x["mode"] = 2; }, "case: \"mode\" is 2, not text"},
      {"expect text", [](auto& x) { x["expect"] = "x"; }, "case: \"expect\" is \"x\", not an object"},
      {"expect steps text", [](auto& x) { x["expect"] = {{"steps", "12"}}; },
       "case: \"expect.steps\" is \"12\", not a whole number >= 0"},
      {"expect divergence negative", [](auto& x) { x["expect"] = {{"first_divergence", -3}}; },
       "case: \"expect.first_divergence\" is -3, not a whole number >= 0"},
      {"expect digest number", [](auto& x) { x["expect"] = {{"digest", 7}}; }, "case: \"expect.digest\" is 7, not text"},
      {"expect interrupted text", [](auto& x) { x["expect"] = {{"interrupted", "yes"}}; },
       "case: \"expect.interrupted\" is \"yes\", not true or false"},
      // A case names one chip: the built one (cpu, cuda) or one under test (before: the dut ran).
      {"cpu beside dut", [](auto& x) { x["dut"] = {{"command", "./mychip"}}; },
       "case: \"backend\": \"cpu\" beside a \"dut\" object"},
      // "command" is the lockstep command that wrote the case (found by an outside tester: "rm -rf"
      // was accepted)
      {"command other", [](auto& x) { x["command"] = "rm -rf"; },
       "case: \"command\" is \"rm -rf\", not the lockstep command that wrote the case (run, story or fuzz)"},
      // the ranges lockstep run takes (before, a hand-edited window of 2^60 was replayed)
      {"window huge", [](auto& x) { x["classify_window"] = 1ull << 60; },
       "case: \"classify_window\" is 1152921504606846976, not a whole number 1..100000000"},
      {"teacher-forced huge", [](auto& x) { x["mode"] = "free"; x["teacher_forced_steps"] = 1ull << 62; },
       "case: \"teacher_forced_steps\" is 4611686018427387904, not a whole number up to 10^15"},
      {"version 99", [](auto& x) { x["lockstep_case"] = 99; },
       "case: \"lockstep_case\" is 99: this harness reads version 1"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    nlohmann::json bad = j;
    r.edit(bad);
    try {
      (void)Case::from_json(bad);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const CheckError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(r.says, 0), 0u) << e.what();
    }
  }
  EXPECT_NO_THROW((void)Case::from_json(j));
}

}  // namespace
}  // namespace lockstep::engine
