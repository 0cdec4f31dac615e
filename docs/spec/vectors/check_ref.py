#!/usr/bin/python3
"""The vector-spec oracle: the reference (ref::Machine) against vector_model.py over random programs.

For RV32IM/Zba the reference is checked against qemu-riscv32 and for bignum against GMP; for the
vector unit this is the outside reading: vector_model.py, an executable reading of vector.md
written in Python from the spec alone.  `vector_oracle_trace` (tests/spec, C++) generates random
programs with the fuzz campaign's generator (`lockstep fuzz`'s programs, with their `.lockstep.*`
sections), runs them on the reference and writes JSON lines: per program its sections, per vector
instruction its word, the scalar operands X(rs1), X(rs2) it read (and VLD's RAM record), what it
changed in the vector memories, X(rd) and the trap code; per program the final state's SHA-256.

This script loads each program's sections into the model (vector.md §2.1), executes every vector
instruction the reference executed on the model, from the model's own state, and compares:

  - the trap code (or that neither trapped);
  - every element of every vector memory after the instruction (the model's state against the
    state before it plus the reference's changes), so every word and int8 value either side
    writes is compared, and nothing else may change;
  - X(rd) after it (VMAT argmax);
  - at the end, the whole vector state's SHA-256 (loading included).

A failure line names the program index and seed, the op, its operands, the memory element, the
model's value (expected) and the reference's (actual).  Any disagreement is a spec question
first (vector.md), then a bug on the side that is wrong; never a tolerance.

    /usr/bin/python3 docs/spec/vectors/check_ref.py --trace build/test-bin/vector_oracle_trace \\
        --ops vq --seed 0x5eed0028 --programs 200

Exit status: 0 everything agreed, 1 a mismatch, 2 bad input (one `lockstep: error:` line).
The last line is a summary: programs, vector instructions, values compared, mismatches, seconds.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vector_model as vm  # noqa: E402

MAX_REPORTED = 20  # failure lines printed (all are counted)


def describe(o):
    """The op with its f7 fields and operands, for a failure line."""
    return "%s word 0x%08x (rd x%d, f7 %d) X(rs1) 0x%08x X(rs2) 0x%08x: A %d B %d C %d N %d" % (
        vm.OPS[o.f3].name, o.word, o.rd, o.f7, o.x1, o.x2, o.A, o.B, o.C, o.N)


class Checker:
    def __init__(self, ops, seed):
        self.ops, self.seed = ops, seed
        self.programs = self.insns = self.values = self.mismatches = 0
        self.by_op = {op.name: 0 for op in vm.OPS}
        self.traps = {}
        self.reported = 0

    def fail(self, where, text):
        self.mismatches += 1
        if self.reported < MAX_REPORTED:
            print("check_ref: MISMATCH %s: %s" % (where, text), flush=True)
            self.reported += 1

    def instruction(self, prog, k, st, line):
        """Runs line's instruction on `st` (the model's state) and compares with the reference;
        whether they agreed."""
        o = vm.Operands(line["word"], line["x1"], line["x2"])
        where = "program %d (seed 0x%016x of --ops %s --seed 0x%x), vector instruction %d at pc 0x%08x, %s" % (
            prog["program"], prog["seed"], self.ops, self.seed, k, line["pc"], describe(o))
        record = bytes.fromhex(line["ram"]) if "ram" in line else None

        def ram(addr, count):
            assert record is not None and addr == o.x1 and count == len(record), "VLD read outside its record"
            return record

        try:
            out = vm.outcome(st, o.word, o.x1, o.x2, ram)
        except AssertionError as e:  # a bound of vector.md §4 that the operands exceed
            self.fail(where, "the model stopped on a bound of vector.md: %s" % (e or "assert"))
            return False
        self.insns += 1
        self.by_op[vm.OPS[o.f3].name] += 1
        if out.trap is not None:
            self.traps[out.trap] = self.traps.get(out.trap, 0) + 1
        self.values += 1  # the trap code (or none)
        if out.trap != line["trap"]:
            self.fail(where, "trap: expected %s, actual %s" % (out.trap, line["trap"]))
            return False
        # Every element either side wrote or changed: the model's value after its writes
        # (expected) against the reference's, i.e. its new value where it changed the element and
        # the value before where it did not.  Elements neither touched are equal on both sides.
        touched = {}
        for memory, indices, _ in out.writes:
            touched.setdefault(memory, []).append(indices)
        for memory, pairs in line["writes"].items():
            if memory not in vm.MEMORIES:
                self.fail(where, "the reference changed an unknown memory %r" % memory)
                return False
            touched.setdefault(memory, []).append(np.array([i for i, _ in pairs], dtype=np.int64))
        touched = {m: np.unique(np.concatenate(ix)) for m, ix in touched.items()}
        actual = {m: getattr(st, m)[ix] for m, ix in touched.items()}
        for memory, pairs in line["writes"].items():
            where_in = np.searchsorted(touched[memory], [i for i, _ in pairs])
            actual[memory][where_in] = [v for _, v in pairs]
        vm.apply(st, out)
        self.values += out.count() - (out.rd_value is not None)
        ok = True
        for memory, ix in touched.items():
            e, a = getattr(st, memory)[ix], actual[memory]
            for k in np.flatnonzero(e != a)[:4].tolist():
                self.fail(where, "%s[%d]: expected %d, actual %d" % (memory.upper(), ix[k], e[k], a[k]))
                ok = False
        if o.rd != 0:
            self.values += 1
            want = out.rd_value if out.rd_value is not None else line["rd_before"]
            if want != line["rd_after"]:
                self.fail(where, "X(rd = x%d): expected %d, actual %d" % (o.rd, want, line["rd_after"]))
                ok = False
        return ok

    def program(self, prog, lines, end):
        self.programs += 1
        where = "program %d (seed 0x%016x of --ops %s --seed 0x%x)" % (prog["program"], prog["seed"], self.ops,
                                                                       self.seed)
        sections = {name: bytes.fromhex(h) for name, h in prog["sections"].items()}
        st = vm.State.from_sections(sections)
        for k, line in enumerate(lines):
            if not self.instruction(prog, k, st, line):
                return  # later instructions would start from states that differ
        vector_trap = end["status"] == "trap" and lines and lines[-1]["trap"] is not None
        if end["status"] != "exit" and not vector_trap:
            self.fail(where, "the program ended with %s (trap code %d), not an exit or a vector trap"
                      % (end["status"], end["trap_code"]))
            return
        if st.sha256() != end["sha256"]:
            self.fail(where, "final vector state SHA-256: expected %s, actual %s" % (st.sha256(), end["sha256"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True, help="the vector_oracle_trace executable")
    ap.add_argument("--ops", required=True, help="a `lockstep fuzz --ops` list, e.g. vq")
    ap.add_argument("--seed", required=True, type=lambda s: int(s, 0), help="the campaign seed")
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--progress", type=int, default=0, help="print a line every N programs")
    args = ap.parse_args()
    shas = vm.table_shas()
    if shas != vm.TABLE_SHA:
        print("lockstep: error: vector_model's tables differ from vector.md §3: %r" % shas, file=sys.stderr)
        return 2
    print("check_ref: --ops %s --seed 0x%x, programs %d..%d (replay: %s --ops %s --seed 0x%x --first K --programs 1)"
          % (args.ops, args.seed, args.first, args.first + args.programs - 1, args.trace, args.ops, args.seed),
          flush=True)
    t0 = time.time()
    cmd = [args.trace, "--ops", args.ops, "--seed", str(args.seed), "--programs", str(args.programs),
           "--first", str(args.first)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, bufsize=1 << 20)
    except OSError as e:
        print("lockstep: error: cannot run %s: %s" % (args.trace, e), file=sys.stderr)
        return 2
    c = Checker(args.ops, args.seed)
    prog, lines = None, []
    for raw in proc.stdout:
        rec = json.loads(raw)
        if "program" in rec:
            prog, lines = rec, []
        elif "end" in rec:
            c.program(prog, lines, rec)
            if args.progress and c.programs % args.progress == 0:
                print("check_ref: %d programs, %d vector instructions, %d values, %d mismatches, %.0f s"
                      % (c.programs, c.insns, c.values, c.mismatches, time.time() - t0), flush=True)
        else:
            lines.append(rec)
    if proc.wait() != 0:
        print("lockstep: error: %s exited with %d" % (" ".join(cmd), proc.returncode), file=sys.stderr)
        return 2
    if c.programs != args.programs:
        print("lockstep: error: %d programs traced, %d asked for" % (c.programs, args.programs), file=sys.stderr)
        return 2
    print("check_ref: vector instructions by op: %s; traps by code: %s" % (
        ", ".join("%s %d" % kv for kv in c.by_op.items() if kv[1]),
        ", ".join("%d: %d" % kv for kv in sorted(c.traps.items())) or "none"))
    print("check_ref: --ops %s --seed 0x%x: %d programs, %d vector instructions, %d values compared, "
          "%d mismatches, %.1f s" % (args.ops, args.seed, c.programs, c.insns, c.values, c.mismatches,
                                     time.time() - t0))
    return 1 if c.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
