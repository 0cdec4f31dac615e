#include "serial.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include <zstd.h>

#include "lockstep/reports/files.h"

namespace lockstep::engine::detail {

void write_machine_state(Writer& w, const ref::MachineState& s) {
  for (std::uint32_t v : s.x) w.u32(v);
  w.u32(s.pc);
  w.blob(s.ram);
  w.u32(s.carry);
  for (std::uint32_t v : s.acc.limb) w.u32(v);
  w.u32(static_cast<std::uint32_t>(s.status));
  w.u32(s.exit_status);
  w.u32(s.trap_code);
  w.u64(s.retired);
  w.u64(s.steps);
  w.u32(s.pc_page);
  w.u64(s.pending.size());
  for (std::uint32_t t : s.pending) w.u32(t);
  w.str(s.console_out);
  w.str(s.console_err);
  // The vector unit (vector.md §2): every array whole, each behind its byte length.
  const ref::VectorState& v = s.vector;
  auto arr = [&](const auto& a) { w.blob({reinterpret_cast<const std::uint8_t*>(a.data()), sizeof(a[0]) * a.size()}); };
  arr(v.vr);
  arr(v.act);
  arr(v.ash);
  arr(v.wmem);
  arr(v.wscale);
  arr(v.kc);
  arr(v.vc);
  arr(v.ksh);
  arr(v.vsh);
}

ref::MachineState read_machine_state(Reader& r) {
  ref::MachineState s;
  for (std::uint32_t& v : s.x) v = r.u32();
  s.pc = r.u32();
  s.ram = r.blob();
  if (s.ram.size() != ref::kRamSize) throw std::runtime_error("checkpoint: reference RAM has the wrong size");
  s.carry = r.u32();
  for (std::uint32_t& v : s.acc.limb) v = r.u32();
  const std::uint32_t status = r.u32();
  if (status > 2) throw std::runtime_error("checkpoint: bad reference status");
  s.status = static_cast<ref::Status>(status);
  s.exit_status = r.u32();
  s.trap_code = r.u32();
  s.retired = r.u64();
  s.steps = r.u64();
  s.pc_page = r.u32();
  if (s.pc_page != ref::kNoPcPage && s.pc_page >= (ref::kRamSize / 4) >> 8) {
    throw std::runtime_error("checkpoint: bad reference pc page");
  }
  const std::uint64_t n = r.u64();
  if (n > (1u << 20)) throw std::runtime_error("checkpoint: bad pending token count");
  s.pending.resize(n);
  for (std::uint32_t& t : s.pending) t = r.u32();
  s.console_out = r.str();
  s.console_err = r.str();
  ref::VectorState& v = s.vector;
  auto arr = [&](auto& a, const char* what) {
    const std::vector<std::uint8_t> b = r.blob();
    if (b.size() != sizeof(a[0]) * a.size())
      throw std::runtime_error(std::string("checkpoint: reference vector state ") + what + " has the wrong size");
    std::memcpy(a.data(), b.data(), b.size());
  };
  arr(v.vr, "VR");
  arr(v.act, "ACT");
  arr(v.ash, "ASH");
  arr(v.wmem, "WMEM");
  arr(v.wscale, "WSCALE");
  arr(v.kc, "KC");
  arr(v.vc, "VC");
  arr(v.ksh, "KSH");
  arr(v.vsh, "VSH");
  // vector.md §2: shifts 0..25, int4 weights -8..7.
  auto shifts_ok = [](const auto& a) { return std::all_of(a.begin(), a.end(), [](std::uint8_t x) { return x <= 25; }); };
  if (!shifts_ok(v.ash) || !shifts_ok(v.ksh) || !shifts_ok(v.vsh))
    throw std::runtime_error("checkpoint: a reference vector shift above 25");
  if (!std::all_of(v.wmem.begin(), v.wmem.end(), [](std::int8_t x) { return x >= -8 && x <= 7; }))
    throw std::runtime_error("checkpoint: a reference int4 weight outside -8..7");
  return s;
}

// One zstd frame with its content size and content checksum (the low 32 bits of XXH64 of the
// content, checked by ZSTD_decompress): a checkpoint damaged on disk that still decompresses is
// refused, never resumed from (found by an outside tester: 16 bytes overwritten in a story's
// checkpoint resumed, and the run reported a chip mismatch that was the damage).
std::vector<std::uint8_t> compress(std::span<const std::uint8_t> bytes) {
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  if (!cctx) throw std::runtime_error("zstd: cannot create a compression context");
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
  std::vector<std::uint8_t> out(ZSTD_compressBound(bytes.size()));
  const std::size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::vector<std::uint8_t> decompress(std::span<const std::uint8_t> bytes) {
  const unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1ull << 36)) {
    throw std::runtime_error("checkpoint: not a complete zstd frame");
  }
  // The frame header descriptor, after the 4-byte magic: bit 2 is Content_Checksum_flag (RFC 8878 §3.1.1.1.1)
  if (bytes.size() < 5 || !(bytes[4] & 0x04)) {
    throw std::runtime_error("checkpoint: its zstd frame has no content checksum (written by an older lockstep), so "
                             "damage to it could not be told from the run's state");
  }
  std::vector<std::uint8_t> out(size);
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("checkpoint: corrupt zstd frame (") + ZSTD_getErrorName(n) + ")");
  if (n != size) throw std::runtime_error("checkpoint: corrupt zstd frame (its content is shorter than its header says)");
  return out;
}

void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp.string() + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  // fsync first, then close whatever fsync said (a failed fsync must not leak the descriptor);
  // either failure leaves no half-written .tmp behind
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(synced != 0 ? synced : closed));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // no half-written leftover beside the file it could not replace
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + path.filename().string() + ": " + ec.message());
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  const std::string text = reports::read_file_text(path);  // names the file and the reason
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

}  // namespace lockstep::engine::detail
