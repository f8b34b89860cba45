"""The ``nexus`` program's entry point. ``nexus mcp`` as ``nexus setup`` writes it starts its stdio
front straight away (``mcp_start.py``, ``mcp_front.py``): a runtime waits for the server's first
answer before its first model request, and the CLI's parser and library would add ~30 ms to it. Every
other command line, and any ``nexus mcp`` line the fast start does not recognise, is the CLI's
(``cli.py``), unchanged.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "mcp" in argv:
        from . import mcp_start

        try:
            begun = mcp_start.read(argv, os.environ, os.getcwd())
        except OSError:  # no current folder: the CLI says so
            begun = None
        if begun is not None:
            from . import mcp_front

            return mcp_front.start(begun)
    from .cli import main as cli

    return cli(argv)
