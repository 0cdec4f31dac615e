#include "lockstep/dut/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace lockstep::dut {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void set_cloexec(int fd) {
  const int flags = fcntl(fd, F_GETFD, 0);
  if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Milliseconds until the deadline for poll(), at least 0, at most a minute per call.
int poll_ms(Connection::Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Connection::Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, 60000));
}

}  // namespace

void ignore_sigpipe() {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
}

// ------------------------------------------------------------------------------------ Address

bool Address::local() const {
  if (kind == Kind::kUnix) return true;
  if (host == "localhost") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;  // ::ffff:127.x.y.z
  }
  return false;
}

std::string Address::to_string() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp:" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Address parse_address(const std::string& text) {
  Address a;
  if (text.rfind("unix:", 0) == 0) {
    a.kind = Address::Kind::kUnix;
    a.path = text.substr(5);
    if (a.path.empty()) throw std::invalid_argument("address '" + text + "': unix: needs a path");
    if (a.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      throw std::invalid_argument("address '" + text + "': a Unix socket path is at most " +
                                  std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes");
    }
    return a;
  }
  if (text.rfind("tcp:", 0) == 0) {
    a.kind = Address::Kind::kTcp;
    const std::string rest = text.substr(4);
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
      throw std::invalid_argument("address '" + text + "': expected tcp:HOST:PORT");
    }
    a.host = rest.substr(0, colon);
    // An IPv6 address is written in brackets (RFC 3986 section 3.2.2): tcp:[::1]:7000.
    if (a.host.front() == '[' || a.host.back() == ']') {
      in6_addr addr{};
      const bool closed = a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']';
      if (closed) a.host = a.host.substr(1, a.host.size() - 2);
      if (!closed || inet_pton(AF_INET6, a.host.c_str(), &addr) != 1)
        throw std::invalid_argument("address '" + text + "': '" + rest.substr(0, colon) + "' is not an IPv6 address in brackets");
    } else if (a.host.find(':') != std::string::npos) {
      throw std::invalid_argument("address '" + text + "': write an IPv6 address in brackets, as tcp:[::1]:PORT");
    } else
    // A host of digits and dots is an IPv4 address and must be a valid one (999.1.1.1 is not a
    // name to look up); anything else is a host name.
    if (a.host.find_first_not_of("0123456789.") == std::string::npos) {
      in_addr addr{};
      if (inet_pton(AF_INET, a.host.c_str(), &addr) != 1)
        throw std::invalid_argument("address '" + text + "': '" + a.host + "' is not an IPv4 address (four numbers 0..255)");
    }
    const std::string port = rest.substr(colon + 1);
    unsigned long v = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || v > 65535) throw std::invalid_argument("address '" + text + "': PORT must be 0..65535");
      v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v > 65535) throw std::invalid_argument("address '" + text + "': PORT must be 0..65535");
    a.port = static_cast<std::uint16_t>(v);
    return a;
  }
  throw std::invalid_argument("address '" + text + "': expected unix:PATH or tcp:HOST:PORT");
}

// ------------------------------------------------------------------------------------ Connection

Connection::Connection(int read_fd, int write_fd, std::string peer)
    : rfd_(read_fd), wfd_(write_fd), peer_(std::move(peer)) {}

Connection::~Connection() {
  if (wfd_ >= 0 && wfd_ != rfd_) ::close(wfd_);
  if (rfd_ >= 0) ::close(rfd_);
}

void Connection::close_write() {
  if (wfd_ < 0) return;
  if (wfd_ == rfd_) {
    ::shutdown(wfd_, SHUT_WR);
  } else {
    ::close(wfd_);
  }
  wfd_ = -1;
}

std::string Connection::exit_status(std::chrono::milliseconds) { return ""; }

void Connection::write_frame(std::uint32_t type, std::span<const std::uint8_t> payload, Clock::time_point deadline) {
  const std::vector<std::uint8_t> bytes = encode_frame(type, payload);
  write_raw(bytes, deadline, type_name(type) + " frame");
}

void Connection::write_raw(std::span<const std::uint8_t> bytes, Clock::time_point deadline, const std::string& what) {
  if (wfd_ < 0) throw TransportError(peer_ + ": the connection is closed");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(wfd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{wfd_, POLLOUT, 0};
      const int ms = wait_ms(deadline);
      if (ms == 0 && Clock::now() >= deadline) {
        throw Timeout(peer_ + " did not read its input within the timeout (" + what + ")");
      }
      ::poll(&p, 1, ms);
      stopped("while it was sent a " + what);
      continue;
    }
    const int e = errno;
    throw TransportError(peer_ + " closed its side (" + (e == EPIPE ? std::string("broken pipe") : errno_text(e)) +
                         ") while a " + what + " was sent");
  }
}

