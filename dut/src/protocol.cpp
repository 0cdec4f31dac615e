#include "lockstep/dut/protocol.h"

#include <bit>
#include <cstdio>
#include <cstring>

namespace lockstep::dut {

namespace {

static_assert(std::endian::native == std::endian::little, "the protocol codec assumes a little-endian host");

std::string hex(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

const char* request_name(std::uint32_t t) {
  switch (t) {
    case kHello: return "HELLO";
    case kStreams: return "STREAMS";
    case kReset: return "RESET";
    case kStep: return "STEP";
    case kForced: return "FORCED";
    case kFree: return "FREE";
    case kProbeMap: return "PROBE_MAP";
    case kProbeRecord: return "PROBE_RECORD";
    case kProbe: return "PROBE";
    case kHash: return "HASH";
    case kSave: return "SAVE";
    case kRestore: return "RESTORE";
    case kBye: return "BYE";
    default: return nullptr;
  }
}

const char* response_name(std::uint32_t request) {
  switch (request) {
    case kHello: return "HELLO_OK";
    case kStep: case kForced: case kFree: return "TOKENS";
    case kProbeMap: return "PROBE_MAP_OK";
    case kProbe: return "VALUES";
    case kHash: return "HASH_OK";
    case kSave: return "BLOB";
    default: return "OK";
  }
}

}  // namespace

bool is_answer_type(std::uint32_t type) {
  return type == kError || ((type & kResponse) != 0 && request_name(type & ~static_cast<std::uint32_t>(kResponse)) != nullptr);
}

std::string type_name(std::uint32_t type) {
  if (type == kError) return "ERROR";
  if (const char* n = request_name(type)) return n;
  if (type & kResponse) {
    const std::uint32_t req = type & ~static_cast<std::uint32_t>(kResponse);
    if (const char* n = request_name(req)) return std::string(response_name(req)) + " (" + n + ")";
  }
  return "type " + hex(type);
}

std::string request_text(std::uint32_t type, std::span<const std::uint8_t> payload) {
  const std::string name = type_name(type);
  if (type != kStep && type != kForced && type != kFree) return name;
  auto u32_at = [&](std::size_t at, std::uint32_t& v) {
    if (at + 4 > payload.size()) return false;
    std::memcpy(&v, payload.data() + at, 4);
    return true;
  };
  std::uint32_t n = 0;
  if (!u32_at(0, n) || n > payload.size()) return name;
  // Entries: STEP (stream, input), FORCED (stream, count), FREE (stream, count, first).
  const std::size_t entry = type == kFree ? 12 : 8;
  std::uint64_t steps = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t count = 1;
    if (type != kStep && !u32_at(4 + entry * i + 4, count)) return name;
    steps += count;
  }
  auto plural = [](std::uint64_t k, const char* what) {
    return std::to_string(k) + " " + what + (k == 1 ? "" : "s");
  };
  return name + " of " + plural(steps, "step") + " (" + plural(n, "stream") + ")";
}

std::string capability_names(std::uint32_t bits) {
  std::string out;
  const std::pair<std::uint32_t, const char*> names[] = {
      {kMultiStep, "MULTI_STEP"}, {kProbes, "PROBES"}, {kHashCap, "HASH"}, {kSaveRestore, "SAVE_RESTORE"}};
  for (const auto& [bit, name] : names) {
    if (!(bits & bit)) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? "none" : out;
}

std::string error_code_name(std::uint32_t code) {
  switch (code) {
    case kMalformed: return "malformed or unexpected frame";
    case kBadArgument: return "bad argument";
    case kUnsupported: return "capability not supported";
    case kBadImage: return "guest image or blob cannot be used";
    case kAuthFailed: return "authentication failed";
    case kBadVersion: return "protocol version not supported";
    case kInternal: return "internal error of the chip";
    default: return "code " + std::to_string(code);
  }
}

std::vector<std::uint8_t> encode_frame(std::uint32_t type, std::span<const std::uint8_t> payload) {
  if (payload.size() > kMaxPayload) {
    throw std::length_error(type_name(type) + ": payload of " + std::to_string(payload.size()) +
                            " bytes exceeds the protocol's limit of " + std::to_string(kMaxPayload));
  }
  std::vector<std::uint8_t> out(8 + payload.size());
  const std::uint32_t len = static_cast<std::uint32_t>(payload.size());
  std::memcpy(out.data(), &type, 4);
  std::memcpy(out.data() + 4, &len, 4);
  if (!payload.empty()) std::memcpy(out.data() + 8, payload.data(), payload.size());
  return out;
}

// ------------------------------------------------------------------------------------ Reader

const std::uint8_t* Reader::take(std::size_t n, const char* field) {
  if (n > remaining()) {
    throw Malformed(what_ + ": " + field + " needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
                    " left");
  }
  const std::uint8_t* p = b_.data() + pos_;
  pos_ += n;
  return p;
}

std::uint8_t Reader::u8(const char* field) { return *take(1, field); }

std::uint32_t Reader::u32(const char* field) {
  std::uint32_t v;
  std::memcpy(&v, take(4, field), 4);
  return v;
}

std::int32_t Reader::i32(const char* field) {
  std::int32_t v;
  std::memcpy(&v, take(4, field), 4);
  return v;
}

std::uint64_t Reader::u64(const char* field) {
  std::uint64_t v;
  std::memcpy(&v, take(8, field), 8);
  return v;
}

float Reader::f32(const char* field) {
  float v;
  std::memcpy(&v, take(4, field), 4);
  return v;
}

std::uint32_t Reader::count(const char* field, std::uint32_t limit, std::size_t min_item_bytes) {
  const std::uint32_t n = u32(field);
  if (n > limit) {
    throw Malformed(what_ + ": " + field + " count " + std::to_string(n) + " exceeds the limit " + std::to_string(limit));
  }
  if (static_cast<std::uint64_t>(n) * min_item_bytes > remaining()) {
    throw Malformed(what_ + ": " + field + " count " + std::to_string(n) + " needs at least " +
                    std::to_string(static_cast<std::uint64_t>(n) * min_item_bytes) + " bytes, " +
                    std::to_string(remaining()) + " left");
  }
  return n;
}

std::vector<std::uint8_t> Reader::bytes(const char* field, std::uint32_t limit) {
  const std::uint32_t n = u32(field);
  if (n > limit) {
    throw Malformed(what_ + ": " + field + " length " + std::to_string(n) + " exceeds the limit " +
                    std::to_string(limit));
  }
  const std::uint8_t* p = take(n, field);
  return std::vector<std::uint8_t>(p, p + n);
}

std::string Reader::str(const char* field) {
  const std::uint32_t n = u32(field);
  if (n > kMaxStr) {
    throw Malformed(what_ + ": " + field + " length " + std::to_string(n) + " exceeds the limit " +
                    std::to_string(kMaxStr));
  }
  const std::uint8_t* p = take(n, field);
  return std::string(reinterpret_cast<const char*>(p), n);
}

std::vector<std::uint32_t> Reader::u32s(std::size_t n, const char* field) {
  if (n > remaining() / 4) {
    throw Malformed(what_ + ": " + field + " needs " + std::to_string(4 * static_cast<std::uint64_t>(n)) + " bytes, " +
                    std::to_string(remaining()) + " left");
  }
  std::vector<std::uint32_t> out(n);
  if (n) std::memcpy(out.data(), take(4 * n, field), 4 * n);
  return out;
}

void Reader::done() const {
  if (remaining()) {
    throw Malformed(what_ + ": " + std::to_string(remaining()) + " bytes left over after the last field");
  }
}

// ------------------------------------------------------------------------------------ Writer

namespace {
template <class T>
void put(std::vector<std::uint8_t>& out, T v) {
  const std::size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}
}  // namespace

Writer& Writer::u8(std::uint8_t v) { out_.push_back(v); return *this; }
Writer& Writer::u32(std::uint32_t v) { put(out_, v); return *this; }
Writer& Writer::i32(std::int32_t v) { put(out_, v); return *this; }
Writer& Writer::u64(std::uint64_t v) { put(out_, v); return *this; }
Writer& Writer::f32(float v) { put(out_, v); return *this; }

Writer& Writer::bytes(std::span<const std::uint8_t> v) {
  if (v.size() > kMaxPayload) throw std::length_error("bytes field of " + std::to_string(v.size()) + " bytes");
  u32(static_cast<std::uint32_t>(v.size()));
  out_.insert(out_.end(), v.begin(), v.end());
  return *this;
}

Writer& Writer::str(std::string_view v) {
  if (v.size() > kMaxStr) throw std::length_error("str of " + std::to_string(v.size()) + " bytes exceeds 65,535");
  return bytes(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(v.data()), v.size()));
}

Writer& Writer::u32s(std::span<const std::uint32_t> v) {
  const std::size_t at = out_.size();
  out_.resize(at + 4 * v.size());
  if (!v.empty()) std::memcpy(out_.data() + at, v.data(), 4 * v.size());
  return *this;
}

// ------------------------------------------------------------------------------------ messages

std::vector<std::uint8_t> encode_hello(const Hello& h) {
  Writer w;
  w.u32(h.protocol_version).str(h.trace_version).str(h.auth);
  return std::move(w.payload());
}

Hello decode_hello(std::span<const std::uint8_t> p) {
  Reader r(p, "HELLO");
  Hello h;
  h.protocol_version = r.u32("protocol_version");
  h.trace_version = r.str("trace_version");
  h.auth = r.str("auth");
  r.done();
  return h;
}

std::vector<std::uint8_t> encode_hello_ok(const HelloOk& h) {
  Writer w;
  w.u32(h.protocol_version).str(h.trace_version).u32(h.vocab_size).u32(h.max_streams).u32(h.capabilities);
  w.str(h.name).str(h.identity);
  return std::move(w.payload());
}

HelloOk decode_hello_ok(std::span<const std::uint8_t> p) {
  Reader r(p, "HELLO_OK");
  HelloOk h;
  h.protocol_version = r.u32("protocol_version");
  h.trace_version = r.str("trace_version");
  h.vocab_size = r.u32("vocab_size");
  h.max_streams = r.u32("max_streams");
  h.capabilities = r.u32("capabilities");
  h.name = r.str("name");
  h.identity = r.str("identity");
  r.done();
  return h;
}

std::vector<std::uint8_t> encode_u32(std::uint32_t v) {
  Writer w;
  w.u32(v);
  return std::move(w.payload());
}

std::uint32_t decode_u32(std::span<const std::uint8_t> p, const char* what) {
  Reader r(p, what);
  const std::uint32_t v = r.u32("value");
  r.done();
  return v;
}

std::vector<std::uint8_t> encode_u64(std::uint64_t v) {
  Writer w;
  w.u64(v);
  return std::move(w.payload());
}

std::uint64_t decode_u64(std::span<const std::uint8_t> p, const char* what) {
  Reader r(p, what);
  const std::uint64_t v = r.u64("value");
  r.done();
  return v;
}

std::uint8_t decode_u8(std::span<const std::uint8_t> p, const char* what) {
  Reader r(p, what);
  const std::uint8_t v = r.u8("value");
  r.done();
  return v;
}

void decode_empty(std::span<const std::uint8_t> p, const char* what) { Reader(p, what).done(); }

std::vector<std::uint8_t> encode_reset(std::uint32_t stream, const chip::GuestImage& image) {
  Writer w;
  w.u32(stream).u64(image.entry).u32(static_cast<std::uint32_t>(image.segments.size()));
  for (const chip::Segment& s : image.segments) w.u64(s.address).bytes(s.bytes);
  w.u32(static_cast<std::uint32_t>(image.sections.size()));
  for (const auto& [name, data] : image.sections) w.str(name).bytes(data);
  return std::move(w.payload());
}

Reset decode_reset(std::span<const std::uint8_t> p) {
  Reader r(p, "RESET");
  Reset out;
  out.stream = r.u32("stream");
  out.image.entry = r.u64("entry");
  const std::uint32_t ns = r.count("segments", kMaxSegments, 12);
  out.image.segments.reserve(ns);
  for (std::uint32_t i = 0; i < ns; ++i) {
    chip::Segment s;
    s.address = r.u64("segment address");
    s.bytes = r.bytes("segment data");
    out.image.segments.push_back(std::move(s));
  }
  const std::uint32_t nc = r.count("sections", kMaxSections, 8);
  for (std::uint32_t i = 0; i < nc; ++i) {
    std::string name = r.str("section name");
    std::vector<std::uint8_t> data = r.bytes("section data");
    if (out.image.sections.count(name) && out.repeated_section.empty()) out.repeated_section = name;
    out.image.sections[name] = std::move(data);
  }
  r.done();
  return out;
}

std::vector<std::uint8_t> encode_step(std::span<const StepEntry> entries) {
  Writer w;
  w.u32(static_cast<std::uint32_t>(entries.size()));
  for (const StepEntry& e : entries) w.u32(e.stream).u32(e.input);
  return std::move(w.payload());
}

std::vector<StepEntry> decode_step(std::span<const std::uint8_t> p) {
  Reader r(p, "STEP");
  const std::uint32_t n = r.count("entries", kMaxEntries, 8);
  std::vector<StepEntry> out(n);
  for (StepEntry& e : out) {
    e.stream = r.u32("entry stream");
    e.input = r.u32("entry input");
  }
  r.done();
  return out;
}

std::vector<std::uint8_t> encode_forced(std::span<const MultiEntry> entries, std::span<const std::uint32_t> inputs) {
  Writer w;
  w.u32(static_cast<std::uint32_t>(entries.size()));
  for (const MultiEntry& e : entries) w.u32(e.stream).u32(e.count);
  w.u32s(inputs);
  return std::move(w.payload());
}

void decode_forced(std::span<const std::uint8_t> p, std::vector<MultiEntry>& entries,
                   std::vector<std::uint32_t>& inputs) {
  Reader r(p, "FORCED");
  const std::uint32_t n = r.count("entries", kMaxEntries, 8);
  entries.assign(n, MultiEntry{});
  std::uint64_t total = 0;
  for (MultiEntry& e : entries) {
    e.stream = r.u32("entry stream");
    e.count = r.u32("entry count");
    total += e.count;
  }
  if (total > kMaxTotalSteps) {
    throw Malformed("FORCED: " + std::to_string(total) + " steps in all exceed the limit " +
                    std::to_string(kMaxTotalSteps));
  }
  inputs = r.u32s(static_cast<std::size_t>(total), "inputs");
  r.done();
}

std::vector<std::uint8_t> encode_free(std::span<const MultiEntry> entries) {
  Writer w;
  w.u32(static_cast<std::uint32_t>(entries.size()));
  for (const MultiEntry& e : entries) w.u32(e.stream).u32(e.count).u32(e.first);
  return std::move(w.payload());
}

std::vector<MultiEntry> decode_free(std::span<const std::uint8_t> p) {
  Reader r(p, "FREE");
  const std::uint32_t n = r.count("entries", kMaxEntries, 12);
  std::vector<MultiEntry> out(n);
  std::uint64_t total = 0;
  for (MultiEntry& e : out) {
    e.stream = r.u32("entry stream");
    e.count = r.u32("entry count");
    e.first = r.u32("entry first");
    total += e.count;
  }
  r.done();
  if (total > kMaxTotalSteps) {
    throw Malformed("FREE: " + std::to_string(total) + " steps in all exceed the limit " +
                    std::to_string(kMaxTotalSteps));
  }
  return out;
}

std::vector<std::uint8_t> encode_tokens(std::span<const std::uint32_t> tokens) {
  Writer w;
  w.u32(static_cast<std::uint32_t>(tokens.size())).u32s(tokens);
  return std::move(w.payload());
}

std::vector<std::uint32_t> decode_tokens(std::span<const std::uint8_t> p) {
  Reader r(p, "TOKENS");
  const std::uint32_t n = r.count("tokens", kMaxTotalSteps, 4);
  std::vector<std::uint32_t> out = r.u32s(n, "tokens");
  r.done();
  return out;
}

std::vector<std::uint8_t> encode_probe_map(const chip::ProbeMap& m) {
  Writer w;
  w.u32(static_cast<std::uint32_t>(m.fields.size()));
  for (const auto& f : m.fields) {
    w.str(f.name).u32(f.width).u32(static_cast<std::uint32_t>(f.writers.size()));
    for (const chip::SublayerRef& s : f.writers) w.i32(s.layer).u8(static_cast<std::uint8_t>(s.sublayer));
  }
  auto index_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < m.fields.size(); ++i)
      if (m.fields[i].name == name) return static_cast<std::uint32_t>(i);
    throw std::invalid_argument("probe map: field '" + name + "' is named by a point but not in the field list");
  };
  w.u32(static_cast<std::uint32_t>(m.points.size()));
  for (const chip::ProbePoint& pt : m.points) {
    w.i32(pt.layer).u8(static_cast<std::uint8_t>(pt.after)).u32(static_cast<std::uint32_t>(pt.fields.size()));
    for (const std::string& f : pt.fields) w.u32(index_of(f));
  }
  w.u32(static_cast<std::uint32_t>(m.unembed_reads.size()));
  for (const std::string& f : m.unembed_reads) w.u32(index_of(f));
  return std::move(w.payload());
}

