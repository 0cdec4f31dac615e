#!/usr/bin/python3
"""Worked examples of the vector unit (docs/spec/vector.md), written from the spec alone.

A small, independent calculation: the state, traps and values come from `vector_model.py` (this
folder's executable reading of vector.md §2-§4 and §6, NumPy); this file adds the tokens of §5
(trace-v3: every value an instruction writes is on the bus, in word streams (VWG, VW00..VW33)
and int8 streams (VLG, VLB0..VLB3), each token with its micro-step position), built from each
instruction's outcome.  Each example runs ONE vector instruction from a given state, as the
first instruction of the run: its steps begin with the pc tokens of trace.md §4.0 (PCH_k, PCL).
One file per op, `vector_<op>.json` (vector.md §8, the op's page docs/spec/vector/<op>.md), the
op named by the f3 field of the example's instruction word.
Many examples also carry values and token texts worked out by hand (`want=`); the generator
refuses to write the files when the calculation disagrees, or when an instruction's token count
differs from the count column of the op's page (docs/spec/vector/<op>.md §2).

    /usr/bin/python3 docs/spec/vectors/gen_vector.py            # rewrite vector_<op>.json
    /usr/bin/python3 docs/spec/vectors/gen_vector.py --check    # are the vector_<op>.json up to date?
    /usr/bin/python3 docs/spec/vectors/gen_vector.py --tables   # print the §3 tables' SHA-256

(Debian's /usr/bin/python3 with python3-numpy, ci/setup.)  Never produced by ref/ or chip/.
"""
import copy
import glob
import json
import os
import sys

import vector_model as vm
from vector_model import COS, RCP, RSQ, SIG, SIN, RAM_BASE, RAM_END, TABLE_SHA, rnd, table_lists, sha_of  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))


def out_path(op):
    """The example file of op (lower case, one of FILE_OPS): vector_<op>.json."""
    return os.path.join(HERE, "vector_%s.json" % op)

# ---- state -----------------------------------------------------------------------------------


