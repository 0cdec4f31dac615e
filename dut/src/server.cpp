#include "lockstep/dut/server.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "lockstep/chip/error.hpp"

namespace lockstep::dut {

namespace {

// An answer the session sends instead of a success response.
struct Refusal {
  std::uint32_t code;
  std::string message;
};

constexpr auto kForever = std::chrono::hours(24 * 365);

class Session {
 public:
  Session(Connection& c, const std::function<std::unique_ptr<chip::ChipBackend>()>& make, const ServerOptions& o)
      : conn_(c), make_(make), opt_(o) {}

  SessionStats run() {
    for (;;) {
      std::optional<Frame> f;
      try {
        f = conn_.read_frame(Connection::Clock::now() + kForever);
      } catch (const Malformed& e) {
        // The frame boundary is lost (§2): answer and end the session.
        send_error(kMalformed, e.what());
        ++stats_.errors;
        stats_.ended = std::string("malformed input: ") + e.what();  // what the peer was told
        return stats_;
      }
      if (!f) {
        stats_.ended = "end of stream";
        return stats_;
      }
      ++stats_.frames;
      const std::uint32_t type = f->type;
      std::vector<std::uint8_t> answer;
      std::optional<Refusal> refusal;
      try {
        answer = handle(type, f->payload);
      } catch (const Refusal& r) {
        refusal = r;
      } catch (const Malformed& e) {
        refusal = Refusal{kMalformed, e.what()};
      } catch (const chip::ImageError& e) {
        refusal = Refusal{kBadImage, e.what()};
      } catch (const chip::FormatError& e) {
        refusal = Refusal{kBadImage, e.what()};
      } catch (const chip::UsageError& e) {
        refusal = Refusal{kBadArgument, e.what()};
      } catch (const std::exception& e) {
        refusal = Refusal{kInternal, e.what()};
      }
      if (refusal) {
        ++stats_.errors;
        if (type == kHello && !stats_.accepted) stats_.hello_refused = refusal->message;
        send_error(refusal->code, refusal->message);
        if (refusal->code == kAuthFailed) {
          stats_.ended = "authentication failed";
          return stats_;
        }
        continue;
      }
      conn_.write_frame(kResponse | type, answer, Connection::Clock::now() + kForever);
      if (type == kBye) {
        stats_.said_bye = true;
        stats_.ended = "BYE";
        return stats_;
      }
    }
  }

 private:
  void send_error(std::uint32_t code, const std::string& message) {
    conn_.write_frame(kError, encode_error(code, message), Connection::Clock::now() + kForever);
  }

  [[noreturn]] static void refuse(std::uint32_t code, std::string message) { throw Refusal{code, std::move(message)}; }

  void need_stream(std::uint32_t s, bool reset_needed) const {
    if (s >= was_reset_.size()) {
      refuse(kBadArgument, "stream " + std::to_string(s) + " does not exist (" + std::to_string(was_reset_.size()) +
                               " streams; send STREAMS first)");
    }
    if (reset_needed && !was_reset_[s]) refuse(kBadArgument, "stream " + std::to_string(s) + " was not reset");
  }

  void need_token(std::uint32_t t) const {
    if (t >= backend_->vocab_size()) {
      refuse(kBadArgument, "token id " + std::to_string(t) + " is not below vocab_size " +
                               std::to_string(backend_->vocab_size()));
    }
  }

  // Streams of a STEP/FORCED/FREE: at most max_streams entries (a malformed frame), at least one,
  // distinct, existing and reset (bad arguments).
  void need_entries(const std::vector<std::uint32_t>& streams, const char* what) const {
    if (streams.size() > opt_.max_streams) {
      refuse(kMalformed, std::string(what) + ": " + std::to_string(streams.size()) + " entries exceed max_streams " +
                             std::to_string(opt_.max_streams));
    }
    if (streams.empty()) refuse(kBadArgument, std::string(what) + ": no entries");
    std::set<std::uint32_t> seen;
    for (std::uint32_t s : streams) {
      need_stream(s, true);
      if (!seen.insert(s).second) refuse(kBadArgument, std::string(what) + ": stream " + std::to_string(s) + " twice");
    }
  }

  void need_capability(bool has, const char* name) const {
    if (!has) refuse(kUnsupported, std::string("this chip has no ") + name + " capability");
  }

