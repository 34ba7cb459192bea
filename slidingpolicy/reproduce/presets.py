"""What `slidingpolicy reproduce` runs: the settings, data sets, policies and trial sizes.

`QUICK` and `FULL` are the two presets; every figure of the report comes from one of them
and the seeds it names, so the same preset gives the same results on any machine.
"""

from __future__ import annotations

from typing import Any

import attrs

from slidingpolicy import _validate
from slidingpolicy.runs.specs import HardwareSpec, recorded_field


@attrs.frozen(slots=True)
class Setting:
    """A hardware configuration the report measures on: `key` names it in tables and files."""

    key: str
    hardware: HardwareSpec
    role: str
    """"paper" (the paper's 2× RTX 3090, TP2) or "measured" (a measured GPU profile)."""


PAPER_SETTINGS = (
    Setting("qwen2.5-7b · 2× rtx3090", HardwareSpec("rtx3090", "qwen2.5-7b", 2), "paper"),
    Setting("llama3-8b · 2× rtx3090", HardwareSpec("rtx3090", "llama3-8b", 2), "paper"),
)
"""The paper's setting: both models on two RTX 3090s, tensor parallel 2."""

MEASURED_SETTINGS = (
    Setting(
        "llama3-8b · a100-80g-measured",
        HardwareSpec("a100-80g-measured", "llama3-8b", 1),
        "measured",
    ),
)
"""Every hardware model built from a measured GPU profile (docs/hardware.md)."""

DATASETS = ("sharegpt", "arxiv", "mixed-v1", "mixed-v2")
"""The paper's data sets: mixed-v1 is ShareGPT:arXiv 3:1, mixed-v2 5:1."""

POLICIES = (
    "vllm",
    "sarathi",
    "sarathi-edf",
    "qoserve",
    "qoserve[kappa=0]",
    "greedy",
    "slidingserve",
    "slidingserve+",
)
"""Fig. 4's policies: every baseline (QoServe also at its best κ, docs/decisions.md), the
paper's SlidingServe and the recommended configuration."""

PAPER_ABLATION = ("sarathi-edf", "sarathi-edf+sc", "sarathi-edf+sc+mlps", "slidingserve")
"""Table 4: Sarathi-EDF, + SlidingChunker, + MLPS, the full algorithm (+ BatchConstructor)."""

OUR_ABLATION = (
    "slidingserve",
    "slidingserve[urgent_first=false]",
    "slidingserve[level_order=deadline]",
    "slidingserve+",
    "slidingserve+[constructor=false]",
    "slidingserve+[latency_margin=1.0]",
)
"""Each change the recommended configuration makes, alone and together, and the two pieces
it keeps (BatchConstructor, the latency margin) taken away."""

WINDOWS = (1, 2, 3, 4)
"""The window sizes the report compares (2 is the paper's; 1 is greedy, 3–4 ours)."""

WINDOW_POLICIES = ("slidingserve", "slidingserve+")
"""The policies whose window the report varies."""

LOADS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
"""Fig. 5's loads, as multiples of the paper's SlidingServe capacity on each case."""

LOAD_POLICIES = ("sarathi-edf", "qoserve", "slidingserve", "slidingserve+")
"""The policies of Fig. 5 and Fig. 6 (the paper's two baselines and ours)."""

ROBUSTNESS_POLICIES = (
    "qoserve",
    "greedy",
    "slidingserve",
    "slidingserve[learn=false]",
    "slidingserve+",
    "slidingserve+[learn=false]",
)
"""Every policy of Fig. 4 that prices batches with a predictor, and SlidingServe's two
configurations without online learning (the reference `learn=false`)."""

UNDER, OVER = "under-predicting", "over-predicting"
ROBUSTNESS_PREDICTORS = (
    (UNDER, HardwareSpec("a100-80g", "qwen2.5-7b", 1)),
    (OVER, HardwareSpec("rtx3090", "qwen2.5-7b", 1)),
)
"""The wrong predictors each of those is also sized with: the packaged predictors of two other
profiles of the same model. On 2× RTX 3090, one A100's prices batches too fast, one RTX
3090's too slow."""


@attrs.frozen(slots=True)
class BurstShape:
    """Fig. 6's transient overload, as multiples of the paper's SlidingServe capacity: `base`
    before and after, `peak` over [start, start + duration) seconds; violations counted per
    `bin` seconds of arrival time."""

    base: float = 0.7
    peak: float = 2.0
    start: float = 120.0
    duration: float = 60.0
    bin: float = 20.0
    end: float = 360.0
    """The last arrival bin ends here; the trial holds the requests that arrive by then."""


