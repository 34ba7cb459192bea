"""What a binding gives the conformance suite (`conformance`): a `Harness` that runs a `Trial`
(jobs through its engine, steered by an adapter config) and tells how each request ended
(`Run`), what its doors say of SLO keys, its metrics, and its server (`Served`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import attrs

from slidingpolicy._paths import as_path
from slidingpolicy.embedding.loop import PolicyLoop

Prepare = Callable[[PolicyLoop[Any]], None]


@attrs.frozen(slots=True)
class Job:
    """A request of `prompt` tokens asking `output` tokens, added `arrive` seconds after the
    first, with SLO keys as a client sends them; its client leaves once it has read
    `leave_after` tokens (None: it stays to the end)."""

    prompt: int
    output: int
    arrive: float = 0.0
    slo: Mapping[str, Any] = attrs.field(factory=dict)
    leave_after: int | None = None


@attrs.frozen(slots=True)
class Trial:
    """What to run: `jobs` through the engine steered by the adapter config `config`, with
    `prepare` called with the policy's loop before the first step, the engine holding
    `engine_budget` tokens a step (None: what the policy plans)."""

    jobs: Sequence[Job]
    config: Mapping[str, Any]
    prepare: Prepare | None = None
    engine_budget: int | None = None


@attrs.frozen(slots=True)
class Finished:
    """How a request ended for its client: the tokens it received, the notice it was
    finished with (None: it ran to its end), and whether it was cancelled."""

    tokens: int
    notice: str | None = None
    cancelled: bool = False


@attrs.frozen(slots=True)
class Run:
    """What a run of jobs did: each request's end by id (``r0``, ``r1``, … in job order),
    the policy's loop, and the engine's token budget a step."""

    finished: Mapping[str, Finished]
    loop: PolicyLoop[Any]
    engine_budget: int


@attrs.frozen(slots=True)
class Served:
    """A server of the binding on 127.0.0.1: its base URL, the model name it answers to and
    the file its output goes to."""

    url: str
    model: str
    log: Path = attrs.field(converter=as_path)


class Harness(Protocol):
    """What a binding gives the suite."""

    def run(self, trial: Trial) -> Run:
        """Run the trial; a bad adapter config raises `InvalidRecordError` naming its field."""

    def admit(self, slo: object) -> Sequence[str | None]:
        """What each door of the binding says of a request carrying `slo` (its
        ``vllm_xargs``): None where it is admitted, else the refusal's message."""

    def metrics(self) -> str:
        """The metrics as the engine's operators read them (Prometheus' text format)."""

    def serve(self, config: Mapping[str, Any]) -> AbstractContextManager[Served] | None:
        """A server steered by `config`, stopped on leaving; None for a binding without one."""
