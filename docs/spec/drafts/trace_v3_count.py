#!/usr/bin/env python3
"""Trace-v3 draft: stories260K's story-check length under docs/spec/drafts/trace-v3-vector.md.

Counts the vector tokens of one forward pass of vector.md section 7.3 (T = pos + 1) under
trace-v2 (4,508 + 10T, vector.md section 7.3) and under the draft's table, and adds the
differences of the 63 passes (T = 1..63) to the measured trace-v2 story length:
  lockstep ref build/guests/stories_vx.elf --trace F   -> 397,295 steps, 63 passes.
"""
from math import ceil

STORY_V2_STEPS = 397_295
PASSES = range(1, 64)  # T of the 63 forward passes


def words(n):  # word stream of n contiguous elements
    return ceil(n / 4) + 4 * n


def int8(n):  # int8 stream of n values
    return ceil(n / 4) + n


def vq_act(n):  # VQ into ACT: VQE + 64 values per group
    return ceil(n / 64) * (1 + int8(64))


def vq_row():  # VQ into a K or V row
    return 1 + int8(32)


def vmat(rows, k, argmax=False):
    return rows * (k + 4) + (rows - 1) // 256 + (4 if argmax else 0)


def rmsnorm():  # VRED SUMSQ 64, VFN RSQRT 1, VEW MULS 64, VQ ACT 64
    return (1 + words(1)) + words(1) + words(64) + vq_act(64)


def layer(t):
    attn = (rmsnorm() + vmat(128, 1) + words(96) + 2 * vq_row() + vq_act(64)
            + words(8 * t)                                              # VMATR K
            + 8 * (4 + ceil(t / 4) + 4 * t) + ceil(8 / 4) + 4 * 8       # VEXP G=8
            + t + words(64)                                             # VMATR V
            + words(8) + words(64) + vq_act(64) + vmat(64, 1) + words(64))
    ffn = (rmsnorm() + vmat(344, 1) + words(172) + words(172) + vq_act(172)
           + vmat(64, 3) + words(64))
    return attn + ffn


def pass_v3(t):
    return 84 + 5 * layer(t) + vq_act(64) + vmat(512, 1, argmax=True)


def pass_v2(t):
    return 4_508 + 10 * t


if __name__ == "__main__":
    for t in (1, 32, 63):
        print(f"T={t}: trace-v2 {pass_v2(t):,}  trace-v3 draft {pass_v3(t):,} vector tokens")
    steps = STORY_V2_STEPS + sum(pass_v3(t) - pass_v2(t) for t in PASSES)
    print(f"story check: trace-v2 {STORY_V2_STEPS:,} steps -> trace-v3 draft {steps:,} steps, "
          f"{steps / len(PASSES):,.0f} per story token")
