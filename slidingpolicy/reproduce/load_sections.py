"""The report's sections on load and bursts: latency percentiles against load beside the
paper's, and how late requests are served under a burst."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from slidingpolicy.reproduce import paper
from slidingpolicy.reproduce.experiments import UNIT_POLICY, rows_of
from slidingpolicy.reproduce.presets import LOAD_POLICIES
from slidingpolicy.reproduce.report_cells import FIGURES, Row, code, md_table, num, pct


def load_section(results: Row) -> str:
    """Fig. 5: violation rate and tail latency against load."""
    rows_in: list[Row] = results["load"]
    parts = ["## Violations and tail latency against load (Fig. 5)", ""]
    parts.append(
        f"Load 1 is the mean capacity of `{UNIT_POLICY}` on each case; one run per load and "
        f"seed ({results['config']['load_seeds']} seed(s), {results['config']['requests']} "
        "requests), means over seeds. SLO violation rate:"
    )
    cases = list(dict.fromkeys((r["setting"], r["dataset"]) for r in rows_in))
    loads = sorted({r["load"] for r in rows_in})
    mean_of = functools.partial(_load_mean, rows_in)
    table = []
    for key, dataset in cases:
        for policy in LOAD_POLICIES:
            cells = [pct(mean_of(key, dataset, policy, x, "violation"), False) for x in loads]
            table.append([key, dataset, code(policy), *cells])
    header_row = ["setting", "data set", "policy", *(f"{x:g}×" for x in loads)]
    parts += ["", md_table(header_row, table, right_from=3), ""]
    parts.append(f"![violation rate against load]({FIGURES['load']})")
    parts += ["", f"![p99 TTFT against load]({FIGURES['latency']})"]
    top = max(loads)
    parts += ["", f"At {top:g}× load, TTFT (s) and TBT (ms) percentiles:", ""]
    parts.append(_load_percentiles(mean_of, cases, top))
    lines = _load_beside_paper(mean_of, cases, top)
    parts += ["", "\n".join(lines)]
    return "\n".join(parts)


def _load_mean(
    rows_in: list[Row], key: str, dataset: str, policy: str, load: float, field: str
) -> float:
    """The mean over seeds of `field` of one policy at one load on one case (nan if none)."""
    values = [
        r[field]
        for r in rows_in
        if (r["setting"], r["dataset"], r["policy"], r["load"]) == (key, dataset, policy, load)
        and r[field] is not None
    ]
    return sum(values) / len(values) if values else math.nan


LoadMean = Callable[[str, str, str, float, str], float]
"""`_load_mean` of one results file."""


def _load_percentiles(mean_of: LoadMean, cases: list[tuple[str, str]], top: float) -> str:
    """The TTFT and TBT percentiles of every case and policy at the top load."""
    table = []
    for key, dataset in cases:
        for policy in LOAD_POLICIES:
            cells = [num(mean_of(key, dataset, policy, top, f"ttft_p{q}"), 2) for q in (50, 90, 99)]
            cells += [
                num(1000 * mean_of(key, dataset, policy, top, f"tbt_p{q}"), 0) for q in (50, 90, 99)
            ]
            table.append([key, dataset, code(policy), *cells])
    header_row = ["setting", "data set", "policy", "TTFT p50", "p90", "p99", "TBT p50 (ms)"]
    return md_table([*header_row, "p90", "p99"], table, right_from=3)


def _load_beside_paper(mean_of: LoadMean, cases: list[tuple[str, str]], top: float) -> list[str]:
    """SlidingServe's violation rate and p99 TTFT at the top load against QoServe's."""
    lines = [
        f"**Beside the paper.** At {top:g}× load the paper reports SlidingServe's violation rate "
        f"up to {pct(paper.OVERLOAD_VIOLATION_CUT, False)} below QoServe's, its p50/p90 TTFT "
        "on a par with QoServe's and its p99 sometimes higher."
    ]
    for policy in ("slidingserve", "slidingserve+"):
        change = [
            mean_of(k, d, policy, top, "violation") / mean_of(k, d, "qoserve", top, "violation")
            - 1.0
            for k, d in cases
            if mean_of(k, d, "qoserve", top, "violation") > 0
        ]
        tail = sum(
            mean_of(k, d, policy, top, "ttft_p99") > mean_of(k, d, "qoserve", top, "ttft_p99")
            for k, d in cases
        )
        if change:
            lines.append(
                f"- {code(policy)}: its violation rate is below QoServe's on "
                f"{sum(c < 0 for c in change)} of {len(change)} cases (relative change "
                f"{pct(min(change))} to {pct(max(change))}); its p99 TTFT is higher than "
                f"QoServe's on {tail} of {len(cases)}."
            )
    return lines


def burst_section(results: Row) -> str:
    """Fig. 6: violations through a transient overload."""
    rows_in: list[Row] = results["burst"]
    shape = results["config"]["burst"]
    parts = ["## Transient overload (Fig. 6)", ""]
    parts.append(
        f"Poisson arrivals at {shape['base']:g}× the capacity of `{UNIT_POLICY}`, "
        f"{shape['peak']:g}× from {shape['start']:g} s for {shape['duration']:g} s, then back; "
        f"violations by arrival time in {shape['bin']:g} s bins, summed over "
        f"{results['config']['burst_seeds']} seeds."
    )
    cases = list(dict.fromkeys((r["setting"], r["dataset"]) for r in rows_in))
    totals: dict[tuple[str, str, str], float] = {}
    for key, dataset in cases:
        for policy in LOAD_POLICIES:
            mine = rows_of(rows_in, key, dataset, policy)
            arrived = sum(b[0] for r in mine for b in r["bins"])
            missed = sum(b[1] for r in mine for b in r["bins"])
            totals[(key, dataset, policy)] = missed / arrived if arrived else math.nan
    table = []
    for key, dataset in cases:
        ours = totals[(key, dataset, "slidingserve")]
        plus = totals[(key, dataset, "slidingserve+")]
        cells = [pct(totals[(key, dataset, p)], False) for p in LOAD_POLICIES]
        for base in ("sarathi-edf", "qoserve"):
            theirs = totals[(key, dataset, base)]
            cells.append(
                f"{pct(1 - ours / theirs, False)} / {pct(1 - plus / theirs, False)}"
                if theirs > 0
                else "—"
            )
        table.append([key, dataset, *cells])
    header_row = [
        "setting",
        "data set",
        *(code(p) for p in LOAD_POLICIES),
        "cut vs sarathi-edf (ss / ss+)",
        "cut vs qoserve (ss / ss+)",
    ]
    parts += ["", md_table(header_row, table, right_from=2), ""]
    if all("late_ttft_max" in r for r in rows_in):
        parts += [_late_table(rows_in, cases), ""]
    parts.append(f"![violation rate over time through a burst]({FIGURES['burst']})")
    parts += [
        "",
        "**Beside the paper.** It reports SlidingServe cutting the violation rate by "
        f"{pct(paper.BURST_VIOLATION_CUT['sarathi-edf'], False)} against Sarathi-EDF and "
        f"{pct(paper.BURST_VIOLATION_CUT['qoserve'], False)} against QoServe (cut = 1 − "
        "ours ÷ theirs over the whole run; negative: more violations than the baseline).",
    ]
    return "\n".join(parts)


def _late_table(rows_in: Sequence[Row], cases: Sequence[tuple[str, str]]) -> str:
    """The TTFT p99 and max of each policy's late requests through the burst, the highest
    over the seeds."""
    table = []
    for key, dataset in cases:
        cells = []
        for policy in LOAD_POLICIES:
            mine = rows_of(rows_in, key, dataset, policy)
            p99, top = (
                max((r[f] for r in mine if r[f] is not None), default=None)
                for f in ("late_ttft_p99", "late_ttft_max")
            )
            cells.append(f"{num(p99, 1)} / {num(top, 1)}")
        table.append([key, dataset, *cells])
    header_row = ["setting", "data set", *(code(p) for p in LOAD_POLICIES)]
    return (
        "TTFT (s) of the late requests, those whose first token missed its TTFT deadline "
        "(what a request a policy demoted waited): p99 / max, the highest over the seeds. "
        "`slidingserve+` serves a late request again once its deadline passed a minute ago, "
        "a tenth of the time ([decisions: bursts](../decisions.md#bursts)).\n\n"
        + md_table(header_row, table, right_from=2)
    )
