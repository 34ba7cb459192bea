"""Hypothesis strategies for requests, queues, scheduler states, predictors and
configurations: the ones the library's own properties are proved on, for any policy.

States cover the corners the invariants care about: empty queues, decode-only and
prefill-only states, late requests (deadline passed), protected requests, huge and tiny
SLOs, partial prefills, KV limits from none to fewer slots than decodes, and states built
as an engine builds them between iterations (decodes beside a `CandidateQueue` that hides
the prompts the KV cache cannot hold yet).

Every state is taken at `NOW`; request ids are the prefix given and a number, so that the
requests of one state are distinct.
"""

from __future__ import annotations

from slidingpolicy import (
    CandidateQueue,
    LatencyPredictor,
    LinearModel,
    Request,
    SchedulerState,
    SlidingConfig,
)
from slidingpolicy.records.sliding_config import Order
from slidingpolicy.testing._hypothesis import st

NOW = 100.0
"""The time of every state drawn here (seconds)."""

# Realistic magnitudes of each weight (seconds per unit of x1..x7) on the built-in profiles.
SCALES = (1e-9, 1e-8, 1e-7, 1e-4, 1e-7, 2e-4, 1e-5)


TILE_SCALE = 1e-3
"""Seconds per GEMM tile (x8) on the quantized built-in GPUs, in magnitude."""


@st.composite
def linear_models(draw: st.DrawFn, tiled: bool = False) -> LinearModel:
    """A non-negative model; each weight is zero or within three decades of its scale (with
    an eighth, the tile count's, when `tiled`), and so is the intercept (zero or 10 µs to
    20 ms: an intercept of 1e-308 s carries a scale no float fit can read back)."""
    weights = []
    for scale in (*SCALES, TILE_SCALE) if tiled else SCALES:
        on = draw(st.booleans())
        weights.append(draw(st.floats(0.001, 3.0)) * scale if on else 0.0)
    intercept = draw(st.one_of(st.just(0.0), st.floats(1e-5, 0.02)))
    return LinearModel(intercept, tuple(weights))


@st.composite
def predictors(draw: st.DrawFn, tiles: bool = False) -> LatencyPredictor:
    """Independent models per scenario, as a fit with few shared samples can give; with
    `tiles`, often tile-aware (a tile of 2, 5, 16 or 128 tokens)."""
    tile = draw(st.sampled_from([None, None, 2, 5, 16, 128])) if tiles else None
    models = [draw(linear_models(tiled=tile is not None)) for _ in range(4)]
    decode, prefill, mixed, fallback = models
    return LatencyPredictor(decode, prefill, mixed, fallback=fallback, tile=tile)


slos = st.sampled_from([(0.05, 0.01), (0.5, 0.05), (3.0, 0.1), (10.0, 0.2), (1e4, 1e3)])
"""(L_ttft, L_tbt) pairs, from tight to practically none."""


@st.composite
def decoding_requests(draw: st.DrawFn, rid: str) -> Request:
    """A decoding request; its next-token deadline may be ahead or already passed."""
    ttft, tbt = draw(slos)
    prompt = draw(st.integers(1, 8192))
    generated = draw(st.integers(1, 500))
    slack = draw(st.floats(-2.0, 3.0))
    arrival = min(NOW, max(0.0, NOW + slack - ttft - generated * tbt))
    return Request(
        rid, arrival, prompt, prompt, generated, ttft, tbt, protected=draw(st.booleans())
    )


@st.composite
def prefill_requests(draw: st.DrawFn, rid: str) -> Request:
    """A waiting or partly prefilled request, possibly late, possibly protected; its TTFT
    slack is often within a batch's latency, which is what routes to the constructor."""
    ttft, tbt = draw(slos)
    prompt = draw(st.integers(1, 4096))
    prefilled = draw(st.sampled_from([0, 0, draw(st.integers(0, prompt - 1))]))
    slack = draw(st.one_of(st.floats(-ttft, ttft), st.floats(0.0, 0.4)))
    arrival = min(NOW, max(0.0, NOW + slack - ttft))
    return Request(rid, arrival, prompt, prefilled, 0, ttft, tbt, protected=draw(st.booleans()))


@st.composite
def decode_sets(draw: st.DrawFn, prefix: str = "d", max_size: int = 12) -> list[Request]:
    """Up to `max_size` decoding requests (`decoding_requests`), ids `prefix` + index."""
    size = draw(st.integers(0, max_size))
    return [draw(decoding_requests(f"{prefix}{i}")) for i in range(size)]


