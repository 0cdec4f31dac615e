// Trace files (trace.md §6): "LSTRACE1", u32 LE header length h, h bytes of
// UTF-8 JSON, then `steps` little-endian u32 token ids t_1..t_N.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
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
  /// end ("exit" | "trap" | "step_limit" | "self_loop"), and exit_status or trap_code.
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

/// Streams a trace file of any length with constant memory: tokens are
/// appended as they come; finish() writes the header into space reserved
/// after the length prefix (padded with spaces, which JSON allows).
class TraceFileWriter {
 public:
  /// Creates `path` and reserves `header_reserve` bytes for the header.
  /// Throws FormatError when the file cannot be created.
  explicit TraceFileWriter(const std::filesystem::path& path, std::uint32_t header_reserve = 4096);
  /// Appends token ids t_k (little-endian u32).  Throws FormatError on a write error.
  void append(std::span<const std::uint32_t> tokens);
  /// Number of tokens appended so far.
  std::uint64_t steps() const { return steps_; }
  /// Sets header["steps"] = steps(), writes the header and closes the file.
  /// Throws FormatError when the header does not fit the reserve or on a write error.
  void finish(nlohmann::json header);

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::uint32_t reserve_;
  std::uint64_t steps_ = 0;
};

}  // namespace lockstep::format
