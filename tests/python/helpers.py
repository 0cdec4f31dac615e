"""Shared helpers of the Python tests: paths, trace files (trace.md §6), the toy chip."""

import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..")))
BUILD_DIR = os.environ.get("LOCKSTEP_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "examples"))

TOY = os.path.join(HERE, "toy_chip.py")
TORCH_CHIP = os.path.join(SOURCE_DIR, "python", "examples", "torch_chip.py")
LOCKSTEP = os.path.join(BUILD_DIR, "bin", "lockstep")
CHIP = os.path.join(BUILD_DIR, "chips", "rv32.chip")


def guest(name):
    return os.path.join(BUILD_DIR, "guests", name + ".elf")


def read_trace(path):
    """``(header, tokens t_1 .. t_N)`` of a trace file (trace.md §6)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"LSTRACE1":
        raise ValueError(f"{path}: not a trace file")
    (h,) = struct.unpack_from("<I", data, 8)
    header = json.loads(data[12:12 + h].decode("utf-8"))
    n = header["steps"]
    tokens = list(struct.unpack_from("<%dI" % n, data, 12 + h))
    return header, tokens


def reference_trace(elf, out_path, max_steps):
    """The reference model's tokens for ``elf`` (``lockstep ref --trace``), at most ``max_steps``."""
    subprocess.run([LOCKSTEP, "ref", elf, "--trace", out_path, "--max-steps", str(max_steps)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return read_trace(out_path)[1]


def toy_command(*options):
    return [sys.executable, TOY, *options]
