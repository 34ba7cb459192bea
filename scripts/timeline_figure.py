"""Draw docs/timeline.png: `slidingpolicy simulate --timeline` on a short, loaded run, the trace
read back from its file and drawn with matplotlib (`figures.timeline_figure`). Perfetto's own
UI needs a network connection; this is the same trace as a still.

Usage: python scripts/timeline_figure.py [--out docs/timeline.png]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from slidingpolicy.cli import main

COMMAND = ["simulate", "-p", "slidingserve", "-n", "40", "-r", "3", "--seed", "4"]
"""The run the docs show: 40 mixed-v1 requests at 3 req/s, some of them late."""


def draw(out: Path) -> None:
    """Run COMMAND with --timeline, then draw the trace file at `out`."""
    from slidingpolicy.figures.timeline_figure import plot_timeline

    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "timeline.json"
        try:
            main([*COMMAND, "--timeline", str(trace), "-o", folder])
        except SystemExit as done:
            if done.code:
                raise
        document = json.loads(trace.read_text())
    plot_timeline(document, out, requests=26, until_s=24.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/timeline.png"))
    draw(parser.parse_args().out)