int Connection::wait_ms(Clock::time_point deadline) const {
  const int ms = poll_ms(deadline);
  return stop_ ? std::min(ms, 100) : ms;
}

void Connection::stopped(const std::string& what) const {
  if (stop_ && stop_->load(std::memory_order_relaxed)) throw Stopped(peer_ + ": given up " + what);
}

bool Connection::read_exact(std::uint8_t* p, std::size_t n, Clock::time_point deadline, bool at_frame_start) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(rfd_, p + got, n - got);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) {
      if (got == 0 && at_frame_start) return false;
      throw TransportError(peer_ + " closed its side inside a frame (" + std::to_string(got) + " of " +
                           std::to_string(n) + " bytes)");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      const int ms = wait_ms(deadline);
      if (ms == 0 && Clock::now() >= deadline) {
        // Part of a frame came: said, since the chip did write (a header with a wrong length, or
        // an answer cut short), which "did not answer" would hide.
        if (got > 0 || !at_frame_start)
          throw Timeout(peer_ + " did not answer within the timeout: " + std::to_string(got) + " of the " +
                        std::to_string(n) + " bytes " + (at_frame_start ? "of a frame header" : "its frame header announced") +
                        " came");
        throw Timeout(peer_ + " did not answer within the timeout");
      }
      pollfd pf{rfd_, POLLIN, 0};
      const int ready = ::poll(&pf, 1, std::min(ms, 250));
      stopped("while waiting for its answer");
      if (ready == 0) {
        // A chip process that has ended sends nothing more, even when a process it started still
        // holds its stdout open (so no end of file comes): said now, not after --dut-timeout.
        if (const std::string st = exit_status(std::chrono::milliseconds(0)); !st.empty()) {
          const ssize_t last = ::read(rfd_, p + got, n - got);  // bytes written just before it ended
          if (last > 0) {
            got += static_cast<std::size_t>(last);
            continue;
          }
          if (last == 0 && got == 0 && at_frame_start) return false;
          throw TransportError(peer_ + " ended without answering" +
                               (last < 0 ? " (a process it started still holds its stdout open)" : ""));
        }
      }
      continue;
    }
    const int e = errno;
    throw TransportError(peer_ + ": read failed: " + errno_text(e));
  }
  return true;
}

