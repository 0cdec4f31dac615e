#include "lockstep/dut/dut_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "lockstep/chip/error.hpp"
#include "lockstep/format/error.h"
#include "lockstep/format/file.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/tokens.h"
#include "lockstep/format/json_text.h"

namespace lockstep::dut {

using nlohmann::json;

namespace {
constexpr char kBlobMagic[4] = {'L', 'K', 'D', 'B'};
constexpr std::uint32_t kBlobVersion = 1;

}  // namespace

std::string read_token_file(const std::filesystem::path& p, const std::string& named) {
  std::string s;
  try {  // a directory, FIFO, device or huge file is refused before it is read (found by an outside tester)
    const std::vector<std::uint8_t> bytes =
        format::read_input_file(p, "", kMaxStr + 2, format::Readable::kRegularOnly);
    s.assign(bytes.begin(), bytes.end());
  } catch (const format::InputFileError& e) {
    if (e.fault() == format::InputFileFault::kTooLarge)
      throw DutError(named + " " + p.string() + ": longer than 65,535 bytes");
    throw DutError(named + " " + p.string() + ": " + e.reason());
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.size() > kMaxStr) throw DutError(named + " " + p.string() + ": longer than 65,535 bytes");
  if (s.empty()) throw DutError(named + " " + p.string() + ": empty (the secret must not be)");
  return s;
}

// ------------------------------------------------------------------------------------ DutConfig

std::string DutConfig::describe() const {
  std::string out = command.empty() ? "--dut-connect " + format::shell_word(connect) : "--dut " + format::shell_quoted(command);
  if (!vocab.empty()) out += " --dut-vocab " + format::shell_path(vocab.string());
  if (!chip_file.empty()) out += " --dut-chip " + format::shell_path(chip_file.string());
  return out;
}

json DutConfig::to_json() const {
  json j = json::object();
  if (!command.empty()) {
    j["command"] = command;
    j["workdir"] = std::filesystem::absolute(workdir.empty() ? std::filesystem::current_path() : workdir).string();
  }
  if (!connect.empty()) j["connect"] = connect;
  if (!vocab.empty()) j["vocab"] = std::filesystem::absolute(vocab).string();
  j["timeout_s"] = timeout_s;
  j["start_timeout_s"] = start_timeout_s;
  if (!token_file.empty()) j["token_file"] = std::filesystem::absolute(token_file).string();
  if (!chip_file.empty()) j["chip_file"] = std::filesystem::absolute(chip_file).string();
  if (!chip_file.empty() && !chip_file_hash.empty()) j["chip_file_hash"] = chip_file_hash;
  return j;
}

DutConfig DutConfig::from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("dut: expected an object");
  DutConfig c;
  auto str = [&](const char* key) -> std::string {
    if (!j.contains(key)) return "";
    if (!j[key].is_string()) throw std::invalid_argument(std::string("dut.") + key + " must be a string");
    return j[key].get<std::string>();
  };
  c.command = str("command");
  c.connect = str("connect");
  c.vocab = str("vocab");
  c.token_file = str("token_file");
  c.workdir = str("workdir");
  c.chip_file = str("chip_file");
  c.chip_file_hash = str("chip_file_hash");
  for (auto [key, field] : {std::pair<const char*, double*>{"timeout_s", &c.timeout_s}, {"start_timeout_s", &c.start_timeout_s}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number()) throw std::invalid_argument(std::string("dut.") + key + " must be a number");
    *field = j[key].get<double>();
    if (!(*field > 0 && *field <= 86400)) throw std::invalid_argument(std::string("dut.") + key + " must be in (0, 86400]");
  }
  if (c.empty()) throw std::invalid_argument("dut: neither command nor connect");
  return c;
}

// ------------------------------------------------------------------------------------ backend

