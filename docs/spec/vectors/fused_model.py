"""An executable reading of docs/spec/vector-fused.md §3: the six fused vector ops (a PROPOSAL).

vector-fused.md is a proposal for issue #31, not normative spec: nothing here is part of the
machine.  ref/, chip/ and guests/ do not implement these ops, and custom-2 words are illegal
instructions (trap 1) until the proposal is accepted (vector.md §4.0).  This model exists so that
the proposal's claims can be executed: fused_model_test.py runs each op against its "Equivalent
sequence" of existing ops on vector_model.py (§1.5's bit-identity), draws every trap code of §3.x
"Traps", and checks §3.x "Tokens" and the §5 / §6.2 counts.

Each op is three functions that read like its §3.x: `<op>_traps(o)` (the "Traps" list, a set of
codes), `<op>(st, o)` (the "Operation" formulas, an Outcome of what it writes), and
`<op>_tokens(st, o)` (the "Tokens" table: the list of (kind name, payload) after the pc tokens).
The arithmetic primitives are vector_model.py's (rnd, sat32, E, the RSQRT / RECIP / SILU
functions, the EXP / COS / SIN tables, vmat_rows = VMATROW, vmatr_k_words = VMATR K's word, rot =
VEW ROT), imported, never copied.  `FUSED` is the registry by f3; outcome() / execute() run one
custom-2 word as vector_model.outcome() / execute() run a custom-1 word.

    /usr/bin/python3 -c "import fused_model"   # Debian's python3-numpy (ci/setup)
"""
import os
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vector_model as vm  # noqa: E402
from vector_model import (ACT_BLOCKS, EXP, HEAD_KV, NCHUNK, NROWS, ROW, E, Outcome,  # noqa: E402
                          rnd, sat32)

CUSTOM_2 = 0x5B  # op = 1011011 (vector-fused.md §2)


class Operands(vm.Operands):
    """vector-fused.md §2: an R-type custom-2 word and the two registers it reads; the fields are
    vector_model.Operands' (vector.md §4.0: A = x1 & 0xFFFF, B = x1 >> 16, C = x2 & 0xFFFF,
    N = x2 >> 16)."""
    OPCODE = CUSTOM_2
    OPCODE_NAME = "custom-2"


def encode(f3, f7, rd=0, rs1=11, rs2=12):
    """`.insn r CUSTOM_2, f3, f7, rd, rs1, rs2` (§2)."""
    return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | CUSTOM_2


def _span(codes, first, count):
    vm._span(codes, first, count)  # code 17: [first, first + count) outside VR


