"""JSON on ``nexus mcp``'s wire, read and written by CPython's own C scanner and encoder (``_json``):
the very functions ``json.loads`` and ``json.dumps`` run, without importing the ``json`` package,
whose regular expressions (``re``, ``enum``) cost more than everything else the front does before its
first answer. :func:`loads` takes what ``json.loads`` takes from one line of UTF-8 and raises
ValueError where it does; :func:`dumps` writes what ``json.dumps(value, ensure_ascii=False,
separators=(",", ":"))`` writes (a test holds both to the ``json`` package's answers). Where ``_json``
is missing (another Python), the ``json`` package does the same.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


class _Options:
    """What the C scanner reads from a decoder: ``json``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_CONSTANTS.__getitem__)


_scan: Any
_encode: Any
try:
    import _json

    _scan = _json.make_scanner(_Options())  # type: ignore[arg-type]  # (it reads the options as attributes)
    _encode = _json.make_encoder({}, _not_json, _json.encode_basestring, None, ":", ",", False, False, True)
except (ImportError, AttributeError, TypeError):  # pragma: no cover (not CPython)
    _scan = _encode = None


def loads(data: bytes | str) -> Any:
    """The value of one JSON text (bytes: UTF-8); ValueError when it is not JSON."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data  # (UnicodeDecodeError: a ValueError)
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as err:
        raise ValueError(f"Expecting value: char {err.value}") from None
    if text[end:].strip(WHITESPACE):
        raise ValueError(f"Extra data: char {end}")
    return value


def dumps(value: Any) -> str:
    """``value`` as compact JSON, non-ASCII characters as they are."""
    if _encode is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return "".join(_encode(value, 0))
