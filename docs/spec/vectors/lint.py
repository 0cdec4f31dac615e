#!/usr/bin/env python3
"""Acceptance check for docs/spec/vectors/scalar_*.json and vector_*.json (README.md).

Checks, for every file and example:
  * the schema of README.md (keys, types, hex spellings, no unknown keys);
  * every token: id = 256*kind + payload, the text "KIND(payload)" spelled
    as README.md says, the payload allowed for its kind (trace.md §2);
  * every instruction whose fetch succeeds begins with its pc tokens
    (trace.md §4.0): PCH_k((w >> 8) & 0xFF), k = w >> 16, exactly when it is
    the run's first instruction or w >> 8 differs from the previous
    instruction's, then PCL(w & 0xFF), w = (pc - 0x10000) / 4 from the step's
    `pc`; a fetch outside RAM emits TRAP(3) alone;
  * the other tokens of each instruction have the shape trace.md §4 gives
    for the instruction's mnemonic; an ECALL write's bytes carry their index
    (OIH(i >> 8) when i > 0 and i & 0xFF = 0, then OI(i & 0xFF), §4.5) and
    W(len) counts them;
  * the end of the run agrees with the last token, and stdout/stderr with
    the OUT/ERR tokens;
  * the initial state is valid under the memory map (isa.md §2);
  * coverage: every mnemonic of isa.md §4.1 and bignum.md §1 appears; every
    instruction class (a row of isa.md §4.1, or one bignum op) has at least
    three examples and at least one edge case; every file has at least three.

Vector files (vector_<op>.json, one per op, vector.md §8): the file's
`class` is its op and every example's instruction is that op (f3); the
kinds of vector.md §5 (trace-v3) with their payload ranges and spellings, the
pc tokens as above, and every vector instruction's tokens (or TRAP(code)
alone): the kind and position sequence §5 gives for its operands (VMH/VMC_j
per chunk, VY0..VY3 or argmax's VYN3 after each row's chunks, VMV(t),
VRD(k), VQE(k << 5 | e), VXM0..VXM3 per group; word streams with VWG(e >> 2)
at the first element and each e & 3 = 0, then VW_q0..VW_q3; int8 streams
with VLG(j >> 2) and VLB_{j & 3}), the count of the op page's count column (§2), and the
values on the bus: each streamed word or byte equals what the final state
holds where the instruction writes it, VYN3 marks exactly the rows greater
than all earlier ones and W(r*) is the first maximum, VXM is the maximum of
the group's initial scores and each VEXP sum the sum of its group's
numerators, VLD's bytes are the record's; at least three examples and one
edge case per op.

Standard library only. Usage:
    python3 docs/spec/vectors/lint.py [FILE.json ...]   (default scalar_*.json and vector_*.json)
Exit status 0 when everything passes.
"""

import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RAM_BASE, RAM_END = 0x10000, 0x110000

# trace.md §2, written out again here (not imported from the generator)
KIND_NAMES = ["CTRL", "W0", "W1", "W2", "W3", "A0", "A1", "A2", "A3",
              "S0", "S1", "S2", "S3", "BR", "DQ", "CF"] + \
             ["AC%d" % i for i in range(12)] + ["OUT", "ERR", "NOP", "EXIT", "TRAP"]
KIND = {name: k for k, name in enumerate(KIND_NAMES)}
# trace-v2 (trace.md §2): pc tokens (§4.0) and ECALL write byte indices (§4.5)
PC_KINDS = ["PCL", "PCH0", "PCH1", "PCH2", "PCH3"]
KIND.update({"PCL": 44, "PCH0": 45, "PCH1": 46, "PCH2": 47, "PCH3": 48, "OI": 49, "OIH": 50})
assert KIND["TRAP"] == 32 and KIND["AC11"] == 27 and KIND["OUT"] == 28
BYTE_KINDS = {n for n in KIND_NAMES if re.fullmatch(r"[WAS]\d|AC\d+", n)} | {
    "OUT", "ERR", "EXIT", "OI"} | set(PC_KINDS)
SMALL = {"BR": range(2), "CF": range(2), "NOP": range(1), "DQ": range(64),
         "TRAP": range(1, 10),           # scalar trap codes, isa.md §6
         "OIH": range(1, 256)}

