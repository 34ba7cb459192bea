"""Measured hardware as a built-in: compact tables of measured dense time, packaged.

A table holds, for one GPU and model and each tensor-parallel degree, the token grid of a
Vidur profile and the summed non-attention time of one iteration at each grid point (what
`profiled.read_profile` makes of the CSV, in ms to 0.01 µs). `MeasuredTable.build` turns it
into a `ProfiledModel` (step interpolation, attention from the roofline), so a measured model
runs with no data files. `scripts/make_measured.py` writes the tables
(`measured_tables.py`, generated) from the CSV with `build_table` and `render_module`.

Naming: a measured model is ``<gpu>-measured`` (e.g. ``a100-80g-measured``), beside the
smooth roofline ``<gpu>`` and the tile-quantized roofline ``<gpu>-quantized``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.hardware.catalog import gpu as find_gpu
from slidingpolicy.hardware.catalog import model as find_model
from slidingpolicy.hardware.profiled import ProfiledModel, read_profile
from slidingpolicy.hardware.roofline import RooflineModel

MS_DECIMALS = 5


@attrs.frozen(slots=True)
class MeasuredGrid:
    """One tensor-parallel degree: token counts and the dense ms measured at each."""

    tp: int
    tokens: tuple[int, ...]
    dense_ms: tuple[float, ...]

    def __attrs_post_init__(self) -> None:
        record = f"measured grid tp={self.tp}"
        if len(self.tokens) != len(self.dense_ms) or len(self.tokens) < 2:
            raise InvalidRecordError(record, "tokens", "needs >= 2 entries, one per dense_ms")
        if self.tokens[0] < 1 or any(b <= a for a, b in itertools.pairwise(self.tokens)):
            raise InvalidRecordError(record, "tokens", "must be increasing and >= 1")


@attrs.frozen(slots=True)
class MeasuredTable:
    """Measured dense time of `model` on `gpu` (whose roofline supplies the rest), per TP."""

    name: str
    gpu: str
    model: str
    source: str
    grids: tuple[MeasuredGrid, ...]

    def build(self, model: str, tp: int, noise_sigma: float) -> ProfiledModel:
        """The measured model of `model` on `tp` GPUs, with the roofline's noise."""
        if model != self.model:
            raise InvalidRecordError(
                f"hardware {self.name!r}", "model", f"={model!r}; it measures {self.model!r} only"
            )
        for grid in self.grids:
            if grid.tp == tp:
                roofline = RooflineModel(
                    find_gpu(self.gpu), find_model(model), tp, noise_sigma=noise_sigma
                )
                seconds = [1e-3 * ms for ms in grid.dense_ms]
                return ProfiledModel(roofline, self.name, grid.tokens, seconds)
        known = [str(g.tp) for g in self.grids]
        raise UnknownNameError(f"tensor-parallel degree of {self.name}", str(tp), known)


def build_table(name: str, gpu: str, model: str, path: Path, source: str) -> MeasuredTable:
    """The table of a Vidur profile CSV, for every tensor-parallel degree it holds of 1-8."""
    grids = []
    shape = find_model(model)
    for tp in (1, 2, 4, 8):
        try:
            tokens, seconds = read_profile(path, RooflineModel(find_gpu(gpu), shape, tp))
        except UnknownNameError:
            continue
        ms = tuple(round(1e3 * s, MS_DECIMALS) for s in seconds.tolist())
        grids.append(MeasuredGrid(tp, tuple(int(t) for t in tokens.tolist()), ms))
    return MeasuredTable(name, gpu, model, source, tuple(grids))


def _wrapped(values: tuple[int, ...] | tuple[float, ...], indent: str) -> list[str]:
    lines, line = [], indent
    for value in values:
        item = f"{value}, "
        if len(line) + len(item) > 100:
            lines.append(line.rstrip())
            line = indent
        line += item
    return [*lines, line.rstrip()]


def render_module(tables: tuple[MeasuredTable, ...], header: str) -> str:
    """The source of `measured_tables.py`: the docstring `header`, then one constant each."""
    out = [f'"""{header}\n"""', "", "from __future__ import annotations", ""]
    out += ["from slidingpolicy.hardware.measured import MeasuredGrid, MeasuredTable", ""]
    out += ["# fmt: off"]
    for t in tables:
        constant = t.name.upper().replace("-", "_")
        out += [f"{constant} = MeasuredTable(", f'    name="{t.name}",', f'    gpu="{t.gpu}",']
        out += [f'    model="{t.model}",', f'    source="{t.source}",', "    grids=("]
        for g in t.grids:
            out += [f"        MeasuredGrid({g.tp}, (", *_wrapped(g.tokens, " " * 12)]
            out += ["        ), (", *_wrapped(g.dense_ms, " " * 12), "        )),"]
        out += ["    ),", ")"]
    out += ["# fmt: on", ""]
    return "\n".join(out)
