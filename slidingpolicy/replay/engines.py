"""What `replay --launch` needs to know of an engine: its arms (its own schedulers by name, or a
registered policy run by its adapter), how to serve a model under one arm, and the Python of
the environment that holds it, checked before any server starts.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import EngineError, PolicyLabelError, UnknownNameError
from slidingpolicy.policies import by_name, names
from slidingpolicy.policies.labels import Options, label, parse_label, split_labels
from slidingpolicy.predictors import default_predictor

NATIVE = "native"
"""The arm of an engine's default scheduler, the adapter left out."""

FIND_WITHIN = 60.0
"""Seconds the engine's Python has to say whether it holds the adapter."""


@attrs.frozen(slots=True)
class Arm:
    """The engine's own scheduler `native` (when `policy` is None), or the registered
    `policy` with its options, and the plugins that register it in the server
    (`AdapterConfig.plugins`)."""

    policy: str | None = None
    options: Options = ()
    native: str = NATIVE
    plugins: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How results name the arm: the native scheduler's name, or the policy's label."""
        return self.native if self.policy is None else label(self.policy, self.options)


def parse_arms(
    text: str, natives: Sequence[str] = (NATIVE,), plugins: tuple[str, ...] = ()
) -> tuple[Arm, ...]:
    """The arms of a comma-separated list of `natives` and policy labels, each policy built
    once with its options to check them; a policy arm's server loads `plugins` (loaded here
    already)."""
    arms = []
    for part in split_labels(text):
        name, options = parse_label(part)
        if name in natives and not options:
            arms.append(Arm(native=name))
            continue
        if name not in names():
            raise UnknownNameError("arm", name, (*natives, *names()))
        by_name(name, default_predictor(), **dict(options))
        arms.append(Arm(name, options, plugins=plugins))
    if not arms:
        raise PolicyLabelError(
            f"--policies {text!r}: name at least one arm ({', '.join(natives)} or a policy)"
        )
    if len({a.label for a in arms}) < len(arms):
        raise PolicyLabelError(f"--policies {text!r}: an arm is named twice")
    return tuple(arms)


ServeCommand = Callable[
    [Path, Path, str, int, Arm, Path | None, Path | None, Sequence[str]], list[str]
]
"""(python, model folder, served name, port, arm, predictor, trace, extra args) → argv."""


@attrs.frozen(slots=True)
class Engine:
    """An engine `replay --launch NAME` starts, one server per arm.

    - `package`: the adapter, run as ``python -m PACKAGE serve ...``; `holds`: what its
      environment must have installed, as an error message says it;
    - `natives`: the names of the engine's own schedulers as arms;
    - `python_option`, `python_variable`: where the user names the environment's Python;
    - `shape`: the model shape served unless --shape or --model says otherwise;
    - `command`, `env`: a server's argv and environment (from this process's).
    """

    name: str
    package: str
    holds: str
    natives: tuple[str, ...]
    python_option: str
    python_variable: str
    shape: str
    command: ServeCommand
    env: Callable[[Mapping[str, str]], dict[str, str]]


def engine_python(given: StrPath | None, engine: Engine) -> Path:
    """The Python of `engine`'s environment: `given`, checked to be an executable file that
    finds the adapter package (without importing it, which can take seconds)."""
    given = None if given is None else Path(given)
    option = engine.python_option
    if given is None:
        raise EngineError(
            f"--launch {engine.name} needs the Python of an environment with {engine.holds} "
            f"installed: pass {option} PATH or set {engine.python_variable}"
        )
    if not (given.is_file() and os.access(given, os.X_OK)):
        raise EngineError(f"{option} {given}: not an executable file")
    find = f"import importlib.util as u, sys; sys.exit(u.find_spec({engine.package!r}) is None)"
    try:
        found = subprocess.run(
            [str(given), "-c", find], capture_output=True, timeout=FIND_WITHIN, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EngineError(f"{option} {given}: cannot run it ({error})") from None
    if found.returncode != 0:
        raise EngineError(
            f"{option} {given}: cannot import {engine.package}; install {engine.holds} "
            "into that environment"
        )
    return given
