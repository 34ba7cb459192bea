"""Fakes of what Ray Serve hands a `RequestRouter`, to run the router without a cluster (its
tests and `bench/ray_router.py`): a replica as the router reads it, and a pending request."""

from __future__ import annotations

from typing import Any

import attrs
from ray.serve._private.common import ReplicaID
from ray.serve.request_router import PendingRequest


@attrs.define
class FakeReplica:
    """What a router reads of a `RunningReplica`: its id, its routing stats (the report it
    published), and Ray's probe of its queue (empty)."""

    replica_id: ReplicaID
    routing_stats: dict[str, Any]
    node_id: str = "node"
    availability_zone: str | None = None
    multiplexed_model_ids: set[str] = attrs.Factory(set)
    max_ongoing_requests: int = 256
    is_cross_language: bool = False

    async def get_queue_len(self, deadline_s: float) -> int:
        """Ray's probe of a new replica's queue (none here)."""
        return 0


@attrs.define
class Metadata:
    """A request's metadata, as much of it as a router reads."""

    internal_request_id: str
    multiplexed_model_id: str = ""


def pending(args: list[Any], request_id: str) -> PendingRequest:
    """A pending request of positional `args` (its metadata a fake: the router reads its id)."""
    return PendingRequest(args, {}, Metadata(request_id))  # type: ignore[arg-type]
