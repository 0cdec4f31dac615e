// The chip side of lockstep-dut/1 over any chip::ChipBackend: `lockstep chip-server` serves the
// built-in executors with it, and it is the protocol's C++ reference implementation
// (docs/spec/dut-protocol.md). Each session gets a backend of its own from a factory (streams
// belong to their session, §1), over the one loaded chip.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "lockstep/chip/backend.hpp"
#include "lockstep/dut/transport.h"

namespace lockstep::dut {

/// What a chip-server announces and accepts.
struct ServerOptions {
  std::string name = "lockstep chip-server";  ///< HELLO_OK's name
  std::uint32_t max_streams = 1024;           ///< HELLO_OK's max_streams (1..65536)
  std::string auth;                           ///< non-empty: HELLO's auth must equal it (§9)
  /// Capabilities to announce at most (a kMultiStep | kProbes | kHashCap | kSaveRestore mask; the
  /// backend's own are announced when set here): to test a harness against a plainer chip.
  std::uint32_t capabilities = 0xF;
  /// Non-empty: HELLO_OK's identity, instead of the backend's (ChipBackend::identity, which hashes
  /// the chip's configuration alone): `chip-server` gives the chip file's hash, so that a chip with
  /// other weights has another identity (dut-protocol.md §3.1: --resume refuses it).
  std::string identity;
};

/// Counts of one session, for the server's log.
struct SessionStats {
  std::uint64_t frames = 0, steps = 0, errors = 0;
  bool said_bye = false;
  /// A HELLO arrived (answered or refused): a harness, not a connection that closed unused
  /// (a port probe), which `chip-server --sessions N` does not count.
  bool hello = false;
  /// The HELLO was answered HELLO_OK (authenticated, versions agreed): a session served, which
  /// `chip-server --sessions N` counts. A refused HELLO (a wrong token, another protocol
  /// version) is not.
  bool accepted = false;
  /// Why the last HELLO was refused, when it was: the ERROR's message ("this chip speaks protocol
  /// version 1, not 99", "authentication failed"); empty when none was.
  std::string hello_refused;
  /// Why the session ended: "BYE", "end of stream", "authentication failed", or "malformed
  /// input: ..." with the message the peer was sent (an over-long frame, text where a frame
  /// belongs).
  std::string ended;
  /// The session ended cleanly: BYE, or end of stream after a HELLO_OK.
  bool clean() const { return ended == "BYE" || (accepted && ended == "end of stream"); }
};

/// Serves one session on `conn` until BYE, end of stream, an over-long frame or a failed
/// authentication; `make_backend` is called once, at HELLO. Never throws for anything the harness
/// sends (it answers ERROR, §3.10); throws TransportError only when the connection itself fails.
SessionStats serve_session(Connection& conn, const std::function<std::unique_ptr<chip::ChipBackend>()>& make_backend,
                           const ServerOptions& options);

}  // namespace lockstep::dut
