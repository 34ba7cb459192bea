"""The replicas' reports as a router reads them: fresh at each decision, each made only when
the router reads it (`Fresh`), or as they were at the last report period (a plain dict)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from slidingpolicy.cluster.replica import Replica
from slidingpolicy.routing import ReplicaReport


class Fresh(Mapping[str, ReplicaReport]):
    """Every replica's report at `at` (but `left_out`'s), each made when a router reads it:
    round robin reads none, power of two reads two (as Ray's router probes two replicas)."""

    def __init__(self, replicas: Sequence[Replica], at: float, left_out: Replica | None) -> None:
        self.replicas = {r.name: r for r in replicas if r is not left_out}
        self.at = at

    def __getitem__(self, name: str) -> ReplicaReport:
        return self.replicas[name].report(self.at)

    def __iter__(self) -> Iterator[str]:
        return iter(self.replicas)

    def __len__(self) -> int:
        return len(self.replicas)


def periodic(replicas: Sequence[Replica], at: float) -> dict[str, ReplicaReport]:
    """Every replica's report made at `at`: what a router holds until the next period."""
    return {r.name: r.report(at) for r in replicas}
