"""``@dataclass`` with its methods compiled ahead of time: value classes that cost nothing to create.

Python 3.11's ``dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and
(frozen) ``__setattr__``/``__delattr__`` as source text and compiles each with ``exec`` when the module
is imported: ~0.7 ms of CPU a class, ~30 ms for the ~40 classes a per-turn command imports (about
one `python -c pass`, on every hook call; issue 9). Here the same methods are generated once, as
ordinary Python in ``nexus/_valueclasses_made.py`` (compiled into its ``.pyc`` like any module), and
attached to the class at import. Modules import the decorator as::

    if TYPE_CHECKING:
        from dataclasses import dataclass
    else:
        from ..valueclasses import dataclass

so readers and mypy see a standard dataclass, and at run time :func:`dataclass` does the standard
field processing (``dataclasses.fields``, ``replace``, ``asdict`` work as usual) without writing any
method, then attaches the generated ones. A class whose shape (field names, which have defaults or
factories, field flags, ``frozen``, ``slots``, ``__post_init__``) differs from what was generated, or
that uses a form this module does not generate (inheritance, ``InitVar``, ``ClassVar``, ``kw_only``,
its own ``__eq__``…), is made by the standard ``dataclass`` instead: slower, never different.

One thing is written otherwise, to the same effect: a frozen class without slots sets its fields in
``__init__`` straight into the instance's ``__dict__`` (what ``object.__setattr__`` does for a plain
attribute, at a third of the cost a field; a full verify builds two such records an entry). A class
attribute that is a data descriptor would hold the value instead, so such a class is not generated.

``python -m nexus.valueclasses --write`` regenerates the methods; ``--check`` (and a test) fails when
they are not what the classes need. The generated methods behave as the standard ones (a test
compares every class both ways).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

# (module, qualname) -> the shape it was made from; filled by every decoration (the generator reads it).
SEEN: dict[tuple[str, str], tuple[Any, ...]] = {}
GENERATING = False  # set by the generator: every class is made the standard way while it reads them
_FIELD_FLAGS = ("init", "repr", "compare", "hash")
# names the generated __init__ uses besides its parameters: a field with one of them is made the standard way
_RESERVED = frozenset({"self", "cls", "_set", "_d", "_FACTORY", "FrozenInstanceError", "__d", "__f"})
_OWN_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


def shape(cls: type, frozen: bool, slots: bool) -> tuple[Any, ...] | None:
    """What the generated methods depend on, read from the class body before any processing; None
    when the class uses a form that is not generated."""
    if cls.__bases__ != (object,) or any(name in cls.__dict__ for name in _OWN_METHODS):
        return None
    fields: list[tuple[Any, ...]] = []
    for name, annotation in inspect.get_annotations(cls).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if name in _RESERVED or any(word in text for word in ("ClassVar", "InitVar", "KW_ONLY")):
            return None
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if hasattr(type(value), "__set__"):  # (a data descriptor: it, not the instance dict, holds the value)
            return None
        if isinstance(value, dataclasses.Field):
            if value.kw_only is True or value.metadata:
                return None
            kind = (
                "factory"
                if value.default_factory is not dataclasses.MISSING
                else "default"
                if value.default is not dataclasses.MISSING
                else "required"
            )
            flags = tuple(getattr(value, flag) for flag in _FIELD_FLAGS)
        else:
            kind = "required" if value is dataclasses.MISSING else "default"
            flags = (True, True, True, None)
        fields.append((name, kind, *flags))
    return (frozen, slots, "__post_init__" in cls.__dict__, tuple(fields))


def dataclass(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False, **other: Any) -> Any:
    """``dataclasses.dataclass(cls, frozen=frozen, slots=slots)``, with the generated methods when
    they fit the class (see the module's docstring); any other option: the standard dataclass."""

    def wrap(cls: type) -> type:
        made = None if other else _made(cls, frozen, slots)
        if made is None:
            return dataclasses.dataclass(cls, frozen=frozen, slots=slots, **other)
        return attach(cls, made, slots)

    return wrap if cls is None else wrap(cls)


def attach(cls: type, made: Callable[..., dict[str, Any]], slots: bool) -> type:
    """``cls`` made a dataclass without writing any method, then given the methods ``made`` returns."""
    undocumented = cls.__doc__ is None
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, slots=slots)
    defaults, factories, types = {}, {}, {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        if f.default_factory is not dataclasses.MISSING:
            factories[f.name] = f.default_factory
        if f.init:
            types[f.name] = f.type
    for name, method in made(cls, defaults, factories).items():
        setattr(cls, name, method)
    cls.__init__.__annotations__ = {**types, "return": None}  # type: ignore[misc]
    if undocumented:  # as the standard one: the class's signature
        cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    return cls


def _made(cls: type, frozen: bool, slots: bool) -> Callable[..., dict[str, Any]] | None:
    form = shape(cls, frozen, slots)
    key = (cls.__module__, cls.__qualname__)
    SEEN[key] = (form,)
    if form is None or GENERATING:
        return None
    try:
        from . import _valueclasses_made as made
    except ImportError:  # (not generated yet)
        return None
    entry = made.MADE.get(f"{key[0]}:{key[1]}")
    if entry is None or entry[0] != form:
        return None
    return entry[1]


# ------------------------------------------------------------------ the generator


def source(key: str, form: tuple[Any, ...]) -> str:
    """The factory that makes one class's methods (``cls``, defaults, default factories)."""
    frozen, slots, post_init, fields = form
    fn = "_" + key.replace(".", "_").replace(":", "__")
    names = [f[0] for f in fields]
    params, body = ["self"], []
    for name, kind, init, _repr, _compare, _hash in fields:
        value = name
        if kind == "factory":
            value = f"__f[{name!r}]()" + (f" if {name} is _FACTORY else {name}" if init else "")
        elif kind == "default" and not init:
            value = f"__d[{name!r}]"
        if init:
            default = "" if kind == "required" else "=_FACTORY" if kind == "factory" else f"=__d[{name!r}]"
            params.append(name + default)
        if init or kind != "required":
            body.append(
                f"self.{name} = {value}"
                if not frozen
                else f"_set(self, {name!r}, {value})"
                if slots
                else f"_d[{name!r}] = {value}"  # (a third of object.__setattr__'s cost a field)
            )
    if frozen and not slots and body:
        body.insert(0, "_d = self.__dict__")
    if post_init:
        body.append("self.__post_init__()")
    shown = [f[0] for f in fields if f[3]]
    compared = [f[0] for f in fields if f[4]]
    hashed = [f[0] for f in fields if (f[5] if f[5] is not None else f[4])]
    lines = [
        f"def {fn}(cls, __d, __f):",
        f"    def __init__({', '.join(params)}):",
        *[f"        {line}" for line in body or ["pass"]],
        "    def __repr__(self):",
        '        return (self.__class__.__qualname__ + f"('
        + ", ".join(f"{n}={{self.{n}!r}}" for n in shown)
        + ')")',
        "    def __eq__(self, other):",
        "        if other.__class__ is self.__class__:",
        f"            return {_tuple('self', compared)} == {_tuple('other', compared)}",
        "        return NotImplemented",
        "    out = {'__init__': __init__, '__repr__': __repr__, '__eq__': __eq__, '__hash__': None}",
    ]
    if frozen:
        lines += [
            "    def __hash__(self):",
            f"        return hash({_tuple('self', hashed)})",
            "    def __setattr__(self, name, value):",
            f"        if type(self) is cls or name in {tuple(names)!r}:",
            '            raise FrozenInstanceError(f"cannot assign to field {name!r}")',
            "        super(cls, self).__setattr__(name, value)",
            "    def __delattr__(self, name):",
            f"        if type(self) is cls or name in {tuple(names)!r}:",
            '            raise FrozenInstanceError(f"cannot delete field {name!r}")',
            "        super(cls, self).__delattr__(name)",
            "    out.update(__hash__=__hash__, __setattr__=__setattr__, __delattr__=__delattr__)",
        ]
        if slots:
            lines += [
                "    def __getstate__(self):",
                f"        return [getattr(self, name) for name in {tuple(names)!r}]",
                "    def __setstate__(self, state):",
                f"        for name, value in zip({tuple(names)!r}, state):",
                "            _set(self, name, value)",
                "    out.update(__getstate__=__getstate__, __setstate__=__setstate__)",
            ]
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def _tuple(who: str, names: list[str]) -> str:
    return "(" + "".join(f"{who}.{n}, " for n in names).rstrip(" ") + ")"


PRELUDE = """from dataclasses import FrozenInstanceError

_set = object.__setattr__


class _Factory:
    def __repr__(self):
        return '<factory>'


_FACTORY = _Factory()  # the default of a parameter whose field has a default factory
"""


def generate() -> str:
    """The text of ``_valueclasses_made.py`` for every class decorated so far (import them first)."""
    out = [
        '"""Generated by `python -m nexus.valueclasses --write` from the classes themselves: do not edit.',
        "",
        "The methods ``dataclasses.dataclass`` would compile at import, for ``nexus.valueclasses``.",
        '"""',
        "",
        "# ruff: noqa",
        "# mypy: ignore-errors",
        PRELUDE,
    ]
    table = []
    for (module, qualname), (form,) in sorted(SEEN.items()):
        if form is None:
            continue
        key = f"{module}:{qualname}"
        out += ["", source(key, form)]
        table.append(f"    {key!r}: ({form!r}, _{key.replace('.', '_').replace(':', '__')}),")
    out += ["", "MADE = {", *table, "}", ""]
    return "\n".join(out)


def _import_all() -> None:
    import importlib
    import pkgutil
    from pathlib import Path

    root = Path(__file__).resolve().parent
    for info in pkgutil.walk_packages([str(root)], "nexus."):
        path = root.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if source.is_file() and "valueclasses import dataclass" in source.read_text(encoding="utf-8"):
            importlib.import_module(info.name)


def main(argv: list[str] | None = None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m nexus.valueclasses", description=__doc__)
    parser.add_argument("--write", action="store_true", help="regenerate nexus/_valueclasses_made.py")
    parser.add_argument("--check", action="store_true", help="exit 1 when it is not up to date")
    args = parser.parse_args(argv)
    from nexus import valueclasses  # (run as __main__, this module is another copy)

    valueclasses.GENERATING = True
    valueclasses._import_all()
    target = Path(__file__).resolve().parent / "_valueclasses_made.py"
    text = valueclasses.generate()
    if args.write:
        target.write_text(text, encoding="utf-8")
        made = sum(1 for v in valueclasses.SEEN.values() if v[0] is not None)
        print(f"wrote {target} ({made} of {len(valueclasses.SEEN)} classes)")
        return 0
    current = target.read_text(encoding="utf-8") if target.is_file() else ""
    if current != text:
        print(f"{target} is out of date: run `python -m nexus.valueclasses --write`")
        return 1
    print(f"{target} is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
