"""lockstep_dut: the chip side of Lockstep's chip-under-test protocol, lockstep-dut/1.

docs/spec/dut-protocol.md is the contract; python/lockstep_dut/README.md shows a minimal chip.
Standard library only (Python >= 3.9).

- ``serve(chip, listen=None)``: serves a chip object over stdin/stdout or a socket
  (``lockstep_dut.server`` documents what the object provides);
- ``Image``: a guest image (entry, segments, sections); ``load_elf`` builds one from an ELF file;
- ``DutError``, ``BadArgument``, ``Unsupported``, ``ImageError``: errors answered as ERROR frames;
- ``ProbeMap``, ``ProbeField``, ``ProbePoint``: what ``probe_map()`` returns;
- ``run_main``, ``ArgumentParser``, ``SetupError``, ``fail``: a chip script's bad input as one
  line ``PROG: error: ...`` and exit status 2 (``lockstep_dut.cli``);
- ``lockstep_dut.client.Client``: a harness side for tests;
- ``lockstep_dut.protocol``: frames, messages, limits, constants.
"""

from .protocol import (AFTER_EMBED, AFTER_MEMORY, AFTER_MLP, PROTOCOL_VERSION, TRACE_VERSION, Image,
                       ProbeField, ProbeMap, ProbePoint)
from .server import (BadArgument, DutError, ImageError, Session, Unsupported, add_arguments,
                     capabilities_of, check_arguments, protect_stdout, read_token_file, serve,
                     serve_from_args)
from .cli import ArgumentParser, SetupError, fail, run_main
from .elf import load_elf, parse_elf

__version__ = "0.1"

__all__ = [
    "AFTER_EMBED", "AFTER_MEMORY", "AFTER_MLP", "PROTOCOL_VERSION", "TRACE_VERSION", "Image",
    "ProbeField", "ProbeMap", "ProbePoint", "BadArgument", "DutError", "ImageError", "Session",
    "Unsupported", "add_arguments", "capabilities_of", "protect_stdout", "serve",
    "serve_from_args", "check_arguments", "read_token_file", "ArgumentParser", "SetupError",
    "fail", "run_main", "load_elf", "parse_elf", "__version__",
]
