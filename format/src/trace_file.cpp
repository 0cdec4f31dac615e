#include "lockstep/format/trace_file.h"
#include "lockstep/format/file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include "lockstep/format/json_text.h"

namespace lockstep::format {
namespace {
[[noreturn]] void fail(const std::string& what) { throw FormatError("trace file: " + what); }

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}
}  // namespace

std::vector<std::uint8_t> encode_trace_file(nlohmann::json header,
                                            std::span<const std::uint32_t> tokens) {
  header["steps"] = tokens.size();
  const std::string text = format::json_text(header);
  std::vector<std::uint8_t> out(kTraceMagic, kTraceMagic + 8);
  out.reserve(12 + text.size() + 4 * tokens.size());
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out.insert(out.end(), text.begin(), text.end());
  const std::size_t at = out.size();
  out.resize(at + 4 * tokens.size());
  if (!tokens.empty()) std::memcpy(out.data() + at, tokens.data(), 4 * tokens.size());  // little-endian host
  return out;
}

TraceFile decode_trace_file(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kTraceMagic, 8) != 0) {
    fail(bytes.size() < 8 ? "truncated (" + std::to_string(bytes.size()) + " bytes, no magic)"
                          : "bad magic (expected LSTRACE1)");
  }
  if (bytes.size() < 12) fail("truncated header length");
  const std::uint64_t h = get_u32(bytes.data() + 8);
  if (bytes.size() - 12 < h) {
    fail("truncated header (" + std::to_string(h) + " bytes announced, " +
         std::to_string(bytes.size() - 12) + " present)");
  }
  TraceFile tf;
  try {
    tf.header = nlohmann::json::parse(bytes.begin() + 12, bytes.begin() + 12 + static_cast<std::ptrdiff_t>(h));
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!tf.header.is_object()) fail("header is not a JSON object");
  if (!tf.header.contains("steps") || !tf.header["steps"].is_number_unsigned()) {
    fail("header has no unsigned integer \"steps\"");
  }
  const std::uint64_t n = tf.header["steps"].get<std::uint64_t>();
  const std::uint64_t body = bytes.size() - 12 - h;
  if (body / 4 < n) {
    fail("truncated token array (" + std::to_string(n) + " tokens announced, " +
         std::to_string(body / 4) + " present)");
  }
  if (body != 4 * n) fail(std::to_string(body - 4 * n) + " bytes after the last token");
  tf.tokens.resize(n);
  if (n > 0) std::memcpy(tf.tokens.data(), bytes.data() + 12 + h, 4 * n);
  return tf;
}

void write_trace_file(const std::filesystem::path& path, nlohmann::json header,
                      std::span<const std::uint32_t> tokens) {
  const auto bytes = encode_trace_file(std::move(header), tokens);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write " + path.string() + ": " + std::strerror(errno ? errno : EIO));
}

TraceFileWriter::TraceFileWriter(const std::filesystem::path& path, std::uint32_t header_reserve)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc), reserve_(header_reserve) {
  std::vector<std::uint8_t> head(kTraceMagic, kTraceMagic + 8);
  put_u32(head, reserve_);
  head.resize(12 + reserve_, ' ');
  out_.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
  if (!out_) fail("cannot write " + path.string() + ": " + std::strerror(errno ? errno : EIO));
}

void TraceFileWriter::append(std::span<const std::uint32_t> tokens) {
  out_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(4 * tokens.size()));
  if (!out_) fail("cannot write " + path_.string() + ": " + std::strerror(errno ? errno : EIO));
  steps_ += tokens.size();
}

void TraceFileWriter::finish(nlohmann::json header) {
  header["steps"] = steps_;
  const std::string text = format::json_text(header);
  if (text.size() > reserve_) fail("header of " + std::to_string(text.size()) + " bytes exceeds the reserved " + std::to_string(reserve_));
  out_.seekp(12);
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  out_.close();
  if (!out_) fail("cannot write " + path_.string() + ": " + std::strerror(errno ? errno : EIO));
}

TraceFile read_trace_file(const std::filesystem::path& path) {
  return decode_trace_file(read_input_file(path, "trace file"));
}

}  // namespace lockstep::format
