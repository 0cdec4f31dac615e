#!/usr/bin/env python3
"""A toy chip for the kit's tests: not a machine, just deterministic per-stream state.

Each stream holds ``acc`` (reset: ``entry + len(first segment) + section bytes``); a step fed
``t`` sets ``acc = (acc * 31 + t + 1) % 65521`` and predicts ``acc % vocab_size``.

Options: ``--vocab N``, ``--max-streams N``, ``--single`` (no native forced/free: the kit
emulates them), ``--bare`` (no optional capabilities at all), ``--need-section NAME`` (reset
without it is an image error), ``--noisy`` (prints to stdout on every step: the kit must keep it
off the frame stream), ``--fail-at N`` (step N raises an exception), plus the kit's transport
options.
"""

import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import lockstep_dut  # noqa: E402
from lockstep_dut import ProbeField, ProbeMap, ProbePoint  # noqa: E402


class Toy:
    def __init__(self, args):
        self.vocab_size = args.vocab
        self.max_streams = args.max_streams
        self.name = "toy 1"
        self.identity = f"toy/1 vocab {args.vocab}"
        self.args = args
        self.acc = {}
        self.steps = 0
        self.last = {}
        if not args.single and not args.bare:
            self.forced = self._forced
            self.free = self._free
        if not args.bare:
            self.hash = lambda s: (self.acc[s] * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
            self.save = lambda s: struct.pack("<4sI", b"TOYS", self.acc[s])
            self.restore = self._restore
            self.probe_map = lambda: ProbeMap([ProbeField("acc", 1, [(0, 2)]), ProbeField("input", 1, [])],
                                              [ProbePoint(-1, 0, [1]), ProbePoint(0, 2, [0])], [0])
            self.probe = lambda s, layer, after, field: [float(self.last[s][0 if field == "input" else 1])]

    def streams(self, n):
        self.acc = {}

    def reset(self, stream, image):
        need = self.args.need_section
        if need and need not in image.sections:
            raise lockstep_dut.ImageError(f"the guest image has no section {need}")
        first = len(image.segments[0][1]) if image.segments else 0
        self.acc[stream] = (image.entry + first + sum(sum(d) for d in image.sections.values())) % 65521

    def _one(self, stream, token):
        self.steps += 1
        if self.args.fail_at and self.steps == self.args.fail_at:
            raise RuntimeError("planted failure")
        if self.args.noisy:
            print("noise on stdout", token)
        self.acc[stream] = (self.acc[stream] * 31 + token + 1) % 65521
        self.last[stream] = (token, self.acc[stream])
        return self.acc[stream] % self.vocab_size

    def step(self, inputs):
        return [self._one(s, t) for s, t in inputs]

    def _forced(self, entries):
        return [[self._one(s, t) for t in inputs] for s, inputs in entries]

    def _free(self, entries):
        out = []
        for s, count, first in entries:
            toks, t = [], first
            for _ in range(count):
                t = self._one(s, t)
                toks.append(t)
            out.append(toks)
        return out

    def _restore(self, stream, blob):
        if len(blob) != 8 or blob[:4] != b"TOYS":
            raise lockstep_dut.ImageError("not a toy blob")
        self.acc[stream] = struct.unpack("<I", blob[4:])[0]


def main():
    parser = lockstep_dut.ArgumentParser(prog="toy_chip")
    parser.add_argument("--vocab", type=int, default=20736)
    parser.add_argument("--max-streams", type=int, default=8)
    parser.add_argument("--single", action="store_true")
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--need-section")
    parser.add_argument("--noisy", action="store_true")
    parser.add_argument("--fail-at", type=int, default=0)
    lockstep_dut.add_arguments(parser)
    args = parser.parse_args()
    lockstep_dut.serve_from_args(Toy(args), args)


if __name__ == "__main__":
    lockstep_dut.run_main("toy_chip", main)
