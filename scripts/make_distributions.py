"""Regenerate slidingpolicy/workloads/length_tables.json from the two reference traces.

Usage: python scripts/make_distributions.py --data /work/shared/data
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from slidingpolicy.workloads.lengths import (
    OUTPUT_BINS,
    OUTPUT_LEVELS,
    PACKAGED,
    PROMPT_LEVELS,
    REFERENCE_TRACES,
    LengthDistribution,
    reference_distributions,
    render_json,
)


def header(distributions: tuple[LengthDistribution, ...]) -> str:
    """The generated file's `about`: what, from where, when, how."""
    lines = [
        "Embedded prompt/output length distributions. GENERATED: do not edit by hand.",
        "",
        f"Generated on {datetime.date.today().isoformat()} by:",
        "    python scripts/make_distributions.py --data /work/shared/data",
        "",
        "Sources (num_prefill_tokens, num_decode_tokens; Llama-2 tokenizer):",
    ]
    origins = {name: origin for name, _, origin in REFERENCE_TRACES}
    for d in distributions:
        lines += [f"- {d.name}: {d.source}, {d.rows} rows,", f"  from {origins[d.name]}"]
    lines += [
        "",
        f"Tables (see slidingpolicy.workloads.lengths): {PROMPT_LEVELS} prompt quantiles; per",
        f"prompt-rank bin ({OUTPUT_BINS} deciles), {OUTPUT_LEVELS} output quantiles.",
    ]
    return "\n".join(lines)


def main() -> None:
    """Read the traces under --data and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="the reference data folder")
    parser.add_argument("--out", type=Path, default=PACKAGED, help="the file to write")
    args = parser.parse_args()
    distributions = reference_distributions(args.data)
    args.out.write_text(render_json(distributions, header(distributions)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
