"""Frames and messages of the chip-under-test protocol, lockstep-dut/1 (docs/spec/dut-protocol.md).

Everything here is plain data: constants, a bounds-checked payload reader, and one encoder and
one decoder per message. Both sides use it: the chip side (``lockstep_dut.server``) and the
harness-side test client (``lockstep_dut.client``). Standard library only.

A decoder never reads past the payload and never allocates more than the spec's limits (§2, §5)
before it has checked them; any violation raises ``Malformed`` (the frame is malformed, ERROR
code 1).
"""

from __future__ import annotations

import array
import operator
import struct
import sys
from dataclasses import dataclass, field
from typing import BinaryIO, Dict, List, Optional, Sequence, Tuple

PROTOCOL_VERSION = 1
TRACE_VERSION = "trace-v3"

# §2 and §5: limits.
MAX_PAYLOAD = 64 * 1024 * 1024
MAX_STR = 65535
MAX_ENTRIES = 65536
MAX_TOTAL_STEPS = 4194304
MAX_SEGMENTS = 4096
MAX_SECTIONS = 4096
MAX_MAP_ITEMS = 65536
MAX_BLOB = MAX_PAYLOAD - 4

# §3: request types; the success response to type T is RESPONSE | T.
HELLO = 1
STREAMS = 2
RESET = 3
STEP = 4
FORCED = 5
FREE = 6
PROBE_MAP = 7
PROBE_RECORD = 8
PROBE = 9
HASH = 10
SAVE = 11
RESTORE = 12
BYE = 13
ERROR = 0xFFFF
RESPONSE = 0x8000

REQUEST_NAMES = {
    HELLO: "HELLO", STREAMS: "STREAMS", RESET: "RESET", STEP: "STEP", FORCED: "FORCED",
    FREE: "FREE", PROBE_MAP: "PROBE_MAP", PROBE_RECORD: "PROBE_RECORD", PROBE: "PROBE",
    HASH: "HASH", SAVE: "SAVE", RESTORE: "RESTORE", BYE: "BYE",
}

# §3.1: capability bits.
MULTI_STEP = 1 << 0
PROBES = 1 << 1
HASH_CAP = 1 << 2
SAVE_RESTORE = 1 << 3
CAPABILITY_NAMES = {MULTI_STEP: "MULTI_STEP", PROBES: "PROBES", HASH_CAP: "HASH",
                    SAVE_RESTORE: "SAVE_RESTORE"}

# The capability a request needs (§3's table); requests not listed need none.
REQUEST_CAPABILITY = {FORCED: MULTI_STEP, FREE: MULTI_STEP, PROBE_MAP: PROBES,
                      PROBE_RECORD: PROBES, PROBE: PROBES, HASH: HASH_CAP,
                      SAVE: SAVE_RESTORE, RESTORE: SAVE_RESTORE}

# §3.10: error codes.
E_MALFORMED = 1
E_BAD_ARGUMENT = 2
E_UNSUPPORTED = 3
E_IMAGE = 4
E_AUTH = 5
E_VERSION = 6
E_INTERNAL = 7

# §3.7: probe points.
AFTER_EMBED = 0
AFTER_MEMORY = 1
AFTER_MLP = 2

_LITTLE = sys.byteorder == "little"


class Malformed(Exception):
    """A frame or payload that breaks §2 or §5 (ERROR code 1); the message is one line."""


class Truncated(Malformed):
    """The byte stream ended inside a frame (the peer closed its side mid-frame)."""