@attrs.frozen(slots=True)
class ReproConfig:
    """One reproduction: trial sizes, seeds, and which (setting, data set) cases each
    experiment covers. Cases are `(setting key, data set)` pairs."""

    name: str
    requests: int
    seeds: int
    settings: tuple[Setting, ...]
    ablation_cases: tuple[tuple[str, str], ...]
    window_cases: tuple[tuple[str, str], ...]
    load_cases: tuple[tuple[str, str], ...]
    load_seeds: int
    burst_cases: tuple[tuple[str, str], ...]
    burst_seeds: int
    robustness_cases: tuple[tuple[str, str], ...] = ()
    burst: BurstShape = attrs.field(factory=BurstShape)
    predictor_samples: int = 4000
    cost_requests: int = 300
    cost_repeats: int = 3

    def __attrs_post_init__(self) -> None:
        _validate.integer("reproduce config", "requests", self.requests, 1)
        _validate.integer("reproduce config", "seeds", self.seeds, 1)
        keys = {s.key for s in self.settings}
        fields = ("ablation_cases", "window_cases", "load_cases", "burst_cases", "robustness_cases")
        for field in fields:
            if not getattr(self, field):
                raise _validate.fail(
                    "reproduce config", field, "names no case (the report needs one)"
                )
            for key, dataset in getattr(self, field):
                if key not in keys or dataset not in DATASETS:
                    raise _validate.fail(
                        "reproduce config", field, f"names an unknown case ({key}, {dataset})"
                    )

    @property
    def cases(self) -> tuple[tuple[Setting, str], ...]:
        """Fig. 4's cases: every setting on every data set."""
        return tuple((s, d) for s in self.settings for d in DATASETS)

    def setting(self, key: str) -> Setting:
        """The setting named `key`."""
        return next(s for s in self.settings if s.key == key)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return attrs.asdict(self, recurse=True, filter=recorded_field, value_serializer=_plain)


def _plain(_: object, __: object, value: Any) -> Any:
    return _lists(value)


def _lists(value: Any) -> Any:
    """Tuples as lists, all the way down: what the config reads as from JSON."""
    return [_lists(v) for v in value] if isinstance(value, tuple | list) else value


_QWEN = PAPER_SETTINGS[0].key
_EVERY = tuple((s.key, d) for s in (*PAPER_SETTINGS, *MEASURED_SETTINGS) for d in DATASETS)

QUICK = ReproConfig(
    name="quick",
    requests=600,
    seeds=2,
    settings=(*PAPER_SETTINGS, *MEASURED_SETTINGS),
    ablation_cases=((_QWEN, "mixed-v1"), (_QWEN, "arxiv")),
    window_cases=((_QWEN, "mixed-v1"), (_QWEN, "arxiv")),
    load_cases=tuple((_QWEN, d) for d in DATASETS),
    load_seeds=1,
    burst_cases=((_QWEN, "mixed-v1"),),
    burst_seeds=2,
    robustness_cases=((_QWEN, "mixed-v1"),),
    cost_requests=200,
    cost_repeats=3,
)
"""Under 10 minutes on two cores (3 seeds took 10.6 there): 600 requests × 2 seeds, short
trials that over-estimate capacity (docs/decisions.md, "Capacity without bias"). The limits
(a fluid bound and seed 0's trace-bound search per case) took 4.7 more minutes, one process,
on a shared machine."""

FULL = ReproConfig(
    name="full",
    requests=1000,
    seeds=5,
    settings=(*PAPER_SETTINGS, *MEASURED_SETTINGS),
    ablation_cases=tuple((_QWEN, d) for d in DATASETS),
    window_cases=tuple((s.key, d) for s in PAPER_SETTINGS for d in ("mixed-v1", "arxiv")),
    load_cases=_EVERY,
    load_seeds=1,
    burst_cases=tuple((s.key, d) for s in PAPER_SETTINGS for d in ("mixed-v1", "arxiv")),
    burst_seeds=3,
    robustness_cases=((_QWEN, "mixed-v1"), (_QWEN, "arxiv")),
    cost_requests=600,
    cost_repeats=5,
)
"""Under 60 minutes on two cores: 1000 requests per trial, where the mean capacity no
longer moves (docs/decisions.md), over 5 seeds: 22.8 minutes on two cores (with 2 load seeds
and 5 burst seeds it took 61.6 while other jobs shared the cores)."""
