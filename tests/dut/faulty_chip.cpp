// TEST-ONLY: a chip under test that fails on purpose (docs/spec/dut-protocol.md §8), for the
// fault tests of tests/dut/dut_cli_test.cpp. It serves CHIP_FILE on the CPU executor over
// stdin/stdout (as `lockstep chip-server --stdio` does) and misbehaves at the N-th TOKENS answer
// (N = 0: at HELLO):
//   faulty_chip MODE N CHIP_FILE
// MODE: exit (exits with status 3), crash (SIGSEGV), hang (answers nothing), garbage (writes text
// to stdout), shortgarbage (writes "ok\n", shorter than a frame header, then the answer), oversize (a frame header over 64 MiB), short (one token fewer), badid (an id
// outside the map), error (ERROR 7), errorbytes (ERROR 7 whose text has 0xff, ESC and a newline), wrongtype (OK instead of TOKENS), twice (the answer sent twice:
// a frame nobody asked for), twicelate (the same, the copy 100 ms later: read as the next
// request's answer), requesthead (4 bytes 01 00 00 00, then the answer: a header of a
// request's type), version (HELLO_OK with
// protocol 2), wrongtoken (one token of the answer replaced by another token of trace-v3: a
// mismatch, not a protocol fault), wrongthenexit (wrongtoken, then exits with status 3 at the
// first STREAMS request after it, as the shrinker sends: a chip that dies while fuzz shrinks),
// wrongthendie (wrongtoken, then exits with status 3 at the next request of any kind but BYE: a
// chip that dies while the divergence is classified), wrongthenhang (wrongtoken, then answers
// nothing from the next request of any kind but BYE on, saying "faulty_chip: wrongthenhang hangs
// now": a chip that hangs while the divergence is classified, for a stop inside that wait),
// notoken (the last token of the answer replaced by id 3330, BR(2): an id below vocab_size that
// trace-v3 cannot produce, a wrong prediction and so a mismatch), none (a
// correct chip). Four modes plant a bug in every answer
// of one kind and ignore N: freebug (the last token of every FREE answer replaced as wrongtoken
// does: STEP and FORCED stay right), batchbug (the last token of every STEP answer of two or more
// tokens has its payload's low bit flipped: a chip wrong only in STEP frames of several entries), stream1 (every EXIT(s) answered for stream 1 becomes
// EXIT(s ^ 1): a chip whose bug shows only beside another stream, for fuzz's batch-dependent
// failures) and zeroprobes (every PROBE answer all zeros, its width kept; nanprobes: all NaN;
// shortprobes: one zero, whatever the field's width; with N > 0 the N-th
// TOKENS answer also has a wrong token, as wrongtoken). One mode counts steps instead of answers:
// tripped (stream 0's N-th step since its reset predicts a wrong token, its payload's low bit
// flipped, in every kind of answer; a FREE answer in which that token is not the last of its
// stream is ERROR 7 instead, as a chip that trips over its own wrong prediction: use it with
// `plain`, whose replays start from RESET). Two more trip the same way and then break the
// answer that holds the wrong token, when it is not the answer's last, in any kind of answer:
// trippedbadid (the answer's last id becomes 16777215, not below vocab_size) and trippedshort
// (the answer loses its last token): a wrong token hidden by a bad answer. trippedslow is tripped
// whose every TOKENS answer, once stream 0 has made its N-th step, comes 200 ms late: a slow chip
// while the divergence is diagnosed. A fourth argument `plain` announces MULTI_STEP only
// (no PROBES, HASH, SAVE_RESTORE). Two modes answer a frame whose length is over the limit (§2)
// with ERROR 1 and then: oversizekeep reads on (it does not end the session), oversizebg exits
// while a process it started (sleep 30) still holds its stdout. Three break the end of a session
// (§1, §3.10): byeerror answers BYE with ERROR 7, byenoanswer never answers BYE (and hangs),
// ignoreeof answers BYE and then hangs instead of exiting at the end of its input. noidentity
// announces an empty identity. evilname
// announces a name and an identity with control characters (a newline, ESC, BEL, CR);
// reservedcap sets reserved capability bit 7 in HELLO_OK. mlptwice serves the chip with layer N's
// MLP output added twice (its W2 and b2 doubled): an executor bug in one sublayer, with every
// answer well formed (its identity is the doubled chip's hash); mlptwice-badprobe is mlptwice with,
// besides, every PROBE of layer N-2's memory point answered with its values plus 1 (a probe that
// does not show what the executor computes); byplace keeps a stream's state by its place in a STEP
// frame, not by its stream id (each entry's stream replaced by its index in the frame before the
// chip steps it: right whenever stream p is at place p); leaky, once the session has had more
// than N RESET requests, flips the payload's low bit of the first token each stream answers after
// its reset (state left across RESET by the programs before: right in a new session); placebranch answers BR(0) for a BR(1)
// at place N of a STEP frame of more than N entries (a taken branch read as not taken, at one
// place of a frame only); refchip and refdirty (N -1) serve the reference model as the chip
// (ref_chip.h), refdirty keeping a stream's registers across RESET, refdirtyvr the VR words its
// new image's .lockstep.vreg does not write; lowtoken serves it with token id N never predicted (its
// unembedding bias lowered by 10^6).
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <limits>
#include <iostream>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/dut/server.h"
#include "ref_chip.h"