DutBackend::DutBackend(const DutConfig& config) : config_(config) {
  if (config_.empty()) throw DutError("chip under test: neither --dut nor --dut-connect was given");
  if (!config_.command.empty() && !config_.connect.empty()) {
    throw DutError("chip under test: give --dut or --dut-connect, not both");
  }
  if (!(config_.timeout_s > 0 && config_.timeout_s <= 86400)) {
    throw DutError("chip under test: --dut-timeout must be in (0, 86400] seconds");
  }
  if (!(config_.start_timeout_s > 0 && config_.start_timeout_s <= 86400)) {
    throw DutError("chip under test: --dut-start-timeout must be in (0, 86400] seconds");
  }
  if (!config_.command.empty() && config_.command.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw DutError("chip under test: --dut: the command is blank");
  }
  Hello h;
  if (!config_.token_file.empty()) h.auth = read_token_file(config_.token_file);
  // The map is read and checked before the chip starts (which may take minutes to load its
  // weights): every rule of §6 but one, its ids below the chip's vocab_size, which is checked
  // after the handshake.
  std::string vocab_text;
  if (!config_.vocab.empty()) {
    try {
      vocab_text = VocabMap::read(config_.vocab);
      (void)VocabMap::parse(vocab_text, UINT32_MAX, config_.vocab.string());
    } catch (const VocabError& e) {
      throw DutError(std::string("chip under test: --dut-vocab ") + e.what());
    }
  }
  try {
    if (!config_.command.empty()) {
      conn_ = spawn_chip(config_.command, config_.workdir);
    } else {
      Address a;
      try {
        a = parse_address(config_.connect);
      } catch (const std::invalid_argument& e) {
        throw DutError(std::string("chip under test: --dut-connect: ") + e.what());
      }
      conn_ = connect_chip(a, std::chrono::milliseconds(static_cast<long long>(config_.start_timeout_s * 1000)));
    }
  } catch (const TransportError& e) {
    throw DutError(std::string("chip under test: ") + e.what());
  }
  conn_->set_stop(config_.stop);
  conn_->set_answers_only(true);  // a header of no answer's type is refused at once (transport.h)
  // The handshake waits --dut-start-timeout: a chip may load gigabytes of weights first.
  const std::vector<std::uint8_t> ok = request(kHello, encode_hello(h), config_.start_timeout_s);
  try {
    hello_ = decode_hello_ok(ok);
  } catch (const Malformed& e) {
    fail(std::string("malformed frame: ") + e.what());
  }
  if (hello_.protocol_version != kProtocolVersion) {
    fail("speaks protocol version " + std::to_string(hello_.protocol_version) + ", this harness speaks " +
         std::to_string(kProtocolVersion) + " (lockstep-dut/1)");
  }
  if (hello_.trace_version != kTraceVersion) {
    fail("speaks trace '" + hello_.trace_version + "', this harness checks " + std::string(kTraceVersion));
  }
  if (hello_.max_streams == 0) fail("HELLO_OK announces max_streams 0 (at least 1)");
  if (const std::uint32_t reserved = hello_.capabilities & ~0xFu) {
    // The reserved part only, as a mask and its bit numbers (the whole mask in decimal hid them).
    char mask[16];
    std::snprintf(mask, sizeof mask, "0x%x", reserved);
    std::string bits;
    int count = 0;
    for (int bit = 4; bit < 32; ++bit)
      if (reserved >> bit & 1u) bits += (count++ ? ", " : "") + std::to_string(bit);
    fail("HELLO_OK sets reserved capability " + std::string(count == 1 ? "bit" : "bits") + " (" + mask + ": " +
         (count == 1 ? "bit " : "bits ") + bits + "; only bits 0 to 3 are defined, the others must be 0, §3.1)");
  }
  try {
    vocab_ = config_.vocab.empty() ? VocabMap::identity(hello_.vocab_size)
                                   : VocabMap::parse(vocab_text, hello_.vocab_size, config_.vocab.string());
  } catch (const VocabError& e) {
    fail(std::string(config_.vocab.empty() ? "" : "--dut-vocab ") + e.what());
  }
}

