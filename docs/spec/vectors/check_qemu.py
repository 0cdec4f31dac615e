#!/usr/bin/env python3
"""Cross-check scalar_*.json against qemu-riscv32 (user mode), where practical.

For every example that uses only standard instructions (no bn.*, no raw
.word) and ends in "exit" or "running", build a static ELF with GNU as/ld:
  * the example's code at its `pc`, its initial memory spans at their
    addresses (and zero-filled pages for the final spans it stores to);
  * a prologue at 0x40000 that sets all 31 registers to the initial values
    (`li`) and jumps to `pc`;
  * for "running" examples, an epilogue at the final `pc` that copies x1..x31
    into f1..f31 (fmv.w.x, so no register is disturbed), stores them to
    0x50000, writes them and the final memory spans to stdout, and exits 0.
Then compare qemu's stdout and exit status with `final`: exit status, the
bytes the example writes, every register, every memory span.

Tokens, traps, `c`/`acc` and bignum ops cannot be checked this way (qemu
has no such trace and no custom-0 unit), and qemu emulates misaligned
accesses (isa.md §2): examples that trap are skipped. Skipped, too:
examples whose final pc is inside their own code.

Usage: python3 docs/spec/vectors/check_qemu.py   (exit status 0 = all agree)
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
AS = os.environ.get("AS", "riscv64-unknown-elf-as")
LD = os.environ.get("LD", "riscv64-unknown-elf-ld")
QEMU = os.environ.get("QEMU", "qemu-riscv32")
PROLOGUE, DUMP = 0x40000, 0x50000

# Examples where the machine deliberately differs from qemu-riscv32.
KNOWN_DIFFERENCES = {
    "sw_modifies_code": "isa.md §2: a store to code is visible to the next fetch; "
                        "RISC-V needs FENCE.I for that (illegal here) and qemu keeps "
                        "executing the old translation",
}


def h(s):
    return int(s, 16)


def build(ex, tmp):
    ini, fin = ex["initial"], ex["final"]
    pc = h(ini["pc"])
    code = [h(w) for w in ex["code"]]
    sections = []                                   # (address, body lines)
    body = [".word 0x%08x" % w for w in code]
    end_pc = h(fin["pc"]) if fin["end"] == "running" else None
    epilogue = []
    if end_pc is not None:
        epilogue += ["fmv.w.x f%d, x%d" % (r, r) for r in range(1, 32)]
        epilogue += ["lui x1, %%hi(0x%x)" % DUMP, "addi x1, x1, %%lo(0x%x)" % DUMP]
        epilogue += ["fsw f%d, %d(x1)" % (r, 4 * (r - 1)) for r in range(1, 32)]
        spans = [(DUMP, 124)] + [(h(s["addr"]), len(s["hex"]) // 2) for s in fin["mem"]]
        for addr, n in spans:
            epilogue += ["li a7, 64", "li a0, 1", "li a1, 0x%x" % addr, "li a2, %d" % n, "ecall"]
        epilogue += ["li a7, 93", "li a0, 0", "ecall"]
        if end_pc == pc + 4 * len(code):
            body += epilogue
        else:
            sections.append((end_pc, epilogue))
    sections.append((pc, body))
    covered = []
    for s in ini["mem"]:
        data = bytes.fromhex(s["hex"])
        sections.append((h(s["addr"]), [".byte " + ", ".join(str(b) for b in data)]))
        covered.append((h(s["addr"]), len(data)))
    for s in fin["mem"]:                            # stored-to places must be mapped
        a, n = h(s["addr"]), len(s["hex"]) // 2
        if not any(ca <= a and a + n <= ca + cn for ca, cn in covered) and \
                not (pc <= a < pc + 4 * len(code)):
            sections.append((a, [".zero %d" % n]))
    prologue = ["li x%d, 0x%x" % (r, h(ini["regs"].get("x%d" % r, "0x0")))
                for r in range(1, 32)] + ["jal x0, 0x%x" % pc]
    sections.append((PROLOGUE, ["_start:"] + prologue))
    sections.append((DUMP, [".zero 128"]))
    src, args = [".globl _start"], []
    for k, (addr, lines) in enumerate(sorted(sections)):
        src += ['.section .s%d, "awx"' % k] + lines
        args.append("--section-start=.s%d=0x%x" % (k, addr))
    with open(os.path.join(tmp, "t.s"), "w") as f:
        f.write("\n".join(src) + "\n")
    subprocess.run([AS, "-march=rv32imf_zba", "-mabi=ilp32", "-mno-relax", "t.s", "-o", "t.o"],
                   cwd=tmp, check=True)
    subprocess.run([LD, "-m", "elf32lriscv", "-static", "-e", "_start", "--no-relax",
                    "-z", "noexecstack", "--no-warn-rwx-segments", "-z", "max-page-size=4096"]
                   + args + ["t.o", "-o", "t.elf"], cwd=tmp, check=True)
    return os.path.join(tmp, "t.elf")


def expected_regs(ex):
    ini, fin = ex["initial"]["regs"], ex["final"]["regs"]
    return [h(fin.get("x%d" % r, ini.get("x%d" % r, "0x0"))) for r in range(1, 32)]


def main():
    ok = skipped = 0
    fails = []
    tmp = tempfile.mkdtemp()
    try:
        for path in sorted(glob.glob(os.path.join(HERE, "scalar_*.json"))):
            for ex in json.load(open(path))["examples"]:
                fin = ex["final"]
                pc, n = h(ex["initial"]["pc"]), len(ex["code"])
                if ex["name"] in KNOWN_DIFFERENCES:
                    print("check_qemu: skip %s (%s)" % (ex["name"], KNOWN_DIFFERENCES[ex["name"]]))
                    skipped += 1
                    continue
                if any(a.startswith((".word", "bn.")) for a in ex["asm"]) \
                        or fin["end"] == "trap" \
                        or (fin["end"] == "running" and pc <= h(fin["pc"]) < pc + 4 * n):
                    skipped += 1
                    continue
                elf = build(ex, tmp)
                p = subprocess.run([QEMU, elf], capture_output=True, timeout=20)
                out = p.stdout
                want_out = bytes.fromhex(fin.get("stdout", ""))
                name = "%s:%s" % (os.path.basename(path), ex["name"])
                bad = []
                if fin["end"] == "exit":
                    if p.returncode != fin["exit_status"]:
                        bad.append("exit status %d, want %d" % (p.returncode, fin["exit_status"]))
                    if out != want_out:
                        bad.append("stdout %s, want %s" % (out.hex(), want_out.hex()))
                else:
                    if p.returncode != 0 or not out.startswith(want_out):
                        bad.append("rc %d stdout %s" % (p.returncode, out.hex()))
                    else:
                        rest = out[len(want_out):]
                        regs = [int.from_bytes(rest[4 * k:4 * k + 4], "little") for k in range(31)]
                        for r, (g, w) in enumerate(zip(regs, expected_regs(ex)), 1):
                            if g != w:
                                bad.append("x%d = 0x%08x, want 0x%08x" % (r, g, w))
                        rest = rest[124:]
                        for s in fin["mem"]:
                            n = len(s["hex"]) // 2
                            if rest[:n].hex() != s["hex"]:
                                bad.append("mem %s = %s, want %s" % (s["addr"], rest[:n].hex(), s["hex"]))
                            rest = rest[n:]
                if bad:
                    fails.append("%s: %s" % (name, "; ".join(bad)))
                else:
                    ok += 1
    finally:
        shutil.rmtree(tmp)
    for f in fails:
        print("check_qemu: MISMATCH", f)
    print("check_qemu: %d examples agree with %s, %d differ, %d skipped (traps, bignum, raw words, known)"
          % (ok, QEMU, len(fails), skipped))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
