#!/usr/bin/python3
"""Executes the claims of docs/spec/vector-fused.md (a proposal) with fused_model.py.

- Equivalence (§1.5): each fused op, on random valid operands and random state, against its
  §3.x "Equivalent sequence" of existing ops run on vector_model.py with scratch spans in VR that
  overlap no operand: every memory element (and X(rd)) the fused op writes is bit-identical, and
  the two final states differ only inside the scratch spans.  Fixed seeds; a failure names the
  op, the case and its seed.  Edge cases: extreme values and saturation, n = 1 and 64, and the
  largest K, R, T, n, c0, row and p the proposal allows.
- Traps (§3.x "Traps", §2): every code of every op, and the lowest code when several apply.
- Tokens (§3.x "Tokens"): the token list built from each table has the stated count, its
  payloads fit 8 bits, and the values it carries are the values written.
- The story (§5 "Bit-identity"): one story token of §5's program against vector.md §7.3's vx
  rows, compared after every vf row (ACT, ASH, the caches, X, the argmax).
- The count (§5, §6.2, §6.3): the per-layer, per-story-token and whole-story figures recomputed
  from the per-op counts and §5's program, and the "vx rows it replaces" column from vector.md
  §7.3's rows.

    /usr/bin/python3 docs/spec/vectors/fused_model_test.py
"""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fused_model as fm  # noqa: E402
import vector_model as vm  # noqa: E402

MIN, MAX = vm.I32_MIN, vm.I32_MAX
CASES = 150  # random cases per op


def ops(lo, hi):
    """A register word with the low half lo and the high half hi (A, B or C, N)."""
    return (hi << 16) | lo


def vword(f3, f7, rd=0):
    """A custom-1 word (vector.md §4.0), rs1 = x11, rs2 = x12."""
    return (f7 << 25) | (12 << 20) | (11 << 15) | (f3 << 12) | (rd << 7) | 0x2B


# vector.md §4.0 f3 of the existing ops, and the f7 values the sequences use
VMAT, VMATR, VQ, VEXP, VEW, VFN, VRED = 0, 1, 2, 3, 4, 5, 6
VNORM, VQKV, VATT, VMADD, VSWI, VARG = range(6)


def random_state(rng, style):
    """A vector state (vector.md §2) with every memory random.  style "full": whole ranges (words
    -2^31..2^31-1, shifts 0..25, WSCALE 0..65535: most results saturate); "mid": words within
    +-2^24, shifts 0..12, WSCALE below 2^12 (few saturate); "small": words within +-2^12, shifts
    0..3, WSCALE below 64."""
    wbits, shmax, wsmax = {"full": (31, 25, 65535), "mid": (24, 12, 4095), "small": (12, 3, 63)}[style]
    st = vm.State()
    st.vr[:] = rng.integers(-(1 << wbits), (1 << wbits) - (wbits == 31), vm.VR_WORDS, endpoint=True)
    st.act[:] = rng.integers(-128, 127, st.act.size, endpoint=True)
    st.ash[:] = rng.integers(0, shmax, st.ash.size, endpoint=True)
    st.wmem[:] = rng.integers(-8, 7, st.wmem.size, endpoint=True)
    st.wscale[:] = rng.integers(0, wsmax, st.wscale.size, endpoint=True)
    for mem, sh in (("kc", "ksh"), ("vc", "vsh")):
        getattr(st, mem)[:] = rng.integers(-128, 127, getattr(st, mem).size, endpoint=True)
        getattr(st, sh)[:] = rng.integers(0, shmax, getattr(st, sh).size, endpoint=True)
    return st


def extreme_state(value_act=-128, value_w=-8, ws=65535, sh=25, vr=MIN, kv=-128):
    """Every element at one extreme: ACT, W, WSCALE, the shifts, VR words, KC and VC."""
    st = vm.State()
    st.act[:], st.wmem[:], st.wscale[:], st.ash[:] = value_act, value_w, ws, sh
    st.vr[:], st.kc[:], st.vc[:], st.ksh[:], st.vsh[:] = vr, kv, kv, sh, sh
    return st


def place(rng, sizes, taken):
    """Random first words for spans of `sizes` in VR, sharing no word with each other or with the
    (first, count) spans in `taken`.  Returns the list of first words."""
    for _ in range(10000):
        firsts = [int(rng.integers(0, vm.VR_WORDS - n, endpoint=True)) for n in sizes]
        spans = list(taken) + list(zip(firsts, sizes))
        if not any(vm.share(a, an, b, bn) for i, (a, an) in enumerate(spans)
                   for (b, bn) in spans[i + 1:]):
            return firsts
    raise AssertionError("no room for scratch spans %s beside %s" % (sizes, taken))


# ---- the equivalent sequences (§3.x), as lists of (f3, f7, rd, A, B, C, N) on vector_model ---------


def seq_vnorm(o, scratch):
    m, r, t = scratch
    b0, src, n, sh = o.A, o.B, o.N, o.f7 & 31
    return [(VRED, sh << 2, 0, m, src, 0, 1 * n), (VFN, 0, 0, r, m, 0, 1),
            (VEW, 2 | 6 << 2, 0, t, src, r, n), (VQ, 0, 0, b0, t, 0, n)]


def seq_vqkv(o, scratch):
    (D,) = scratch
    row, b0, c0, p, QB = o.A, o.B, o.C, o.N, o.f7 & 7
    return [(VMAT, 1, 0, D, b0, c0, 128), (VEW, 3, 0, D, D, p, 96), (VQ, 1, 0, row, D + 64, 0, 32),
            (VQ, 2, 0, row, D + 96, 0, 32), (VQ, 0, 0, QB, D, 0, 64)]