@st.composite
def prefill_queues(draw: st.DrawFn, prefix: str = "p", max_size: int = 40) -> list[Request]:
    """Up to `max_size` waiting or prefilling requests (`prefill_requests`), ids `prefix` +
    index: a queue of prefill candidates."""
    size = draw(st.integers(0, max_size))
    return [draw(prefill_requests(f"{prefix}{i}")) for i in range(size)]


@st.composite
def states(draw: st.DrawFn, max_decodes: int = 40, max_candidates: int = 16) -> SchedulerState:
    """A snapshot with any mix of decodes and prefill candidates, with or without a KV limit."""
    decodes = draw(st.integers(0, max_decodes))
    candidates = draw(st.integers(0, max_candidates))
    requests = [draw(decoding_requests(f"d{i}")) for i in range(decodes)]
    requests += [draw(prefill_requests(f"p{i}")) for i in range(candidates)]
    order = draw(st.permutations(range(len(requests))))
    kv = draw(st.one_of(st.none(), st.integers(0, 3000)))
    throughput = draw(st.floats(100.0, 50_000.0))
    return SchedulerState(NOW, tuple(requests[i] for i in order), throughput, kv)


@st.composite
def queued_states(
    draw: st.DrawFn, max_decodes: int = 40, max_candidates: int = 40
) -> SchedulerState:
    """A snapshot as an engine keeps it between iterations (`SchedulerState.of`): the decodes
    beside a `CandidateQueue` of the candidates, which shows a request not yet started only
    when its prompt fits `prompt_limit` (the KV cache's free slots), with or without one."""
    decodes = draw(decode_sets(max_size=max_decodes))
    limit = draw(st.one_of(st.none(), st.integers(0, 4096)))
    queue = CandidateQueue.of(draw(prefill_queues(max_size=max_candidates)), limit)
    kv = draw(st.one_of(st.none(), st.integers(0, 3000)))
    throughput = draw(st.floats(100.0, 50_000.0))
    return SchedulerState.of(NOW, tuple(decodes), queue, throughput, kv)


@st.composite
def configs(draw: st.DrawFn) -> SlidingConfig:
    """Any valid configuration, including the ablations and windows 1–3."""
    demote = draw(st.booleans())
    order: Order = draw(st.sampled_from(["mlps", "edf"]))
    return SlidingConfig(
        max_batch_tokens=draw(st.sampled_from([64, 512, 2048, 4096])),
        urgency_threshold=draw(st.sampled_from([0.5, 1.0, 2.0])),
        window=draw(st.integers(1, 3)),
        demote_late=demote,
        late_grace=draw(st.sampled_from([None, 0.0, 0.5, 3.0])) if demote else None,
        late_share=draw(st.sampled_from([1.0, 0.5, 0.1])),
        kv_headroom=draw(st.sampled_from([0, 16, 256])),
        split_search=draw(st.sampled_from(["exact", "ternary"])),
        order=order,
        level_order=draw(st.sampled_from(["remaining", "deadline"])),
        urgent_first=draw(st.booleans()),
        constructor=draw(st.booleans()),
        latency_margin=draw(st.sampled_from([None, 1.0, 1.1])),
        shed_bursts=draw(st.booleans()) if demote and order == "mlps" else False,
        give_up_after=draw(st.sampled_from([None, None, 0.0, 0.5])),
    )


@st.composite
def pressed_states(draw: st.DrawFn) -> SchedulerState:
    """States where the violation check fires: decodes with room in their TBT slack and
    short prefills close to their TTFT deadline (the BatchConstructor's territory)."""
    requests = []
    for i in range(draw(st.integers(0, 24))):
        prompt = draw(st.integers(1, 4096))
        generated = draw(st.integers(1, 200))
        slack = draw(st.floats(0.03, 1.0))
        arrival = min(NOW, max(0.0, NOW + slack - 3.0 - generated * 0.1))
        requests.append(Request(f"d{i}", arrival, prompt, prompt, generated, 3.0, 0.1))
    for i in range(draw(st.integers(1, 12))):
        prompt = draw(st.integers(1, 2048))
        left = draw(st.integers(1, min(prompt, 600)))
        slack = draw(st.floats(-0.05, 0.5))
        arrival = min(NOW, NOW + slack - 3.0)
        requests.append(Request(f"p{i}", arrival, prompt, prompt - left, 0, 3.0, 0.1))
    return SchedulerState(NOW, tuple(requests), draw(st.floats(1000.0, 20_000.0)))


def realistic_predictors() -> st.SearchStrategy[LatencyPredictor]:
    """The packaged default predictor (qwen2.5-7b on 2× rtx3090), as a strategy."""
    from slidingpolicy import default_predictor

    return st.just(default_predictor())
