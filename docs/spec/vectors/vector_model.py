"""An executable reading of docs/spec/vector.md: the vector unit as a small model (NumPy).

Written from vector.md and its op pages docs/spec/vector/<op>.md alone (and isa.md §2 for RAM's
bounds), never from ref/, chip/ or guests/.  It holds the unit's memories (§2), initialised from the `.lockstep.*` section bytes of
§2.1, computes the fixed tables of §3 and checks them against their SHA-256, and executes the
eight instructions of §4 with the trap checks of §6.  Each op is two functions that read like
its page: `<op>_traps(o)` (the conditions of <op>.md §3 on the operands, a set of codes) and
`<op>(st, o, ram)` (the arithmetic of <op>.md §1, an `Outcome` listing what it writes); `OPS` is the
registry by f3.  Trace tokens (§5) are not modelled here: `gen_vector.py` builds them from an
`Outcome`'s named values.

Users: `gen_vector.py` (the worked examples, vector_<op>.json) and `check_ref.py` (the
differential test of the reference against this model over random programs).

Numbers.  Every stored value is an int64 NumPy array element; §1.1 says every intermediate has
a stated bound, so 64-bit signed arithmetic is exact everywhere except VRED SUMSQ's accumulator
(< 2^72), which is a Python integer here.  The bounds §4 states are asserted where they are the
ones 64-bit arithmetic relies on: an `AssertionError` is a spec finding, not a model detail.

    /usr/bin/python3 -c "import vector_model"   # Debian's python3-numpy (ci/setup)
"""
import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

# ---- isa.md §2, vector.md §2: sizes -----------------------------------------------------------

RAM_BASE, RAM_END = 0x10000, 0x110000
VR_WORDS = 1024                       # 16 registers of 64 words
ACT_BLOCKS, BLOCK = 6, 64             # ACT: 6 blocks of 64 int8
NCHUNK, CHUNK = 4152, 64              # WMEM: 4,152 chunks of 64 int4
NROWS, ROW = 320, 32                  # KC, VC: 320 rows of 32 int8

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1

# ---- §1 conventions ---------------------------------------------------------------------------


def rnd(x, s):
    """§1.2 round half up, rnd(x, s) = floor((x + 2^(s-1)) / 2^s), and rnd(x, 0) = x.

    `x`, `s`: Python integers or NumPy int64 arrays (broadcast), s >= 0.  (1 << s) >> 1 is 2^(s-1)
    for s >= 1 and 0 for s = 0, so one expression covers both cases; >> is a floor shift for
    negative x in Python and in NumPy, as §1.1's floor(x / 2^s) requires."""
    return (x + ((1 << s) >> 1)) >> s


def sat32(x):
    """§1.2 sat32(x) = min(max(x, -2^31), 2^31 - 1), of an integer or an int64 array."""
    if isinstance(x, np.ndarray):
        return np.clip(x, I32_MIN, I32_MAX)
    return max(I32_MIN, min(I32_MAX, x))


def lo8(x):
    """§1.1 lo8(x) = x mod 256 with the mathematical modulus (0..255), also for negative x."""
    return x % 256


def s32(u):
    """A 32-bit pattern read as two's complement (-2^31..2^31-1)."""
    u &= 0xFFFFFFFF
    return u - (1 << 32) if u >> 31 else u


def sext8(b):
    """§1.1 sext8(b): the byte b (0..255) read as two's complement (-128..127)."""
    return b - 256 if b > 127 else b


def floor_log2(u):
    """vfn.md §1 floor_log2(u): the index of the highest set bit of u >= 1 (int64 array)."""
    k = np.zeros_like(u)
    for i in range(1, 63):
        k += (u >> i) > 0
    return k


def E(a):
    """vq.md §1 E(a): the smallest e >= 0 with rnd(a, e) <= 127, for 0 <= a <= 2^31 (0..25)."""
    e = 0
    while rnd(a, e) > 127:
        e += 1
    return e


def share(a0, an, b0, bn):
    """§6: the spans [a0, a0 + an) and [b0, b0 + bn) share a word."""
    return a0 < b0 + bn and b0 < a0 + an


def conflict(a0, an, b0, bn):
    """§6: two spans conflict when they share a word and are not identical (same first word and
    count)."""
    return share(a0, an, b0, bn) and not (a0 == b0 and an == bn)


# ---- §3 tables --------------------------------------------------------------------------------


