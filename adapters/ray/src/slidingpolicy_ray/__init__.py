"""slidingpolicy-ray: the SLO-aware router as a Ray Serve `RequestRouter`
(`SloAwareRequestRouter`), over replicas that each run transformers' continuous batching with
a slidingpolicy scheduler and publish their reports through `record_routing_stats`.
`python -m slidingpolicy_ray serve MODEL --replicas 2 --router slo-aware` serves a model
folder on a local Ray cluster over the API `slidingpolicy replay --url` speaks.
"""

from slidingpolicy_ray.choice import Choice, choose, on_wall_clock, report_in, request_of

__all__ = ["Choice", "choose", "on_wall_clock", "report_in", "request_of"]