def seq_vatt(o, scratch):
    S, SUM, C, O = scratch
    bd, bq, r0, T = o.A, o.B, o.C, o.N
    return [(VMATR, 0, 0, S, bq, r0, T), (VEXP, 7, 0, S, S, SUM, T), (VMATR, 1, 0, O, S, r0, T),
            (VFN, 1, 0, C, SUM, 0, 8), (VEW, 2 | 3 << 2, 0, O, O, C, 64), (VQ, 0, 0, bd, O, 0, 64)]


def seq_vmadd(o, scratch):
    (t,) = scratch
    dst, b0, c0, R, K = o.A, o.B, o.C, o.N, o.f7 & 7
    return [(VMAT, K, 0, t, b0, c0, R), (VEW, 0, 0, dst, dst, t, R)]


def seq_vswi(o, scratch):
    (H,) = scratch
    bo, b0, c0, n = o.A, o.B, o.C, o.N
    return [(VMAT, 1, 0, H, b0, c0, 2 * n), (VFN, 2, 0, H, H, 0, n), (VEW, 1, 0, H, H, H + n, n),
            (VQ, 0, 0, bo, H, 0, n)]


def seq_varg(o, scratch):
    return [(VMAT, 1 | 8, o.rd, o.A, o.B, o.C, o.N)]


# Per op: the sequence, the scratch sizes in VR (a function of the operands), the VR spans the op
# reads (which scratch must not overlap) and the memories §3.x "Writes" names.
SEQS = {
    VNORM: (seq_vnorm, lambda o: [1, 1, o.N], lambda o: [(o.B, o.N)], {"act", "ash"}),
    VQKV: (seq_vqkv, lambda o: [128], lambda o: [], {"kc", "ksh", "vc", "vsh", "act", "ash"}),
    VATT: (seq_vatt, lambda o: [448 + o.N, 8, 8, 64], lambda o: [], {"act", "ash"}),
    VMADD: (seq_vmadd, lambda o: [o.N], lambda o: [(o.A, o.N)], {"vr"}),
    VSWI: (seq_vswi, lambda o: [2 * o.N], lambda o: [], {"act", "ash"}),
    VARG: (seq_varg, lambda o: [], lambda o: [], set()),
}


# ---- random valid operands per op (§2's fields, inside §3.x's trap conditions) ------------------------


def operands_vnorm(rng):
    n = int(rng.choice([1, 64, int(rng.integers(1, 64, endpoint=True))]))
    return dict(f7=int(rng.integers(0, 31, endpoint=True)), A=int(rng.integers(0, 5, endpoint=True)),
                B=int(rng.integers(0, 1024 - n, endpoint=True)), C=int(rng.integers(0, 0xFFFF)), N=n)


def operands_vqkv(rng):
    return dict(f7=int(rng.integers(0, 5, endpoint=True)), A=int(rng.integers(0, 319, endpoint=True)),
                B=int(rng.integers(0, 5, endpoint=True)), C=4 * int(rng.integers(0, 1006, endpoint=True)),
                N=int(rng.integers(0, 63, endpoint=True)))


def operands_vatt(rng):
    T = int(rng.choice([1, 64, int(rng.integers(1, 64, endpoint=True))]))
    return dict(f7=0, A=int(rng.integers(0, 5, endpoint=True)), B=int(rng.integers(0, 5, endpoint=True)),
                C=int(rng.integers(0, 320 - T, endpoint=True)), N=T)


def operands_vmadd(rng):
    K = int(rng.integers(1, 3, endpoint=True))
    R = int(rng.choice([1, 64, 512, int(rng.integers(1, 512, endpoint=True))]))  # R + scratch R <= 1024
    dst = int(rng.integers(0, 1024 - 2 * R, endpoint=True))                     # room for the scratch
    return dict(f7=K, A=dst if rng.integers(2) else 1024 - R - dst, B=int(rng.integers(0, 6 - K, endpoint=True)),
                C=int(rng.integers(0, 4152 - R * K, endpoint=True)), N=R)