DutBackend::~DutBackend() {
  if (!conn_) return;
  // BYE when the session is sound; then (Connection's destructor) close our side, wait up to 5 s
  // for a child to exit, SIGTERM, 2 s more, SIGKILL (§1). A chip that timed out was killed already.
  if (fault_.empty()) {
    // A chip that does not answer BYE breaks §3.10: said (found by an outside tester: only the
    // seconds it then took to exit were).
    std::string bye;
    const double bye_wait = std::min(5.0, config_.timeout_s);  // --dut-timeout, when shorter
    try {
      const auto until = deadline(bye_wait);
      conn_->write_frame(kBye, {}, until);
      const std::optional<Frame> f = conn_->read_frame(until);
      if (!f) bye = "closed its side instead of answering BYE";
      else if (f->type != (kResponse | kBye)) bye = "answered BYE with " + type_name(f->type) + ", not OK";
    } catch (const Timeout&) {
      bye = "did not answer BYE within " + format::json_text(json(bye_wait)) + " s";
    } catch (const Stopped&) {
      // the wait ends within 100 ms (§8; found by an outside tester: the warning read "BYE: chip
      // process '...': given up while waiting for its answer", and the chip was waited for 5 s more)
      conn_->kill_peer();
      bye = std::string(kKilledOnStop) + " while Lockstep waited on its answer to BYE";
    } catch (const std::exception& e) {
      bye = std::string("BYE: ") + e.what();
    }
    if (!bye.empty()) std::cerr << "lockstep: warn: " << conn_->peer() << " " << bye << " (dut-protocol.md §3.10)\n";
  }
  // A chip that ignores the end of its session costs seconds: say so, not silently.
  const std::string note = conn_->finish();
  if (!note.empty()) std::cerr << "lockstep: warn: " << conn_->peer() << " " << note << "\n";
  conn_.reset();
}

std::string DutBackend::end_session() {
  if (!conn_) return "";
  std::string finding;
  if (fault_.empty()) {
    try {
      const auto until = deadline(config_.timeout_s);
      conn_->write_frame(kBye, {}, until);
      const std::optional<Frame> f = conn_->read_frame(until);
      if (!f) {
        finding = "BYE was not answered (the chip ended the session first), expected OK (§3.10)";
      } else if (f->type == kError) {
        std::string what = "a malformed ERROR";
        try {
          const auto [code, message] = decode_error(f->payload);
          what = "ERROR " + std::to_string(code) + " (" + error_code_name(code) + "): " + format::escape_controls(message);
        } catch (const Malformed&) {
        }
        finding = "BYE was answered with " + what + ", expected OK (§3.10)";
      } else if (f->type != (kResponse | kBye)) {
        finding = "BYE was answered with " + type_name(f->type) + ", expected OK (§3.10)";
      }
    } catch (const Stopped&) {
      conn_->kill_peer();
      throw DutError("chip under test: stopped by SIGINT, SIGTERM or SIGHUP while waiting on BYE");
    } catch (const Timeout&) {
      finding = "BYE was not answered within --dut-timeout " + format::json_text(json(config_.timeout_s)) +
                " s, expected OK (§3.10)";
    } catch (const std::exception& e) {
      finding = std::string("BYE: ") + e.what();
    }
    if (fault_.empty()) fault_ = "chip under test: the session ended";
  }
  std::string note = conn_->finish();
  // A stop cut the wait for the chip to exit short (it was killed at once): no finding about the
  // chip either way; the caller, seeing the stop, drops this check (conformance's check()).
  if (conn_->stop_requested() && note.rfind(kKilledOnStop, 0) == 0) {
    conn_.reset();
    return "stopped by SIGINT, SIGTERM or SIGHUP while waiting for the chip process to exit";
  }
  // A chip that ignores the end of its input breaks a MUST (§1); processes it left running are
  // ended with a warning (§1 allows them).
  constexpr std::string_view kNoExit = "did not exit within 5 s";
  if (note.rfind(kNoExit, 0) == 0) {
    const auto cut = note.find("; ");
    const std::string own = note.substr(0, cut);
    note = cut == std::string::npos ? "" : note.substr(cut + 2);
    finding += (finding.empty() ? "" : "; ") + std::string("the chip process ") + own +
               " (a chip MUST exit when it reads end of file, §1)";
  }
  if (!note.empty()) std::cerr << "lockstep: warn: " << conn_->peer() << " " << note << "\n";
  conn_.reset();
  return finding;
}