# vector.md §5 (trace-v3): the vector unit's kinds, for vector_*.json
V_KINDS = {"VMC%d" % j: 33 + j for j in range(6)}
V_KINDS.update({"VMH": 39, "VMV": 40, "VRD": 41, "VQE": 42, "VWG": 43, "VYN3": 55, "VLG": 56})
V_KINDS.update({"VY%d" % m: 51 + m for m in range(4)})
V_KINDS.update({"VLB%d" % m: 57 + m for m in range(4)})
V_KINDS.update({"VW%d%d" % (q, m): 61 + 4 * q + m for q in range(4) for m in range(4)})
V_KINDS.update({"VXM%d" % m: 77 + m for m in range(4)})
assert sorted(V_KINDS.values()) == list(range(33, 44)) + list(range(51, 81))
assert 256 * (max(V_KINDS.values()) + 1) == 20736          # V, trace.md §2
KIND.update(V_KINDS)
# byte payloads, spelled 0x%02x (vector.md §8); VMC*, VMH, VMV, VRD, VQE, VWG, VLG are decimal
BYTE_KINDS |= {n for n in V_KINDS if re.fullmatch(r"VY\d|VYN3|VLB\d|VW\d\d|VXM\d", n)}
SMALL.update({"VMH": range(1, 17), "VMV": range(64), "VRD": range(16),
              "VQE": {(k << 5) | e for k in range(6) for e in range(26)}})
V_OPS = ["VMAT", "VMATR", "VQ", "VEXP", "VEW", "VFN", "VRED", "VLD"]   # by f3

# isa.md §4.1 rows and the bignum ops: the instruction classes
CLASSES = [["lui"], ["auipc"], ["jal"], ["jalr"], ["beq", "bne"], ["blt", "bge"],
           ["bltu", "bgeu"], ["lb", "lh", "lw"], ["lbu", "lhu"], ["sb", "sh", "sw"],
           ["addi"], ["slti", "sltiu"], ["xori", "ori", "andi"], ["slli"],
           ["srli", "srai"], ["add", "sub"], ["sll"], ["slt", "sltu"], ["xor"],
           ["srl", "sra"], ["or", "and"], ["mul"], ["mulh"], ["mulhsu"], ["mulhu"],
           ["div", "divu"], ["rem", "remu"], ["sh1add"], ["sh2add"], ["sh3add"],
           ["fence", "fence.tso"], ["ecall"], ["ebreak"],
           ["bn.addc"], ["bn.subb"], ["bn.xchgc"], ["bn.mac"], ["bn.accrd"], ["bn.accclr"]]
MNEMONICS = {m for row in CLASSES for m in row}

W = "(W0 W1 W2 W3|NOP)"
A = "A0 A1 A2 A3"
SHAPES = {}                      # mnemonic -> regex over the kind names of its tokens
for m in ["lui", "auipc", "addi", "slti", "sltiu", "xori", "ori", "andi", "slli", "srli",
          "srai", "add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and",
          "mul", "mulh", "mulhsu", "mulhu", "sh1add", "sh2add", "sh3add"]:
    SHAPES[m] = W
for m in ["jal", "jalr"]:
    SHAPES[m] = W + "|TRAP:2"
for m in ["beq", "bne", "blt", "bge", "bltu", "bgeu"]:
    SHAPES[m] = "BR|TRAP:2"
for m in ["lb", "lh", "lw", "lbu", "lhu"]:
    SHAPES[m] = A + " (" + W + "|TRAP:4|TRAP:5)"
for m, s in [("sb", "S0"), ("sh", "S0 S1"), ("sw", "S0 S1 S2 S3")]:
    SHAPES[m] = A + " (" + s + "|TRAP:6|TRAP:7)"
for m in ["div", "divu", "rem", "remu"]:
    SHAPES[m] = "(DQ ){32}" + W
SHAPES.update({
    "fence": "NOP", "fence.tso": "NOP",
    "ecall": "((OIH )?OI OUT )*W0 W1 W2 W3|((OIH )?OI ERR )*W0 W1 W2 W3|EXIT|TRAP:8|TRAP:5",
    "ebreak": "TRAP:9",
    "bn.addc": W + " CF", "bn.subb": W + " CF", "bn.xchgc": W + " CF",
    "bn.mac": " ".join("AC%d" % i for i in range(12)),
    "bn.accrd": W + " " + " ".join("AC%d" % i for i in range(12)),   # then the new acc
    "bn.accclr": "NOP",
    ".word": "TRAP:1|NOP",       # raw words: illegal ones, or a FENCE with odd fields
})

