#include "lockstep/format/file.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>

#include "lockstep/format/error.h"

namespace lockstep::format {

namespace {
// MemAvailable of /proc/meminfo, else the physical memory, else UINT64_MAX.
std::uint64_t machine_memory_available() {
  if (std::FILE* f = std::fopen("/proc/meminfo", "re")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f)) found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found) return static_cast<std::uint64_t>(kib) * 1024;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  return UINT64_MAX;
}
}  // namespace

std::uint64_t memory_available_bytes() {
  std::uint64_t avail = machine_memory_available();
  // `ulimit -v` (RLIMIT_AS) bounds this process below what the machine has: what is left of it
  // (found by an outside tester: under ulimit -v 4 GB a 3 GB file was read to std::bad_alloc)
  if (struct rlimit rl{}; ::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    std::uint64_t used = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "re")) {
      unsigned long long vm_pages = 0;
      if (std::fscanf(f, "%llu", &vm_pages) == 1) used = vm_pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
      std::fclose(f);
    }
    const auto limit = static_cast<std::uint64_t>(rl.rlim_cur);
    avail = std::min(avail, limit > used ? limit - used : 0);
  }
  return avail;
}

std::vector<std::uint8_t> read_input_file(const std::filesystem::path& path, const std::string& what,
                                          std::uint64_t max_bytes, Readable readable) {
  auto fail = [&](const std::string& reason, InputFileFault fault) -> InputFileError {
    return InputFileError((what.empty() ? std::string() : what + ": ") + "cannot read " + path.string() + ": " + reason,
                          reason, fault);
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw fail("it is a directory, not a file", InputFileFault::kDirectory);
  // Opened without blocking: open() of a named pipe with no writer would wait for one forever
  // (and a stop signal only sets a flag). Then reads block as usual, so a pipe with a writer
  // (`<(cat guest.elf)`) is read to its end, and one without gives 0 bytes at once.
  const bool fifo = std::filesystem::is_fifo(path, ec);
  // Refused before open(): a FIFO's open would wait for a writer (kRegularOnly), and a device's
  // read never ends (/dev/zero was read up to the reader's limit, 256 MiB for an ELF: found by an
  // outside tester); kAnything still reads a FIFO, as `<(cat guest.elf)` is one.
  if (const auto st = std::filesystem::status(path, ec);
      !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) && !std::filesystem::is_directory(st) &&
      (readable == Readable::kRegularOnly || !fifo))
    throw fail(fifo ? "it is a named pipe (FIFO), not a regular file"
               : std::filesystem::is_socket(st) ? "it is a socket, not a regular file"
                                                : "it is a device, not a regular file",
               InputFileFault::kNotRegular);
  errno = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) throw fail("no such file", InputFileFault::kMissing);
    throw fail(std::strerror(errno ? errno : EIO), InputFileFault::kSystem);
  }
  // A regular file over the limit is refused by its size, before any byte is read (found by an
  // outside tester: a 300 MiB file was read to 256 MiB first).
  if (struct stat st{}; ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size > max_bytes) {
      ::close(fd);
      throw fail("larger than " + std::to_string(max_bytes) + " bytes", InputFileFault::kTooLarge);
    }
    if (const std::uint64_t avail = memory_available_bytes(); size > avail) {
      ::close(fd);
      throw fail("its " + std::to_string(size >> 20) + " MiB are more than the memory available (" +
                 std::to_string(avail >> 20) + " MiB)",
                 InputFileFault::kOverMemory);
    }
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(::fdopen(fd, "rb"), &std::fclose);
  if (!f) {
    const int e = errno;
    ::close(fd);
    throw fail(std::strerror(e ? e : EIO), InputFileFault::kSystem);
  }
  std::vector<std::uint8_t> bytes;
  std::uint8_t buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (bytes.size() + n > max_bytes) throw fail("larger than " + std::to_string(max_bytes) + " bytes", InputFileFault::kTooLarge);
    bytes.insert(bytes.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) throw fail(std::strerror(errno ? errno : EIO), InputFileFault::kSystem);
  if (fifo && bytes.empty()) throw fail("it is a named pipe (FIFO) and nothing wrote to it", InputFileFault::kEmptyFifo);
  return bytes;
}

}  // namespace lockstep::format
