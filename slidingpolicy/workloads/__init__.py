"""Workloads for the offline engine: requests with lengths, arrival times and SLOs."""

from __future__ import annotations

from slidingpolicy.workloads.arrivals import (
    ArrivalProcess,
    Burst,
    Poisson,
    TraceTimes,
    arrival_times,
)
from slidingpolicy.workloads.lengths import LengthDistribution
from slidingpolicy.workloads.make import (
    load_workload,
    make_workload,
    trace_draw,
    trace_workload,
    workload_names,
)
from slidingpolicy.workloads.records import RequestSpec, Window, Workload, WorkloadColumns
from slidingpolicy.workloads.slos import Slo, dataset_slo, tiered_slos
from slidingpolicy.workloads.steady_state import WARMUP_SLOS, steady_state, stream_seed
from slidingpolicy.workloads.traces import Trace, load_trace

__all__ = [
    "WARMUP_SLOS",
    "ArrivalProcess",
    "Burst",
    "LengthDistribution",
    "Poisson",
    "RequestSpec",
    "Slo",
    "Trace",
    "TraceTimes",
    "Window",
    "Workload",
    "WorkloadColumns",
    "arrival_times",
    "dataset_slo",
    "load_trace",
    "load_workload",
    "make_workload",
    "steady_state",
    "stream_seed",
    "tiered_slos",
    "trace_draw",
    "trace_workload",
    "workload_names",
]
