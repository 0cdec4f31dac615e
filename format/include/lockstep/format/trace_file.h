// Trace files (trace.md §6): "LSTRACE1", u32 LE header length h, h bytes of
// UTF-8 JSON, then `steps` little-endian u32 token ids t_1..t_N.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/format/error.h"

namespace lockstep::format {

/// The 8 magic bytes at the start of every trace file.
inline constexpr char kTraceMagic[8] = {'L', 'S', 'T', 'R', 'A', 'C', 'E', '1'};

/// A whole trace file in memory.
struct TraceFile {
  /// The JSON header: at least trace_version, vocab_size, steps, program,
  /// end ("exit" | "trap" | "step_limit"), and exit_status or trap_code.
  nlohmann::json header;
  std::vector<std::uint32_t> tokens;  ///< t_1 .. t_N (START is not stored)
};

/// Serialises a trace file.  The "steps" field of `header` is set to
/// tokens.size() (any value given is replaced).
std::vector<std::uint8_t> encode_trace_file(nlohmann::json header,
                                            std::span<const std::uint32_t> tokens);

/// Parses a trace file.  Throws FormatError (one line, starting "trace file: ")
/// on a bad magic, a truncated header or token array, header JSON that does
/// not parse or is not an object, a missing or non-integer "steps", or bytes
/// after the last token.
TraceFile decode_trace_file(std::span<const std::uint8_t> bytes);

/// encode_trace_file to `path`.  Throws FormatError when it cannot be written.
void write_trace_file(const std::filesystem::path& path, nlohmann::json header,
                      std::span<const std::uint32_t> tokens);

/// Reads and decodes `path`.  Throws FormatError (also when unreadable).
TraceFile read_trace_file(const std::filesystem::path& path);

}  // namespace lockstep::format
