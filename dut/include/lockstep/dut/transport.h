// Byte streams that carry lockstep-dut/1 frames (docs/spec/dut-protocol.md §1): a child process
// over its stdin/stdout, a Unix or TCP socket, or this process's own stdin/stdout (the chip side
// of `--dut`). Every read and write waits with poll() against a deadline, so that a chip that
// stops answering can never hang the harness.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/dut/protocol.h"

namespace lockstep::dut {

/// A transport failure: the peer cannot be started or reached, closed its side, or died.
/// what() is one line.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// The peer did not answer (or accept bytes) before the deadline.
class Timeout : public TransportError {
 public:
  using TransportError::TransportError;
};

/// The wait was given up because the stop flag (Connection::set_stop: SIGINT/SIGTERM) was set.
class Stopped : public TransportError {
 public:
  using TransportError::TransportError;
};

/// read_frame met text where a frame header belongs: the 8 header bytes are all printable ASCII
/// (or tab, line feed, carriage return), which no frame of §3 can start with (a type's upper
/// bytes are 0). The usual cause is a chip that prints debug output to its stdout. what() is one
/// line; line() is the text's first line as read (at most 60 characters, control characters
/// removed).
class StrayText : public Malformed {
 public:
  StrayText(const std::string& what, std::string line) : Malformed(what), line_(std::move(line)) {}
  const std::string& line() const { return line_; }

 private:
  std::string line_;
};

/// A parsed `--dut-connect` / `--listen` address: "unix:PATH" or "tcp:HOST:PORT".
struct Address {
  enum class Kind { kUnix, kTcp } kind = Kind::kUnix;
  std::string path;      ///< kUnix: the socket's path (at most 107 bytes)
  std::string host;      ///< kTcp: a numeric IPv4 or IPv6 address (without brackets) or a name
  std::uint16_t port = 0;
  /// True for a Unix socket or a loopback TCP host (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104,
  /// "localhost").
  bool local() const;
  std::string to_string() const;
};
/// Parses "unix:PATH" or "tcp:HOST:PORT" (an IPv6 HOST in brackets: "tcp:[::1]:7000"); throws
/// std::invalid_argument (one line) otherwise.
Address parse_address(const std::string& text);

/// How a note begins that says a chip process was killed because a SIGINT, SIGTERM or SIGHUP
/// came while Lockstep waited on it at the end of its session (Connection::finish, BYE).
inline constexpr std::string_view kKilledOnStop = "was killed with SIGKILL: SIGINT, SIGTERM or SIGHUP came";

/// One frame stream. Not thread-safe.
class Connection {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Writes one frame; throws TransportError (peer gone) or Timeout.
  virtual void write_frame(std::uint32_t type, std::span<const std::uint8_t> payload, Clock::time_point deadline);
  /// Writes raw bytes (tests and dut-check's over-long-frame check); throws as write_frame.
  void write_raw(std::span<const std::uint8_t> bytes, Clock::time_point deadline, const std::string& what = "frame");
  /// Reads one frame. Returns nullopt at a clean end of stream (between frames). Throws StrayText
  /// when the header is text (then up to the end of its first line is read, waiting at most
  /// 200 ms more), Malformed for a length over kMaxPayload (nothing of the payload is read),
  /// TransportError for an end of stream inside a frame, Timeout past the deadline.
  /// With answers_only() set (the harness's side), a header whose type is no answer's
  /// (is_answer_type) throws Malformed at once, before any of its payload is read: a request's
  /// type or an unknown one means the bytes are not the frame the header claims, and its length
  /// cannot be trusted (a wait for it would last until the deadline). A Timeout inside a frame
  /// says how many of its bytes came.
  virtual std::optional<Frame> read_frame(Clock::time_point deadline);
  /// Sets whether read_frame accepts only answers' types (see there). Default: false.
  void set_answers_only(bool on) { answers_only_ = on; }
  /// Whether bytes (or the end of the stream) can be read now, without waiting: before a
  /// request, bytes are a frame nobody asked for (§3: the chip sends nothing unasked).
  bool has_input_now() const;

