// Reading a whole input file, with one-line errors that name it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lockstep::format {

/// The whole of `path` as bytes.  `what` names the kind of file for the message ("ELF", "trace
/// file").  Throws FormatError "WHAT: cannot read PATH: REASON", REASON being "no such file", "it is
/// a directory, not a file", "larger than MAX bytes", "it is a named pipe (FIFO) and nothing wrote
/// to it", or the system's error text.  A FIFO or device is read like a file (never waiting in
/// open() for a writer); `max_bytes` bounds what is read from anything.
std::vector<std::uint8_t> read_input_file(const std::filesystem::path& path, const std::string& what,
                                          std::uint64_t max_bytes = std::uint64_t{1} << 32);

}  // namespace lockstep::format
