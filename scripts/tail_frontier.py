"""The tail an operator chooses: SLO attainment against p99 TTFT for `slidingserve+` over its
tail options, beside `sarathi-edf` and `vllm`, in the offline engine (docs/tail.md).

The workload is bursty: mixed-v1 on the default hardware (qwen2.5-7b on 2× RTX 3090), Poisson
at a base rate r with a burst at 2r from 120 s for 60 s (Fig. 6's transient shape), `-n`
requests, seeds 0..S−1. For each base rate it prints, per arm, the mean ± sd over the seeds
of the attainment, the p99 TTFT (over the requests that got a first token), the p99 TTFT or
notice (a request given up counts at its notice) and the share given up; and whether the arm
meets the goal: p99 TTFT or notice at most 2× Sarathi-EDF's, and at least 90% of
`slidingserve+`'s attainment gain over Sarathi-EDF kept (and on how many seeds the p99 is
within 2× Sarathi-EDF's of the same seed). Writes runs.csv (one row per run), frontier.csv
(the table) and frontier.png to `--out`; `--runs runs.csv` tabulates and plots those runs
again without simulating. `--replay results.json ...` tabulates and plots a real engine's runs
(`slidingpolicy replay`'s results; the engine's own scheduler `native` beside Sarathi-EDF,
each (seed, repeat) a pairing).

python scripts/tail_frontier.py [-n 2000] [--seeds 5] [--rates 1.1,1.2,1.3] [--workers 2]
    [--out docs/tail] [--runs docs/tail/runs.csv | --replay results.json ...]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slidingpolicy.runs.specs import RunSpec, RunSummary, WorkloadSpec, run_many
from slidingpolicy.workloads import Burst

PLUS = "slidingserve+"
BASELINES = ("sarathi-edf", "vllm", "native")
"""The arms compared with, where a run has them (`native`: a real engine's own scheduler)."""
SIMULATED = BASELINES[:2]
LATE = (
    PLUS,
    f"{PLUS}[late_grace=10]",
    f"{PLUS}[late_grace=0]",
    f"{PLUS}[late_grace=0,late_share=0.25]",
    f"{PLUS}[late_grace=0,late_share=0.5]",
    f"{PLUS}[late_grace=0,late_share=1]",
)
"""`slidingserve+` serving every request: late requests promoted sooner, for more of the time."""
GIVE_UP = tuple(f"{PLUS}[give_up_after={x}]" for x in (30, 10, 5, 2, 0))
"""`slidingserve+` giving hopeless requests up X seconds after their TTFT deadline."""
FIGURES = ("attainment", "ttft_p99", "ttft_or_notice_p99", "given_up_share")
GOAL_RATIO = 2.0
GOAL_GAIN = 0.9


def specs(rates: Sequence[float], requests: int, seeds: int) -> list[RunSpec]:
    """Every arm at every base rate and seed."""
    workload = WorkloadSpec("mixed-v1", requests)
    return [
        RunSpec(PLUS, workload=workload, arrivals=Burst(r, 2 * r, 120.0, 60.0), seed=s).with_policy(
            arm
        )
        for r in rates
        for arm in (*SIMULATED, *LATE, *GIVE_UP)
        for s in range(seeds)
    ]


def figures(summary: RunSummary) -> dict[str, Any]:
    """The figures of one run, with its base rate, arm and seed."""
    m, arrivals = summary.metrics, summary.spec.arrivals
    assert isinstance(arrivals, Burst)
    return {
        "rate": arrivals.base_rate,
        "arm": summary.spec.label,
        "seed": summary.spec.seed,
        "attainment": m.attainment,
        "ttft_p99": m.ttft_p99,
        "ttft_or_notice_p99": m.ttft_or_notice_p99,
        "given_up_share": m.given_up / m.requests,
    }


def replayed(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The figures of each run of replays' results.json, its (seed, repeat) as the seed."""
    runs: list[dict[str, Any]] = []
    for run in (run for path in paths for run in json.loads(path.read_text())["runs"]):
        m = run["metrics"]
        runs.append({
            "rate": run["rate"],
            "arm": run["policy"],
            "seed": f"{run['seed']}/{run['repeat']}",
            "attainment": m["attainment"],
            "ttft_p99": m["ttft_p99"],
            "ttft_or_notice_p99": m["ttft_or_notice_p99"],
            "given_up_share": m["given_up"] / len(run["requests"]),
        })  # fmt: skip
    return runs


def table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (rate, arm): each figure's mean and sd over the seeds, and the goal."""
    groups: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((float(run["rate"]), str(run["arm"])), []).append(run)
    rows: list[dict[str, Any]] = []
    for (rate, arm), group in groups.items():
        row: dict[str, Any] = {"rate": rate, "arm": arm, "seeds": len(group)}
        for name in FIGURES:
            values = [float(run[name]) for run in group]
            row[name] = statistics.mean(values)
            row[f"{name}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
        rows.append(row)
    for row in rows:
        row.update(goal(row, rows, groups))
    return rows


def goal(
    row: dict[str, Any],
    rows: list[dict[str, Any]],
    groups: dict[tuple[float, str], list[dict[str, Any]]],
) -> dict[str, Any]:
    """The mean p99 (TTFT or notice) against Sarathi-EDF's, the seeds on which it is at most
    twice Sarathi-EDF's on the same seed, and the share of `slidingserve+`'s mean attainment
    gain over Sarathi-EDF kept, at the row's rate."""
    rate = row["rate"]
    at = {r["arm"]: r for r in rows if r["rate"] == rate}
    edf, plus = at["sarathi-edf"], at[PLUS]
    ratio = row["ttft_or_notice_p99"] / edf["ttft_or_notice_p99"]
    gain = plus["attainment"] - edf["attainment"]
    kept = (row["attainment"] - edf["attainment"]) / gain
    edf_by_seed = {r["seed"]: float(r["ttft_or_notice_p99"]) for r in groups[(rate, "sarathi-edf")]}
    seeds = sum(
        float(r["ttft_or_notice_p99"]) <= GOAL_RATIO * edf_by_seed[r["seed"]]
        for r in groups[(rate, row["arm"])]
    )
    return {
        "p99_ratio": ratio,
        "seeds_within": seeds,
        "gain_kept": kept,
        "meets": ratio <= GOAL_RATIO and kept >= GOAL_GAIN,
    }


def show(rows: list[dict[str, Any]]) -> None:
    """The table on screen, rate by rate."""
    head = (
        f"{'rate':>4} {'arm':<44} {'attainment':>15} {'p99 TTFT (s)':>15} "
        f"{'p99 or notice':>15} {'given up':>8} {'×EDF':>5} {'≤2×':>4} {'gain':>5} goal"
    )
    print(head)
    for row in rows:
        cells = [f"{row['rate']:>4} {row['arm']:<44}"]
        cells.append(f"{row['attainment']:>7.1%} ± {row['attainment_sd']:<5.1%}")
        for name in ("ttft_p99", "ttft_or_notice_p99"):
            cells.append(f"{row[name]:>7.1f} ± {row[f'{name}_sd']:<5.1f}")
        cells.append(f"{row['given_up_share']:>8.1%}")
        cells.append(
            f"{row['p99_ratio']:>5.2f} {row['seeds_within']:>2}/{row['seeds']} "
            f"{row['gain_kept']:>5.0%} {'yes' if row['meets'] else 'no'}"
        )
        print(" ".join(cells))


def _setting(arm: str) -> float:
    """The first option value of an arm's label (`name[key=value,...]`), for ordering."""
    return float(arm.split("=", 1)[1].split(",")[0].rstrip("]"))


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Attainment against p99 TTFT or notice, a panel per rate: each option's settings joined
    in order, the baselines as points, the goal's corner shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({float(r["rate"]) for r in rows})
    fig, axes = plt.subplots(1, len(rates), figsize=(5.2 * len(rates), 4.4), squeeze=False)
    for ax, rate in zip(axes[0], rates, strict=True):
        at = {r["arm"]: r for r in rows if r["rate"] == rate}
        edf, plus = at["sarathi-edf"], at[PLUS]
        x_max = GOAL_RATIO * float(edf["ttft_or_notice_p99"])
        y_min = float(edf["attainment"]) + GOAL_GAIN * (
            float(plus["attainment"]) - float(edf["attainment"])
        )
        ax.fill_between([0, x_max], y_min, 1.0, color="tab:green", alpha=0.12, label="goal")
        series = (
            ("late grace / share", "late_", "tab:blue", "o"),
            ("give up after X s", "give_up_after=", "tab:red", "s"),
        )
        for name, option, colour, marker in series:
            arms = sorted((a for a in at if option in a), key=_setting, reverse=True)
            if not arms:
                continue
            points = [at[a] for a in (PLUS, *arms)]
            ax.errorbar(
                [float(p["ttft_or_notice_p99"]) for p in points],
                [float(p["attainment"]) for p in points],
                xerr=[float(p["ttft_or_notice_p99_sd"]) for p in points],
                yerr=[float(p["attainment_sd"]) for p in points],
                color=colour,
                marker=marker,
                capsize=2,
                label=f"{PLUS}: {name}",
            )
        for arm, colour in zip(BASELINES, ("black", "tab:gray", "tab:gray"), strict=True):
            if arm not in at:
                continue
            p = at[arm]
            ax.errorbar(
                [float(p["ttft_or_notice_p99"])],
                [float(p["attainment"])],
                xerr=[float(p["ttft_or_notice_p99_sd"])],
                yerr=[float(p["attainment_sd"])],
                color=colour,
                marker="D",
                capsize=2,
                label=arm,
            )
        ax.set_xlim(left=0.0)
        ax.set_xlabel("p99 TTFT, or notice when given up (s)")
        ax.set_ylabel("SLO attainment")
        ax.set_title(title.format(rate=rate))
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """`rows` (dicts with the same keys) as CSV."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    """Run the matrix (or read its runs.csv), print the table, write the CSVs and the plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--requests", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rates", default="1.1,1.2,1.3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("docs/tail"))
    parser.add_argument("--runs", type=Path, help="a runs.csv to tabulate instead of running")
    parser.add_argument(
        "--replay", type=Path, nargs="+", help="replays' results.json files to tabulate"
    )
    arguments = parser.parse_args()
    title = "mixed-v1, burst: base {rate} req/s, 2× for 60 s"
    runs: list[dict[str, Any]]
    if arguments.replay is not None:
        runs = replayed(arguments.replay)
        title = "real engine: {rate} req/s"
    elif arguments.runs is not None:
        with arguments.runs.open() as handle:
            runs = list(csv.DictReader(handle))
    else:
        rates = [float(r) for r in arguments.rates.split(",")]
        specs_ = specs(rates, arguments.requests, arguments.seeds)
        runs = [figures(summary) for summary in run_many(specs_, arguments.workers)]
    rows = table(runs)
    show(rows)
    arguments.out.mkdir(parents=True, exist_ok=True)
    if arguments.runs is None:
        write_csv(arguments.out / "runs.csv", runs)
    write_csv(arguments.out / "frontier.csv", rows)
    plot(rows, arguments.out / "frontier.png", title)


if __name__ == "__main__":
    main()
