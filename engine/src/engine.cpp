#include "lockstep/engine/engine.h"
#include "lockstep/engine/call_sizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <limits>
#include <set>
#include <tuple>
#include <sstream>
#include <stdexcept>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "lockstep/chip/chip.hpp"
#include "lockstep/engine/digest.h"
#include "lockstep/engine/guest.h"
#include "lockstep/engine/shadow.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/insn_class.h"
#include "lockstep/format/tokens.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/loop_watch.h"
#include "lockstep/ref/machine.h"
#include "lockstep/reports/report.h"
#include "serial.h"
#include "lockstep/format/json_text.h"

namespace lockstep::engine {

using chip::Token;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ names

std::string_view to_string(Mode mode) { return mode == Mode::kForced ? "forced" : "free"; }
std::optional<Mode> parse_mode(std::string_view t) {
  if (t == "forced") return Mode::kForced;
  if (t == "free") return Mode::kFree;
  return std::nullopt;
}
std::string_view to_string(Compare c) { return c == Compare::kEveryStep ? "step" : "end"; }
std::optional<Compare> parse_compare(std::string_view t) {
  if (t == "step") return Compare::kEveryStep;
  if (t == "end") return Compare::kEnd;
  return std::nullopt;
}
std::string_view to_string(FaultClass f) {
  switch (f) {
    case FaultClass::kSingleStep: return "single-step";
    case FaultClass::kCorruptedState: return "corrupted-state";
    case FaultClass::kNotReproduced: return "not-reproduced";
    case FaultClass::kRequestDependent: return "request-dependent";
    case FaultClass::kTokenMapping: return "token-mapping";
    case FaultClass::kSingleInstruction: return "single-instruction";
    case FaultClass::kRecurringInstruction: return "recurring-instruction";
    case FaultClass::kUnclassified: return "unclassified";
  }
  return "?";
}

std::string_view instruction_class(std::uint32_t word) {
  const ref::Decoded d = ref::decode(word);
  if (d.op == ref::Op::kIllegal || d.op == ref::Op::kUndecoded) return "other";
  return format::insn_class_name(static_cast<unsigned>(ref::encoding_of(d.op).cls));
}

// ------------------------------------------------------------------ JSON of results

std::string InstructionRecord::disassembly() const {
  if (word == 0 && tokens.size() == 1 && format::kind_of(tokens[0]) &&
      format::kind_of(tokens[0])->kind == static_cast<std::uint32_t>(format::Kind::TRAP) &&
      format::payload_of(tokens[0]) == 3) {
    return "<fetch fault>";
  }
  return ref::disassemble(word, pc);
}

namespace {
json token_list(const std::vector<std::uint32_t>& tokens) {
  json a = json::array();
  for (std::uint32_t t : tokens) a.push_back(format::token_name(t));
  return a;
}
std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}
std::string hexpc(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}
}  // namespace

json InstructionRecord::to_json() const {
  return {{"first_step", first_step}, {"pc", pc}, {"pc_hex", hexpc(pc)}, {"word", hex32(word)},
          {"disassembly", disassembly()}, {"tokens", tokens}, {"token_text", token_list(tokens)}};
}

json ProbeCheck::to_json() const {
  json j = {{"layer", layer}, {"after", after}, {"field", field}, {"meaning", meaning},
            {"agrees", agrees}, {"expected", expected}, {"actual", actual}, {"differing", differing}};
  if (!skipped.empty()) j["skipped"] = skipped;
  return j;
}

json Attribution::to_json() const {
  json c = json::array();
  for (const ProbeCheck& p : checks) c.push_back(p.to_json());
  return {{"status", status},
          {"layer", layer},
          {"sublayer", sublayer},
          {"field", field},
          {"text", text},
          {"last_agreeing", last_agreeing},
          {"first_disagreeing", first_disagreeing},
          {"candidates", candidates},
          {"dataflow_known", dataflow_known},
          {"chip_file_verdict", chip_file_verdict},
          {"probe_step", probe_step},
          {"probe_notes", probe_notes},
          {"divergent_step_first_disagreeing", divergent_step_first_disagreeing},
          {"divergent_step_candidates", divergent_step_candidates},
          {"shared_candidates", shared_candidates},
          {"checks", c}};
}

json Divergence::to_json() const {
  json r = json::array();
  for (const InstructionRecord& i : recent) r.push_back(i.to_json());
  json j = {{"guest", guest},
          {"stream", stream},
          {"step", step},
          {"mode", std::string(to_string(mode))},
          {"pc", pc},
          {"pc_hex", hexpc(pc)},
          {"word", hex32(word)},
          {"disassembly", disassembly},
          {"token_in_instruction", token_in_instruction},
          {"field", field},
          {"byte_index", byte_index},
          {"position", position},
          {"expected", expected},
          {"actual", actual},
          {"expected_text", expected_text},
          {"actual_text", actual_text},
          {"differing_bits", differing_bits},
          {"bits_text", bits_text},
          {"note", note},
          {"recent", r},
          {"attribution", attribution.to_json()},
          {"fault", std::string(to_string(fault))},
          {"fault_text", fault_text},
          {"replay_from", replay_from},
          {"replay_window", replay_window},
          {"replay_mismatches", replay_mismatches},
          {"replay_mismatch_steps", replay_mismatch_steps},
          {"bisection", bisection}};
  if (expected_chip_id) j["expected_chip_id"] = *expected_chip_id;
  if (actual_chip_id) j["actual_chip_id"] = *actual_chip_id;
  // An unmapped chip id has no token id: "actual" and "differing_bits" are null, and
  // "actual_chip_id" (set where the divergence is found) is the chip's id (found by an outside
  // tester: the id with the internal flag bit 31 or'ed in, 2147545168, and bits differing from it).
  if (actual & format::kUnmappedChipId) {
    j["actual"] = nullptr;
    j["differing_bits"] = nullptr;
  }
  return j;
}

namespace {
Divergence divergence_from_json(const json& j) {
  Divergence d;
  d.guest = j.value("guest", "");
  d.stream = j.value("stream", std::size_t{0});
  d.step = j.value("step", std::uint64_t{0});
  d.mode = parse_mode(j.value("mode", "forced")).value_or(Mode::kForced);
  d.pc = j.value("pc", 0u);
  d.word = static_cast<std::uint32_t>(std::stoul(j.value("word", "0x0"), nullptr, 16));
  d.disassembly = j.value("disassembly", "");
  d.token_in_instruction = j.value("token_in_instruction", 0u);
  d.field = j.value("field", "");
  d.byte_index = j.value("byte_index", -1);
  d.position = j.value("position", "");
  d.expected = j.value("expected", 0u);
  // null: an unmapped chip id, whose number is actual_chip_id (Divergence::to_json)
  d.actual = j.contains("actual") && j["actual"].is_null() && j.contains("actual_chip_id") && j["actual_chip_id"].is_number_unsigned()
                 ? format::kUnmappedChipId | j["actual_chip_id"].get<std::uint32_t>()
                 : j.value("actual", 0u);
  d.expected_text = j.value("expected_text", "");
  d.actual_text = j.value("actual_text", "");
  if (j.contains("expected_chip_id") && j["expected_chip_id"].is_number_unsigned())
    d.expected_chip_id = j["expected_chip_id"].get<std::uint32_t>();
  if (j.contains("actual_chip_id") && j["actual_chip_id"].is_number_unsigned())
    d.actual_chip_id = j["actual_chip_id"].get<std::uint32_t>();
  d.differing_bits = j.contains("differing_bits") && j["differing_bits"].is_null() ? d.expected ^ d.actual : j.value("differing_bits", 0u);
  d.bits_text = j.value("bits_text", "");
  d.note = j.value("note", "");
  for (const json& r : j.value("recent", json::array())) {
    InstructionRecord i;
    i.first_step = r.value("first_step", std::uint64_t{0});
    i.pc = r.value("pc", 0u);
    i.word = static_cast<std::uint32_t>(std::stoul(r.value("word", "0x0"), nullptr, 16));
    i.tokens = r.value("tokens", std::vector<std::uint32_t>{});
    d.recent.push_back(std::move(i));
  }
  const json a = j.value("attribution", json::object());
  d.attribution.status = a.value("status", "unavailable");
  d.attribution.layer = a.value("layer", -1);
  d.attribution.sublayer = a.value("sublayer", "");
  d.attribution.field = a.value("field", "");
  d.attribution.text = a.value("text", "");
  d.attribution.last_agreeing = a.value("last_agreeing", "");
  d.attribution.first_disagreeing = a.value("first_disagreeing", "");
  d.attribution.candidates = a.value("candidates", std::vector<std::string>{});
  d.attribution.dataflow_known = a.value("dataflow_known", false);
  d.attribution.chip_file_verdict = a.value("chip_file_verdict", "");
  d.attribution.probe_step = a.value("probe_step", std::uint64_t{0});
  d.attribution.probe_notes = a.value("probe_notes", std::vector<std::string>{});
  d.attribution.divergent_step_first_disagreeing = a.value("divergent_step_first_disagreeing", "");
  d.attribution.divergent_step_candidates = a.value("divergent_step_candidates", std::vector<std::string>{});
  d.attribution.shared_candidates = a.value("shared_candidates", std::vector<std::string>{});
  for (const json& c : a.value("checks", json::array())) {
    ProbeCheck p;
    p.layer = c.value("layer", -1);
    p.after = c.value("after", "");
    p.field = c.value("field", "");
    p.meaning = c.value("meaning", "");
    p.agrees = c.value("agrees", true);
    p.expected = c.value("expected", std::vector<float>{});
    p.actual = c.value("actual", std::vector<float>{});
    p.differing = c.value("differing", std::vector<std::uint32_t>{});
    p.skipped = c.value("skipped", "");
    d.attribution.checks.push_back(std::move(p));
  }
  const std::string f = j.value("fault", "not-reproduced");
  d.fault = f == "single-step"         ? FaultClass::kSingleStep
            : f == "corrupted-state"   ? FaultClass::kCorruptedState
            : f == "request-dependent" ? FaultClass::kRequestDependent
            : f == "token-mapping"     ? FaultClass::kTokenMapping
            : f == "single-instruction" ? FaultClass::kSingleInstruction
            : f == "recurring-instruction" ? FaultClass::kRecurringInstruction
            : f == "unclassified"      ? FaultClass::kUnclassified
                                       : FaultClass::kNotReproduced;
  d.fault_text = j.value("fault_text", "");
  d.replay_from = j.value("replay_from", std::uint64_t{0});
  d.replay_window = j.value("replay_window", std::uint64_t{0});
  d.replay_mismatches = j.value("replay_mismatches", std::uint64_t{0});
  d.replay_mismatch_steps = j.value("replay_mismatch_steps", std::vector<std::uint64_t>{});
  d.bisection = j.contains("bisection") ? j["bisection"] : json();
  return d;
}
}  // namespace

std::string divergence_note(std::uint32_t expected, std::uint32_t actual) {
  if (actual & format::kUnmappedChipId)
    return "the chip predicted its id " + std::to_string(actual & ~format::kUnmappedChipId) +
           ", which names no token: with the default map a chip's ids are trace.md's, 0.." +
           std::to_string(format::vocab_size() - 1) + " (a chip that numbers its tokens another way gives its map "
           "with --dut-vocab); with a --dut-vocab map, the map does not name this id";
  if (!format::is_valid_token(actual))
    return "the chip predicted id " + std::to_string(actual) + ", which is no token trace-v3 can produce";
  // START is a token, but only step 1's input, never a step's output (trace.md §2; found by an
  // outside tester: a chip whose output logits tied, none winning, predicted it with no note)
  if (actual == format::kStartToken)
    return "the chip predicted START (id 0), which is only the input of step 1 and never a step's token: a chip "
           "predicts it where its output logits tie with none winning (an argmax takes the first id), or where its "
           "unembedding gives START's row the most";
  const auto ek = format::kind_of(expected), ak = format::kind_of(actual);
  const std::uint32_t trap = static_cast<std::uint32_t>(format::Kind::TRAP);
  const bool chip_traps = ak && ak->kind == trap, ref_traps = ek && ek->kind == trap;
  auto named = [](std::uint32_t id) {
    return format::token_name(id) + " " + std::string(format::trap_name(format::payload_of(id)));
  };
  if (chip_traps && !ref_traps)
    return "the chip raises " + named(actual) + " where the reference does not trap (it emits " +
           format::token_name(expected) + "): either the chip does not implement this instruction (a chip that "
           "compiles part of the machine raises TRAP(1) on the rest) or decodes it wrongly, or a fault upstream "
           "sends it to the trap (the layer line lists the candidates)";
  if (ref_traps && !chip_traps)
    return "the reference raises " + named(expected) + " and the chip does not (" + format::token_name(actual) +
           "): either the chip misses this trap check, or a fault upstream hides the trap (the layer line lists "
           "the candidates)";
  return "";
}

std::string Divergence::to_text() const {
  std::ostringstream os;
  os << "first divergence: guest " << guest << ", step " << step << " (" << to_string(mode)
     << ")\n";
  os << "  instruction: pc " << hexpc(pc) << "  " << hex32(word) << "  " << disassembly
     << "  (token " << token_in_instruction << " of the instruction)\n";
  os << "  field:       " << field;
  if (byte_index >= 0) os << " (byte " << byte_index << ")";
  if (!position.empty()) os << " (" << position << ")";
  os << "\n";
  os << "  expected:    " << expected_text << "  id " << expected;
  if (expected_chip_id) os << "  (the chip's id " << *expected_chip_id << ")";
  // An unmapped chip id (format::kUnmappedChipId) has no trace id: its text names the chip's id
  // (found by an outside tester: "id 2147546448", the flag bit or'ed in).
  os << "\n  actual:      " << actual_text;
  if (!(actual & format::kUnmappedChipId)) os << "  id " << actual;
  if (actual_chip_id && !(actual & format::kUnmappedChipId)) os << "  (the chip's id " << *actual_chip_id << ")";
  os << "\n";
  os << "  differing:   " << bits_text << "\n";
  if (!note.empty()) os << "  note:        " << note << "\n";
  os << "  layer:       " << attribution.text << "\n";
  os << "  fault:       " << to_string(fault) << ": " << fault_text << "\n";
  if (!bisection.is_null()) os << "  bisection:   " << bisection.value("text", "") << "\n";
  os << "  last instructions:\n";
  for (const InstructionRecord& r : recent) {
    char line[64];
    std::snprintf(line, sizeof line, "    step %-10llu %8s  ",
                  static_cast<unsigned long long>(r.first_step), hexpc(r.pc).c_str());
    os << line << r.disassembly() << "  ->";
    // A long instruction (a VMAT's thousands of tokens) shows its first and last tokens and those
    // around the divergent step, with the gaps counted (found by an outside tester: one line of
    // 27,831 characters).
    const std::size_t n = r.tokens.size();
    const std::size_t at = step >= r.first_step && step - r.first_step < n ? static_cast<std::size_t>(step - r.first_step) : n;
    os << reports::instruction_tokens(n, at, [&](std::size_t i) { return format::token_name(r.tokens[i]); }) << "\n";
  }
  return os.str();
}

json StreamResult::to_json() const {
  json h = json::array();
  for (const HashRecord& r : hashes) {
    h.push_back({{"step", r.step}, {"chip", hex64(r.chip)}, {"ref", hex64(r.ref)}});
  }
  json j = {{"guest", guest},
            {"steps", steps},
            {"ref_steps", ref_steps},
            {"mismatches", mismatches},
            {"end", end},
            // Only for the end that has one (found by an outside tester: an interrupted stream
            // said exit_status 0).
            {"exit_status", end == "exit" ? json(exit_status) : json()},
            {"trap_code", end == "trap" ? json(trap_code) : json()},
            {"digest", digest},
            {"chip_digest", chip_digest},
            {"console", console},
            {"class_steps", class_steps},
            {"hashes", h},
            {"divergence", divergence ? divergence->to_json() : json()}};
  if (divergence_unlocated) j["divergence_unlocated"] = unlocated_why;
  if (end == "self_loop") {
    j["loop_pc"] = loop_pc;
    j["loop_word"] = loop_word;
    j["loop_period"] = loop_period;
  }
  return j;
}

json RunResult::to_json() const {
  json s = json::array();
  for (const StreamResult& r : streams) s.push_back(r.to_json());
  json t = json::array();
  for (const ThroughputSample& p : throughput) t.push_back({p.seconds, p.steps});
  return {{"mode", mode},
          {"compare", compare},
          {"backend", backend},
          {"max_steps", max_steps},
          {"steps", steps},
          {"mismatches", mismatches},
          {"seconds", seconds},
          {"steps_per_second", steps_per_second},
          {"diagnosis_seconds", diagnosis_seconds},
          {"interrupted", interrupted},
          {"resumed_from", resumed_from},
          {"checkpoints_written", checkpoints_written},
          {"skipped_checkpoints", skipped_checkpoints},
          {"digest", digest},
          {"throughput", t},
          {"streams", s}};
}

// ------------------------------------------------------------------ lanes

