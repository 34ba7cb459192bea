"""`replay --launch ENGINE`: one server per arm on 127.0.0.1, each a target of the replay.

The engine's arms are parsed and its Python checked before anything starts; the model is a
folder given, or a packaged shape written to a temporary folder; every server gets the same
arguments but its arm's, its log under OUT/servers, and, for a policy arm, its step trace
under the trace folder. The servers are held by the caller's `ExitStack`, which stops them
by their process groups however it is left.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from types import MappingProxyType

import attrs

from slidingpolicy._paths import as_optional_path, as_path
from slidingpolicy.errors import EngineError
from slidingpolicy.replay.engines import Arm, Engine, engine_python, parse_arms
from slidingpolicy.replay.launcher import Server, free_port, running
from slidingpolicy.replay.shapes import vocab_size, write_shape
from slidingpolicy.replay.targets import Target
from slidingpolicy.replay.transformers_server import TRANSFORMERS
from slidingpolicy.replay.vllm_server import VLLM

ENGINES = MappingProxyType({e.name: e for e in (VLLM, TRANSFORMERS)})
"""The engines `--launch` names."""


def engine_named(name: str) -> Engine:
    """The engine `--launch NAME` names; an `EngineError` listing them otherwise."""
    if name not in ENGINES:
        known = " or ".join(repr(n) for n in ENGINES)
        raise EngineError(f"--launch {name!r}: the engines it can launch are {known}")
    return ENGINES[name]


@attrs.frozen(slots=True)
class Launch:
    """What to launch: `engine` under the arms of `policies`, serving the folder `model` or
    else the packaged `shape` (None: the engine's), from the Python `python` (None: not
    given), with `extra` arguments for every server; the policy arms price with `predictor`
    and write their traces under `trace_dir`, their servers loading `plugins`; the logs go
    under `out`/servers."""

    engine: Engine
    policies: str
    model: Path | None = attrs.field(converter=as_optional_path)
    shape: str | None
    python: Path | None = attrs.field(converter=as_optional_path)
    extra: Sequence[str]
    predictor: Path | None = attrs.field(converter=as_optional_path)
    trace_dir: Path | None = attrs.field(converter=as_optional_path)
    out: Path = attrs.field(converter=as_path)
    plugins: tuple[str, ...] = ()


def launch(stack: ExitStack, plan: Launch) -> tuple[list[Target], int]:
    """One target per arm, each with its (not yet started) server, held by `stack`, which
    stops them; and the model's vocabulary size."""
    engine = plan.engine
    arms = parse_arms(plan.policies, engine.natives, plan.plugins)
    python = engine_python(plan.python, engine)
    if plan.model is not None:
        folder, name = plan.model, plan.model.name
    else:
        shape = plan.shape or engine.shape
        temporary = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="replay-")))
        folder, name = write_shape(shape, temporary / shape), shape
    vocab = vocab_size(folder)
    targets = [_target(plan, arm, python, folder.resolve(), name) for arm in arms]
    stack.enter_context(running([t.server for t in targets if t.server is not None]))
    return targets, vocab


def _target(plan: Launch, arm: Arm, python: Path, folder: Path, name: str) -> Target:
    """The arm's target on a free port of 127.0.0.1, its server not started."""
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", arm.label)
    trace_dir = plan.trace_dir
    trace = None if trace_dir is None or arm.policy is None else trace_dir / f"{safe}.jsonl"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = plan.engine.command(python, folder, name, port, arm, plan.predictor, trace,
                                  plan.extra)  # fmt: skip
    env = plan.engine.env(os.environ)
    server = Server(arm.label, command, env, plan.out / "servers" / f"{safe}.log", url)
    return Target(arm.label, url, name, server)
