"""What a cluster run gives back: the run's output as a single run gives it (one token log,
one set of metrics), and what the routing did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from slidingpolicy.engine.bookkeeping import Tally
from slidingpolicy.engine.run_types import RunOutput


@attrs.frozen(slots=True)
class ClusterStats:
    """What the router did: requests routed to each replica (retries included), early
    notices, and requests given up by a replica and routed once more."""

    routed: tuple[int, ...]
    notices: int
    retries: int

    def to_dict(self) -> dict[str, Any]:
        """JSON values."""
        return {"routed": list(self.routed), "notices": self.notices, "retries": self.retries}


@attrs.frozen(slots=True)
class ClusterOutput:
    """A cluster run: its output (metrics over every replica's requests, engine figures
    summed, `policy_state` a tuple of each replica's) and the router's figures."""

    run: RunOutput
    cluster: ClusterStats


def merged(tallies: Sequence[Tally]) -> Tally:
    """One tally of several replicas': counts summed, the policy's CPU times in replica
    order (one replica's is its own)."""
    total = Tally()
    for tally in tallies:
        total.iterations += tally.iterations
        total.decisions += tally.decisions
        total.decode_runs += tally.decode_runs
        total.run_iterations += tally.run_iterations
        total.cpu.extend(tally.cpu)
        total.pred_abs += tally.pred_abs
        total.pred_signed += tally.pred_signed
        total.pred_count += tally.pred_count
    return total
