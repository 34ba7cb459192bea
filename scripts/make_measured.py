"""Regenerate slidingpolicy/hardware/measured_tables.json from the reference GPU profiles.

Usage: python scripts/make_measured.py --data /work/shared/data
"""

from __future__ import annotations

import argparse
import datetime
import textwrap
from pathlib import Path

from slidingpolicy.hardware.measured import (
    MS_DECIMALS,
    PACKAGED,
    MeasuredTable,
    build_table,
    render_json,
)
from slidingpolicy.hardware.profiled import PER_ITERATION_OPS, PER_LAYER_OPS

PROFILES = (
    (
        "a100-80g-measured",
        "a100-80g",
        "llama3-8b",
        "profiles/vidur-a100-llama3-8b/mlp.csv",
        "microsoft/vidur, data/profiling, Meta-Llama-3-8B on A100 (MIT)",
    ),
)
"""(name, gpu whose roofline fills in the rest, model, file under --data, origin)."""

MIT = """\
The data are derived from Vidur (https://github.com/microsoft/vidur), MIT License,
Copyright (c) Microsoft Corporation. Permission is hereby granted, free of charge, to any
person obtaining a copy of this software and associated documentation files (the
"Software"), to deal in the Software without restriction, including without limitation the
rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the
Software, and to permit persons to whom the Software is furnished to do so, subject to the
following conditions: The above copyright notice and this permission notice shall be included
in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS",
WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES
OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE
OR THE USE OR OTHER DEALINGS IN THE SOFTWARE."""


def header(tables: tuple[MeasuredTable, ...]) -> str:
    """The generated file's "about": what, from where, when, how, under which licence."""
    origins = {name: (relative, origin) for name, _, _, relative, origin in PROFILES}
    lines = [
        "Packaged measured hardware: dense time per iteration. GENERATED: do not edit by hand.",
        "",
        f"Generated on {datetime.date.today().isoformat()} by:",
        "    python scripts/make_measured.py --data /work/shared/data",
        "",
        "Per tensor-parallel degree: the token grid of the profile and, at each point, the",
        "number of layers times the sum of the medians of the per-layer operators",
        *textwrap.wrap(", ".join(PER_LAYER_OPS), 92),
        f"plus {', '.join(PER_ITERATION_OPS)}, rows of one size averaged, in ms rounded to",
        f"{MS_DECIMALS} decimals (see slidingpolicy.hardware.measured and .profiled).",
        "",
        "Sources:",
    ]
    for t in tables:
        relative, origin = origins[t.name]
        tps = ", ".join(str(g.tp) for g in t.grids)
        lines += [f"- {t.name}: {t.model} on {t.gpu}, TP {tps},", f"  from {relative},"]
        lines += [f"  {origin}"]
    return "\n".join([*lines, "", MIT])


def main() -> None:
    """Read the profiles under --data and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="the reference data folder")
    parser.add_argument("--out", type=Path, default=PACKAGED, help="the JSON file to write")
    args = parser.parse_args()
    tables = tuple(
        build_table(name, gpu, model, args.data / relative, origin)
        for name, gpu, model, relative, origin in PROFILES
    )
    args.out.write_text(render_json(tables, header(tables)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
