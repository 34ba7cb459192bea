"""How a cluster runs: how many replicas, behind which router, how stale their reports are,
and whether a request a replica gives up is routed once more."""

from __future__ import annotations

from typing import Any

import attrs

from slidingpolicy import _validate
from slidingpolicy.policies.labels import Options, label
from slidingpolicy.routing import Router, by_name


def _options(value: Options | list[tuple[str, Any]]) -> Options:
    return tuple((name, option) for name, option in value)


@attrs.frozen(slots=True)
class ClusterSpec:
    """A cluster of identical replicas, each running the run's policy on its hardware.

    - `replicas`: how many replicas (N ≥ 1).
    - `router`: the router's registered name (`slidingpolicy.routing.names`).
    - `router_options`: its keyword options, as (name, value) pairs.
    - `report_period`: seconds between the replicas' reports (0: a router reads each
      replica's state at every decision; Ray Serve's default is 10).
    - `reroute`: a request a replica gives up (`give_up_after`) is routed once more, to
      another replica, unless the router predicts it late everywhere; it is given up for
      good if it is given up again.
    """

    replicas: int = 1
    router: str = "round-robin"
    router_options: Options = attrs.field(default=(), converter=_options)
    report_period: float = 0.0
    reroute: bool = False

    def __attrs_post_init__(self) -> None:
        record = "cluster"
        _validate.integer(record, "replicas", self.replicas, 1)
        _validate.seconds(record, "report_period", self.report_period)
        _validate.flag(record, "reroute", self.reroute)
        self.build()

    def build(self) -> Router:
        """The router (raises for an unknown name or a bad option)."""
        return by_name(self.router, **dict(self.router_options))

    @property
    def label(self) -> str:
        """How results name the cluster, e.g. ``16×slo-aware`` or
        ``4×power-of-two, reports 10 s``."""
        text = f"{self.replicas}×{label(self.router, self.router_options)}"
        if self.report_period > 0.0:
            text += f", reports {self.report_period:g} s"
        return text + (", reroute" if self.reroute else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON values."""
        data = attrs.asdict(self)
        data["router_options"] = dict(self.router_options)
        return data
