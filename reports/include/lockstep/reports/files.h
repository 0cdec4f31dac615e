// Reading and writing whole files with errors that name the file and say what was wrong
// ("cannot read X: Is a directory"), never the C++ library's own wording
// ("basic_filebuf::underflow error reading the file"). Shared by the reports, the engine and the
// `lockstep` command (the lowest library all three link).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/format/file.h"

namespace lockstep::reports {

/// The whole of the regular file `path` as bytes. Throws std::runtime_error "cannot read PATH:
/// REASON" (REASON: "no such file", "it is a directory, not a file", "it is a named pipe (FIFO),
/// not a regular file", "it is a device, not a regular file", "larger than ... bytes", "its N MiB
/// are more than the memory available", or the system's error text): every JSON, case, checkpoint
/// and note file Lockstep reads back goes through here, bounded before it is read (found by an
/// outside tester: summary.json linked to /dev/zero, and a 50 GB sparse case file, were read until
/// the kernel killed the process).
inline std::string read_file_text(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes =
      format::read_input_file(path, "", std::uint64_t{1} << 30, format::Readable::kRegularOnly);
  return std::string(bytes.begin(), bytes.end());
}

namespace detail {

/// Writes `text` to `target`, truncating it; a failure throws std::runtime_error "cannot write
/// NAME: REASON" (REASON the system's error text; `name` is the file the caller asked for, which
/// may be another than its temporary `target`).
inline void write_whole(const std::filesystem::path& target, const std::filesystem::path& name,
                        const std::string& text) {
  errno = 0;
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  bool ok = static_cast<bool>(out);
  if (ok) {
    out << text;
    ok = static_cast<bool>(out.flush());
  }
  if (!ok) throw std::runtime_error("cannot write " + name.string() + ": " + std::strerror(errno ? errno : EIO));
}

}  // namespace detail

/// Writes several files as one report: every text goes to its PATH.tmp.PID first, and only when
/// all are written are they renamed over their paths, in the order given (put the verdict file,
/// summary.json, last). A failure (a full disk, `ulimit -f`) removes the temporary files and
/// leaves every file as it was, so that no verdict file says "exact" beside a page that could not
/// be written (found by an outside tester: on a full disk report.html failed after summary.json
/// and junit.xml had been replaced, and `lockstep report` and `fuzz --merge` read the run as a
/// pass). A symlink, device or FIFO among them is written through, in place, before the renames.
/// Throws std::runtime_error "cannot write PATH: REASON" for the first that fails ("it is a
/// directory, not a file" for a directory, or a symlink to one).
inline void write_files_text(const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  namespace fs = std::filesystem;
  std::vector<std::pair<fs::path, fs::path>> staged;  // (path, its temporary file)
  std::error_code ec;
  try {
    for (const auto& [path, text] : files) {
      if (fs::is_directory(path, ec)) {
        throw std::runtime_error("cannot write " + path.string() + ": it is a directory, not a file");
      }
      const fs::file_status st = fs::symlink_status(path, ec);
      if (fs::exists(st) && !fs::is_regular_file(st)) {
        detail::write_whole(path, path, text);
        continue;
      }
      fs::path tmp = path;
      tmp += ".tmp." + std::to_string(::getpid());
      staged.emplace_back(path, tmp);
      detail::write_whole(tmp, path, text);
    }
    for (const auto& [path, tmp] : staged) {
      fs::rename(tmp, path, ec);
      if (ec) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(ec.value()));
    }
  } catch (...) {
    for (const auto& [path, tmp] : staged) fs::remove(tmp, ec);
    throw;
  }
}

/// Writes `text` to `path` (replacing it), as write_files_text writes one file: a regular file (or
/// a new one) is replaced whole through PATH.tmp.PID and a rename, so that a write cut short (a
/// full disk, `ulimit -f`) leaves the old file or none, never a truncated one (found by an outside
/// tester: fuzz.json and mutate.json were left as 8,192 bytes of broken JSON); a symlink, device
/// or FIFO is written through, in place. Throws std::runtime_error "cannot write PATH: REASON".
inline void write_file_text(const std::filesystem::path& path, const std::string& text) {
  write_files_text({{path, text}});
}

/// The text of a JSON library error for a one-line message, with the input it quotes ("last read:
/// '...'") cut to its last 40 characters (found by an outside tester: a truncated case.json gave a
/// line of over 1 KB of the guest's base64).
inline std::string json_error_text(const std::exception& e) {
  std::string t = e.what();
  const std::string mark = "last read: '";
  const auto at = t.find(mark);
  if (at == std::string::npos) return t;
  const auto begin = at + mark.size(), end = t.find('\'', begin);
  if (end == std::string::npos || end - begin <= 40) return t;
  return t.substr(0, begin) + "..." + t.substr(end - 40);
}

/// The JSON value of `text`, a file lockstep wrote (summary.json, case.json, fuzz.json) and a user
/// may have edited: arrays and objects nest at most `max_depth` levels (lockstep's files nest
/// fewer than 10), so that no input drives a recursive walk (the report's checks, its HTML) out
/// of stack or into a quadratic page (found by an outside tester: 100,000 levels crashed
/// `lockstep report`, 20,000 wrote an 800 MB page). An object may not name one key twice (JSON
/// leaves which value counts to the reader: found by an outside tester, a case.json with two
/// "steps" was read with the last). Throws nlohmann::json::exception when `text` is not JSON,
/// std::runtime_error "WHAT nests deeper than N levels ..." when too deep and "WHAT: the key
/// "K" appears twice in one object ..." for a repeated key.
inline nlohmann::json parse_json_text(const std::string& text, const std::string& what, int max_depth = 64) {
  std::vector<std::set<std::string>> keys;  // of each object open, innermost last
  const nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    if (depth > max_depth) {
      throw std::runtime_error(what + " nests arrays and objects deeper than " + std::to_string(max_depth) +
                               " levels: not a file lockstep wrote");
    }
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get<std::string>()).second) {
      throw std::runtime_error(what + ": the key \"" + parsed.get<std::string>() +
                               "\" appears twice in one object (which of its values counts is not known): not a file "
                               "lockstep wrote");
    }
    return true;
  };
  return nlohmann::json::parse(text, limit);
}

}  // namespace lockstep::reports
