// The chip-under-test protocol, lockstep-dut/1 (docs/spec/dut-protocol.md): frames, limits and
// one encoder and one decoder per message. Plain data, no machine semantics: both the harness
// side (DutBackend) and the chip side (lockstep chip-server) are built on it.
//
// Every decoder reads only inside its payload and checks each count against the limits of §5 and
// against the bytes left before it allocates anything; any violation throws Malformed with one
// line naming the message and the field.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/guest_image.hpp"

namespace lockstep::dut {

inline constexpr std::uint32_t kProtocolVersion = 1;        ///< §3.1
inline constexpr std::string_view kTraceVersion = "trace-v3";

// §2 and §5: limits.
inline constexpr std::uint32_t kMaxPayload = 64u << 20;     ///< bytes of one frame's payload
inline constexpr std::uint32_t kMaxStr = 65535;             ///< bytes of a str
inline constexpr std::uint32_t kMaxEntries = 65536;         ///< entries of STEP/FORCED/FREE
inline constexpr std::uint32_t kMaxTotalSteps = 4194304;    ///< Σ count of one FORCED/FREE
inline constexpr std::uint32_t kMaxSegments = 4096;
inline constexpr std::uint32_t kMaxSections = 4096;
inline constexpr std::uint32_t kMaxMapItems = 65536;        ///< fields, points, writers of PROBE_MAP_OK
inline constexpr std::uint32_t kMaxBlob = kMaxPayload - 4;
/// Steps per stream of one FORCED/FREE frame the harness sends (§5).
inline constexpr std::uint32_t kHarnessChunk = 4096;

/// Message types (§3). The success response to request T is kResponse | T.
enum Type : std::uint32_t {
  kHello = 1,
  kStreams = 2,
  kReset = 3,
  kStep = 4,
  kForced = 5,
  kFree = 6,
  kProbeMap = 7,
  kProbeRecord = 8,
  kProbe = 9,
  kHash = 10,
  kSave = 11,
  kRestore = 12,
  kBye = 13,
  kError = 0xFFFF,
  kResponse = 0x8000,
};
/// "HELLO", "TOKENS (FORCED)", "ERROR", or "type 0x1234" for an unknown type.
std::string type_name(std::uint32_t type);
/// Whether `type` is a chip's answer (§3): ERROR, or kResponse | T for a request type T.
bool is_answer_type(std::uint32_t type);
/// A request as error messages name it: type_name(type), and for STEP, FORCED and FREE the steps
/// it asks for: "FORCED of 256 steps (1 stream)", "STEP of 1 step (4 streams)". A payload too
/// short to tell gives type_name(type) alone.
std::string request_text(std::uint32_t type, std::span<const std::uint8_t> payload);

/// Capability bits of HELLO_OK (§3.1).
enum Capability : std::uint32_t {
  kMultiStep = 1u << 0,
  kProbes = 1u << 1,
  kHashCap = 1u << 2,
  kSaveRestore = 1u << 3,
};
/// "MULTI_STEP, HASH" (or "none").
std::string capability_names(std::uint32_t bits);

/// ERROR codes (§3.10).
enum ErrorCode : std::uint32_t {
  kMalformed = 1,
  kBadArgument = 2,
  kUnsupported = 3,
  kBadImage = 4,
  kAuthFailed = 5,
  kBadVersion = 6,
  kInternal = 7,
};
/// "malformed frame", "bad argument", ... ("code N" for unknown codes).
std::string error_code_name(std::uint32_t code);

/// A frame or payload that breaks §2 or §5 (ERROR code 1). what() is one line.
class Malformed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One frame: its type and payload.
struct Frame {
  std::uint32_t type = 0;
  std::vector<std::uint8_t> payload;
};

/// The 8 header bytes plus payload of a frame. Throws std::length_error past kMaxPayload.
std::vector<std::uint8_t> encode_frame(std::uint32_t type, std::span<const std::uint8_t> payload);

/// Bounds-checked, in-order reader of one payload's fields (§2).
class Reader {
 public:
  Reader(std::span<const std::uint8_t> payload, std::string what) : b_(payload), what_(std::move(what)) {}
  std::uint8_t u8(const char* field);
  std::uint32_t u32(const char* field);
  std::int32_t i32(const char* field);
  std::uint64_t u64(const char* field);
  float f32(const char* field);
  /// A list's u32 count: at most `limit`, and count * min_item_bytes within the bytes left.
  std::uint32_t count(const char* field, std::uint32_t limit, std::size_t min_item_bytes);
  /// A `bytes` field of at most `limit` bytes.
  std::vector<std::uint8_t> bytes(const char* field, std::uint32_t limit = kMaxPayload);
  /// A `str` field (at most kMaxStr bytes of UTF-8; the UTF-8 is not validated).
  std::string str(const char* field);
  /// n little-endian u32 values.
  std::vector<std::uint32_t> u32s(std::size_t n, const char* field);
  std::size_t remaining() const { return b_.size() - pos_; }
  /// Throws Malformed when bytes are left over after the last field.
  void done() const;