  /// A one-line description of the peer, for error messages ("chip process 'python3 x.py'").
  const std::string& peer() const { return peer_; }
  /// Closes the write side (the peer then reads end of file), keeping the read side open.
  void close_write();
  /// For a child process: how it ended ("exited with status 3", "was killed by signal 9 (Killed)"), waiting
  /// up to `wait` for it; "" when it is still running or this is no child.
  virtual std::string exit_status(std::chrono::milliseconds wait);
  /// For a child process: ends it at once (SIGKILL) and reaps it; no-op otherwise.
  virtual void kill_peer() {}
  /// Ends the session from this side: closes the write side and, for a child process, waits up
  /// to 5 s for it to exit, then SIGTERM, 2 s more, SIGKILL (dut-protocol.md §1). Returns ""
  /// when the peer ended by itself (or is no child), else one line saying what it took ("did
  /// not exit within 5 s of the end of its input: ended with SIGTERM"). With the stop flag
  /// (set_stop) set, before or during the wait, the child is killed at once (SIGKILL) and the
  /// note says so (it begins with kKilledOnStop). The destructor does the same when this was
  /// not called.
  virtual std::string finish() {
    close_write();
    return "";
  }
  /// A flag (set from a signal handler) that ends every wait of this connection: a read or
  /// write waiting for the peer checks it at least every 100 ms and throws Stopped once it is
  /// true. nullptr (the default): waits end only at their deadline.
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }
  /// Whether the stop flag of set_stop() is set (a SIGINT, SIGTERM or SIGHUP came); false without one.
  bool stop_requested() const { return stop_ && stop_->load(std::memory_order_relaxed); }

 protected:
  /// A connection over two file descriptors (the same one for a socket; -1 for a decorator that
  /// overrides write_frame and read_frame), which the connection closes.
  Connection(int read_fd, int write_fd, std::string peer);
  int rfd_ = -1, wfd_ = -1;
  std::string peer_;
  const std::atomic<bool>* stop_ = nullptr;
  bool answers_only_ = false;
  /// poll()'s timeout until `deadline`: at most 100 ms with a stop flag (checked by stopped()).
  int wait_ms(Clock::time_point deadline) const;
  /// Throws Stopped (naming `what`) when the stop flag is set.
  void stopped(const std::string& what) const;

 private:
  bool read_exact(std::uint8_t* p, std::size_t n, Clock::time_point deadline, bool at_frame_start);
};

/// Sends SIGKILL to the process group of every chip process spawn_chip() started that has not
/// been ended yet (at most 64 are tracked): for a process that must end at once (a signal
/// handler's _exit). Async-signal-safe; never throws.
void kill_chip_processes_now() noexcept;

/// Starts `/bin/sh -c 'exec COMMAND'` (in `workdir` when given) with pipes on its stdin and stdout; its stderr is this
/// process's. Throws TransportError when the shell cannot be started or `workdir` is not a folder. The returned connection
/// ends the child with finish() or when destroyed: close stdin, wait up to 5 s, SIGTERM, 2 s
/// more, SIGKILL (§1).
std::unique_ptr<Connection> spawn_chip(const std::string& command, const std::filesystem::path& workdir = {});

/// Connects to a listening chip. Throws TransportError (one line with the address and errno's
/// text) when it cannot, or Timeout after `timeout`.
std::unique_ptr<Connection> connect_chip(const Address& address, std::chrono::milliseconds timeout);

/// A connection over file descriptors this process already has (a pipe, a socketpair), which it
/// then owns and closes; `peer` names the other side in errors.
std::unique_ptr<Connection> fd_connection(int read_fd, int write_fd, std::string peer);

/// This process's stdin/stdout as a connection (the chip side of `--dut`).
std::unique_ptr<Connection> stdio_connection();

/// A listening socket (the chip side of `--dut-connect`).
class Listener {
 public:
  /// Binds and listens; a Unix socket's stale file is replaced. Throws TransportError.
  explicit Listener(const Address& address);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  /// Waits for the next connection; nullptr when `stop` was set (checked every 200 ms).
  std::unique_ptr<Connection> accept(const std::atomic<bool>* stop = nullptr);
  /// The bound address (with the port the kernel chose for "tcp:HOST:0").
  const Address& address() const { return address_; }

 private:
  int fd_ = -1;
  Address address_;
};

/// Ignores SIGPIPE for the process (a write to a dead chip then fails with EPIPE instead of
/// killing the harness). Idempotent.
void ignore_sigpipe();

}  // namespace lockstep::dut