chip::ProbeMap decode_probe_map(std::span<const std::uint8_t> p) {
  Reader r(p, "PROBE_MAP_OK");
  chip::ProbeMap m;
  const std::uint32_t nf = r.count("fields", kMaxMapItems, 12);
  m.fields.reserve(nf);
  auto sublayer = [](std::uint8_t v, const char* what) {
    if (v > 2) throw Malformed(std::string("PROBE_MAP_OK: ") + what + " " + std::to_string(v) + " is not 0, 1 or 2");
    return static_cast<chip::Sublayer>(v);
  };
  for (std::uint32_t i = 0; i < nf; ++i) {
    chip::ProbeMap::Field f;
    f.name = r.str("field name");
    f.width = r.u32("field width");
    const std::uint32_t nw = r.count("writers", kMaxMapItems, 5);
    for (std::uint32_t k = 0; k < nw; ++k) {
      chip::SublayerRef s;
      s.layer = r.i32("writer layer");
      s.sublayer = sublayer(r.u8("writer sublayer"), "writer sublayer");
      f.writers.push_back(s);
    }
    m.fields.push_back(std::move(f));
  }
  auto name_at = [&](std::uint32_t idx) -> const std::string& {
    if (idx >= m.fields.size()) {
      throw Malformed("PROBE_MAP_OK: field index " + std::to_string(idx) + " out of range (" +
                      std::to_string(m.fields.size()) + " fields)");
    }
    return m.fields[idx].name;
  };
  const std::uint32_t np = r.count("points", kMaxMapItems, 9);
  for (std::uint32_t i = 0; i < np; ++i) {
    chip::ProbePoint pt;
    pt.layer = r.i32("point layer");
    pt.after = sublayer(r.u8("point after"), "point after");
    const std::uint32_t n = r.count("point fields", kMaxMapItems, 4);
    for (std::uint32_t idx : r.u32s(n, "point fields")) pt.fields.push_back(name_at(idx));
    m.points.push_back(std::move(pt));
  }
  const std::uint32_t nu = r.count("unembed reads", kMaxMapItems, 4);
  for (std::uint32_t idx : r.u32s(nu, "unembed reads")) m.unembed_reads.push_back(name_at(idx));
  r.done();
  return m;
}