 private:
  const std::uint8_t* take(std::size_t n, const char* field);
  std::span<const std::uint8_t> b_;
  std::size_t pos_ = 0;
  std::string what_;
};

/// Builds one payload field by field.
class Writer {
 public:
  Writer& u8(std::uint8_t v);
  Writer& u32(std::uint32_t v);
  Writer& i32(std::int32_t v);
  Writer& u64(std::uint64_t v);
  Writer& f32(float v);
  Writer& bytes(std::span<const std::uint8_t> v);
  /// Throws std::length_error when longer than kMaxStr.
  Writer& str(std::string_view v);
  Writer& u32s(std::span<const std::uint32_t> v);
  std::vector<std::uint8_t>& payload() { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

// ------------------------------------------------------------------------------------ messages

/// HELLO (§3.1).
struct Hello {
  std::uint32_t protocol_version = kProtocolVersion;
  std::string trace_version{kTraceVersion};
  std::string auth;
};
std::vector<std::uint8_t> encode_hello(const Hello& h);
Hello decode_hello(std::span<const std::uint8_t> payload);

/// HELLO_OK (§3.1): what the chip announces.
struct HelloOk {
  std::uint32_t protocol_version = kProtocolVersion;
  std::string trace_version{kTraceVersion};
  std::uint32_t vocab_size = 0;
  std::uint32_t max_streams = 1;
  std::uint32_t capabilities = 0;
  std::string name;
  std::string identity;
};
std::vector<std::uint8_t> encode_hello_ok(const HelloOk& h);
HelloOk decode_hello_ok(std::span<const std::uint8_t> payload);

/// A payload of one u32 (STREAMS, HASH, SAVE requests) / one u64 (HASH_OK) / one u8
/// (PROBE_RECORD); `what` names the message in errors.
std::vector<std::uint8_t> encode_u32(std::uint32_t v);
std::uint32_t decode_u32(std::span<const std::uint8_t> payload, const char* what);
std::vector<std::uint8_t> encode_u64(std::uint64_t v);
std::uint64_t decode_u64(std::span<const std::uint8_t> payload, const char* what);
std::uint8_t decode_u8(std::span<const std::uint8_t> payload, const char* what);
/// Throws Malformed unless the payload is empty.
void decode_empty(std::span<const std::uint8_t> payload, const char* what);

/// RESET (§3.3). decode_reset throws Malformed for a section name given twice only when
/// `reject_repeats` is false; with it true the repeat is reported through `repeated` instead.
std::vector<std::uint8_t> encode_reset(std::uint32_t stream, const chip::GuestImage& image);
struct Reset {
  std::uint32_t stream = 0;
  chip::GuestImage image;
  std::string repeated_section;  ///< non-empty: a section name that appeared twice (ERROR 4)
};
Reset decode_reset(std::span<const std::uint8_t> payload);

/// STEP (§3.4): (stream, input) pairs.
struct StepEntry {
  std::uint32_t stream = 0;
  std::uint32_t input = 0;
};
std::vector<std::uint8_t> encode_step(std::span<const StepEntry> entries);
std::vector<StepEntry> decode_step(std::span<const std::uint8_t> payload);

/// FORCED (§3.5) and FREE (§3.6): entries (stream, count[, first]); FORCED's inputs follow,
/// entry by entry (Σ count tokens).
struct MultiEntry {
  std::uint32_t stream = 0;
  std::uint32_t count = 0;
  std::uint32_t first = 0;  ///< FREE only
};
std::vector<std::uint8_t> encode_forced(std::span<const MultiEntry> entries, std::span<const std::uint32_t> inputs);
/// Throws Malformed when Σ count exceeds kMaxTotalSteps.
void decode_forced(std::span<const std::uint8_t> payload, std::vector<MultiEntry>& entries,
                   std::vector<std::uint32_t>& inputs);
std::vector<std::uint8_t> encode_free(std::span<const MultiEntry> entries);
std::vector<MultiEntry> decode_free(std::span<const std::uint8_t> payload);

/// TOKENS: list<u32>.
std::vector<std::uint8_t> encode_tokens(std::span<const std::uint32_t> tokens);
std::vector<std::uint32_t> decode_tokens(std::span<const std::uint8_t> payload);

/// PROBE_MAP_OK (§3.7) <-> chip::ProbeMap (fields by index on the wire, by name in ProbeMap).
/// decode throws Malformed for an index out of range or a sublayer/after outside 0..2.
std::vector<std::uint8_t> encode_probe_map(const chip::ProbeMap& map);
chip::ProbeMap decode_probe_map(std::span<const std::uint8_t> payload);

/// PROBE (§3.7).
struct ProbeRequest {
  std::uint32_t stream = 0;
  std::int32_t layer = -1;
  std::uint8_t after = 0;  ///< 0 embed, 1 memory, 2 MLP
  std::string field;
};
std::vector<std::uint8_t> encode_probe(const ProbeRequest& p);
ProbeRequest decode_probe(std::span<const std::uint8_t> payload);
/// VALUES: list<f32>.
std::vector<std::uint8_t> encode_values(std::span<const float> values);
std::vector<float> decode_values(std::span<const std::uint8_t> payload);

/// BLOB (SAVE's answer) and RESTORE (§3.9).
std::vector<std::uint8_t> encode_blob(std::span<const std::uint8_t> blob);
std::vector<std::uint8_t> decode_blob(std::span<const std::uint8_t> payload);
std::vector<std::uint8_t> encode_restore(std::uint32_t stream, std::span<const std::uint8_t> blob);
std::pair<std::uint32_t, std::vector<std::uint8_t>> decode_restore(std::span<const std::uint8_t> payload);

/// ERROR (§3.10): code and one-line message (newlines folded, at most 4,096 bytes).
std::vector<std::uint8_t> encode_error(std::uint32_t code, std::string_view message);
std::pair<std::uint32_t, std::string> decode_error(std::span<const std::uint8_t> payload);

/// Decodes any harness request by type, for the fuzz target and the chip side: throws Malformed
/// for an unknown type or a bad payload; returns normally for a valid one.
void decode_request(std::uint32_t type, std::span<const std::uint8_t> payload);
/// Decodes any chip response to request `request_type` (its success type or ERROR), the same way.
void decode_response(std::uint32_t request_type, std::uint32_t type, std::span<const std::uint8_t> payload);

}  // namespace lockstep::dut