def nearest(x):
    """The nearest integer to a real value that is not a half-integer (§3)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _rsq(i):
    """RSQ[i]: the unique integer y with (2y-1)^2 (2i+1) < 2^57 < (2y+1)^2 (2i+1)."""
    y = int(2 ** 27 / math.sqrt(i + 0.5))
    while (2 * y + 1) ** 2 * (2 * i + 1) <= 2 ** 57:
        y += 1
    while (2 * y - 1) ** 2 * (2 * i + 1) >= 2 ** 57:
        y -= 1
    assert (2 * y - 1) ** 2 * (2 * i + 1) < 2 ** 57 < (2 * y + 1) ** 2 * (2 * i + 1)
    return y


def _table(values):
    return np.array(values, dtype=np.int64)


EXP = _table([nearest(65536 * math.exp(-i / 64)) for i in range(1024)])
RSQ = _table([0] * 64 + [_rsq(i) for i in range(64, 256)])                       # defined from 64
RCP = _table([0] * 128 + [(2 ** 39 + 2 * i + 1) // (4 * i + 2) for i in range(128, 256)])  # from 128
SIG = _table([nearest(65536 / (1 + math.exp(-(i - 512) / 64))) for i in range(1024)])
COS = _table([[nearest(65536 * math.cos(p * 10.0 ** -j)) for j in range(4)] for p in range(64)])
SIN = _table([[nearest(65536 * math.sin(p * 10.0 ** -j)) for j in range(4)] for p in range(64)])

# §3's SHA-256 of the tables (int32 little-endian entries in index order)
TABLE_SHA = {
    "EXP": "c26fdf2176392e1aead5d77178e3b9cbf85a7cbf9123ef286913801863464ef6",
    "RSQ": "5cdab279aceba054bf27e1fea6109f71d6346b53a763d3042cf8fa38bf6624be",
    "RCP": "8e96bf1297d74ac9d1f25a71caa311bd45e00363a3cda27682a2870faafecab7",
    "SIG": "db76a69faaeb9466f873c355fb8f113de0bf1067f43be90956ef9e341acff076",
    "COS": "e97b07cdcd8c1d45b841124e9235cc2a25f76c3d68e991cac3bf7de3ae60f8af",
    "SIN": "785e46430e76bd9b40b2072bc71c1ad7597a6d942ea8f0a3de04d5156ea39f1f",
}


def table_lists():
    """The §3 tables as lists of Python integers in §3's hashing order (RSQ from index 64, RCP
    from 128, COS and SIN by p, then j)."""
    return {"EXP": EXP.tolist(), "RSQ": RSQ[64:].tolist(), "RCP": RCP[128:].tolist(),
            "SIG": SIG.tolist(), "COS": COS.ravel().tolist(), "SIN": SIN.ravel().tolist()}


def sha_of(values):
    """SHA-256 (hex) of integers as int32 little-endian."""
    return hashlib.sha256(np.array(values, dtype="<i4").tobytes()).hexdigest()


def table_shas():
    """{table name: SHA-256} of the tables as computed here (compare with TABLE_SHA)."""
    return {name: sha_of(v) for name, v in table_lists().items()}


# ---- §2 memories ------------------------------------------------------------------------------

# Memory name -> element count.  Flat arrays: VR word w at w, ACT block b value i at 64b + i,
# W[c][i] at 64c + i, KC/VC row r element j at 32r + j.
MEMORIES = {"vr": VR_WORDS, "act": ACT_BLOCKS * BLOCK, "ash": ACT_BLOCKS, "wmem": NCHUNK * CHUNK,
            "wscale": NCHUNK, "kc": NROWS * ROW, "ksh": NROWS, "vc": NROWS * ROW, "vsh": NROWS}


class LoadError(ValueError):
    """A `.lockstep.*` section that §2.1 says loading MUST reject; the message names it."""


@dataclass
class Section:
    """A row of §2.1's table: the memory a section initialises, its maximum length in bytes and
    how its bytes become elements (a function of a uint8 array)."""
    memory: str
    max_bytes: int
    decode: object
    shift: bool = False  # ASH/KSH/VSH: a byte above 25 is rejected


def _int4_pairs(b):
    """§2.1 `.lockstep.wmem`: byte 32c + k holds W[c][2k] in bits 3..0 and W[c][2k+1] in bits
    7..4, each a 4-bit two's complement value."""
    lo, hi = (b & 0xF).astype(np.int64), (b >> 4).astype(np.int64)
    return np.stack([lo - 16 * (lo > 7), hi - 16 * (hi > 7)], axis=1).ravel()