namespace {

// LSENGCK5: a lane carries the reference's fd 1 console itself (its first 1 MiB and its size), not
// in the reference's state. LSENGCK4: the reference's state includes its vector unit (VR, ACT, WMEM, caches, shifts);
// LSENGCK3 lost it, so a snapshot, a replay or a resume of a vector guest restarted with an
// empty vector unit. LSENGCK3: a lane also carries the reference's look-ahead (the
// instructions it executed past the current one for a chunk of steps; LSENGCK2 had none).
constexpr char kCheckpointMagic[8] = {'L', 'S', 'E', 'N', 'G', 'C', 'K', '5'};

int byte_index_of(std::uint32_t kind) {
  using format::Kind;
  auto k = [](Kind x) { return static_cast<std::uint32_t>(x); };
  if (kind >= k(Kind::W0) && kind <= k(Kind::W3)) return static_cast<int>(kind - k(Kind::W0));
  if (kind >= k(Kind::A0) && kind <= k(Kind::A3)) return static_cast<int>(kind - k(Kind::A0));
  if (kind >= k(Kind::S0) && kind <= k(Kind::S3)) return static_cast<int>(kind - k(Kind::S0));
  if (kind >= k(Kind::AC0) && kind <= k(Kind::AC11)) return static_cast<int>(kind - k(Kind::AC0));
  return -1;
}

std::string kind_name(std::uint32_t id) {
  const auto k = format::kind_of(id);
  return k ? std::string(k->name) : "?";
}

std::string bits_text(std::uint32_t expected, std::uint32_t actual) {
  if (actual & format::kUnmappedChipId)  // no token: no bits to compare (not the flag's)
    return "none to compare: the chip's id " + std::to_string(actual & ~format::kUnmappedChipId) + " names no token";
  const auto ke = format::kind_of(expected), ka = format::kind_of(actual);
  std::ostringstream os;
  const std::uint32_t x = expected ^ actual;
  if (ke && ka && ke->kind == ka->kind) {
    const std::uint32_t px = format::payload_of(expected) ^ format::payload_of(actual);
    os << "payload bits " << hexpc(px) << " (";
    bool first = true;
    for (int b = 0; b < 32; ++b) {
      if (px >> b & 1) {
        os << (first ? "" : ", ") << "bit " << b;
        first = false;
      }
    }
    os << ")";
  } else {
    os << "kind differs (" << (ke ? std::string(ke->name) : "?") << " vs "
       << (ka ? std::string(ka->name) : "invalid") << "); id bits " << hexpc(x);
  }
  return os.str();
}

// What one expected token was answered with in a teacher-forced replay: how often it was due,
// and the chip's answers (two distinct ones at most are kept: more says the same).
struct SubstitutionSeen {
  std::uint64_t due = 0;
  std::vector<std::uint32_t> answers;
  void add(std::uint32_t a) {
    ++due;
    if (answers.size() < 2 && std::find(answers.begin(), answers.end(), a) == answers.end()) answers.push_back(a);
  }
};

// A fixed substitution of token ids, from what each expected token of a replay (the divergent
// step and the window after it, fed the reference's tokens) was answered with: every token
// that was ever answered wrong was answered wrong every time it was due, always with the same
// other token, no two tokens with the same one, and the substitution recurred (at least two
// more occurrences than there are substituted tokens). Returns the pairs as text ("W1(0x00)
// for W0(0x00) x3, ...": the divergent step's expected token first, then the most frequent; 4
// at most), or "" when the answers are not such a substitution. A
// chip whose state is corrupted answers a token sometimes right, or with varying wrong tokens;
// a wrong vocabulary map or unembedding row answers a token wrong every time, the same way.
std::string fixed_substitution(const std::map<std::uint32_t, SubstitutionSeen>& seen, std::uint32_t divergent) {
  std::vector<std::pair<std::uint32_t, const SubstitutionSeen*>> wrong;
  std::set<std::uint32_t> images;
  std::uint64_t occurrences = 0;
  for (const auto& [e, s] : seen) {
    const bool any_wrong = std::any_of(s.answers.begin(), s.answers.end(), [&](std::uint32_t a) { return a != e; });
    if (!any_wrong) continue;
    if (s.answers.size() != 1 || !images.insert(s.answers[0]).second) return "";
    wrong.push_back({e, &s});
    occurrences += s.due;
  }
  if (wrong.empty() || occurrences < wrong.size() + 2) return "";
  std::sort(wrong.begin(), wrong.end(), [&](const auto& x, const auto& y) {  // the divergence's own pair first
    return std::make_pair(x.first != divergent, y.second->due) < std::make_pair(y.first != divergent, x.second->due);
  });
  std::string text;
  for (std::size_t i = 0; i < wrong.size() && i < 4; ++i)
    text += (i ? ", " : "") + format::token_name(wrong[i].second->answers[0]) + " for " +
            format::token_name(wrong[i].first) + " x" + std::to_string(wrong[i].second->due);
  if (wrong.size() > 4) text += ", and " + std::to_string(wrong.size() - 4) + " more tokens";
  return text;
}

// A divergence in an instruction's first token, its pc (PCL or PCH_k): the pc comes from the
// instruction before it, which `prev` is, so that instruction is named (a taken branch or jump
// chose the target; any other falls through to pc + 4). "" when the field is not a pc token.
std::string pc_note(const InstructionRecord& prev, const Divergence& d) {
  const auto k = format::kind_of(d.expected);
  using format::Kind;
  if (!k || (k->kind != static_cast<std::uint32_t>(Kind::PCL) &&
             (k->kind < static_cast<std::uint32_t>(Kind::PCH0) || k->kind > static_cast<std::uint32_t>(Kind::PCH3))))
    return "";
  const std::string_view cls = instruction_class(prev.word);
  const bool jump = cls == "jal" || cls == "jalr", branch = cls == "branch";
  const std::string before = "`" + prev.disassembly() + "` at pc " + hexpc(prev.pc);
  if (jump)
    return "this pc token is the first of the instruction at " + hexpc(d.pc) + ", where the jump before it, " +
           before + ", went on the reference: check the jump's target";
  if (branch)
    return "this pc token is the first of the instruction at " + hexpc(d.pc) + ", where the branch before it, " +
           before + ", went on the reference (" + (d.pc == prev.pc + 4 ? "not taken" : "taken") +
           "): check the branch's decision and its target";
  return "this pc token is the first of the instruction at " + hexpc(d.pc) + ", which follows " + before +
         " (pc + 4): the chip's pc after that instruction is wrong";
}

// An instruction the reference has executed but whose tokens no step has consumed yet (the
// look-ahead of a chunk, Lane::ahead).
struct Pending {
  InstructionRecord record;      // first_step is set when it becomes the current instruction
  std::string cls;               // instruction_class(word)
  std::uint64_t console_before = 0;  // Lane::console_bytes before it executed
};

// Of what a lane's reference writes to fd 1, the first kConsoleKept bytes are kept (StreamResult::
// console): a guest that prints for hours never has all its output in memory.
constexpr std::size_t kConsoleKept = std::size_t{1} << 20;

struct Lane {
  Lane() {
    ref.set_console_sink([this](int fd, std::string_view b) {
      if (fd != 1) return;
      console_bytes += b.size();
      if (console.size() < kConsoleKept) console.append(b.substr(0, kConsoleKept - console.size()));
    });
  }
  Lane(const Lane&) = delete;  // the console sink points at this lane
  Lane& operator=(const Lane&) = delete;

  std::size_t index = 0;
  chip::StreamId sid = 0;
  ref::Machine ref;
  std::string console;             // the first kConsoleKept bytes the reference wrote to fd 1
  std::uint64_t console_bytes = 0;  // bytes it wrote to fd 1
  std::vector<std::uint32_t> queue;  // tokens of the current instruction
  std::size_t qpos = 0;
  std::deque<Pending> ahead;         // executed after the current instruction, not yet consumed
  InstructionRecord current;
  std::string current_class = "other";
  std::deque<InstructionRecord> history;
  std::uint32_t last_ref = format::kStartToken, last_chip = format::kStartToken;
  std::uint64_t steps = 0, ref_steps = 0;
  bool done = false;
  std::string end = "running";
  // A run without a step limit ends a lane whose guest jumps to itself (at_self_loop) after that
  // instruction's tokens are compared once, or whose state repeats (ref::LoopWatch), instead of
  // comparing them forever.
  bool end_at_self_loop = false;
  ref::LoopWatch watch;
  // Non-zero once the reference reached, at loop_pc, a state it had been in loop_period
  // instructions before (LoopWatch): nothing more is executed.
  std::uint32_t loop_pc = 0;
  std::uint64_t loop_period = 0;
  TraceDigest ref_digest, chip_digest;
  std::uint64_t mismatches = 0;
  std::map<std::string, std::uint64_t> class_steps;
  std::uint64_t* class_counter = nullptr;  // &class_steps[current_class], set lazily
  // The token kinds (trace.md §2: id >> 8) that were due at a compared step since the reset;
  // kinds_known is false in a lane restored from a checkpoint (its earlier steps are not seen).
  std::uint64_t kinds_due[2] = {0, 0};
  bool kinds_known = true;
  std::vector<HashRecord> hashes;
  std::optional<Divergence> divergence;
  std::vector<std::uint8_t> snapshot;  // serialised lane at snapshot_step; empty: the lane as reset (step 0)
  std::uint64_t snapshot_step = 0;
  // The chip's HASH when the snapshot was taken (a chip with the HASH capability): equal states
  // give equal hashes (dut-protocol.md §3.8), so a different HASH after RESTORE shows an inexact
  // restore.
  std::optional<std::uint64_t> snapshot_hash;
};

// The reference's last executed instruction jumped to itself and the guest can never end
// (ref::Machine::jumps_to_itself): every later instruction is that one, with the same tokens.
bool at_self_loop(const Lane& L) {
  const InstructionRecord& last = L.ahead.empty() ? L.current : L.ahead.back().record;
  return !last.tokens.empty() && last.pc == L.ref.pc() && L.ref.jumps_to_itself();
}

// Executes the reference's next instruction; nullopt once the reference has ended (or, with
// Lane::end_at_self_loop, once it has executed a jump to itself).
std::optional<Pending> execute(Lane& L) {
  if (!L.ref.active()) return std::nullopt;
  if (L.end_at_self_loop && (L.loop_period > 0 || at_self_loop(L))) return std::nullopt;
  if (L.end_at_self_loop && L.ref.status() == ref::Status::kRunning && L.watch.repeats(L.ref)) {
    L.loop_pc = L.ref.pc();
    L.loop_period = L.watch.period();
    return std::nullopt;
  }
  Pending p;
  const std::uint32_t pc = L.ref.pc();
  std::uint32_t word = 0;
  try {
    word = L.ref.read_word(pc);
  } catch (const std::out_of_range&) {
    word = 0;  // the fetch faults: TRAP(3)
  }
  p.console_before = L.console_bytes;
  const auto toks = L.ref.step();
  if (toks.empty()) return std::nullopt;
  p.record.pc = pc;
  p.record.word = word;
  p.record.tokens.assign(toks.begin(), toks.end());
  p.cls = std::string(instruction_class(word));
  return p;
}

// The next reference token of a lane (moving to the next instruction, from the look-ahead or
// executed now, when the current one has no tokens left); nullopt once the reference has ended.
std::optional<std::uint32_t> next_ref(Lane& L, std::size_t history) {
  if (L.qpos == L.queue.size()) {
    std::optional<Pending> p;
    if (!L.ahead.empty()) {
      p = std::move(L.ahead.front());
      L.ahead.pop_front();
    } else {
      p = execute(L);
    }
    if (!p) return std::nullopt;
    if (!L.current.tokens.empty()) {
      L.history.push_back(std::move(L.current));
      while (L.history.size() + 1 > std::max<std::size_t>(history, 1)) L.history.pop_front();
    }
    L.current = std::move(p->record);
    L.current.first_step = L.ref_steps + 1;
    L.current_class = std::move(p->cls);
    L.class_counter = nullptr;
    L.queue = L.current.tokens;
    L.qpos = 0;
  }
  return L.queue[L.qpos++];
}

// The reference's next n tokens into `out`, without consuming them (fewer once it ends): the
// current instruction's rest, then the look-ahead, executing more instructions into it as needed.
void peek_ref(Lane& L, std::size_t n, std::vector<std::uint32_t>& out) {
  out.clear();
  for (std::size_t i = L.qpos; i < L.queue.size() && out.size() < n; ++i) out.push_back(L.queue[i]);
  for (const Pending& p : L.ahead)
    for (std::size_t i = 0; i < p.record.tokens.size() && out.size() < n; ++i) out.push_back(p.record.tokens[i]);
  while (out.size() < n) {
    auto p = execute(L);
    if (!p) break;
    for (std::size_t i = 0; i < p->record.tokens.size() && out.size() < n; ++i) out.push_back(p->record.tokens[i]);
    L.ahead.push_back(std::move(*p));
  }
}

// What the reference wrote to fd 1 up to the lane's current instruction (the look-ahead's
// output is not part of the compared run).
std::string consumed_console(const Lane& L) {
  if (L.ahead.empty()) return L.console;
  return L.console.substr(0, static_cast<std::size_t>(std::min<std::uint64_t>(L.ahead.front().console_before, L.console.size())));
}

void write_record(detail::Writer& w, const InstructionRecord& r) {
  w.u64(r.first_step);
  w.u32(r.pc);
  w.u32(r.word);
  w.u64(r.tokens.size());
  for (std::uint32_t t : r.tokens) w.u32(t);
}
InstructionRecord read_record(detail::Reader& r) {
  InstructionRecord i;
  i.first_step = r.u64();
  i.pc = r.u32();
  i.word = r.u32();
  const std::uint64_t n = r.u64();
  if (n > (1u << 24)) throw std::runtime_error("checkpoint: bad instruction record");
  i.tokens.resize(n);
  for (std::uint32_t& t : i.tokens) t = r.u32();
  return i;
}

std::vector<std::uint8_t> serialize_lane(const Lane& L, const chip::ChipBackend& be) {
  detail::Writer w;
  w.u64(L.steps);
  w.u64(L.ref_steps);
  w.u8(L.done);
  w.str(L.end);
  w.u32(L.last_ref);
  w.u32(L.last_chip);
  w.u64(L.queue.size());
  for (std::uint32_t t : L.queue) w.u32(t);
  w.u64(L.qpos);
  write_record(w, L.current);
  w.str(L.current_class);
  w.u64(L.ahead.size());
  for (const Pending& p : L.ahead) {
    write_record(w, p.record);
    w.str(p.cls);
    w.u64(p.console_before);
  }
  w.str(L.console);
  w.u64(L.console_bytes);
  w.u64(L.history.size());
  for (const InstructionRecord& r : L.history) write_record(w, r);
  w.blob(L.ref_digest.save());
  w.blob(L.chip_digest.save());
  w.u64(L.mismatches);
  w.str(format::json_text(json(L.class_steps)));
  w.u64(L.hashes.size());
  for (const HashRecord& h : L.hashes) {
    w.u64(h.step);
    w.u64(h.chip);
    w.u64(h.ref);
  }
  w.str(L.divergence ? format::json_text(L.divergence->to_json()) : std::string());
  detail::write_machine_state(w, L.ref.save());
  w.blob(be.capabilities().save_restore ? be.save(L.sid) : std::vector<std::uint8_t>());
  return std::move(w.bytes());
}

// Puts a lane (and its backend stream) in its reset state, step 0, as setup gives it: every field
// that a run changes is set again here (found by an outside tester: a `--compare end` bisection
// from the reset kept the look-ahead of the run's end, and named a first divergence at step 1 at
// an instruction of the end). Keeps index, sid and end_at_self_loop.
void reset_lane(Lane& L, chip::ChipBackend& be, const format::GuestImage& guest, const chip::GuestImage& image) {
  L.ref.load(guest);
  L.console.clear();
  L.console_bytes = 0;
  L.queue.clear();
  L.qpos = 0;
  L.ahead.clear();
  L.current = InstructionRecord{};
  L.current_class = "other";
  L.history.clear();
  L.last_ref = L.last_chip = format::kStartToken;
  L.steps = L.ref_steps = 0;
  L.done = false;
  L.end = "running";
  L.watch.reset();
  L.loop_pc = 0;
  L.loop_period = 0;
  L.ref_digest = TraceDigest();
  L.chip_digest = TraceDigest();
  L.mismatches = 0;
  L.class_steps.clear();
  L.class_counter = nullptr;
  L.kinds_due[0] = L.kinds_due[1] = 0;
  L.kinds_known = true;
  L.hashes.clear();
  L.divergence.reset();
  L.snapshot.clear();
  L.snapshot_step = 0;
  L.snapshot_hash.reset();
  be.reset(L.sid, image);
}

// Restores a lane (and its backend stream) from serialize_lane's bytes.
void restore_lane(Lane& L, chip::ChipBackend& be, std::span<const std::uint8_t> bytes) {
  detail::Reader r(bytes);
  L.steps = r.u64();
  L.ref_steps = r.u64();
  L.done = r.u8() != 0;
  L.end = r.str();
  L.last_ref = r.u32();
  L.last_chip = r.u32();
  const std::uint64_t nq = r.u64();
  if (nq > (1u << 24)) throw std::runtime_error("checkpoint: bad token queue");
  L.queue.resize(nq);
  for (std::uint32_t& t : L.queue) t = r.u32();
  L.qpos = r.u64();
  if (L.qpos > L.queue.size()) throw std::runtime_error("checkpoint: bad token queue position");
  L.current = read_record(r);
  L.current_class = r.str();
  L.ahead.clear();
  const std::uint64_t na = r.u64();
  if (na > (1u << 24)) throw std::runtime_error("checkpoint: bad look-ahead");
  for (std::uint64_t i = 0; i < na; ++i) {
    Pending p;
    p.record = read_record(r);
    p.cls = r.str();
    p.console_before = r.u64();
    L.ahead.push_back(std::move(p));
  }
  L.console = r.str();
  L.console_bytes = r.u64();
  L.history.clear();
  const std::uint64_t nh = r.u64();
  if (nh > 4096) throw std::runtime_error("checkpoint: bad history");
  for (std::uint64_t i = 0; i < nh; ++i) L.history.push_back(read_record(r));
  L.ref_digest.restore(r.blob());
  L.chip_digest.restore(r.blob());
  L.mismatches = r.u64();
  L.class_steps = json::parse(r.str()).get<std::map<std::string, std::uint64_t>>();
  L.class_counter = nullptr;
  L.kinds_known = false;
  L.hashes.clear();
  const std::uint64_t nhash = r.u64();
  if (nhash > (1ull << 32)) throw std::runtime_error("checkpoint: bad hash log");
  for (std::uint64_t i = 0; i < nhash; ++i) {
    HashRecord h;
    h.step = r.u64();
    h.chip = r.u64();
    h.ref = r.u64();
    L.hashes.push_back(h);
  }
  const std::string div = r.str();
  L.divergence.reset();
  if (!div.empty()) L.divergence = divergence_from_json(json::parse(div));
  L.ref.restore(detail::read_machine_state(r));
  const auto chip_state = r.blob();
  if (!be.capabilities().save_restore) throw std::runtime_error("restore: the chip cannot restore a stream (no SAVE_RESTORE)");
  be.restore(L.sid, chip_state);
  if (!r.done()) throw std::runtime_error("checkpoint: trailing bytes in a stream record");
}

std::uint64_t ref_state_hash(const ref::Machine& m) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  std::uint32_t regs[34];
  for (unsigned i = 0; i < 32; ++i) regs[i] = m.reg(i);
  regs[32] = m.pc();
  regs[33] = m.carry();
  XXH3_64bits_update(&st, regs, sizeof regs);
  XXH3_64bits_update(&st, m.acc().limb, sizeof m.acc().limb);
  XXH3_64bits_update(&st, m.ram().data(), m.ram().size());
  return XXH3_64bits_digest(&st);
}

