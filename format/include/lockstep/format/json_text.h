// JSON text that the tools write (summaries, cases, reports, one-line --json output).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lockstep::format {

/// `j` serialised as JSON text (RFC 8259), `indent` spaces per level (-1: one line), never
/// throwing: a string holding bytes that are not UTF-8 (a file name, an error message quoting a
/// damaged file) has each such byte written as U+FFFD. nlohmann-json's plain dump() throws
/// type_error 316 there, which ended commands with --json in std::terminate (found by an outside
/// tester: a chip file whose header held the byte 0xC0, and a chip at a path named "\xff.chip").
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lockstep::format
