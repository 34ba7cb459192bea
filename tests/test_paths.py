"""Every public function that takes a path takes a str or any os.PathLike, as `open` does: read
off the annotations of every public module (all but the command line's, whose paths typer
builds) so that a new one cannot slip by, and `mypy --strict` holds each body to its
annotation. `ProfiledModel.from_csv("profile.csv", ...)` raised AttributeError before."""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import os
import pkgutil
import re
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import slidingpolicy
from slidingpolicy.hardware import ProfiledModel, RooflineModel, gpu, model
from slidingpolicy.hardware.profiled import PER_LAYER_OPS


def public_modules() -> Iterator[str]:
    """Every module of the package but the private ones and the command line's."""
    for info in pkgutil.walk_packages(slidingpolicy.__path__, "slidingpolicy."):
        parts = info.name.split(".")[1:]
        if not any(p.startswith("_") for p in parts) and parts[0] != "cli":
            yield info.name


def callables(module: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Each public function the module defines, and each public class's constructor and
    methods (`_called_by_users`), by its qualified name."""
    namespace = importlib.import_module(module)
    for name, value in vars(namespace).items():
        if name.startswith("_") or getattr(value, "__module__", None) != module:
            continue
        if inspect.isfunction(value):
            yield f"{module}.{name}", value
        elif inspect.isclass(value):
            yield f"{module}.{name}", value.__init__
            for method, member in vars(value).items():
                function = getattr(member, "__func__", member)
                if _called_by_users(method) and inspect.isfunction(function):
                    yield f"{module}.{name}.{method}", function


def _called_by_users(method: str) -> bool:
    """Whether users call `method`: not a private one, nor a test a shipped pytest suite holds
    (pytest calls it, its arguments are fixtures, `tmp_path` a `Path`)."""
    return not method.startswith(("_", "test_"))


def accepts_str(annotation: Any) -> bool:
    """Whether a parameter so annotated takes a str wherever it takes a `Path` (each member
    of a union, each item of a container); a callable's parameters are not the caller's."""
    if annotation is Path:
        return False
    origin = typing.get_origin(annotation)
    if origin is collections.abc.Callable:
        return True
    arguments = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if Path in arguments:
            return str in arguments and os.PathLike[str] in arguments
        return all(accepts_str(a) for a in arguments)
    return all(accepts_str(a) for a in arguments)


def parameter_types(function: Callable[..., Any]) -> dict[str, Any]:
    """The parameters' annotations, resolved; where one cannot be (a type imported only for
    the type checker, one subscripted only there), each as written, a `Path` then read off the
    text (`StrPath` for str or any os.PathLike)."""
    try:
        return typing.get_type_hints(function)
    except (NameError, TypeError):
        written = inspect.get_annotations(function)
        return {k: Path if re.search(r"\bPath\b", str(v)) else v for k, v in written.items()}


def path_parameters() -> Iterator[tuple[str, str, Any]]:
    """(callable, parameter, annotation) for every public parameter that mentions a `Path`."""
    for module in public_modules():
        for where, function in callables(module):
            for parameter, annotation in parameter_types(function).items():
                if parameter != "return" and "Path" in repr(annotation):
                    yield where, parameter, annotation


def test_every_public_path_parameter_takes_a_str_or_any_path_like() -> None:
    found = list(path_parameters())
    offenders = [f"{w}({p}: {a})" for w, p, a in found if not accepts_str(a)]
    assert offenders == []
    assert len(found) > 40, "the walk finds the path parameters"


@pytest.mark.parametrize(
    ("annotation", "accepted"),
    [
        (Path, False),
        (Path | None, False),
        (collections.abc.Sequence[Path], False),
        (str | os.PathLike[str], True),
        (str | os.PathLike[str] | None, True),
        (collections.abc.Sequence[str | os.PathLike[str]], True),
        (Path | str, False),
        (Callable[[Path], None], True),
    ],
)
def test_the_check_tells_the_annotations_apart(annotation: Any, accepted: bool) -> None:
    assert accepts_str(annotation) is accepted


def test_a_profile_is_read_from_a_str(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: AttributeError: 'str' object has no attribute 'name'."""
    header = ["num_tokens", "num_tensor_parallel_workers"]
    header += [f"time_stats.{op}.median" for op in PER_LAYER_OPS]
    rows = [[str(t), "1"] + [str(t / 1000)] * len(PER_LAYER_OPS) for t in (1, 100)]
    (tmp_path / "profile.csv").write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n")
    monkeypatch.chdir(tmp_path)
    roofline = RooflineModel(gpu("a100-80g"), model("llama3-8b"), 1)
    from_str = ProfiledModel.from_csv("profile.csv", roofline)
    assert from_str.name == ProfiledModel.from_csv(tmp_path / "profile.csv", roofline).name