def _le(dtype):
    """Little-endian elements of `dtype` at byte (size) * index.  A section that ends inside an
    element initialises that element's low bytes (the bytes it has), the rest stay zero."""
    size = np.dtype(dtype).itemsize
    return lambda b: np.frombuffer(b.tobytes() + bytes(-len(b) % size), dtype=dtype).astype(np.int64)


SECTIONS = {
    ".lockstep.wmem": Section("wmem", 132864, _int4_pairs),
    ".lockstep.wscale": Section("wscale", 8304, _le("<u2")),
    ".lockstep.vreg": Section("vreg", 4096, _le("<i4")),
    ".lockstep.act": Section("act", 384, lambda b: b.view(np.int8).astype(np.int64)),
    ".lockstep.ash": Section("ash", 6, lambda b: b.astype(np.int64), shift=True),
    ".lockstep.kcache": Section("kc", 10240, lambda b: b.view(np.int8).astype(np.int64)),
    ".lockstep.vcache": Section("vc", 10240, lambda b: b.view(np.int8).astype(np.int64)),
    ".lockstep.ksh": Section("ksh", 320, lambda b: b.astype(np.int64), shift=True),
    ".lockstep.vsh": Section("vsh", 320, lambda b: b.astype(np.int64), shift=True),
}


class State:
    """The vector memories of §2 as flat int64 arrays (MEMORIES), reset to zero.  RAM and the
    scalar registers are isa.md's, not part of this state (VLD reads RAM through a callable)."""

    def __init__(self):
        for name, size in MEMORIES.items():
            setattr(self, name, np.zeros(size, dtype=np.int64))

    @classmethod
    def from_sections(cls, sections):
        """§2.1: zero, then each `.lockstep.*` section's bytes from the memory's start (a shorter
        section leaves the rest zero; a missing one the whole memory).  `sections`: {name:
        bytes}.  Raises LoadError for an unknown `.lockstep.` name, a section longer than its
        maximum or a shift byte above 25.  (Duplicates, SHF_ALLOC, the section type and bounds
        are properties of the ELF file, which this model does not read.)"""
        st = cls()
        for name, data in sections.items():
            if not name.startswith(".lockstep."):
                continue
            sec = SECTIONS.get(name)
            if sec is None:
                raise LoadError("%s: not a vector memory section (vector.md §2.1)" % name)
            if len(data) > sec.max_bytes:
                raise LoadError("%s: %d bytes, at most %d" % (name, len(data), sec.max_bytes))
            b = np.frombuffer(bytes(data), dtype=np.uint8)
            if sec.shift and (b > 25).any():
                raise LoadError("%s: a shift byte above 25" % name)
            values = sec.decode(b)
            getattr(st, "vr" if sec.memory == "vreg" else sec.memory)[: len(values)] = values
        return st

    def copy(self):
        st = State()
        for name in MEMORIES:
            setattr(st, name, getattr(self, name).copy())
        return st

    def sha256(self):
        """SHA-256 (hex) of the whole state: every memory of MEMORIES in that order, each
        element as int32 little-endian (a digest for comparing two implementations' states)."""
        h = hashlib.sha256()
        for name in MEMORIES:
            h.update(getattr(self, name).astype("<i4").tobytes())
        return h.hexdigest()


# ---- §4.0 operands, the outcome of an instruction ---------------------------------------------


@dataclass
class Operands:
    """The fields of a vector instruction word (§4.0) and the two registers it reads.

    x1 = X(rs1), x2 = X(rs2) as unsigned 32-bit values; A = x1 & 0xFFFF, B = x1 >> 16,
    C = x2 & 0xFFFF, N = x2 >> 16.  OPCODE / OPCODE_NAME: the major opcode the word must have
    (custom-1; fused_model.Operands: custom-2)."""
    OPCODE = 0x2B
    OPCODE_NAME = "custom-1"
    word: int
    x1: int
    x2: int

    def __post_init__(self):
        w = self.word
        assert w & 0x7F == self.OPCODE, "not a %s word: 0x%08x" % (self.OPCODE_NAME, w)
        self.rd, self.f3 = (w >> 7) & 31, (w >> 12) & 7
        self.rs1, self.rs2, self.f7 = (w >> 15) & 31, (w >> 20) & 31, w >> 25
        self.x1 &= 0xFFFFFFFF
        self.x2 &= 0xFFFFFFFF
        self.A, self.B = self.x1 & 0xFFFF, self.x1 >> 16
        self.C, self.N = self.x2 & 0xFFFF, self.x2 >> 16


