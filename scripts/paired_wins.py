"""Paired wins of a replay's arms against an anchor, from its runs.csv:

python scripts/paired_wins.py RESULTS_DIR [--anchor sarathi-edf] [--by-rate]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from slidingpolicy.replay.paired import paired_wins


def main() -> None:
    """Print each arm's W–T–L against the anchor, overall and (--by-rate) per rate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--anchor", default="sarathi-edf")
    parser.add_argument("--by-rate", action="store_true")
    arguments = parser.parse_args()
    with (arguments.results / "runs.csv").open() as file:
        rows = list(csv.DictReader(file))
    groups = {"all": rows}
    if arguments.by_rate:
        for row in rows:
            groups.setdefault(f"{row['rate']} req/s", []).append(row)
    for name, group in groups.items():
        for count in paired_wins(group, arguments.anchor):
            print(f"{name:>12}  {count.arm} vs {count.anchor}: {count.text}")


if __name__ == "__main__":
    main()
