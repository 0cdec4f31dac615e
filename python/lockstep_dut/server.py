"""The chip side of lockstep-dut/1 (docs/spec/dut-protocol.md): a session loop and ``serve()``.

A chip builder writes an object with the attributes and methods below and calls
``serve(chip)``; the kit does the framing, the handshake, every check of the spec's rules
(streams that exist and were reset, token ids below ``vocab_size``, distinct streams, limits)
and turns exceptions into ERROR frames, so that the chip's code sees only valid requests.

Required:
  ``vocab_size: int``, ``max_streams: int``, ``name: str``, ``identity: str``
  ``reset(stream: int, image: Image) -> None``      the machine's reset state for the image (§3.3)
  ``step(inputs: list[(stream, token)]) -> list[int]``  one step of each listed stream (§3.4)

Optional (each one the chip defines turns on what it serves; capabilities are announced from them):
  ``streams(n: int) -> None``     STREAMS: drop every stream, make ``0 .. n-1`` (also called with
                                  ``n = 0`` when a session ends)
  ``forced(entries: list[(stream, list[int])]) -> list[list[int]]``   FORCED natively (§3.5)
  ``free(entries: list[(stream, count, first)]) -> list[list[int]]``  FREE natively (§3.6)
  ``probe_map() -> ProbeMap``, ``probe(stream, layer, after, field) -> list[float]`` and, optional
  among them, ``probe_record(on: bool)``                              PROBES (§3.7)
  ``hash(stream) -> int`` (u64)                                       HASH (§3.8)
  ``save(stream) -> bytes``, ``restore(stream, blob: bytes)``         SAVE_RESTORE (§3.9)

MULTI_STEP is always announced: without ``forced``/``free`` the kit runs them as a loop of
``step`` calls, one batch per step over every entry that still has steps to make (ragged
lengths included). That gives the same tokens as single steps by construction and still saves
the harness one round trip per token; a GPU chip gains more from native ``forced``/``free``.

Errors: raise ``BadArgument`` (code 2), ``Unsupported`` (3), ``ImageError`` (4), or any
``DutError(message, code)``; any other exception becomes ERROR code 7 (internal error) with
one line ``Type: message`` (set ``LOCKSTEP_DUT_TRACEBACK=1`` to get its traceback on stderr).
"""

from __future__ import annotations

import argparse
import ipaddress
import operator
import os
import signal
import socket
import stat
import sys
import threading
import traceback
from typing import Any, BinaryIO, Callable, List, Optional, Sequence, Set, Tuple

from . import protocol as P
from .cli import SetupError
from .protocol import Malformed, ProbeMap


class DutError(Exception):
    """An error the chip answers with ``ERROR(code, message)`` (§3.10); raise ``DutError(message, code)``."""

    code = P.E_INTERNAL

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        if code is not None:
            # checked here, where the chip's code raises it: a code the protocol lacks (a str
            # "7") broke the session instead of answering (found by an outside tester)
            try:
                value = as_int(code, "DutError code")
            except TypeError:
                value = None
            if value is None or not P.E_MALFORMED <= value <= P.E_INTERNAL:
                raise TypeError(f"DutError code {code!r}: must be an int {P.E_MALFORMED} .. {P.E_INTERNAL} "
                                f"(dut-protocol.md §3.10)")
            self.code = value


class BadArgument(DutError):
    """ERROR code 2: a stream that does not exist or was not reset, a bad token id, ..."""
    code = P.E_BAD_ARGUMENT


class Unsupported(DutError):
    """ERROR code 3: a capability the chip does not support."""
    code = P.E_UNSUPPORTED


class ImageError(DutError):
    """ERROR code 4: the guest image or a blob cannot be used (a missing section, a foreign blob)."""
    code = P.E_IMAGE


def _type_name(value: Any) -> str:
    """``numpy.int64``, ``torch.Tensor``, ``str``: how a wrong value's type is named in errors."""
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__qualname__}"


