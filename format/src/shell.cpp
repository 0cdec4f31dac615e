#include "lockstep/format/shell.h"

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

}  // namespace lockstep::format