Connection::Clock::time_point DutBackend::deadline(double seconds) const {
  return Connection::Clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

void DutBackend::fail(const std::string& message, bool error_answer) const {
  const bool first = fault_.empty();
  if (first) fault_ = "chip under test: " + message;
  // A failure while continuing past an ERROR ends the session for good; the first fault stands.
  continuing_ = false;
  error_answer_ = first && error_answer;
  throw DutError(fault_);
}

bool DutBackend::continue_after_error() {
  if (fault_.empty() || !error_answer_ || !conn_) return false;
  continuing_ = true;
  return true;
}

void DutBackend::end_continue_after_error(bool dismiss, const std::string& finding) {
  if (continuing_) {
    if (dismiss) {
      fault_.clear();
      error_answer_ = false;
    } else if (!finding.empty()) {
      fault_ += "; " + finding;
    }
  }
  continuing_ = false;
}

namespace {
// What the chip process's exit status `st` (Connection::exit_status) suggests, appended to it. 127:
// the shell found no such command, often a shell line given to `exec` (dut-protocol.md §1); said
// whether the chip's end showed as a closed pipe while the harness wrote or as end of file while it
// read, which is a race.
// What the shell's 126/127 mean for `command` (its first word): a path that does not exist, a
// file that is not executable, or a word that is no command.
std::string exit_hint(const std::string& st, const std::string& command, const std::filesystem::path& workdir) {
  if (st != "exited with status 127" && st != "exited with status 126") return "";
  std::istringstream words(command);
  std::string first;
  words >> first;
  const bool path = first.find('/') != std::string::npos;
  const std::filesystem::path where = !workdir.empty() && std::filesystem::path(first).is_relative() ? workdir / first : std::filesystem::path(first);
  std::error_code ec;
  if (path && !std::filesystem::exists(where, ec)) return ": no such file: " + where.string();
  if (st == "exited with status 126")
    return path ? ": " + first + " cannot be run (not executable, or a folder): chmod +x it, or give its interpreter "
                      "first (--dut 'python3 " + first + " ...')"
                : ": " + first + " cannot be run (permission denied)";
  if (path) return "";
  return ": no such command; --dut runs /bin/sh -c 'exec COMMAND ARGS', so a shell line "
         "such as 'cd DIR && ...' goes inside sh -c: --dut 'sh -c \"cd DIR && ...\"'";
}
}  // namespace

namespace {
// After "the wrong batch size": an answer as long as the one before it may be that answer again.
constexpr const char* kCopyNote =
    ", as many tokens as the answer before it: an answer sent twice? the chip's answers may be out of step with the "
    "requests)";
}  // namespace

bool DutBackend::repeats_last_answer(std::size_t tokens) const {
  if (tokens != last_answer_tokens_ || !fault_.empty()) return false;
  out_of_step_ = true;
  return true;
}

std::vector<std::uint8_t> DutBackend::request(std::uint32_t type, const std::vector<std::uint8_t>& payload,
                                              double timeout_s) const {
  if (!fault_.empty() && !continuing_) throw DutError(fault_);
  if (timeout_s <= 0) timeout_s = config_.timeout_s;
  std::optional<Frame> f;
  const std::string what = type_name(type);
  // Bytes waiting before a request are a frame nobody asked for (§3: exactly one answer to each
  // request, nothing unasked). Read as the next answer, a duplicate would be a wrong token (found
  // by an outside tester: exit 1 for a chip whose every token was right).
  if (!last_request_.empty() && conn_->has_input_now()) {
    std::string sent;
    try {
      const std::optional<Frame> extra = conn_->read_frame(deadline(1.0));
      if (extra) sent = "a " + type_name(extra->type) + " frame";
    } catch (const StrayText& e) {
      sent = "text (\"" + e.line() + "\"; print debug output to stderr)";
    } catch (const std::exception& e) {
      sent = std::string("bytes that are no frame (") + e.what() + ")";
    }
    if (!sent.empty()) {
      conn_->kill_peer();
      if (fault_.empty()) out_of_step_ = true;
      fail("sent " + sent + " nobody asked for, after its answer to " + last_request_ +
           " (a chip answers each request with exactly one response and sends nothing unasked, dut-protocol.md §3)");
    }
  }
  last_request_ = request_text(type, payload);
  try {
    const auto until = deadline(timeout_s);
    conn_->write_frame(type, payload, until);
    f = conn_->read_frame(until);
  } catch (const Stopped& e) {
    // The session is broken mid-request: the chip process goes at once (no BYE, no grace).
    conn_->kill_peer();
    fail("stopped by SIGINT, SIGTERM or SIGHUP while waiting on " + what + " (" + e.what() + ")");
  } catch (const Timeout& e) {
    conn_->kill_peer();
    // a chip that is only slow reads the same as a stopped one: what tells them apart is said
    // (found by the re-test: the line gave no hint that a larger --dut-timeout would do)
    const bool steps = type == kStep || type == kForced || type == kFree;
    fail("no answer to " + request_text(type, payload) + " within " +
         (type == kHello ? "--dut-start-timeout " : "--dut-timeout ") + format::json_text(json(timeout_s)) + " s (" + e.what() +
         ")" +
         (steps ? "; a chip that is slow, not stopped, needs a --dut-timeout of more than 64 times its seconds a step "
                  "(dut-protocol.md §5)"
                : ""));
  } catch (const StrayText& e) {
    fail("wrote text where a frame belongs, in answer to " + what + ": \"" + e.line() + "\" (" +
         (config_.command.empty() ? "a chip must write only frames to its connection; write debug output elsewhere"
                                  : "a chip must write only frames to its stdout; print debug output to stderr") +
         ")");
  } catch (const Malformed& e) {
    fail(std::string("malformed frame in answer to ") + what + ": " + e.what());
  } catch (const TransportError& e) {
    const std::string st = conn_->exit_status(std::chrono::milliseconds(2000));
    fail(std::string(e.what()) + (st.empty() ? "" : " (the chip process " + st + exit_hint(st, config_.command, config_.workdir) + ")"));
  }
  if (!f) {
    const std::string st = conn_->exit_status(std::chrono::milliseconds(2000));
    fail(conn_->peer() + " closed its side during " + request_text(type, payload) +
         (st.empty() ? "" : " (the chip process " + st + exit_hint(st, config_.command, config_.workdir) + ")"));
  }
  if (f->type == kError) {
    try {
      const auto [code, message] = decode_error(f->payload);
      // An ERROR answer to a step request leaves the session open (§3.10): the engine may look for
      // the wrong token it followed (continue_after_error).
      // A refused login names the option that gives the secret (§9).
      std::string hint;
      if (type == kHello && code == kAuthFailed)
        hint = config_.token_file.empty()
                   ? " (the chip asks for a secret: give its token file with --dut-token-file FILE)"
                   : " (--dut-token-file " + config_.token_file.string() + " is not the chip's secret)";
      // the chip's text, its control bytes and bytes that are not UTF-8 escaped (§2 "str"; found
      // by an outside tester: 0xff 0xfe went to the terminal raw)
      fail("answered " + what + " with ERROR " + std::to_string(code) + " (" + error_code_name(code) +
               "): " + format::escape_controls(message) + hint,
           type == kStep || type == kForced || type == kFree);
    } catch (const Malformed& e) {
      fail(std::string("malformed ERROR frame in answer to ") + what + ": " + e.what());
    }
  }
  if (f->type != (kResponse | type)) {
    // Another request's answer: the answers are out of step with the requests (a frame sent
    // twice, or unasked), so the answers before it may not be the ones they seemed.
    if (fault_.empty() && is_answer_type(f->type)) out_of_step_ = true;
    fail("answered " + what + " with " + type_name(f->type) + " (expected " + type_name(kResponse | type) + ")" +
         (is_answer_type(f->type) ? ": another request's answer (the chip's answers may be out of step with the requests: "
                                    "a frame sent twice, or unasked)"
                                  : ""));
  }
  return std::move(f->payload);
}

std::optional<Frame> DutBackend::raw_exchange(std::uint32_t type, std::span<const std::uint8_t> payload) {
  const auto until = deadline(config_.timeout_s);
  conn_->write_frame(type, payload, until);
  return conn_->read_frame(until);
}

std::string DutBackend::name() const { return "dut"; }

void DutBackend::load(std::shared_ptr<const chip::Chip>) {
  throw chip::UsageError("a chip under test is not loaded from a chip file (it runs in its own executor)");
}

const chip::Chip& DutBackend::chip() const {
  throw chip::UsageError("a chip under test has no chip file");
}

chip::Capabilities DutBackend::capabilities() const {
  chip::Capabilities c;
  c.multi_step = hello_.capabilities & kMultiStep;
  c.probes = hello_.capabilities & kProbes;
  c.hash = hello_.capabilities & kHashCap;
  c.save_restore = hello_.capabilities & kSaveRestore;
  c.audit = false;
  return c;
}

std::optional<std::uint32_t> DutBackend::own_token_id(std::uint32_t token) const {
  if (vocab_.is_identity()) return std::nullopt;
  if (!(token & format::kUnmappedChipId) && token >= format::vocab_size()) return std::nullopt;
  const std::uint32_t id = vocab_.to_chip(token);
  if (id >= hello_.vocab_size) return std::nullopt;  // a token the map does not name (the chip's own vocab_size)
  return id;
}

std::uint32_t DutBackend::vocab_size() const { return format::vocab_size(); }

std::uint32_t DutBackend::preferred_chunk() const { return kHarnessChunk; }

chip::ProbeMap DutBackend::probe_map() const {
  if (!(hello_.capabilities & kProbes)) throw chip::UsageError("the chip under test has no probes (PROBES capability)");
  if (!probe_map_) {
    const auto p = request(kProbeMap, {});
    try {
      probe_map_ = decode_probe_map(p);
    } catch (const Malformed& e) {
      fail(std::string("malformed frame in answer to PROBE_MAP: ") + e.what());
    }
  }
  return *probe_map_;
}

void DutBackend::set_num_streams(std::size_t n) {
  if (n == 0 || n > hello_.max_streams) {
    throw chip::UsageError("the chip under test runs 1.." + std::to_string(hello_.max_streams) + " streams, not " +
                           std::to_string(n) + " (its max_streams)");
  }
  request(kStreams, encode_u32(static_cast<std::uint32_t>(n)));
  steps_.assign(n, 0);
}

void DutBackend::check_stream(chip::StreamId s, const char* what) const {
  if (s >= steps_.size()) {
    throw chip::UsageError(std::string(what) + ": stream " + std::to_string(s) + " out of range (" +
                           std::to_string(steps_.size()) + " streams)");
  }
}

void DutBackend::reset(chip::StreamId s, const chip::GuestImage& image) {
  check_stream(s, "reset");
  request(kReset, encode_reset(s, image));
  steps_[s] = 0;
}

chip::Token DutBackend::from_chip(std::uint32_t id, chip::StreamId s, std::uint64_t step) const {
  const auto t = vocab_.to_spec(id);
  if (!t) {
    // Like an ERROR answer, the session goes on: the engine looks for a wrong token of the same
    // request that the bad id hid (found by an outside tester: a wrong token at step 203 was lost
    // behind a bad id at step 448 of the same answer).
    fail("predicted id " + std::to_string(id) + " at stream " + std::to_string(s) + " step " + std::to_string(step) +
             ", which is not below the vocab_size " + std::to_string(hello_.vocab_size) + " the chip announced in HELLO_OK",
         true);
  }
  return *t;
}

void DutBackend::step_batch(std::span<const chip::StreamId> streams, std::span<const chip::Token> inputs,
                            std::span<chip::Token> out) {
  if (streams.size() != inputs.size() || streams.size() != out.size()) {
    throw chip::UsageError("step_batch: spans of different lengths");
  }
  if (streams.empty()) return;
  std::vector<StepEntry> e(streams.size());
  for (std::size_t i = 0; i < streams.size(); ++i) {
    check_stream(streams[i], "step");
    e[i] = {streams[i], vocab_.to_chip(inputs[i])};
  }
  const auto p = request(kStep, encode_step(e));
  std::vector<std::uint32_t> ids;
  try {
    ids = decode_tokens(p);
  } catch (const Malformed& ex) {
    fail(std::string("malformed frame in answer to STEP: ") + ex.what());
  }
  if (ids.size() != streams.size()) {
    const bool copy = repeats_last_answer(ids.size());
    fail("answered STEP of " + std::to_string(streams.size()) + (streams.size() == 1 ? " stream" : " streams") +
             " with " + std::to_string(ids.size()) + (ids.size() == 1 ? " token" : " tokens") + " (the wrong batch size" +
             (copy ? kCopyNote : ")"),
         !copy);
  }
  last_answer_tokens_ = ids.size();
  for (std::size_t i = 0; i < streams.size(); ++i) out[i] = from_chip(ids[i], streams[i], ++steps_[streams[i]]);
}

void DutBackend::teacher_forced_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                                      std::span<const chip::Token> inputs, std::span<chip::Token> out) {
  if (!(hello_.capabilities & kMultiStep)) {
    ChipBackend::teacher_forced_batch(streams, counts, inputs, out);
    return;
  }
  // Entry i's tokens start at base[i]; each frame carries at most kHarnessChunk steps of each.
  const std::size_t n = streams.size();
  std::vector<std::size_t> base(n), done(n, 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    check_stream(streams[i], "teacher_forced_batch");
    base[i] = total;
    total += counts[i];
  }
  if (inputs.size() != total || out.size() != total) throw chip::UsageError("teacher_forced_batch: spans do not match counts");
  for (;;) {
    std::vector<MultiEntry> e;
    std::vector<std::uint32_t> in;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t c = std::min<std::uint32_t>(counts[i] - static_cast<std::uint32_t>(done[i]), kHarnessChunk);
      if (c == 0) continue;
      e.push_back({streams[i], c, 0});
      which.push_back(i);
      for (std::uint32_t k = 0; k < c; ++k) in.push_back(vocab_.to_chip(inputs[base[i] + done[i] + k]));
    }
    if (e.empty()) return;
    const auto p = request(kForced, encode_forced(e, in));
    std::vector<std::uint32_t> ids;
    try {
      ids = decode_tokens(p);
    } catch (const Malformed& ex) {
      fail(std::string("malformed frame in answer to FORCED: ") + ex.what());
    }
    if (ids.size() != in.size()) {
      const bool copy = repeats_last_answer(ids.size());
      fail("answered FORCED of " + std::to_string(in.size()) + " steps with " + std::to_string(ids.size()) +
               " tokens (the wrong batch size" + (copy ? kCopyNote : ")"),
           !copy);
    }
    last_answer_tokens_ = ids.size();
    std::size_t at = 0;
    for (std::size_t k = 0; k < e.size(); ++k) {
      const std::size_t i = which[k];
      for (std::uint32_t j = 0; j < e[k].count; ++j)
        out[base[i] + done[i] + j] = from_chip(ids[at++], streams[i], ++steps_[streams[i]]);
      done[i] += e[k].count;
    }
  }
}