  std::vector<std::uint8_t> handle(std::uint32_t type, const std::vector<std::uint8_t>& p) {
    if (type == kHello) {
      stats_.hello = true;
      const Hello h = decode_hello(p);
      if (backend_) refuse(kMalformed, "a second HELLO in one session");
      if (h.protocol_version != kProtocolVersion) {
        refuse(kBadVersion, "this chip speaks protocol version " + std::to_string(kProtocolVersion) + ", not " +
                                std::to_string(h.protocol_version));
      }
      if (h.trace_version != kTraceVersion) {
        refuse(kBadVersion, "this chip speaks " + std::string(kTraceVersion) + ", not '" + h.trace_version + "'");
      }
      if (!opt_.auth.empty() && h.auth != opt_.auth) refuse(kAuthFailed, "authentication failed");
      backend_ = make_();
      caps_ = backend_->capabilities();
      caps_.probes = caps_.probes && (opt_.capabilities & kProbes);
      caps_.hash = caps_.hash && (opt_.capabilities & kHashCap);
      caps_.save_restore = caps_.save_restore && (opt_.capabilities & kSaveRestore);
      HelloOk ok;
      ok.vocab_size = backend_->vocab_size();
      ok.max_streams = opt_.max_streams;
      ok.capabilities = (opt_.capabilities & std::uint32_t{kMultiStep}) | (caps_.probes ? std::uint32_t{kProbes} : 0u) |
                        (caps_.hash ? std::uint32_t{kHashCap} : 0u) |
                        (caps_.save_restore ? std::uint32_t{kSaveRestore} : 0u);
      ok.name = opt_.name + " (" + backend_->name() + ")";
      ok.identity = opt_.identity.empty() ? backend_->identity() : opt_.identity;
      stats_.accepted = true;
      return encode_hello_ok(ok);
    }
    if (!backend_) {
      decode_request(type, p);  // an unknown type is named as such
      refuse(kMalformed, type_name(type) + " before HELLO");
    }
    switch (type) {
      case kStreams: {
        const std::uint32_t n = decode_u32(p, "STREAMS");
        if (n == 0 || n > opt_.max_streams) {
          refuse(kBadArgument, "STREAMS " + std::to_string(n) + ": must be 1.." + std::to_string(opt_.max_streams));
        }
        backend_->set_num_streams(n);
        was_reset_.assign(n, false);
        return {};
      }
      case kReset: {
        Reset r = decode_reset(p);
        need_stream(r.stream, false);
        if (!r.repeated_section.empty()) refuse(kBadImage, "section '" + r.repeated_section + "' appears twice");
        backend_->reset(r.stream, r.image);
        was_reset_[r.stream] = true;
        return {};
      }
      case kStep: {
        const std::vector<StepEntry> e = decode_step(p);
        std::vector<std::uint32_t> streams, inputs;
        for (const StepEntry& x : e) {
          streams.push_back(x.stream);
          inputs.push_back(x.input);
        }
        need_entries(streams, "STEP");
        for (std::uint32_t t : inputs) need_token(t);
        std::vector<std::uint32_t> out(e.size());
        backend_->step_batch(streams, inputs, out);
        stats_.steps += e.size();
        return encode_tokens(out);
      }
      case kForced: {
        need_capability(opt_.capabilities & kMultiStep, "MULTI_STEP");
        std::vector<MultiEntry> e;
        std::vector<std::uint32_t> inputs;
        decode_forced(p, e, inputs);
        std::vector<std::uint32_t> streams, counts;
        for (const MultiEntry& x : e) {
          if (x.count == 0) refuse(kBadArgument, "FORCED: stream " + std::to_string(x.stream) + " with count 0");
          streams.push_back(x.stream);
          counts.push_back(x.count);
        }
        need_entries(streams, "FORCED");
        for (std::uint32_t t : inputs) need_token(t);
        std::vector<std::uint32_t> out(inputs.size());
        backend_->teacher_forced_batch(streams, counts, inputs, out);
        stats_.steps += out.size();
        return encode_tokens(out);
      }
      case kFree: {
        need_capability(opt_.capabilities & kMultiStep, "MULTI_STEP");
        const std::vector<MultiEntry> e = decode_free(p);
        std::vector<std::uint32_t> streams, counts, first;
        std::size_t total = 0;
        for (const MultiEntry& x : e) {
          if (x.count == 0) refuse(kBadArgument, "FREE: stream " + std::to_string(x.stream) + " with count 0");
          need_token(x.first);
          streams.push_back(x.stream);
          counts.push_back(x.count);
          first.push_back(x.first);
          total += x.count;
        }
        need_entries(streams, "FREE");
        std::vector<std::uint32_t> out(total);
        backend_->free_running_batch(streams, counts, first, out);
        stats_.steps += total;
        return encode_tokens(out);
      }
      case kProbeMap:
        decode_empty(p, "PROBE_MAP");
        need_capability(caps_.probes, "PROBES");
        return encode_probe_map(backend_->probe_map());
      case kProbeRecord: {
        const std::uint8_t on = decode_u8(p, "PROBE_RECORD");
        need_capability(caps_.probes, "PROBES");
        if (on > 1) refuse(kBadArgument, "PROBE_RECORD " + std::to_string(on) + ": must be 0 or 1");
        backend_->set_probe_recording(on == 1);
        return {};
      }
      case kProbe: {
        const ProbeRequest r = decode_probe(p);
        need_capability(caps_.probes, "PROBES");
        need_stream(r.stream, true);
        if (r.after > 2) refuse(kBadArgument, "PROBE: after " + std::to_string(r.after) + " is not 0, 1 or 2");
        const auto values = backend_->probe(r.stream, r.layer, static_cast<chip::Sublayer>(r.after), r.field);
        return encode_values(values);
      }
      case kHash: {
        const std::uint32_t s = decode_u32(p, "HASH");
        need_capability(caps_.hash, "HASH");
        need_stream(s, true);
        return encode_u64(backend_->hash(s));
      }
      case kSave: {
        const std::uint32_t s = decode_u32(p, "SAVE");
        need_capability(caps_.save_restore, "SAVE_RESTORE");
        need_stream(s, true);
        return encode_blob(backend_->save(s));
      }
      case kRestore: {
        auto [s, blob] = decode_restore(p);
        need_capability(caps_.save_restore, "SAVE_RESTORE");
        need_stream(s, false);
        backend_->restore(s, blob);
        was_reset_[s] = true;
        return {};
      }
      case kBye:
        decode_empty(p, "BYE");
        return {};
      default:
        refuse(kMalformed, "unknown request " + type_name(type));
    }
  }

  Connection& conn_;
  const std::function<std::unique_ptr<chip::ChipBackend>()>& make_;
  const ServerOptions& opt_;
  std::unique_ptr<chip::ChipBackend> backend_;
  chip::Capabilities caps_;
  std::vector<bool> was_reset_;
  SessionStats stats_;
};

}  // namespace

SessionStats serve_session(Connection& conn, const std::function<std::unique_ptr<chip::ChipBackend>()>& make_backend,
                           const ServerOptions& options) {
  return Session(conn, make_backend, options).run();
}

}  // namespace lockstep::dut
