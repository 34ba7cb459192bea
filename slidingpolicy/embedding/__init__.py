"""A policy's life inside an engine, written once for every engine: what an adapter is told
(`AdapterConfig`), the loop that decides, checks, falls back, gives up, learns and traces
(`PolicyLoop`, over the adapter's `EngineView`), its one clock (`Clock`), the one reader of a
request's SLOs on the wire (`slo_on_wire`), and what a client of a request finished alone is
told (`GIVEN_UP_NOTICE`, `REFUSED_NOTICE`). The Prometheus metrics an adapter exports are in
`slidingpolicy.embedding.prometheus` (the ``prometheus`` extra).
"""

from slidingpolicy.embedding.clock import Clock
from slidingpolicy.embedding.config import AdapterConfig
from slidingpolicy.embedding.executed import executed_plan
from slidingpolicy.embedding.loop import EngineView, PolicyLoop, StepMetrics, require_budget
from slidingpolicy.embedding.notices import (
    GIVEN_UP_NOTICE,
    REFUSED,
    REFUSED_NOTICE,
    given_up_notice,
    refused_notice,
)
from slidingpolicy.embedding.steps import Decision
from slidingpolicy.embedding.version import (
    check_attributes,
    check_hook,
    check_series,
    version_series,
)
from slidingpolicy.embedding.wire import ANY_SLO, WIRE, slo_on_wire

__all__ = [
    "ANY_SLO",
    "GIVEN_UP_NOTICE",
    "REFUSED",
    "REFUSED_NOTICE",
    "WIRE",
    "AdapterConfig",
    "Clock",
    "Decision",
    "EngineView",
    "PolicyLoop",
    "StepMetrics",
    "check_attributes",
    "check_hook",
    "check_series",
    "executed_plan",
    "given_up_notice",
    "refused_notice",
    "require_budget",
    "slo_on_wire",
    "version_series",
]