std::optional<Frame> Connection::read_frame(Clock::time_point deadline) {
  if (rfd_ < 0) throw TransportError(peer_ + ": the connection is closed");
  std::uint8_t head[8];
  if (!read_exact(head, 8, deadline, true)) return std::nullopt;
  Frame f;
  std::uint32_t length = 0;
  std::memcpy(&f.type, head, 4);
  std::memcpy(&length, head + 4, 4);
  const auto is_text = [](std::uint8_t c) { return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r'; };
  // A line of text shorter than a header (a stray print("ok")): printable bytes, then a newline,
  // where a frame's type would have a byte 0x0a in its upper bytes, which no type has.
  const std::uint8_t* newline = std::find(head, head + 8, static_cast<std::uint8_t>(0x0a));
  const bool short_line = newline != head && newline != head + 8 &&
                          std::all_of(static_cast<const std::uint8_t*>(head), newline, [](std::uint8_t c) { return c >= 0x20 && c < 0x7f; });
  if (short_line || std::all_of(head, head + 8, is_text)) {
    // Not a frame but text (a type's upper bytes are 0): quote its first line.
    constexpr std::size_t kQuote = 60;
    std::string line(reinterpret_cast<const char*>(head), 8);
    const auto until = std::min(deadline, Clock::now() + std::chrono::milliseconds(200));
    try {
      std::uint8_t c = 0;
      while (line.find('\n') == std::string::npos && line.size() <= kQuote && read_exact(&c, 1, until, false))
        line.push_back(static_cast<char>(c));
    } catch (const TransportError&) {
      // the text ended (or paused): quote what came
    }
    line = line.substr(0, line.find_first_of("\r\n"));
    std::string shown;
    for (char c : line) shown += is_text(static_cast<std::uint8_t>(c)) && c != '\t' ? c : ' ';
    const bool cut = shown.size() > kQuote;
    if (cut) shown = shown.substr(0, kQuote);
    throw StrayText(peer_ + " wrote text where a frame belongs: \"" + shown + (cut ? "...\"" : "\""), shown);
  }
  if (answers_only_ && !is_answer_type(f.type)) {
    const std::string name = type_name(f.type);  // a request's name, or "type 0x..."
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", f.type);
    throw Malformed("a frame header of type " + std::string(hex) +
                    (name.rfind("type ", 0) == 0 ? std::string(", which no message has,") : ", a request's (" + name + "),") +
                    " and length " + std::to_string(length) +
                    ": the bytes are not a frame of §3 (stray output, or a wrong header); nothing of its payload was read");
  }
  if (length > kMaxPayload) {
    throw Malformed(type_name(f.type) + " frame: length " + std::to_string(length) + " exceeds the limit " +
                    std::to_string(kMaxPayload));
  }
  f.payload.resize(length);
  if (length) {
    try {
      read_exact(f.payload.data(), length, deadline, false);
    } catch (const Timeout& e) {
      throw Timeout(std::string(e.what()) + " (a " + type_name(f.type) + " frame of length " + std::to_string(length) +
                    ": too large a length, or an answer cut short)");
    }
  }
  return f;
}

bool Connection::has_input_now() const {
  if (rfd_ < 0) return false;
  pollfd p{rfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

// ------------------------------------------------------------------------------------ child

namespace {

// Whether a process of group g runs: a zombie does not (an orphan that the system's init has not
// reaped yet, as in a container whose init reaps nothing); kill(-g, 0) counts zombies too.
bool group_runs(pid_t g) {
  if (::kill(-g, 0) != 0) return false;
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc", ec);
  if (ec) return true;  // no /proc: trust kill()
  for (const auto& e : it) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so read after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long long ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == g && state != 'Z') return true;
  }
  return false;
}

// The process groups of the chip processes this process runs (ChildConnection), for
// kill_chip_processes_now(): lock-free slots, read from a signal handler.
std::atomic<pid_t> g_chip_groups[64];

void note_chip_group(pid_t g) {
  for (auto& slot : g_chip_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, g)) return;
  }
}

void forget_chip_group(pid_t g) {
  for (auto& slot : g_chip_groups) {
    pid_t was = g;
    if (slot.compare_exchange_strong(was, 0)) return;
  }
}

class ChildConnection final : public Connection {
 public:
  ChildConnection(int rfd, int wfd, pid_t pid, std::string command)
      : Connection(rfd, wfd, "chip process '" + command + "'"), pid_(pid), pgid_(pid) {
    note_chip_group(pgid_);
  }

  ~ChildConnection() override { finish(); }

  std::string finish() override {
    close_write();
    if (finished_) return "";
    finished_ = true;
    std::string note;
    if (pid_ > 0 && exit_status(std::chrono::milliseconds(5000)).empty()) {
      if (stop_requested()) {
        // a SIGINT, SIGTERM or SIGHUP ends the wait within 100 ms (§8; found by an outside tester:
        // a signal while the chip took its 5 s to end was not acted on, and left no trace)
        kill_peer();
        note = std::string(kKilledOnStop) + " while it had not yet exited at the end of its session";
      } else {
        ::kill(pid_, SIGTERM);
        if (!exit_status(std::chrono::milliseconds(2000)).empty()) {
          note = "did not exit within 5 s of the end of its input (end of file on its stdin): ended with SIGTERM";
        } else {
          killed_ = true;
          ::kill(pid_, SIGKILL);
          exit_status(std::chrono::milliseconds(5000));
          note = "did not exit within 5 s of the end of its input (end of file on its stdin), nor 2 s after "
                 "SIGTERM: killed with SIGKILL";
        }
      }
    }
    const std::string left = end_group();
    return note.empty() ? left : left.empty() ? note : note + "; " + left;
  }

  void kill_peer() override {
    killed_ = true;  // reaped below even when a stop was asked for
    if (pgid_ > 0) ::kill(-pgid_, SIGKILL);  // the chip and every process it started (§1) (end_group forgets it)
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    exit_status(std::chrono::milliseconds(5000));
  }