std::string ref_end(const ref::Machine& m) {
  if (m.status() == ref::Status::kExited) return "exit";
  if (m.status() == ref::Status::kTrapped) return "trap";
  return "step_limit";
}

// How a lane's reference ended once it has no more tokens: ref_end, or "self_loop".
std::string lane_end(const Lane& L) {
  if (L.end_at_self_loop && L.ref.status() == ref::Status::kRunning && (L.loop_period > 0 || at_self_loop(L))) return "self_loop";
  return ref_end(L.ref);
}

// --------------------------------------------------------------- attribution

struct FieldMeaning {
  bool next = false;      // next token (else: the input token)
  bool kind = false;      // kind number (else: payload)
  std::string encoding;   // "scalar" | "onehot" | "bits" | "nibbles"
  int nibble = -1;        // 0: low nibble only, 1: high nibble only, -1: whole value
};

// The engine's probe-field convention (docs/engine.md, "Layer attribution"):
// [in_|next_](kind|payload)[_oh|_bits|_nibbles|_lo|_hi]; without a prefix the
// field describes the input token.
std::optional<FieldMeaning> field_meaning(const std::string& name, std::uint32_t width) {
  FieldMeaning m;
  std::string rest = name;
  if (name.rfind("next_", 0) == 0) {
    m.next = true;
    rest = name.substr(5);
  } else if (name.rfind("in_", 0) == 0) {
    rest = name.substr(3);
  }
  std::string suffix;
  if (rest.rfind("kind", 0) == 0) {
    m.kind = true;
    suffix = rest.substr(4);
  } else if (rest.rfind("payload", 0) == 0) {
    suffix = rest.substr(7);
  } else {
    return std::nullopt;
  }
  if (suffix == "_oh") m.encoding = "onehot";
  else if (suffix == "_bits") m.encoding = "bits";
  else if (suffix == "_nib" || suffix == "_nibbles") m.encoding = "nibbles";
  else if (suffix == "_lo" || suffix == "_hi") {
    if (m.kind) return std::nullopt;
    m.nibble = suffix == "_lo" ? 0 : 1;
    m.encoding = width == 1 ? "scalar" : width == 4 ? "bits" : "onehot";
  } else if (suffix.empty()) {
    if (width == 1) m.encoding = "scalar";
    else if (m.kind) m.encoding = "onehot";
    else if (width == 8 || width == 16) m.encoding = "bits";
    else if (width == 32) m.encoding = "nibbles";
    else m.encoding = "onehot";
  } else {
    return std::nullopt;
  }
  return m;
}

std::string describe(const FieldMeaning& m) {
  std::string what = m.kind ? "kind" : m.nibble == 0 ? "payload's low nibble"
                                     : m.nibble == 1 ? "payload's high nibble" : "payload";
  return m.encoding + " of the " + (m.next ? "next" : "input") + " token's " + what;
}

std::vector<float> expected_values(const FieldMeaning& m, std::uint32_t token, std::uint32_t width) {
  std::uint32_t value = 0;
  if (const auto k = format::kind_of(token)) value = m.kind ? k->kind : format::payload_of(token);
  if (m.nibble >= 0) value = value >> (4 * m.nibble) & 15;
  std::vector<float> v(width, 0.0f);
  if (m.encoding == "scalar") {
    v[0] = static_cast<float>(value);
  } else if (m.encoding == "onehot") {
    if (value < width) v[value] = 1.0f;
  } else if (m.encoding == "bits") {
    for (std::uint32_t b = 0; b < width && b < 32; ++b) v[b] = static_cast<float>(value >> b & 1);
  } else if (m.encoding == "nibbles") {
    for (std::uint32_t n = 0; 16 * n + 15 < width && n < 8; ++n) v[16 * n + (value >> (4 * n) & 15)] = 1.0f;
  }
  return v;
}

// A probe point's place in execution order: (-1, 0) after the embedding, (l, 1) after layer l's
// memory block, (l, 2) after its MLP.
std::pair<int, int> position(int layer, chip::Sublayer after) {
  if (after == chip::Sublayer::Embed) return {-1, 0};
  return {layer, after == chip::Sublayer::Memory ? 1 : 2};
}
std::pair<int, int> position(const chip::SublayerRef& w) { return position(w.layer, w.sublayer); }

std::string sublayer_name(const chip::SublayerRef& w) {
  return "layer " + std::to_string(w.layer) + (w.sublayer == chip::Sublayer::Memory ? " (memory)" : " (mlp)");
}

// A convention field is compared only where it has its meaning (the probe map says which
// sublayers write into each field): a next-token field only at a probe point after which no
// sublayer writes into it (its final value), an input-token field only where no sublayer has
// written into it yet.
const chip::SublayerRef* first_writer_after(const chip::ProbeMap::Field& f, std::pair<int, int> at) {
  for (const chip::SublayerRef& w : f.writers)
    if (position(w) > at) return &w;
  return nullptr;
}
const chip::SublayerRef* first_writer_at_or_before(const chip::ProbeMap::Field& f, std::pair<int, int> at) {
  for (const chip::SublayerRef& w : f.writers)
    if (position(w) <= at) return &w;
  return nullptr;
}

// ------------------------------------------------ candidate sublayers (docs/engine.md §3)

// Sublayer keys in execution order: 0 the embedding, 3l+1 layer l's memory block, 3l+2 its MLP,
// kUnembedKey the unembedding. A value "read at key r" is the residual as sublayer r reads it:
// the sum of what keys < r wrote.
constexpr int kUnembedKey = std::numeric_limits<int>::max();
int key_of(const chip::SublayerRef& w) { return 3 * w.layer + (w.sublayer == chip::Sublayer::Memory ? 1 : 2); }
int key_of_point(int layer, const std::string& after) {
  if (after == "embed") return 0;
  return 3 * layer + (after == "memory" ? 1 : 2);
}
std::string key_name(int k) {
  if (k == 0) return "embedding";
  if (k == kUnembedKey) return "unembedding";
  return "layer " + std::to_string((k - 1) / 3) + ((k - 1) % 3 == 0 ? " (memory)" : " (mlp)");
}

// Every key that can have produced the value of the named parts as read at `r` (see
// Attribution::candidates). `checks` are the probe comparisons made so far: a convention field
// compared equal is correct wherever it holds that same value (an input-token field before its
// first writer, a next-token field after its last).
std::set<int> candidate_keys(const chip::ProbeMap& pm, const std::vector<ProbeCheck>& checks,
                             const std::vector<std::string>& start, int r) {
  std::set<std::string> agreed;
  for (const ProbeCheck& c : checks)
    if (c.skipped.empty() && c.agrees) agreed.insert(c.field);
  auto verified = [&](const std::string& name, int at) {
    if (!agreed.count(name)) return false;
    const chip::ProbeMap::Field* f = pm.find(name);
    const auto m = f ? field_meaning(name, f->width) : std::nullopt;
    if (!m) return false;
    for (const chip::SublayerRef& w : f->writers)
      if (m->next ? key_of(w) >= at : key_of(w) < at) return false;
    return true;
  };
  std::set<int> cand;
  const auto& df = pm.dataflow;
  if (!df.known()) {  // writers only: every sublayer before r
    int last = -1;
    for (const chip::ProbeMap::Field& f : pm.fields)
      for (const chip::SublayerRef& w : f.writers) last = std::max(last, w.layer);
    for (const chip::ProbePoint& p : pm.points) last = std::max(last, p.layer);
    cand.insert(0);
    for (int l = 0; l <= last; ++l)
      for (int k : {3 * l + 1, 3 * l + 2})
        if (k < r) cand.insert(k);
    return cand;
  }
  std::map<int, std::vector<std::size_t>> reads_of;
  std::map<std::string, std::size_t> part_of;
  for (std::size_t i = 0; i < df.parts.size(); ++i) {
    part_of[df.parts[i].name] = i;
    for (const chip::SublayerRef& w : df.parts[i].readers) reads_of[key_of(w)].push_back(i);
  }
  std::set<std::pair<std::size_t, int>> seen;
  std::function<void(int)> add;
  std::function<void(std::size_t, int)> need = [&](std::size_t p, int at) {
    if (!seen.insert({p, at}).second) return;
    const chip::ProbeMap::Dataflow::Part& part = df.parts[p];
    if (verified(part.name, at)) return;
    if (part.embedded) cand.insert(0);
    for (const chip::SublayerRef& w : part.writers)
      if (key_of(w) < at) add(key_of(w));
  };
  add = [&](int k) {
    if (!cand.insert(k).second) return;
    for (std::size_t p : reads_of[k]) need(p, k);
  };
  for (const std::string& name : start) {
    const auto it = part_of.find(name);
    if (it != part_of.end()) need(it->second, r);
  }
  if (r == kUnembedKey) {
    cand.insert(kUnembedKey);
    for (std::size_t i = 0; i < df.parts.size(); ++i)
      if (df.parts[i].unembedded) need(i, r);
  }
  return cand;
}

