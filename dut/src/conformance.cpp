#include "lockstep/dut/conformance.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <sstream>

#include "lockstep/format/shell.h"
#include "lockstep/format/tokens.h"

namespace lockstep::dut {

namespace {

using Tokens = std::vector<chip::Token>;

std::string plural(std::size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// "4 ragged entries" / "1 entry": the entries of a FORCED or FREE frame.
std::string entries_text(std::size_t n) { return n == 1 ? "1 entry" : std::to_string(n) + " ragged entries"; }

// The teacher-forced inputs of a guest: START, then its tokens but the last.
Tokens forced_inputs(const ConformanceGuest& g) {
  Tokens in{format::kStartToken};
  in.insert(in.end(), g.tokens.begin(), g.tokens.end() - 1);
  return in;
}

// Where two streams first differ, as text ("" when equal).
std::string first_difference(const Tokens& want, const Tokens& got) {
  if (want.size() != got.size()) return plural(got.size(), "token") + " instead of " + std::to_string(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) {
      return "step " + std::to_string(i + 1) + ": " + format::token_name(got[i]) + " instead of " +
             format::token_name(want[i]);
    }
  }
  return "";
}

// The step (0-based) at which two streams first differ: the shorter one's length when one is a
// prefix of the other, want.size() when equal.
std::size_t first_difference_index(const Tokens& want, const Tokens& got) {
  const std::size_t n = std::min(want.size(), got.size());
  for (std::size_t i = 0; i < n; ++i)
    if (want[i] != got[i]) return i;
  return n;
}

// The place in step_by_step's frame of step k (0-based) of guest g: its entry's place among the
// entries listed in `order` whose guests still have a step k (a guest that ended leaves the frame
// and the ones after it move up).
std::size_t place_in_frame(const std::vector<ConformanceGuest>& guests, const std::vector<std::size_t>& gidx,
                           const std::vector<std::size_t>& order, std::size_t g, std::size_t k) {
  std::size_t place = 0;
  for (std::size_t o : order) {
    if (gidx[o] == g) return place;
    if (k < guests[gidx[o]].tokens.size()) ++place;
  }
  return place;
}

// Teacher-forced, one STEP frame per step, several streams at once: stream sids[i] runs guest
// gidx[i]; the entries are listed in `order` (indices into sids). Returns tokens per guest index.
std::vector<Tokens> step_by_step(DutBackend& b, const std::vector<ConformanceGuest>& guests,
                                 const std::vector<chip::StreamId>& sids, const std::vector<std::size_t>& gidx,
                                 const std::vector<std::size_t>& order) {
  std::vector<Tokens> inputs(guests.size()), out(guests.size());
  for (std::size_t i = 0; i < sids.size(); ++i) {
    b.reset(sids[i], guests[gidx[i]].image);
    inputs[gidx[i]] = forced_inputs(guests[gidx[i]]);
  }
  for (std::size_t k = 0;; ++k) {
    std::vector<chip::StreamId> s;
    std::vector<chip::Token> in;
    std::vector<std::size_t> which;
    for (std::size_t o : order) {
      const std::size_t g = gidx[o];
      if (k >= inputs[g].size()) continue;
      s.push_back(sids[o]);
      in.push_back(inputs[g][k]);
      which.push_back(g);
    }
    if (s.empty()) break;
    std::vector<chip::Token> res(s.size());
    b.step_batch(s, in, res);
    for (std::size_t i = 0; i < s.size(); ++i) out[which[i]].push_back(res[i]);
  }
  return out;
}

// Free-running from START for n steps, one STEP frame per step, on stream `s`.
Tokens free_by_steps(DutBackend& b, chip::StreamId s, const chip::GuestImage& image, std::size_t n) {
  b.reset(s, image);
  Tokens out;
  chip::Token in = format::kStartToken;
  for (std::size_t k = 0; k < n; ++k) {
    in = b.step(s, in);
    out.push_back(in);
  }
  return out;
}

// "one FREE frame" / "3 FREE frames": how many frames DutBackend sends for these counts (at most
// kHarnessChunk steps per entry in each).
std::string frames_of(const std::vector<std::uint32_t>& counts, const char* type) {
  std::uint32_t most = 0;
  for (std::uint32_t c : counts) most = std::max(most, c);
  const std::uint32_t frames = (most + kHarnessChunk - 1) / kHarnessChunk;
  return frames == 1 ? std::string("one ") + type + " frame" : std::to_string(frames) + " " + type + " frames";
}

// The ragged answer `out` of one `type` frame (FORCED or FREE: counts[g] tokens of stream
// sids[g], guest g) against want[g] without its last token; then one STEP of last[g] per stream
// (an empty `last`: each stream's last answered token, as free running feeds it), which must
// predict want[g].back(), since the frame must leave the state the single steps leave (§3.5,
// §3.6). Each of those STEPs is a frame of one entry, so that a chip wrong only in STEP frames of
// several entries (the batch check's finding) is not blamed on FORCED or FREE. Returns "" or the
// finding; `hint` follows a difference in the answer.
std::string ragged_frame_finding(DutBackend& d, const char* type, const std::vector<ConformanceGuest>& guests,
                                 const std::vector<chip::StreamId>& sids, const std::vector<std::uint32_t>& counts,
                                 const Tokens& out, const std::vector<Tokens>& want, Tokens last,
                                 const std::string& hint) {
  const bool fed_back = last.empty();
  if (fed_back) last.resize(sids.size());
  std::size_t at = 0;
  for (std::size_t g = 0; g < sids.size(); ++g) {
    const Tokens got(out.begin() + static_cast<std::ptrdiff_t>(at), out.begin() + static_cast<std::ptrdiff_t>(at + counts[g]));
    at += counts[g];
    const std::string diff = first_difference(Tokens(want[g].begin(), want[g].end() - 1), got);
    if (!diff.empty()) return guests[g].name + " in " + frames_of(counts, type) + ": " + diff + hint;
    if (fed_back) last[g] = got.back();
  }
  Tokens after(sids.size());
  for (std::size_t g = 0; g < sids.size(); ++g) after[g] = d.step(sids[g], last[g]);
  for (std::size_t g = 0; g < sids.size(); ++g) {
    if (after[g] != want[g].back()) {
      return guests[g].name + ": the STEP after the " + type + " frame predicts " + format::token_name(after[g]) +
             " instead of " + format::token_name(want[g].back()) + " (" + type + " left another state than single steps)";
    }
  }
  return "";
}

struct RawSession {
  std::unique_ptr<Connection> conn;
  double timeout_s, start_timeout_s;
  bool started = false;  // a first request was sent: the chip had its time to load
  std::optional<Frame> exchange(std::uint32_t type, const std::vector<std::uint8_t>& payload) {
    // HELLO, or the session's first request of any type (a request before HELLO, on purpose), may
    // wait for the chip to load; every other request gets the request timeout. (A chip that took
    // 2.8 s to load on a busy machine failed "request before HELLO" under --dut-timeout 2.)
    const double t = type == kHello || !started ? std::max(start_timeout_s, timeout_s) : timeout_s;
    started = true;
    const auto until = Connection::Clock::now() + std::chrono::milliseconds(static_cast<long long>(t * 1000));
    conn->write_frame(type, payload, until);
    return conn->read_frame(until);
  }
};

// "ERROR 2" when `f` is an ERROR frame with that code, else what it was.
std::string answer_text(const std::optional<Frame>& f) {
  if (!f) return "end of stream";
  if (f->type != kError) return type_name(f->type);
  try {
    const auto [code, message] = decode_error(f->payload);
    return "ERROR " + std::to_string(code) + " (" + message + ")";
  } catch (const Malformed& e) {
    return std::string("a malformed ERROR (") + e.what() + ")";
  }
}

bool is_error(const std::optional<Frame>& f, std::uint32_t code) {
  if (!f || f->type != kError) return false;
  try {
    return decode_error(f->payload).first == code;
  } catch (const Malformed&) {
    return false;
  }
}

}  // namespace

std::string CheckLine::to_string() const {
  const char* v = verdict == Verdict::kPass ? "pass" : verdict == Verdict::kFail ? "FAIL" : "skip";
  // A detail quotes what the chip sent (its name and identity, an ERROR's message): its control
  // characters escaped, the line stays one line and sends no terminal escape.
  return std::string(v) + "  " + name + (detail.empty() ? "" : ": " + format::escape_controls(detail));
}

std::unique_ptr<Connection> open_connection(const DutConfig& config) {
  try {
    std::unique_ptr<Connection> c =
        !config.command.empty() ? spawn_chip(config.command, config.workdir)
                                : connect_chip(parse_address(config.connect),
                                               std::chrono::milliseconds(static_cast<long long>(config.start_timeout_s * 1000)));
    c->set_answers_only(true);  // the harness's side: a header of no answer's type is refused at once
    return c;
  } catch (const std::exception& e) {
    throw DutError(std::string("chip under test: ") + e.what());
  }
}

namespace {
// Thrown inside run_conformance when SIGINT/SIGTERM stopped it (config.stop).
struct Halt {};
void run_checks(const DutConfig& config, const std::vector<ConformanceGuest>& guests,
                const std::vector<ConformanceGuest>& reset_probes,
                const std::function<void(const CheckLine&)>& on_line, const ProbeJudge& judge,
                std::vector<CheckLine>& lines);
}  // namespace

std::vector<CheckLine> run_conformance(const DutConfig& config, const std::vector<ConformanceGuest>& guests,
                                       const std::function<void(const CheckLine&)>& on_line,
                                       const ProbeJudge& judge, bool* stopped) {
  if (stopped) *stopped = false;
  std::vector<CheckLine> lines;
  std::vector<ConformanceGuest> checked, reset_probes;
  for (const ConformanceGuest& g : guests) (g.reset_probe ? reset_probes : checked).push_back(g);
  try {
    run_checks(config, checked, reset_probes, on_line, judge, lines);
  } catch (const Halt&) {
    if (stopped) *stopped = true;
  }
  if (stopped && config.stop && config.stop->load()) *stopped = true;
  return lines;
}

namespace {
void run_checks(const DutConfig& config, const std::vector<ConformanceGuest>& guests,
                const std::vector<ConformanceGuest>& reset_probes,
                const std::function<void(const CheckLine&)>& on_line, const ProbeJudge& judge,
                std::vector<CheckLine>& lines) {
  // A stop (SIGINT/SIGTERM) ends the checks: the one it cut short is no finding (Halt).
  auto halt_if_stopped = [&] {
    if (config.stop && config.stop->load()) throw Halt{};
  };
  auto emit = [&](std::string name, CheckLine::Verdict v, std::string detail) {
    lines.push_back({std::move(name), v, std::move(detail)});
    if (on_line) on_line(lines.back());
  };
  const auto kPass = CheckLine::Verdict::kPass, kFail = CheckLine::Verdict::kFail, kSkip = CheckLine::Verdict::kSkip;
  if (guests.size() < 2) throw std::invalid_argument("dut-check needs at least two guests");
  for (const auto& g : guests)
    if (g.tokens.size() < 2) throw std::invalid_argument("dut-check: guest " + g.name + " has fewer than 2 tokens");

  // A check body: runs `f`, which returns "" (pass) or why it failed; a DutError fails it and
  // ends the session (the rest continue on a fresh one).
  std::unique_ptr<DutBackend> b;
  auto session = [&]() -> DutBackend& {
    if (!b || !b->fault().empty()) b = std::make_unique<DutBackend>(config);
    return *b;
  };
  // After the determinism check failed, every later comparison of tokens with the first run is
  // inconclusive: a difference may be the nondeterminism again, not what the check is about.
  bool nondeterministic = false;
  auto failed = [&](const std::string& name, const std::string& why) {
    if (nondeterministic && name.rfind("bad ", 0) != 0 && name.rfind("session end", 0) != 0)
      return "not conclusive, the chip is not deterministic (see determinism): " + why;
    return why;
  };
  auto check = [&](const std::string& name, const std::function<std::string()>& f) {
    halt_if_stopped();
    try {
      const std::string why = f();
      // A stop that came while the check waited (a chip's 5 s to exit, say) cut it short: no
      // finding either way (found by the re-test: the session-end check's wait made it a FAIL).
      if (!why.empty() && why.rfind("pass:", 0) != 0 && why.rfind("skip:", 0) != 0 && config.stop && config.stop->load()) {
        b.reset();
        throw Halt{};
      }
      if (why.rfind("skip:", 0) == 0) emit(name, kSkip, why.substr(6));
      else if (why.rfind("pass:", 0) == 0) emit(name, kPass, why.substr(6));
      else emit(name, why.empty() ? kPass : kFail, why.empty() ? why : failed(name, why));
    } catch (const std::exception& e) {
      if (config.stop && config.stop->load()) {
        b.reset();
        throw Halt{};
      }
      emit(name, kFail, failed(name, e.what()));
      b.reset();
    }
  };

  // 1. Handshake.
  try {
    DutBackend& d = session();
    const HelloOk& h = d.hello();
    emit("handshake", kPass,
         "'" + h.name + "', vocab_size " + std::to_string(h.vocab_size) + ", max_streams " +
             std::to_string(h.max_streams) + ", capabilities " + capability_names(h.capabilities) + ", identity '" +
             h.identity + "', " + (d.vocab().is_identity() ? "the spec's token ids" : "a vocabulary map of " +
                                                                                          std::to_string(d.vocab().size()) +
                                                                                          " tokens"));
  } catch (const std::exception& e) {
    halt_if_stopped();
    emit("handshake", kFail, e.what());
    return;  // nothing else can run
  }
  const std::size_t G = std::min<std::size_t>(guests.size(), b->hello().max_streams);
  const chip::Capabilities caps = b->capabilities();

  // 2. Reset and single steps (the baseline every other check compares with).
  std::vector<Tokens> single(guests.size());
  bool have_single = false;
  check("reset and single steps", [&]() -> std::string {
    DutBackend& d = session();
    d.set_num_streams(1);
    std::size_t steps = 0;
    for (std::size_t g = 0; g < guests.size(); ++g) {
      single[g] = step_by_step(d, guests, {0}, {g}, {0})[g];
      steps += single[g].size();
    }
    have_single = true;
    const std::size_t copies = static_cast<std::size_t>(
        std::count_if(guests.begin(), guests.end(), [](const ConformanceGuest& g) { return g.copy; }));
    return "pass: " + plural(guests.size() - copies, "guest") + (copies ? " (and a second run of it)" : "") + ", " +
           plural(steps, "step") + " one STEP frame each";
  });
  if (!have_single) {
    // (found by an outside tester: "1 passed, 1 failed, 0 skipped" said nothing of the rest)
    emit("the other checks", kSkip,
         "not run (about 20 checks: batches, determinism, the multi-step messages, capabilities, the session's end and bad frames): "
         "they start from this check's session and single steps, which the chip did not give; fix the failure above "
         "first");
    return;
  }

  // 3. Agreement with the golden model (teacher-forced).
  bool golden_failed = false;  // the reset checks are not conclusive then: a chip wrong anyway fails them
  {
    std::size_t agree = 0, total = 0;
    std::string first;
    for (std::size_t g = 0; g < guests.size(); ++g) {
      if (guests[g].copy) continue;
      for (std::size_t k = 0; k < single[g].size(); ++k, ++total) {
        if (single[g][k] == guests[g].tokens[k]) ++agree;
        else if (first.empty())
          first = guests[g].name + " step " + std::to_string(k + 1) +
                  (k < guests[g].where.size() ? " (" + guests[g].where[k] + ")" : std::string()) + ": " +
                  format::token_name(single[g][k]) + " instead of " + format::token_name(guests[g].tokens[k]);
      }
    }
    golden_failed = agree != total;
    emit("golden model (teacher-forced)", agree == total ? kPass : kFail,
         std::to_string(agree) + " of " + std::to_string(total) + " tokens agree" +
             (first.empty() ? "" : "; first difference " + first));
  }

  // 4. Determinism: the same guest again, on the same stream after a reset. No STREAMS between
  // (unless the session had to start again): the RESET lands on the stream the last guest of the
  // single steps left dirty, so a reset that leaves some state behind shows here (found by an
  // outside tester: a fresh STREAMS first made the reset's work the STREAMS request's).
  check("determinism", [&]() -> std::string {
    const bool fresh = !b || !b->fault().empty();
    DutBackend& d = session();
    if (fresh) d.set_num_streams(1);
    const Tokens again = step_by_step(d, guests, {0}, {0}, {0})[0];
    const std::string diff = first_difference(single[0], again);
    return diff.empty() ? "pass: " + guests[0].name + " reset " +
                              (fresh ? std::string("on a new stream") : "on the stream " + guests.back().name + " left") +
                              " and run again: the same tokens"
                        : "second run: " + diff;
  });
  nondeterministic = lines.back().verdict == kFail;

  // 4b. Reset clears the state: a guest that reads every register and RAM it never writes, on the
  // stream the determinism check's guest left (found by an outside tester: a chip that kept the
  // last guest's registers and memory across RESET passed every check and 200 fuzz programs,
  // whose programs write each register before they read it); then the last vector guest without
  // its sections, which reads the vector unit's memories where its own run left values (found by
  // an outside tester: a chip that cleared one layer's state of seven passed every check).
  std::string left_by = guests.front().name;  // the guest that ran last on the stream a probe resets
  for (const ConformanceGuest& probe : reset_probes) {
    check("reset clears the state", [&]() -> std::string {
      const bool fresh = !b || !b->fault().empty();
      DutBackend& d = session();
      if (fresh) d.set_num_streams(1);
      const std::vector<ConformanceGuest> one{probe};
      const Tokens got = step_by_step(d, one, {0}, {0}, {0})[0];
      const std::size_t at = first_difference_index(probe.tokens, got);
      const std::string where = fresh ? " on a new stream" : " on the stream " + left_by + " left";
      if (at == probe.tokens.size() && got.size() == probe.tokens.size())
        return "pass: " + probe.name + where + " reads the reset state: " + probe.probe_reads;
      // (found by an outside tester: a chip wrong in STEP frames failed this check too, blamed on RESET)
      const std::string inconclusive =
          golden_failed ? "not conclusive, the chip disagrees with the golden model after a reset too (see golden "
                          "model): "
                        : "";
      return inconclusive + "step " + std::to_string(at + 1) + (at < probe.where.size() ? " (" + probe.where[at] + ")" : std::string()) +
             ": " + (at < got.size() ? format::token_name(got[at]) : std::string("no token")) + " instead of " +
             (at < probe.tokens.size() ? format::token_name(probe.tokens[at]) : std::string("no token")) + " (" +
             probe.name + ", run" + where +
             ": a chip that keeps a register or memory of a stream's last guest across RESET fails here)";
    });
    left_by = probe.name;
  }

  // 5. Batch size: every guest in its own stream, one STEP frame per step (ragged lengths).
  check("batch of streams", [&]() -> std::string {
    if (G < 2) return "skip: max_streams is 1";
    DutBackend& d = session();
    d.set_num_streams(G);
    std::vector<chip::StreamId> sids(G);
    std::vector<std::size_t> gidx(G), order(G);
    std::iota(sids.begin(), sids.end(), 0);
    std::iota(gidx.begin(), gidx.end(), 0);
    std::iota(order.begin(), order.end(), 0);
    const auto out = step_by_step(d, guests, sids, gidx, order);
    for (std::size_t g = 0; g < G; ++g) {
      const std::string diff = first_difference(single[g], out[g]);
      if (!diff.empty())
        return guests[g].name + " in a batch of " + std::to_string(G) + " (stream " + std::to_string(g) + ", place " +
               std::to_string(place_in_frame(guests, gidx, order, g, first_difference_index(single[g], out[g]))) +
               " of the frame): " + diff;
    }
    return "pass: " + std::to_string(G) + " streams in one frame give each stream's single-stream tokens";
  });

  // 6. Stream order: the guests moved 1, 2, ..., G-1 places along the frame (place p holds guest
  // (p + shift) mod G), each in a stream that is not its place (guest i in stream (i + 1) mod G;
  // (i + 2) mod G when the shift is G-1), so that no entry's stream is its place and the streams
  // are not listed in order. With the batch check (shift 0) every guest takes every place. (Guest
  // i in stream G-1-i with the entries reversed put stream p at place p again: a chip that kept
  // its state by place in the batch passed; found by an outside tester. A chip wrong at one place
  // of a frame for one guest's tokens passed while that place held other guests only: one shift
  // caught it at place 2 and not at place 3; found by outside testers.)
  check("stream order", [&]() -> std::string {
    if (G < 2) return "skip: max_streams is 1";
    DutBackend& d = session();
    d.set_num_streams(G);
    for (std::size_t shift = 1; shift < G; ++shift) {
      const std::size_t to_stream = shift == G - 1 ? 2 % G : 1;
      std::vector<chip::StreamId> sids(G);
      std::vector<std::size_t> gidx(G), order(G);
      for (std::size_t i = 0; i < G; ++i) {
        sids[i] = static_cast<chip::StreamId>((i + to_stream) % G);
        gidx[i] = i;
        order[i] = (i + shift) % G;  // place i lists entry (guest) (i + shift) mod G
      }
      const auto out = step_by_step(d, guests, sids, gidx, order);
      for (std::size_t g = 0; g < G; ++g) {
        const std::string diff = first_difference(single[g], out[g]);
        if (!diff.empty())
          return guests[g].name + " in stream " + std::to_string(sids[g]) + " at place " +
                 std::to_string(place_in_frame(guests, gidx, order, g, first_difference_index(single[g], out[g]))) +
                 " of the frame: " + diff +
                 " (a chip that keeps a stream's state by its place in the batch, not by its stream id, or that is "
                 "wrong at one place of a frame, fails here)";
      }
    }
    return "pass: every guest at every place of the frame (" + std::to_string(G - 1) +
           (G == 2 ? " arrangement" : " arrangements") +
           " beside the batch check's), no entry's stream its place: the same tokens";
  });

  // 7. FORCED against single steps: one FORCED frame of every guest's teacher-forced inputs but
  // the last (ragged entries), then one STEP of the last input, which must give the single
  // steps' last token (FORCED leaves the state the single steps leave, §3.6).
  check("FORCED (teacher-forced steps)", [&]() -> std::string {
    if (!caps.multi_step) return "skip: no MULTI_STEP capability (the harness sends one STEP per step)";
    DutBackend& d = session();
    d.set_num_streams(G);
    std::vector<chip::StreamId> sids;
    std::vector<std::uint32_t> counts;
    Tokens in, last;
    for (std::size_t g = 0; g < G; ++g) {
      d.reset(static_cast<chip::StreamId>(g), guests[g].image);
      sids.push_back(static_cast<chip::StreamId>(g));
      const Tokens fi = forced_inputs(guests[g]);
      counts.push_back(static_cast<std::uint32_t>(fi.size() - 1));
      in.insert(in.end(), fi.begin(), fi.end() - 1);
      last.push_back(fi.back());
    }
    Tokens out(in.size());
    d.teacher_forced_batch(sids, counts, in, out);
    const std::string finding = ragged_frame_finding(d, "FORCED", guests, sids, counts, out, single, last, "");
    if (!finding.empty()) return finding;
    return "pass: " + frames_of(counts, "FORCED") + " of " + entries_text(G) +
           " gives the single steps' tokens, and the state they leave (a STEP after it agrees)";
  });

  // 8. FREE against free-running single steps: every guest free-running from START, one STEP
  // frame per step, then the same in one FREE frame of ragged entries (n_g - 1 steps each) and one
  // STEP of the last prediction, which must agree too (FREE leaves the single steps' state).
  check("FREE (free-running steps)", [&]() -> std::string {
    if (!caps.multi_step) return "skip: no MULTI_STEP capability";
    DutBackend& d = session();
    d.set_num_streams(G);
    std::vector<Tokens> by_steps(G);
    std::vector<chip::StreamId> sids;
    std::vector<std::uint32_t> counts;
    for (std::size_t g = 0; g < G; ++g) {
      by_steps[g] = free_by_steps(d, static_cast<chip::StreamId>(g), guests[g].image, guests[g].tokens.size());
      sids.push_back(static_cast<chip::StreamId>(g));
      counts.push_back(static_cast<std::uint32_t>(guests[g].tokens.size() - 1));
    }
    // An entry before the last ends first, at half the shortest's steps (the second of three or
    // more, the first of two): a chip that keeps its free-running streams' tokens by their place
    // among those still running, not by the entry, is wrong only then (found by an outside tester:
    // a FREE loop that kept tokens[:len(running)] passed this check, whose guests all ran 300
    // steps, and was found by fuzz's batches).
    if (G >= 2) {
      const std::size_t early = G == 2 ? 0 : 1;
      const std::uint32_t steps = std::max<std::uint32_t>(1, *std::min_element(counts.begin(), counts.end()) / 2);
      counts[early] = std::min(counts[early], steps);
      by_steps[early].resize(counts[early] + 1);
    }
    for (std::size_t g = 0; g < G; ++g) d.reset(sids[g], guests[g].image);
    std::size_t total = 0;
    for (std::uint32_t c : counts) total += c;
    Tokens out(total);
    const Tokens first(G, format::kStartToken);
    d.free_running_batch(sids, counts, first, out);
    const std::string finding = ragged_frame_finding(d, "FREE", guests, sids, counts, out, by_steps, {},
                                                     " (one STEP per step gives the latter)");
    if (!finding.empty()) return finding;
    return "pass: " + frames_of(counts, "FREE") + " of " + entries_text(G) + " (" + plural(total, "step") +
           ") gives the free-running single steps' tokens, and the state they leave (a STEP after it agrees)";
  });

  // 9. State hash: equal states give equal hashes, whatever the batch.
  check("state hash", [&]() -> std::string {
    if (!caps.hash) return "skip: no HASH capability (the harness rejects --hash-every)";
    DutBackend& d = session();
    if (G < 2) {
      // One stream (max_streams 1): the states compared come one after the other on it.
      d.set_num_streams(1);
      const Tokens in = forced_inputs(guests[0]);
      const std::size_t half = in.size() / 2;
      d.reset(0, guests[0].image);
      const std::uint64_t at_reset = d.hash(0);
      for (std::size_t k = 0; k < half; ++k) d.step(0, in[k]);
      const std::uint64_t after_steps = d.hash(0);
      d.reset(0, guests[0].image);
      if (d.hash(0) != at_reset) return "a stream reset twice from the same image has different hashes";
      const std::vector<chip::StreamId> s{0};
      const std::vector<std::uint32_t> c{static_cast<std::uint32_t>(half)};
      Tokens out(half);
      d.teacher_forced_batch(s, c, Tokens(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(half)), out);
      if (d.hash(0) != after_steps) return "the same steps, one by one and in one call, leave different hashes";
      if (after_steps == at_reset) return "different states give the same hash";
      return "pass: equal states give equal hashes (after reset and after " + plural(half, "step") +
             ", one after the other on the one stream)";
    }
    d.set_num_streams(2);
    const Tokens in = forced_inputs(guests[0]);
    d.reset(0, guests[0].image);
    d.reset(1, guests[0].image);
    if (d.hash(0) != d.hash(1)) return "two streams reset from the same image have different hashes";
    const std::size_t half = in.size() / 2;
    for (std::size_t k = 0; k < half; ++k) d.step(0, in[k]);  // stream 0 alone
    std::vector<chip::StreamId> s{1};
    Tokens out(half);
    std::vector<std::uint32_t> c{static_cast<std::uint32_t>(half)};
    d.teacher_forced_batch(s, c, Tokens(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(half)), out);
    if (d.hash(0) != d.hash(1)) return "the same steps, one by one and in one call, leave different hashes";
    d.reset(1, guests[1].image);
    if (d.hash(0) == d.hash(1)) return "different states give the same hash";
    return "pass: equal states give equal hashes (after reset and after " + plural(half, "step") + ")";
  });

  // 10. Save and restore.
  check("save and restore", [&]() -> std::string {
    if (!caps.save_restore) return "skip: no SAVE_RESTORE capability (no checkpoints, --resume or --compare end)";
    DutBackend& d = session();
    d.set_num_streams(std::min<std::size_t>(2, G));
    const Tokens in = forced_inputs(guests[0]);
    const std::size_t half = in.size() / 2;
    d.reset(0, guests[0].image);
    for (std::size_t k = 0; k < half; ++k) d.step(0, in[k]);
    const auto blob = d.save(0);
    const Tokens rest(in.begin() + static_cast<std::ptrdiff_t>(half), in.end());
    const Tokens after = d.teacher_forced(0, rest);
    const chip::StreamId other = G >= 2 ? 1 : 0;
    if (other != 0) d.reset(other, guests[1].image);
    d.restore(other, blob);
    const Tokens again = d.teacher_forced(other, rest);
    const std::string diff = first_difference(after, again);
    if (!diff.empty()) return "restored stream " + std::to_string(other) + ": " + diff;
    const Tokens want(single[0].begin() + static_cast<std::ptrdiff_t>(half), single[0].end());
    const std::string diff2 = first_difference(want, after);
    if (!diff2.empty()) return "after SAVE the stream no longer gives its single-stream tokens: " + diff2;
    return "pass: a stream saved at step " + std::to_string(half) + " and restored into stream " +
           std::to_string(other) + " gives the same " + plural(rest.size(), "token");
  });

  // 11. Probes.
  check("probes", [&]() -> std::string {
    if (!caps.probes) return "skip: no PROBES capability (no layer attribution)";
    DutBackend& d = session();
    const chip::ProbeMap pm = d.probe_map();
    if (pm.points.empty()) return "PROBE_MAP_OK has no probe points";
    d.set_num_streams(1);
    d.reset(0, guests[0].image);
    d.set_probe_recording(true);
    const chip::Token predicted = d.step(0, format::kStartToken);
    std::size_t read = 0, values = 0;
    std::optional<float> first;
    bool constant = true;
    for (const chip::ProbePoint& p : pm.points) {
      for (const std::string& f : p.fields) {
        const auto v = d.probe(0, p.layer, p.after, f);
        const auto* field = pm.find(f);
        if (field && v.size() != field->width) {
          d.set_probe_recording(false);
          return "field " + f + " at layer " + std::to_string(p.layer) + ": " + std::to_string(v.size()) +
                 " values, its width is " + std::to_string(field->width);
        }
        for (float x : v) {
          if (!first) first = x;
          constant = constant && (x == *first || (std::isnan(x) && std::isnan(*first)));
          ++values;
        }
        ++read;
      }
    }
    if (constant && values >= 2) {
      d.set_probe_recording(false);
      std::ostringstream os;
      os << "every one of the " << values << " values of the " << plural(read, "probe") << " read is " << *first
         << ": the probes show no values the chip computed, and a run would locate no divergence with them";
      return os.str();
    }
    std::string judged = "; not judged against the tokens";
    if (judge && predicted == guests[0].tokens[0]) {
      const std::string why = judge(d, 0, format::kStartToken, predicted);
      if (!why.empty()) {
        d.set_probe_recording(false);
        return "the probes of " + guests[0].name + "'s first step, which the chip predicted right, disagree with " +
               "its tokens: " + why + " (a run would blame a layer on them)";
      }
      judged = "; the convention fields agree with the first step's tokens";
    } else if (judge) {
      judged = "; not judged against the tokens (the chip's first token of " + guests[0].name + " is wrong)";
    }
    d.set_probe_recording(false);
    return "pass: " + plural(pm.fields.size(), "field") + ", " + plural(pm.points.size(), "point") + ", " +
           plural(read, "probe") + " read with their widths" + judged;
  });

  // 12. The end of a session: BYE answered with OK (§3.10), and a child process that exits when
  // it reads end of file (§1, a MUST: one that does not costs every run seconds and a SIGTERM).
  std::optional<HelloOk> hello_ok;
  check("session end (BYE, end of input)", [&]() -> std::string {
    DutBackend& d = session();
    hello_ok = d.hello();
    const std::string why = d.end_session();
    b.reset();
    if (!why.empty()) return why;
    return std::string("pass: BYE answered with OK, ") +
           (config.command.empty() ? "the session ended (over --dut-connect, that the server closes the connection "
                                     "at the end of its input is not checked)"
                                   : "the chip process exited at the end of its input");
  });

  // 13. Bad frames, each on a raw session: the chip must answer ERROR with the right code and
  // must neither crash nor hang.
  halt_if_stopped();
  if (!hello_ok) {
    hello_ok = [&] {
      try {
        DutBackend d(config);
        return d.hello();
      } catch (const std::exception&) {
        halt_if_stopped();
        throw;
      }
    }();
  }
  // Every raw session logs in as the main one does: a chip that asks for a secret (§9) must get
  // it, or its ERROR 5 would be blamed on the frame under test.
  const std::string auth = config.token_file.empty() ? std::string() : read_token_file(config.token_file);
  auto raw = [&](const std::string& name, bool hello_first,
                 const std::function<std::string(RawSession&)>& body) {
    halt_if_stopped();
    try {
      RawSession r{open_connection(config), config.timeout_s, config.start_timeout_s};
      r.conn->set_stop(config.stop);
      if (hello_first) {
        Hello h;
        h.auth = auth;
        const auto f = r.exchange(kHello, encode_hello(h));
        if (!f || f->type != (kResponse | kHello)) {
          emit(name, kFail, "HELLO was answered with " + answer_text(f));
          return;
        }
      }
      const std::string why = body(r);
      emit(name, why.empty() ? kPass : kFail, why);
    } catch (const std::exception& e) {
      halt_if_stopped();
      emit(name, kFail, e.what());
    }
  };
  auto expect_code = [](RawSession& r, std::uint32_t type, const std::vector<std::uint8_t>& payload, std::uint32_t code,
                        bool then_alive) -> std::string {
    const auto f = r.exchange(type, payload);
    if (!is_error(f, code)) return "answered with " + answer_text(f) + ", expected ERROR " + std::to_string(code);
    if (then_alive) {
      // The session goes on (§2): a well-formed request still works.
      const auto g = r.exchange(kStreams, encode_u32(1));
      if (!g || g->type != (kResponse | kStreams)) return "after the ERROR, STREAMS(1) was answered with " + answer_text(g);
    }
    return "";
  };
  raw("bad frame: request before HELLO", false, [&](RawSession& r) {
    const auto f = r.exchange(kStreams, encode_u32(1));
    return is_error(f, kMalformed) ? std::string() : "answered with " + answer_text(f) + ", expected ERROR 1";
  });
  raw("bad frame: another protocol version", false, [&](RawSession& r) {
    Hello h;
    h.auth = auth;
    h.protocol_version = 99;
    const auto f = r.exchange(kHello, encode_hello(h));
    return is_error(f, kBadVersion) ? std::string() : "answered with " + answer_text(f) + ", expected ERROR 6";
  });
  raw("bad frame: unknown type", true, [&](RawSession& r) { return expect_code(r, 0x77, {}, kMalformed, true); });
  raw("bad frame: truncated payload", true, [&](RawSession& r) {
    return expect_code(r, kStreams, {1, 0}, kMalformed, true);
  });
  raw("bad frame: bytes left over", true, [&](RawSession& r) {
    auto p = encode_u32(1);
    p.push_back(0);
    return expect_code(r, kStreams, p, kMalformed, true);
  });
  raw("bad argument: STREAMS 0", true, [&](RawSession& r) { return expect_code(r, kStreams, encode_u32(0), kBadArgument, true); });
  raw("bad argument: step of a stream not reset", true, [&](RawSession& r) {
    const auto f = r.exchange(kStreams, encode_u32(1));
    if (!f || f->type != (kResponse | kStreams)) return "STREAMS(1) was answered with " + answer_text(f);
    const StepEntry e{0, 0};
    return expect_code(r, kStep, encode_step(std::span<const StepEntry>(&e, 1)), kBadArgument, false);
  });
  raw("bad argument: input id >= vocab_size", true, [&](RawSession& r) {
    auto f = r.exchange(kStreams, encode_u32(1));
    if (!f || f->type != (kResponse | kStreams)) return "STREAMS(1) was answered with " + answer_text(f);
    f = r.exchange(kReset, encode_reset(0, guests[0].image));
    if (!f || f->type != (kResponse | kReset)) return "RESET was answered with " + answer_text(f);
    const StepEntry e{0, hello_ok->vocab_size};
    return expect_code(r, kStep, encode_step(std::span<const StepEntry>(&e, 1)), kBadArgument, false);
  });
  raw("bad argument: stream out of range", true, [&](RawSession& r) {
    const auto f = r.exchange(kStreams, encode_u32(1));
    if (!f || f->type != (kResponse | kStreams)) return "STREAMS(1) was answered with " + answer_text(f);
    return expect_code(r, kReset, encode_reset(1, guests[0].image), kBadArgument, false);
  });
  raw("bad frame: length over the limit", true, [&](RawSession& r) -> std::string {
    // Only the header: the chip must answer ERROR 1 and end the session, reading nothing more.
    std::uint8_t head[8];
    const std::uint32_t type = kStep, len = kMaxPayload + 1;
    std::memcpy(head, &type, 4);
    std::memcpy(head + 4, &len, 4);
    const auto until = Connection::Clock::now() + std::chrono::milliseconds(static_cast<long long>(r.timeout_s * 1000));
    r.conn->write_raw(std::span<const std::uint8_t>(head, 8), until);
    const auto f = r.conn->read_frame(until);
    if (!is_error(f, kMalformed)) return "answered with " + answer_text(f) + ", expected ERROR 1";
    std::optional<Frame> g;
    try {
      g = r.conn->read_frame(until);
    } catch (const Stopped&) {
      throw;
    } catch (const Timeout&) {
      std::ostringstream os;
      os << "answered ERROR 1 but did not end the session (still open after --dut-timeout " << r.timeout_s
         << " s; after a length over the limit the frame boundary is lost, and the chip must close the "
            "connection or exit, §2)";
      return os.str();
    } catch (const TransportError&) {
      // A chip process that exited ended its session, even when a process it started still holds
      // its stdout open (§1: its exit is what counts).
      if (!r.conn->exit_status(std::chrono::milliseconds(0)).empty()) return "";
      throw;
    }
    if (g) return "the session went on after an over-long length (" + answer_text(g) + ")";
    return "";
  });
}
}  // namespace

}  // namespace lockstep::dut