def as_int(value: Any, what: str) -> int:
    """``value`` as a Python int: an int, or a value that is one without rounding (a numpy
    integer, a one-element integer tensor: anything with ``__index__``). A bool, a float, a
    string or a tensor of floats raises ``TypeError`` naming ``what``, the value and its type
    (found by an outside tester: ``np.int64(5)`` read "token 5, not an id below 20736")."""
    # numpy's bool_ and a bool tensor have __index__ as bool has: a truth value is not an id
    if isinstance(value, bool) or str(getattr(value, "dtype", "")) in ("bool", "torch.bool"):
        raise TypeError(f"{what} is {P.one_line(repr(value))} (a {_type_name(value)} of bools), not an int"
                        if not isinstance(value, bool) else f"{what} is {value!r} (a bool), not an int")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} is {P.one_line(repr(value))} (a {_type_name(value)}), not an int: "
                        f"convert it with int()") from None


def _log(message: str) -> None:
    sys.stderr.write("lockstep_dut: " + P.one_line(message) + "\n")
    sys.stderr.flush()


def capabilities_of(chip: Any) -> int:
    """The capability bits (§3.1) announced for ``chip``: from the optional methods it defines."""
    caps = P.MULTI_STEP
    if callable(getattr(chip, "probe_map", None)) and callable(getattr(chip, "probe", None)):
        caps |= P.PROBES
    if callable(getattr(chip, "hash", None)):
        caps |= P.HASH_CAP
    if callable(getattr(chip, "save", None)) and callable(getattr(chip, "restore", None)):
        caps |= P.SAVE_RESTORE
    return caps


