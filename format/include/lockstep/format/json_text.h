// JSON text that the tools write (summaries, cases, reports, one-line --json output).
#pragma once

#include <nlohmann/json.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep::format {

/// The length (2 to 4) of the well-formed UTF-8 sequence starting at byte `i` of `s`, a byte
/// >= 0x80 (RFC 3629 §4: no overlong form, no surrogate, nothing above U+10FFFF), or 0 when the
/// bytes there are not one.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

/// Whether `s` is UTF-8 throughout (RFC 3629): JSON, XML and HTML text keep it as it is;
/// json_text and the reports write any other byte as U+FFFD.
inline bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) < 0x80) continue;
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n - 1;
  }
  return true;
}

/// `j` serialised as JSON text (RFC 8259), `indent` spaces per level (-1: one line), never
/// throwing: a string holding bytes that are not UTF-8 (a file name, an error message quoting a
/// damaged file) has each such byte written as U+FFFD. nlohmann-json's plain dump() throws
/// type_error 316 there, which ended commands with --json in std::terminate (found by an outside
/// tester: a chip file whose header held the byte 0xC0, and a chip at a path named "\xff.chip").
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lockstep::format