void DutBackend::free_running_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                                    std::span<const chip::Token> first, std::span<chip::Token> out) {
  if (!(hello_.capabilities & kMultiStep)) {
    ChipBackend::free_running_batch(streams, counts, first, out);
    return;
  }
  const std::size_t n = streams.size();
  std::vector<std::size_t> base(n), done(n, 0);
  std::vector<std::uint32_t> next(n);  // the chip's id each entry consumes next
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    check_stream(streams[i], "free_running_batch");
    base[i] = total;
    total += counts[i];
    next[i] = vocab_.to_chip(first[i]);
  }
  if (first.size() != n || out.size() != total) throw chip::UsageError("free_running_batch: spans do not match counts");
  for (;;) {
    std::vector<MultiEntry> e;
    std::vector<std::size_t> which;
    std::size_t steps = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t c = std::min<std::uint32_t>(counts[i] - static_cast<std::uint32_t>(done[i]), kHarnessChunk);
      if (c == 0) continue;
      e.push_back({streams[i], c, next[i]});
      which.push_back(i);
      steps += c;
    }
    if (e.empty()) return;
    const auto p = request(kFree, encode_free(e));
    std::vector<std::uint32_t> ids;
    try {
      ids = decode_tokens(p);
    } catch (const Malformed& ex) {
      fail(std::string("malformed frame in answer to FREE: ") + ex.what());
    }
    if (ids.size() != steps) {
      const bool copy = repeats_last_answer(ids.size());
      fail("answered FREE of " + std::to_string(steps) + " steps with " + std::to_string(ids.size()) +
               " tokens (the wrong batch size" + (copy ? kCopyNote : ")"),
           !copy);
    }
    last_answer_tokens_ = ids.size();
    std::size_t at = 0;
    for (std::size_t k = 0; k < e.size(); ++k) {
      const std::size_t i = which[k];
      for (std::uint32_t j = 0; j < e[k].count; ++j) {
        next[i] = ids[at];
        out[base[i] + done[i] + j] = from_chip(ids[at++], streams[i], ++steps_[streams[i]]);
      }
      done[i] += e[k].count;
    }
  }
}