// The candidates as runs over the chip's sublayers: "embedding, layer 0 (memory) to layer 3 (mlp),
// layer 5 (mlp)".
std::string describe_candidates(const std::set<int>& cand, const chip::ProbeMap& pm) {
  std::vector<int> order{0};
  if (pm.dataflow.known()) {
    for (const chip::SublayerRef& w : pm.dataflow.sublayers) order.push_back(key_of(w));
  } else {
    for (int k : cand)
      if (k != 0 && k != kUnembedKey) order.push_back(k);
  }
  order.push_back(kUnembedKey);
  std::string out;
  for (std::size_t i = 0; i < order.size();) {
    if (!cand.count(order[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < order.size() && cand.count(order[j + 1])) ++j;
    if (!out.empty()) out += ", ";
    out += key_name(order[i]);
    if (j > i) out += " to " + key_name(order[j]);
    i = j + 1;
  }
  return out;
}

// "after the embedding", "after layer 3 (mlp)".
std::string after_point(const std::string& point) {
  return point == "embedding" ? "after the embedding" : "after " + point;
}

void set_candidates(Attribution& a, const std::set<int>& cand, const chip::ProbeMap& pm) {
  a.candidates.clear();
  for (int k : cand) a.candidates.push_back(key_name(k));
  a.dataflow_known = pm.dataflow.known();
  a.text += "; " + std::to_string(cand.size()) + (cand.size() == 1 ? " candidate sublayer" : " candidate sublayers") +
            (a.dataflow_known ? "" : " (the chip's dataflow is unknown: every one up to that point)") + ": " +
            describe_candidates(cand, pm);
}

// Whether the convention field `f` (meaning m) is compared at probe point `at` (docs/engine.md §3):
// "" when it is, else why not ("not compared: ...").
std::string not_compared_why(const chip::ProbeMap::Field& f, const FieldMeaning& m, std::pair<int, int> at) {
  if (m.next) {
    if (const chip::SublayerRef* w = first_writer_after(f, at))
      return "not compared: not final here, " + sublayer_name(*w) + " writes into it later";
  } else if (at.first >= 0) {
    if (const chip::SublayerRef* w = first_writer_at_or_before(f, at))
      return "not compared: " + sublayer_name(*w) + " writes into it before this point";
  }
  return "";
}

// Probes that cannot locate anything: every value of every compared convention field is the same
// number c (all zeros, typically: a chip that answers PROBE without recording), while the step's
// tokens imply other values. No layer may be blamed on them. Returns the reason, or "" when the
// probes vary (or agree with the tokens). Throws what be.probe() throws.
std::string uninformative_probes(const chip::ChipBackend& be, chip::StreamId sid, const chip::ProbeMap& pm,
                                 std::uint32_t input, std::uint32_t expected_next) {
  std::optional<float> c;
  bool constant = true, implied_other = false;
  std::size_t fields = 0, values = 0;
  for (const chip::ProbePoint& p : pm.points) {
    for (const std::string& name : p.fields) {
      const chip::ProbeMap::Field* f = pm.find(name);
      const auto m = f ? field_meaning(name, f->width) : std::nullopt;
      if (!m || !not_compared_why(*f, *m, position(p.layer, p.after)).empty()) continue;
      const std::vector<float> got = be.probe(sid, p.layer, p.after, name);
      const std::vector<float> want = expected_values(*m, m->next ? expected_next : input, f->width);
      ++fields;
      for (float v : got) {
        if (!c) c = v;
        constant = constant && (v == *c || (std::isnan(v) && std::isnan(*c)));  // all NaN is one number too
        ++values;
      }
      for (float v : want) implied_other = implied_other || !c || v != *c;
    }
  }
  if (!constant || !implied_other || values < 2) return "";
  std::ostringstream os;
  os << "every value of the " << fields << (fields == 1 ? " compared probe field" : " compared probe fields")
     << " is " << *c << " (" << values << " values), which the step's tokens do not give: the probes show no "
     << "values the chip computed";
  return os.str();
}

// Marks c.differing (at most 16 indices) and c.agrees: c.actual against c.expected, exactly, NaN
// equal to NaN; a length that differs with every shared value equal marks index 0.
void mark_differing(ProbeCheck& c) {
  for (std::uint32_t i = 0; i < c.expected.size(); ++i) {
    const float x = i < c.actual.size() ? c.actual[i] : std::numeric_limits<float>::quiet_NaN();
    const bool same = x == c.expected[i] || (std::isnan(x) && std::isnan(c.expected[i]) && i < c.actual.size());
    if (!same && c.differing.size() < 16) c.differing.push_back(i);
  }
  if (c.actual.size() != c.expected.size() && c.differing.empty()) c.differing.push_back(0);
  c.agrees = c.differing.empty();
}

Attribution attribute(const chip::ChipBackend& be, chip::StreamId sid, std::uint32_t input,
                      std::uint32_t expected_next) {
  Attribution a;
  if (!be.capabilities().probes) {
    a.text = "no attribution: the chip has no probes (" + be.name() + " backend without the PROBES capability)";
    return a;
  }
  chip::ProbeMap pm;
  try {
    pm = be.probe_map();
  } catch (const std::exception& e) {
    a.text = std::string("no attribution: no probe map (") + e.what() + ")";
    return a;
  }
  try {
    const std::string why = uninformative_probes(be, sid, pm, input, expected_next);
    if (!why.empty()) {
      a.text = "no attribution: the chip's probes do not locate the divergence (" + why + ")";
      return a;
    }
  } catch (const std::exception& e) {
    a.text = std::string("no attribution: probing failed: ") + e.what();
    return a;
  }
  std::vector<const chip::ProbePoint*> points;
  for (const chip::ProbePoint& p : pm.points) points.push_back(&p);
  auto key = [](const chip::ProbePoint* p) { return position(p->layer, p->after); };
  std::stable_sort(points.begin(), points.end(), [&](auto* x, auto* y) { return key(x) < key(y); });
  std::set<std::string> final_next;  // fields shown by a compared next-token field
  bool any_next = false;
  int last_layer = -1;
  auto point_name = [](const ProbeCheck& c) {
    return c.layer < 0 ? std::string("embedding") : key_name(key_of_point(c.layer, c.after));
  };
  for (const chip::ProbePoint* p : points) {
    // The last point before this one whose compared fields all agreed (engine.md §3: the probe
    // point before the first disagreeing one; a field of this point that agrees is not it)
    const std::string agreed_before = a.last_agreeing;
    for (const std::string& name : p->fields) {
      const chip::ProbeMap::Field* f = pm.find(name);
      if (!f) continue;
      const auto m = field_meaning(name, f->width);
      if (!m) continue;
      ProbeCheck c;
      c.layer = p->after == chip::Sublayer::Embed ? -1 : p->layer;
      c.after = chip::to_string(p->after);
      c.field = name;
      c.meaning = describe(*m);
      c.skipped = not_compared_why(*f, *m, key(p));
      if (!c.skipped.empty()) {
        a.checks.push_back(c);
        continue;
      }
      c.expected = expected_values(*m, m->next ? expected_next : input, f->width);
      try {
        c.actual = be.probe(sid, p->layer, p->after, name);
      } catch (const std::exception& e) {
        a.status = "unavailable";
        a.text = std::string("no attribution: probing failed: ") + e.what();
        return a;
      }
      mark_differing(c);
      // Keep the report small: values only where they matter.
      if (c.agrees) {
        c.expected.clear();
        c.actual.clear();
        a.last_agreeing = point_name(c);
      }
      any_next = any_next || m->next;
      if (m->next) final_next.insert(name);
      last_layer = std::max(last_layer, c.layer);
      a.checks.push_back(c);
      if (!c.agrees) {
        std::ostringstream os;
        a.first_disagreeing = point_name(c);
        a.last_agreeing = agreed_before;  // found by an outside tester: it named the disagreeing point
        if (c.layer < 0) {
          a.status = "embedding";
          os << "embedding: field " << name << " (" << c.meaning << ") disagrees";
          // Only the embedding writes before its probe point.
          a.text = os.str();
          a.layer = c.layer;
          a.sublayer = c.after;
          a.field = name;
          set_candidates(a, {0}, pm);
          return a;
        }
        a.status = "layer";
        os << "field " << name << " (" << c.meaning << ") first disagrees after " << a.first_disagreeing
           << ", at index";
        for (std::uint32_t i : c.differing) os << " " << i;
        os << " (last agreeing probe: "
           << (a.last_agreeing.empty() ? std::string("none") : after_point(a.last_agreeing)) << ")";
        a.layer = c.layer;
        a.sublayer = c.after;
        a.field = name;
        a.text = os.str();
        set_candidates(a, candidate_keys(pm, a.checks, {name}, key_of_point(c.layer, c.after) + 1), pm);
        return a;
      }
    }
  }
  if (a.checks.empty()) {
    a.text = "no attribution: the probe map has no field of the engine's convention "
             "([in_|next_](kind|payload)[_oh|_bits|_nibbles|_lo|_hi]; docs/engine.md)";
    return a;
  }
  if (!any_next) {
    a.status = "unavailable";
    a.text = "no attribution: every compared input-token field agrees and the probe map has no next-token "
             "field that can be compared (none, or none in its final form)";
    return a;
  }
  // Every compared field agrees.  The unembedding is to blame only if every
  // field it reads is shown, final, by a compared next-token field;
  // otherwise the wrong token may come from the last sublayer writing such a
  // field (no probe point shows it) or the unembedding.
  a.first_disagreeing = "unembedding";
  const std::set<int> cand = candidate_keys(pm, a.checks, {}, kUnembedKey);
  for (const std::string& name : pm.unembed_reads) {
    if (final_next.count(name)) continue;
    const chip::ProbeMap::Field* f = pm.find(name);
    if (!f || f->writers.empty()) continue;  // never written: the embedding's value, the same every step
    const chip::SublayerRef& w = f->writers.back();
    a.status = "unprobed";
    a.layer = w.layer;
    a.sublayer = w.sublayer == chip::Sublayer::Memory ? "memory" : "mlp";
    a.field = name;
    a.text = "every compared field agrees (last agreeing probe: " + after_point(a.last_agreeing) +
             "), but the unembedding reads field " + name + ", which no probe point shows in its final form (last written by " +
             sublayer_name(w) + ")";
    set_candidates(a, cand, pm);
    return a;
  }
  a.status = "unembedding";
  a.layer = last_layer;
  a.text = "every probed next-token field agrees (last at layer " + std::to_string(last_layer) +
           "): the wrong token comes from the unembedding / argmax";
  set_candidates(a, cand, pm);
  return a;
}

// ------------------------------------- the chip file beside the chip under test (--dut-chip)

std::string point_label(const chip::ProbePoint& p) {
  return p.after == chip::Sublayer::Embed ? std::string("embedding") : key_name(key_of_point(p.layer, chip::to_string(p.after)));
}

// The sublayers of the chip file that can have made field `first` differ at probe point key `kp`
// (the value after every sublayer of key <= kp; keys as key_of: 0 the embedding, 3l+1 layer l's
// memory block, 3l+2 its MLP). `agreed` holds, per field, the probe point keys where the chip
// under test's value equalled the file's on this step. The walk follows the file's dataflow: the
// writers of `first` since it last agreed, then, for each candidate, the writers of every part it
// reads, except a part that a probe showed equal with the value it reads (no writer between the
// probe and the reader). A memory block's state was written on earlier steps, from inputs that no
// probe of this step shows: the parts its maps read are then followed without that exception,
// back to the embedding (`earlier` says whether that happened). An empty `first`: every probe
// agreed, and the walk starts from the parts the unembedding reads (the unembedding a candidate).
std::set<int> candidates_beside_file(const chip::ProbeMap& spm, const std::map<std::string, std::vector<int>>& agreed,
                                     const std::string& first, int kp, bool& earlier, bool& none_writes) {
  const auto& df = spm.dataflow;
  std::map<std::string, std::size_t> part_of;
  std::map<int, std::vector<std::size_t>> reads_of;
  for (std::size_t i = 0; i < df.parts.size(); ++i) {
    part_of[df.parts[i].name] = i;
    for (const chip::SublayerRef& w : df.parts[i].readers) reads_of[key_of(w)].push_back(i);
  }
  std::vector<std::vector<int>> writers(df.parts.size());  // each part's writers, as keys
  for (std::size_t i = 0; i < df.parts.size(); ++i)
    for (const chip::SublayerRef& w : df.parts[i].writers) writers[i].push_back(key_of(w));
  // Whether part p's value as read at key `at` (after every key < at) is one a probe showed equal.
  auto verified = [&](std::size_t p, int at) {
    const auto it = agreed.find(df.parts[p].name);
    if (it == agreed.end()) return false;
    for (int q : it->second) {
      bool same = true;
      for (int w : writers[p]) same = same && !(q < at ? (q < w && w < at) : (at <= w && w <= q));
      if (same) return true;
    }
    return false;
  };
  // The last probe key before `at` where part p agreed (-1: none).
  auto last_agreed_before = [&](std::size_t p, int at) {
    int since = -1;
    if (const auto it = agreed.find(df.parts[p].name); it != agreed.end())
      for (int q : it->second)
        if (q < at) since = std::max(since, q);
    return since;
  };
  std::set<int> cand;
  std::set<std::tuple<std::size_t, int, bool>> needed;
  std::set<std::pair<int, bool>> added;
  std::function<void(int, bool)> add;
  std::function<void(std::size_t, int, bool)> need = [&](std::size_t p, int at, bool before) {
    if (!needed.insert({p, at, before}).second) return;
    int since = -1;
    if (!before) {
      if (verified(p, at)) return;
      since = last_agreed_before(p, at);
    }
    if (since < 0 && df.parts[p].embedded) cand.insert(0);
    for (int w : writers[p])
      if (w < at && w > since) add(w, before);
  };
  add = [&](int k, bool before) {
    cand.insert(k);
    if (!added.insert({k, before}).second) return;
    for (std::size_t p : reads_of[k]) need(p, k, before);
    if (k % 3 == 1) {  // a memory block: its state comes from earlier steps too
      earlier = true;
      for (std::size_t p : reads_of[k]) need(p, k, true);
    }
  };
  earlier = none_writes = false;
  if (first.empty()) {  // every probe agreed: from what the unembedding reads
    cand.insert(kUnembedKey);
    if (!df.known()) {
      for (const chip::SublayerRef& w : df.sublayers) cand.insert(key_of(w));
      cand.insert(0);
      return cand;
    }
    for (std::size_t i = 0; i < df.parts.size(); ++i)
      if (df.parts[i].unembedded) need(i, kUnembedKey, false);
    return cand;
  }
  const auto it = part_of.find(first);
  if (!df.known() || it == part_of.end()) {  // no dataflow: every sublayer up to the point
    cand.insert(0);
    for (const chip::SublayerRef& w : df.sublayers)
      if (key_of(w) <= kp) cand.insert(key_of(w));
    return cand;
  }
  const std::size_t f = it->second;
  const int since = last_agreed_before(f, kp);
  if (since < 0 && df.parts[f].embedded) cand.insert(0);
  bool any = false;
  for (int w : writers[f]) {
    if (w > since && w <= kp) {
      add(w, false);
      any = true;
    }
  }
  if (!any && kp > 0) {
    // No sublayer of the file writes the field there: one of them writes into it wrongly.
    none_writes = true;
    for (const chip::SublayerRef& w : df.sublayers)
      if (key_of(w) > since && key_of(w) <= kp) add(key_of(w), false);
  }
  return cand;
}

// Layer attribution of a chip under test run beside its chip file (shadow.h; docs/engine.md, "The
// chip file beside the chip under test"): the chip under test's probes of the divergent step are
// compared, point by point in execution order, with the chip file's on the CPU executor, fed the
// same inputs. The first field that differs names the sublayers between the last point where it
// agreed and its point that write it. With every probe equal, the chip file's own token decides:
// right, and the chip under test's executor parts from it after its last probe point; the same
// wrong token, and the chip file itself is wrong (attributed with the file's own probes).
Attribution attribute_beside_chip_file(const ShadowedBackend& be, chip::StreamId sid, std::uint32_t input,
                                       std::uint32_t expected_next, std::uint32_t actual) {
  const std::string file = "the chip file " + format::shell_word(be.chip_file());
  if (!be.in_step(sid)) {
    Attribution a = attribute(be, sid, input, expected_next);
    a.text += "; " + file + " was not compared: " + be.out_of_step_why(sid);
    a.chip_file_verdict = "not compared";
    return a;
  }
  const chip::ChipBackend& sh = be.shadow();
  const chip::ProbeMap spm = sh.probe_map();
  const std::optional<chip::Token> own = be.last_token(sid);
  Attribution a;
  a.dataflow_known = spm.dataflow.known();
  std::string probes_note;  // why the chip under test's probes were not compared
  std::pair<int, int> last_point{-2, 0};  // the last point compared (all equal so far)
  std::map<std::string, std::vector<int>> agreed_at;  // field -> the probe point keys where it agreed
  std::size_t compared = 0;
  if (!be.capabilities().probes) {
    probes_note = "the chip under test has no probes";
  } else {
    chip::ProbeMap pm;
    try {
      pm = be.probe_map();
      probes_note = uninformative_probes(be, sid, pm, input, expected_next);
    } catch (const std::exception& e) {
      a.text = std::string("no attribution: probing failed: ") + e.what();
      return a;
    }
    if (probes_note.empty()) {
      std::vector<const chip::ProbePoint*> points;
      for (const chip::ProbePoint& p : pm.points) points.push_back(&p);
      std::stable_sort(points.begin(), points.end(), [](auto* x, auto* y) {
        return position(x->layer, x->after) < position(y->layer, y->after);
      });
      // Every probe is compared, also after the first that differs: a field that agrees at a later
      // point, with no writer between, shows the value an earlier sublayer read (the walk below).
      struct Seen {
        ProbeCheck c;
        const chip::ProbePoint* p;
        int kp;  // its probe point's key
      };
      std::vector<Seen> seen;  // every field of every point, in execution order
      for (const chip::ProbePoint* p : points) {
        const int kp = p->after == chip::Sublayer::Embed ? 0 : key_of_point(p->layer, chip::to_string(p->after));
        for (const std::string& name : p->fields) {
          ProbeCheck c;
          c.layer = p->after == chip::Sublayer::Embed ? -1 : p->layer;
          c.after = chip::to_string(p->after);
          c.field = name;
          c.meaning = "the chip file's value on Lockstep's CPU executor (expected), the chip under test's (actual)";
          try {
            c.actual = be.probe(sid, p->layer, p->after, name);
          } catch (const std::exception& e) {
            a.status = "unavailable";
            a.text = std::string("no attribution: probing failed: ") + e.what();
            return a;
          }
          try {
            c.expected = sh.probe(sid, p->layer, p->after, name);
          } catch (const std::exception& e) {
            c.skipped = std::string("not compared: ") + e.what();
            seen.push_back({std::move(c), p, kp});
            continue;
          }
          mark_differing(c);
          if (c.agrees) {
            c.expected.clear();
            c.actual.clear();
            agreed_at[name].push_back(kp);
          }
          seen.push_back({std::move(c), p, kp});
        }
      }
      // A field that differs at a point but agrees at a later one, with no sublayer of the file
      // writing it between, held the file's value at the first point too: the chip under test's
      // probe there does not show what its executor computes (found by an outside tester: an
      // executor whose probe of layer 5 came from layer 4 was blamed for layer 5, and the sublayer
      // it did get wrong was left out of the candidates). It is passed over, and said.
      auto contradicted_at = [&](const Seen& x) -> std::optional<int> {
        const chip::ProbeMap::Field* f = spm.find(x.c.field);
        const auto ag = agreed_at.find(x.c.field);
        if (f == nullptr || ag == agreed_at.end()) return std::nullopt;
        for (const int q : ag->second) {
          if (q <= x.kp) continue;
          bool written = false;
          for (const chip::SublayerRef& w : f->writers) written = written || (key_of(w) > x.kp && key_of(w) <= q);
          if (!written) return q;
        }
        return std::nullopt;
      };
      std::optional<ProbeCheck> first;  // the first field that differs
      const chip::ProbePoint* first_point = nullptr;
      int first_kp = 0;  // its probe point's key
      std::size_t before_first = 0;
      std::size_t first_index = 0;  // its place in `seen`
      std::string agreed_before_first;
      for (std::size_t i = 0; i < seen.size() && !first;) {
        // One probe point at a time: its fields, then whether all of them agreed.
        const chip::ProbePoint* p = seen[i].p;
        bool all_agree = true;
        for (; i < seen.size() && seen[i].p == p && !first; ++i) {
          Seen& x = seen[i];
          if (!x.c.skipped.empty()) {
            a.checks.push_back(std::move(x.c));
            continue;
          }
          if (!x.c.agrees) {
            if (const std::optional<int> q = contradicted_at(x)) {
              const std::string later = after_point(key_name(*q));
              x.c.skipped = "passed over: it differs here but agrees " + later +
                            " with no sublayer of the file writing it between, so the chip under test's probe does "
                            "not show the value its executor computes here";
              a.probe_notes.push_back("the chip under test's probe of " + x.c.field + " " +
                                      after_point(key_name(x.kp)) + " differs from the file's, but the field agrees " +
                                      later + " with no sublayer writing it between: that probe does not show what "
                                      "its executor computes (it is passed over)");
              a.checks.push_back(std::move(x.c));
              continue;
            }
            ++compared;
            before_first = compared - 1;
            agreed_before_first = a.last_agreeing;
            first = std::move(x.c);
            first_point = p;
            first_kp = x.kp;
            first_index = i;
            all_agree = false;
            continue;
          }
          ++compared;
          a.checks.push_back(std::move(x.c));
        }
        if (!first && all_agree) {
          a.last_agreeing = point_label(*p);
          last_point = position(p->layer, p->after);
        }
      }
      if (first) {
        // The first difference: the sublayers that can have made it, by the file's dataflow.
        ProbeCheck& c = *first;
        const chip::ProbePoint* p = first_point;
        bool earlier = false, none_writes = false;
        const std::set<int> cand = candidates_beside_file(spm, agreed_at, c.field, first_kp, earlier, none_writes);
        a.status = c.layer < 0 ? "embedding" : "layer";
        a.layer = c.layer;
        a.sublayer = c.after;
        a.field = c.field;
        a.first_disagreeing = point_label(*p);
        a.last_agreeing = agreed_before_first;
        std::ostringstream os;
        const std::uint32_t i0 = c.differing.front();
        auto value = [&](const std::vector<float>& v) {
          std::ostringstream o;
          if (i0 < v.size()) o << v[i0];
          else o << "none";
          return o.str();
        };
        os << "field " << c.field << " of the chip under test first differs from " << file
           << "'s on Lockstep's CPU executor (the same inputs) " << after_point(a.first_disagreeing) << ", at index";
        for (std::uint32_t i : c.differing) os << " " << i;
        os << " (chip under test " << value(c.actual) << ", chip file " << value(c.expected) << " at index " << i0
           << "); every field compared before it agreed (" << before_first << (before_first == 1 ? " field" : " fields")
           << ", last probe point where all agreed: "
           << (a.last_agreeing.empty() ? std::string("none")
               // two probe entries at one point: the fields of the one listed first agreed (found
               // by an outside tester: "first differs after layer 8 ... last probe point where all
               // agreed: after layer 8" read as nonsense)
               : a.last_agreeing == a.first_disagreeing
                   ? after_point(a.last_agreeing) + " too, in the probe entry listed there before this field's"
                   : after_point(a.last_agreeing))
           << "): the chip under test's executor computes this chip file differently"
           << (none_writes ? " (no sublayer of the file writes the field there: one of them writes into it)" : "")
           << (earlier ? " (a memory block among the candidates may hold state written wrongly on an earlier step, so "
                         "the sublayers its state comes from are candidates too)"
                       : "");
        // A difference that nothing after it shows (found by an outside tester: an executor whose
        // probe misreported a layer it computes right was blamed for that layer). A probe that
        // does not show what the executor computes looks the same as a value that reaches only
        // state later steps read: the text says both.
        std::size_t later = first_index + 1;  // the first field of a later probe point
        while (later < seen.size() && seen[later].p == first_point) ++later;
        bool isolated = later < seen.size();
        for (std::size_t j = later; j < seen.size() && isolated; ++j)
          isolated = !seen[j].c.skipped.empty() || seen[j].c.agrees;
        if (isolated)
          a.probe_notes.push_back("nothing after it differs at this step (every later probe of the chip under test "
                                  "agrees with the file's): either its probe of " + c.field + " there does not show "
                                  "what its executor computes, or the difference reaches only state that later steps "
                                  "read");
        for (const std::string& n : a.probe_notes) os << "; " << n;
        a.text = os.str();
        a.chip_file_verdict = "executor";
        a.checks.push_back(std::move(c));
        set_candidates(a, cand, spm);
        return a;
      }
      if (compared == 0) probes_note = "the chip under test's probe map has no field to compare";
    }
  }
  // Every compared probe agrees (or none was compared): the chip file's own token decides.
  if (!own) {
    a.text = "no attribution: " + file + " made no step on Lockstep's CPU executor";
    return a;
  }
  std::string passed_over;  // the probes passed over, as one clause
  for (const std::string& n : a.probe_notes) passed_over += "; " + n;
  const std::string where =
      probes_note.empty()
          ? "every probe of the chip under test agrees with " + file + "'s (" + std::to_string(compared) +
                " fields, last agreeing probe: " + after_point(a.last_agreeing) +
                (a.probe_notes.empty() ? std::string()
                                       : ", and " + std::to_string(a.probe_notes.size()) + " passed over" + passed_over) +
                ")"
          : probes_note + ": no probe was compared with " + file + "'s";
  if (*own == expected_next) {
    // The chip file is right: the chip under test's executor parts from it after its last probe.
    bool earlier = false, none_writes = false;
    const std::set<int> cand = candidates_beside_file(spm, agreed_at, "", kUnembedKey, earlier, none_writes);
    a.status = compared > 0 && probes_note.empty() && cand.size() == 1 ? "unembedding" : "unprobed";
    a.layer = std::max(last_point.first, -1);
    a.first_disagreeing = "unembedding";
    a.text = where + ", and the chip file computes the right token (" + format::token_name(expected_next) +
             ") on Lockstep's CPU executor: the chip under test's executor computes this chip file differently" +
             (compared > 0 && probes_note.empty() ? ", after its last probe point" : "");
    a.chip_file_verdict = "executor";
    set_candidates(a, cand, spm);
    return a;
  }
  // The chip file itself is wrong here: attributed with its own probes and dataflow.
  Attribution b = attribute(sh, sid, input, expected_next);
  const std::string head =
      *own == actual
          ? where + ", and the chip file computes the same wrong token (" + format::token_name(actual) +
                ") on Lockstep's CPU executor: the chip file, not the executor, is wrong here; by the chip file's own probes: "
          : where + ", and the chip file computes another wrong token (" + format::token_name(*own) +
                ") on Lockstep's CPU executor: the chip file is wrong here, and the chip under test's executor parts from "
                "it too; by the chip file's own probes: ";
  b.text = head + b.text;
  b.chip_file_verdict = *own == actual ? "file" : "both";
  return b;
}

// Whether any probe field of stream sid's last step (recorded) differs between the chip under test
// (its probe map pm) and the chip file beside it. A field either side cannot give is not compared (as in
// attribute_beside_chip_file). Throws what the chip under test's probing throws.
bool probes_differ_from_file(const ShadowedBackend& be, const chip::ProbeMap& pm, chip::StreamId sid) {
  const chip::ChipBackend& sh = be.shadow();
  for (const chip::ProbePoint& p : pm.points) {
    for (const std::string& name : p.fields) {
      ProbeCheck c;
      c.actual = be.probe(sid, p.layer, p.after, name);
      try {
        c.expected = sh.probe(sid, p.layer, p.after, name);
      } catch (const std::exception&) {
        continue;
      }
      mark_differing(c);
      if (!c.agrees) return true;
    }
  }
  return false;
}

// The divergent step's attribution: beside the chip file when the backend runs one (--dut-chip).
Attribution attribute_step(const chip::ChipBackend& be, chip::StreamId sid, std::uint32_t input,
                           std::uint32_t expected_next, std::uint32_t actual) {
  if (const auto* sb = dynamic_cast<const ShadowedBackend*>(&be)) {
    return attribute_beside_chip_file(*sb, sid, input, expected_next, actual);
  }
  return attribute(be, sid, input, expected_next);
}

}  // namespace

std::string probe_inconsistency(const chip::ChipBackend& be, chip::StreamId s, std::uint32_t input,
                                std::uint32_t next) {
  const Attribution a = attribute(be, s, input, next);
  if (a.text.rfind("no attribution: the chip's probes do not locate", 0) == 0) return a.text.substr(16);
  if (a.text.rfind("no attribution: probing failed", 0) == 0) return a.text.substr(16);
  if (a.status != "embedding" && a.status != "layer") return "";
  const ProbeCheck& c = a.checks.back();
  std::ostringstream os;
  os << "field " << c.field << " (" << c.meaning << ") " << after_point(a.first_disagreeing) << " is [";
  for (std::size_t i = 0; i < c.actual.size() && i < 16; ++i) os << (i ? " " : "") << c.actual[i];
  os << (c.actual.size() > 16 ? " ..." : "") << "], the step's tokens (" << format::token_name(input) << " in, "
     << format::token_name(next) << " out) give [";
  for (std::size_t i = 0; i < c.expected.size() && i < 16; ++i) os << (i ? " " : "") << c.expected[i];
  os << (c.expected.size() > 16 ? " ..." : "") << "]";
  return os.str();
}

// ------------------------------------------------------------------ engine

struct Engine::Impl {
  chip::ChipBackend& be;
  std::vector<Guest> guests;
  Options opt;
  std::vector<chip::GuestImage> images;
  std::vector<std::unique_ptr<Lane>> lanes;
  std::uint64_t round = 0;
  double seconds_before = 0;
  // Seconds spent replaying divergences (classification and attribution): part of seconds(), not
  // of the comparing that steps_per_second measures.
  double diagnosis_seconds = 0;
  // The run's start: go() sets it again; set here too, for a run that fails before go() (a
  // chip's reset), whose partial result would otherwise count the seconds since boot.
  Clock::time_point t0 = Clock::now();
  std::vector<ThroughputSample> throughput;
  std::uint64_t resumed_from = 0, checkpoints_written = 0;
  std::uint64_t last_checkpoint_round = 0;  ///< the newest checkpoint written or resumed from
  bool interrupted = false;
  json fingerprint;
  std::vector<StreamResult> finals;  // set when a stream's result is final before bisection
  std::vector<std::string> bisect_skipped;  // "FILE: why" of checkpoints the bisection could not read
  std::map<std::size_t, std::string> bisect_unlocated;  // lane -> the bisection's text, when its replay met no wrong token

  Impl(chip::ChipBackend& b, std::vector<Guest> g, Options o)
      : be(b), guests(std::move(g)), opt(std::move(o)) {
    if (guests.empty()) throw std::invalid_argument("engine: no guests");
    for (const Guest& g2 : guests) images.push_back(to_chip_image(g2.image));
    json gd = json::array();
    for (const Guest& g2 : guests) gd.push_back(image_digest(g2.image));
    const chip::Capabilities caps = be.capabilities();
    if (opt.hash_every && !caps.hash)
      throw std::invalid_argument("--hash-every: the " + be.name() + " backend has no state hash (HASH capability)");
    if ((opt.checkpoint_every || opt.compare == Compare::kEnd) && !caps.save_restore)
      throw std::invalid_argument(std::string(opt.compare == Compare::kEnd ? "--compare end" : "--checkpoint-every") +
                                  ": the " + be.name() + " backend cannot save and restore streams (SAVE_RESTORE capability)");
    std::string chip_hash = "unknown";
    try {
      chip_hash = be.identity();
    } catch (const std::exception&) {
    }
    if (!opt.chip_identity.empty()) chip_hash += " " + opt.chip_identity;
    fingerprint = {{"guests", gd},
                   {"backend", be.name()},
                   {"chip", chip_hash},
                   {"mode", std::string(to_string(opt.mode))},
                   {"teacher_forced_steps", opt.teacher_forced_steps},
                   {"compare", std::string(to_string(opt.compare))},
                   {"max_steps", opt.max_steps}};
  }

  double seconds() const {
    return seconds_before + std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::uint64_t total_steps() const {
    std::uint64_t s = 0;
    for (const auto& L : lanes) s += L->steps;
    return s;
  }

  void setup_lanes() {
    be.set_num_streams(guests.size());
    lanes.clear();
    for (std::size_t i = 0; i < guests.size(); ++i) {
      auto L = std::make_unique<Lane>();
      L->index = i;
      L->sid = static_cast<chip::StreamId>(i);
      L->end_at_self_loop = opt.max_steps == 0;
      reset_lane(*L, be, guests[i].image, images[i]);
      lanes.push_back(std::move(L));
    }
  }

  void take_snapshot(Lane& L) {
    L.snapshot = serialize_lane(L, be);
    L.snapshot_step = L.steps;
    L.snapshot_hash.reset();
    if (be.capabilities().hash && be.capabilities().save_restore) L.snapshot_hash = be.hash(L.sid);
  }

  // Puts replay lane T (stream and reference) where L's last snapshot was: the reset state when
  // there is none. Returns "" or one line saying that the chip's RESTORE was not exact (its HASH
  // after RESTORE differs from the HASH taken at the snapshot).
  // Why a teacher-forced replay may not give the run's wrong token, when nothing more is known:
  // the chip is not deterministic; its restore is not exact (only when the replay started from a
  // restored snapshot, not from a reset); or, for a token of a FREE request, its FREE path
  // disagrees with its FORCED/STEP path (found by an outside tester: a chip whose FREE answers
  // alone were wrong was told about a checkpoint restore it did not have).
  std::string unexplained(const Divergence& d) const {
    const bool restored = d.replay_from > 0 && be.capabilities().save_restore;
    std::string text = restored ? "the chip is not deterministic or its checkpoint restore is not exact"
                                : "the chip is not deterministic (the replay started from the reset)";
    if (d.mode == Mode::kFree && be.capabilities().multi_step)
      text += ", or its FREE answers differ from its FORCED and STEP answers to the same tokens (the run's token "
              "came from a FREE request; lockstep dut-check's FREE check compares them)";
    return text;
  }

  std::string restore_for_replay(Lane& T, const Lane& L) {
    T.index = L.index;
    T.sid = L.sid;
    if (L.snapshot.empty()) {
      // The snapshot of step 0 is the reset itself (Engine::run takes none: for short programs
      // serialising 8.5 MB of chip state cost more than the run).
      T.ref.load(guests[L.index].image);
      be.reset(T.sid, images[L.index]);
      return "";
    }
    restore_lane(T, be, L.snapshot);
    if (!L.snapshot_hash || !be.capabilities().hash) return "";
    const std::uint64_t h = be.hash(T.sid);
    if (h == *L.snapshot_hash) return "";
    return "the chip's RESTORE is not exact: its HASH after restoring the snapshot of step " +
           std::to_string(L.snapshot_step) + " is " + hex64(h) + ", but was " + hex64(*L.snapshot_hash) +
           " when that snapshot was saved (equal states give equal hashes, dut-protocol.md §3.8)";
  }

  void finish(Lane& L, const std::string& end) {
    L.done = true;
    L.end = end;
  }

  bool forced_at(std::uint64_t step) const {
    return opt.mode == Mode::kForced || step <= opt.teacher_forced_steps;
  }

  // ---------------------------------------------------------- checkpoints
  std::filesystem::path checkpoint_path(std::uint64_t r) const {
    char name[40];
    std::snprintf(name, sizeof name, "ckpt-%012llu.lsck", static_cast<unsigned long long>(r));
    return opt.checkpoint_dir / name;
  }

  void write_checkpoint() {
    detail::Writer w;
    w.raw(kCheckpointMagic, 8);
    json meta = {{"fingerprint", fingerprint},
                 {"round", round},
                 {"seconds", seconds()},
                 {"checkpoints_written", checkpoints_written + 1}};
    json t = json::array();
    for (const ThroughputSample& p : throughput) t.push_back({p.seconds, p.steps});
    meta["throughput"] = t;
    w.str(format::json_text(meta));
    w.u64(lanes.size());
    for (const auto& L : lanes) w.blob(serialize_lane(*L, be));
    try {
      std::filesystem::create_directories(opt.checkpoint_dir);
      detail::write_file_atomic(checkpoint_path(round), detail::compress(w.bytes()));
    } catch (const std::runtime_error& e) {
      throw CheckpointWriteError(e.what(), round);
    }
    ++checkpoints_written;
    last_checkpoint_round = round;
    if (opt.keep_checkpoints > 0) {
      auto all = list_checkpoints(opt.checkpoint_dir);
      while (all.size() > opt.keep_checkpoints) {
        std::error_code ec;
        std::filesystem::remove(checkpoint_path(all.front()), ec);
        all.erase(all.begin());
      }
    }
  }

  struct CheckpointData {
    json meta;
    std::vector<std::vector<std::uint8_t>> lanes;
  };

  CheckpointData read_checkpoint(std::uint64_t r) const {
    const auto raw = detail::read_file(checkpoint_path(r));
    const auto bytes = detail::decompress(raw);
    detail::Reader rd(bytes);
    char magic[8];
    rd.raw(magic, 8);
    if (std::memcmp(magic, kCheckpointMagic, 7) == 0 && magic[7] != kCheckpointMagic[7])
      throw std::runtime_error(std::string("checkpoint: format ") + std::string(magic, 8) +
                               " of another lockstep version (this one reads " + std::string(kCheckpointMagic, 8) +
                               "); start the run again");
    if (std::memcmp(magic, kCheckpointMagic, 8) != 0) throw std::runtime_error("checkpoint: bad magic");
    CheckpointData d;
    d.meta = json::parse(rd.str());
    const std::uint64_t n = rd.u64();
    if (n != lanes.size()) throw std::runtime_error("checkpoint: wrong number of streams");
    for (std::uint64_t i = 0; i < n; ++i) d.lanes.push_back(rd.blob());
    if (!rd.done()) throw std::runtime_error("checkpoint: trailing bytes");
    // Its step counts agree with its name: the round is the step the file is named for, and no
    // stream is past it (found by an outside tester: a re-packed file whose stream said step 2^60
    // resumed and reported 1,152,921,504,606,922,048 steps compared). Such a file is skipped as damaged.
    if (!d.meta.contains("round") || !d.meta["round"].is_number_unsigned() || d.meta["round"].get<std::uint64_t>() != r)
      throw std::runtime_error("checkpoint: its round (" + format::json_text(d.meta.value("round", json())) +
                               ") is not the step its name gives (" + std::to_string(r) + ")");
    for (std::uint64_t i = 0; i < n; ++i) {
      detail::Reader lr(d.lanes[i]);
      const std::uint64_t steps = lr.u64();
      if (steps > r)
        throw std::runtime_error("checkpoint: stream " + std::to_string(i) + " says step " + std::to_string(steps) +
                                 ", past the checkpoint's step " + std::to_string(r));
    }
    if (d.meta.value("fingerprint", json()) != fingerprint) {
      throw std::runtime_error("checkpoint " + checkpoint_path(r).string() +
                               " was written for other guests, another chip or other options: " +
                               format::json_text(d.meta.value("fingerprint", json())) + " vs " + format::json_text(fingerprint));
    }
    return d;
  }

  // ---------------------------------------------------------- stepping

  // Steps per chip call: Options::chunk, else the backend's preference.
  std::uint32_t max_chunk() const {
    return std::max<std::uint32_t>(1, opt.chunk ? opt.chunk : be.preferred_chunk());
  }

  // A lane in a round of advance(): its mode for the round and the reference's tokens for it.
  struct Active {
    Lane* lane;
    bool forced;
    std::vector<std::uint32_t> expected;
  };

  // Steps `set` until every lane is done (or a stop request).  `compare`:
  // whether tokens are compared per step; `main`: the main run (progress,
  // output, hash records and disk checkpoints) rather than a replay.
  //
  // Each round takes the reference's next n tokens of every active lane (peek_ref), asks the
  // chip for n steps of each (one teacher_forced_batch / free_running_batch call per mode), then
  // consumes and compares them step by step. n ends at every step where something happens
  // (a snapshot, a hash record, a checkpoint, the step limit, the end of the teacher-forced
  // prefix), so those happen exactly where a round of one step would put them; active lanes
  // always share their step count, so they share these boundaries. A lane that diverges inside
  // a round stops there (its chip stream ran ahead; the replay restores it from a snapshot).
  // n adapts to the chip's speed (CallSizer), up to max_chunk().
  void advance(const std::vector<Lane*>& set, Compare compare, bool main) {
    std::vector<Active> act;
    std::vector<chip::StreamId> ids;
    std::vector<std::uint32_t> counts;
    std::vector<Token> in, out;
    auto last_tick = Clock::now();
    std::uint64_t last_steps = total_steps();
    std::size_t streams = 0;
    for (const Lane* L : set) streams += L->done ? 0 : 1;
    CallSizer sizer(max_chunk(), be.answer_deadline_s(), streams);
    for (;;) {
      if (main && opt.stop && opt.stop->load(std::memory_order_relaxed)) {
        interrupted = true;
        if (!opt.checkpoint_dir.empty() && opt.checkpoint_every > 0) write_checkpoint();
        for (Lane* L : set)
          if (!L->done) L->end = "interrupted";
        return;
      }
      act.clear();
      for (Lane* L : set) {
        if (L->done) continue;
        if (opt.max_steps && L->steps >= opt.max_steps) {
          // A guest whose last token is the limit's own step ended within it (found by an outside
          // tester: `run hello.elf --steps 1974`, the guest's length, said it had not ended)
          std::vector<std::uint32_t> next;
          peek_ref(*L, 1, next);
          finish(*L, next.empty() ? lane_end(*L) : "step_limit");
          continue;
        }
        std::uint64_t n = sizer.steps();
        const std::uint64_t s = L->steps;
        if (opt.max_steps) n = std::min(n, opt.max_steps - s);
        if (opt.snapshot_every && be.capabilities().save_restore) n = std::min(n, opt.snapshot_every - s % opt.snapshot_every);
        if (main && opt.hash_every) n = std::min(n, opt.hash_every - s % opt.hash_every);
        if (main && opt.checkpoint_every && !opt.checkpoint_dir.empty())
          n = std::min(n, opt.checkpoint_every - round % opt.checkpoint_every);
        if (opt.mode == Mode::kFree && s < opt.teacher_forced_steps) n = std::min(n, opt.teacher_forced_steps - s);
        Active a{L, forced_at(s + 1), {}};
        peek_ref(*L, static_cast<std::size_t>(n), a.expected);
        if (a.expected.empty()) {
          finish(*L, lane_end(*L));
          continue;
        }
        act.push_back(std::move(a));
      }
      if (act.empty()) return;
      std::uint32_t longest_call = 0;  // steps of the longest stream in this round's calls
      for (const Active& a : act) longest_call = std::max(longest_call, static_cast<std::uint32_t>(a.expected.size()));
      const auto t_round = Clock::now();
      const double diagnosis_before = diagnosis_seconds;
      // One call per mode; outputs land in each lane's slice of `out`.
      std::vector<std::size_t> at(act.size());
      std::size_t total = 0;
      for (std::size_t i = 0; i < act.size(); ++i) {
        at[i] = total;
        total += act[i].expected.size();
      }
      out.assign(total, 0);
      std::vector<Token> lane_out;
      std::vector<Token> expect;
      for (const bool forced : {true, false}) {
        ids.clear();
        counts.clear();
        in.clear();
        expect.clear();
        std::vector<std::size_t> which;
        for (std::size_t i = 0; i < act.size(); ++i) {
          if (act[i].forced != forced) continue;
          const Lane& L = *act[i].lane;
          which.push_back(i);
          ids.push_back(L.sid);
          counts.push_back(static_cast<std::uint32_t>(act[i].expected.size()));
          if (forced) {
            in.push_back(L.last_ref);
            in.insert(in.end(), act[i].expected.begin(), act[i].expected.end() - 1);
          } else {
            in.push_back(L.last_chip);
            expect.insert(expect.end(), act[i].expected.begin(), act[i].expected.end());
          }
        }
        if (ids.empty()) continue;
        std::size_t n = 0;
        for (std::uint32_t c : counts) n += c;
        lane_out.assign(n, 0);
        std::exception_ptr failed;
        try {
          if (forced) be.teacher_forced_batch(ids, counts, in, lane_out);
          // Compared step by step, a lane ends at its first miss, so the backend may run the steps
          // with the expected tokens as their inputs (ChipBackend::free_running_batch_expecting):
          // the same tokens up to and including that miss.
          else if (compare == Compare::kEveryStep) be.free_running_batch_expecting(ids, counts, in, expect, lane_out);
          else be.free_running_batch(ids, counts, in, lane_out);
        } catch (...) {
          failed = std::current_exception();
        }
        if (failed) {
          // The request brought no tokens. A chip under test's ERROR answer may hide a wrong
          // token of the same round: look for it before the fault ends the run.
          if (compare != Compare::kEveryStep || !be.continue_after_error()) std::rethrow_exception(failed);
          if (!locate_before_error(act, main)) std::rethrow_exception(failed);
          break;  // every lane of the round diverged and is done
        }
        std::size_t off = 0;
        for (std::size_t k = 0; k < which.size(); ++k) {
          std::copy(lane_out.begin() + static_cast<std::ptrdiff_t>(off),
                    lane_out.begin() + static_cast<std::ptrdiff_t>(off + counts[k]),
                    out.begin() + static_cast<std::ptrdiff_t>(at[which[k]]));
          off += counts[k];
        }
      }
      std::uint64_t round_steps = 0;
      for (std::size_t i = 0; i < act.size(); ++i) {
        Lane& L = *act[i].lane;
        if (L.done) continue;  // diverged in locate_before_error
        const std::vector<std::uint32_t>& ex = act[i].expected;
        round_steps = std::max<std::uint64_t>(round_steps, ex.size());
        for (std::size_t j = 0; j < ex.size(); ++j) {
          const auto e = next_ref(L, opt.history);
          if (!e || *e != ex[j]) throw std::logic_error("engine: the reference's look-ahead and its tokens differ");
          const std::uint32_t a = out[at[i] + j];
          count_step(L, *e, a);
          if (compare == Compare::kEveryStep && *e != a) {
            const std::uint32_t input = j == 0 ? (act[i].forced ? L.last_ref : L.last_chip)
                                               : (act[i].forced ? ex[j - 1] : out[at[i] + j - 1]);
            diverge(L, input, *e, a);
            break;
          }
          agreed_step(L, *e, a, main && compare == Compare::kEveryStep);
        }
        if (L.done) continue;
        if (opt.snapshot_every && L.steps % opt.snapshot_every == 0 && be.capabilities().save_restore) take_snapshot(L);
        if (main && opt.hash_every && L.steps % opt.hash_every == 0) {
          L.hashes.push_back({L.steps, be.hash(L.sid), ref_state_hash(L.ref)});
        }
      }
      if (main) round += round_steps;
      if (main && opt.checkpoint_every && !opt.checkpoint_dir.empty() && round % opt.checkpoint_every == 0) {
        write_checkpoint();
      }
      const double dt_round = std::chrono::duration<double>(Clock::now() - t_round).count();
      sizer.took(dt_round, longest_call);
      if (main) {
        const auto now = Clock::now();
        const double dt = std::chrono::duration<double>(now - last_tick).count();
        // A round in which a divergence was diagnosed prints no progress: its rate and step are not
        // the comparing's, and after the "diagnosing the divergence" note they read as a replay's
        // (found by an outside tester: "progress: step 128  5 steps/s" after that note).
        if (diagnosis_seconds > diagnosis_before) {
          last_tick = now;
          last_steps = total_steps();
        } else if (dt >= opt.progress_interval) {
          const std::uint64_t s = total_steps();
          throughput.push_back({seconds(), s});
          if (opt.on_progress) {
            Progress p;
            p.round = round;
            p.steps = s;
            p.expected_round = opt.expected_rounds;
            p.seconds = seconds();
            p.steps_per_second = static_cast<double>(s - last_steps) / dt;
            p.active = act.size();
            opt.on_progress(p);
          }
          last_tick = now;
          last_steps = s;
        }
      }
    }
  }

  // One compared step of lane L: the reference's token e (already taken with next_ref) and the
  // chip's a.
  void count_step(Lane& L, std::uint32_t e, std::uint32_t a) {
    ++L.ref_steps;
    ++L.steps;
    L.ref_digest.update(e);
    L.chip_digest.update(a);
    if (!L.class_counter) L.class_counter = &L.class_steps[L.current_class];
    ++*L.class_counter;
  }

  // After count_step, for a step that did not diverge: the kinds seen, the guest's output (echo:
  // a main lane compared every step) and the last tokens.
  void agreed_step(Lane& L, std::uint32_t e, std::uint32_t a, bool echo) {
    if (const std::uint32_t kind = e >> 8; kind < 128) L.kinds_due[kind >> 6] |= 1ull << (kind & 63);
    if (echo && (opt.on_output || opt.on_console) && format::kind_of(a)) {
      const std::uint32_t kind = format::kind_of(a)->kind;
      if (kind == static_cast<std::uint32_t>(format::Kind::OUT)) {
        if (opt.on_output) opt.on_output(L.index, static_cast<char>(format::payload_of(a)));
        if (opt.on_console) opt.on_console(L.index, 1, static_cast<char>(format::payload_of(a)));
      } else if (kind == static_cast<std::uint32_t>(format::Kind::ERR) && opt.on_console) {
        opt.on_console(L.index, 2, static_cast<char>(format::payload_of(a)));
      }
    }
    L.last_ref = e;
    L.last_chip = a;
  }

  // A chip under test answered a round's STEP, FORCED or FREE with ERROR (dut-protocol.md §3.10),
  // which brings no tokens, and be.continue_after_error() lets requests through again. The ERROR
  // can follow a wrong token of the same request: in FREE the chip's own wrong prediction fed back
  // to it, in any request a state that a wrong step corrupted. Each lane of the round is replayed
  // teacher-forced from its last snapshot to the round's start (every step compared), then one
  // step a request through the round's steps; its first mismatch there precedes the ERROR (every
  // earlier step agreed, so free-running inputs equal teacher-forced ones up to it) and is
  // reported as the lane's divergence, with the ERROR in its note. Returns true when every lane of
  // the round diverged: the fault is then dismissed and the run ends as any divergent run does.
  // Otherwise the fault is kept (false): it ends the run, with the divergences found so far.
  bool locate_before_error(const std::vector<Active>& act, bool main) {
    std::string fault = be.fault();
    if (const std::string_view p = "chip under test: "; fault.rfind(p, 0) == 0) fault.erase(0, p.size());
    std::string finding;  // why the fault stands, for the first lane without a divergence
    // An ERROR frame, or an answer with the wrong number of tokens or an id not below vocab_size
    // (found by an outside tester: such an answer hid a wrong token of the same request).
    const bool error_frame = fault.find(" with ERROR ") != std::string::npos;
    try {
      for (const Active& a : act) {
        Lane& L = *a.lane;
        Lane T;
        const std::string bad_restore = restore_for_replay(T, L);
        const std::uint64_t from = T.steps;
        bool same = true;
        if (L.steps > T.steps)
          forced_replay(T, L.steps - T.steps, ~0u, [&](std::uint32_t e, std::uint32_t c) { return same = e == c; });
        const std::string replayed = "replayed teacher-forced from step " + std::to_string(from) + ", ";
        if (!same || T.steps != L.steps) {
          if (finding.empty())
            finding = replayed + "the chip diverged before the request's first step " + std::to_string(L.steps + 1) +
                      ", where the run had agreed: " +
                      (bad_restore.empty() ? "the chip is not deterministic" : bad_restore);
          continue;
        }
        std::optional<std::uint32_t> actual;
        forced_replay(
            T, a.expected.size(), ~0u,
            [&](std::uint32_t e, std::uint32_t c) {
              if (e != c) actual = c;
              return e == c;
            },
            1);
        if (!actual) {
          if (finding.empty())
            finding = replayed + "the request's steps " + std::to_string(L.steps + 1) + ".." +
                      std::to_string(L.steps + a.expected.size()) + " agreed with the reference: no wrong token " +
                      (error_frame ? "preceded the ERROR" : "preceded that answer") +
                      // The replay is teacher-forced: a wrong token that only a FREE request gives
                      // is not seen by it (found by an outside tester: a FREE-only wrong token was
                      // ruled out outright).
                      (forced_at(L.steps + 1) ? std::string()
                                              : std::string(" when they are fed the reference's tokens (a wrong token "
                                                            "that only free-running gave, the chip fed its own tokens, "
                                                            "or a chip that is not "
                                                            "deterministic, is not ruled out: lockstep dut-check's FREE "
                                                            "check compares the two paths)"));
          continue;
        }
        // Lane L takes the reference's steps up to the mismatch (all agreed) and diverges there.
        while (L.steps + 1 < T.steps) {
          const auto e = next_ref(L, opt.history);
          if (!e) throw std::logic_error("engine: the reference ended before the replayed mismatch");
          count_step(L, *e, *e);
          agreed_step(L, *e, *e, main);
        }
        const auto e = next_ref(L, opt.history);
        if (!e || *e == *actual) throw std::logic_error("engine: the reference and its replay differ");
        const std::uint32_t input = L.last_ref;
        count_step(L, *e, *actual);
        diverge(L, input, *e, *actual);
        std::string& note = L.divergence->note;
        note += std::string(note.empty() ? "" : "; ") + "then the chip " + fault +
                (error_frame ? ", an answer without tokens; " : " (none of that answer's tokens was used); ") +
                "this step was found by replaying the request's steps teacher-forced from step " +
                std::to_string(from) + (bad_restore.empty() ? "" : " (" + bad_restore + ")");
      }
    } catch (...) {
      be.end_continue_after_error(false, "");
      throw;
    }
    be.end_continue_after_error(finding.empty(), finding);
    return finding.empty();
  }

  // The first divergence of a lane at step L.steps: report, replay, classify.
  void diverge(Lane& L, std::uint32_t input, std::uint32_t expected, std::uint32_t actual) {
    Divergence d;
    d.guest = guests[L.index].name;
    d.stream = L.index;
    d.step = L.steps;
    d.mode = forced_at(L.steps) ? Mode::kForced : Mode::kFree;
    d.pc = L.current.pc;
    d.word = L.current.word;
    d.disassembly = L.current.disassembly();
    d.token_in_instruction = static_cast<std::uint32_t>(L.qpos - 1);
    d.field = kind_name(expected);
    if (const auto k = format::kind_of(expected)) d.byte_index = byte_index_of(k->kind);
    d.position = format::stream_position(L.queue, L.qpos - 1);
    d.expected = expected;
    d.actual = actual;
    d.expected_text = format::token_name(expected);
    d.actual_text = format::token_name(actual);
    d.expected_chip_id = be.own_token_id(expected);
    // an unmapped chip id is the chip's id, whatever its map (to_json's actual_chip_id)
    d.actual_chip_id = actual & format::kUnmappedChipId ? actual & ~format::kUnmappedChipId : be.own_token_id(actual);
    d.differing_bits = expected ^ actual;
    d.bits_text = bits_text(expected, actual);
    d.note = divergence_note(expected, actual);
    if (d.note.empty() && d.token_in_instruction == 0 && !L.history.empty()) d.note = pc_note(L.history.back(), d);
    if (const std::uint32_t kind = expected >> 8;
        L.kinds_known && kind < 128 && !(L.kinds_due[kind >> 6] >> (kind & 63) & 1) && d.note.empty())
    {
      const std::string check = be.name() == "dut"
                                    ? "check the chip's embedding and unembedding of " +
                                          (kind_name(actual) == d.field ? d.field : d.field + " and " + kind_name(actual)) +
                                          ", and their lines of the --dut-vocab map, when it is given one"
                                    : "check the embedding and unembedding of " + d.field;
      d.note = "this is the first " + d.field + " token of the run: every step before it agreed, and none of them "
               "was a " + d.field + " token. A chip that names a whole kind of token wrongly fails here first (" +
               check + "), as does an instruction whose result is wrong the first time it is computed";
    }
    d.recent.assign(L.history.begin(), L.history.end());
    d.recent.push_back(L.current);
    L.mismatches = 1;
    const auto replay_start = Clock::now();
    struct Timed {  // adds the replay's time to diagnosis_seconds, also when it throws
      double& total;
      Clock::time_point start;
      ~Timed() { total += std::chrono::duration<double>(Clock::now() - start).count(); }
    } timed{diagnosis_seconds, replay_start};
    try {
      replay(L, d, input);
    } catch (...) {
      // The chip failed while the divergence was being classified (a chip under test that
      // timed out or died on the replay, or was ended by the run's interruption): the
      // divergence itself is kept, never lost with it, and is left unclassified, with the reason.
      std::string why = "the chip failed";
      try {
        throw;
      } catch (const std::exception& e) {
        why = e.what();
      } catch (...) {
      }
      const bool stopped = opt.stop && opt.stop->load(std::memory_order_relaxed);
      d.fault = FaultClass::kUnclassified;
      d.fault_text = std::string("the teacher-forced replay that classifies the divergence did not finish (") +
                     (stopped ? "the run was interrupted" : "the chip failed during it") + ": " + why +
                     "); the divergence above stands";
      if (d.attribution.text.empty()) d.attribution.text = "no attribution: the replay did not reach the divergent step";
      L.divergence = std::move(d);
      finish(L, "diverged");
      throw;
    }
    L.divergence = std::move(d);
    finish(L, "diverged");
  }

  // Up to n teacher-forced steps of the replay lane T, in chip calls of at most max_chunk()
  // steps; stops before an input the chip's vocabulary cannot express (>= vocab) or after a step
  // for which visit(expected, actual) returns false. T.steps counts the step when visit runs.
  // At most max_steps steps a chip call (0: as many as max_chunk() allows).
  template <typename Visit>
  void forced_replay(Lane& T, std::uint64_t n, std::uint32_t vocab, Visit visit, std::uint32_t max_steps = 0) {
    std::vector<std::uint32_t> ex;
    std::vector<Token> in, out;
    const chip::StreamId sid = T.sid;
    std::uint64_t made = 0;
    // Calls sized to the chip's speed as advance() sizes them (CallSizer): a slow chip under test
    // is never sent one max_chunk() call that outlasts its --dut-timeout.
    CallSizer sizer(max_steps ? std::min(max_chunk(), max_steps) : max_chunk(), be.answer_deadline_s(), 1);
    while (made < n) {
      peek_ref(T, static_cast<std::size_t>(std::min<std::uint64_t>(n - made, sizer.steps())), ex);
      in.clear();
      for (std::size_t k = 0; k < ex.size(); ++k) {
        const std::uint32_t input = k == 0 ? T.last_ref : ex[k - 1];
        if (input >= vocab) break;
        in.push_back(input);
      }
      if (in.empty()) return;
      const auto count = static_cast<std::uint32_t>(in.size());
      out.assign(in.size(), 0);
      const auto t0 = Clock::now();
      be.teacher_forced_batch(std::span<const chip::StreamId>(&sid, 1), std::span<const std::uint32_t>(&count, 1), in, out);
      const double took = std::chrono::duration<double>(Clock::now() - t0).count();
      sizer.took(took, count);
      for (std::size_t j = 0; j < in.size(); ++j) {
        const auto e = next_ref(T, 1);
        ++T.ref_steps;
        ++T.steps;
        ++made;
        const bool go = visit(*e, out[j]);
        T.last_ref = *e;
        if (!go) return;
      }
      if (in.size() < ex.size()) return;
    }
  }

  // Teacher-forced replay from the lane's last snapshot through the divergent
  // step (with probe recording on for that step) and a window after it.
  void replay(Lane& L, Divergence& d, std::uint32_t original_input) {
    Lane T;
    const std::string bad_restore = restore_for_replay(T, L);
    d.replay_from = T.steps;
    bool reproduced = false;
    std::uint32_t replay_actual = 0;
    bool earlier = false;
    auto diverges_earlier = [&](std::uint32_t e, std::uint32_t a) {
      earlier = true;
      d.fault = FaultClass::kNotReproduced;
      d.fault_text = "the teacher-forced replay from step " + std::to_string(d.replay_from) +
                     " diverges earlier, at step " + std::to_string(T.steps) + " (" + format::token_name(e) +
                     " expected, " + format::token_name(a) + "): " + (bad_restore.empty() ? unexplained(d) : bad_restore);
      d.attribution.text = "no attribution: the replay did not reach the divergent step";
    };
    auto agrees_or_diverges_earlier = [&](std::uint32_t e, std::uint32_t a) {
      if (a == e) return true;
      diverges_earlier(e, a);
      return false;
    };
    // One step of the replay lane with probes recorded (the chip's and, beside a chip file, the
    // file's), never left recording.
    auto probed_step = [&](std::uint32_t in) {
      try {
        be.set_probe_recording(true);
        const std::uint32_t a = be.step(T.sid, in);
        be.set_probe_recording(false);
        return a;
      } catch (...) {
        be.set_probe_recording(false);
        throw;
      }
    };
    // Beside a chip file, the last chip_file_probe_steps steps before the divergent one are made
    // one at a time and their probes compared with the file's: the first that differs, though its
    // token agreed, is where the chip under test's executor first parts from the file.
    const auto* shadowed = dynamic_cast<const ShadowedBackend*>(&be);
    const bool scan = shadowed != nullptr && be.capabilities().probes && opt.chip_file_probe_steps > 0;
    std::optional<Attribution> parted;  // the first earlier step whose probes differ
    std::uint64_t scanned_from = 0, scanned = 0;
    bool scan_gave_up = false;  // a step's probes differed but attributed nothing
    if (d.step > T.steps + 1) {
      const std::uint64_t before = d.step - 1 - T.steps;
      const std::uint64_t probed = scan ? std::min(before, opt.chip_file_probe_steps) : 0;
      forced_replay(T, before - probed, ~0u, agrees_or_diverges_earlier);
      if (!earlier && probed > 0) {
        if (opt.on_note && probed > 64)
          opt.on_note("diagnosing the divergence at step " + std::to_string(d.step) + ": comparing the probes of the " +
                      std::to_string(probed) + " steps before it with the chip file's");
        scanned_from = T.steps + 1;
        std::optional<chip::ProbeMap> pm;
        try {
          pm = be.probe_map();
        } catch (const std::exception&) {
          // No probe map: the divergent step's attribution says why.
        }
        while (pm && scanned < probed && !parted) {
          const auto e = next_ref(T, 1);
          if (!e) break;
          ++T.ref_steps;
          const std::uint32_t in = T.last_ref;
          const std::uint32_t a = probed_step(in);
          ++T.steps;
          ++scanned;
          if (a != *e) {
            diverges_earlier(*e, a);
            return;
          }
          bool differs = false;
          try {
            differs = shadowed->in_step(T.sid) && probes_differ_from_file(*shadowed, *pm, T.sid);
          } catch (const std::exception&) {
            differs = false;  // probing failed: the divergent step's attribution says so
          }
          T.last_ref = *e;
          if (!differs) continue;
          // A probe that differs, as attribution reads it (probes the chip under test fills with
          // one value everywhere, or none that it compares, attribute nothing: the divergent step
          // says so).
          Attribution at = attribute_beside_chip_file(*shadowed, T.sid, in, *e, a);
          if (at.status != "layer" && at.status != "embedding") {
            if (!at.probe_notes.empty()) continue;  // only probes that do not show the executor's values
            scan_gave_up = true;
            break;
          }
          at.probe_step = T.steps;
          parted = std::move(at);
        }
        if (T.steps + 1 < d.step) forced_replay(T, d.step - 1 - T.steps, ~0u, agrees_or_diverges_earlier);
      }
    }
    if (earlier) return;
    const auto e = next_ref(T, 1);
    if (!e || *e != d.expected || T.steps + 1 != d.step) {
      d.fault = FaultClass::kNotReproduced;
      d.fault_text = "internal: the reference replay does not reach the divergent token";
      return;
    }
    ++T.ref_steps;
    const std::uint32_t in = T.last_ref;
    // Probes are recorded only by a chip that has them (a chip under test may not: then the
    // divergence is reported without attribution, docs/spec/dut-protocol.md §7).
    const bool probes = be.capabilities().probes || shadowed != nullptr;
    replay_actual = probes ? probed_step(in) : be.step(T.sid, in);
    d.attribution = attribute_step(be, T.sid, in, *e, replay_actual);
    if (probes) d.attribution.probe_step = d.step;
    if (parted) {
      // The earlier step is where the executor first parts from the file: it gives the
      // attribution, and the divergent step's own first difference is added to its text.
      const std::uint64_t s = parted->probe_step;
      const std::string own = d.attribution.first_disagreeing.empty() ? std::string("none")
                                                                      : d.attribution.first_disagreeing;
      parted->text = "at step " + std::to_string(s) + ", " + std::to_string(d.step - s) +
                     (d.step - s == 1 ? " step" : " steps") + " before the divergent step (its token still agreed" +
                     (s == scanned_from ? std::string(", and it is the first step compared: the two may part earlier, "
                                                      "before step ") + std::to_string(scanned_from)
                                        : ", and the probes of the " + std::to_string(s - scanned_from) +
                                              " steps before it, from step " + std::to_string(scanned_from) +
                                              ", agreed") +
                     "), " + parted->text + "; at the divergent step itself the first difference is " +
                     (own == "none" || own == "unembedding" ? own : after_point(own));
      // One wrong sublayer made both differences: it is a candidate at both steps.
      const chip::ProbeMap spm = shadowed->shadow().probe_map();
      std::map<std::string, int> key_by_name{{key_name(0), 0}, {key_name(kUnembedKey), kUnembedKey}};
      for (const chip::SublayerRef& w : spm.dataflow.sublayers) key_by_name[key_name(key_of(w))] = key_of(w);
      std::set<int> both;
      for (const std::string& c : parted->candidates) {
        const auto k = key_by_name.find(c);
        if (k != key_by_name.end() && d.attribution.chip_file_verdict == "executor" &&
            std::find(d.attribution.candidates.begin(), d.attribution.candidates.end(), c) != d.attribution.candidates.end()) {
          both.insert(k->second);
          parted->shared_candidates.push_back(c);
        }
      }
      parted->divergent_step_first_disagreeing = own;
      parted->divergent_step_candidates = d.attribution.candidates;
      if (!both.empty() && both.size() < parted->candidates.size())
        parted->text += "; " + std::to_string(both.size()) + " of the candidates are candidates at the divergent step "
                        "too (one wrong sublayer that made both differences is among them): " +
                        describe_candidates(both, spm);
      d.attribution = std::move(*parted);
    } else if (scanned > 0 && !scan_gave_up && d.attribution.chip_file_verdict == "executor") {
      d.attribution.text += "; the probes of the " + std::to_string(scanned) + " steps before it (from step " +
                            std::to_string(scanned_from) + ") agreed with the chip file's";
    }
    (void)original_input;
    ++T.steps;
    reproduced = replay_actual == d.actual;
    T.last_ref = *e;
    // The window after the divergent step, fed the reference's tokens (as
    // long as the chip's vocabulary can express them).
    std::uint32_t vocab = ~0u;
    try {
      vocab = be.vocab_size();
    } catch (const std::exception&) {
    }
    bool same_pair = true;  // every later mismatch is the divergence's own (expected, actual)
    // The divergent instruction's last step: mismatches up to it are the same instruction's.
    const std::uint64_t insn_end = d.step + (L.queue.size() - L.qpos);
    std::uint64_t after_insn = 0;  // mismatches of the window after that instruction
    // Whether every mismatch after that instruction is a token of a later execution of the same
    // operation (ref::decode's op, at any pc), and that operation's later executions in the window
    // (their first steps), all of them and those with a mismatch.
    const ref::Op divergent_op = ref::decode(d.word).op;
    const std::string op_name = d.disassembly.substr(0, d.disassembly.find(' '));  // its mnemonic
    bool only_this_op = true, current_is_op = false;
    std::uint64_t current_first = 0;
    std::set<std::uint64_t> executions, recurrences, pcs;
    // What each expected token was answered with over the divergent step and the window: a
    // fixed substitution answers every occurrence of a token with the same other token.
    std::map<std::uint32_t, SubstitutionSeen> seen;
    seen[d.expected].add(replay_actual);
    // A slow chip spends a while on the window (up to --window steps past the divergence, beyond a
    // --steps bound): after 2 s one note says what it is doing, so that a stale progress line is not
    // read as the run's (found by an outside tester: "step 320/500 19 steps/s" while it replayed).
    // A note every 30 s after that says how far it is, and a stop (SIGINT/SIGTERM) cuts the
    // window where it is: the diagnosis is made from the steps replayed and says so (found by an
    // outside tester: a chip at 1 step/s spent its whole timeout in a window with no word).
    const auto window_start = Clock::now();
    auto next_note = window_start + std::chrono::seconds(2);
    bool window_cut = false;
    forced_replay(T, opt.classify_window, vocab, [&](std::uint32_t e, std::uint32_t a) {
      if (opt.on_note && Clock::now() > next_note) {
        const bool first = next_note == window_start + std::chrono::seconds(2);
        next_note = Clock::now() + std::chrono::seconds(30);
        opt.on_note("diagnosing the divergence at step " + std::to_string(d.step) + ": a teacher-forced replay of up to " +
                    std::to_string(opt.classify_window) + " steps after it" +
                    (first ? std::string(" (run --classify-window N sets how many)")
                           : ", " + std::to_string(d.replay_window) + " replayed so far"));
      }
      if (opt.stop && opt.stop->load()) {
        window_cut = true;
        return false;
      }
      ++d.replay_window;
      seen[e].add(a);
      if (T.steps > insn_end && T.current.first_step != current_first) {
        current_first = T.current.first_step;
        current_is_op = T.current.word != 0 && ref::decode(T.current.word).op == divergent_op;
        if (current_is_op) executions.insert(current_first);
      }
      if (a != e && T.steps > insn_end) {
        ++after_insn;
        if (current_is_op) {
          recurrences.insert(current_first);
          pcs.insert(T.current.pc);
        } else {
          only_this_op = false;
        }
      }
      if (a != e) {
        ++d.replay_mismatches;
        same_pair = same_pair && e == d.expected && a == d.actual;
        if (d.replay_mismatch_steps.size() < 16) d.replay_mismatch_steps.push_back(T.steps);
      }
      return true;
    });
    const std::string from = "teacher-forced replay from step " + std::to_string(d.replay_from);
    if (!reproduced) {
      d.fault = FaultClass::kNotReproduced;
      d.fault_text = from + " gives " + format::token_name(replay_actual) + " at step " +
                     std::to_string(d.step) + ", not " + d.actual_text + ": ";
      if (!bad_restore.empty()) {
        d.fault_text += bad_restore;
      } else if (be.capabilities().multi_step && forced_call_reproduces(L, d)) {
        // The replay's divergent step is one STEP request; the run's was part of a FORCED or
        // FREE call. The same steps sent as FORCED calls give the wrong token again.
        d.fault = FaultClass::kRequestDependent;
        d.fault_text = from + ": one STEP request at step " + std::to_string(d.step) + " gives " +
                       format::token_name(replay_actual) + ", but the same steps sent as FORCED requests give " +
                       d.actual_text + " again: the chip answers the same input differently by request (its "
                       "FORCED/FREE path and its STEP path disagree; the reference's token is " +
                       d.expected_text + ")";
      } else {
        d.fault_text += unexplained(d);
        if (be.capabilities().multi_step)
          d.fault_text += " (sent as FORCED requests, the same steps do not give it either)";
      }
    } else if (d.replay_mismatches == 0 && d.replay_window == 0) {
      // The run's last step (a trap, an exit): nothing follows to tell more (it read "all 0
      // following steps agree").
      d.fault = FaultClass::kSingleStep;
      d.fault_text = from + " reproduces the wrong token at step " + std::to_string(d.step) +
                     ", the run's last: no step follows it, so nothing tells a single-step fault from a corrupted "
                     "state";
    } else if (d.replay_mismatches == 0) {
      d.fault = FaultClass::kSingleStep;
      d.fault_text = from + " reproduces the wrong token at step " + std::to_string(d.step) +
                     " and all " + std::to_string(d.replay_window) +
                     " following steps agree: a single-step fault (or a value the step read that an earlier "
                     "instruction stored wrong, unseen until now: the trace shows no state before step " +
                     std::to_string(d.step) + ")";
    } else if (after_insn == 0 && d.replay_window > insn_end - d.step) {
      d.fault = FaultClass::kSingleInstruction;
      d.fault_text = from + " reproduces the wrong token at step " + std::to_string(d.step) + "; " +
                     std::to_string(d.replay_mismatches) + " more of the same instruction's tokens (steps " +
                     std::to_string(d.step + 1) + ".." + std::to_string(insn_end) + ") disagree too, and all " +
                     std::to_string(d.replay_window - (insn_end - d.step)) +
                     " steps after the instruction agree: a fault in this one instruction's tokens (or a value it "
                     "read that an earlier instruction stored wrong, unseen until now: the trace shows no state "
                     "before step " +
                     std::to_string(d.step) + ")";
    } else if (only_this_op && !recurrences.empty() && recurrences.size() == executions.size()) {
      // Every later execution of the operation disagreed, and nothing else did (found by an
      // outside tester: a chip whose MULHSU was wrong each time was said to have a corrupted state;
      // and by a re-test: a state corruption read by one instruction, or an operation wrong for
      // some operands only, must not be called this).
      d.fault = FaultClass::kRecurringInstruction;
      d.fault_text = from + " reproduces step " + std::to_string(d.step) + "; the " + std::to_string(after_insn) +
                     " steps of the window after the instruction that still disagree are all tokens of `" + op_name +
                     "`, in each of its " + std::to_string(executions.size()) + " later execution" +
                     (executions.size() == 1 ? "" : "s") + " (at " + std::to_string(pcs.size()) + " pc" +
                     (pcs.size() == 1 ? "" : "s") + "), and every other step agrees although fed the reference's "
                     "tokens: consistent with an operation that is wrong each time it runs, rather than corrupted "
                     "state";
    } else if (const std::string pairs = fixed_substitution(seen, d.expected); !pairs.empty()) {
      d.fault = FaultClass::kTokenMapping;
      d.fault_text = from + " reproduces step " + std::to_string(d.step) + ", and " +
                     std::to_string(d.replay_mismatches) + " of the " + std::to_string(d.replay_window) +
                     " following steps still disagree although fed the reference's tokens, each as a fixed "
                     "substitution: every time the reference's token is due the chip answers the same other "
                     "token, and every other token agrees (" + pairs + "; the counts include step " +
                     std::to_string(d.step) + "). That is what a chip that computes the right thing and names it with the wrong id shows "
                     "(wrong rows of its unembedding, the map from its output to token ids, or of its --dut-vocab "
                     "map), rather than corrupted state; a computation wrong the same way each time shows it too";
    } else {
      d.fault = FaultClass::kCorruptedState;
      d.fault_text = from + " reproduces step " + std::to_string(d.step) + " and " +
                     std::to_string(d.replay_mismatches) + " of the " +
                     std::to_string(d.replay_window) + " following steps still disagree (first at step " +
                     std::to_string(d.replay_mismatch_steps.front()) +
                     ") although fed the reference's tokens: " +
                     (same_pair ? "each is the same wrong token (" + d.actual_text + " for " + d.expected_text +
                                      "), so the same fault recurs whenever that token is due, or the chip's state "
                                      "was corrupted (at this step or earlier)"
                                : std::string("the chip's state was corrupted (at this step or earlier), or a "
                                              "computation the chip makes on many steps is wrong (a weight or "
                                              "threshold of a layer that many instructions use): tokens alone do "
                                              "not tell the two apart (the layer line narrows where, when the chip has probes)"));
      if (only_this_op && !recurrences.empty())
        d.fault_text += "; every later disagreement is a token of `" + op_name +
                        "`, wrong in " + std::to_string(recurrences.size()) + " of its " +
                        std::to_string(executions.size()) +
                        " later executions: an operation wrong for some operands, or a state that only it reads";
    }
    if (reproduced && !bad_restore.empty()) d.fault_text += " (but " + bad_restore + ")";
    if (window_cut)
      d.fault_text += " (a stop cut the replay's window after " + std::to_string(d.replay_window) + " of its " +
                      std::to_string(opt.classify_window) + " steps)";
  }

  // Restores L's snapshot again and replays teacher-forced through the divergent step with
  // FORCED calls only (forced_replay): whether that step gives the divergence's wrong token.
  bool forced_call_reproduces(const Lane& L, const Divergence& d) {
    Lane T;
    if (!restore_for_replay(T, L).empty() || d.step <= T.steps) return false;
    bool again = false;
    forced_replay(T, d.step - T.steps, ~0u, [&](std::uint32_t e, std::uint32_t a) {
      if (T.steps == d.step) {
        again = a == d.actual;
        return false;
      }
      return a == e;
    });
    return again;
  }

  // ---------------------------------------------------------- bisection

  // Compare::kEnd: the streams' digests differ at the end.  Binary search over
  // the checkpoints (and reset) for the last one where the two streams'
  // prefix digests agree, then a step-by-step replay from it.
  void bisect(Lane& L) {
    std::vector<std::uint64_t> cps;
    if (!opt.checkpoint_dir.empty()) {
      for (std::uint64_t c : list_checkpoints(opt.checkpoint_dir))
        if (c <= L.steps) cps.push_back(c);
    }
    // Candidate 0 is the reset state (always good); candidate k >= 1 is cps[k-1].
    std::size_t lo = 0, hi = cps.size() + 1, examined = 0;
    std::vector<std::uint8_t> good_bytes;
    auto lane_bytes = [&](std::size_t k) { return read_checkpoint(cps[k - 1]).lanes[L.index]; };
    while (hi - lo > 1) {
      const std::size_t mid = (lo + hi) / 2;
      std::vector<std::uint8_t> bytes;
      try {
        bytes = lane_bytes(mid);
      } catch (const std::runtime_error& e) {
        // A damaged checkpoint is skipped, as resume skips one (found by an outside tester: the
        // bisection read the file resume had skipped, and a mismatch ended as an error, exit 2).
        const std::string name = checkpoint_path(cps[mid - 1]).string();
        bisect_skipped.push_back(name + ": " + e.what());
        if (opt.on_note)
          opt.on_note("bisection skipped checkpoint " + checkpoint_path(cps[mid - 1]).filename().string() + " (step " +
                      std::to_string(cps[mid - 1]) + "): " + e.what());
        cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(mid - 1));
        --hi;
        continue;
      }
      ++examined;
      Lane probe;
      probe.index = L.index;
      probe.sid = L.sid;
      restore_lane(probe, be, bytes);
      if (probe.ref_digest.value() == probe.chip_digest.value() && probe.mismatches == 0) {
        lo = mid;
        good_bytes = bytes;
      } else {
        hi = mid;
      }
    }
    // Replay from candidate lo with per-step comparison.
    Lane& R = L;
    if (lo == 0) {
      reset_lane(R, be, guests[L.index].image, images[L.index]);
    } else {
      restore_lane(R, be, good_bytes);
      R.done = false;
      R.end = "running";
    }
    const std::uint64_t good_step = R.steps;
    // From the reset, the replays of the divergence start from a RESET, as in --compare step (an
    // empty snapshot); a snapshot of step 0 would RESTORE it instead, and blame a chip whose
    // restore is inexact on its determinism (found by an outside tester).
    if (lo != 0) take_snapshot(R);
    advance({&R}, Compare::kEveryStep, false);
    json b = {{"checkpoints", cps.size()},
              {"examined", examined},
              {"good_step", good_step},
              {"bad_step", hi <= cps.size() ? json(cps[hi - 1]) : json("end")}};
    std::string text = "digests agree at step " + std::to_string(good_step) + ", differ at " +
                       (hi <= cps.size() ? "step " + std::to_string(cps[hi - 1]) : std::string("the end")) +
                       " (" + std::to_string(examined) + " of " + std::to_string(cps.size()) +
                       " checkpoints examined)";
    if (R.divergence) {
      text += "; replayed from step " + std::to_string(good_step) + " to the first divergent step " +
              std::to_string(R.divergence->step);
      b["text"] = text;
      R.divergence->bisection = b;
    } else {
      // From the reset nothing was restored, so only the chip's determinism is in question.
      b["text"] = text + "; the step-by-step replay found no differing token: " +
                  (good_step == 0 ? std::string("the chip is not deterministic (the replay started from its reset)")
                                  : std::string("the chip's state after a restore is not the state it saved "
                                                "(SAVE_RESTORE not exact), or the chip is not deterministic"));
      bisect_unlocated[L.index] = b["text"].get<std::string>();
    }
  }

  // ---------------------------------------------------------- results

  StreamResult lane_result(const Lane& L) const {
    StreamResult r;
    r.guest = guests[L.index].name;
    r.steps = L.steps;
    r.ref_steps = L.ref_steps;
    r.mismatches = L.mismatches;
    r.end = L.end;
    if (r.end == "self_loop" && L.loop_period > 0) {
      r.loop_pc = L.loop_pc;
      r.loop_word = L.ref.read_word(L.loop_pc);
      r.loop_period = L.loop_period;
    } else if (r.end == "self_loop") {
      r.loop_pc = L.current.pc;
      r.loop_word = L.current.word;
      r.loop_period = 1;
    }
    // A lane that stopped inside a chunk has a reference that ran ahead: what it did there is
    // not part of the run.
    r.exit_status = L.ahead.empty() ? L.ref.exit_status() : 0;
    r.trap_code = L.ahead.empty() ? L.ref.trap_code() : 0;
    r.digest = L.ref_digest.hex();
    r.chip_digest = L.chip_digest.hex();
    r.console = consumed_console(L);
    r.class_steps = L.class_steps;
    r.hashes = L.hashes;
    r.divergence = L.divergence;
    return r;
  }

  RunResult result() const {
    RunResult r;
    r.mode = to_string(opt.mode);
    r.compare = to_string(opt.compare);
    r.max_steps = opt.max_steps;
    r.backend = be.name();
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      r.streams.push_back(i < finals.size() ? finals[i] : lane_result(*lanes[i]));
      r.steps += r.streams.back().steps;
      r.mismatches += r.streams.back().mismatches;
    }
    r.seconds = seconds();
    r.diagnosis_seconds = std::min(diagnosis_seconds, r.seconds);
    const double comparing = r.seconds - r.diagnosis_seconds;
    r.steps_per_second = comparing > 0 ? static_cast<double>(r.steps) / comparing : 0;
    r.interrupted = interrupted;
    r.resumed_from = resumed_from;
    r.checkpoints_written = checkpoints_written;
    r.last_checkpoint = last_checkpoint_round;
    r.skipped_checkpoints = bisect_skipped;
    r.throughput = throughput;
    if (r.streams.size() == 1) {
      r.digest = r.streams[0].digest;
    } else {
      std::vector<std::uint8_t> b;
      for (const StreamResult& s : r.streams) {
        const std::uint64_t v = std::stoull(s.digest, nullptr, 16);
        for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
      }
      r.digest = hex64(xxh3(b));
    }
    return r;
  }

  // Compare::kEnd, stopped before the end: streams whose digests of the steps compared already
  // differ hold a divergence among them that the stop left unlocated; they are a mismatch, never a
  // clean prefix (found by an outside tester: an interrupted run said "mismatches 0", and its case
  // recorded no divergence in steps where replay found one).
  void mark_unlocated() {
    finals.clear();
    for (auto& L : lanes) {
      finals.push_back(lane_result(*L));
      if (L->mismatches == 0 && L->ref_digest.value() != L->chip_digest.value()) {
        finals.back().mismatches = 1;
        finals.back().divergence_unlocated = true;
        // Resume only where there is a checkpoint to resume from (found by an outside tester:
        // --resume of a run stopped before its first checkpoint was refused).
        bool resumable = false;
        if (!opt.checkpoint_dir.empty())
          for (std::uint64_t c : list_checkpoints(opt.checkpoint_dir)) resumable = resumable || c <= L->steps;
        finals.back().unlocated_why = std::string("the run was stopped before its bisection (--compare end); ") +
                                      (resumable ? "resume it (--resume), or run it again, to locate it"
                                                 : "run it again to locate it (no checkpoint was written to resume from)");
      }
    }
  }

  RunResult go() {
    t0 = Clock::now();
    std::vector<Lane*> set;
    for (auto& L : lanes) set.push_back(L.get());
    advance(set, opt.compare, true);
    if (opt.compare == Compare::kEnd && interrupted) mark_unlocated();
    if (opt.compare == Compare::kEnd && !interrupted) {
      finals.clear();
      for (auto& L : lanes) finals.push_back(lane_result(*L));
      for (auto& L : lanes) {
        if (L->done && (L->ref_digest.value() != L->chip_digest.value())) {
          bisect(*L);
          StreamResult& f = finals[L->index];
          f.mismatches = 1;
          f.end = "diverged";
          f.divergence = L->divergence;
          if (const auto it = bisect_unlocated.find(L->index); it != bisect_unlocated.end() && !f.divergence) {
            // (found by an outside tester: such a run said "mismatches 1" and nothing else)
            f.divergence_unlocated = true;
            f.unlocated_why = it->second + "; --compare step locates the divergence";
          }
        }
      }
    }
    return result();
  }
};