@dataclass
class Outcome:
    """What one instruction did.

    trap: the §6 code raised (the lowest applicable), or None; a trapping instruction writes
    nothing.  writes: (memory, indices, values) triples (int64 arrays, flat indices as in
    MEMORIES), in no particular order; a memory element is written at most once.  rd_value:
    X(rd)'s new value (VMAT argmax with rd != x0), else None.  values: the §4 quantities §5 puts
    on the bus, by their names in §4 (see each op)."""
    trap: int = None
    writes: list = field(default_factory=list)
    rd_value: int = None
    values: dict = field(default_factory=dict)

    def write(self, memory, indices, values):
        self.writes.append((memory, np.asarray(indices, dtype=np.int64).ravel(),
                            np.asarray(values, dtype=np.int64).ravel()))

    def count(self):
        """The number of elements written (X(rd) included)."""
        return sum(len(i) for _, i, _ in self.writes) + (self.rd_value is not None)


def _span(codes, first, count):
    """§6 code 17: [first, first + count) is inside VR iff first + count <= 1024."""
    if first + count > VR_WORDS:
        codes.add(17)


# ---- vmat.md §1 VMAT --------------------------------------------------------------------------------


def vmat_traps(o):
    K, argmax = o.f7 & 7, (o.f7 >> 3) & 1
    dst, b0, c0, R = o.A, o.B, o.C, o.N
    codes = set()
    if K in (0, 7) or o.f7 >> 4 or (not argmax and o.rd != 0):
        codes.add(16)
    if R == 0:
        codes.add(18)
    if b0 + K > ACT_BLOCKS:
        codes.add(19)
    if c0 + R * K > NCHUNK:
        codes.add(21)
    if not argmax:
        _span(codes, dst, R)
    return codes


def vmat_rows(st, b0, chunks):
    """vmat.md §1's row values: `chunks` (R, K) int64, row r's chunk j against ACT block b0 + j;
    acc_{r,j} = sum_i ACT[64(b0+j) + i] W[c][i], y_r = sat32(rnd(sum_j acc_{r,j} WSCALE[c]
    2^ASH[b0+j], 16)).  Returns y, shape (R,).  (Also vector-fused.md's VMATROW.)"""
    K = chunks.shape[1]
    W = st.wmem.reshape(NCHUNK, CHUNK)[chunks]                      # (R, K, 64)
    act = st.act.reshape(ACT_BLOCKS, BLOCK)[b0:b0 + K]              # (K, 64)
    acc = np.einsum("rki,ki->rk", W, act)
    assert np.abs(acc).max() <= 1 << 16
    terms = acc * st.wscale[chunks] * (1 << st.ash[b0:b0 + K])      # each < 2^57
    return sat32(rnd(terms.sum(axis=1), 16))                        # sum < 2^60


def vmat(st, o, ram):
    """vmat.md §1: row r is the K chunks c0 + rK + j, chunk j against ACT block b0 + j;
    acc_{r,j} = sum_i ACT[64(b0+j) + i] W[c][i], y_r = sat32(rnd(sum_j acc_{r,j} WSCALE[c]
    2^ASH[b0+j], 16)).  Write mode: VR[dst + r] <- y_r.  Argmax mode: X(rd) <- r*, the lowest r
    with the largest y_r.  values: y (the R row results), argmax (bool)."""
    K, argmax = o.f7 & 7, (o.f7 >> 3) & 1
    dst, b0, c0, R = o.A, o.B, o.C, o.N
    y = vmat_rows(st, b0, np.arange(c0, c0 + R * K).reshape(R, K))
    out = Outcome(values={"y": y, "argmax": bool(argmax)})
    if argmax:
        if o.rd != 0:
            out.rd_value = int(np.argmax(y))                        # the first maximum
    else:
        out.write("vr", dst + np.arange(R), y)
    return out


# ---- vmatr.md §1 VMATR -------------------------------------------------------------------------------

HEAD_KV = np.arange(8) // 2  # query head h reads KV head floor(h / 2)


