"""A small harness side of lockstep-dut/1 (docs/spec/dut-protocol.md), for tests.

It starts a chip command (``Client.spawn``) or connects to a listening chip (``Client.connect``),
sends requests one at a time and checks every response: its type, its length, its counts. A chip
builder can use it in their own unit tests; Lockstep's real harness is ``lockstep --dut``.

Errors: ``ChipError(code, message)`` when the chip answers ERROR; ``ProtocolError`` (one line)
when it answers with a malformed frame, the wrong type or the wrong number of tokens, closes its
side, or does not answer within ``timeout`` seconds.
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import socket
import subprocess
import time
from typing import List, Optional, Sequence, Tuple, Union

from . import protocol as P
from .protocol import HelloOk, Image, ProbeMap


class ProtocolError(Exception):
    """The chip broke the protocol (§8): a malformed frame, the wrong response, a closed stream,
    a timeout."""


class ChipError(Exception):
    """The chip answered ERROR (§3.10); ``code`` and ``message`` are its fields."""

    def __init__(self, code: int, message: str):
        super().__init__(f"ERROR {code}: {message}")
        self.code = code
        self.message = message


class _FdReader:
    """Reads exactly n bytes from a file descriptor, waiting at most until a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def read(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError("no answer within the timeout")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, max(65536, n - len(self.buf)))
            if not chunk:
                raise ProtocolError(f"the chip closed its side ({len(self.buf)} of {n} bytes read)")
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