def _quantise_act(out, z, b0):
    """vq.md §1 ACT of z (1..384 words) into blocks b0 .. b0 + ceil(n/64) - 1: per group k of 64,
    e_k = E(max |z|), q = rnd(z, e_k), zero padding.  Records values e (list) and q (list of the
    64-value blocks)."""
    es, qs = [], []
    for k in range(-(-len(z) // 64)):
        g = z[64 * k:64 * k + 64]
        e = E(int(np.abs(g).max()))
        q = np.concatenate([rnd(g, e), np.zeros(64 - len(g), dtype=np.int64)])
        assert np.abs(q).max() <= 127
        out.write("act", 64 * (b0 + k) + np.arange(64), q)
        out.write("ash", [b0 + k], [e])
        es.append(e)
        qs.append(q)
    out.values["e"], out.values["q"] = es, qs


def _quantise_row(out, u, mem, shift, row):
    """vq.md §1 K / V of 32 words into row `row` of KC (VC) and KSH (VSH); returns (e, q)."""
    e = E(int(np.abs(u).max()))
    q = rnd(u, e)
    assert np.abs(q).max() <= 127
    out.write(mem, ROW * row + np.arange(ROW), q)
    out.write(shift, [row], [e])
    return e, q


# ---- token streams (vector.md §5) ------------------------------------------------------------------


def word_stream(elements):
    """vector.md §5 word stream of (element e, value z) pairs: VWG(e >> 2) at the first element
    or when e & 3 = 0, then VW_q0 .. VW_q3 (q = e & 3) carrying the bytes of z."""
    toks = []
    for n, (e, z) in enumerate(elements):
        if n == 0 or e & 3 == 0:
            toks.append(("VWG", e >> 2))
        toks += [("VW%d%d" % (e & 3, m), (int(z) >> (8 * m)) & 0xFF) for m in range(4)]
    return toks


def int8_stream(values, j0=0):
    """vector.md §5 int8 stream of values with element indices j0, j0 + 1, ...: VLG(j >> 2) when
    j & 3 = 0, then VLB_{j & 3}(lo8(v))."""
    toks = []
    for j, v in enumerate(values, j0):
        if j & 3 == 0:
            toks.append(("VLG", j >> 2))
        toks.append(("VLB%d" % (j & 3), int(v) % 256))
    return toks


def W(rd, v):
    """trace.md §3 W(v): W0..W3 of v's bytes when rd != x0, NOP(0) when rd = x0."""
    if rd == 0:
        return [("NOP", 0)]
    return [("W%d" % m, (v >> (8 * m)) & 0xFF) for m in range(4)]


# ---- §3.1 VNORM (f3 = 0) ------------------------------------------------------------------------------


def vnorm_traps(o):
    """§3.1 Traps.  A = b0, B = src, N = n; f7 bits 4..0 SH."""
    b0, src, n = o.A, o.B, o.N
    codes = set()
    if o.f7 >> 5 or o.rd != 0:
        codes.add(16)
    _span(codes, src, n)
    if not 1 <= n <= 64:
        codes.add(18)
    if b0 > 5:
        codes.add(19)
    return codes


def vnorm(st, o):
    """§3.1 Operation: x_i = VR[src + i] (n <= 64 words); ms = sat32(rnd(sum x^2, 16 + SH)); R =
    RSQRT(ms) (1 <= R < 2^24); z_i = sat32(rnd(x_i R, 16)); e = E(max |z|), q_i = rnd(z_i, e);
    ACT block b0 <- q (zeros past n), ASH[b0] <- e.  values: ms, R, z, e ([e]), q ([block]),
    e_extremes (e from the z of max x and min x only: §3.1 Depth's shortcut)."""
    b0, src, n, sh = o.A, o.B, o.N, o.f7 & 31
    x = st.vr[src:src + n]
    acc = sum(v * v for v in x.tolist())                             # exact, <= 2^68
    ms = sat32(rnd(acc, 16 + sh))
    R = int(vm.rsqrt(np.array([ms]))[0])
    assert 1 <= R < 1 << 24
    z = sat32(rnd(x * R, 16))
    zx = sat32(rnd(np.array([x.max(), x.min()]) * R, 16))
    out = Outcome(values={"ms": ms, "R": R, "z": z, "e_extremes": E(int(np.abs(zx).max()))})
    _quantise_act(out, z, b0)
    return out


def vnorm_tokens(st, o, out):
    """§3.1 Tokens (86 for any n): the word stream of element 0, value R; VQE((0 << 5) | e); the
    int8 stream of block b0's 64 values."""
    return (word_stream([(0, out.values["R"])]) + [("VQE", out.values["e"][0])]
            + int8_stream(out.values["q"][0]))


# ---- §3.2 VQKV (f3 = 1) -------------------------------------------------------------------------------

QKV_ROWS = 128


def vqkv_traps(o):
    """§3.2 Traps.  A = row, B = b0, C = c0, N = p; f7 bits 2..0 QB."""
    row, b0, c0, p, QB = o.A, o.B, o.C, o.N, o.f7 & 7
    codes = set()
    if o.f7 >> 3 or o.rd != 0:
        codes.add(16)
    if b0 > 5 or QB > 5:
        codes.add(19)
    if c0 % 4 or c0 + QKV_ROWS > NCHUNK:
        codes.add(21)
    if row >= NROWS:
        codes.add(22)
    if p >= 64:
        codes.add(23)
    return codes


def vqkv(st, o):
    """§3.2 Operation: y_r = VMATROW(r; b0, c0 + r, 1) (r < 128); u = ROT of y_0..y_95 at p,
    u_r = y_r for r >= 96; KC[row] <- rnd(u_64..95, e_K), KSH[row] <- e_K; VC[row] <- rnd(u_96..127,
    e_V), VSH[row] <- e_V; ACT block QB <- rnd(u_0..63, e_q), ASH[QB] <- e_q.  values: y, u, eK,
    qK, eV, qV, e ([e_q]), q ([block])."""
    row, b0, c0, p, QB = o.A, o.B, o.C, o.N, o.f7 & 7
    y = vm.vmat_rows(st, b0, np.arange(c0, c0 + QKV_ROWS)[:, None])
    u = np.concatenate([vm.rot(y[:96], p), y[96:]])
    out = Outcome(values={"y": y, "u": u})
    out.values["eK"], out.values["qK"] = _quantise_row(out, u[64:96], "kc", "ksh", row)
    out.values["eV"], out.values["qV"] = _quantise_row(out, u[96:128], "vc", "vsh", row)
    _quantise_act(out, u[:64], QB)
    return out


def vqkv_tokens(st, o, out):
    """§3.2 Tokens (195): VMC0(g), g = 0..31; VQE((0 << 5) | e_K), K values j = 0..31;
    VQE((1 << 5) | e_V), V values j = 32..63; VQE((2 << 5) | e_q), q values j = 64..127."""
    v = out.values
    return ([("VMC0", g) for g in range(QKV_ROWS // 4)]
            + [("VQE", (0 << 5) | v["eK"])] + int8_stream(v["qK"], 0)
            + [("VQE", (1 << 5) | v["eV"])] + int8_stream(v["qV"], 32)
            + [("VQE", (2 << 5) | v["e"][0])] + int8_stream(v["q"][0], 64))


# ---- §3.3 VATT (f3 = 2) --------------------------------------------------------------------------------


def vatt_traps(o):
    """§3.3 Traps.  A = bd, B = bq, C = r0, N = T."""
    bd, bq, r0, T = o.A, o.B, o.C, o.N
    codes = set()
    if o.f7 != 0 or o.rd != 0:
        codes.add(16)
    if not 1 <= T <= 64:
        codes.add(18)
    if bq > 5 or bd > 5:
        codes.add(19)
    if r0 + T > NROWS:
        codes.add(22)
    return codes


def vatt(st, o):
    """§3.3 Operation, 8 query heads h (KV head h // 2), positions t < T, cache row r0 + t:
    s_{h,t} = VMATR K's word (query block bq); m_h = max_t s; p = EXP[min(1023, rnd(m_h - s, 10))];
    S_h = sum_t p; o_{h,d} = sat32(rnd(sum_t p VC[r0+t][8(h//2) + d] 2^VSH[r0+t], 16));
    z_{8h+d} = sat32(rnd(o_{h,d} RECIP(S_h), 16)); ACT block bd <- rnd(z, E(max |z|)), ASH[bd].
    values: s (8, T), m (8), p (8, T), S (8), o (64), z (64), e ([e]), q ([block]),
    e_extremes (e from each head's max and min o only: §3.3 Depth's note)."""
    bd, bq, r0, T = o.A, o.B, o.C, o.N
    s = vm.vmatr_k_words(st, bq, r0, T)                                         # (h, t)
    m = s.max(axis=1)
    p = EXP[np.minimum(1023, rnd(m[:, None] - s, 10))]
    S = p.sum(axis=1)
    v = st.vc[ROW * r0:ROW * (r0 + T)].reshape(T, 4, 8)[:, HEAD_KV, :]          # (t, h, d)
    v = v << st.vsh[r0:r0 + T][:, None, None]
    oh = sat32(rnd(np.einsum("ht,thd->hd", p, v), 16))                          # (h, d)
    rc = vm.recip(S)
    assert (rc >= 1).all()
    z = sat32(rnd(oh * rc[:, None], 16)).ravel()                                # 8h + d
    ox = np.stack([oh.max(axis=1), oh.min(axis=1)], axis=1)
    zx = sat32(rnd(ox * rc[:, None], 16))
    out = Outcome(values={"s": s, "m": m, "p": p, "S": S, "o": oh.ravel(), "z": z,
                          "e_extremes": E(int(np.abs(zx).max()))})
    _quantise_act(out, z, bd)
    return out


def vatt_tokens(st, o, out):
    """§3.3 Tokens (2T + 149): VMV(t), t < T; the word stream of elements h < 8, value m_h;
    VMV(64 + t), t < T; the same word stream, elements 8 + h, value S_h; VQE((0 << 5) | e) and the
    int8 stream of block bd's 64 values."""
    T, v = o.N, out.values
    return ([("VMV", t) for t in range(T)] + word_stream(enumerate(v["m"]))
            + [("VMV", 64 + t) for t in range(T)]
            + word_stream([(8 + h, S) for h, S in enumerate(v["S"])])
            + [("VQE", v["e"][0])] + int8_stream(v["q"][0]))


# ---- §3.4 VMADD (f3 = 3) -------------------------------------------------------------------------------


def vmadd_traps(o):
    """§3.4 Traps.  A = dst, B = b0, C = c0, N = R; f7 bits 2..0 K."""
    dst, b0, c0, R, K = o.A, o.B, o.C, o.N, o.f7 & 7
    codes = set()
    if not 1 <= K <= 3 or o.f7 >> 3 or o.rd != 0:
        codes.add(16)
    _span(codes, dst, R)
    if R == 0:
        codes.add(18)
    if b0 + K > ACT_BLOCKS:
        codes.add(19)
    if c0 + R * K > NCHUNK:
        codes.add(21)
    return codes


def vmadd(st, o):
    """§3.4 Operation: y_r = VMATROW(r; b0, c0 + rK, K), VR[dst + r] <- sat32(VR[dst + r] + y_r),
    r < R.  values: y, z (the words written)."""
    dst, b0, c0, R, K = o.A, o.B, o.C, o.N, o.f7 & 7
    y = vm.vmat_rows(st, b0, np.arange(c0, c0 + R * K).reshape(R, K))
    z = sat32(st.vr[dst:dst + R] + y)
    out = Outcome(values={"y": y, "z": z})
    out.write("vr", dst + np.arange(R), z)
    return out


def vmadd_tokens(st, o, out):
    """§3.4 Tokens (ceil(R/4) + 4R): the word stream of elements r < R, value VR[dst + r] as
    written."""
    return word_stream(enumerate(out.values["z"]))


# ---- §3.5 VSWI (f3 = 4) --------------------------------------------------------------------------------


def vswi_traps(o):
    """§3.5 Traps.  A = bo, B = b0, C = c0, N = n."""
    bo, b0, c0, n = o.A, o.B, o.C, o.N
    codes = set()
    if o.f7 != 0 or o.rd != 0:
        codes.add(16)
    if not 4 <= n <= 384 or n % 4:
        codes.add(18)
    if b0 > 5 or bo + -(-n // 64) > ACT_BLOCKS:
        codes.add(19)
    if c0 % 4 or c0 + 2 * n > NCHUNK:
        codes.add(21)
    return codes


def vswi(st, o):
    """§3.5 Operation: y_r = VMATROW(r; b0, c0 + r, 1), r < 2n; a_i = SILU(y_i); g_i =
    sat32(rnd(a_i y_{n+i}, 16)), i < n; VQ ACT of g into blocks bo .. bo + ceil(n/64) - 1.
    values: y, a, g, e (per group), q (per block)."""
    bo, b0, c0, n = o.A, o.B, o.C, o.N
    y = vm.vmat_rows(st, b0, np.arange(c0, c0 + 2 * n)[:, None])
    a = vm.silu(y[:n])
    g = sat32(rnd(a * y[n:], 16))                                    # |a y| <= 2^62
    out = Outcome(values={"y": y, "a": a, "g": g})
    _quantise_act(out, g, bo)
    return out


def vswi_tokens(st, o, out):
    """§3.5 Tokens (n/2 + 81 ceil(n/64)): VMC0(g), g < n/2; per group k, VQE((k << 5) | e_k) and
    the block's 64 values (vq.md §2: one int8 stream, j = 64k .. 64k + 63)."""
    n, v = o.N, out.values
    toks = [("VMC0", g) for g in range(n // 2)]
    for k, (e, q) in enumerate(zip(v["e"], v["q"])):
        toks += [("VQE", (k << 5) | e)] + int8_stream(q, 64 * k)
    return toks


# ---- §3.6 VARG (f3 = 5) --------------------------------------------------------------------------------


def varg_traps(o):
    """§3.6 Traps.  B = b0, C = c0, N = R (A is not read)."""
    b0, c0, R = o.B, o.C, o.N
    codes = set()
    if o.f7 != 0:
        codes.add(16)
    if not 4 <= R <= 1024 or R % 4:
        codes.add(18)
    if b0 > 5:
        codes.add(19)
    if c0 % 4 or c0 + R > NCHUNK:
        codes.add(21)
    return codes


def varg_quads(y):
    """§3.6 Tokens' rule: quad g (rows 4g..4g+3) is a new maximum (VMC1) when max_q y_{4g+q} >
    y_{r'} for every r' < 4g (always for g = 0), else VMC0.  Returns (the list of booleans, r* =
    4g* + q*: g* the last VMC1 quad, q* the smallest q where it attains its maximum)."""
    quads = y.reshape(-1, 4)
    new = [g == 0 or quads[g].max() > quads[:g].max() for g in range(len(quads))]
    gs = max(g for g in range(len(quads)) if new[g])
    return new, 4 * gs + int(np.argmax(quads[gs]))


def varg(st, o):
    """§3.6 Operation: y_r = VMATROW(r; b0, c0 + r, 1), r < R; X(rd) <- r*, the smallest r with
    y_r = max y (rd = x0 discards it).  values: y, r (r*), new (the per-quad VMC1 decisions),
    r_quads (r* as §3.6's tokens derive it)."""
    b0, c0, R = o.B, o.C, o.N
    y = vm.vmat_rows(st, b0, np.arange(c0, c0 + R)[:, None])
    r = int(np.flatnonzero(y == y.max())[0])
    new, r_quads = varg_quads(y)
    out = Outcome(values={"y": y, "r": r, "new": new, "r_quads": r_quads})
    if o.rd != 0:
        out.rd_value = r
    return out


def varg_tokens(st, o, out):
    """§3.6 Tokens (R/4 + |W|): per quad g, VMC1(g) or VMC0(g); then W(r*)."""
    return ([("VMC1" if new else "VMC0", g) for g, new in enumerate(out.values["new"])]
            + W(o.rd, out.values["r"]))


# ---- the registry, the stated counts, one instruction ---------------------------------------------------


@dataclass
class FusedOp:
    """A row of §2's table: f3, name, §3.x Traps, Operation, Tokens, and the count §3.x states
    (a function of the operands)."""
    f3: int
    name: str
    traps: object
    run: object
    tokens: object
    stated_count: object


FUSED = [
    FusedOp(0, "VNORM", vnorm_traps, vnorm, vnorm_tokens, lambda o: 86),
    FusedOp(1, "VQKV", vqkv_traps, vqkv, vqkv_tokens, lambda o: 195),
    FusedOp(2, "VATT", vatt_traps, vatt, vatt_tokens, lambda o: 2 * o.N + 149),
    FusedOp(3, "VMADD", vmadd_traps, vmadd, vmadd_tokens, lambda o: -(-o.N // 4) + 4 * o.N),
    FusedOp(4, "VSWI", vswi_traps, vswi, vswi_tokens, lambda o: o.N // 2 + 81 * -(-o.N // 64)),
    FusedOp(5, "VARG", varg_traps, varg, varg_tokens, lambda o: o.N // 4 + (4 if o.rd else 1)),
]


def outcome(st, word, x1, x2):
    """What the custom-2 word does from `st` with X(rs1) = x1, X(rs2) = x2 (§2): f3 = 6, 7 is an
    illegal instruction (trap 1); otherwise the §3.x trap conditions (the lowest code is raised
    and nothing changes), then the Operation.  `st` is not changed."""
    o = Operands(word, x1, x2)
    if o.f3 >= len(FUSED):
        return Outcome(trap=1)
    op = FUSED[o.f3]
    codes = op.traps(o)
    if codes:
        return Outcome(trap=min(codes))
    return op.run(st, o)


def execute(st, word, x1, x2):
    """outcome(), then its writes on `st`; returns the Outcome."""
    out = outcome(st, word, x1, x2)
    vm.apply(st, out)
    return out


def tokens(st, word, x1, x2, out=None):
    """The tokens after the pc tokens (§3.x Tokens; TRAP(code) for a trapping word).  `st` is the
    state before the instruction; `out` its outcome() if already computed."""
    o = Operands(word, x1, x2)
    out = out or outcome(st, word, x1, x2)
    if out.trap is not None:
        return [("TRAP", out.trap)]
    return FUSED[o.f3].tokens(st, o, out)