def vmatr_traps(o):
    vmode = o.f7 & 1
    dst, src, r0, T = o.A, o.B, o.C, o.N
    codes = set()
    if o.f7 >> 1 or o.rd != 0:
        codes.add(16)
    if not 1 <= T <= 64:
        codes.add(18)
    if vmode == 0:
        if src > 5:
            codes.add(19)
        _span(codes, dst, 448 + T)
    else:
        _span(codes, src, 448 + T)
        _span(codes, dst, 64)
        if any(share(dst, 64, src + 64 * h, T) for h in range(8)):
            codes.add(20)
    if r0 + T > NROWS:
        codes.add(22)
    return codes


def vmatr_k_words(st, src, r0, T):
    """vmatr.md §1 K mode's words, shape (8, T) by (h, t): s_{h,t} = sum_d ACT[64 src + 8h + d]
    KC[r0+t][8 floor(h/2) + d], e = ASH[src] + KSH[r0+t], sat32(s 2^(e-16)) if e >= 16, else
    sat32(rnd(s, 16 - e)).  (Also vector-fused.md §3.3's s_{h,t}.)"""
    q = st.act[64 * src:64 * src + 64].reshape(8, 8)                         # (h, d)
    k = st.kc[ROW * r0:ROW * (r0 + T)].reshape(T, 4, 8)[:, HEAD_KV, :]        # (t, h, d)
    s = np.einsum("hd,thd->ht", q, k)
    assert np.abs(s).max() <= 1 << 17
    e = st.ash[src] + st.ksh[r0:r0 + T][None, :]                              # (1, T), 0..50
    return sat32(np.where(e >= 16, s << np.maximum(e - 16, 0), rnd(s, np.maximum(16 - e, 0))))


def vmatr(st, o, ram):
    """vmatr.md §1.  K mode: s_{h,t} = sum_d ACT[64 src + 8h + d] KC[r0+t][8 floor(h/2) + d], e =
    ASH[src] + KSH[r0+t], VR[dst + 64h + t] <- sat32(s 2^(e-16)) if e >= 16, else
    sat32(rnd(s, 16 - e)).  V mode: p_{h,t} = min(max(VR[src + 64h + t], 0), 65536),
    o_{h,d} = sum_t p_{h,t} VC[r0+t][8 floor(h/2) + d] 2^VSH[r0+t], VR[dst + 8h + d] <-
    sat32(rnd(o_{h,d}, 16)).  values: z, the words written, shape (8, T) by (h, t) in K mode and
    (64,) by e = 8h + d in V mode."""
    vmode = o.f7 & 1
    dst, src, r0, T = o.A, o.B, o.C, o.N
    h = np.arange(8)[:, None]
    t = np.arange(T)[None, :]
    if vmode == 0:
        z = vmatr_k_words(st, src, r0, T)
        out = Outcome(values={"z": z})
        out.write("vr", dst + 64 * h + t, z)
        return out
    p = np.clip(st.vr[src + 64 * h + t], 0, 65536)                            # (h, t)
    v = st.vc[ROW * r0:ROW * (r0 + T)].reshape(T, 4, 8)[:, HEAD_KV, :]        # (t, h, d)
    v = v << st.vsh[r0:r0 + T][:, None, None]
    terms = p.T[:, :, None] * v                                               # each <= 2^48
    assert np.abs(terms).max() <= 1 << 48
    z = sat32(rnd(terms.sum(axis=0), 16)).ravel()                             # e = 8h + d
    out = Outcome(values={"z": z})
    out.write("vr", dst + np.arange(64), z)
    return out


# ---- vq.md §1 VQ ----------------------------------------------------------------------------------


