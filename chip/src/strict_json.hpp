// Strict JSON text parsing for the chip file (chip-format.md §3): the whole text must be one
// JSON value.  nlohmann-json alone stops at a NUL byte (it reads NUL as the end of the input) and
// keeps the last of duplicate keys; this rejects both.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace lockstep::chip {

/// Parses `text` as exactly one JSON value (surrounding JSON whitespace allowed by the grammar).
/// Throws FormatError with one line "<what>: ..." when the text holds a NUL byte (named by its
/// offset), is not valid JSON, has anything after the value, or an object has a key twice at
/// any depth (the key is named), a key or string value decodes to text holding a NUL byte (a
/// \u0000 escape), or arrays and objects nest deeper than 64 levels.
nlohmann::json parse_strict_json(std::string_view text, std::string_view what);

}  // namespace lockstep::chip