  std::string exit_status(std::chrono::milliseconds wait) override {
    if (!status_.empty() || pid_ <= 0) return status_;
    const auto until = Clock::now() + wait;
    for (;;) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        if (WIFEXITED(st)) status_ = "exited with status " + std::to_string(WEXITSTATUS(st));
        else if (WIFSIGNALED(st)) status_ = std::string("was killed by signal ") + std::to_string(WTERMSIG(st)) + " (" +
                                            strsignal(WTERMSIG(st)) + ")";
        else status_ = "ended";
        pid_ = -1;
        return status_;
      }
      if (r < 0 && errno != EINTR) {
        pid_ = -1;
        return status_ = "ended";
      }
      if (Clock::now() >= until || (!killed_ && stop_requested())) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  // The chip process has ended: ends what it left running in its process group (a process it
  // started in the background), SIGTERM, then SIGKILL after 1 s. Returns a note saying so, or "".
  std::string end_group() {
    const pid_t g = pgid_;
    pgid_ = -1;
    if (g > 0) forget_chip_group(g);
    if (g <= 0 || !group_runs(g)) return "";
    ::kill(-g, SIGTERM);
    const auto until = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < until) {
      if (!group_runs(g)) return "left processes running after it ended (its process group): ended with SIGTERM";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(-g, SIGKILL);
    return "left processes running after it ended (its process group): killed with SIGKILL";
  }

  bool finished_ = false;
  bool killed_ = false;  // kill_peer() sent SIGKILL
  pid_t pid_ = -1;
  pid_t pgid_ = -1;  // the chip's own process group (spawn_chip makes it its pid), ended with it
  std::string status_;
};

class FdConnection final : public Connection {
 public:
  FdConnection(int rfd, int wfd, std::string peer, bool owns) : Connection(rfd, wfd, std::move(peer)), owns_(owns) {}
  ~FdConnection() override {
    if (!owns_) rfd_ = wfd_ = -1;  // stdin/stdout stay open
  }

 private:
  bool owns_;
};

}  // namespace

void kill_chip_processes_now() noexcept {
  for (auto& slot : g_chip_groups)
    if (const pid_t g = slot.load(); g > 0) ::kill(-g, SIGKILL);
}

std::unique_ptr<Connection> spawn_chip(const std::string& command, const std::filesystem::path& workdir) {
  ignore_sigpipe();
  // A folder that is gone is said before the chip is started (found by an outside tester: a case
  // replayed on another machine named its dut.workdir only on the child's stderr, and the error
  // blamed the executable for the shell's 126).
  if (std::error_code ec; !workdir.empty() && !std::filesystem::is_directory(workdir, ec))
    throw TransportError("cannot start the chip process: its working folder " + workdir.string() +
                         (std::filesystem::exists(workdir, ec) ? " is not a folder" : " does not exist") +
                         " (a case records the folder its run started the chip in: lockstep replay CASE --dut "
                         "'COMMAND' starts it from here)");
  int to_child[2], from_child[2];
  if (::pipe(to_child) != 0) throw TransportError("cannot start the chip process: pipe: " + errno_text(errno));
  if (::pipe(from_child) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    throw TransportError("cannot start the chip process: pipe: " + errno_text(errno));
  }
  const std::string script = "exec " + command;
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
    throw TransportError("cannot start the chip process: fork: " + errno_text(e));
  }
  if (pid == 0) {
    // Its own process group: the harness ends the chip with everything it starts (dut-protocol.md §1).
    ::setpgid(0, 0);
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
    // The default SIGPIPE and signal mask for the chip (the harness ignores SIGPIPE).
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGINT, SIG_IGN);  // the harness handles ^C and ends the chip itself
    if (!workdir.empty() && ::chdir(workdir.c_str()) != 0) {
      const std::string m = "lockstep: chip process: cannot enter " + workdir.string() + ": " + std::strerror(errno) + "\n";
      (void)!::write(2, m.data(), m.size());
      _exit(126);
    }
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that no signal to the group can come before the child's own call
  ::close(to_child[0]);
  ::close(from_child[1]);
  set_cloexec(to_child[1]);
  set_cloexec(from_child[0]);
  set_nonblocking(to_child[1]);
  set_nonblocking(from_child[0]);
  return std::make_unique<ChildConnection>(from_child[0], to_child[1], pid, command);
}

std::unique_ptr<Connection> fd_connection(int read_fd, int write_fd, std::string peer) {
  ignore_sigpipe();
  set_nonblocking(read_fd);
  if (write_fd >= 0) set_nonblocking(write_fd);
  return std::make_unique<FdConnection>(read_fd, write_fd, std::move(peer), true);
}

std::unique_ptr<Connection> stdio_connection() {
  ignore_sigpipe();
  set_nonblocking(0);
  set_nonblocking(1);
  return std::make_unique<FdConnection>(0, 1, "harness (stdin/stdout)", false);
}