std::vector<std::uint8_t> encode_probe(const ProbeRequest& p) {
  Writer w;
  w.u32(p.stream).i32(p.layer).u8(p.after).str(p.field);
  return std::move(w.payload());
}

ProbeRequest decode_probe(std::span<const std::uint8_t> p) {
  Reader r(p, "PROBE");
  ProbeRequest out;
  out.stream = r.u32("stream");
  out.layer = r.i32("layer");
  out.after = r.u8("after");
  out.field = r.str("field");
  r.done();
  return out;
}

std::vector<std::uint8_t> encode_values(std::span<const float> values) {
  Writer w;
  w.u32(static_cast<std::uint32_t>(values.size()));
  for (float v : values) w.f32(v);
  return std::move(w.payload());
}

std::vector<float> decode_values(std::span<const std::uint8_t> p) {
  Reader r(p, "VALUES");
  const std::uint32_t n = r.count("values", kMaxPayload / 4, 4);
  std::vector<float> out(n);
  for (float& v : out) v = r.f32("value");
  r.done();
  return out;
}

std::vector<std::uint8_t> encode_blob(std::span<const std::uint8_t> blob) {
  Writer w;
  w.bytes(blob);
  return std::move(w.payload());
}

std::vector<std::uint8_t> decode_blob(std::span<const std::uint8_t> p) {
  Reader r(p, "BLOB");
  std::vector<std::uint8_t> b = r.bytes("blob", kMaxBlob);
  r.done();
  return b;
}

