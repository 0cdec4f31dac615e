#include "lockstep/format/file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "lockstep/format/error.h"

namespace lockstep::format {

std::vector<std::uint8_t> read_input_file(const std::filesystem::path& path, const std::string& what,
                                          std::uint64_t max_bytes) {
  auto fail = [&](const std::string& reason) -> FormatError {
    return FormatError(what + ": cannot read " + path.string() + ": " + reason);
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw fail("it is a directory, not a file");
  errno = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw fail(errno == ENOENT ? std::string("no such file") : std::strerror(errno ? errno : EIO));
  std::vector<std::uint8_t> bytes;
  std::uint8_t buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (bytes.size() + n > max_bytes) throw fail("larger than " + std::to_string(max_bytes) + " bytes");
    bytes.insert(bytes.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) throw fail(std::strerror(errno ? errno : EIO));
  return bytes;
}

}  // namespace lockstep::format
