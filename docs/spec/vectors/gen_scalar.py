#!/usr/bin/env python3
"""Worked examples for the scalar machine and the bignum unit, as data.

Writes docs/spec/vectors/scalar_*.json (conventions: README.md).

This is an INDEPENDENT calculation written from docs/spec/isa.md,
bignum.md and trace.md (machine-v1, trace-v3; the scalar machine's tokens
are those of trace-v2). It uses nothing from ref/
or chip/ and nothing outside the Python standard library. Everything is
unsigned 32-bit arithmetic with explicit masks; signed readings are
spelled out with `signed()`.

Every example also carries hand-written expectations (`want=`): the values
of every register it changes, how the run ends, and for some examples the
whole token list, worked out by hand from the spec text. The generator
refuses to write the files when the calculation and the hand-written
values disagree, so each example is derived twice.

Usage: python3 docs/spec/vectors/gen_scalar.py   (rewrites the JSON files)
       python3 docs/spec/vectors/gen_scalar.py --check   (compare only)
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

MASK32 = 0xFFFF_FFFF
MASK96 = (1 << 96) - 1
RAM_BASE = 0x0001_0000
RAM_END = 0x0011_0000          # exclusive
CODE = 0x0001_0000             # where the examples put their code
DATA = 0x0002_0000             # where the examples put their data


def signed(v):
    """The 32-bit value v read as two's complement."""
    return v - (1 << 32) if v & 0x8000_0000 else v


def sext(v, bits):
    """Sign-extend the low `bits` bits of v to 32 bits (unsigned result)."""
    v &= (1 << bits) - 1
    if v & (1 << (bits - 1)):
        v |= MASK32 & ~((1 << bits) - 1)
    return v


# ---------------------------------------------------------------- trace.md §2

KINDS = {"CTRL": 0, "W0": 1, "W1": 2, "W2": 3, "W3": 4,
         "A0": 5, "A1": 6, "A2": 7, "A3": 8,
         "S0": 9, "S1": 10, "S2": 11, "S3": 12,
         "BR": 13, "DQ": 14, "CF": 15}
for _n in range(12):
    KINDS["AC%d" % _n] = 16 + _n
KINDS.update({"OUT": 28, "ERR": 29, "NOP": 30, "EXIT": 31, "TRAP": 32})
# trace-v2: the pc tokens (§4.0) and the ECALL write byte indices (§4.5)
KINDS.update({"PCL": 44, "PCH0": 45, "PCH1": 46, "PCH2": 47, "PCH3": 48,
              "OI": 49, "OIH": 50})
PC_KINDS = {"PCL", "PCH0", "PCH1", "PCH2", "PCH3"}

# kinds whose payload is a data byte are written 0x%02x; the others decimal
HEX_KINDS = {k for k in KINDS if k[0] in "WAS" or k.startswith("AC")} | {
    "OUT", "ERR", "EXIT", "OI"} | PC_KINDS

TRAP_ILLEGAL, TRAP_FETCH_MISALIGNED, TRAP_FETCH_FAULT = 1, 2, 3
TRAP_LOAD_MISALIGNED, TRAP_LOAD_FAULT = 4, 5
TRAP_STORE_MISALIGNED, TRAP_STORE_FAULT = 6, 7
TRAP_BAD_ECALL, TRAP_EBREAK = 8, 9


def tok(kind, payload):
    assert 0 <= payload < 256
    text = ("%s(0x%02x)" if kind in HEX_KINDS else "%s(%d)") % (kind, payload)
    return (256 * KINDS[kind] + payload, text)


def W(v, rd):
    """trace.md §3: four W tokens, or NOP(0) when rd = x0."""
    if rd == 0:
        return [tok("NOP", 0)]
    return [tok("W%d" % i, (v >> (8 * i)) & 0xFF) for i in range(4)]


def A(addr):
    return [tok("A%d" % i, (addr >> (8 * i)) & 0xFF) for i in range(4)]


def S(v, n):
    return [tok("S%d" % i, (v >> (8 * i)) & 0xFF) for i in range(n)]


def AC(acc):
    return [tok("AC%d" % i, (acc >> (8 * i)) & 0xFF) for i in range(12)]


def DQ(ua, ub):
    """trace.md §4.4: unsigned restoring division, one token per bit."""
    out = []
    r = 0                                   # 33-bit unsigned
    for i in range(31, -1, -1):
        r = 2 * r + ((ua >> i) & 1)
        if r >= ub:
            r = r - ub
            q = 1
        else:
            q = 0
        out.append(tok("DQ", 2 * i + q))
    return out


# ------------------------------------------------ encoder (Unpriv §2.2, §2.3)

REG_ABI = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1",
           "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
           "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
           "t3", "t4", "t5", "t6"]


def reg(name):
    name = name.strip()
    if name == "fp":
        return 8
    if name in REG_ABI:
        return REG_ABI.index(name)
    m = re.fullmatch(r"x(\d+)", name)
    assert m and int(m.group(1)) < 32, name
    return int(m.group(1))