namespace {

using namespace lockstep;

class Faulty final : public dut::Connection {
 public:
  Faulty(std::unique_ptr<dut::Connection> inner, std::string mode, int n)
      : dut::Connection(-1, -1, "faulty"), in_(std::move(inner)), mode_(std::move(mode)), n_(n) {}

  std::optional<dut::Frame> read_frame(Clock::time_point deadline) override {
    std::optional<dut::Frame> f;
    try {
      f = in_->read_frame(deadline);
    } catch (const dut::Malformed& e) {
      if (mode_ == "oversizekeep") {  // answers ERROR 1 and reads on, as if the boundary were kept
        in_->write_frame(dut::kError, dut::encode_error(dut::kMalformed, e.what()), deadline);
        return in_->read_frame(deadline);
      }
      if (mode_ == "oversizebg") {  // answers ERROR 1 and exits, a process it started holding stdout
        in_->write_frame(dut::kError, dut::encode_error(dut::kMalformed, e.what()), deadline);
        if (::fork() == 0) {
          ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
          ::_exit(127);
        }
        ::_exit(0);
      }
      throw;
    }
    if (f && mode_ == "wrongthenexit" && fired_ && f->type == dut::kStreams) {
      std::cerr << "faulty_chip: wrongthenexit exits at the first STREAMS after its wrong token\n" << std::flush;
      ::_exit(3);
    }
    if (f && mode_ == "wrongthendie" && fired_ && f->type != dut::kBye) {
      std::cerr << "faulty_chip: wrongthendie exits at the first request after its wrong token\n" << std::flush;
      ::_exit(3);
    }
    if (f && mode_ == "wrongthenhang" && fired_ && f->type != dut::kBye) {
      std::cerr << "faulty_chip: wrongthenhang hangs now, at the first request after its wrong token\n" << std::flush;
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (f && mode_ == "byplace" && f->type == dut::kStep) {
      std::vector<dut::StepEntry> entries = dut::decode_step(f->payload);
      for (std::size_t i = 0; i < entries.size(); ++i) entries[i].stream = static_cast<std::uint32_t>(i);
      f->payload = dut::encode_step(entries);
    }
    if (f && mode_ == "mlptwice-badprobe" && f->type == dut::kProbe) {
      // Layer N-2's memory point is answered with every value plus 1 (write_frame): a probe that
      // does not show what the executor computes (it computes that layer right).
      const dut::ProbeRequest p = dut::decode_probe(f->payload);
      bad_probe_ = p.layer == n_ - 2 && p.after == 1;
    }
    if (f && tripped_family()) {
      if (f->type == dut::kStreams) stream_steps_.clear();
      if (f->type == dut::kReset) stream_steps_[dut::decode_reset(f->payload).stream] = 0;
    }
    if (f && mode_ == "leaky" && f->type == dut::kReset) {
      ++resets_;
      fresh_[dut::decode_reset(f->payload).stream] = true;
    }
    if (f && (mode_ == "stream1" || mode_ == "leaky" || tripped_family())) {  // the streams (and their token counts) the answer will hold
      request_.clear();
      if (f->type == dut::kStep)
        for (const dut::StepEntry& e : dut::decode_step(f->payload)) request_.push_back({e.stream, 1});
      else if (f->type == dut::kFree)
        for (const dut::MultiEntry& e : dut::decode_free(f->payload)) request_.push_back({e.stream, e.count});
      else if (f->type == dut::kForced) {
        std::vector<dut::MultiEntry> entries;
        std::vector<std::uint32_t> inputs;
        dut::decode_forced(f->payload, entries, inputs);
        for (const dut::MultiEntry& e : entries) request_.push_back({e.stream, e.count});
      }
    }
    return f;
  }

  void write_frame(std::uint32_t type, std::span<const std::uint8_t> payload, Clock::time_point deadline) override {
    if (type == (dut::kResponse | dut::kBye) && (mode_ == "byeerror" || mode_ == "byenoanswer" || mode_ == "ignoreeof")) {
      if (mode_ == "byeerror") {
        in_->write_frame(dut::kError, dut::encode_error(dut::kInternal, "BYE is not for me"), deadline);
        return;
      }
      if (mode_ == "ignoreeof") in_->write_frame(type, payload, deadline);
      std::fprintf(stderr, "faulty_chip: %s now\n", mode_ == "ignoreeof" ? "lingering after BYE" : "BYE not answered");
      std::fflush(stderr);
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (mode_ == "reservedcap" && type == (dut::kResponse | dut::kHello)) {
      dut::HelloOk h = dut::decode_hello_ok(payload);
      h.capabilities |= 1u << 7;
      in_->write_frame(type, dut::encode_hello_ok(h), deadline);
      return;
    }
    if (mode_ == "noidentity" && type == (dut::kResponse | dut::kHello)) {
      dut::HelloOk h = dut::decode_hello_ok(payload);
      h.identity.clear();
      in_->write_frame(type, dut::encode_hello_ok(h), deadline);
      return;
    }
    if (mode_ == "evilname" && type == (dut::kResponse | dut::kHello)) {
      dut::HelloOk h = dut::decode_hello_ok(payload);
      h.name = "evil\nname\x1b[31mred";
      h.identity = "id\a\r";
      in_->write_frame(type, dut::encode_hello_ok(h), deadline);
      return;
    }
    const bool tokens = type == (dut::kResponse | dut::kStep) || type == (dut::kResponse | dut::kForced) ||
                        type == (dut::kResponse | dut::kFree);
    if (mode_ == "stream1" && tokens) {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      std::size_t at = 0;
      for (const auto& [stream, count] : request_) {
        for (std::size_t k = at; k < at + count && k < t.size(); ++k)
          if (stream == 1 && (t[k] >> 8) == 31) t[k] ^= 1;  // EXIT(s) -> EXIT(s ^ 1)
        at += count;
      }
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (mode_ == "leaky" && tokens) {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      std::size_t at = 0;
      for (const auto& [stream, count] : request_) {
        if (count > 0 && fresh_[stream]) {
          if (resets_ > static_cast<std::uint64_t>(n_) && at < t.size()) t[at] ^= 1;
          fresh_[stream] = false;
        }
        at += count;
      }
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (tripped_family() && tokens) {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      std::size_t at = 0;
      bool trip = false;
      for (const auto& [stream, count] : request_) {
        std::uint64_t& done = stream_steps_[stream];
        if (stream == 0 && done < static_cast<std::uint64_t>(n_) && done + count >= static_cast<std::uint64_t>(n_)) {
          const std::size_t k = at + static_cast<std::size_t>(n_ - done - 1);
          if (k < t.size()) t[k] ^= 1;
          trip = ((mode_ != "tripped" && mode_ != "trippedslow") || type == (dut::kResponse | dut::kFree)) &&
                 static_cast<std::uint64_t>(n_) < done + count;
          if (trip) {
            std::cerr << "faulty_chip: tripped now, after " << done << " steps, in an answer of " << count
                      << " tokens\n"
                      << std::flush;
          }
        }
        done += count;
        at += count;
      }
      if (mode_ == "trippedslow" && stream_steps_[0] >= static_cast<std::uint64_t>(n_))
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (trip && mode_ == "trippedbadid") {
        t.back() = 0x00FFFFFF;
        in_->write_frame(type, dut::encode_tokens(t), deadline);
      } else if (trip && mode_ == "trippedshort") {
        t.pop_back();
        in_->write_frame(type, dut::encode_tokens(t), deadline);
      } else if (trip) {
        in_->write_frame(dut::kError, dut::encode_error(dut::kInternal, "tripped over its own prediction"), deadline);
      } else {
        in_->write_frame(type, dut::encode_tokens(t), deadline);
      }
      return;
    }
    const bool hello = type == (dut::kResponse | dut::kHello);
    if (mode_ == "batchbug" && type == (dut::kResponse | dut::kStep) && dut::decode_tokens(payload).size() >= 2) {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      t.back() ^= 1;
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (mode_ == "placebranch" && type == (dut::kResponse | dut::kStep) &&
        dut::decode_tokens(payload).size() > static_cast<std::size_t>(n_) &&
        dut::decode_tokens(payload)[static_cast<std::size_t>(n_)] == 256u * 13 + 1) {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      t[static_cast<std::size_t>(n_)] = 256u * 13;  // BR(1) -> BR(0): a taken branch read as not taken, at place N only
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (mode_ == "freebug" && type == (dut::kResponse | dut::kFree)) {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      t.back() = t.back() == 256u * 31 ? 256u * 31 + 1 : 256u * 31;  // EXIT(0) / EXIT(1)
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (mode_ == "mlptwice-badprobe" && type == (dut::kResponse | dut::kProbe) && bad_probe_) {
      std::vector<float> v = dut::decode_values(payload);
      for (float& x : v) x += 1;
      in_->write_frame(type, dut::encode_values(v), deadline);
      return;
    }
    if (probes_mode() && type == (dut::kResponse | dut::kProbe)) {
      const std::size_t width = dut::decode_values(payload).size();
      const std::vector<float> values(mode_ == "shortprobes" ? std::min<std::size_t>(width, 1) : width,
                                      mode_ == "nanprobes" ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
      in_->write_frame(type, dut::encode_values(values), deadline);
      return;
    }
    if (mode_ == "freebug" || mode_ == "batchbug" || mode_ == "placebranch" || mode_ == "byplace" || mode_ == "oversizekeep" || mode_ == "oversizebg" ||
        mode_ == "byeerror" || mode_ == "byenoanswer" || mode_ == "ignoreeof" || mode_ == "evilname" || mode_ == "noidentity" ||
        mode_ == "reservedcap" ||
        (probes_mode() && !(n_ > 0 && tokens && answers_ + 1 == n_))) {
      if (tokens) ++answers_, steps_ += dut::decode_tokens(payload).size();
      in_->write_frame(type, payload, deadline);
      return;
    }
    if (tokens) ++answers_;
    const bool now = mode_ != "stream1" && ((n_ == 0 && hello) || (n_ > 0 && tokens && answers_ == n_));
    const std::size_t count = tokens ? dut::decode_tokens(payload).size() : 0;
    if (!now || mode_ == "none") {
      steps_ += count;
      in_->write_frame(type, payload, deadline);
      return;
    }
    // The tests read this line: the steps answered before the fault, and the faulty answer's size.
    std::cerr << "faulty_chip: " << mode_ << " now, after " << steps_ << " steps, in an answer of " << count
              << " tokens\n"
              << std::flush;
    if (mode_ == "exit") ::_exit(3);
    if (mode_ == "crash") {
      std::signal(SIGSEGV, SIG_DFL);
      ::raise(SIGSEGV);
    }
    if (mode_ == "hang") {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (mode_ == "garbage") {
      const char text[] = "debug: logits computed\n";
      in_->write_raw(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text), sizeof text - 1), deadline);
      return;
    }
    if (mode_ == "shortgarbage") {  // a line shorter than a frame header, then the answer
      const char text[] = "ok\n";
      in_->write_raw(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text), sizeof text - 1), deadline);
      in_->write_frame(type, payload, deadline);
      return;
    }
    if (mode_ == "twice") {  // the answer, then the same answer again, unasked: one write, so both are there at once
      std::vector<std::uint8_t> two = dut::encode_frame(type, payload);
      const std::vector<std::uint8_t> again = two;
      two.insert(two.end(), again.begin(), again.end());
      in_->write_raw(two, deadline);
      return;
    }
    if (mode_ == "twicelate") {  // the answer, then 100 ms later the same again, unasked: by then the
      // harness has sent its next request, and reads the copy as that request's answer
      in_->write_frame(type, payload, deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      in_->write_frame(type, payload, deadline);
      return;
    }
    if (mode_ == "requesthead") {  // 4 stray bytes (a HELLO request's type) before the answer: a header
      // of type 1 whose length is the answer's type, which no answer has
      std::vector<std::uint8_t> bytes = {1, 0, 0, 0};
      const std::vector<std::uint8_t> frame = dut::encode_frame(type, payload);
      bytes.insert(bytes.end(), frame.begin(), frame.end());
      in_->write_raw(bytes, deadline);
      return;
    }
    if (mode_ == "oversize") {
      std::uint8_t head[8];
      const std::uint32_t len = dut::kMaxPayload + 1;
      std::memcpy(head, &type, 4);
      std::memcpy(head + 4, &len, 4);
      in_->write_raw(std::span<const std::uint8_t>(head, 8), deadline);
      return;
    }
    if (mode_ == "wrongtoken" || probes_mode() || mode_ == "wrongthenexit" || mode_ == "wrongthendie" ||
        mode_ == "wrongthenhang") {
      fired_ = true;
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      t.back() = t.back() == 256u * 31 ? 256u * 31 + 1 : 256u * 31;  // EXIT(0) / EXIT(1)
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (mode_ == "short" || mode_ == "badid" || mode_ == "notoken") {
      std::vector<std::uint32_t> t = dut::decode_tokens(payload);
      if (mode_ == "short") t.pop_back();
      else if (mode_ == "notoken") t.back() = 256u * 13 + 2;  // BR(2): below vocab_size, no token
      else t.back() = 0x00FFFFFF;
      in_->write_frame(type, dut::encode_tokens(t), deadline);
      return;
    }
    if (mode_ == "error") {
      in_->write_frame(dut::kError, dut::encode_error(dut::kInternal, "simulated failure of the chip"), deadline);
      return;
    }
    if (mode_ == "errorbytes") {  // a message with bytes that are not UTF-8, an escape sequence and a newline
      in_->write_frame(dut::kError, dut::encode_error(dut::kInternal, "\xff\xfe\x1b[31mred\nsecond line"), deadline);
      return;
    }
    if (mode_ == "wrongtype") {
      in_->write_frame(dut::kResponse | dut::kReset, {}, deadline);
      return;
    }
    if (mode_ == "version") {
      dut::HelloOk h = dut::decode_hello_ok(payload);
      h.protocol_version = 2;
      in_->write_frame(type, dut::encode_hello_ok(h), deadline);
      return;
    }
    in_->write_frame(type, payload, deadline);
  }

 private:
  bool tripped_family() const {
    return mode_ == "tripped" || mode_ == "trippedslow" || mode_ == "trippedbadid" || mode_ == "trippedshort";
  }
  std::unique_ptr<dut::Connection> in_;
  std::string mode_;
  bool probes_mode() const { return mode_ == "zeroprobes" || mode_ == "nanprobes" || mode_ == "shortprobes"; }
  int n_;
  int answers_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> request_;  // stream1: (stream, tokens) of the last request
  std::uint64_t steps_ = 0;  // tokens answered before the fault
  std::map<std::uint32_t, std::uint64_t> stream_steps_;  // tripped: each stream's steps since its reset
  bool fired_ = false;       // wrongthenexit, wrongthendie: the wrong token was sent
  std::uint64_t resets_ = 0;  // leaky: RESET requests of the session
  std::map<std::uint32_t, bool> fresh_;  // leaky: the streams reset and not stepped since
  bool bad_probe_ = false;   // mlptwice-badprobe: the PROBE being answered is the misreported one
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: faulty_chip MODE N CHIP_FILE [plain]\n";
    return 2;
  }
  chip::Chip c = chip::load_chip(argv[3]);
  const std::string mode = argv[1];
  if (mode == "mlptwice" || mode == "mlptwice-badprobe") {  // an executor that adds layer N's MLP output twice
    chip::LinearMap& w2 = c.layers.at(static_cast<std::size_t>(std::atoi(argv[2]))).mlp.w2;
    for (float& v : w2.w.values) v *= 2;
    for (float& v : w2.bias) v *= 2;
  }
  if (mode == "lowtoken") c.unembed.bias.at(static_cast<std::size_t>(std::atoi(argv[2]))) -= 1e6f;  // never predicted
  auto chip = std::make_shared<const chip::Chip>(std::move(c));
  Faulty conn(dut::stdio_connection(), argv[1], std::atoi(argv[2]));
  // refchip / refdirty (N -1): the reference model as the chip (ref_chip.h); refdirty keeps a
  // stream's registers across RESET
  const std::function<std::unique_ptr<chip::ChipBackend>()> make = [chip, mode]() -> std::unique_ptr<chip::ChipBackend> {
    using Dirty = dut::testing::RefChip::Dirty;
    if (mode == "refchip") return std::make_unique<dut::testing::RefChip>(Dirty::kNone);
    if (mode == "refdirty") return std::make_unique<dut::testing::RefChip>(Dirty::kRegisters);
    if (mode == "refdirtyvr") return std::make_unique<dut::testing::RefChip>(Dirty::kVectorRegisters);
    return std::make_unique<chip::CpuExecutor>(chip, 1);
  };
  dut::ServerOptions o;
  o.name = "faulty_chip";
  if (argc == 5 && std::string(argv[4]) == "plain") o.capabilities = dut::kMultiStep;
  try {
    dut::serve_session(conn, make, o);
  } catch (const std::exception& e) {
    std::cerr << "faulty_chip: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