def vq_traps(o):
    target, n, src = o.f7 & 3, o.N, o.B
    codes = set()
    if target == 3 or o.f7 >> 2 or o.rd != 0:
        codes.add(16)
    if target == 0:
        if not 1 <= n <= 384:
            codes.add(18)
        if o.A + -(-n // 64) > ACT_BLOCKS:
            codes.add(19)
    elif target in (1, 2):
        if n != 32:
            codes.add(18)
        if o.A >= NROWS:
            codes.add(22)
    _span(codes, src, n)
    return codes


def vq(st, o, ram):
    """vq.md §1: groups k of 64 sources x_i = VR[src + i]; e_k = E(max |x_i|), q_i = rnd(x_i, e_k).
    ACT: block A + k gets the group's q (zeros past n), ASH[A + k] <- e_k.  K/V (n = 32):
    KC[A] (VC[A]) <- q, KSH[A] (VSH[A]) <- e_0.  values: e (list of e_k), q (per group, the
    values the block or row receives, padding included)."""
    target, n, src = o.f7 & 3, o.N, o.B
    x = st.vr[src:src + n]
    out = Outcome(values={"e": [], "q": []})
    for k in range(-(-n // 64)):
        g = x[64 * k:64 * k + 64]
        e = E(int(np.abs(g).max()))
        q = rnd(g, e)
        assert np.abs(q).max() <= 127
        if target == 0:
            q = np.concatenate([q, np.zeros(64 - len(q), dtype=np.int64)])   # zero padding
            b = o.A + k
            out.write("act", 64 * b + np.arange(64), q)
            out.write("ash", [b], [e])
        else:
            mem, shift = ("kc", "ksh") if target == 1 else ("vc", "vsh")
            out.write(mem, ROW * o.A + np.arange(ROW), q)
            out.write(shift, [o.A], [e])
        out.values["e"].append(e)
        out.values["q"].append(q)
    return out


# ---- vexp.md §1 VEXP --------------------------------------------------------------------------------


def vexp_traps(o):
    G = (o.f7 & 7) + 1
    dst, src, sums, T = o.A, o.B, o.C, o.N
    codes = set()
    if o.f7 >> 3 or o.rd != 0:
        codes.add(16)
    if not 1 <= T <= 64:
        codes.add(18)
    _span(codes, src, 64 * (G - 1) + T)
    _span(codes, dst, 64 * (G - 1) + T)
    _span(codes, sums, G)
    if dst != src and any(share(dst + 64 * g, T, src + 64 * h, T) for g in range(G) for h in range(G)):
        codes.add(20)
    if any(share(sums, G, base + 64 * g, T) for base in (src, dst) for g in range(G)):
        codes.add(20)
    return codes


def vexp(st, o, ram):
    """vexp.md §1: group g's scores s_{g,t} = VR[src + 64g + t]; m_g = max_t s; i = min(1023,
    rnd(m_g - s, 10)); p = EXP[i]; S_g = sum_t p.  VR[dst + 64g + t] <- p, VR[sums + g] <- S_g.
    values: m (G maxima), p (G, T), S (G)."""
    G, dst, src, sums, T = (o.f7 & 7) + 1, o.A, o.B, o.C, o.N
    g = np.arange(G)[:, None]
    t = np.arange(T)[None, :]
    s = st.vr[src + 64 * g + t]                                      # all reads before writes
    m = s.max(axis=1)
    p = EXP[np.minimum(1023, rnd(m[:, None] - s, 10))]
    S = p.sum(axis=1)
    assert (65536 <= S).all() and (S <= 1 << 22).all()
    out = Outcome(values={"m": m, "p": p, "S": S})
    out.write("vr", dst + 64 * g + t, p)
    out.write("vr", sums + np.arange(G), S)
    return out


# ---- vew.md §1 VEW ---------------------------------------------------------------------------------


def muls_span(n, gs):
    """MULS's scalar span length ((n - 1) >> GS) + 1 (§6; 0 for n = 0)."""
    return ((n - 1) >> gs) + 1


def vew_traps(o):
    mode, gs = o.f7 & 3, (o.f7 >> 2) & 7
    dst, a, b, n = o.A, o.B, o.C, o.N
    codes = set()
    if o.f7 >> 5 or o.rd != 0 or (mode == 2 and gs == 7) or (mode != 2 and gs != 0):
        codes.add(16)
    if not 1 <= n <= 1024 or (mode == 3 and n % 2):
        codes.add(18)
    _span(codes, a, n)
    _span(codes, dst, n)
    if mode in (0, 1):
        _span(codes, b, n)
        if conflict(dst, n, b, n):
            codes.add(20)
    if mode == 2:
        _span(codes, b, muls_span(n, gs))
        if share(b, muls_span(n, gs), dst, n):
            codes.add(20)
    if conflict(dst, n, a, n):
        codes.add(20)
    if mode == 3 and b >= 64:
        codes.add(23)
    return codes


def rot(x, p):
    """vew.md §1 ROT of an even-length int64 array x at position p (0..63): pairs (u, v) =
    (x_2k, x_2k+1), c = COS[p][k mod 4], s = SIN[p][k mod 4]; z_2k = sat32(rnd(uc - vs, 16)),
    z_2k+1 = sat32(rnd(us + vc, 16)).  Returns z, the shape of x."""
    j = np.arange(len(x) // 2) % 4
    c, s, u, v = COS[p][j], SIN[p][j], x[0::2], x[1::2]
    z = np.empty(len(x), dtype=np.int64)
    z[0::2] = sat32(rnd(u * c - v * s, 16))
    z[1::2] = sat32(rnd(u * s + v * c, 16))
    return z


def vew(st, o, ram):
    """vew.md §1: x_i = VR[a + i]; ADD sat32(x + VR[b + i]); MUL sat32(rnd(x VR[b + i], 16)); MULS
    sat32(rnd(x VR[b + (i >> GS)], 16)); ROT pairs (u, v) = (x_2k, x_2k+1) with c = COS[p][k mod
    4], s = SIN[p][k mod 4]: sat32(rnd(uc - vs, 16)), sat32(rnd(us + vc, 16)).  VR[dst + i] <-
    z_i.  values: z."""
    mode, gs = o.f7 & 3, (o.f7 >> 2) & 7
    dst, a, b, n = o.A, o.B, o.C, o.N
    x = st.vr[a:a + n]
    i = np.arange(n)
    if mode == 0:
        z = sat32(x + st.vr[b + i])
    elif mode == 1:
        z = sat32(rnd(x * st.vr[b + i], 16))
    elif mode == 2:
        z = sat32(rnd(x * st.vr[b + (i >> gs)], 16))
    else:
        z = rot(x, b)
    out = Outcome(values={"z": z})
    out.write("vr", dst + i, z)
    return out


# ---- vfn.md §1 VFN ---------------------------------------------------------------------------------


def vfn_traps(o):
    dst, src, n = o.A, o.B, o.N
    codes = set()
    if o.f7 >= 3 or o.rd != 0:
        codes.add(16)
    if not 1 <= n <= 1024:
        codes.add(18)
    _span(codes, src, n)
    _span(codes, dst, n)
    if conflict(dst, n, src, n):
        codes.add(20)
    return codes


def rsqrt(x):
    """vfn.md §1 RSQRT: u = max(x, 1), k2 = k - (k mod 2) for k = floor_log2(u), ix = u >> (k2 - 6) or
    u << (6 - k2) (64..255), z = rnd(RSQ[ix], k2 / 2)."""
    u = np.maximum(x, 1)
    k = floor_log2(u)
    k2 = k - k % 2
    ix = np.where(k2 >= 6, u >> np.maximum(k2 - 6, 0), u << np.maximum(6 - k2, 0))
    assert ((64 <= ix) & (ix < 256)).all()
    return rnd(RSQ[ix], k2 // 2)


def recip(x):
    """vfn.md §1 RECIP: u = max(x, 1), k = floor_log2(u), ix = u >> (k - 7) or u << (7 - k)
    (128..255), z = sat32(RCP[ix] 2^(2-k)) if k <= 2, else rnd(RCP[ix], k - 2)."""
    u = np.maximum(x, 1)
    k = floor_log2(u)
    ix = np.where(k >= 7, u >> np.maximum(k - 7, 0), u << np.maximum(7 - k, 0))
    assert ((128 <= ix) & (ix < 256)).all()
    r = RCP[ix]
    return np.where(k <= 2, sat32(r << np.maximum(2 - k, 0)), rnd(r, np.maximum(k - 2, 0)))


def silu(x):
    """vfn.md §1 SILU: ix = min(1023, max(0, rnd(x, 10) + 512)), z = sat32(rnd(x SIG[ix], 16))."""
    ix = np.clip(rnd(x, 10) + 512, 0, 1023)
    return sat32(rnd(x * SIG[ix], 16))


FUNCTIONS = [rsqrt, recip, silu]  # by FN


def vfn(st, o, ram):
    """vfn.md §1: VR[dst + i] <- f(VR[src + i]) for the function FN.  values: z."""
    z = FUNCTIONS[o.f7](st.vr[o.B:o.B + o.N])
    out = Outcome(values={"z": z})
    out.write("vr", o.A + np.arange(o.N), z)
    return out


# ---- vred.md §1 VRED --------------------------------------------------------------------------------


def vred_traps(o):
    mode, sh = o.f7 & 3, o.f7 >> 2
    codes = set()
    if mode == 3 or (mode == 2 and sh != 0) or o.rd != 0:
        codes.add(16)
    if not 1 <= o.N <= 1024:
        codes.add(18)
    _span(codes, o.B, o.N)
    _span(codes, o.A, 1)
    return codes


def vred(st, o, ram):
    """vred.md §1: over x_i = VR[src + i]: SUMSQ sat32(rnd(sum x^2, 16 + SH)) (the sum exact, <= 2^72:
    a Python integer), SUM sat32(rnd(sum x, SH)), MAX max x.  VR[dst] <- z.  values: z, groups
    (ceil(n / 64), the source groups §5 counts)."""
    mode, sh = o.f7 & 3, o.f7 >> 2
    x = st.vr[o.B:o.B + o.N]
    if mode == 0:
        acc = sum(v * v for v in x.tolist())
        assert acc <= 1 << 72
        z = sat32(rnd(acc, 16 + sh))
    elif mode == 1:
        acc = int(x.sum())
        assert abs(acc) <= 1 << 41
        z = sat32(rnd(acc, sh))
    else:
        z = int(x.max())
    out = Outcome(values={"z": z, "groups": -(-o.N // 64)})
    out.write("vr", [o.A], [z])
    return out


# ---- vld.md §1 VLD ---------------------------------------------------------------------------------


def vld_traps(o):
    a, dst, n = o.x1, o.x2 & 0xFFFF, o.x2 >> 16
    codes = set()
    if o.f7 != 0 or o.rd != 0:
        codes.add(16)
    if not 1 <= n <= 1024:
        codes.add(18)
    _span(codes, dst, n)
    if a % 4:
        codes.add(4)
    if a < RAM_BASE or a + 4 + n > RAM_END:
        codes.add(5)
    return codes


def vld(st, o, ram):
    """vld.md §1: the record at a = X(rs1): int32 M (bytes a..a+3), then bytes b_0..b_{n-1};
    VR[dst + i] <- sat32(sext8(b_i) M).  `ram(addr, count)` returns RAM's bytes.  values:
    record (the 4 + n bytes read)."""
    a, dst, n = o.x1, o.x2 & 0xFFFF, o.x2 >> 16
    record = bytes(ram(a, 4 + n))
    assert len(record) == 4 + n
    M = s32(int.from_bytes(record[:4], "little"))
    b = np.frombuffer(record[4:], dtype=np.int8).astype(np.int64)
    z = sat32(b * M)
    out = Outcome(values={"record": record})
    out.write("vr", dst + np.arange(n), z)
    return out


# ---- the registry and one instruction ---------------------------------------------------------


@dataclass
class Op:
    """A row of §4.0's table: f3, the op's name, its §6 checks and its §4 semantics."""
    f3: int
    name: str
    traps: object
    run: object


OPS = [Op(0, "VMAT", vmat_traps, vmat), Op(1, "VMATR", vmatr_traps, vmatr), Op(2, "VQ", vq_traps, vq),
       Op(3, "VEXP", vexp_traps, vexp), Op(4, "VEW", vew_traps, vew), Op(5, "VFN", vfn_traps, vfn),
       Op(6, "VRED", vred_traps, vred), Op(7, "VLD", vld_traps, vld)]


def apply(st, outcome):
    """Performs an outcome's writes on `st` (all reads were made before, §4.0 "Order")."""
    for memory, indices, values in outcome.writes:
        getattr(st, memory)[indices] = values


def outcome(st, word, x1, x2, ram=None):
    """What the vector instruction `word` (custom-1, §4.0) does from state `st` with X(rs1) = x1
    and X(rs2) = x2 (unsigned 32-bit; VLD reads RAM through `ram(addr, count)`): §4.0, the trap
    conditions of §6 first (the lowest code is raised and nothing changes), then all reads.
    Returns the Outcome; `st` is not changed (apply() performs the writes)."""
    o = Operands(word, x1, x2)
    op = OPS[o.f3]
    codes = op.traps(o)
    if codes:
        return Outcome(trap=min(codes))
    return op.run(st, o, ram)


def execute(st, word, x1, x2, ram=None):
    """outcome(), then its writes on `st`; returns the Outcome."""
    out = outcome(st, word, x1, x2, ram)
    apply(st, out)
    return out
