"""A PNG of one explained decision (`slidingpolicy.explanation`): the MLPS order on the left, on
the right the window split's cost against b (chunker) or each anchor's knapsack (constructor).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from slidingpolicy._paths import StrPath
from slidingpolicy.explanation import Explanation, Split
from slidingpolicy.figures.plots import _save

LEVEL_COLOURS = {
    "protected": "#8172b2",
    "promoted": "#dd8452",
    "urgent": "#c44e52",
    "calm": "#4c72b0",
    "late": "#999999",
    "shed": "#cccccc",
    "edf": "#55a868",
}


def _order(axis: Axes, found: Explanation) -> None:
    rows = found.order
    ids = [r.request.id for r in rows]
    axis.barh(
        range(len(rows)),
        [r.remaining for r in rows],
        color=[LEVEL_COLOURS[r.level] for r in rows],
    )
    axis.set_yticks(range(len(rows)), ids)
    axis.invert_yaxis()
    for k, r in enumerate(rows):
        axis.annotate(
            f" u={r.urgency:.2f}, s={1000 * r.slack:.0f} ms",
            (r.remaining, k),
            va="center",
            fontsize=8,
        )
    for level in dict.fromkeys(r.level for r in rows):
        axis.bar(0, 0, color=LEVEL_COLOURS[level], label=level)
    axis.legend(fontsize=8, loc="lower right")
    axis.set_xlabel("remaining prefill r_i (tokens)")
    axis.set_title("1. MLPS order (eq. 10–16), first on top")


def _split(axis: Axes, split: Split) -> None:
    bs = [b for b, _, _, _ in split.curve]
    axis.plot(bs, [1000 * whole for _, _, whole, _ in split.curve], label="T̂₁(b) + T̂₂(B_Σ − b)")
    axis.plot(bs, [1000 * one for _, one, _, _ in split.curve], "--", label="T̂₁(b), this iteration")
    infeasible = [b for b, _, _, ok in split.curve if not ok]
    if infeasible:
        axis.axvspan(min(infeasible), max(infeasible), color="0.9", label="T̂₁(b) > T_cur")
    marks = [(split.chosen, "B* (chosen)", "k"), (split.greedy, "greedy (eq. 3)", "tab:green")]
    if split.ternary is not None:
        marks.append((split.ternary, "ternary search", "tab:orange"))
    for b, label, colour in marks:
        axis.axvline(b, color=colour, linestyle=":", label=f"{label}: {b}")
    axis.set_xlabel(f"prefill tokens now, b (B_Σ = {split.budget_sum})")
    axis.set_ylabel("predicted latency (ms)")
    axis.legend(fontsize=8)
    axis.set_title("4. SlidingChunker: the split (eq. 9)")


def _knapsack(axis: Axes, found: Explanation) -> None:
    labels, heights, colours, weights = [], [], [], []
    for work in found.anchors:
        for rid, weight, value in work.pool:
            labels.append(f"{work.anchor}: {rid}")
            heights.append(value)
            weights.append(weight)
            colours.append("tab:green" if rid in work.chosen else "0.7")
    axis.bar(range(len(heights)), heights, color=colours)
    for k, (value, weight) in enumerate(zip(heights, weights, strict=True)):
        axis.annotate(f"r = {weight}", (k, value), ha="center", va="bottom", fontsize=8)
    axis.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("value v_j (eq. 18); green: taken")
    chosen = [w for w in found.anchors if w.chosen]
    note = "; ".join(
        f"{w.anchor}: C_a − r_a = {w.capacity - w.remaining}, Y_a = {{{', '.join(w.chosen)}}}"
        for w in chosen
    )
    axis.set_title(f"4. BatchConstructor: the knapsack per anchor\n{note}", fontsize=9)


def plot_explanation(found: Explanation, path: StrPath) -> None:
    """The decision as a PNG at `path`."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    _order(left, found)
    if found.split is not None:
        _split(right, found.split)
    elif found.anchors:
        _knapsack(right, found)
    else:
        right.axis("off")
    tokens = found.plan.tokens_of()
    fig.suptitle(
        f"{found.policy} at t = {found.state.now:g} s: path {found.plan.branch}, "
        f"{sum(tokens.values())} tokens, predicted {1000 * found.plan.predicted_latency:.1f} ms"
    )
    _save(fig, path)