std::uint64_t DutBackend::hash(chip::StreamId s) const {
  check_stream(s, "hash");
  if (!(hello_.capabilities & kHashCap)) throw chip::UsageError("the chip under test has no state hash (HASH capability)");
  const auto p = request(kHash, encode_u32(s));
  try {
    return decode_u64(p, "HASH_OK");
  } catch (const Malformed& e) {
    fail(std::string("malformed frame in answer to HASH: ") + e.what());
  }
}

std::vector<std::uint8_t> DutBackend::save(chip::StreamId s) const {
  check_stream(s, "save");
  if (!(hello_.capabilities & kSaveRestore)) {
    throw chip::UsageError("the chip under test cannot save streams (SAVE_RESTORE capability)");
  }
  const auto p = request(kSave, encode_u32(s));
  std::vector<std::uint8_t> blob;
  try {
    blob = decode_blob(p);
  } catch (const Malformed& e) {
    fail(std::string("malformed frame in answer to SAVE: ") + e.what());
  }
  std::vector<std::uint8_t> out(16 + blob.size());
  std::memcpy(out.data(), kBlobMagic, 4);
  std::memcpy(out.data() + 4, &kBlobVersion, 4);
  std::memcpy(out.data() + 8, &steps_[s], 8);
  if (!blob.empty()) std::memcpy(out.data() + 16, blob.data(), blob.size());
  return out;
}