class Session:
    """One session (§3): turns each request frame into exactly one response frame.

    ``auth``: the shared secret HELLO must carry (§9), or None to accept any.
    ``check_outputs``: check the chip's answers (list lengths, u32 token ids below
    ``vocab_size``, probe widths) and answer ERROR 7 instead of sending a bad one; a scripted
    faulty chip for harness tests turns it off.
    """

    def __init__(self, chip: Any, auth: Optional[str] = None, check_outputs: bool = True):
        if auth is not None and not auth:
            raise ValueError("an empty auth secret would let any harness in: give a secret, or None")
        self.chip = chip
        self.auth = auth
        self.check_outputs = check_outputs
        # The chip object is checked whole before any harness sees it: a missing method or a
        # value of the wrong type is one line naming it (SetupError), not a failure at the first
        # request or a silent conversion ("20736" or 20736.7 as vocab_size, None as the name).
        chip_name = _type_name(chip)
        for attr in ("vocab_size", "max_streams", "name", "identity"):
            if not hasattr(chip, attr):
                raise SetupError(f"the chip ({chip_name}) has no attribute {attr!r} (required)")
        for method in ("reset", "step"):
            if not callable(getattr(chip, method, None)):
                raise SetupError(f"the chip ({chip_name}) has no method {method}() (required)")
        try:
            self.vocab_size = as_int(chip.vocab_size, "the chip's vocab_size")
            self.max_streams = as_int(chip.max_streams, "the chip's max_streams")
        except TypeError as e:
            raise SetupError(str(e)) from None
        for attr in ("name", "identity"):
            if not isinstance(getattr(chip, attr), str):
                value = getattr(chip, attr)
                raise SetupError(f"the chip's {attr} is {value!r} (a {_type_name(value)}), not a str")
        if not 1 <= self.vocab_size <= 0xFFFFFFFF or not 1 <= self.max_streams <= P.MAX_ENTRIES:
            raise SetupError(f"a chip needs vocab_size 1 .. 2^32-1 (a u32, §3.1) and max_streams 1 .. "
                             f"{P.MAX_ENTRIES} (vocab_size {self.vocab_size}, max_streams {self.max_streams})")
        for attr in ("name", "identity"):  # a str of HELLO_OK: at most 65,535 UTF-8 bytes (§2)
            size = len(getattr(chip, attr).encode("utf-8", "surrogatepass"))
            if size > 0xFFFF:
                raise SetupError(f"the chip's {attr} is {size} bytes in UTF-8: at most 65,535 (dut-protocol.md §2)")
        self.caps = capabilities_of(chip)
        self.greeted = False
        self.closing = False  # set after BYE or a fatal error: the session ends
        # A HELLO arrived (answered or refused): a harness, not a connection that closed unused
        # (a port probe, a health check), which ``serve(sessions=N)`` does not count.
        self.hello = False
        self.refused = ""  # why the last HELLO was refused (its ERROR's message), for the log
        self.ended = ""  # why ``run`` returned: "BYE", "end of stream", "authentication failed", ...
        self.failed = False  # the connection failed (closed inside a frame): counted like a HELLO
        self.n_streams = 0
        self.was_reset: Set[int] = set()
        self.recording = False
        self.recorded: Set[int] = set()  # streams whose last step ran with recording on
        self._probe_map: Optional[ProbeMap] = None

    # -- the loop ---------------------------------------------------------------------------

    def respond(self, type_: int, payload: bytes) -> Tuple[int, bytes]:
        """The response ``(type, payload)`` to one request frame."""
        try:
            return P.RESPONSE | type_, self._dispatch(type_, payload)
        except Malformed as e:
            if type_ == P.HELLO:
                self.refused = str(e)
            return P.ERROR, P.encode_error(P.E_MALFORMED, str(e))
        except DutError as e:
            if type_ == P.HELLO:
                self.refused = str(e)
            code = e.code  # a subclass may set one the protocol lacks: an internal error, named
            if isinstance(code, bool) or not isinstance(code, int) or not P.E_MALFORMED <= code <= P.E_INTERNAL:
                _log(f"internal error: {type(e).__name__} has code {code!r}, not {P.E_MALFORMED} .. {P.E_INTERNAL}")
                return P.ERROR, P.encode_error(P.E_INTERNAL, f"{type(e).__name__} (code {code!r}): {e}")
            if code == P.E_AUTH:
                self.closing = True
                self.ended = "authentication failed"
            return P.ERROR, P.encode_error(code, str(e))
        except Exception as e:  # the chip's own code failed: internal error, one line
            if os.environ.get("LOCKSTEP_DUT_TRACEBACK"):
                traceback.print_exc(file=sys.stderr)
            message = f"{type(e).__name__}: {e}"
            _log("internal error: " + message)
            return P.ERROR, P.encode_error(P.E_INTERNAL, message)

    def run(self, rfile: BinaryIO, send: Callable[[bytes], None]) -> None:
        """Serves requests from ``rfile`` until end of file, BYE, or a frame that cannot be
        resynchronised (a length over the limit: answered with ERROR 1, then the session ends)."""
        try:
            while not self.closing:
                try:
                    frame = P.read_frame(rfile)
                except P.Truncated:
                    self.ended = "closed inside a frame"
                    self.failed = True
                    return
                except Malformed as e:  # oversized length: answer once, then give up
                    self.ended = "over-long frame"
                    send(P.encode_frame(P.ERROR, P.encode_error(P.E_MALFORMED, str(e))))
                    return
                if frame is None:
                    self.ended = "end of stream"
                    return
                rtype, rpayload = self.respond(*frame)
                if len(rpayload) > P.MAX_PAYLOAD:
                    rtype, rpayload = P.ERROR, P.encode_error(
                        P.E_INTERNAL, f"response of {len(rpayload)} bytes exceeds the frame limit")
                send(P.encode_frame(rtype, rpayload))
        finally:
            if self.n_streams and callable(getattr(self.chip, "streams", None)):
                try:
                    self.chip.streams(0)
                except Exception as e:  # the session is over anyway
                    _log(f"streams(0) at the end of the session failed: {e}")

    # -- requests ---------------------------------------------------------------------------

    def _dispatch(self, type_: int, payload: bytes) -> bytes:
        if type_ not in P.REQUEST_NAMES:
            raise Malformed(f"unknown request type {type_:#x}")
        if type_ == P.HELLO:
            return self._hello(payload)
        if not self.greeted:
            raise Malformed(f"{P.REQUEST_NAMES[type_]} before a successful HELLO")
        need = P.REQUEST_CAPABILITY.get(type_)
        if need and not self.caps & need:
            raise Unsupported(f"{P.REQUEST_NAMES[type_]} needs capability "
                              f"{P.CAPABILITY_NAMES[need]}, which this chip does not announce")
        handler = {
            P.STREAMS: self._streams, P.RESET: self._reset, P.STEP: self._step,
            P.FORCED: self._forced, P.FREE: self._free, P.PROBE_MAP: self._probe_map_req,
            P.PROBE_RECORD: self._probe_record, P.PROBE: self._probe, P.HASH: self._hash,
            P.SAVE: self._save, P.RESTORE: self._restore, P.BYE: self._bye,
        }[type_]
        return handler(payload)

    def _hello(self, payload: bytes) -> bytes:
        self.hello = True  # even one refused or malformed: a harness tried (logged by serve)
        h = P.decode_hello(payload)
        if self.greeted:
            raise Malformed("a second HELLO in one session")
        if self.auth is not None and h.auth != self.auth:
            raise DutError("authentication failed", P.E_AUTH)
        if h.protocol_version != P.PROTOCOL_VERSION:
            raise DutError(f"protocol version {h.protocol_version} is not supported "
                           f"(this chip speaks {P.PROTOCOL_VERSION})", P.E_VERSION)
        if h.trace_version != P.TRACE_VERSION:
            raise DutError(f"trace version {h.trace_version!r} is not supported "
                           f"(this chip speaks {P.TRACE_VERSION})", P.E_VERSION)
        self.greeted = True
        return P.encode_hello_ok(P.HelloOk(P.PROTOCOL_VERSION, P.TRACE_VERSION, self.vocab_size,
                                           self.max_streams, self.caps, str(self.chip.name),
                                           str(self.chip.identity)))

    def _streams(self, payload: bytes) -> bytes:
        n = P.decode_u32(payload, "STREAMS")
        if not 1 <= n <= self.max_streams:
            raise BadArgument(f"STREAMS {n}: must be 1 .. {self.max_streams}")
        self.n_streams = 0
        self.was_reset.clear()
        self.recorded.clear()
        if callable(getattr(self.chip, "streams", None)):
            self.chip.streams(n)
        self.n_streams = n
        return b""

    def _stream(self, stream: int, need_reset: bool = True) -> int:
        if stream >= self.n_streams:
            raise BadArgument(f"stream {stream} does not exist ({self.n_streams} streams)")
        if need_reset and stream not in self.was_reset:
            raise BadArgument(f"stream {stream} has not been reset")
        return stream

    def _token(self, token: int) -> int:
        if token >= self.vocab_size:
            raise BadArgument(f"token id {token} >= vocab_size {self.vocab_size}")
        return token

    def _entries(self, streams: Sequence[int], what: str) -> None:
        if not streams:
            raise BadArgument(f"{what} with no entries")
        if len(streams) > self.max_streams:
            raise Malformed(f"{what}: {len(streams)} entries exceed max_streams {self.max_streams}")
        if len(set(streams)) != len(streams):
            raise BadArgument(f"{what}: repeated streams")
        for s in streams:
            self._stream(s)

    def _reset(self, payload: bytes) -> bytes:
        stream, image, names = P.decode_reset(payload)
        self._stream(stream, need_reset=False)
        if len(set(names)) != len(names):
            raise ImageError("RESET: a section name appears twice")
        self.was_reset.discard(stream)
        self.recorded.discard(stream)
        self.chip.reset(stream, image)
        self.was_reset.add(stream)
        return b""

    def _check_tokens(self, tokens: Any, count: int, what: str) -> List[int]:
        tokens = list(tokens)
        if self.check_outputs:
            if len(tokens) != count:
                raise DutError(f"{what} returned {len(tokens)} tokens for {count} steps")
            # numpy integers and one-element integer tensors are ids as ints are; a float, a
            # bool or a wider tensor is named by its type
            try:
                tokens = [as_int(t, f"{what}'s token {i}") for i, t in enumerate(tokens)]
            except TypeError as e:
                raise DutError(f"{e} (an id below {self.vocab_size})") from None
            for t in tokens:
                if not 0 <= t < self.vocab_size:
                    raise DutError(f"{what} returned token {t}, not an id below {self.vocab_size}")
        return tokens

    def _stepped(self, streams: Sequence[int]) -> None:
        if self.recording:
            self.recorded.update(streams)
        else:
            self.recorded.difference_update(streams)

    def _step(self, payload: bytes) -> bytes:
        entries = P.decode_step(payload)
        self._entries([s for s, _ in entries], "STEP")
        for _, t in entries:
            self._token(t)
        out = self._check_tokens(self.chip.step(entries), len(entries), "step")
        self._stepped([s for s, _ in entries])
        return P.encode_tokens(out)

    def _per_entry(self, result: Any, counts: Sequence[int], what: str) -> List[int]:
        lists = [list(tokens) for tokens in result]
        if self.check_outputs:
            if len(lists) != len(counts):
                raise DutError(f"{what} returned {len(lists)} lists for {len(counts)} entries")
            for tokens, count in zip(lists, counts):
                self._check_tokens(tokens, count, what)
        return [t for tokens in lists for t in tokens]

    def _forced(self, payload: bytes) -> bytes:
        entries = P.decode_forced(payload)
        self._entries([s for s, _ in entries], "FORCED")
        for _, inputs in entries:
            if not inputs:
                raise BadArgument("FORCED: an entry with count 0")
            for t in inputs:
                self._token(t)
        counts = [len(i) for _, i in entries]
        native = getattr(self.chip, "forced", None)
        result = native(entries) if callable(native) else self._emulate_forced(entries)
        out = self._per_entry(result, counts, "forced")
        self._stepped([s for s, _ in entries])
        return P.encode_tokens(out)

    def _free(self, payload: bytes) -> bytes:
        entries = P.decode_free(payload)
        self._entries([s for s, _, _ in entries], "FREE")
        for _, count, first in entries:
            if count < 1:
                raise BadArgument("FREE: an entry with count 0")
            self._token(first)
        counts = [c for _, c, _ in entries]
        native = getattr(self.chip, "free", None)
        result = native(entries) if callable(native) else self._emulate_free(entries)
        out = self._per_entry(result, counts, "free")
        self._stepped([s for s, _, _ in entries])
        return P.encode_tokens(out)

    def _emulate_forced(self, entries: List[Tuple[int, List[int]]]) -> List[List[int]]:
        outs: List[List[int]] = [[] for _ in entries]
        for i in range(max(len(inputs) for _, inputs in entries)):
            live = [k for k, (_, inputs) in enumerate(entries) if i < len(inputs)]
            preds = self._check_tokens(self.chip.step([(entries[k][0], entries[k][1][i]) for k in live]),
                                       len(live), "step")
            for k, t in zip(live, preds):
                outs[k].append(t)
        return outs

    def _emulate_free(self, entries: List[Tuple[int, int, int]]) -> List[List[int]]:
        outs: List[List[int]] = [[] for _ in entries]
        for i in range(max(count for _, count, _ in entries)):
            live = [k for k, (_, count, _) in enumerate(entries) if i < count]
            batch = [(entries[k][0], outs[k][-1] if outs[k] else entries[k][2]) for k in live]
            preds = self._check_tokens(self.chip.step(batch), len(live), "step")
            for k, t in zip(live, preds):
                outs[k].append(t)
        return outs

    def _get_probe_map(self) -> ProbeMap:
        if self._probe_map is None:
            m = self.chip.probe_map()
            if not isinstance(m, ProbeMap):
                raise DutError(f"probe_map() returned {type(m).__name__}, not a ProbeMap")
            self._probe_map = m
        return self._probe_map

    def _probe_map_req(self, payload: bytes) -> bytes:
        P.decode_empty(payload, "PROBE_MAP")
        return P.encode_probe_map(self._get_probe_map())

    def _probe_record(self, payload: bytes) -> bytes:
        on = P.decode_u8(payload, "PROBE_RECORD")
        if on not in (0, 1):
            raise BadArgument(f"PROBE_RECORD {on}: must be 0 or 1")
        hook = getattr(self.chip, "probe_record", None)
        if callable(hook):
            hook(bool(on))
        self.recording = bool(on)
        return b""

    def _probe(self, payload: bytes) -> bytes:
        stream, layer, after, name = P.decode_probe(payload)
        self._stream(stream)
        m = self._get_probe_map()
        if not any(p.layer == layer and p.after == after for p in m.points):
            raise BadArgument(f"PROBE: no probe point (layer {layer}, after {after})")
        fields = m.field_index()
        if name not in fields:
            raise BadArgument(f"PROBE: no field {name!r}")
        if stream not in self.recorded:
            raise BadArgument(f"PROBE: recording was off during stream {stream}'s last step")
        values = list(self.chip.probe(stream, layer, after, name))
        if self.check_outputs and len(values) != fields[name].width:
            raise DutError(f"probe returned {len(values)} values for field {name!r} of width "
                           f"{fields[name].width}")
        return P.encode_values(values)

    def _hash(self, payload: bytes) -> bytes:
        stream = self._stream(P.decode_u32(payload, "HASH"))
        h = int(self.chip.hash(stream))
        if not 0 <= h < 1 << 64:
            raise DutError(f"hash returned {h}, not a u64")
        return P.encode_u64(h)

    def _save(self, payload: bytes) -> bytes:
        stream = self._stream(P.decode_u32(payload, "SAVE"))
        blob = bytes(self.chip.save(stream))
        if len(blob) > P.MAX_BLOB:
            raise DutError(f"save returned {len(blob)} bytes, over the blob limit {P.MAX_BLOB}")
        return P.encode_blob(blob)

    def _restore(self, payload: bytes) -> bytes:
        stream, blob = P.decode_restore(payload)
        self._stream(stream, need_reset=False)
        self.was_reset.discard(stream)
        self.recorded.discard(stream)
        self.chip.restore(stream, blob)
        self.was_reset.add(stream)
        return b""

    def _bye(self, payload: bytes) -> bytes:
        P.decode_empty(payload, "BYE")
        self.closing = True
        self.ended = "BYE"
        return b""


