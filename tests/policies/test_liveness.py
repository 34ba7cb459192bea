"""Liveness (issue 14, defect 2): every registered policy, in every configuration, serves a
request at light load within its SLO, and every run completes.

Eq. 9 charges nothing for work left to the next iteration, and the receding horizon re-plans
every step, so a split can postpone a queue that fits now for ever: before the chunker took
the whole queue when it fits within T_cur, `window=3`, `split_search="ternary"` or a margin
left a lone request waiting past its TTFT at 0.05 req/s.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import by_name, default_predictor
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.policies.registry import names
from slidingpolicy.policies.variants import FIXED, variant_options
from slidingpolicy.workloads.records import RequestSpec, Workload
from slidingpolicy.workloads.slos import DATASET_SLOS
from slidingpolicy.workloads.uniform import CHAT, DOCUMENTS

SLIDING_CHOICES: dict[str, st.SearchStrategy[Any]] = {
    "window": st.integers(1, 4),
    "split_search": st.sampled_from(["exact", "ternary"]),
    "latency_margin": st.sampled_from([None, 1.0, 1.1, 1.5]),
    "constructor": st.booleans(),
    "level_order": st.sampled_from(["remaining", "deadline"]),
    "urgent_first": st.booleans(),
    "max_batch_tokens": st.sampled_from([256, 2048]),
    "late_grace": st.sampled_from([None, 0.0, 3.0]),
    "late_share": st.sampled_from([1.0, 0.1]),
    "kv_headroom": st.sampled_from([0, 16, 4096]),
    "shed_bursts": st.booleans(),
    "give_up_after": st.sampled_from([None, 0.0, 5.0]),
}
LEARNING: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
    [
        {},
        {"learn": False},
        {"learn": True},
        {"refit_every": 8, "warmup": 4},
        {"cold_margin": 1.0, "warmup": 0},
        {"cold_margin": 2.0},
    ]
)
"""Online learning as each policy does by default, off, on, and tuned."""


@st.composite
def configured(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A registered policy, its online learning, and, for SlidingServe's variants, any
    options it leaves free."""
    name = draw(st.sampled_from(names()))
    learning = draw(LEARNING)
    if name not in FIXED:
        return name, learning
    free = [o for o in variant_options(name) if o in SLIDING_CHOICES]
    if FIXED[name].get("order") == "edf":
        free.remove("shed_bursts")  # shedding demotes in MLPS's levels; EDF has none
    chosen = draw(st.lists(st.sampled_from(free), unique=True)) if free else []
    return name, {**learning, **{option: draw(SLIDING_CHOICES[option]) for option in chosen}}


LONGEST_PROMPT = {"chat": CHAT.prompt_quantiles[-1], "documents": DOCUMENTS.prompt_quantiles[-1]}
"""The data sets whose prompts are short (sized for a CPU engine): a request of theirs is no
longer than their table's longest prompt; any other is up to 8192 tokens."""


@st.composite
def source_and_prompt(draw: st.DrawFn) -> tuple[str, int]:
    """A data set, and a prompt length it can hold."""
    source = draw(st.sampled_from(sorted(DATASET_SLOS)))
    return source, draw(st.integers(1, LONGEST_PROMPT.get(source, 8192)))


@given(
    configured(),
    source_and_prompt(),
    st.integers(1, 40),
    st.floats(0.0, 30.0),
    st.integers(50, 600),
    st.floats(0.0, 5.0),
)
@settings(max_examples=80, deadline=None)
def test_a_request_at_light_load_meets_its_slo_under_every_policy(
    policy: tuple[str, dict[str, Any]],
    data: tuple[str, int],
    output: int,
    arrival: float,
    neighbour_output: int,
    lead: float,
) -> None:
    """A request arriving while one other request decodes (the chunker's T_cur binds, so a
    split could defer it), and the same request alone 600 s later: all meet TTFT and TBT."""
    name, options = policy
    source, prompt = data
    slo = DATASET_SLOS[source]
    chat = DATASET_SLOS["sharegpt"]
    requests = (
        RequestSpec("neighbour", arrival, 300, neighbour_output, chat.ttft, chat.tbt, "sharegpt"),
        RequestSpec("joining", arrival + lead, prompt, output, slo.ttft, slo.tbt, source),
        RequestSpec("alone", arrival + 600.0, prompt, output, slo.ttft, slo.tbt, source),
    )
    run = simulate(
        by_name(name, default_predictor(), **options),
        Workload("light", requests),
        default_hardware(),
        seed=0,
    )
    assert not run.stalled, (name, options)
    assert run.metrics.attainment == 1.0, (name, options, run.metrics)