TOP_KEYS = {"spec", "trace_version", "class", "generator", "examples"}
EX_KEYS = {"name", "description", "edge", "initial", "code", "asm", "steps", "final"}
INIT_KEYS = {"pc", "regs", "mem", "c", "acc"}
FINAL_KEYS = {"end", "exit_status", "trap_code", "pc", "regs", "mem", "c", "acc",
              "retired", "stdout", "stderr"}
HEX32 = re.compile(r"0x[0-9a-f]{8}")
HEX96 = re.compile(r"0x[0-9a-f]{24}")
REG = re.compile(r"x([1-9]|[12][0-9]|3[01])")


class Lint:
    def __init__(self):
        self.errors = []

    def err(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    def check(self, cond, where, msg):
        if not cond:
            self.err(where, msg)
        return cond


def parse_tok(text):
    m = re.fullmatch(r"([A-Z]+[0-9]*)\((0x[0-9a-f]{2}|0|[1-9][0-9]*)\)", text)
    if not m or m.group(1) not in KIND:
        return None
    name, p = m.group(1), m.group(2)
    if (name in BYTE_KINDS) != p.startswith("0x"):
        return None                       # byte kinds 0x%02x, the others decimal
    return name, int(p, 0)


def check_state(L, where, st, final):
    keys = (FINAL_KEYS if final else INIT_KEYS) | {"vector"}   # vector.md §8
    L.check(set(st) <= keys, where, "unknown keys %s" % sorted(set(st) - keys))
    need = {"end", "regs", "mem", "c", "acc", "retired"} if final else INIT_KEYS
    if not L.check(need <= set(st), where, "missing keys %s" % sorted(need - set(st))):
        return False
    for r, v in st["regs"].items():
        L.check(REG.fullmatch(r), where, "bad register name %r" % r)
        L.check(isinstance(v, str) and HEX32.fullmatch(v), where, "bad value %r" % v)
    for span in st["mem"]:
        if not (L.check(set(span) == {"addr", "hex"}, where, "bad mem span %r" % span)
                and L.check(HEX32.fullmatch(span["addr"]), where, "bad addr %r" % span)
                and L.check(re.fullmatch(r"([0-9a-f]{2})+", span["hex"]), where,
                            "bad hex %r" % span)):
            continue
        a, n = int(span["addr"], 16), len(span["hex"]) // 2
        L.check(RAM_BASE <= a and a + n <= RAM_END, where, "mem span outside RAM %r" % span)
    L.check(st["c"] in (0, 1), where, "c must be 0 or 1")
    L.check(isinstance(st["acc"], str) and HEX96.fullmatch(st["acc"]), where, "bad acc")
    if "pc" in st:
        L.check(HEX32.fullmatch(st["pc"]), where, "bad pc")
    return True


def _runs(v, key):
    """final/initial `vector` runs {"first", "values"} -> {index: value} (absent = 0)."""
    return {r["first"] + i: x for r in v.get(key, []) for i, x in enumerate(r["values"])}


def _rows(v, key):
    return {(r["row"], j): x for r in v.get(key, []) for j, x in enumerate(r["values"])}


def _s32(u):
    return u - (1 << 32) if u >> 31 else u


def _sat32(x):
    return max(-(1 << 31), min((1 << 31) - 1, x))


def _count(f3, f7, rd, N):
    """The count column of the op's page, docs/spec/vector/<op>.md §2 (tokens after the pc tokens)."""
    cdiv = lambda a, b: -(-a // b)
    if f3 == 0:
        return N * ((f7 & 7) + 4) + (N - 1) // 256 + ((4 if rd else 1) if f7 & 8 else 0)
    if f3 == 1:
        return N + 272 if f7 & 1 else 34 * N
    if f3 == 2:
        return 41 if f7 & 3 else 81 * cdiv(N, 64)
    if f3 == 3:
        G = (f7 & 7) + 1
        return G * (4 + cdiv(N, 4) + 4 * N) + cdiv(G, 4) + 4 * G
    if f3 in (4, 5):
        return cdiv(N, 4) + 4 * N
    if f3 == 6:
        return cdiv(N, 64) + 5
    return 4 + N + cdiv(N, 4)


def vector_tokens(word, x, toks, ini, fin):
    """vector.md §5 for a non-trapping vector instruction (word, registers x), its tokens after
    the pc tokens `toks` [(kind, payload)], and the example's initial/final states: returns a
    list of error messages (empty: fine)."""
    f3, rd, f7 = (word >> 12) & 7, (word >> 7) & 31, word >> 25
    x1, x2 = x[(word >> 15) & 31], x[(word >> 20) & 31]
    A, B, C, N = x1 & 0xFFFF, x1 >> 16, x2 & 0xFFFF, x2 >> 16
    want = []            # (kind or set of kinds, payload or None for any)
    elems = []           # word-stream element indices, in stream order
    js = []              # int8-stream element indices

    def stream(es):      # word stream: VWG(e >> 2) at the first element and when e & 3 = 0
        for e in es:
            if not elems or e & 3 == 0:
                want.append(("VWG", e >> 2))
            want.extend(("VW%d%d" % (e & 3, m), None) for m in range(4))
            elems.append(e)

    def int8(jj):        # int8 stream: VLG(j >> 2) when j & 3 = 0, then VLB_{j & 3}
        for j in jj:
            if j & 3 == 0:
                want.append(("VLG", j >> 2))
            want.append(("VLB%d" % (j & 3), None))
            js.append(j)

    if f3 == 0:                                    # VMAT
        for r in range(N):
            if r > 0 and r % 256 == 0:
                want.append(("VMH", r >> 8))
            want += [("VMC%d" % j, r & 0xFF) for j in range(f7 & 7)]
            want += [("VY%d" % m, None) for m in range(3)]
            want.append(({"VY3", "VYN3"} if f7 & 8 else "VY3", None))
        if f7 & 8:
            want += [("W%d" % k, None) for k in range(4)] if rd else [("NOP", 0)]
    elif f3 == 1 and f7 & 1 == 0:                  # VMATR K: e = 8t + h
        stream(range(8 * N))
    elif f3 == 1:                                  # VMATR V: VMV(t), then e = 8h + d
        want += [("VMV", t) for t in range(N)]
        stream(range(64))
    elif f3 == 2:                                  # VQ: VQE(k << 5 | e_k), one int8 stream
        per = 64 if f7 & 3 == 0 else 32
        for k in range(-(-N // 64) if per == 64 else 1):
            want.append(("VQE", frozenset((k << 5) | e for e in range(26))))
            int8(range(64 * k, 64 * k + per))
    elif f3 == 3:                                  # VEXP: VXM, e = 64g + t; then e = 512 + g
        G = (f7 & 7) + 1
        for g in range(G):
            want += [("VXM%d" % m, None) for m in range(4)]
            stream(range(64 * g, 64 * g + N))
        stream(range(512, 512 + G))
    elif f3 in (4, 5):                             # VEW, VFN: e = i
        stream(range(N))
    elif f3 == 6:                                  # VRED: VRD(k), then e = 0
        want += [("VRD", k) for k in range(-(-N // 64))]
        stream([0])
    else:                                          # VLD: M's four bytes, then an int8 stream
        want = [("VLB%d" % m, None) for m in range(4)]
        for i in range(N):
            if i % 4 == 0:
                want.append(("VLG", i // 4))
            want.append(("VLB%d" % ((x1 + 4 + i) % 4), None))

    errs = []
    if len(toks) != _count(f3, f7, rd, N):
        errs.append("%d tokens, the count column of docs/spec/vector/<op>.md §2 says %d" % (len(toks), _count(f3, f7, rd, N)))
    for i, ((k, p), (wk, wp)) in enumerate(zip(toks, want)):
        kind_ok = k in wk if isinstance(wk, set) else k == wk
        pay_ok = wp is None or (p in wp if isinstance(wp, frozenset) else p == wp)
        if not (kind_ok and pay_ok):
            errs.append("token %d is %s(%d), vector.md §5 wants %s(%s) (kind and position)"
                        % (i, k, p, "|".join(sorted(wk)) if isinstance(wk, set) else wk,
                           "any" if wp is None else "%d..%d" % (min(wp), max(wp)) if isinstance(wp, frozenset)
                           else wp))
            return errs
    if len(toks) != len(want):
        return errs + ["%d tokens, the position sequence of vector.md §5 has %d" % (len(toks), len(want))]

    # the values on the bus
    fv, iv = fin.get("vector", {}), ini.get("vector", {})
    VRf, VRi = _runs(fv, "vreg"), _runs(iv, "vreg")
    bytes_ = [p for k, p in toks if re.fullmatch(r"VW\d\d", k)]
    words = [_s32(sum(bytes_[4 * i + m] << (8 * m) for m in range(4))) for i in range(len(bytes_) // 4)]
    ws = dict(zip(elems, words))
    i8 = [p for k, p in toks if k.startswith("VLB")]
    sext = lambda b: b - 256 if b > 127 else b

    def expect(what, got, exp):
        if got != exp:
            errs.append("%s: the bus carries %d, the final state holds %d" % (what, got, exp))

    if f3 == 0:
        ys, kinds3 = [], []
        for k, p in toks:
            if k in ("VY0", "VY1", "VY2"):
                ys.append(p << (8 * int(k[2])) if k == "VY0" else ys.pop() | p << (8 * int(k[2])))
            elif k in ("VY3", "VYN3"):
                ys.append(_s32(ys.pop() | p << 24))
                kinds3.append(k)
        if f7 & 8:
            for r, y in enumerate(ys):
                new = r == 0 or y > max(ys[:r])
                if (kinds3[r] == "VYN3") != new:
                    errs.append("row %d: byte 3 is %s, but y_%d = %d is %s"
                                % (r, kinds3[r], r, y, "a new maximum" if new else "not a new maximum"))
            best = ys.index(max(ys))
            if rd:
                wv = sum(p << (8 * int(k[1])) for k, p in toks if k in ("W0", "W1", "W2", "W3"))
                expect("W(r*)", wv, best)
                expect("x%d" % rd, wv, int(fin["regs"].get("x%d" % rd, ini["regs"].get("x%d" % rd, "0x0")), 16))
        else:
            for r, y in enumerate(ys):
                expect("VR[%d] (row %d)" % (A + r, r), y, VRf.get(A + r, 0))
    elif f3 == 1 and f7 & 1 == 0:
        for e, z in ws.items():
            expect("VR[%d] (t %d, head %d)" % (A + 64 * (e & 7) + (e >> 3), e >> 3, e & 7), z,
                   VRf.get(A + 64 * (e & 7) + (e >> 3), 0))
    elif f3 == 1:
        for e, z in ws.items():
            expect("VR[%d]" % (A + e), z, VRf.get(A + e, 0))
    elif f3 == 2:
        shifts = [p & 31 for k, p in toks if k == "VQE"]
        if f7 & 3 == 0:
            act, ash = _runs(fv, "act"), _runs(fv, "ash")
            for j, b in zip(js, i8):
                expect("ACT[%d]" % (64 * A + j), sext(b), act.get(64 * A + j, 0))
            for k, e in enumerate(shifts):
                expect("ASH[%d]" % (A + k), e, ash.get(A + k, 0))
        else:
            key = "kcache" if f7 & 3 == 1 else "vcache"
            mem, sh = _rows(fv, key), _runs(fv, "ksh" if f7 & 3 == 1 else "vsh")
            for j, b in zip(js, i8):
                expect("%s[%d][%d]" % (key, A, j), sext(b), mem.get((A, j), 0))
            expect("shift of row %d" % A, shifts[0], sh.get(A, 0))
    elif f3 == 3:
        G = (f7 & 7) + 1
        xm = [p for k, p in toks if k.startswith("VXM")]
        for g in range(G):
            m = _s32(sum(xm[4 * g + k] << (8 * k) for k in range(4)))
            expect("m_%d (VXM; from the initial scores)" % g, m, max(VRi.get(B + 64 * g + t, 0) for t in range(N)))
            expect("S_%d (the sum of the group's streamed p)" % g, ws[512 + g],
                   sum(ws[64 * g + t] for t in range(N)))
        for e, z in ws.items():
            addr = C + e - 512 if e >= 512 else A + e
            expect("VR[%d]" % addr, z, VRf.get(addr, 0))
    elif f3 in (4, 5):
        for e, z in ws.items():
            expect("VR[%d]" % (A + e), z, VRf.get(A + e, 0))
    elif f3 == 6:
        expect("VR[%d]" % A, ws[0], VRf.get(A, 0))
    else:
        ram = {}
        for sp in ini["mem"]:
            a0 = int(sp["addr"], 16)
            ram.update({a0 + i: int(sp["hex"][2 * i:2 * i + 2], 16) for i in range(len(sp["hex"]) // 2)})
        rec = [ram.get(x1 + i, 0) for i in range(4 + N)]
        for i, b in enumerate(i8):
            expect("the record's byte at 0x%x" % (x1 + i), b, rec[i])
        M = _s32(rec[0] | rec[1] << 8 | rec[2] << 16 | rec[3] << 24)
        for i in range(N):
            expect("VR[%d]" % (C + i), _sat32(sext(rec[4 + i]) * M), VRf.get(C + i, 0))
    return errs


def check_example(L, path, ex, seen):
    is_vec = os.path.basename(path).startswith("vector_")
    name = ex.get("name", "?")
    where = "%s:%s" % (os.path.basename(path), name)
    if not L.check(set(ex) == EX_KEYS, where, "keys must be %s, got %s"
                   % (sorted(EX_KEYS), sorted(ex))):
        return []
    L.check(re.fullmatch(r"[a-z0-9_]+", name), where, "name must be [a-z0-9_]+")
    L.check(name not in seen, where, "duplicate name")
    seen.add(name)
    L.check(isinstance(ex["description"], str) and ex["description"], where, "description")
    L.check(isinstance(ex["edge"], bool), where, "edge must be true/false")
    ini, fin = ex["initial"], ex["final"]
    if not (check_state(L, where + " initial", ini, False)
            and check_state(L, where + " final", fin, True)):
        return []
    L.check("x0" not in ini["regs"], where, "x0 in regs")
    L.check(all(int(v, 16) != 0 for v in ini["regs"].values()), where,
            "initial regs lists only nonzero registers")
    code, asm = ex["code"], ex["asm"]
    L.check(len(code) == len(asm) and code, where, "code and asm must be nonempty, same length")
    L.check(all(isinstance(w, str) and HEX32.fullmatch(w) for w in code), where, "bad code word")
    pc0 = int(ini["pc"], 16)
    L.check(pc0 % 4 == 0 and RAM_BASE <= pc0 and pc0 + 4 * len(code) <= RAM_END, where,
            "code must be word-aligned and inside RAM")
    spans = [(pc0, 4 * len(code))] + [(int(s["addr"], 16), len(s["hex"]) // 2) for s in ini["mem"]]
    spans.sort()
    for (a1, n1), (a2, _) in zip(spans, spans[1:]):
        L.check(a1 + n1 <= a2, where, "initial mem spans overlap each other or the code")

    # tokens
    steps = ex["steps"]
    L.check(isinstance(steps, list) and steps, where, "steps must be a nonempty list")
    parsed = []
    for k, s in enumerate(steps):
        w = "%s step %d" % (where, k + 1)
        if not L.check(set(s) == {"id", "tok", "pc"}, w, "step keys must be id, tok, pc"):
            return []
        p = parse_tok(s["tok"])
        if not L.check(p is not None, w, "token text %r is not KIND(payload) as README.md says"
                       % s["tok"]):
            continue
        kind, payload = p
        L.check(s["id"] == 256 * KIND[kind] + payload, w, "id %r != 256*%d + %d for %s"
                % (s["id"], KIND[kind], payload, s["tok"]))
        L.check(kind != "CTRL", w, "START/CTRL is never a step")
        L.check(payload in SMALL.get(kind, range(256))
                or (kind == "TRAP" and payload in range(16, 24) and is_vec), w,
                "payload not allowed for %s" % kind)
        L.check(kind not in V_KINDS or is_vec, w, "vector kind outside vector_*.json")
        L.check(HEX32.fullmatch(s["pc"]), w, "bad pc")
        parsed.append((kind, payload, int(s["pc"], 16)))

    # end of the run
    end = fin["end"]
    last = parsed[-1] if parsed else ("?", 0, 0)
    enders = [k for k, (kind, _, _) in enumerate(parsed) if kind in ("EXIT", "TRAP")]
    if end == "running":
        L.check(not enders, where, "a running example has no EXIT/TRAP token")
        L.check("pc" in fin and "exit_status" not in fin and "trap_code" not in fin, where,
                "running: pc, and no exit_status/trap_code")
    elif end == "exit":
        L.check(enders == [len(parsed) - 1] and last[0] == "EXIT"
                and fin.get("exit_status") == last[1], where, "exit must end with EXIT(status)")
        L.check("pc" not in fin and "trap_code" not in fin, where, "exit: no pc/trap_code")
    elif end == "trap":
        L.check(enders == [len(parsed) - 1] and last[0] == "TRAP"
                and fin.get("trap_code") == last[1], where, "trap must end with TRAP(code)")
        L.check("pc" in fin and "exit_status" not in fin, where, "trap: pc, no exit_status")
    else:
        L.err(where, "end must be running, exit or trap")
    L.check(isinstance(fin["retired"], int) and 0 <= fin["retired"], where, "retired")
    for key, kind in (("stdout", "OUT"), ("stderr", "ERR")):
        data = bytes(p for k, p, _ in parsed if k == kind).hex()
        L.check(fin.get(key, "") == data, where, "%s must equal the %s payloads" % (key, kind))
        L.check(fin.get(key) != "", where, "%s present but empty" % key)

    # Instructions: a new one starts where the step `pc` changes, at a PCH,
    # and at a PCL not right after a PCH (trace.md §4.0).
    groups = []
    prev_kind = None
    for kind, payload, pc in parsed:
        starts = (not groups or groups[-1][0] != pc or kind in PC_KINDS[1:]
                  or (kind == "PCL" and prev_kind not in PC_KINDS[1:]))
        if starts:
            groups.append((pc, [(kind, payload)]))
        else:
            groups[-1][1].append((kind, payload))
        prev_kind = kind
    used = []
    page = None                        # w >> 8 of the previous instruction
    for pc, toks in groups:
        w = "%s at pc 0x%08x" % (where, pc)
        if not (RAM_BASE <= pc and pc + 4 <= RAM_END):
            shape = " ".join(k if k != "TRAP" else "TRAP:%d" % p for k, p in toks)
            L.check(shape == "TRAP:3", w, "a fetch outside RAM emits TRAP(3) only")
            continue
        # trace.md §4.0: the pc tokens
        wi = (pc - RAM_BASE) // 4
        want_pc = []
        if page is None or wi >> 8 != page:
            want_pc.append(("PCH%d" % (wi >> 16), (wi >> 8) & 0xFF))
        want_pc.append(("PCL", wi & 0xFF))
        got_pc = list(toks[:len(want_pc)])
        L.check(got_pc == want_pc, w, "pc tokens %s, want %s (w = 0x%x, previous w >> 8 = %s)"
                % (got_pc, want_pc, wi, "none" if page is None else hex(page)))
        page = wi >> 8
        toks = toks[len(want_pc):]
        L.check(all(k not in PC_KINDS for k, _ in toks), w, "pc tokens after the first token")
        shape = " ".join(k if k != "TRAP" else "TRAP:%d" % p for k, p in toks)
        idx = (pc - pc0) // 4
        if not (pc0 <= pc < pc0 + 4 * len(code)):
            L.err(w, "executes outside the example's code")
            continue
        mn = asm[idx].split("#")[0].split()[0]
        word = int(code[idx], 16)
        if is_vec and mn == ".insn" and word & 0x7F == 0x2B:   # vector.md §4.0, §5
            op = V_OPS[(word >> 12) & 7]
            used.append(op)
            L.check(asm[idx].split("#")[1].split()[0] == op, w, "asm comment must name %s" % op)
            regs = [0] + [int(ini["regs"].get("x%d" % r, "0x0"), 16) for r in range(1, 32)]
            trap_ok = {4, 5, 16, 17, 18, 19, 20, 21, 22, 23} if op == "VLD" else set(range(16, 24))
            if toks and toks[-1][0] == "TRAP":
                L.check(len(toks) == 1 and toks[0][1] in trap_ok, w, "a vector trap is TRAP(code) alone")
            else:
                for msg in vector_tokens(word, regs, toks, ini, fin):
                    L.err(w, "%s: %s" % (op, msg))
            continue
        L.check(mn in SHAPES, w, "unknown mnemonic %r" % mn)
        if mn not in SHAPES:
            continue
        used.append(mn)
        L.check(re.fullmatch(SHAPES[mn], shape), w, "tokens %s do not have the shape of %s"
                % (shape, mn))
        if mn == "ecall" and toks and toks[-1][0] == "W3":
            # trace.md §4.5: byte i is OIH(i >> 8) when i > 0 and i & 0xFF = 0,
            # OI(i & 0xFF), OUT/ERR; then W(len)
            n = sum(1 for k, _ in toks if k in ("OUT", "ERR"))
            want_idx = []
            for i in range(n):
                if i > 0 and i & 0xFF == 0:
                    want_idx.append(("OIH", i >> 8))
                want_idx.append(("OI", i & 0xFF))
            L.check([t for t in toks if t[0] in ("OI", "OIH")] == want_idx, w,
                    "OI/OIH byte indices do not run 0..len-1")
            wv = sum(p << (8 * int(k[1])) for k, p in toks if k in ("W0", "W1", "W2", "W3"))
            L.check(wv == n, w, "W(len) = %d but %d bytes were written" % (wv, n))
        dq = [p for k, p in toks if k == "DQ"]
        if dq:
            L.check([p >> 1 for p in dq] == list(range(31, -1, -1)), w,
                    "DQ bit indices must run 31..0")
    return used


def main():
    files = sys.argv[1:] or (sorted(glob.glob(os.path.join(HERE, "scalar_*.json"))) +
                             sorted(glob.glob(os.path.join(HERE, "vector_*.json"))))
    L = Lint()
    seen = set()
    per_class = {tuple(row): [0, 0] for row in CLASSES}     # examples, edge examples
    mnemonics_seen = set()
    total = 0
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        where = os.path.basename(path)
        L.check(set(doc) == TOP_KEYS, where, "top-level keys must be %s" % sorted(TOP_KEYS))
        L.check(doc.get("spec") == "machine-v1" and doc.get("trace_version") == "trace-v3",
                where, "spec/trace_version")
        exs = doc.get("examples", [])
        if where.startswith("vector_"):   # vector.md §8: one file per op, vector_<op>.json
            op = where[len("vector_"):-len(".json")]
            L.check(op.upper() in V_OPS, where, "vector_<op>.json names no op of %s" % V_OPS)
            L.check(doc.get("class") == op, where, "class must be the file's op %r" % op)
            for ex in exs:
                code = ex.get("code") or ["0x0"]
                L.check(V_OPS[(int(code[0], 16) >> 12) & 7] == op.upper() and int(code[0], 16) & 0x7F == 0x2B,
                        "%s:%s" % (where, ex.get("name", "?")), "the instruction is not %s" % op.upper())
        L.check(len(exs) >= 3, where, "at least three examples per file")
        L.check(any(e.get("edge") for e in exs), where, "at least one edge case per file")
        for ex in exs:
            total += 1
            used = set(check_example(L, path, ex, seen))
            # also count mnemonics that appear in code that did not run
            used |= {a.split("#")[0].split()[0] for a in ex.get("asm", []) if a.strip()}
            mnemonics_seen |= used
            for row in CLASSES:
                if used & set(row):
                    per_class[tuple(row)][0] += 1
                    per_class[tuple(row)][1] += bool(ex.get("edge"))
    vec_files = [p for p in files if os.path.basename(p).startswith("vector_")]
    if vec_files:                       # vector.md §8: >= 3 examples per op, >= 1 edge case
        # the ops whose files were given (all eight by default, checked below)
        counts = {op: [0, 0] for op in V_OPS
                  if any(os.path.basename(p) == "vector_%s.json" % op.lower() for p in vec_files)}
        for path in vec_files:
            with open(path) as f:
                for ex in json.load(f).get("examples", []):
                    for a in ex.get("asm", []):
                        op = a.split("#")[1].split()[0] if "#" in a else None
                        if op in counts:
                            counts[op][0] += 1
                            counts[op][1] += bool(ex.get("edge"))
        for op, (n, e) in counts.items():
            L.check(n >= 3 and e >= 1, "coverage", "vector op %s: %d examples, %d edge (need 3, 1)"
                    % (op, n, e))
    if not sys.argv[1:]:
        for op in V_OPS:
            L.check(os.path.join(HERE, "vector_%s.json" % op.lower()) in files, "coverage",
                    "vector op %s has no file vector_%s.json" % (op, op.lower()))
        for m in sorted(MNEMONICS - mnemonics_seen):
            L.err("coverage", "mnemonic %s appears in no example" % m)
        for row, (n, e) in per_class.items():
            L.check(n >= 3, "coverage", "class %s has %d examples (< 3)" % ("/".join(row), n))
            L.check(e >= 1, "coverage", "class %s has no edge case" % "/".join(row))
    for e in L.errors:
        print("lint:", e)
    print("lint: %d files, %d examples, %d errors" % (len(files), total, len(L.errors)))
    if not sys.argv[1:]:
        print("lint: examples per class (edge cases): " + ", ".join(
            "%s %d(%d)" % ("/".join(r), n, e) for r, (n, e) in per_class.items()))
    return 1 if L.errors else 0


if __name__ == "__main__":
    sys.exit(main())