namespace {

// A socket for `a`, connected (connect) or bound and listening (listen). Throws TransportError.
int open_socket(const Address& a, bool listen, std::chrono::milliseconds timeout, Address* bound) {
  if (a.kind == Address::Kind::kUnix) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw TransportError(a.to_string() + ": socket: " + errno_text(errno));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, a.path.c_str(), a.path.size() + 1);
    if (listen) {
      // A socket file that still answers belongs to a running chip: never take it over. One
      // that does not is stale (a server that was killed) and is replaced.
      const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (probe >= 0) {
        const bool live = ::connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
        ::close(probe);
        if (live) {
          ::close(fd);
          throw TransportError("cannot listen on " + a.to_string() + ": another process is listening there");
        }
      }
      // Only a socket is ever removed: a regular file, a folder or anything else at the path is
      // the user's, and is refused (an outside tester's --listen unix:FILE deleted the file).
      struct stat st {};
      if (::lstat(a.path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
          ::close(fd);
          throw TransportError("cannot listen on " + a.to_string() + ": the path exists and is not a socket (" +
                               (S_ISDIR(st.st_mode) ? "a folder" : "a file") + "); give a new path");
        }
        ::unlink(a.path.c_str());
      }
      if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 8) != 0) {
        const int e = errno;
        ::close(fd);
        throw TransportError("cannot listen on " + a.to_string() + ": " + errno_text(e));
      }
      if (bound) *bound = a;
    } else if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      const int e = errno;
      ::close(fd);
      throw TransportError("cannot connect to the chip at " + a.to_string() + ": " + errno_text(e));
    }
    return fd;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // a name or an IPv4 or IPv6 address
  hints.ai_socktype = SOCK_STREAM;
  if (listen) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(a.port);
  const int g = ::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res);
  if (g != 0 || !res) {
    throw TransportError((listen ? "cannot listen on " : "cannot connect to the chip at ") + a.to_string() + ": " +
                         gai_strerror(g));
  }
  const int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) {
    freeaddrinfo(res);
    throw TransportError(a.to_string() + ": socket: " + errno_text(errno));
  }
  const int one = 1;
  if (listen) {
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 8) != 0) {
      const int e = errno;
      freeaddrinfo(res);
      ::close(fd);
      throw TransportError("cannot listen on " + a.to_string() + ": " + errno_text(e));
    }
    if (bound) {
      *bound = a;
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
        bound->port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port
                                                     : reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
    }
    freeaddrinfo(res);
    return fd;
  }
  set_nonblocking(fd);
  int rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (rc == 0) {
      ::close(fd);
      throw Timeout("cannot connect to the chip at " + a.to_string() + ": no answer within the timeout");
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    rc = err ? -1 : 0;
    errno = err;
  }
  if (rc != 0) {
    const int e = errno;
    ::close(fd);
    throw TransportError("cannot connect to the chip at " + a.to_string() + ": " + errno_text(e));
  }
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

class SocketConnection final : public Connection {
 public:
  SocketConnection(int fd, std::string peer) : Connection(fd, fd, std::move(peer)) {}
  ~SocketConnection() override { wfd_ = -1; }  // one fd: closed once, as rfd_
};

}  // namespace

std::unique_ptr<Connection> connect_chip(const Address& address, std::chrono::milliseconds timeout) {
  ignore_sigpipe();
  const int fd = open_socket(address, false, timeout, nullptr);
  set_nonblocking(fd);
  return std::make_unique<SocketConnection>(fd, "chip at " + address.to_string());
}

Listener::Listener(const Address& address) {
  ignore_sigpipe();
  fd_ = open_socket(address, true, std::chrono::milliseconds(0), &address_);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
  if (address_.kind == Address::Kind::kUnix && !address_.path.empty()) ::unlink(address_.path.c_str());
}

std::unique_ptr<Connection> Listener::accept(const std::atomic<bool>* stop) {
  for (;;) {
    if (stop && stop->load()) return nullptr;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, 200);
    if (r < 0 && errno != EINTR) throw TransportError("accept on " + address_.to_string() + ": " + errno_text(errno));
    if (r <= 0) continue;
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      throw TransportError("accept on " + address_.to_string() + ": " + errno_text(errno));
    }
    set_nonblocking(c);
    if (address_.kind == Address::Kind::kTcp) {
      const int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return std::make_unique<SocketConnection>(c, "harness on " + address_.to_string());
  }
}

}  // namespace lockstep::dut