Engine::Engine(chip::ChipBackend& backend, std::vector<Guest> guests, Options options)
    : impl_(std::make_unique<Impl>(backend, std::move(guests), std::move(options))) {}
Engine::~Engine() = default;

RunResult Engine::run() {
  Impl& I = *impl_;
  I.setup_lanes();  // each lane's snapshot is its reset (empty; see replay)
  return I.go();
}

RunResult Engine::resume() {
  Impl& I = *impl_;
  if (I.opt.checkpoint_dir.empty()) throw ResumeError("resume: no checkpoint folder given");
  if (!I.be.capabilities().save_restore)
    throw ResumeError("resume: the " + I.be.name() + " backend cannot restore streams (SAVE_RESTORE capability)");
  const auto cps = list_checkpoints(I.opt.checkpoint_dir);
  if (cps.empty()) {
    throw ResumeError("resume: no checkpoint in " + I.opt.checkpoint_dir.string());
  }
  I.setup_lanes();
  std::string why;
  std::vector<std::string> skipped, notes;  // said only when a resume happens (else the error says why)
  for (auto it = cps.rbegin(); it != cps.rend(); ++it) {
    Impl::CheckpointData d;
    try {
      d = I.read_checkpoint(*it);
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      if (what.find("was written for") != std::string::npos) throw ResumeError(what);
      why = what;
      // A damaged file (e.g. killed while written): say so, and try an older one.
      skipped.push_back(I.checkpoint_path(*it).string() + ": " + what);
      notes.push_back("skipped checkpoint " + I.checkpoint_path(*it).filename().string() + " (step " +
                      std::to_string(*it) + "): " + what);
      continue;
    }
    for (std::size_t i = 0; i < I.lanes.size(); ++i) restore_lane(*I.lanes[i], I.be, d.lanes[i]);
    I.round = d.meta.value("round", std::uint64_t{0});
    I.seconds_before = d.meta.value("seconds", 0.0);
    I.checkpoints_written = d.meta.value("checkpoints_written", std::uint64_t{0});
    for (const json& p : d.meta.value("throughput", json::array())) {
      I.throughput.push_back({p.at(0).get<double>(), p.at(1).get<std::uint64_t>()});
    }
    I.resumed_from = I.round;
    I.last_checkpoint_round = I.round;
    for (auto& L : I.lanes) I.take_snapshot(*L);  // resume needs SAVE_RESTORE: checked at construction
    // What each stream printed before its checkpoint, compared then: on_output and on_console see
    // the whole output, as in a run that was never interrupted (found by an outside tester: run
    // --resume --json's stdout held only the text after the checkpoint). The checkpoint keeps fd 1's
    // first 1 MiB, and no fd 2.
    for (auto& L : I.lanes) {
      for (const char c : consumed_console(*L)) {
        if (I.opt.on_output) I.opt.on_output(L->index, c);
        if (I.opt.on_console) I.opt.on_console(L->index, 1, c);
      }
    }
    if (I.opt.on_note) {
      for (const std::string& n : notes) I.opt.on_note(n);
      I.opt.on_note("resumed from step " + std::to_string(I.round) + " (" +
                    I.checkpoint_path(*it).filename().string() + ")");
    }
    RunResult r = I.go();
    r.skipped_checkpoints.insert(r.skipped_checkpoints.begin(), skipped.begin(), skipped.end());
    return r;
  }
  throw ResumeError("resume: no readable checkpoint in " + I.opt.checkpoint_dir.string() +
                           " (" + why + ")");
}

