"""What a command prints and reads: its answer on standard output (JSON for programs with ``--json``,
else text), a message folded to one line, and a file named on the command line (``-``: standard
input) read as text or refused in one clear line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """The answer: ``data`` as JSON when the command line asked for ``--json``, else ``text``."""
    if getattr(args, "json", False):
        try:
            out = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
            out.encode("utf-8")
        except UnicodeEncodeError:  # bytes that were not UTF-8 (a file nexus did not write): \udcXX
            out = json.dumps(data, indent=2) + "\n"
        sys.stdout.write(out)
    else:
        out = text if text.endswith("\n") or not text else text + "\n"
        try:
            sys.stdout.write(out)
        except UnicodeEncodeError:
            sys.stdout.write(out.encode("utf-8", "backslashreplace").decode("utf-8"))


def one_line(message: str) -> str:
    """A message on one line, whatever it holds (line breaks folded, other bytes escaped)."""
    return message.replace("\r", " ").replace("\n", " ").encode("utf-8", "backslashreplace").decode()


def read_bytes(name: str, what: str) -> bytes:
    """The bytes of a file given on the command line (``-``: standard input), or one clear error."""
    try:
        return sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the {what} {name}: {err.strerror or type(err).__name__}") from None


def read_text(name: str, what: str) -> str:
    """The text of a file given on the command line (``-``: standard input), or one clear error."""
    data = read_bytes(name, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"the {what} {name} is not UTF-8 text (byte {err.start})") from None