def u32_array(data: bytes) -> List[int]:
    """Little-endian u32 values of ``data`` (its length a multiple of 4) as a list of ints."""
    a = array.array("I")
    if a.itemsize != 4:  # pragma: no cover - every CPython platform we know has 4-byte "I"
        return list(struct.unpack("<%dI" % (len(data) // 4), data))
    a.frombytes(data)
    if not _LITTLE:  # pragma: no cover
        a.byteswap()
    return a.tolist()


def pack_u32s(values: Sequence[int]) -> bytes:
    """``values`` (ints in 0 .. 2^32-1) as little-endian u32 bytes; ValueError/OverflowError otherwise."""
    a = array.array("I", values)
    if not _LITTLE:  # pragma: no cover
        a.byteswap()
    return a.tobytes()


class Reader:
    """Reads the fields of one payload in order (§2), never past its end.

    Every method raises ``Malformed`` when the payload is too short or a count breaks a limit;
    ``done()`` raises it when bytes are left over after the last field.
    """

    def __init__(self, payload: bytes, what: str = "payload"):
        self.b = memoryview(payload)
        self.pos = 0
        self.what = what

    def remaining(self) -> int:
        return len(self.b) - self.pos

    def take(self, n: int, field_name: str) -> bytes:
        if n > self.remaining():
            raise Malformed(f"{self.what}: {field_name} needs {n} bytes, {self.remaining()} left")
        out = bytes(self.b[self.pos:self.pos + n])
        self.pos += n
        return out

    def u8(self, name: str = "u8") -> int:
        return self.take(1, name)[0]

    def u32(self, name: str = "u32") -> int:
        return struct.unpack("<I", self.take(4, name))[0]

    def i32(self, name: str = "i32") -> int:
        return struct.unpack("<i", self.take(4, name))[0]

    def u64(self, name: str = "u64") -> int:
        return struct.unpack("<Q", self.take(8, name))[0]

    def count(self, name: str, limit: int, item_size: int) -> int:
        """A list's u32 count, checked against ``limit`` and against the bytes left
        (``item_size`` = the fewest bytes one item takes) before anything is allocated."""
        n = self.u32(name + " count")
        if n > limit:
            raise Malformed(f"{self.what}: {name} count {n} exceeds the limit {limit}")
        if n * item_size > self.remaining():
            raise Malformed(f"{self.what}: {name} count {n} needs at least {n * item_size} bytes, "
                            f"{self.remaining()} left")
        return n

    def bytes_(self, name: str = "bytes", limit: int = MAX_PAYLOAD) -> bytes:
        n = self.u32(name + " length")
        if n > limit:
            raise Malformed(f"{self.what}: {name} length {n} exceeds the limit {limit}")
        return self.take(n, name)

    def str_(self, name: str = "str") -> str:
        raw = self.bytes_(name, MAX_STR)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Malformed(f"{self.what}: {name} is not UTF-8 ({e.reason} at byte {e.start})")

    def u32s(self, n: int, name: str) -> List[int]:
        return u32_array(self.take(4 * n, name))

    def done(self) -> None:
        if self.remaining():
            raise Malformed(f"{self.what}: {self.remaining()} bytes left over after the last field")


class Writer:
    """Builds one payload field by field (§2's encodings)."""

    def __init__(self):
        self.parts: List[bytes] = []

    def u8(self, v: int) -> "Writer":
        self.parts.append(struct.pack("<B", v))
        return self

    def u32(self, v: int) -> "Writer":
        self.parts.append(struct.pack("<I", v))
        return self

    def i32(self, v: int) -> "Writer":
        self.parts.append(struct.pack("<i", v))
        return self

    def u64(self, v: int) -> "Writer":
        self.parts.append(struct.pack("<Q", v))
        return self

    def bytes_(self, v: bytes) -> "Writer":
        self.parts.append(struct.pack("<I", len(v)))
        self.parts.append(bytes(v))
        return self

    def str_(self, v: str) -> "Writer":
        raw = v.encode("utf-8")
        if len(raw) > MAX_STR:
            raise ValueError(f"str of {len(raw)} bytes exceeds {MAX_STR}")
        return self.bytes_(raw)

    def raw(self, v: bytes) -> "Writer":
        self.parts.append(v)
        return self

    def payload(self) -> bytes:
        return b"".join(self.parts)


def one_line(message: str, limit: int = 4096) -> str:
    """``message`` as one line of at most ``limit`` UTF-8 bytes (for ERROR frames and logs)."""
    line = " ".join(str(message).split())
    raw = line.encode("utf-8")[:limit]
    return raw.decode("utf-8", "ignore")


# ---------------------------------------------------------------------------------------------
# Frames (§2)

def encode_frame(type_: int, payload: bytes = b"") -> bytes:
    """The frame bytes for ``type_`` and ``payload``; ValueError when the payload is too long."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    return struct.pack("<II", type_, len(payload)) + payload


def _read_exact(stream: BinaryIO, n: int, at_start: bool) -> Optional[bytes]:
    chunks = []
    got = 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0 and at_start:
                return None
            raise Truncated(f"end of stream inside a frame ({got} of {n} bytes)")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(stream: BinaryIO) -> Optional[Tuple[int, bytes]]:
    """The next frame ``(type, payload)`` from a binary stream, or None at a clean end of file.

    Raises ``Truncated`` when the stream ends inside a frame and ``Malformed`` when the length
    exceeds 64 MiB (nothing of the payload is read then: the stream cannot be resynchronised).
    """
    head = _read_exact(stream, 8, True)
    if head is None:
        return None
    type_, length = struct.unpack("<II", head)
    if length > MAX_PAYLOAD:
        raise Malformed(f"frame type {type_:#x}: length {length} exceeds the limit {MAX_PAYLOAD}")
    payload = _read_exact(stream, length, False) if length else b""
    return type_, payload


# ---------------------------------------------------------------------------------------------
# Messages (§3). Requests: encode_* builds the payload, decode_* parses it.

@dataclass
class Hello:
    """HELLO (§3.1)."""
    protocol_version: int = PROTOCOL_VERSION
    trace_version: str = TRACE_VERSION
    auth: str = ""


def encode_hello(h: Hello) -> bytes:
    return Writer().u32(h.protocol_version).str_(h.trace_version).str_(h.auth).payload()


def decode_hello(payload: bytes) -> Hello:
    r = Reader(payload, "HELLO")
    h = Hello(r.u32("protocol_version"), r.str_("trace_version"), r.str_("auth"))
    r.done()
    return h


@dataclass
class HelloOk:
    """HELLO_OK (§3.1): what the chip announces."""
    protocol_version: int
    trace_version: str
    vocab_size: int
    max_streams: int
    capabilities: int
    name: str
    identity: str

    def capability_names(self) -> List[str]:
        return [n for bit, n in CAPABILITY_NAMES.items() if self.capabilities & bit]


def encode_hello_ok(h: HelloOk) -> bytes:
    return (Writer().u32(h.protocol_version).str_(h.trace_version).u32(h.vocab_size)
            .u32(h.max_streams).u32(h.capabilities).str_(h.name).str_(h.identity).payload())


def decode_hello_ok(payload: bytes) -> HelloOk:
    r = Reader(payload, "HELLO_OK")
    h = HelloOk(r.u32("protocol_version"), r.str_("trace_version"), r.u32("vocab_size"),
                r.u32("max_streams"), r.u32("capabilities"), r.str_("name"), r.str_("identity"))
    r.done()
    return h


def encode_u32(v: int) -> bytes:
    """A payload of one u32 (STREAMS, HASH, SAVE)."""
    return struct.pack("<I", v)


def decode_u32(payload: bytes, what: str) -> int:
    r = Reader(payload, what)
    v = r.u32(what)
    r.done()
    return v


@dataclass
class Image:
    """A guest image (chip-format.md §2; dut-protocol.md §3.3).

    ``entry``: the first pc (u64). ``segments``: ``[(address, data)]`` in order; guest memory byte
    ``a`` is the byte of the *last* segment covering ``a``, 0 if none does. ``sections``:
    ``{name: data}`` (``.lockstep.vreg`` ...; vector.md §2.1).
    """
    entry: int = 0
    segments: List[Tuple[int, bytes]] = field(default_factory=list)
    sections: Dict[str, bytes] = field(default_factory=dict)

    def memory(self, address: int, length: int, stride: int = 1) -> bytes:
        """Guest memory bytes ``address + i * stride`` for ``i < length`` (0 where no segment
        covers them), the last covering segment winning."""
        address, length, stride = operator.index(address), operator.index(length), operator.index(stride)
        if address < 0 or stride < 1:
            raise ValueError(f"Image.memory: address {address} and stride {stride}: an address is not "
                             f"negative and a stride is at least 1")
        if length <= 0:
            return b""
        span = (length - 1) * stride + 1
        buf = bytearray(span)
        lo, hi = address, address + span
        for seg_addr, data in self.segments:
            a, b = max(lo, seg_addr), min(hi, seg_addr + len(data))
            if a < b:
                buf[a - lo:b - lo] = data[a - seg_addr:b - seg_addr]
        return bytes(buf[::stride]) if stride != 1 else bytes(buf)


def encode_reset(stream: int, image: Image) -> bytes:
    w = Writer().u32(stream).u64(image.entry).u32(len(image.segments))
    for address, data in image.segments:
        w.u64(address).bytes_(data)
    w.u32(len(image.sections))
    for name, data in image.sections.items():
        w.str_(name).bytes_(data)
    return w.payload()


def decode_reset(payload: bytes) -> Tuple[int, Image, List[str]]:
    """``(stream, image, section_names_in_order)``; the names list shows repeats, which the
    image's dict cannot."""
    r = Reader(payload, "RESET")
    stream = r.u32("stream")
    entry = r.u64("entry")
    segments = []
    for _ in range(r.count("segments", MAX_SEGMENTS, 12)):
        segments.append((r.u64("segment address"), r.bytes_("segment data")))
    sections: Dict[str, bytes] = {}
    names = []
    for _ in range(r.count("sections", MAX_SECTIONS, 8)):
        name = r.str_("section name")
        sections[name] = r.bytes_("section data")
        names.append(name)
    r.done()
    return stream, Image(entry, segments, sections), names


def encode_step(entries: Sequence[Tuple[int, int]]) -> bytes:
    w = Writer().u32(len(entries))
    for stream, token in entries:
        w.u32(stream).u32(token)
    return w.payload()


def decode_step(payload: bytes) -> List[Tuple[int, int]]:
    r = Reader(payload, "STEP")
    n = r.count("entries", MAX_ENTRIES, 8)
    flat = r.u32s(2 * n, "entries")
    r.done()
    return list(zip(flat[0::2], flat[1::2]))


def encode_forced(entries: Sequence[Tuple[int, Sequence[int]]]) -> bytes:
    w = Writer().u32(len(entries))
    for stream, inputs in entries:
        w.u32(stream).u32(len(inputs))
    for _, inputs in entries:
        w.raw(pack_u32s(inputs))
    return w.payload()


def decode_forced(payload: bytes) -> List[Tuple[int, List[int]]]:
    r = Reader(payload, "FORCED")
    n = r.count("entries", MAX_ENTRIES, 8)
    flat = r.u32s(2 * n, "entries")
    counts = flat[1::2]
    total = sum(counts)
    if total > MAX_TOTAL_STEPS:
        raise Malformed(f"FORCED: {total} steps in all exceed the limit {MAX_TOTAL_STEPS}")
    inputs = r.u32s(total, "inputs")
    r.done()
    out, at = [], 0
    for stream, count in zip(flat[0::2], counts):
        out.append((stream, inputs[at:at + count]))
        at += count
    return out


def encode_free(entries: Sequence[Tuple[int, int, int]]) -> bytes:
    w = Writer().u32(len(entries))
    for stream, count, first in entries:
        w.u32(stream).u32(count).u32(first)
    return w.payload()


def decode_free(payload: bytes) -> List[Tuple[int, int, int]]:
    r = Reader(payload, "FREE")
    n = r.count("entries", MAX_ENTRIES, 12)
    flat = r.u32s(3 * n, "entries")
    r.done()
    entries = list(zip(flat[0::3], flat[1::3], flat[2::3]))
    total = sum(e[1] for e in entries)
    if total > MAX_TOTAL_STEPS:
        raise Malformed(f"FREE: {total} steps in all exceed the limit {MAX_TOTAL_STEPS}")
    return entries


def encode_tokens(tokens: Sequence[int]) -> bytes:
    return struct.pack("<I", len(tokens)) + pack_u32s(tokens)


def decode_tokens(payload: bytes) -> List[int]:
    r = Reader(payload, "TOKENS")
    n = r.count("tokens", MAX_TOTAL_STEPS, 4)
    out = r.u32s(n, "tokens")
    r.done()
    return out


@dataclass
class ProbeField:
    """A field of PROBE_MAP_OK (§3.7): a named range of the residual, its width in values, and
    its writers ``[(layer, sublayer)]`` (sublayer 1 = memory block, 2 = MLP) in execution order."""
    name: str
    width: int
    writers: List[Tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # a u32 on the wire: a negative width is refused here, naming the field
        if isinstance(self.width, bool) or operator.index(self.width) < 0:
            raise ValueError(f"ProbeField {self.name!r}: width {self.width!r} must be a whole number >= 0")


@dataclass
class ProbePoint:
    """A probe point (§3.7): ``(layer, after)`` (``after`` 0 = embedding with layer -1, 1 = memory
    block, 2 = MLP) and the indices into the field list of the fields meaningful there."""
    layer: int
    after: int
    fields: List[int] = field(default_factory=list)


@dataclass
class ProbeMap:
    """PROBE_MAP_OK (§3.7)."""
    fields: List[ProbeField] = field(default_factory=list)
    points: List[ProbePoint] = field(default_factory=list)
    unembed_reads: List[int] = field(default_factory=list)

    def field_index(self) -> Dict[str, ProbeField]:
        return {f.name: f for f in self.fields}


def encode_probe_map(m: ProbeMap) -> bytes:
    w = Writer().u32(len(m.fields))
    for f in m.fields:
        w.str_(f.name).u32(f.width).u32(len(f.writers))
        for layer, sub in f.writers:
            w.i32(layer).u8(sub)
    w.u32(len(m.points))
    for p in m.points:
        w.i32(p.layer).u8(p.after).u32(len(p.fields))
        w.raw(pack_u32s(p.fields))
    w.u32(len(m.unembed_reads)).raw(pack_u32s(m.unembed_reads))
    return w.payload()


def decode_probe_map(payload: bytes) -> ProbeMap:
    r = Reader(payload, "PROBE_MAP_OK")
    m = ProbeMap()
    for _ in range(r.count("fields", MAX_MAP_ITEMS, 12)):
        f = ProbeField(r.str_("field name"), r.u32("field width"))
        for _ in range(r.count("writers", MAX_MAP_ITEMS, 5)):
            f.writers.append((r.i32("writer layer"), r.u8("writer sublayer")))
        m.fields.append(f)
    for _ in range(r.count("points", MAX_MAP_ITEMS, 9)):
        p = ProbePoint(r.i32("point layer"), r.u8("point after"))
        p.fields = r.u32s(r.count("point fields", MAX_MAP_ITEMS, 4), "point fields")
        m.points.append(p)
    m.unembed_reads = r.u32s(r.count("unembed reads", MAX_MAP_ITEMS, 4), "unembed reads")
    r.done()
    return m


def encode_probe(stream: int, layer: int, after: int, field_name: str) -> bytes:
    return Writer().u32(stream).i32(layer).u8(after).str_(field_name).payload()


def decode_probe(payload: bytes) -> Tuple[int, int, int, str]:
    r = Reader(payload, "PROBE")
    out = (r.u32("stream"), r.i32("layer"), r.u8("after"), r.str_("field"))
    r.done()
    return out


def encode_values(values: Sequence[float]) -> bytes:
    return struct.pack("<I%df" % len(values), len(values), *values)


def decode_values(payload: bytes) -> List[float]:
    r = Reader(payload, "VALUES")
    n = r.count("values", MAX_PAYLOAD // 4, 4)
    out = list(struct.unpack("<%df" % n, r.take(4 * n, "values")))
    r.done()
    return out


def decode_u8(payload: bytes, what: str) -> int:
    r = Reader(payload, what)
    v = r.u8(what)
    r.done()
    return v


def encode_u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def decode_u64(payload: bytes, what: str) -> int:
    r = Reader(payload, what)
    v = r.u64(what)
    r.done()
    return v


def encode_blob(blob: bytes) -> bytes:
    return Writer().bytes_(blob).payload()


def decode_blob(payload: bytes) -> bytes:
    r = Reader(payload, "BLOB")
    b = r.bytes_("blob", MAX_BLOB)
    r.done()
    return b


def encode_restore(stream: int, blob: bytes) -> bytes:
    return Writer().u32(stream).bytes_(blob).payload()


def decode_restore(payload: bytes) -> Tuple[int, bytes]:
    r = Reader(payload, "RESTORE")
    out = (r.u32("stream"), r.bytes_("blob", MAX_BLOB))
    r.done()
    return out


def encode_error(code: int, message: str) -> bytes:
    return Writer().u32(code).str_(one_line(message)).payload()


def decode_error(payload: bytes) -> Tuple[int, str]:
    r = Reader(payload, "ERROR")
    out = (r.u32("code"), r.str_("message"))
    r.done()
    return out


def decode_empty(payload: bytes, what: str) -> None:
    Reader(payload, what).done()
