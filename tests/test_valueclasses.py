"""Value classes whose methods were generated ahead (``nexus.valueclasses``) behave as the standard
``dataclasses.dataclass`` ones, class by class; the generated module is up to date; and every form the
generator writes (defaults, factories, ``init``/``repr``/``compare``/``hash`` flags, ``frozen``,
``slots``, ``__post_init__``) matches the standard methods on classes made for the test."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from nexus import valueclasses


def _classes() -> list[tuple[Any, tuple[Any, ...] | None]]:
    valueclasses._import_all()
    out = []
    for (module, qualname), (form,) in sorted(valueclasses.SEEN.items()):
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        out.append((obj, form))
    return out


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("value", call())
    except Exception as exc:
        return ("raised", type(exc))


def _twin(cls: Any, frozen: bool, slots: bool) -> Any:
    """The same fields made by the standard dataclass."""
    specs: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        kw: dict[str, Any] = {"init": f.init, "repr": f.repr, "compare": f.compare, "hash": f.hash}
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kw["default_factory"] = f.default_factory
        specs.append((f.name, f.type, dataclasses.field(**kw)))
    namespace = {"__post_init__": cls.__dict__["__post_init__"]} if "__post_init__" in cls.__dict__ else {}
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen, slots=slots, namespace=namespace)
    twin.__qualname__ = cls.__qualname__
    return twin


def _args(cls: Any) -> list[str]:
    return [f"v{i}" for i, f in enumerate(dataclasses.fields(cls)) if f.init]


def _same(ours: Any, standard: Any, frozen: bool) -> None:
    """``ours`` (generated methods) and ``standard`` behave alike, one method at a time."""
    assert str(inspect.signature(ours.__init__)) == str(inspect.signature(standard.__init__))
    assert ours.__match_args__ == standard.__match_args__
    args = _args(ours)
    a, b = ours(*args), standard(*args)
    assert repr(a) == repr(b)
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert (a == ours(*args)) == (b == standard(*args))
    if args:
        other = [f"{args[0]}x", *args[1:]]
        assert (a == ours(*other)) == (b == standard(*other))
    assert (a == object()) == (b == object())
    assert _outcome(lambda: hash(a) == hash(ours(*args))) == _outcome(
        lambda: hash(b) == hash(standard(*args))
    )
    assert (ours.__hash__ is None) == (standard.__hash__ is None)
    name = dataclasses.fields(ours)[0].name if dataclasses.fields(ours) else "anything"
    assert _outcome(lambda: setattr(a, name, "new")) == _outcome(lambda: setattr(b, name, "new"))
    assert _outcome(lambda: delattr(a, name)) == _outcome(lambda: delattr(b, name))
    if frozen:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(a, name, "again")


def test_the_generated_methods_are_up_to_date() -> None:
    """(In a process of its own: the generator makes every class the standard way while it reads them.)"""
    run = subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus.valueclasses", "--check"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_value_class_gets_its_methods_ahead_and_they_behave_as_the_standard_ones() -> None:
    classes = _classes()
    assert len(classes) > 40  # (the records, the coordination state, the log's, …)
    for cls, form in classes:
        assert form is not None, f"{cls.__qualname__}: a form nexus.valueclasses does not generate"
        assert cls.__init__.__module__ == "nexus._valueclasses_made", (
            f"{cls.__qualname__} was compiled at import"
        )
        frozen, slots = form[0], form[1]
        _same(cls, _twin(cls, frozen, slots), frozen)
        # each says what it is (an undocumented one would get the standard doc: its signature, worked
        # out with `inspect` at import)
        assert cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("), cls.__qualname__
        value = cls(*_args(cls))
        assert pickle.loads(pickle.dumps(value)) == value


def _body(post_init: bool) -> dict[str, Any]:
    """A class body with every field form the generator writes."""
    calls: list[str] = []

    def __post_init__(self: Any) -> None:
        calls.append("post")

    body: dict[str, Any] = {
        "__annotations__": {
            "a": "str",
            "b": "int",
            "c": "list[int]",
            "d": "str",
            "e": "dict[str, int]",
            "f": "str",
            "g": "str",
            "h": "int",
        },
        "b": 2,
        "c": dataclasses.field(default_factory=list),
        "d": dataclasses.field(default="dee", init=False),
        "e": dataclasses.field(default_factory=dict, init=False, compare=False),
        "f": dataclasses.field(default="eff", repr=False),
        "g": dataclasses.field(default="gee", compare=False),
        "h": dataclasses.field(default=8, compare=False, hash=True),
        "__module__": __name__,
    }
    if post_init:
        body["__post_init__"] = __post_init__
    return body


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("slots", [True, False])
@pytest.mark.parametrize("post_init", [True, False])
def test_every_form_the_generator_writes_matches_the_standard_methods(
    frozen: bool, slots: bool, post_init: bool
) -> None:
    form = valueclasses.shape(type("Sample", (), _body(post_init)), frozen, slots)
    assert form is not None
    namespace: dict[str, Any] = {}
    exec(valueclasses.PRELUDE + valueclasses.source("tests:Sample", form), namespace)
    ours = valueclasses.attach(type("Sample", (), _body(post_init)), namespace["_tests__Sample"], slots)
    standard: Any = dataclasses.dataclass(type("Sample", (), _body(post_init)), frozen=frozen, slots=slots)
    _same(ours, standard, frozen)
    assert ours.__doc__ == standard.__doc__  # (undocumented: the class's signature, as the standard)
    x, y = ours("a"), standard("a")
    assert (x.b, x.c, x.d, x.e, x.f, x.g, x.h) == (y.b, y.c, y.d, y.e, y.f, y.g, y.h)
    assert ours("a", g="other") == ours("a")  # (compare=False)
    assert ours("a").c is not ours("a").c  # a factory makes a new value each time
    if frozen:
        assert hash(ours("a", c=(), h=1)) != hash(ours("a", c=(), h=2))  # (hash=True without compare)
        assert hash(ours("a", c=(), g="x")) == hash(ours("a", c=(), g="y"))
        assert hash(ours("a", c=())) == hash(standard("a", c=()))
        if slots:  # what pickling does with a frozen class that has slots
            copy: Any = object.__new__(ours)
            copy.__setstate__(x.__getstate__())
            assert copy == x and x.__getstate__() == y.__getstate__()


def test_a_class_whose_shape_changed_is_made_by_the_standard_dataclass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A class edited after the methods were generated (or of a form never generated) is made the
    standard way: slower, never wrong."""
    monkeypatch.setattr(valueclasses, "SEEN", dict(valueclasses.SEEN))  # (what the generator reads)
    body = {"__annotations__": {"a": "str"}, "__module__": "nexus.records", "__qualname__": "Entry"}
    cls = valueclasses.dataclass(type("Entry", (), body), frozen=True)
    assert cls.__init__.__module__ != "nexus._valueclasses_made"
    assert repr(cls("x")) == "Entry(a='x')"
    inherited = valueclasses.dataclass(type("Child", (cls,), {"__annotations__": {"b": "int"}}), frozen=True)
    assert repr(inherited("x", 1)) == "Child(a='x', b=1)"
    ordered = valueclasses.dataclass(order=True)(type("Pair", (), {"__annotations__": {"a": "int"}}))
    assert ordered(1) < ordered(2)  # (an option it does not generate: the standard dataclass)


def test_a_field_held_by_a_data_descriptor_is_not_generated() -> None:
    """Generated frozen methods write fields straight into the instance's dict; a class attribute
    that is a data descriptor would hold the value instead, so such a class is not generated."""

    class Loud:
        def __get__(self, obj: object, owner: type | None = None) -> str:
            return "from the descriptor"

        def __set__(self, obj: object, value: object) -> None:
            raise AttributeError("read-only")

    body = {"__annotations__": {"a": "str"}, "a": Loud()}
    assert valueclasses.shape(type("Held", (), body), True, False) is None
    assert valueclasses.shape(type("Plain", (), {"__annotations__": {"a": "str"}}), True, False) is not None
