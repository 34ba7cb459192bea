"""The application: N replicas of a model folder under a policy, behind the door, routed by
our SLO-aware router (`router.SloAwareRequestRouter`) or Ray's default one, and the command
that serves it on a local Ray cluster (`python -m slidingpolicy_ray serve`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
from ray.serve.config import RequestRouterConfig

from slidingpolicy_ray.deployment import Ingress, Replica
from slidingpolicy_ray.router import SloAwareRequestRouter

DEFAULT = "default"
"""The router label that keeps Ray Serve's own (power of two choices)."""


@attrs.frozen(slots=True)
class AppSettings:
    """What the application runs.

    - `model`: a model folder (a `config.json` is enough: the weights are random);
    - `arm`: the replicas' policy label (or ``native``, transformers' own FIFO);
    - `adapter`: the adapter's other settings (`AdapterConfig`: predictor, ttft_slo, ...);
    - `replicas`, `replica_cpus`: how many replicas, the CPUs each reserves;
    - `router`: ``default`` (Ray's) or a `slidingpolicy.routing` router label;
    - `stats_period`: seconds between a replica's reports (`request_routing_stats_period_s`);
    - `max_ongoing`: requests a replica holds at once (Ray queues the rest in its router);
    - `num_blocks`: the KV cache's blocks in each replica.
    """

    model: Path
    arm: str = "slidingserve+"
    adapter: dict[str, Any] = attrs.field(factory=dict)
    replicas: int = 2
    replica_cpus: float = 1.0
    router: str = "slo-aware"
    stats_period: float = 0.5
    max_ongoing: int = 256
    num_blocks: int = 1024
    name: str | None = None

    @property
    def served_name(self) -> str:
        """The model's name in the API."""
        return self.name or self.model.name


def vocab_of(model: Path) -> int:
    """The vocabulary size of a model folder's `config.json`."""
    config = json.loads((model / "config.json").read_text())
    return int(config["vocab_size"])


def application(settings: AppSettings) -> Any:
    """The bound application (`serve.run` runs it)."""
    engine = {
        "model": str(settings.model),
        "arm": settings.arm,
        "adapter": settings.adapter,
        "num_blocks": settings.num_blocks,
    }
    config: dict[str, Any] = {
        "request_routing_stats_period_s": settings.stats_period,
        "request_routing_stats_timeout_s": max(settings.stats_period * 4, 5.0),
    }
    if settings.router != DEFAULT:
        config["request_router_class"] = SloAwareRequestRouter
        config["request_router_kwargs"] = {
            "router": settings.router,
            "ttft_slo": float(settings.adapter.get("ttft_slo", 3.0)),
            "tbt_slo": float(settings.adapter.get("tbt_slo", 0.1)),
        }
    router_config = RequestRouterConfig(**config)
    replicas = Replica.options(
        num_replicas=settings.replicas,
        max_ongoing_requests=settings.max_ongoing,
        ray_actor_options={"num_cpus": settings.replica_cpus},
        request_router_config=router_config,
    ).bind(engine)
    door = Ingress.options(
        max_ongoing_requests=4 * settings.max_ongoing, ray_actor_options={"num_cpus": 0}
    )
    return door.bind(replicas, settings.served_name, vocab_of(settings.model))