def enc_r(op, f3, f7, rd, rs1, rs2):
    return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def enc_i(op, f3, rd, rs1, imm):
    assert -2048 <= imm <= 2047, imm
    return ((imm & 0xFFF) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def enc_s(op, f3, rs1, rs2, imm):
    assert -2048 <= imm <= 2047, imm
    imm &= 0xFFF
    return ((imm >> 5) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) \
        | ((imm & 0x1F) << 7) | op


def enc_b(op, f3, rs1, rs2, imm):
    assert -4096 <= imm <= 4094 and imm % 2 == 0, imm
    imm &= 0x1FFF
    return (((imm >> 12) & 1) << 31) | (((imm >> 5) & 0x3F) << 25) \
        | (rs2 << 20) | (rs1 << 15) | (f3 << 12) \
        | (((imm >> 1) & 0xF) << 8) | (((imm >> 11) & 1) << 7) | op


def enc_u(op, rd, imm20):
    assert 0 <= imm20 <= 0xFFFFF, imm20
    return (imm20 << 12) | (rd << 7) | op


def enc_j(op, rd, imm):
    assert -(1 << 20) <= imm < (1 << 20) and imm % 2 == 0, imm
    imm &= 0x1FFFFF
    return (((imm >> 20) & 1) << 31) | (((imm >> 1) & 0x3FF) << 21) \
        | (((imm >> 11) & 1) << 20) | (((imm >> 12) & 0xFF) << 12) \
        | (rd << 7) | op


OP_LUI, OP_AUIPC, OP_JAL, OP_JALR = 0b0110111, 0b0010111, 0b1101111, 0b1100111
OP_BRANCH, OP_LOAD, OP_STORE = 0b1100011, 0b0000011, 0b0100011
OP_IMM, OP_OP, OP_FENCE, OP_SYSTEM = 0b0010011, 0b0110011, 0b0001111, 0b1110011
OP_CUSTOM0 = 0b0001011

# mnemonic -> (format, f3, f7) ; isa.md §4.1
R_OPS = {"add": (0, 0x00), "sub": (0, 0x20), "sll": (1, 0x00),
         "slt": (2, 0x00), "sltu": (3, 0x00), "xor": (4, 0x00),
         "srl": (5, 0x00), "sra": (5, 0x20), "or": (6, 0x00), "and": (7, 0x00),
         "mul": (0, 0x01), "mulh": (1, 0x01), "mulhsu": (2, 0x01),
         "mulhu": (3, 0x01), "div": (4, 0x01), "divu": (5, 0x01),
         "rem": (6, 0x01), "remu": (7, 0x01),
         "sh1add": (2, 0x10), "sh2add": (4, 0x10), "sh3add": (6, 0x10)}
I_OPS = {"addi": 0, "slti": 2, "sltiu": 3, "xori": 4, "ori": 6, "andi": 7}
SHIFT_IMM = {"slli": (1, 0x00), "srli": (5, 0x00), "srai": (5, 0x20)}
LOADS = {"lb": 0, "lh": 1, "lw": 2, "lbu": 4, "lhu": 5}
STORES = {"sb": 0, "sh": 1, "sw": 2}
BRANCHES = {"beq": 0, "bne": 1, "blt": 4, "bge": 5, "bltu": 6, "bgeu": 7}
BIGNUM = {"bn.addc": 0, "bn.subb": 1, "bn.xchgc": 2, "bn.mac": 3,
          "bn.accrd": 4, "bn.accclr": 5}


def target(t):
    """'.+8', '.-4' or '.' : an offset from the instruction's own address."""
    t = t.strip()
    assert t.startswith("."), t
    return int(t[1:], 0) if len(t) > 1 else 0


def memop(t):
    m = re.fullmatch(r"\s*(-?(?:0x)?[0-9a-fA-F]+)\((\w+)\)\s*", t)
    assert m, t
    return int(m.group(1), 0), reg(m.group(2))


def fence_set(s):
    return sum({"i": 8, "o": 4, "r": 2, "w": 1}[ch] for ch in s.strip())


def assemble(line):
    """One line of assembly (GNU syntax, branch targets as '.+N') -> word."""
    text = line.split("#")[0].strip()
    mn, _, rest = text.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest.strip() else []
    if mn == ".word":
        return int(ops[0], 0) & MASK32
    if mn in R_OPS:
        f3, f7 = R_OPS[mn]
        return enc_r(OP_OP, f3, f7, reg(ops[0]), reg(ops[1]), reg(ops[2]))
    if mn in I_OPS:
        return enc_i(OP_IMM, I_OPS[mn], reg(ops[0]), reg(ops[1]), int(ops[2], 0))
    if mn in SHIFT_IMM:
        f3, f7 = SHIFT_IMM[mn]
        sh = int(ops[2], 0)
        assert 0 <= sh < 32
        return enc_r(OP_IMM, f3, f7, reg(ops[0]), reg(ops[1]), sh)
    if mn in LOADS:
        imm, rs1 = memop(ops[1])
        return enc_i(OP_LOAD, LOADS[mn], reg(ops[0]), rs1, imm)
    if mn in STORES:
        imm, rs1 = memop(ops[1])
        return enc_s(OP_STORE, STORES[mn], rs1, reg(ops[0]), imm)
    if mn in BRANCHES:
        return enc_b(OP_BRANCH, BRANCHES[mn], reg(ops[0]), reg(ops[1]),
                     target(ops[2]))
    if mn == "lui":
        return enc_u(OP_LUI, reg(ops[0]), int(ops[1], 0))
    if mn == "auipc":
        return enc_u(OP_AUIPC, reg(ops[0]), int(ops[1], 0))
    if mn == "jal":
        return enc_j(OP_JAL, reg(ops[0]), target(ops[1]))
    if mn == "jalr":
        imm, rs1 = memop(ops[1])
        return enc_i(OP_JALR, 0, reg(ops[0]), rs1, imm)
    if mn == "fence":
        pred, succ = (fence_set(ops[0]), fence_set(ops[1])) if ops else (15, 15)
        return (pred << 24) | (succ << 20) | OP_FENCE
    if mn == "fence.tso":
        return (0b1000 << 28) | (0b0011 << 24) | (0b0011 << 20) | OP_FENCE
    if mn == "ecall":
        return 0x0000_0073
    if mn == "ebreak":
        return 0x0010_0073
    if mn in BIGNUM:
        f3 = BIGNUM[mn]
        r = [reg(o) for o in ops]
        rd, rs1, rs2 = {0: lambda: r, 1: lambda: r,
                        2: lambda: (r[0], r[1], 0), 3: lambda: (0, r[0], r[1]),
                        4: lambda: (r[0], 0, 0), 5: lambda: (0, 0, 0)}[f3]()
        return enc_r(OP_CUSTOM0, f3, 0, rd, rs1, rs2)
    raise ValueError("cannot assemble: " + line)


# ------------------------------------------------------------- the machine

def in_ram(addr, n):
    """isa.md §2: out of range unless RAM_BASE <= a and a + n <= RAM_END
    (33-bit sum, no wrap-around)."""
    return addr >= RAM_BASE and addr + n <= RAM_END


class Machine:
    def __init__(self, pc, regs, mem, code, c, acc):
        self.x = [0] * 32
        for r, v in regs.items():
            self.x[r] = v & MASK32
        self.pc = pc
        self.ram = bytearray(RAM_END - RAM_BASE)
        for addr, data in mem:
            self.ram[addr - RAM_BASE:addr - RAM_BASE + len(data)] = data
        for k, w in enumerate(code):
            self.store(pc + 4 * k, 4, w)
        self.c = c
        self.acc = acc
        self.end = None            # None (running), ("exit", s), ("trap", c)
        self.retired = 0
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.page = None           # w >> 8 of the instruction executed last

    def pc_tokens(self, pc):
        """trace.md §4.0: w = (pc - RAM_BASE) / 4; PCH_k((w >> 8) & 0xFF),
        k = w >> 16, for the run's first instruction and whenever w >> 8
        differs from the previous instruction's; then PCL(w & 0xFF)."""
        w = (pc - RAM_BASE) // 4
        out = []
        if w >> 8 != self.page:
            out.append(tok("PCH%d" % (w >> 16), (w >> 8) & 0xFF))
        self.page = w >> 8
        return out + [tok("PCL", w & 0xFF)]

    def load(self, addr, n):
        assert in_ram(addr, n)
        return int.from_bytes(self.ram[addr - RAM_BASE:addr - RAM_BASE + n],
                              "little")

    def store(self, addr, n, v):
        assert in_ram(addr, n)
        self.ram[addr - RAM_BASE:addr - RAM_BASE + n] = \
            (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")

    def set_rd(self, rd, v):
        if rd != 0:
            self.x[rd] = v & MASK32

    def trap(self, toks, code):
        """A trap is final and changes no register, memory, c, acc or pc."""
        self.end = ("trap", code)
        return toks + [tok("TRAP", code)]

    def retire(self, toks, next_pc):
        self.pc = next_pc & MASK32
        self.retired += 1
        return toks

    # One instruction: returns its tokens (trace.md §4): a fetch outside RAM
    # emits TRAP(3) alone; any other instruction its pc tokens (§4.0), then
    # the tokens of §4.1-4.6.
    def step(self):
        assert self.end is None
        pc = self.pc
        if not in_ram(pc, 4):
            return self.trap([], TRAP_FETCH_FAULT)
        return self.pc_tokens(pc) + self.execute(pc)

    def execute(self, pc):
        w = self.load(pc, 4)
        op, rd, f3 = w & 0x7F, (w >> 7) & 31, (w >> 12) & 7
        rs1, rs2, f7 = (w >> 15) & 31, (w >> 20) & 31, w >> 25
        a, b = self.x[rs1], self.x[rs2]
        imm_i = sext(w >> 20, 12)
        imm_s = sext(((w >> 25) << 5) | ((w >> 7) & 31), 12)
        imm_b = sext((((w >> 31) & 1) << 12) | (((w >> 7) & 1) << 11)
                     | (((w >> 25) & 0x3F) << 5) | (((w >> 8) & 0xF) << 1), 13)
        imm_u = w & 0xFFFF_F000
        imm_j = sext((((w >> 31) & 1) << 20) | (((w >> 12) & 0xFF) << 12)
                     | (((w >> 20) & 1) << 11) | (((w >> 21) & 0x3FF) << 1), 21)

        if op == OP_LUI:
            self.set_rd(rd, imm_u)
            return self.retire(W(imm_u, rd), pc + 4)
        if op == OP_AUIPC:
            v = (pc + imm_u) & MASK32
            self.set_rd(rd, v)
            return self.retire(W(v, rd), pc + 4)
        if op == OP_JAL:
            t = (pc + imm_j) & MASK32
            if t % 4:
                return self.trap([], TRAP_FETCH_MISALIGNED)
            self.set_rd(rd, pc + 4)
            return self.retire(W(pc + 4, rd), t)
        if op == OP_JALR and f3 == 0:
            t = ((a + imm_i) & MASK32) & ~1 & MASK32   # a read before rd is written
            if t % 4:
                return self.trap([], TRAP_FETCH_MISALIGNED)
            self.set_rd(rd, pc + 4)
            return self.retire(W(pc + 4, rd), t)
        if op == OP_BRANCH and f3 in (0, 1, 4, 5, 6, 7):
            taken = {0: a == b, 1: a != b,
                     4: signed(a) < signed(b), 5: signed(a) >= signed(b),
                     6: a < b, 7: a >= b}[f3]
            if not taken:
                return self.retire([tok("BR", 0)], pc + 4)
            t = (pc + imm_b) & MASK32
            if t % 4:
                return self.trap([], TRAP_FETCH_MISALIGNED)
            return self.retire([tok("BR", 1)], t)
        if op == OP_LOAD and f3 in (0, 1, 2, 4, 5):
            n = {0: 1, 1: 2, 2: 4, 4: 1, 5: 2}[f3]
            addr = (a + imm_i) & MASK32
            if addr % n:
                return self.trap(A(addr), TRAP_LOAD_MISALIGNED)
            if not in_ram(addr, n):
                return self.trap(A(addr), TRAP_LOAD_FAULT)
            v = self.load(addr, n)
            if f3 in (0, 1, 2):
                v = sext(v, 8 * n)
            self.set_rd(rd, v)
            return self.retire(A(addr) + W(v, rd), pc + 4)
        if op == OP_STORE and f3 in (0, 1, 2):
            n = {0: 1, 1: 2, 2: 4}[f3]
            addr = (a + imm_s) & MASK32
            if addr % n:
                return self.trap(A(addr), TRAP_STORE_MISALIGNED)
            if not in_ram(addr, n):
                return self.trap(A(addr), TRAP_STORE_FAULT)
            self.store(addr, n, b)
            return self.retire(A(addr) + S(b, n), pc + 4)
        if op == OP_IMM and (f3 not in (1, 5) or (f3, f7) in ((1, 0), (5, 0), (5, 0x20))):
            sh = rs2                                       # shamt = bits [24:20]
            v = {0: lambda: a + imm_i,
                 2: lambda: int(signed(a) < signed(imm_i)),
                 3: lambda: int(a < imm_i),                # imm sign-extended first
                 4: lambda: a ^ imm_i, 6: lambda: a | imm_i, 7: lambda: a & imm_i,
                 1: lambda: a << sh,
                 5: lambda: (a >> sh) if f7 == 0 else (signed(a) >> sh)}[f3]()
            v &= MASK32
            self.set_rd(rd, v)
            return self.retire(W(v, rd), pc + 4)
        if op == OP_OP and (f7 in (0, 1) or (f7, f3) in ((0x20, 0), (0x20, 5), (0x10, 2), (0x10, 4), (0x10, 6))):
            if f7 == 1 and f3 >= 4:
                return self.divide(w, pc, rd, f3, a, b)
            if f7 == 1:
                sa = {0: signed(a), 1: signed(a), 2: signed(a), 3: a}[f3]
                sb = {0: signed(b), 1: signed(b), 2: b, 3: b}[f3]
                p = sa * sb                                # exact product
                v = (p if f3 == 0 else p >> 32) & MASK32   # >> on the exact value
            elif f7 == 0x10:
                v = b + (a << {2: 1, 4: 2, 6: 3}[f3])
            else:
                sh = b & 31
                v = {(0, 0): lambda: a + b, (0x20, 0): lambda: a - b,
                     (0, 1): lambda: a << sh,
                     (0, 2): lambda: int(signed(a) < signed(b)),
                     (0, 3): lambda: int(a < b), (0, 4): lambda: a ^ b,
                     (0, 5): lambda: a >> sh,
                     (0x20, 5): lambda: signed(a) >> sh,
                     (0, 6): lambda: a | b, (0, 7): lambda: a & b}[(f7, f3)]()
            v &= MASK32
            self.set_rd(rd, v)
            return self.retire(W(v, rd), pc + 4)
        if op == OP_FENCE and f3 == 0:
            return self.retire([tok("NOP", 0)], pc + 4)
        if w == 0x0000_0073:
            return self.ecall(pc)
        if w == 0x0010_0073:
            return self.trap([], TRAP_EBREAK)
        if op == OP_CUSTOM0 and f7 == 0 and f3 <= 5:
            return self.bignum(pc, f3, rd, rs1, rs2, a, b)
        assert op not in (0b0101011, 0b1011011, 0b1111011, 0b1010111), \
            "opcode possibly used by the vector unit (vector.md): not used here"
        return self.trap([], TRAP_ILLEGAL)

    def divide(self, w, pc, rd, f3, a, b):
        """isa.md §4.3 and trace.md §4.4."""
        is_signed = f3 in (4, 6)
        if is_signed:
            ua = (-signed(a)) & MASK32 if signed(a) < 0 else a    # |-2^31| = 2^31
            ub = (-signed(b)) & MASK32 if signed(b) < 0 else b
        else:
            ua, ub = a, b
        toks = DQ(ua, ub)
        if b == 0:
            v = MASK32 if f3 in (4, 5) else a
        elif is_signed and a == 0x8000_0000 and b == MASK32:
            v = 0x8000_0000 if f3 == 4 else 0
        elif is_signed:
            q = abs(signed(a)) // abs(signed(b))           # rounded toward zero
            if (signed(a) < 0) != (signed(b) < 0):
                q = -q
            r = signed(a) - q * signed(b)                   # sign of the dividend
            v = (q if f3 == 4 else r) & MASK32
        else:
            v = a // b if f3 == 5 else a % b
        self.set_rd(rd, v)
        return self.retire(toks + W(v, rd), pc + 4)

    def ecall(self, pc):
        """isa.md §5, trace.md §4.5."""
        a7, a0, a1, a2 = self.x[17], self.x[10], self.x[11], self.x[12]
        if a7 == 64:
            fd, buf, n = a0, a1, a2
            if fd not in (1, 2):
                return self.trap([], TRAP_BAD_ECALL)
            if n > 65535:                     # isa.md §5: after the fd check
                return self.trap([], TRAP_BAD_ECALL)
            if n > 0 and not in_ram(buf, n):
                return self.trap([], TRAP_LOAD_FAULT)
            data = bytes(self.ram[buf - RAM_BASE:buf - RAM_BASE + n]) if n else b""
            (self.stdout if fd == 1 else self.stderr).extend(data)
            toks = []
            for i, byte in enumerate(data):   # trace.md §4.5
                if i > 0 and i & 0xFF == 0:
                    toks.append(tok("OIH", i >> 8))
                toks.append(tok("OI", i & 0xFF))
                toks.append(tok("OUT" if fd == 1 else "ERR", byte))
            self.set_rd(10, n)
            return self.retire(toks + W(n, 10), pc + 4)
        if a7 == 93:
            self.end = ("exit", a0 & 0xFF)
            self.retired += 1                 # exit counts as retired; pc stays
            return [tok("EXIT", a0 & 0xFF)]
        return self.trap([], TRAP_BAD_ECALL)

    def bignum(self, pc, f3, rd, rs1, rs2, a, b):
        """bignum.md §2 and trace.md §4.6."""
        if (f3 == 2 and rs2 != 0) or (f3 == 3 and rd != 0) or \
                (f3 == 4 and (rs1 | rs2) != 0) or (f3 == 5 and (rd | rs1 | rs2) != 0):
            return self.trap([], TRAP_ILLEGAL)
        c, acc = self.c, self.acc
        if f3 == 0:                                   # bn.addc
            s = a + b + c
            self.set_rd(rd, s & MASK32)
            self.c = s >> 32
            toks = W(s & MASK32, rd) + [tok("CF", self.c)]
        elif f3 == 1:                                 # bn.subb
            d = a - b - c
            self.set_rd(rd, d & MASK32)
            self.c = 1 if d < 0 else 0
            toks = W(d & MASK32, rd) + [tok("CF", self.c)]
        elif f3 == 2:                                 # bn.xchgc
            self.set_rd(rd, c)
            self.c = a & 1
            toks = W(c, rd) + [tok("CF", self.c)]
        elif f3 == 3:                                 # bn.mac
            self.acc = (acc + a * b) & MASK96
            toks = AC(self.acc)
        elif f3 == 4:                                 # bn.accrd
            self.set_rd(rd, acc & MASK32)
            self.acc = acc >> 32
            toks = W(acc & MASK32, rd) + AC(self.acc)
        else:                                         # bn.accclr
            self.acc = 0
            toks = [tok("NOP", 0)]
        return self.retire(toks, pc + 4)


# -------------------------------------------------------------- examples

def h32(v):
    return "0x%08x" % v


def h96(v):
    return "0x%024x" % v


class Example:
    def __init__(self, name, description, asm, regs=None, mem=None, c=0, acc=0,
                 pc=CODE, insns=None, edge=False, want=None, check_mem=None):
        self.name, self.description, self.asm = name, description, asm
        self.regs = {reg(k): v & MASK32 for k, v in (regs or {}).items()}
        self.mem = [(addr, bytes(data)) for addr, data in (mem or [])]
        self.c, self.acc, self.pc = c, acc, pc
        self.insns = insns if insns is not None else len(asm)
        self.edge = edge
        self.want = want or {}
        self.check_mem = check_mem or []

    def run(self):
        code = [assemble(line) for line in self.asm]
        m = Machine(self.pc, self.regs, self.mem, code, self.c, self.acc)
        steps = []
        for _ in range(self.insns):
            at = m.pc
            for tid, text in m.step():
                steps.append({"id": tid, "tok": text, "pc": h32(at)})
            if m.end:
                break
        return code, m, steps

    def to_json(self):
        code, m, steps = self.run()
        self.verify(m, steps)
        changed = {r: m.x[r] for r in range(1, 32) if m.x[r] != self.regs.get(r, 0)}
        spans = list(self.mem) + [(a, n) for a, n in self.check_mem]
        final_mem = []
        for addr, data in spans:
            n = data if isinstance(data, int) else len(data)
            final_mem.append({"addr": h32(addr), "hex": m.ram[addr - RAM_BASE:addr - RAM_BASE + n].hex()})
        final = {"end": "running" if m.end is None else m.end[0]}
        if m.end and m.end[0] == "exit":
            final["exit_status"] = m.end[1]
        if m.end and m.end[0] == "trap":
            final["trap_code"] = m.end[1]
        if m.end is None or m.end[0] == "trap":
            final["pc"] = h32(m.pc)
        final.update({"regs": {"x%d" % r: h32(v) for r, v in sorted(changed.items())},
                      "mem": final_mem, "c": m.c, "acc": h96(m.acc),
                      "retired": m.retired})
        if m.stdout:
            final["stdout"] = m.stdout.hex()
        if m.stderr:
            final["stderr"] = m.stderr.hex()
        return {
            "name": self.name,
            "description": self.description,
            "edge": self.edge,
            "initial": {"pc": h32(self.pc),
                        "regs": {"x%d" % r: h32(v) for r, v in sorted(self.regs.items()) if r and v},
                        "mem": [{"addr": h32(a), "hex": d.hex()} for a, d in self.mem],
                        "c": self.c, "acc": h96(self.acc)},
            "code": [h32(w) for w in code],
            "asm": self.asm,
            "steps": steps,
            "final": final,
        }

    def verify(self, m, steps):
        """Compare the calculation with the hand-written expectations."""
        want = dict(self.want)
        fail = []
        end = want.pop("end", "running")
        got_end = "running" if m.end is None else "%s %d" % m.end
        if end != got_end:
            fail.append("end: want %s got %s" % (end, got_end))
        # "tokens": the tokens of trace.md §4.1-4.6 by hand, without the pc
        # tokens (§4.0); "all_tokens" / "ids": every token, pc tokens included;
        # "tokens_at": {step index (0-based): text} for long runs.
        if "tokens" in want:
            texts = want.pop("tokens")
            got = [s["tok"] for s in steps if s["tok"].split("(")[0] not in PC_KINDS]
            if texts != got:
                fail.append("tokens: want %s got %s" % (texts, got))
        if "all_tokens" in want:
            texts = want.pop("all_tokens")
            if texts != [s["tok"] for s in steps]:
                fail.append("all_tokens: want %s got %s" % (texts, [s["tok"] for s in steps]))
        if "tokens_at" in want:
            for k, text in want.pop("tokens_at").items():
                got = steps[k]["tok"] if k < len(steps) else None
                if got != text:
                    fail.append("token %d: want %s got %s" % (k, text, got))
        if "pc_tokens" in want:
            texts = want.pop("pc_tokens")
            got = [s["tok"] for s in steps if s["tok"].split("(")[0] in PC_KINDS]
            if texts != got:
                fail.append("pc_tokens: want %s got %s" % (texts, got))
        if "ids" in want:
            ids = want.pop("ids")
            if ids != [s["id"] for s in steps]:
                fail.append("ids: want %s got %s" % (ids, [s["id"] for s in steps]))
        if "ntokens" in want:
            n = want.pop("ntokens")
            if n != len(steps):
                fail.append("ntokens: want %d got %d" % (n, len(steps)))
        for key in ("c", "acc", "pc", "stdout", "stderr"):
            if key in want:
                got = {"c": m.c, "acc": m.acc, "pc": m.pc,
                       "stdout": bytes(m.stdout), "stderr": bytes(m.stderr)}[key]
                if want.pop(key) != got:
                    fail.append("%s: got %r" % (key, got))
        if "mem" in want:
            for addr, data in want.pop("mem").items():
                got = bytes(m.ram[addr - RAM_BASE:addr - RAM_BASE + len(data)])
                if got != bytes(data):
                    fail.append("mem %x: want %s got %s" % (addr, bytes(data).hex(), got.hex()))
        # every changed register must be written out by hand, and match
        wregs = {reg(k): v & MASK32 for k, v in want.items()}
        changed = {r for r in range(1, 32) if m.x[r] != self.regs.get(r, 0)}
        if not changed <= set(wregs):
            fail.append("changed registers %s not all in want %s" % (sorted(changed), sorted(wregs)))
        for r, v in wregs.items():
            if m.x[r] != v:
                fail.append("x%d: want %s got %s" % (r, h32(v), h32(m.x[r])))
        if fail:
            raise SystemExit("example %s disagrees with the hand-written values:\n  %s"
                             % (self.name, "\n  ".join(fail)))


def toks(*texts):
    """Hand-written token texts; 'W(0x12345678)' expands per trace.md §3."""
    out = []
    for t in texts:
        m = re.fullmatch(r"([WAS])(\d?)\((0x[0-9a-f]+)\)", t)
        if m and (m.group(2) == "" or m.group(1) == "S"):
            v = int(m.group(3), 16)
            n = 4 if m.group(2) == "" else int(m.group(2))
            kind = m.group(1)
            out += ["%s%d(0x%02x)" % (kind, i, (v >> (8 * i)) & 0xFF) for i in range(n)]
        else:
            out.append(t)
    return out


def ac_hand(acc):
    """AC0..AC11 texts of a hand-computed accumulator value."""
    return ["AC%d(0x%02x)" % (i, (acc >> (8 * i)) & 0xFF) for i in range(12)]


def dq_hand(quotient_bits):
    """DQ texts from a hand-derived quotient (bit i of `quotient_bits` = q_i)."""
    return ["DQ(%d)" % (2 * i + ((quotient_bits >> i) & 1)) for i in range(31, -1, -1)]


# ============================================================ the examples
# Each list is one file, scalar_<class>.json. Values in want= are worked by
# hand from the spec; comments show the working where it is not obvious.

def one(name, desc, line, regs, rd_name, value, edge=False, **kw):
    """A single register-writing instruction; `value` is the hand result."""
    want = {rd_name: value} if reg(rd_name) != 0 else {}
    want["tokens"] = toks("W(0x%08x)" % value) if reg(rd_name) else ["NOP(0)"]
    want.update(kw.pop("want", {}))
    return Example(name, desc, [line], regs=regs, edge=edge, want=want, **kw)


ALU = [
    one("lui_basic", "LUI puts imm << 12 in rd.", "lui a0, 0x12345", {}, "a0", 0x12345000,
        want={"tokens": toks("W0(0x00)", "W1(0x50)", "W2(0x34)", "W3(0x12)")}),
    one("lui_all_ones", "LUI with the largest immediate; low 12 bits are zero.",
        "lui t0, 0xfffff", {}, "t0", 0xFFFFF000, edge=True),
    one("lui_rd_x0", "LUI to x0 is a hint: executes, writes nothing, emits NOP(0).",
        "lui x0, 0x12345", {}, "x0", 0, edge=True, want={"tokens": ["NOP(0)"]}),
    Example("auipc_zero_and_wrap",
            "AUIPC adds imm << 12 to its own pc: 0x10000 + 0 at 0x10000, then "
            "0x10004 + 0xfffff000 wraps to 0x0000f004.",
            ["auipc a0, 0", "auipc a1, 0xfffff"], edge=True,
            want={"a0": 0x00010000, "a1": 0x0000F004}),
    one("auipc_high", "AUIPC with imm_u = 0x80000000.", "auipc a0, 0x80000", {}, "a0",
        0x80010000),
    Example("lui_addi_pair", "li a0, 0x12344fff as LUI 0x12345 then ADDI -1 (the "
            "sign-extended low part borrows from the upper part).",
            ["lui a0, 0x12345", "addi a0, a0, -1"], edge=True,
            want={"a0": 0x12344FFF, "tokens": toks("W(0x12345000)", "W(0x12344fff)")}),
    one("auipc_rd_x0", "AUIPC to x0 emits NOP(0).", "auipc x0, 1", {}, "x0", 0, edge=True,
        want={"tokens": ["NOP(0)"]}),
    one("addi_minus_one", "ADDI sign-extends its immediate: 0 + (-1).",
        "addi a0, x0, -1", {}, "a0", 0xFFFFFFFF),
    one("addi_overflow", "ADDI wraps modulo 2^32: 0x7fffffff + 1.",
        "addi a0, a1, 1", {"a1": 0x7FFFFFFF}, "a0", 0x80000000, edge=True),
    one("addi_min_imm", "ADDI with the most negative immediate -2048.",
        "addi a0, a1, -2048", {"a1": 0x1000}, "a0", 0x00000800, edge=True),
    one("addi_canonical_nop", "addi x0, x0, 0 (the canonical NOP) emits NOP(0), id 7680.",
        "addi x0, x0, 0", {}, "x0", 0, edge=True, want={"ids": [11520, 11264, 7680]}),
    one("addi_rd_x0", "ADDI to x0 with a nonzero result still emits only NOP(0).",
        "addi x0, a1, 5", {"a1": 7}, "x0", 0, edge=True, want={"tokens": ["NOP(0)"]}),
    one("slti_negative", "SLTI is signed: -1 < 0.", "slti a0, a1, 0",
        {"a1": 0xFFFFFFFF}, "a0", 1),
    one("slti_equal", "SLTI with equal operands gives 0: -1 < -1 is false.",
        "slti a0, a1, -1", {"a1": 0xFFFFFFFF, "a0": 0x55}, "a0", 0, edge=True),
    one("slti_int_min", "SLTI: INT32_MIN < 2047.", "slti a0, a1, 2047",
        {"a1": 0x80000000}, "a0", 1, edge=True),
    one("sltiu_minus_one", "SLTIU sign-extends the immediate first, then compares "
        "unsigned: 5 < 0xffffffff.", "sltiu a0, a1, -1", {"a1": 5}, "a0", 1, edge=True),
    one("sltiu_max_vs_minus_one", "SLTIU: 0xffffffff < 0xffffffff is false.",
        "sltiu a0, a1, -1", {"a1": 0xFFFFFFFF, "a0": 9}, "a0", 0, edge=True),
    one("sltiu_seqz", "sltiu rd, rs, 1 is seqz: 0 < 1.", "sltiu a0, a1, 1", {}, "a0", 1),
    one("sltiu_minus_2048", "SLTIU with imm -2048 compares with 0xfffff800: "
        "0xfffff7ff < 0xfffff800.", "sltiu a0, a1, -2048", {"a1": 0xFFFFF7FF}, "a0", 1,
        edge=True),
    one("xori_not", "xori rd, rs, -1 is bitwise NOT (immediate sign-extended).",
        "xori a0, a1, -1", {"a1": 0x12345678}, "a0", 0xEDCBA987, edge=True),
    one("xori_basic", "XORI with a positive immediate.", "xori a0, a1, 0x0ff",
        {"a1": 0x0000F0F0}, "a0", 0x0000F00F),
    one("ori_positive", "ORI with 0x7ff.", "ori a0, a1, 0x7ff", {"a1": 0x12340000}, "a0",
        0x123407FF),
    one("ori_negative", "ORI with -2048 sets bits 31..11.", "ori a0, a1, -2048",
        {"a1": 0x12340000}, "a0", 0xFFFFF800, edge=True),
    one("andi_byte", "ANDI 0xff keeps the low byte.", "andi a0, a1, 0xff",
        {"a1": 0x12345678}, "a0", 0x00000078),
    one("andi_negative", "ANDI -16 clears the low four bits and keeps the rest.",
        "andi a0, a1, -16", {"a1": 0x12345678}, "a0", 0x12345670, edge=True),
    one("andi_minus_2048", "ANDI -2048 (0xfffff800).", "andi a0, a1, -2048",
        {"a1": 0x12345678}, "a0", 0x12345000),
    one("add_basic", "ADD.", "add a0, a1, a2", {"a1": 0x12345678, "a2": 0x11111111},
        "a0", 0x23456789),
    one("add_wrap", "ADD wraps: 0xffffffff + 1 = 0.", "add a0, a1, a2",
        {"a1": 0xFFFFFFFF, "a2": 1, "a0": 0x77}, "a0", 0, edge=True),
    one("add_aliased", "ADD with rd = rs1 = rs2: 0x80000001 + 0x80000001.",
        "add a0, a0, a0", {"a0": 0x80000001}, "a0", 0x00000002, edge=True),
    one("sub_underflow", "SUB wraps: 0 - 1.", "sub a0, a1, a2", {"a2": 1}, "a0",
        0xFFFFFFFF, edge=True),
    one("sub_int_min", "SUB: INT32_MIN - 1 = 0x7fffffff.", "sub a0, a1, a2",
        {"a1": 0x80000000, "a2": 1}, "a0", 0x7FFFFFFF, edge=True),
    one("sub_basic", "SUB.", "sub a0, a1, a2", {"a1": 100, "a2": 58}, "a0", 42),
    one("slt_signed", "SLT: INT32_MIN < INT32_MAX.", "slt a0, a1, a2",
        {"a1": 0x80000000, "a2": 0x7FFFFFFF}, "a0", 1, edge=True),
    one("slt_signed_false", "SLT: INT32_MAX < INT32_MIN is false.", "slt a0, a1, a2",
        {"a1": 0x7FFFFFFF, "a2": 0x80000000, "a0": 3}, "a0", 0),
    one("sltu_unsigned", "SLTU: 0x80000000 < 0x7fffffff is false unsigned.",
        "sltu a0, a1, a2", {"a1": 0x80000000, "a2": 0x7FFFFFFF, "a0": 3}, "a0", 0,
        edge=True),
    one("sltu_snez", "sltu rd, x0, rs is snez: 0 < 5.", "sltu a0, x0, a2", {"a2": 5},
        "a0", 1),
    one("xor_basic", "XOR.", "xor a0, a1, a2", {"a1": 0xFF00FF00, "a2": 0x0FF00FF0},
        "a0", 0xF0F0F0F0),
    one("xor_self", "XOR of a register with itself is 0.", "xor a0, a1, a1",
        {"a1": 0xDEADBEEF, "a0": 1}, "a0", 0, edge=True),
    one("xor_all_ones", "XOR with 0xffffffff inverts.", "xor a0, a1, a2",
        {"a1": 0x0000FFFF, "a2": 0xFFFFFFFF}, "a0", 0xFFFF0000),
    one("or_basic", "OR.", "or a0, a1, a2", {"a1": 0xFF00FF00, "a2": 0x0FF00FF0},
        "a0", 0xFFF0FFF0),
    one("and_basic", "AND.", "and a0, a1, a2", {"a1": 0xFF00FF00, "a2": 0x0FF00FF0},
        "a0", 0x0F000F00),
    one("or_rd_x0", "OR to x0 emits NOP(0).", "or x0, a1, a2",
        {"a1": 1, "a2": 2}, "x0", 0, edge=True, want={"tokens": ["NOP(0)"]}),
    one("and_zero", "AND with x0 gives 0.", "and a0, a1, x0", {"a1": 0xFFFFFFFF, "a0": 5},
        "a0", 0, edge=True),
]

SHIFT = [
    one("slli_basic", "SLLI by 4.", "slli a0, a1, 4", {"a1": 0x12345678}, "a0", 0x23456780),
    one("slli_31", "SLLI by 31 keeps only bit 0, moved to bit 31.", "slli a0, a1, 31",
        {"a1": 3}, "a0", 0x80000000, edge=True),
    one("slli_0", "SLLI by 0 copies.", "slli a0, a1, 0", {"a1": 0x12345678}, "a0",
        0x12345678, edge=True),
    one("srli_31", "SRLI by 31 is logical.", "srli a0, a1, 31", {"a1": 0x80000000}, "a0", 1,
        edge=True),
    one("srli_basic", "SRLI by 8.", "srli a0, a1, 8", {"a1": 0xF0000000}, "a0", 0x00F00000),
    one("srai_31", "SRAI by 31 of a negative value gives all ones.", "srai a0, a1, 31",
        {"a1": 0x80000000}, "a0", 0xFFFFFFFF, edge=True),
    one("srai_positive", "SRAI of a positive value fills with zeros.", "srai a0, a1, 4",
        {"a1": 0x7FFFFFF0}, "a0", 0x07FFFFFF),
    one("srai_negative", "SRAI by 4 of 0x80000000.", "srai a0, a1, 4",
        {"a1": 0x80000000}, "a0", 0xF8000000),
    one("sll_basic", "SLL by 4.", "sll a0, a1, a2", {"a1": 0x0000000F, "a2": 4}, "a0",
        0x000000F0),
    one("sll_by_33", "SLL uses only X(rs2) & 31: a shift by 33 shifts by 1.",
        "sll a0, a1, a2", {"a1": 1, "a2": 33}, "a0", 2, edge=True),
    one("sll_by_32", "SLL by 32 is a shift by 0.", "sll a0, a1, a2",
        {"a1": 0x12345678, "a2": 32}, "a0", 0x12345678, edge=True),
    one("srl_by_minus_one", "SRL by 0xffffffff shifts by 31.", "srl a0, a1, a2",
        {"a1": 0x80000000, "a2": 0xFFFFFFFF}, "a0", 1, edge=True),
    one("srl_basic", "SRL by 4 is logical.", "srl a0, a1, a2", {"a1": 0xF0000000, "a2": 4},
        "a0", 0x0F000000),
    one("sra_by_36", "SRA by 36 shifts by 4, arithmetic.", "sra a0, a1, a2",
        {"a1": 0x80000010, "a2": 36}, "a0", 0xF8000001, edge=True),
    one("sra_basic", "SRA of a positive value.", "sra a0, a1, a2",
        {"a1": 0x40000000, "a2": 30}, "a0", 1),
    one("sra_rd_x0", "SRA to x0 emits NOP(0).", "sra x0, a1, a2",
        {"a1": 0x80000000, "a2": 1}, "x0", 0, edge=True, want={"tokens": ["NOP(0)"]}),
]

# Products worked by hand (64-bit two's complement where signed):
#   (-1)*(-1) = 1 -> high 0;  (-2^31)^2 = 2^62 -> high 0x40000000
#   -2^31 * (2^31-1) = -2^62 + 2^31 = 0xc0000000_80000000
#   (2^31-1)^2 = 0x3fffffff_00000001;  (2^32-1)^2 = 0xfffffffe_00000001
#   MULHSU -1 * (2^32-1) = -(2^32-1) = 0xffffffff_00000001
#   MULHSU -2^31 * (2^32-1) = -2^63 + 2^31 = 0x80000000_80000000
#   MULHSU 2 * (2^32-1) = 0x1_fffffffe
MUL = [
    one("mul_low_of_all_ones", "MUL: low word of 0xffffffff * 0xffffffff.",
        "mul a0, a1, a2", {"a1": 0xFFFFFFFF, "a2": 0xFFFFFFFF}, "a0", 1, edge=True),
    one("mul_basic", "MUL: 0x00010001^2 = 0x1_00020001, low word.", "mul a0, a1, a2",
        {"a1": 0x00010001, "a2": 0x00010001}, "a0", 0x00020001),
    one("mul_negative", "MUL: -3 * 7 = -21.", "mul a0, a1, a2",
        {"a1": 0xFFFFFFFD, "a2": 7}, "a0", 0xFFFFFFEB),
    one("mul_rd_x0", "MUL to x0 emits NOP(0).", "mul x0, a1, a2", {"a1": 3, "a2": 3},
        "x0", 0, edge=True, want={"tokens": ["NOP(0)"]}),
    one("mulh_minus_one_squared", "MULH: (-1)*(-1) = 1, high word 0.",
        "mulh a0, a1, a2", {"a1": 0xFFFFFFFF, "a2": 0xFFFFFFFF, "a0": 0x55}, "a0", 0,
        edge=True),
    one("mulh_int_min_squared", "MULH: (-2^31)^2 = 2^62.", "mulh a0, a1, a2",
        {"a1": 0x80000000, "a2": 0x80000000}, "a0", 0x40000000, edge=True),
    one("mulh_int_min_times_max", "MULH: -2^31 * (2^31-1) = 0xc0000000_80000000.",
        "mulh a0, a1, a2", {"a1": 0x80000000, "a2": 0x7FFFFFFF}, "a0", 0xC0000000,
        edge=True),
    one("mulh_small_negative", "MULH: -3 * 7 = -21, high word all ones.",
        "mulh a0, a1, a2", {"a1": 0xFFFFFFFD, "a2": 7}, "a0", 0xFFFFFFFF),
    one("mulh_max_squared", "MULH: (2^31-1)^2 = 0x3fffffff_00000001.", "mulh a0, a1, a2",
        {"a1": 0x7FFFFFFF, "a2": 0x7FFFFFFF}, "a0", 0x3FFFFFFF),
    one("mulhsu_minus_one", "MULHSU: rs1 = -1 signed, rs2 = 0xffffffff unsigned: "
        "-(2^32-1) = 0xffffffff_00000001.", "mulhsu a0, a1, a2",
        {"a1": 0xFFFFFFFF, "a2": 0xFFFFFFFF}, "a0", 0xFFFFFFFF, edge=True),
    one("mulhsu_int_min", "MULHSU: -2^31 * (2^32-1) = 0x80000000_80000000.",
        "mulhsu a0, a1, a2", {"a1": 0x80000000, "a2": 0xFFFFFFFF}, "a0", 0x80000000,
        edge=True),
    one("mulhsu_rs2_unsigned", "MULHSU: 2 * 0xffffffff (unsigned) = 0x1_fffffffe.",
        "mulhsu a0, a1, a2", {"a1": 2, "a2": 0xFFFFFFFF}, "a0", 1, edge=True),
    one("mulhsu_negative_times_one", "MULHSU: -1 * 1 = -1, high word all ones.",
        "mulhsu a0, a1, a2", {"a1": 0xFFFFFFFF, "a2": 1}, "a0", 0xFFFFFFFF),
    one("mulhu_all_ones", "MULHU: (2^32-1)^2 = 0xfffffffe_00000001.", "mulhu a0, a1, a2",
        {"a1": 0xFFFFFFFF, "a2": 0xFFFFFFFF}, "a0", 0xFFFFFFFE, edge=True),
    one("mulhu_basic", "MULHU: 0x80000000 * 2 = 0x1_00000000.", "mulhu a0, a1, a2",
        {"a1": 0x80000000, "a2": 2}, "a0", 1),
    one("mulhu_no_high", "MULHU: 0xffffffff * 1 has high word 0.", "mulhu a0, a1, a2",
        {"a1": 0xFFFFFFFF, "a2": 1, "a0": 3}, "a0", 0),
    Example("mulh_mul_pair", "The full signed 64-bit product -2 * 3 = -6: MULH then MUL "
            "(the recommended order).", ["mulh a3, a1, a2", "mul a0, a1, a2"],
            regs={"a1": 0xFFFFFFFE, "a2": 3}, want={"a3": 0xFFFFFFFF, "a0": 0xFFFFFFFA}),
]


def div1(name, desc, line, a, b, value, qbits, edge=False, rd="a0"):
    """One division: `qbits` is the hand-derived quotient of |a| / |b| (for
    DIVU/REMU of a / b) used for the DQ tokens; `value` the hand result."""
    want = {"tokens": dq_hand(qbits) + (toks("W(0x%08x)" % value) if reg(rd) else ["NOP(0)"])}
    if reg(rd):
        want[rd] = value
    regs = {"a1": a, "a2": b}
    if reg(rd) and value == 0:
        regs[rd] = 0x55            # so that the write of 0 is visible
    return Example(name, desc, [line], regs=regs, edge=edge, want=want)


DIV = [
    div1("divu_7_2", "DIVU 7 / 2 = 3. DQ: bits 31..2 give q_i = 0 (DQ(2i)); "
         "i = 1: r = 3 >= 2, q = 1 (DQ(3)); i = 0: r = 3, q = 1 (DQ(1)).",
         "divu a0, a1, a2", 7, 2, 3, 3),
    div1("remu_7_2", "REMU 7 % 2 = 1, same DQ tokens as DIVU 7 / 2.", "remu a0, a1, a2",
         7, 2, 1, 3),
    div1("div_by_zero", "DIV by zero gives -1; with ub = 0 every q_i is 1.",
         "div a0, a1, a2", 5, 0, 0xFFFFFFFF, 0xFFFFFFFF, edge=True),
    div1("divu_by_zero", "DIVU by zero gives 2^32 - 1.", "divu a0, a1, a2", 0x12345678, 0,
         0xFFFFFFFF, 0xFFFFFFFF, edge=True),
    div1("rem_by_zero", "REM by zero gives the dividend (-7); DQ of |a| = 7 by 0: all ones.",
         "rem a0, a1, a2", 0xFFFFFFF9, 0, 0xFFFFFFF9, 0xFFFFFFFF, edge=True),
    div1("remu_by_zero", "REMU by zero gives the dividend.", "remu a0, a1, a2",
         0x80000000, 0, 0x80000000, 0xFFFFFFFF, edge=True),
    div1("div_overflow", "DIV INT32_MIN / -1 = INT32_MIN. DQ are of 2^31 / 1: q_31 = 1 "
         "(DQ(63)), all other bits 0.", "div a0, a1, a2", 0x80000000, 0xFFFFFFFF,
         0x80000000, 0x80000000, edge=True),
    div1("rem_overflow", "REM INT32_MIN % -1 = 0; DQ as for DIV.", "rem a0, a1, a2",
         0x80000000, 0xFFFFFFFF, 0, 0x80000000, edge=True),
    div1("div_negative_dividend", "DIV -7 / 2 = -3 (rounded toward zero); DQ of 7 / 2.",
         "div a0, a1, a2", 0xFFFFFFF9, 2, 0xFFFFFFFD, 3, edge=True),
    div1("rem_negative_dividend", "REM -7 % 2 = -1 (sign of the dividend).",
         "rem a0, a1, a2", 0xFFFFFFF9, 2, 0xFFFFFFFF, 3, edge=True),
    div1("div_negative_divisor", "DIV 7 / -2 = -3.", "div a0, a1, a2", 7, 0xFFFFFFFE,
         0xFFFFFFFD, 3),
    div1("rem_negative_divisor", "REM 7 % -2 = 1.", "rem a0, a1, a2", 7, 0xFFFFFFFE, 1, 3),
    div1("div_both_negative", "DIV -100 / -7 = 14, REM would be -2; DQ of 100 / 7.",
         "div a0, a1, a2", 0xFFFFFF9C, 0xFFFFFFF9, 14, 14),
    div1("rem_both_negative", "REM -100 % -7 = -2.", "rem a0, a1, a2", 0xFFFFFF9C,
         0xFFFFFFF9, 0xFFFFFFFE, 14),
    div1("divu_large", "DIVU 0xfffffff9 / 2 = 0x7ffffffc (unsigned, not -7 / 2).",
         "divu a0, a1, a2", 0xFFFFFFF9, 2, 0x7FFFFFFC, 0x7FFFFFFC, edge=True),
    div1("remu_large", "REMU 0xfffffff9 % 2 = 1.", "remu a0, a1, a2", 0xFFFFFFF9, 2, 1,
         0x7FFFFFFC),
    div1("divu_small_by_large", "DIVU 0x80000000 / 0xffffffff = 0: every q_i = 0.",
         "divu a0, a1, a2", 0x80000000, 0xFFFFFFFF, 0, 0, edge=True),
    div1("remu_small_by_large", "REMU 0x80000000 % 0xffffffff = 0x80000000.",
         "remu a0, a1, a2", 0x80000000, 0xFFFFFFFF, 0x80000000, 0),
    div1("div_int_min_by_one", "DIV INT32_MIN / 1: |a| = 2^31 as unsigned.",
         "div a0, a1, a2", 0x80000000, 1, 0x80000000, 0x80000000),
    div1("div_int_min_by_two", "DIV INT32_MIN / 2 = -2^30; DQ of 2^31 / 2.",
         "div a0, a1, a2", 0x80000000, 2, 0xC0000000, 0x40000000, edge=True),
    div1("div_rd_x0", "DIV to x0: 32 DQ tokens then NOP(0).", "div x0, a1, a2", 9, 3,
         3, 3, edge=True, rd="x0"),
    div1("divu_equal", "DIVU a / a = 1: DQ(1) last.", "divu a0, a1, a2", 0xDEADBEEF,
         0xDEADBEEF, 1, 1),
    div1("div_int_min_by_int_min", "DIV INT32_MIN / INT32_MIN = 1; DQ of 2^31 / 2^31.",
         "div a0, a1, a2", 0x80000000, 0x80000000, 1, 1, edge=True),
    div1("remu_mixed_bits", "REMU 1000000 % 7 = 1 (7 * 142857 = 999999); the DQ tokens "
         "spell 142857 = 0x00022e09.", "remu a0, a1, a2", 1000000, 7, 1, 142857),
    div1("divu_mixed_bits", "DIVU 1000000 / 7 = 142857.", "divu a0, a1, a2", 1000000, 7,
         142857, 142857),
    div1("divu_by_one", "DIVU 0xffffffff / 1: every q_i = 1, like a division by zero, "
         "but the result is the dividend.", "divu a0, a1, a2", 0xFFFFFFFF, 1, 0xFFFFFFFF,
         0xFFFFFFFF, edge=True),
    div1("rem_negative_exact", "REM -8 % 2 = 0 (no negative zero); DQ of 8 / 2.",
         "rem a0, a1, a2", 0xFFFFFFF8, 2, 0, 4, edge=True),
]

# Branch examples share a shape: the branch at 0x10000, then
#   0x10004: addi a2, x0, 1   (runs only when not taken)
#   0x10008: addi a3, x0, 2   (the taken target)
# and run two instructions.


def br(name, desc, cond, rs1_val, rs2_val, taken, edge=False):
    asm = ["%s a0, a1, .+8" % cond, "addi a2, x0, 1", "addi a3, x0, 2"]
    if taken:
        want = {"a3": 2, "pc": 0x1000C, "tokens": ["BR(1)"] + toks("W(0x00000002)")}
    else:
        want = {"a2": 1, "pc": 0x10008, "tokens": ["BR(0)"] + toks("W(0x00000001)")}
    return Example(name, desc, asm, regs={"a0": rs1_val, "a1": rs2_val}, insns=2,
                   edge=edge, want=want)


BRANCH = [
    br("beq_taken", "BEQ 5 == 5: taken, skips one instruction.", "beq", 5, 5, True),
    br("beq_not_taken", "BEQ 5 == 6: not taken.", "beq", 5, 6, False),
    br("bne_taken", "BNE 5 != 6: taken.", "bne", 5, 6, True),
    br("bne_not_taken", "BNE 0xffffffff != 0xffffffff: not taken.", "bne", 0xFFFFFFFF,
       0xFFFFFFFF, False, edge=True),
    br("blt_signed_taken", "BLT is signed: -1 < 1.", "blt", 0xFFFFFFFF, 1, True, edge=True),
    br("blt_equal_not_taken", "BLT with equal operands: not taken.", "blt", 7, 7, False),
    br("blt_int_min", "BLT: INT32_MIN < INT32_MAX.", "blt", 0x80000000, 0x7FFFFFFF, True,
       edge=True),
    br("bge_signed_taken", "BGE is signed: 1 >= -1.", "bge", 1, 0xFFFFFFFF, True),
    br("bge_equal_taken", "BGE with equal operands: taken.", "bge", 0x80000000, 0x80000000,
       True, edge=True),
    br("bge_not_taken", "BGE: INT32_MIN >= INT32_MAX is false.", "bge", 0x80000000,
       0x7FFFFFFF, False),
    br("bltu_unsigned_not_taken", "BLTU is unsigned: 0xffffffff < 1 is false.", "bltu",
       0xFFFFFFFF, 1, False, edge=True),
    br("bltu_taken", "BLTU: 1 < 0xffffffff.", "bltu", 1, 0xFFFFFFFF, True),
    br("bltu_zero", "BLTU: 0 < 0 is false.", "bltu", 0, 0, False),
    br("bgeu_taken", "BGEU: 0xffffffff >= 1.", "bgeu", 0xFFFFFFFF, 1, True, edge=True),
    br("bgeu_equal", "BGEU: 0 >= 0.", "bgeu", 0, 0, True, edge=True),
    br("bgeu_not_taken", "BGEU: 0 >= 1 is false.", "bgeu", 0, 1, False),
    Example("bne_loop", "A two-iteration countdown loop: ADDI, BNE taken backwards, "
            "ADDI, BNE not taken, then the instruction after the loop.",
            ["addi a0, a0, -1", "bne a0, x0, .-4", "addi a1, x0, 7"],
            regs={"a0": 2}, insns=5,
            want={"a0": 0, "a1": 7, "pc": 0x1000C,
                  "tokens": toks("W(0x00000001)", "BR(1)", "W(0x00000000)", "BR(0)",
                                 "W(0x00000007)")}),
    Example("beq_misaligned_target", "A taken branch to pc + 6 (not a multiple of 4) "
            "traps FETCH_MISALIGNED at the branch; pc stays at the branch.",
            ["beq x0, x0, .+6"], edge=True,
            want={"end": "trap 2", "pc": 0x10000, "tokens": ["TRAP(2)"]}),
    Example("bne_misaligned_not_taken", "A branch that is not taken does not trap, "
            "even with a misaligned target.",
            ["bne x0, x0, .+6", "addi a0, x0, 1"], edge=True,
            want={"a0": 1, "pc": 0x10008, "tokens": ["BR(0)"] + toks("W(0x00000001)")}),
    Example("bgeu_target_below_ram", "A taken branch from 0x10000 to 0xfff8 (below RAM): "
            "BR(1), then the next fetch traps FETCH_FAULT.",
            ["bgeu x0, x0, .-8"], insns=2, edge=True,
            want={"end": "trap 3", "pc": 0x0000FFF8, "tokens": ["BR(1)", "TRAP(3)"]}),
    Example("blt_max_backward", "BLT with the most negative offset -4096, from 0x11000 "
            "to 0x10000 (B-format immediate bit 12).", ["blt a0, a1, .-4096"],
            pc=0x11000, regs={"a0": 0xFFFFFFFF, "a1": 0}, edge=True,
            want={"pc": 0x10000, "tokens": ["BR(1)"]}),
    Example("bge_forward_4092", "BGE taken by +4092, the largest aligned forward offset.",
            ["bge a0, a1, .+4092"], regs={"a0": 3, "a1": 3}, edge=True,
            want={"pc": 0x10FFC, "tokens": ["BR(1)"]}),
    Example("bge_forward_4094_misaligned", "BGE taken by +4094, the largest B offset: "
            "not a multiple of 4, TRAP(2).", ["bge a0, a1, .+4094"], regs={"a0": 3, "a1": 3},
            edge=True, want={"end": "trap 2", "pc": 0x10000, "tokens": ["TRAP(2)"]}),
]

JUMP = [
    Example("jal_forward", "JAL writes pc + 4 and jumps to pc + 8.",
            ["jal ra, .+8", "addi a0, x0, 1", "addi a1, x0, 2"], insns=2,
            want={"ra": 0x10004, "a1": 2, "pc": 0x1000C,
                  "tokens": toks("W(0x00010004)", "W(0x00000002)")}),
    Example("jal_x0", "jal x0 (j) emits NOP(0).", ["jal x0, .+8", "addi a0, x0, 1",
                                                    "addi a1, x0, 2"], insns=2,
            want={"a1": 2, "pc": 0x1000C, "tokens": ["NOP(0)"] + toks("W(0x00000002)")}),
    Example("jal_backward", "j forward to a JAL that links and jumps backwards.",
            ["jal x0, .+8", "addi a0, x0, 5", "jal ra, .-4"], insns=3,
            want={"ra": 0x1000C, "a0": 5, "pc": 0x10008,
                  "tokens": ["NOP(0)"] + toks("W(0x0001000c)", "W(0x00000005)")}),
    Example("jal_misaligned", "JAL to pc + 6 traps FETCH_MISALIGNED and writes no "
            "register.", ["jal ra, .+6"], regs={"ra": 0xDEADBEEF}, edge=True,
            want={"end": "trap 2", "pc": 0x10000, "tokens": ["TRAP(2)"]}),
    Example("jal_to_zero", "JAL from 0x10000 to address 0 (outside RAM): the jump "
            "retires and writes ra; the next fetch traps FETCH_FAULT.",
            ["jal ra, .-0x10000"], insns=2, edge=True,
            want={"ra": 0x10004, "end": "trap 3", "pc": 0,
                  "tokens": toks("W(0x00010004)") + ["TRAP(3)"]}),
    Example("jal_to_ram_end", "JAL from 0x10fff0 to 0x110000 = RAM_END: the fetch "
            "there traps FETCH_FAULT.", ["jal t0, .+16"], pc=0x10FFF0, insns=2,
            edge=True, want={"t0": 0x10FFF4, "end": "trap 3", "pc": 0x110000,
                             "tokens": toks("W(0x0010fff4)") + ["TRAP(3)"]}),
    Example("jalr_basic", "JALR jumps to X(rs1) + imm and links.",
            ["jalr ra, 4(a0)", "addi a1, x0, 1", "addi a2, x0, 2"],
            regs={"a0": 0x10004}, insns=2,
            want={"ra": 0x10004, "a2": 2, "pc": 0x1000C,
                  "tokens": toks("W(0x00010004)", "W(0x00000002)")}),
    Example("jal_max_forward", "JAL by +0xffffc (J-format immediate, near its maximum "
            "0xffffe) from 0x10000 to 0x10fffc, the last word of RAM.",
            ["jal ra, .+0xffffc"], edge=True,
            want={"ra": 0x10004, "pc": 0x10FFFC, "tokens": toks("W(0x00010004)")}),
    Example("jal_min_offset", "jal x0 by -0x100000 (the most negative J offset) from "
            "0x10000 to 0xfff10000: NOP(0), then the fetch there traps FETCH_FAULT.",
            ["jal x0, .-0x100000"], insns=2, edge=True,
            want={"end": "trap 3", "pc": 0xFFF10000, "tokens": ["NOP(0)", "TRAP(3)"]}),
    Example("jalr_max_imm_odd_sum", "JALR with imm 2047: 0xf80a + 0x7ff = 0x10009, bit 0 "
            "cleared: 0x10008 (rs1 itself is outside RAM; only the target matters).",
            ["jalr ra, 2047(a0)", "addi a1, x0, 1", "addi a2, x0, 2"],
            regs={"a0": 0xF80A}, insns=2, edge=True,
            want={"ra": 0x10004, "a2": 2, "pc": 0x1000C,
                  "tokens": toks("W(0x00010004)", "W(0x00000002)")}),
    Example("jalr_misaligned_rd_is_rs1", "jalr ra, 2(ra) with ra = 0x10000: target "
            "0x10002 traps FETCH_MISALIGNED and ra keeps its value.", ["jalr ra, 2(ra)"],
            regs={"ra": 0x10000}, edge=True,
            want={"end": "trap 2", "pc": 0x10000, "tokens": ["TRAP(2)"]}),
    Example("jalr_clears_bit0", "JALR clears bit 0 of the target: 0x10009 -> 0x10008.",
            ["jalr ra, 0(a0)", "addi a1, x0, 1", "addi a2, x0, 2"],
            regs={"a0": 0x10009}, insns=2, edge=True,
            want={"ra": 0x10004, "a2": 2, "pc": 0x1000C}),
    Example("jalr_clears_bit0_after_add", "JALR adds first, then clears bit 0: "
            "0x10007 + 1 = 0x10008.", ["jalr ra, 1(a0)", "addi a1, x0, 1",
                                       "addi a2, x0, 2"],
            regs={"a0": 0x10007}, insns=2, edge=True,
            want={"ra": 0x10004, "a2": 2, "pc": 0x1000C}),
    Example("jalr_misaligned", "JALR to 0x1000a (bit 1 set) traps FETCH_MISALIGNED; "
            "ra is not written.", ["jalr ra, 0(a0)"], regs={"a0": 0x1000A, "ra": 0x1234},
            edge=True, want={"end": "trap 2", "pc": 0x10000, "tokens": ["TRAP(2)"]}),
    Example("jalr_misaligned_odd", "JALR to 0x10003: bit 0 is cleared, giving 0x10002, "
            "still misaligned.", ["jalr ra, 0(a0)"], regs={"a0": 0x10003}, edge=True,
            want={"end": "trap 2", "pc": 0x10000, "tokens": ["TRAP(2)"]}),
    Example("jalr_rs1_is_rd", "jalr ra, 0(ra): X(ra) is read before ra is written.",
            ["jalr ra, 0(ra)", "addi x0, x0, 0", "addi a0, x0, 3"],
            regs={"ra": 0x10008}, insns=2, edge=True,
            want={"ra": 0x10004, "a0": 3, "pc": 0x1000C,
                  "tokens": toks("W(0x00010004)", "W(0x00000003)")}),
    Example("jalr_ret", "jalr x0, -8(a0) (like ret): NOP(0), negative offset.",
            ["jalr x0, -8(a0)", "addi a1, x0, 1", "addi a2, x0, 2"],
            regs={"a0": 0x10010}, insns=2,
            want={"a2": 2, "pc": 0x1000C, "tokens": ["NOP(0)"] + toks("W(0x00000002)")}),
    Example("jalr_wraps_to_zero", "JALR: 0xffffffff + 1 wraps to 0; the jump retires, "
            "the fetch at 0 traps FETCH_FAULT.", ["jalr ra, 1(a0)"],
            regs={"a0": 0xFFFFFFFF}, insns=2, edge=True,
            want={"ra": 0x10004, "end": "trap 3", "pc": 0,
                  "tokens": toks("W(0x00010004)") + ["TRAP(3)"]}),
]

LOAD_DATA = [(DATA, [0x00, 0x80, 0xFF, 0x7F, 0x78, 0x56, 0x34, 0x12])]
# bytes at 0x20000: 00 80 ff 7f 78 56 34 12


def ld(name, desc, line, value, a1=DATA, edge=False, rd="a0", addr=None, extra_regs=None):
    addr = a1 if addr is None else addr
    regs = {"a1": a1}
    regs.update(extra_regs or {})
    want = {"tokens": toks("A(0x%08x)" % addr) + (toks("W(0x%08x)" % value) if reg(rd) else ["NOP(0)"])}
    if reg(rd):
        want[rd] = value
        if value == 0:
            regs[rd] = 0x55
    return Example(name, desc, [line], regs=regs, mem=LOAD_DATA, edge=edge, want=want)


def ldtrap(name, desc, line, a1, addr, code, edge=True, mem=None):
    return Example(name, desc, [line], regs={"a1": a1, "a0": 0x55}, mem=mem or LOAD_DATA,
                   edge=edge,
                   want={"end": "trap %d" % code, "pc": 0x10000,
                         "tokens": toks("A(0x%08x)" % addr) + ["TRAP(%d)" % code]})


LOAD = [
    ld("lb_negative", "LB sign-extends 0x80.", "lb a0, 1(a1)", 0xFFFFFF80, addr=DATA + 1,
       edge=True),
    ld("lb_positive", "LB of 0x7f.", "lb a0, 3(a1)", 0x0000007F, addr=DATA + 3),
    ld("lbu_high_bit", "LBU zero-extends 0x80.", "lbu a0, 1(a1)", 0x00000080, addr=DATA + 1),
    ld("lh_negative", "LH sign-extends 0x8000.", "lh a0, 0(a1)", 0xFFFF8000, edge=True),
    ld("lh_positive", "LH of 0x7fff.", "lh a0, 2(a1)", 0x00007FFF, addr=DATA + 2),
    ld("lhu_high_bit", "LHU zero-extends 0x8000.", "lhu a0, 0(a1)", 0x00008000),
    ld("lw_basic", "LW is little-endian.", "lw a0, 4(a1)", 0x12345678, addr=DATA + 4),
    ld("lw_mixed", "LW of bytes 00 80 ff 7f.", "lw a0, 0(a1)", 0x7FFF8000),
    ld("lw_negative_offset", "LW with a negative offset.", "lw a0, -4(a2)", 0x12345678,
       a1=0, addr=DATA + 4, extra_regs={"a2": DATA + 8}),
    ld("lb_max_offset", "LB with the largest offset 2047.", "lb a0, 2047(a1)", 0x0000007F,
       a1=DATA + 3 - 2047, addr=DATA + 3, edge=True),
    ld("lw_min_offset", "LW with the most negative offset -2048.", "lw a0, -2048(a1)",
       0x12345678, a1=DATA + 4 + 2048, addr=DATA + 4, edge=True),
    ld("lw_rd_is_rs1", "LW with rd = rs1.", "lw a1, 4(a1)", 0x12345678, addr=DATA + 4,
       rd="a1"),
    ld("lb_rd_x0", "A load to x0 still emits A tokens, then NOP(0).", "lb x0, 1(a1)", 0,
       addr=DATA + 1, rd="x0", edge=True),
    Example("lbu_last_byte_of_ram", "LBU of the last byte of RAM, 0x10ffff.",
            ["lbu a0, 0(a1)"], regs={"a1": 0x10FFFF}, mem=[(0x10FFFF, [0xAB])], edge=True,
            want={"a0": 0xAB, "tokens": toks("A(0x0010ffff)", "W(0x000000ab)")}),
    Example("lw_last_word_of_ram", "LW of the last word of RAM, 0x10fffc.",
            ["lw a0, 0(a1)"], regs={"a1": 0x10FFFC},
            mem=[(0x10FFFC, [0xEF, 0xBE, 0xAD, 0xDE])], edge=True,
            want={"a0": 0xDEADBEEF}),
    Example("lhu_last_half_of_ram", "LHU of the last halfword of RAM, 0x10fffe.",
            ["lhu a0, 0(a1)"], regs={"a1": 0x10FFFE},
            mem=[(0x10FFFC, [0xEF, 0xBE, 0xAD, 0xDE])], edge=True,
            want={"a0": 0xDEAD}),
    ldtrap("lw_misaligned", "LW at 0x20002: A tokens, then TRAP(4); a0 unchanged.",
           "lw a0, 0(a1)", DATA + 2, DATA + 2, 4),
    ldtrap("lh_misaligned", "LH at 0x20001 traps LOAD_MISALIGNED.", "lh a0, 1(a1)", DATA,
           DATA + 1, 4),
    ldtrap("lhu_misaligned", "LHU at 0x20003 traps LOAD_MISALIGNED.", "lhu a0, 0(a1)",
           DATA + 3, DATA + 3, 4),
    ldtrap("lw_below_ram", "LW at 0xfffc (below RAM) traps LOAD_FAULT.", "lw a0, 0(a1)",
           0xFFFC, 0xFFFC, 5),
    ldtrap("lb_at_ram_end", "LB at 0x110000 = RAM_END traps LOAD_FAULT.", "lb a0, 0(a1)",
           0x110000, 0x110000, 5),
    ldtrap("lbu_below_ram", "LBU at 0xffff traps LOAD_FAULT.", "lbu a0, 0(a1)",
           0xFFFF, 0xFFFF, 5),
    ldtrap("lw_misaligned_beats_fault", "LW at 0x10fffe is misaligned and also runs past "
           "RAM_END: misalignment is checked first, TRAP(4).", "lw a0, 0(a1)",
           0x10FFFE, 0x10FFFE, 4),
    ldtrap("lh_misaligned_beats_fault", "LH at 0x10ffff: misaligned and past RAM_END, "
           "TRAP(4).", "lh a0, 0(a1)", 0x10FFFF, 0x10FFFF, 4),
    ldtrap("lw_address_wraps", "LW 4(a1) with a1 = 0xfffffffc: the address wraps to 0, "
           "A(0x00000000), TRAP(5).", "lw a0, 4(a1)", 0xFFFFFFFC, 0, 5),
    ldtrap("lw_top_of_address_space", "LW at 0xfffffffc: a + 4 = 2^32 is computed "
           "without wrap-around, so out of range, TRAP(5).", "lw a0, 0(a1)",
           0xFFFFFFFC, 0xFFFFFFFC, 5),
    Example("lw_rd_x0_misaligned", "A load to x0 still checks its address: lw x0 at "
            "0x20002 traps LOAD_MISALIGNED.", ["lw x0, 2(a1)"], regs={"a1": DATA},
            mem=LOAD_DATA, edge=True,
            want={"end": "trap 4", "pc": 0x10000,
                  "tokens": toks("A(0x00020002)") + ["TRAP(4)"]}),
]

STORE_DATA = [(DATA, [0xAA] * 8)]


def st(name, desc, line, a1, a2, addr, n, after, edge=False):
    """`after`: hand-written bytes at 0x20000..0x20007 after the store."""
    return Example(name, desc, [line], regs={"a1": a1, "a2": a2}, mem=STORE_DATA,
                   edge=edge,
                   want={"mem": {DATA: after},
                         "tokens": toks("A(0x%08x)" % addr, "S%d(0x%08x)" % (n, a2))})


def sttrap(name, desc, line, a1, addr, code, mem=None, check_mem=None):
    mem = mem if mem is not None else STORE_DATA
    return Example(name, desc, [line], regs={"a1": a1, "a2": 0x12345678}, mem=mem,
                   edge=True, check_mem=check_mem,
                   want={"end": "trap %d" % code, "pc": 0x10000,
                         "mem": {a: bytes(d) for a, d in mem},
                         "tokens": toks("A(0x%08x)" % addr) + ["TRAP(%d)" % code]})


STORE = [
    st("sw_basic", "SW writes 4 bytes little-endian.", "sw a2, 0(a1)", DATA, 0x12345678,
       DATA, 4, [0x78, 0x56, 0x34, 0x12, 0xAA, 0xAA, 0xAA, 0xAA]),
    st("sh_basic", "SH writes the low 2 bytes at 0x20002.", "sh a2, 2(a1)", DATA,
       0x12345678, DATA + 2, 2, [0xAA, 0xAA, 0x78, 0x56, 0xAA, 0xAA, 0xAA, 0xAA]),
    st("sb_basic", "SB writes the low byte at 0x20003.", "sb a2, 3(a1)", DATA,
       0xDEADBEEF, DATA + 3, 1, [0xAA, 0xAA, 0xAA, 0xEF, 0xAA, 0xAA, 0xAA, 0xAA]),
    st("sb_odd_address", "SB to an odd address is aligned.", "sb a2, -1(a1)", DATA + 6,
       0x00000001, DATA + 5, 1, [0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0x01, 0xAA, 0xAA]),
    Example("sw_x0", "sw x0 stores zeros: S0..S3 are 0.", ["sw x0, 4(a1)"],
            regs={"a1": DATA}, mem=STORE_DATA, edge=True,
            want={"mem": {DATA: [0xAA] * 4 + [0] * 4},
                  "tokens": toks("A(0x00020004)", "S4(0x00000000)")}),
    st("sw_min_offset", "SW with the most negative offset -2048 (S-format immediate "
       "split in two fields).", "sw a2, -2048(a1)", DATA + 2048, 0x01020304, DATA, 4,
       [4, 3, 2, 1, 0xAA, 0xAA, 0xAA, 0xAA], edge=True),
    st("sb_max_offset", "SB with the largest offset 2047.", "sb a2, 2047(a1)",
       DATA + 7 - 2047, 0x000000FE, DATA + 7, 1,
       [0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xFE], edge=True),
    Example("sw_last_word_of_ram", "SW to the last word of RAM, 0x10fffc.",
            ["sw a2, 0(a1)"], regs={"a1": 0x10FFFC, "a2": 0xCAFEF00D}, edge=True,
            check_mem=[(0x10FFFC, 4)],
            want={"mem": {0x10FFFC: [0x0D, 0xF0, 0xFE, 0xCA]}}),
    Example("sh_last_half_of_ram", "SH to the last halfword of RAM, 0x10fffe.",
            ["sh a2, 0(a1)"], regs={"a1": 0x10FFFE, "a2": 0xCAFEF00D}, edge=True,
            check_mem=[(0x10FFFC, 4)],
            want={"mem": {0x10FFFC: [0, 0, 0x0D, 0xF0]}}),
    sttrap("sw_misaligned", "SW at 0x20001 traps STORE_MISALIGNED; memory unchanged.",
           "sw a2, 0(a1)", DATA + 1, DATA + 1, 6),
    sttrap("sh_misaligned", "SH at 0x20003 traps STORE_MISALIGNED.", "sh a2, 0(a1)",
           DATA + 3, DATA + 3, 6),
    sttrap("sb_at_ram_end", "SB at 0x110000 traps STORE_FAULT.", "sb a2, 0(a1)",
           0x110000, 0x110000, 7),
    sttrap("sw_below_ram", "SW at 0xfffc traps STORE_FAULT.", "sw a2, 0(a1)", 0xFFFC,
           0xFFFC, 7),
    sttrap("sw_misaligned_beats_fault", "SW at 0x10fffe: misaligned and past RAM_END, "
           "misalignment first: TRAP(6); the two bytes in RAM are unchanged.",
           "sw a2, 0(a1)", 0x10FFFE, 0x10FFFE, 6, mem=[(0x10FFFC, [1, 2, 3, 4])]),
    sttrap("sw_top_of_address_space", "SW at 0xfffffffc: out of range (33-bit sum), "
           "TRAP(7).", "sw a2, 0(a1)", 0xFFFFFFFC, 0xFFFFFFFC, 7),
    Example("sw_then_lw", "A store followed by a load of the same word.",
            ["sw a2, 0(a1)", "lw a0, 0(a1)"], regs={"a1": DATA, "a2": 0x80000001},
            want={"a0": 0x80000001, "mem": {DATA: [1, 0, 0, 0x80]},
                  "tokens": toks("A(0x00020000)", "S4(0x80000001)", "A(0x00020000)",
                                 "W(0x80000001)")},
            check_mem=[(DATA, 4)]),
    Example("sw_modifies_code", "A store to code is visible to the next fetch: SW "
            "replaces the word at 0x10008 (addi a0, x0, 1) by 0x02a00513 "
            "(addi a0, x0, 42).",
            ["sw a2, 8(a1)", "addi x0, x0, 0", "addi a0, x0, 1"],
            regs={"a1": 0x10000, "a2": 0x02A00513}, edge=True,
            check_mem=[(0x10008, 4)],
            want={"a0": 42, "mem": {0x10008: [0x13, 0x05, 0xA0, 0x02]},
                  "tokens": toks("A(0x00010008)", "S4(0x02a00513)", "NOP(0)",
                                 "W(0x0000002a)")}),
]

HI = b"Hi\n"

ECALL = [
    Example("trace_md_example", "The example of trace.md §5: addi, sw to the top of "
            "RAM, exit(-1) with status 0xff.",
            ["addi a0, x0, -1", "sw a0, 0(sp)", "ecall"],
            regs={"sp": 0x0010FFFC, "a7": 93}, check_mem=[(0x10FFFC, 4)],
            want={"a0": 0xFFFFFFFF, "end": "exit 255", "mem": {0x10FFFC: [0xFF] * 4},
                  "ids": [11520, 11264, 511, 767, 1023, 1279, 11265, 1532, 1791, 1808, 2048,
                          2559, 2815, 3071, 3327, 11266, 8191]}),
    Example("exit_zero", "exit(0).", ["ecall"], regs={"a7": 93}, edge=False,
            want={"end": "exit 0", "tokens": ["EXIT(0x00)"]}),
    Example("exit_masks_status", "exit status is a0 & 0xff: 0x12345678 -> 0x78.",
            ["ecall"], regs={"a7": 93, "a0": 0x12345678}, edge=True,
            want={"end": "exit 120", "tokens": ["EXIT(0x78)"]}),
    Example("exit_256", "exit(256) ends with status 0.", ["ecall"],
            regs={"a7": 93, "a0": 256}, edge=True,
            want={"end": "exit 0", "tokens": ["EXIT(0x00)"]}),
    Example("write_stdout_then_exit", "write(1, \"Hi\\n\", 3): OUT tokens then W(3) "
            "into a0; then exit(a0) = exit(3).",
            ["ecall", "addi a7, x0, 93", "ecall"],
            regs={"a7": 64, "a0": 1, "a1": DATA, "a2": 3}, mem=[(DATA, HI)],
            want={"a0": 3, "a7": 93, "end": "exit 3", "stdout": HI,
                  "tokens": ["OI(0x00)", "OUT(0x48)", "OI(0x01)", "OUT(0x69)",
                             "OI(0x02)", "OUT(0x0a)"]
                  + toks("W(0x00000003)", "W(0x0000005d)") + ["EXIT(0x03)"],
                  "pc_tokens": ["PCH0(0x00)", "PCL(0x00)", "PCL(0x01)", "PCL(0x02)"]}),
    Example("write_stderr", "write(2, buf, 2): ERR tokens, then W(2).", ["ecall"],
            regs={"a7": 64, "a0": 2, "a1": DATA + 1, "a2": 2}, mem=[(DATA, HI)],
            want={"a0": 2, "stderr": b"i\n",
                  "tokens": ["OI(0x00)", "ERR(0x69)", "OI(0x01)", "ERR(0x0a)"]
                  + toks("W(0x00000002)")}),
    Example("write_len_zero", "write with len = 0 writes nothing and does not check the "
            "buffer (here 0, outside RAM): W(0).", ["ecall"],
            regs={"a7": 64, "a0": 1, "a1": 0, "a2": 0}, edge=True,
            want={"a0": 0, "tokens": toks("W(0x00000000)")}),
    Example("write_bad_fd_0", "write to fd 0 traps BAD_ECALL.", ["ecall"],
            regs={"a7": 64, "a0": 0, "a1": DATA, "a2": 3}, mem=[(DATA, HI)], edge=True,
            want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
    Example("write_bad_fd_3", "write to fd 3 traps BAD_ECALL; a0 unchanged.", ["ecall"],
            regs={"a7": 64, "a0": 3, "a1": DATA, "a2": 3}, mem=[(DATA, HI)], edge=True,
            want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
    Example("write_buffer_past_ram_end", "write(1, 0x10fffe, 3): byte 0x110000 is out of "
            "range, TRAP(5) (LOAD_FAULT); no OUT tokens.", ["ecall"],
            regs={"a7": 64, "a0": 1, "a1": 0x10FFFE, "a2": 3}, edge=True,
            want={"end": "trap 5", "pc": 0x10000, "tokens": ["TRAP(5)"]}),
    Example("write_buffer_ends_at_ram_end", "write(1, 0x10fffd, 3): the last three bytes "
            "of RAM, all in range.", ["ecall"],
            regs={"a7": 64, "a0": 1, "a1": 0x10FFFD, "a2": 3},
            mem=[(0x10FFFC, b"xabc")], edge=True,
            want={"a0": 3, "stdout": b"abc",
                  "tokens": ["OI(0x00)", "OUT(0x61)", "OI(0x01)", "OUT(0x62)",
                             "OI(0x02)", "OUT(0x63)"] + toks("W(0x00000003)")}),
    Example("write_huge_len", "write(1, 0x20000, 0xffffffff): len > 65,535 traps "
            "BAD_ECALL, checked before the buffer (isa.md §5): TRAP(8).", ["ecall"],
            regs={"a7": 64, "a0": 1, "a1": DATA, "a2": 0xFFFFFFFF}, edge=True,
            want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
    Example("write_len_65536", "write(1, 0x20000, 65536): the buffer [0x20000, 0x30000) "
            "is inside RAM but len > 65,535: TRAP(8) after the pc tokens, nothing written.",
            ["ecall"], regs={"a7": 64, "a0": 1, "a1": DATA, "a2": 65536}, edge=True,
            want={"end": "trap 8", "pc": 0x10000,
                  "all_tokens": ["PCH0(0x00)", "PCL(0x00)", "TRAP(8)"]}),
    Example("write_len_65535_bad_buffer", "write(1, 0x100002, 65535): len passes the "
            "len check (<= 65,535) but the buffer ends at 0x110001, past RAM_END: TRAP(5).",
            ["ecall"], regs={"a7": 64, "a0": 1, "a1": 0x100002, "a2": 65535}, edge=True,
            want={"end": "trap 5", "pc": 0x10000,
                  "all_tokens": ["PCH0(0x00)", "PCL(0x00)", "TRAP(5)"]}),
    # 600 bytes 'A'..'Z' repeating (byte i = 0x41 + i % 26).  By hand (trace.md
    # §4.5): steps 0-1 PCH0(0x00) PCL(0x00); byte i < 256 has OI at 2 + 2i and
    # its OUT at 3 + 2i (byte 255 = 'V': 512, 513); OIH(1) at 514, then byte 256
    # ('W', 256 % 26 = 22) OI(0x00) 515, OUT 516; byte i in [256, 512) has OI
    # at 515 + 2(i - 256) (byte 511 = 'R': 1025, 1026); OIH(2) at 1027; byte
    # 512 ('S') at 1028, 1029; byte 599 ('B') OI(0x57) at 1202, OUT 1203;
    # W(600 = 0x258) at 1204..1207: 2 + 2 + 600 * 2 + 4 = 1208 tokens.
    Example("write_600_bytes_oih", "write(1, 0x20000, 600): every byte is preceded by "
            "OI(i & 0xff), and bytes 256 and 512 also by OIH(1), OIH(2) (trace.md §4.5).",
            ["ecall"], regs={"a7": 64, "a0": 1, "a1": DATA, "a2": 600},
            mem=[(DATA, bytes(0x41 + i % 26 for i in range(600)))], edge=True,
            want={"a0": 600, "stdout": bytes(0x41 + i % 26 for i in range(600)),
                  "ntokens": 1208,
                  "tokens_at": {0: "PCH0(0x00)", 1: "PCL(0x00)", 2: "OI(0x00)",
                                3: "OUT(0x41)", 4: "OI(0x01)", 5: "OUT(0x42)",
                                512: "OI(0xff)", 513: "OUT(0x56)", 514: "OIH(1)",
                                515: "OI(0x00)", 516: "OUT(0x57)", 517: "OI(0x01)",
                                1025: "OI(0xff)", 1026: "OUT(0x52)", 1027: "OIH(2)",
                                1028: "OI(0x00)", 1029: "OUT(0x53)", 1202: "OI(0x57)",
                                1203: "OUT(0x42)", 1204: "W0(0x58)", 1205: "W1(0x02)",
                                1206: "W2(0x00)", 1207: "W3(0x00)"}}),
    Example("write_buffer_below_ram", "write(2, 0xfffe, 4): starts below RAM, TRAP(5).",
            ["ecall"], regs={"a7": 64, "a0": 2, "a1": 0xFFFE, "a2": 4}, edge=True,
            want={"end": "trap 5", "pc": 0x10000, "tokens": ["TRAP(5)"]}),
    Example("write_bad_fd_and_bad_buffer", "write(7, 0, 4): both the fd and the buffer "
            "are bad; the fd is checked first (isa.md §5 and trace.md §4.5 order; see "
            "QUESTIONS.md Q2): TRAP(8).", ["ecall"],
            regs={"a7": 64, "a0": 7, "a1": 0, "a2": 4}, edge=True,
            want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
    Example("ecall_read_is_bad", "a7 = 63 (read) is not provided: TRAP(8).", ["ecall"],
            regs={"a7": 63, "a0": 0, "a1": DATA, "a2": 1}, edge=True,
            want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
    Example("ecall_zero_is_bad", "a7 = 0: TRAP(8).", ["ecall"], regs={},
            want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
    Example("ecall_number_high_bits", "a7 = 0x140 (64 plus another bit) is not write: "
            "TRAP(8).", ["ecall"], regs={"a7": 0x140, "a0": 1, "a1": DATA, "a2": 1},
            edge=True, want={"end": "trap 8", "pc": 0x10000, "tokens": ["TRAP(8)"]}),
]

FENCE = [
    Example("fence_iorw", "FENCE (iorw, iorw) has no effect: NOP(0).",
            ["fence", "addi a0, x0, 1"],
            want={"a0": 1, "tokens": ["NOP(0)"] + toks("W(0x00000001)")}),
    Example("fence_r_w", "FENCE r, w: NOP(0).", ["fence r, w"],
            want={"tokens": ["NOP(0)"]}),
    Example("fence_tso", "FENCE.TSO (fm = 1000) is a FENCE: NOP(0).", ["fence.tso"],
            edge=True, want={"tokens": ["NOP(0)"]}),
    Example("fence_odd_fields", "A FENCE with rd = x5, rs1 = x6 and pred = succ = 0 is "
            "accepted (any fm/pred/succ/rs1/rd): NOP(0), x5 unchanged.",
            [".word 0x0003028f  # fence with pred=0 succ=0 rs1=x6 rd=x5"],
            regs={"t0": 0x1234, "t1": 0x5678}, edge=True,
            want={"tokens": ["NOP(0)"]}),
    Example("fence_i_is_illegal", "FENCE.I (f3 = 001) is an illegal instruction.",
            [".word 0x0000100f  # fence.i"], edge=True,
            want={"end": "trap 1", "pc": 0x10000, "tokens": ["TRAP(1)"]}),
]


def illegal(name, desc, word, edge=True):
    return Example(name, desc, [".word 0x%08x  # %s" % (word, desc.split(":")[0])],
                   edge=edge, want={"end": "trap 1", "pc": 0x10000, "tokens": ["TRAP(1)"]})


TRAP = [
    Example("ebreak", "EBREAK traps with code 9.", ["ebreak"], edge=True,
            want={"end": "trap 9", "pc": 0x10000, "tokens": ["TRAP(9)"]}),
    Example("ebreak_after_addi", "EBREAK after a retired ADDI: the ADDI's write stays.",
            ["addi a0, x0, 1", "ebreak"],
            want={"a0": 1, "end": "trap 9", "pc": 0x10004,
                  "tokens": toks("W(0x00000001)") + ["TRAP(9)"]}),
    Example("ebreak_not_exit", "EBREAK with a7 = 93 is still a trap, not an exit.",
            ["ebreak", "ecall"], regs={"a7": 93},
            want={"end": "trap 9", "pc": 0x10000, "tokens": ["TRAP(9)"]}),
    Example("fetch_past_ram_end", "Code in the last word of RAM: after it, the fetch at "
            "0x110000 traps FETCH_FAULT.", ["addi a0, x0, 1"], pc=0x10FFFC, insns=2,
            edge=True, want={"a0": 1, "end": "trap 3", "pc": 0x110000,
                             "tokens": toks("W(0x00000001)") + ["TRAP(3)"]}),
    Example("illegal_after_store", "An illegal word after a store: the store's effect "
            "stays, the illegal word emits TRAP(1) only.",
            ["sw a2, 0(a1)", ".word 0x00000000  # all zeros"],
            regs={"a1": DATA, "a2": 7}, check_mem=[(DATA, 4)],
            want={"end": "trap 1", "pc": 0x10004, "mem": {DATA: [7, 0, 0, 0]},
                  "tokens": toks("A(0x00020000)", "S4(0x00000007)") + ["TRAP(1)"]}),
    illegal("illegal_all_zeros", "all-zero word: low bits not 11", 0x00000000),
    illegal("illegal_all_ones", "all-ones word", 0xFFFFFFFF),
    illegal("illegal_compressed", "0x00000001 (c.nop pattern): low bits 01, no C extension",
            0x00000001),
    illegal("illegal_slli_f7", "slli a0, a1, 1 with f7 = 0100000", enc_r(OP_IMM, 1, 0x20, 10, 11, 1)),
    illegal("illegal_srai_shamt5", "srai with f7 = 0100001 (RV64 shamt[5])", enc_r(OP_IMM, 5, 0x21, 10, 11, 2)),
    illegal("illegal_srli_f7", "srli with f7 = 0000001 (RV64 shamt[5])", enc_r(OP_IMM, 5, 0x01, 10, 11, 2)),
    illegal("illegal_sh0add", "OP with f7 = 0010000, f3 = 000 (no sh0add)", enc_r(OP_OP, 0, 0x10, 10, 11, 12)),
    illegal("illegal_andn", "andn (Zbb, f7 = 0100000, f3 = 111) is not provided", enc_r(OP_OP, 7, 0x20, 10, 11, 12)),
    illegal("illegal_sub_f3_1", "OP with f7 = 0100000, f3 = 001", enc_r(OP_OP, 1, 0x20, 10, 11, 12)),
    illegal("illegal_czero", "czero.eqz (Zicond, f7 = 0000111) is not provided", enc_r(OP_OP, 5, 0x07, 10, 11, 12)),
    illegal("illegal_ld", "ld (LOAD f3 = 011) is RV64 only", enc_i(OP_LOAD, 3, 10, 11, 0)),
    illegal("illegal_lwu", "lwu (LOAD f3 = 110)", enc_i(OP_LOAD, 6, 10, 11, 0)),
    illegal("illegal_sd", "sd (STORE f3 = 011)", enc_s(OP_STORE, 3, 11, 12, 0)),
    illegal("illegal_branch_f3_2", "BRANCH with f3 = 010", enc_b(OP_BRANCH, 2, 10, 11, 8)),
    illegal("illegal_jalr_f3_1", "JALR with f3 = 001", enc_i(OP_JALR, 1, 1, 10, 0)),
    illegal("illegal_addiw", "addiw (OP-IMM-32) is RV64 only", enc_i(0b0011011, 0, 10, 11, 1)),
    illegal("illegal_amo", "amoadd.w (A extension)", enc_r(0b0101111, 2, 0, 10, 11, 12)),
    illegal("illegal_csrrw", "csrrw (SYSTEM f3 = 001): no CSRs", enc_i(OP_SYSTEM, 1, 0, 2, 0x340)),
    illegal("illegal_mret", "mret: no privilege levels", 0x30200073),
    illegal("illegal_wfi", "wfi", 0x10500073),
    illegal("illegal_ecall_rd", "ECALL pattern with rd = x1 (not the whole word 0x00000073)",
            0x000000F3),
    illegal("illegal_ebreak_rs1", "EBREAK pattern with rs1 = x1 (not 0x00100073)",
            0x0010_0073 | (1 << 15)),
]

ZBA = [
    one("sh1add_basic", "SH1ADD: a2 + (a1 << 1) = 100 + 6.", "sh1add a0, a1, a2",
        {"a1": 3, "a2": 100}, "a0", 106),
    one("sh1add_overflow", "SH1ADD: bit 31 of rs1 is shifted out; (0x80000001 << 1) + 1.",
        "sh1add a0, a1, a2", {"a1": 0x80000001, "a2": 1}, "a0", 3, edge=True),
    one("sh1add_operand_order", "SH1ADD shifts rs1, not rs2: 0x10 + (1 << 1).",
        "sh1add a0, a1, a2", {"a1": 1, "a2": 0x10}, "a0", 0x12, edge=True),
    one("sh2add_index", "SH2ADD as word indexing: 0x20000 + 5 * 4.", "sh2add a0, a1, a2",
        {"a1": 5, "a2": DATA}, "a0", 0x20014),
    one("sh2add_rd_x0", "SH2ADD to x0 emits NOP(0).", "sh2add x0, a1, a2",
        {"a1": 5, "a2": 6}, "x0", 0, edge=True, want={"tokens": ["NOP(0)"]}),
    one("sh2add_aliased", "sh2add a0, a0, a0: 3 + (3 << 2).", "sh2add a0, a0, a0",
        {"a0": 3}, "a0", 15),
    one("sh3add_index", "SH3ADD: 0x20000 + 2 * 8.", "sh3add a0, a1, a2",
        {"a1": 2, "a2": DATA}, "a0", 0x20010),
    one("sh3add_wrap", "SH3ADD: 0x20000000 << 3 wraps to 0; + 0xffffffff.",
        "sh3add a0, a1, a2", {"a1": 0x20000000, "a2": 0xFFFFFFFF}, "a0", 0xFFFFFFFF,
        edge=True),
    one("sh3add_negative_index", "SH3ADD with index -1: 0x20010 - 8.", "sh3add a0, a1, a2",
        {"a1": 0xFFFFFFFF, "a2": DATA + 0x10}, "a0", 0x20008, edge=True),
]

BN = [
    # bn.addc
    Example("addc_carry_out", "bignum.md §4 row 1: c=0, 0xffffffff + 1 = 0, c = 1.",
            ["bn.addc a0, a1, a2"], regs={"a1": 0xFFFFFFFF, "a2": 1, "a0": 0x55}, c=0,
            want={"a0": 0, "c": 1, "tokens": toks("W(0x00000000)") + ["CF(1)"]}),
    Example("addc_all_ones_with_carry", "bignum.md §4 row 2: c=1, 0xffffffff + "
            "0xffffffff + 1 = 0x1_ffffffff.", ["bn.addc a0, a1, a2"],
            regs={"a1": 0xFFFFFFFF, "a2": 0xFFFFFFFF}, c=1, edge=True,
            want={"a0": 0xFFFFFFFF, "c": 1, "tokens": toks("W(0xffffffff)") + ["CF(1)"]}),
    Example("addc_carry_in", "c=1, 1 + 2 + 1 = 4, c = 0.", ["bn.addc a0, a1, a2"],
            regs={"a1": 1, "a2": 2}, c=1,
            want={"a0": 4, "c": 0, "tokens": toks("W(0x00000004)") + ["CF(0)"]}),
    Example("addc_rd_x0", "bn.addc to x0: NOP(0), but c is still written (CF(1)).",
            ["bn.addc x0, a1, a2"], regs={"a1": 0xFFFFFFFF, "a2": 1}, edge=True,
            want={"c": 1, "tokens": ["NOP(0)", "CF(1)"]}),
    Example("addc_two_limbs", "0x00000001_ffffffff + 0x00000002_00000001 = "
            "0x00000004_00000000: clear c with bn.xchgc x0, x0, then two bn.addc.",
            ["bn.xchgc x0, x0", "bn.addc a0, a2, a4", "bn.addc a1, a3, a5"],
            regs={"a2": 0xFFFFFFFF, "a3": 1, "a4": 1, "a5": 2}, c=1,
            want={"a0": 0, "a1": 4, "c": 0,
                  "tokens": ["NOP(0)", "CF(0)"] + toks("W(0x00000000)") + ["CF(1)"]
                  + toks("W(0x00000004)") + ["CF(0)"]}),
    # bn.subb
    Example("subb_borrow_out", "bignum.md §4 row 3: c=0, 0 - 1 = 0xffffffff, c = 1.",
            ["bn.subb a0, a1, a2"], regs={"a2": 1}, c=0, edge=True,
            want={"a0": 0xFFFFFFFF, "c": 1, "tokens": toks("W(0xffffffff)") + ["CF(1)"]}),
    Example("subb_borrow_in", "bignum.md §4 row 4: c=1, 5 - 4 - 1 = 0, c = 0.",
            ["bn.subb a0, a1, a2"], regs={"a1": 5, "a2": 4, "a0": 0x55}, c=1,
            want={"a0": 0, "c": 0, "tokens": toks("W(0x00000000)") + ["CF(0)"]}),
    Example("subb_most_negative", "c=1, 0 - 0xffffffff - 1 = -2^32: rd = 0, c = 1.",
            ["bn.subb a0, a1, a2"], regs={"a2": 0xFFFFFFFF, "a0": 0x55}, c=1, edge=True,
            want={"a0": 0, "c": 1, "tokens": toks("W(0x00000000)") + ["CF(1)"]}),
    Example("subb_equal_with_borrow", "c=1, 3 - 3 - 1 = -1: rd = 0xffffffff, c = 1.",
            ["bn.subb a0, a1, a2"], regs={"a1": 3, "a2": 3}, c=1, edge=True,
            want={"a0": 0xFFFFFFFF, "c": 1}),
    Example("subb_basic", "c=0, 10 - 3 = 7, c = 0.", ["bn.subb a0, a1, a2"],
            regs={"a1": 10, "a2": 3}, c=0, want={"a0": 7, "c": 0}),
    Example("subb_rd_x0_compare", "bn.subb x0 as a compare: 3 - 5 borrows; NOP(0), "
            "CF(1).", ["bn.subb x0, a1, a2"], regs={"a1": 3, "a2": 5}, edge=True,
            want={"c": 1, "tokens": ["NOP(0)", "CF(1)"]}),
    Example("subb_two_limbs_compare", "0x00000001_00000000 - 0x00000000_00000001 = "
            "0x00000000_ffffffff, no final borrow (A >= B).",
            ["bn.subb a0, a2, a4", "bn.subb a1, a3, a5"],
            regs={"a3": 1, "a4": 1}, c=0,
            want={"a0": 0xFFFFFFFF, "a1": 0, "c": 0,
                  "tokens": toks("W(0xffffffff)") + ["CF(1)"]
                  + toks("W(0x00000000)") + ["CF(0)"]}),
    # bn.xchgc
    Example("xchgc_basic", "bignum.md §4 row 5: c=1, a=2: rd = 1, c = a & 1 = 0.",
            ["bn.xchgc a0, a1"], regs={"a1": 2}, c=1,
            want={"a0": 1, "c": 0, "tokens": toks("W(0x00000001)") + ["CF(0)"]}),
    Example("xchgc_set", "c=0, a=0xffffffff: rd = 0, c = 1.", ["bn.xchgc a0, a1"],
            regs={"a1": 0xFFFFFFFF, "a0": 0x55}, c=0,
            want={"a0": 0, "c": 1, "tokens": toks("W(0x00000000)") + ["CF(1)"]}),
    Example("xchgc_clear", "bn.xchgc x0, x0 clears c: NOP(0), CF(0).",
            ["bn.xchgc x0, x0"], c=1, edge=True,
            want={"c": 0, "tokens": ["NOP(0)", "CF(0)"]}),
    Example("xchgc_aliased", "bn.xchgc a0, a0: a is read before rd is written; c=0, "
            "a0=3: a0 = 0, c = 1.", ["bn.xchgc a0, a0"], regs={"a0": 3}, c=0, edge=True,
            want={"a0": 0, "c": 1, "tokens": toks("W(0x00000000)") + ["CF(1)"]}),
    Example("xchgc_read_and_clear", "bn.xchgc a0, x0 reads and clears c.",
            ["bn.xchgc a0, x0"], c=1, want={"a0": 1, "c": 0}),
    # bn.mac
    Example("mac_all_ones", "bignum.md §4 row 6: acc = 0 + 0xffffffff^2 = "
            "0x00000000_fffffffe_00000001.", ["bn.mac a1, a2"],
            regs={"a1": 0xFFFFFFFF, "a2": 0xFFFFFFFF},
            want={"acc": 0x0000_0000_FFFFFFFE_00000001,
                  "tokens": ["AC0(0x01)", "AC1(0x00)", "AC2(0x00)", "AC3(0x00)",
                             "AC4(0xfe)", "AC5(0xff)", "AC6(0xff)", "AC7(0xff)",
                             "AC8(0x00)", "AC9(0x00)", "AC10(0x00)", "AC11(0x00)"]}),
    Example("mac_wraps", "bignum.md §4 row 7: acc = 2^96 - 1, + 1*1 wraps to 0.",
            ["bn.mac a1, a2"], regs={"a1": 1, "a2": 1}, acc=MASK96, edge=True,
            want={"acc": 0, "tokens": ["AC%d(0x00)" % i for i in range(12)]}),
    Example("mac_add_small", "acc = 2^64 + 6 after 2^64 + 2*3 (carry into byte 8 "
            "untouched).", ["bn.mac a1, a2"], regs={"a1": 2, "a2": 3}, acc=1 << 64,
            want={"acc": (1 << 64) + 6,
                  "tokens": ["AC0(0x06)"] + ["AC%d(0x00)" % i for i in range(1, 8)]
                  + ["AC8(0x01)"] + ["AC%d(0x00)" % i for i in range(9, 12)]}),
    Example("mac_carry_into_high_word", "Two bn.mac of 0xffffffff^2: acc = "
            "2 * 0xfffffffe_00000001 = 0x1_fffffffc_00000002.",
            ["bn.mac a1, a1", "bn.mac a1, a1"], regs={"a1": 0xFFFFFFFF}, edge=True,
            want={"acc": 0x1_FFFFFFFC_00000002}),
    Example("mac_zero_operand", "bn.mac with a = 0 leaves acc unchanged but still emits "
            "all twelve AC tokens.", ["bn.mac x0, a2"], regs={"a2": 5},
            acc=0x0102030405060708090A0B0C, edge=True,
            want={"acc": 0x0102030405060708090A0B0C,
                  "tokens": ["AC0(0x0c)", "AC1(0x0b)", "AC2(0x0a)", "AC3(0x09)",
                             "AC4(0x08)", "AC5(0x07)", "AC6(0x06)", "AC7(0x05)",
                             "AC8(0x04)", "AC9(0x03)", "AC10(0x02)", "AC11(0x01)"]}),
    # bn.accrd
    Example("accrd_basic", "bignum.md §4 row 8: acc = 0x00000001_00000002_00000003: "
            "rd = 3, acc >>= 32.", ["bn.accrd a0"], acc=0x00000001_00000002_00000003,
            want={"a0": 3, "acc": 0x00000000_00000001_00000002,
                  "tokens": toks("W(0x00000003)") + ac_hand(0x00000000_00000001_00000002)}),
    Example("accrd_logical_shift", "acc = 2^96 - 1: rd = 0xffffffff, acc = "
            "0x00000000_ffffffff_ffffffff (logical shift).", ["bn.accrd a0"],
            acc=MASK96, edge=True,
            want={"a0": 0xFFFFFFFF, "acc": 0x00000000_FFFFFFFF_FFFFFFFF}),
    Example("accrd_rd_x0", "bn.accrd x0 emits NOP(0) and still shifts acc.",
            ["bn.accrd x0"], acc=0x00000001_00000002_00000003, edge=True,
            want={"acc": 0x00000000_00000001_00000002,
                  "tokens": ["NOP(0)"] + ac_hand(0x00000000_00000001_00000002)}),
    Example("accrd_three_times", "Three bn.accrd read out all 96 bits; acc ends 0.",
            ["bn.accrd a0", "bn.accrd a1", "bn.accrd a2"],
            acc=0xCCCCCCCC_BBBBBBBB_AAAAAAAA,
            want={"a0": 0xAAAAAAAA, "a1": 0xBBBBBBBB, "a2": 0xCCCCCCCC, "acc": 0}),
    # bn.accclr
    Example("accclr_full", "bn.accclr clears acc = 2^96 - 1: NOP(0).", ["bn.accclr"],
            acc=MASK96, edge=True, want={"acc": 0, "tokens": ["NOP(0)"]}),
    Example("accclr_then_accrd", "bn.accclr then bn.accrd reads 0.",
            ["bn.accclr", "bn.accrd a0"], regs={"a0": 0x55}, acc=0x1234,
            want={"a0": 0, "acc": 0, "tokens": ["NOP(0)"] + toks("W(0x00000000)") + ac_hand(0)}),
    Example("accclr_keeps_c", "bn.accclr does not touch c.", ["bn.accclr"], c=1,
            acc=5, want={"acc": 0, "c": 1, "tokens": ["NOP(0)"]}),
    # a whole product, bignum.md §3: (2^64 - 1)^2 = 0xffffffff_fffffffe_00000000_00000001
    Example("schoolbook_2x2", "Product scanning of (2^64-1) * (2^64-1) = "
            "0xffffffff_fffffffe_00000000_00000001 into t0..t3 (bignum.md §3). Columns: "
            "p0 = 1, acc = 0xfffffffe; + 2 * 0xfffffffe_00000001 -> p1 = 0, "
            "acc = 0x1_fffffffd; + 0xfffffffe_00000001 -> p2 = 0xfffffffe; p3 = 0xffffffff.",
            ["bn.accclr", "bn.mac a2, a4", "bn.accrd t0", "bn.mac a2, a5", "bn.mac a3, a4",
             "bn.accrd t1", "bn.mac a3, a5", "bn.accrd t2", "bn.accrd t3"],
            regs={"a2": 0xFFFFFFFF, "a3": 0xFFFFFFFF, "a4": 0xFFFFFFFF, "a5": 0xFFFFFFFF},
            acc=0xDEAD, edge=True,
            want={"t0": 1, "t1": 0, "t2": 0xFFFFFFFE, "t3": 0xFFFFFFFF, "acc": 0}),
    # illegal custom-0 words (bignum.md §1)
    illegal("bn_illegal_f3_6", "custom-0 with f3 = 6", enc_r(OP_CUSTOM0, 6, 0, 10, 11, 12)),
    illegal("bn_illegal_f3_7", "custom-0 with f3 = 7", enc_r(OP_CUSTOM0, 7, 0, 10, 11, 12)),
    illegal("bn_illegal_f7", "bn.addc with f7 = 0000001", enc_r(OP_CUSTOM0, 0, 1, 10, 11, 12)),
    illegal("bn_illegal_xchgc_rs2", "bn.xchgc with rs2 != 0", enc_r(OP_CUSTOM0, 2, 0, 10, 11, 12)),
    illegal("bn_illegal_mac_rd", "bn.mac with rd != 0", enc_r(OP_CUSTOM0, 3, 0, 10, 11, 12)),
    illegal("bn_illegal_accrd_rs1", "bn.accrd with rs1 != 0", enc_r(OP_CUSTOM0, 4, 0, 10, 11, 0)),
    illegal("bn_illegal_accrd_rs2", "bn.accrd with rs2 != 0", enc_r(OP_CUSTOM0, 4, 0, 10, 0, 12)),
    illegal("bn_illegal_accclr_rd", "bn.accclr with rd != 0", enc_r(OP_CUSTOM0, 5, 0, 10, 0, 0)),
    illegal("bn_illegal_accclr_rs1", "bn.accclr with rs1 != 0", enc_r(OP_CUSTOM0, 5, 0, 0, 11, 0)),
]



# trace.md §4.0: the pc tokens where w >> 8 changes (w = (pc - 0x10000) / 4).
ALU += [
    Example("pc_page_change", "Four ADDI at 0x103f8 (w = 254, 255, 256, 257): PCH0(0x00) "
            "for the first instruction, PCL only for w = 255, PCH0(0x01) again where "
            "w >> 8 becomes 1 (w = 256 at 0x10400), then PCL only.",
            ["addi a0, x0, 1", "addi a0, a0, 1", "addi a0, a0, 1", "addi a0, a0, 1"],
            pc=0x103F8, edge=True,
            want={"a0": 4, "pc": 0x10408,
                  "all_tokens": ["PCH0(0x00)", "PCL(0xfe)"] + toks("W(0x00000001)")
                  + ["PCL(0xff)"] + toks("W(0x00000002)")
                  + ["PCH0(0x01)", "PCL(0x00)"] + toks("W(0x00000003)")
                  + ["PCL(0x01)"] + toks("W(0x00000004)")}),
    Example("pc_page_trace_md", "trace.md §5: the instruction at 0x50400 (w = 0x10100) "
            "after the one at 0x503fc (w = 0x100ff) begins with PCH1(0x01), PCL(0x00); "
            "the first begins with PCH1(0x00), PCL(0xff).",
            ["addi a0, x0, 5", "addi a1, a0, 1"], pc=0x503FC, edge=True,
            want={"a0": 5, "a1": 6, "pc": 0x50404,
                  "ids": [11776, 11519, 261, 512, 768, 1024, 11777, 11264,
                          262, 512, 768, 1024]}),
    Example("pc_page_k_change", "At 0x8fffc (w = 0x1ffff) then 0x90000 (w = 0x20000): "
            "PCH1(0xff), PCL(0xff), then the kind changes to PCH2(0x00), PCL(0x00).",
            ["addi a0, x0, -1", "addi a0, a0, 2"], pc=0x8FFFC, edge=True,
            want={"a0": 1, "pc": 0x90004,
                  "all_tokens": ["PCH1(0xff)", "PCL(0xff)"] + toks("W(0xffffffff)")
                  + ["PCH2(0x00)", "PCL(0x00)"] + toks("W(0x00000001)")}),
    Example("pc_last_word_of_ram", "ADDI at 0x10fffc, the last word of RAM (w = 0x3ffff): "
            "PCH3(0xff), PCL(0xff).", ["addi a0, x0, 9"], pc=0x10FFFC, edge=True,
            want={"a0": 9, "pc": 0x110000,
                  "all_tokens": ["PCH3(0xff)", "PCL(0xff)"] + toks("W(0x00000009)")}),
]

BRANCH += [
    Example("bne_back_across_page", "A loop across the 256-word boundary: addi at 0x103fc "
            "(w = 255), bne at 0x10400 (w = 256) taken back once, then not taken, then "
            "addi at 0x10404. Every crossing of w >> 8 emits PCH again.",
            ["addi a0, a0, 1", "bne a0, a1, .-4", "addi a2, x0, 7"],
            regs={"a1": 2}, pc=0x103FC, insns=5, edge=True,
            want={"a0": 2, "a2": 7, "pc": 0x10408,
                  "all_tokens": ["PCH0(0x00)", "PCL(0xff)"] + toks("W(0x00000001)")
                  + ["PCH0(0x01)", "PCL(0x00)", "BR(1)"]
                  + ["PCH0(0x00)", "PCL(0xff)"] + toks("W(0x00000002)")
                  + ["PCH0(0x01)", "PCL(0x00)", "BR(0)"]
                  + ["PCL(0x01)"] + toks("W(0x00000007)")}),
]


# Whole token lists, by hand, for the examples above that give only values.
HAND_TOKENS = {
    "auipc_zero_and_wrap": toks("W(0x00010000)", "W(0x0000f004)"),
    "mulh_mul_pair": toks("W(0xffffffff)", "W(0xfffffffa)"),
    "jalr_clears_bit0": toks("W(0x00010004)", "W(0x00000002)"),
    "jalr_clears_bit0_after_add": toks("W(0x00010004)", "W(0x00000002)"),
    "lw_last_word_of_ram": toks("A(0x0010fffc)", "W(0xdeadbeef)"),
    "lhu_last_half_of_ram": toks("A(0x0010fffe)", "W(0x0000dead)"),
    "sw_last_word_of_ram": toks("A(0x0010fffc)", "S4(0xcafef00d)"),
    "sh_last_half_of_ram": toks("A(0x0010fffe)", "S2(0xcafef00d)"),
    "subb_equal_with_borrow": toks("W(0xffffffff)") + ["CF(1)"],
    "subb_basic": toks("W(0x00000007)") + ["CF(0)"],
    "xchgc_read_and_clear": toks("W(0x00000001)") + ["CF(0)"],
    "mac_carry_into_high_word": ac_hand(0xFFFFFFFE_00000001) + ac_hand(0x1_FFFFFFFC_00000002),
    "accrd_logical_shift": toks("W(0xffffffff)") + ac_hand(0x00000000_FFFFFFFF_FFFFFFFF),
    "accrd_three_times": toks("W(0xaaaaaaaa)") + ac_hand(0xCCCCCCCC_BBBBBBBB) + toks("W(0xbbbbbbbb)")
    + ac_hand(0xCCCCCCCC) + toks("W(0xcccccccc)") + ac_hand(0),
    # acc after each step: 0, 0xfffffffe_00000001, 0xfffffffe, 0xfffffffe_ffffffff,
    # 0x1_fffffffd_00000000, 0x1_fffffffd, 0xffffffff_fffffffe, 0xffffffff, 0
    "schoolbook_2x2": ["NOP(0)"] + ac_hand(0xFFFFFFFE_00000001) + toks("W(0x00000001)")
    + ac_hand(0xFFFFFFFE) + ac_hand(0xFFFFFFFE_FFFFFFFF) + ac_hand(0x1_FFFFFFFD_00000000)
    + toks("W(0x00000000)") + ac_hand(0x1_FFFFFFFD) + ac_hand(0xFFFFFFFF_FFFFFFFE)
    + toks("W(0xfffffffe)") + ac_hand(0xFFFFFFFF) + toks("W(0xffffffff)") + ac_hand(0),
}
for _examples in (ALU, MUL, JUMP, LOAD, STORE, BN):
    for _e in _examples:
        if _e.name in HAND_TOKENS:
            assert "tokens" not in _e.want
            _e.want["tokens"] = HAND_TOKENS.pop(_e.name)
assert not HAND_TOKENS, HAND_TOKENS

FILES = [("alu", ALU), ("shift", SHIFT), ("mul", MUL), ("div", DIV),
         ("branch", BRANCH), ("jump", JUMP), ("load", LOAD), ("store", STORE),
         ("ecall", ECALL), ("fence", FENCE), ("trap", TRAP), ("zba", ZBA),
         ("bignum", BN)]


def render(cls, examples):
    doc = {"spec": "machine-v1", "trace_version": "trace-v3", "class": cls,
           "generator": "docs/spec/vectors/gen_scalar.py",
           "examples": [e.to_json() for e in examples]}
    return compact(json.dumps(doc, indent=1, ensure_ascii=False)) + "\n"


def compact(text):
    """Put every innermost object or short list on one line (same JSON)."""
    def join(m):
        inner = " ".join(part.strip() for part in m.group(2).split("\n"))
        one_line = m.group(1) + inner.strip() + m.group(3)
        return one_line if len(one_line) <= 100 or m.group(1) == "{" else m.group(0)
    return re.sub(r"(\{|\[)([^{}\[\]]*)(\}|\])", join, text)


def main():
    check = "--check" in sys.argv[1:]
    names = [e.name for _, es in FILES for e in es]
    assert len(names) == len(set(names)), "duplicate example names"
    n_all = sum(len(e) for _, e in FILES)
    n_tok = sum(1 for _, es in FILES for e in es if "tokens" in e.want or "ids" in e.want
                or "all_tokens" in e.want)
    print("%d examples, %d with the token list written by hand" % (n_all, n_tok))
    stale = []
    for cls, examples in FILES:
        path = os.path.join(HERE, "scalar_%s.json" % cls)
        text = render(cls, examples)
        if check:
            with open(path) as f:
                if f.read() != text:
                    stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
        print("%-22s %3d examples" % (os.path.basename(path), len(examples)))
    if stale:
        raise SystemExit("out of date: " + ", ".join(stale))


if __name__ == "__main__":
    main()