std::vector<std::uint8_t> encode_restore(std::uint32_t stream, std::span<const std::uint8_t> blob) {
  Writer w;
  w.u32(stream).bytes(blob);
  return std::move(w.payload());
}

std::pair<std::uint32_t, std::vector<std::uint8_t>> decode_restore(std::span<const std::uint8_t> p) {
  Reader r(p, "RESTORE");
  const std::uint32_t s = r.u32("stream");
  std::vector<std::uint8_t> b = r.bytes("blob", kMaxBlob);
  r.done();
  return {s, std::move(b)};
}

std::vector<std::uint8_t> encode_error(std::uint32_t code, std::string_view message) {
  std::string line;
  line.reserve(message.size());
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  if (line.size() > 4096) line.resize(4096);
  Writer w;
  w.u32(code).str(line);
  return std::move(w.payload());
}

std::pair<std::uint32_t, std::string> decode_error(std::span<const std::uint8_t> p) {
  Reader r(p, "ERROR");
  const std::uint32_t code = r.u32("code");
  std::string msg = r.str("message");
  r.done();
  return {code, std::move(msg)};
}

void decode_request(std::uint32_t type, std::span<const std::uint8_t> p) {
  switch (type) {
    case kHello: decode_hello(p); return;
    case kStreams: decode_u32(p, "STREAMS"); return;
    case kReset: decode_reset(p); return;
    case kStep: decode_step(p); return;
    case kForced: {
      std::vector<MultiEntry> e;
      std::vector<std::uint32_t> in;
      decode_forced(p, e, in);
      return;
    }
    case kFree: decode_free(p); return;
    case kProbeMap: decode_empty(p, "PROBE_MAP"); return;
    case kProbeRecord: decode_u8(p, "PROBE_RECORD"); return;
    case kProbe: decode_probe(p); return;
    case kHash: decode_u32(p, "HASH"); return;
    case kSave: decode_u32(p, "SAVE"); return;
    case kRestore: decode_restore(p); return;
    case kBye: decode_empty(p, "BYE"); return;
    default: throw Malformed("unknown request " + type_name(type));
  }
}

void decode_response(std::uint32_t request, std::uint32_t type, std::span<const std::uint8_t> p) {
  if (type == kError) {
    decode_error(p);
    return;
  }
  if (type != (kResponse | request)) {
    throw Malformed("expected " + type_name(kResponse | request) + " or ERROR, got " + type_name(type));
  }
  switch (request) {
    case kHello: decode_hello_ok(p); return;
    case kStep: case kForced: case kFree: decode_tokens(p); return;
    case kProbeMap: decode_probe_map(p); return;
    case kProbe: decode_values(p); return;
    case kHash: decode_u64(p, "HASH_OK"); return;
    case kSave: decode_blob(p); return;
    case kStreams: case kReset: case kProbeRecord: case kRestore: case kBye:
      decode_empty(p, "OK");
      return;
    default: throw Malformed("unknown request " + type_name(request));
  }
}

}  // namespace lockstep::dut