class State:
    """Vector memories (§2) as sparse dicts (absent = 0: what vector.md §8 lists), scalar
    registers, RAM bytes.  Executed on vector_model's dense state (to_model); the instruction's
    writes come back into the dicts, so every word it writes is listed, zero or not."""

    def __init__(self):
        self.x = [0] * 32
        self.ram = {}
        self.vr, self.act, self.ash = {}, {}, {}
        self.w, self.ws = {}, {}  # w[(c, i)], ws[c]
        self.kc, self.vc, self.ksh, self.vsh = {}, {}, {}, {}

    def VR(self, i):
        return self.vr.get(i, 0)

    # vector_model memory name -> (this state's dict, flat index -> key)
    def _dicts(self):
        row = lambda i: (i // vm.ROW, i % vm.ROW)
        return {"vr": (self.vr, int), "act": (self.act, int), "ash": (self.ash, int),
                "wmem": (self.w, lambda i: (i // vm.CHUNK, i % vm.CHUNK)), "wscale": (self.ws, int),
                "kc": (self.kc, row), "ksh": (self.ksh, int), "vc": (self.vc, row), "vsh": (self.vsh, int)}

    def to_model(self):
        st = vm.State()
        width = {"wmem": vm.CHUNK, "kc": vm.ROW, "vc": vm.ROW}
        for name, (d, _) in self._dicts().items():
            mem = getattr(st, name)
            for k, v in d.items():
                mem[k[0] * width[name] + k[1] if isinstance(k, tuple) else k] = v
        return st

    def take(self, outcome, rd):
        """The outcome's writes, into the dicts (Python integers); X(rd) <- its rd_value."""
        dicts = self._dicts()
        for memory, indices, values in outcome.writes:
            d, key = dicts[memory]
            for i, v in zip(indices.tolist(), values.tolist()):
                d[key(i)] = v
        if outcome.rd_value is not None:
            self.x[rd] = outcome.rd_value


# ---- §5 tokens of the eight ops, from an instruction's outcome ---------------------------------

# vector.md §5 (trace-v3) and the trace.md §2 kinds the examples use
KIND = {"VMC%d" % j: 33 + j for j in range(6)}
KIND.update({"VMH": 39, "VMV": 40, "VRD": 41, "VQE": 42, "VWG": 43,
             "VY0": 51, "VY1": 52, "VY2": 53, "VY3": 54, "VYN3": 55, "VLG": 56,
             "VLB0": 57, "VLB1": 58, "VLB2": 59, "VLB3": 60,
             "VXM0": 77, "VXM1": 78, "VXM2": 79, "VXM3": 80,
             "W0": 1, "W1": 2, "W2": 3, "W3": 4, "NOP": 30, "TRAP": 32,
             "PCL": 44, "PCH0": 45, "PCH1": 46, "PCH2": 47, "PCH3": 48})
KIND.update({"VW%d%d" % (q, m): 61 + 4 * q + m for q in range(4) for m in range(4)})
# vector.md §8: decimal payloads for VMC*, VMH, VMV, VRD, VQE, VWG, VLG (and NOP, TRAP);
# hex (0x%02x) for the byte kinds
DEC_KINDS = {"VMC%d" % j for j in range(6)} | {"VMH", "VMV", "VRD", "VQE", "VWG", "VLG", "NOP", "TRAP"}
HEX_KINDS = set(KIND) - DEC_KINDS


def byte_of(z, m):
    """vector.md §5: byte m of z = lo8(floor(z / 2^m)), the byte of z's 32-bit two's complement."""
    return vm.lo8(int(z) >> (8 * m))


class WordStream:
    """vector.md §5 word stream: element e (increasing, < 1024) with value z is VWG(e >> 2) when
    e is the stream's first element or e & 3 = 0, then VW_q0..VW_q3 (q = e & 3), bytes 0..3."""

    def __init__(self, toks):
        self.toks, self.last = toks, None

    def emit(self, e, z):
        assert 0 <= e < 1024 and (self.last is None or e > self.last)
        if self.last is None or e & 3 == 0:
            self.toks.append(("VWG", e >> 2))
        else:
            assert e == self.last + 1  # "Elements of one quad are always consecutive"
        self.toks += [("VW%d%d" % (e & 3, m), byte_of(z, m)) for m in range(4)]
        self.last = e


def int8_tok(toks, j, v):
    """vector.md §5 int8 stream: element j is VLG(j >> 2) when j & 3 = 0, then VLB_{j & 3}(lo8(v))."""
    assert 0 <= j < 1024
    if j & 3 == 0:
        toks.append(("VLG", j >> 2))
    toks.append(("VLB%d" % (j & 3), vm.lo8(int(v))))


def pc_tokens(pc):
    """trace.md §4.0 for the first instruction of a run: PCH_k((w >> 8) & 0xFF), k = w >> 16,
    then PCL(w & 0xFF), with w = (pc - RAM_BASE) / 4."""
    w = (pc - RAM_BASE) // 4
    return [("PCH%d" % (w >> 16), (w >> 8) & 0xFF), ("PCL", w & 0xFF)]


def W(rd, v):
    if rd == 0:
        return [("NOP", 0)]
    return [("W%d" % k, (v >> (8 * k)) & 0xFF) for k in range(4)]


def stream_tokens(z):
    """The word stream of the elements e = i, value z_i (VEW, VFN)."""
    toks = []
    ws = WordStream(toks)
    for i, v in enumerate(z):
        ws.emit(i, v)
    return toks


def vmat_tokens(o, out):
    """Per row r: VMH(r >> 8) at r & 0xFF = 0 (r > 0), VMC_j(r & 0xFF), the bytes of y_r (argmax
    mode: VYN3 for byte 3 when y_r is strictly greater than every earlier row's, always row 0);
    argmax mode then W(r*)."""
    toks, ys = [], out.values["y"].tolist()
    argmax = out.values["argmax"]
    for r, y in enumerate(ys):
        if r > 0 and r % 256 == 0:
            toks.append(("VMH", r // 256))
        toks += [("VMC%d" % j, r % 256) for j in range(o.f7 & 7)]
        new_max = argmax and (r == 0 or y > max(ys[:r]))
        toks += [("VY%d" % m, byte_of(y, m)) for m in range(3)]
        toks.append(("VYN3" if new_max else "VY3", byte_of(y, 3)))
    if argmax:
        toks += W(o.rd, ys.index(max(ys)))
    return toks


def vmatr_tokens(o, out):
    """K mode: the word stream of elements e = 8t + h, value VR[dst + 64h + t]; V mode: VMV(t)
    per position, then the stream of the 64 elements e = 8h + d."""
    toks = []
    ws = WordStream(toks)
    z = out.values["z"]
    if o.f7 & 1 == 0:
        for t in range(o.N):
            for h in range(8):
                ws.emit(8 * t + h, z[h, t])
    else:
        toks += [("VMV", t) for t in range(o.N)]
        for e in range(64):
            ws.emit(e, z[e])
    return toks


def vq_tokens(o, out):
    """Per group k: VQE((k << 5) | e_k), then its values in one int8 stream, j = 64k + i."""
    toks = []
    for k, (e, q) in enumerate(zip(out.values["e"], out.values["q"])):
        toks.append(("VQE", 32 * k + e))
        for i, v in enumerate(q.tolist()):
            int8_tok(toks, 64 * k + i, v)
    return toks


def vexp_tokens(o, out):
    """One word stream: per group VXM0..VXM3 (bytes of m_g), then e = 64g + t, value p_{g,t};
    then e = 512 + g, value S_g."""
    toks = []
    ws = WordStream(toks)
    m, p, S = out.values["m"], out.values["p"], out.values["S"]
    for g in range(len(m)):
        toks += [("VXM%d" % k, byte_of(m[g], k)) for k in range(4)]
        for t in range(o.N):
            ws.emit(64 * g + t, p[g, t])
    for g in range(len(m)):
        ws.emit(512 + g, S[g])
    return toks


def vred_tokens(o, out):
    """VRD(k) per source group, then the one-element word stream of z."""
    toks = [("VRD", k) for k in range(out.values["groups"])]
    WordStream(toks).emit(0, out.values["z"])
    return toks


def vld_tokens(o, out):
    """VLB0..VLB3 of M's bytes (a is a multiple of 4), then the int8 stream of b_0..b_{n-1}."""
    rec = out.values["record"]
    toks = [("VLB%d" % m, rec[m]) for m in range(4)]
    for i in range(len(rec) - 4):
        if i % 4 == 0:
            toks.append(("VLG", i // 4))
        toks.append(("VLB%d" % ((o.x1 + 4 + i) % 4), rec[4 + i]))
    return toks


TOKENS = [vmat_tokens, vmatr_tokens, vq_tokens, vexp_tokens, lambda o, out: stream_tokens(out.values["z"]),
          lambda o, out: stream_tokens(out.values["z"]), vred_tokens, vld_tokens]  # by f3


def execute(st, word):
    """Runs the vector instruction `word` on `st` (vector_model); returns (tokens, trap code or
    None)."""
    model = st.to_model()
    x1, x2 = st.x[(word >> 15) & 31], st.x[(word >> 20) & 31]
    out = vm.execute(model, word, x1, x2, ram=lambda a, n: [st.ram.get(a + k, 0) for k in range(n)])
    if out.trap is not None:
        return [("TRAP", out.trap)], out.trap
    st.take(out, (word >> 7) & 31)
    return TOKENS[(word >> 12) & 7](vm.Operands(word, x1, x2), out), None


# ---- encoding and JSON -----------------------------------------------------------------------

OPS = ["VMAT", "VMATR", "VQ", "VEXP", "VEW", "VFN", "VRED", "VLD"]
FILE_OPS = [op.lower() for op in OPS]   # the example files: vector_<op>.json, one per op


def enc(f3, f7, rd=0, rs1=11, rs2=12):
    return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x2B


REGNAME = {0: "x0", 10: "a0", 11: "a1", 12: "a2"}


def asm_of(word, note):
    rd, f3 = (word >> 7) & 31, (word >> 12) & 7
    rs1, rs2, f7 = (word >> 15) & 31, (word >> 20) & 31, word >> 25
    return ".insn r CUSTOM_1, %d, %d, %s, %s, %s  # %s %s" % (
        f3, f7, REGNAME[rd], REGNAME[rs1], REGNAME[rs2], OPS[f3], note)


def tok_text(kind, p):
    assert kind in KIND and 0 <= p < 256, (kind, p)
    return "%s(0x%02x)" % (kind, p) if kind in HEX_KINDS else "%s(%d)" % (kind, p)


def count_5(word, x):
    """The count column of the op's page (docs/spec/vector/<op>.md §2) for a non-trapping instruction (tokens after the pc
    tokens), written out from the table, independently of the token code above."""
    f3, rd, f7 = (word >> 12) & 7, (word >> 7) & 31, word >> 25
    X2 = x[(word >> 20) & 31]
    N = X2 >> 16
    cdiv = lambda a, b: -(-a // b)
    if f3 == 0:
        K = f7 & 7
        return N * (K + 4) + (N - 1) // 256 + ((4 if rd else 1) if f7 & 8 else 0)
    if f3 == 1:
        return 34 * N if f7 & 1 == 0 else N + 272
    if f3 == 2:
        return 81 * cdiv(N, 64) if f7 & 3 == 0 else 41
    if f3 == 3:
        G = (f7 & 7) + 1
        return G * (4 + cdiv(N, 4) + 4 * N) + cdiv(G, 4) + 4 * G
    if f3 in (4, 5):
        return cdiv(N, 4) + 4 * N
    if f3 == 6:
        return cdiv(N, 64) + 5
    return 4 + N + cdiv(N, 4)


def spans(d, width=None):
    """Sparse dict -> list of {first, values} runs (keys are ints)."""
    out, keys = [], sorted(d)
    for k in keys:
        if out and out[-1]["first"] + len(out[-1]["values"]) == k:
            out[-1]["values"].append(d[k])
        else:
            out.append({"first": k, "values": [d[k]]})
    return out


def vector_json(st):
    rows = lambda m: [{"row": r, "values": [m.get((r, j), 0) for j in range(32)]}
                      for r in sorted({r for (r, _) in m})]
    chunks = [{"chunk": c, "values": [st.w.get((c, i), 0) for i in range(64)]}
              for c in sorted({c for (c, _) in st.w})]
    v = {"vreg": spans(st.vr), "act": spans(st.act), "ash": spans(st.ash), "wmem": chunks,
         "wscale": spans(st.ws), "kcache": rows(st.kc), "ksh": spans(st.ksh),
         "vcache": rows(st.vc), "vsh": spans(st.vsh)}
    return {k: val for k, val in v.items() if val}


def regs_json(x):
    return {"x%d" % i: "0x%08x" % (v & 0xFFFFFFFF) for i, v in enumerate(x) if i and v}


EXAMPLES = []


def example(name, op_note, word, desc, setup, edge=False, want=None, pc=0x10000):
    """setup(st) fills the state; want: dict of hand-worked checks (see check()).  The
    instruction sits at `pc` and is the run's first: its steps begin with PCH_k, PCL."""
    st = State()
    setup(st)
    assert all(-(2 ** 31) <= v < 2 ** 31 for v in st.vr.values()), name
    assert all(-128 <= v < 128 for v in list(st.act.values()) + list(st.kc.values()) + list(st.vc.values())), name
    assert all(-8 <= v < 8 for v in st.w.values()) and all(0 <= v < 65536 for v in st.ws.values()), name
    assert all(0 <= v <= 25 for v in list(st.ash.values()) + list(st.ksh.values()) + list(st.vsh.values())), name
    init = copy.deepcopy(st)
    toks, trap = execute(st, word)
    if trap is None and len(toks) != count_5(word, init.x):
        sys.exit("gen_vector.py: %s: %d tokens, the count column of docs/spec/vector/<op>.md §2 says %d"
                 % (name, len(toks), count_5(word, init.x)))
    assert pc % 4 == 0 and RAM_BASE <= pc and pc + 4 <= RAM_END and pc not in init.ram, name
    if want:
        check(name, st, toks, trap, want, pc)
    steps = [{"id": 256 * KIND[k] + p, "tok": tok_text(k, p), "pc": "0x%08x" % pc}
             for k, p in pc_tokens(pc) + toks]
    changed = {"x%d" % i: "0x%08x" % (st.x[i] & 0xFFFFFFFF) for i in range(1, 32) if st.x[i] != init.x[i]}
    final = {"end": "trap" if trap else "running", "pc": "0x%08x" % (pc if trap else pc + 4),
             "regs": changed, "mem": [], "c": 0, "acc": "0x" + "0" * 24,
             "retired": 0 if trap else 1, "vector": vector_json(st)}
    if trap:
        final["trap_code"] = trap
    mem = []
    if init.ram:
        lo = min(init.ram)
        mem = [{"addr": "0x%08x" % lo, "hex": "".join("%02x" % init.ram.get(a, 0)
                                                      for a in range(lo, max(init.ram) + 1))}]
        final["mem"] = mem
    EXAMPLES.append({
        "name": name, "description": desc, "edge": edge,
        "initial": {"pc": "0x%08x" % pc, "regs": regs_json(init.x), "mem": mem, "c": 0,
                    "acc": "0x" + "0" * 24, "vector": vector_json(init)},
        "code": ["0x%08x" % word], "asm": [asm_of(word, op_note)],
        "steps": steps, "final": final})


def hand_text(v):
    """A hand-written token list: a string of token texts, or a list of such strings."""
    return (v if isinstance(v, str) else " ".join(v)).split()


def check(name, st, toks, trap, want, pc):
    texts = [tok_text(k, p) for k, p in toks]
    got = {"tokens": toks, "trap": trap, "steps": pc_tokens(pc) + toks, "text": texts,
           "steps_text": [tok_text(k, p) for k, p in pc_tokens(pc)] + texts, "ntokens": len(toks),
           "text_at": {i: texts[i] if i < len(texts) else None for i in want.get("text_at", {})}}
    for k, v in want.items():
        if k == "tokens":  # the tokens after the pc tokens
            ok = toks == v
        elif k == "steps":  # every token, pc tokens included
            ok = pc_tokens(pc) + toks == v
        elif k == "text":  # the token texts after the pc tokens, written by hand
            ok = texts == hand_text(v)
            v = hand_text(v)
        elif k == "steps_text":  # every token text, pc tokens included
            ok = got["steps_text"] == hand_text(v)
            v = hand_text(v)
        elif k == "text_at":  # selected token texts: {index after the pc tokens: text}
            ok = all(i < len(texts) and texts[i] == t for i, t in v.items())
        elif k == "ntokens":  # the count after the pc tokens
            ok = len(toks) == v
        elif k == "trap":
            ok = trap == v
        elif k == "vr":
            ok = all(st.VR(i) == val for i, val in v.items())
        elif k == "act":
            ok = all(st.act.get(i, 0) == val for i, val in v.items())
        elif k == "ash":
            ok = all(st.ash.get(i, 0) == val for i, val in v.items())
        elif k == "x":
            ok = all(st.x[i] == val for i, val in v.items())
        elif k == "kc":
            ok = all(st.kc.get(i, 0) == val for i, val in v.items())
        elif k == "ksh":
            ok = all(st.ksh.get(i, 0) == val for i, val in v.items())
        elif k == "vc":
            ok = all(st.vc.get(i, 0) == val for i, val in v.items())
        elif k == "vsh":
            ok = all(st.vsh.get(i, 0) == val for i, val in v.items())
        else:
            raise KeyError(k)
        if not ok and k in ("text", "steps_text"):
            g = got[k]
            i = next((i for i in range(min(len(v), len(g))) if v[i] != g[i]), min(len(v), len(g)))
            sys.exit("gen_vector.py: %s: hand-worked %s disagrees with the calculation at token %d: %r vs %r "
                     "(%d vs %d tokens)" % (name, k, i, v[i:i + 3], g[i:i + 3], len(v), len(g)))
        if not ok:
            sys.exit("gen_vector.py: %s: hand-worked %s %r disagrees with the calculation %r" %
                     (name, k, v, got[k] if k in got else st.__dict__.get(k)))


def ops_word(A, B):
    return (B << 16) | A


# Hand notation for the hand-worked token texts: only spelling, no arithmetic.  A word is written
# as its four bytes, least significant first, as in the tokens ("90 01 00 00" is 400).
Z4 = "00 00 00 00"


def hq(g, *words):
    """A quad g of a word stream, written by hand: VWG(g), then VW_q0..VW_q3 for q = 0, 1, ..."""
    return " ".join(["VWG(%d)" % g] + ["VW%d%d(0x%s)" % (q, m, b) for q, w in enumerate(words)
                                       for m, b in enumerate(w.split())])


def hl(g, *bytes_):
    """A group g of an int8 stream, written by hand: VLG(g), then VLB0.. with the given bytes."""
    return " ".join(["VLG(%d)" % g] + ["VLB%d(0x%s)" % (m, b) for m, b in enumerate(bytes_)])


def hy(r, bytes_, last="VY3", chunks=1):
    """A VMAT row r written by hand: VMC_j(r & 0xFF) for j < chunks, then VY0 VY1 VY2, `last`."""
    b = bytes_.split()
    return " ".join(["VMC%d(%d)" % (j, r & 0xFF) for j in range(chunks)] +
                    ["VY%d(0x%s)" % (m, b[m]) for m in range(3)] + ["%s(0x%s)" % (last, b[3])])


# ---- the examples ----------------------------------------------------------------------------


def build():
    EXAMPLES.clear()
    # VMAT ---------------------------------------------------------------------------------
    def s(st):
        st.act.update({0: 1, 1: 2, 2: 3})
        st.w.update({(7, 0): 7, (7, 1): -8, (7, 2): 1})
        st.ws[7] = 0x8000
        st.ash[0] = 4
        st.x[11], st.x[12] = ops_word(100, 0), ops_word(7, 1)
    example("vmat_one_chunk", "K=1 write", enc(0, 1),
            "acc = 1*7 + 2*(-8) + 3*1 = -6; y = rnd(-6 * 32768 * 2^4, 16) = -48 -> word 100; "
            "one chunk (r, j) = (0, 0): VMC0(0), then the bytes of y_0 = -48 = 0xffffffd0: VY0(0xd0) "
            "VY1(0xff) VY2(0xff) VY3(0xff).",
            s, want={"vr": {100: -48}, "text": "VMC0(0) VY0(0xd0) VY1(0xff) VY2(0xff) VY3(0xff)"})

    def s(st):  # two rows of K = 3 chunks over blocks 1, 2, 3 with shifts 0, 1, 2
        for b, e in ((1, 0), (2, 1), (3, 2)):
            st.ash[b] = e
            st.act[64 * b + 5] = -127
            st.act[64 * b + 63] = 100
        for c in range(20, 26):
            st.w[(c, 5)] = -8 if c % 2 == 0 else 7
            st.w[(c, 63)] = 3
            st.ws[c] = 1000 + c
        st.x[11], st.x[12] = ops_word(200, 1), ops_word(20, 2)
    example("vmat_three_chunks_per_row", "K=3 write", enc(0, 3),
            "Rows 0, 1 = chunks 20..22, 23..25 against ACT blocks 1..3 (ASH 0, 1, 2): "
            "acc = 1316 (even chunk) or -589 (odd); y_0 = rnd(1316*1020 - 589*1021*2 + 1316*1022*4 = 5519390, 16) = 84, "
            "y_1 = rnd(-589*1023 + 1316*1024*2 - 589*1025*4 = -322279, 16) = -5. Tokens: VMC0(0) VMC1(0) "
            "VMC2(0), VY0..VY3 of 84 = 0x54, then VMC0(1) VMC1(1) VMC2(1), VY0..VY3 of -5 = 0xfffffffb.",
            s, want={"vr": {200: 84, 201: -5},
                     "text": [hy(0, "54 00 00 00", chunks=3), hy(1, "fb ff ff ff", chunks=3)]})

    def s(st):  # argmax with a tie between rows 1 and 2: the lowest index wins
        st.act[0] = 10
        for c, w in ((3640, 1), (3641, 5), (3642, 5), (3643, -8)):
            st.w[(c, 0)] = w
            st.ws[c] = 65535
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(3640, 4)
    example("vmat_argmax_tie", "K=1 ARGMAX rd=a0", enc(0, 9, rd=10),
            "Classifier rows 0..3 give y = 10, 50, 50, -80 (x 65535/65536, rounded): rows 1 and 2 tie; "
            "the lowest index wins: a0 = 1, W(1). Byte 3 of y_r is VYN3 for rows 0 (always) and 1 (50 > 10), "
            "VY3 for row 2 (50 is not greater than 50) and row 3. At pc 0x103fc (word index 0xff): "
            "PCH0(0x00), PCL(0xff).",
            s, edge=True, pc=0x103FC,
            want={"x": {10: 1},
                  "steps_text": ["PCH0(0x00) PCL(0xff)", hy(0, "0a 00 00 00", "VYN3"),
                                 hy(1, "32 00 00 00", "VYN3"), hy(2, "32 00 00 00"), hy(3, "b0 ff ff ff"),
                                 "W0(0x01) W1(0x00) W2(0x00) W3(0x00)"]})

    def s(st):  # argmax: y = -3, -3, -1, 5, 5, 2 (ASH 1, WSCALE 32768: y_r = ACT * W exactly)
        st.act[128] = 1
        st.ash[2] = 1
        for r, w in enumerate((-3, -3, -1, 5, 5, 2)):
            st.w[(100 + r, 0)] = w
            st.ws[100 + r] = 32768
        st.x[10] = 0x12345678
        st.x[11], st.x[12] = ops_word(0, 2), ops_word(100, 6)
    example("vmat_argmax_new_max_after_tie", "K=1 ARGMAX rd=a0", enc(0, 9, rd=10),
            "Rows 0..5 (chunks 100..105, block 2) give y = rnd(1 * w * 32768 * 2^1, 16) = w: -3, -3, -1, 5, 5, 2. "
            "VYN3 (y_r greater than every earlier row) for rows 0 (always), 2 (-1 > -3) and 3 (5 > -1); VY3 "
            "for the ties (rows 1, 4) and row 5. a0 (was 0x12345678) = 3, the first maximum: W(3).",
            s, edge=True,
            want={"x": {10: 3},
                  "text": [hy(0, "fd ff ff ff", "VYN3"), hy(1, "fd ff ff ff"), hy(2, "ff ff ff ff", "VYN3"),
                           hy(3, "05 00 00 00", "VYN3"), hy(4, "05 00 00 00"), hy(5, "02 00 00 00"),
                           "W0(0x03) W1(0x00) W2(0x00) W3(0x00)"]})

    def s(st):  # saturation: acc 2^16 * 65535 * 2^25 / 2^16 overflows int32
        for i in range(64):
            st.act[i] = -128
            st.w[(0, i)] = -8
        st.ws[0] = 65535
        st.ash[0] = 25
        st.x[11], st.x[12] = ops_word(5, 0), ops_word(0, 1)
    example("vmat_saturates", "K=1 write", enc(0, 1),
            "ACT = -128 (loadable from .lockstep.act), W = -8, S = 65535, ASH = 25: acc = 65536 = 2^16 (the bound); "
            "y = sat32(65535 * 2^25) = 2^31 - 1 = 0x7fffffff: VY0(0xff) VY1(0xff) VY2(0xff) VY3(0x7f).",
            s, edge=True,
            want={"vr": {5: 2 ** 31 - 1}, "text": "VMC0(0) VY0(0xff) VY1(0xff) VY2(0xff) VY3(0x7f)"})

    def s(st):  # 257 rows: row 256 is the first whose index needs the high part r >> 8
        st.act[0] = 2
        st.w[(356, 0)] = 3
        st.ws[356] = 32768
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(100, 257)
    example("vmat_row_high_part", "K=1 write, R = 257", enc(0, 1),
            "Rows 0..255 emit VMC0(r & 0xFF) and VY0..VY3 of y_r = 0; row 256 is preceded by VMH(256 >> 8 = 1) "
            "and emits VMC0(0). Only chunk 356 (row 256) is nonzero: acc = 2*3 = 6, y = rnd(6 * 32768, 16) = 3 "
            "-> word 256, VY0(0x03). 257 * 5 + 1 = 1,286 tokens.",
            s, edge=True,
            want={"vr": {255: 0, 256: 3}, "ntokens": 1286,
                  "text": [hy(r, Z4) for r in range(256)] + ["VMH(1)", hy(256, "03 00 00 00")]})

    def s(st):
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(4150, 2)
    example("vmat_trap_wmem_range", "K=2 write", enc(0, 2),
            "c0 + R*K = 4150 + 4 > 4152: TRAP(21) VEC_WMEM; nothing changes.", s, edge=True,
            want={"trap": 21})

    def s(st):
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(0, 0)
    example("vmat_trap_field_before_len", "K=0 (invalid), R=0", enc(0, 0),
            "K = 0 is invalid (16) and R = 0 (18): the lowest code wins, TRAP(16).", s, edge=True,
            want={"trap": 16})

    # VMATR --------------------------------------------------------------------------------
    def s(st):
        for h in range(8):
            for d in range(8):
                st.act[64 + 8 * h + d] = h + 1 if d == 0 else 0
        st.act[64 + 8 * 7 + 1] = -3
        st.ash[1] = 10
        st.kc.update({(64, 0): 2, (64, 8): -1, (64, 25): 5, (65, 0): 100, (65, 24): -100})
        st.ksh[64], st.ksh[65] = 3, 8
        st.x[11], st.x[12] = ops_word(512, 1), ops_word(64, 2)
    example("vmatr_k_scores", "K mode", enc(1, 0),
            "Query block 1 (ASH 10): head h has q[0] = h+1, head 7 also q[1] = -3. Row 64 (KSH 3): e = 13 < 16, "
            "score = rnd(s, 3): head 0 s = 2 -> 0, head 1 s = 4 -> 1, head 2 s = -3 -> 0, head 7 s = -15 -> -2; "
            "row 65 (KSH 8): e = 18, score = s * 4 (head 0: 400, head 6: -2800). Head h reads KV head h//2. "
            "The word stream has the 16 elements e = 8t + h in four quads: t = 0 (heads 0..3, 4..7), then t = 1; "
            "-2800 = 0xfffff510, -3200 = 0xfffff380. 34T = 68 tokens.",
            s, want={"vr": {512: 0, 576: 1, 640: 0, 704: 0, 768: 0, 832: 0, 896: 0, 960: -2,
                            513: 400, 577: 800, 641: 0, 705: 0, 769: 0, 833: 0, 897: -2800, 961: -3200},
                     "text": [hq(0, Z4, "01 00 00 00", Z4, Z4), hq(1, Z4, Z4, Z4, "fe ff ff ff"),
                              hq(2, "90 01 00 00", "20 03 00 00", Z4, Z4),
                              hq(3, Z4, Z4, "10 f5 ff ff", "80 f3 ff ff")]})

    def s(st):
        for i in range(64):
            st.act[64 * 3 + i] = -128
        st.ash[3] = 25
        for j in range(32):
            st.kc[(319, j)] = -128
        st.ksh[319] = 25
        st.x[11], st.x[12] = ops_word(0, 3), ops_word(319, 1)
    example("vmatr_k_top", "K mode, the largest score", enc(1, 0),
            "Query block 3 and cache row 319 hold -128 in every byte, ASH[3] = KSH[319] = 25: every head has "
            "s = 8 * (-128)(-128) = 2^17 and e = 50, so s * 2^(e - 16) = 2^51, the top of vmatr.md section 1's "
            "bound, saturates to 2^31 - 1 = 0x7fffffff in the 8 words 64h (h < 8). 34T = 34 tokens.",
            s, edge=True,
            want={"vr": {64 * h: 0x7FFFFFFF for h in range(8)},
                  "text": [hq(0, *["ff ff ff 7f"] * 4), hq(1, *["ff ff ff 7f"] * 4)]})

    def s(st):
        for h in range(8):
            st.vr[512 + 64 * h] = 65536 if h < 4 else 100000
            st.vr[512 + 64 * h + 1] = -5 if h == 0 else 32768
        st.vc.update({(10, 0): 127, (10, 8): -128, (11, 0): 2, (11, 31): 1})
        st.vsh[10], st.vsh[11] = 0, 16
        st.x[11], st.x[12] = ops_word(0, 512), ops_word(10, 2)
    example("vmatr_v_clamps_probabilities", "V mode", enc(1, 1),
            "p = VR[512 + 64h + t] clamped to 0..65536 (100000 -> 65536, -5 -> 0). Row 10 (VSH 0), row 11 "
            "(VSH 16). o[0] = 65536*127 (t = 1: p = 0) -> 127; o[8] (head 1) = 127 + 32768*2*2^16/2^16 = 65663; "
            "o[16], o[24] (KV head 1) = -128; o[55], o[63] (KV head 3, d 7) = 32768*1*2^16/2^16 = 32768; the "
            "other 58 words 0. Tokens: VMV(0) VMV(1), then the 64-word stream e = 8h + d (quads 0..15): "
            "65663 = 0x0001007f, -128 = 0xffffff80, 32768 = 0x00008000. T + 272 = 274 tokens.",
            s, edge=True,
            want={"vr": {0: 127, 8: 65663, 16: -128, 24: -128, 55: 32768, 63: 32768},
                  "text": ["VMV(0) VMV(1)", hq(0, "7f 00 00 00", Z4, Z4, Z4), hq(1, Z4, Z4, Z4, Z4),
                           hq(2, "7f 00 01 00", Z4, Z4, Z4), hq(3, Z4, Z4, Z4, Z4),
                           hq(4, "80 ff ff ff", Z4, Z4, Z4), hq(5, Z4, Z4, Z4, Z4),
                           hq(6, "80 ff ff ff", Z4, Z4, Z4)] + [hq(g, Z4, Z4, Z4, Z4) for g in range(7, 13)]
                          + [hq(13, Z4, Z4, Z4, "00 80 00 00"), hq(14, Z4, Z4, Z4, Z4),
                             hq(15, Z4, Z4, Z4, "00 80 00 00")]})

    def s(st):
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(0, 65)
    example("vmatr_trap_len", "K mode, T = 65", enc(1, 0), "T = 65 > 64: TRAP(18).", s, edge=True,
            want={"trap": 18})

    def s(st):
        st.x[11], st.x[12] = ops_word(520, 512), ops_word(0, 16)
    example("vmatr_trap_overlap", "V mode", enc(1, 1),
            "V mode: destination 520..583 shares words with probability span 512..527: TRAP(20).",
            s, edge=True, want={"trap": 20})

    # VQ -----------------------------------------------------------------------------------
    def s(st):
        st.vr.update({0: 100, 1: -127, 2: 3})
        st.x[11], st.x[12] = ops_word(5, 0), ops_word(0, 3)
    example("vq_act_small", "ACT", enc(2, 0),
            "amax = 127 -> e = 0; block 5 = 100, -127, 3, then 61 zeros; ASH[5] = 0. Tokens: VQE(0 << 5 | 0 = 0), "
            "then the int8 stream of the 64 values block 5 receives, padding zeros included: VLG(0) VLB0(0x64) "
            "VLB1(0x81) VLB2(0x03) VLB3(0x00), VLG(1) .. VLG(15) with zeros: 81 tokens.",
            s, want={"act": {320: 100, 321: -127, 322: 3, 323: 0}, "ash": {5: 0},
                     "text": ["VQE(0)", hl(0, "64", "81", "03", "00")] +
                             [hl(g, "00", "00", "00", "00") for g in range(1, 16)]})

    def s(st):
        st.vr.update({10: 300, 11: -301, 74: 5})
        st.x[11], st.x[12] = ops_word(2, 10), ops_word(0, 65)
    example("vq_act_two_groups", "ACT n = 65", enc(2, 0),
            "Group 0 amax 301 -> e = 2 (rnd(301,1) = 151 > 127): 75, -75; group 1 (one value 5) -> e = 0; "
            "block 3 = 5 then 63 zeros of padding. Tokens: VQE(2), the 64 values of block 2 as int8 stream "
            "elements j = 0..63 (VLG(0) VLB0(0x4b) VLB1(0xb5) ..), then VQE(1 << 5 | 0 = 32) and block 3 as "
            "elements j = 64..127 of the same stream (VLG(16) VLB0(0x05) ..): 2 * 81 = 162 tokens.",
            s, edge=True,
            want={"act": {128: 75, 129: -75, 192: 5, 193: 0}, "ash": {2: 2, 3: 0},
                  "text": ["VQE(2)", hl(0, "4b", "b5", "00", "00")] +
                          [hl(g, "00", "00", "00", "00") for g in range(1, 16)] +
                          ["VQE(32)", hl(16, "05", "00", "00", "00")] +
                          [hl(g, "00", "00", "00", "00") for g in range(17, 32)]})

    def s(st):
        st.vr.update({40: -(2 ** 31), 41: 2 ** 31 - 1, 42: 2 ** 24, 43: -(2 ** 24) - 1})
        st.x[11], st.x[12] = ops_word(319, 40), ops_word(0, 32)
    example("vq_k_row_extremes", "K row", enc(2, 1),
            "amax = 2^31 -> e = 25 (rnd(2^31, 24) = 128): q = -64, 64, rnd(2^24, 25) = 1 (half up), "
            "rnd(-2^24 - 1, 25) = -1 (floor((-2^24 - 1 + 2^24)/2^25)); KSH[319] = 25. Tokens: VQE(25), then the "
            "32 values: VLG(0) VLB0(0xc0) VLB1(0x40) VLB2(0x01) VLB3(0xff), VLG(1) .. VLG(7) with zeros: 41 tokens.",
            s, edge=True,
            want={"kc": {(319, 0): -64, (319, 1): 64, (319, 2): 1, (319, 3): -1}, "ksh": {319: 25},
                  "text": ["VQE(25)", hl(0, "c0", "40", "01", "ff")] +
                          [hl(g, "00", "00", "00", "00") for g in range(1, 8)]})

    def s(st):
        st.vr.update({100: 255, 101: -256, 102: 1, 103: -1, 104: 2, 105: -2, 131: 6})
        st.x[11], st.x[12] = ops_word(7, 100), ops_word(0, 32)
    example("vq_v_row_half_up", "V row", enc(2, 2),
            "amax = 256 -> e = 2 (rnd(256, 1) = 128 > 127, rnd(256, 2) = 64): q = rnd(255, 2) = 64, -64, "
            "rnd(1, 2) = 0, rnd(-1, 2) = 0, rnd(2, 2) = 1 (+0.5 rounds up), rnd(-2, 2) = 0 (-0.5 rounds up), "
            "..., q_31 = rnd(6, 2) = 2; VSH[7] = 2. Tokens: VQE(2), VLG(0) VLB0(0x40) VLB1(0xc0) VLB2(0x00) "
            "VLB3(0x00), VLG(1) VLB0(0x01) VLB1(0x00) .., VLG(7) .. VLB3(0x02).",
            s,
            want={"vc": {(7, 0): 64, (7, 1): -64, (7, 2): 0, (7, 3): 0, (7, 4): 1, (7, 5): 0, (7, 31): 2},
                  "vsh": {7: 2},
                  "text": ["VQE(2)", hl(0, "40", "c0", "00", "00"), hl(1, "01", "00", "00", "00")] +
                          [hl(g, "00", "00", "00", "00") for g in range(2, 7)] + [hl(7, "00", "00", "00", "02")]})

    def s(st):
        st.x[11], st.x[12] = ops_word(320, 0), ops_word(0, 31)
    example("vq_trap_len_before_row", "V row", enc(2, 2),
            "n = 31 (18) and row 320 (22): TRAP(18).", s, edge=True, want={"trap": 18})

    # VEXP ---------------------------------------------------------------------------------
    def s(st):
        st.vr.update({512: 0, 513: -65536, 514: 0})
        st.x[11], st.x[12] = ops_word(512, 512), ops_word(500, 3)
    example("vexp_one_group", "G=1 in place", enc(3, 0),
            "m = 0; indices 0, rnd(65536, 10) = 64, 0; p = 65536, EXP[64] = 24109, 65536; sum 155181. Tokens: "
            "VXM0..VXM3 (bytes of m = 0), the elements e = 0..2 (65536 = 0x00010000, 24109 = 0x5e2d), then "
            "e = 512 (155181 = 0x25e2d): VWG(128) and VW00..VW03. 22 tokens.",
            s, want={"vr": {512: 65536, 513: 24109, 514: 65536, 500: 155181},
                     "text": ["VXM0(0x00) VXM1(0x00) VXM2(0x00) VXM3(0x00)",
                              hq(0, "00 00 01 00", "2d 5e 00 00", "00 00 01 00"), hq(128, "2d 5e 02 00")]})

    def s(st):
        st.vr.update({100: -1000, 101: -(2 ** 31), 164: 2 ** 31 - 1, 165: -(2 ** 31), 166: 511})
        st.x[11], st.x[12] = ops_word(300, 100), ops_word(8, 3)
    example("vexp_two_groups_extremes", "G=2", enc(3, 1),
            "Group 0 (T = 3: -1000, -2^31, 0): m = 0, p = EXP[rnd(1000,10) = 1] = 64520, EXP[min(1023, 2^21)] = 0, 65536. "
            "Group 1: m = 2^31-1; m - s = 2^32-1 -> index 1023; s = 511: index rnd(2^31 - 512, 10) -> 1023. "
            "Tokens: VXM of 0, VWG(0) and elements 0..2 (64520 = 0xfc08); VXM of 0x7fffffff, VWG(16) and elements "
            "64..66; then VWG(128) and the sums 130056 = 0x1fc08, 65536 as elements 512, 513. 43 tokens.",
            s, edge=True,
            want={"vr": {300: 64520, 301: 0, 302: 65536, 364: 65536, 365: 0, 366: 0, 8: 130056, 9: 65536},
                  "text": ["VXM0(0x00) VXM1(0x00) VXM2(0x00) VXM3(0x00)",
                           hq(0, "08 fc 00 00", Z4, "00 00 01 00"),
                           "VXM0(0xff) VXM1(0xff) VXM2(0xff) VXM3(0x7f)",
                           hq(16, "00 00 01 00", Z4, Z4), hq(128, "08 fc 01 00", "00 00 01 00")]})

    def s(st):
        st.vr.update({0: 100, 1: -412, 2: -411, 3: -65436, 4: -999900})
        st.vr.update({64: -65541, 65: -6, 66: -5, 67: -1029, 68: -5})
        st.vr.update({128 + t: -(2 ** 31) for t in range(5)})
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(300, 5)
    example("vexp_three_groups_t5", "G=3 T=5 in place", enc(3, 2),
            "T = 5: each group's scores cross a quad. Group 0: m = 100, m - s = 0, 512, 511, 65536, 10^6 -> "
            "indices 0, 1 (512/1024 rounds half up), 0, 64, 977 -> p = 65536, 64520, 65536, 24109, 0; "
            "S_0 = 219701 = 0x35a35. Group 1: m = -5 (0xfffffffb), m - s = 65536, 1, 0, 1024, 0 -> p = 24109, "
            "65536, 65536, 64520, 65536; S_1 = 285237 = 0x45a35. Group 2: all -2^31, m = -2^31 (0x80000000), "
            "p = 65536, S_2 = 327680 = 0x50000. Tokens: per group VXM0..VXM3, VWG(16g) with 4 elements, "
            "VWG(16g + 1) with element 64g + 4; then VWG(128) with the sums (elements 512..514). 91 tokens.",
            s, edge=True,
            want={"vr": {0: 65536, 1: 64520, 2: 65536, 3: 24109, 4: 0, 64: 24109, 65: 65536, 66: 65536,
                         67: 64520, 68: 65536, 128: 65536, 132: 65536, 300: 219701, 301: 285237, 302: 327680},
                  "ntokens": 91,
                  "text": ["VXM0(0x64) VXM1(0x00) VXM2(0x00) VXM3(0x00)",
                           hq(0, "00 00 01 00", "08 fc 00 00", "00 00 01 00", "2d 5e 00 00"), hq(1, Z4),
                           "VXM0(0xfb) VXM1(0xff) VXM2(0xff) VXM3(0xff)",
                           hq(16, "2d 5e 00 00", "00 00 01 00", "00 00 01 00", "08 fc 00 00"),
                           hq(17, "00 00 01 00"),
                           "VXM0(0x00) VXM1(0x00) VXM2(0x00) VXM3(0x80)",
                           hq(32, "00 00 01 00", "00 00 01 00", "00 00 01 00", "00 00 01 00"),
                           hq(33, "00 00 01 00"),
                           hq(128, "35 5a 03 00", "35 5a 04 00", "00 00 05 00")]})

    def s(st):
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(1, 2)
    example("vexp_trap_sums_overlap", "G=1", enc(3, 0),
            "Sum word 1 lies inside the score span 0..1: TRAP(20).", s, edge=True, want={"trap": 20})

    # VEW ----------------------------------------------------------------------------------
    def s(st):
        st.vr.update({0: 2 ** 31 - 1, 1: -5, 64: 1, 65: 7})
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(64, 2)
    example("vew_add_saturates", "ADD in place", enc(4, 0),
            "2^31-1 + 1 saturates to 2^31-1; -5 + 7 = 2. Tokens: VWG(0), VW00..VW03 of 0x7fffffff, "
            "VW10..VW13 of 2 (9 tokens).", s, edge=True,
            want={"vr": {0: 2 ** 31 - 1, 1: 2}, "text": hq(0, "ff ff ff 7f", "02 00 00 00")})

    def s(st):
        st.vr.update({10: -3, 11: 65536 * 3, 12: -32768, 20: 32768, 21: -65536, 22: 1})
        st.x[11], st.x[12] = ops_word(30, 10), ops_word(20, 3)
    example("vew_mul_rounding", "MUL", enc(4, 1),
            "rnd(-3*32768, 16) = floor(-65536/65536) = -1 ... i.e. -1.5 rounds up to -1; 3.0*-1.0 = -196608 "
            "= 0xfffd0000; rnd(-32768, 16) = 0 (-0.5 rounds up).", s,
            want={"vr": {30: -1, 31: -196608, 32: 0},
                  "text": hq(0, "ff ff ff ff", "00 00 fd ff", Z4)})

    def s(st):
        st.vr.update({i: 65536 * (i + 1) for i in range(6)})
        st.vr.update({100: 32768, 101: -65536, 102: 3})
        st.x[11], st.x[12] = ops_word(200, 0), ops_word(100, 6)
    example("vew_muls_groups", "MULS GS=1", enc(4, 2 | (1 << 2)),
            "Groups of 2^1 elements share a scalar: x0,x1 * 0.5; x2,x3 * -1; x4,x5 * 3/65536. The 6-element "
            "stream crosses a quad: VWG(0) with elements 0..3, VWG(1) with 4, 5 (26 tokens).", s,
            want={"vr": {200: 32768, 201: 65536, 202: -196608, 203: -262144, 204: 15, 205: 18},
                  "text": [hq(0, "00 80 00 00", "00 00 01 00", "00 00 fd ff", "00 00 fc ff"),
                           hq(1, "0f 00 00 00", "12 00 00 00")]})

    def s(st):
        st.vr.update({i: 65536 for i in range(8)})
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(1, 8)
    example("vew_rot_position_1", "ROT p = 1 in place", enc(4, 3),
            "Pairs (1, 1) rotated by 1, 0.1, 0.01, 0.001 rad: z = c - s, s + c with COS/SIN[1][j]. "
            "Two quads: VWG(0) at token 0, VWG(1) at token 17; 34 tokens.", s,
            want={"vr": {0: COS[1][0] - SIN[1][0], 1: SIN[1][0] + COS[1][0], 6: COS[1][3] - SIN[1][3]},
                  "ntokens": 34, "text_at": {0: "VWG(0)", 17: "VWG(1)", 18: "VW00(0x%02x)" % (COS[1][2] - SIN[1][2] & 0xFF)}})

    def s(st):
        st.vr.update({5: 7, 70: -2, 129: 100, 400: 1})
        st.x[11], st.x[12] = ops_word(200, 0), ops_word(400, 130)
    example("vew_add_three_groups", "ADD n = 130", enc(4, 0),
            "z_0 = 1, z_5 = 7, z_70 = -2, z_129 = 100, the rest 0. 33 quads (17 tokens each, the last one "
            "2 elements): element e of a full quad g = e >> 2 starts at token 17g + 1 + 4(e & 3): z_5 at 22, "
            "z_70 at 298 (0xfffffffe), VWG(32) at 544, z_129 at 549. 553 tokens.", s, edge=True,
            want={"vr": {200: 1, 205: 7, 270: -2, 328: 0, 329: 100}, "ntokens": 553,
                  "text_at": {0: "VWG(0)", 1: "VW00(0x01)", 2: "VW01(0x00)", 17: "VWG(1)", 22: "VW10(0x07)",
                              289: "VWG(17)", 298: "VW20(0xfe)", 299: "VW21(0xff)", 300: "VW22(0xff)",
                              301: "VW23(0xff)", 544: "VWG(32)", 545: "VW00(0x00)", 549: "VW10(0x64)",
                              552: "VW13(0x00)"}})

    def s(st):
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(64, 8)
    example("vew_trap_rot_position", "ROT p = 64", enc(4, 3),
            "Position 64 >= 64: TRAP(23).", s, edge=True, want={"trap": 23})

    def s(st):
        st.x[11], st.x[12] = ops_word(1, 0), ops_word(200, 4)
    example("vew_trap_partial_overlap", "ADD", enc(4, 0),
            "Destination 1..4 overlaps source 0..3 without being identical: TRAP(20).", s, edge=True,
            want={"trap": 20})

    # VFN ----------------------------------------------------------------------------------
    def s(st):
        st.vr.update({0: 65536, 1: 0, 2: -7, 3: 2 ** 31 - 1, 4: 4 * 65536, 5: 3})
        st.x[11], st.x[12] = ops_word(10, 0), ops_word(0, 6)
    example("vfn_rsqrt", "RSQRT", enc(5, 0),
            "1.0 -> 65281 (0xff01); 0 and -7 read as 1 -> RSQ[64] = 16712062 (0xff017e, k2 = 0); "
            "4.0 -> rnd(RSQ[64], 9) = 32641 (0x7f81); 3 -> k2 = 0, ix = 192: RSQ[192]. Two quads, 26 tokens.",
            s, edge=True,
            want={"vr": {10: 65281, 11: 16712062, 12: 16712062, 14: 32641, 15: RSQ[192]}, "ntokens": 26,
                  "text_at": {0: "VWG(0)", 1: "VW00(0x01)", 2: "VW01(0xff)", 3: "VW02(0x00)",
                              5: "VW10(0x7e)", 6: "VW11(0x01)", 7: "VW12(0xff)", 8: "VW13(0x00)",
                              9: "VW20(0x7e)", 17: "VWG(1)", 18: "VW00(0x81)", 19: "VW01(0x7f)"}})

    def s(st):
        st.vr.update({0: 65536, 1: 1, 2: 3, 3: 2 ** 31 - 1, 4: 5})
        st.x[11], st.x[12] = ops_word(10, 0), ops_word(0, 5)
    example("vfn_recip", "RECIP", enc(5, 1),
            "1.0 -> 65281; 1 -> RCP[128] << 2 saturates to 2^31-1; 3 -> k = 1, ix = 192: RCP[192] << 1; "
            "5 -> k = 2, ix = 160: RCP[160] << 0. Two quads, 22 tokens.", s, edge=True,
            want={"vr": {10: 65281, 11: 2 ** 31 - 1, 12: RCP[192] * 2, 14: RCP[160]}, "ntokens": 22,
                  "text_at": {0: "VWG(0)", 1: "VW00(0x01)", 2: "VW01(0xff)", 5: "VW10(0xff)",
                              8: "VW13(0x7f)", 17: "VWG(1)"}})

    def s(st):
        st.vr.update({0: 0, 1: 65536, 2: -65536, 3: 20 * 65536, 4: -20 * 65536})
        st.x[11], st.x[12] = ops_word(10, 0), ops_word(0, 5)
    example("vfn_silu", "SILU", enc(5, 2),
            "silu(0) = 0; 1.0 -> SIG[576] = 47911 (0xbb27); -1.0 -> -SIG[448] = -17625 (0xffffbb27); 20.0 clamps "
            "to SIG[1023]; -20.0 to SIG[0] = 22: -440 (0xfffffe48), element 4, in the second quad.", s, edge=True,
            want={"vr": {10: 0, 11: 47911, 12: -17625, 13: rnd(20 * 65536 * SIG[1023], 16), 14: -440},
                  "ntokens": 22,
                  "text_at": {0: "VWG(0)", 1: "VW00(0x00)", 5: "VW10(0x27)", 6: "VW11(0xbb)", 7: "VW12(0x00)",
                              9: "VW20(0x27)", 10: "VW21(0xbb)", 11: "VW22(0xff)", 12: "VW23(0xff)",
                              17: "VWG(1)", 18: "VW00(0x48)", 19: "VW01(0xfe)", 20: "VW02(0xff)",
                              21: "VW03(0xff)"}})

    def s(st):
        st.x[11], st.x[12] = ops_word(10, 0), ops_word(0, 1)
    example("vfn_trap_bad_fn", "FN = 3", enc(5, 3), "FN = 3 is invalid: TRAP(16).", s, edge=True,
            want={"trap": 16})

    # VRED ---------------------------------------------------------------------------------
    def s(st):
        st.vr.update({i: 65536 if i % 2 else -2 * 65536 for i in range(64)})
        st.x[11], st.x[12] = ops_word(480, 0), ops_word(0, 64)
    example("vred_sumsq_mean", "SUMSQ SH=6", enc(6, 0 | (6 << 2)),
            "32 values of -2.0 and 32 of 1.0: mean square 2.5 -> 163840 = 0x28000. Tokens: VRD(0), then the "
            "one-element stream VWG(0) VW00(0x00) VW01(0x80) VW02(0x02) VW03(0x00).", s,
            want={"vr": {480: 163840}, "text": "VRD(0) " + hq(0, "00 80 02 00")})

    def s(st):
        st.vr.update({0: -(2 ** 31), 1: -(2 ** 31)})
        st.x[11], st.x[12] = ops_word(9, 0), ops_word(0, 2)
    example("vred_sumsq_saturates", "SUMSQ SH=0", enc(6, 0),
            "2 * 2^62 = 2^63; rnd(2^63, 16) = 2^47 saturates to 2^31-1.", s, edge=True,
            want={"vr": {9: 2 ** 31 - 1}, "text": "VRD(0) " + hq(0, "ff ff ff 7f")})

    def s(st):
        st.vr.update({i: -i for i in range(65)})
        st.vr[64] = 3
        st.x[11], st.x[12] = ops_word(1000, 0), ops_word(0, 65)
    example("vred_max_two_groups", "MAX", enc(6, 2),
            "max over 0, -1, ..., -63, then 3: group maxima c_0 = 0, c_1 = 3; VRD(0) VRD(1), then z = 3.", s,
            want={"vr": {1000: 3}, "text": "VRD(0) VRD(1) " + hq(0, "03 00 00 00")})

    def s(st):
        st.vr.update({0: -5, 1: 2, 2: 0})
        st.x[11], st.x[12] = ops_word(7, 0), ops_word(0, 3)
    example("vred_sum_rounds", "SUM SH=1", enc(6, 1 | (1 << 2)),
            "sum -3; rnd(-3, 1) = -1 (half up) = 0xffffffff.", s,
            want={"vr": {7: -1}, "text": "VRD(0) " + hq(0, "ff ff ff ff")})

    def s(st):
        st.vr.update({i: -(2 ** 31) for i in range(1024)})
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(0, 1024)
    example("vred_sum_1024_in_place", "SUM SH=0 n = 1024", enc(6, 1),
            "All 1024 words -2^31: acc = -2^41 (the bound), sat32 -> -2^31 = 0x80000000, written to word 0 inside "
            "the source span (one word after all reads: allowed). VRD(0) .. VRD(15), then the one-element stream.",
            s, edge=True,
            want={"vr": {0: -(2 ** 31), 1: -(2 ** 31)},
                  "text": ["VRD(%d)" % k for k in range(16)] + [hq(0, "00 00 00 80")]})

    def s(st):
        st.x[11], st.x[12] = ops_word(0, 0), ops_word(0, 4)
    example("vred_trap_max_shift", "MAX SH=1", enc(6, 2 | (1 << 2)),
            "MAX with SH != 0: TRAP(16).", s, edge=True, want={"trap": 16})

    # VLD ----------------------------------------------------------------------------------
    def s(st):
        rec = [0x00, 0x00, 0x01, 0x00, 0x01, 0xFF, 0x7F, 0x80]
        for k, b in enumerate(rec):
            st.ram[0x20000 + k] = b
        st.x[11], st.x[12] = 0x20000, ops_word(64, 4)
    example("vld_record", "n = 4", enc(7, 0),
            "M = 65536; bytes 1, -1, 127, -128 -> 1.0, -1.0, 127.0, -128.0 in Q16.16. Tokens: M's bytes "
            "VLB0..VLB3, then VLG(0) and b_0..b_3. At pc 0x50400 (word index 0x10100): PCH1(0x01), PCL(0x00).",
            s, pc=0x50400,
            want={"vr": {64: 65536, 65: -65536, 66: 127 * 65536, 67: -128 * 65536},
                  "steps": [("PCH1", 1), ("PCL", 0),
                            ("VLB0", 0), ("VLB1", 0), ("VLB2", 1), ("VLB3", 0), ("VLG", 0),
                            ("VLB0", 1), ("VLB1", 255), ("VLB2", 127), ("VLB3", 128)]})

    def s(st):
        rec = [0xFF, 0xFF, 0xFF, 0x7F, 0x80, 0x02]
        for k, b in enumerate(rec):
            st.ram[0x20000 + k] = b
        st.x[11], st.x[12] = 0x20000, ops_word(0, 2)
    example("vld_saturates", "n = 2", enc(7, 0),
            "M = 2^31-1: -128*M saturates to -2^31, 2*M to 2^31-1.", s, edge=True,
            want={"vr": {0: -(2 ** 31), 1: 2 ** 31 - 1}})

    def s(st):
        rec = [0x02, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0xFD, 0x80]
        for k, b in enumerate(rec):
            st.ram[0x20010 + k] = b
        st.x[11], st.x[12] = 0x20010, ops_word(900, 5)
    example("vld_partial_group", "n = 5", enc(7, 0),
            "M = 2: 1, 2, 3, -3, -128 -> 2, 4, 6, -6, -256. Element groups 0 (b_0..b_3) and 1 (b_4 only, "
            "at an address = 0 mod 4): VLB0..VLB3 of M, VLG(0), VLB0..VLB3, VLG(1), VLB0.", s, edge=True,
            want={"vr": {900: 2, 901: 4, 902: 6, 903: -6, 904: -256},
                  "tokens": [("VLB0", 2), ("VLB1", 0), ("VLB2", 0), ("VLB3", 0), ("VLG", 0),
                             ("VLB0", 1), ("VLB1", 2), ("VLB2", 3), ("VLB3", 0xFD), ("VLG", 1), ("VLB0", 0x80)]})

    def s(st):
        st.x[11], st.x[12] = 0x20002, ops_word(0, 4)
    example("vld_trap_misaligned", "n = 4", enc(7, 0), "a = 0x20002 is not a multiple of 4: TRAP(4).",
            s, edge=True, want={"trap": 4})

    def s(st):
        st.x[11], st.x[12] = 0x10FFFC, ops_word(0, 1)
    example("vld_trap_out_of_ram", "n = 1", enc(7, 0),
            "a + 4 + n = 0x110001 > RAM_END: TRAP(5).", s, edge=True, want={"trap": 5})

    return EXAMPLES


def per_op_docs(examples):
    """The examples split by op (the f3 field of each example's one instruction word), in
    generation order within an op: {op: document}, one document per op of FILE_OPS."""
    by_op = {op: [] for op in FILE_OPS}
    for ex in examples:
        assert len(ex["code"]) == 1, ex["name"]
        op = FILE_OPS[(int(ex["code"][0], 16) >> 12) & 7]
        assert ex["name"].startswith(op + "_"), (ex["name"], op)
        by_op[op].append(ex)
    return {op: {"spec": "machine-v1", "trace_version": "trace-v3", "class": op,
                 "generator": "docs/spec/vectors/gen_vector.py", "examples": exs}
            for op, exs in by_op.items()}


def main():
    got = vm.table_shas()
    if got != TABLE_SHA:
        sys.exit("gen_vector.py: table SHA-256 differ from vector.md §3: %r" % got)
    if "--tables" in sys.argv:
        for n, v in table_lists().items():
            print(n, len(v), sha_of(v))
            print(" ", v)
        return
    docs = per_op_docs(build())
    total = sum(len(d["examples"]) for d in docs.values())
    counts = ", ".join("%s %d" % (op, len(d["examples"])) for op, d in docs.items())
    stray = sorted(set(glob.glob(os.path.join(HERE, "vector_*.json"))) - {out_path(op) for op in FILE_OPS})
    if "--check" in sys.argv:
        for op, doc in docs.items():
            try:
                with open(out_path(op)) as f:
                    current = f.read()
            except FileNotFoundError:
                sys.exit("gen_vector.py: %s is missing" % os.path.basename(out_path(op)))
            if current != json.dumps(doc, indent=1) + "\n":
                sys.exit("gen_vector.py: %s is out of date" % os.path.basename(out_path(op)))
        if stray:
            sys.exit("gen_vector.py: %s not written by this generator (one file per op of %s)"
                     % (", ".join(os.path.basename(p) for p in stray), FILE_OPS))
        print("vector_<op>.json up to date (%d examples: %s)" % (total, counts))
        return
    for op, doc in docs.items():
        with open(out_path(op), "w") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
    print("wrote %d files vector_<op>.json in %s (%d examples: %s)" % (len(docs), HERE, total, counts))
    for p in stray:
        print("gen_vector.py: note: %s is not one of this generator's files" % os.path.basename(p))


if __name__ == "__main__":
    main()