def operands_vswi(rng):
    n = 4 * int(rng.choice([1, 43, 96, int(rng.integers(1, 96, endpoint=True))]))
    return dict(f7=0, A=int(rng.integers(0, 6 - -(-n // 64), endpoint=True)), B=int(rng.integers(0, 5, endpoint=True)),
                C=4 * int(rng.integers(0, (4152 - 2 * n) // 4, endpoint=True)), N=n)


def operands_varg(rng):
    R = 4 * int(rng.choice([1, 128, 256, int(rng.integers(1, 256, endpoint=True))]))
    return dict(f7=0, rd=int(rng.integers(0, 31, endpoint=True)), A=int(rng.integers(0, 0xFFFF)),
                B=int(rng.integers(0, 5, endpoint=True)),
                C=4 * int(rng.integers(0, (4152 - R) // 4, endpoint=True)), N=R)


OPERANDS = {VNORM: operands_vnorm, VQKV: operands_vqkv, VATT: operands_vatt, VMADD: operands_vmadd,
            VSWI: operands_vswi, VARG: operands_varg}


def fused_word(f3, d):
    return fm.encode(f3, d.get("f7", 0), d.get("rd", 0)), ops(d["A"], d["B"]), ops(d["C"], d["N"])


class Equivalence(unittest.TestCase):
    """§1.5: the fused op against its equivalent sequence."""

    def check(self, f3, st, d, rng, label):
        """Runs the fused op (f3, operands d) and its sequence from `st`; scratch placed by rng."""
        name = fm.FUSED[f3].name
        word, x1, x2 = fused_word(f3, d)
        o = fm.Operands(word, x1, x2)
        seq, sizes, reads, writes = SEQS[f3]
        where = "%s %s, operands %s" % (name, label, d)
        scratch = place(rng, sizes(o), reads(o))
        fused = fm.outcome(st, word, x1, x2)
        self.assertIsNone(fused.trap, where)
        self.assertTrue({mem for mem, _, _ in fused.writes} <= writes, where)
        after_fused = st.copy()
        vm.apply(after_fused, fused)
        after_seq, rd_value = st.copy(), None
        for f3v, f7, rd, A, B, C, N in seq(o, scratch):
            out = vm.execute(after_seq, vword(f3v, f7, rd), ops(A, B), ops(C, N))
            self.assertIsNone(out.trap, "%s: sequence step %s traps (scratch %s)" % (where, (f3v, f7, A, B, C, N), scratch))
            rd_value = out.rd_value if out.rd_value is not None else rd_value
        for mem, idx, vals in fused.writes:
            got = getattr(after_seq, mem)[idx]
            bad = np.flatnonzero(got != vals)
            self.assertEqual(len(bad), 0, "%s, scratch %s: %s[%s] fused %s, sequence %s" % (
                where, scratch, mem, idx[bad[:4]] if len(bad) else "", vals[bad[:4]], got[bad[:4]]))
        self.assertEqual(fused.rd_value, rd_value, where)
        # Beyond the fused op's writes, the sequence writes only its scratch spans.
        keep = np.ones(vm.VR_WORDS, dtype=bool)
        for first, n in zip(scratch, sizes(o)):
            keep[first:first + n] = False
        for mem in vm.MEMORIES:
            a, b = getattr(after_fused, mem), getattr(after_seq, mem)
            if mem == "vr":
                a, b = a[keep], b[keep]
            self.assertTrue((a == b).all(), "%s: %s differs outside the scratch %s" % (where, mem, scratch))
        return fused

    def random_cases(self, f3, base):
        for i in range(CASES):
            seed = base + i
            rng = np.random.default_rng(seed)
            style = ("full", "mid", "small")[i % 3]
            st = random_state(rng, style)
            self.check(f3, st, OPERANDS[f3](rng), rng, "random case %d (seed %d, %s)" % (i, seed, style))

    def test_vnorm(self):
        self.random_cases(VNORM, 1000)
        rng = np.random.default_rng(1)
        for label, vr, d in (
                ("all -2^31, SH 0 (ms saturates)", MIN, dict(f7=0, A=5, B=1024 - 64, C=0, N=64)),
                ("all -2^31, SH 31, n = 1", MIN, dict(f7=31, A=0, B=1023, C=0, N=1)),
                ("all 2^31-1, n = 64", MAX, dict(f7=6, A=0, B=0, C=0, N=64)),
                ("all zero (ms = 0, R = RSQRT(0))", 0, dict(f7=6, A=3, B=100, C=0, N=64)),
                ("all 1, SH 31", 1, dict(f7=31, A=1, B=7, C=0, N=17))):
            st = extreme_state(vr=vr)
            out = self.check(VNORM, st, d, rng, label)
            self.assertEqual(out.values["e"][0], out.values["e_extremes"], label)
        # worked by hand: x = (-2^31) x 64, SH 0: ms = sat32(rnd(2^68, 16)) = 2^31 - 1; RSQRT:
        # k = k2 = 30, ix = (2^31 - 1) >> 24 = 127, R = rnd(RSQ[127] = 11,886,522, 15) = 363;
        # z = rnd(-2^31 * 363, 16) = -363 * 2^15 = -11,894,784; e = E(11,894,784) = 17
        # (rnd(., 16) = 182 > 127, rnd(., 17) = 91), q = -91.
        out = fm.outcome(extreme_state(vr=MIN), *fused_word(VNORM, dict(f7=0, A=0, B=0, C=0, N=64)))
        self.assertEqual((out.values["ms"], out.values["R"], out.values["e"], out.values["q"][0][0]),
                         (MAX, 363, [17], -91))

    def test_vnorm_e_from_extremes(self):
        # §3.1 Depth: R >= 1, so max |z| is attained at max x or min x.
        for seed in range(2000, 2300):
            rng = np.random.default_rng(seed)
            st = random_state(rng, ("full", "mid", "small")[seed % 3])
            out = fm.outcome(st, *fused_word(VNORM, operands_vnorm(rng)))
            self.assertEqual(out.values["e"][0], out.values["e_extremes"], "seed %d" % seed)

    def test_vqkv(self):
        self.random_cases(VQKV, 3000)
        rng = np.random.default_rng(3)
        for label, st, d in (
                ("extremes, last chunks, row 319, p 63", extreme_state(), dict(f7=5, A=319, B=5, C=4024, N=63)),
                ("extremes +127/+7, QB = b0", extreme_state(127, 7), dict(f7=0, A=0, B=0, C=0, N=0)),
                ("zero weights", extreme_state(value_w=0), dict(f7=1, A=7, B=2, C=8, N=17)),
                ("WSCALE 1, ASH 0", extreme_state(ws=1, sh=0), dict(f7=2, A=100, B=3, C=400, N=33))):
            self.check(VQKV, st, d, rng, label)

    def test_vatt(self):
        self.random_cases(VATT, 4000)
        rng = np.random.default_rng(4)
        for label, st, d in (
                ("extremes, T 64, last rows", extreme_state(), dict(f7=0, A=5, B=5, C=256, N=64)),
                ("extremes, T 1, bd = bq", extreme_state(), dict(f7=0, A=2, B=2, C=319, N=1)),
                ("+127 query, -128 keys, KSH 0", extreme_state(127, sh=0), dict(f7=0, A=0, B=1, C=0, N=64)),
                ("all zero", extreme_state(0, 0, 0, 0, 0, 0), dict(f7=0, A=1, B=0, C=10, N=33))):
            out = self.check(VATT, st, d, rng, label)
            self.assertEqual(out.values["e"][0], out.values["e_extremes"], label)
        # worked by hand: all zero, T = 33: s = 0, p = EXP[0] = 65536, S = 33 * 65536, o = 0, z = 0.
        out = fm.outcome(extreme_state(0, 0, 0, 0, 0, 0), *fused_word(VATT, dict(A=1, B=0, C=10, N=33)))
        self.assertEqual(out.values["S"].tolist(), [33 * 65536] * 8)
        self.assertEqual((out.values["e"], int(np.abs(out.values["q"][0]).max())), ([0], 0))

    def test_vatt_e_from_extremes(self):
        # §3.3 Depth: RECIP(S) >= 1, so per head the max and min o give max |z|.
        for seed in range(5000, 5200):
            rng = np.random.default_rng(seed)
            st = random_state(rng, ("full", "mid", "small")[seed % 3])
            out = fm.outcome(st, *fused_word(VATT, operands_vatt(rng)))
            self.assertEqual(out.values["e"][0], out.values["e_extremes"], "seed %d" % seed)

    def test_vmadd(self):
        self.random_cases(VMADD, 6000)
        rng = np.random.default_rng(6)
        for label, st, d in (
                ("extremes, K 3, R 1, last chunks", extreme_state(), dict(f7=3, A=1023, B=3, C=4149, N=1)),
                ("extremes +127/-8, VR 2^31-1, K 3, R 341", extreme_state(127, vr=MAX),
                 dict(f7=3, A=0, B=3, C=4152 - 1023, N=341)),
                ("K 1, R 512 (the most scratch allows)", extreme_state(vr=MIN), dict(f7=1, A=512, B=5, C=3640, N=512)),
                ("K 2, R 64, zero weights", extreme_state(value_w=0, vr=12345), dict(f7=2, A=64, B=4, C=0, N=64))):
            self.check(VMADD, st, d, rng, label)

    def test_vswi(self):
        self.random_cases(VSWI, 7000)
        rng = np.random.default_rng(7)
        for label, st, d in (
                ("extremes, n 384, last chunks", extreme_state(), dict(A=0, B=5, C=4152 - 768, N=384)),
                ("extremes +127, n 4", extreme_state(127), dict(A=5, B=0, C=0, N=4)),
                ("stories n 172, bo = b0", extreme_state(3, 5, 300, 2), dict(A=0, B=0, C=192, N=172)),
                ("WSCALE 1, ASH 0", extreme_state(ws=1, sh=0), dict(A=2, B=1, C=4000, N=64))):
            self.check(VSWI, st, d, rng, label)

    def test_varg(self):
        self.random_cases(VARG, 8000)
        rng = np.random.default_rng(8)
        for label, st, d in (
                ("all rows equal (zero weights): r* = 0", extreme_state(value_w=0), dict(rd=10, A=0, B=0, C=0, N=1024)),
                ("extremes saturate: all 2^31-1", extreme_state(127, 7), dict(rd=1, A=0, B=5, C=4152 - 1024, N=1024)),
                ("R 4, rd = x0", extreme_state(), dict(rd=0, A=0, B=0, C=4148, N=4))):
            out = self.check(VARG, st, d, rng, label)
            self.assertEqual(out.values["r_quads"], out.values["r"], label)
        # ties across quads: rows 5 and 9 hold the maximum; r* = 5, quads 0 and 1 are VMC1.
        st = vm.State()
        st.act[:64] = 1
        st.wscale[:12] = 1 << 10
        for r, w in ((0, 1), (5, 3), (9, 3), (10, 2)):
            st.wmem[64 * r:64 * r + 64] = w
        out = fm.outcome(st, *fused_word(VARG, dict(rd=5, A=0, B=0, C=0, N=12)))
        self.assertEqual((out.values["y"][[0, 5, 9, 10]].tolist(), out.rd_value, out.values["new"]),
                         ([1, 3, 3, 2], 5, [True, True, False]))

    def test_varg_quad_rule(self):
        # §3.6 Tokens: r* = 4g* + q* (g* the last VMC1 quad) is the lowest index of the maximum,
        # on random rows with many ties.
        for seed in range(9000, 9500):
            rng = np.random.default_rng(seed)
            y = rng.integers(-3, 3, 4 * int(rng.integers(1, 256, endpoint=True)), endpoint=True)
            self.assertEqual(fm.varg_quads(y)[1], int(np.argmax(y)), "seed %d" % seed)


class Traps(unittest.TestCase):
    """§3.x Traps and §2: the lowest applicable code; nothing is written."""

    # (op, f7, rd, A, B, C, N, code): each line draws one code of the op's list
    CASES = [
        (VNORM, 32, 0, 0, 0, 0, 64, 16), (VNORM, 64, 0, 0, 0, 0, 64, 16), (VNORM, 0, 1, 0, 0, 0, 64, 16),
        (VNORM, 0, 0, 0, 961, 0, 64, 17), (VNORM, 0, 0, 0, 1024, 0, 1, 17),
        (VNORM, 0, 0, 0, 0, 0, 0, 18), (VNORM, 0, 0, 0, 0, 0, 65, 18),
        (VNORM, 0, 0, 6, 0, 0, 64, 19),
        (VQKV, 8, 0, 0, 0, 0, 0, 16), (VQKV, 64, 0, 0, 0, 0, 0, 16), (VQKV, 0, 3, 0, 0, 0, 0, 16),
        (VQKV, 0, 0, 0, 6, 0, 0, 19), (VQKV, 6, 0, 0, 0, 0, 0, 19),
        (VQKV, 0, 0, 0, 0, 2, 0, 21), (VQKV, 0, 0, 0, 0, 4028, 0, 21),
        (VQKV, 0, 0, 320, 0, 0, 0, 22), (VQKV, 0, 0, 0, 0, 0, 64, 23),
        (VATT, 1, 0, 0, 0, 0, 1, 16), (VATT, 0, 1, 0, 0, 0, 1, 16),
        (VATT, 0, 0, 0, 0, 0, 0, 18), (VATT, 0, 0, 0, 0, 0, 65, 18),
        (VATT, 0, 0, 6, 0, 0, 1, 19), (VATT, 0, 0, 0, 6, 0, 1, 19), (VATT, 0, 0, 0, 0, 257, 64, 22),
        (VMADD, 0, 0, 0, 0, 0, 1, 16), (VMADD, 4, 0, 0, 0, 0, 1, 16), (VMADD, 9, 0, 0, 0, 0, 1, 16),
        (VMADD, 1, 2, 0, 0, 0, 1, 16), (VMADD, 1, 0, 1000, 0, 0, 25, 17),
        (VMADD, 1, 0, 0, 0, 0, 0, 18), (VMADD, 3, 0, 0, 4, 0, 1, 19),
        (VMADD, 3, 0, 0, 0, 4150, 1, 21),
        (VSWI, 1, 0, 0, 0, 0, 4, 16), (VSWI, 0, 1, 0, 0, 0, 4, 16),
        (VSWI, 0, 0, 0, 0, 0, 0, 18), (VSWI, 0, 0, 0, 0, 0, 6, 18), (VSWI, 0, 0, 0, 0, 0, 388, 18),
        (VSWI, 0, 0, 0, 6, 0, 4, 19), (VSWI, 0, 0, 4, 0, 0, 172, 19),
        (VSWI, 0, 0, 0, 0, 2, 4, 21), (VSWI, 0, 0, 0, 0, 4152 - 764, 384, 21),
        (VARG, 1, 5, 0, 0, 0, 4, 16), (VARG, 0, 0, 0, 0, 0, 0, 18), (VARG, 0, 0, 0, 0, 0, 6, 18),
        (VARG, 0, 0, 0, 0, 0, 1028, 18), (VARG, 0, 0, 0, 6, 0, 4, 19),
        (VARG, 0, 0, 0, 0, 1, 4, 21), (VARG, 0, 0, 0, 0, 4152 - 1020, 1024, 21),
        # several at once: the lowest is raised
        (VNORM, 96, 3, 9, 2000, 0, 0, 16), (VNORM, 0, 0, 9, 2000, 0, 0, 17),
        (VQKV, 0, 0, 999, 9, 3, 99, 19), (VATT, 0, 0, 9, 0, 300, 0, 18),
        (VMADD, 7, 0, 1024, 9, 9999, 0, 16), (VMADD, 3, 0, 1025, 9, 9999, 0, 17),
        (VSWI, 0, 0, 5, 9, 3, 200, 19), (VARG, 0, 0, 0, 0, 3, 1025, 18),
    ]

    def test_codes(self):
        st = random_state(np.random.default_rng(11), "mid")
        drawn = {}
        for f3, f7, rd, A, B, C, N, code in self.CASES:
            word = fm.encode(f3, f7, rd)
            out = fm.outcome(st, word, ops(A, B), ops(C, N))
            where = "%s f7 %d rd %d A %d B %d C %d N %d" % (fm.FUSED[f3].name, f7, rd, A, B, C, N)
            self.assertEqual(out.trap, code, where)
            self.assertEqual((out.writes, out.rd_value), ([], None), where)
            self.assertEqual(fm.tokens(st, word, ops(A, B), ops(C, N), out), [("TRAP", code)], where)
            drawn.setdefault(f3, set()).add(code)
        # every code of each §3.x list is drawn
        self.assertEqual(drawn, {VNORM: {16, 17, 18, 19}, VQKV: {16, 19, 21, 22, 23}, VATT: {16, 18, 19, 22},
                                 VMADD: {16, 17, 18, 19, 21}, VSWI: {16, 18, 19, 21}, VARG: {16, 18, 19, 21}})

    def test_reserved_f3_and_valid_edges(self):
        st = vm.State()
        for f3 in (6, 7):
            self.assertEqual(fm.outcome(st, fm.encode(f3, 0), 0, 0).trap, 1)
        # the edges just inside each bound do not trap
        for f3, f7, rd, A, B, C, N in (
                (VNORM, 31, 0, 5, 960, 0, 64), (VQKV, 5, 0, 319, 5, 4024, 63), (VATT, 0, 0, 5, 5, 256, 64),
                (VMADD, 3, 0, 1023, 3, 4149, 1), (VSWI, 0, 0, 0, 5, 4152 - 768, 384),
                (VARG, 0, 31, 0xFFFF, 5, 4152 - 1024, 1024)):
            self.assertIsNone(fm.outcome(st, fm.encode(f3, f7, rd), ops(A, B), ops(C, N)).trap)


class Tokens(unittest.TestCase):
    """§3.x Tokens: the stated counts, 8-bit payloads, and the values carried."""

    def test_random_counts_and_values(self):
        for f3 in range(6):
            for i in range(60):
                seed = 12000 + 100 * f3 + i
                rng = np.random.default_rng(seed)
                st = random_state(rng, ("full", "mid", "small")[i % 3])
                word, x1, x2 = fused_word(f3, OPERANDS[f3](rng))
                o = fm.Operands(word, x1, x2)
                out = fm.outcome(st, word, x1, x2)
                toks = fm.tokens(st, word, x1, x2, out)
                where = "%s seed %d" % (fm.FUSED[f3].name, seed)
                self.assertEqual(len(toks), fm.FUSED[f3].stated_count(o), where)
                self.assertTrue(all(0 <= p <= 255 for _, p in toks), where)
                self.assertTrue(all(p <= 127 for k, p in toks if k == "VMV"), where)
                self.assertTrue(all((p & 31) <= 25 and (p >> 5) <= 5 for k, p in toks if k == "VQE"), where)
                self.check_values(f3, o, out, toks, where)

    def check_values(self, f3, o, out, toks, where):
        """The bus carries what is written: int8 bytes against ACT/KC/VC writes, VMADD's words
        against VR, VARG's W against r*."""
        written = {mem: vals for mem, _, vals in out.writes}
        if f3 in (VNORM, VQKV, VATT, VSWI):
            lb = [p for k, p in toks if k.startswith("VLB")]
            parts = [written[m] for m in ("kc", "vc") if m in written] + [written["act"]] if f3 == VQKV else \
                [vals for mem, _, vals in out.writes if mem == "act"]
            self.assertEqual(lb, (np.concatenate(parts) % 256).tolist(), where)
            qe = [p & 31 for k, p in toks if k == "VQE"]
            shifts = [int(vals[0]) for mem, _, vals in out.writes if mem in ("ksh", "vsh", "ash")]
            self.assertEqual(qe, shifts, where)
        if f3 == VMADD:
            words = [p for k, p in toks if k.startswith("VW") and k != "VWG"]
            got = np.array(words, dtype=np.int64).reshape(-1, 4) @ np.array([1, 256, 1 << 16, 1 << 24])
            self.assertEqual(got.tolist(), (written["vr"] & 0xFFFFFFFF).tolist(), where)
        if f3 == VARG:
            kinds = [k for k, _ in toks if k in ("VMC0", "VMC1")]
            gstar = max(i for i, k in enumerate(kinds) if k == "VMC1")
            self.assertEqual(gstar, out.values["r"] >> 2, where)
            if o.rd:
                self.assertEqual(sum(p << (8 * m) for m, (_, p) in enumerate(toks[-4:])), out.rd_value, where)

    def test_stated_numbers(self):
        st = random_state(np.random.default_rng(13), "mid")

        def count(f3, f7, rd, A, B, C, N):
            return len(fm.tokens(st, fm.encode(f3, f7, rd), ops(A, B), ops(C, N)))

        self.assertEqual({count(VNORM, 6, 0, 0, 0, 0, n) for n in range(1, 65)}, {86})   # 86 for any n
        self.assertEqual(count(VQKV, 1, 0, 5, 0, 0, 4), 195)
        self.assertEqual([count(VATT, 0, 0, 0, 1, 0, T) for T in range(1, 65)], [2 * T + 149 for T in range(1, 65)])
        self.assertEqual(count(VMADD, 1, 0, 0, 0, 128, 64), 272)
        self.assertEqual(count(VMADD, 3, 0, 0, 0, 536, 64), 272)
        self.assertEqual(count(VSWI, 0, 0, 0, 0, 192, 172), 329)
        self.assertEqual(count(VARG, 0, 5, 0, 0, 3640, 512), 132)
        self.assertEqual(count(VARG, 0, 0, 0, 0, 3640, 512), 129)                         # W = NOP(0)
        # VQKV's int8 stream: 41 + 41 + 81 after the 32 quads
        toks = fm.tokens(st, fm.encode(VQKV, 1), ops(5, 0), ops(0, 4))
        cuts = [i for i, (k, _) in enumerate(toks) if k == "VQE"] + [len(toks)]
        self.assertEqual([cuts[0]] + [b - a for a, b in zip(cuts, cuts[1:])], [32, 41, 41, 81])

    def test_vmadd_two_quad_reads(self):
        # §3.4 Depth: for K <= 3 a row's chunks c0 + rK .. c0 + rK + K - 1 lie in at most two quads.
        for K in (1, 2, 3):
            for c in range(4 * K + 8):
                self.assertLessEqual(len({(c + j) >> 2 for j in range(K)}), 2)


# ---- §5 and §6: the story ---------------------------------------------------------------------------

STORY_TOKENS = 63                       # positions pos = 0..62, T = 1..63 (§6.1)
VLD_TOKENS, VQ_ACT_TOKENS = 84, 81      # vector.md §7.3 rows 0 and 28 (not fused)
OTHER_STEPS = 84437                     # §6.1: vx's measured remainder, assumed equal for vf (§6.2)
VF_WHOLE_STORY = 563237                 # §6.2 (the proposal first said 562,922: 33 PCL, not 38)


def vf_program(l, pos):
    """§5's layer l at position pos: (name, f3, f7, rd, A, B, C, N) per fused instruction."""
    c, r0, T = 728 * l, 64 * l, pos + 1
    row = r0 + pos
    return [("VNORM", VNORM, 6, 0, 0, 0, 0, 64), ("VQKV", VQKV, 1, 0, row, 0, c, pos),
            ("VATT", VATT, 0, 0, 0, 1, r0, T), ("VMADD wo", VMADD, 1, 0, 0, 0, c + 128, 64),
            ("VNORM", VNORM, 6, 0, 0, 0, 0, 64), ("VSWI", VSWI, 0, 0, 0, 0, c + 192, 172),
            ("VMADD w2", VMADD, 3, 0, 0, 0, c + 536, 64)]


VARG_STORY = ("VARG", VARG, 0, 10, 0, 0, 3640, 512)  # rd = the next token (any register but x0)


def stated(f3, f7, rd, A, B, C, N):
    """The count §3.x states for these operands (fused_model.FUSED[f3].stated_count)."""
    return fm.FUSED[f3].stated_count(fm.Operands(fm.encode(f3, f7, rd), ops(A, B), ops(C, N)))


class Story(unittest.TestCase):
    """§5's program and §6.2's totals, recomputed from the per-op counts."""

    def test_program_is_valid_and_counts(self):
        st = vm.State()
        per_op, whole, ninstr = {}, 0, None
        for pos in range(STORY_TOKENS):
            T = pos + 1
            instrs = [i for l in range(5) for i in vf_program(l, pos)] + [VARG_STORY]
            ninstr = 1 + len(instrs) + 1                                       # + VLD, VQ ACT
            for name, *args in instrs:
                self.assertIsNone(fm.outcome(st, fm.encode(*args[:3]), ops(*args[3:5]), ops(*args[5:])).trap,
                                  "%s pos %d" % (name, pos))
            layer = [stated(*i[1:]) for i in vf_program(0, pos)]
            self.assertEqual(sum(layer), 1389 + 2 * T)                          # §5 "Per layer"
            story_token = VLD_TOKENS + 5 * sum(layer) + VQ_ACT_TOKENS + stated(*VARG_STORY[1:])
            self.assertEqual(story_token, 7242 + 10 * T)                         # §5, §6.2
            # equal over layers: the counts do not depend on l
            self.assertEqual(sum(stated(*i[1:]) for l in range(5) for i in vf_program(l, pos)), 5 * sum(layer))
            whole += story_token
            for name, *args in instrs:
                per_op[name] = per_op.get(name, 0) + stated(*args)
        # §5: 1 + 5·7 + 2 = 38 vector instructions.  (The proposal said 33, "1 + 5·6 + 2", and
        # §6.2 charged 63 · 33 PCL; §5's table has seven instructions per layer.  Fixed in the text.)
        self.assertEqual(ninstr, 38)
        self.assertEqual(vm.NCHUNK % 4, 0)
        self.assertEqual(vm.NCHUNK // 4, 1038)                                   # §1.6: WMEM by c >> 2
        # §6.2's "whole story, vf" column
        self.assertEqual(per_op, {"VNORM": 54180, "VQKV": 61425, "VATT": 67095, "VMADD wo": 85680,
                                  "VSWI": 103635, "VMADD w2": 85680, "VARG": 8316})
        self.assertEqual(STORY_TOKENS * (VLD_TOKENS + VQ_ACT_TOKENS), 10395)
        self.assertEqual(whole, 476406)
        self.assertEqual(STORY_TOKENS * ninstr, 2394)                            # PCL, one per instruction
        total = whole + STORY_TOKENS * ninstr + OTHER_STEPS
        self.assertEqual(total, VF_WHOLE_STORY)
        self.assertEqual(round(total / STORY_TOKENS, 1), 8940.3)
        self.assertEqual(round(3293231 / total, 2), 5.85)

    def test_vx_rows_replaced(self):
        # §6.2's "vx rows it replaces" column, from vector.md §7.3's row counts at T = pos + 1
        for T in (1, 4, 5, 32, 63):
            q = -(-T // 4)
            row = {1: 6, 2: 5, 3: 272, 4: 81, 5: 640, 6: 408, 7: 41, 8: 41, 9: 81, 10: 34 * T,
                   11: 66 + 32 * T + 8 * q, 12: T + 272, 13: 34, 14: 272, 15: 81, 16: 320, 17: 272,
                   22: 1721, 23: 731, 24: 731, 25: 243, 26: 448, 27: 272, 29: 2565}
            norm = sum(row[r] for r in range(1, 5))
            self.assertEqual(norm, 364)                                          # §7.3 rows 18-21
            replaced = {"VNORM": 10 * norm, "VQKV": 5 * sum(row[r] for r in range(5, 10)),
                        "VATT": 5 * sum(row[r] for r in range(10, 16)), "VMADD wo": 5 * (row[16] + row[17]),
                        "VSWI": 5 * sum(row[r] for r in range(22, 26)), "VMADD w2": 5 * (row[26] + row[27]),
                        "VARG": row[29]}
            self.assertEqual(replaced, {"VNORM": 3640, "VQKV": 6055, "VATT": 3625 + 335 * T + 40 * q,
                                        "VMADD wo": 2960, "VSWI": 17130, "VMADD w2": 3600, "VARG": 2565})
            self.assertEqual(sum(replaced.values()) + VLD_TOKENS + VQ_ACT_TOKENS, 39740 + 335 * T + 40 * q)
        # §6.1's whole-story vx figures
        vx = sum(39740 + 335 * T + 40 * -(-T // 4) for T in range(1, 64))
        self.assertEqual((vx, vx + 63 * 138 + OTHER_STEPS), (3200100, 3293231))

    def test_what_is_left(self):
        # §6.2 "What is left", per story token at T = 32: 7,562 in all.
        T = 32
        int8 = 10 * 81 + 5 * (41 + 41 + 81) + 5 * 81 + 5 * 3 * 81 + VQ_ACT_TOKENS + VLD_TOKENS
        words = 10 * 272
        quads = 5 * (32 + 86) + 128
        scalars = 10 * 5 + 5 * (34 + 34)
        self.assertEqual((int8, words, quads, scalars), (3410, 2720, 718, 390))
        self.assertEqual(int8 + words + quads + scalars + 10 * T + 4, 7242 + 10 * T)
        self.assertEqual(7242 + 10 * T, 7562)
        # §6.3's alternatives, per story token from 8,940.3; §6.4 (1)
        per = VF_WHOLE_STORY / STORY_TOKENS
        pairs = 5 * (32 + 86) + 128                                              # VQKV, VSWI quads; VARG
        chunks = 5 * (96 + 258 + 1) + 384 + 1                                    # + VMH before row 256
        no_varg = 2565 - 132
        sh_off = -5 * 34
        self.assertEqual((pairs, chunks, no_varg, sh_off), (718, 2160, 2433, -170))
        self.assertEqual([round(per + d) for d in (0, pairs, chunks, no_varg, sh_off)],
                         [8940, 9658, 11100, 11373, 8770])
        self.assertEqual((5 * (3 * 81 + 1), round(per - 5 * (3 * 81 + 1))), (1220, 7720))


def vx_rows(l, pos):
    """vector.md §7.3 rows 1..27 of layer l at position pos: (f3, f7, rd, A, B, C, N) on
    vector_model, grouped as the vf instruction that replaces them (§5's "replaces vx rows")."""
    c, r0, T = 728 * l, 64 * l, pos + 1
    row = r0 + pos
    norm = [(VRED, 6 << 2, 0, 480, 0, 0, 64), (VFN, 0, 0, 481, 480, 0, 1),
            (VEW, 2 | 6 << 2, 0, 64, 0, 481, 64), (VQ, 0, 0, 0, 64, 0, 64)]               # rows 1-4
    return [norm,
            [(VMAT, 1, 0, 128, 0, c, 128), (VEW, 3, 0, 128, 128, pos, 96), (VQ, 1, 0, row, 192, 0, 32),
             (VQ, 2, 0, row, 224, 0, 32), (VQ, 0, 0, 1, 128, 0, 64)],                          # rows 5-9
            [(VMATR, 0, 0, 512, 1, r0, T), (VEXP, 7, 0, 512, 512, 488, T), (VMATR, 1, 0, 64, 512, r0, T),
             (VFN, 1, 0, 496, 488, 0, 8), (VEW, 2 | 3 << 2, 0, 64, 64, 496, 64),
             (VQ, 0, 0, 0, 64, 0, 64)],                                                        # rows 10-15
            [(VMAT, 1, 0, 128, 0, c + 128, 64), (VEW, 0, 0, 0, 0, 128, 64)],                    # rows 16-17
            norm,                                                                              # rows 18-21
            [(VMAT, 1, 0, 128, 0, c + 192, 344), (VFN, 2, 0, 128, 128, 0, 172),
             (VEW, 1, 0, 128, 128, 300, 172), (VQ, 0, 0, 0, 128, 0, 172)],                     # rows 22-25
            [(VMAT, 3, 0, 64, 0, c + 536, 64), (VEW, 0, 0, 0, 0, 64, 64)]]                      # rows 26-27


class StoryBitIdentity(unittest.TestCase):
    """§5 "Bit-identity": after every row of §5's table, ACT, ASH, the caches, X (VR words 0..63)
    and the argmax are what vx's rows (vector.md §7.3) leave, from a random state (random vx
    scratch words included: they are dead)."""

    def test_one_story_token(self):
        for seed, pos, style in ((21000, 0, "small"), (21001, 31, "mid"), (21002, 62, "full"),
                                 (21003, 17, "small")):
            rng = np.random.default_rng(seed)
            vf = random_state(rng, style)
            vx = vf.copy()
            for l in range(5):
                for i, (instr, rows) in enumerate(zip(vf_program(l, pos), vx_rows(l, pos))):
                    name, *args = instr
                    self.assertIsNone(fm.execute(vf, fm.encode(*args[:3]), ops(*args[3:5]), ops(*args[5:])).trap)
                    for f3, f7, rd, A, B, C, N in rows:
                        self.assertIsNone(vm.execute(vx, vword(f3, f7, rd), ops(A, B), ops(C, N)).trap)
                    for mem in ("act", "ash", "kc", "ksh", "vc", "vsh"):
                        self.assertTrue((getattr(vf, mem) == getattr(vx, mem)).all(),
                                        "seed %d pos %d layer %d %s: %s" % (seed, pos, l, name, mem))
                    self.assertEqual(vf.vr[:64].tolist(), vx.vr[:64].tolist(),
                                     "seed %d pos %d layer %d %s: X" % (seed, pos, l, name))
            vm.execute(vf, vword(VQ, 0), ops(0, 0), ops(0, 64))                               # row 28 (both)
            vm.execute(vx, vword(VQ, 0), ops(0, 0), ops(0, 64))
            name, *args = VARG_STORY
            got = fm.execute(vf, fm.encode(*args[:3]), ops(*args[3:5]), ops(*args[5:])).rd_value
            want = vm.execute(vx, vword(VMAT, 1 | 8, 10), ops(0, 0), ops(3640, 512)).rd_value  # row 29
            self.assertEqual(got, want, "seed %d pos %d: argmax" % (seed, pos))

if __name__ == "__main__":
    unittest.main()
