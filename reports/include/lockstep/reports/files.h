// Reading and writing whole files with errors that name the file and say what was wrong
// ("cannot read X: Is a directory"), never the C++ library's own wording
// ("basic_filebuf::underflow error reading the file"). Shared by the reports, the engine and the
// `lockstep` command (the lowest library all three link).
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace lockstep::reports {

/// The whole of `path` as bytes. Throws std::runtime_error "cannot read PATH: REASON" (REASON:
/// "no such file", "is a directory", "a named pipe (FIFO)", the system's error text, or the read
/// error).
inline std::string read_file_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error("cannot read " + path.string() + ": it is a directory, not a file");
  }
  if (std::filesystem::is_fifo(path, ec)) {  // opening one would wait for a writer, forever
    throw std::runtime_error("cannot read " + path.string() + ": it is a named pipe (FIFO), not a regular file");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    throw std::runtime_error("cannot read " + path.string() + ": " +
                             (e == ENOENT ? std::string("no such file") : e ? std::strerror(e) : "cannot open it"));
  }
  try {
    std::ostringstream os;
    os << in.rdbuf();
    if (in.bad()) throw std::runtime_error(std::strerror(errno ? errno : EIO));
    return os.str();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read " + path.string() + ": " + e.what());
  }
}

/// Writes `text` to `path` (replacing it). Throws std::runtime_error "cannot write PATH: REASON".
inline void write_file_text(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error("cannot write " + path.string() + ": it is a directory, not a file");
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno ? errno : EIO));
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno ? errno : EIO));
}

}  // namespace lockstep::reports
