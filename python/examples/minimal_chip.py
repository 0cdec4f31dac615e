#!/usr/bin/env python3
"""minimal_chip: the smallest adapter that plugs a chip into Lockstep (docs/hook-up-your-chip.md).

    python3 python/examples/minimal_chip.py CHIP_FILE [--listen unix:PATH]

"Your model" here is torch_chip's Executor over a compiled chip file; put your own model's
forward step in its place. To show a vocabulary map, the adapter numbers the trace tokens the
way a host language model might: after 50,000 host tokens (python/examples/minimal_chip.vocab,
passed to Lockstep with --dut-vocab).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE]  # lockstep_dut (python/), torch_chip (python/examples/)
import lockstep_dut  # noqa: E402
from torch_chip import ChipFormatError, Executor, read_chip, torch  # noqa: E402  (your model instead)

PROG = "minimal_chip"
FIRST_TRACE_ID = 50000  # the model's id of trace token 0 (START); trace id t is FIRST_TRACE_ID + t


class MinimalChip:
    max_streams = 16

    def __init__(self, path):
        cfg, maps, digest, _ = read_chip(path)            # load your weights
        self.model = Executor(cfg, maps, "cpu")          # your model
        self.vocab_size = FIRST_TRACE_ID + cfg["vocab_size"]
        self.name = "minimal_chip (torch_chip's executor)"
        self.identity = "minimal_chip sha256:" + digest  # changes when the weights change

    def streams(self, n):                                # STREAMS: n fresh streams
        self.model.streams(n)

    def reset(self, stream, image):                      # RESET: the guest image -> the stream's state
        self.model.reset(stream, image)

    def step(self, inputs):                              # STEP: one token in, one out, per stream
        if any(t < FIRST_TRACE_ID for _, t in inputs):
            raise lockstep_dut.BadArgument("an input below %d is a host token (run Lockstep with "
                                           "--dut-vocab python/examples/minimal_chip.vocab)" % FIRST_TRACE_ID)
        sids = torch.tensor([s for s, _ in inputs])
        tokens = torch.tensor([t - FIRST_TRACE_ID for _, t in inputs])
        return [t + FIRST_TRACE_ID for t in self.model.step(sids, tokens).tolist()]


def main():
    parser = lockstep_dut.ArgumentParser(prog=PROG, description="minimal_chip: a chip under test for Lockstep")
    parser.add_argument("chip_file")
    lockstep_dut.add_arguments(parser)                   # --listen, --token-file, --sessions, ...
    args = parser.parse_args()
    if args.listen is None:
        lockstep_dut.protect_stdout()                    # --dut: frames only on stdout
    lockstep_dut.check_arguments(args)                   # bad options fail before the model loads
    if torch is None:
        raise lockstep_dut.SetupError(f"PyTorch is not installed for {sys.executable}")
    try:
        chip = MinimalChip(args.chip_file)
    except ChipFormatError as e:                         # a missing, truncated or garbage chip file
        raise lockstep_dut.SetupError(str(e))
    lockstep_dut.serve_from_args(chip, args)


if __name__ == "__main__":
    lockstep_dut.run_main(PROG, main)   # bad input: one line "minimal_chip: error: ...", exit 2
