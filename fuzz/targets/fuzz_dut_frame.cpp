// fuzz_dut_frame: bytes as a chip under test would send them -> the harness side's frame reader
// (dut::Connection::read_frame over a pipe) and every message decoder of lockstep-dut/1
// (docs/spec/dut-protocol.md). The first byte picks the request the bytes answer. Expected
// rejections (dut::Malformed, dut::TransportError at a truncated frame) are the normal outcome;
// anything else (a crash, a sanitizer report, any other exception, an allocation past the
// protocol's limits) is a finding.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/dut/protocol.h"
#include "lockstep/dut/transport.h"

namespace {
// A pipe holds 64 KiB: larger inputs are cut (the frame reader's limits are tested on the
// declared lengths, which are not cut).
constexpr std::size_t kMaxInput = 60000;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::dut;
  if (size < 1) return 0;
  const std::uint32_t request = 1 + data[0] % 13;
  const std::span<const std::uint8_t> bytes(data + 1, std::min(size - 1, kMaxInput));
  int fds[2];
  if (::pipe(fds) != 0) return 0;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fds[1], bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fds[1]);
  auto conn = fd_connection(fds[0], -1, "fuzz input");
  const auto deadline = Connection::Clock::now() + std::chrono::seconds(5);
  for (;;) {
    std::optional<Frame> f;
    try {
      f = conn->read_frame(deadline);
    } catch (const Malformed&) {
      break;  // a length over the limit: the stream cannot go on
    } catch (const TransportError&) {
      break;  // the bytes end inside a frame
    }
    if (!f) break;
    if (f->payload.size() > kMaxPayload) __builtin_trap();
    try {
      decode_response(request, f->type, f->payload);
    } catch (const Malformed&) {
    }
    try {
      decode_request(f->type, f->payload);
    } catch (const Malformed&) {
    }
  }
  return 0;
}