# ---------------------------------------------------------------------------------------------
# Transports (§1)

_frames_out: Optional[int] = None


def protect_stdout() -> int:
    """Keeps fd 1 for frames only (§1): moves the original stdout to a private fd (returned), points
    fd 1 and ``sys.stdout`` at stderr, so that a stray ``print`` (or a C library's write to fd 1)
    lands in the log instead of corrupting the frame stream. Idempotent; call it before loading a
    model that might print."""
    global _frames_out
    if _frames_out is None:
        try:
            sys.stdout.flush()
        except Exception:
            pass
        try:
            _frames_out = os.dup(1)
        except OSError:
            raise SetupError("stdout is closed: the frames have nowhere to go (give it a pipe, "
                             "or serve with --listen)") from None
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _frames_out


def _fd_sender(fd: int) -> Callable[[bytes], None]:
    def send(data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    return send


def parse_listen(address: str, what: str = "listen address") -> Tuple[str, Any]:
    """``unix:PATH`` -> ``("unix", PATH)``; ``tcp:HOST:PORT`` -> ``("tcp", (HOST, PORT))``.
    ``SetupError`` (a ValueError) with one line otherwise."""
    if address.startswith("unix:") and len(address) > 5:
        path = address[5:]
        if len(os.fsencode(path)) > 107:
            raise SetupError(f"{what} {address}: a Unix socket path is at most 107 bytes")
        return "unix", path
    if address.startswith("tcp:"):
        host, sep, port = address[4:].rpartition(":")
        if sep and host and port.isdigit() and int(port) < 65536:
            return "tcp", (host.strip("[]"), int(port))
    raise SetupError(f"{what} {address!r}: expected unix:PATH or tcp:HOST:PORT")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen_socket(listen: str, auth: Optional[str], allow_remote: bool) -> Tuple[socket.socket, str, Any]:
    """A listening socket for ``listen``: ``(socket, kind, where)``. ``SetupError`` naming the
    address when it cannot be had (a bad host, a path that is not a stale socket, an address in
    use, no permission)."""
    kind, where = parse_listen(listen)

    def cannot(e: OSError) -> SetupError:
        return SetupError(f"listen address {listen}: cannot listen there ({e.strerror or e})")

    def bound(server: socket.socket) -> Tuple[socket.socket, str, Any]:
        try:
            server.bind(where)
            server.listen(4)
        except OSError as e:
            server.close()
            raise cannot(e) from None
        return server, kind, where

    if kind == "tcp":
        host = where[0]
        if host != "localhost":
            try:
                ipaddress.ip_address(host)
            except ValueError:
                raise SetupError(f"listen address {listen}: {host!r} is not an IP address "
                                 "(or localhost)") from None
        if not _is_loopback(host) and not (allow_remote and auth):
            raise SetupError(f"listen address {listen}: not loopback; needs allow_remote and an "
                             "auth secret (--allow-remote and --token-file FILE)")
        server = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        return bound(server)
    try:
        st = os.lstat(where)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise cannot(e) from None
    if st is not None:
        # Like lockstep chip-server: only a stale socket (nobody answers) is replaced; a live
        # one is another server's, and a file or folder at the path is the user's.
        if not stat.S_ISSOCK(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "a file"
            raise SetupError(f"listen address {listen}: the path exists and is not a socket "
                             f"({what}); give a new path")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(where)
            live = True
        except OSError:
            live = False
        finally:
            probe.close()
        if live:
            raise SetupError(f"listen address {listen}: another process is listening there")
        try:
            os.unlink(where)
        except OSError as e:
            raise cannot(e) from None
    return bound(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))


def _stop_on_sigterm() -> Any:
    """While a listener serves, SIGTERM stops it as Ctrl-C does (as lockstep chip-server), so that
    the socket file is removed. Returns the previous handler (None when not in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, stop)


def serve(chip: Any, listen: Optional[str] = None, auth: Optional[str] = None,
          allow_remote: bool = False, sessions: Optional[int] = None, check_outputs: bool = True) -> None:
    """Serves ``chip`` over the protocol until the harness is done.

    ``listen`` None: one session over stdin/stdout (``--dut 'COMMAND'``); stdout is protected
    first (``protect_stdout``), and the function returns after BYE, at end of file after an
    accepted HELLO, or when the harness closes its side; it raises ``SetupError`` (one line)
    when the session ended otherwise: input that is no frame (over-long, or cut inside a
    frame), or end of file before any HELLO was accepted.
    ``listen`` ``unix:PATH`` or ``tcp:HOST:PORT``: accepts connections, one session each, one
    after another, until ``sessions`` of them were served (HELLO accepted) or failed in transport,
    as ``lockstep chip-server --sessions N`` counts: a connection that closes without HELLO (a
    port probe, a health check) or whose HELLO is refused (a wrong token, another protocol
    version) is logged and not counted. ``sessions`` None: until stopped (Ctrl-C
    or SIGTERM between sessions then returns normally; otherwise they raise KeyboardInterrupt).
    The bound address is logged on stderr as ``lockstep_dut: listening on ADDRESS`` (port 0
    picks a free port). A TCP address that is not loopback needs ``allow_remote`` and an
    ``auth`` secret (§9); ``auth`` is checked in HELLO whenever it is given, and an empty one is
    refused (it would let any harness in).

    ``SetupError`` (one line naming the address or value) when the address cannot be listened
    on, ``auth`` is empty or ``sessions`` is not None and below 1 (0 is refused, not read as
    "until stopped": leave it None for that).
    """
    if auth is not None and not auth:
        raise SetupError("the auth secret is empty: it would let any harness in")
    if sessions is not None and (isinstance(sessions, bool) or not isinstance(sessions, int) or sessions < 1):
        raise SetupError(f"sessions {sessions!r}: must be a whole number from 1 up "
                         "(None: serve until stopped)")
    if listen is None:
        if sessions is not None:
            raise SetupError("sessions: only with a listen address (stdin/stdout is one session)")
        out_fd = protect_stdout()
        if sys.stdin is None:
            raise SetupError("stdin is closed: no requests can come (give it a pipe, or serve "
                             "with --listen)")
        session = Session(chip, auth, check_outputs)
        try:
            session.run(sys.stdin.buffer, _fd_sender(out_fd))
        except BrokenPipeError:
            _log("the harness closed its side")
            return
        # As `lockstep chip-server --stdio`: the one session is the process's work, and one the
        # harness broke (input that is no frame, nothing at all, no accepted HELLO) is bad input,
        # one line and exit status 2 under run_main, never a silent 0 (found by an outside tester).
        if not (session.ended == "BYE" or (session.greeted and session.ended == "end of stream")):
            raise SetupError(f"the session ended ({session.ended}) "
                             + ("before a HELLO was accepted" if not session.greeted else "without BYE"))
        return
    server, kind, where = _listen_socket(listen, auth, allow_remote)
    old_term = _stop_on_sigterm()
    try:
        if kind == "tcp":
            host, port = server.getsockname()[:2]
            _log(f"listening on tcp:{host}:{port}")
        else:
            _log(f"listening on unix:{where}")
        served = 0  # sessions served (HELLO accepted) or failed in transport (as lockstep chip-server)
        while sessions is None or served < sessions:
            try:
                conn, _ = server.accept()
            except KeyboardInterrupt:
                if sessions is not None:
                    raise  # stopped before the sessions asked for: interrupted
                _log(f"stopped after {served} session{'s' if served != 1 else ''}")
                return
            session = Session(chip, auth, check_outputs)
            with conn:
                rfile = conn.makefile("rb")
                try:
                    session.run(rfile, conn.sendall)
                except (BrokenPipeError, ConnectionResetError) as e:
                    session.failed = True
                    session.ended = f"{type(e).__name__}: {e}"
                finally:
                    rfile.close()
            if session.greeted or session.failed:
                served += 1
            elif session.hello:
                why = session.refused or session.ended
                _log(f"a session was refused at HELLO ({why}); not counted as a session")
            else:
                _log(f"a connection closed without HELLO ({session.ended}); not counted as a session")
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        server.close()
        if kind == "unix":
            try:
                os.unlink(where)
            except OSError:
                pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the kit's transport options to a chip script's parser: ``--listen ADDRESS``,
    ``--token-file FILE``, ``--allow-remote``, ``--sessions N``."""
    parser.add_argument("--listen", metavar="ADDRESS",
                        help="serve on unix:PATH or tcp:HOST:PORT instead of stdin/stdout")
    parser.add_argument("--token-file", metavar="FILE",
                        help="shared secret that HELLO must carry (dut-protocol.md §9); "
                             "must not be empty")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a TCP address that is not loopback (needs --token-file)")
    parser.add_argument("--sessions", type=_session_count, metavar="N",
                        help="with --listen: exit after N sessions served (a connection "
                             "that closes without HELLO, a port probe, or whose HELLO is refused, "
                             "a wrong token, is not counted; "
                             "default: serve until stopped)")


def _session_count(text: str) -> int:
    """``--sessions N``: a whole number from 1 up, as ``lockstep chip-server --sessions``; 0 is
    refused (not read as "until stopped": leave the option out for that)."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 up (got '{text}'); leave it out to serve until stopped")
    return int(text)


def read_token_file(path: str) -> str:
    """The shared secret in ``path`` (dut-protocol.md §9): the file's UTF-8 text with every
    trailing CR and LF removed (as ``lockstep`` reads it). ``SetupError`` naming the file when it
    cannot be read, is not UTF-8, is longer than a protocol string or is empty: an empty secret
    would turn authentication off."""
    if not path:
        raise SetupError("--token-file: the path is empty")
    # Only a regular file: opening a named pipe would wait for a writer forever, and a device
    # never ends (found by an outside tester: a FIFO hung the server with no word).
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise SetupError(f"--token-file {path}: cannot read it ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
                else "a device or socket")
        raise SetupError(f"--token-file {path}: cannot read it (it is {kind}, not a regular file)")
    try:
        with open(path, "rb") as f:
            raw = f.read(P.MAX_STR + 3)
    except OSError as e:
        raise SetupError(f"--token-file {path}: cannot read it ({e.strerror or e})") from None
    try:
        secret = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SetupError(f"--token-file {path}: not UTF-8 text") from None
    if len(secret.encode("utf-8")) > P.MAX_STR:
        raise SetupError(f"--token-file {path}: longer than {P.MAX_STR:,} bytes")
    if not secret:
        raise SetupError(f"--token-file {path}: empty (the secret must not be: an empty one "
                         "would let any harness in)")
    return secret


def check_arguments(args: argparse.Namespace) -> Optional[str]:
    """Checks the options of ``add_arguments`` before a script loads its chip, so that bad input
    fails fast: ``SetupError`` naming the option. Returns the shared secret (None without
    ``--token-file``)."""
    if args.sessions is not None and (isinstance(args.sessions, bool) or not isinstance(args.sessions, int)
                                      or args.sessions < 1):
        raise SetupError(f"--sessions {args.sessions!r}: must be a whole number from 1 up; leave it "
                         "out to serve until stopped")
    if args.listen is None:
        for flag, given in (("--sessions", args.sessions is not None), ("--allow-remote", args.allow_remote)):
            if given:
                raise SetupError(f"{flag} only means something with --listen")
    else:
        parse_listen(args.listen)
    return None if args.token_file is None else read_token_file(args.token_file)


def serve_from_args(chip: Any, args: argparse.Namespace) -> None:
    """``serve(chip, ...)`` with the options of ``add_arguments`` (checked by ``check_arguments``).
    Raises ``SetupError`` on bad input: run a script's main through ``lockstep_dut.run_main``
    to turn it into one line and exit status 2."""
    auth = check_arguments(args)
    serve(chip, listen=args.listen, auth=auth, allow_remote=args.allow_remote,
          sessions=args.sessions)