RunResult Engine::partial_result() const { return impl_->result(); }

RunResult Engine::interrupted_result() {
  impl_->interrupted = true;
  for (auto& L : impl_->lanes)
    if (!L->done) L->end = "interrupted";
  if (impl_->opt.compare == Compare::kEnd) impl_->mark_unlocated();
  return impl_->result();
}

std::vector<std::uint64_t> list_checkpoints(const std::filesystem::path& dir) {
  std::vector<std::uint64_t> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() == 22 && n.rfind("ckpt-", 0) == 0 && n.substr(17) == ".lsck") {
      try {
        out.push_back(std::stoull(n.substr(5, 12)));
      } catch (const std::exception&) {
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

StreamResult run_reference(const Guest& guest, std::uint64_t max_steps,
                           const std::function<void(char)>& on_output,
                           const std::atomic<bool>* stop) {
  StreamResult r;
  r.guest = guest.name;
  ref::Machine m;
  std::uint64_t console_bytes = 0;  // fd 1: its first kConsoleKept bytes are kept in r.console
  m.set_console_sink([&](int fd, std::string_view b) {
    if (fd != 1) return;
    console_bytes += b.size();
    if (r.console.size() < kConsoleKept) r.console.append(b.substr(0, kConsoleKept - r.console.size()));
  });
  m.load(guest.image);
  TraceDigest digest;
  // Instruction class per RAM word (cached by pc, checked against the word).
  std::vector<std::uint32_t> words(ref::kRamSize / 4, 0);
  std::vector<std::uint8_t> cls(ref::kRamSize / 4, 255);
  std::vector<std::string> names;
  std::vector<std::uint64_t> counts;
  auto class_index = [&](std::string_view name) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<std::uint8_t>(i);
    names.emplace_back(name);
    counts.push_back(0);
    return static_cast<std::uint8_t>(names.size() - 1);
  };
  std::uint64_t steps = 0;
  bool cut = false;  // the last instruction's tokens were cut at max_steps
  const auto out_kind = static_cast<std::uint32_t>(format::Kind::OUT);
  std::optional<std::uint32_t> last_pc;  // of the last instruction executed
  ref::LoopWatch watch;
  while (m.active() && (max_steps == 0 || steps < max_steps)) {
    if (stop && stop->load(std::memory_order_relaxed)) {
      r.end = "interrupted";
      break;
    }
    const std::uint32_t pc = m.pc();
    // Without a step limit, a jump to itself executed once, or a state that repeats, ends the
    // run (as Engine's lanes do).
    if (max_steps == 0 && m.status() == ref::Status::kRunning) {
      const bool jumps_to_itself = last_pc == pc && m.jumps_to_itself();
      if (jumps_to_itself || watch.repeats(m)) {
        r.end = "self_loop";
        r.loop_pc = pc;
        r.loop_word = m.read_word(pc);
        r.loop_period = jumps_to_itself ? 1 : watch.period();
        break;
      }
    }
    last_pc = pc;
    std::uint8_t c = 255;
    if (pc >= ref::kRamBase && pc + 4 <= ref::kRamEnd && pc % 4 == 0) {
      const std::size_t slot = (pc - ref::kRamBase) / 4;
      const std::uint32_t w = m.read_word(pc);
      if (cls[slot] == 255 || words[slot] != w) {
        words[slot] = w;
        cls[slot] = class_index(instruction_class(w));
      }
      c = cls[slot];
    } else {
      c = class_index("other");
    }
    auto toks = m.step();
    if (max_steps && steps + toks.size() > max_steps) {
      toks = toks.first(max_steps - steps);
      cut = true;  // the machine ran the whole instruction; the run compared only its first tokens
    }
    digest.update(toks);
    counts[c] += toks.size();
    for (std::uint32_t t : toks) r.max_token = std::max(r.max_token, t);
    steps += toks.size();
    if (on_output) {
      for (std::uint32_t t : toks)
        if (t >> 8 == out_kind) on_output(static_cast<char>(t & 0xff));
    }
  }
  r.steps = r.ref_steps = steps;
  // An instruction cut at the step limit did not end the run within it, even when it was the
  // guest's exit (found by an outside tester: one step short of the story, reference_end said exit)
  if (r.end != "interrupted" && r.end != "self_loop") r.end = cut ? "step_limit" : ref_end(m);
  r.exit_status = m.exit_status();
  r.trap_code = m.trap_code();
  r.digest = digest.hex();
  for (std::size_t i = 0; i < names.size(); ++i) r.class_steps[names[i]] = counts[i];
  return r;
}

}  // namespace lockstep::engine