void DutBackend::restore(chip::StreamId s, const std::vector<std::uint8_t>& bytes) {
  check_stream(s, "restore");
  if (!(hello_.capabilities & kSaveRestore)) {
    throw chip::UsageError("the chip under test cannot restore streams (SAVE_RESTORE capability)");
  }
  std::uint32_t version = 0;
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kBlobMagic, 4) != 0) {
    throw chip::FormatError("restore: not a saved stream of a chip under test (no LKDB header)");
  }
  std::memcpy(&version, bytes.data() + 4, 4);
  if (version != kBlobVersion) throw chip::FormatError("restore: saved stream version " + std::to_string(version));
  std::uint64_t steps = 0;
  std::memcpy(&steps, bytes.data() + 8, 8);
  request(kRestore, encode_restore(s, std::span<const std::uint8_t>(bytes).subspan(16)));
  steps_[s] = steps;
}

std::uint64_t DutBackend::steps(chip::StreamId s) const {
  check_stream(s, "steps");
  return steps_[s];
}

void DutBackend::set_probe_recording(bool on) {
  if (!(hello_.capabilities & kProbes)) {
    if (on) throw chip::UsageError("the chip under test has no probes (PROBES capability)");
    return;
  }
  Writer w;
  w.u8(on ? 1 : 0);
  request(kProbeRecord, w.payload());
}

