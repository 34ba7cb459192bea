"""The report's section on what a decision costs: the scheduler's time per iteration and the
capacity of each window size."""

from __future__ import annotations

from slidingpolicy.reproduce.capacity_sections import COST_SHARE
from slidingpolicy.reproduce.experiments import UNIT_POLICY, window_label
from slidingpolicy.reproduce.presets import WINDOW_POLICIES, WINDOWS
from slidingpolicy.reproduce.report_cells import (
    WINDOW_MATTERS,
    Capacities,
    Row,
    code,
    md_table,
    num,
    pct,
)


def cost_section(results: Row, timings: Row) -> str:
    """The scheduler's CPU cost per decision, against the budget we hold it to
    (`COST_SHARE`), and windows 1–4."""
    rows_in: list[Row] = timings.get("cost", [])
    parts = ["## The scheduler's CPU cost, and windows 1–4", ""]
    if rows_in:
        parts += _decision_cost(results, rows_in)
    parts += _window_capacity(results)
    return "\n".join(parts)


def _decision_cost(results: Row, rows_in: list[Row]) -> list[str]:
    """The cost of a decision per policy and path, and the costliest policy's share."""
    parts: list[str] = []
    first = rows_in[0]
    parts.append(
        f"Every decision of a run at the capacity of `{UNIT_POLICY}` ({first['setting']}, "
        f"{first['dataset']}), each timed {results['config']['cost_repeats']} times and "
        "the fastest kept; microseconds of one core of this machine (not reproducible: "
        "`timings.json`). Share: the mean decision against the run's mean iteration."
    )
    paths: dict[str, int] = {}
    for r in rows_in:
        paths[r["policy"]] = paths.get(r["policy"], 0) + 1
    shown = [r for r in rows_in if r["path"] != "all" or paths[r["policy"]] > 2]
    table = [
        [
            code(r["policy"]),
            r["path"],
            str(r["decisions"]),
            num(r["p50_us"], 0),
            num(r["p99_us"], 0),
            pct(r["mean_us"] / (1000 * r["iteration_ms"]), False),
        ]
        for r in shown
    ]
    header_row = ["policy", "path", "decisions", "p50 (µs)", "p99 (µs)", "share"]
    parts += ["", md_table(header_row, table, right_from=2), ""]
    overall = [r for r in rows_in if r["path"] == "all"]
    worst = max(overall, key=lambda r: r["mean_us"] / r["iteration_ms"])
    share = worst["mean_us"] / (1000 * worst["iteration_ms"])
    parts.append(
        f"The costliest policy, {code(worst['policy'])}, spends {pct(share, False)} of "
        f"an iteration deciding: {'under' if share < COST_SHARE else 'over'} the "
        f"{pct(COST_SHARE, False)} budget we hold it to. Under overload (tens of "
        "thousands waiting) see `bench/decision.py`."
    )
    return parts


def _window_capacity(results: Row) -> list[str]:
    """Capacity against the SlidingChunker window, and how little it moves."""
    parts: list[str] = []
    caps = Capacities(results["capacity"])
    cases = [tuple(c) for c in results["config"]["window_cases"]]
    table = []
    for policy in WINDOW_POLICIES:
        for w in WINDOWS:
            label = window_label(policy, w)
            cells = [caps.cell(k, d, label) for k, d in cases]
            table.append([code(policy), str(w), *cells])
    parts += [
        "",
        "Capacity (req/s, mean and min–max over seeds) against the SlidingChunker window:",
        "",
        md_table(["policy", "window", *(f"{k}, {d}" for k, d in cases)], table, right_from=1),
    ]
    spans = []
    for policy in WINDOW_POLICIES:
        for k, d in cases:
            means = [caps.mean(k, d, window_label(policy, w)) for w in WINDOWS]
            spans.append(max(means) / min(means) - 1.0)
    parts += [
        "",
        f"Across windows 1–4 the mean capacity moves by at most {pct(max(spans), False)} on "
        "any case"
        + (
            ": the window's joint optimisation (eq. 9) buys little over the greedy step on "
            "these hardware models, whose latency the predictor sees as nearly linear in the "
            "chunk ([decisions: baselines at their strongest]"
            "(../decisions.md#baselines-at-their-strongest-and-the-headline))."
            if max(spans) < WINDOW_MATTERS
            else "."
        ),
    ]
    return parts