class Client:
    """One session with a chip. Use ``spawn`` or ``connect``, then ``hello()`` first."""

    def __init__(self, read_fd: int, write_fd: int, proc: Optional[subprocess.Popen] = None,
                 sock: Optional[socket.socket] = None, timeout: float = 120.0):
        self.reader = _FdReader(read_fd)
        self.write_fd = write_fd
        self.proc = proc
        self.sock = sock
        self.timeout = timeout
        self.info: Optional[HelloOk] = None

    @classmethod
    def spawn(cls, command: Union[str, Sequence[str]], timeout: float = 120.0,
              stderr=None, env=None, cwd=None) -> "Client":
        """Starts ``command`` (a shell string, run as ``/bin/sh -c 'exec COMMAND'``, or an argv
        list) with frames on its stdin/stdout; its stderr goes to ``stderr`` (default: ours)."""
        if isinstance(command, str):
            argv: Sequence[str] = ["/bin/sh", "-c", "exec " + command]
        else:
            argv = list(command)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                env=env, cwd=cwd, bufsize=0)
        return cls(proc.stdout.fileno(), proc.stdin.fileno(), proc=proc, timeout=timeout)

    @classmethod
    def connect(cls, address: str, timeout: float = 120.0, wait: float = 0.0) -> "Client":
        """Connects to ``unix:PATH`` or ``tcp:HOST:PORT``, retrying for up to ``wait`` seconds
        while the chip is not listening yet."""
        from .server import parse_listen
        kind, where = parse_listen(address, "address")
        deadline = time.monotonic() + wait
        while True:
            if kind == "unix":
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            else:
                sock = socket.socket(socket.AF_INET6 if ":" in where[0] else socket.AF_INET,
                                     socket.SOCK_STREAM)
            try:
                sock.connect(where)
                break
            except OSError as e:
                sock.close()
                if time.monotonic() >= deadline:  # the same OSError, naming the address
                    raise OSError(e.errno, f"cannot connect to {address}: {e.strerror or e}") from None
                time.sleep(0.05)
        return cls(sock.fileno(), sock.fileno(), sock=sock, timeout=timeout)

    # -- frames -----------------------------------------------------------------------------

    def send_frame(self, type_: int, payload: bytes = b"") -> None:
        """Writes one frame (any type: tests use it to send bad ones)."""
        self.send_raw(P.encode_frame(type_, payload))

    def send_raw(self, data: bytes) -> None:
        """Writes raw bytes to the chip."""
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.write_fd, view)
                view = view[n:]
        except (BrokenPipeError, ConnectionResetError) as e:
            raise ProtocolError(f"the chip closed its side ({e.strerror})")

    def read_frame(self) -> Tuple[int, bytes]:
        """The next frame from the chip, with the limits of §2."""
        deadline = time.monotonic() + self.timeout
        type_, length = P.struct.unpack("<II", self.reader.read(8, deadline))
        if length > P.MAX_PAYLOAD:
            raise ProtocolError(f"frame type {type_:#x}: length {length} exceeds {P.MAX_PAYLOAD}")
        return type_, self.reader.read(length, deadline) if length else b""

    def call(self, type_: int, payload: bytes = b"") -> bytes:
        """Sends a request and returns the success response's payload (ChipError on ERROR)."""
        self.send_frame(type_, payload)
        rtype, rpayload = self.read_frame()
        if rtype == P.ERROR:
            try:
                code, message = P.decode_error(rpayload)
            except P.Malformed as e:
                raise ProtocolError(str(e))
            raise ChipError(code, message)
        if rtype != P.RESPONSE | type_:
            raise ProtocolError(f"response type {rtype:#x} to {P.REQUEST_NAMES.get(type_, type_)}, "
                                f"expected {P.RESPONSE | type_:#x}")
        return rpayload

    def _decode(self, fn, payload: bytes, *args):
        try:
            return fn(payload, *args)
        except P.Malformed as e:
            raise ProtocolError(str(e))

    # -- messages ---------------------------------------------------------------------------

    def hello(self, auth: str = "", protocol_version: int = P.PROTOCOL_VERSION,
              trace_version: str = P.TRACE_VERSION) -> HelloOk:
        """HELLO; checks the answer's versions and ``max_streams >= 1`` (§3.1)."""
        info = self._decode(P.decode_hello_ok, self.call(
            P.HELLO, P.encode_hello(P.Hello(protocol_version, trace_version, auth))))
        if info.protocol_version != P.PROTOCOL_VERSION or info.trace_version != P.TRACE_VERSION:
            raise ProtocolError(f"chip speaks protocol {info.protocol_version} "
                                f"{info.trace_version!r}, expected {P.PROTOCOL_VERSION} "
                                f"{P.TRACE_VERSION!r}")
        if info.max_streams < 1:
            raise ProtocolError("max_streams 0")
        self.info = info
        return info

    def _empty(self, type_: int, payload: bytes = b"") -> None:
        self._decode(P.decode_empty, self.call(type_, payload), P.REQUEST_NAMES[type_] + " OK")

    def streams(self, n: int) -> None:
        self._empty(P.STREAMS, P.encode_u32(n))

    def reset(self, stream: int, image: Image) -> None:
        self._empty(P.RESET, P.encode_reset(stream, image))

    def _tokens(self, payload: bytes, expected: int) -> List[int]:
        tokens = self._decode(P.decode_tokens, payload)
        if len(tokens) != expected:
            raise ProtocolError(f"TOKENS has {len(tokens)} ids, expected {expected}")
        if self.info is not None:
            for t in tokens:
                if t >= self.info.vocab_size:
                    raise ProtocolError(f"token id {t} >= vocab_size {self.info.vocab_size}")
        return tokens

    def step(self, entries: Sequence[Tuple[int, int]]) -> List[int]:
        """One step of each ``(stream, input)``; the predictions in entry order."""
        return self._tokens(self.call(P.STEP, P.encode_step(entries)), len(entries))

    @staticmethod
    def _split(flat: List[int], counts: Sequence[int]) -> List[List[int]]:
        out, at = [], 0
        for c in counts:
            out.append(flat[at:at + c])
            at += c
        return out

    def forced(self, entries: Sequence[Tuple[int, Sequence[int]]]) -> List[List[int]]:
        """Teacher-forced steps: ``[(stream, inputs)]`` -> the predictions of each entry."""
        counts = [len(i) for _, i in entries]
        flat = self._tokens(self.call(P.FORCED, P.encode_forced(entries)), sum(counts))
        return self._split(flat, counts)

    def free(self, entries: Sequence[Tuple[int, int, int]]) -> List[List[int]]:
        """Free-running steps: ``[(stream, count, first)]`` -> the predictions of each entry."""
        counts = [c for _, c, _ in entries]
        flat = self._tokens(self.call(P.FREE, P.encode_free(entries)), sum(counts))
        return self._split(flat, counts)

    def probe_map(self) -> ProbeMap:
        return self._decode(P.decode_probe_map, self.call(P.PROBE_MAP))

    def probe_record(self, on: bool) -> None:
        self._empty(P.PROBE_RECORD, bytes([1 if on else 0]))

    def probe(self, stream: int, layer: int, after: int, field_name: str) -> List[float]:
        return self._decode(P.decode_values,
                            self.call(P.PROBE, P.encode_probe(stream, layer, after, field_name)))

    def hash(self, stream: int) -> int:
        return self._decode(P.decode_u64, self.call(P.HASH, P.encode_u32(stream)), "HASH_OK")

    def save(self, stream: int) -> bytes:
        return self._decode(P.decode_blob, self.call(P.SAVE, P.encode_u32(stream)))

    def restore(self, stream: int, blob: bytes) -> None:
        self._empty(P.RESTORE, P.encode_restore(stream, blob))

    def bye(self) -> None:
        self._empty(P.BYE)

    def close(self, wait: float = 5.0) -> Optional[int]:
        """Closes our side (§1): the child's stdin or the socket; waits up to ``wait`` s for a
        child, then SIGTERM, then SIGKILL 2 s later. Returns the child's exit status (None for a
        socket)."""
        if self.sock is not None:
            self.sock.close()
            return None
        if self.proc is None:
            return None
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        finally:
            self.proc.stdout.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one shell-quoted string, as ``--dut`` takes it."""
    return " ".join(shlex.quote(a) for a in argv)
