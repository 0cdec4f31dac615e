"""Command-line plumbing shared by chip scripts: bad input is one line and exit status 2.

A chip script (``python/examples/minimal_chip.py``, ``torch_chip.py``) answers bad input the way
``lockstep`` does (docs/ci.md): one line ``PROG: error: WHAT: why`` on stderr naming the option
or path, exit status 2, never a traceback and never a silent fallback. ``run_main(prog, main)``
gives that: it turns ``SetupError`` (raised by the kit for a bad ``--listen`` address, token
file or option value, and by a script for its own options and files) into that line and Ctrl-C
into ``PROG: interrupted`` and exit status 130. Any other exception is a bug and keeps its
traceback.

``ArgumentParser`` is argparse's with one-line errors (``PROG: error: ... (see PROG --help)``,
exit status 2) instead of the usage text and the error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn, Optional

from .protocol import one_line

EXIT_USAGE = 2          # bad input or usage, as argparse and lockstep (docs/ci.md)
EXIT_INTERRUPTED = 130  # Ctrl-C before the script's work was done (a shell's code for SIGINT)


class SetupError(ValueError):
    """Bad input to a chip script or to the kit's setup: an option value, a file, a listen
    address. Its message is one line that names the option or path; ``run_main`` prints it as
    ``PROG: error: MESSAGE`` and exits with status 2."""


def fail(prog: str, message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Prints ``PROG: error: MESSAGE`` (one line) on stderr and exits with ``code``."""
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    sys.stderr.flush()
    raise SystemExit(code)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``PROG: error: MESSAGE (see PROG --help)``, exit status 2."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, f"{message} (see {self.prog} --help)")


def run_main(prog: str, main: Callable[[], Optional[int]]) -> NoReturn:
    """Runs ``main()`` and exits with its status (None: 0). ``SetupError``: one line
    ``PROG: error: ...``, status 2. Ctrl-C (KeyboardInterrupt): one line ``PROG: interrupted``,
    status 130 (a listening server stopped between sessions returns normally instead: see
    ``serve``). Other exceptions propagate with their traceback: they are bugs."""
    try:
        code = main()
    except SetupError as e:
        fail(prog, str(e))
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_INTERRUPTED)
    raise SystemExit(code or 0)
