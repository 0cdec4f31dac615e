#include "lockstep/format/shell.h"

#include <cstdint>
#include <cstdio>

namespace lockstep::format {

std::string shell_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string shell_word(std::string_view s) {
  auto safe = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  };
  bool plain = !s.empty();
  for (char c : s) plain = plain && safe(c);
  return plain ? std::string(s) : shell_quoted(s);
}

std::string shell_path(std::string_view path) {
  return shell_word(!path.empty() && path.front() == '-' ? "./" + std::string(path) : std::string(path));
}

std::string escape_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char b[16];
  for (std::size_t i = 0; i < s.size();) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x80) {
      if (u == '\n') out += "\\n";
      else if (u == '\r') out += "\\r";
      else if (u == '\t') out += "\\t";
      else if (u < 0x20 || u == 0x7f) {
        std::snprintf(b, sizeof b, "\\x%02x", u);
        out += b;
      } else {
        out += static_cast<char>(u);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence (RFC 3629: no overlong form, no surrogate, at most U+10FFFF), kept unless
    // it is a C1 control (U+0080..U+009F: U+009B is a terminal's CSI) or a bidirectional control
    // (U+200E/F, U+202A..E, U+2066..9: they reorder the rest of the line); any other byte is
    // written as \xNN (found by the re-test: raw 8-bit CSI bytes and invalid UTF-8 went through).
    const std::size_t n = u >= 0xf0 ? 4 : u >= 0xe0 ? 3 : u >= 0xc0 ? 2 : 0;
    std::uint32_t cp = n == 4 ? (u & 0x07u) : n == 3 ? (u & 0x0fu) : (u & 0x1fu);
    bool ok = n != 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      ok = (c & 0xc0u) == 0x80u;
      cp = (cp << 6) | (c & 0x3fu);
    }
    const std::uint32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    ok = ok && cp >= least && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      std::snprintf(b, sizeof b, "\\x%02x", u);
      out += b;
      ++i;
      continue;
    }
    if (cp <= 0x9f || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
      std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(cp));
      out += b;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace lockstep::format
