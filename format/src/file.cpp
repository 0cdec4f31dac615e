#include "lockstep/format/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
  // Opened without blocking: open() of a named pipe with no writer would wait for one forever
  // (and a stop signal only sets a flag). Then reads block as usual, so a pipe with a writer
  // (`<(cat guest.elf)`) is read to its end, and one without gives 0 bytes at once.
  const bool fifo = std::filesystem::is_fifo(path, ec);
  errno = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw fail(errno == ENOENT ? std::string("no such file") : std::strerror(errno ? errno : EIO));
  // A regular file over the limit is refused by its size, before any byte is read (found by an
  // outside tester: a 300 MiB file was read to 256 MiB first).
  if (struct stat st{}; ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw fail("larger than " + std::to_string(max_bytes) + " bytes");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(::fdopen(fd, "rb"), &std::fclose);
  if (!f) {
    const int e = errno;
    ::close(fd);
    throw fail(std::strerror(e ? e : EIO));
  }
  std::vector<std::uint8_t> bytes;
  std::uint8_t buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (bytes.size() + n > max_bytes) throw fail("larger than " + std::to_string(max_bytes) + " bytes");
    bytes.insert(bytes.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) throw fail(std::strerror(errno ? errno : EIO));
  if (fifo && bytes.empty()) throw fail("it is a named pipe (FIFO) and nothing wrote to it");
  return bytes;
}

}  // namespace lockstep::format