std::vector<float> DutBackend::probe(chip::StreamId s, int layer, chip::Sublayer after, const std::string& field) const {
  check_stream(s, "probe");
  if (!(hello_.capabilities & kProbes)) throw chip::UsageError("the chip under test has no probes (PROBES capability)");
  const auto p = request(kProbe, encode_probe({s, layer, static_cast<std::uint8_t>(after), field}));
  std::vector<float> values;
  try {
    values = decode_values(p);
  } catch (const Malformed& e) {
    fail(std::string("malformed frame in answer to PROBE: ") + e.what());
  }
  // §3.7: the field's `width` values, as its PROBE_MAP_OK said (found by an outside tester: one
  // value for a wider field was taken, and the run said only that the probes did not locate it)
  if (const chip::ProbeMap::Field* f = probe_map_ ? probe_map_->find(field) : nullptr; f && values.size() != f->width)
    fail("malformed answer to PROBE of field " + format::json_text(nlohmann::json(field)) + ": " +
         std::to_string(values.size()) + " values for a field of width " + std::to_string(f->width) +
         " (dut-protocol.md §3.7)");
  return values;
}

void DutBackend::set_audit(bool on) {
  if (on) throw chip::UsageError("a chip under test has no numerics audit (chip-format.md) to turn on");
}

}  // namespace lockstep::dut
