// Reading a whole input file, with one-line errors that name it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/format/error.h"

namespace lockstep::format {

/// Which files read_input_file takes: regular files and FIFOs (as `<(cat guest.elf)`), or
/// regular files only (a report's JSON, a vocabulary map). A device or socket is never read.
enum class Readable { kAnything, kRegularOnly };

/// Why read_input_file refused a file: kTooLarge (over its `max_bytes`), kOverMemory (over the
/// memory available), kMissing, kDirectory, kNotRegular (a device or socket, or a FIFO where only
/// regular files are read), kEmptyFifo (a named pipe nothing wrote to), kSystem (the system's
/// error, as EACCES or EIO).
enum class InputFileFault { kMissing, kDirectory, kNotRegular, kTooLarge, kOverMemory, kEmptyFifo, kSystem };

/// The FormatError read_input_file throws: what() is the whole line ("WHAT: cannot read PATH:
/// REASON"), reason() only REASON ("larger than 67108864 bytes"), and fault() its kind, so that a
/// reader that words its own message (a vocabulary map, a token file) need not match the text.
class InputFileError : public FormatError {
 public:
  InputFileError(const std::string& message, std::string reason, InputFileFault fault)
      : FormatError(message), reason_(std::move(reason)), fault_(fault) {}
  const std::string& reason() const noexcept { return reason_; }
  InputFileFault fault() const noexcept { return fault_; }

 private:
  std::string reason_;
  InputFileFault fault_;
};

/// The whole of `path` as bytes.  `what` names the kind of file for the message ("ELF", "trace
/// file"; empty: no prefix).  Throws FormatError "WHAT: cannot read PATH: REASON", REASON being
/// "no such file", "it is a directory, not a file", "larger than MAX bytes", "larger than the
/// memory available (N MiB)", "it is a named pipe (FIFO) and nothing wrote to it", "it is a
/// device (a socket, or with kRegularOnly a FIFO), not a regular file", or the system's error
/// text (an InputFileError, with that reason and its fault).  A FIFO is read like a file (never waiting in open() for a writer); `max_bytes` bounds
/// what is read from anything, and a regular file is refused by its size before any byte is read,
/// also when it would not fit in the memory available (a sparse file of 50 GB was read until the
/// kernel killed the process: found by an outside tester).
std::vector<std::uint8_t> read_input_file(const std::filesystem::path& path, const std::string& what,
                                          std::uint64_t max_bytes = std::uint64_t{1} << 32,
                                          Readable readable = Readable::kAnything);

/// The memory this process may still allocate, in bytes: MemAvailable of /proc/meminfo (Linux),
/// or the machine's physical memory where that cannot be read (UINT64_MAX when neither can),
/// and at most what `ulimit -v` (RLIMIT_AS) leaves above the process's present size.
std::uint64_t memory_available_bytes();

}  // namespace lockstep::format
