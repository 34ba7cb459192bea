"""A PNG of a timeline trace (`engine.timeline`), drawn from the trace document alone.

What Perfetto shows, as a still: the batches' predicted and actual latency on top, then a row
per request — queued, prefill chunks, decode spans, deadline misses — over a window of time.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from slidingpolicy._paths import StrPath
from slidingpolicy.engine.timeline import BATCHES, FIRST_TID, REQUESTS
from slidingpolicy.figures.plots import _save

COLOURS = {"queued": "#d9d9d9", "prefill": "#4c72b0", "decode": "#55a868"}


def _kind(name: str) -> str:
    return next((k for k in COLOURS if name.startswith(k)), "decode")


def plot_timeline(
    trace: dict[str, Any], path: StrPath, requests: int = 16, until_s: float | None = None
) -> None:
    """The first `requests` request tracks and the batches, up to `until_s` seconds (all by
    default), as a PNG at `path`."""
    events = trace["traceEvents"]
    names = {
        e["tid"] - FIRST_TID: e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == REQUESTS
    }
    end = until_s * 1e6 if until_s is not None else float("inf")
    spans: dict[int, list[dict[str, Any]]] = defaultdict(list)
    misses: dict[int, list[float]] = defaultdict(list)
    batches = []
    for e in events:
        row = e["tid"] - FIRST_TID
        if e["ph"] == "X" and e["pid"] == REQUESTS and row < requests and e["ts"] < end:
            spans[row].append(e)
        elif e["ph"] == "i" and row < requests and e["ts"] < end:
            misses[row].append(e["ts"] / 1e6)
        elif e["ph"] == "X" and e["pid"] == BATCHES and e["ts"] < end:
            batches.append(e)
    fig, (top, rows) = plt.subplots(
        2, 1, figsize=(10, 2 + 0.32 * requests), sharex=True, height_ratios=(1, 3)
    )
    starts = [b["ts"] / 1e6 for b in batches]
    top.step(starts, [b["args"]["actual_ms"] for b in batches], where="post", label="actual")
    planned = [(b["ts"] / 1e6, b["args"]["predicted_ms"]) for b in batches]
    planned = [(t, p) for t, p in planned if p is not None]
    if planned:
        top.plot(*zip(*planned, strict=True), "k.", markersize=3, label="predicted (planned)")
    top.set_ylabel("batch latency (ms)")
    top.legend(loc="upper right", fontsize=8)
    for tid in range(requests):
        for e in spans.get(tid, []):
            rows.broken_barh(
                [(e["ts"] / 1e6, max(e["dur"] / 1e6, 1e-4))],
                (tid - 0.4, 0.8),
                facecolor=COLOURS[_kind(e["name"])],
                edgecolor="white",
                linewidth=0.6,
            )
        if misses.get(tid):
            rows.plot(misses[tid], [tid] * len(misses[tid]), "rx", markersize=7)
    rows.set_yticks(range(requests), [names.get(t, str(t)) for t in range(requests)])
    rows.invert_yaxis()
    if until_s is not None:
        rows.set_xlim(0.0, until_s)
    rows.set_xlabel("time since the first arrival (s)")
    handles: list[Artist] = [Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    handles.append(Line2D([], [], color="r", marker="x", linestyle=""))
    rows.legend(handles, [*COLOURS, "deadline miss"], loc="lower right", fontsize=8, ncols=4)
    fig.suptitle(str(trace.get("otherData", {}).get("title", "timeline")))
    _save(fig, path)
