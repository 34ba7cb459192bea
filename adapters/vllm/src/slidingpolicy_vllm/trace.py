"""The per-step trace: one JSONL line per step the adapter took a snapshot for.

Each line is a JSON object, keys sorted:

- `"state"`: the snapshot the policy planned on (the codec's state: `slidingpolicy.codec`).
- `"plan"`: the policy's plan (the codec's plan), or null when the policy raised and vLLM
  scheduled the step itself.
- `"token_budget"`: the policy's token budget (an int).
- `"scheduled"`: what vLLM really ran, request id → tokens.
- `"fallback"`: null, or why vLLM scheduled the step itself (the policy raised, or its plan
  broke an invariant: then `"plan"` is that plan).
- `"latency"`: the step's measured time in seconds, from its start (the later of its
  scheduling and the previous step's output) to its output: the time the policy's `observe`
  is given. Null only when no output came for the step (e.g. the engine shut down first).

A line is written when the step's output arrives, so lines follow the steps' order.
`slidingpolicy check` reads the first three keys (and skips lines whose plan is null);
a step's batch (`"scheduled"` of `"state"`'s requests) and `"latency"` calibrate a
latency model of the engine that ran it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from slidingpolicy import BatchPlan, SchedulerState
from slidingpolicy.codec import plan_to_dict, state_to_dict


class Trace:
    """An open JSONL trace file; line-buffered so a crashed engine leaves whole lines."""

    def __init__(self, path: str) -> None:
        self._file: TextIO = Path(path).open("a", buffering=1)  # noqa: SIM115 (held open)

    def write(
        self,
        state: SchedulerState,
        plan: BatchPlan | None,
        token_budget: int,
        scheduled: dict[str, int],
        fallback: str | None,
        latency: float | None,
    ) -> None:
        """Append one step."""
        document = {
            "state": state_to_dict(state),
            "plan": None if plan is None else plan_to_dict(plan),
            "token_budget": token_budget,
            "scheduled": scheduled,
            "fallback": fallback,
            "latency": latency,
        }
        self._file.write(json.dumps(document, sort_keys=True) + "\n")

    def close(self) -> None:
        """Close the file."""
        self._file.close()
