"""The figures read at a glance: every policy visible, axes and reference lines labelled."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from matplotlib.figure import Figure

from slidingpolicy.figures import plots
from slidingpolicy.runs.specs import RunSpec


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The figures the plot functions would save."""
    saved: list[Figure] = []
    monkeypatch.setattr(plots, "_save", lambda fig, path, rect=None: saved.append(fig))
    return saved


def _runs(policies: list[str]) -> list[Any]:
    metrics = SimpleNamespace(attainment=0.995, ttft_p99=2.5)
    return [
        SimpleNamespace(spec=RunSpec(p).with_rate(rate), metrics=metrics)
        for p in policies
        for rate in (0.5, 1.0, 1.5)
    ]


def test_identical_policies_stay_distinguishable(figures: list[Figure]) -> None:
    plots.plot_sweep(_runs(["vllm", "sarathi", "qoserve"]), Path("unused.png"), "t")
    attainment = figures[0].axes[0]
    lines = [line for line in attainment.get_lines() if not str(line.get_label()).startswith("_")]
    styles = {(line.get_marker(), line.get_linestyle(), line.get_markersize()) for line in lines}
    assert len(styles) == 3
    legend = figures[0].legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["vllm", "sarathi", "qoserve"]


def test_the_99_percent_line_and_the_ttft_slos_are_labelled(figures: list[Figure]) -> None:
    plots.plot_sweep(_runs(["vllm"]), Path("unused.png"), "t")
    attainment, ttft = figures[0].axes
    assert "99% target" in [t.get_text() for t in attainment.texts]
    labels = [t.get_text() for t in ttft.texts]
    assert labels == ["TTFT SLO 3 s (sharegpt)", "TTFT SLO 10 s (arxiv)"]  # mixed-v1
    assert ttft.get_yscale() == "log"
    assert ttft.yaxis.get_major_formatter()(3.0, 0) == "3"


def test_capacity_shows_the_spread_over_seeds_and_works_with_one(
    figures: list[Figure],
) -> None:
    plots.plot_capacity({"vllm": [1.0, 1.2, 1.4], "qoserve": [2.0, 2.0, 2.3]}, Path("u"), "x")
    axis = figures[0].axes[0]
    assert "mean of 3 seeds" in axis.get_title()
    assert any("1.00–1.40" in t.get_text() for t in axis.texts)
    plots.plot_capacity({"vllm": [1.0]}, Path("u"), "capacity on h100")
    title = figures[1].axes[0].get_title()
    assert title.startswith("capacity on h100")
    assert "one seed" in title


def test_figures_are_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "capacity.png"
    plots.plot_capacity({"vllm": [1.0]}, path, "x")
    assert path.read_bytes().startswith(b"\x89PNG")
    assert [p.name for p in tmp_path.iterdir()] == ["capacity.png"]
