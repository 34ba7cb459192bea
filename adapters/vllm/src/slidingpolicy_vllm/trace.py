"""The per-step trace: one JSONL line of (state, plan) per planned step.

Each line is the codec's document ({"state", "plan", "token_budget"}), which
`slidingpolicy check` reads, plus what vLLM really ran ("scheduled": id → tokens) and
"fallback" (null, or why vLLM scheduled the step itself); `check` ignores the extra keys.
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
        plan: BatchPlan,
        token_budget: int,
        scheduled: dict[str, int],
        fallback: str | None,
    ) -> None:
        """Append one step."""
        document = {
            "state": state_to_dict(state),
            "plan": plan_to_dict(plan),
            "token_budget": token_budget,
            "scheduled": scheduled,
            "fallback": fallback,
        }
        self._file.write(json.dumps(document, sort_keys=True) + "\n")

    def close(self) -> None:
        """Close the file."""
        self._file.close()
